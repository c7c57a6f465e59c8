//! The Newmark family with γ = ½ (`docs/INTEGRATORS.md` §5–6; Tao & Owhadi §2.1):
//! [`Newmark`] (Integrator 2, eq. 12, Newton to a tolerance), [`LinearlyImplicitNewmark`]
//! (eq. 12 with exactly one Newton step: the paper's "one-step Newmark", Fig. 1 row 5) and
//! [`PushForwardNewmark`] (Integrator 3, eq. 14, Newton on `a_k`).
//!
//! All three solve their Newton systems with the matrix `M + βh²H(·)` through
//! [`crate::linalg::solve_shifted`] (Cholesky, falling back to pivoted LU), on the stack.
//!
//! Convergence is measured as a *position* residual relative to the size of the configuration:
//! a step's Newton solve has converged when `ρ ≤ tol`, with
//!
//! ```text
//! Newmark:       ρ(q) = ‖q − c_k + βh² M⁻¹∇V(q)‖∞ / max(1, ‖q‖∞),   (M⁻¹F(q), F of eq. 12)
//! Push-forward:  ρ(a) = ½h² ‖a + M⁻¹∇V(x_k + βh² a)‖∞ / max(1, ‖x_k‖∞)  (the position error
//!                                                      ½h²·δa an error δa in a_k would cause)
//! ```
//!
//! The residual of each iterate is computed before deciding to iterate again, so the reported
//! residual is that of the returned (or, on failure, the last) iterate. Its round-off floor is a
//! few ulps of `‖q‖∞` (≈ 1e-16 relative): a tolerance below ~1e-15 may never be met.

use core::marker::PhantomData;

use super::zhang_skeel::Eval;
use super::{Buffers, StepStats, check_finite, check_h, check_matrix, check_state, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut, finite_param};
use crate::error::{Quantity, StepErrorKind};
use crate::linalg::{ShiftedSolve, SolveOptions};
use crate::model::HessianPart;
use crate::stepper::{Clock, Clocked};
use crate::vector::{Vector, inf_norm};
use crate::{Model, StateOf, StepError, Stepper};

/// Default Newton tolerance on the relative position residual `ρ` (see the module docs).
pub const DEFAULT_NEWTON_TOLERANCE: f64 = 1e-12;
/// Default cap on Newton iterations (linear solves) per nonlinear solve.
pub const DEFAULT_NEWTON_MAX_ITERATIONS: usize = 50;

fn check_beta(beta: f64) {
    assert!(beta.is_finite(), "Newmark: beta must be finite, got {beta}");
}

fn check_tolerance(tol: f64) {
    assert!(
        tol.is_finite() && tol > 0.0,
        "Newmark: the Newton tolerance must be finite and positive, got {tol}"
    );
}

fn check_max_iterations(n: usize) {
    assert!(n >= 1, "Newmark: at least one Newton iteration is needed");
}

