//! The `zs` command line: argument parsing and dispatch (`run` in [`run`], `eval` in [`eval`],
//! `reproduce` in [`reproduce`]).
//!
//! ```text
//! zs run double-pendulum|chain|dna|water|rigid-body [--integrator NAME] [--h H] [--t-end T] [--omega W]
//!        [--beta B] [--out FILE] [--every K] [--init FILE] [--n N] [--seed S]
//!        [--gamma G --kt KT] [--gravity physical|printed] [--b-mu X] [--threads P]
//!        [--max-energy-drift D] [--max-residual R] [--max-condition C]
//!        [--checkpoint FILE [--checkpoint-every K]] [--resume FILE]
//! zs eval double-pendulum|chain|dna|water|rigid-body --in FILE [--n N] [--omega W] [--out FILE]
//! zs reproduce <experiment> [--out-dir DIR]
//! ```
//!
//! `run` integrates a system (the penalized `V + ½ω²|g|²` for the penalty
//! methods, the constrained system for `shake`/`rattle`) from the paper's initial state or the
//! last row of `--init FILE`, shows progress on long runs, prints a summary and writes the
//! trajectory as CSV (written to `FILE.tmp`, renamed when complete; a run stopped by a failed
//! step keeps its rows up to the last good state and is marked by `FILE.incomplete`, see
//! [`zs_runtime::output`]). `eval` writes the potential and its gradient at every row of a
//! state file. State files: [`state_file`].
//!
//! Errors: every bad argument and every failure is reported as **one line** on stderr,
//! `zs: <message>`, with a non-zero exit status: 2 for a command line clap rejects (unknown
//! subcommand, system, integrator or option, a value that is not a number or out of range), 1
//! for a run that cannot start or that fails (an option that does not apply to the system, an
//! unreadable state file or checkpoint, a failed step). Missing output directories are created.
//! `--help` and `--version` print to stdout and exit 0.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Parser, Subcommand, ValueEnum};

/// `println!` for what a run says: to stdout, or to the buffer of a replica running beside
/// others (`zs ensemble`, `zs temper`: [`cli::output`](crate::cli::output)), so that replicas
/// side by side do not interleave their lines. A system's description prints with it.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::output::line(format_args!($($arg)*))
    };
}

pub mod ensemble;
pub mod error;
pub mod eval;
mod job;
#[cfg(feature = "faer")]
pub mod nma;
pub mod output;
mod ranks;
pub mod reproduce;
pub mod run;
pub mod state_file;
pub mod system;
pub mod systems;
pub mod temper;

pub use error::CliError;
pub use job::{AtEnd, Column, CoordinateNames, Job, MakeWatch, Profile, Watch};
pub use system::{builtin, Accepts, CliSystem, Count};
pub use systems::{DescriptionError, SystemArg, SystemOptions, Systems};

impl EvalArgs {
    /// `--in`, which every system but kremer-grest needs.
    ///
    /// # Errors
    /// When it is missing.
    pub fn input(&self) -> Result<&std::path::Path, CliError> {
        self.input.as_deref().ok_or(CliError::Missing {
            system: self.system.name(),
            option: "--in FILE",
            why: "the state file whose rows to evaluate",
        })
    }
}

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
    Run(Box<RunArgs>),
    /// Evaluate the potential and its gradient at every state of a CSV file.
    Eval(EvalArgs),
    /// Reproduce one of the papers' experiments: CSV, SVG figure and a table of measurements.
    Reproduce(reproduce::ReproduceArgs),
    /// Normal modes at a state: eigenvalues of M^-1/2 H M^-1/2 from the exact Hessian, as CSV.
    Nma(NmaArgs),
    /// Replica exchange: one Langevin replica per temperature, Metropolis swaps of neighbours.
    Temper(Box<temper::TemperArgs>),
    /// An ensemble: the same run for R seeds, one CSV each and a summary across them.
    Ensemble(Box<ensemble::EnsembleArgs>),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntegratorName {
    /// Zhang & Skeel (Integrator 1, eq. 3): symplectic, linearly implicit.
    Zs,
    /// Simplified Zhang & Skeel (Integrator 4, eq. 18): no third-derivative term.
    Zss,
    /// Z&Ss for stiff systems (Integrator 5, eq. 19): only the penalty's Hessian in the solve.
    ZssStiff,
    /// Velocity Verlet (explicit; needs h·ω < 2).
    Verlet,
    /// Newmark, γ = ½ (Integrator 2, eq. 12), Newton to a tolerance.
    Newmark,
    /// One-step (linearly implicit) Newmark: exactly one Newton step (Fig. 1 row 5).
    Newmark1,
    /// Push-forward Newmark (Integrator 3, eq. 14).
    Pushforward,
    /// SHAKE (Fernández-Pendás) on the constrained system: Lagrange multipliers, no penalty.
    Shake,
    /// RATTLE (Fernández-Pendás): SHAKE with velocities projected onto the tangent space.
    Rattle,
    /// SETTLE (Miyamoto & Kollman 1992): RATTLE for rigid three-site water, each molecule in
    /// closed form (water-box).
    Settle,
    /// Rigid body only: the Hamilton–Pontryagin / Cayley variational Euler on SO(3) (eq. 34),
    /// the paper's Lie-group comparison and benchmark.
    LieEuler,
}

