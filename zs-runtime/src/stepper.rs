//! The common shape of every integrator.

use crate::{StateOf, StepError};

/// One step of an integrator on a target `P` (a [`crate::Model`] for unconstrained and
/// penalized methods, a [`crate::ConstrainedModel`] for SHAKE/RATTLE), for states stored as `V`
/// (`[f64; N]` for fixed-size systems, `Vec<f64>` for assembled ones).
///
/// A step either advances `state` by `h` (including `state.t`) and returns `Ok(())`, or returns
/// a [`StepError`] and leaves `state` exactly as it was.
pub trait Stepper<P: ?Sized, V> {
    /// Advance `state` by one step of size [`Stepper::h`].
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError>;
    /// Step size `h` (may be negative: integrate backwards).
    fn h(&self) -> f64;
    /// Change the step size (invalidates any cached evaluation).
    fn set_h(&mut self, h: f64);
    /// Number of steps completed.
    fn steps_taken(&self) -> u64;
    /// Short name, e.g. `"zhang-skeel"`.
    fn name(&self) -> &'static str;
}

/// A boxed stepper steps like the stepper it holds (for choosing one at run time, e.g. from a
/// command line, as `Box<dyn Stepper<P, V>>`).
impl<P: ?Sized, V, S: Stepper<P, V> + ?Sized> Stepper<P, V> for Box<S> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        (**self).step(target, state)
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
    fn name(&self) -> &'static str {
        (**self).name()
    }
}
