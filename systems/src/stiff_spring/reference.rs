//! Hand-written closed-form derivatives of the stiff spring double pendulum, written
//! independently of `#[mechanical_system]`, to test the generated code against and to run the
//! impulse-family experiments on.
//!
//! Notation: `r1 = (x1, y1)`, `r2 = (x2 − x1, y2 − y1)`, i.e. `r_i = D_i q` with
//! `D1 = [I 0]`, `D2 = [−I I]` (2 × 2 blocks); `s_i = |r_i|`, `u_i = r_i / s_i`,
//! `κ_i = k_i / ε²`.
//! - `U = gravity · (m1 y1 + m2 y2)`: `∇U = (0, gravity·m1, 0, gravity·m2)`, `Hess U = 0`.
//! - `W = ½ Σ_i κ_i (s_i − ℓ_i)²`: `∇W = Σ_i D_iᵀ κ_i (s_i − ℓ_i) u_i`,
//!   `Hess W = Σ_i D_iᵀ κ_i [(ℓ_i/s_i) u_i u_iᵀ + (1 − ℓ_i/s_i) I] D_i`.
//! - `g_i = s_i² − ℓ_i²`: `∇g_i = 2 D_iᵀ r_i`, `Hess g_i = 2 D_iᵀD_i` (constant), so
//!   `Σ_i λ_i Hess g_i = 2λ1 D1ᵀD1 + 2λ2 D2ᵀD2`.
//! - The penalty terms `½ω²|g|²` are those of the double pendulum (the same constraints), taken
//!   from [`DoublePendulumReference`] with zero gravity, plus `U`.

use zs_runtime::{ConstraintCurvature, FastPotential, MechanicalSystem, Potential};

use super::StiffSpringDoublePendulum;
use crate::double_pendulum::reference::DoublePendulumReference;

/// The stiff spring double pendulum with hand-written derivatives: the parameters `p` have
/// the meaning of the fields of [`StiffSpringDoublePendulum`] (whose generated code is tested
/// against this).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StiffSpringReference {
    /// The parameters.
    pub p: StiffSpringDoublePendulum,
}

impl StiffSpringReference {
    /// The system with parameters `p`.
    pub fn new(p: StiffSpringDoublePendulum) -> Self {
        Self { p }
    }

    /// The constraints-only double pendulum that supplies the penalty terms.
    fn rods(&self) -> DoublePendulumReference {
        DoublePendulumReference {
            l1: self.p.l1,
            l2: self.p.l2,
            gravity: 0.0,
            m1: self.p.m1,
            m2: self.p.m2,
        }
    }

    /// `(r1, r2)`.
    #[inline]
    fn bonds(q: &[f64; 4]) -> [[f64; 2]; 2] {
        [[q[0], q[1]], [q[2] - q[0], q[3] - q[1]]]
    }

    /// `κ_i`, `ℓ_i`.
    #[inline]
    fn springs(&self) -> [(f64, f64); 2] {
        let e2 = self.p.eps * self.p.eps;
        [(self.p.k1 / e2, self.p.l1), (self.p.k2 / e2, self.p.l2)]
    }

    /// `D_iᵀ x` for `x ∈ R²` (bond `i`), added into `out`.
    #[inline]
    fn add_dt(i: usize, x: [f64; 2], out: &mut [f64; 4]) {
        if i == 0 {
            out[0] += x[0];
            out[1] += x[1];
        } else {
            out[0] -= x[0];
            out[1] -= x[1];
            out[2] += x[0];
            out[3] += x[1];
        }
    }

    /// `D_iᵀ A D_i` for a 2 × 2 block `A`, added into `out`.
    #[inline]
    fn add_dtad(i: usize, a: [[f64; 2]; 2], out: &mut [[f64; 4]; 4]) {
        // D1 = [I 0]: only the (0,0) block. D2 = [−I I]: blocks ±A.
        let blocks: &[(usize, usize, f64)] = if i == 0 {
            &[(0, 0, 1.0)]
        } else {
            &[(0, 0, 1.0), (0, 2, -1.0), (2, 0, -1.0), (2, 2, 1.0)]
        };
        for &(r0, c0, sgn) in blocks {
            for a_r in 0..2 {
                for a_c in 0..2 {
                    out[r0 + a_r][c0 + a_c] += sgn * a[a_r][a_c];
                }
            }
        }
    }
}

impl Potential<4> for StiffSpringReference {
    fn masses(&self) -> [f64; 4] {
        [self.p.m1, self.p.m1, self.p.m2, self.p.m2]
    }