impl IntegratorName {
    /// The command-line spelling (`zss-stiff`).
    pub fn clap_name(self) -> String {
        self.to_possible_value()
            .map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }
    /// True for the methods that integrate the penalized potential (all but SHAKE, RATTLE).
    pub fn is_penalty_method(self) -> bool {
        !matches!(
            self,
            IntegratorName::Shake
                | IntegratorName::Rattle
                | IntegratorName::Settle
                | IntegratorName::LieEuler
        )
    }
    /// True for the linearly implicit methods (a shifted solve each step).
    pub fn solves(self) -> bool {
        !matches!(
            self,
            IntegratorName::Verlet
                | IntegratorName::Shake
                | IntegratorName::Rattle
                | IntegratorName::Settle
                | IntegratorName::LieEuler
        )
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GravitySign {
    /// V = +g(y1 + y2): gravity pointing down (the sign Fig. 1 needs).
    Physical,
    /// V = -g y1 - g y2 as printed in the paper (gravity pointing up; diverges with Z&S).
    Printed,
}

/// The minimiser of `--minimize`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinimizerName {
    /// L-BFGS (m = 10, backtracking line search); stops at RMS force ≤ `--minimize-tol`.
    Lbfgs,
    /// FIRE (damped dynamics); stops at max force ≤ `--minimize-tol`.
    Fire,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// System to integrate.
    pub system: SystemArg,
    /// Integrator (default: zs; verlet for kremer-grest).
    #[arg(long, value_enum)]
    pub integrator: Option<IntegratorName>,
    /// Step size h (default: the paper's for the system and method, e.g. 0.1 and 0.1/ω for the
    /// double pendulum's zs and verlet, 0.05 for the chain, 2 and 0.2 for the DNA's zs and
    /// verlet).
    #[arg(long, value_parser = positive_f64, allow_negative_numbers = true)]
    pub h: Option<f64>,
    /// Final time T (default: 50 double pendulum, 100 chain, 500 DNA, 100 water and rigid body).
    #[arg(long = "t-end", value_parser = positive_f64, allow_negative_numbers = true)]
    pub t_end: Option<f64>,
    /// Penalty frequency ω of V + ½ω²|g|² (default 20; constrained systems only).
    #[arg(long, value_parser = positive_f64, allow_negative_numbers = true)]
    pub omega: Option<f64>,
    /// Z&S / Newmark parameter β (default: 0.4, 0.3 for the DNA, 0.2 for the rigid body — the
    /// paper's own scheme, eq. 37 with its β = 0.4, is generic Z&S with β = 0.2 since M = ½I;
    /// unconditionally linearly stable for β ≥ 1/4).
    #[arg(long, value_parser = nonnegative_f64, allow_negative_numbers = true)]
    pub beta: Option<f64>,
    /// Output CSV file (default: the system name with .csv; a missing directory is created).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Record every k-th step (the initial state is always recorded; default 1, for
    /// kremer-grest the first and last states only).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub every: Option<u64>,
    /// Start from a LAMMPS data file (kremer-grest): box, beads, bonds, velocities.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// At the end of the run, write the final state as a LAMMPS data file (kremer-grest):
    /// positions wrapped with image flags, velocities, bonds; LAMMPS's `read_data` reads it.
    #[arg(long = "write-data", value_name = "FILE")]
    pub write_data: Option<PathBuf>,
    /// Start from the last row of this state file (a CSV written by `zs run --out`: t, the
    /// coordinates, the velocities) instead of the paper's initial state.
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// Number of pendula (chain, default 10), base pairs (dna, default 200) or molecules (water,
    /// default 7).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub n: Option<u64>,
    /// Seed of the random numbers: the DNA's initial angles and the Langevin noise (default 0).
    #[arg(long, value_parser = seed_u64, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Langevin friction γ: wrap the integrator in the Geometric Langevin Algorithm
    /// (eq. 27; needs --kt).
    #[arg(long, value_parser = nonnegative_f64, allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// Langevin temperature kT (needs --gamma).
    #[arg(long, value_parser = nonnegative_f64, allow_negative_numbers = true)]
    pub kt: Option<f64>,
    /// Threads evaluating the terms of an assembled system (chain, dna, water; default: rayon's,
    /// one per core). The results are the same bits whatever the number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub threads: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Guard: stop (exit 1, trajectory kept up to the last good step) when the energy drifts by
    /// more than D, |E - E0| > D.
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
    /// The options the system declares ([`CliSystem::options`]).
    #[arg(skip)]
    pub options: SystemOptions,
}

/// Arguments of `zs eval`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// System whose potential to evaluate.
    pub system: SystemArg,
    /// State file: a CSV with a header, t then the coordinates in the system's order (further
    /// columns — velocities, outputs — are ignored).
    #[arg(long = "in", value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// A LAMMPS data file (kremer-grest): the system; without --in, its configuration is the
    /// one evaluated.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Number of pendula (chain, default 10), base pairs (dna, default 200) or molecules (water,
    /// default 7).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub n: Option<u64>,
    /// Evaluate the penalized V + ½ω²|g|² (constrained systems).
    #[arg(long, value_parser = positive_f64, allow_negative_numbers = true)]
    pub omega: Option<f64>,
    /// Output CSV (default: standard output; a missing directory is created).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The options the system declares for `zs eval` ([`CliSystem::eval_options`]).
    #[arg(skip)]
    pub options: SystemOptions,
}

