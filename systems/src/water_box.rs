//! SPC/E water in a periodic box (Berendsen, Grigera & Straatsma 1987) as LAMMPS's
//! `examples/rdf-adf/in.spce` defines it, with its long-range electrostatics by the Ewald sum
//! (Essmann et al. 1995, eqs. 2.1–2.4): `real` units (Å, kcal/mol, g/mol, fs, e).
//!
//! - Coulomb `C q_i q_j / r`, `C = 332.06371` (LAMMPS's `qqr2e`), between every pair of
//!   different molecules: the real-space part `C q_i q_j erfc(αr)/r` within the cutoff is the
//!   pair term written here; the reciprocal, self and background terms are
//!   [`zs_runtime::ewald::Ewald`]'s. Pairs inside a molecule are excluded (`special_bonds
//!   lj/coul 0 0 0`: water has 1-2 and 1-3 pairs only), so the reciprocal sum's share of them is
//!   taken back, `−C q_i q_j erf(αr)/r`, in the bond term (O–H) and the angle term (H–H).
//! - Lennard-Jones on O–O only, `4ε((σ/r)¹² − (σ/r)⁶)` with ε = 0.15535 kcal/mol, σ = 3.166 Å,
//!   cut at the real-space cutoff, not shifted (`lj/cut/coul/long RC RC`).
//! - The data file's flexible terms: `bond_style harmonic` `K (r − r0)²` (K = 1000, r0 = 1 Å,
//!   no ½), `angle_style harmonic` `K (θ − θ0)²` (K = 100 kcal/mol/rad², θ0 = 109.47°).

use zs_runtime::assembly::{resort_period_from_env, Assembled, BodyOrder, Topology, TopologyError};
use zs_runtime::ewald::{Ewald, EwaldError, EwaldParameters};
use zs_runtime::lammps::DataFile;
use zs_runtime::long_range::{LongRange, WithLongRange};
use zs_runtime::mechanical_system;
use zs_runtime::pme::{Pme, PmeParameters};
use zs_runtime::special::{erf, erfc};

/// LAMMPS's `qqr2e` in `real` units: the Coulomb constant in kcal·Å/(mol·e²).
pub const COULOMB: f64 = 332.063_71;

/// LAMMPS's `mvv2e` in `real` units: one g/mol·(Å/fs)² in kcal/mol. Masses are held times it,
/// so that a step in fs moves positions in Å under energies in kcal/mol (kinetic energy
/// `½ m v²` in kcal/mol with `v` in Å/fs).
pub const MVV2E: f64 = 48.888_212_91 * 48.888_212_91;

/// The neighbour-list skin (Å), LAMMPS's default in `real` units (`neighbor 2.0 bin`).
pub const SKIN: f64 = 2.0;

/// The real-space and Lennard-Jones cutoff of LAMMPS's SPC/E benchmark
/// (`bench/POTENTIALS/in.spce`), Å.
pub const RC: f64 = 9.8;

/// SPC/E's O–H distance (Å).
pub const R_OH: f64 = 1.0;

/// SPC/E's H–O–H angle (degrees).
pub const THETA_HOH: f64 = 109.47;

/// The H–H distance of a rigid SPC/E molecule (Å).
pub fn r_hh() -> f64 {
    2.0 * R_OH * (0.5 * THETA_HOH.to_radians()).sin()
}

/// The default relative accuracy of the Ewald sum: OpenMM's `ewaldErrorTolerance`.
pub const TOLERANCE: f64 = 5e-4;

/// The SPC/E force field with the real-space part of an Ewald sum of splitting `alpha`.
#[derive(Debug, Clone)]
pub struct SpcE {
    /// The Ewald splitting parameter α (1/Å).
    pub alpha: f64,
    /// The real-space and LJ cutoff (Å).
    pub rc: f64,
    /// Charge per type (e): O, H.
    pub charge: Vec<f64>,
    /// Mass per type (g/mol): O, H (held times [`MVV2E`]).
    pub mass: Vec<f64>,
    /// `4ε` per pair of types (kcal/mol): O–O only.
    pub eps4: Vec<Vec<f64>>,
    /// `σ²` per pair of types (Å²).
    pub sigma2: Vec<Vec<f64>>,
    /// Bond `K` (kcal/mol/Å², no ½) per pair of types: O–H's; zero for the H–H distance a
    /// rigid molecule holds.
    pub bond_k: Vec<Vec<f64>>,
    /// Bond length per pair of types (Å): O–H's `r0`, and for H–H the distance of the rigid
    /// molecule, `2 r0 sin(θ0/2)`.
    pub bond_r0: Vec<Vec<f64>>,
    /// Angle `K` (kcal/mol/rad², no ½) and `θ0` (rad).
    pub angle: (f64, f64),
}

