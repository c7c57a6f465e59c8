//! The linearly-implicit Zhang–Skeel family, one core parameterised by what goes into its
//! linear solve (Tao & Owhadi, *Variational and linearly-implicit integrators, with
//! applications*):
//!
//! | method | solve | update | type |
//! |---|---|---|---|
//! | Z&S, Integrator 1, eq. 3 | `(M + βh²H) a = −∇V` | `f = a − ½β²h⁴M⁻¹T(x; a)` | [`ZhangSkeel`] = [`LinearlyImplicit`]`<V, `[`Eq3`]`>` |
//! | Z&Ss, Integrator 4, eq. 18 | `(M + βh²H) a = −∇V` | `f = a` | [`ZhangSkeelSimplified`] = `<V, `[`Eq18`]`>` |
//! | Z&Ss-stiff, Integrator 5, eq. 19 | `(M + βh²Hess V1) a = −∇V` | `f = a` | [`ZhangSkeelStiff`] = `<V, `[`Eq19`]`>` |
//!
//! and every one steps `x_k+1 = x_k + h v_k + ½h² f_k`, `v_k+1 = v_k + ½h (f_k + f_k+1)`, with
//! `f_k+1` computed at `x_k+1` and cached for the next step.

use core::marker::PhantomData;

use super::{Buffers, StepStats, check_finite, check_h, check_state, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::error::Quantity;
use crate::linalg::{ShiftedSolve, SolveOptions};
use crate::model::HessianPart;
use crate::stepper::{Clock, Clocked};
use crate::vector::{Vector, all_finite};
use crate::{Model, StateOf, StepError, Stepper, StiffModel};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Eq3 {}
    impl Sealed for super::Eq18 {}
    impl Sealed for super::Eq19 {}
}

/// A method of the family (sealed: [`Eq3`], [`Eq18`], [`Eq19`]).
pub trait Method: sealed::Sealed {
    /// The stepper's name.
    const NAME: &'static str;
}

/// What goes into the linear solve of a [`LinearlyImplicit`] step of method `Self` on a target
/// `P`.
pub trait Linearization<P: ?Sized, V: Vector>: Method {
    /// The Hessian in the solve: all of `Hess V`, or the stiff part's.
    const PART: HessianPart;
    /// Z&S's third-derivative term `−½β²h⁴M⁻¹T(x; a)` (eq. 3), or `f = a`.
    const THIRD: bool;
    /// The matrix, named in errors.
    const HESSIAN: Quantity;
    /// `∇V(x)` into `g` and the Hessian of the solve into `h` (keeping what the third
    /// contraction at the same point can reuse, when [`Linearization::THIRD`]).
    fn gradient_hessian(p: &P, x: &V, g: &mut V, h: &mut V::Matrix);
}

/// Zhang & Skeel (Z&S): Tao & Owhadi, Integrator 1, eq. 3.
///
/// ```text
/// solve (M + β h² H(x_k)) a_k = -∇V(x_k)
/// f_k   = a_k - ½ β² h⁴ M⁻¹ T(x_k; a_k),     T(x; a)_i = Σ_jk ∂³V/∂x_i∂x_j∂x_k a_j a_k
/// x_k+1 = x_k + h v_k + ½ h² f_k
/// v_k+1 = v_k + ½ h (f_k + f_k+1)
/// ```
///
/// Properties (paper §2): variational (discrete Lagrangian eq. 2), hence **symplectic** in
/// `(x, p = M v)`; **symmetric** (time-reversible: a step of `h` followed by one of `-h`
/// returns to the start); **order 2**; **unconditionally linearly stable iff β ≥ 1/4**
/// (Theorem 2.2). Each step costs one fused `(∇V, H)` evaluation, one `n×n` symmetric solve
/// (Cholesky, falling back to pivoted LU when `M + βh²H` is indefinite, see
/// [`crate::linalg`]) and one third contraction: `f_k+1` is computed at `x_k+1` and reused by
/// the next step (cached by the bit pattern of `q` and of `h²`; call
/// [`LinearlyImplicit::reset`] before stepping a different potential).
///
/// ```
/// use zs_runtime::{Clocked, Potential, State, ZhangSkeel};
/// struct Stiff; // V = ½ k q², k = 10⁴: ω = 100
/// impl Potential<1> for Stiff {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 5e3 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [1e4 * q[0]] }
///     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1e4]] }
///     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
/// }
/// // hω = 10, far beyond Verlet's limit of 2: still bounded for β ≥ 1/4.
/// let mut zs = ZhangSkeel::new(0.4, 0.1);
/// let mut s = State::new([1.0], [0.0]);
/// for _ in 0..1000 { zs.step(&Stiff, &mut s).unwrap(); }
/// assert!(s.q[0].abs() <= 1.0 + 1e-9);
/// assert_eq!(zs.steps_taken(), 1000);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Eq3;