/// Arguments of `zs nma`.
#[derive(clap::Args, Debug)]
pub struct NmaArgs {
    /// System to analyse (water, dna, chain, double-pendulum; alkane, alkane-rigid,
    /// kremer-grest with --data).
    pub system: SystemArg,
    /// Start from the last row of this state file (as `zs run --init`) instead of the
    /// system's own start.
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// A LAMMPS data file (condensed-phase systems).
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Number of pendula (chain), base pairs (dna) or molecules (water).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub n: Option<u64>,
    /// Penalty frequency ω of V + ½ω²|g|² (constrained systems; default the paper's).
    #[arg(long, value_parser = positive_f64, allow_negative_numbers = true)]
    pub omega: Option<f64>,
    /// Minimise the (penalized) potential first, by L-BFGS (to --minimize-tol).
    #[arg(long)]
    pub minimize: bool,
    /// RMS force at which --minimize stops (the system's units).
    #[arg(long, default_value_t = 1e-5, value_parser = positive_f64)]
    pub minimize_tol: f64,
    /// Seed of the system's own start (water's orientations, dna's noise; default 0).
    #[arg(long, value_parser = seed_u64)]
    pub seed: Option<u64>,
    /// Output CSV, one row per mode (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Extended-XYZ animation of the vibrational modes (VMD, OVITO, ASE).
    #[arg(long, value_name = "FILE.xyz")]
    pub modes: Option<PathBuf>,
    /// Only the K lowest modes, by shift-invert Lanczos on the sparse solver (large systems).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub lowest: Option<u64>,
    /// The shift σ of --lowest: the modes found are those nearest σ, the lowest when σ is below
    /// the lowest eigenvalue (negative; below the most negative curvature off a minimum).
    #[arg(long, default_value_t = -1e-3, allow_negative_numbers = true, value_parser = finite_f64)]
    pub shift: f64,
    /// The options the system declares for `zs nma` ([`CliSystem::nma_options`]).
    #[arg(skip)]
    pub options: SystemOptions,
}

