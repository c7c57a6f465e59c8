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

#[cfg(test)]
mod tests {
    //! The hand-written derivatives against central differences (steps and tolerances as in
    //! `systems/tests/systems/reference.rs`: truncation `~ε²|f'''|`, rounding `~u|f|/ε`).

    use super::*;
    use crate::stiff_spring::{frequencies, StiffSpringDoublePendulum};
    use crate::testing::{fd_gradient, fd_jacobian, rel_err, rel_err_mat};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Random configurations with bond lengths in `[0.7, 1.3]` and angles anywhere.
    fn points(n: usize, seed: u64) -> Vec<[f64; 4]> {
        let mut r = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (s1, s2) = (r.random_range(0.7..1.3), r.random_range(0.7..1.3));
                let (a1, a2) = (
                    r.random_range(0.0..std::f64::consts::TAU),
                    r.random_range(0.0..std::f64::consts::TAU),
                );
                let (x1, y1) = (s1 * a1.cos(), s1 * a1.sin());
                [x1, y1, x1 + s2 * a2.cos(), y1 + s2 * a2.sin()]
            })
            .collect()
    }

    fn system() -> StiffSpringReference {
        // ε = 0.1 keeps W's derivatives O(100): finite differences stay accurate.
        StiffSpringReference::new(StiffSpringDoublePendulum {
            m1: 1.5,
            m2: 0.7,
            l2: 1.2,
            ..StiffSpringDoublePendulum::example1(0.1)
        })
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let sys = system();
        let lambda = [0.37, -1.3];
        let mut worst = [0.0f64; 6];
        for q in points(100, 1) {
            let e = [
                rel_err(
                    &sys.fast_gradient(&q),
                    &fd_gradient(|x| sys.fast_potential(x), &q, 1e-5),
                ),
                rel_err_mat(
                    &sys.fast_hessian(&q),
                    &fd_jacobian(|x| sys.fast_gradient(x), &q, 1e-6),
                ),
                rel_err(
                    &sys.gradient(&q),
                    &fd_gradient(|x| sys.potential(x), &q, 1e-5),
                ),
                rel_err_mat(
                    &sys.constraint_jacobian(&q),
                    &fd_jacobian(|x| sys.constraints(x), &q, 1e-6),
                ),
                rel_err_mat(
                    &sys.weighted_constraint_hessian(&q, &lambda),
                    &fd_jacobian(
                        |x| {
                            let g = sys.constraint_jacobian(x);
                            core::array::from_fn(|i| lambda[0] * g[0][i] + lambda[1] * g[1][i])
                        },
                        &q,
                        1e-6,
                    ),
                ),
                rel_err(
                    &sys.penalized_gradient(3.0, &q),
                    &fd_gradient(|x| sys.penalized_potential(3.0, x), &q, 1e-5),
                ),
            ];
            for (w, e) in worst.iter_mut().zip(e) {
                *w = w.max(e);
            }
        }
        let shown: Vec<String> = worst.iter().map(|e| format!("{e:.1e}")).collect();
        println!("max rel. errors vs FD (∇W, Hess W, ∇U, G, Σλ Hess g, ∇V_ω): {shown:?}");
        assert!(worst.iter().all(|&e| e < 1e-6), "{worst:?}");
    }

    #[test]
    fn w_vanishes_exactly_on_the_constraint_manifold() {
        let sys = system();
        for q in points(20, 2) {
            let g = sys.constraints(&q);
            let w = sys.fast_potential(&q);
            assert!(w > 0.0 && g.iter().any(|c| c.abs() > 1e-6));
            // Move onto the manifold radially along each bond: W and g vanish together.
            let s1 = q[0].hypot(q[1]);
            let (x1, y1) = (q[0] * sys.p.l1 / s1, q[1] * sys.p.l1 / s1);
            let (dx, dy) = (q[2] - q[0], q[3] - q[1]);
            let s2 = dx.hypot(dy);
            let on = [x1, y1, x1 + dx * sys.p.l2 / s2, y1 + dy * sys.p.l2 / s2];
            assert!(sys.fast_potential(&on) < 1e-25);
            assert!(sys.constraints(&on).iter().all(|c| c.abs() < 1e-14));
            assert!(sys.fast_gradient(&on).iter().all(|c| c.abs() < 1e-11));
        }
    }

    #[test]
    fn frequencies_are_the_normal_eigenfrequencies() {
        // On the manifold the nonzero eigenvalues of M^-1/2 Hess W M^-1/2 are ω_i² (two zero
        // eigenvalues: the tangent directions).
        let sys = system();
        let p = sys.p;
        for q in points(20, 3) {
            let s1 = q[0].hypot(q[1]);
            let (x1, y1) = (q[0] * p.l1 / s1, q[1] * p.l1 / s1);
            let (dx, dy) = (q[2] - q[0], q[3] - q[1]);
            let s2 = dx.hypot(dy);
            let on = [x1, y1, x1 + dx * p.l2 / s2, y1 + dy * p.l2 / s2];
            let h = sys.fast_hessian(&on);
            let m = sys.masses();
            let a = nalgebra::Matrix4::from_fn(|i, j| h[i][j] / (m[i] * m[j]).sqrt());
            let mut ev: Vec<f64> = a.symmetric_eigen().eigenvalues.iter().copied().collect();
            ev.sort_by(f64::total_cmp);
            let w = frequencies(&p, &on);
            let e2 = p.eps * p.eps;
            assert!(ev[0].abs() < 1e-9 && ev[1].abs() < 1e-9, "{ev:?}");
            assert!(
                (ev[2] * e2 - w[0] * w[0]).abs() < 1e-12 * ev[3] * e2,
                "{ev:?} {w:?}"
            );
            assert!(
                (ev[3] * e2 - w[1] * w[1]).abs() < 1e-12 * ev[3] * e2,
                "{ev:?} {w:?}"
            );
        }
    }
}
