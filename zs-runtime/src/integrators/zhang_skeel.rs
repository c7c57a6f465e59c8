//! Zhang & Skeel (Z&S, Tao & Owhadi Integrator 1, eq. 3) and its simplified variant
//! (Z&Ss, Integrator 4, eq. 18): `INTEGRATORS.md` §2–3. The two share one implementation;
//! Z&Ss skips the third-derivative term.

use super::{check_finite, check_h, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::linalg::{ShiftedSolve, SolveOptions};
use crate::model::HessianPart;
use crate::vector::{all_finite, Vector};
use crate::{Model, StateOf, StepError, Stepper};

/// Work counters of a [`ZhangSkeel`] or [`ZhangSkeelSimplified`] integrator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZsStats {
    /// Evaluations of `f(x)` (each: one fused `(∇V, H)`, one `n×n` solve and, for Z&S, one
    /// third contraction `T(x; a)`). One per step in steady state.
    pub evaluations: u64,
    /// Steps that reused the cached `f_k` of the previous step.
    pub cache_hits: u64,
    /// Solves done by Cholesky (`M + βh²H` positive definite).
    pub cholesky_solves: u64,
    /// Solves that fell back from Cholesky (`M + βh²H` indefinite, e.g. on a non-convex
    /// potential such as the penalized double pendulum): pivoted LU, or the sparse backend's
    /// `LDLᵀ`.
    pub lu_fallbacks: u64,
}

impl ZsStats {
    pub(crate) fn count(&mut self, how: crate::linalg::Factorization) {
        if how.is_cholesky() {
            self.cholesky_solves += 1;
        } else {
            self.lu_fallbacks += 1;
        }
    }
}

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
}

/// The buffers of a Z&S step, made at the first step (set-up) and reused: `F_k = -f_k` with its
/// key (the bits of `q` and `h²`), `x_k+1`, `F_k+1`, `v_k+1`.
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
    fn new<P: Model<V> + ?Sized>(p: &P) -> Self {
        let n = p.dimension();
        Self {
            eval: Eval::new(p, HessianPart::Full),
            f0: V::zeros(n),
            f1: V::zeros(n),
            x1: V::zeros(n),
            v1: V::zeros(n),
            cache_q: V::zeros(n),
            cache_key: None,
        }
    }
}

/// The shared engine: `third = true` is Z&S (eq. 3), `false` is Z&Ss (eq. 18).
#[derive(Debug)]
struct Core<V: Vector> {
    beta: f64,
    h: f64,
    steps: u64,
    stats: ZsStats,
    solve: SolveOptions,
    work: Option<Work<V>>,
}