/// One Newton iteration's linear solve, `(M + sH(y)) δ = rhs` with `rhs` given in `delta`:
/// evaluates `H(y)` into `e.hess` and counts the iteration.
#[allow(clippy::too_many_arguments)]
fn newton_solve<V: Vector, P: Model<V> + ?Sized>(
    stats: &mut StepStats,
    e: &mut Eval<V>,
    potential: &P,
    y: &V,
    s: f64,
    delta: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    potential.hessian_into(y, &mut e.hess);
    e.follow(potential, HessianPart::Full);
    check_matrix::<V>(&e.hess, Quantity::Hessian, step, t)?;
    let how = e
        .solver
        .solve_shifted(&e.m, s, &e.hess, delta, &SolveOptions::default())
        .map_err(|err| err.at(step, t))?;
    stats.iterations += 1;
    stats.hessian_evaluations += 1;
    stats.count_solve(how);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Newmark (eq. 12) and its linearly-implicit variant share one engine.

/// Buffers of a Newmark step, made at the first step: the evaluation (masses, gradient,
/// Hessian, solver), `a_k` with its key `q_k` (it does not depend on `h`), the Newton iterate and
/// its residual, the new velocity.
#[derive(Debug)]
struct NewmarkWork<V: Vector> {
    eval: Eval<V>,
    a0: V,
    a1: V,
    c: V,
    q: V,
    r: V,
    delta: V,
    v1: V,
    cache_q: V,
    cached: bool,
}

impl<V: Vector> NewmarkWork<V> {
    fn new<P: Model<V> + ?Sized>(p: &P) -> Self {
        let n = p.dimension();
        Self {
            eval: Eval::new(p, HessianPart::Full),
            a0: V::zeros(n),
            a1: V::zeros(n),
            c: V::zeros(n),
            q: V::zeros(n),
            r: V::zeros(n),
            delta: V::zeros(n),
            v1: V::zeros(n),
            cache_q: V::zeros(n),
            cached: false,
        }
    }
}

/// How eq. 12's nonlinear equation is solved (sealed: [`ToTolerance`], [`OneNewtonStep`]).
pub trait NewtonSolve: sealed::Sealed {
    /// The stepper's name.
    const NAME: &'static str;
    /// Newton to the tolerance (`true`) or exactly one Newton step.
    const EXACT: bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ToTolerance {}
    impl Sealed for super::OneNewtonStep {}
}

/// Newton's method to a tolerance: [`Newmark`].
#[derive(Debug, Clone, Copy)]
pub struct ToTolerance;
/// Exactly one Newton step: [`LinearlyImplicitNewmark`].
#[derive(Debug, Clone, Copy)]
pub struct OneNewtonStep;

impl NewtonSolve for ToTolerance {
    const NAME: &'static str = "newmark";
    const EXACT: bool = true;
}
impl NewtonSolve for OneNewtonStep {
    const NAME: &'static str = "linearly-implicit-newmark";
    const EXACT: bool = false;
}

/// Newmark with γ = ½ (eq. 12), its nonlinear equation solved as `S` says; see [`Newmark`] and
/// [`LinearlyImplicitNewmark`].
///
/// Statistics ([`StepStats`]): `gradient_evaluations` (one per Newton iterate, including the
/// one found converged), `hessian_evaluations` and `iterations` (one per Newton iteration,
/// i.e. linear solve), `max_step_iterations`, `last_iterations`, `last_residual` (the relative
/// `ρ` of the last step's final iterate), `cache_hits`, `cholesky_solves`, `lu_fallbacks`.
#[derive(Debug, Clone)]
pub struct NewmarkEq12<V: Vector, S> {
    beta: f64,
    tol: f64,
    max_iter: usize,
    clock: Clock,
    stats: StepStats,
    work: Buffers<NewmarkWork<V>>,
    solve: PhantomData<S>,
}

impl<V: Vector, S: NewtonSolve> NewmarkEq12<V, S> {
    /// The integrator with parameter `beta` (β; unconditionally linearly stable for β ≥ ¼) and
    /// step `h` (negative: integrate backwards). An invalid `h` (zero, non-finite) is reported
    /// by `step` as [`crate::StepErrorKind::InvalidStepSize`].
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn new(beta: f64, h: f64) -> Self {
        check_beta(beta);
        Self {
            beta,
            tol: DEFAULT_NEWTON_TOLERANCE,
            max_iter: DEFAULT_NEWTON_MAX_ITERATIONS,
            clock: Clock::new(h),
            stats: StepStats::default(),
            work: Buffers::default(),
            solve: PhantomData,
        }
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Change β.
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn set_beta(&mut self, beta: f64) {
        check_beta(beta);
        self.beta = beta;
    }

    /// Forget the cached acceleration (required before stepping a different potential).
    pub fn reset(&mut self) {
        if let Some(w) = self.work.as_mut() {
            w.cached = false;
        }
    }

    /// Work counters (see the type's docs).
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and the
    /// time it started from: [`crate::StepErrorKind::InvalidStepSize`],
    /// [`crate::SolveFailure::Singular`] (`M + βh²H` singular),
    /// [`crate::StepErrorKind::NonFinite`], and, for [`Newmark`],
    /// [`crate::StepErrorKind::NotConverged`].
    pub fn step<P: Model<V> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let exact = S::EXACT;
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        check_h(h, k, t)?;
        check_state(potential.dimension(), state, k, t)?;
        let w = self.work.get(
            |w| w.eval.fits(potential, HessianPart::Full),
            || NewmarkWork::new(potential),
        );
        let n = state.q.len();
        potential.masses_into(&mut w.eval.m);
        let (h2, s) = (h * h, self.beta * h * h);
        if w.cached && same_bits(&w.cache_q, &state.q) {
            self.stats.cache_hits += 1;
        } else {
            w.cached = false;
            self.stats.gradient_evaluations += 1;
            potential.gradient_into(&state.q, &mut w.eval.g);
            check_finite(&w.eval.g, Quantity::Gradient, k, t)?;
            for i in 0..n {
                w.a0[i] = -w.eval.g[i] / w.eval.m[i];
            }
            check_finite(&w.a0, Quantity::Acceleration, k, t)?;
            w.cache_q.copy_from(&state.q);
            w.cached = true;
        }
        // F(q) = M(q − c_k) + βh²∇V(q), c_k = q_k + h q̇_k + (h²/2)(1 − 2β) a_k;
        // predictor q_k + h q̇_k + (h²/2) a_k.
        for i in 0..n {
            w.c[i] = state.q[i] + h * state.v[i] + 0.5 * h2 * (1.0 - 2.0 * self.beta) * w.a0[i];
            w.q[i] = state.q[i] + h * state.v[i] + 0.5 * h2 * w.a0[i];
        }
        check_finite(&w.q, Quantity::NewmarkPredictor, k, t)?;
        let mut iterations = 0usize;
        let residual = loop {
            self.stats.gradient_evaluations += 1;
            potential.gradient_into(&w.q, &mut w.eval.g);
            check_finite(&w.eval.g, Quantity::Gradient, k, t)?;
            // r = M⁻¹F(q)
            for i in 0..n {
                w.r[i] = w.q[i] - w.c[i] + s * w.eval.g[i] / w.eval.m[i];
            }
            let rho = inf_norm(&w.r) / inf_norm(&w.q).max(1.0);
            let done = if exact {
                rho <= self.tol
            } else {
                iterations == 1
            };
            if done {
                break rho;
            }
            if !rho.is_finite() {
                return Err(StepError::non_finite(k, t, Quantity::NewmarkResidual));
            }
            if iterations >= self.max_iter {
                self.stats.last_iterations = iterations;
                self.stats.last_residual = rho;
                return Err(StepError::new(
                    k,
                    t,
                    StepErrorKind::NotConverged {
                        solver: "Newmark Newton",
                        iterations,
                        residual: rho,
                    },
                ));
            }
            // (M + βh²H(q)) δ = −F(q) = −M r
            for i in 0..n {
                w.delta[i] = -w.eval.m[i] * w.r[i];
            }
            newton_solve(
                &mut self.stats,
                &mut w.eval,
                potential,
                &w.q,
                s,
                &mut w.delta,
                k,
                t,
            )?;
            for i in 0..n {
                w.q[i] += w.delta[i];
            }
            check_finite(&w.q, Quantity::NewtonIterate, k, t)?;
            iterations += 1;
        };
        for i in 0..n {
            w.a1[i] = -w.eval.g[i] / w.eval.m[i];
        }
        check_finite(&w.a1, Quantity::Acceleration, k, t)?;
        // q̇_k+1 = q̇_k + (h/2)(a_k + a_k+1)
        for i in 0..n {
            w.v1[i] = state.v[i] + 0.5 * h * (w.a0[i] + w.a1[i]);
        }
        check_finite(&w.v1, Quantity::NewVelocity, k, t)?;
        state.q.copy_from(&w.q);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.a0, &mut w.a1);
        w.cache_q.copy_from(&w.q);
        self.clock.steps += 1;
        self.stats.last_residual = residual;
        self.stats.count_iterations(iterations);
        Ok(())
    }
}

