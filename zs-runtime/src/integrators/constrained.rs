//! SHAKE and RATTLE on the **unpenalized** constrained system (`INTEGRATORS.md` §7–8, seed 002):
//! Lagrange multipliers instead of a stiff penalty.
//!
//! # Equations and the sign of λ
//! The constrained equations of motion are (seed 002 eq. 1)
//!
//! ```text
//! q̇ = M⁻¹p,   ṗ = -∇V(q) - G(q)ᵀλ,   g(q) = 0,        G = Dg (row c = ∇g_c)
//! ```
//!
//! so the constraint force is **`-G(q)ᵀλ`** (the augmented Hamiltonian `H + gᵀλ`). Seed 002 writes
//! the same thing as `+G̃ᵀλ` with its "negative constraint Jacobian" `G̃ = -Dg`: the same λ.
//! Tao & Owhadi (eqs. 6, 8, 9) write the force as `+λᵀ∇g`, the **opposite** sign: their λ is
//! `-λ` here. With the penalty `½ω²gᵀg` the force is `-ω²G(q)ᵀg(q)`, so the multiplier here is
//! `λ ≈ +ω²⟨g⟩` (the time average of Tao & Owhadi Thm 1.2, eq. 8, whose `-ω²⟨g⟩` is the same
//! quantity in their sign). [`crate::multipliers::PenalizedMultipliers`] uses this sign too.
//! For distance constraints `g = |r|² - ℓ²` a rod under tension has `λ > 0`.
//!
//! One step (seed 002 eq. 4, in the velocity form of `INTEGRATORS.md` §7; the state holds
//! `v = M⁻¹p`):
//!
//! ```text
//! p½    = p_n - (h/2) ∇V(q_n) - (h/2) G(q_n)ᵀ λ
//! q_n+1 = q_n + h M⁻¹ p½,          λ such that g(q_n+1) = 0          (m nonlinear equations)
//! p_n+1 = p½ - (h/2) ∇V(q_n+1)                                        (SHAKE)
//! p_n+1 = p½ - (h/2) ∇V(q_n+1) - (h/2) G(q_n+1)ᵀ μ,  G(q_n+1) M⁻¹ p_n+1 = 0      (RATTLE)
//! ```
//!
//! With `Λ = (h²/2) λ` the position equation is `g(q̄ - M⁻¹G(q_n)ᵀΛ) = 0`,
//! `q̄ = q_n + h M⁻¹(p_n - (h/2)∇V(q_n))` the unconstrained Verlet predictor (seed 002 eq. 7). It is
//! solved from `Λ = 0` (seed 002: "equivalent to taking λ_n to be zero") by either
//! - [`ShakeSolver::GaussSeidel`], the SHAKE iteration of Ryckaert, Ciccotti and Berendsen as given in
//!   seed 002: sweep over the constraints, correcting one multiplier at a time,
//!   `ΔΛ_c = g_c(Q) / (∇g_c(Q) · M⁻¹∇g_c(q_n))`, `Q ← Q - M⁻¹∇g_c(q_n) ΔΛ_c` — a nonlinear
//!   Gauss–Seidel–Newton iteration (Barth et al. 1995; linear convergence); or
//! - [`ShakeSolver::Newton`], Newton on the `m × m` system with the Jacobian
//!   `G(Q) M⁻¹ G(q_n)ᵀ` (not symmetric: `Q ≠ q_n`), solved by a pivoted LU on the stack
//!   (quadratic convergence).
//!
//! Both stop when `max_c |g_c(Q)| ≤ tolerance` (absolute, in the units of `g`); if that has not
//! happened after the iteration cap the step fails with [`StepError::NotConverged`]
//! (`solver: "SHAKE"`, the iterations done and the last residual) and the state is untouched.
//!
//! # SHAKE's velocities and its multiplier
//! SHAKE's `p_n+1` is seed 002 eq. 4's `p_n+1` **without** its term `(h/2)G(q_n+1)ᵀλ_n+1`, which
//! only the next step can supply (seed 002: SHAKE "does not define a mapping of the tangent
//! bundle"): `G M⁻¹ p_n+1 ≠ 0`, the normal component of the velocity is `O(h)` off, and the next
//! step's solve absorbs it. Positions are those of RATTLE (seed 002: the two are equivalent in
//! positions; tested), and so are their errors (order 2), but SHAKE's velocities are only
//! first-order accurate in their normal component, and the `λ` the solver finds for a
//! non-tangent `p_n` contains that component too: after a SHAKE step it is about `2λ(t_n)`
//! (seed 002's leapfrog multiplier is half of it). Both integrators therefore report
//! ([`Shake::multipliers`], [`Rattle::multipliers`]) the multiplier with the incoming normal
//! velocity removed:
//!
//! ```text
//! λ_n = λ_solved - ν_n,   (h/2) (G M⁻¹ Gᵀ)(q_n) ν_n = G(q_n) M⁻¹ p_n
//! ```
//!
//! `ν_n` is the multiplier of the velocity projection of the incoming `p_n` (zero for a
//! tangent `p_n`, e.g. after a RATTLE step), so `λ_n` is exactly RATTLE's position multiplier
//! `λ_n^(r)` of seed 002 eqs. 5–6 from the projected state, whatever the history: a first-order
//! approximation of `λ(t_n)`. [`Shake::solved_multipliers`] gives `λ_solved`. RATTLE's velocity
//! multiplier `μ_n` ([`Rattle::velocity_multipliers`] of the step that ended at `t_n`) errs the
//! other way, and the mean `½(λ_n + μ_n)` (seed 002 eq. 6's `½(λ^(r) + λ^(v))`, the leapfrog
//! SHAKE multiplier) is second-order accurate (measured: `zs-runtime/tests/shake.rs`).
//!
//! # Reversibility
//! RATTLE is symmetric: a step of `h` followed by one of `-h` returns to the start (seed 002;
//! measured to round-off in the tests). SHAKE is not, as a map of `(q, v)`: the positions return
//! (the backward solve converges at `λ = 0`), but the velocity comes back as
//! `v_n - (h/2)M⁻¹G(q_n)ᵀλ_solved`, the tangent component exact and the normal one `O(h)` off.
//!
//! # Cost and caching
//! Per step: one `∇V` (at `q_n+1`; `∇V(q_n)` and `G(q_n)` are cached from the previous step,
//! keyed by the bit pattern of `q` as in [`crate::ZhangSkeel`]), one `(g, G)` evaluation per
//! Newton iteration or per constraint and Gauss–Seidel sweep (plus one for the final check),
//! and one or two `m × m` symmetric solves (`ν_n`; RATTLE's `μ`). Nothing is allocated. Call
//! `reset()` before stepping a different system with the same integrator.