/// A value parser for declared options (its error says what it takes).
pub fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(_) => Err(format!("must be a finite number > 0, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// A value parser for declared options (its error says what it takes).
pub fn seed_u64(s: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("must be an integer from 0 to {}, got {s}", u64::MAX))
}

/// A value parser for declared options (its error says what it takes).
pub fn finite_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("must be a finite number, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// A value parser for declared options (its error says what it takes).
pub fn at_least_one_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 1.0 => Ok(x),
        Ok(_) => Err(format!("must be a number >= 1, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// A value parser for declared options (its error says what it takes).
pub fn nonnegative_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(format!("must be a finite number >= 0, got {s}")),
        Err(e) => Err(format!("not a number: {e}")),
    }
}

/// Entry point of the `zs` binary: [`main_with`] the built-in systems ([`builtin`]).
pub fn main() -> ExitCode {
    main_with(builtin())
}

/// The `zs` program over `systems`: `run`, `eval`, `nma` (feature `faer`), `ensemble`,
/// `temper` and `reproduce`, with `zs`'s options, files, checkpoints, errors and exit codes, for
/// the systems a program describes ([`CliSystem`]). A crate of one's own writes
///
/// ```text
/// fn main() -> std::process::ExitCode {
///     zs_systems::cli::main_with(vec![Box::new(MySystem)])
/// }
/// ```
///
/// (`examples/own-system/` in the repository is the template). Descriptions that contradict
/// each other (a name used twice, an option clashing with one of `zs run`'s) are one line on
/// stderr and exit status 1, before any argument is read.
pub fn main_with(systems: Vec<Box<dyn CliSystem>>) -> ExitCode {
    large_allocations_mapped();
    main_from(systems, std::env::args_os())
}

/// glibc's allocator serves a block above a threshold by its own mapping, returned to the
/// system when freed and grown in place (`mremap`) — but raises the threshold, up to 32 MB, each
/// time such a block is freed, after which a large run's long vectors come from the heap,
/// where a grown vector leaves its old pages behind. A fixed threshold of 1 MiB keeps them
/// mapped, and a long run's peak memory stays what its first step needs (figures:
/// BENCHMARKS.md, "Memory per bead").
fn large_allocations_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            /// glibc: `int mallopt(int param, int value)`.
            fn mallopt(param: core::ffi::c_int, value: core::ffi::c_int) -> core::ffi::c_int;
        }
        /// `M_MMAP_THRESHOLD` of glibc's `malloc.h`.
        const M_MMAP_THRESHOLD: core::ffi::c_int = -3;
        // SAFETY: `mallopt` is glibc's, with this C signature; it changes a parameter of the
        // allocator under the allocator's own lock and touches no memory of ours, so calling
        // it at any time is sound (here, first in `main`). A refusal (0) leaves glibc's
        // default: only memory use, never behaviour, depends on it.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 1 << 20);
        }
    }
}

/// [`main_with`] on the command line `args` (its first word is the program's name).
pub fn main_from<I, T>(systems: Vec<Box<dyn CliSystem>>, args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match execute(systems, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("zs: {}", failure.message);
            ExitCode::from(failure.status)
        }
    }
}

/// Why a `zs` program failed: the one line it prints on stderr (after `zs: `) and its exit
/// status (2: a command line clap rejects; 1: descriptions that contradict each other, a run
/// that cannot start or that fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The message, one line.
    pub message: String,
    /// The exit status.
    pub status: u8,
}

/// [`main_from`] without printing its failure: what a test of a program's descriptions checks.
/// `--help` and `--version` print to stdout and succeed.
///
/// # Errors
/// The one-line message and exit status of a failure.
pub fn execute<I, T>(systems: Vec<Box<dyn CliSystem>>, args: I) -> Result<(), Failure>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let failed = |message: &str| Failure {
        message: one_line(message),
        status: 1,
    };
    let systems = Systems::new(systems).map_err(|e| failed(&e.to_string()))?;
    let cli = match parse(systems, args) {
        Ok(cli) => cli,
        Err(e) => {
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    Ok(())
                }
                _ => Err(Failure {
                    message: clap_one_line(&e),
                    status: u8::try_from(e.exit_code()).unwrap_or(2),
                }),
            }
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Eval(args) => eval::eval(&args),
        Command::Reproduce(args) => reproduce::reproduce(&args),
        Command::Temper(args) => temper::temper(&args),
        Command::Ensemble(args) => ensemble::ensemble(&args),
        #[cfg(feature = "faer")]
        Command::Nma(args) => nma::nma(&args),
        #[cfg(not(feature = "faer"))]
        Command::Nma(args) => Err(CliError::NeedsFeature {
            what: "zs nma diagonalises with faer's dense eigensolver".into(),
            feature: "faer",
            command: format!(
                "cargo run --release -p zs-systems --features faer --bin zs -- nma {}",
                args.system.name()
            ),
        }),
    };
    result.map_err(|e| failed(&e.to_string()))
}

/// The command line `args` of a program offering `systems`, with the values of the options
/// the systems declared handed to the subcommand's arguments.
fn parse<I, T>(systems: &'static Systems, args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = systems.command().try_get_matches_from(args)?;
    let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)?;
    if let Some((_, sub)) = matches.subcommand() {
        let options = SystemOptions::new(sub.clone());
        match &mut cli.command {
            Command::Run(a) => a.options = options,
            Command::Ensemble(a) => a.run.options = options,
            Command::Temper(a) => a.run.options = options,
            Command::Eval(a) => a.options = options,
            Command::Nma(a) => a.options = options,
            Command::Reproduce(_) => {}
        }
    }
    Ok(cli)
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
