//! Hand-written derivatives of the [`Triatomic`] potential, by the chain rule on the
//! third-order directional [`Jet`], independent of the macro.
//!
//! Building blocks (closed forms):
//! - `r = √(u·u)` through `√s` (`½s^{-1/2}`, `-¼s^{-3/2}`, `⅜s^{-5/2}`), which reproduces
//!   `∇r = u/r`, `H_r = (I - uuᵀ/r²)/r` for the bond vector `u`;
//! - Morse `m(r) = D(1 - e)²`, `e = exp(-α(r - r0))`: `m' = 2Dα(e - e²)`,
//!   `m'' = 2Dα²(2e² - e)`, `m''' = 2Dα³(e - 4e²)`;
//! - `c = (u·v)·(|u||v|)⁻¹` by the product rule and `1/s`;
//! - `θ = acos c`: `-(1-c²)^{-1/2}`, `-c(1-c²)^{-3/2}`, `-(1+2c²)(1-c²)^{-5/2}`;
//! - bend `½k(θ - θ0)²`: `k(θ - θ0)`, `k`, `0`.

use super::jet::Jet;
use super::Triatomic;
use zs_runtime::{MechanicalSystem, Potential};

/// The triatomic molecule with hand-written derivatives (same parameters as [`Triatomic`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriatomicReference(pub Triatomic);

impl TriatomicReference {
    /// Same as [`Triatomic::water`].
    pub fn water() -> Self {
        Self(Triatomic::water())
    }

    /// Morse jet `m(r)` from the jet of `r`.
    fn morse(&self, r: &Jet<9>, a: &[f64; 9]) -> Jet<9> {
        let p = &self.0;
        let e = (-p.alpha * (r.v - p.r0)).exp();
        let one_minus = 1.0 - e;
        let two_d = 2.0 * p.d_e;
        r.compose(
            [
                p.d_e * one_minus * one_minus,
                two_d * p.alpha * (e - e * e),
                two_d * p.alpha * p.alpha * (2.0 * e * e - e),
                two_d * p.alpha * p.alpha * p.alpha * (e - 4.0 * e * e),
            ],
            a,
        )
    }

    /// The full jet of `V` at `q` for the direction `a`.
    pub fn jet(&self, q: &[f64; 9], a: &[f64; 9]) -> Jet<9> {
        let p = &self.0;
        let x = |i: usize| Jet::coordinate(q, i);
        let mut uu = Jet::constant(0.0);
        let mut vv = Jet::constant(0.0);
        let mut uv = Jet::constant(0.0);
        for k in 0..3 {
            let u = x(3 + k).sub(&x(k));
            let v = x(6 + k).sub(&x(k));
            uu = uu.add(&u.mul(&u, a));
            vv = vv.add(&v.mul(&v, a));
            uv = uv.add(&u.mul(&v, a));
        }
        let ru = uu.sqrt(a);
        let rv = vv.sqrt(a);
        let c = uv.mul(&ru.mul(&rv, a).recip(a), a);
        let theta = c.acos(a);
        let d = theta.v - p.theta0;
        let bend = theta.compose([0.5 * p.k_theta * d * d, p.k_theta * d, p.k_theta, 0.0], a);
        self.morse(&ru, a).add(&self.morse(&rv, a)).add(&bend)
    }
}

impl Potential<9> for TriatomicReference {
    fn masses(&self) -> [f64; 9] {
        let p = &self.0;
        core::array::from_fn(|i| [p.m_a, p.m_b, p.m_c][i / 3])
    }

    fn potential(&self, q: &[f64; 9]) -> f64 {
        let p = &self.0;
        let (ru, rv, theta) = Triatomic::internal_coordinates(q);
        let morse = |r: f64| {
            let e = 1.0 - (-p.alpha * (r - p.r0)).exp();
            p.d_e * e * e
        };
        morse(ru) + morse(rv) + 0.5 * p.k_theta * (theta - p.theta0).powi(2)
    }

    fn gradient(&self, q: &[f64; 9]) -> [f64; 9] {
        self.jet(q, &[0.0; 9]).g
    }

    fn hessian(&self, q: &[f64; 9]) -> [[f64; 9]; 9] {
        self.jet(q, &[0.0; 9]).h
    }

    fn third_contraction(&self, q: &[f64; 9], a: &[f64; 9]) -> [f64; 9] {
        self.jet(q, a).t
    }

    fn gradient_hessian(&self, q: &[f64; 9]) -> ([f64; 9], [[f64; 9]; 9]) {
        let j = self.jet(q, &[0.0; 9]);
        (j.g, j.h)
    }
}

/// No constraints: the penalized methods are the unpenalized ones (ω is ignored).
impl MechanicalSystem<9, 0> for TriatomicReference {
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
