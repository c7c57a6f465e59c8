//! Run a stepper to a final time, feeding observers, and summarize.
//!
//! ```
//! use zs_runtime::driver::run;
//! use zs_runtime::observers::{EnergyObserver, Observer};
//! use zs_runtime::{Potential, State, ZhangSkeel};
//!
//! struct Pendulum; // V = 1 - cos q
//! impl Potential<1> for Pendulum {
//!     fn masses(&self) -> [f64; 1] { [1.0] }
//!     fn potential(&self, q: &[f64; 1]) -> f64 { 1.0 - q[0].cos() }
//!     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0].sin()] }
//!     fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] { [[q[0].cos()]] }
//!     fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
//!         [-q[0].sin() * a[0] * a[0]]
//!     }
//! }
//!
//! let mut zs = ZhangSkeel::new(0.4, 0.01);
//! let mut state = State::new([1.0], [0.0]);
//! let mut energy = EnergyObserver::new();
//! let summary = run(&mut zs, &Pendulum, &mut state, 10.0, &mut [&mut energy]);
//! assert!(summary.is_ok());
//! assert_eq!(summary.steps, 1000);
//! assert_eq!(state.t, 10.0);
//! assert!(energy.max_abs_drift() < 1e-4);
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::checkpoint::{Checkpoint, CheckpointError, Resumable};
use crate::error::{Quantity, StepErrorKind};
use crate::model::Model;
use crate::observers::Observer;
use crate::vector::Vector;
use crate::{Measured, StateOf, StepError, Stepper};

/// What a run did.
#[derive(Debug)]
pub struct RunSummary<V: Vector> {
    /// [`Clocked::name`](crate::Clocked::name) of the stepper.
    pub stepper: &'static str,
    /// Steps planned for the whole run (a resumed run counts the steps before its checkpoint).
    pub planned_steps: u64,
    /// Good steps completed, counted from the start of the run (a resumed run counts the steps
    /// before its checkpoint): the index of the last good state, which the caller's state
    /// holds.
    pub steps: u64,
    /// Steps already completed when this invocation started (0, or the checkpoint's count for
    /// [`resume`]).
    pub resumed_at: u64,
    /// Checkpoints written by this invocation.
    pub checkpoints: u64,
    /// Wall-clock time of the stepping loop (observers and checkpoints included).
    pub wall_time: Duration,
    /// `(steps - resumed_at) / wall_time`.
    pub steps_per_second: f64,
    /// The part of `wall_time` spent in the stepper's steps: without the observers (CSV rows,
    /// XYZ frames, the energies they evaluate), guards and checkpoints — what an engine's own
    /// loop time counts (LAMMPS's "Loop time" leaves out its output but its thermo lines).
    pub stepping_time: Duration,
    /// The failed step's error, if the run stopped early.
    pub error: Option<StepError>,
    /// The first I/O error: an observer's [`Observer::finish`], or a checkpoint that could not
    /// be written (the run goes on after a failed checkpoint; the previous checkpoint file
    /// stays valid).
    pub output_error: Option<std::io::Error>,
    /// The last good state when a step failed (a copy of the caller's state, kept for
    /// [`RunSummary::failure`]). A run that succeeds makes no copy: the caller's state is the
    /// final one (a million bodies' state is 48 MB).
    last_good: Option<StateOf<V>>,
}

/// A run that stopped on a failed step: the error (with the failing step's index and start
/// time), the last good state and the number of good steps. The state the caller passed to
/// the driver holds the same last good state.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFailure<V: Vector> {
    /// Why the step failed.
    pub error: StepError,
    /// The last good state (bit-for-bit the state after `steps` good steps).
    pub last_good: StateOf<V>,
    /// Good steps completed, counted from the start of the run.
    pub steps: u64,
}

impl<V: Vector> std::fmt::Display for RunFailure<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; last good state: step {}, t = {}",
            self.error, self.steps, self.last_good.t
        )
    }
}

impl<V: Vector> std::error::Error for RunFailure<V> {}