/// Simplified Zhang & Skeel (Z&Ss): Tao & Owhadi, Integrator 4, eq. 18 — Z&S with `f_k = a_k`
/// (no third-derivative term):
///
/// ```text
/// a_k   = -(M + β h² H(x_k))⁻¹ ∇V(x_k)
/// x_k+1 = x_k + h v_k + ½ h² a_k
/// v_k+1 = v_k + ½ h (a_k + a_k+1)
/// ```
///
/// Properties: **symmetric** (time-reversible), **order 2**, unconditionally linearly stable
/// for β ≥ 1/4; **not symplectic** in general (it differs from Z&S by `O(h⁵)` terms; the paper
/// gives a commutation condition under which it is, which always holds for one degree of
/// freedom). Cheaper than Z&S: no third contraction.
#[derive(Debug, Clone, Copy)]
pub struct Eq18;

/// Simplified Z&S for stiff systems (Z&Ss-stiff; Tao & Owhadi, Integrator 5, eq. 19), for a
/// potential split `V = V0 + ε⁻¹V1` into a soft part and a stiff part ([`crate::StiffSplit`];
/// `ε⁻¹` is folded into `V1`):
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
/// The solve is in the pattern of the stiff Hessian only ([`crate::HessianPart::Stiff`]): for a
/// fixed-size system the dense `n×n` solve; for an assembled system whose stiff terms act within
/// bodies — rigid water, where the penalty couples only the atoms of one molecule (paper §4.3) —
/// a block-diagonal solve, one block per body, O(N).
#[derive(Debug, Clone, Copy)]
pub struct Eq19;

impl Method for Eq3 {
    const NAME: &'static str = "zhang-skeel";
}
impl Method for Eq18 {
    const NAME: &'static str = "zhang-skeel-simplified";
}
impl Method for Eq19 {
    const NAME: &'static str = "zhang-skeel-stiff";
}

