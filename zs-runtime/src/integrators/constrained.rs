//! SHAKE and RATTLE on the **unpenalized** constrained system (`docs/INTEGRATORS.md` §7–8,
//! Fernández-Pendás): Lagrange multipliers instead of a stiff penalty.
//!
//! # Equations and the sign of λ
//! The constrained equations of motion are (Fernández-Pendás, eq. 1)
//!
//! ```text
//! q̇ = M⁻¹p,   ṗ = -∇V(q) - G(q)ᵀλ,   g(q) = 0,        G = Dg (row c = ∇g_c)
//! ```
//!
//! so the constraint force is **`-G(q)ᵀλ`** (the augmented Hamiltonian `H + gᵀλ`). Fernández-Pendás
//! writes the same thing as `+G̃ᵀλ` with its "negative constraint Jacobian" `G̃ = -Dg`: the same λ.
//! Tao & Owhadi (eqs. 6, 8, 9) write the force as `+λᵀ∇g`, the **opposite** sign: their λ is `-λ`
//! here. With the penalty `½ω²gᵀg` the force is `-ω²G(q)ᵀg(q)`, so the multiplier here is `λ ≈
//! +ω²⟨g⟩` (the time average of Tao & Owhadi Thm 1.2, eq. 8, whose `-ω²⟨g⟩` is the same quantity in
//! their sign). [`crate::multipliers::PenalizedMultipliers`] uses this sign too. For distance
//! constraints `g = |r|² - ℓ²` a rod under tension has `λ > 0`.
//!
//! One step (Fernández-Pendás, eq. 4, in the velocity form of `docs/INTEGRATORS.md` §7; the state
//! holds `v = M⁻¹p`):
//!
//! ```text
//! p½    = p_n - (h/2) ∇V(q_n) - (h/2) G(q_n)ᵀ λ
//! q_n+1 = q_n + h M⁻¹ p½,          λ such that g(q_n+1) = 0          (m nonlinear equations)
//! p_n+1 = p½ - (h/2) ∇V(q_n+1)                                        (SHAKE)
//! p_n+1 = p½ - (h/2) ∇V(q_n+1) - (h/2) G(q_n+1)ᵀ μ,  G(q_n+1) M⁻¹ p_n+1 = 0      (RATTLE)
//! ```
//!
//! With `Λ = (h²/2) λ` the position equation is `g(q̄ - M⁻¹G(q_n)ᵀΛ) = 0`, `q̄ = q_n + h M⁻¹(p_n -
//! (h/2)∇V(q_n))` the unconstrained Verlet predictor (Fernández-Pendás, eq. 7). It is solved from
//! `Λ = 0` (Fernández-Pendás: "equivalent to taking λ_n to be zero") by either
//! - [`ShakeSolver::GaussSeidel`], the SHAKE iteration of Ryckaert, Ciccotti and Berendsen as given
//!   in Fernández-Pendás: sweep over the constraints, correcting one multiplier at a time, `ΔΛ_c =
//!   g_c(Q) / (∇g_c(Q) · M⁻¹∇g_c(q_n))`, `Q ← Q - M⁻¹∇g_c(q_n) ΔΛ_c` — a nonlinear
//!   Gauss–Seidel–Newton iteration (Barth et al. 1995; linear convergence); or
//! - [`ShakeSolver::Newton`], Newton on the `m × m` system with the Jacobian
//!   `G(Q) M⁻¹ G(q_n)ᵀ` (not symmetric: `Q ≠ q_n`), solved by a pivoted LU on the stack
//!   (quadratic convergence).
//!
//! Both stop when `max_c |g_c(Q)| ≤ tolerance` (absolute, in the units of `g`); if that has not
//! happened after the iteration cap the step fails with [`crate::StepErrorKind::NotConverged`]
//! (`solver: "SHAKE"`, the iterations done and the last residual) and the state is untouched.
//!
//! # SHAKE's velocities and its multiplier
//! SHAKE's `p_n+1` is Fernández-Pendás's eq. 4's `p_n+1` **without** its term
//! `(h/2)G(q_n+1)ᵀλ_n+1`, which only the next step can supply (Fernández-Pendás: SHAKE "does not
//! define a mapping of the tangent bundle"): `G M⁻¹ p_n+1 ≠ 0`, the normal component of the
//! velocity is `O(h)` off, and the next step's solve absorbs it. Positions are those of RATTLE
//! (Fernández-Pendás: the two are equivalent in positions; tested), and so are their errors (order
//! 2), but SHAKE's velocities are only first-order accurate in their normal component, and the `λ`
//! the solver finds for a non-tangent `p_n` contains that component too: after a SHAKE step it is
//! about `2λ(t_n)` (Fernández-Pendás's leapfrog multiplier is half of it). Both integrators
//! therefore report ([`Shake::multipliers`], [`Rattle::multipliers`]) the multiplier with the
//! incoming normal velocity removed:
//!
//! ```text
//! λ_n = λ_solved - ν_n,   (h/2) (G M⁻¹ Gᵀ)(q_n) ν_n = G(q_n) M⁻¹ p_n
//! ```
//!
//! `ν_n` is the multiplier of the velocity projection of the incoming `p_n` (zero for a tangent
//! `p_n`, e.g. after a RATTLE step), so `λ_n` is exactly RATTLE's position multiplier `λ_n^(r)` of
//! Fernández-Pendás, eqs. 5–6 from the projected state, whatever the history: a first-order
//! approximation of `λ(t_n)`. [`Shake::solved_multipliers`] gives `λ_solved`. RATTLE's velocity
//! multiplier `μ_n` ([`Rattle::velocity_multipliers`] of the step that ended at `t_n`) errs the
//! other way, and the mean `½(λ_n + μ_n)` (Fernández-Pendás's eq. 6, its `½(λ^(r) + λ^(v))`, the
//! leapfrog SHAKE multiplier) is second-order accurate (measured:
//! `zs-runtime/tests/runtime/shake.rs`).
//!
//! # Reversibility
//! RATTLE is symmetric: a step of `h` followed by one of `-h` returns to the start
//! (Fernández-Pendás; measured to round-off in the tests). SHAKE is not, as a map of `(q, v)`: the
//! positions return (the backward solve converges at `λ = 0`), but the velocity comes back as
//! `v_n - (h/2)M⁻¹G(q_n)ᵀλ_solved`, the tangent component exact and the normal one `O(h)` off.
//!
//! # Cost and caching
//! Per step: one `∇V` (at `q_n+1`; `∇V(q_n)` and `G(q_n)` are cached from the previous step,
//! keyed by the bit pattern of `q` as in [`crate::ZhangSkeel`]), one `(g, G)` evaluation per
//! Newton iteration or per constraint and Gauss–Seidel sweep (plus one for the final check),
//! and one or two `m × m` symmetric solves (`ν_n`; RATTLE's `μ`). Nothing is allocated. Call
//! `reset()` before stepping a different system with the same integrator.