use nalgebra::SMatrix;

use super::{check_finite, check_h, same_bits};
use crate::linalg::{singular_threshold, solve_matrix, SolveFailure};
use crate::{MechanicalSystem, State, StepError, Stepper};

/// Default absolute tolerance on `max_c |g_c(q_n+1)|`.
pub const DEFAULT_TOLERANCE: f64 = 1e-12;
/// Default cap on the iterations of one constraint solve.
pub const DEFAULT_MAX_ITERATIONS: usize = 100;

/// How SHAKE and RATTLE solve `g(q_n+1) = 0` for the multipliers (see the
/// [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ShakeSolver {
    /// The SHAKE iteration (seed 002): nonlinear Gauss–Seidel over the constraints, one
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

/// Work counters and the last solve of a [`Shake`] or [`Rattle`] integrator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShakeStats {
    /// Iterations (Gauss–Seidel sweeps or Newton steps) summed over the completed steps.
    pub iterations: u64,
    /// The largest iteration count of one completed step.
    pub max_iterations: usize,
    /// Iterations of the last completed step.
    pub last_iterations: usize,
    /// `max_c |g_c(q_n+1)|` at the end of the last completed step (≤ the tolerance).
    pub last_residual: f64,
    /// Evaluations of `∇V`.
    pub gradient_evaluations: u64,
    /// Evaluations of the pair `(g, G)`.
    pub constraint_evaluations: u64,
    /// Steps that reused the cached `∇V(q_n)`, `G(q_n)` of the previous step.
    pub cache_hits: u64,
}

impl Default for ShakeStats {
    fn default() -> Self {
        Self {
            iterations: 0,
            max_iterations: 0,
            last_iterations: 0,
            last_residual: f64::NAN,
            gradient_evaluations: 0,
            constraint_evaluations: 0,
            cache_hits: 0,
        }
    }
}