impl<V: Vector> RunSummary<V> {
    /// True when every planned step succeeded and every observer finished cleanly.
    pub fn is_ok(&self) -> bool {
        self.error.is_none() && self.output_error.is_none() && self.steps == self.planned_steps
    }

    /// The failure, if a step failed.
    pub fn failure(&self) -> Option<RunFailure<V>> {
        let (error, last_good) = (self.error.clone()?, self.last_good.clone()?);
        Some(RunFailure {
            error,
            last_good,
            steps: self.steps,
        })
    }
}

/// Number of steps of size `h` from `t0` to `t_end`: `round((t_end - t0)/h)`, at least one when
/// `t_end ≠ t0`. `None` when `h` is zero, points away from `t_end`, or the count is not finite.
pub fn planned_steps(t0: f64, t_end: f64, h: f64) -> Option<u64> {
    let span = t_end - t0;
    if span == 0.0 && h != 0.0 {
        return Some(0);
    }
    let n = (span / h).round();
    if !n.is_finite() || span / h < 0.0 || n > u64::MAX as f64 {
        return None;
    }
    Some((n as u64).max(1))
}

/// Run `stepper` on `target` from `state` to `t_end`.
///
/// The number of steps is `round((t_end - t0)/h)` (at least one when `t_end ≠ t0`); all but the
/// last use the stepper's `h`, the last one is shortened or lengthened (by less than `h/2`, or by
/// rounding error when `t_end - t0` is a multiple of `h`) so that the run ends at exactly
/// `t_end`; the stepper's `h` is restored afterwards. (For Z&S a last step whose `h` differs
/// from the others by even one rounding costs one extra evaluation: its cached `f` is keyed by
/// `h²`.)
///
/// Observers see the initial state ([`Observer::start`]), the state after every step
/// ([`Observer::observe`], after every observer's [`Observer::check`] accepted it) and the end
/// ([`Observer::finish`]).
///
/// A failed step stops the run cleanly: `state` then holds the last good state, bit for bit,
/// the summary the error ([`RunSummary::failure`]), and every observer has seen exactly the
/// states up to the last good one. Failures are the stepper's [`StepError`]s, plus two the
/// driver detects itself, discarding the offending state: a state the stepper returned as
/// `Ok` but with a non-finite entry ([`crate::StepErrorKind::NonFinite`], `what = "state after step"`;
/// not looked for again after a stepper whose own passes test it, [`Stepper::checks_finite`]),
/// and a guard's rejection ([`crate::StepErrorKind::GuardViolated`], see [`crate::guards`]). An `h` that
/// points away from `t_end` (or is zero or not finite) is reported as
/// [`crate::StepErrorKind::InvalidStepSize`] without stepping.
pub fn run<P, S, V: Vector>(
    stepper: &mut S,
    target: &P,
    state: &mut StateOf<V>,
    t_end: f64,
    observers: &mut [&mut dyn Observer<P, V>],
) -> RunSummary<V>
where
    P: Model<V> + ?Sized,
    S: Stepper<P, V> + ?Sized,
{
    let Some(n) = plan(&*stepper, state.t, t_end) else {
        return invalid_h(&*stepper, state, observers);
    };
    let mut loop_ = Loop::new(n, Some(t_end), 0).timed_from(state.t);
    loop_.run(stepper, target, state, observers, true, None)
}

/// Run exactly `n` steps of the stepper's `h` (no adjustment of the last step).
pub fn run_steps<P, S, V: Vector>(
    stepper: &mut S,
    target: &P,
    state: &mut StateOf<V>,
    n: u64,
    observers: &mut [&mut dyn Observer<P, V>],
) -> RunSummary<V>
where
    P: Model<V> + ?Sized,
    S: Stepper<P, V> + ?Sized,
{
    let mut loop_ = Loop::new(n, None, 0).timed_from(state.t);
    loop_.run(stepper, target, state, observers, true, None)
}