impl<V: Vector, S: NewtonSolve> Clocked for NewmarkEq12<V, S> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        S::NAME
    }
}

impl<P: Model<V> + ?Sized, V: Vector, S: NewtonSolve> Stepper<P, V> for NewmarkEq12<V, S> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        NewmarkEq12::step(self, target, state)
    }
}

/// Saves `h`, β, the Newton tolerance and cap and the step counter (exact bits); the cached
/// `a_k` is recomputed from the restored state, giving the same bits.
impl<V: Vector, S> Resumable for NewmarkEq12<V, S> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        save_newton(out, &self.clock, self.beta, self.tol, self.max_iter);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        (self.beta, self.tol, self.max_iter) = restore_newton(from, &mut self.clock)?;
        if let Some(w) = self.work.as_mut() {
            w.cached = false;
        }
        Ok(())
    }
}

/// The checkpoint of a Newton-solved Newmark stepper: `h`, β, tolerance, cap, steps.
fn save_newton(out: &mut ScopeMut<'_>, clock: &Clock, beta: f64, tol: f64, max_iter: usize) {
    out.set_f64("h", clock.h);
    out.set_f64("beta", beta);
    out.set_f64("tolerance", tol);
    out.set_u64("max_iterations", max_iter as u64);
    out.set_u64("steps", clock.steps);
}

