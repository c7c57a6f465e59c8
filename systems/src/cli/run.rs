//! `zs run <system>`: integrate a system from the paper's initial state, print a summary and
//! write the trajectory as CSV; optionally under guards, with checkpoints, or resumed from one.

use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zs_runtime::checkpoint::Resumable;
use zs_runtime::driver::{self, Checkpointing, RunSummary};
use zs_runtime::observers::{ConstraintObserver, EnergyObserver, FnObserver, Observer};
use zs_runtime::output::{incomplete_marker_of, CsvRecorder};
use zs_runtime::{
    Checkpoint, CheckpointError, ConstraintGuard, EnergyGuard, MechanicalSystem, Penalized, State,
    Stepper, VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified,
};

use super::{GravitySign, IntegratorName, RunArgs, SystemName};
use crate::double_pendulum::{self, DoublePendulum};

/// Run `zs run` with parsed arguments; `Err` is the one-line message to print.
pub fn run(args: &RunArgs) -> Result<(), String> {
    check_dir("output", &args.out)?;
    if let Some(ck) = &args.checkpoint {
        check_dir("checkpoint", ck)?;
    }
    if args.max_condition.is_some() && args.integrator == IntegratorName::Verlet {
        return Err(
            "--max-condition applies to the linearly implicit integrators zs and zss, not verlet"
                .into(),
        );
    }
    let resume = match &args.resume {
        Some(path) => Some(Checkpoint::read(path).map_err(|e| match e {
            CheckpointError::Io { source, .. } => {
                format!("cannot read the checkpoint {}: {source}", path.display())
            }
            e => format!("cannot resume from {}: {e}", path.display()),
        })?),
        None => None,
    };
    match args.system {
        SystemName::DoublePendulum => run_double_pendulum(args, resume.as_ref()),
    }
}

fn check_dir(what: &str, file: &Path) -> Result<(), String> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.is_dir() {
        Ok(())
    } else {
        Err(format!("{what} directory {} does not exist", dir.display()))
    }
}

/// The arguments that define the run, saved in every checkpoint (`cli.*`) and compared on
/// resume. The names are the options' names.
fn run_meta(args: &RunArgs, h: f64) -> Checkpoint {
    let mut cp = Checkpoint::new();
    let mut m = cp.scope_mut("cli");
    m.set_str("system", &format!("{:?}", args.system));
    m.set_str("integrator", &format!("{:?}", args.integrator));
    m.set_f64("h", h);
    m.set_f64("t-end", args.t_end);
    m.set_f64("omega", args.omega);
    m.set_f64("beta", args.beta);
    m.set_u64("every", args.every);
    m.set_str("gravity", &format!("{:?}", args.gravity));
    m.set_str("out", &args.out.display().to_string());
    m.set_f64s("max-energy-drift", args.max_energy_drift.as_slice());
    m.set_f64s("max-residual", args.max_residual.as_slice());
    m.set_f64s("max-condition", args.max_condition.as_slice());
    cp
}

/// `Err` naming the first argument that differs between this command line and the checkpoint.
fn check_same_run(now: &Checkpoint, saved: &Checkpoint, path: &Path) -> Result<(), String> {
    let human = |text: Option<String>| match text {
        None => "absent".to_string(),
        Some(t) => {
            let value = t.split_once(' ').map_or(t.as_str(), |(_, v)| v);
            let shown = value.split_once("# ").map_or(value, |(_, d)| d).trim();
            if shown.is_empty() {
                "unset".to_string()
            } else {
                shown.to_string()
            }
        }
    };
    for key in now.keys() {
        let (a, b) = (now.value_text(key), saved.value_text(key));
        if a != b {
            let name = key.strip_prefix("cli.").unwrap_or(key);
            return Err(format!(
                "cannot resume from {}: --{name} is {} here but {} in the checkpoint (give the interrupted run's arguments)",
                path.display(),
                human(a),
                human(b)
            ));
        }
    }
    Ok(())
}

fn run_double_pendulum(args: &RunArgs, resume: Option<&Checkpoint>) -> Result<(), String> {
    let system = match args.gravity {
        GravitySign::Physical => DoublePendulum::paper(),
        GravitySign::Printed => DoublePendulum::paper_printed_sign(),
    };
    let target = system.penalized(args.omega);
    let h = args.h.unwrap_or(match args.integrator {
        IntegratorName::Verlet => 0.1 / args.omega,
        _ => double_pendulum::H,
    });
    let meta = run_meta(args, h);
    if let (Some(saved), Some(path)) = (resume, &args.resume) {
        check_same_run(&meta, saved, path)?;
    }
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
    let run = Run {
        system: &system,
        target: &target,
        args,
        resume,
        meta,
    };
    match args.integrator {
        IntegratorName::Zs => {
            let mut s = ZhangSkeel::new(args.beta, h);
            if let Some(c) = args.max_condition {
                s = s.with_max_condition(c);
            }
            let summary = run.drive(&mut s, state)?;
            report_solves(s.stats().cholesky_solves, s.stats().lu_fallbacks);
            finish(summary, args)
        }
        IntegratorName::Zss => {
            let mut s = ZhangSkeelSimplified::new(args.beta, h);
            if let Some(c) = args.max_condition {
                s = s.with_max_condition(c);
            }
            let summary = run.drive(&mut s, state)?;
            report_solves(s.stats().cholesky_solves, s.stats().lu_fallbacks);
            finish(summary, args)
        }
        IntegratorName::Verlet => {
            let mut s = VelocityVerlet::new(h);
            let summary = run.drive(&mut s, state)?;
            finish(summary, args)
        }
    }
}

