//! The impulse family of the impulse paper (`docs/INTEGRATORS.md` §9) for
//! `H(q, p) = ½ pᵀM⁻¹p + U(q) + W(q)`, with `U` the slow potential (the system's
//! [`Potential`](crate::Potential)) and `W` the stiff fast potential (the system's
//! [`FastPotential`], `ε⁻²` folded in), minimal on the constraint manifold `g(q) = 0` of the
//! [`MechanicalSystem`] (the impulse paper, eqs. 1–4):
//!
//! | type | kick with | the impulse paper |
//! |---|---|---|
//! | [`Impulse`] | `∇U(q)` | §2.1 |
//! | [`MollifiedImpulse`] | `∇(U∘π)(q) = Dπ(q)ᵀ∇U(π(q))`, `π` the M-orthogonal projection onto `g = 0` | §2.2, eq. 15 |
//! | [`ProjectedImpulse`] | `P(q)ᵀ∇U(q)`, `P = I − M⁻¹Gᵀ(GM⁻¹Gᵀ)⁻¹G` | §2.3, eq. 10 |
//!
//! One macro step of size `h` (all three):
//!
//! ```text
//! 1. kick:      p⁺ = p_n − (h/2) F(q_n)
//! 2. oscillate: (q_n+1, p⁻) = the flow of ½pᵀM⁻¹p + W(q) over h from (q_n, p⁺),
//!               approximated by `micro_steps` Störmer–Verlet steps of size h/micro_steps
//! 3. kick:      p_n+1 = p⁻ − (h/2) F(q_n+1)
//! ```
//!
//! with the slow force `F` of the table. The state carries velocities `v = M⁻¹p`, so the kicks
//! are `v ← v − (h/2) M⁻¹F(q)`.
//!
//! Properties (the impulse paper): the impulse method is the symmetric (Strang) splitting
//! `φ^U_{h/2} ∘ φ^{T+W}_h ∘ φ^U_{h/2}`, hence symplectic and time-reversible (§2.1); the
//! mollified impulse method is the same splitting of `½pᵀM⁻¹p + U(π(q)) + W(q)`, so also
//! symplectic and reversible; the projected impulse method "sacrifices symplecticity" (`PᵀF` is
//! not a gradient) "but maintains time-reversal symmetry" (§2.3). With micro-step Verlet (itself
//! symmetric and symplectic) these properties hold for the discrete methods, not only for the
//! exact oscillation (for the mollified method up to the Newton tolerance of `π`). Theorem 2.2:
//! the mollified and projected impulse methods have error `O(h²)` in positions and projected
//! momenta `P(q)ᵀp`, with constants independent of ε and a macro step `h` not restricted by ε;
//! the impulse method does not converge uniformly in ε (Fig. 1). Measured on the stiff spring
//! double pendulum in `zs_systems::stiff_spring` and the `impulse_convergence` test of
//! `zs-tests`.
//!
//! Every step allocates nothing: the projection and the small linear solves work on stack
//! arrays. A failed step returns a [`StepError`] with the step index and leaves the state
//! untouched.

use super::{StepStats, check_finite, check_h, same_bits};
use crate::error::{Quantity, StepErrorKind};
use crate::linalg::{SolveFailure, SolveOptions, dense};
use crate::stepper::{Clock, Clocked};
use crate::{ConstraintCurvature, FastPotential, MechanicalSystem, State, StepError, Stepper};

/// Options of the Newton iteration that computes the projection `π(q)` of
/// [`MollifiedImpulse`] (see [`project`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProjectionOptions {
    /// Converged when `max(‖g(π)‖∞, ‖π − q − M⁻¹G(π)ᵀμ‖∞) ≤ tolerance` (absolute: the
    /// constraints' own units). Default `1e-12`.
    pub tolerance: f64,
    /// At most this many Newton updates; more is [`ProjectionFailure::NotConverged`]
    /// ([`crate::StepErrorKind::NotConverged`] in a step). Default `20`.
    pub max_iterations: usize,
}

impl Default for ProjectionOptions {
    fn default() -> Self {
        Self {
            tolerance: 1e-12,
            max_iterations: 20,
        }
    }
}