/// `(β, tolerance, cap)` of [`save_newton`], the clock restored.
fn restore_newton(
    from: &Scope<'_>,
    clock: &mut Clock,
) -> Result<(f64, f64, usize), CheckpointError> {
    clock.restore(from)?;
    Ok((
        finite_param("beta", from.f64("beta")?)?,
        finite_param("tolerance", from.f64("tolerance")?)?,
        from.u64("max_iterations")? as usize,
    ))
}

/// Newmark with γ = ½ (Tao & Owhadi, Integrator 2, eq. 12), solved by Newton's method:
///
/// ```text
/// q_k+1 = q_k + h q̇_k + (h²/2)[(1 − 2β) a_k + 2β a_k+1]
/// q̇_k+1 = q̇_k + (h/2)(a_k + a_k+1),        a_k = −M⁻¹∇V(q_k)
/// ```
///
/// Implicit in `q_k+1`: Newton on `F(q) = M(q − q_k − h q̇_k − (h²/2)(1 − 2β) a_k) + βh²∇V(q) = 0`
/// with Jacobian `M + βh²H(q)`, from the predictor `q_k + h q̇_k + (h²/2) a_k`, until the relative
/// residual `ρ = ‖M⁻¹F(q)‖∞ / max(1, ‖q‖∞)` is at most the tolerance ([`DEFAULT_NEWTON_TOLERANCE`],
/// see [`Newmark::with_tolerance`]) or the iteration cap ([`DEFAULT_NEWTON_MAX_ITERATIONS`],
/// [`Newmark::with_max_iterations`]) is reached, which is a [`crate::StepErrorKind::NotConverged`]
/// (`solver: "Newmark Newton"`) carrying the iterations and the residual.
///
/// Properties (paper §2.1): order 2, symmetric (time-reversible, to the Newton tolerance),
/// unconditionally linearly stable for β ≥ ¼; variational but **not** symplectic in the
/// canonical variables `(q, M q̇)`: its push-forward by `η(q, q̇) = (q + βh²M⁻¹∇V(q), q̇)`
/// (eq. 13) is [`PushForwardNewmark`], which is.
///
/// Cost per step: one gradient per Newton iterate plus one Hessian and one `n×n` solve per
/// Newton iteration; `a_k+1 = −M⁻¹∇V(q_k+1)` comes from the last residual evaluation and is
/// cached (keyed by the bit pattern of `q`; it does not depend on `h`) for the next step.
///
/// ```
/// use zs_runtime::{Newmark, Potential, State};
/// struct Quartic; // V = q⁴/4
/// impl Potential<1> for Quartic {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 0.25 * q[0].powi(4) }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0].powi(3)] }
///     fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] { [[3.0 * q[0] * q[0]]] }
///     fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] { [6.0 * q[0] * a[0] * a[0]] }
/// }
/// let mut nm = Newmark::new(0.25, 0.1).with_tolerance(1e-13).with_max_iterations(20);
/// let mut s = State::new([1.0], [0.0]);
/// for _ in 0..100 { nm.step(&Quartic, &mut s).unwrap(); }
/// assert!(nm.stats().last_residual <= 1e-13);
/// assert!(nm.stats().max_step_iterations <= 5);
/// ```
pub type Newmark<V> = NewmarkEq12<V, ToTolerance>;

