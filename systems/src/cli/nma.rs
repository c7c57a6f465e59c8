//! `zs nma <system> [--init FILE] [--n N] [--omega W] [--minimize] [--out FILE] [--modes FILE.xyz]`:
//! normal-mode analysis at a state ([`zs_runtime::modes`]): the eigenvalues of
//! `M^{-1/2} H M^{-1/2}` from the exact generated Hessian, ascending, one CSV row per mode —
//! `mode`, `eigenvalue`, `frequency` (the system's unit: cm⁻¹ for water, else the angular
//! frequency `√λ` in its time unit; negative for a negative eigenvalue), `kind`
//! (`translation`, `rotation`, `rigid` for a mix of the two, `vibration`), and the fractions
//! `translation`, `rotation` of the mode in the span of the rigid motions (systems of 3-D point
//! sites; empty otherwise). Constrained systems are analysed through their penalty
//! `V + ½ω²|g|²` (`--omega`, default the paper's ω). `--modes` writes every non-rigid mode
//! (at most the lowest [`MAX_ANIMATED`]) as an extended-XYZ animation, one cycle of
//! [`FRAMES`] frames each, for VMD, OVITO or ASE.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use zs_runtime::minimize::Lbfgs;
use zs_runtime::modes::{normal_modes, rigid_motions, NormalModes, RigidMotions};
use zs_runtime::{Model, Vector};

use super::error::CliError;
use super::state_file;
use super::system::describe;
use super::NmaArgs;

/// Frames per mode in the `--modes` animation (one period).
pub const FRAMES: usize = 16;
/// Modes animated at most (the lowest non-rigid ones).
pub const MAX_ANIMATED: usize = 100;

/// The configuration as 3-D point sites, for the rigid motions and the animation.
pub(crate) struct Sites {
    /// Element or bead symbols, one per site (coordinates `3s .. 3s + 3`).
    pub symbols: Vec<String>,
    /// Rotations are symmetries (an open cluster; not a periodic box).
    pub rotations: bool,
}

/// The frequency unit of a system: its name and the factor from `√λ` to it.
#[derive(Clone, Copy)]
pub(crate) struct Units {
    pub name: &'static str,
    pub per_angular: f64,
}

impl Units {
    /// `√λ` in the system's own inverse time unit.
    pub const ANGULAR: Units = Units {
        name: "angular frequency, 1/time unit",
        per_angular: 1.0,
    };
    /// cm⁻¹ from AKMA units (Å, kcal/mol, amu; time unit 48.888 fs): `ν̃ = √λ / (2π c t)`.
    pub const AKMA_WAVENUMBER: Units = Units {
        name: "cm^-1",
        per_angular: 1.0 / (2.0 * core::f64::consts::PI * 2.997_924_58e10 * 4.888_821e-14),
    };
}

/// What a system hands to the analysis.
pub(crate) struct Problem<'a, V: Vector, P: Model<V>> {
    pub model: &'a P,
    pub q: V,
    pub sites: Option<Sites>,
    pub units: Units,
    /// One line describing the model (printed).
    pub about: String,
}

/// The analysis, ready to write.
pub(crate) struct Spectrum {
    modes: NormalModes,
    q: Vec<f64>,
    masses: Vec<f64>,
    sites: Option<Sites>,
    units: Units,
    about: String,
    minimized: Option<(u64, f64)>,
}

