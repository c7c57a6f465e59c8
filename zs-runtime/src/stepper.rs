//! The common shape of every integrator: a clock ([`Clocked`]) and a step ([`Stepper`]).

use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::{Measured, StateOf, StepError};

/// A stepper's clock: its step size and the number of steps it has completed (the index the
/// next failing step reports).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// Step size `h` (may be negative: integrate backwards).
    pub h: f64,
    /// Steps completed.
    pub steps: u64,
}

impl Clock {
    /// A clock at step 0 with step size `h`.
    pub fn new(h: f64) -> Self {
        Self { h, steps: 0 }
    }

    /// Saves `h` and the step count (exact bits) as `h` and `steps`.
    pub fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.h);
        out.set_u64("steps", self.steps);
    }

    /// Restores what [`Clock::save`] wrote.
    ///
    /// # Errors
    /// A [`CheckpointError`] when a key is missing or malformed.
    pub fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.h = from.f64("h")?;
        self.steps = from.u64("steps")?;
        Ok(())
    }
}

/// What every stepper has besides its step: a [`Clock`] and a name. The step size and the step
/// count are read and set through it, once for every stepper (import the trait to call
/// `h()`, `set_h()` or `steps_taken()`).
pub trait Clocked {
    /// The clock.
    fn clock(&self) -> &Clock;
    /// The clock, mutably.
    fn clock_mut(&mut self) -> &mut Clock;
    /// Short name, e.g. `"zhang-skeel"`.
    fn name(&self) -> &'static str;

    /// Step size `h` (may be negative: integrate backwards).
    fn h(&self) -> f64 {
        self.clock().h
    }
    /// Change the step size. Cached evaluations that depend on `h` are keyed by it and
    /// recomputed when it changes.
    fn set_h(&mut self, h: f64) {
        self.clock_mut().h = h;
    }
    /// Number of steps completed (the index reported by the next failing step).
    fn steps_taken(&self) -> u64 {
        self.clock().steps
    }
}

/// One step of an integrator on a target `P` (a [`crate::Model`] for unconstrained and
/// penalized methods, a [`crate::ConstrainedModel`] for SHAKE/RATTLE), for states stored as `V`
/// (`[f64; N]` for fixed-size systems, `Vec<f64>` for assembled ones).
///
/// A step either advances `state` by `h` (including `state.t`) and returns `Ok(())`, or returns
/// a [`StepError`] and leaves `state` exactly as it was.
pub trait Stepper<P: ?Sized, V>: Clocked {
    /// Advance `state` by one step of size [`Clocked::h`].
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError>;
    /// True when this stepper can take back its last successful step exactly
    /// ([`Stepper::undo`]) because it keeps the state it replaced (velocity Verlet): a
    /// composition around it (the GLA) then needs no copy of its own to undo a step.
    fn can_undo(&self) -> bool {
        false
    }
    /// Take back the last successful step: `state` — as that step left it, or with its
    /// velocities changed since — becomes exactly the state before it, and the step count is
    /// as before. Returns false, and changes nothing, when the stepper cannot
    /// ([`Stepper::can_undo`]) or has no step to take back.
    fn undo(&mut self, state: &mut StateOf<V>) -> bool {
        let _ = state;
        false
    }
    /// The state the last successful step started from, while [`Stepper::undo`] can restore it
    /// (kept by a stepper that can undo): the driver reads it for its guards instead of copying
    /// the state before every step. `None` by default.
    fn replaced(&self) -> Option<&StateOf<V>> {
        None
    }
    /// True when [`Stepper::replaced`] names the state after every successful step and
    /// [`Stepper::undo`] restores it (velocity Verlet, the GLA around it): the driver then keeps
    /// no copy of its own. False by default, so a stepper that can undo but does not name the
    /// state it replaced is driven with a copy, as before.
    fn keeps_replaced(&self) -> bool {
        false
    }
    /// True when every step this stepper returns as `Ok` has found the new positions and
    /// velocities finite in its own passes (and returned
    /// [`crate::StepErrorKind::NonFinite`] otherwise): the driver then does not read the
    /// whole state again to check it. False by default, so the driver checks.
    fn checks_finite(&self) -> bool {
        false
    }
    /// What this stepper measured, in its own passes, of the state its last successful step
    /// produced ([`Measured`]: the new positions' key, the largest move of a point body), for
    /// the observers the driver hands it to. Nothing by default. A stepper that reports it
    /// reports it of the state as that step left it, and no other.
    fn measured(&self) -> Measured {
        Measured::default()
    }
}

/// A boxed stepper has the clock of the stepper it holds.
impl<S: Clocked + ?Sized> Clocked for Box<S> {
    fn clock(&self) -> &Clock {
        (**self).clock()
    }
    fn clock_mut(&mut self) -> &mut Clock {
        (**self).clock_mut()
    }
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn h(&self) -> f64 {
        (**self).h()
    }
    fn set_h(&mut self, h: f64) {
        (**self).set_h(h);
    }
    fn steps_taken(&self) -> u64 {
        (**self).steps_taken()
    }
}

/// A stepper that checkpoints: what a stepper chosen at run time is boxed as when the run is
/// checkpointed and resumed — `Box<dyn ResumableStepper<P, V>>` steps, saves and restores like
/// the stepper it holds (`Box<dyn Stepper<P, V>>` cannot be resumed: `Stepper` has no
/// checkpoint). Every stepper of this crate is one (blanket implementation).
///
/// ```
/// use zs_runtime::driver::{run_checkpointed, Checkpointing};
/// use zs_runtime::{Potential, ResumableStepper, State, VelocityVerlet, ZhangSkeel};
///
/// struct Spring;
/// impl Potential<1> for Spring {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
///     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
///     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
/// }
///
/// let verlet = std::env::args().count() > 99; // chosen at run time
/// let mut stepper: Box<dyn ResumableStepper<Spring, [f64; 1]>> = if verlet {
///     Box::new(VelocityVerlet::new(0.1))
/// } else {
///     Box::new(ZhangSkeel::new(0.25, 0.1)) // β, h
/// };
/// let path = std::env::temp_dir().join(format!("zs-doc-{}.ck", std::process::id()));
/// let mut state = State::new([1.0], [0.0]);
/// let summary = run_checkpointed(&mut stepper, &Spring, &mut state, 1.0, &mut [], &Checkpointing::new(&path, 5));
/// assert!(summary.is_ok() && summary.checkpoints >= 1, "{summary:?}");
/// # let _ = std::fs::remove_file(&path);
/// ```
pub trait ResumableStepper<P: ?Sized, V>: Stepper<P, V> + Resumable {}

impl<P: ?Sized, V, S: Stepper<P, V> + Resumable + ?Sized> ResumableStepper<P, V> for S {}

/// A boxed stepper steps like the stepper it holds (for choosing one at run time, e.g. from a
/// command line, as `Box<dyn Stepper<P, V>>`, or [`ResumableStepper`] to checkpoint).
impl<P: ?Sized, V, S: Stepper<P, V> + ?Sized> Stepper<P, V> for Box<S> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        (**self).step(target, state)
    }
    fn can_undo(&self) -> bool {
        (**self).can_undo()
    }
    fn undo(&mut self, state: &mut StateOf<V>) -> bool {
        (**self).undo(state)
    }
    fn replaced(&self) -> Option<&StateOf<V>> {
        (**self).replaced()
    }
    fn keeps_replaced(&self) -> bool {
        (**self).keeps_replaced()
    }
    fn checks_finite(&self) -> bool {
        (**self).checks_finite()
    }
    fn measured(&self) -> Measured {
        (**self).measured()
    }
}
