//! Simplified Zhang & Skeel for stiff systems (Z&Ss-stiff; Tao & Owhadi Integrator 5, eq. 19):
//! `INTEGRATORS.md` §4.

use super::{check_finite, check_h, same_bits};
use crate::linalg::{solve_shifted, Factorization};
use crate::{State, StepError, Stepper, StiffSplit, ZsStats};

/// `a(x)` cached at the end of a step, keyed by the bit patterns of `x` and `h²`.
#[derive(Debug, Clone, Copy)]
struct Cache<const N: usize> {
    x: [f64; N],
    h2_bits: u64,
    a: [f64; N],
}

/// Simplified Z&S for stiff systems (Tao & Owhadi, Integrator 5, eq. 19), for a potential split
/// `V = V0 + ε⁻¹V1` into a soft part and a stiff part ([`StiffSplit`]; `ε⁻¹` is folded into
/// `V1`):
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
/// Cost per step: one `(∇V, Hess V1)` evaluation and one dense `n×n` solve (Cholesky, falling
/// back to pivoted LU); `a_k+1` is cached for the next step, keyed by the bit patterns of `x`
/// and `h²` (call [`ZhangSkeelStiff::reset`] before stepping a different potential).
///
/// *Future work:* the paper's point (§4.3) is that for water the stiff Hessian couples only the
/// atoms of one molecule, so `M + βh²Hess V1` is block diagonal (one 9×9 block per molecule) and
/// the solve is O(N) in the number of molecules. This implementation factors the dense `n×n`
/// matrix (O(n³)); a block-diagonal solve needs the block structure from the system definition.
#[derive(Debug, Clone)]
pub struct ZhangSkeelStiff<const N: usize> {
    beta: f64,
    h: f64,
    steps: u64,
    cache: Option<Cache<N>>,
    stats: ZsStats,
}

impl<const N: usize> ZhangSkeelStiff<N> {
    /// The integrator with parameter `beta` (β) and step `h` (negative: integrate backwards).
    /// An invalid `h` (zero, non-finite) is reported by `step` as
    /// [`StepError::InvalidStepSize`].
    ///
    /// # Panics
    /// If `beta` is not finite.
    pub fn new(beta: f64, h: f64) -> Self {
        assert!(
            beta.is_finite(),
            "Zhang-Skeel stiff: beta must be finite, got {beta}"
        );
        Self {
            beta,
            h,
            steps: 0,
            cache: None,
            stats: ZsStats::default(),
        }
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
        assert!(
            beta.is_finite(),
            "Zhang-Skeel stiff: beta must be finite, got {beta}"
        );
        self.beta = beta;
        self.cache = None;
    }

    /// Forget the cached `a_k` (required before stepping a different potential).
    pub fn reset(&mut self) {
        self.cache = None;
    }

    /// Number of steps completed (the index reported by the next failing step).
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// Work counters: evaluations of `a(x)` (one `(∇V, Hess V1)` and one solve each), cache
    /// hits, Cholesky solves, LU fallbacks.
    pub fn stats(&self) -> ZsStats {
        self.stats
    }

    /// Number of linear solves that fell back from Cholesky to pivoted LU.
    pub fn lu_fallbacks(&self) -> u64 {
        self.stats.lu_fallbacks
    }

    /// `a(x)`: solve `(M + βh² Hess V1(x)) a = −∇V(x)`.
    fn accel<P: StiffSplit<N> + ?Sized>(
        &mut self,
        potential: &P,
        x: &[f64; N],
        h2: f64,
        step: u64,
        t: f64,
    ) -> Result<[f64; N], StepError> {
        self.stats.evaluations += 1;
        let m = potential.masses();
        let (g, h1) = potential.gradient_stiff_hessian(x);
        check_finite(&g, "gradient", step, t)?;
        if !h1.iter().all(|row| row.iter().all(|v| v.is_finite())) {
            return Err(StepError::NonFinite {
                step,
                t,
                what: "stiff Hessian",
            });
        }
        let rhs: [f64; N] = core::array::from_fn(|i| -g[i]);
        let (a, how) = solve_shifted(&m, self.beta * h2, &h1, &rhs).map_err(|e| e.at(step, t))?;
        match how {
            Factorization::Cholesky => self.stats.cholesky_solves += 1,
            Factorization::Lu => self.stats.lu_fallbacks += 1,
        }
        Ok(a)
    }

    /// Advance `state` by one step of size `h` (time included).
    ///
    /// On error `state` is unchanged and the error carries the index of the failing step and the
    /// time it started from: [`StepError::InvalidStepSize`], [`StepError::SingularMatrix`]
    /// (`M + βh²Hess V1` singular), [`StepError::NonFinite`].
    pub fn step<P: StiffSplit<N> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut State<N>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.h, self.steps, state.t);
        check_h(h, k, t)?;
        let h2 = h * h;
        let h2_bits = h2.to_bits();
        let a0 = match &self.cache {
            Some(c) if c.h2_bits == h2_bits && same_bits(&c.x, &state.q) => {
                self.stats.cache_hits += 1;
                c.a
            }
            _ => {
                let a = self.accel(potential, &state.q, h2, k, t)?;
                self.cache = Some(Cache {
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
        let a1 = self.accel(potential, &x1, h2, k, t)?;
        // v_k+1 = v_k + ½h (a_k + a_k+1)
        let v1: [f64; N] = core::array::from_fn(|i| state.v[i] + 0.5 * h * (a0[i] + a1[i]));
        check_finite(&v1, "new velocity", k, t)?;
        state.q = x1;
        state.v = v1;
        state.t = t + h;
        self.cache = Some(Cache {
            x: x1,
            h2_bits,
            a: a1,
        });
        self.steps += 1;
        Ok(())
    }
}

impl<P: StiffSplit<N> + ?Sized, const N: usize> Stepper<P, N> for ZhangSkeelStiff<N> {
    fn step(&mut self, target: &P, state: &mut State<N>) -> Result<(), StepError> {
        ZhangSkeelStiff::step(self, target, state)
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
        "zhang-skeel-stiff"
    }
}