    fn potential(&self, q: &[f64; 4]) -> f64 {
        self.p.gravity * (self.p.m1 * q[1] + self.p.m2 * q[3])
    }

    fn gradient(&self, _q: &[f64; 4]) -> [f64; 4] {
        [
            0.0,
            self.p.gravity * self.p.m1,
            0.0,
            self.p.gravity * self.p.m2,
        ]
    }

    fn hessian(&self, _q: &[f64; 4]) -> [[f64; 4]; 4] {
        [[0.0; 4]; 4]
    }

    fn third_contraction(&self, _q: &[f64; 4], _a: &[f64; 4]) -> [f64; 4] {
        [0.0; 4]
    }
}

impl FastPotential<4> for StiffSpringReference {
    fn fast_potential(&self, q: &[f64; 4]) -> f64 {
        let r = Self::bonds(q);
        self.springs()
            .iter()
            .zip(&r)
            .map(|(&(kappa, l), ri)| {
                let s = (ri[0] * ri[0] + ri[1] * ri[1]).sqrt();
                0.5 * kappa * (s - l) * (s - l)
            })
            .sum()
    }

    fn fast_gradient(&self, q: &[f64; 4]) -> [f64; 4] {
        let r = Self::bonds(q);
        let mut g = [0.0; 4];
        for (i, (&(kappa, l), ri)) in self.springs().iter().zip(&r).enumerate() {
            let s = (ri[0] * ri[0] + ri[1] * ri[1]).sqrt();
            let c = kappa * (s - l) / s;
            Self::add_dt(i, [c * ri[0], c * ri[1]], &mut g);
        }
        g
    }

    fn fast_hessian(&self, q: &[f64; 4]) -> [[f64; 4]; 4] {
        let r = Self::bonds(q);
        let mut h = [[0.0; 4]; 4];
        for (i, (&(kappa, l), ri)) in self.springs().iter().zip(&r).enumerate() {
            let s = (ri[0] * ri[0] + ri[1] * ri[1]).sqrt();
            let u = [ri[0] / s, ri[1] / s];
            let (a, b) = (kappa * l / s, kappa * (1.0 - l / s));
            let block = [
                [a * u[0] * u[0] + b, a * u[0] * u[1]],
                [a * u[1] * u[0], a * u[1] * u[1] + b],
            ];
            Self::add_dtad(i, block, &mut h);
        }
        h
    }
}

impl MechanicalSystem<4, 2> for StiffSpringReference {
    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        let r = Self::bonds(q);
        [
            r[0][0] * r[0][0] + r[0][1] * r[0][1] - self.p.l1 * self.p.l1,
            r[1][0] * r[1][0] + r[1][1] * r[1][1] - self.p.l2 * self.p.l2,
        ]
    }

    fn constraint_jacobian(&self, q: &[f64; 4]) -> [[f64; 4]; 2] {
        let r = Self::bonds(q);
        let mut jac = [[0.0; 4]; 2];
        for (i, ri) in r.iter().enumerate() {
            Self::add_dt(i, [2.0 * ri[0], 2.0 * ri[1]], &mut jac[i]);
        }
        jac
    }

    fn penalized_potential(&self, omega: f64, q: &[f64; 4]) -> f64 {
        self.potential(q) + self.rods().penalized_potential(omega, q)
    }

    fn penalized_gradient(&self, omega: f64, q: &[f64; 4]) -> [f64; 4] {
        let mut g = self.rods().penalized_gradient(omega, q);
        let gu = self.gradient(q);
        for i in 0..4 {
            g[i] += gu[i];
        }
        g
    }

    fn penalized_hessian(&self, omega: f64, q: &[f64; 4]) -> [[f64; 4]; 4] {
        self.rods().penalized_hessian(omega, q)
    }

    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 4], a: &[f64; 4]) -> [f64; 4] {
        self.rods().penalized_third_contraction(omega, q, a)
    }
}

impl ConstraintCurvature<4, 2> for StiffSpringReference {
    fn weighted_constraint_hessian(&self, _q: &[f64; 4], lambda: &[f64; 2]) -> [[f64; 4]; 4] {
        let mut h = [[0.0; 4]; 4];
        for (i, &l) in lambda.iter().enumerate() {
            Self::add_dtad(i, [[2.0 * l, 0.0], [0.0, 2.0 * l]], &mut h);
        }
        h
    }
}
