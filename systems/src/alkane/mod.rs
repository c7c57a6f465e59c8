//! The TraPPE united-atom n-alkane (Martin & Siepmann, J. Phys. Chem. B 102, 2569 (1998)) in
//! LAMMPS `real` units (Å, kcal/mol, g/mol, fs): CH3 and CH2 sites joined by bonds, with
//! bond-angle and torsion terms — terms of two, three and four bodies — and Lennard-Jones
//! pairs whose parameters depend on the two sites' types.
//!
//! Units are LAMMPS's `real`: the masses the model gives the integrators are in
//! kcal/mol·fs²/Å² (g/mol ÷ 4.184·10⁻⁴), so that steps and times are in fs.
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

use rand::seq::SliceRandom;
use rand::Rng as _;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use zs_runtime::assembly::{
    resort_period_from_env, Assembled, BodyOrder, Terms, Topology, TopologyError,
};
use zs_runtime::lammps::{AtomStyle, Bonded, DataFile};
use zs_runtime::mechanical_system;

/// `k_B` in kcal/mol/K, LAMMPS's `real` value (`force->boltz`).
pub const KB: f64 = 0.001_987_206_7;

/// The TraPPE-UA force field, in kcal/mol, Å, radians, g/mol; per-type tables indexed by the
/// site type (0 = CH3, 1 = CH2). `V` says how the bonds and angles enter ([`variant`]): the
/// flexible force field ([`Alkane`]), bonds held at `r0` by constraints ([`AlkaneRigidBonds`]),
/// or bonds and angles as the stiff part of Z&Ss-stiff ([`AlkaneStiff`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trappe<V = variant::Flexible> {
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
    /// Per pair of site types, the Lorentz–Berthelot mixed coefficients the pair kernel reads
    /// (LAMMPS's `init_one`: mixed once, not per pair), made from `epsilon`, `sigma` and `rc`
    /// by [`Trappe::mixed`] — which [`Trappe::trappe`] and [`Trappe::from_data`] call, so they
    /// follow those fields.
    lj: Mixed,
    /// How bonds and angles enter.
    pub variant: core::marker::PhantomData<V>,
}

/// Lennard-Jones coefficients per pair of site types `[a][b]`: `4ε_ab`, `σ_ab⁶`, and the
/// energy at the cutoff `4ε_ab((σ_ab/rc)¹² − (σ_ab/rc)⁶)`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Mixed {
    eps4: [[f64; 2]; 2],
    sigma6: [[f64; 2]; 2],
    shift: [[f64; 2]; 2],
}

/// How a [`Trappe`] force field's bonds and angles enter the dynamics.
pub mod variant {
    /// What the builder and the command line need to know of a variant.
    pub trait Variant: Send + Sync + 'static {
        /// The bonds are constraints: a built liquid starts with every bond at `r0`.
        const RIGID_BONDS: bool;
    }
    impl Variant for Flexible {
        const RIGID_BONDS: bool = false;
    }
    impl Variant for RigidBonds {
        const RIGID_BONDS: bool = true;
    }
    impl Variant for Stiff {
        const RIGID_BONDS: bool = false;
    }

    /// Harmonic bonds and angles in the potential (compare with LAMMPS as is).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Flexible;
    /// Bonds held at `r0` (TraPPE's own choice): one constraint `(r² − r0²)/(2 r0)` per bond,
    /// for SHAKE, RATTLE and the penalty of the Z&S family; angles harmonic.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RigidBonds;
    /// Harmonic bonds and angles as the stiff part `V1` (Tao & Owhadi eq. 19), solved implicitly
    /// by Z&Ss-stiff; torsions and pairs explicit.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Stiff;
}

/// The flexible TraPPE-UA force field.
pub type Alkane = Trappe<variant::Flexible>;
/// TraPPE-UA with its bonds constrained.
pub type AlkaneRigidBonds = Trappe<variant::RigidBonds>;
/// TraPPE-UA with bonds and angles as the stiff part.
pub type AlkaneStiff = Trappe<variant::Stiff>;

/// CH3, the chain ends.
pub const CH3: u32 = 0;
/// CH2, the chain's inner sites.
pub const CH2: u32 = 1;