/// A copy of the parameters, counters and statistics; the buffers (and the cached `f_k`) are
/// not copied: the copy rebuilds them at its first step, recomputing `f_k` bit for bit.
impl<V: Vector> Clone for Core<V> {
    fn clone(&self) -> Self {
        Self {
            beta: self.beta,
            h: self.h,
            steps: self.steps,
            stats: self.stats,
            solve: self.solve,
            work: None,
        }
    }
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
pub(crate) fn f_into<V: Vector, P: Model<V> + ?Sized>(
    third: bool,
    beta: f64,
    h2: f64,
    options: &SolveOptions,
    stats: &mut ZsStats,
    e: &mut Eval<V>,
    potential: &P,
    x: &V,
    out: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    stats.evaluations += 1;
    if third {
        potential.gradient_hessian_keeping_third_into(x, out, &mut e.hess);
    } else {
        potential.gradient_hessian_into(x, out, &mut e.hess);
    }
    let how = match e
        .solver
        .solve_shifted(&e.m, beta * h2, &e.hess, out, options)
    {
        Ok(how) => how,
        Err(err) => return Err(solve_failure::<V>(err, &e.hess, "Hessian", step, t)),
    };
    stats.count(how);
    if !third {
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
    hessian_name: &'static str,
    step: u64,
    t: f64,
) -> StepError {
    use crate::linalg::SolveFailure::NonFinite;
    let what = match err {
        NonFinite {
            what: "right-hand side",
        } => "gradient",
        NonFinite {
            what: "linear system matrix",
        } if !V::matrix_is_finite(hess) => hessian_name,
        _ => return err.at(step, t),
    };
    StepError::NonFinite { step, t, what }
}

/// [`f_into`] at the start of a step whose `f_k` is not cached (the first step, or after the
/// state was changed): out of line, so that the steady-state evaluation at `x_k+1` is the only
/// copy inlined into the step (where the masses of a fixed-size system are constants).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn f_at_start<V: Vector, P: Model<V> + ?Sized>(
    third: bool,
    beta: f64,
    h2: f64,
    options: &SolveOptions,
    stats: &mut ZsStats,
    e: &mut Eval<V>,
    potential: &P,
    x: &V,
    out: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    f_into(
        third, beta, h2, options, stats, e, potential, x, out, step, t,
    )
}

#[cold]
#[inline(never)]
fn third_failure<V: Vector>(tc: &V, step: u64, t: f64) -> StepError {
    StepError::NonFinite {
        step,
        t,
        what: if all_finite(tc) {
            "f (Z&S eq. 3)"
        } else {
            "third contraction"
        },
    }
}

impl<V: Vector> Core<V> {
    fn new(beta: f64, h: f64) -> Self {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel: beta must be finite, got {beta}"
        );
        Self {
            beta,
            h,
            steps: 0,
            stats: ZsStats::default(),
            solve: SolveOptions::default(),
            work: None,
        }
    }

    fn drop_cache(&mut self) {
        if let Some(w) = &mut self.work {
            w.cache_key = None;
        }
    }

    fn step<P: Model<V> + ?Sized>(
        &mut self,
        third: bool,
        potential: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let (beta, options) = (self.beta, self.solve);
        let w = match &mut self.work {
            Some(w) if w.eval.fits(potential, HessianPart::Full) => w,
            slot => slot.insert(Work::new(potential)),
        };
        potential.masses_into(&mut w.eval.m);
        if w.cache_key == Some(h2_bits) && same_bits(&w.cache_q, &state.q) {
            self.stats.cache_hits += 1;
        } else {
            w.cache_key = None;
            f_at_start(
                third,
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
        check_finite(&w.x1, "new position", k, t)?;
        f_into(
            third,
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
        check_finite(&w.v1, "new velocity", k, t)?;
        state.q.copy_from(&w.x1);
        state.v.copy_from(&w.v1);
        state.t = t + h;
        core::mem::swap(&mut w.f0, &mut w.f1);
        w.cache_q.copy_from(&w.x1);
        self.steps += 1;
        Ok(())
    }
}

impl<V: Vector> Core<V> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.h);
        out.set_f64("beta", self.beta);
        out.set_f64("max_condition", self.solve.max_condition);
        out.set_u64("steps", self.steps);
    }

    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let beta = from.f64("beta")?;
        let max_condition = from.f64("max_condition")?;
        if !beta.is_finite() || max_condition.is_nan() || max_condition < 1.0 {
            return Err(CheckpointError::Mismatch(format!(
                "Zhang-Skeel: invalid beta {beta} or max_condition {max_condition}"
            )));
        }
        self.h = from.f64("h")?;
        self.beta = beta;
        self.solve = SolveOptions { max_condition };
        self.steps = from.u64("steps")?;
        self.drop_cache();
        Ok(())
    }
}