/// The M-orthogonal projection `π(q)` of `q` onto the manifold `g = 0` (the impulse paper, eq. 15):
/// `g(π) = 0`, `π = q + M⁻¹G(π)ᵀμ`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManifoldProjection<const N: usize, const M: usize> {
    /// `π(q)`.
    pub pi: [f64; N],
    /// The multipliers `μ` of eq. 15.
    pub mu: [f64; M],
    /// Newton updates performed (0 when `q` already satisfied the tolerance).
    pub iterations: usize,
    /// Final residual `max(‖g(π)‖∞, ‖π − q − M⁻¹G(π)ᵀμ‖∞)`.
    pub residual: f64,
}

/// Why [`project`] (or a slow force built on it) failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProjectionFailure {
    /// Newton did not reach the tolerance within the iteration cap.
    NotConverged {
        /// Newton updates performed.
        iterations: usize,
        /// Final residual.
        residual: f64,
    },
    /// A linear solve failed (singular `M − Σμ_c Hess g_c`, singular `G B⁻¹Gᵀ` — `G` not of
    /// full rank — or a non-finite value).
    Solve(SolveFailure),
}

impl ProjectionFailure {
    /// The [`StepError`] of step `step` started at time `t`.
    pub fn at(self, step: u64, t: f64) -> StepError {
        match self {
            ProjectionFailure::NotConverged {
                iterations,
                residual,
            } => StepError::new(
                step,
                t,
                StepErrorKind::NotConverged {
                    solver: "Newton projection onto g = 0 (the impulse paper, eq. 15)",
                    iterations,
                    residual,
                },
            ),
            ProjectionFailure::Solve(e) => e.at(step, t),
        }
    }
}

impl From<SolveFailure> for ProjectionFailure {
    fn from(e: SolveFailure) -> Self {
        ProjectionFailure::Solve(e)
    }
}

/// Solve the symmetric `a x = rhs` (Cholesky, LU fallback: [`dense::solve`]).
fn solve<const N: usize>(a: &[[f64; N]; N], rhs: &[f64; N]) -> Result<[f64; N], SolveFailure> {
    let mut x = *rhs;
    dense::solve(a, &mut x, &SolveOptions::default())?;
    Ok(x)
}

/// Solve `a x_c = rhs_c` for every column `c`.
fn solve_columns<const N: usize, const K: usize>(
    a: &[[f64; N]; N],
    rhs: &[[f64; N]; K],
) -> Result<[[f64; N]; K], SolveFailure> {
    let mut out = [[0.0; N]; K];
    for (o, r) in out.iter_mut().zip(rhs) {
        *o = solve(a, r)?;
    }
    Ok(out)
}

/// `B = M − Σ_c μ_c Hess g_c(π)`, the (M-scaled) derivative of `π − q − M⁻¹G(π)ᵀμ` in `π`.
fn b_matrix<S, const N: usize, const M: usize>(
    sys: &S,
    pi: &[f64; N],
    mu: &[f64; M],
    masses: &[f64; N],
) -> [[f64; N]; N]
where
    S: ConstraintCurvature<N, M> + ?Sized,
{
    let k = sys.weighted_constraint_hessian(pi, mu);
    core::array::from_fn(|i| {
        core::array::from_fn(|j| if i == j { masses[i] } else { 0.0 } - k[i][j])
    })
}

/// `S = G Z` with `Z = B⁻¹Gᵀ` given by its columns `z_c = B⁻¹∇g_c`.
fn schur<const N: usize, const M: usize>(g: &[[f64; N]; M], z: &[[f64; N]; M]) -> [[f64; M]; M] {
    core::array::from_fn(|c| core::array::from_fn(|d| dot(&g[c], &z[d])))
}

#[inline]
fn dot<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[inline]
fn norm_inf(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// Residual of eq. 15 at `(π, μ)`: `max(‖g(π)‖∞, ‖π − q − M⁻¹G(π)ᵀμ‖∞)`, with `G(π)`.
fn projection_residual<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
    pi: &[f64; N],
    mu: &[f64; M],
    masses: &[f64; N],
) -> (f64, [f64; M], [[f64; N]; M], [f64; N])
where
    S: MechanicalSystem<N, M> + ?Sized,
{
    let gv = sys.constraints(pi);
    let gj = sys.constraint_jacobian(pi);
    // f1 = M(π − q) − G(π)ᵀμ (the first equation of eq. 15, multiplied by M)
    let f1: [f64; N] = core::array::from_fn(|i| {
        masses[i] * (pi[i] - q[i]) - (0..M).map(|c| gj[c][i] * mu[c]).sum::<f64>()
    });
    let r1 = (0..N).fold(0.0f64, |m, i| m.max((f1[i] / masses[i]).abs()));
    let r = norm_inf(&gv).max(r1);
    (if r.is_nan() { f64::INFINITY } else { r }, gv, gj, f1)
}