/// `∇V(q)` and `G(q)` at the end of the last step, keyed by the bit pattern of `q`.
#[derive(Debug, Clone, Copy)]
struct Cache<const N: usize, const M: usize> {
    q: [f64; N],
    grad: [f64; N],
    jac: [[f64; N]; M],
}

/// The result of a converged constraint solve.
struct Solved<const N: usize, const M: usize> {
    /// `q_n+1`.
    q: [f64; N],
    /// `Λ = (h²/2) λ_solved`.
    big_lambda: [f64; M],
    /// `G(q_n+1)`, evaluated by the final convergence check.
    jac: [[f64; N]; M],
    iterations: usize,
    residual: f64,
}

/// The engine shared by [`Shake`] (`project = false`) and [`Rattle`] (`project = true`).
#[derive(Debug, Clone)]
struct Core<const N: usize, const M: usize> {
    h: f64,
    tolerance: f64,
    max_iterations: usize,
    solver: ShakeSolver,
    steps: u64,
    cache: Option<Cache<N, M>>,
    /// λ_n (incoming normal velocity removed).
    lambda: [f64; M],
    /// λ_solved of INTEGRATORS.md §7.
    solved: [f64; M],
    /// RATTLE's μ at q_n+1 (zero for SHAKE).
    mu: [f64; M],
    /// t_n of the last completed step (NaN before any).
    lambda_t: f64,
    stats: ShakeStats,
}

impl<const N: usize, const M: usize> Core<N, M> {
    fn new(h: f64) -> Self {
        Self {
            h,
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            solver: ShakeSolver::default(),
            steps: 0,
            cache: None,
            lambda: [0.0; M],
            solved: [0.0; M],
            mu: [0.0; M],
            lambda_t: f64::NAN,
            stats: ShakeStats::default(),
        }
    }

    fn set_tolerance(&mut self, tolerance: f64) {
        assert!(
            tolerance.is_finite() && tolerance > 0.0,
            "SHAKE/RATTLE: the tolerance must be positive and finite, got {tolerance}"
        );
        self.tolerance = tolerance;
    }

    fn constraints_and_jacobian<S: MechanicalSystem<N, M> + ?Sized>(
        &mut self,
        system: &S,
        q: &[f64; N],
        step: u64,
        t: f64,
    ) -> Result<([f64; M], [[f64; N]; M]), StepError> {
        self.stats.constraint_evaluations += 1;
        let g = system.constraints(q);
        check_finite(&g, "constraints", step, t)?;
        let jac = system.constraint_jacobian(q);
        if !jac.iter().all(|row| row.iter().all(|x| x.is_finite())) {
            return Err(StepError::NonFinite {
                step,
                t,
                what: "constraint Jacobian",
            });
        }
        Ok((g, jac))
    }

    fn gradient<S: MechanicalSystem<N, M> + ?Sized>(
        &mut self,
        system: &S,
        q: &[f64; N],
        step: u64,
        t: f64,
    ) -> Result<[f64; N], StepError> {
        self.stats.gradient_evaluations += 1;
        let g = system.gradient(q);
        check_finite(&g, "gradient", step, t)?;
        Ok(g)
    }