use core::marker::PhantomData;

use super::{Buffers, StepStats, check_finite, check_h, check_state, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut, finite_param};
use crate::error::{Quantity, StepErrorKind};
use crate::linalg::{SolveFailure, singular_threshold};
use crate::model::{ConstrainedModel, ConstraintSolve, ConstraintSpace, Jacobian};
use crate::stepper::{Clock, Clocked};
use crate::vector::Vector;
use crate::{StateOf, StepError, Stepper};

/// Default absolute tolerance on `max_c |g_c(q_n+1)|`.
pub const DEFAULT_TOLERANCE: f64 = 1e-12;
/// Default cap on the iterations of one constraint solve.
pub const DEFAULT_MAX_ITERATIONS: usize = 100;

/// How SHAKE and RATTLE solve `g(q_n+1) = 0` for the multipliers (see the
/// [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ShakeSolver {
    /// The SHAKE iteration (Fernández-Pendás): nonlinear Gauss–Seidel over the constraints, one
    /// multiplier at a time. An iteration is one sweep over all `m` constraints.
    #[default]
    GaussSeidel,
    /// Newton on the `m × m` system, Jacobian `G(q_n+1) M⁻¹ G(q_n)ᵀ` (pivoted LU).
    Newton,
}

impl ShakeSolver {
    /// `"gauss-seidel"` or `"newton"`.
    pub fn name(self) -> &'static str {
        match self {
            ShakeSolver::GaussSeidel => "gauss-seidel",
            ShakeSolver::Newton => "newton",
        }
    }
}

