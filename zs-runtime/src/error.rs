//! Typed failures of a step. A step that fails leaves the state it was given untouched, so the
//! caller always holds the last good state.

/// Why a step failed. `step` is the index of the failing step (the number of steps that
/// the stepper had completed before it), `t` the time of the state the step started from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// The linear system of a linearly-implicit step (e.g. `M + βh²H` of Z&S eq. 3) is
    /// singular to working precision.
    #[error("step {step} (t = {t}): the {n}x{n} linear system is singular (smallest pivot {pivot:e}, largest {max_pivot:e})")]
    SingularMatrix {
        /// Failing step.
        step: u64,
        /// Time at the start of the step.
        t: f64,
        /// Dimension.
        n: usize,
        /// Smallest pivot magnitude of the LU factorization.
        pivot: f64,
        /// Largest pivot magnitude.
        max_pivot: f64,
    },
    /// A non-finite value (NaN or ±∞) appeared in `what`.
    #[error("step {step} (t = {t}): non-finite value in {what}")]
    NonFinite {
        /// Failing step.
        step: u64,
        /// Time at the start of the step.
        t: f64,
        /// Which quantity was not finite (e.g. "gradient", "new position").
        what: &'static str,
    },
    /// The step size is zero or not finite.
    #[error("step {step} (t = {t}): invalid step size h = {h}")]
    InvalidStepSize {
        /// Failing step.
        step: u64,
        /// Time at the start of the step.
        t: f64,
        /// The offending step size.
        h: f64,
    },
    /// An iterative solve (Newton, SHAKE) did not converge.
    #[error("step {step} (t = {t}): {solver} did not converge in {iterations} iterations (residual {residual:e})")]
    NotConverged {
        /// Failing step.
        step: u64,
        /// Time at the start of the step.
        t: f64,
        /// Which solver.
        solver: &'static str,
        /// Iterations performed.
        iterations: usize,
        /// Final residual.
        residual: f64,
    },
}

impl StepError {
    /// Index of the failing step.
    pub fn step(&self) -> u64 {
        match self {
            StepError::SingularMatrix { step, .. }
            | StepError::NonFinite { step, .. }
            | StepError::InvalidStepSize { step, .. }
            | StepError::NotConverged { step, .. } => *step,
        }
    }
}