    /// Solve `g(q̄ - Σ_c d_c Λ_c) = 0` for `Λ` from `Λ = 0`, where `d_c = M⁻¹∇g_c(q_n)`.
    fn solve<S: MechanicalSystem<N, M> + ?Sized>(
        &mut self,
        system: &S,
        q_bar: [f64; N],
        d: &[[f64; N]; M],
        step: u64,
        t: f64,
    ) -> Result<Solved<N, M>, StepError> {
        let mut q = q_bar;
        let mut big_lambda = [0.0; M];
        let mut iterations = 0usize;
        loop {
            let (g, jac) = self.constraints_and_jacobian(system, &q, step, t)?;
            let residual = max_abs(&g);
            if residual <= self.tolerance {
                return Ok(Solved {
                    q,
                    big_lambda,
                    jac,
                    iterations,
                    residual,
                });
            }
            if iterations >= self.max_iterations {
                return Err(StepError::NotConverged {
                    step,
                    t,
                    solver: "SHAKE",
                    iterations,
                    residual,
                });
            }
            match self.solver {
                ShakeSolver::GaussSeidel => {
                    // One sweep: constraint c is corrected with g_c and ∇g_c at the current Q.
                    for c in 0..M {
                        let (gc, jc) = if c == 0 {
                            (g[0], jac[0])
                        } else {
                            let (g, jac) = self.constraints_and_jacobian(system, &q, step, t)?;
                            (g[c], jac[c])
                        };
                        let denom = dot(&jc, &d[c]);
                        let scale = norm(&jc) * norm(&d[c]);
                        // `scale` is finite (checked G, positive masses); NaN cannot reach here.
                        if denom.abs() <= singular_threshold(1) * scale || denom.is_nan() {
                            return Err(StepError::SingularMatrix {
                                step,
                                t,
                                n: 1,
                                pivot: denom.abs(),
                                max_pivot: scale,
                            });
                        }
                        let dl = gc / denom;
                        big_lambda[c] += dl;
                        for i in 0..N {
                            q[i] -= d[c][i] * dl;
                        }
                    }
                }
                ShakeSolver::Newton => {
                    // A_rc = ∇g_r(Q) · M⁻¹∇g_c(q_n): the Jacobian of Λ ↦ -g(q̄ - Σ d_c Λ_c).
                    let a: [[f64; M]; M] =
                        core::array::from_fn(|r| core::array::from_fn(|c| dot(&jac[r], &d[c])));
                    let dl = lu_solve(a, g).map_err(|e| e.at(step, t))?;
                    for c in 0..M {
                        big_lambda[c] += dl[c];
                        for i in 0..N {
                            q[i] -= d[c][i] * dl[c];
                        }
                    }
                }
            }
            iterations += 1;
            check_finite(&q, "SHAKE iterate", step, t)?;
        }
    }

    /// `K` with `(G M⁻¹ Gᵀ) K = G M⁻¹ p`: `p - GᵀK` is the M-orthogonal projection of `p` onto
    /// the tangent space `{G M⁻¹ p = 0}`.
    fn normal_impulse(
        jac: &[[f64; N]; M],
        minv: &[f64; N],
        p: &[f64; N],
        step: u64,
        t: f64,
    ) -> Result<[f64; M], StepError> {
        let a = SMatrix::<f64, M, M>::from_fn(|r, c| {
            (0..N).map(|i| jac[r][i] * minv[i] * jac[c][i]).sum()
        });
        let rhs: [f64; M] =
            core::array::from_fn(|r| (0..N).map(|i| jac[r][i] * minv[i] * p[i]).sum());
        solve_matrix(a, &rhs)
            .map(|(k, _)| k)
            .map_err(|e| e.at(step, t))
    }

