//! `kremer-grest`: the FENE bead-spring melt of LAMMPS's `in.chain`, read from a LAMMPS data
//! file (`--data`), in its periodic box with the pair cutoff's neighbour list; `--write-data`
//! writes the final state back in the same format. Unconstrained; its pair terms follow the
//! neighbour list, and so does the pattern of the full Hessian (Z&S, Newmark).

use std::path::{Path, PathBuf};
use std::time::Instant;

use zs_runtime::assembly::Assembled;
use zs_runtime::lammps::DataFile;
use zs_runtime::{MoveGuard, Symbols};

use super::{eval_from_data, run_with_neighbors, write_final_data, Accepts, CliSystem};
use crate::cli::error::CliError;
use crate::cli::job::{CoordinateNames, Job};
use crate::cli::{EvalArgs, IntegratorName, RunArgs};
use crate::kremer_grest::{self, KremerGrest};

pub(super) struct KremerGrestCli;

/// `--data`, which this system needs.
fn data_path(data: &Option<PathBuf>) -> Result<&Path, CliError> {
    data.as_deref().ok_or(CliError::Missing {
        system: "kremer-grest",
        option: "--data FILE",
        why: "a LAMMPS data file of the melt (LAMMPS's own: \
              /usr/share/lammps/examples/COUPLE/multiple/data.chain, Debian package lammps-examples)",
    })
}

/// A data file, the melt it describes, its positions and velocities.
type Loaded = (DataFile, Assembled<KremerGrest, 3>, Vec<f64>, Vec<f64>);

/// The file and the system it describes, positions and velocities.
fn load(path: &Path) -> Result<Loaded, CliError> {
    let data = DataFile::read(path)?;
    let (system, q, v) = KremerGrest::lammps_chain()
        .from_data(&data)
        .map_err(|source| CliError::Melt {
            path: path.to_path_buf(),
            source,
        })?;
    Ok((data, system, q, v))
}

impl CliSystem for KremerGrestCli {
    fn name(&self) -> &'static str {
        "kremer-grest"
    }
    fn about(&self) -> &'static str {
        "FENE bead-spring polymer melt of LAMMPS's in.chain benchmark (LJ units; periodic box, pair cutoff 1.12 with a neighbour list); needs --data FILE, a LAMMPS data file"
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            constraints: Err("it has no constraints (its FENE bonds are flexible; zss-stiff puts them in its solve as the stiff part)"),
            threads: true,
            data: true,
            stiff_split: true,
            xyz: true,
            ..Accepts::default()
        }
    }
    fn omega(&self) -> f64 {
        0.0
    }
    fn defaults(&self, _method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        // LAMMPS's `timestep 0.012`, `run 500`.
        (kremer_grest::H, 500.0 * kremer_grest::H, 0.25)
    }
    fn default_integrator(&self) -> IntegratorName {
        IntegratorName::Verlet
    }
    fn default_every(&self, steps: u64) -> u64 {
        steps
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let path = data_path(&args.data)?;
        let setup = Instant::now();
        let (data, system, q, v) = load(path)?;
        let (n, bonds, lo, l) = (data.len(), data.bonds.len(), data.lo, data.box_lengths());
        // The file is held through the run only to be written back at its end (a million
        // beads' file is 100 bytes a bead).
        let kept = args.write_data.as_ref().map(|_| data);
        let write_data = |q: &[f64], v: &[f64]| -> Result<(), CliError> {
            let (Some(out), Some(data)) = (&args.write_data, &kept) else {
                return Ok(());
            };
            let title = format!(
                "LAMMPS data file written by zs (kremer-grest, from {})",
                path.display()
            );
            write_final_data(out, data, title, q, v)
        };
        let mut job = job.with_xyz(core::iter::repeat_n("C", n).collect::<Symbols>());
        job.lattice = Some((lo, l));
        job.at_end = Some(&write_data);
        job.move_guard = Some(MoveGuard::new(kremer_grest::SKIN, 3));
        // `x1, y1, z1, …`, counted (`KremerGrest::coordinate_names`, not made).
        let names = CoordinateNames::Xyz { bodies: n };
        let state = job.initial_state_of(system.state(q, v), &names)?;
        say!(
            "zs: Kremer–Grest melt of {n} beads and {bonds} FENE bonds from {} (LAMMPS in.chain: K = 30, R0 = 1.5; \
             LJ cut at 1.12, shifted; special_bonds fene), periodic box {} × {} × {}, LJ units",
            path.display(),
            l[0],
            l[1],
            l[2]
        );
        say!(
            "    set-up {:.2} s (neighbour list: cutoff 1.12 + skin {}, rebuilt when a bead moved more than half the skin; SIMD {}){}",
            setup.elapsed().as_secs_f64(),
            kremer_grest::SKIN,
            system.simd().name(),
            super::order_note(&system)
        );
        run_with_neighbors(&job, &system, state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let (data, system, q, v) = load(data_path(&args.data)?)?;
        let names = KremerGrest::coordinate_names(data.len());
        eval_from_data(args, &system, q, v, &names)
    }
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse, start, Problem, Sites, Units};
        if args.omega.is_some() {
            return Err(CliError::does_not_apply(
                "--omega",
                "zs nma kremer-grest",
                Some("it has no constraints"),
            ));
        }
        let path = data_path(&args.data)?;
        let (data, system, q, _) = load(path)?;
        let n = data.len();
        let q = start(args, &KremerGrest::coordinate_names(n), q)?;
        let about = format!(
            "Kremer–Grest melt of {n} beads from {} (FENE K = 30, R0 = 1.5; LJ cut at 1.12, shifted), periodic box, LJ units",
            path.display()
        );
        let sites = Some(Sites {
            symbols: vec!["C".to_string(); n],
            lattice: Some((data.lo, data.box_lengths())),
        });
        let units = Units::ANGULAR;
        analyse(
            args,
            Problem {
                model: &system,
                q,
                sites,
                units,
                about,
            },
        )
    }
}