/// The M-orthogonal projection of `q` onto `g = 0` (the impulse paper, eq. 15): solve
/// `F(π, μ) = (M(π − q) − G(π)ᵀμ, g(π)) = 0` by Newton's method from `(π, μ) = (q, 0)`.
///
/// The Newton matrix is `[[B, −Gᵀ], [G, 0]]` with `B = M − Σ_c μ_c Hess g_c(π)`
/// ([`ConstraintCurvature`]); it is solved by the Schur complement: with `Z = B⁻¹Gᵀ`,
/// `w = B⁻¹F₁`, `(G Z) δμ = G w − F₂` and `δπ = Z δμ − w`.
///
/// Converged when the residual `max(‖g(π)‖∞, ‖π − q − M⁻¹G(π)ᵀμ‖∞)` is at most
/// `opts.tolerance`; after `opts.max_iterations` updates without convergence it returns
/// [`ProjectionFailure::NotConverged`]. Allocates nothing.
pub fn project<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
    opts: &ProjectionOptions,
) -> Result<ManifoldProjection<N, M>, ProjectionFailure>
where
    S: ConstraintCurvature<N, M> + ?Sized,
{
    let masses = sys.masses();
    let mut pi = *q;
    let mut mu = [0.0; M];
    let mut iterations = 0;
    loop {
        let (residual, gv, gj, f1) = projection_residual(sys, q, &pi, &mu, &masses);
        if residual <= opts.tolerance {
            return Ok(ManifoldProjection {
                pi,
                mu,
                iterations,
                residual,
            });
        }
        if iterations >= opts.max_iterations || !residual.is_finite() {
            return Err(ProjectionFailure::NotConverged {
                iterations,
                residual,
            });
        }
        let b = b_matrix(sys, &pi, &mu, &masses);
        let z = solve_columns(&b, &gj)?;
        let [w] = solve_columns(&b, &[f1])?;
        let s = schur(&gj, &z);
        let rhs: [f64; M] = core::array::from_fn(|c| dot(&gj[c], &w) - gv[c]);
        let dmu = solve(&s, &rhs)?;
        for i in 0..N {
            pi[i] += (0..M).map(|c| z[c][i] * dmu[c]).sum::<f64>() - w[i];
        }
        for c in 0..M {
            mu[c] += dmu[c];
        }
        iterations += 1;
    }
}

/// `Dπ(q)ᵀ y` at a converged projection `proj = π(q)` (see [`mollified_gradient`] for the
/// derivation): `M (B⁻¹y − Z S⁻¹ Zᵀy)` with `B = M − Σ μ_c Hess g_c(π)`, `Z = B⁻¹G(π)ᵀ`,
/// `S = G(π) Z`. Returns `M⁻¹Dπᵀy` (the form a velocity kick needs) and `Dπᵀy`.
fn mollifier_transpose_times<S, const N: usize, const M: usize>(
    sys: &S,
    proj: &ManifoldProjection<N, M>,
    y: &[f64; N],
) -> Result<([f64; N], [f64; N]), SolveFailure>
where
    S: ConstraintCurvature<N, M> + ?Sized,
{
    let masses = sys.masses();
    let gj = sys.constraint_jacobian(&proj.pi);
    let b = b_matrix(sys, &proj.pi, &proj.mu, &masses);
    let z = solve_columns(&b, &gj)?;
    let [u] = solve_columns(&b, &[*y])?;
    let s = schur(&gj, &z);
    let zt_y: [f64; M] = core::array::from_fn(|c| dot(&z[c], y));
    let sigma = solve(&s, &zt_y)?;
    let minv_f: [f64; N] =
        core::array::from_fn(|i| u[i] - (0..M).map(|c| z[c][i] * sigma[c]).sum::<f64>());
    let f = core::array::from_fn(|i| masses[i] * minv_f[i]);
    Ok((minv_f, f))
}