macro_rules! zs_common {
    ($ty:ident, $third:expr, $name:literal) => {
        impl<V: Vector> $ty<V> {
            /// The integrator with parameter `beta` (β; the paper uses 0.4, or 0.3 for DNA) and
            /// step `h` (negative: integrate backwards).
            ///
            /// An invalid `h` (zero or non-finite) is reported by `step` as
            /// [`StepError::InvalidStepSize`].
            ///
            /// # Panics
            /// If `beta` is not finite.
            pub fn new(beta: f64, h: f64) -> Self {
                Self {
                    core: Core::new(beta, h),
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

            /// Change the step size. The cached `f` depends on `h` only through `h²`: it is
            /// reused when `h` changes sign (`h → -h`) and recomputed otherwise.
            pub fn set_h(&mut self, h: f64) {
                self.core.h = h;
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
                self.core.beta = beta;
                self.core.drop_cache();
            }

            /// Reject near-singular linear systems: a step whose `M + βh²H` has an estimated
            /// 1-norm condition number above `max_condition` fails with
            /// [`StepError::IllConditioned`] (see [`crate::linalg::SolveOptions`]). Off by
            /// default (only matrices singular to working precision are rejected, as
            /// [`StepError::SingularMatrix`]). Drops the cached `f`.
            ///
            /// # Panics
            /// If `max_condition` is NaN or below 1.
            pub fn with_max_condition(mut self, max_condition: f64) -> Self {
                self.core.solve = SolveOptions::with_max_condition(max_condition);
                self.core.drop_cache();
                self
            }

            /// The condition-number limit (`f64::INFINITY`: off).
            pub fn max_condition(&self) -> f64 {
                self.core.solve.max_condition
            }

            /// Forget the cached `f_k`. Required before stepping a *different potential* with
            /// this integrator (the cache key is the position and `h²`, not the potential).
            pub fn reset(&mut self) {
                self.core.drop_cache();
            }

            /// Number of steps completed (the index reported by the next failing step).
            pub fn steps_taken(&self) -> u64 {
                self.core.steps
            }

            /// Work counters: evaluations, cache hits, Cholesky solves, LU fallbacks.
            pub fn stats(&self) -> ZsStats {
                self.core.stats
            }

            /// Number of linear solves that fell back from Cholesky to pivoted LU.
            pub fn lu_fallbacks(&self) -> u64 {
                self.core.stats.lu_fallbacks
            }

            /// Advance `state` by one step of size `h` (time included).
            ///
            /// On error `state` is unchanged and the error carries the index of the failing
            /// step and the time it started from: [`StepError::InvalidStepSize`] for a zero or
            /// non-finite `h`, [`StepError::SingularMatrix`] when `M + βh²H` is singular to
            /// working precision, [`StepError::NonFinite`] when a gradient, Hessian, third
            /// contraction, solution or new state is not finite.
            pub fn step<P: Model<V> + ?Sized>(
                &mut self,
                potential: &P,
                state: &mut StateOf<V>,
            ) -> Result<(), StepError> {
                self.core.step($third, potential, state)
            }
        }

        /// Saves `h`, β, the condition limit and the step counter (exact bits); the cached
        /// `f` is recomputed from the restored state by the same code, giving the same bits.
        impl<V: Vector> Resumable for $ty<V> {
            fn save(&self, out: &mut ScopeMut<'_>) {
                self.core.save(out);
            }
            fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
                self.core.restore(from)
            }
        }

        impl<P: Model<V> + ?Sized, V: Vector> Stepper<P, V> for $ty<V> {
            fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
                self.core.step($third, target, state)
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
/// the next step (cached by the bit pattern of `q` and of `h²`; call [`ZhangSkeel::reset`]
/// before stepping a different potential).
///
/// ```
/// use zs_runtime::{Potential, State, ZhangSkeel};
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
#[derive(Debug, Clone)]
pub struct ZhangSkeel<V: Vector> {
    core: Core<V>,
}

/// Simplified Zhang & Skeel (Z&Ss): Tao & Owhadi, Integrator 4, eq. 18 — [`ZhangSkeel`] with
/// `f_k = a_k` (no third-derivative term):
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
#[derive(Debug, Clone)]
pub struct ZhangSkeelSimplified<V: Vector> {
    core: Core<V>,
}

zs_common!(ZhangSkeel, true, "zhang-skeel");
zs_common!(ZhangSkeelSimplified, false, "zhang-skeel-simplified");
