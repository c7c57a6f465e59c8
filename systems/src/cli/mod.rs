//! The `zs` command line: argument parsing and dispatch (`run` in [`run`]).
//!
//! ```text
//! zs run double-pendulum [--integrator zs|zss|verlet] [--h H] [--t-end T] [--omega W]
//!                        [--beta B] [--out FILE] [--every K] [--gravity physical|printed]
//!                        [--max-energy-drift D] [--max-residual R] [--max-condition C]
//!                        [--checkpoint FILE [--checkpoint-every K]] [--resume FILE]
//! ```
//!
//! `run` integrates the penalized system `V + ½ω²|g|²` (Tao & Owhadi eq. 7) from the paper's
//! initial state, shows progress on long runs, prints a summary (steps/s, energy drift,
//! max ‖g‖) and writes the trajectory as CSV (written to `FILE.tmp`, renamed when complete;
//! a run stopped by a failed step keeps its rows up to the last good state and is marked by
//! `FILE.incomplete`, see [`zs_runtime::output`]).
//!
//! Errors: every bad argument and every failure is reported as **one line** on stderr,
//! `zs: <message>`, with a non-zero exit status: 2 for a command line clap rejects (unknown
//! subcommand, system, integrator or option, a value that is not a number or out of range), 1
//! for a run that cannot start or that fails (missing output directory, unreadable checkpoint,
//! failed step). `--help` and `--version` print to stdout and exit 0.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
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
    #[arg(long, value_parser = positive_f64, allow_negative_numbers = true)]
    pub h: Option<f64>,
    /// Final time T.
    #[arg(long = "t-end", default_value_t = 50.0, value_parser = positive_f64, allow_negative_numbers = true)]
    pub t_end: f64,
    /// Penalty frequency ω of V + ½ω²|g|².
    #[arg(long, default_value_t = double_pendulum::OMEGA, value_parser = positive_f64, allow_negative_numbers = true)]
    pub omega: f64,
    /// Z&S parameter β (unconditionally linearly stable for β ≥ 1/4).
    #[arg(long, default_value_t = double_pendulum::BETA, value_parser = nonnegative_f64, allow_negative_numbers = true)]
    pub beta: f64,
    /// Output CSV file.
    #[arg(long, default_value = "double-pendulum.csv")]
    pub out: PathBuf,
    /// Record every k-th step (the initial state is always recorded).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub every: u64,
    /// Sign of gravity in V.
    #[arg(long, value_enum, default_value = "physical")]
    pub gravity: GravitySign,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Guard: stop (exit 1, trajectory kept up to the last good step) when the penalized energy
    /// drifts by more than D, |E - E0| > D.
    #[arg(long = "max-energy-drift", value_name = "D", value_parser = nonnegative_f64, allow_negative_numbers = true)]
    pub max_energy_drift: Option<f64>,
    /// Guard: stop when the constraint residual exceeds R, ‖g(q)‖ > R.
    #[arg(long = "max-residual", value_name = "R", value_parser = nonnegative_f64, allow_negative_numbers = true)]
    pub max_residual: Option<f64>,
    /// zs/zss: stop when M + βh²H is near-singular, its estimated 1-norm condition number
    /// exceeding C (≥ 1). Default: only matrices singular to working precision stop the run.
    #[arg(long = "max-condition", value_name = "C", value_parser = at_least_one_f64, allow_negative_numbers = true)]
    pub max_condition: Option<f64>,
    /// Write a checkpoint to FILE every --checkpoint-every steps (atomically: FILE.tmp, then
    /// rename). It holds the exact state, the integrator's state, the observers' summaries and
    /// how much of OUT.tmp the run had written; an interrupted run (crash, kill, power loss)
    /// continues from it with --resume FILE.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Steps between two checkpoints.
    #[arg(long = "checkpoint-every", value_name = "K", default_value_t = 10_000, requires = "checkpoint", value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub checkpoint_every: u64,
    /// Continue the interrupted run saved in FILE. Give the same arguments as the interrupted
    /// run (they are checked against the checkpoint; add --checkpoint to keep checkpointing).
    /// The run continues from the checkpoint's step, appending to the kept OUT.tmp after
    /// cutting it back to the checkpoint, and ends exactly as an uninterrupted run would: the
    /// final OUT is byte-for-byte the same file.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
}

fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(_) => Err(format!("must be a finite number > 0, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

fn at_least_one_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 1.0 => Ok(x),
        Ok(_) => Err(format!("must be a number >= 1, got {s}")),
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Reproduce(args) => reproduce::reproduce(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("zs: {}", one_line(&message));
            ExitCode::FAILURE
        }
    }
}

/// Report a command-line error: help and version go to stdout with exit 0; everything else is
/// one line on stderr with clap's exit status (2).
fn parse_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("zs: {}", clap_one_line(e));
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
    }
}

/// `message` on one line (line breaks become "; ").
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A clap error on one line: clap's first line (without "error: "), completed with what the
/// following lines would have said (the missing arguments, the possible values, a suggestion).
pub fn clap_one_line(e: &clap::Error) -> String {
    let strings = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::StyledStr(s)) => vec![s.to_string()],
        Some(ContextValue::StyledStrs(v)) => v.iter().map(ToString::to_string).collect(),
        _ => Vec::new(),
    };
    let rendered = e.render().to_string();
    let first = rendered
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("invalid command line");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    match e.kind() {
        ErrorKind::MissingRequiredArgument => {
            msg = format!(
                "missing required argument {}",
                strings(ContextKind::InvalidArg).join(", ")
            );
        }
        ErrorKind::InvalidValue => {
            let valid = strings(ContextKind::ValidValue);
            if !valid.is_empty() {
                msg.push_str(&format!(" (possible values: {})", valid.join(", ")));
            }
        }
        ErrorKind::MissingSubcommand
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        | ErrorKind::InvalidSubcommand => {
            if e.kind() != ErrorKind::InvalidSubcommand {
                msg = "missing subcommand".into();
            }
            let names: Vec<String> = <Cli as clap::CommandFactory>::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            msg.push_str(&format!(
                " (subcommands: {}; see 'zs --help')",
                names.join(", ")
            ));
        }
        _ => {}
    }
    for kind in [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
        ContextKind::SuggestedSubcommand,
    ] {
        let s = strings(kind);
        if !s.is_empty() {
            msg.push_str(&format!(" (did you mean '{}'?)", s.join("', '")));
        }
    }
    one_line(&msg)
}