/// The mollified slow force of the impulse paper, §2.2: `∇(U∘π)(q) = Dπ(q)ᵀ ∇U(π(q))`, with the
/// projection `π(q)` of eq. 15 (computed by [`project`]). Returns the force and the projection.
///
/// # The derivative of the projection (the impulse paper, proof of Lemma 2.1)
/// Differentiate the two equations of eq. 15, `g(π(q)) = 0` and `π = q + M⁻¹G(π)ᵀμ(q)`:
///
/// ```text
/// G(π) Dπ = 0,
/// Dπ = I + M⁻¹ K Dπ + M⁻¹ G(π)ᵀ Dμ,        K = Σ_c μ_c Hess g_c(π)
/// ```
///
/// (the middle term is `d/dq [G(π)ᵀ] μ`, which needs the constraints' second derivatives:
/// [`ConstraintCurvature`]). With `B = M − K` (symmetric) the second line is
/// `B Dπ = M + GᵀDμ`, so `Dπ = B⁻¹(M + GᵀDμ)`; inserting it into the first,
/// `Dμ = −(G B⁻¹Gᵀ)⁻¹ G B⁻¹ M`, and
///
/// ```text
/// Dπ = (B⁻¹ − B⁻¹Gᵀ (G B⁻¹Gᵀ)⁻¹ G B⁻¹) M,
/// Dπᵀ y = M (B⁻¹y − Z S⁻¹ Zᵀy),      Z = B⁻¹Gᵀ, S = G Z.
/// ```
///
/// On the manifold (`μ = 0`, `B = M`) this is `Dπ = I − M⁻¹Gᵀ(GM⁻¹Gᵀ)⁻¹G = P(q)` (eq. 10),
/// and off it `Dπ(q) = P(q) + O(‖q − π(q)‖)`: Lemma 2.1.
pub fn mollified_gradient<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
    opts: &ProjectionOptions,
) -> Result<([f64; N], ManifoldProjection<N, M>), ProjectionFailure>
where
    S: ConstraintCurvature<N, M> + ?Sized,
{
    let proj = project(sys, q, opts)?;
    let grad_u = sys.gradient(&proj.pi);
    let (_, f) = mollifier_transpose_times(sys, &proj, &grad_u)?;
    Ok((f, proj))
}

/// `P(q)ᵀ y = y − G(q)ᵀ (G M⁻¹ Gᵀ)⁻¹ G M⁻¹ y` (the impulse paper, eq. 10), with `G = G(q)` at the
/// given `q` (which need not lie on the manifold). For a momentum `y = p` this is the projected
/// momentum the error of Theorem 2.2 is measured in; for `y = ∇U(q)` the projected impulse method's
/// slow force. Fails only when `G M⁻¹ Gᵀ` is singular (`G(q)` not of full rank).
pub fn projected_covector<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
    y: &[f64; N],
) -> Result<[f64; N], SolveFailure>
where
    S: MechanicalSystem<N, M> + ?Sized,
{
    let masses = sys.masses();
    let gj = sys.constraint_jacobian(q);
    Ok(projected_parts(&masses, &gj, y)?.0)
}

/// `(Pᵀy, M⁻¹Pᵀy)` for the Jacobian `gj` (rows `∇g_c`).
fn projected_parts<const N: usize, const M: usize>(
    masses: &[f64; N],
    gj: &[[f64; N]; M],
    y: &[f64; N],
) -> Result<([f64; N], [f64; N]), SolveFailure> {
    let minv_y: [f64; N] = core::array::from_fn(|i| y[i] / masses[i]);
    let s: [[f64; M]; M] = core::array::from_fn(|c| {
        core::array::from_fn(|d| (0..N).map(|i| gj[c][i] * gj[d][i] / masses[i]).sum())
    });
    let rhs: [f64; M] = core::array::from_fn(|c| dot(&gj[c], &minv_y));
    let lambda = solve(&s, &rhs)?;
    let pty: [f64; N] =
        core::array::from_fn(|i| y[i] - (0..M).map(|c| gj[c][i] * lambda[c]).sum::<f64>());
    let minv_pty = core::array::from_fn(|i| pty[i] / masses[i]);
    Ok((pty, minv_pty))
}

