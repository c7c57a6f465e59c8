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