/// "One-step" (linearly-implicit) Newmark: eq. 12 with **exactly one** Newton step from the
/// predictor `q_k + h q̇_k + (h²/2) a_k`,
///
/// ```text
/// q⁰ = q_k + h q̇_k + (h²/2) a_k,     (M + βh²H(q⁰)) δ = −F(q⁰),     q_k+1 = q⁰ + δ
/// q̇_k+1 = q̇_k + (h/2)(a_k + a_k+1),  a_k+1 = −M⁻¹∇V(q_k+1)
/// ```
///
/// (`F` as in [`Newmark`]). The paper's Fig. 1 row 5: consistent (order 2) but neither symplectic
/// nor, in general, symmetric, and visibly less accurate than Z&S at large steps. It never
/// reports `NotConverged`; the residual `ρ` of eq. 12 left after the one step is available as
/// `stats().last_residual`.
///
/// Cost per step: two gradients, one Hessian and one `n×n` solve (`a_k` is cached).
pub type LinearlyImplicitNewmark<V> = NewmarkEq12<V, OneNewtonStep>;

impl<V: Vector> Newmark<V> {
    /// Newton tolerance on the relative residual `ρ` (default [`DEFAULT_NEWTON_TOLERANCE`]).
    ///
    /// # Panics
    /// If `tol` is not finite and positive.
    pub fn with_tolerance(mut self, tol: f64) -> Self {
        check_tolerance(tol);
        self.tol = tol;
        self
    }

    /// Cap on Newton iterations per step (default [`DEFAULT_NEWTON_MAX_ITERATIONS`]).
    ///
    /// # Panics
    /// If `n` is zero.
    pub fn with_max_iterations(mut self, n: usize) -> Self {
        check_max_iterations(n);
        self.max_iter = n;
        self
    }

    /// The Newton tolerance.
    pub fn tolerance(&self) -> f64 {
        self.tol
    }

    /// The cap on Newton iterations per step.
    pub fn max_iterations(&self) -> usize {
        self.max_iter
    }
}

// ---------------------------------------------------------------------------------------------
// Push-forward Newmark (eq. 14).

/// Buffers of a push-forward Newmark step, made at the first step: the evaluation, `a_k` with
/// its key (the bits of `x_k` and `h²`; `a` depends on `h` through `βh²`), the Newton iterate.
#[derive(Debug)]
struct PfWork<V: Vector> {
    eval: Eval<V>,
    a0: V,
    a1: V,
    y: V,
    r: V,
    delta: V,
    x1: V,
    v1: V,
    cache_x: V,
    cache_key: Option<u64>,
}

/// Push-forward Newmark (Tao & Owhadi, Integrator 3, eq. 14): Newmark pushed forward by
/// `η(q, q̇) = (q + βh²M⁻¹∇V(q), q̇)` (eq. 13),
///
/// ```text
/// x_k+1 = x_k + h v_k + ½h² a_k
/// v_k+1 = v_k + ½h (a_k + a_k+1)
/// a_k   = −M⁻¹∇V(x_k + βh² a_k)       (nonlinear in a_k)
/// ```
///
/// `a_k` is found by Newton on `G(a) = M a + ∇V(x_k + βh² a) = 0` with Jacobian `M + βh²H(x_k + βh²
/// a)`, starting from `a = 0` — so the first iterate is exactly the linearly-implicit `a_k` of Z&Ss
/// (eq. 18; the paper's "partial Newton solve" remark) — until `ρ = ½h²‖M⁻¹G(a)‖∞ / max(1, ‖x_k‖∞)
/// ≤ tol` (the position error the residual would cause); the cap on iterations gives
/// [`crate::StepErrorKind::NotConverged`] (`solver: "push-forward Newmark Newton"`). Note `x_k +
/// βh² a_k` is Newmark's `q_k` (eq. 13).
///
/// Properties: **symplectic** in `(x, M v)` (the Euler–Lagrange equations of the discrete
/// Lagrangian eq. 15), hence to the Newton tolerance in practice; **symmetric**; order 2;
/// unconditionally linearly stable for β ≥ ¼. Z&S (eq. 3) is its variational linearization.
///
/// Cost per step: one nonlinear solve (at `x_k+1`; `a_k` is cached, keyed by the bit patterns of
/// `x` and `h²`), each Newton iteration one gradient, one Hessian and one `n×n` solve, plus one
/// gradient to confirm convergence.
///
/// Statistics ([`StepStats`]): as [`NewmarkEq12`]'s; `last_iterations` counts both solves of a
/// step whose cache missed.
#[derive(Debug, Clone)]
pub struct PushForwardNewmark<V: Vector> {
    beta: f64,
    tol: f64,
    max_iter: usize,
    clock: Clock,
    stats: StepStats,
    work: Buffers<PfWork<V>>,
}

