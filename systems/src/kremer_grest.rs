//! The Kremer–Grest bead-spring polymer melt of LAMMPS's FENE benchmark (`bench/in.chain`,
//! shipped as `examples/COUPLE/multiple/in.chain` with its `data.chain`): 32 000 beads in 320
//! chains of 100, LJ units (ε = σ = m = 1), a periodic cube of side 33.592 (density 0.85).
//!
//! - `bond_style fene`, `bond_coeff 1 30.0 1.5 1.0 1.0`: `E = −½ K R0² ln(1 − r²/R0²)
//!   + [4ε((σ/r)¹² − (σ/r)⁶) + ε]`, the bracket only for `r < 2^{1/6}σ` (LAMMPS's
//!   `bond_fene.cpp` compares `r² < 2^{1/3}σ²`);
//! - `pair_style lj/cut 1.12` with `pair_modify shift yes`: `4ε((σ/r)¹² − (σ/r)⁶) − E(rc)` below
//!   `rc = 1.12` (not 2^{1/6}), zero beyond;
//! - `special_bonds fene` (weights 0 1 1): bonded beads have no pair term, all others do;
//! - `neighbor 0.4 bin`: the skin of the neighbour list.
//!
//! Both terms are piecewise, written with `if` on `r²`: each piece is differentiated on its own.

use zs_runtime::assembly::{resort_period_from_env, Assembled, BodyOrder, Topology, TopologyError};
use zs_runtime::lammps::DataFile;
use zs_runtime::mechanical_system;

/// `(2^{1/6})² = 2^{1/3}`: where the FENE bond's repulsion ends, in units of σ².
pub const TWO_1_3: f64 = 1.259_921_049_894_873_2;
/// LAMMPS's `neighbor 0.4` skin.
pub const SKIN: f64 = 0.4;
/// LAMMPS's `timestep 0.012`.
pub const H: f64 = 0.012;

/// The FENE bead-spring model's parameters.
#[derive(Debug, Clone, Copy)]
pub struct KremerGrest {
    /// FENE spring constant K.
    pub k: f64,
    /// FENE maximum extension R0.
    pub r0: f64,
    /// LJ ε.
    pub epsilon: f64,
    /// LJ σ.
    pub sigma: f64,
    /// The pair cutoff.
    pub rc: f64,
    /// The pair shift `4ε((σ/rc)¹² − (σ/rc)⁶)` (`pair_modify shift yes`).
    pub shift: f64,
}

#[mechanical_system]
impl KremerGrest {
    fn body_masses(&self) -> [f64; 3] {
        [1.0, 1.0, 1.0]
    }
    fn stiff_bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        let r02 = self.r0 * self.r0;
        let mut e = -0.5 * self.k * r02 * (1.0 - r2 / r02).ln();
        let s2 = self.sigma * self.sigma;
        if r2 < TWO_1_3 * s2 {
            let sr6 = (s2 / r2).powi(3);
            e += 4.0 * self.epsilon * (sr6 * sr6 - sr6) + self.epsilon;
        }
        e
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < self.rc * self.rc {
            let sr6 = (self.sigma * self.sigma / r2).powi(3);
            4.0 * self.epsilon * (sr6 * sr6 - sr6) - self.shift
        } else {
            0.0
        }
    }
}

/// A melt read from a data file: the assembled system, its positions and velocities.
pub type Melt = (Assembled<KremerGrest, 3>, Vec<f64>, Vec<f64>);

/// Why a data file cannot be this melt.
#[derive(Debug, thiserror::Error)]
pub enum MeltError {
    /// The topology (box, cutoff) is invalid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// Masses other than the model's 1.
    #[error("atom type {kind} has mass {mass}: the Kremer–Grest beads have mass 1 (LJ units)")]
    Mass {
        /// The atom type.
        kind: usize,
        /// Its mass.
        mass: f64,
    },
    /// A bond at least as long as R0 (LAMMPS stops with "Bad FENE bond").
    #[error(
        "bond {bond} (atoms {i}–{j}) has length {r} ≥ R0 = {r0}: the FENE energy is infinite there"
    )]
    Stretched {
        /// The bond, from 1.
        bond: usize,
        /// Its atom IDs.
        i: u64,
        /// Its atom IDs.
        j: u64,
        /// Its length.
        r: f64,
        /// R0.
        r0: f64,
    },
}

impl KremerGrest {
    /// LAMMPS's `in.chain`: K = 30, R0 = 1.5, ε = σ = 1, rc = 1.12, shifted.
    pub fn lammps_chain() -> Self {
        let rc: f64 = 1.12;
        let c6 = (1.0 / rc).powi(6);
        Self {
            k: 30.0,
            r0: 1.5,
            epsilon: 1.0,
            sigma: 1.0,
            rc,
            shift: 4.0 * (c6 * c6 - c6),
        }
    }

    /// The melt of a LAMMPS data file: its beads (in atom-ID order), bonds, periodic box and
    /// this model's cutoff with LAMMPS's skin; `special_bonds fene` (bonded pairs excluded).
    /// Returns the assembled system and the file's unwrapped positions and velocities.
    ///
    /// # Errors
    /// A mass other than 1, a bond at least R0 long, a box shorter than twice `rc + skin`.
    pub fn from_data(self, data: &DataFile) -> Result<Melt, MeltError> {
        if let Some((t, &m)) = data.masses.iter().enumerate().find(|(_, &m)| m != 1.0) {
            return Err(MeltError::Mass {
                kind: t + 1,
                mass: m,
            });
        }
        let sides = data.box_lengths();
        for (k, b) in data.bonds.iter().enumerate() {
            let [i, j] = b.atoms;
            let d: [f64; 3] = core::array::from_fn(|a| {
                let d = data.positions[j][a] - data.positions[i][a];
                d - (d / sides[a]).round() * sides[a]
            });
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            if r >= self.r0 {
                return Err(MeltError::Stretched {
                    bond: k + 1,
                    i: data.ids[i],
                    j: data.ids[j],
                    r,
                    r0: self.r0,
                });
            }
        }
        let topology = Topology::new(data.len())
            .bonds_from(data.bonds.iter().map(|b| (b.atoms[0], b.atoms[1])))
            .exclude_bonded()
            .periodic(sides)
            .cutoff(self.rc, SKIN);
        let q: Vec<f64> = data.positions.iter().flatten().copied().collect();
        let v = data.velocities.iter().flatten().copied().collect();
        // Held in spatial order inside when the file's numbering is not local.
        let system = Assembled::ordered(self, topology, BodyOrder::from_env(), &q)?
            .with_resort_period(resort_period_from_env());
        Ok((system, q, v))
    }

    /// `x1, y1, z1, x2, …` (beads numbered from 1 in atom-ID order).
    pub fn coordinate_names(n: usize) -> Vec<String> {
        (0..3 * n).map(zs_runtime::output::xyz_name).collect()
    }
}
