//! How `zs temper` drives its replicas ([`zs_runtime::tempering`]): one replica per temperature
//! of the ladder, each the `--integrator` of `zs run` under GLA Langevin at its temperature
//! (friction `--gamma`, noise seed `--seed` + k), all from the same start; every
//! `--exchange-every` steps a round of Metropolis swaps between neighbour temperatures. Writes
//! `replica-k.csv` (the `run` format) per replica, `exchanges.csv` (one row per attempt),
//! `walks.csv` (each replica's temperature index after each round) and `acceptance.csv`; with
//! `--checkpoint NAME`, checkpoints between rounds ([`checkpoint`]).

mod checkpoint;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use zs_runtime::driver;
use zs_runtime::files::{tmp_path_of, write_atomic};
use zs_runtime::observers::Observer;
use zs_runtime::output::CsvRecorder;
use zs_runtime::tempering::{Exchanges, Tempering};
use zs_runtime::{
    Checkpoint, Clocked, ConstrainedModel, ConstraintSpace, Langevin, Model, Resumable, StateOf,
    Vector,
};

use checkpoint::Log;
pub use checkpoint::TemperCheckpoint;

use super::{resume::check_same_run, CliStepper, Job};
use crate::cli::error::CliError;
use crate::cli::ranks::{bits, Ranks};

/// What `zs temper` adds to a run: the ladder, how often to exchange, where to write, and the
/// processes that share the replicas.
pub(crate) struct TemperPlan<'a> {
    /// `kT` of each temperature, increasing.
    pub kt: Vec<f64>,
    /// Steps between two exchange rounds.
    pub every: u64,
    /// The output directory.
    pub dir: PathBuf,
    /// Langevin friction γ.
    pub gamma: f64,
    /// Replica k's noise seed is `seed + k`; the pairs' decisions are seeded by `seed`.
    pub seed: u64,
    /// The ranks: this one steps the replicas of its block and writes their CSVs; rank 0
    /// writes the exchange files.
    pub ranks: &'a Ranks,
    /// `--checkpoint NAME`: checkpoints between rounds, and `--resume` from them.
    pub checkpoint: Option<TemperCheckpoint>,
}

impl TemperPlan<'_> {
    /// `DIR/replica-k.csv`.
    pub(crate) fn replica_path(&self, k: usize) -> PathBuf {
        self.dir.join(format!("replica-{k}.csv"))
    }
}