impl<V: Vector> PushForwardNewmark<V> {
    /// The integrator with parameter `beta` (β) and step `h` (negative: integrate backwards).
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn new(beta: f64, h: f64) -> Self {
        check_beta(beta);
        Self {
            beta,
            tol: DEFAULT_NEWTON_TOLERANCE,
            max_iter: DEFAULT_NEWTON_MAX_ITERATIONS,
            clock: Clock::new(h),
            stats: StepStats::default(),
            work: Buffers::default(),
        }
    }

    /// Newton tolerance on the relative residual `ρ` (default [`DEFAULT_NEWTON_TOLERANCE`]).
    ///
    /// # Panics
    /// If `tol` is not finite and positive.
    pub fn with_tolerance(mut self, tol: f64) -> Self {
        check_tolerance(tol);
        self.tol = tol;
        self
    }

    /// Cap on Newton iterations per nonlinear solve (default
    /// [`DEFAULT_NEWTON_MAX_ITERATIONS`]).
    ///
    /// # Panics
    /// If `n` is zero.
    pub fn with_max_iterations(mut self, n: usize) -> Self {
        check_max_iterations(n);
        self.max_iter = n;
        self
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Change β (drops the cached `a`).
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn set_beta(&mut self, beta: f64) {
        check_beta(beta);
        self.beta = beta;
        self.reset();
    }

    /// The Newton tolerance.
    pub fn tolerance(&self) -> f64 {
        self.tol
    }

    /// The cap on Newton iterations per nonlinear solve.
    pub fn max_iterations(&self) -> usize {
        self.max_iter
    }

    /// Forget the cached `a` (required before stepping a different potential).
    pub fn reset(&mut self) {
        if let Some(w) = self.work.as_mut() {
            w.cache_key = None;
        }
    }

    /// Work counters (see the type's docs).
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and the
    /// time it started from: [`crate::StepErrorKind::InvalidStepSize`],
    /// [`crate::SolveFailure::Singular`], [`crate::StepErrorKind::NonFinite`],
    /// [`crate::StepErrorKind::NotConverged`].
    pub fn step<P: Model<V> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        check_h(h, k, t)?;
        check_state(potential.dimension(), state, k, t)?;
        let n = potential.dimension();
        let w = self.work.get(
            |w| w.eval.fits(potential, HessianPart::Full),
            || PfWork {
                eval: Eval::new(potential, HessianPart::Full),
                a0: V::zeros(n),
                a1: V::zeros(n),
                y: V::zeros(n),
                r: V::zeros(n),
                delta: V::zeros(n),
                x1: V::zeros(n),
                v1: V::zeros(n),
                cache_x: V::zeros(n),
                cache_key: None,
            },
        );
        potential.masses_into(&mut w.eval.m);
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let solver = PfSolve {
            s: self.beta * h2,
            h2,
            tol: self.tol,
            max_iter: self.max_iter,
        };
        let mut iterations = 0;
        if w.cache_key == Some(h2_bits) && same_bits(&w.cache_x, &state.q) {
            self.stats.cache_hits += 1;
        } else {
            w.cache_key = None;
            iterations += solver.solve(
                &mut self.stats,
                PfBuffers {
                    eval: &mut w.eval,
                    y: &mut w.y,
                    r: &mut w.r,
                    delta: &mut w.delta,
                    a: &mut w.a0,
                },
                potential,
                &state.q,
                k,
                t,
            )?;
            w.cache_x.copy_from(&state.q);
            w.cache_key = Some(h2_bits);
        }
        // x_k+1 = x_k + h v_k + ½h² a_k
        for i in 0..n {
            w.x1[i] = state.q[i] + h * state.v[i] + 0.5 * h2 * w.a0[i];
        }
        check_finite(&w.x1, Quantity::NewPosition, k, t)?;
        iterations += solver.solve(
            &mut self.stats,
            PfBuffers {
                eval: &mut w.eval,
                y: &mut w.y,
                r: &mut w.r,
                delta: &mut w.delta,
                a: &mut w.a1,
            },
            potential,
            &w.x1,
            k,
            t,
        )?;
        // v_k+1 = v_k + ½h (a_k + a_k+1)
        for i in 0..n {
            w.v1[i] = state.v[i] + 0.5 * h * (w.a0[i] + w.a1[i]);
        }
        check_finite(&w.v1, Quantity::NewVelocity, k, t)?;
        state.q.copy_from(&w.x1);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.a0, &mut w.a1);
        w.cache_x.copy_from(&w.x1);
        w.cache_key = Some(h2_bits);
        self.clock.steps += 1;
        self.stats.count_iterations(iterations);
        Ok(())
    }
}

