//! The Newmark family with γ = ½ (`INTEGRATORS.md` §5–6; Tao & Owhadi §2.1):
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

use super::{check_finite, check_h, same_bits};
use crate::linalg::{solve_shifted, Factorization};
use crate::{Potential, State, StepError, Stepper};

/// Default Newton tolerance on the relative position residual `ρ` (see the module docs).
pub const DEFAULT_NEWTON_TOLERANCE: f64 = 1e-12;
/// Default cap on Newton iterations (linear solves) per nonlinear solve.
pub const DEFAULT_NEWTON_MAX_ITERATIONS: usize = 50;

/// Work counters of the Newmark family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewmarkStats {
    /// Gradient evaluations `∇V` (one per Newton iterate, including the one that is found
    /// converged).
    pub gradient_evaluations: u64,
    /// Hessian evaluations `H` (one per Newton iteration).
    pub hessian_evaluations: u64,
    /// Newton iterations, i.e. linear solves with `M + βh²H`, over all steps.
    pub newton_iterations: u64,
    /// The most Newton iterations any single step needed.
    pub max_step_iterations: usize,
    /// Steps that reused the cached acceleration of the previous step.
    pub cache_hits: u64,
    /// Solves done by Cholesky.
    pub cholesky_solves: u64,
    /// Solves that fell back to pivoted LU (`M + βh²H` indefinite).
    pub lu_fallbacks: u64,
}

impl NewmarkStats {
    fn count(&mut self, how: Factorization) {
        self.newton_iterations += 1;
        self.hessian_evaluations += 1;
        match how {
            Factorization::Cholesky => self.cholesky_solves += 1,
            Factorization::Lu => self.lu_fallbacks += 1,
        }
    }
}

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

