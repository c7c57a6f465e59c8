//! `zs reproduce <experiment> [--out-dir DIR]`: run one of the papers' experiments (see
//! [`crate::experiments`]), print its tables and write its CSV and SVG files into `DIR`
//! (default: the current directory).

use std::path::PathBuf;

use super::error::CliError;

#[cfg(feature = "experiments")]
use crate::experiments::Experiment;

/// Which experiments `zs reproduce` runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExperimentChoice {
    /// Tao & Owhadi Fig. 1 and the run-time table (errors against a generalized-coordinate
    /// reference).
    DoublePendulum,
    /// Tao & Owhadi Fig. 2a: ω²‖g(q(T))‖ against ω.
    ConstraintScaling,
    /// Tao & Owhadi Fig. 2b: λ(t) from the penalized Z&S run vs SHAKE's multipliers.
    Multipliers,
    /// The impulse paper, Figs. 1–3: error vs macro step of the impulse family, stiff spring double
    /// pendulum.
    ImpulseConvergence,
    /// Tao & Owhadi §4.2, Fig. 3: chain of 10 pendula, Z&S vs SHAKE, and the run-time table.
    Chain,
    /// Tao & Owhadi §4.4, Fig. 8: DNA ring of 200 base pairs, Z&S vs Verlet, and the run-time
    /// table.
    Dna,
    /// Tao & Owhadi Fig. 6: energy and momenta of 7 rigid TIP3P waters, four integrators.
    WaterConservation,
    /// Tao & Owhadi Fig. 5: eq. 8 multipliers of the first oxygen's constraints vs SHAKE's, ω =
    /// 500.
    WaterMultipliers,
    /// Tao & Owhadi Fig. 4: O–O distance histograms of 7 waters under Langevin, Z&Ss-stiff vs
    /// SHAKE.
    WaterRdf,
    /// Tao & Owhadi Fig. 7: the same for 100 waters (minutes).
    #[value(name = "water-100")]
    Water100,
    /// Tao & Owhadi §4.5, Figs. 9–10: magnetized rigid body, penalized Z&S vs the Lie-group eq. 34.
    RigidBody,
    /// Patrick et al.: Runge–Kutta methods made variational vs projected (orders, long-time energy,
    /// cost).
    Variational,
    /// Beyond the papers: LAMMPS's Kremer–Grest melt under Langevin, Z&Ss-stiff (FENE bonds in
    /// the solve) against Verlet at growing steps: structure, pressure, time to result (needs
    /// `--data`, default LAMMPS's data.chain; minutes; not in `all`).
    KremerGrest,
    /// Beyond the papers: normal modes of 100 penalized TIP3P waters from the exact Hessian at
    /// growing ω — the intermolecular band's convergence, the penalty band's scaling.
    WaterModes,
    /// Beyond the papers: liquid butane (TraPPE-UA) under Langevin — Verlet, RATTLE (bonds
    /// fixed) and Z&Ss-stiff at growing steps: torsions, end-to-end distance, energy error, beside
    /// LAMMPS when `--lammps` finds it (minutes; not in `all`).
    Alkane,
    /// Beyond the papers: 100 ps of rigid SPC/E water at 300 K (SETTLE under Langevin, PME) —
    /// the O–O radial distribution against LAMMPS's reference for the same box, the potential
    /// energy per molecule against SPC/E's published value (`--data`, default LAMMPS's
    /// data.spce; minutes; not in `all`).
    WaterBox,
    /// Beyond the papers: that box held rigid by SETTLE at 2 fs and by the penalty under
    /// Z&Ss-stiff at its longest stable step, time to the same statistics (`--data`; minutes;
    /// not in `all`).
    WaterStiff,
    /// All of the above but kremer-grest, alkane, water-box and water-stiff, one after another.
    All,
}

#[cfg(feature = "experiments")]
impl ExperimentChoice {
    /// The experiments this choice stands for.
    pub fn experiments(self) -> Vec<Experiment> {
        match self {
            ExperimentChoice::DoublePendulum => vec![Experiment::DoublePendulum],
            ExperimentChoice::ConstraintScaling => vec![Experiment::ConstraintScaling],
            ExperimentChoice::Multipliers => vec![Experiment::Multipliers],
            ExperimentChoice::ImpulseConvergence => vec![Experiment::ImpulseConvergence],
            ExperimentChoice::Chain => vec![Experiment::Chain],
            ExperimentChoice::Dna => vec![Experiment::Dna],
            ExperimentChoice::WaterConservation => vec![Experiment::WaterConservation],
            ExperimentChoice::WaterMultipliers => vec![Experiment::WaterMultipliers],
            ExperimentChoice::WaterRdf => vec![Experiment::WaterRdf],
            ExperimentChoice::Water100 => vec![Experiment::Water100],
            ExperimentChoice::RigidBody => vec![Experiment::RigidBody],
            ExperimentChoice::Variational => vec![Experiment::Variational],
            ExperimentChoice::KremerGrest => vec![Experiment::KremerGrest],
            ExperimentChoice::WaterModes => vec![Experiment::WaterModes],
            ExperimentChoice::Alkane => vec![Experiment::Alkane],
            ExperimentChoice::WaterBox => vec![Experiment::WaterBox],
            ExperimentChoice::WaterStiff => vec![Experiment::WaterStiff],
            ExperimentChoice::All => Experiment::ALL.to_vec(),
        }
    }
}

/// Arguments of `zs reproduce`.
#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {
    /// Experiment to reproduce.
    #[arg(value_enum)]
    pub experiment: ExperimentChoice,
    /// Directory for the CSV and SVG files (created when missing).
    #[arg(long = "out-dir", default_value = ".")]
    pub out_dir: PathBuf,
    /// The LAMMPS data file of `kremer-grest`, `water-box` and `water-stiff` (default: LAMMPS's
    /// /usr/share/lammps/examples/COUPLE/multiple/data.chain and
    /// /usr/share/lammps/examples/rdf-adf/data.spce, Debian package lammps-examples).
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// The LAMMPS binary that `alkane` runs beside zs on the same liquid (`none`: zs alone).
    #[arg(long, value_name = "BIN", default_value = "lmp")]
    pub lammps: PathBuf,
}

/// `zs reproduce` in a build without the `experiments` feature: the command that builds it.
///
/// # Errors
/// Always [`CliError::NeedsFeature`].
#[cfg(not(feature = "experiments"))]
pub fn reproduce(args: &ReproduceArgs) -> Result<(), CliError> {
    use clap::ValueEnum;
    let name = args
        .experiment
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    Err(CliError::NeedsFeature {
        what: "zs reproduce runs the papers' experiments".into(),
        feature: "experiments",
        command: format!(
            "cargo run --release -p zs-systems --features experiments --bin zs -- reproduce {name}"
        ),
    })
}

/// Run `zs reproduce` with parsed arguments.
///
/// # Errors
/// An output directory that cannot be created, a failed experiment.
#[cfg(feature = "experiments")]
pub fn reproduce(args: &ReproduceArgs) -> Result<(), CliError> {
    if !args.out_dir.is_dir() {
        std::fs::create_dir_all(&args.out_dir)
            .map_err(|e| CliError::io("create the output directory", &args.out_dir, e))?;
    }
    for (i, experiment) in args.experiment.experiments().into_iter().enumerate() {
        if i > 0 {
            println!();
        }
        let inputs = crate::experiments::Inputs {
            data: args.data.as_deref(),
            lammps: (args.lammps.as_os_str() != "none").then_some(args.lammps.as_path()),
        };
        let report = experiment.run_on(&args.out_dir, &inputs)?;
        print!("{report}");
    }
    Ok(())
}