/// The state of `--init` (its last row), or `start`.
pub(crate) fn start<V: Vector>(args: &NmaArgs, names: &[String], start: V) -> Result<V, CliError> {
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
pub(crate) fn analyse<V: Vector, P: Model<V>>(
    args: &NmaArgs,
    problem: Problem<'_, V, P>,
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
    let modes = normal_modes(model, &q)?;
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

/// Run `zs nma`.
///
/// # Errors
/// An option that does not apply, an unreadable state, a failed minimisation or eigensolve,
/// an output that cannot be written.
pub fn nma(args: &NmaArgs) -> Result<(), CliError> {
    let sys = describe(args.system);
    if args.modes.is_some() && args.modes == args.out {
        return Err(CliError::SameFile {
            first: "--out",
            second: "--modes",
            path: args.modes.clone().unwrap_or_default(),
        });
    }
    let started = std::time::Instant::now();
    let spectrum = sys.nma(args)?;
    let seconds = started.elapsed().as_secs_f64();
    let rigid = spectrum.rigid();
    let kinds: Vec<(&str, Option<(f64, f64)>)> = (0..spectrum.modes.len())
        .map(|k| spectrum.kind(k, rigid.as_ref()))
        .collect();
    let mut csv = String::from("mode,eigenvalue,frequency,kind,translation,rotation\n");
    for (k, (kind, overlaps)) in kinds.iter().enumerate() {
        let _ = write!(
            csv,
            "{k},{:e},{:e},{kind},",
            spectrum.modes.eigenvalues[k],
            spectrum.frequency(k)
        );
        match overlaps {
            Some((t, r)) => {
                let _ = writeln!(csv, "{t:.6},{r:.6}");
            }
            None => csv.push_str(",\n"),
        }
    }
    if let Some(path) = &args.modes {
        let text = spectrum.animation(&kinds)?;
        write(path, &text)?;
    }
    if let Some(path) = &args.out {
        write(path, &csv)?;
    }
    let count = |kind: &str| kinds.iter().filter(|(k, _)| *k == kind).count();
    println!("zs nma: {}", spectrum.about);
    if let Some((steps, rms)) = spectrum.minimized {
        println!("    minimised first: L-BFGS, {steps} iterations, RMS force {rms:.1e}");
    }
    println!(
        "    {} modes in {seconds:.2} s (exact Hessian, dense symmetric eigensolver); frequencies in {}",
        spectrum.modes.len(),
        spectrum.units.name
    );
    if rigid.is_some() {
        println!(
            "    rigid motions: {} translation, {} rotation, {} mixed; {} vibrations",
            count("translation"),
            count("rotation"),
            count("rigid"),
            count("vibration")
        );
    }
    let vib: Vec<usize> = (0..kinds.len())
        .filter(|&k| kinds[k].0 == "vibration")
        .collect();
    if let (Some(&lo), Some(&hi)) = (vib.first(), vib.last()) {
        println!(
            "    vibrations from {:.6e} to {:.6e} ({})",
            spectrum.frequency(lo),
            spectrum.frequency(hi),
            spectrum.units.name
        );
    }
    match &args.out {
        Some(path) => println!("    modes          {}", path.display()),
        None => print!("{csv}"),
    }
    if let Some(path) = &args.modes {
        println!(
            "    animation      {} (extended XYZ, {FRAMES} frames per mode)",
            path.display()
        );
    }
    Ok(())
}

fn write(path: &PathBuf, text: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::io("create the output directory", dir, e))?;
    }
    zs_runtime::files::write_atomic(Path::new(path), text.as_bytes())
        .map_err(|e| CliError::io("write", path, e))
}

impl Spectrum {
    /// Mode `k`'s frequency in the system's unit.
    fn frequency(&self, k: usize) -> f64 {
        self.modes.angular_frequency(k) * self.units.per_angular
    }

    /// Per-site positions and the rigid motions' bases, for systems of 3-D point sites.
    fn rigid(&self) -> Option<RigidMotions> {
        let sites = self.sites.as_ref()?;
        let x: Vec<[f64; 3]> = self.q.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        let m: Vec<f64> = self.masses.chunks_exact(3).map(|c| c[0]).collect();
        Some(rigid_motions(&x, &m, sites.rotations))
    }

    /// Mode `k`'s kind and its fractions in the translations and rotations.
    fn kind(&self, k: usize, rigid: Option<&RigidMotions>) -> (&'static str, Option<(f64, f64)>) {
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
    fn animation(&self, kinds: &[(&str, Option<(f64, f64)>)]) -> Result<String, CliError> {
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
                let _ = writeln!(
                    out,
                    "Properties=species:S:1:pos:R:3 mode={k} frequency={:.6e} frame={f} pbc=\"F F F\"",
                    self.frequency(k)
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