/// The nonlinear solve of eq. 14 at one position.
struct PfSolve {
    s: f64,
    h2: f64,
    tol: f64,
    max_iter: usize,
}

/// The buffers one nonlinear solve works in; `a` receives the solution.
struct PfBuffers<'w, V: Vector> {
    eval: &'w mut Eval<V>,
    y: &'w mut V,
    r: &'w mut V,
    delta: &'w mut V,
    a: &'w mut V,
}

impl PfSolve {
    /// Solve `M a + ∇V(x + βh² a) = 0` by Newton from `a = 0` into `w.a`; returns the
    /// iterations.
    #[allow(clippy::too_many_arguments)]
    fn solve<V: Vector, P: Model<V> + ?Sized>(
        &self,
        stats: &mut StepStats,
        w: PfBuffers<'_, V>,
        potential: &P,
        x: &V,
        step: u64,
        t: f64,
    ) -> Result<usize, StepError> {
        let n = x.len();
        let s = self.s;
        let scale = inf_norm(x).max(1.0);
        let a = w.a;
        a.as_mut_slice().fill(0.0);
        let mut iterations = 0usize;
        loop {
            for i in 0..n {
                w.y[i] = x[i] + s * a[i];
            }
            stats.gradient_evaluations += 1;
            potential.gradient_into(w.y, &mut w.eval.g);
            check_finite(&w.eval.g, Quantity::Gradient, step, t)?;
            // r = M⁻¹G(a) = a + M⁻¹∇V(y)
            for i in 0..n {
                w.r[i] = a[i] + w.eval.g[i] / w.eval.m[i];
            }
            let rho = 0.5 * self.h2 * inf_norm(w.r) / scale;
            stats.last_residual = rho;
            if rho <= self.tol {
                return Ok(iterations);
            }
            if !rho.is_finite() {
                return Err(StepError::non_finite(
                    step,
                    t,
                    Quantity::PushForwardResidual,
                ));
            }
            if iterations >= self.max_iter {
                return Err(StepError::new(
                    step,
                    t,
                    StepErrorKind::NotConverged {
                        solver: "push-forward Newmark Newton",
                        iterations,
                        residual: rho,
                    },
                ));
            }
            // (M + βh²H(y)) δ = −G(a) = −M r
            for i in 0..n {
                w.delta[i] = -w.eval.m[i] * w.r[i];
            }
            newton_solve(stats, w.eval, potential, w.y, s, w.delta, step, t)?;
            for i in 0..n {
                a[i] += w.delta[i];
            }
            check_finite(a, Quantity::NewtonIterate, step, t)?;
            iterations += 1;
        }
    }
}

/// The cached `a` depends on `h` only through `h²`: it is reused when `h` changes sign and
/// recomputed otherwise.
impl<V: Vector> Clocked for PushForwardNewmark<V> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "push-forward-newmark"
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Stepper<P, V> for PushForwardNewmark<V> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        PushForwardNewmark::step(self, target, state)
    }
}

/// Saves `h`, β, the Newton tolerance and cap and the step counter (exact bits); the cached
/// `a_k` is recomputed from the restored state, giving the same bits.
impl<V: Vector> Resumable for PushForwardNewmark<V> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        save_newton(out, &self.clock, self.beta, self.tol, self.max_iter);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        (self.beta, self.tol, self.max_iter) = restore_newton(from, &mut self.clock)?;
        self.reset();
        Ok(())
    }
}