    fn step<S: MechanicalSystem<N, M> + ?Sized>(
        &mut self,
        project: bool,
        system: &S,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let half = 0.5 * h;
        let masses = system.masses();
        let minv: [f64; N] = core::array::from_fn(|i| 1.0 / masses[i]);
        check_finite(&minv, "inverse masses", k, t)?;

        let (grad0, jac0) = match &self.cache {
            Some(c) if same_bits(&c.q, &state.q) => {
                self.stats.cache_hits += 1;
                (c.grad, c.jac)
            }
            _ => {
                let grad = self.gradient(system, &state.q, k, t)?;
                let (_, jac) = self.constraints_and_jacobian(system, &state.q, k, t)?;
                self.cache = Some(Cache {
                    q: state.q,
                    grad,
                    jac,
                });
                (grad, jac)
            }
        };

        let p0: [f64; N] = core::array::from_fn(|i| masses[i] * state.v[i]);
        // Unconstrained half kick and drift: p̄ = p_n - (h/2)∇V(q_n), q̄ = q_n + h M⁻¹ p̄.
        let p_bar: [f64; N] = core::array::from_fn(|i| p0[i] - half * grad0[i]);
        let q_bar: [f64; N] = core::array::from_fn(|i| state.q[i] + h * minv[i] * p_bar[i]);
        check_finite(&q_bar, "new position", k, t)?;
        // d_c = M⁻¹∇g_c(q_n): q_n+1 = q̄ - Σ_c d_c Λ_c, Λ = (h²/2) λ.
        let d: [[f64; N]; M] =
            core::array::from_fn(|c| core::array::from_fn(|i| minv[i] * jac0[c][i]));
        let solved = self.solve(system, q_bar, &d, k, t)?;

        // p½ = p̄ - (h/2) G(q_n)ᵀ λ = p̄ - G(q_n)ᵀ Λ / h.
        let mut p: [f64; N] = core::array::from_fn(|i| {
            p_bar[i]
                - (0..M)
                    .map(|c| jac0[c][i] * solved.big_lambda[c])
                    .sum::<f64>()
                    / h
        });
        let q1 = solved.q;
        let grad1 = self.gradient(system, &q1, k, t)?;
        for i in 0..N {
            p[i] -= half * grad1[i];
        }
        let mut mu = [0.0; M];
        if project {
            // RATTLE: p_n+1 -= G(q_n+1)ᵀ K with G M⁻¹ p_n+1 = 0; μ = K / (h/2).
            let kk = Self::normal_impulse(&solved.jac, &minv, &p, k, t)?;
            for (i, pi) in p.iter_mut().enumerate() {
                *pi -= (0..M).map(|c| solved.jac[c][i] * kk[c]).sum::<f64>();
            }
            mu = core::array::from_fn(|c| kk[c] / half);
        }
        let v1: [f64; N] = core::array::from_fn(|i| minv[i] * p[i]);
        check_finite(&v1, "new velocity", k, t)?;

        // Reported multipliers: λ_solved, and λ_n = λ_solved - ν_n (module docs).
        let scale = 0.5 * h * h;
        let solved_lambda: [f64; M] = core::array::from_fn(|c| solved.big_lambda[c] / scale);
        let k_nu = Self::normal_impulse(&jac0, &minv, &p0, k, t)?;
        let lambda: [f64; M] = core::array::from_fn(|c| solved_lambda[c] - k_nu[c] / half);
        check_finite(&lambda, "multipliers", k, t)?;

        state.q = q1;
        state.v = v1;
        state.t = t + h;
        self.cache = Some(Cache {
            q: q1,
            grad: grad1,
            jac: solved.jac,
        });
        self.steps += 1;
        self.lambda = lambda;
        self.solved = solved_lambda;
        self.mu = mu;
        self.lambda_t = t;
        let s = &mut self.stats;
        s.iterations += solved.iterations as u64;
        s.max_iterations = s.max_iterations.max(solved.iterations);
        s.last_iterations = solved.iterations;
        s.last_residual = solved.residual;
        Ok(())
    }
}

#[inline]
fn dot<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[inline]
fn norm<const N: usize>(a: &[f64; N]) -> f64 {
    dot(a, a).sqrt()
}

/// `max_c |x_c|`, NaN-propagating (a NaN residual never counts as converged).
#[inline]
fn max_abs<const M: usize>(x: &[f64; M]) -> f64 {
    x.iter().fold(0.0, |m: f64, v| {
        let a = v.abs();
        if a > m || a.is_nan() {
            a
        } else {
            m
        }
    })
}

/// Solve the general (not necessarily symmetric) `a x = b` by LU with partial pivoting on the
/// stack. [`crate::linalg::solve_matrix`] is not used here: its Cholesky attempt reads only the
/// lower triangle, which is right for the symmetric matrices it is meant for and wrong for the
/// Newton Jacobian `G(Q) M⁻¹ G(q_n)ᵀ`. Singular (zero pivot, or pivot ratio below `m·ε`) →
/// [`SolveFailure::Singular`].
fn lu_solve<const M: usize>(
    mut a: [[f64; M]; M],
    mut b: [f64; M],
) -> Result<[f64; M], SolveFailure> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for k in 0..M {
        let mut p = k;
        for i in k + 1..M {
            if a[i][k].abs() > a[p][k].abs() {
                p = i;
            }
        }
        let best = a[p][k].abs();
        lo = lo.min(best);
        hi = hi.max(best);
        if best == 0.0 || !best.is_finite() {
            return Err(SolveFailure::Singular {
                n: M,
                pivot: best,
                max_pivot: hi,
            });
        }
        a.swap(k, p);
        b.swap(k, p);
        for i in k + 1..M {
            let f = a[i][k] / a[k][k];
            let row_k = a[k];
            for (x, y) in a[i][k..].iter_mut().zip(&row_k[k..]) {
                *x -= f * y;
            }
            b[i] -= f * b[k];
        }
    }
    if M > 0 && lo < singular_threshold(M) * hi {
        return Err(SolveFailure::Singular {
            n: M,
            pivot: lo,
            max_pivot: hi,
        });
    }
    for i in (0..M).rev() {
        let s: f64 = (i + 1..M).map(|j| a[i][j] * b[j]).sum();
        b[i] = (b[i] - s) / a[i][i];
    }
    if b.iter().all(|x| x.is_finite()) {
        Ok(b)
    } else {
        Err(SolveFailure::NonFinite {
            what: "linear solve solution",
        })
    }
}