/// Buffers of a SHAKE/RATTLE step, made at the first step (set-up): `∇V(q_n)` and `G(q_n)`
/// with their key `q_n` (the cache), the predictor, the constraint solve's iterate, the momenta
/// and the `m × m` solver.
#[derive(Debug)]
struct Work<V: ConstraintSpace<C>, C: Vector> {
    m: V,
    minv: V,
    grad0: V,
    grad1: V,
    jac0: V::Jacobian,
    cache_q: V,
    cached: bool,
    p0: V,
    p_bar: V,
    p: V,
    v1: V,
    /// `d_c = M⁻¹∇g_c(q_n)`.
    d: V::Jacobian,
    /// The iterate `Q` (then `q_n+1`), `Λ = (h²/2)λ`, `g(Q)`, `G(Q)`.
    q: V,
    big_lambda: C,
    g: C,
    jac: V::Jacobian,
    /// Right-hand sides / solutions of the `m × m` systems.
    k: C,
    k_nu: C,
    solver: V::ConstraintSolver,
    /// Results of the step being computed (moved into the stepper on success).
    lambda: C,
    solved: C,
    mu: C,
}

impl<V: ConstraintSpace<C>, C: Vector> Work<V, C> {
    fn new<S: ConstrainedModel<V, C> + ?Sized>(s: &S) -> Self {
        let (n, m) = (s.dimension(), s.constraint_count());
        Self {
            m: V::zeros(n),
            minv: V::zeros(n),
            grad0: V::zeros(n),
            grad1: V::zeros(n),
            jac0: s.new_jacobian(),
            cache_q: V::zeros(n),
            cached: false,
            p0: V::zeros(n),
            p_bar: V::zeros(n),
            p: V::zeros(n),
            v1: V::zeros(n),
            d: s.new_jacobian(),
            q: V::zeros(n),
            big_lambda: C::zeros(m),
            g: C::zeros(m),
            jac: s.new_jacobian(),
            k: C::zeros(m),
            k_nu: C::zeros(m),
            solver: s.new_constraint_solver(),
            lambda: C::zeros(m),
            solved: C::zeros(m),
            mu: C::zeros(m),
        }
    }

    fn fits<S: ConstrainedModel<V, C> + ?Sized>(&self, s: &S) -> bool {
        self.m.len() == s.dimension() && self.g.len() == s.constraint_count()
    }
}

/// What a SHAKE-type step does with the velocities (sealed: [`Positions`], [`Velocities`]).
pub trait Projection: sealed::Sealed {
    /// The stepper's name.
    const NAME: &'static str;
    /// RATTLE's projection of the momenta onto the tangent space at `q_n+1`.
    const PROJECT: bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Positions {}
    impl Sealed for super::Velocities {}
}

/// SHAKE: the positions are constrained, the velocities are not projected ([`Shake`]).
#[derive(Debug, Clone, Copy)]
pub struct Positions;
/// RATTLE: the velocities are projected onto the tangent space too ([`Rattle`]).
#[derive(Debug, Clone, Copy)]
pub struct Velocities;

impl Projection for Positions {
    const NAME: &'static str = "shake";
    const PROJECT: bool = false;
}
impl Projection for Velocities {
    const NAME: &'static str = "rattle";
    const PROJECT: bool = true;
}

