//! Typed failures of a step. A step that fails leaves the state it was given untouched, so the
//! caller always holds the last good state.
//!
//! Where the last good state is: [`StepError`] is not generic over the dimension, so it does not
//! carry the state itself. Instead every producer guarantees that the caller's state *is* the
//! last good state when an error comes back:
//! - a [`crate::Stepper::step`] that returns `Err` leaves its `state` argument bit-for-bit as it
//!   was (the contract of the trait);
//! - the [`crate::driver`] additionally rejects states that a stepper returned as `Ok` but that
//!   are not finite ([`StepError::NonFinite`], `what = "state after step"`) or that violate a
//!   guard ([`StepError::GuardViolated`], see [`crate::guards`]): it restores the state from
//!   before the step, so after any failed run the caller's `state`, the summary's
//!   [`crate::RunSummary::last_state`] and [`crate::driver::RunFailure::last_good`] all hold the
//!   last good state, and the observers (CSV rows included) have seen exactly the states up to
//!   it.
//!
//! Every variant carries `step`, the index of the failing step (the number of steps the stepper
//! had completed before it), and `t`, the time of the state the step started from (the last
//! good state's time).

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
    /// The linear system of a linearly-implicit step could be factored, but its estimated
    /// condition number exceeds the limit the user set
    /// ([`crate::linalg::SolveOptions::max_condition`], e.g.
    /// [`crate::ZhangSkeel::with_max_condition`]): near-singular.
    #[error("step {step} (t = {t}): the {n}x{n} linear system is near-singular (condition estimate {condition:e} > limit {limit:e})")]
    IllConditioned {
        /// Failing step.
        step: u64,
        /// Time at the start of the step.
        t: f64,
        /// Dimension.
        n: usize,
        /// Estimated 1-norm condition number `κ̂₁` (a lower bound of `κ₁`, see
        /// [`crate::linalg::condition_estimate`]).
        condition: f64,
        /// The user's limit.
        limit: f64,
    },
    /// A state produced by a successful step violated a guard (an energy drift or a constraint
    /// residual beyond a user-set limit, see [`crate::guards`]). Reported by the driver, which
    /// discards the offending state: the caller holds the state *before* the step. (The
    /// stepper has counted the discarded step: its `steps_taken()` is `step + 1`.)
    #[error("step {step} (t = {t}): {what} = {value:e} exceeds the limit {limit:e}")]
    GuardViolated {
        /// Failing step (the one that produced the offending state).
        step: u64,
        /// Time at the start of the step (the last good state's time).
        t: f64,
        /// The guarded quantity (e.g. "energy drift |E - E0|").
        what: &'static str,
        /// Its value in the offending state.
        value: f64,
        /// The limit.
        limit: f64,
    },
    /// The linear system needs one of faer's factorizations, and this build lacks them
    /// (zs-runtime without its `faer` feature; see [`crate::sparse`]).
    #[error("step {step} (t = {t}): the {n}x{n} linear system {reason}: build zs-runtime with its `faer` feature")]
    NeedsFaer {
        /// Failing step.
        step: u64,
        /// Time at the start of the step.
        t: f64,
        /// Dimension.
        n: usize,
        /// Why.
        reason: &'static str,
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
            | StepError::IllConditioned { step, .. }
            | StepError::GuardViolated { step, .. }
            | StepError::NonFinite { step, .. }
            | StepError::InvalidStepSize { step, .. }
            | StepError::NeedsFaer { step, .. }
            | StepError::NotConverged { step, .. } => *step,
        }
    }

    /// The same error re-stamped with another step index and start time (e.g. a composition
    /// or Langevin stepper reporting its inner stepper's failure under its own step index).
    /// Every variant is re-stamped.
    pub fn with_step(mut self, new_step: u64, new_t: f64) -> StepError {
        match &mut self {
            StepError::SingularMatrix { step, t, .. }
            | StepError::IllConditioned { step, t, .. }
            | StepError::GuardViolated { step, t, .. }
            | StepError::NonFinite { step, t, .. }
            | StepError::InvalidStepSize { step, t, .. }
            | StepError::NeedsFaer { step, t, .. }
            | StepError::NotConverged { step, t, .. } => {
                *step = new_step;
                *t = new_t;
            }
        }
        self
    }

    /// Time of the state the failing step started from (the last good state's time).
    pub fn t(&self) -> f64 {
        match self {
            StepError::SingularMatrix { t, .. }
            | StepError::IllConditioned { t, .. }
            | StepError::GuardViolated { t, .. }
            | StepError::NonFinite { t, .. }
            | StepError::InvalidStepSize { t, .. }
            | StepError::NeedsFaer { t, .. }
            | StepError::NotConverged { t, .. } => *t,
        }
    }

    /// A short name of the kind of failure (`"singular-matrix"`, `"ill-conditioned"`,
    /// `"guard-violated"`, `"non-finite"`, `"invalid-step-size"`, `"not-converged"`), stable
    /// for scripts and status files.
    pub fn kind(&self) -> &'static str {
        match self {
            StepError::SingularMatrix { .. } => "singular-matrix",
            StepError::IllConditioned { .. } => "ill-conditioned",
            StepError::GuardViolated { .. } => "guard-violated",
            StepError::NonFinite { .. } => "non-finite",
            StepError::InvalidStepSize { .. } => "invalid-step-size",
            StepError::NeedsFaer { .. } => "needs-faer",
            StepError::NotConverged { .. } => "not-converged",
        }
    }
}
