//! Velocity Verlet (Störmer–Verlet), `INTEGRATORS.md` §1 — the paper's "variational Euler" on
//! the penalized system (Tao & Owhadi, Fig. 1 row 3).

use super::{check_finite, check_h, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::{Potential, State, StepError, Stepper};

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
#[derive(Debug, Clone)]
pub struct VelocityVerlet<const N: usize> {
    h: f64,
    steps: u64,
    evaluations: u64,
    /// `(q, a(q))` at the end of the last step.
    cache: Option<([f64; N], [f64; N])>,
}

impl<const N: usize> VelocityVerlet<N> {
    /// Velocity Verlet with step `h` (negative: integrate backwards). An invalid `h` (zero,
    /// non-finite) is reported by [`VelocityVerlet::step`] as [`StepError::InvalidStepSize`].
    pub fn new(h: f64) -> Self {
        Self {
            h,
            steps: 0,
            evaluations: 0,
            cache: None,
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
        self.cache = None;
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
    pub fn step<P: Potential<N> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let a0 = match &self.cache {
            Some((q, a)) if same_bits(q, &state.q) => *a,
            _ => {
                let a = self.acceleration(potential, &state.q, k, t)?;
                self.cache = Some((state.q, a));
                a
            }
        };
        let half = 0.5 * h;
        let v_half: [f64; N] = core::array::from_fn(|i| state.v[i] + half * a0[i]);
        let x1: [f64; N] = core::array::from_fn(|i| state.q[i] + h * v_half[i]);
        check_finite(&x1, "new position", k, t)?;
        let a1 = self.acceleration(potential, &x1, k, t)?;
        let v1: [f64; N] = core::array::from_fn(|i| v_half[i] + half * a1[i]);
        check_finite(&v1, "new velocity", k, t)?;
        let t1 = t + h;
        state.q = x1;
        state.v = v1;
        state.t = t1;
        self.cache = Some((x1, a1));
        self.steps += 1;
        Ok(())
    }

    fn acceleration<P: Potential<N> + ?Sized>(
        &mut self,
        potential: &P,
        q: &[f64; N],
        step: u64,
        t: f64,
    ) -> Result<[f64; N], StepError> {
        self.evaluations += 1;
        let g = potential.gradient(q);
        check_finite(&g, "gradient", step, t)?;
        let m = potential.masses();
        let a = core::array::from_fn(|i| -g[i] / m[i]);
        check_finite(&a, "acceleration", step, t)?;
        Ok(a)
    }
}

impl<P: Potential<N> + ?Sized, const N: usize> Stepper<P, N> for VelocityVerlet<N> {
    fn step(&mut self, target: &P, state: &mut State<N>) -> Result<(), StepError> {
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
impl<const N: usize> Resumable for VelocityVerlet<N> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.h);
        out.set_u64("steps", self.steps);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.h = from.f64("h")?;
        self.steps = from.u64("steps")?;
        self.cache = None;
        Ok(())
    }
}
