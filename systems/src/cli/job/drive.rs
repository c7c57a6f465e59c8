//! How `zs run` drives a stepper: the observers (energy, constraint residual, CSV, extended
//! XYZ, guards, progress), the driver call (fresh, checkpointed or resumed) and the summary it
//! prints.

use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zs_runtime::driver::{self, Checkpointing, RunSummary};
use zs_runtime::files::tmp_path_of;
use zs_runtime::observers::{EnergyObserver, FnObserver, Observer};
use zs_runtime::output::{incomplete_marker_of, CsvRecorder};
use zs_runtime::xyz::XyzRecorder;
use zs_runtime::{
    ConstrainedModel, ConstraintGuard, ConstraintObserver, ConstraintSpace, EnergyGuard, Model,
    StateOf, Vector,
};

use super::{CliStepper, CoordinateNames, Job, Watch};
use crate::cli::error::CliError;

/// A system's [`Watch`] as one of the run's observers.
struct Watching(Box<dyn Watch>);

impl<P: ?Sized, V: Vector> Observer<P, V> for Watching {
    fn check(&mut self, _: &P, state: &StateOf<V>) -> Result<(), zs_runtime::GuardViolation> {
        self.0.check(state.q.as_slice())
    }
    fn observe(&mut self, _: &P, state: &StateOf<V>) {
        self.0.observe(state.q.as_slice());
    }
}

