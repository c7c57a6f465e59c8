//! `water-box`: SPC/E water in a periodic box with its long-range electrostatics (smooth PME
//! or the plain Ewald sum), read from a LAMMPS data file (`--data`: LAMMPS's
//! `examples/rdf-adf/data.spce`). `zs run` steps rigid water (RATTLE or SHAKE on three
//! distances per molecule, or Z&Ss-stiff on their penalty) or flexible water (Verlet on the
//! file's harmonic bonds and angles), the long-range term inside every step
//! ([`zs_runtime::long_range::WithLongRange`]); `zs eval` gives the potential and its gradient.

use std::path::{Path, PathBuf};

use zs_runtime::lammps::DataFile;
use zs_runtime::long_range::WithLongRange;
use zs_runtime::{MoveGuard, Symbols};

use super::{state_file, table_of, Accepts, CliSystem};
use crate::cli::error::CliError;
use crate::cli::job::{CoordinateNames, DynConstrained, DynStiff, Job};
use crate::cli::{positive_f64, EvalArgs, IntegratorName, RunArgs};
use crate::kremer_grest::KremerGrest;
use crate::water_box::{self, Kspace, Water, WaterBox, WaterBoxOptions};

pub(super) struct WaterBoxCli;

/// `--data`, which this system needs.
fn data_path(data: &Option<PathBuf>) -> Result<&Path, CliError> {
    data.as_deref().ok_or(CliError::Missing {
        system: "water-box",
        option: "--data FILE",
        why: "a LAMMPS data file of SPC/E water (LAMMPS's own: \
              /usr/share/lammps/examples/rdf-adf/data.spce, Debian package lammps-examples)",
    })
}

/// The options of the long-range electrostatics, shared by `run` and `eval`.
fn electrostatics() -> Vec<clap::Arg> {
    use clap::Arg;
    vec![
        Arg::new("rc")
            .long("rc")
            .value_name("RC")
            .value_parser(positive_f64)
            .allow_negative_numbers(true)
            .default_value("9.8")
            .help("Real-space and Lennard-Jones cutoff in Å (water-box; LAMMPS's SPC/E benchmark: 9.8)"),
        Arg::new("kspace")
            .long("kspace")
            .value_name("METHOD")
            .value_parser(["pme", "ewald"])
            .default_value("pme")
            .help("Reciprocal-space method (water-box): pme, smooth particle-mesh Ewald (B-splines of order 5, OpenMM's mesh for the tolerance); ewald, the plain Ewald sum (the accurate reference)"),
        Arg::new("ewald-tolerance")
            .long("ewald-tolerance")
            .value_name("D")
            .value_parser(clap::value_parser!(f64))
            .allow_negative_numbers(true)
            .default_value("5e-4")
            .help("Relative accuracy of the Ewald sum, in (0, 1) (water-box; OpenMM's ewaldErrorTolerance, LAMMPS's kspace δ): α from the cutoff, the reciprocal vectors from α"),
    ]
}

/// `--water`, for `zs run`.
fn water_option() -> clap::Arg {
    clap::Arg::new("water")
        .long("water")
        .value_name("MODEL")
        .value_parser(["rigid", "flexible"])
        .default_value("rigid")
        .help("water-box: rigid (three distances per molecule held by RATTLE or SHAKE, or by the penalty ½ω²|g|² with zss-stiff) or flexible (the file's harmonic bonds and angles)")
}

/// The options of a `run` or an `eval` (`--rc`, `--ewald-tolerance`, `--kspace`, and the water
/// model), their defaults where not given.
fn options_of(
    rc: Option<f64>,
    tolerance: Option<f64>,
    kspace: Option<String>,
    water: Water,
) -> WaterBoxOptions {
    WaterBoxOptions {
        rc: rc.unwrap_or(water_box::RC),
        tolerance: tolerance.unwrap_or(water_box::TOLERANCE),
        kspace: match kspace.as_deref() {
            Some("ewald") => Kspace::Ewald,
            _ => Kspace::Pme,
        },
        water,
    }
}

/// Each atom's element, from its type (1 = O, 2 = H).
fn symbols(data: &DataFile) -> impl Iterator<Item = &'static str> + '_ {
    data.types.iter().map(|&t| if t == 1 { "O" } else { "H" })
}