/// Where and how often [`run_checkpointed`] and [`resume`] write checkpoints.
#[derive(Debug, Clone)]
pub struct Checkpointing {
    /// The checkpoint file (rewritten atomically each time; see [`crate::checkpoint`]).
    pub path: PathBuf,
    /// Write one after every `every`-th step of the run (steps counted from the run's start,
    /// so a resumed run checkpoints at the same steps as the uninterrupted one).
    pub every: u64,
    /// Extra entries copied into every checkpoint (e.g. the parameters of a command line, to
    /// check on resume that it is the same run).
    pub meta: Checkpoint,
}

impl Checkpointing {
    /// A checkpoint to `path` every `every` steps.
    ///
    /// # Panics
    /// If `every` is 0.
    pub fn new(path: impl Into<PathBuf>, every: u64) -> Self {
        assert!(every > 0, "Checkpointing: `every` must be at least 1");
        Self {
            path: path.into(),
            every,
            meta: Checkpoint::new(),
        }
    }

    /// Add extra entries to every checkpoint.
    pub fn with_meta(mut self, meta: Checkpoint) -> Self {
        self.meta = meta;
        self
    }
}

/// [`run`] that also writes a checkpoint every `checkpointing.every` steps, from which
/// [`resume`] continues bit-for-bit. A checkpoint holds the state, the run's plan (`t0`,
/// `t_end`, step count), the stepper's state ([`Resumable`]), the model's evaluation history
/// ([`Model::save_history`]: an assembled system's neighbour list) and every observer's
/// ([`Observer::save_checkpoint`]), plus `checkpointing.meta`. No checkpoint is written after
/// the last step. A checkpoint that cannot be written is reported in
/// [`RunSummary::output_error`] and the run goes on.
pub fn run_checkpointed<P, S, V: Vector>(
    stepper: &mut S,
    target: &P,
    state: &mut StateOf<V>,
    t_end: f64,
    observers: &mut [&mut dyn Observer<P, V>],
    checkpointing: &Checkpointing,
) -> RunSummary<V>
where
    P: Model<V> + ?Sized,
    S: Stepper<P, V> + Resumable + ?Sized,
{
    let Some(n) = plan(&*stepper, state.t, t_end) else {
        return invalid_h(&*stepper, state, observers);
    };
    let t0 = state.t;
    let mut loop_ = Loop::new(n, Some(t_end), 0).timed_from(t0);
    let mut hook = |s: &S, st: &StateOf<V>, done: u64, obs: &mut [&mut dyn Observer<P, V>]| {
        write_checkpoint(s, target, st, t0, t_end, n, done, obs, checkpointing)
    };
    loop_.run(
        stepper,
        target,
        state,
        observers,
        true,
        Some((checkpointing.every, &mut hook)),
    )
}