/// SHAKE or RATTLE (`P`: [`Positions`] or [`Velocities`]) on the unpenalized constrained system;
/// see [`Shake`], [`Rattle`] and the [module docs](self).
///
/// Statistics ([`StepStats`]): `iterations` of the constraint solves (Gauss–Seidel sweeps or
/// Newton steps) summed over the completed steps, `max_step_iterations`, `last_iterations`,
/// `last_residual` (`max_c |g_c(q_n+1)|` at the end of the last completed step, ≤ the
/// tolerance), `gradient_evaluations`, `constraint_evaluations` (of the pair `(g, G)`),
/// `cache_hits` (steps that reused `∇V(q_n)`, `G(q_n)`).
#[derive(Debug, Clone)]
pub struct ConstrainedStep<V: ConstraintSpace<C>, C: Vector, P> {
    clock: Clock,
    tolerance: f64,
    max_iterations: usize,
    solver: ShakeSolver,
    /// λ_n (incoming normal velocity removed), λ_solved of the module docs, RATTLE's μ at
    /// q_n+1 (zero for SHAKE); `None` before the first step.
    lambda: Option<C>,
    solved: Option<C>,
    mu: Option<C>,
    /// t_n of the last completed step (NaN before any).
    lambda_t: f64,
    stats: StepStats,
    work: Buffers<Work<V, C>>,
    projection: PhantomData<P>,
}

impl<V: ConstraintSpace<C>, C: Vector, P: Projection> ConstrainedStep<V, C, P> {
    /// The integrator with step `h` (negative: integrate backwards), the
    /// [`ShakeSolver::GaussSeidel`] solver, tolerance [`DEFAULT_TOLERANCE`] on `max_c |g_c|` and
    /// at most [`DEFAULT_MAX_ITERATIONS`] iterations per step. `N` and `M` are inferred from the
    /// system it steps.
    ///
    /// An invalid `h` (zero or non-finite) is reported by `step` as
    /// [`crate::StepErrorKind::InvalidStepSize`].
    pub fn new(h: f64) -> Self {
        Self {
            clock: Clock::new(h),
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            solver: ShakeSolver::default(),
            lambda: None,
            solved: None,
            mu: None,
            lambda_t: f64::NAN,
            stats: StepStats::default(),
            work: Buffers::default(),
            projection: PhantomData,
        }
    }

    /// Set the absolute tolerance on `max_c |g_c(q_n+1)|` (in the units of `g`; keep it above
    /// the rounding error of evaluating `g` at the system's scale).
    ///
    /// # Panics
    /// If `tolerance` is not positive and finite.
    pub fn with_tolerance(mut self, tolerance: f64) -> Self {
        self.set_tolerance(tolerance);
        self
    }

    /// Set the cap on the iterations of one constraint solve (Gauss–Seidel sweeps or Newton
    /// steps). With a cap of 0 only a predictor that already satisfies the constraints is
    /// accepted.
    pub fn with_max_iterations(mut self, max_iterations: usize) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// Choose the constraint solver.
    pub fn with_solver(mut self, solver: ShakeSolver) -> Self {
        self.solver = solver;
        self
    }

    /// The tolerance on `max_c |g_c|`.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// The iteration cap.
    pub fn max_iterations(&self) -> usize {
        self.max_iterations
    }

    /// The constraint solver.
    pub fn solver(&self) -> ShakeSolver {
        self.solver
    }

    /// Work counters, iteration counts and the last residual (see the type's docs).
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// The multipliers `λ_n ≈ λ(t_n)` of the last completed step, `t_n` its start
    /// ([`Self::multipliers_time`]): constraint force `-G(q)ᵀλ`, so `λ ≈ +ω²⟨g⟩` of a penalized
    /// run, the **negative** of Tao & Owhadi's eq. 8 sign (see the [module docs](self), which
    /// also define `λ_n = λ_solved - ν_n`). Zero before the first step.
    pub fn multipliers(&self) -> C {
        Self::multipliers_or_zero(&self.lambda)
    }

    /// The `λ` solved for in the last completed step (`p½ = p_n - (h/2)∇V(q_n) -
    /// (h/2)G(q_n)ᵀλ`): [`Self::multipliers`] plus the multiplier `ν_n` that removes the normal
    /// component of the incoming velocity.
    pub fn solved_multipliers(&self) -> C {
        Self::multipliers_or_zero(&self.solved)
    }