type Target<'a> = Penalized<'a, DoublePendulum, 4, 2>;

/// One `zs run double-pendulum` invocation.
struct Run<'t, 'a> {
    system: &'t DoublePendulum,
    target: &'t Target<'t>,
    args: &'a RunArgs,
    resume: Option<&'a Checkpoint>,
    meta: Checkpoint,
}

impl<'t> Run<'t, '_> {
    /// Run `stepper` to `args.t_end` (or resume it) with energy, constraint, CSV, guard and
    /// progress observers, and print the summary table.
    fn drive<S: Stepper<Target<'t>, [f64; 4]> + Resumable>(
        &self,
        stepper: &mut S,
        mut state: State<4>,
    ) -> Result<RunSummary<[f64; 4]>, String> {
        let (system, target, args) = (self.system, self.target, self.args);
        let planned = driver::planned_steps(state.t, args.t_end, stepper.h())
            .ok_or_else(|| format!("h = {} cannot reach t = {}", stepper.h(), args.t_end))?;
        let mut energy = EnergyObserver::new();
        let mut residual = ConstraintObserver::new(system);
        let csv = match self.resume {
            None => CsvRecorder::create(&args.out, args.every)
                .map_err(|e| format!("cannot create {}.tmp: {e}", args.out.display()))?,
            Some(_) => CsvRecorder::reopen(&args.out, args.every).map_err(|e| {
                format!(
                    "cannot resume: the interrupted run's {}.tmp cannot be opened: {e}{}",
                    args.out.display(),
                    if args.out.exists() {
                        " (the run it belongs to seems to have completed)"
                    } else {
                        ""
                    }
                )
            })?,
        };
        let mut csv = csv
            .with_names(["x1", "y1", "x2", "y2"])
            .with_energy()
            .with_constraints(system);
        let mut energy_guard = args.max_energy_drift.map(EnergyGuard::new);
        let mut residual_guard = args.max_residual.map(|r| ConstraintGuard::new(system, r));
        let first = match self.resume {
            Some(cp) => cp.u64("run.done").unwrap_or(0),
            None => 0,
        };
        let progress = if args.quiet || planned < 20_000 {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::with_draw_target(Some(planned), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}")
                    .expect("valid progress template"),
            );
            bar.set_position(first);
            bar
        };
        let mut count = first;
        let mut ticker = FnObserver(|_: &Target<'t>, _: &State<4>| {
            count += 1;
            if count % 4096 == 0 {
                progress.set_position(count);
            }
        });
        let checkpointing = args
            .checkpoint
            .as_ref()
            .map(|p| Checkpointing::new(p, args.checkpoint_every).with_meta(self.meta.clone()));
        let summary = {
            // The same observers in the same order for a fresh and a resumed run (the
            // checkpoint stores them by position; the guards are part of the compared
            // arguments).
            let mut observers: Vec<&mut dyn Observer<Target<'t>, [f64; 4]>> =
                vec![&mut energy, &mut residual, &mut csv];
            if let Some(g) = energy_guard.as_mut() {
                observers.push(g);
            }
            if let Some(g) = residual_guard.as_mut() {
                observers.push(g);
            }
            observers.push(&mut ticker);
            match (self.resume, &checkpointing) {
                (Some(cp), c) => {
                    driver::resume(stepper, target, &mut state, cp, &mut observers, c.as_ref())
                        .map_err(|e| {
                            let path = args.resume.as_deref().unwrap_or(Path::new("?"));
                            format!("cannot resume from {}: {e}", path.display())
                        })?
                }
                (None, Some(c)) => driver::run_checkpointed(
                    stepper,
                    target,
                    &mut state,
                    args.t_end,
                    &mut observers,
                    c,
                ),
                (None, None) => {
                    driver::run(stepper, target, &mut state, args.t_end, &mut observers)
                }
            }
        };
        progress.finish_and_clear();

        let rows = csv.rows();
        println!();
        if summary.resumed_at > 0 {
            println!(
                "  resumed at step {:>8}   from {}",
                summary.resumed_at,
                args.resume.as_deref().unwrap_or(Path::new("?")).display()
            );
        }
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
        if let Some(c) = &checkpointing {
            println!(
                "  checkpoints      {:>14}   {} (every {} steps)",
                summary.checkpoints,
                c.path.display(),
                c.every
            );
        }
        if summary.output_error.is_none() {
            println!("  trajectory       {} ({rows} rows)", args.out.display());
        }
        Ok(summary)
    }
}

fn report_solves(cholesky: u64, lu: u64) {
    println!("  linear solves    {cholesky:>14} Cholesky, {lu} pivoted-LU fallbacks (M + βh²H indefinite)");
}

fn finish(summary: RunSummary<[f64; 4]>, args: &RunArgs) -> Result<(), String> {
    if let Some(e) = summary.output_error {
        return Err(format!("writing the output failed: {e}"));
    }
    match summary.failure() {
        None => Ok(()),
        Some(f) => Err(format!(
            "the run stopped early: {}; {} holds the trajectory up to the last good step (step {}, t = {}) and {} says so",
            f.error,
            args.out.display(),
            f.steps,
            f.last_good.t,
            incomplete_marker_of(&args.out).display()
        )),
    }
}
