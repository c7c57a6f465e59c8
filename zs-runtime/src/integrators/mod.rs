//! The integrators, one file per method (notation: `shared/spec/INTEGRATORS.md`).
//!
//! | type | method | cost per step |
//! |---|---|---|
//! | [`VelocityVerlet`] | Störmer–Verlet (§1) | one `∇V` |
//! | [`ZhangSkeel`] | Z&S, Tao & Owhadi Integrator 1, eq. 3 (§2) | one `(∇V, H, T)` and one `n×n` solve |
//! | [`ZhangSkeelSimplified`] | Z&Ss, Integrator 4, eq. 18 (§3) | one `(∇V, H)` and one `n×n` solve |
//! | [`Shake`], [`Rattle`] | seed 002 eq. 4 (§7, §8), unpenalized, multipliers λ | one `∇V`, a few `(g, G)` and `m×m` solves |
//! | [`ZhangSkeelStiff`] | Z&Ss for stiff systems, Integrator 5, eq. 19 (§4) | one `(∇V, Hess V1)` and one `n×n` solve |
//! | [`Newmark`] | Newmark γ = ½, Integrator 2, eq. 12 (§5), Newton to a tolerance | per Newton iteration one `∇V`, one `H`, one solve (+ one `∇V`) |
//! | [`LinearlyImplicitNewmark`] | eq. 12 with one Newton step (§5; Fig. 1 row 5) | two `∇V`, one `H`, one solve |
//! | [`PushForwardNewmark`] | Integrator 3, eq. 14 (§6), Newton on `a_k` | per Newton iteration one `∇V`, one `H`, one solve (+ one `∇V`) |
//! | [`Yoshida4`] | triple-jump composition, Remark 2.1 (§10) | three inner steps |
//! | [`Langevin`] | GLA: inner step ∘ exact OU flow, §4.3 eq. 27 (§11) | one inner step and `N` normal deviates |
//! | [`Impulse`], [`MollifiedImpulse`], [`ProjectedImpulse`] | seed 003 §2 (§9), `H = T + U + W` | one slow force (+ projection) and `micro_steps` `∇W` |
//! | [`Variational`] | any explicit Runge–Kutta tableau made variational (seed 004, `VARIATIONAL.md`) | two layer steps with exact derivatives, projections, a `2N+2d` solve, Newton or chord on `3N+3d` unknowns |
//!
//! Every step either advances the state by `h` (time included) or returns a
//! [`StepError`] carrying the failing step's index and leaves the state
//! untouched. Steps allocate nothing.
//!
//! Each integrator caches the force-like quantity at the current position (`a(x)` for Verlet,
//! `f(x)` for Z&S), keyed by the bit pattern of `q` (and of `h²` for Z&S), because the next step
//! starts from the position the previous one ended at. The key guarantees that a state whose
//! positions were changed is re-evaluated; it cannot see a *different potential* with the same
//! positions: call `reset()` when switching potentials on the same integrator.

pub mod verlet;
pub mod zhang_skeel;
// Issue 3: Newmark family, Z&Ss-stiff, composition, Langevin.
pub mod composition;
pub mod langevin;
pub mod newmark;
pub mod zhang_skeel_stiff;

pub use verlet::VelocityVerlet;
pub use zhang_skeel::{ZhangSkeel, ZhangSkeelSimplified, ZsStats};
// Issue 3: Newmark family, Z&Ss-stiff, composition, Langevin.
pub use composition::Yoshida4;
pub use langevin::{Langevin, RngState};
pub use newmark::{LinearlyImplicitNewmark, Newmark, NewmarkStats, PushForwardNewmark};
pub use zhang_skeel_stiff::ZhangSkeelStiff;

// SHAKE and RATTLE (issue 3).
pub mod constrained;
pub use constrained::{Rattle, Shake, ShakeSolver, ShakeStats};

// Impulse, mollified impulse, projected impulse (seed 003, issue 3).
pub mod impulse;
pub use impulse::{
    Impulse, ImpulseStats, ManifoldProjection, MollifiedImpulse, ProjectedImpulse,
    ProjectionFailure, ProjectionOptions,
};

// Any Runge–Kutta method made variational (seed 004, issue 10).
pub mod variational;
pub use variational::{PhaseBSolver, ProjectedRungeKutta, Tableau, TableauError, Variational};

use crate::vector::Vector;
use crate::StepError;

pub(crate) use crate::vector::same_bits;

/// `Err(InvalidStepSize)` unless `h` is finite and nonzero.
#[inline]
pub(crate) fn check_h(h: f64, step: u64, t: f64) -> Result<(), StepError> {
    if h.is_finite() && h != 0.0 {
        Ok(())
    } else {
        Err(StepError::InvalidStepSize { step, t, h })
    }
}

/// `Err(NonFinite { what })` unless every entry of `x` is finite.
#[inline]
pub(crate) fn check_finite<V: Vector>(
    x: &V,
    what: &'static str,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    if crate::vector::all_finite(x) {
        Ok(())
    } else {
        Err(StepError::NonFinite { step, t, what })
    }
}

/// `Err(NonFinite { what })` unless every entry of the matrix `h` is finite.
#[inline]
pub(crate) fn check_matrix<V: Vector>(
    h: &V::Matrix,
    what: &'static str,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    if V::matrix_is_finite(h) {
        Ok(())
    } else {
        Err(StepError::NonFinite { step, t, what })
    }
}