impl Job<'_> {
    /// Run `stepper` on `target` to `t_end` (or resume it) with energy, constraint, CSV, guard
    /// and progress observers, and print the summary.
    pub(crate) fn drive<S, T, V, C>(
        &self,
        system: &S,
        target: &T,
        mut stepper: Box<dyn CliStepper<T, V> + '_>,
        mut state: StateOf<V>,
        names: CoordinateNames,
    ) -> Result<(), CliError>
    where
        S: ConstrainedModel<V, C> + Sync + ?Sized,
        T: Model<V> + ?Sized,
        V: ConstraintSpace<C>,
        C: Vector,
    {
        let (args, p) = (self.args, self.p);
        let out = &self.out;
        let planned =
            driver::planned_steps(state.t, p.t_end, stepper.h()).ok_or(CliError::Unreachable {
                h: stepper.h(),
                t_end: p.t_end,
            })?;
        let constrained = system.constraint_count() > 0;
        let mut energy = EnergyObserver::new();
        let mut residual = ConstraintObserver::new(system);
        let csv = match self.resume {
            None => CsvRecorder::create(out, p.every)
                .map_err(|e| CliError::io("create", tmp_path_of(out), e))?,
            Some(_) => {
                CsvRecorder::reopen(out, p.every).map_err(|source| CliError::ResumeOutput {
                    out: out.clone(),
                    completed: out.exists(),
                    source,
                })?
            }
        };
        let mut csv = run_columns(csv, names, system);
        let mut watching = self.watch.map(|make| Watching(make()));
        if let Some((name, f)) = watching.as_ref().and_then(|w| w.0.column()) {
            csv = csv.with_column(name, move |q: &V| f(q.as_slice()));
        }
        let xyz_path = out.with_extension("xyz");
        let mut xyz = match &self.xyz {
            None => None,
            Some(symbols) => Some(
                match self.resume {
                    None => XyzRecorder::create(&xyz_path, symbols.clone(), p.every),
                    Some(_) => XyzRecorder::reopen(&xyz_path, symbols.clone(), p.every),
                }
                .map(|x| match self.lattice {
                    Some((lo, sides)) => x.with_lattice(lo, sides),
                    None => x,
                })
                .map_err(|e| CliError::io("open", tmp_path_of(&xyz_path), e))?,
            ),
        };
        let mut energy_guard = args.max_energy_drift.map(EnergyGuard::new);
        let mut residual_guard = args.max_residual.map(|r| ConstraintGuard::new(system, r));
        let mut move_guard = self.move_guard.clone();
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
        let mut ticker = FnObserver(|_: &T, _: &StateOf<V>| {
            count += 1;
            if count % 4096 == 0 {
                progress.set_position(count);
            }
        });
        let checkpointing = args.checkpoint.as_ref().map(|path| {
            Checkpointing::new(path, args.checkpoint_every).with_meta(self.meta.clone())
        });
        let summary = {
            // The same observers in the same order for a fresh and a resumed run (the
            // checkpoint stores them by position; the guards are part of the compared
            // arguments).
            let mut observers: Vec<&mut dyn Observer<T, V>> =
                vec![&mut energy, &mut residual, &mut csv];
            if let Some(x) = xyz.as_mut() {
                observers.push(x);
            }
            if let Some(g) = energy_guard.as_mut() {
                observers.push(g);
            }
            if let Some(g) = residual_guard.as_mut() {
                observers.push(g);
            }
            if let Some(g) = move_guard.as_mut() {
                observers.push(g);
            }
            if let Some(w) = watching.as_mut() {
                observers.push(w);
            }
            observers.push(&mut ticker);
            let stepper = stepper.as_mut();
            match (self.resume, &checkpointing) {
                (Some(cp), c) => {
                    driver::resume(stepper, target, &mut state, cp, &mut observers, c.as_ref())
                        .map_err(|source| CliError::Resume {
                            path: args.resume.clone().unwrap_or_default(),
                            source,
                        })?
                }
                (None, Some(c)) => driver::run_checkpointed(
                    stepper,
                    target,
                    &mut state,
                    p.t_end,
                    &mut observers,
                    c,
                ),
                (None, None) => driver::run(stepper, target, &mut state, p.t_end, &mut observers),
            }
        };
        progress.finish_and_clear();

        let rows = csv.rows();
        say!("");
        if summary.resumed_at > 0 {
            say!(
                "  resumed at step {:>8}   from {}",
                summary.resumed_at,
                args.resume.as_deref().unwrap_or(Path::new("?")).display()
            );
        }
        say!("  steps            {:>14}", summary.steps);
        say!(
            "  wall time        {:>14.3} s",
            summary.wall_time.as_secs_f64()
        );
        say!(
            "  steps/s          {:>14.0}   (observers and CSV output included)",
            summary.steps_per_second
        );
        let stepping = summary.stepping_time.as_secs_f64();
        let taken = summary.steps - summary.resumed_at;
        if stepping > 0.0 && taken > 0 {
            say!(
                "  steps alone      {:>14.0}   steps/s of the steps themselves ({:.3} s)",
                taken as f64 / stepping,
                stepping
            );
        }
        let energy_name = if p.method.is_penalty_method() && constrained {
            "penalized energy ½vᵀMv + V + ½ω²|g|²"
        } else {
            "energy ½vᵀMv + V"
        };
        say!(
            "  energy E0        {:>14.6e}   ({energy_name})",
            energy.initial_energy().unwrap_or(f64::NAN)
        );
        say!(
            "  energy drift     {:>14.3e}   max |E - E0|, final E - E0 = {:.3e}",
            energy.max_abs_drift(),
            energy.final_drift()
        );
        if constrained {
            say!(
                "  max ‖g(q)‖       {:>14.3e}   final ‖g(q)‖ = {:.3e}",
                residual.max_residual(),
                residual.last_residual()
            );
        }
        if let Some(line) = watching.as_ref().and_then(|w| w.0.summary()) {
            say!("{line}");
        }
        if let Some((cholesky, fallbacks)) = stepper.solves() {
            say!(
                "  linear solves    {cholesky:>14} Cholesky, {fallbacks} fallbacks (M + βh²H indefinite: LDLᵀ or pivoted LU)"
            );
        }
        // The state in the user's order, whatever order the target holds it in: made once the
        // stepper's buffers are freed, in place of the state it copies.
        drop(stepper);
        let mut state = state;
        let mut user = V::default_zeros();
        for x in [&mut state.q, &mut state.v] {
            if target.in_user_order(x, &mut user) {
                std::mem::swap(x, &mut user);
            }
        }
        drop(user);
        let q = state.q.as_slice();
        let fmt = |x: f64| {
            if x.abs() < 1e6 {
                format!("{x:.5}")
            } else {
                format!("{x:.3e}")
            }
        };
        let shown: Vec<String> = q.iter().take(4).map(|&x| fmt(x)).collect();
        say!(
            "  final state      t = {:.4}, q = ({}{})",
            state.t,
            shown.join(", "),
            if q.len() > 4 { ", …" } else { "" }
        );
        if let Some(c) = &checkpointing {
            say!(
                "  checkpoints      {:>14}   {} (every {} steps)",
                summary.checkpoints,
                c.path.display(),
                c.every
            );
        }
        if summary.output_error.is_none() {
            say!("  trajectory       {} ({rows} rows)", out.display());
            if let Some(x) = &xyz {
                say!(
                    "  extended XYZ     {} ({} frames; VMD, OVITO, ASE)",
                    xyz_path.display(),
                    x.frames()
                );
            }
        }
        finish(summary, out)?;
        // The run's state is the summary's last one (no copy of a million beads' state).
        match self.at_end {
            Some(at_end) => at_end(state.q.as_slice(), state.v.as_slice()),
            None => Ok(()),
        }
    }
}

/// The run's result: the output error, or the failed step, or success.
fn finish<V: Vector>(summary: RunSummary<V>, out: &Path) -> Result<(), CliError> {
    if let Some(e) = summary.output_error {
        return Err(CliError::Output(e));
    }
    match summary.failure() {
        None => Ok(()),
        Some(f) => Err(CliError::Stopped {
            error: f.error,
            out: out.to_path_buf(),
            steps: f.steps,
            t: f.last_good.t,
            marker: incomplete_marker_of(out),
        }),
    }
}

/// The columns of a run's CSV: the coordinates' `names` (and velocities), the energy, and
/// `constraint_norm` when `system` has constraints.
pub(super) fn run_columns<'s, S, V, C>(
    csv: CsvRecorder<'s, V>,
    names: CoordinateNames,
    system: &'s S,
) -> CsvRecorder<'s, V>
where
    S: ConstrainedModel<V, C> + Sync + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
{
    let csv = match names {
        CoordinateNames::Xyz { bodies } => csv.with_xyz_names(bodies),
        CoordinateNames::Listed(names) => csv.with_names(names),
    }
    .with_energy();
    if system.constraint_count() > 0 {
        csv.with_constraints(system)
    } else {
        csv
    }
}