/// The projected impulse method's slow force `P(q)ᵀ∇U(q)` (the impulse paper, §2.3), with `P` and
/// `∇U` both at the current `q` (see [`ProjectedImpulse`]).
pub fn projected_gradient<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
) -> Result<[f64; N], SolveFailure>
where
    S: MechanicalSystem<N, M> + ?Sized,
{
    projected_covector(sys, q, &sys.gradient(q))
}

/// The kick–oscillate–kick stepper of the impulse family, one type for the three methods; `K`
/// says which slow force kicks ([`PlainKick`], [`MollifiedKick`], [`ProjectedKick`]; the
/// aliases [`Impulse`], [`MollifiedImpulse`], [`ProjectedImpulse`]).
///
/// Statistics ([`StepStats`]): `evaluations` of the slow force (`∇U` plus, for the mollified
/// method, one projection; for the projected method one `M × M` solve; one per macro step in
/// steady state), `cache_hits` (macro steps that reused the slow force cached at the end of the
/// previous step), `fast_evaluations` (of `∇W`, one per micro-step in steady state),
/// `iterations` and `max_step_iterations` (Newton updates of the mollified method's
/// projection: summed, and the most for one projection).
#[derive(Debug, Clone)]
pub struct ImpulseMethod<const N: usize, K> {
    clock: Clock,
    micro_steps: usize,
    /// `(q, −M⁻¹F(q))` at the end of the last step.
    slow_cache: Option<([f64; N], [f64; N])>,
    /// `(q, −M⁻¹∇W(q))` at the end of the last step.
    fast_cache: Option<([f64; N], [f64; N])>,
    stats: StepStats,
    kick: K,
}

/// Which slow force an [`ImpulseMethod`] kicks with.
pub trait Kick {
    /// The stepper's name.
    const NAME: &'static str;
}

/// The impulse method's kick: `∇U(q)` ([`Impulse`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainKick;

/// The mollified impulse method's kick `∇(U∘π)(q)`, with the Newton options of the projection
/// `π` and the last projection computed ([`MollifiedImpulse`]).
#[derive(Debug, Clone, Default)]
pub struct MollifiedKick<const N: usize, const M: usize> {
    options: ProjectionOptions,
    last: Option<ManifoldProjection<N, M>>,
}

/// The projected impulse method's kick `P(q)ᵀ∇U(q)` with `M` constraints ([`ProjectedImpulse`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProjectedKick<const M: usize>;

impl Kick for PlainKick {
    const NAME: &'static str = "impulse";
}
impl<const N: usize, const M: usize> Kick for MollifiedKick<N, M> {
    const NAME: &'static str = "mollified-impulse";
}
impl<const M: usize> Kick for ProjectedKick<M> {
    const NAME: &'static str = "projected-impulse";
}

impl<const N: usize, K: Kick + Default> ImpulseMethod<N, K> {
    /// The method with macro step `h` (negative: backwards) and `micro_steps ≥ 1`
    /// Störmer–Verlet steps of size `h / micro_steps` for the oscillation (the mollified
    /// method with the default [`ProjectionOptions`]: tolerance `1e-12`, 20 iterations). An
    /// invalid `h` is reported by `step` as [`crate::StepErrorKind::InvalidStepSize`].
    ///
    /// # Panics
    /// If `micro_steps == 0`.
    pub fn new(h: f64, micro_steps: usize) -> Self {
        check_micro_steps(micro_steps);
        Self {
            clock: Clock::new(h),
            micro_steps,
            slow_cache: None,
            fast_cache: None,
            stats: StepStats::default(),
            kick: K::default(),
        }
    }
}

fn check_micro_steps(micro_steps: usize) {
    assert!(
        micro_steps >= 1,
        "impulse methods: micro_steps must be at least 1"
    );
}

impl<const N: usize, K> ImpulseMethod<N, K> {
    /// Number of Störmer–Verlet micro-steps per macro step (micro-step `h / micro_steps`).
    pub fn micro_steps(&self) -> usize {
        self.micro_steps
    }

    /// Change the number of micro-steps per macro step.
    ///
    /// # Panics
    /// If `micro_steps == 0`.
    pub fn set_micro_steps(&mut self, micro_steps: usize) {
        check_micro_steps(micro_steps);
        self.micro_steps = micro_steps;
    }

    /// Forget the cached forces (required before stepping a *different system* with the same
    /// stepper: the caches are keyed by the positions only).
    pub fn reset(&mut self) {
        self.slow_cache = None;
        self.fast_cache = None;
    }

