//! The integrators, one file per method (notation: `docs/INTEGRATORS.md`).
//!
//! | type | method | cost per step |
//! |---|---|---|
//! | [`VelocityVerlet`] | Störmer–Verlet (§1) | one `∇V` |
//! | [`ZhangSkeel`] | Z&S, Tao & Owhadi Integrator 1, eq. 3 (§2) | one `(∇V, H, T)` and one `n×n` solve |
//! | [`ZhangSkeelSimplified`] | Z&Ss, Integrator 4, eq. 18 (§3) | one `(∇V, H)` and one `n×n` solve |
//! | [`Shake`], [`Rattle`] | Fernández-Pendás, eq. 4 (§7, §8), unpenalized, multipliers λ | one `∇V`, a few `(g, G)` and `m×m` solves |
//! | [`ZhangSkeelStiff`] | Z&Ss for stiff systems, Integrator 5, eq. 19 (§4) | one `(∇V, Hess V1)` and one `n×n` solve |
//! | [`Newmark`] | Newmark γ = ½, Integrator 2, eq. 12 (§5), Newton to a tolerance | per Newton iteration one `∇V`, one `H`, one solve (+ one `∇V`) |
//! | [`LinearlyImplicitNewmark`] | eq. 12 with one Newton step (§5; Fig. 1 row 5) | two `∇V`, one `H`, one solve |
//! | [`PushForwardNewmark`] | Integrator 3, eq. 14 (§6), Newton on `a_k` | per Newton iteration one `∇V`, one `H`, one solve (+ one `∇V`) |
//! | [`Yoshida4`] | triple-jump composition, Remark 2.1 (§10) | three inner steps |
//! | [`Langevin`] | GLA: inner step ∘ exact OU flow, §4.3 eq. 27 (§11) | one inner step and `N` normal deviates |
//! | [`Impulse`], [`MollifiedImpulse`], [`ProjectedImpulse`] | the impulse paper, §2 (§9), `H = T + U + W` | one slow force (+ projection) and `micro_steps` `∇W` |
//! | [`Variational`] | any explicit Runge–Kutta tableau made variational (Patrick et al., `docs/VARIATIONAL.md`) | two layer steps with exact derivatives, projections, a `2N+2d` solve, Newton or chord on `3N+3d` unknowns |
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

pub mod composition;
pub mod constrained;
pub mod impulse;
pub mod langevin;
pub mod newmark;
pub mod rigid_water;
pub mod variational;
pub mod verlet;
pub mod zhang_skeel;

pub use composition::Yoshida4;
pub use constrained::{
    ConstrainedStep, Positions, Projection, Rattle, Shake, ShakeSolver, Velocities,
};
pub use impulse::{
    Impulse, ImpulseMethod, Kick, ManifoldProjection, MollifiedImpulse, MollifiedKick, PlainKick,
    ProjectedImpulse, ProjectedKick, ProjectionFailure, ProjectionOptions,
};
pub use langevin::{Langevin, RngState};
pub use newmark::{
    LinearlyImplicitNewmark, Newmark, NewmarkEq12, NewtonSolve, OneNewtonStep, PushForwardNewmark,
    ToTolerance,
};
pub use rigid_water::Settle;
pub use variational::{PhaseBSolver, ProjectedRungeKutta, Tableau, TableauError, Variational};
pub use verlet::VelocityVerlet;
pub use zhang_skeel::{
    Eq3, Eq18, Eq19, Linearization, LinearlyImplicit, Method, ZhangSkeel, ZhangSkeelSimplified,
    ZhangSkeelStiff,
};

use crate::StepError;
use crate::error::{Quantity, StepErrorKind};
use crate::linalg::Factorization;
use crate::state::StateOf;
use crate::vector::Vector;
use crate::vector::{PARALLEL_FROM, VECTOR_CHUNK};

pub(crate) use crate::vector::same_bits;