impl Job<'_> {
    /// Replica exchange of `make()`'s stepper (see the [module docs](self)): the `k`-th replica
    /// this rank holds on `targets[k]`, its CSV's constraints from `systems[k]` — each its own
    /// evaluation state of the one model, so that the replicas step side by side on the pool
    /// (the bits of stepping them in turn).
    pub(super) fn temper<S, T, V, C>(
        &self,
        systems: &[&S],
        targets: &[&T],
        make: &dyn Fn() -> Box<dyn CliStepper<T, V>>,
        state: StateOf<V>,
        names: super::CoordinateNames,
        plan: &TemperPlan,
    ) -> Result<(), CliError>
    where
        S: ConstrainedModel<V, C> + Sync + ?Sized,
        T: Model<V> + Sync + ?Sized,
        V: ConstraintSpace<C> + Send,
        C: Vector,
    {
        let n = plan.kt.len();
        let p = self.p;
        let root = plan.ranks.is_root();
        let mut exchanges =
            Exchanges::new(plan.kt.clone(), plan.seed).map_err(|e| CliError::BadValue {
                option: "--temperatures",
                value: format!("{:?}", plan.kt),
                why: if matches!(e, zs_runtime::tempering::TemperingError::Ladder(_)) {
                    "at least two, finite, positive and increasing"
                } else {
                    "one replica per temperature"
                },
            })?;
        let held = plan.ranks.block(n);
        // Every replica's Langevin clock starts at the inner stepper's step, `--h`.
        let h = p.h;
        let steps = driver::planned_steps(state.t, p.t_end, h)
            .ok_or(CliError::Unreachable { h, t_end: p.t_end })?;
        let ck = plan.checkpoint.as_ref();
        // The checkpoint to resume from: the exchanges' file, if the interrupted run wrote one.
        let saved = match ck {
            Some(c) if c.resume && c.path.exists() => {
                let cp = Checkpoint::read(&c.path).map_err(|source| CliError::Resume {
                    path: c.path.clone(),
                    source,
                })?;
                check_same_run(&self.meta, &cp, &c.path)?;
                let resume_error = |source| CliError::Resume {
                    path: c.path.clone(),
                    source,
                };
                exchanges
                    .restore(&cp.scope("exchanges"))
                    .map_err(resume_error)?;
                Some(cp)
            }
            Some(c) => {
                if c.resume && root {
                    say!(
                        "  no checkpoint {} yet: starting from the beginning",
                        c.path.display()
                    );
                }
                c.clear(held.clone(), root)?;
                None
            }
            None => None,
        };
        let resume_error = |source| CliError::Resume {
            path: ck.map(|c| c.path.clone()).unwrap_or_default(),
            source,
        };
        let (mut done, round) = match &saved {
            Some(cp) => (
                cp.u64("run.done").map_err(resume_error)?,
                cp.u64("temper.round").map_err(resume_error)?,
            ),
            None => (0, 0),
        };
        let steppers: Vec<_> = held
            .clone()
            .map(|k| Langevin::new(make(), plan.gamma, plan.kt[k], plan.seed + k as u64))
            .collect();
        let states = vec![state.clone(); held.len()];
        let mut t = Tempering::block(exchanges, held.start, states, steppers)
            .expect("a block of the ladder, one state and one stepper per replica");
        let mut csv = Vec::with_capacity(held.len());
        for (i, k) in held.clone().enumerate() {
            let (system, target) = (systems[i], targets[i]);
            let path = plan.replica_path(k);
            let rec = match (&saved, ck) {
                (Some(_), Some(c)) => {
                    let cp = c.read_replica(k, round)?;
                    let rec = CsvRecorder::reopen(&path, p.every).map_err(|source| {
                        CliError::ResumeOutput {
                            out: path.clone(),
                            completed: path.exists(),
                            source,
                        }
                    })?;
                    let mut rec = super::drive::run_columns(rec, names.clone(), system);
                    let restored = t
                        .restore_replica(k, &cp)
                        .and_then(|()| target.restore_history(&cp.scope("model")))
                        .and_then(|()| {
                            Observer::<T, V>::restore_checkpoint(&mut rec, &cp.scope("observer"))
                        });
                    restored.map_err(|source| CliError::Resume {
                        path: c.replica_path(k, false),
                        source,
                    })?;
                    rec
                }
                _ => {
                    let rec = CsvRecorder::create(&path, p.every)
                        .map_err(|e| CliError::io("create", tmp_path_of(&path), e))?;
                    let mut rec = super::drive::run_columns(rec, names.clone(), system);
                    Observer::<T, V>::start(&mut rec, target, &state);
                    rec
                }
            };
            csv.push(rec);
        }
        // Rank 0's logs of the exchanges, written as they grow.
        let mut logs = if !root {
            None
        } else if let Some(cp) = &saved {
            let at = |key| cp.u64(key).map_err(resume_error);
            Some([
                Log::reopen(
                    &plan.dir.join("exchanges.csv"),
                    at("temper.exchanges-bytes")?,
                )?,
                Log::reopen(&plan.dir.join("walks.csv"), at("temper.walks-bytes")?)?,
            ])
        } else {
            let mut walks = String::from("t");
            for k in 0..n {
                let _ = write!(walks, ",replica_{k}");
            }
            walks.push('\n');
            Some([
                Log::create(
                    &plan.dir.join("exchanges.csv"),
                    "t,pair,accepted,kt_lower,kt_upper,lower_replica,upper_replica,probability\n",
                )?,
                Log::create(&plan.dir.join("walks.csv"), &walks)?,
            ])
        };
        if root {
            if let (Some(_), Some(c)) = (&saved, ck) {
                say!(
                    "  resumed at step {done} (round {round}) from {}",
                    c.path.display()
                );
            }
        }
        let first = done;
        let started = std::time::Instant::now();
        let mut energy = vec![0.0; n];
        let (mut wait, mut comm) = (0.0, 0.0);
        let mut checkpoints = 0;
        let mut line = String::new();
        while done < steps {
            let block = plan.every.min(steps - done);
            t.advance_side_by_side(targets, &mut csv, block, |rec, target, s| {
                rec.observe(target, s);
            });
            let before = done;
            done += block;
            if block < plan.every {
                break;
            }
            // Every rank's share of the energies (8 bytes per replica), then the same
            // decisions everywhere.
            energy.fill(0.0);
            t.energies_each(targets, &mut energy);
            let mut words = bits(&energy);
            let waited = std::time::Instant::now();
            plan.ranks.barrier();
            let sent = std::time::Instant::now();
            plan.ranks.combine(&mut words);
            wait += (sent - waited).as_secs_f64();
            comm += sent.elapsed().as_secs_f64();
            for (e, w) in energy.iter_mut().zip(&words) {
                *e = f64::from_bits(*w);
            }
            let attempts = t.exchange_with(&energy);
            // The time of the round: every live replica is at the same step.
            let now = state.t + done as f64 * h;
            if let Some([exchange_log, walk_log]) = logs.as_mut() {
                line.clear();
                for a in attempts {
                    let _ = writeln!(
                        line,
                        "{now},{},{},{},{},{},{},{}",
                        a.pair,
                        u8::from(a.accepted),
                        num(plan.kt[a.pair]),
                        num(plan.kt[a.pair + 1]),
                        a.lower,
                        a.upper,
                        a.probability
                    );
                }
                exchange_log.push(&line)?;
                line.clear();
                let _ = write!(line, "{now}");
                for k in 0..n {
                    let _ = write!(line, ",{}", t.exchanges.slot_of(k));
                }
                line.push('\n');
                walk_log.push(&line)?;
            }
            // Every rank sees the same `done` and energies, so all checkpoint together; not
            // once a replica has failed (resuming from the checkpoint before reproduces it).
            if let Some(c) = ck.filter(|c| c.due(before, done, steps)) {
                if energy.iter().all(|e| !e.is_nan()) {
                    for ((k, rec), target) in held.clone().zip(csv.iter_mut()).zip(targets) {
                        let mut cp = Checkpoint::new();
                        cp.set_u64("temper.round", t.exchanges.rounds());
                        t.save_replica(k, &mut cp)
                            .expect("no replica has failed: every energy is finite");
                        // Its own evaluation state's neighbour list (`Model::save_history`).
                        target.save_history(&mut cp.scope_mut("model"));
                        Observer::<T, V>::save_checkpoint(rec, &mut cp.scope_mut("observer"))
                            .map_err(|e| CliError::io("checkpoint", plan.replica_path(k), e))?;
                        c.write_replica(k, &cp)?;
                    }
                    // Every replica's file is of this round before the exchanges' says so.
                    plan.ranks.barrier();
                    if let Some([exchange_log, walk_log]) = logs.as_mut() {
                        let mut cp = self.meta.clone();
                        cp.set_u64("run.done", done);
                        cp.set_u64("temper.round", t.exchanges.rounds());
                        cp.set_u64("temper.exchanges-bytes", exchange_log.sync()?);
                        cp.set_u64("temper.walks-bytes", walk_log.sync()?);
                        t.exchanges.save(&mut cp.scope_mut("exchanges"));
                        cp.write(&c.path)
                            .map_err(|e| CliError::io("write the checkpoint", &c.path, e))?;
                    }
                    checkpoints += 1;
                }
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let mut failed = None;
        for (rec, (k, r)) in csv.iter_mut().zip(held.clone().zip(&t.replicas)) {
            if let Some(e) = &r.failure {
                Observer::<T, V>::stopped_early(rec, e);
                say!("  replica {k} stopped: {e}");
                failed.get_or_insert((k, e.clone(), r.stepper.steps_taken(), r.state.t));
            }
            Observer::<T, V>::finish(rec).map_err(CliError::Output)?;
        }
        // A replica that failed on another rank is known here by its energy (NaN) at the last
        // round.
        let dead: Vec<usize> = (0..n).filter(|&k| energy[k].is_nan()).collect();
        if let Some([exchange_log, walk_log]) = logs {
            let mut acceptance = String::from("pair,kt_lower,kt_upper,attempted,accepted,rate\n");
            say!("");
            say!(
                "  steps            {:>14}   per replica, {n} replicas on {} rank(s), {seconds:.3} s",
                steps - first,
                plan.ranks.size()
            );
            say!("  exchange rounds  {:>14}", t.exchanges.rounds());
            if plan.ranks.size() > 1 {
                let rounds = (t.exchanges.rounds() - round).max(1) as f64;
                say!(
                    "  communication    {:>14.1} µs per round on rank 0: one all-reduce of {} bytes (after {:.1} µs waiting for the slowest rank)",
                    1e6 * comm / rounds,
                    8 * n,
                    1e6 * wait / rounds
                );
            }
            for (pair, (tried, ok)) in t.exchanges.counts().enumerate() {
                let rate = ok as f64 / tried.max(1) as f64;
                let _ = writeln!(
                    acceptance,
                    "{pair},{},{},{tried},{ok},{rate:.6}",
                    num(plan.kt[pair]),
                    num(plan.kt[pair + 1])
                );
                say!(
                    "  kT {:>10} ↔ {:<10} accepted {ok:>8} of {tried:<8} ({:.1} %)",
                    num(plan.kt[pair]),
                    num(plan.kt[pair + 1]),
                    100.0 * rate
                );
            }
            if !dead.is_empty() {
                say!("  stopped replicas {dead:?} (each replica-k.csv.incomplete says why)");
            }
            if let Some(c) = ck {
                say!(
                    "  checkpoints      {checkpoints:>14}   {} (every {} steps)",
                    c.path.display(),
                    c.every
                );
            }
            exchange_log.publish()?;
            walk_log.publish()?;
            write(&plan.dir.join("acceptance.csv"), &acceptance)?;
            say!(
                "  output           {} (replica-0.csv … replica-{}.csv, exchanges.csv, walks.csv, acceptance.csv)",
                plan.dir.display(),
                n - 1
            );
        }
        match failed {
            None => Ok(()),
            Some((k, error, steps, t)) => Err(CliError::Stopped {
                error,
                out: plan.replica_path(k),
                steps,
                t,
                marker: zs_runtime::output::incomplete_marker_of(&plan.replica_path(k)),
            }),
        }
    }
}

/// `x` in the shortest decimal that reads back exactly, with an exponent outside
/// `[1e-5, 1e16)` (a ladder may span many decades).
fn num(x: f64) -> String {
    if x == 0.0 || (1e-5..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    write_atomic(path, text.as_bytes()).map_err(|e| CliError::io("write", path, e))
}
