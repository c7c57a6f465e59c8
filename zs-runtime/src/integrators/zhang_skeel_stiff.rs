//! Simplified Zhang & Skeel for stiff systems (Z&Ss-stiff; Tao & Owhadi Integrator 5, eq. 19):
//! `INTEGRATORS.md` §4.

use super::zhang_skeel::{solve_failure, Eval};
use super::{check_finite, check_h, same_bits};
use crate::checkpoint::{finite_param, CheckpointError, Resumable, Scope, ScopeMut};
use crate::linalg::{ShiftedSolve, SolveOptions};
use crate::model::HessianPart;
use crate::vector::Vector;
use crate::{StateOf, StepError, Stepper, StiffModel, ZsStats};

/// Buffers made at the first step: the evaluation of `a(x)` (stiff-Hessian pattern), `a_k` with
/// its key (the bits of `x` and `h²`), the new state.
#[derive(Debug)]
struct Work<V: Vector> {
    eval: Eval<V>,
    a0: V,
    a1: V,
    x1: V,
    v1: V,
    cache_x: V,
    cache_key: Option<u64>,
}

/// Simplified Z&S for stiff systems (Tao & Owhadi, Integrator 5, eq. 19), for a potential split
/// `V = V0 + ε⁻¹V1` into a soft part and a stiff part ([`crate::StiffSplit`]; `ε⁻¹` is folded into
/// `V1`):
///
/// ```text
/// solve (M + βh² ε⁻¹Hess V1(x_k)) a_k = −(∇V0(x_k) + ε⁻¹∇V1(x_k))
/// x_k+1 = x_k + h v_k + ½h² a_k
/// v_k+1 = v_k + ½h (a_k + a_k+1)
/// ```
///
/// Only the stiff Hessian enters the linear system. For a [`crate::Penalized`] system the stiff
/// part is the penalty `½ω²|g|²` (plus any `stiff_potential` the definition marks).
///
/// Properties (paper §2.3): **symmetric** (time-reversible, Theorem 2.4 with `f = a`), order 2
/// (Corollary 2.1), linearly stable for β > ¼ + O(ε) when `V1` is quadratic and positive
/// definite; not symplectic in general (like Z&Ss, eq. 18). It is what the paper uses for the
/// water cluster (§4.3), composed with the Ornstein–Uhlenbeck flow in [`crate::Langevin`].
///
/// Cost per step: one `(∇V, Hess V1)` evaluation and one solve with `M + βh²Hess V1`; `a_k+1`
/// is cached for the next step, keyed by the bit patterns of `x` and `h²` (call
/// [`ZhangSkeelStiff::reset`] before stepping a different potential).
///
/// The solve is in the pattern of the stiff Hessian only ([`crate::HessianPart::Stiff`]): for a
/// fixed-size system the dense `n×n` solve; for an assembled system whose stiff terms act within
/// bodies — rigid water, where the penalty couples only the atoms of one molecule (paper §4.3) —
/// a block-diagonal solve, one block per body, O(N).
#[derive(Debug)]
pub struct ZhangSkeelStiff<V: Vector> {
    beta: f64,
    h: f64,
    steps: u64,
    stats: ZsStats,
    work: Option<Work<V>>,
}

/// A copy of the parameters and counters; the buffers and the cached `a_k` are rebuilt
/// (recomputed bit for bit) at the copy's first step.
impl<V: Vector> Clone for ZhangSkeelStiff<V> {
    fn clone(&self) -> Self {
        Self {
            beta: self.beta,
            h: self.h,
            steps: self.steps,
            stats: self.stats,
            work: None,
        }
    }
}

impl<V: Vector> ZhangSkeelStiff<V> {
    /// The integrator with parameter `beta` (β) and step `h` (negative: integrate backwards).
    /// An invalid `h` (zero, non-finite) is reported by `step` as
    /// [`StepError::InvalidStepSize`].
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn new(beta: f64, h: f64) -> Self {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel stiff: beta must be finite, got {beta}"
        );
        Self {
            beta,
            h,
            steps: 0,
            stats: ZsStats::default(),
            work: None,
        }
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Step size `h`.
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Change the step size. The cached `a` depends on `h` only through `h²`: it is reused when
    /// `h` changes sign and recomputed otherwise.
    pub fn set_h(&mut self, h: f64) {
        self.h = h;
    }

