//! `water-box`: SPC/E water in a periodic box with its long-range electrostatics (an Ewald
//! sum), read from a LAMMPS data file (`--data`: LAMMPS's `examples/rdf-adf/data.spce`).
//! `zs eval` gives the potential and its gradient; stepping it (the long-range term inside a
//! step, rigid water by SETTLE) is not built yet.

use std::path::{Path, PathBuf};

use zs_runtime::lammps::DataFile;

use super::{state_file, table_of, Accepts, CliSystem};
use crate::cli::error::CliError;
use crate::cli::job::Job;
use crate::cli::{positive_f64, EvalArgs, IntegratorName, RunArgs};
use crate::kremer_grest::KremerGrest;
use crate::water_box::{self, WaterBox};

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
            .value_parser(["ewald", "pme"])
            .default_value("ewald")
            .help("Reciprocal-space method (water-box): ewald, the plain Ewald sum; pme (smooth particle-mesh Ewald) is not built yet"),
        Arg::new("ewald-tolerance")
            .long("ewald-tolerance")
            .value_name("D")
            .value_parser(clap::value_parser!(f64))
            .allow_negative_numbers(true)
            .default_value("5e-4")
            .help("Relative accuracy of the Ewald sum, in (0, 1) (water-box; OpenMM's ewaldErrorTolerance, LAMMPS's kspace δ): α from the cutoff, the reciprocal vectors from α"),
    ]
}

impl CliSystem for WaterBoxCli {
    fn name(&self) -> &'static str {
        "water-box"
    }
    fn about(&self) -> &'static str {
        "SPC/E water in a periodic box with Ewald electrostatics (LAMMPS real units: Å, kcal/mol, fs); needs --data FILE, a LAMMPS data file (atom_style full); zs eval only for now"
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            data: true,
            ..Accepts::default()
        }
    }
    fn options(&self) -> Vec<clap::Arg> {
        electrostatics()
    }
    fn eval_options(&self) -> Vec<clap::Arg> {
        electrostatics()
    }
    fn omega(&self) -> f64 {
        0.0
    }
    fn defaults(&self, _method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        // LAMMPS's SPC/E benchmark: 2 fs.
        (2.0, 200.0, 0.25)
    }
    fn run(&self, _args: &RunArgs, _job: Job<'_>) -> Result<(), CliError> {
        Err(CliError::system(
            "water-box",
            "zs run water-box is not built yet: the long-range term does not enter a step (zs eval water-box gives the potential and its gradient)",
        ))
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let path = data_path(&args.data)?;
        let options = &args.options;
        if options.get::<String>("kspace").as_deref() == Some("pme") {
            return Err(CliError::system(
                "water-box",
                "--kspace pme is not built yet; --kspace ewald is",
            ));
        }
        let rc = options.get::<f64>("rc").unwrap_or(water_box::RC);
        let tolerance = options
            .get::<f64>("ewald-tolerance")
            .unwrap_or(water_box::TOLERANCE);
        let data = DataFile::read(path)?;
        let mut water = WaterBox::from_data(&data, rc, tolerance)
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
