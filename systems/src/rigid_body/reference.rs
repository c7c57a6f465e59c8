//! Hand-written closed-form derivatives of the [`MagnetizedRigidBody`] potential, in matrix
//! form, independent of the macro.
//!
//! With `S = RᵀR - I` (symmetric), `P(R) = ½‖S‖²_F`, and `⟨X, Y⟩ = tr(XᵀY)`:
//! - `dP[E] = ⟨S, EᵀR + RᵀE⟩ = 2⟨RS, E⟩`, so `∇P = 2RS`;
//! - `d(∇P)[E] = 2(ES + R dS[E])`, `dS[E] = EᵀR + RᵀE`; with `E = e_k e_lᵀ`:
//!   `Hess P_{(ij),(kl)} = 2(δ_ik S_lj + R_il R_kj + (RRᵀ)_ik δ_jl)`;
//! - `d²(∇P)[A, A] = 2(2A dS[A] + R d²S[A, A])`, `d²S[A, A] = 2AᵀA`:
//!   `T_P(A) = 4(AAᵀR + ARᵀA + RAᵀA)` (`P` is quartic, so this is exact for every `A`).
//!
//! `V = Bμ R33 + ω² P`: the linear term only adds `Bμ` to the `R33` component of the gradient.

use super::{from_q, mat_mul, rtr_minus_identity, to_q, transpose, MagnetizedRigidBody};
use zs_runtime::{MechanicalSystem, Potential};

/// The magnetized rigid body with hand-written derivatives (same parameters as
/// [`MagnetizedRigidBody`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MagnetizedRigidBodyReference(pub MagnetizedRigidBody);

impl MagnetizedRigidBodyReference {
    /// Same as [`MagnetizedRigidBody::paper`].
    pub fn paper() -> Self {
        Self(MagnetizedRigidBody::paper())
    }

    fn gradient_from(&self, r: &[[f64; 3]; 3], s: &[[f64; 3]; 3]) -> [f64; 9] {
        let w2 = self.0.omega * self.0.omega;
        let rs = mat_mul(r, s);
        let mut g: [f64; 9] = core::array::from_fn(|k| 2.0 * w2 * rs[k / 3][k % 3]);
        g[8] += self.0.b_mu;
        g
    }

    fn hessian_from(&self, r: &[[f64; 3]; 3], s: &[[f64; 3]; 3]) -> [[f64; 9]; 9] {
        let w2 = self.0.omega * self.0.omega;
        let rrt = mat_mul(r, &transpose(r));
        let delta = |a: usize, b: usize| if a == b { 1.0 } else { 0.0 };
        core::array::from_fn(|row| {
            let (i, j) = (row / 3, row % 3);
            core::array::from_fn(|col| {
                let (k, l) = (col / 3, col % 3);
                2.0 * w2 * (delta(i, k) * s[l][j] + r[i][l] * r[k][j] + rrt[i][k] * delta(j, l))
            })
        })
    }
}

impl Potential<9> for MagnetizedRigidBodyReference {
    fn masses(&self) -> [f64; 9] {
        [0.5; 9]
    }

    fn potential(&self, q: &[f64; 9]) -> f64 {
        let s = rtr_minus_identity(&from_q(q));
        let p: f64 = s.iter().flatten().map(|x| x * x).sum();
        self.0.b_mu * q[8] + 0.5 * self.0.omega * self.0.omega * p
    }

    fn gradient(&self, q: &[f64; 9]) -> [f64; 9] {
        let r = from_q(q);
        self.gradient_from(&r, &rtr_minus_identity(&r))
    }

    fn hessian(&self, q: &[f64; 9]) -> [[f64; 9]; 9] {
        let r = from_q(q);
        self.hessian_from(&r, &rtr_minus_identity(&r))
    }

    fn third_contraction(&self, q: &[f64; 9], a: &[f64; 9]) -> [f64; 9] {
        let r = from_q(q);
        let a = from_q(a);
        let at = transpose(&a);
        let t1 = mat_mul(&mat_mul(&a, &at), &r);
        let t2 = mat_mul(&mat_mul(&a, &transpose(&r)), &a);
        let t3 = mat_mul(&r, &mat_mul(&at, &a));
        let w2 = self.0.omega * self.0.omega;
        let sum: [[f64; 3]; 3] =
            core::array::from_fn(|i| core::array::from_fn(|j| t1[i][j] + t2[i][j] + t3[i][j]));
        to_q(&sum).map(|x| 4.0 * w2 * x)
    }

    fn gradient_hessian(&self, q: &[f64; 9]) -> ([f64; 9], [[f64; 9]; 9]) {
        let r = from_q(q);
        let s = rtr_minus_identity(&r);
        (self.gradient_from(&r, &s), self.hessian_from(&r, &s))
    }
}

/// No constraints (the penalty is in the potential): the penalized methods are the
/// unpenalized ones and ignore their ω.
impl MechanicalSystem<9, 0> for MagnetizedRigidBodyReference {
    fn constraints(&self, _q: &[f64; 9]) -> [f64; 0] {
        []
    }

    fn constraint_jacobian(&self, _q: &[f64; 9]) -> [[f64; 9]; 0] {
        []
    }

    fn penalized_potential(&self, _omega: f64, q: &[f64; 9]) -> f64 {
        self.potential(q)
    }

    fn penalized_gradient(&self, _omega: f64, q: &[f64; 9]) -> [f64; 9] {
        self.gradient(q)
    }

    fn penalized_hessian(&self, _omega: f64, q: &[f64; 9]) -> [[f64; 9]; 9] {
        self.hessian(q)
    }

    fn penalized_third_contraction(&self, _omega: f64, q: &[f64; 9], a: &[f64; 9]) -> [f64; 9] {
        self.third_contraction(q, a)
    }
}
