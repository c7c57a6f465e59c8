//! `alkane` and `alkane-rigid`: a TraPPE united-atom n-alkane liquid in LAMMPS `real` units
//! (Å, kcal/mol, fs), with flexible bonds or with its bonds held at 1.54 Å (SHAKE, RATTLE, the
//! Z&S penalty), read from a LAMMPS data file (`--data`) or built (`--n-molecules`,
//! `--length`, `--density`, `--seed`; velocities at the temperature of `--kt`, else 272 K);
//! `--write-data` writes the final state, which is how a built liquid goes to LAMMPS.

use std::path::Path;
use std::time::Instant;

use zs_runtime::MoveGuard;

use super::{eval_from_data, run_with_neighbors, write_final_data, Accepts, CliSystem};
use crate::alkane::variant::{self, Variant};
use crate::alkane::{self, Liquid, Trappe, KB};
use crate::cli::error::CliError;
use crate::cli::job::Job;
use crate::cli::{EvalArgs, IntegratorName, RunArgs};
use crate::kremer_grest::KremerGrest;
use zs_runtime::assembly::Terms;

/// The command line's alkane with the bonds of variant `V`.
pub(super) struct AlkaneCli<V>(pub core::marker::PhantomData<V>);

/// The flexible force field (`alkane`).
pub(super) const FLEXIBLE: AlkaneCli<variant::Flexible> = AlkaneCli(core::marker::PhantomData);
/// Bonds held at `r0` (`alkane-rigid`).
pub(super) const RIGID: AlkaneCli<variant::RigidBonds> = AlkaneCli(core::marker::PhantomData);

/// The liquid of a data file.
fn read<V: Variant>(path: &Path) -> Result<Liquid<V>, CliError>
where
    Trappe<V>: Terms<3>,
{
    let data = zs_runtime::lammps::DataFile::read(path)?;
    Trappe::<V>::trappe()
        .from_data(&data)
        .map_err(|source| CliError::Alkane {
            what: path.display().to_string(),
            source,
        })
}

/// The options that build a liquid (without `--data`).
const BUILDER: [&str; 3] = ["n-molecules", "length", "density"];

/// `--n-molecules`, `--length`, `--density`: the liquid the system builds without `--data`
/// (both alkanes declare them, through this one function).
fn builder_options() -> Vec<clap::Arg> {
    use clap::{value_parser, Arg};
    vec![
        Arg::new("n-molecules")
            .long("n-molecules")
            .value_name("M")
            .value_parser(value_parser!(u64).range(1..))
            .allow_negative_numbers(true)
            .help("Molecules of the liquid to build (alkane, without --data; default 2500)"),
        Arg::new("length")
            .long("length")
            .value_name("C")
            .value_parser(value_parser!(u64).range(2..))
            .allow_negative_numbers(true)
            .help("Sites per molecule of the liquid to build (alkane: 4 is butane; default 4)"),
        Arg::new("density")
            .long("density")
            .value_name("D")
            .value_parser(crate::cli::positive_f64)
            .allow_negative_numbers(true)
            .help(
                "Density of the liquid to build, g/cm³ (alkane; default 0.58, butane near 272 K)",
            ),
    ]
}

/// The liquid of `--data`, or the one the builder options describe.
fn liquid<V: Variant>(args: &RunArgs) -> Result<(Liquid<V>, String), CliError>
where
    Trappe<V>: Terms<3>,
{
    if let Some(path) = &args.data {
        return Ok((read(path)?, path.display().to_string()));
    }
    let o = &args.options;
    let (m, c) = (
        o.get::<u64>("n-molecules").unwrap_or(2500),
        o.get::<u64>("length").unwrap_or(4),
    );
    let density = o.get::<f64>("density").unwrap_or(0.58);
    let temperature = args.kt.map_or(272.0, |kt| kt / KB);
    let seed = args.seed.unwrap_or(0);
    let built = Trappe::<V>::trappe()
        .liquid(m as usize, c as usize, density, temperature, seed)
        .map_err(|source| CliError::Alkane {
            what: "the liquid builder".to_string(),
            source,
        })?;
    let how = format!("{m} C{c} molecules at {density} g/cm³, {temperature:.1} K, seed {seed}");
    Ok((built, how))
}