impl SpcE {
    /// SPC/E as `in.spce` (and SYSTEMS.md) defines it, cut at `rc`, split at `alpha`.
    pub fn new(rc: f64, alpha: f64) -> Self {
        let (eps, sigma) = (0.15535, 3.166);
        Self {
            alpha,
            rc,
            charge: vec![-0.8472, 0.4236],
            mass: vec![15.9994, 1.00794],
            eps4: vec![vec![4.0 * eps, 0.0], vec![0.0, 0.0]],
            sigma2: vec![vec![sigma * sigma, 1.0], vec![1.0, 1.0]],
            bond_k: vec![vec![0.0, 1000.0], vec![1000.0, 0.0]],
            bond_r0: vec![vec![0.0, R_OH], vec![R_OH, r_hh()]],
            angle: (100.0, THETA_HOH.to_radians()),
        }
    }
}

#[mechanical_system]
impl SpcE {
    /// In kcal·fs²/(mol·Å²), so that time is in fs with energies in kcal/mol.
    fn body_masses(&self, kind: usize) -> [f64; 3] {
        [self.mass[kind] * MVV2E; 3]
    }
    /// Real-space Coulomb and O–O Lennard-Jones within the cutoff.
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < self.rc * self.rc {
            let r = r2.sqrt();
            let s6 = (self.sigma2[ka][kb] / r2).powi(3);
            COULOMB * self.charge[ka] * self.charge[kb] * erfc(self.alpha * r) / r
                + self.eps4[ka][kb] * (s6 * s6 - s6)
        } else {
            0.0
        }
    }
    /// The O–H bond (or a rigid molecule's H–H distance, without energy), and the reciprocal
    /// sum's share of the excluded pair taken back.
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2)).sqrt();
        self.bond_k[ka][kb] * (r - self.bond_r0[ka][kb]).powi(2)
            - COULOMB * self.charge[ka] * self.charge[kb] * erf(self.alpha * r) / r
    }
    /// A rigid molecule's distances (SHAKE, RATTLE, or the penalty `½ω²|g|²`):
    /// `|b − a|² − d²`.
    fn bond_constraints(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> [f64; 1] {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        [r2 - self.bond_r0[ka][kb] * self.bond_r0[ka][kb]]
    }
    /// The H–O–H angle (apex `b`), and the excluded H–H pair's share taken back.
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        let u = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        let v = [c[0] - b[0], c[1] - b[1], c[2] - b[2]];
        let uv = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
        let uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        let vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        let theta = (uv / (uu * vv).sqrt()).acos();
        let r = ((c[0] - a[0]).powi(2) + (c[1] - a[1]).powi(2) + (c[2] - a[2]).powi(2)).sqrt();
        self.angle.0 * (theta - self.angle.1).powi(2)
            - COULOMB * self.charge[1] * self.charge[1] * erf(self.alpha * r) / r
    }
}

/// Why a water box cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WaterBoxError {
    /// The file is not SPC/E water as `data.spce` writes it.
    #[error("not SPC/E water as LAMMPS's data.spce: {0}")]
    NotWater(String),
    /// The topology the file describes.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The Ewald sum's parameters.
    #[error(transparent)]
    Ewald(#[from] EwaldError),
}

/// How the molecules are held together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Water {
    /// The data file's harmonic O–H bonds and H–O–H angles.
    Flexible,
    /// Three distance constraints per molecule (O–H, O–H, H–H) at SPC/E's geometry: SHAKE,
    /// RATTLE, or their penalty `½ω²|g|²` (Z&Ss-stiff). The O–H bonds keep their harmonic
    /// term, zero on the constraint; the H–H pair is a bond without energy; no angle term.
    Rigid,
}

/// The reciprocal-space method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kspace {
    /// The plain Ewald sum ([`Ewald`]): the accurate reference, `O(N^{3/2})` at best.
    Ewald,
    /// Smooth particle-mesh Ewald ([`Pme`]).
    Pme,
}

/// A reciprocal-space term: the method [`Kspace`] names.
#[derive(Debug, Clone)]
pub enum Reciprocal {
    /// The plain sum.
    Ewald(Ewald),
    /// Smooth PME (boxed: its plans and meshes' handles are large beside the plain sum's).
    Pme(Box<Pme>),
}