    /// Work counters (see the type's docs).
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    fn fast_acceleration<S: FastPotential<N> + ?Sized>(
        &mut self,
        sys: &S,
        q: &[f64; N],
        masses: &[f64; N],
        step: u64,
        t: f64,
    ) -> Result<[f64; N], StepError> {
        self.stats.fast_evaluations += 1;
        let g = sys.fast_gradient(q);
        check_finite(&g, Quantity::FastGradient, step, t)?;
        Ok(core::array::from_fn(|i| -g[i] / masses[i]))
    }

    /// One macro step; `slow(kick, stats, q, step, t)` returns `−M⁻¹F(q)`.
    fn step_with<S, F>(
        &mut self,
        sys: &S,
        state: &mut State<N>,
        mut slow: F,
    ) -> Result<(), StepError>
    where
        S: FastPotential<N> + ?Sized,
        F: FnMut(&mut K, &mut StepStats, &[f64; N], u64, f64) -> Result<[f64; N], StepError>,
    {
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        check_h(h, k, t)?;
        let masses = sys.masses();
        let half = 0.5 * h;
        // 1. kick
        let a_slow0 = match &self.slow_cache {
            Some((q, a)) if same_bits(q, &state.q) => {
                self.stats.cache_hits += 1;
                *a
            }
            _ => {
                self.stats.evaluations += 1;
                let a = slow(&mut self.kick, &mut self.stats, &state.q, k, t)?;
                check_finite(&a, Quantity::SlowForce, k, t)?;
                self.slow_cache = Some((state.q, a));
                a
            }
        };
        let mut v: [f64; N] = core::array::from_fn(|i| state.v[i] + half * a_slow0[i]);
        // 2. oscillate: micro-step Störmer–Verlet on ½pᵀM⁻¹p + W(q). Non-finite values
        //    propagate through the arithmetic; they are checked once, after the loop.
        let mut q = state.q;
        let mut a_fast = match &self.fast_cache {
            Some((qc, a)) if same_bits(qc, &q) => *a,
            _ => self.fast_acceleration(sys, &q, &masses, k, t)?,
        };
        let inv_m: [f64; N] = core::array::from_fn(|i| 1.0 / masses[i]);
        let delta = h / self.micro_steps as f64;
        let half_delta = 0.5 * delta;
        for _ in 0..self.micro_steps {
            for i in 0..N {
                v[i] += half_delta * a_fast[i];
                q[i] += delta * v[i];
            }
            let g = sys.fast_gradient(&q);
            for i in 0..N {
                a_fast[i] = -g[i] * inv_m[i];
                v[i] += half_delta * a_fast[i];
            }
        }
        self.stats.fast_evaluations += self.micro_steps as u64;
        check_finite(&a_fast, Quantity::FastGradient, k, t)?;
        check_finite(&q, Quantity::NewPosition, k, t)?;
        self.fast_cache = Some((q, a_fast));
        // 3. kick
        self.stats.evaluations += 1;
        let a_slow1 = slow(&mut self.kick, &mut self.stats, &q, k, t)?;
        check_finite(&a_slow1, Quantity::SlowForce, k, t)?;
        self.slow_cache = Some((q, a_slow1));
        for i in 0..N {
            v[i] += half * a_slow1[i];
        }
        check_finite(&v, Quantity::NewVelocity, k, t)?;
        state.q = q;
        state.v = v;
        state.t = t + h;
        self.clock.steps += 1;
        Ok(())
    }
}

/// The cached forces depend only on `q`: changing the macro step keeps them.
impl<const N: usize, K: Kick> Clocked for ImpulseMethod<N, K> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        K::NAME
    }
}

