//! Baseline for the benchmark: the **penalized** double pendulum `V_ω = V + ½ω² gᵀg`
//! differentiated by forward-mode automatic differentiation with `num-dual` 0.11.
//!
//! The potential is written once, generically over [`DualNum<f64>`]
//! ([`penalized_potential_generic`]); the derivatives are the idiomatic scalar dual-number
//! evaluations of it:
//! - gradient: `N = 4` evaluations with [`Dual64`] seeded with `e_i`;
//! - Hessian (and gradient, in [`Potential::gradient_hessian`]): the `N(N+1)/2 = 10` pairs
//!   `i ≤ j` with [`HyperDual64`] seeded `(e_i, e_j)` (`ε1ε2` part = `∂²V/∂q_i∂q_j`, `ε1` part of
//!   the `i = j` pass = `∂V/∂q_i`);
//! - third contraction: `N` evaluations with [`HyperHyperDual64`] seeded `(e_i, a, a)`, whose
//!   `ε1ε2ε3` part is `Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k = T(q; a)_i`.

use super::DoublePendulum;
use num_dual::{Dual64, DualNum, HyperDual64, HyperHyperDual64};
use zs_runtime::Potential;

/// `V_ω(q) = -gravity·(y1 + y2) + ½ω² (g1² + g2²)` for any (hyper-)dual number type.
#[inline]
pub fn penalized_potential_generic<D: DualNum<f64> + Copy>(
    sys: &DoublePendulumDual,
    q: &[D; 4],
) -> D {
    let [x1, y1, x2, y2] = *q;
    let (dx, dy) = (x2 - x1, y2 - y1);
    let g1 = x1 * x1 + y1 * y1 - sys.l1 * sys.l1;
    let g2 = dx * dx + dy * dy - sys.l2 * sys.l2;
    (y1 + y2) * (-sys.gravity) + (g1 * g1 + g2 * g2) * (0.5 * sys.omega * sys.omega)
}

/// The penalized double pendulum (penalty frequency `omega` fixed) with num-dual derivatives;
/// implements [`Potential<4>`] for `V_ω`, like `DoublePendulum::penalized(omega)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoublePendulumDual {
    /// Length of the first rod.
    pub l1: f64,
    /// Length of the second rod.
    pub l2: f64,
    /// Coefficient of `V = -gravity · (y1 + y2)` (`-1` physical, `+1` as printed).
    pub gravity: f64,
    /// Mass of the first bob.
    pub m1: f64,
    /// Mass of the second bob.
    pub m2: f64,
    /// Penalty frequency ω.
    pub omega: f64,
}

impl DoublePendulumDual {
    /// The penalized version of `sys` with penalty frequency `omega`.
    pub fn new(sys: &DoublePendulum, omega: f64) -> Self {
        Self {
            l1: sys.l1,
            l2: sys.l2,
            gravity: sys.gravity,
            m1: 1.0,
            m2: 1.0,
            omega,
        }
    }

    /// One hyper-dual pass seeded `(e_i, e_j)`: returns `(∂V/∂q_i, ∂²V/∂q_i∂q_j)`.
    #[inline]
    fn hyper_pass(&self, q: &[f64; 4], i: usize, j: usize) -> (f64, f64) {
        let x: [HyperDual64; 4] = core::array::from_fn(|k| {
            HyperDual64::new(
                q[k],
                if k == i { 1.0 } else { 0.0 },
                if k == j { 1.0 } else { 0.0 },
                0.0,
            )
        });
        let v = penalized_potential_generic(self, &x);
        (v.eps1, v.eps1eps2)
    }
}

impl Potential<4> for DoublePendulumDual {
    fn masses(&self) -> [f64; 4] {
        [self.m1, self.m1, self.m2, self.m2]
    }

    fn potential(&self, q: &[f64; 4]) -> f64 {
        penalized_potential_generic(self, q)
    }

    fn gradient(&self, q: &[f64; 4]) -> [f64; 4] {
        core::array::from_fn(|i| {
            let x: [Dual64; 4] =
                core::array::from_fn(|k| Dual64::new(q[k], if k == i { 1.0 } else { 0.0 }));
            penalized_potential_generic(self, &x).eps
        })
    }

    fn hessian(&self, q: &[f64; 4]) -> [[f64; 4]; 4] {
        self.gradient_hessian(q).1
    }

    fn third_contraction(&self, q: &[f64; 4], a: &[f64; 4]) -> [f64; 4] {
        core::array::from_fn(|i| {
            let x: [HyperHyperDual64; 4] = core::array::from_fn(|k| {
                HyperHyperDual64::new(
                    q[k],
                    if k == i { 1.0 } else { 0.0 },
                    a[k],
                    a[k],
                    0.0,
                    0.0,
                    0.0,
                    0.0,
                )
            });
            penalized_potential_generic(self, &x).eps1eps2eps3
        })
    }

    #[allow(clippy::needless_range_loop)] // symmetric fill of the upper triangle
    fn gradient_hessian(&self, q: &[f64; 4]) -> ([f64; 4], [[f64; 4]; 4]) {
        let mut g = [0.0; 4];
        let mut h = [[0.0; 4]; 4];
        for i in 0..4 {
            for j in i..4 {
                let (gi, hij) = self.hyper_pass(q, i, j);
                if i == j {
                    g[i] = gi;
                }
                h[i][j] = hij;
                h[j][i] = hij;
            }
        }
        (g, h)
    }
}