impl<V: Variant> CliSystem for AlkaneCli<V>
where
    Trappe<V>: Terms<3> + zs_runtime::assembly::Kernel<3, 2, zs_runtime::assembly::Bond>,
{
    fn name(&self) -> &'static str {
        if V::RIGID_BONDS {
            "alkane-rigid"
        } else {
            "alkane"
        }
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            constraints: if V::RIGID_BONDS {
                Ok(())
            } else {
                Err("its bonds are flexible (harmonic, K = 452.9 kcal/mol/Å²): alkane-rigid holds them at 1.54 Å")
            },
            threads: true,
            data: true,
            xyz: true,
            ..Accepts::default()
        }
    }
    fn about(&self) -> &'static str {
        if V::RIGID_BONDS {
            "The alkane liquid with its bonds held at 1.54 Å (TraPPE's own model): SHAKE, RATTLE (the default, h = 2 fs) or the Z&S penalty"
        } else {
            "TraPPE united-atom n-alkane liquid (LAMMPS real units: Å, kcal/mol, fs; bonds, angles, OPLS torsions, LJ mixed from CH3/CH2 types cut at 14 Å): --data FILE, or built with --n-molecules, --length, --density, --seed"
        }
    }
    fn options(&self) -> Vec<clap::Arg> {
        builder_options()
    }
    fn check(&self, args: &RunArgs) -> Result<(), CliError> {
        for option in BUILDER {
            if args.data.is_some() && args.options.given(option) {
                return Err(CliError::does_not_apply(
                    format!("--{option}"),
                    self.name(),
                    Some("--data gives the liquid; these options build one instead"),
                ));
            }
        }
        Ok(())
    }
    fn defaults(&self, _method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        // Flexible: 1 fs (the bonds' period is 27 fs); bonds fixed: 2 fs; 100 fs.
        let h = if V::RIGID_BONDS { 2.0 } else { 1.0 };
        (h, 100.0, 0.25)
    }
    fn default_integrator(&self) -> IntegratorName {
        if V::RIGID_BONDS {
            IntegratorName::Rattle
        } else {
            IntegratorName::Verlet
        }
    }
    fn default_every(&self, steps: u64) -> u64 {
        steps
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let setup = Instant::now();
        let ((system, q, v, data), source) = liquid::<V>(args)?;
        let n = data.len();
        let counts = [data.bonds.len(), data.angles.len(), data.dihedrals.len()];
        let (lo, l) = (data.lo, data.box_lengths());
        let mut job = job.with_xyz(symbols(&data));
        // The file is held through the run only to be written back at its end.
        let kept = args.write_data.as_ref().map(|_| data);
        let write_data = |q: &[f64], v: &[f64]| -> Result<(), CliError> {
            let (Some(out), Some(data)) = (&args.write_data, &kept) else {
                return Ok(());
            };
            let title = format!(
                "LAMMPS data file written by zs ({}, from {source})",
                self.name()
            );
            write_final_data(out, data, title, q, v)
        };
        job.lattice = Some((lo, l));
        job.at_end = Some(&write_data);
        job.move_guard = Some(MoveGuard::new(alkane::SKIN, 3));
        let names = KremerGrest::coordinate_names(n);
        let state = job.initial_state(system.state(q, v), &names)?;
        say!(
            "zs: TraPPE-UA alkane liquid of {n} sites ({source}): {} bonds ({}), {} angles, {} dihedrals; \
             LJ mixed from CH3/CH2, cut at 14 Å and shifted, special_bonds lj 0 0 0; periodic box \
             {:.3} × {:.3} × {:.3} Å; real units (Å, kcal/mol, fs)",
            counts[0],
            if V::RIGID_BONDS { "held at 1.54 Å" } else { "harmonic" },
            counts[1],
            counts[2],
            l[0],
            l[1],
            l[2]
        );
        say!(
            "    set-up {:.2} s (neighbour list: cutoff 14 + skin {} Å; SIMD {}){}",
            setup.elapsed().as_secs_f64(),
            alkane::SKIN,
            system.simd().name(),
            super::order_note(&system)
        );
        run_with_neighbors(&job, &system, state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let path = args.data.as_deref().ok_or(CliError::Missing {
            system: "alkane",
            option: "--data FILE",
            why:
                "a LAMMPS data file of the liquid (zs run alkane ... --write-data FILE writes one)",
        })?;
        let (system, q, v, data) = read::<V>(path)?;
        let names = KremerGrest::coordinate_names(data.len());
        eval_from_data(args, &system, q, v, &names)
    }
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse, start, Problem, Sites, Units};
        let path = args.data.as_deref().ok_or(CliError::Missing {
            system: self.name(),
            option: "--data FILE",
            why:
                "a LAMMPS data file of the liquid (zs run alkane ... --write-data FILE writes one)",
        })?;
        if args.omega.is_some() && !V::RIGID_BONDS {
            return Err(CliError::does_not_apply(
                "--omega",
                "zs nma alkane",
                Some("its bonds are flexible; alkane-rigid holds them by the penalty ½ω²|g|²"),
            ));
        }
        let (system, q, _, data) = read::<V>(path)?;
        let names = KremerGrest::coordinate_names(data.len());
        let q = start(args, &names, q)?;
        let sites = Some(Sites {
            symbols: symbols(&data).iter().map(str::to_string).collect(),
            lattice: Some((data.lo, data.box_lengths())),
        });
        let about = format!(
            "TraPPE-UA alkane liquid of {} sites from {}, periodic box (LJ cut at 14 Å, shifted)",
            data.len(),
            path.display()
        );
        if V::RIGID_BONDS {
            // The rigid model's bonds through the penalty (the alkane experiment's ω = 100:
            // a bond period of 8 fs; its modes scale as ω and are the penalty's).
            let omega = args.omega.unwrap_or(PENALTY_OMEGA);
            let penalized = system.penalized(omega);
            let about = format!("{about}; bonds held by the penalty ½ω²|g|², ω = {omega}");
            let units = Units::REAL_WAVENUMBER;
            return analyse(
                args,
                Problem {
                    model: &penalized,
                    q,
                    sites,
                    units,
                    about,
                },
            );
        }
        let units = Units::REAL_WAVENUMBER;
        analyse(
            args,
            Problem {
                model: &system,
                q,
                sites,
                units,
                about: format!("{about}; harmonic bonds"),
            },
        )
    }
}

/// `zs nma alkane-rigid`'s default penalty frequency (1/fs): the alkane experiment's.
#[cfg(feature = "faer")]
const PENALTY_OMEGA: f64 = 100.0;

/// A site's symbol: `CH3` for type 1, `CH2` for type 2 (TraPPE-UA's two).
fn symbols(data: &zs_runtime::lammps::DataFile) -> zs_runtime::Symbols {
    data.types
        .iter()
        .map(|&t| if t == 1 { "CH3" } else { "CH2" })
        .collect()
}