    /// `t_n`, the time the last step started from: the time [`Self::multipliers`] refers to
    /// (NaN before the first step).
    pub fn multipliers_time(&self) -> f64 {
        self.lambda_t
    }

    fn set_tolerance(&mut self, tolerance: f64) {
        assert!(
            tolerance.is_finite() && tolerance > 0.0,
            "SHAKE/RATTLE: the tolerance must be positive and finite, got {tolerance}"
        );
        self.tolerance = tolerance;
    }

    /// Forget the cached `∇V(q)`, `G(q)`. Required before stepping a *different system* with
    /// this integrator (the cache key is the position only).
    pub fn reset(&mut self) {
        if let Some(w) = self.work.as_mut() {
            w.cached = false;
        }
    }

    /// A multiplier vector, or zeros of the system's size before the first step.
    fn multipliers_or_zero(x: &Option<C>) -> C {
        x.clone().unwrap_or_else(C::default_zeros)
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and the
    /// time it started from: [`crate::StepErrorKind::InvalidStepSize`] for a zero or non-finite
    /// `h`, [`crate::StepErrorKind::NotConverged`] (`solver: "SHAKE"`) when the constraint solve
    /// has not reached the tolerance within the iteration cap, [`crate::SolveFailure::Singular`]
    /// when a Newton Jacobian, a Gauss–Seidel denominator or `G M⁻¹ Gᵀ` is singular (dependent
    /// constraints), [`crate::StepErrorKind::NonFinite`] when a gradient, constraint value, iterate
    /// or new state is not finite.
    pub fn step<S: ConstrainedModel<V, C> + ?Sized>(
        &mut self,
        system: &S,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let project = P::PROJECT;
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        check_h(h, k, t)?;
        check_state(system.dimension(), state, k, t)?;
        let half = 0.5 * h;
        let w = self.work.get(|w| w.fits(system), || Work::new(system));
        let (n, m) = (w.m.len(), w.g.len());
        system.masses_into(&mut w.m);
        for i in 0..n {
            w.minv[i] = 1.0 / w.m[i];
        }
        check_finite(&w.minv, Quantity::InverseMasses, k, t)?;

        let stats = &mut self.stats;
        if w.cached && same_bits(&w.cache_q, &state.q) {
            stats.cache_hits += 1;
        } else {
            w.cached = false;
            stats.gradient_evaluations += 1;
            system.gradient_into(&state.q, &mut w.grad0);
            check_finite(&w.grad0, Quantity::Gradient, k, t)?;
            stats.constraint_evaluations += 1;
            system.constraints_jacobian_into(&state.q, &mut w.g, &mut w.jac0);
            check_constraints::<V, C>(&w.g, &w.jac0, k, t)?;
            w.cache_q.copy_from(&state.q);
            w.cached = true;
        }

        // Unconstrained half kick and drift: p̄ = p_n - (h/2)∇V(q_n), q̄ = q_n + h M⁻¹ p̄.
        for i in 0..n {
            w.p0[i] = w.m[i] * state.v[i];
            w.p_bar[i] = w.p0[i] - half * w.grad0[i];
            w.q[i] = state.q[i] + h * w.minv[i] * w.p_bar[i];
        }
        check_finite(&w.q, Quantity::NewPosition, k, t)?;
        // d_c = M⁻¹∇g_c(q_n): q_n+1 = q̄ - Σ_c d_c Λ_c, Λ = (h²/2) λ.
        w.d.scale_columns(&w.jac0, &w.minv);
        let (iterations, residual) = solve_constraints(
            self.solver,
            self.tolerance,
            self.max_iterations,
            stats,
            system,
            w,
            k,
            t,
        )?;

        // p½ = p̄ - (h/2) G(q_n)ᵀ λ = p̄ - G(q_n)ᵀ Λ / h.
        w.p.copy_from(&w.p_bar);
        w.jac0.sub_transpose_mul(&w.big_lambda, h, &mut w.p);
        stats.gradient_evaluations += 1;
        system.gradient_into(&w.q, &mut w.grad1);
        check_finite(&w.grad1, Quantity::Gradient, k, t)?;
        for i in 0..n {
            w.p[i] -= half * w.grad1[i];
        }
        if project {
            // RATTLE: p_n+1 -= G(q_n+1)ᵀ K with G M⁻¹ p_n+1 = 0; μ = K / (h/2).
            normal_impulse(&mut w.solver, &w.jac, &w.minv, &w.p, &mut w.k, k, t)?;
            w.jac.sub_transpose_mul(&w.k, 1.0, &mut w.p);
            for c in 0..m {
                w.mu[c] = w.k[c] / half;
            }
        } else {
            w.mu.as_mut_slice().fill(0.0);
        }
        for i in 0..n {
            w.v1[i] = w.minv[i] * w.p[i];
        }
        check_finite(&w.v1, Quantity::NewVelocity, k, t)?;

        // Reported multipliers: λ_solved, and λ_n = λ_solved - ν_n (module docs).
        let scale = 0.5 * h * h;
        for c in 0..m {
            w.solved[c] = w.big_lambda[c] / scale;
        }
        normal_impulse(&mut w.solver, &w.jac0, &w.minv, &w.p0, &mut w.k_nu, k, t)?;
        for c in 0..m {
            w.lambda[c] = w.solved[c] - w.k_nu[c] / half;
        }
        check_finite(&w.lambda, Quantity::Multipliers, k, t)?;

        state.q.copy_from(&w.q);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.grad0, &mut w.grad1);
        core::mem::swap(&mut w.jac0, &mut w.jac);
        w.cache_q.copy_from(&w.q);
        self.clock.steps += 1;
        for (dst, src) in [
            (&mut self.lambda, &w.lambda),
            (&mut self.solved, &w.solved),
            (&mut self.mu, &w.mu),
        ] {
            match dst {
                Some(x) => x.copy_from(src),
                None => *dst = Some(src.clone()),
            }
        }
        self.lambda_t = t;
        stats.iterations += iterations as u64;
        stats.count_iterations(iterations);
        stats.last_residual = residual;
        Ok(())
    }
}

