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

use std::time::{Duration, Instant};

use crate::observers::Observer;
use crate::{State, StepError, Stepper};

/// What a run did.
#[derive(Debug)]
pub struct RunSummary<const N: usize> {
    /// [`Stepper::name`] of the stepper.
    pub stepper: &'static str,
    /// Steps planned for this run.
    pub planned_steps: u64,
    /// Steps completed in this run.
    pub steps: u64,
    /// Wall-clock time of the stepping loop (observers included).
    pub wall_time: Duration,
    /// `steps / wall_time`.
    pub steps_per_second: f64,
    /// The failed step's error, if the run stopped early.
    pub error: Option<StepError>,
    /// The first I/O error an observer reported from [`Observer::finish`].
    pub output_error: Option<std::io::Error>,
    /// The last good state (the final one when the run succeeded).
    pub last_state: State<N>,
}

impl<const N: usize> RunSummary<N> {
    /// True when every planned step succeeded and every observer finished cleanly.
    pub fn is_ok(&self) -> bool {
        self.error.is_none() && self.output_error.is_none() && self.steps == self.planned_steps
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
/// ([`Observer::observe`]) and the end ([`Observer::finish`]). A failed step stops the run
/// cleanly: `state` then holds the last good state, and the summary the error. An `h` that
/// points away from `t_end` (or is zero or not finite) is reported as
/// [`StepError::InvalidStepSize`] without stepping.
pub fn run<P, S, const N: usize>(
    stepper: &mut S,
    target: &P,
    state: &mut State<N>,
    t_end: f64,
    observers: &mut [&mut dyn Observer<P, N>],
) -> RunSummary<N>
where
    P: ?Sized,
    S: Stepper<P, N> + ?Sized,
{
    let h = stepper.h();
    let t0 = state.t;
    let planned = if h.is_finite() {
        planned_steps(t0, t_end, h)
    } else {
        None
    };
    let Some(n) = planned else {
        let error = StepError::InvalidStepSize {
            step: stepper.steps_taken(),
            t: t0,
            h,
        };
        return finish(stepper, observers, state, 0, 0, Duration::ZERO, Some(error));
    };
    run_loop(stepper, target, state, n, Some(t_end), observers)
}

/// Run exactly `n` steps of the stepper's `h` (no adjustment of the last step).
pub fn run_steps<P, S, const N: usize>(
    stepper: &mut S,
    target: &P,
    state: &mut State<N>,
    n: u64,
    observers: &mut [&mut dyn Observer<P, N>],
) -> RunSummary<N>
where
    P: ?Sized,
    S: Stepper<P, N> + ?Sized,
{
    run_loop(stepper, target, state, n, None, observers)
}

fn run_loop<P, S, const N: usize>(
    stepper: &mut S,
    target: &P,
    state: &mut State<N>,
    n: u64,
    t_end: Option<f64>,
    observers: &mut [&mut dyn Observer<P, N>],
) -> RunSummary<N>
where
    P: ?Sized,
    S: Stepper<P, N> + ?Sized,
{
    for o in observers.iter_mut() {
        o.start(target, state);
    }
    let h = stepper.h();
    let clock = Instant::now();
    let mut done = 0;
    let mut error = None;
    while done < n {
        let last = done + 1 == n;
        let result = match t_end {
            Some(t_end) if last => {
                let h_last = t_end - state.t;
                if h_last.to_bits() == h.to_bits() {
                    stepper.step(target, state)
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
            _ => stepper.step(target, state),
        };
        if let Err(e) = result {
            error = Some(e);
            break;
        }
        done += 1;
        for o in observers.iter_mut() {
            o.observe(target, state);
        }
    }
    let wall = clock.elapsed();
    finish(stepper, observers, state, n, done, wall, error)
}

fn finish<P, S, const N: usize>(
    stepper: &S,
    observers: &mut [&mut dyn Observer<P, N>],
    state: &State<N>,
    planned: u64,
    done: u64,
    wall: Duration,
    error: Option<StepError>,
) -> RunSummary<N>
where
    P: ?Sized,
    S: Stepper<P, N> + ?Sized,
{
    let mut output_error = None;
    for o in observers.iter_mut() {
        if let Err(e) = o.finish() {
            output_error.get_or_insert(e);
        }
    }
    let secs = wall.as_secs_f64();
    RunSummary {
        stepper: stepper.name(),
        planned_steps: planned,
        steps: done,
        wall_time: wall,
        steps_per_second: if secs > 0.0 { done as f64 / secs } else { 0.0 },
        error,
        output_error,
        last_state: *state,
    }
}
