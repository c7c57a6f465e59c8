//! A flexible triatomic molecule in 3D (9 DOF), water-like: a central atom A bonded to B and to
//! C by Morse potentials, with a harmonic bond angle.
//!
//! `q = (A_x, A_y, A_z, B_x, B_y, B_z, C_x, C_y, C_z)`; with `u = B - A`, `v = C - A`,
//!
//! ```text
//! V(q) = morse(|u|) + morse(|v|) + ½ k_θ (θ - θ0)²,   θ = acos(u·v / (|u| |v|)),
//! morse(r) = D (1 - exp(-α (r - r0)))².
//! ```
//!
//! No constraints (M = 0): `penalized_*` equal the unpenalized methods.
//!
//! The system is defined with `#[mechanical_system]` (the Morse term is a helper method called
//! twice and inlined by the macro; the xyz components are an unrolled loop);
//! [`reference`](mod@reference) holds hand-written derivatives built on the third-order jet of
//! [`jet`].
//!
//! # Units and parameters
//! Å, atomic mass units (g/mol) and kcal/mol, so the time unit is the AKMA unit
//! `√(amu·Å²/(kcal/mol)) ≈ 48.888 fs`. [`Triatomic::water`] takes the intramolecular parameters
//! of the flexible q-TIP4P/F water model (Habershon, Markland & Manolopoulos, J. Chem. Phys.
//! 131, 024501 (2009): `D = 116.09 kcal/mol`, `α = 2.287 Å⁻¹`, `r0 = 0.9419 Å`,
//! `k_θ = 87.85 kcal mol⁻¹ rad⁻²`, `θ0 = 107.4°`; that model uses a quartic expansion of this
//! Morse term, here it is kept exact) and the masses O 15.9994, H 1.008 of `docs/systems/water.md`.
//! The angle term is singular where `θ ∈ {0, π}` (acos); keep configurations away from those.

pub mod jet;
pub mod reference;

use zs_runtime::{mechanical_system, State};

/// Atomic mass of oxygen (amu), as in `docs/systems/water.md` (TIP3P).
pub const MASS_O: f64 = 15.9994;
/// Atomic mass of hydrogen (amu).
pub const MASS_H: f64 = 1.008;
/// The AKMA time unit of the (Å, amu, kcal/mol) system, in femtoseconds.
pub const AKMA_TIME_FS: f64 = 48.888_213;

/// A water-like triatomic molecule: Morse bonds A–B, A–C and a harmonic A-centred bond angle.
/// See the [module docs](self) for the potential and the units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Triatomic {
    /// Morse well depth `D` (kcal/mol).
    pub d_e: f64,
    /// Morse width parameter `α` (Å⁻¹).
    pub alpha: f64,
    /// Equilibrium bond length `r0` (Å).
    pub r0: f64,
    /// Bond-angle force constant `k_θ` (kcal mol⁻¹ rad⁻²).
    pub k_theta: f64,
    /// Equilibrium bond angle `θ0` (rad).
    pub theta0: f64,
    /// Mass of the central atom A (amu).
    pub m_a: f64,
    /// Mass of atom B (amu).
    pub m_b: f64,
    /// Mass of atom C (amu).
    pub m_c: f64,
}

#[mechanical_system]
impl Triatomic {
    fn masses(&self) -> [f64; 9] {
        [
            self.m_a, self.m_a, self.m_a, self.m_b, self.m_b, self.m_b, self.m_c, self.m_c,
            self.m_c,
        ]
    }

    /// Morse bond energy `D (1 - exp(-α (r - r0)))²`.
    fn morse(&self, r: f64) -> f64 {
        let e = 1.0 - (-self.alpha * (r - self.r0)).exp();
        self.d_e * e * e
    }

    fn potential(&self, q: &[f64; 9]) -> f64 {
        let mut uu = 0.0;
        let mut vv = 0.0;
        let mut uv = 0.0;
        for k in 0..3 {
            let u = q[3 + k] - q[k];
            let v = q[6 + k] - q[k];
            uu += u * u;
            vv += v * v;
            uv += u * v;
        }
        let ru = uu.sqrt();
        let rv = vv.sqrt();
        let theta = (uv / (ru * rv)).acos();
        self.morse(ru) + self.morse(rv) + 0.5 * self.k_theta * (theta - self.theta0).powi(2)
    }
}

impl Triatomic {
    /// Water-like parameters (q-TIP4P/F intramolecular terms, exact Morse; module docs):
    /// A = O, B = C = H.
    pub fn water() -> Self {
        Self {
            d_e: 116.09,
            alpha: 2.287,
            r0: 0.9419,
            k_theta: 87.85,
            theta0: 107.4_f64.to_radians(),
            m_a: MASS_O,
            m_b: MASS_H,
            m_c: MASS_H,
        }
    }

    /// The equilibrium configuration: A at the origin, B at `(r0, 0, 0)`, C at
    /// `(r0 cos θ0, r0 sin θ0, 0)` (V = 0 there).
    pub fn equilibrium(&self) -> [f64; 9] {
        let (s, c) = self.theta0.sin_cos();
        [
            0.0,
            0.0,
            0.0,
            self.r0,
            0.0,
            0.0,
            self.r0 * c,
            self.r0 * s,
            0.0,
        ]
    }

    /// A state at the equilibrium configuration, at rest.
    pub fn equilibrium_state(&self) -> State<9> {
        State::new(self.equilibrium(), [0.0; 9])
    }

    /// Bond lengths `|B - A|`, `|C - A|` and the bond angle θ (rad) of a configuration.
    pub fn internal_coordinates(q: &[f64; 9]) -> (f64, f64, f64) {
        let u: [f64; 3] = core::array::from_fn(|k| q[3 + k] - q[k]);
        let v: [f64; 3] = core::array::from_fn(|k| q[6 + k] - q[k]);
        let ru = u.iter().map(|x| x * x).sum::<f64>().sqrt();
        let rv = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let uv: f64 = u.iter().zip(&v).map(|(a, b)| a * b).sum();
        (ru, rv, (uv / (ru * rv)).acos())
    }
}