fn inf_norm<const N: usize>(x: &[f64; N]) -> f64 {
    x.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

fn check_hessian<const N: usize>(h: &[[f64; N]; N], step: u64, t: f64) -> Result<(), StepError> {
    if h.iter().all(|row| row.iter().all(|v| v.is_finite())) {
        Ok(())
    } else {
        Err(StepError::NonFinite {
            step,
            t,
            what: "Hessian",
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Newmark (eq. 12) and its linearly-implicit variant share one engine.

/// `(q, a(q) = −M⁻¹∇V(q))` at the end of the last step; `a` does not depend on `h`.
type AccelCache<const N: usize> = Option<([f64; N], [f64; N])>;

#[derive(Debug, Clone)]
struct NewmarkCore<const N: usize> {
    beta: f64,
    h: f64,
    tol: f64,
    max_iter: usize,
    steps: u64,
    cache: AccelCache<N>,
    stats: NewmarkStats,
    last_iterations: usize,
    last_residual: f64,
}

impl<const N: usize> NewmarkCore<N> {
    fn new(beta: f64, h: f64) -> Self {
        check_beta(beta);
        Self {
            beta,
            h,
            tol: DEFAULT_NEWTON_TOLERANCE,
            max_iter: DEFAULT_NEWTON_MAX_ITERATIONS,
            steps: 0,
            cache: None,
            stats: NewmarkStats::default(),
            last_iterations: 0,
            last_residual: f64::NAN,
        }
    }

    fn gradient<P: Potential<N> + ?Sized>(
        &mut self,
        potential: &P,
        q: &[f64; N],
        step: u64,
        t: f64,
    ) -> Result<[f64; N], StepError> {
        self.stats.gradient_evaluations += 1;
        let g = potential.gradient(q);
        check_finite(&g, "gradient", step, t)?;
        Ok(g)
    }

    /// One step of eq. 12; `exact = false` stops after exactly one Newton step.
    fn step<P: Potential<N> + ?Sized>(
        &mut self,
        exact: bool,
        potential: &P,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let m = potential.masses();
        let (h2, s) = (h * h, self.beta * h * h);
        let a0 = match &self.cache {
            Some((q, a)) if same_bits(q, &state.q) => {
                self.stats.cache_hits += 1;
                *a
            }
            _ => {
                let g = self.gradient(potential, &state.q, k, t)?;
                let a: [f64; N] = core::array::from_fn(|i| -g[i] / m[i]);
                check_finite(&a, "acceleration", k, t)?;
                self.cache = Some((state.q, a));
                a
            }
        };
        // F(q) = M(q − c_k) + βh²∇V(q), c_k = q_k + h q̇_k + (h²/2)(1 − 2β) a_k.
        let c: [f64; N] = core::array::from_fn(|i| {
            state.q[i] + h * state.v[i] + 0.5 * h2 * (1.0 - 2.0 * self.beta) * a0[i]
        });
        // Predictor q_k + h q̇_k + (h²/2) a_k.
        let mut q: [f64; N] =
            core::array::from_fn(|i| state.q[i] + h * state.v[i] + 0.5 * h2 * a0[i]);
        check_finite(&q, "Newmark predictor", k, t)?;
        let mut iterations = 0usize;
        let (g1, residual) = loop {
            let g = self.gradient(potential, &q, k, t)?;
            // r = M⁻¹F(q)
            let r: [f64; N] = core::array::from_fn(|i| q[i] - c[i] + s * g[i] / m[i]);
            let rho = inf_norm(&r) / inf_norm(&q).max(1.0);
            let done = if exact {
                rho <= self.tol
            } else {
                iterations == 1
            };
            if done {
                break (g, rho);
            }
            if !rho.is_finite() {
                return Err(StepError::NonFinite {
                    step: k,
                    t,
                    what: "Newmark residual",
                });
            }
            if iterations >= self.max_iter {
                self.last_iterations = iterations;
                self.last_residual = rho;
                return Err(StepError::NotConverged {
                    step: k,
                    t,
                    solver: "Newmark Newton",
                    iterations,
                    residual: rho,
                });
            }
            let hess = potential.hessian(&q);
            check_hessian(&hess, k, t)?;
            // (M + βh²H(q)) δ = −F(q) = −M r
            let rhs: [f64; N] = core::array::from_fn(|i| -m[i] * r[i]);
            let (delta, how) = solve_shifted(&m, s, &hess, &rhs).map_err(|e| e.at(k, t))?;
            self.stats.count(how);
            for i in 0..N {
                q[i] += delta[i];
            }
            check_finite(&q, "Newton iterate", k, t)?;
            iterations += 1;
        };
        let a1: [f64; N] = core::array::from_fn(|i| -g1[i] / m[i]);
        check_finite(&a1, "acceleration", k, t)?;
        // q̇_k+1 = q̇_k + (h/2)(a_k + a_k+1)
        let v1: [f64; N] = core::array::from_fn(|i| state.v[i] + 0.5 * h * (a0[i] + a1[i]));
        check_finite(&v1, "new velocity", k, t)?;
        state.q = q;
        state.v = v1;
        state.t = t + h;
        self.cache = Some((q, a1));
        self.steps += 1;
        self.last_iterations = iterations;
        self.last_residual = residual;
        self.stats.max_step_iterations = self.stats.max_step_iterations.max(iterations);
        Ok(())
    }
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
/// residual `ρ = ‖M⁻¹F(q)‖∞ / max(1, ‖q‖∞)` is at most the tolerance
/// ([`DEFAULT_NEWTON_TOLERANCE`], see [`Newmark::with_tolerance`]) or the iteration cap
/// ([`DEFAULT_NEWTON_MAX_ITERATIONS`], [`Newmark::with_max_iterations`]) is reached, which is
/// a [`StepError::NotConverged`] (`solver: "Newmark Newton"`) carrying the iterations and the
/// residual.
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
/// assert!(nm.last_residual() <= 1e-13);
/// assert!(nm.stats().max_step_iterations <= 5);
/// ```
#[derive(Debug, Clone)]
pub struct Newmark<const N: usize> {
    core: NewmarkCore<N>,
}

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
/// [`LinearlyImplicitNewmark::last_residual`].
///
/// Cost per step: two gradients, one Hessian and one `n×n` solve (`a_k` is cached).
#[derive(Debug, Clone)]
pub struct LinearlyImplicitNewmark<const N: usize> {
    core: NewmarkCore<N>,
}

macro_rules! newmark_common {
    ($ty:ident, $exact:expr, $name:literal) => {
        impl<const N: usize> $ty<N> {
            /// The integrator with parameter `beta` (β; unconditionally linearly stable for
            /// β ≥ ¼) and step `h` (negative: integrate backwards). An invalid `h` (zero,
            /// non-finite) is reported by `step` as [`StepError::InvalidStepSize`].
            ///
            /// # Panics
            /// If `beta` is not finite.
            pub fn new(beta: f64, h: f64) -> Self {
                Self {
                    core: NewmarkCore::new(beta, h),
                }
            }

            /// β.
            pub fn beta(&self) -> f64 {
                self.core.beta
            }

            /// Step size `h`.
            pub fn h(&self) -> f64 {
                self.core.h
            }

            /// Change the step size (the cached `a_k = −M⁻¹∇V(q_k)` does not depend on `h` and
            /// is kept).
            pub fn set_h(&mut self, h: f64) {
                self.core.h = h;
            }

            /// Change β.
            ///
            /// # Panics
            /// If `beta` is not finite.
            pub fn set_beta(&mut self, beta: f64) {
                check_beta(beta);
                self.core.beta = beta;
            }

            /// Forget the cached acceleration (required before stepping a different potential).
            pub fn reset(&mut self) {
                self.core.cache = None;
            }

            /// Number of steps completed (the index reported by the next failing step).
            pub fn steps_taken(&self) -> u64 {
                self.core.steps
            }

            /// Work counters.
            pub fn stats(&self) -> NewmarkStats {
                self.core.stats
            }

            /// Newton iterations (linear solves) of the last step, successful or not.
            pub fn last_iterations(&self) -> usize {
                self.core.last_iterations
            }

            /// Relative residual `ρ = ‖M⁻¹F(q)‖∞ / max(1, ‖q‖∞)` of eq. 12 at the last step's
            /// final iterate (NaN before the first step).
            pub fn last_residual(&self) -> f64 {
                self.core.last_residual
            }

            /// Advance `state` by one step of size `h` (time included).
            ///
            /// On error `state` is unchanged and the error carries the index of the failing step
            /// and the time it started from: [`StepError::InvalidStepSize`],
            /// [`StepError::SingularMatrix`] (`M + βh²H` singular), [`StepError::NonFinite`],
            /// and, for [`Newmark`], [`StepError::NotConverged`].
            pub fn step<P: Potential<N> + ?Sized>(
                &mut self,
                potential: &P,
                state: &mut State<N>,
            ) -> Result<(), StepError> {
                self.core.step($exact, potential, state)
            }
        }

        impl<P: Potential<N> + ?Sized, const N: usize> Stepper<P, N> for $ty<N> {
            fn step(&mut self, target: &P, state: &mut State<N>) -> Result<(), StepError> {
                self.core.step($exact, target, state)
            }
            fn h(&self) -> f64 {
                self.core.h
            }
            fn set_h(&mut self, h: f64) {
                self.core.h = h;
            }
            fn steps_taken(&self) -> u64 {
                self.core.steps
            }
            fn name(&self) -> &'static str {
                $name
            }
        }
    };
}

newmark_common!(Newmark, true, "newmark");
newmark_common!(LinearlyImplicitNewmark, false, "linearly-implicit-newmark");

impl<const N: usize> Newmark<N> {
    /// Newton tolerance on the relative residual `ρ` (default [`DEFAULT_NEWTON_TOLERANCE`]).
    ///
    /// # Panics
    /// If `tol` is not finite and positive.
    pub fn with_tolerance(mut self, tol: f64) -> Self {
        check_tolerance(tol);
        self.core.tol = tol;
        self
    }

    /// Cap on Newton iterations per step (default [`DEFAULT_NEWTON_MAX_ITERATIONS`]).
    ///
    /// # Panics
    /// If `n` is zero.
    pub fn with_max_iterations(mut self, n: usize) -> Self {
        check_max_iterations(n);
        self.core.max_iter = n;
        self
    }

    /// The Newton tolerance.
    pub fn tolerance(&self) -> f64 {
        self.core.tol
    }

    /// The cap on Newton iterations per step.
    pub fn max_iterations(&self) -> usize {
        self.core.max_iter
    }
}

// ---------------------------------------------------------------------------------------------
// Push-forward Newmark (eq. 14).

/// `a(x)` at the end of the last step, keyed by the bit patterns of `x` and `h²` (`a` depends on
/// `h` through `βh²`).
#[derive(Debug, Clone, Copy)]
struct PfCache<const N: usize> {
    x: [f64; N],
    h2_bits: u64,
    a: [f64; N],
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
/// `a_k` is found by Newton on `G(a) = M a + ∇V(x_k + βh² a) = 0` with Jacobian
/// `M + βh²H(x_k + βh² a)`, starting from `a = 0` — so the first iterate is exactly the
/// linearly-implicit `a_k` of Z&Ss (eq. 18; the paper's "partial Newton solve" remark) — until
/// `ρ = ½h²‖M⁻¹G(a)‖∞ / max(1, ‖x_k‖∞) ≤ tol` (the position error the residual would cause);
/// the cap on iterations gives [`StepError::NotConverged`] (`solver: "push-forward Newmark
/// Newton"`). Note `x_k + βh² a_k` is Newmark's `q_k` (eq. 13).
///
/// Properties: **symplectic** in `(x, M v)` (the Euler–Lagrange equations of the discrete
/// Lagrangian eq. 15), hence to the Newton tolerance in practice; **symmetric**; order 2;
/// unconditionally linearly stable for β ≥ ¼. Z&S (eq. 3) is its variational linearization.
///
/// Cost per step: one nonlinear solve (at `x_k+1`; `a_k` is cached, keyed by the bit patterns of
/// `x` and `h²`), each Newton iteration one gradient, one Hessian and one `n×n` solve, plus one
/// gradient to confirm convergence.
#[derive(Debug, Clone)]
pub struct PushForwardNewmark<const N: usize> {
    beta: f64,
    h: f64,
    tol: f64,
    max_iter: usize,
    steps: u64,
    cache: Option<PfCache<N>>,
    stats: NewmarkStats,
    last_iterations: usize,
    last_residual: f64,
}

impl<const N: usize> PushForwardNewmark<N> {
    /// The integrator with parameter `beta` (β) and step `h` (negative: integrate backwards).
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn new(beta: f64, h: f64) -> Self {
        check_beta(beta);
        Self {
            beta,
            h,
            tol: DEFAULT_NEWTON_TOLERANCE,
            max_iter: DEFAULT_NEWTON_MAX_ITERATIONS,
            steps: 0,
            cache: None,
            stats: NewmarkStats::default(),
            last_iterations: 0,
            last_residual: f64::NAN,
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
        check_beta(beta);
        self.beta = beta;
        self.cache = None;
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
        self.cache = None;
    }

    /// Number of steps completed (the index reported by the next failing step).
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// Work counters.
    pub fn stats(&self) -> NewmarkStats {
        self.stats
    }

    /// Newton iterations of the last step (both solves if the cache missed).
    pub fn last_iterations(&self) -> usize {
        self.last_iterations
    }

    /// Relative residual `ρ` of the last nonlinear solve's final iterate (NaN before the first).
    pub fn last_residual(&self) -> f64 {
        self.last_residual
    }

    /// Solve `M a + ∇V(x + βh² a) = 0` by Newton from `a = 0`; returns `(a, iterations)`.
    fn solve_a<P: Potential<N> + ?Sized>(
        &mut self,
        potential: &P,
        m: &[f64; N],
        x: &[f64; N],
        h2: f64,
        step: u64,
        t: f64,
    ) -> Result<([f64; N], usize), StepError> {
        let s = self.beta * h2;
        let scale = inf_norm(x).max(1.0);
        let mut a = [0.0; N];
        let mut iterations = 0usize;
        loop {
            let y: [f64; N] = core::array::from_fn(|i| x[i] + s * a[i]);
            self.stats.gradient_evaluations += 1;
            let g = potential.gradient(&y);
            check_finite(&g, "gradient", step, t)?;
            // r = M⁻¹G(a) = a + M⁻¹∇V(y)
            let r: [f64; N] = core::array::from_fn(|i| a[i] + g[i] / m[i]);
            let rho = 0.5 * h2 * inf_norm(&r) / scale;
            self.last_residual = rho;
            if rho <= self.tol {
                return Ok((a, iterations));
            }
            if !rho.is_finite() {
                return Err(StepError::NonFinite {
                    step,
                    t,
                    what: "push-forward Newmark residual",
                });
            }
            if iterations >= self.max_iter {
                return Err(StepError::NotConverged {
                    step,
                    t,
                    solver: "push-forward Newmark Newton",
                    iterations,
                    residual: rho,
                });
            }
            let hess = potential.hessian(&y);
            check_hessian(&hess, step, t)?;
            // (M + βh²H(y)) δ = −G(a) = −M r
            let rhs: [f64; N] = core::array::from_fn(|i| -m[i] * r[i]);
            let (delta, how) = solve_shifted(m, s, &hess, &rhs).map_err(|e| e.at(step, t))?;
            self.stats.count(how);
            for i in 0..N {
                a[i] += delta[i];
            }
            check_finite(&a, "Newton iterate", step, t)?;
            iterations += 1;
        }
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and the
    /// time it started from: [`StepError::InvalidStepSize`], [`StepError::SingularMatrix`],
    /// [`StepError::NonFinite`], [`StepError::NotConverged`].
    pub fn step<P: Potential<N> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let m = potential.masses();
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let mut iterations = 0;
        let a0 = match &self.cache {
            Some(c) if c.h2_bits == h2_bits && same_bits(&c.x, &state.q) => {
                self.stats.cache_hits += 1;
                c.a
            }
            _ => {
                let (a, it) = self.solve_a(potential, &m, &state.q, h2, k, t)?;
                iterations += it;
                self.cache = Some(PfCache {
                    x: state.q,
                    h2_bits,
                    a,
                });
                a
            }
        };
        // x_k+1 = x_k + h v_k + ½h² a_k
        let x1: [f64; N] = core::array::from_fn(|i| state.q[i] + h * state.v[i] + 0.5 * h2 * a0[i]);
        check_finite(&x1, "new position", k, t)?;
        let (a1, it) = self.solve_a(potential, &m, &x1, h2, k, t)?;
        iterations += it;
        // v_k+1 = v_k + ½h (a_k + a_k+1)
        let v1: [f64; N] = core::array::from_fn(|i| state.v[i] + 0.5 * h * (a0[i] + a1[i]));
        check_finite(&v1, "new velocity", k, t)?;
        state.q = x1;
        state.v = v1;
        state.t = t + h;
        self.cache = Some(PfCache {
            x: x1,
            h2_bits,
            a: a1,
        });
        self.steps += 1;
        self.last_iterations = iterations;
        self.stats.max_step_iterations = self.stats.max_step_iterations.max(iterations);
        Ok(())
    }
}

impl<P: Potential<N> + ?Sized, const N: usize> Stepper<P, N> for PushForwardNewmark<N> {
    fn step(&mut self, target: &P, state: &mut State<N>) -> Result<(), StepError> {
        PushForwardNewmark::step(self, target, state)
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
        "push-forward-newmark"
    }
}