    /// Change β (drops the cached `a`).
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn set_beta(&mut self, beta: f64) {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel stiff: beta must be finite, got {beta}"
        );
        self.beta = beta;
        self.reset();
    }

    /// Forget the cached `a_k` (required before stepping a different potential).
    pub fn reset(&mut self) {
        if let Some(w) = &mut self.work {
            w.cache_key = None;
        }
    }

    /// Number of steps completed (the index reported by the next failing step).
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// Work counters: evaluations of `a(x)` (one `(∇V, Hess V1)` and one solve each), cache
    /// hits, Cholesky solves, LU fallbacks.
    pub fn stats(&self) -> ZsStats {
        self.stats
    }

    /// Number of linear solves that fell back from Cholesky to pivoted LU.
    pub fn lu_fallbacks(&self) -> u64 {
        self.stats.lu_fallbacks
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and the
    /// time it started from: [`StepError::InvalidStepSize`], [`StepError::SingularMatrix`]
    /// (`M + βh²Hess V1` singular), [`StepError::NonFinite`].
    pub fn step<P: StiffModel<V> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let beta = self.beta;
        let n = potential.dimension();
        let w = match &mut self.work {
            Some(w) if w.eval.fits(potential, HessianPart::Stiff) => w,
            slot => slot.insert(Work {
                eval: Eval::new(potential, HessianPart::Stiff),
                a0: V::zeros(n),
                a1: V::zeros(n),
                x1: V::zeros(n),
                v1: V::zeros(n),
                cache_x: V::zeros(n),
                cache_key: None,
            }),
        };
        potential.masses_into(&mut w.eval.m);
        if w.cache_key == Some(h2_bits) && same_bits(&w.cache_x, &state.q) {
            self.stats.cache_hits += 1;
        } else {
            w.cache_key = None;
            accel(
                beta,
                h2,
                &mut self.stats,
                &mut w.eval,
                potential,
                &state.q,
                &mut w.a0,
                k,
                t,
            )?;
            w.cache_x.copy_from(&state.q);
            w.cache_key = Some(h2_bits);
        }
        // x_k+1 = x_k + h v_k + ½h² a_k
        for i in 0..n {
            w.x1[i] = state.q[i] + h * state.v[i] - 0.5 * h2 * w.a0[i];
        }
        check_finite(&w.x1, "new position", k, t)?;
        accel(
            beta,
            h2,
            &mut self.stats,
            &mut w.eval,
            potential,
            &w.x1,
            &mut w.a1,
            k,
            t,
        )?;
        // v_k+1 = v_k + ½h (a_k + a_k+1)
        for i in 0..n {
            w.v1[i] = state.v[i] - 0.5 * h * (w.a0[i] + w.a1[i]);
        }
        check_finite(&w.v1, "new velocity", k, t)?;
        state.q.copy_from(&w.x1);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.a0, &mut w.a1);
        w.cache_x.copy_from(&w.x1);
        self.steps += 1;
        Ok(())
    }
}

/// `-a(x)` into `out`: solve `(M + βh² Hess V1(x)) a = −∇V(x)` (as `y = -a`, in place on the
/// gradient; the step subtracts it where eq. 19 adds `a`: the same bits).
#[allow(clippy::too_many_arguments)]
fn accel<V: Vector, P: StiffModel<V> + ?Sized>(
    beta: f64,
    h2: f64,
    stats: &mut ZsStats,
    e: &mut Eval<V>,
    potential: &P,
    x: &V,
    out: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    stats.evaluations += 1;
    // (M + βh² Hess V1) y = ∇V in place on the gradient: y = -a, which the step subtracts.
    potential.gradient_stiff_hessian_into(x, out, &mut e.hess);
    let how = e
        .solver
        .solve_shifted(&e.m, beta * h2, &e.hess, out, &SolveOptions::default())
        .map_err(|err| solve_failure::<V>(err, &e.hess, "stiff Hessian", step, t))?;
    stats.count(how);
    Ok(())
}

impl<P: StiffModel<V> + ?Sized, V: Vector> Stepper<P, V> for ZhangSkeelStiff<V> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        ZhangSkeelStiff::step(self, target, state)
    }
    fn h(&self) -> f64 {
        self.h
    }
    fn set_h(&mut self, h: f64) {
        self.h = h;
    }
    fn steps_taken(&self) -> u64 {
        self.steps
    }
    fn name(&self) -> &'static str {
        "zhang-skeel-stiff"
    }
}

/// Saves `h`, β and the step counter (exact bits); the cached `a_k` is recomputed from the
/// restored state by the same code, giving the same bits.
impl<V: Vector> Resumable for ZhangSkeelStiff<V> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.h);
        out.set_f64("beta", self.beta);
        out.set_u64("steps", self.steps);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.h = from.f64("h")?;
        self.beta = finite_param("beta", from.f64("beta")?)?;
        self.steps = from.u64("steps")?;
        self.reset();
        Ok(())
    }
}