/// Continue a run from a checkpoint written by [`run_checkpointed`]: restores `stepper`
/// (constructed the ordinary way for the same method), `state`, the model's evaluation
/// history ([`Model::restore_history`]) and every observer (which must
/// be the same observers, in the same order, configured the same way; a [`crate::CsvRecorder`]
/// is reopened with [`crate::CsvRecorder::reopen`]), then runs to the checkpoint's `t_end`,
/// writing further checkpoints if `checkpointing` is given. The states, observations and files
/// are bit-for-bit those of the uninterrupted run.
///
/// # Errors
/// Before any step: the checkpoint is for another stepper ([`Clocked::name`](crate::Clocked::name)), dimension or
/// number of observers, lacks an entry, or an observer cannot be restored (e.g. its file is
/// shorter than at the checkpoint).
pub fn resume<P, S, V: Vector>(
    stepper: &mut S,
    target: &P,
    state: &mut StateOf<V>,
    checkpoint: &Checkpoint,
    observers: &mut [&mut dyn Observer<P, V>],
    checkpointing: Option<&Checkpointing>,
) -> Result<RunSummary<V>, CheckpointError>
where
    P: Model<V> + ?Sized,
    S: Stepper<P, V> + Resumable + ?Sized,
{
    let name = checkpoint.str("stepper")?;
    if name != stepper.name() {
        return Err(CheckpointError::Mismatch(format!(
            "the checkpoint is of a '{name}' run, the stepper is '{}'",
            stepper.name()
        )));
    }
    let restored: StateOf<V> = checkpoint.state()?;
    if restored.q.len() != state.q.len() {
        return Err(CheckpointError::Mismatch(format!(
            "the checkpoint has {} coordinates, the system {}",
            restored.q.len(),
            state.q.len()
        )));
    }
    let t0 = checkpoint.f64("run.t0")?;
    let t_end = checkpoint.f64("run.t_end")?;
    let planned = checkpoint.u64("run.planned")?;
    let done = checkpoint.u64("run.done")?;
    if done > planned {
        return Err(CheckpointError::Mismatch(format!(
            "{done} steps done of {planned} planned"
        )));
    }
    let count = checkpoint.u64("observers")?;
    if count != observers.len() as u64 {
        return Err(CheckpointError::Mismatch(format!(
            "{count} observers at the checkpoint, {} now",
            observers.len()
        )));
    }
    stepper.restore(&checkpoint.scope("stepper"))?;
    target.restore_history(&checkpoint.scope("model"))?;
    for (i, o) in observers.iter_mut().enumerate() {
        o.restore_checkpoint(&checkpoint.scope(&format!("observer.{i}")))?;
    }
    *state = restored;
    // Into the model's own order, when it holds the state in one (after its history, which
    // holds that order, was restored).
    let mut own = V::default_zeros();
    for x in [&mut state.q, &mut state.v] {
        if target.in_own_order(x, &mut own) {
            std::mem::swap(x, &mut own);
        }
    }
    let mut loop_ = Loop::new(planned, Some(t_end), done).timed_from(t0);
    Ok(match checkpointing {
        Some(c) => {
            let mut hook = |s: &S, st: &StateOf<V>, d: u64, obs: &mut [&mut dyn Observer<P, V>]| {
                write_checkpoint(s, target, st, t0, t_end, planned, d, obs, c)
            };
            loop_.run(
                stepper,
                target,
                state,
                observers,
                false,
                Some((c.every, &mut hook)),
            )
        }
        None => loop_.run(stepper, target, state, observers, false, None),
    })
}

#[allow(clippy::too_many_arguments)]
fn write_checkpoint<P, S, V: Vector>(
    stepper: &S,
    target: &P,
    state: &StateOf<V>,
    t0: f64,
    t_end: f64,
    planned: u64,
    done: u64,
    observers: &mut [&mut dyn Observer<P, V>],
    checkpointing: &Checkpointing,
) -> std::io::Result<()>
where
    P: Model<V> + ?Sized,
    S: Stepper<P, V> + Resumable + ?Sized,
{
    let mut cp = checkpointing.meta.clone();
    // The user's order, whatever order the model holds the state in.
    let mut user = StateOf {
        q: V::default_zeros(),
        v: V::default_zeros(),
        t: state.t,
    };
    let shown =
        target.in_user_order(&state.q, &mut user.q) && target.in_user_order(&state.v, &mut user.v);
    cp.set_state(if shown { &user } else { state });
    cp.set_f64("run.t0", t0);
    cp.set_f64("run.t_end", t_end);
    cp.set_u64("run.planned", planned);
    cp.set_u64("run.done", done);
    cp.set_str("stepper", stepper.name());
    stepper.save(&mut cp.scope_mut("stepper"));
    target.save_history(&mut cp.scope_mut("model"));
    cp.set_u64("observers", observers.len() as u64);
    for (i, o) in observers.iter_mut().enumerate() {
        o.save_checkpoint(&mut cp.scope_mut(&format!("observer.{i}")))?;
    }
    cp.write(&checkpointing.path)
}

fn plan<P: ?Sized, S: Stepper<P, V> + ?Sized, V: Vector>(
    stepper: &S,
    t0: f64,
    t_end: f64,
) -> Option<u64> {
    let h = stepper.h();
    if h.is_finite() {
        planned_steps(t0, t_end, h)
    } else {
        None
    }
}

