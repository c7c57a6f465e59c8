//! The TraPPE united-atom n-alkane (Martin & Siepmann, J. Phys. Chem. B 102, 2569 (1998)) in
//! LAMMPS `real` units (Å, kcal/mol, g/mol, fs): CH3 and CH2 sites joined by bonds, with
//! bond-angle and torsion terms — terms of two, three and four bodies — and Lennard-Jones
//! pairs whose parameters depend on the two sites' types.
//!
//! - sites: type 0 is CH3 (15.035 g/mol, ε/k_B = 98 K, σ = 3.75 Å), type 1 is CH2 (14.027,
//!   46 K, 3.95 Å) — LAMMPS data files number them 1 and 2;
//! - pairs: `4ε_ij((σ_ij/r)¹² − (σ_ij/r)⁶)` shifted to zero at 14 Å (`pair_modify shift yes`),
//!   Lorentz–Berthelot mixing (`ε_ij = √(ε_i ε_j)`, `σ_ij = (σ_i + σ_j)/2`, LAMMPS `pair_modify
//!   mix arithmetic`), between molecules and between sites of a molecule more than three bonds
//!   apart (`special_bonds lj 0 0 0`: [`zs_runtime::assembly::Topology::exclude_within`]`(3)`);
//! - bonds: TraPPE fixes them at 1.54 Å; the flexible variant used to compare with LAMMPS is
//!   `bond_style harmonic`, `E = K(r − r0)²` with K = 452.9 kcal/mol/Å² (our choice);
//! - angles: `E = (k_θ/2)(θ − θ0)²`, θ0 = 114°, k_θ/k_B = 62 500 K/rad² (LAMMPS
//!   `angle_style harmonic` with K = k_θ/2);
//! - torsions (OPLS form, trans at φ = 180°): `E = c1(1 + cos φ) + c2(1 − cos 2φ)
//!   + c3(1 + cos 3φ)`, c1/k_B = 355.03 K, c2/k_B = −68.19 K, c3/k_B = 791.32 K (LAMMPS
//!   `dihedral_style opls` with K1 = 2c1, K2 = 2c2, K3 = 2c3, K4 = 0).
//!
//! The torsion is written as a user would, through `φ = acos(cos φ)`; the macro rewrites
//! `cos(n·φ)` as the Chebyshev polynomial `T_n(cos φ)`, so its derivatives are those of a
//! polynomial in `cos φ`: finite at planar torsions (an all-trans chain), where those of `acos`
//! are infinite. Three collinear sites leave the torsion undefined (`cos φ = 0/0`): the
//! energy is NaN there and a step reports it ([`zs_runtime::StepErrorKind::NonFinite`]).

pub mod reference;

use zs_runtime::mechanical_system;

/// `k_B` in kcal/mol/K, LAMMPS's `real` value (`force->boltz`).
pub const KB: f64 = 0.001_987_206_7;

/// The TraPPE-UA force field, in kcal/mol, Å, radians, g/mol; per-type tables indexed by the
/// site type (0 = CH3, 1 = CH2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alkane {
    /// Bond constant `K` of `K(r − r0)²` (kcal/mol/Å²).
    pub k_bond: f64,
    /// Bond length `r0` (Å).
    pub r0: f64,
    /// Angle constant `k_θ` of `(k_θ/2)(θ − θ0)²` (kcal/mol/rad²).
    pub k_theta: f64,
    /// Equilibrium angle `θ0` (rad).
    pub theta0: f64,
    /// Torsion coefficients `c1, c2, c3` (kcal/mol).
    pub c: [f64; 3],
    /// LJ ε per site type (kcal/mol).
    pub epsilon: [f64; 2],
    /// LJ σ per site type (Å).
    pub sigma: [f64; 2],
    /// Mass per site type (g/mol).
    pub mass: [f64; 2],
    /// The pair cutoff (Å); the pair energy is shifted to zero there.
    pub rc: f64,
}

/// CH3, the chain ends.
pub const CH3: u32 = 0;
/// CH2, the chain's inner sites.
pub const CH2: u32 = 1;

impl Alkane {
    /// TraPPE-UA's values (flexible bonds at K = 452.9 kcal/mol/Å², cutoff 14 Å).
    pub fn trappe() -> Self {
        Self {
            k_bond: 452.9,
            r0: 1.54,
            k_theta: 62_500.0 * KB,
            theta0: 114f64.to_radians(),
            c: [355.03 * KB, -68.19 * KB, 791.32 * KB],
            epsilon: [98.0 * KB, 46.0 * KB],
            sigma: [3.75, 3.95],
            mass: [15.035, 14.027],
            rc: 14.0,
        }
    }
}

#[mechanical_system]
impl Alkane {
    fn body_masses(&self, kind: usize) -> [f64; 3] {
        [self.mass[kind]; 3]
    }
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2)).sqrt();
        self.k_bond * (r - self.r0).powi(2)
    }
    /// Lorentz–Berthelot mixing of the two sites' types, cut and shifted at `rc`.
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < self.rc * self.rc {
            let eps = (self.epsilon[ka] * self.epsilon[kb]).sqrt();
            let s2 = (0.5 * (self.sigma[ka] + self.sigma[kb])).powi(2);
            let sr6 = (s2 / r2).powi(3);
            let sc6 = (s2 / (self.rc * self.rc)).powi(3);
            4.0 * eps * ((sr6 * sr6 - sr6) - (sc6 * sc6 - sc6))
        } else {
            0.0
        }
    }
    /// `θ` at the apex `b`, from `cos θ = u·v / (|u||v|)`.
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        let u = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        let v = [c[0] - b[0], c[1] - b[1], c[2] - b[2]];
        let uv = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
        let uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        let vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        let theta = (uv / (uu * vv).sqrt()).acos();
        0.5 * self.k_theta * (theta - self.theta0).powi(2)
    }
    /// `φ` between the planes `(a, b, c)` and `(b, c, d)`: `cos φ = n1·n2 / (|n1||n2|)` with
    /// `n1 = b1 × b2`, `n2 = b2 × b3`; trans (φ = 180°) has `cos φ = −1`.
    fn dihedral_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3], d: &[f64; 3]) -> f64 {
        let b1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let b2 = [c[0] - b[0], c[1] - b[1], c[2] - b[2]];
        let b3 = [d[0] - c[0], d[1] - c[1], d[2] - c[2]];
        let n1 = [
            b1[1] * b2[2] - b1[2] * b2[1],
            b1[2] * b2[0] - b1[0] * b2[2],
            b1[0] * b2[1] - b1[1] * b2[0],
        ];
        let n2 = [
            b2[1] * b3[2] - b2[2] * b3[1],
            b2[2] * b3[0] - b2[0] * b3[2],
            b2[0] * b3[1] - b2[1] * b3[0],
        ];
        let n12 = n1[0] * n2[0] + n1[1] * n2[1] + n1[2] * n2[2];
        let n11 = n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2];
        let n22 = n2[0] * n2[0] + n2[1] * n2[1] + n2[2] * n2[2];
        let phi = (n12 / (n11 * n22).sqrt()).acos();
        self.c[0] * (1.0 + phi.cos())
            + self.c[1] * (1.0 - (2.0 * phi).cos())
            + self.c[2] * (1.0 + (3.0 * phi).cos())
    }
}