macro_rules! constrained_common {
    ($ty:ident, $project:expr, $name:literal) => {
        impl<const N: usize, const M: usize> $ty<N, M> {
            /// The integrator with step `h` (negative: integrate backwards), the
            /// [`ShakeSolver::GaussSeidel`] solver, tolerance [`DEFAULT_TOLERANCE`] on
            /// `max_c |g_c|` and at most [`DEFAULT_MAX_ITERATIONS`] iterations per step.
            /// `N` and `M` are inferred from the system it steps.
            ///
            /// An invalid `h` (zero or non-finite) is reported by `step` as
            /// [`StepError::InvalidStepSize`].
            pub fn new(h: f64) -> Self {
                Self { core: Core::new(h) }
            }

            /// Set the absolute tolerance on `max_c |g_c(q_n+1)|` (in the units of `g`; keep it
            /// above the rounding error of evaluating `g` at the system's scale).
            ///
            /// # Panics
            /// If `tolerance` is not positive and finite.
            pub fn with_tolerance(mut self, tolerance: f64) -> Self {
                self.core.set_tolerance(tolerance);
                self
            }

            /// Set the cap on the iterations of one constraint solve (Gauss–Seidel sweeps or
            /// Newton steps). With a cap of 0 only a predictor that already satisfies the
            /// constraints is accepted.
            pub fn with_max_iterations(mut self, max_iterations: usize) -> Self {
                self.core.max_iterations = max_iterations;
                self
            }

            /// Choose the constraint solver.
            pub fn with_solver(mut self, solver: ShakeSolver) -> Self {
                self.core.solver = solver;
                self
            }

            /// Step size `h`.
            pub fn h(&self) -> f64 {
                self.core.h
            }

            /// Change the step size (the cached `∇V`, `G` do not depend on `h` and are kept).
            pub fn set_h(&mut self, h: f64) {
                self.core.h = h;
            }

            /// The tolerance on `max_c |g_c|`.
            pub fn tolerance(&self) -> f64 {
                self.core.tolerance
            }

            /// The iteration cap.
            pub fn max_iterations(&self) -> usize {
                self.core.max_iterations
            }

            /// The constraint solver.
            pub fn solver(&self) -> ShakeSolver {
                self.core.solver
            }

            /// Forget the cached `∇V(q)`, `G(q)`. Required before stepping a *different
            /// system* with this integrator (the cache key is the position only).
            pub fn reset(&mut self) {
                self.core.cache = None;
            }

            /// Number of steps completed (the index reported by the next failing step).
            pub fn steps_taken(&self) -> u64 {
                self.core.steps
            }

            /// Work counters, iteration counts and the last residual.
            pub fn stats(&self) -> ShakeStats {
                self.core.stats
            }

            /// The multipliers `λ_n ≈ λ(t_n)` of the last completed step, `t_n` its start
            /// ([`Self::multipliers_time`]): constraint force `-G(q)ᵀλ`, so `λ ≈ +ω²⟨g⟩` of a
            /// penalized run, the **negative** of Tao & Owhadi's eq. 8 sign (see the
            /// [module docs](self), which also define `λ_n = λ_solved - ν_n`). Zero before the
            /// first step.
            pub fn multipliers(&self) -> [f64; M] {
                self.core.lambda
            }

            /// The `λ` solved for in the last completed step, as in `INTEGRATORS.md` §7
            /// (`p½ = p_n - (h/2)∇V(q_n) - (h/2)G(q_n)ᵀλ`): [`Self::multipliers`] plus the
            /// multiplier `ν_n` that removes the normal component of the incoming velocity.
            pub fn solved_multipliers(&self) -> [f64; M] {
                self.core.solved
            }

            /// `t_n`, the time the last step started from: the time [`Self::multipliers`]
            /// refers to (NaN before the first step).
            pub fn multipliers_time(&self) -> f64 {
                self.core.lambda_t
            }

            /// Advance `state` by one step of size `h` (time included).
            ///
            /// On error `state` is unchanged and the error carries the index of the failing step
            /// and the time it started from: [`StepError::InvalidStepSize`] for a zero or
            /// non-finite `h`, [`StepError::NotConverged`] (`solver: "SHAKE"`) when the constraint
            /// solve has not reached the tolerance within the iteration cap,
            /// [`StepError::SingularMatrix`] when a Newton Jacobian, a Gauss–Seidel denominator
            /// or `G M⁻¹ Gᵀ` is singular (dependent constraints), [`StepError::NonFinite`] when a
            /// gradient, constraint value, iterate or new state is not finite.
            pub fn step<S: MechanicalSystem<N, M> + ?Sized>(
                &mut self,
                system: &S,
                state: &mut State<N>,
            ) -> Result<(), StepError> {
                self.core.step($project, system, state)
            }
        }

        impl<S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize> Stepper<S, N>
            for $ty<N, M>
        {
            fn step(&mut self, target: &S, state: &mut State<N>) -> Result<(), StepError> {
                self.core.step($project, target, state)
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

/// SHAKE (Ryckaert, Ciccotti, Berendsen; seed 002 eq. 4, `INTEGRATORS.md` §7) on the unpenalized
/// constrained system of a [`MechanicalSystem`]:
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
#[derive(Debug, Clone)]
pub struct Shake<const N: usize, const M: usize> {
    core: Core<N, M>,
}

/// RATTLE (Andersen; seed 002, `INTEGRATORS.md` §8): [`Shake`] followed by the projection of the
/// momenta onto the tangent space of the constraint manifold,
///
/// ```text
/// p_n+1 = p½ - (h/2) ∇V(q_n+1) - (h/2) G(q_n+1)ᵀ μ,     G(q_n+1) M⁻¹ p_n+1 = 0
/// ```
///
/// (`μ` from an `m × m` symmetric solve). A map of the tangent bundle: `G M⁻¹ p = 0` to round-off
/// after every step; symplectic, symmetric (time-reversible), order 2 in positions and velocities
/// (seed 002; measured in the tests). Same positions as SHAKE from the same start.
#[derive(Debug, Clone)]
pub struct Rattle<const N: usize, const M: usize> {
    core: Core<N, M>,
}

constrained_common!(Shake, false, "shake");
constrained_common!(Rattle, true, "rattle");

impl<const N: usize, const M: usize> Rattle<N, M> {
    /// RATTLE's velocity multipliers `μ ≈ λ(t_n+1)` of the last completed step (the
    /// projection at `q_n+1`; same sign as [`Rattle::multipliers`]). Zero before the first step.
    pub fn velocity_multipliers(&self) -> [f64; M] {
        self.core.mu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lu_solves_a_nonsymmetric_system() {
        // Zero leading entry (needs the pivot) and a nonsymmetric matrix.
        let a = [[0.0, 2.0, 1.0], [3.0, 1.0, -1.0], [1.0, -4.0, 2.0]];
        let b = [1.0, 2.0, 3.0];
        let x = lu_solve(a, b).unwrap();
        for r in 0..3 {
            let ax: f64 = (0..3).map(|c| a[r][c] * x[c]).sum();
            assert!((ax - b[r]).abs() < 1e-14, "row {r}: {ax} vs {}", b[r]);
        }
        // The symmetric part alone would give a different answer: the solver must read the
        // upper triangle.
        let sym = [[0.0, 2.5, 1.0], [2.5, 1.0, -2.5], [1.0, -2.5, 2.0]];
        let y = lu_solve(sym, b).unwrap();
        assert!((0..3).any(|i| (x[i] - y[i]).abs() > 1e-3));
    }

    #[test]
    fn lu_reports_singular() {
        assert!(matches!(
            lu_solve([[1.0, 2.0], [2.0, 4.0]], [1.0, 1.0]),
            Err(SolveFailure::Singular { n: 2, .. })
        ));
        assert!(matches!(
            lu_solve([[0.0, 0.0], [0.0, 1.0]], [1.0, 1.0]),
            Err(SolveFailure::Singular { pivot, .. }) if pivot == 0.0
        ));
        assert_eq!(lu_solve::<0>([], []), Ok([]));
    }

    #[test]
    fn max_abs_propagates_nan() {
        assert_eq!(max_abs(&[1.0, -3.0, 2.0]), 3.0);
        assert!(max_abs(&[1.0, f64::NAN, 2.0]).is_nan());
        assert_eq!(max_abs::<0>(&[]), 0.0);
    }
}
