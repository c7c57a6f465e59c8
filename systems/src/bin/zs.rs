//! `zs`: run the source papers' systems from the command line.
//!
//! ```text
//! zs run double-pendulum [--integrator zs|zss|verlet] [--h H] [--t-end T] [--omega W]
//!                        [--beta B] [--out FILE] [--every K] [--gravity physical|printed]
//! ```
//!
//! `run` integrates the penalized system `V + ½ω²|g|²` (Tao & Owhadi eq. 7) from the paper's
//! initial state, shows progress on long runs, prints a summary (steps/s, energy drift,
//! max ‖g‖) and writes the trajectory as CSV (written to `FILE.tmp`, renamed when complete).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zs_runtime::driver::{self, RunSummary};
use zs_runtime::observers::{ConstraintObserver, EnergyObserver, FnObserver, Observer};
use zs_runtime::output::CsvRecorder;
use zs_runtime::{
    MechanicalSystem, Penalized, State, Stepper, VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified,
};
use zs_systems::double_pendulum::{self, DoublePendulum};

#[derive(Parser, Debug)]
#[command(
    name = "zs",
    version,
    about = "Geometric integrators generated from plain-Rust potentials"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Integrate one of the papers' systems and write its trajectory as CSV.
    Run(RunArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SystemName {
    /// Planar double pendulum of Tao & Owhadi §4.1, penalized (4 DOF, 2 constraints).
    DoublePendulum,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum IntegratorName {
    /// Zhang & Skeel (Integrator 1, eq. 3): symplectic, linearly implicit.
    Zs,
    /// Simplified Zhang & Skeel (Integrator 4, eq. 18): no third-derivative term.
    Zss,
    /// Velocity Verlet (explicit; needs h·ω < 2).
    Verlet,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum GravitySign {
    /// V = +g(y1 + y2): gravity pointing down (the sign Fig. 1 needs).
    Physical,
    /// V = -g y1 - g y2 as printed in the paper (gravity pointing up; diverges with Z&S).
    Printed,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// System to integrate.
    #[arg(value_enum)]
    system: SystemName,
    /// Integrator.
    #[arg(long, value_enum, default_value = "zs")]
    integrator: IntegratorName,
    /// Step size h (default: 0.1 for zs/zss, 0.1/ω for verlet, as in the paper).
    #[arg(long, value_parser = positive_f64)]
    h: Option<f64>,
    /// Final time T.
    #[arg(long = "t-end", default_value_t = 50.0, value_parser = positive_f64)]
    t_end: f64,
    /// Penalty frequency ω of V + ½ω²|g|².
    #[arg(long, default_value_t = double_pendulum::OMEGA, value_parser = positive_f64)]
    omega: f64,
    /// Z&S parameter β (unconditionally linearly stable for β ≥ 1/4).
    #[arg(long, default_value_t = double_pendulum::BETA, value_parser = nonnegative_f64)]
    beta: f64,
    /// Output CSV file.
    #[arg(long, default_value = "double-pendulum.csv")]
    out: PathBuf,
    /// Record every k-th step (the initial state is always recorded).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
    /// Sign of gravity in V.
    #[arg(long, value_enum, default_value = "physical")]
    gravity: GravitySign,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("zs: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &RunArgs) -> Result<(), String> {
    check_output_dir(&args.out)?;
    match args.system {
        SystemName::DoublePendulum => run_double_pendulum(args),
    }
}

fn check_output_dir(out: &Path) -> Result<(), String> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.is_dir() {
        Ok(())
    } else {
        Err(format!("output directory {} does not exist", dir.display()))
    }
}

fn run_double_pendulum(args: &RunArgs) -> Result<(), String> {
    let system = match args.gravity {
        GravitySign::Physical => DoublePendulum::paper(),
        GravitySign::Printed => DoublePendulum::paper_printed_sign(),
    };
    let target = system.penalized(args.omega);
    let h = args.h.unwrap_or(match args.integrator {
        IntegratorName::Verlet => 0.1 / args.omega,
        _ => double_pendulum::H,
    });
    println!(
        "zs: double pendulum (Tao & Owhadi §4.1), gravity {:?} (V = {}(y1 + y2)), L1 = {}, L2 = {:.6}",
        args.gravity,
        if system.gravity < 0.0 { "+" } else { "-" },
        system.l1,
        system.l2
    );
    let beta_text = match args.integrator {
        IntegratorName::Verlet => String::new(),
        _ => format!(", β = {}", args.beta),
    };
    println!(
        "    integrator {:?}, h = {h}, T = {}, ω = {}{beta_text}, penalized potential V + ½ω²|g|²",
        args.integrator, args.t_end, args.omega
    );
    let state = DoublePendulum::initial_state();
    match args.integrator {
        IntegratorName::Zs => {
            let mut s = ZhangSkeel::new(args.beta, h);
            let summary = drive(&mut s, &system, &target, state, args)?;
            report_solves(s.stats().cholesky_solves, s.stats().lu_fallbacks);
            finish(summary)
        }
        IntegratorName::Zss => {
            let mut s = ZhangSkeelSimplified::new(args.beta, h);
            let summary = drive(&mut s, &system, &target, state, args)?;
            report_solves(s.stats().cholesky_solves, s.stats().lu_fallbacks);
            finish(summary)
        }
        IntegratorName::Verlet => {
            let mut s = VelocityVerlet::new(h);
            let summary = drive(&mut s, &system, &target, state, args)?;
            finish(summary)
        }
    }
}

type Target<'a> = Penalized<'a, DoublePendulum, 4, 2>;

/// Run `stepper` to `args.t_end` with energy, constraint, progress and CSV observers, and print
/// the summary table.
fn drive<'t, S: Stepper<Target<'t>, 4>>(
    stepper: &mut S,
    system: &'t DoublePendulum,
    target: &Target<'t>,
    mut state: State<4>,
    args: &RunArgs,
) -> Result<RunSummary<4>, String> {
    let planned = driver::planned_steps(state.t, args.t_end, stepper.h())
        .ok_or_else(|| format!("h = {} cannot reach t = {}", stepper.h(), args.t_end))?;
    let mut energy = EnergyObserver::new();
    let mut residual = ConstraintObserver::new(system);
    let mut csv = CsvRecorder::create(&args.out, args.every)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?
        .with_names(["x1", "y1", "x2", "y2"])
        .with_energy()
        .with_constraints(system);
    let progress = if args.quiet || planned < 20_000 {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::with_draw_target(Some(planned), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}")
                .expect("valid progress template"),
        );
        bar
    };
    let mut count = 0u64;
    let mut ticker = FnObserver(|_: &Target<'t>, _: &State<4>| {
        count += 1;
        if count % 4096 == 0 {
            progress.set_position(count);
        }
    });
    let summary = {
        let observers: &mut [&mut dyn Observer<Target<'t>, 4>] =
            &mut [&mut energy, &mut residual, &mut csv, &mut ticker];
        driver::run(stepper, target, &mut state, args.t_end, observers)
    };
    progress.finish_and_clear();

    let rows = csv.rows();
    println!();
    println!("  steps            {:>14}", summary.steps);
    println!(
        "  wall time        {:>14.3} s",
        summary.wall_time.as_secs_f64()
    );
    println!(
        "  steps/s          {:>14.0}   (observers and CSV output included)",
        summary.steps_per_second
    );
    println!(
        "  energy E0        {:>14.6e}   (penalized energy ½vᵀMv + V + ½ω²|g|²)",
        energy.initial_energy().unwrap_or(f64::NAN)
    );
    println!(
        "  energy drift     {:>14.3e}   max |E - E0|, final E - E0 = {:.3e}",
        energy.max_abs_drift(),
        energy.final_drift()
    );
    println!(
        "  max ‖g(q)‖       {:>14.3e}   final ‖g(q)‖ = {:.3e}",
        residual.max_residual(),
        residual.last_residual()
    );
    let q = summary.last_state.q;
    let fmt = |x: f64| {
        if x.abs() < 1e6 {
            format!("{x:.5}")
        } else {
            format!("{x:.3e}")
        }
    };
    println!(
        "  final state      t = {:.4}, q = ({}, {}, {}, {})",
        summary.last_state.t,
        fmt(q[0]),
        fmt(q[1]),
        fmt(q[2]),
        fmt(q[3])
    );
    if summary.output_error.is_none() {
        println!("  trajectory       {} ({rows} rows)", args.out.display());
    }
    Ok(summary)
}

fn report_solves(cholesky: u64, lu: u64) {
    println!("  linear solves    {cholesky:>14} Cholesky, {lu} pivoted-LU fallbacks (M + βh²H indefinite)");
}

fn finish(summary: RunSummary<4>) -> Result<(), String> {
    if let Some(e) = summary.output_error {
        return Err(format!("writing the trajectory failed: {e}"));
    }
    match summary.error {
        None => Ok(()),
        Some(e) => Err(format!(
            "the run stopped early: {e}; the trajectory up to the last good step (t = {}) was written",
            summary.last_state.t
        )),
    }
}