fn check_constraints<V: ConstraintSpace<C>, C: Vector>(
    g: &C,
    jac: &V::Jacobian,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    check_finite(g, Quantity::Constraints, step, t)?;
    if jac.is_finite() {
        Ok(())
    } else {
        Err(StepError::non_finite(step, t, Quantity::ConstraintJacobian))
    }
}

/// Solve `g(q̄ - Σ_c d_c Λ_c) = 0` for `Λ` from `Λ = 0`: `w.q` holds `q̄` on entry and `q_n+1`
/// on success, `w.big_lambda` receives `Λ`, `w.jac` the Jacobian at `q_n+1` (evaluated by the
/// final convergence check). Returns the iterations and the final residual.
#[allow(clippy::too_many_arguments)]
fn solve_constraints<V: ConstraintSpace<C>, C: Vector, S: ConstrainedModel<V, C> + ?Sized>(
    solver: ShakeSolver,
    tolerance: f64,
    max_iterations: usize,
    stats: &mut StepStats,
    system: &S,
    w: &mut Work<V, C>,
    step: u64,
    t: f64,
) -> Result<(usize, f64), StepError> {
    let m = w.g.len();
    w.big_lambda.as_mut_slice().fill(0.0);
    let mut iterations = 0usize;
    loop {
        stats.constraint_evaluations += 1;
        system.constraints_jacobian_into(&w.q, &mut w.g, &mut w.jac);
        check_constraints::<V, C>(&w.g, &w.jac, step, t)?;
        let residual = max_abs(w.g.as_slice());
        if residual <= tolerance {
            return Ok((iterations, residual));
        }
        if iterations >= max_iterations {
            return Err(StepError::new(
                step,
                t,
                StepErrorKind::NotConverged {
                    solver: "SHAKE",
                    iterations,
                    residual,
                },
            ));
        }
        match solver {
            ShakeSolver::GaussSeidel => {
                // One sweep: constraint c is corrected with g_c and ∇g_c at the current Q.
                for c in 0..m {
                    let gc = if c == 0 {
                        w.g[0]
                    } else {
                        stats.constraint_evaluations += 1;
                        let gc = system.constraint_row_into(&w.q, c, &mut w.g, &mut w.jac);
                        if !gc.is_finite() {
                            return Err(StepError::non_finite(step, t, Quantity::Constraints));
                        }
                        if !w.jac.row_is_finite(c) {
                            return Err(StepError::non_finite(
                                step,
                                t,
                                Quantity::ConstraintJacobian,
                            ));
                        }
                        gc
                    };
                    let denom = w.jac.rows_dot(&w.d, c);
                    let scale = w.jac.row_norm(c) * w.d.row_norm(c);
                    // `scale` is finite (checked G, positive masses); NaN cannot reach here.
                    if denom.abs() <= singular_threshold(1) * scale || denom.is_nan() {
                        return Err(SolveFailure::Singular {
                            n: 1,
                            pivot: denom.abs(),
                            max_pivot: scale,
                        }
                        .at(step, t));
                    }
                    let dl = gc / denom;
                    w.big_lambda[c] += dl;
                    w.d.sub_row(c, dl, &mut w.q);
                }
            }
            ShakeSolver::Newton => {
                // A_rc = ∇g_r(Q) · M⁻¹∇g_c(q_n): the Jacobian of Λ ↦ -g(q̄ - Σ d_c Λ_c).
                w.k.copy_from(&w.g);
                w.solver
                    .solve_newton(&w.jac, &w.d, &mut w.k)
                    .map_err(|e| e.at(step, t))?;
                for c in 0..m {
                    w.big_lambda[c] += w.k[c];
                }
                for c in 0..m {
                    w.d.sub_row(c, w.k[c], &mut w.q);
                }
            }
        }
        iterations += 1;
        check_finite(&w.q, Quantity::ShakeIterate, step, t)?;
    }
}