impl<P: Model<V> + ?Sized, V: Vector> Linearization<P, V> for Eq3 {
    const PART: HessianPart = HessianPart::Full;
    const THIRD: bool = true;
    const HESSIAN: Quantity = Quantity::Hessian;
    #[inline(always)]
    fn gradient_hessian(p: &P, x: &V, g: &mut V, h: &mut V::Matrix) {
        p.gradient_hessian_keeping_third_into(x, g, h);
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Linearization<P, V> for Eq18 {
    const PART: HessianPart = HessianPart::Full;
    const THIRD: bool = false;
    const HESSIAN: Quantity = Quantity::Hessian;
    #[inline(always)]
    fn gradient_hessian(p: &P, x: &V, g: &mut V, h: &mut V::Matrix) {
        p.gradient_hessian_into(x, g, h);
    }
}

impl<P: StiffModel<V> + ?Sized, V: Vector> Linearization<P, V> for Eq19 {
    const PART: HessianPart = HessianPart::Stiff;
    const THIRD: bool = false;
    const HESSIAN: Quantity = Quantity::StiffHessian;
    #[inline(always)]
    fn gradient_hessian(p: &P, x: &V, g: &mut V, h: &mut V::Matrix) {
        p.gradient_stiff_hessian_into(x, g, h);
    }
}

/// Z&S (eq. 3): see [`Eq3`].
pub type ZhangSkeel<V> = LinearlyImplicit<V, Eq3>;
/// Z&Ss (eq. 18): see [`Eq18`].
pub type ZhangSkeelSimplified<V> = LinearlyImplicit<V, Eq18>;
/// Z&Ss for stiff systems (eq. 19): see [`Eq19`].
pub type ZhangSkeelStiff<V> = LinearlyImplicit<V, Eq19>;

/// The buffers of one evaluation of `f(x)`: masses, gradient, Hessian, the solver (with its
/// symbolic phase done), the third contraction.
#[derive(Debug)]
pub(crate) struct Eval<V: Vector> {
    pub(crate) layout: u64,
    pub(crate) m: V,
    pub(crate) g: V,
    pub(crate) hess: V::Matrix,
    pub(crate) solver: V::Solver,
    pub(crate) tc: V,
}

impl<V: Vector> Eval<V> {
    pub(crate) fn new<P: Model<V> + ?Sized>(p: &P, part: HessianPart) -> Self {
        let n = p.dimension();
        Self {
            layout: p.matrix_layout(part),
            m: V::zeros(n),
            g: V::zeros(n),
            hess: p.new_matrix(part),
            solver: p.new_solver(part),
            tc: V::zeros(n),
        }
    }

    /// True when the buffers fit `p` (same dimension and matrix layout).
    #[inline]
    pub(crate) fn fits<P: Model<V> + ?Sized>(&self, p: &P, part: HessianPart) -> bool {
        self.layout == p.matrix_layout(part) && self.m.len() == p.dimension()
    }

    /// After an evaluation into `hess`: when it rebuilt the model's neighbour list, the matrix
    /// took the new pattern (`Assembled::hessian_follows_neighbors`), and the solver is made
    /// for it here (its symbolic phase: at rebuilds only). Nothing for fixed patterns.
    #[inline]
    pub(crate) fn follow<P: Model<V> + ?Sized>(&mut self, p: &P, part: HessianPart) {
        let layout = p.matrix_layout(part);
        if layout != self.layout {
            self.solver = p.new_solver(part);
            self.layout = layout;
        }
    }
}

/// The buffers of a step: `F_k = -f_k` with its key (the bits of `q` and `h²`), `x_k+1`,
/// `F_k+1`, `v_k+1`.
#[derive(Debug)]
struct Work<V: Vector> {
    eval: Eval<V>,
    f0: V,
    f1: V,
    x1: V,
    v1: V,
    cache_q: V,
    /// `Some(h²)` bits when `f0` is `f(cache_q)`.
    cache_key: Option<u64>,
}

impl<V: Vector> Work<V> {
    fn new<P: Model<V> + ?Sized>(p: &P, part: HessianPart) -> Self {
        let n = p.dimension();
        Self {
            eval: Eval::new(p, part),
            f0: V::zeros(n),
            f1: V::zeros(n),
            x1: V::zeros(n),
            v1: V::zeros(n),
            cache_q: V::zeros(n),
            cache_key: None,
        }
    }
}

/// A linearly-implicit Zhang–Skeel stepper: the family's one core, with `L` ([`Eq3`], [`Eq18`],
/// [`Eq19`]) saying what enters its solve (see the [module docs](self) and the aliases
/// [`ZhangSkeel`], [`ZhangSkeelSimplified`], [`ZhangSkeelStiff`]).
///
/// Statistics ([`StepStats`]): `evaluations` of `f(x)`, `cache_hits`, `cholesky_solves`,
/// `lu_fallbacks`.
#[derive(Debug, Clone)]
pub struct LinearlyImplicit<V: Vector, L> {
    beta: f64,
    clock: Clock,
    stats: StepStats,
    solve: SolveOptions,
    work: Buffers<Work<V>>,
    method: PhantomData<L>,
}

/// `F = -f(x)` into `out`, with `f` of eq. 3: solve `(M + βh²H(x)) a = -∇V(x)`, then (Z&S
/// only) `f = a - ½ β² h⁴ M⁻¹ T(x; a)`. Depends on `h` only through `h²`. `e.m` must hold the
/// masses.
///
/// The solve runs in place on the gradient: `(M + βh²H) y = ∇V` gives `y = -a`, and since `T`
/// is quadratic in its direction, `T(x; a) = T(x; y)` and `F = y + ½β²h⁴ M⁻¹T(x; y)`. The step
/// then subtracts `F` where eq. 3 adds `f` — the same bits (negation is exact), with no copy or
/// negation of the gradient on the step's critical path.
///
/// The finiteness of `∇V`, `H` and `T` is not tested on its own: a non-finite gradient or
/// Hessian makes the solve fail (the solvers test their matrix and right-hand side), a
/// non-finite `T` makes `F` non-finite, and `F` is tested (one branch-free test). Only when
/// something failed are the inputs examined, to name the first bad one.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn f_into<V: Vector, P: Model<V> + ?Sized, L: Linearization<P, V>>(
    beta: f64,
    h2: f64,
    options: &SolveOptions,
    stats: &mut StepStats,
    e: &mut Eval<V>,
    potential: &P,
    x: &V,
    out: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    stats.evaluations += 1;
    L::gradient_hessian(potential, x, out, &mut e.hess);
    e.follow(potential, L::PART);
    let how = match e
        .solver
        .solve_shifted(&e.m, beta * h2, &e.hess, out, options)
    {
        Ok(how) => how,
        Err(err) => return Err(solve_failure::<V>(err, &e.hess, L::HESSIAN, step, t)),
    };
    stats.count_solve(how);
    if !L::THIRD {
        return Ok(());
    }
    potential.third_contraction_into(x, out, &mut e.tc);
    let c = 0.5 * beta * beta * h2 * h2;
    for i in 0..out.len() {
        out[i] += c * e.tc[i] / e.m[i];
    }
    if all_finite(out) {
        Ok(())
    } else {
        Err(third_failure(&e.tc, step, t))
    }
}

/// [`f_into`] at the start of a step whose `f_k` is not cached (the first step, or after the
/// state was changed): out of line, so that the steady-state evaluation at `x_k+1` is the only
/// copy inlined into the step (where the masses of a fixed-size system are constants).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn f_at_start<V: Vector, P: Model<V> + ?Sized, L: Linearization<P, V>>(
    beta: f64,
    h2: f64,
    options: &SolveOptions,
    stats: &mut StepStats,
    e: &mut Eval<V>,
    potential: &P,
    x: &V,
    out: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    f_into::<V, P, L>(beta, h2, options, stats, e, potential, x, out, step, t)
}

