//! `zs run <system>`: integrate a system from the paper's initial state, print a summary and
//! write the trajectory as CSV.

use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zs_runtime::driver::{self, RunSummary};
use zs_runtime::observers::{ConstraintObserver, EnergyObserver, FnObserver, Observer};
use zs_runtime::output::CsvRecorder;
use zs_runtime::{
    MechanicalSystem, Penalized, State, Stepper, VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified,
};

use super::{GravitySign, IntegratorName, RunArgs, SystemName};
use crate::double_pendulum::{self, DoublePendulum};

/// Run `zs run` with parsed arguments; `Err` is the one-line message to print.
pub fn run(args: &RunArgs) -> Result<(), String> {
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