/// The impulse method (the impulse paper, §2.1; Grubmüller et al., Tuckerman–Berne–Martyna): kick
/// with the slow force `∇U(q)`, oscillate with micro-step Verlet on `½pᵀM⁻¹p + W`, kick. Symplectic
/// and symmetric; does **not** converge uniformly in `ε` (the impulse paper, Fig. 1: the
/// `M`-orthogonal component of `∇U` pumps the fast oscillations' actions).
///
/// ```
/// use zs_runtime::{FastPotential, Impulse, Potential, State};
/// // U = ½q₀², W = ½ε⁻²q₁² (two uncoupled oscillators, one slow, one fast).
/// struct TwoScales;
/// impl Potential<2> for TwoScales {
///     fn masses(&self) -> [f64; 2] { [1.0; 2] }
///     fn potential(&self, q: &[f64; 2]) -> f64 { 0.5 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 2]) -> [f64; 2] { [q[0], 0.0] }
///     fn hessian(&self, _: &[f64; 2]) -> [[f64; 2]; 2] { [[1.0, 0.0], [0.0, 0.0]] }
///     fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] { [0.0; 2] }
/// }
/// impl FastPotential<2> for TwoScales {
///     fn fast_potential(&self, q: &[f64; 2]) -> f64 { 0.5e6 * q[1] * q[1] }
///     fn fast_gradient(&self, q: &[f64; 2]) -> [f64; 2] { [0.0, 1e6 * q[1]] }
///     fn fast_hessian(&self, _: &[f64; 2]) -> [[f64; 2]; 2] { [[0.0, 0.0], [0.0, 1e6]] }
/// }
/// // Macro step 0.1 (100 periods of the fast oscillator per unit time), 1000 micro-steps.
/// let mut imp = Impulse::new(0.1, 1000);
/// let mut s = State::new([1.0, 1e-3], [0.0, 0.0]);
/// for _ in 0..10 { imp.step(&TwoScales, &mut s).unwrap(); }
/// assert!((s.q[0] - 1f64.cos()).abs() < 1e-3);
/// ```
pub type Impulse<const N: usize> = ImpulseMethod<N, PlainKick>;

impl<const N: usize> Impulse<N> {
    /// Advance `state` by one macro step; on error `state` is unchanged.
    pub fn step<S: FastPotential<N> + ?Sized>(
        &mut self,
        sys: &S,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let masses = sys.masses();
        self.step_with(sys, state, |_, _, q, k, t| {
            let g = sys.gradient(q);
            check_finite(&g, Quantity::SlowGradient, k, t)?;
            Ok(core::array::from_fn(|i| -g[i] / masses[i]))
        })
    }
}

/// The mollified impulse method with the projection mollifier (the impulse paper, §2.2, eq. 15;
/// García-Archilla–Sanz-Serna–Skeel, Izaguirre–Reich–Skeel): the impulse method for
/// `½pᵀM⁻¹p + U(π(q)) + W(q)`, i.e. kicks with `∇(U∘π)(q) = Dπ(q)ᵀ∇U(π(q))`, where `π(q)` is
/// the M-orthogonal projection of `q` onto `g = 0` (computed by Newton: [`project`]; the
/// derivative `Dπ` by implicit differentiation: [`mollified_gradient`]).
///
/// Symplectic and symmetric; Theorem 2.2: error `O(h²)` in positions and projected momenta,
/// uniformly in `ε ≤ h`.
///
/// The Newton iteration's tolerance and cap are [`ProjectionOptions`]
/// ([`MollifiedImpulse::with_projection`]); non-convergence is
/// [`crate::StepErrorKind::NotConverged`]. The projection starts from `(π, μ) = (q, 0)` every time
/// (no warm start), so the step is a function of the state alone.
///
/// ```
/// use zs_runtime::MollifiedImpulse;
/// // Macro step 0.05 with 500 micro-steps of 1e-4; the system is any
/// // `FastPotential<N> + ConstraintCurvature<N, M>`, e.g. zs_systems::StiffSpringDoublePendulum.
/// let m = MollifiedImpulse::<4, 2>::new(0.05, 500);
/// assert_eq!(m.micro_steps(), 500);
/// ```
pub type MollifiedImpulse<const N: usize, const M: usize> = ImpulseMethod<N, MollifiedKick<N, M>>;

impl<const N: usize, const M: usize> MollifiedImpulse<N, M> {
    /// The same with the given Newton options for the projection.
    pub fn with_projection(mut self, options: ProjectionOptions) -> Self {
        self.set_projection(options);
        self
    }

    /// Change the Newton options (clears the cached forces).
    pub fn set_projection(&mut self, options: ProjectionOptions) {
        self.kick.options = options;
        self.reset();
    }

    /// The Newton options.
    pub fn projection(&self) -> ProjectionOptions {
        self.kick.options
    }

    /// The projection computed by the last slow-force evaluation (that is, `π(q)` of the
    /// position the last completed step ended at), if any.
    pub fn last_projection(&self) -> Option<&ManifoldProjection<N, M>> {
        self.kick.last.as_ref()
    }