/// The box of the file at `path` with `options`, and its net charge said when there is one.
fn load(path: &Path, options: &WaterBoxOptions) -> Result<(DataFile, WaterBox), CliError> {
    let data = DataFile::read(path)?;
    let water = WaterBox::from_data_with(&data, options)
        .map_err(|e| CliError::system("water-box", format!("{}: {e}", path.display())))?;
    let net: f64 = data.charges.iter().sum();
    if net.abs() > 1e-9 {
        // As LAMMPS and OpenMM: the Ewald sum of a charged box is made finite by a uniform
        // neutralising background (`E_bg = −π Q² / (2 V α²)`), said, not refused.
        eprintln!(
            "zs: warning: {} has a net charge of {net:.6} e: the Ewald sum adds a uniform neutralising background",
            path.display()
        );
    }
    Ok((data, water))
}

impl CliSystem for WaterBoxCli {
    fn name(&self) -> &'static str {
        "water-box"
    }
    fn about(&self) -> &'static str {
        "SPC/E water in a periodic box with PME or Ewald electrostatics (LAMMPS real units: Å, kcal/mol, fs), rigid or flexible; needs --data FILE, a LAMMPS data file (atom_style full)"
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            constraints: Ok(()),
            threads: true,
            data: true,
            xyz: true,
            settle: true,
            ..Accepts::default()
        }
    }
    fn options(&self) -> Vec<clap::Arg> {
        let mut options = electrostatics();
        options.push(water_option());
        options
    }
    fn eval_options(&self) -> Vec<clap::Arg> {
        electrostatics()
    }
    fn nma_options(&self) -> Vec<clap::Arg> {
        electrostatics()
    }
    fn omega(&self) -> f64 {
        0.0
    }
    fn defaults(&self, _method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        // LAMMPS's SPC/E benchmark: 2 fs, 100 steps.
        (2.0, 200.0, 0.25)
    }
    fn default_integrator(&self) -> IntegratorName {
        IntegratorName::Settle
    }
    fn default_every(&self, steps: u64) -> u64 {
        steps.div_ceil(10).max(1)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let path = data_path(&args.data)?;
        let setup = std::time::Instant::now();
        let water = match args.options.get::<String>("water").as_deref() {
            Some("flexible") => Water::Flexible,
            _ => Water::Rigid,
        };
        let p = job.profile();
        match p.method {
            IntegratorName::Verlet
            | IntegratorName::ZssStiff
            | IntegratorName::Shake
            | IntegratorName::Rattle
            | IntegratorName::Settle => {}
            other => {
                return Err(CliError::system(
                    "water-box",
                    format!(
                        "--integrator {} solves with the whole Hessian, and the long-range term's is dense: use settle, rattle, shake, verlet or zss-stiff (the long-range term in its soft part)",
                        other.clap_name()
                    ),
                ))
            }
        }
        if water == Water::Rigid && p.method.is_penalty_method() && p.omega == 0.0 {
            return Err(CliError::system(
                "water-box",
                format!(
                    "rigid water under --integrator {} needs a penalty --omega W (rigid water has no bond energy): or use settle, rattle, shake, or --water flexible",
                    p.method.clap_name()
                ),
            ));
        }
        if water == Water::Flexible && p.method == IntegratorName::Settle {
            return Err(CliError::system(
                "water-box",
                "--integrator settle holds rigid water: give --water rigid, or another integrator (verlet) for flexible water",
            ));
        }
        let o = &args.options;
        let options = options_of(
            o.get("rc"),
            o.get("ewald-tolerance"),
            o.get("kspace"),
            water,
        );
        let (data, boxed) = load(path, &options)?;
        let (n, lo, sides) = (data.len(), data.lo, data.box_lengths());
        let kept = args.write_data.as_ref().map(|_| data.clone());
        let write_data = |q: &[f64], v: &[f64]| -> Result<(), CliError> {
            let (Some(out), Some(data)) = (&args.write_data, &kept) else {
                return Ok(());
            };
            let title = format!(
                "LAMMPS data file written by zs (water-box, from {})",
                path.display()
            );
            super::write_final_data(out, data, title, q, v)
        };
        let mut job = job.with_xyz(symbols(&data).collect::<Symbols>());
        job.lattice = Some((lo, sides));
        job.at_end = Some(&write_data);
        job.move_guard = Some(MoveGuard::new(water_box::SKIN, 3));
        // SETTLE's molecules: each angle H–O–H of the file as (O, H, H).
        let molecules: Vec<[u32; 3]> = data
            .angles
            .iter()
            .map(|a| [a.atoms[1], a.atoms[0], a.atoms[2]].map(|b| b as u32))
            .collect();
        job.settle = Some((&molecules, water_box::R_OH, water_box::r_hh()));
        // `x1, y1, z1, …`, counted (`KremerGrest::coordinate_names`, not made).
        let names = CoordinateNames::Xyz { bodies: n };
        let state =
            job.initial_state_of(boxed.short.state(boxed.q.clone(), boxed.v.clone()), &names)?;
        say!(
            "zs: SPC/E water, {} molecules from {} ({} water; LJ and real-space Coulomb cut at {} Å, {}; tolerance {}), periodic box {} × {} × {} Å, real units",
            n / 3,
            path.display(),
            match water {
                Water::Rigid => "rigid",
                Water::Flexible => "flexible",
            },
            options.rc,
            boxed.long.describe(),
            options.tolerance,
            sides[0],
            sides[1],
            sides[2]
        );
        say!(
            "    set-up {:.2} s (neighbour list: cutoff {} + skin {} Å; SIMD {}){}",
            setup.elapsed().as_secs_f64(),
            options.rc,
            water_box::SKIN,
            boxed.short.simd().name(),
            super::order_note(&boxed.short)
        );
        boxed.short.check_start(state.q.as_slice())?;
        let more: Vec<_> = (1..job.replicas()).map(|_| boxed.short.replica()).collect();
        let shorts: Vec<_> = core::iter::once(&boxed.short).chain(&more).collect();
        let models: Vec<_> = shorts
            .iter()
            .map(|&s| WithLongRange::new(s, boxed.long.clone(), water_box::COULOMB))
            .collect();
        let penalized: Vec<_> = shorts.iter().map(|s| s.penalized(p.omega)).collect();
        let targets: Vec<_> = penalized
            .iter()
            .map(|s| WithLongRange::new(s, boxed.long.clone(), water_box::COULOMB))
            .collect();
        let systems: Vec<&DynConstrained<'_>> = models.iter().map(|m| m as _).collect();
        let targets: Vec<&DynStiff<'_>> = targets.iter().map(|m| m as _).collect();
        let done = job.run(&systems, &targets, state, names);
        say!(
            "  neighbour lists  {:>14}   builds",
            boxed.short.neighbor_builds()
        );
        done
    }
    /// The flexible model's modes from its exact Hessian, the long-range term's included
    /// (products `H e_j`, [`super::modes::analyse_by_products`]); frequencies in cm⁻¹.
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse_by_products, start, Problem, Sites, Units};
        if args.omega.is_some() {
            return Err(CliError::does_not_apply(
                "--omega",
                "zs nma water-box",
                Some("its modes are the flexible model's, without constraints"),
            ));
        }
        let path = data_path(&args.data)?;
        let o = &args.options;
        let options = options_of(
            o.get("rc"),
            o.get("ewald-tolerance"),
            o.get("kspace"),
            Water::Flexible,
        );
        let (data, boxed) = load(path, &options)?;
        let n = data.len();
        let q = start(args, &KremerGrest::coordinate_names(n), boxed.q.clone())?;
        let about = format!(
            "SPC/E water, {} molecules from {} (flexible; {}; LJ and real-space Coulomb cut at {} Å), periodic box, real units",
            n / 3,
            path.display(),
            boxed.long.describe(),
            options.rc
        );
        let sites = Some(Sites {
            symbols: symbols(&data).map(str::to_string).collect(),
            lattice: Some((data.lo, data.box_lengths())),
        });
        let model = boxed.model();
        analyse_by_products(
            args,
            Problem {
                model: &model,
                q,
                sites,
                units: Units::REAL_WAVENUMBER_G_PER_MOL,
                about,
            },
        )
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let path = data_path(&args.data)?;
        let o = &args.options;
        let options = options_of(
            o.get("rc"),
            o.get("ewald-tolerance"),
            o.get("kspace"),
            Water::Flexible,
        );
        let (data, mut water) = load(path, &options)?;
        let names = KremerGrest::coordinate_names(data.len());
        let rows = match &args.input {
            Some(input) => state_file::read(input, &names)?,
            None => vec![state_file::Row {
                t: 0.0,
                q: water.q.clone(),
                v: None,
            }],
        };
        Ok(table_of(&rows, &names, |q, g| water.value_gradient(q, g)))
    }
}