/// The error of a failed shifted solve whose right-hand side was the gradient, naming the first
/// non-finite input as the solvers report them (they test the matrix first, before touching
/// the right-hand side, then the right-hand side): the gradient, then the matrix, called
/// `hessian_name` (when the Hessian itself is not finite; otherwise the masses are). Out of
/// line: only failing steps get here.
#[cold]
#[inline(never)]
pub(crate) fn solve_failure<V: Vector>(
    err: crate::linalg::SolveFailure,
    hess: &V::Matrix,
    hessian_name: Quantity,
    step: u64,
    t: f64,
) -> StepError {
    use crate::linalg::{Operand, SolveFailure::NonFinite};
    let what = match err {
        NonFinite(Operand::RightHandSide) => Quantity::Gradient,
        NonFinite(Operand::Matrix) if !V::matrix_is_finite(hess) => hessian_name,
        _ => return err.at(step, t),
    };
    StepError::non_finite(step, t, what)
}

#[cold]
#[inline(never)]
fn third_failure<V: Vector>(tc: &V, step: u64, t: f64) -> StepError {
    let what = if all_finite(tc) {
        Quantity::ZsForce
    } else {
        Quantity::ThirdContraction
    };
    StepError::non_finite(step, t, what)
}

impl<V: Vector, L> LinearlyImplicit<V, L> {
    /// The integrator with parameter `beta` (β; the paper uses 0.4, or 0.3 for DNA) and step
    /// `h` (negative: integrate backwards).
    ///
    /// An invalid `h` (zero or non-finite) is reported by `step` as
    /// [`crate::StepErrorKind::InvalidStepSize`].
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn new(beta: f64, h: f64) -> Self {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel: beta must be finite, got {beta}"
        );
        Self {
            beta,
            clock: Clock::new(h),
            stats: StepStats::default(),
            solve: SolveOptions::default(),
            work: Buffers::default(),
            method: PhantomData,
        }
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Change β (drops the cached `f`).
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn set_beta(&mut self, beta: f64) {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel: beta must be finite, got {beta}"
        );
        self.beta = beta;
        self.reset();
    }

    /// Reject near-singular linear systems: a step whose shifted matrix has an estimated
    /// 1-norm condition number above `max_condition` fails with
    /// [`crate::SolveFailure::IllConditioned`] (see [`crate::linalg::SolveOptions`]). Off by default
    /// (only matrices singular to working precision are rejected, as
    /// [`crate::SolveFailure::Singular`]). Drops the cached `f`.
    ///
    /// # Panics
    /// If `max_condition` is NaN or below 1.
    pub fn with_max_condition(mut self, max_condition: f64) -> Self {
        self.solve = SolveOptions::with_max_condition(max_condition);
        self.reset();
        self
    }

    /// The condition-number limit (`f64::INFINITY`: off).
    pub fn max_condition(&self) -> f64 {
        self.solve.max_condition
    }

    /// Forget the cached `f_k`. Required before stepping a *different potential* with this
    /// integrator (the cache key is the position and `h²`, not the potential).
    pub fn reset(&mut self) {
        if let Some(w) = self.work.as_mut() {
            w.cache_key = None;
        }
    }

    /// Work counters (see the type's docs).
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Number of linear solves that fell back from Cholesky to pivoted LU.
    pub fn lu_fallbacks(&self) -> u64 {
        self.stats.lu_fallbacks
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and
    /// the time it started from: [`crate::StepErrorKind::InvalidStepSize`] for a zero or non-finite `h`,
    /// [`crate::SolveFailure::Singular`] when the shifted matrix is singular to working precision,
    /// [`crate::StepErrorKind::NonFinite`] when a gradient, Hessian, third contraction, solution or new
    /// state is not finite.
    pub fn step<P>(&mut self, potential: &P, state: &mut StateOf<V>) -> Result<(), StepError>
    where
        P: Model<V> + ?Sized,
        L: Linearization<P, V>,
    {
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        check_h(h, k, t)?;
        check_state(potential.dimension(), state, k, t)?;
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let (beta, options) = (self.beta, self.solve);
        let w = self.work.get(
            |w| w.eval.fits(potential, L::PART),
            || Work::new(potential, L::PART),
        );
        potential.masses_into(&mut w.eval.m);
        if w.cache_key == Some(h2_bits) && same_bits(&w.cache_q, &state.q) {
            self.stats.cache_hits += 1;
        } else {
            w.cache_key = None;
            f_at_start::<V, P, L>(
                beta,
                h2,
                &options,
                &mut self.stats,
                &mut w.eval,
                potential,
                &state.q,
                &mut w.f0,
                k,
                t,
            )?;
            w.cache_q.copy_from(&state.q);
            w.cache_key = Some(h2_bits);
        }
        // x_k+1 = x_k + h v_k + ½ h² f_k, with F = -f (see `f_into`)
        let n = state.q.len();
        for i in 0..n {
            w.x1[i] = state.q[i] + h * state.v[i] - 0.5 * h2 * w.f0[i];
        }
        check_finite(&w.x1, Quantity::NewPosition, k, t)?;
        f_into::<V, P, L>(
            beta,
            h2,
            &options,
            &mut self.stats,
            &mut w.eval,
            potential,
            &w.x1,
            &mut w.f1,
            k,
            t,
        )?;
        // v_k+1 = v_k + ½ h (f_k + f_k+1)
        for i in 0..n {
            w.v1[i] = state.v[i] - 0.5 * h * (w.f0[i] + w.f1[i]);
        }
        check_finite(&w.v1, Quantity::NewVelocity, k, t)?;
        state.q.copy_from(&w.x1);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.f0, &mut w.f1);
        w.cache_q.copy_from(&w.x1);
        self.clock.steps += 1;
        Ok(())
    }
}

