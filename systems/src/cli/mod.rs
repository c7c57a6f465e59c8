//! The `zs` command line: argument parsing and dispatch (`run` in [`run`]).
//!
//! ```text
//! zs run double-pendulum [--integrator zs|zss|verlet] [--h H] [--t-end T] [--omega W]
//!                        [--beta B] [--out FILE] [--every K] [--gravity physical|printed]
//! ```
//!
//! `run` integrates the penalized system `V + ½ω²|g|²` (Tao & Owhadi eq. 7) from the paper's
//! initial state, shows progress on long runs, prints a summary (steps/s, energy drift,
//! max ‖g‖) and writes the trajectory as CSV (written to `FILE.tmp`, renamed when complete).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::double_pendulum;

pub mod reproduce;
pub mod run;

#[derive(Parser, Debug)]
#[command(
    name = "zs",
    version,
    about = "Geometric integrators generated from plain-Rust potentials"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Integrate one of the papers' systems and write its trajectory as CSV.
    Run(RunArgs),
    /// Reproduce one of the papers' experiments: CSV, SVG figure and a table of measurements.
    Reproduce(reproduce::ReproduceArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemName {
    /// Planar double pendulum of Tao & Owhadi §4.1, penalized (4 DOF, 2 constraints).
    DoublePendulum,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntegratorName {
    /// Zhang & Skeel (Integrator 1, eq. 3): symplectic, linearly implicit.
    Zs,
    /// Simplified Zhang & Skeel (Integrator 4, eq. 18): no third-derivative term.
    Zss,
    /// Velocity Verlet (explicit; needs h·ω < 2).
    Verlet,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GravitySign {
    /// V = +g(y1 + y2): gravity pointing down (the sign Fig. 1 needs).
    Physical,
    /// V = -g y1 - g y2 as printed in the paper (gravity pointing up; diverges with Z&S).
    Printed,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// System to integrate.
    #[arg(value_enum)]
    pub system: SystemName,
    /// Integrator.
    #[arg(long, value_enum, default_value = "zs")]
    pub integrator: IntegratorName,
    /// Step size h (default: 0.1 for zs/zss, 0.1/ω for verlet, as in the paper).
    #[arg(long, value_parser = positive_f64)]
    pub h: Option<f64>,
    /// Final time T.
    #[arg(long = "t-end", default_value_t = 50.0, value_parser = positive_f64)]
    pub t_end: f64,
    /// Penalty frequency ω of V + ½ω²|g|².
    #[arg(long, default_value_t = double_pendulum::OMEGA, value_parser = positive_f64)]
    pub omega: f64,
    /// Z&S parameter β (unconditionally linearly stable for β ≥ 1/4).
    #[arg(long, default_value_t = double_pendulum::BETA, value_parser = nonnegative_f64)]
    pub beta: f64,
    /// Output CSV file.
    #[arg(long, default_value = "double-pendulum.csv")]
    pub out: PathBuf,
    /// Record every k-th step (the initial state is always recorded).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub every: u64,
    /// Sign of gravity in V.
    #[arg(long, value_enum, default_value = "physical")]
    pub gravity: GravitySign,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(_) => Err(format!("must be a finite number > 0, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

fn nonnegative_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(format!("must be a finite number >= 0, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// Entry point of the `zs` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Reproduce(args) => reproduce::reproduce(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("zs: {message}");
            ExitCode::FAILURE
        }
    }
}