/// `K` with `(G M⁻¹ Gᵀ) K = G M⁻¹ p` into `out`: `p - GᵀK` is the M-orthogonal projection of `p`
/// onto the tangent space `{G M⁻¹ p = 0}`.
fn normal_impulse<V: ConstraintSpace<C>, C: Vector>(
    solver: &mut V::ConstraintSolver,
    jac: &V::Jacobian,
    minv: &V,
    p: &V,
    out: &mut C,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    for r in 0..out.len() {
        out[r] = jac.weighted_row_dot(r, minv, p);
    }
    solver.solve_gram(jac, minv, out).map_err(|e| e.at(step, t))
}

/// `max_c |x_c|`, NaN-propagating (a NaN residual never counts as converged).
#[inline]
fn max_abs(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m: f64, v| {
        let a = v.abs();
        if a > m || a.is_nan() { a } else { m }
    })
}

/// The cached `∇V`, `G` do not depend on `h`: changing it keeps the cache.
impl<V: ConstraintSpace<C>, C: Vector, P: Projection> Clocked for ConstrainedStep<V, C, P> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        P::NAME
    }
}

impl<S, V, C, P> Stepper<S, V> for ConstrainedStep<V, C, P>
where
    S: ConstrainedModel<V, C> + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
    P: Projection,
{
    fn step(&mut self, target: &S, state: &mut StateOf<V>) -> Result<(), StepError> {
        ConstrainedStep::step(self, target, state)
    }
}

/// Saves `h`, the tolerance, the iteration cap, the solver and the step counter (exact bits); the
/// cached `∇V(q_n)`, `G(q_n)` are recomputed from the restored state, giving the same bits. The
/// last step's multipliers are outputs, not saved.
impl<V: ConstraintSpace<C>, C: Vector, P: Projection> Resumable for ConstrainedStep<V, C, P> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.clock.h);
        out.set_f64("tolerance", self.tolerance);
        out.set_u64("max_iterations", self.max_iterations as u64);
        out.set_str("solver", self.solver.name());
        out.set_u64("steps", self.clock.steps);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.tolerance = finite_param("tolerance", from.f64("tolerance")?)?;
        self.max_iterations = from.u64("max_iterations")? as usize;
        self.solver = match from.str("solver")? {
            "gauss-seidel" => ShakeSolver::GaussSeidel,
            "newton" => ShakeSolver::Newton,
            other => {
                return Err(CheckpointError::Mismatch(format!(
                    "unknown SHAKE solver {other}"
                )));
            }
        };
        self.clock.restore(from)?;
        self.reset();
        Ok(())
    }
}

