//! What `zs nma` ([`crate::cli::nma`]) asks of a system: the model at a state ([`Problem`]),
//! analysed into a [`Spectrum`] — modes, their kinds (rigid motions of 3-D point sites) and the
//! frequency unit — and written as CSV rows and an extended-XYZ animation.

use std::fmt::Write as _;

use zs_runtime::minimize::Lbfgs;
use zs_runtime::modes::{
    lowest_modes, normal_modes, normal_modes_by_products, rigid_motions, NormalModes, RigidMotions,
};
use zs_runtime::{Model, Vector};

use crate::cli::error::CliError;
use crate::cli::{state_file, NmaArgs};

/// Frames per mode in the `--modes` animation (one period).
pub const FRAMES: usize = 16;
/// Modes animated at most (the lowest non-rigid ones).
pub const MAX_ANIMATED: usize = 100;

/// The configuration as 3-D point sites, for the rigid motions and the animation.
pub struct Sites {
    /// Element or bead symbols, one per site (coordinates `3s .. 3s + 3`).
    pub symbols: Vec<String>,
    /// The periodic box `(lo, sides)` of a condensed-phase system; `None` for an open cluster,
    /// whose rotations are symmetries (a box's are not: only its translations are zero modes).
    pub lattice: Option<([f64; 3], [f64; 3])>,
}

/// The frequency unit of a system: its name and the factor from `√λ` to it; and the factor
/// from `λ` to the eigenvalue the CSV gives.
#[derive(Clone, Copy)]
pub struct Units {
    pub name: &'static str,
    pub per_angular: f64,
    pub per_eigenvalue: f64,
}

impl Units {
    /// `√λ` in the system's own inverse time unit.
    pub const ANGULAR: Units = Units {
        name: "angular frequency, 1/time unit",
        per_angular: 1.0,
        per_eigenvalue: 1.0,
    };
    /// cm⁻¹ from AKMA units (Å, kcal/mol, amu; time unit 48.888 fs): `ν̃ = √λ / (2π c t)`.
    pub const AKMA_WAVENUMBER: Units = Units {
        name: "cm^-1",
        per_angular: 1.0 / (2.0 * core::f64::consts::PI * 2.997_924_58e10 * 4.888_821e-14),
        per_eigenvalue: 1.0,
    };
    /// cm⁻¹ from LAMMPS `real` units, whose masses are g/mol times `mvv2e` so that time is
    /// in fs: `√λ` is in rad/fs, `ν̃ = √λ / (2π c)` with `c` in cm/fs.
    pub const REAL_WAVENUMBER: Units = Units {
        name: "cm^-1",
        per_angular: 1.0 / (2.0 * core::f64::consts::PI * 2.997_924_58e-5),
        per_eigenvalue: 1.0,
    };
    /// [`Units::REAL_WAVENUMBER`], with eigenvalues in kcal/mol/Å²/(g/mol) (masses in g/mol,
    /// not times `mvv2e`: the CSV's eigenvalue is `λ · mvv2e`).
    pub const REAL_WAVENUMBER_G_PER_MOL: Units = Units {
        per_eigenvalue: 48.888_212_91 * 48.888_212_91,
        ..Units::REAL_WAVENUMBER
    };
}

/// What a system hands to the analysis.
pub struct Problem<'a, V: Vector, P: Model<V>> {
    pub model: &'a P,
    pub q: V,
    pub sites: Option<Sites>,
    pub units: Units,
    /// One line describing the model (printed).
    pub about: String,
}

/// The analysis, ready to write.
pub struct Spectrum {
    pub modes: NormalModes,
    q: Vec<f64>,
    masses: Vec<f64>,
    sites: Option<Sites>,
    pub units: Units,
    pub about: String,
    /// `--minimize`: L-BFGS iterations and the final RMS force.
    pub minimized: Option<(u64, f64)>,
}

/// The state of `--init` (its last row), or `start`.
pub fn start<V: Vector>(args: &NmaArgs, names: &[String], start: V) -> Result<V, CliError> {
    match &args.init {
        None => Ok(start),
        Some(path) => {
            let rows = state_file::read(path, names)?;
            let last = rows.last().ok_or_else(|| CliError::BadValue {
                option: "--init",
                value: path.display().to_string(),
                why: "the state file has no rows",
            })?;
            Ok(V::try_from_slice(&last.q).expect("rows have the system's size"))
        }
    }
}

/// Minimise (with `--minimize`) and diagonalise.
pub fn analyse<V: Vector, P: Model<V>>(
    args: &NmaArgs,
    problem: Problem<'_, V, P>,
) -> Result<Spectrum, CliError> {
    analyse_with(args, problem, false)
}

/// [`analyse`] for a model with a long-range term: the dense Hessian from exact products
/// ([`normal_modes_by_products`]); `--lowest` (shift-invert on the sparse matrix) does not
/// apply.
pub fn analyse_by_products<V: Vector, P: Model<V>>(
    args: &NmaArgs,
    problem: Problem<'_, V, P>,
) -> Result<Spectrum, CliError> {
    analyse_with(args, problem, true)
}