/// Work counters of a stepper, one type for every method: each counts what it does and leaves
/// the rest at zero (the docs of each method say which it fills).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepStats {
    /// Evaluations of the step's force-like quantity: `f(x)` of Z&S (one fused `(∇V, H)`, one
    /// solve and, for Z&S, one third contraction), `a(x)` of Z&Ss-stiff, the slow force of
    /// the impulse methods. One per step in steady state.
    pub evaluations: u64,
    /// Steps that reused the quantity cached at the end of the previous step.
    pub cache_hits: u64,
    /// Evaluations of `∇V` on their own (Verlet, Newmark, SHAKE/RATTLE).
    pub gradient_evaluations: u64,
    /// Evaluations of `H` on their own (one per Newton iteration of Newmark).
    pub hessian_evaluations: u64,
    /// Evaluations of the pair `(g, G)` (SHAKE/RATTLE).
    pub constraint_evaluations: u64,
    /// Evaluations of the fast gradient `∇W` (impulse methods, one per micro-step).
    pub fast_evaluations: u64,
    /// Linear solves done by Cholesky (the shifted matrix was positive definite).
    pub cholesky_solves: u64,
    /// Linear solves that fell back from Cholesky (an indefinite matrix, e.g. on a non-convex
    /// potential such as the penalized double pendulum): pivoted LU, or the sparse backends'
    /// `LDLᵀ`.
    pub lu_fallbacks: u64,
    /// Iterations of the step's nonlinear solves (Newton steps of Newmark and of the mollified
    /// impulse's projection, SHAKE's sweeps or Newton steps), summed over the steps.
    pub iterations: u64,
    /// The most iterations one step needed.
    pub max_step_iterations: usize,
    /// Iterations of the last step, successful or not.
    pub last_iterations: usize,
    /// The residual its nonlinear solve ended with (NaN before the first, and for methods
    /// without one): Newmark's relative `ρ`, SHAKE's `max_c |g_c|`.
    pub last_residual: f64,
}

impl Default for StepStats {
    fn default() -> Self {
        Self {
            evaluations: 0,
            cache_hits: 0,
            gradient_evaluations: 0,
            hessian_evaluations: 0,
            constraint_evaluations: 0,
            fast_evaluations: 0,
            cholesky_solves: 0,
            lu_fallbacks: 0,
            iterations: 0,
            max_step_iterations: 0,
            last_iterations: 0,
            last_residual: f64::NAN,
        }
    }
}

impl StepStats {
    /// Count a linear solve done by `how`.
    pub(crate) fn count_solve(&mut self, how: Factorization) {
        if how.is_cholesky() {
            self.cholesky_solves += 1;
        } else {
            self.lu_fallbacks += 1;
        }
    }

    /// Record a step's (or a nonlinear solve's) iterations.
    pub(crate) fn count_iterations(&mut self, iterations: usize) {
        self.last_iterations = iterations;
        self.max_step_iterations = self.max_step_iterations.max(iterations);
    }
}

/// The buffers a stepper makes at its first step (set-up) and reuses. A copy of the stepper
/// starts without them and rebuilds them at its first step (recomputing any cached
/// evaluation, bit for bit): copies never share work arrays, and copying is cheap.
#[derive(Debug)]
pub(crate) struct Buffers<W>(Option<W>);

impl<W> Clone for Buffers<W> {
    fn clone(&self) -> Self {
        Self(None)
    }
}

impl<W> Default for Buffers<W> {
    fn default() -> Self {
        Self(None)
    }
}

impl<W> Buffers<W> {
    /// The buffers, made by `make` when there are none yet or when `fits` says they do not fit
    /// (another system).
    #[inline]
    pub fn get(&mut self, fits: impl FnOnce(&W) -> bool, make: impl FnOnce() -> W) -> &mut W {
        if self.0.as_ref().is_some_and(|w| !fits(w)) {
            self.0 = None;
        }
        self.0.get_or_insert_with(make)
    }

    /// The buffers, if made.
    pub fn as_mut(&mut self) -> Option<&mut W> {
        self.0.as_mut()
    }

