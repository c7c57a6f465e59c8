//! Hand-written energies and gradients of the TraPPE bonded terms, independent of the macro
//! and of the assembly: the closed forms LAMMPS's `angle_harmonic.cpp` and
//! `dihedral_opls.cpp` implement (Blondel & Karplus, J. Comput. Chem. 17, 1132 (1996), for the
//! torsion's gradient).

use super::Alkane;

type V3 = [f64; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn scale(s: f64, a: V3) -> V3 {
    [s * a[0], s * a[1], s * a[2]]
}

impl Alkane {
    /// The angle term at bodies `a, b, c` (apex `b`): energy and gradient. With
    /// `u = a − b`, `v = c − b`, `cos θ = u·v/(|u||v|)`:
    /// `∂θ/∂a = −(v/(|u||v|) − cos θ u/|u|²) / sin θ`, likewise for `c`, and `∂θ/∂b` their
    /// negated sum.
    pub fn angle_reference(&self, a: V3, b: V3, c: V3) -> (f64, [V3; 3]) {
        let (u, v) = (sub(a, b), sub(c, b));
        let (nu, nv) = (dot(u, u).sqrt(), dot(v, v).sqrt());
        let cos = dot(u, v) / (nu * nv);
        let theta = cos.acos();
        let sin = (1.0 - cos * cos).sqrt();
        let de = self.k_theta * (theta - self.theta0);
        let ga: V3 =
            core::array::from_fn(|k| -de * (v[k] / (nu * nv) - cos * u[k] / (nu * nu)) / sin);
        let gc: V3 =
            core::array::from_fn(|k| -de * (u[k] / (nu * nv) - cos * v[k] / (nv * nv)) / sin);
        let gb: V3 = core::array::from_fn(|k| -ga[k] - gc[k]);
        (
            0.5 * self.k_theta * (theta - self.theta0).powi(2),
            [ga, gb, gc],
        )
    }

    /// The torsion term at bodies `a, b, c, d`: energy and gradient. With `b1 = b − a`,
    /// `b2 = c − b`, `b3 = d − c`, `m = b1 × b2`, `n = b2 × b3` and the signed angle φ
    /// (Blondel & Karplus eq. 27 in these vectors): `∂φ/∂a = −|b2|/|m|² m`,
    /// `∂φ/∂d = |b2|/|n|² n`, `∂φ/∂b = −(1 + s1) ∂φ/∂a + s3 ∂φ/∂d`,
    /// `∂φ/∂c = s1 ∂φ/∂a − (1 + s3) ∂φ/∂d` with `s1 = b1·b2/|b2|²`, `s3 = b3·b2/|b2|²` (the
    /// four sum to zero: φ does not change under a translation), and
    /// `dE/dφ = −c1 sin φ + 2c2 sin 2φ − 3c3 sin 3φ`.
    pub fn dihedral_reference(&self, a: V3, b: V3, c: V3, d: V3) -> (f64, [V3; 4]) {
        let (b1, b2, b3) = (sub(b, a), sub(c, b), sub(d, c));
        let (m, n) = (cross(b1, b2), cross(b2, b3));
        let nb2 = dot(b2, b2).sqrt();
        // φ in (−π, π]: atan2(|b2| b1·n, m·n).
        let phi = (nb2 * dot(b1, n)).atan2(dot(m, n));
        let [c1, c2, c3] = self.c;
        let e = c1 * (1.0 + phi.cos())
            + c2 * (1.0 - (2.0 * phi).cos())
            + c3 * (1.0 + (3.0 * phi).cos());
        let de = -c1 * phi.sin() + 2.0 * c2 * (2.0 * phi).sin() - 3.0 * c3 * (3.0 * phi).sin();
        let pa = scale(-nb2 / dot(m, m), m);
        let pd = scale(nb2 / dot(n, n), n);
        let (s1, s3) = (dot(b1, b2) / (nb2 * nb2), dot(b3, b2) / (nb2 * nb2));
        let pb: V3 = core::array::from_fn(|k| -(1.0 + s1) * pa[k] + s3 * pd[k]);
        let pc: V3 = core::array::from_fn(|k| s1 * pa[k] - (1.0 + s3) * pd[k]);
        (e, [pa, pb, pc, pd].map(|p| scale(de, p)))
    }
}