fn analyse_with<V: Vector, P: Model<V>>(
    args: &NmaArgs,
    problem: Problem<'_, V, P>,
    by_products: bool,
) -> Result<Spectrum, CliError> {
    let Problem {
        model,
        mut q,
        sites,
        units,
        about,
        ..
    } = problem;
    let minimized = if args.minimize {
        let m = Lbfgs::new(args.minimize_tol, 100_000).minimize(model, &mut q)?;
        Some((m.steps, m.rms_force))
    } else {
        None
    };
    let modes = match (args.lowest, by_products) {
        (Some(_), true) => {
            return Err(CliError::BadValue {
                option: "--lowest",
                value: "K".to_string(),
                why: "its shift-invert Lanczos solves with the sparse short-range Hessian, and the long-range term's is dense: the whole spectrum is computed instead (drop --lowest)",
            })
        }
        (Some(k), false) => lowest_modes(model, &q, k as usize, args.shift)?,
        (None, false) => normal_modes(model, &q)?,
        (None, true) => normal_modes_by_products(model, &q)?,
    };
    let mut masses = vec![0.0; model.dimension()];
    model.masses_into_slice(&mut masses);
    Ok(Spectrum {
        modes,
        q: q.as_slice().to_vec(),
        masses,
        sites,
        units,
        about,
        minimized,
    })
}

impl Spectrum {
    /// Mode `k`'s eigenvalue in the system's unit.
    pub(crate) fn eigenvalue(&self, k: usize) -> f64 {
        self.modes.eigenvalues[k] * self.units.per_eigenvalue
    }

    /// Mode `k`'s frequency in the system's unit.
    pub(crate) fn frequency(&self, k: usize) -> f64 {
        self.modes.angular_frequency(k) * self.units.per_angular
    }

    /// Per-site positions and the rigid motions' bases, for systems of 3-D point sites.
    pub(crate) fn rigid(&self) -> Option<RigidMotions> {
        let sites = self.sites.as_ref()?;
        let x: Vec<[f64; 3]> = self.q.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        let m: Vec<f64> = self.masses.chunks_exact(3).map(|c| c[0]).collect();
        Some(rigid_motions(&x, &m, sites.lattice.is_none()))
    }

    /// Mode `k`'s kind and its fractions in the translations and rotations.
    pub(crate) fn kind(
        &self,
        k: usize,
        rigid: Option<&RigidMotions>,
    ) -> (&'static str, Option<(f64, f64)>) {
        let Some(rigid) = rigid else {
            return ("vibration", None);
        };
        let (t, r) = (
            self.modes.overlap(k, &rigid.translations),
            self.modes.overlap(k, &rigid.rotations),
        );
        // A mode is rigid when nine tenths of it is; degenerate zero modes mix the two.
        let kind = if t > 0.9 {
            "translation"
        } else if r > 0.9 {
            "rotation"
        } else if t + r > 0.9 {
            "rigid"
        } else {
            "vibration"
        };
        (kind, Some((t, r)))
    }

    /// The non-rigid modes (at most the lowest [`MAX_ANIMATED`]) as extended XYZ: per mode one
    /// period of [`FRAMES`] frames, `q + A sin(2π f / FRAMES) d` with `d` the mode's
    /// displacement (largest component 1) and `A` = 0.3 length units.
    pub(crate) fn animation(
        &self,
        kinds: &[(&str, Option<(f64, f64)>)],
    ) -> Result<String, CliError> {
        let Some(sites) = &self.sites else {
            return Err(CliError::does_not_apply(
                "--modes",
                "a system whose coordinates are not 3-D point sites",
                Some("the animation shows atoms moving"),
            ));
        };
        let mut out = String::new();
        let n = sites.symbols.len();
        for k in (0..kinds.len())
            .filter(|&k| kinds[k].0 == "vibration")
            .take(MAX_ANIMATED)
        {
            let d = self.modes.displacement(k);
            for f in 0..FRAMES {
                let s = 0.3 * (2.0 * core::f64::consts::PI * f as f64 / FRAMES as f64).sin();
                let _ = writeln!(out, "{n}");
                if let Some((lo, l)) = sites.lattice {
                    // Unwrapped positions: a molecule stays whole across the box's faces.
                    let _ = write!(
                        out,
                        "Lattice=\"{} 0 0 0 {} 0 0 0 {}\" Origin=\"{} {} {}\" ",
                        l[0], l[1], l[2], lo[0], lo[1], lo[2]
                    );
                }
                let _ =
                    writeln!(
                    out,
                    "Properties=species:S:1:pos:R:3 mode={k} frequency={:.6e} frame={f} pbc=\"{}\"",
                    self.frequency(k),
                    if sites.lattice.is_some() { "T T T" } else { "F F F" }
                );
                for (i, sym) in sites.symbols.iter().enumerate() {
                    let p: [f64; 3] =
                        core::array::from_fn(|a| self.q[3 * i + a] + s * d[3 * i + a]);
                    let _ = writeln!(out, "{sym} {:.8} {:.8} {:.8}", p[0], p[1], p[2]);
                }
            }
        }
        Ok(out)
    }
}