impl LongRange for Reciprocal {
    fn dimension(&self) -> usize {
        match self {
            Reciprocal::Ewald(e) => e.dimension(),
            Reciprocal::Pme(p) => p.dimension(),
        }
    }
    fn energy(&mut self, q: &[f64]) -> f64 {
        match self {
            Reciprocal::Ewald(e) => e.energy(q),
            Reciprocal::Pme(p) => p.energy(q),
        }
    }
    fn energy_gradient(&mut self, q: &[f64], g: &mut [f64]) -> f64 {
        match self {
            Reciprocal::Ewald(e) => e.energy_gradient(q, g),
            Reciprocal::Pme(p) => p.energy_gradient(q, g),
        }
    }
    fn hessian_times(&mut self, q: &[f64], v: &[f64], out: &mut [f64]) {
        match self {
            Reciprocal::Ewald(e) => e.hessian_times(q, v, out),
            Reciprocal::Pme(p) => p.hessian_times(q, v, out),
        }
    }
}

impl Reciprocal {
    /// The splitting parameter α (1/Å).
    pub fn alpha(&self) -> f64 {
        match self {
            Reciprocal::Ewald(e) => e.parameters().alpha,
            Reciprocal::Pme(p) => p.parameters().alpha,
        }
    }

    /// What the set-up line says of it: α, and the vectors or the mesh.
    pub fn describe(&self) -> String {
        match self {
            Reciprocal::Ewald(e) => {
                let p = e.parameters();
                format!(
                    "Ewald sum, α = {:.6} 1/Å, |n| ≤ {:?} ({} vectors)",
                    p.alpha,
                    p.kmax,
                    e.vectors()
                )
            }
            Reciprocal::Pme(m) => {
                let p = m.parameters();
                format!(
                    "smooth PME, α = {:.6} 1/Å, mesh {} × {} × {}, B-splines of order {}",
                    p.alpha, p.grid[0], p.grid[1], p.grid[2], p.order
                )
            }
        }
    }
}

/// What a water box is built with.
#[derive(Debug, Clone, Copy)]
pub struct WaterBoxOptions {
    /// The real-space and Lennard-Jones cutoff (Å).
    pub rc: f64,
    /// The relative accuracy of the reciprocal sum.
    pub tolerance: f64,
    /// The reciprocal-space method.
    pub kspace: Kspace,
    /// Rigid or flexible molecules.
    pub water: Water,
}

impl Default for WaterBoxOptions {
    /// LAMMPS's SPC/E benchmark's cutoff, OpenMM's tolerance, PME, rigid water.
    fn default() -> Self {
        Self {
            rc: RC,
            tolerance: TOLERANCE,
            kspace: Kspace::Pme,
            water: Water::Rigid,
        }
    }
}

/// A water box: the short-range part (assembled: real-space Coulomb, LJ, bonds and angles or
/// constraints, with the exclusions' corrections) and the long-range part, both in the file's
/// atom order; with the file's unwrapped positions and velocities (Å, Å/fs).
pub struct WaterBox {
    /// Pair, bond and angle terms (and constraints, for rigid water).
    pub short: Assembled<SpcE, 3>,
    /// Reciprocal, self and background terms (in units of `C = 1`: times [`COULOMB`]).
    pub long: Reciprocal,
    /// Positions, 3 per atom.
    pub q: Vec<f64>,
    /// Velocities, 3 per atom.
    pub v: Vec<f64>,
    /// The positions and the short-range gradient of the last evaluation (kept: no allocation
    /// per evaluation).
    scratch: (Vec<f64>, Vec<f64>),
}

impl WaterBox {
    /// Flexible water with the plain Ewald sum: [`WaterBox::from_data_with`].
    ///
    /// # Errors
    /// As [`WaterBox::from_data_with`].
    pub fn from_data(data: &DataFile, rc: f64, tolerance: f64) -> Result<Self, WaterBoxError> {
        let options = WaterBoxOptions {
            rc,
            tolerance,
            kspace: Kspace::Ewald,
            water: Water::Flexible,
        };
        Self::from_data_with(data, &options)
    }