/// SHAKE (Ryckaert, Ciccotti, Berendsen; Fernández-Pendás, eq. 4, `docs/INTEGRATORS.md` §7) on the
/// unpenalized constrained system of a [`crate::MechanicalSystem`]:
///
/// ```text
/// p½    = p_n - (h/2) ∇V(q_n) - (h/2) G(q_n)ᵀ λ
/// q_n+1 = q_n + h M⁻¹ p½,     λ such that g(q_n+1) = 0
/// p_n+1 = p½ - (h/2) ∇V(q_n+1)
/// ```
///
/// Order 2 in positions; `|g(q_n)| ≤` tolerance after every step; the velocities are not tangent
/// to the constraint manifold (use [`Rattle`] for that) and their normal component is only
/// first-order accurate. See the [module docs](self) for the solvers, the sign of λ and what
/// [`Shake::multipliers`] reports.
///
/// ```
/// use zs_runtime::{mechanical_system, Shake, ShakeSolver, State};
/// /// A planar pendulum of length 1 under gravity: V = y, g = x² + y² - 1.
/// struct Pendulum;
/// #[mechanical_system]
/// impl Pendulum {
///     fn potential(&self, q: &[f64; 2]) -> f64 { q[1] }
///     fn constraints(&self, q: &[f64; 2]) -> [f64; 1] { [q[0] * q[0] + q[1] * q[1] - 1.0] }
/// }
/// let mut shake = Shake::new(0.01).with_solver(ShakeSolver::Newton).with_tolerance(1e-13);
/// let mut s = State::new([1.0, 0.0], [0.0, 0.0]); // horizontal, at rest
/// for _ in 0..100 {
///     shake.step(&Pendulum, &mut s).unwrap();
///     assert!(Pendulum.constraints(&s.q)[0].abs() <= 1e-13);
/// }
/// // The rod pulls the bob towards the pivot: λ > 0 in this crate's sign.
/// assert!(shake.multipliers()[0] > 0.0);
/// ```
pub type Shake<V, C> = ConstrainedStep<V, C, Positions>;

/// RATTLE (Andersen; Fernández-Pendás, `docs/INTEGRATORS.md` §8): [`Shake`] followed by the
/// projection of the momenta onto the tangent space of the constraint manifold,
///
/// ```text
/// p_n+1 = p½ - (h/2) ∇V(q_n+1) - (h/2) G(q_n+1)ᵀ μ,     G(q_n+1) M⁻¹ p_n+1 = 0
/// ```
///
/// (`μ` from an `m × m` symmetric solve). A map of the tangent bundle: `G M⁻¹ p = 0` to round-off
/// after every step; symplectic, symmetric (time-reversible), order 2 in positions and velocities
/// (Fernández-Pendás; measured in the tests). Same positions as SHAKE from the same start.
pub type Rattle<V, C> = ConstrainedStep<V, C, Velocities>;

impl<V: ConstraintSpace<C>, C: Vector> Rattle<V, C> {
    /// RATTLE's velocity multipliers `μ ≈ λ(t_n+1)` of the last completed step (the
    /// projection at `q_n+1`; same sign as [`Rattle::multipliers`]). Zero before the first step.
    pub fn velocity_multipliers(&self) -> C {
        Self::multipliers_or_zero(&self.mu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_abs_propagates_nan() {
        assert_eq!(max_abs(&[1.0, -3.0, 2.0]), 3.0);
        assert!(max_abs(&[1.0, f64::NAN, 2.0]).is_nan());
        assert_eq!(max_abs(&[]), 0.0);
    }
}