/// The step size is the clock's; the cached `f` depends on `h` only through `h²`: it is reused
/// when `h` changes sign (`h → -h`) and recomputed otherwise.
impl<V: Vector, L: Method> Clocked for LinearlyImplicit<V, L> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        L::NAME
    }
}

impl<P, V, L> Stepper<P, V> for LinearlyImplicit<V, L>
where
    P: Model<V> + ?Sized,
    V: Vector,
    L: Linearization<P, V>,
{
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        LinearlyImplicit::step(self, target, state)
    }
}

/// Saves `h`, β, the condition limit and the step counter (exact bits); the cached `f` is
/// recomputed from the restored state by the same code, giving the same bits.
impl<V: Vector, L> Resumable for LinearlyImplicit<V, L> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.clock.h);
        out.set_f64("beta", self.beta);
        out.set_f64("max_condition", self.solve.max_condition);
        out.set_u64("steps", self.clock.steps);
    }

    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let beta = from.f64("beta")?;
        // Z&Ss-stiff checkpoints written before the family shared one core have no limit.
        let max_condition = from.f64("max_condition").unwrap_or(f64::INFINITY);
        if !beta.is_finite() || max_condition.is_nan() || max_condition < 1.0 {
            return Err(CheckpointError::Mismatch(format!(
                "Zhang-Skeel: invalid beta {beta} or max_condition {max_condition}"
            )));
        }
        self.clock.restore(from)?;
        self.beta = beta;
        self.solve = SolveOptions { max_condition };
        self.reset();
        Ok(())
    }
}