    /// The box of a LAMMPS data file (`atom_style full`: type 1 = O, 2 = H, their charges and
    /// masses as SPC/E's; one bond type, one angle type), cut at `options.rc`, the
    /// reciprocal sum at relative accuracy `options.tolerance` (α and the vectors or the mesh
    /// from it: [`EwaldParameters::from_tolerance`], [`PmeParameters::from_tolerance`]).
    ///
    /// # Errors
    /// Another model's charges or masses, a molecule that is not one O bonded to two H, a
    /// cutoff beyond half the box, a tolerance outside (0, 1), a mesh too large.
    pub fn from_data_with(
        data: &DataFile,
        options: &WaterBoxOptions,
    ) -> Result<Self, WaterBoxError> {
        let &WaterBoxOptions {
            rc,
            tolerance,
            kspace,
            water,
        } = options;
        let sides = data.box_lengths();
        let (alpha, long) = match kspace {
            Kspace::Ewald => {
                let params = EwaldParameters::from_tolerance(rc, sides, tolerance)?;
                let sum = Ewald::new(data.charges.clone(), sides, params)?;
                (params.alpha, Reciprocal::Ewald(sum))
            }
            Kspace::Pme => {
                let params = PmeParameters::from_tolerance(rc, sides, tolerance)?;
                let mesh = Pme::new(data.charges.clone(), sides, params)?;
                (params.alpha, Reciprocal::Pme(Box::new(mesh)))
            }
        };
        let field = SpcE::new(rc, alpha);
        check_water(data, &field)?;
        let topology = match water {
            Water::Flexible => Topology::new(data.len())
                .bonds_from(data.bonds.iter().map(|b| (b.atoms[0], b.atoms[1])))
                .angles_from(data.angles.iter().map(|a| a.atoms)),
            Water::Rigid => Topology::new(data.len()).bonds_from(
                data.bonds
                    .iter()
                    .map(|b| (b.atoms[0], b.atoms[1]))
                    .chain(data.angles.iter().map(|a| (a.atoms[0], a.atoms[2]))),
            ),
        }
        .exclude_within(2)
        .types(data.types.iter().map(|&t| t.saturating_sub(1) as u32))
        .periodic(sides)
        .cutoff(rc, SKIN);
        let q: Vec<f64> = data.positions.iter().flatten().copied().collect();
        let v = data.velocities.iter().flatten().copied().collect();
        // Spatial order by default: a water file lists its molecules in no spatial order (as
        // LAMMPS's `data.spce`), but each molecule's three atoms are consecutive, which
        // `BodyOrder::Auto`'s test of consecutive bodies would take for a local order.
        let short = Assembled::ordered(
            field,
            topology,
            BodyOrder::from_env_or(BodyOrder::Cells),
            &q,
        )?
        .with_resort_period(resort_period_from_env());
        Ok(Self {
            short,
            long,
            q,
            v,
            scratch: (Vec::new(), Vec::new()),
        })
    }

    /// The whole model, `short + C · long`, for the steppers.
    pub fn model(&self) -> WithLongRange<'_, Assembled<SpcE, 3>, Reciprocal> {
        WithLongRange::new(&self.short, self.long.clone(), COULOMB)
    }

    /// `V(q)` (kcal/mol) and its gradient into `g`: the assembled terms and `C` times the
    /// reciprocal sum's, added.
    pub fn value_gradient(&mut self, q: &[f64], g: &mut [f64]) -> f64 {
        use zs_runtime::Model;
        let (at, short) = &mut self.scratch;
        at.clear();
        at.extend_from_slice(q);
        short.resize(q.len(), 0.0);
        let v = self.short.value_gradient_into(at, short);
        let e = self.long.energy_gradient(q, g);
        for (g, s) in g.iter_mut().zip(short.iter()) {
            *g = s + COULOMB * *g;
        }
        v + COULOMB * e
    }
}

/// The file is SPC/E water as `data.spce` writes it: charges, types, masses, bonds and angles.
fn check_water(data: &DataFile, field: &SpcE) -> Result<(), WaterBoxError> {
    if data.style != zs_runtime::lammps::AtomStyle::Full {
        return Err(WaterBoxError::NotWater(
            "the file has no charges (atom_style full: id mol type q x y z)".to_string(),
        ));
    }
    for (k, (&t, &q)) in data.types.iter().zip(&data.charges).enumerate() {
        let Some(&want) = field.charge.get(t.wrapping_sub(1)) else {
            return Err(WaterBoxError::NotWater(format!(
                "atom {} has type {t} (1 = O, 2 = H)",
                data.ids.get(k).copied().unwrap_or(k as u64 + 1)
            )));
        };
        if (q - want).abs() > 1e-9 {
            return Err(WaterBoxError::NotWater(format!(
                "atom {} of type {t} has charge {q}, SPC/E's is {want}",
                data.ids.get(k).copied().unwrap_or(k as u64 + 1)
            )));
        }
    }
    for (t, (&m, &want)) in data.masses.iter().zip(&field.mass).enumerate() {
        if (m - want).abs() > 1e-6 * want {
            return Err(WaterBoxError::NotWater(format!(
                "type {} has mass {m}, SPC/E's is {want}",
                t + 1
            )));
        }
    }
    let kind = |a: usize| data.types[a];
    if let Some(b) = data.bonds.iter().find(|b| {
        let mut k = [kind(b.atoms[0]), kind(b.atoms[1])];
        k.sort_unstable();
        k != [1, 2]
    }) {
        return Err(WaterBoxError::NotWater(format!(
            "bond {:?} does not join an O to an H",
            b.atoms
        )));
    }
    if let Some(a) = data.angles.iter().find(|a| a.atoms.map(kind) != [2, 1, 2]) {
        return Err(WaterBoxError::NotWater(format!(
            "angle {:?} is not H–O–H",
            a.atoms
        )));
    }
    Ok(())
}