fn invalid_h<P, S, V: Vector>(
    stepper: &S,
    state: &StateOf<V>,
    observers: &mut [&mut dyn Observer<P, V>],
) -> RunSummary<V>
where
    P: Model<V> + ?Sized,
    S: Stepper<P, V> + ?Sized,
{
    let error = StepError::new(
        stepper.steps_taken(),
        state.t,
        StepErrorKind::InvalidStepSize { h: stepper.h() },
    );
    let mut l = Loop::new(0, None, 0);
    l.error = Some(error);
    l.finish(stepper, observers, state, Duration::ZERO)
}

/// A checkpoint hook: called with the stepper, the state, the number of steps done and the
/// observers after every `every`-th step.
type Hook<'h, P, S, V> =
    &'h mut dyn FnMut(&S, &StateOf<V>, u64, &mut [&mut dyn Observer<P, V>]) -> std::io::Result<()>;

/// The stepping loop's bookkeeping.
struct Loop {
    planned: u64,
    t_end: Option<f64>,
    /// The time of the run's step 0: after step `k` the state's time is `t0 + k·h`, not the
    /// sum of `k` steps (whose rounding accumulates: 1 000 steps of 0.01 would end at
    /// 10.000000000000163; the last step of a run to `t_end` ends at exactly `t_end`).
    t0: Option<f64>,
    first: u64,
    done: u64,
    checkpoints: u64,
    error: Option<StepError>,
    io_error: Option<std::io::Error>,
    /// Time spent in the stepper's steps ([`RunSummary::stepping_time`]).
    stepping: Duration,
}

impl Loop {
    fn new(planned: u64, t_end: Option<f64>, first: u64) -> Self {
        Self {
            planned,
            t_end,
            t0: None,
            first,
            done: first,
            checkpoints: 0,
            error: None,
            io_error: None,
            stepping: Duration::ZERO,
        }
    }

    /// The state's time after step `k` is `t0 + k·h`.
    fn timed_from(mut self, t0: f64) -> Self {
        self.t0 = Some(t0);
        self
    }