    /// The buffers, if made.
    pub fn as_ref(&self) -> Option<&W> {
        self.0.as_ref()
    }
}

/// `Err(InvalidStepSize)` unless `h` is finite and nonzero.
#[inline]
pub(crate) fn check_h(h: f64, step: u64, t: f64) -> Result<(), StepError> {
    if h.is_finite() && h != 0.0 {
        Ok(())
    } else {
        Err(StepError::new(
            step,
            t,
            StepErrorKind::InvalidStepSize { h },
        ))
    }
}

/// `Err(WrongSize)` unless `q` and `v` have the model's dimension (an assembled system's
/// state is a `Vec`: a state of another system or a velocity one short would otherwise index
/// out of bounds deep in a step).
#[inline]
pub(crate) fn check_state<V: Vector>(
    dimension: usize,
    state: &StateOf<V>,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    for (what, got) in [("q", state.q.len()), ("v", state.v.len())] {
        if got != dimension {
            return Err(StepError::new(
                step,
                t,
                StepErrorKind::WrongSize {
                    what,
                    expected: dimension,
                    got,
                },
            ));
        }
    }
    Ok(())
}

/// What a chunk's pass of [`par_triples`] gives: a flag, two 64-bit sums and a maximum.
pub(crate) type Triple = (bool, u64, u64, f64);

/// A chunk's pass of [`par_triples`]: its offset, its two slices → its [`Triple`].
pub(crate) type TriplePass<'a> = dyn Fn(usize, &mut [f64], &mut [f64]) -> Triple + Sync + 'a;

/// A chunk of [`par_triples`] of whole blocks of 24 coordinates (eight point bodies of three
/// coordinates: a chunk's bodies are its own), near [`VECTOR_CHUNK`].
pub(crate) const BODY_CHUNK: usize = VECTOR_CHUNK / 24 * 24;

/// `f(first, a_chunk, b_chunk)` over matching chunks of `a` and `b` of `chunk` entries
/// (`first` the chunk's offset, a multiple of `chunk`; one chunk when the vectors are short),
/// on rayon's current pool when the vectors are long: each chunk's
/// flag, two 64-bit sums (fingerprints' terms, counts) and a maximum, the flags and-ed, the
/// sums added (wrapping), the largest maximum kept (`f64::max`: a NaN only when every chunk's
/// is one) — the same results whatever the chunks' schedule, each entry computed by the same
/// operations whatever the split. `f` is a trait object, called once per chunk: rayon's
/// machinery is compiled once for every stepper and system, not once for each.
pub(crate) fn par_triples(
    a: &mut [f64],
    b: &mut [f64],
    chunk: usize,
    f: &TriplePass<'_>,
) -> Triple {
    use rayon::prelude::*;
    if a.len() < PARALLEL_FROM {
        return f(0, a, b);
    }
    a.par_chunks_mut(chunk)
        .zip(b.par_chunks_mut(chunk))
        .enumerate()
        .map(|(c, (a, b))| f(c * chunk, a, b))
        .reduce(
            || (true, 0, 0, 0.0),
            |x, y| {
                (
                    x.0 & y.0,
                    x.1.wrapping_add(y.1),
                    x.2.wrapping_add(y.2),
                    x.3.max(y.3),
                )
            },
        )
}

/// `Err(NonFinite { what })` unless every entry of `x` is finite.
#[inline]
pub(crate) fn check_finite<V: Vector>(
    x: &V,
    what: Quantity,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    if crate::vector::all_finite(x) {
        Ok(())
    } else {
        Err(StepError::non_finite(step, t, what))
    }
}

/// `Err(NonFinite { what })` unless every entry of the matrix `h` is finite.
#[inline]
pub(crate) fn check_matrix<V: Vector>(
    h: &V::Matrix,
    what: Quantity,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    if V::matrix_is_finite(h) {
        Ok(())
    } else {
        Err(StepError::non_finite(step, t, what))
    }
}