impl<V> Trappe<V> {
    /// TraPPE-UA's values (bonds at K = 452.9 kcal/mol/Å² where flexible, cutoff 14 Å).
    // Read as `Alkane::trappe()`, "the alkane with TraPPE's values"; the struct's own name is
    // the force field's.
    #[allow(clippy::self_named_constructors)]
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
            lj: Mixed::default(),
            variant: core::marker::PhantomData,
        }
        .mixed()
    }

    /// The pair coefficients mixed again from `epsilon`, `sigma` and `rc` (Lorentz–Berthelot:
    /// `ε_ab = √(ε_a ε_b)`, `σ_ab = (σ_a + σ_b)/2`, LAMMPS's `pair_modify mix arithmetic`).
    #[must_use]
    pub fn mixed(mut self) -> Self {
        for a in 0..2 {
            for b in 0..2 {
                let eps = (self.epsilon[a] * self.epsilon[b]).sqrt();
                let s2 = (0.5 * (self.sigma[a] + self.sigma[b])).powi(2);
                let sc6 = (s2 / (self.rc * self.rc)).powi(3);
                self.lj.eps4[a][b] = 4.0 * eps;
                self.lj.sigma6[a][b] = s2 * s2 * s2;
                self.lj.shift[a][b] = 4.0 * eps * (sc6 * sc6 - sc6);
            }
        }
        self
    }

    /// The same force field with bonds and angles entering as `W` says.
    pub fn as_variant<W>(self) -> Trappe<W> {
        Trappe {
            k_bond: self.k_bond,
            r0: self.r0,
            k_theta: self.k_theta,
            theta0: self.theta0,
            c: self.c,
            epsilon: self.epsilon,
            sigma: self.sigma,
            mass: self.mass,
            rc: self.rc,
            lj: self.lj,
            variant: core::marker::PhantomData,
        }
    }
}

/// The term functions every variant shares (masses, pairs, torsions, and the bond and angle
/// energies as helpers), stamped on `Trappe<$variant>` with the variant's own functions.
macro_rules! trappe_terms {
    ($variant:ty { $($own:tt)* }) => {
        #[mechanical_system]
        impl Trappe<$variant> {
            /// In kcal/mol·fs²/Å² (`m / 4.184e-4`): with energies in kcal/mol and lengths in Å, time
            /// is then in fs and velocities in Å/fs, LAMMPS's `real` units.
            fn body_masses(&self, kind: usize) -> [f64; 3] {
                [self.mass[kind] / REAL_ACCELERATION; 3]
            }
            /// `(r² − r0²)/(2 r0)`: `r − r0` to first order, without a square root. (The
            /// variants' own functions read the fields through helpers like this one: the
            /// fields a macro invocation's tokens name directly would not resolve against the
            /// generated kernels' `self`, macro hygiene.)
            fn bond_constraint(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
                let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
                (r2 - self.r0 * self.r0) / (2.0 * self.r0)
            }
            /// `K(r − r0)²`.
            fn bond_energy(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
                let r = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2)).sqrt();
                self.k_bond * (r - self.r0).powi(2)
            }
            /// `4ε((σ/r)¹² − (σ/r)⁶)` cut and shifted at `rc`, with the coefficients of the two
            /// sites' types mixed beforehand ([`Trappe::mixed`]); one division, `1/r²`, whose
            /// derivatives are its powers.
            fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
                let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
                if r2 < self.rc * self.rc {
                    let ir2 = 1.0 / r2;
                    let sr6 = self.lj.sigma6[ka][kb] * (ir2 * ir2 * ir2);
                    self.lj.eps4[ka][kb] * (sr6 * sr6 - sr6) - self.lj.shift[ka][kb]
                } else {
                    0.0
                }
            }
            /// `θ` at the apex `b`, from `cos θ = u·v / (|u||v|)`.
            fn angle_energy(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
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
            $($own)*
        }
    };
}

trappe_terms!(variant::Flexible {
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        self.bond_energy(a, b)
    }
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        self.angle_energy(a, b, c)
    }
});

trappe_terms!(variant::RigidBonds {
    fn bond_constraints(&self, a: &[f64; 3], b: &[f64; 3]) -> [f64; 1] {
        [self.bond_constraint(a, b)]
    }
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        self.angle_energy(a, b, c)
    }
});

trappe_terms!(variant::Stiff {
    fn stiff_bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        self.bond_energy(a, b)
    }
    fn stiff_angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        self.angle_energy(a, b, c)
    }
});