    fn run<P, S, V: Vector>(
        &mut self,
        stepper: &mut S,
        target: &P,
        state: &mut StateOf<V>,
        observers: &mut [&mut dyn Observer<P, V>],
        fresh: bool,
        mut hook: Option<(u64, Hook<'_, P, S, V>)>,
    ) -> RunSummary<V>
    where
        P: Model<V> + ?Sized,
        S: Stepper<P, V> + ?Sized,
    {
        if fresh {
            for o in observers.iter_mut() {
                o.start(target, state);
            }
        }
        let h = stepper.h();
        let n = self.planned;
        let clock = Instant::now();
        let mut stepping = Duration::ZERO;
        // The state before each step (restored when the driver rejects a state), allocated
        // once: `clone_from` reuses its storage. A stepper that can take its step back and
        // names the state it replaced (`Stepper::keeps_replaced`) keeps that state itself: no
        // copy per step.
        let undo = stepper.can_undo() && stepper.keeps_replaced();
        let mut before = (!undo).then(|| state.clone());
        let checked = stepper.checks_finite();
        while self.done < n {
            // A model holding the state in an order of its own re-sorts it here, between
            // steps, before the copy a rejected step would be restored from.
            target.reorder(state);
            if let Some(before) = before.as_mut() {
                copy_state(before, state);
            }
            let k = stepper.steps_taken();
            let last = self.done + 1 == n;
            let step_clock = Instant::now();
            let result = match self.t_end {
                Some(t_end) if last => {
                    let h_last = t_end - state.t;
                    if h_last.to_bits() == h.to_bits() {
                        let r = stepper.step(target, state);
                        if r.is_ok() {
                            state.t = t_end;
                        }
                        r
                    } else {
                        stepper.set_h(h_last);
                        let r = stepper.step(target, state);
                        stepper.set_h(h);
                        if r.is_ok() {
                            // t + (t_end - t) may differ from t_end by one rounding.
                            state.t = t_end;
                        }
                        r
                    }
                }
                _ => {
                    let r = stepper.step(target, state);
                    if let (Ok(()), Some(t0)) = (&r, self.t0) {
                        state.t = t0 + (self.done + 1) as f64 * h;
                    }
                    r
                }
            };
            stepping += step_clock.elapsed();
            let stepped = result.is_ok();
            // What the stepper measured of the new state in its own passes (the observers'
            // shortcut), read before anything else can change the state.
            let measured = if stepped {
                stepper.measured()
            } else {
                Measured::default()
            };
            let result = result.and_then(|()| {
                let from = match &before {
                    Some(before) => before,
                    None => stepper
                        .replaced()
                        .expect("a stepper that keeps the state it replaced names it"),
                };
                accept(target, from, state, observers, k, checked, &measured)
            });
            if let Err(e) = result {
                // The stepper leaves the state untouched on error; a state rejected by the
                // driver (non-finite, guard) is discarded here.
                if stepped {
                    match &before {
                        Some(before) => state.clone_from(before),
                        None => {
                            let undone = stepper.undo(state);
                            assert!(undone, "{} could not undo its step", stepper.name());
                        }
                    }
                }
                self.error = Some(e);
                break;
            }
            self.done += 1;
            for o in observers.iter_mut() {
                o.observe_measured(target, state, &measured);
            }
            if let Some((every, hook)) = hook.as_mut()
                && self.done.is_multiple_of(*every)
                && self.done < n
            {
                match hook(stepper, state, self.done, observers) {
                    Ok(()) => self.checkpoints += 1,
                    Err(e) => {
                        self.io_error.get_or_insert(e);
                    }
                }
            }
        }
        let wall = clock.elapsed();
        // The summary's copy of the last state takes the place of this one.
        drop(before);
        self.stepping = stepping;
        self.finish(stepper, observers, state, wall)
    }

    fn finish<P, S, V: Vector>(
        &mut self,
        stepper: &S,
        observers: &mut [&mut dyn Observer<P, V>],
        state: &StateOf<V>,
        wall: Duration,
    ) -> RunSummary<V>
    where
        P: ?Sized,
        S: Stepper<P, V> + ?Sized,
    {
        if let Some(e) = &self.error {
            for o in observers.iter_mut() {
                o.stopped_early(e);
            }
        }
        let mut output_error = self.io_error.take();
        for o in observers.iter_mut() {
            if let Err(e) = o.finish() {
                output_error.get_or_insert(e);
            }
        }
        let secs = wall.as_secs_f64();
        let this_run = self.done - self.first;
        RunSummary {
            stepper: stepper.name(),
            planned_steps: self.planned,
            steps: self.done,
            resumed_at: self.first,
            checkpoints: self.checkpoints,
            wall_time: wall,
            steps_per_second: if secs > 0.0 {
                this_run as f64 / secs
            } else {
                0.0
            },
            stepping_time: self.stepping,
            last_good: self.error.is_some().then(|| state.clone()),
            error: self.error.take(),
            output_error,
        }
    }
}

/// `to ← from`: long vectors copied in chunks on rayon's pool.
fn copy_state<V: Vector>(to: &mut StateOf<V>, from: &StateOf<V>) {
    if to.q.len() == from.q.len() && to.v.len() == from.v.len() {
        crate::vector::copy_long(to.q.as_mut_slice(), from.q.as_slice());
        crate::vector::copy_long(to.v.as_mut_slice(), from.v.as_slice());
        to.t = from.t;
    } else {
        to.clone_from(from);
    }
}

/// The driver's own checks of a state a stepper returned as `Ok`: finite (unless the stepper
/// `checked` it), and accepted by every guard.
fn accept<P: ?Sized, V: Vector>(
    target: &P,
    before: &StateOf<V>,
    state: &StateOf<V>,
    observers: &mut [&mut dyn Observer<P, V>],
    step: u64,
    checked: bool,
    measured: &Measured,
) -> Result<(), StepError> {
    let t = before.t;
    // A stepper that tested its state on the way ([`Stepper::checks_finite`]) is not read
    // again: for a long state this is a pass over all of it from main memory, every step.
    if !(state.t.is_finite() && (checked || state.is_finite())) {
        return Err(StepError::non_finite(step, t, Quantity::StateAfterStep));
    }
    for o in observers.iter_mut() {
        o.check_measured(target, before, state, measured)
            .map_err(|v| v.at(step, t))?;
    }
    Ok(())
}
