//! Zhang & Skeel (Z&S, Tao & Owhadi Integrator 1, eq. 3) and its simplified variant
//! (Z&Ss, Integrator 4, eq. 18): `INTEGRATORS.md` §2–3. The two share one implementation;
//! Z&Ss skips the third-derivative term.

use super::{check_finite, check_h, same_bits};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::linalg::{solve_shifted_with, Factorization, SolveOptions};
use crate::{Potential, State, StepError, Stepper};

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
    /// Solves that fell back to pivoted LU (`M + βh²H` indefinite, e.g. on a non-convex
    /// potential such as the penalized double pendulum).
    pub lu_fallbacks: u64,
}

/// `f(x)` cached at the end of a step, keyed by the bit patterns of `q` and `h²`.
#[derive(Debug, Clone, Copy)]
struct Cache<const N: usize> {
    q: [f64; N],
    h2_bits: u64,
    f: [f64; N],
}

/// The shared engine: `third = true` is Z&S (eq. 3), `false` is Z&Ss (eq. 18).
#[derive(Debug, Clone)]
struct Core<const N: usize> {
    beta: f64,
    h: f64,
    steps: u64,
    cache: Option<Cache<N>>,
    stats: ZsStats,
    solve: SolveOptions,
}

impl<const N: usize> Core<N> {
    fn new(beta: f64, h: f64) -> Self {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel: beta must be finite, got {beta}"
        );
        Self {
            beta,
            h,
            steps: 0,
            cache: None,
            stats: ZsStats::default(),
            solve: SolveOptions::default(),
        }
    }

    /// `f(x)`: solve `(M + βh²H(x)) a = -∇V(x)`, then (Z&S only)
    /// `f = a - ½ β² h⁴ M⁻¹ T(x; a)`. Depends on `h` only through `h²`.
    fn f<P: Potential<N> + ?Sized>(
        &mut self,
        third: bool,
        potential: &P,
        x: &[f64; N],
        h2: f64,
        step: u64,
        t: f64,
    ) -> Result<[f64; N], StepError> {
        self.stats.evaluations += 1;
        let m = potential.masses();
        let (g, hess) = potential.gradient_hessian(x);
        check_finite(&g, "gradient", step, t)?;
        if !hess.iter().all(|row| row.iter().all(|v| v.is_finite())) {
            return Err(StepError::NonFinite {
                step,
                t,
                what: "Hessian",
            });
        }
        let rhs: [f64; N] = core::array::from_fn(|i| -g[i]);
        let (a, how) = solve_shifted_with(&m, self.beta * h2, &hess, &rhs, &self.solve)
            .map_err(|e| e.at(step, t))?;
        match how {
            Factorization::Cholesky => self.stats.cholesky_solves += 1,
            Factorization::Lu => self.stats.lu_fallbacks += 1,
        }
        if !third {
            return Ok(a);
        }
        let tc = potential.third_contraction(x, &a);
        check_finite(&tc, "third contraction", step, t)?;
        let c = 0.5 * self.beta * self.beta * h2 * h2;
        let f = core::array::from_fn(|i| a[i] - c * tc[i] / m[i]);
        check_finite(&f, "f (Z&S eq. 3)", step, t)?;
        Ok(f)
    }

    fn step<P: Potential<N> + ?Sized>(
        &mut self,
        third: bool,
        potential: &P,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let f0 = match &self.cache {
            Some(c) if c.h2_bits == h2_bits && same_bits(&c.q, &state.q) => {
                self.stats.cache_hits += 1;
                c.f
            }
            _ => {
                let f = self.f(third, potential, &state.q, h2, k, t)?;
                self.cache = Some(Cache {
                    q: state.q,
                    h2_bits,
                    f,
                });
                f
            }
        };
        // x_k+1 = x_k + h v_k + ½ h² f_k
        let x1: [f64; N] = core::array::from_fn(|i| state.q[i] + h * state.v[i] + 0.5 * h2 * f0[i]);
        check_finite(&x1, "new position", k, t)?;
        let f1 = self.f(third, potential, &x1, h2, k, t)?;
        // v_k+1 = v_k + ½ h (f_k + f_k+1)
        let v1: [f64; N] = core::array::from_fn(|i| state.v[i] + 0.5 * h * (f0[i] + f1[i]));
        check_finite(&v1, "new velocity", k, t)?;
        let t1 = t + h;
        state.q = x1;
        state.v = v1;
        state.t = t1;
        self.cache = Some(Cache {
            q: x1,
            h2_bits,
            f: f1,
        });
        self.steps += 1;
        Ok(())
    }
}

impl<const N: usize> Core<N> {
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
        self.cache = None;
        Ok(())
    }
}

macro_rules! zs_common {
    ($ty:ident, $third:expr, $name:literal) => {
        impl<const N: usize> $ty<N> {
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
                self.core.cache = None;
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
                self.core.cache = None;
                self
            }

            /// The condition-number limit (`f64::INFINITY`: off).
            pub fn max_condition(&self) -> f64 {
                self.core.solve.max_condition
            }

            /// Forget the cached `f_k`. Required before stepping a *different potential* with
            /// this integrator (the cache key is the position and `h²`, not the potential).
            pub fn reset(&mut self) {
                self.core.cache = None;
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
            pub fn step<P: Potential<N> + ?Sized>(
                &mut self,
                potential: &P,
                state: &mut State<N>,
            ) -> Result<(), StepError> {
                self.core.step($third, potential, state)
            }
        }

        /// Saves `h`, β, the condition limit and the step counter (exact bits); the cached
        /// `f` is recomputed from the restored state by the same code, giving the same bits.
        impl<const N: usize> Resumable for $ty<N> {
            fn save(&self, out: &mut ScopeMut<'_>) {
                self.core.save(out);
            }
            fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
                self.core.restore(from)
            }
        }

        impl<P: Potential<N> + ?Sized, const N: usize> Stepper<P, N> for $ty<N> {
            fn step(&mut self, target: &P, state: &mut State<N>) -> Result<(), StepError> {
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
pub struct ZhangSkeel<const N: usize> {
    core: Core<N>,
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
pub struct ZhangSkeelSimplified<const N: usize> {
    core: Core<N>,
}

zs_common!(ZhangSkeel, true, "zhang-skeel");
zs_common!(ZhangSkeelSimplified, false, "zhang-skeel-simplified");