/// The neighbour-list skin (Å), LAMMPS's default for `real` units (`neighbor 2.0 bin`).
pub const SKIN: f64 = 2.0;

/// `N_A · 10⁻²⁴`: g/cm³ times this is g/mol per Å³.
const DENSITY_UNIT: f64 = 0.602_214_076;

/// A liquid of `n`-alkanes: the assembled system, its unwrapped positions and velocities (Å,
/// Å/fs), and the data file that describes it.
pub type Liquid<V = variant::Flexible> = (Assembled<Trappe<V>, 3>, Vec<f64>, Vec<f64>, DataFile);

/// Why a liquid cannot be built or read.
#[derive(Debug, thiserror::Error)]
pub enum AlkaneError {
    /// The topology (box, cutoff, types) is invalid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A builder argument out of range.
    #[error("{0}")]
    Builder(String),
    /// A data file whose masses are not TraPPE's.
    #[error("atom type {kind} has mass {mass}, TraPPE-UA's type {kind} ({name}) has {want} g/mol")]
    Mass {
        /// The atom type, from 1.
        kind: usize,
        /// The file's mass.
        mass: f64,
        /// The model's.
        want: f64,
        /// CH3 or CH2.
        name: &'static str,
    },
}

impl<V: variant::Variant> Trappe<V>
where
    Trappe<V>: Terms<3>,
{
    /// The assembled liquid of a LAMMPS data file (`units real`, atom types 1 = CH3 and
    /// 2 = CH2, masses as TraPPE's): its atoms in ID order, its bonds, angles and dihedrals as
    /// listed (as LAMMPS applies them: a file without `Angles` has no angle terms), pairs more
    /// than three bonds apart (`special_bonds lj 0 0 0`), its periodic box, the model's cutoff
    /// with [`SKIN`]. Returns the system and the file's unwrapped positions and velocities.
    ///
    /// # Errors
    /// A mass other than TraPPE's, an atom type other than 1 and 2, a box shorter than
    /// twice `rc + skin`.
    pub fn from_data(self, data: &DataFile) -> Result<Liquid<V>, AlkaneError> {
        for (t, &mass) in data.masses.iter().enumerate() {
            let (want, name) = match t {
                0 => (self.mass[0], "CH3"),
                1 => (self.mass[1], "CH2"),
                _ => continue, // an unused type is harmless; a used one fails `has_type`
            };
            if (mass - want).abs() > 1e-9 * want {
                return Err(AlkaneError::Mass {
                    kind: t + 1,
                    mass,
                    want,
                    name,
                });
            }
        }
        let topology = Topology::new(data.len())
            .bonds_from(data.bonds.iter().map(|b| (b.atoms[0], b.atoms[1])))
            .angles_from(data.angles.iter().map(|a| a.atoms))
            .dihedrals_from(data.dihedrals.iter().map(|d| d.atoms))
            .exclude_within(3)
            .types(data.types.iter().map(|&t| t.saturating_sub(1) as u32))
            .periodic(data.box_lengths())
            .cutoff(self.rc, SKIN);
        let q: Vec<f64> = data.positions.iter().flatten().copied().collect();
        let v = data.velocities.iter().flatten().copied().collect();
        // Held in spatial order inside when the file's numbering is not local.
        let system = Assembled::ordered(self.mixed(), topology, BodyOrder::from_env(), &q)?
            .with_resort_period(resort_period_from_env());
        Ok((system, q, v, data.clone()))
    }

    /// A liquid of `molecules` n-alkanes of `length` sites at `density` g/cm³ in a periodic
    /// cube, seeded: all-trans molecules (bond 1.54 Å, angle 114°) aligned along x on a
    /// lattice of rods, each turned by a random angle about its axis, every site jittered by
    /// up to 0.05 Å (no torsion exactly planar), the molecules placed in a random subset of
    /// the lattice's cells; Maxwell–Boltzmann velocities at `temperature` K (zero total
    /// momentum). For [`variant::RigidBonds`], every bond is then moved back to `r0` and the
    /// velocities made tangent to the bonds (the start is on the constraint manifold). Written as the LAMMPS data file it returns too (`atom_style molecular`).
    ///
    /// # Errors
    /// Fewer than 2 sites or 1 molecule, a non-positive density, a box too small for the
    /// cutoff, or a density too high for rods 3.4 Å apart.
    pub fn liquid(
        self,
        molecules: usize,
        length: usize,
        density: f64,
        temperature: f64,
        seed: u64,
    ) -> Result<Liquid<V>, AlkaneError> {
        let bad = |m: String| Err(AlkaneError::Builder(m));
        if length < 2 || molecules == 0 {
            return bad(format!(
                "{molecules} molecules of {length} sites: a liquid needs at least one molecule of at least 2 sites"
            ));
        }
        if !(density.is_finite() && density > 0.0 && temperature.is_finite() && temperature >= 0.0)
        {
            return bad(format!(
                "density {density} g/cm³ and temperature {temperature} K must be finite, the density positive"
            ));
        }
        let per_molecule = 2.0 * self.mass[0] + (length - 2) as f64 * self.mass[1];
        let side = (molecules as f64 * per_molecule / (density * DENSITY_UNIT)).cbrt();
        let reach = 2.0 * (self.rc + SKIN);
        if side < reach {
            let least = (reach.powi(3) * density * DENSITY_UNIT / per_molecule).ceil();
            return bad(format!(
                "{molecules} molecules of {length} sites at {density} g/cm³ fill a box of side \
                 {side:.2} Å, shorter than twice the cutoff plus skin ({reach} Å): build at \
                 least {least} molecules"
            ));
        }
        // The rods: the zigzag's projection on its axis, and a gap of 4 Å between ends.
        let half = 0.5 * self.theta0;
        let (dx, dy) = (self.r0 * half.sin(), self.r0 * half.cos());
        let rod = (length - 1) as f64 * dx + 4.0;
        let nx = ((side / rod).floor() as usize).max(1);
        let nyz = ((molecules as f64 / nx as f64).sqrt().ceil() as usize).max(1);
        let spacing = side / nyz as f64;
        if spacing < 3.4 || (nx == 1 && rod - 4.0 > side) {
            return bad(format!(
                "{molecules} molecules of {length} sites at {density} g/cm³ do not fit the rod lattice \
                 (box {side:.2} Å, rods {spacing:.2} Å apart): lower the density or build a longer box"
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cells: Vec<usize> = (0..nx * nyz * nyz).collect();
        cells.shuffle(&mut rng);
        cells.truncate(molecules);
        cells.sort_unstable();
        let normal = Normal::new(0.0, 1.0).expect("a unit normal");
        let n = molecules * length;
        let mut positions = Vec::with_capacity(n);
        let mut types = Vec::with_capacity(n);
        let mut velocities = Vec::with_capacity(n);
        let mut bonds = Vec::new();
        let mut angles = Vec::new();
        let mut dihedrals = Vec::new();
        let kt = KB * temperature;
        for (m, &cell) in cells.iter().enumerate() {
            let (i, j, k) = (cell % nx, (cell / nx) % nyz, cell / (nx * nyz));
            let centre = [
                (i as f64 + 0.5) * side / nx as f64,
                (j as f64 + 0.5) * spacing,
                (k as f64 + 0.5) * spacing,
            ];
            let turn = std::f64::consts::TAU * rng.random::<f64>();
            let (s, c) = turn.sin_cos();
            let first = m * length;
            for site in 0..length {
                let x = (site as f64 - 0.5 * (length - 1) as f64) * dx;
                let y = if site % 2 == 0 { -0.5 * dy } else { 0.5 * dy };
                let mut jitter = || 0.05 * (2.0 * rng.random::<f64>() - 1.0);
                positions.push([
                    centre[0] + x + jitter(),
                    centre[1] + c * y + jitter(),
                    centre[2] + s * y + jitter(),
                ]);
                let kind = if site == 0 || site == length - 1 {
                    CH3
                } else {
                    CH2
                };
                types.push(kind as usize + 1);
                let sd = (kt / self.mass[kind as usize] * REAL_ACCELERATION).sqrt();
                velocities.push(core::array::from_fn(|_| sd * normal.sample(&mut rng)));
                let at = first + site;
                if site >= 1 {
                    bonds.push(Bonded {
                        kind: 1,
                        atoms: [at - 1, at],
                    });
                }
                if site >= 2 {
                    angles.push(Bonded {
                        kind: 1,
                        atoms: [at - 2, at - 1, at],
                    });
                }
                if site >= 3 {
                    dihedrals.push(Bonded {
                        kind: 1,
                        atoms: [at - 3, at - 2, at - 1, at],
                    });
                }
            }
        }
        // Zero total momentum.
        let total: f64 = types.iter().map(|&t| self.mass[t - 1]).sum();
        let p: [f64; 3] = core::array::from_fn(|a| {
            types
                .iter()
                .zip(&velocities)
                .map(|(&t, v)| self.mass[t - 1] * v[a])
                .sum::<f64>()
                / total
        });
        for v in &mut velocities {
            for a in 0..3 {
                v[a] -= p[a];
            }
        }
        let mut data = DataFile {
            title: format!(
                "TraPPE-UA liquid of {molecules} C{length} alkanes at {density} g/cm3, {temperature} K, seed {seed} (zs)"
            ),
            style: AtomStyle::Bond,
            lo: [0.0; 3],
            hi: [side; 3],
            masses: self.mass.to_vec(),
            ids: (1..=n as u64).collect(),
            molecules: (0..n).map(|a| (a / length + 1) as u64).collect(),
            types,
            charges: vec![0.0; n],
            positions,
            velocities,
            has_velocities: true,
            bond_types: 1,
            angle_types: usize::from(length >= 3),
            dihedral_types: usize::from(length >= 4),
            bonds,
            angles,
            dihedrals,
        };
        if V::RIGID_BONDS {
            self.hold_bonds(&mut data);
        }
        self.from_data(&data)
    }

    /// Moves `data`'s state onto its bonds held at `r0`: every bond brought to `r0` (both ends
    /// moved along it, repeated — SHAKE's iteration without masses; a chain converges to
    /// rounding in a few dozen sweeps), then each bond's relative velocity along it removed,
    /// shared by the masses so that momentum is kept (RATTLE's velocity half, repeated). A
    /// constrained run started there has no kinetic energy along the bonds for its first
    /// step to take away.
    pub fn hold_bonds(&self, data: &mut DataFile) {
        let DataFile {
            positions,
            velocities,
            bonds,
            types,
            ..
        } = data;
        for _ in 0..200 {
            for b in bonds.iter() {
                let [i, j] = b.atoms;
                let d: [f64; 3] = core::array::from_fn(|a| positions[j][a] - positions[i][a]);
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let s = 0.5 * (r - self.r0) / r;
                for a in 0..3 {
                    positions[i][a] += s * d[a];
                    positions[j][a] -= s * d[a];
                }
            }
        }
        let masses: Vec<f64> = types
            .iter()
            .map(|&t| self.mass[t.saturating_sub(1).min(1)])
            .collect();
        let pairs: Vec<[usize; 2]> = bonds.iter().map(|b| b.atoms).collect();
        let q: Vec<f64> = positions.iter().flatten().copied().collect();
        let mut v: Vec<f64> = velocities.iter().flatten().copied().collect();
        tangent_velocities(&pairs, &masses, &q, &mut v);
        for (u, w) in velocities.iter_mut().zip(v.chunks_exact(3)) {
            u.copy_from_slice(w);
        }
    }
}

/// `v` (flat, three per site) made tangent to the bonds `(i, j)` at `q`: each bond's relative
/// velocity along it removed, shared by the masses so that momentum is kept, in 200 sweeps over
/// the bonds (a chain converges to rounding in a few dozen) — RATTLE's velocity half, the projection orthogonal in
/// the mass metric (so the kinetic energy along the bonds is exactly what it removes).
pub fn tangent_velocities(bonds: &[[usize; 2]], masses: &[f64], q: &[f64], v: &mut [f64]) {
    for _ in 0..200 {
        for &[i, j] in bonds {
            let d: [f64; 3] = core::array::from_fn(|a| q[3 * j + a] - q[3 * i + a]);
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let dv: f64 = (0..3).map(|a| (v[3 * j + a] - v[3 * i + a]) * d[a]).sum();
            let (mi, mj) = (masses[i], masses[j]);
            let k = dv / r2 / (mi + mj);
            for a in 0..3 {
                v[3 * i + a] += mj * k * d[a];
                v[3 * j + a] -= mi * k * d[a];
            }
        }
    }
}

/// `1 (kcal/mol)/(g/mol)` in Å²/fs² (LAMMPS `real`: `1/48.88821291²`).
pub const REAL_ACCELERATION: f64 = 4.184e-4;