    /// Advance `state` by one macro step; on error `state` is unchanged.
    pub fn step<S>(&mut self, sys: &S, state: &mut State<N>) -> Result<(), StepError>
    where
        S: FastPotential<N> + ConstraintCurvature<N, M> + ?Sized,
    {
        self.step_with(sys, state, |kick, stats, q, k, t| {
            let proj = project(sys, q, &kick.options).map_err(|e| e.at(k, t))?;
            stats.iterations += proj.iterations as u64;
            stats.max_step_iterations = stats.max_step_iterations.max(proj.iterations);
            let grad_u = sys.gradient(&proj.pi);
            check_finite(&grad_u, Quantity::SlowGradient, k, t)?;
            let (minv_f, _) =
                mollifier_transpose_times(sys, &proj, &grad_u).map_err(|e| e.at(k, t))?;
            kick.last = Some(proj);
            Ok(core::array::from_fn(|i| -minv_f[i]))
        })
    }
}

/// The projected impulse method (the impulse paper, §2.3): kicks with the projected slow force
/// `P(q)ᵀ∇U(q)`, `P(q) = I − M⁻¹G(q)ᵀ(G(q)M⁻¹G(q)ᵀ)⁻¹G(q)` (eq. 10), both evaluated at the
/// current position `q` (`q_n` for the first kick, `q_n+1` for the second), which lies `O(ε)`
/// off the manifold: no projection onto `g = 0` is computed. Motivated by Lemma 2.1
/// (`Dπ(q) = P(q) + O(ε)`), it replaces the mollified force by its leading term.
///
/// In velocities the kick is `v ← v − (h/2) P(q) M⁻¹∇U(q)` (`M⁻¹Pᵀ = PM⁻¹`), tangent to the
/// level set of `g` through `q`. Symmetric (time-reversible) but not symplectic; Theorem 2.2:
/// error `O(h²)` in positions and projected momenta, uniformly in `ε ≤ h`. Fails
/// ([`crate::SolveFailure::Singular`]) only where `G(q)` loses rank.
///
/// ```
/// use zs_runtime::{Clocked, ProjectedImpulse};
/// let p = ProjectedImpulse::<4, 2>::new(0.05, 500);
/// assert_eq!((p.h(), p.micro_steps()), (0.05, 500));
/// ```
pub type ProjectedImpulse<const N: usize, const M: usize> = ImpulseMethod<N, ProjectedKick<M>>;

impl<const N: usize, const M: usize> ProjectedImpulse<N, M> {
    /// Advance `state` by one macro step; on error `state` is unchanged.
    pub fn step<S>(&mut self, sys: &S, state: &mut State<N>) -> Result<(), StepError>
    where
        S: FastPotential<N> + MechanicalSystem<N, M> + ?Sized,
    {
        let masses = sys.masses();
        self.step_with(sys, state, |_, _, q, k, t| {
            let g = sys.gradient(q);
            check_finite(&g, Quantity::SlowGradient, k, t)?;
            let gj = sys.constraint_jacobian(q);
            let (_, minv_f) = projected_parts(&masses, &gj, &g).map_err(|e| e.at(k, t))?;
            Ok(core::array::from_fn(|i| -minv_f[i]))
        })
    }
}

impl<S: FastPotential<N> + ?Sized, const N: usize> Stepper<S, [f64; N]> for Impulse<N> {
    fn step(&mut self, target: &S, state: &mut State<N>) -> Result<(), StepError> {
        Impulse::step(self, target, state)
    }
}

impl<S, const N: usize, const M: usize> Stepper<S, [f64; N]> for MollifiedImpulse<N, M>
where
    S: FastPotential<N> + ConstraintCurvature<N, M> + ?Sized,
{
    fn step(&mut self, target: &S, state: &mut State<N>) -> Result<(), StepError> {
        MollifiedImpulse::step(self, target, state)
    }
}

impl<S, const N: usize, const M: usize> Stepper<S, [f64; N]> for ProjectedImpulse<N, M>
where
    S: FastPotential<N> + MechanicalSystem<N, M> + ?Sized,
{
    fn step(&mut self, target: &S, state: &mut State<N>) -> Result<(), StepError> {
        ProjectedImpulse::step(self, target, state)
    }
}
