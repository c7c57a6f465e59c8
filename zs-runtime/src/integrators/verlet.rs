//! Velocity Verlet (Störmer–Verlet), `INTEGRATORS.md` §1 — the paper's "variational Euler" on
//! the penalized system (Tao & Owhadi, Fig. 1 row 3).

use super::{check_finite, check_h, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::vector::Vector;
use crate::{Model, StateOf, StepError, Stepper};

/// Velocity Verlet:
///
/// ```text
/// v½    = v_k + (h/2) a(x_k),        a(x) = -M⁻¹ ∇V(x)
/// x_k+1 = x_k + h v½
/// v_k+1 = v½ + (h/2) a(x_k+1)
/// ```
///
/// Explicit, symplectic, symmetric (time-reversible), order 2; linearly stable only for
/// `h·ω_max < 2` (`ω_max` the highest frequency of `M⁻¹H`).
///
/// `a(x_k+1)` is cached and reused by the next step (one `∇V` per step), keyed by the bit
/// pattern of `q`: a state whose positions were changed is re-evaluated. Call
/// [`VelocityVerlet::reset`] before stepping a *different potential* with the same integrator.
///
/// ```
/// use zs_runtime::{Potential, State, VelocityVerlet};
/// struct Harmonic;
/// impl Potential<1> for Harmonic {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
///     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
///     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
/// }
/// let mut vv = VelocityVerlet::new(0.01);
/// let mut s = State::new([1.0], [0.0]);
/// for _ in 0..100 { vv.step(&Harmonic, &mut s).unwrap(); }
/// assert!((s.q[0] - 1f64.cos()).abs() < 1e-4);
/// assert!((s.t - 1.0).abs() < 1e-12);
/// ```
#[derive(Debug)]
pub struct VelocityVerlet<V: Vector> {
    h: f64,
    steps: u64,
    evaluations: u64,
    work: Option<Work<V>>,
}

/// A copy of the parameters and counters; the buffers and the cached acceleration are rebuilt
/// (recomputed bit for bit) at the copy's first step.
impl<V: Vector> Clone for VelocityVerlet<V> {
    fn clone(&self) -> Self {
        Self {
            h: self.h,
            steps: self.steps,
            evaluations: self.evaluations,
            work: None,
        }
    }
}

/// Buffers made at the first step: masses, gradient, `a(q)` with its key `q`, and the new
/// state.
#[derive(Debug)]
struct Work<V> {
    m: V,
    g: V,
    a0: V,
    a1: V,
    v_half: V,
    x1: V,
    v1: V,
    cache_q: V,
    cached: bool,
}

impl<V: Vector> VelocityVerlet<V> {
    /// Velocity Verlet with step `h` (negative: integrate backwards). An invalid `h` (zero,
    /// non-finite) is reported by [`VelocityVerlet::step`] as [`StepError::InvalidStepSize`].
    pub fn new(h: f64) -> Self {
        Self {
            h,
            steps: 0,
            evaluations: 0,
            work: None,
        }
    }

    /// Step size.
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Change the step size (the cached acceleration does not depend on `h` and is kept).
    pub fn set_h(&mut self, h: f64) {
        self.h = h;
    }

    /// Forget the cached acceleration (required before stepping a different potential).
    pub fn reset(&mut self) {
        if let Some(w) = &mut self.work {
            w.cached = false;
        }
    }

    /// Number of steps completed.
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// Number of gradient evaluations so far (one per step after the first, plus one per
    /// cache miss).
    pub fn gradient_evaluations(&self) -> u64 {
        self.evaluations
    }

    /// Advance `state` by one step of size [`VelocityVerlet::h`]; on error `state` is unchanged.
    pub fn step<P: Model<V> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let n = potential.dimension();
        let w = match &mut self.work {
            Some(w) if w.m.len() == n => w,
            slot => slot.insert(Work {
                m: V::zeros(n),
                g: V::zeros(n),
                a0: V::zeros(n),
                a1: V::zeros(n),
                v_half: V::zeros(n),
                x1: V::zeros(n),
                v1: V::zeros(n),
                cache_q: V::zeros(n),
                cached: false,
            }),
        };
        potential.masses_into(&mut w.m);
        if !(w.cached && same_bits(&w.cache_q, &state.q)) {
            w.cached = false;
            self.evaluations += 1;
            acceleration(potential, &state.q, &w.m, &mut w.g, &mut w.a0, k, t)?;
            w.cache_q.copy_from(&state.q);
            w.cached = true;
        }
        let half = 0.5 * h;
        for i in 0..n {
            w.v_half[i] = state.v[i] + half * w.a0[i];
            w.x1[i] = state.q[i] + h * w.v_half[i];
        }
        check_finite(&w.x1, "new position", k, t)?;
        self.evaluations += 1;
        acceleration(potential, &w.x1, &w.m, &mut w.g, &mut w.a1, k, t)?;
        for i in 0..n {
            w.v1[i] = w.v_half[i] + half * w.a1[i];
        }
        check_finite(&w.v1, "new velocity", k, t)?;
        state.q.copy_from(&w.x1);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.a0, &mut w.a1);
        w.cache_q.copy_from(&w.x1);
        self.steps += 1;
        Ok(())
    }
}

/// `a = -M⁻¹∇V(q)`, with `g` as scratch for the gradient.
fn acceleration<V: Vector, P: Model<V> + ?Sized>(
    potential: &P,
    q: &V,
    m: &V,
    g: &mut V,
    a: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    potential.gradient_into(q, g);
    check_finite(g, "gradient", step, t)?;
    for i in 0..g.len() {
        a[i] = -g[i] / m[i];
    }
    check_finite(a, "acceleration", step, t)
}

impl<P: Model<V> + ?Sized, V: Vector> Stepper<P, V> for VelocityVerlet<V> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        VelocityVerlet::step(self, target, state)
    }
    fn h(&self) -> f64 {
        self.h
    }
    fn set_h(&mut self, h: f64) {
        VelocityVerlet::set_h(self, h)
    }
    fn steps_taken(&self) -> u64 {
        self.steps
    }
    fn name(&self) -> &'static str {
        "velocity-verlet"
    }
}

/// Saves `h` and the step counter (exact bits); the cached acceleration is recomputed from the
/// restored state by the same code, giving the same bits.
impl<V: Vector> Resumable for VelocityVerlet<V> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.h);
        out.set_u64("steps", self.steps);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.h = from.f64("h")?;
        self.steps = from.u64("steps")?;
        self.reset();
        Ok(())
    }
}
