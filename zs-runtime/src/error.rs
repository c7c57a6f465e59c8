//! Typed failures of a step. A step that fails leaves the state it was given untouched, so the
//! caller always holds the last good state.
//!
//! [`StepError`] is *where* (the index of the failing step and the time of the state it started
//! from) and *what* ([`StepErrorKind`]): a failed linear solve ([`SolveFailure`], layered in with
//! `#[from]`), a non-finite [`Quantity`], an invalid step size, a violated guard, a nonlinear
//! solve that did not converge.
//!
//! Where the last good state is: [`StepError`] is not generic over the dimension, so it does not
//! carry the state itself. Instead every producer guarantees that the caller's state *is* the
//! last good state when an error comes back:
//! - a [`crate::Stepper::step`] that returns `Err` leaves its `state` argument bit-for-bit as it
//!   was (the contract of the trait);
//! - the [`crate::driver`] additionally rejects states that a stepper returned as `Ok` but that
//!   are not finite ([`Quantity::StateAfterStep`]) or that violate a guard
//!   ([`StepErrorKind::GuardViolated`], see [`crate::guards`]): it restores the state from
//!   before the step, so after any failed run the caller's `state` and
//!   [`crate::driver::RunFailure::last_good`] (the summary's [`crate::RunSummary::failure`])
//!   both hold the last good state, and the observers (CSV rows included) have seen exactly the states up to
//!   it.

pub use crate::linalg::{Operand, SolveFailure};

/// Why a step failed, and where: `step` is the index of the failing step (the number of steps
/// the stepper had completed before it), `t` the time of the state the step started from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("step {step} (t = {t}): {kind}")]
pub struct StepError {
    /// Index of the failing step.
    pub step: u64,
    /// Time of the state the failing step started from (the last good state's time).
    pub t: f64,
    /// What went wrong.
    pub kind: StepErrorKind,
}

/// `x` for a person: 4 significant digits, trailing zeros dropped (`0.4406`, `0.4`, `1250`),
/// in scientific notation outside `[1e-3, 1e6)` (`2.5e-7`).
pub(crate) fn readable(x: f64) -> String {
    readable_to(x, 4)
}

/// `x` with `digits` significant digits (trailing zeros dropped; scientific outside
/// `1e-3 ..< 1e6`).
fn readable_to(x: f64, digits: i32) -> String {
    let a = x.abs();
    if !x.is_finite() || a == 0.0 {
        return format!("{x}");
    }
    if !(1e-3..1e6).contains(&a) {
        let precision = (digits - 1).max(0) as usize;
        let s = format!("{x:.precision$e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.')
        } else {
            m
        };
        return format!("{m}e{e}");
    }
    let decimals = (digits - 1 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `value` readable, with as many more digits as it takes not to read as `limit` (a guard's
/// value just past its limit: "1.0503 exceeds the limit 1.05", not "1.05 … 1.05").
pub(crate) fn readable_beyond(value: f64, limit: f64) -> String {
    let shown = readable(limit);
    (4..=17)
        .map(|d| readable_to(value, d))
        .find(|v| *v != shown)
        .unwrap_or_else(|| format!("{value}"))
}

/// What went wrong in a failed step (see [`StepError`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StepErrorKind {
    /// The linear system of a linearly-implicit step (e.g. `M + βh²H` of Z&S eq. 3) could not be
    /// solved: singular to working precision, beyond the user's condition limit, non-finite, or
    /// needing a factorization the build lacks.
    #[error(transparent)]
    Solve(#[from] SolveFailure),
    /// A non-finite value (NaN or ±∞) appeared in a quantity of the step.
    #[error("non-finite value in {0}")]
    NonFinite(Quantity),
    /// The step size is zero or not finite (or, for Langevin, not positive).
    #[error("invalid step size h = {h}")]
    InvalidStepSize {
        /// The offending step size.
        h: f64,
    },
    /// A state produced by a successful step violated a guard (an energy drift or a constraint
    /// residual beyond a user-set limit, see [`crate::guards`]). Reported by the driver, which
    /// discards the offending state: the caller holds the state *before* the step. (The
    /// stepper has counted the discarded step: its `steps_taken()` is `step + 1`.)
    #[error("{what} = {} exceeds the limit {}", readable_beyond(*.value, *.limit), readable(*.limit))]
    GuardViolated {
        /// The guarded quantity (e.g. [`crate::guards::ENERGY_DRIFT`]).
        what: &'static str,
        /// Its value in the offending state.
        value: f64,
        /// The limit.
        limit: f64,
    },
    /// The state does not have the system's size (a `q` or `v` of another length): nothing was
    /// changed.
    #[error("{what} has {got} entries, the system has {expected} coordinates")]
    WrongSize {
        /// `"q"` or `"v"`.
        what: &'static str,
        /// The system's dimension.
        expected: usize,
        /// The state's length.
        got: usize,
    },
    /// SETTLE could not place a rigid molecule ([`crate::settle::SettleError`]).
    #[error(transparent)]
    Settle(#[from] crate::settle::SettleError),
    /// An iterative solve (Newton, SHAKE) did not converge.
    #[error("{solver} did not converge in {iterations} iterations (residual {residual:e})")]
    NotConverged {
        /// Which solver (e.g. "SHAKE", "Newmark Newton").
        solver: &'static str,
        /// Iterations performed.
        iterations: usize,
        /// Final residual.
        residual: f64,
    },
}

/// A quantity of a step that can turn out non-finite ([`StepErrorKind::NonFinite`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Quantity {
    /// `∇V`.
    Gradient,
    /// `Hess V`.
    Hessian,
    /// The Hessian of the stiff part (Z&Ss-stiff, eq. 19).
    StiffHessian,
    /// The third contraction `T(x; a)`.
    ThirdContraction,
    /// Z&S's `f` of eq. 3 (a finite third contraction scaled out of range).
    ZsForce,
    /// `a = −M⁻¹∇V`.
    Acceleration,
    /// The new position of a step.
    NewPosition,
    /// The new velocity of a step.
    NewVelocity,
    /// Newmark's predictor `q_k + h q̇_k + (h²/2) a_k`.
    NewmarkPredictor,
    /// An iterate of a Newton solve.
    NewtonIterate,
    /// Newmark's residual of eq. 12.
    NewmarkResidual,
    /// Push-forward Newmark's residual of eq. 14.
    PushForwardResidual,
    /// The fast gradient `∇W` of the impulse methods.
    FastGradient,
    /// The slow force of the impulse methods.
    SlowForce,
    /// The slow gradient `∇U` of the impulse methods.
    SlowGradient,
    /// The velocities after the Ornstein–Uhlenbeck flow of Langevin dynamics.
    OrnsteinUhlenbeckVelocities,
    /// A state a stepper returned as good (caught by the driver).
    StateAfterStep,
    /// The state a step was given.
    State,
    /// The constraint values `g`.
    Constraints,
    /// The constraint Jacobian `G`.
    ConstraintJacobian,
    /// The Lagrange multipliers.
    Multipliers,
    /// `M⁻¹`.
    InverseMasses,
    /// An iterate of the SHAKE solve.
    ShakeIterate,
    /// The Runge–Kutta layer of a variational integrator.
    RungeKuttaLayer,
    /// The projection onto the constraints.
    Projection,
    /// The discrete momentum `μ` (Phase A of a variational step).
    DiscreteMomentum,
    /// An update of Phase B of a variational step.
    PhaseBUpdate,
    /// The residual of Phase B of a variational step.
    PhaseBResidual,
    /// A quantity of a stepper defined outside this crate.
    Other(&'static str),
}

impl core::fmt::Display for Quantity {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Quantity::Gradient => "gradient",
            Quantity::Hessian => "Hessian",
            Quantity::StiffHessian => "stiff Hessian",
            Quantity::ThirdContraction => "third contraction",
            Quantity::ZsForce => "f (Z&S eq. 3)",
            Quantity::Acceleration => "acceleration",
            Quantity::NewPosition => "new position",
            Quantity::NewVelocity => "new velocity",
            Quantity::NewmarkPredictor => "Newmark predictor",
            Quantity::NewtonIterate => "Newton iterate",
            Quantity::NewmarkResidual => "Newmark residual",
            Quantity::PushForwardResidual => "push-forward Newmark residual",
            Quantity::FastGradient => "fast gradient",
            Quantity::SlowForce => "slow force",
            Quantity::SlowGradient => "slow gradient",
            Quantity::OrnsteinUhlenbeckVelocities => "Ornstein-Uhlenbeck velocities",
            Quantity::StateAfterStep => "state after step",
            Quantity::State => "state",
            Quantity::Constraints => "constraints",
            Quantity::ConstraintJacobian => "constraint Jacobian",
            Quantity::Multipliers => "multipliers",
            Quantity::InverseMasses => "inverse masses",
            Quantity::ShakeIterate => "SHAKE iterate",
            Quantity::RungeKuttaLayer => "Runge–Kutta layer",
            Quantity::Projection => "projection onto the constraints",
            Quantity::DiscreteMomentum => "discrete momentum μ (Phase A)",
            Quantity::PhaseBUpdate => "Phase B update",
            Quantity::PhaseBResidual => "Phase B residual",
            Quantity::Other(what) => what,
        })
    }
}

impl SolveFailure {
    /// The [`StepError`] of step `step` started at time `t`.
    pub fn at(self, step: u64, t: f64) -> StepError {
        StepError::new(step, t, self)
    }
}

impl StepError {
    /// The failure `kind` of step `step`, started at time `t`.
    pub fn new(step: u64, t: f64, kind: impl Into<StepErrorKind>) -> Self {
        Self {
            step,
            t,
            kind: kind.into(),
        }
    }

    /// A non-finite `what` in step `step`, started at time `t`.
    pub fn non_finite(step: u64, t: f64, what: Quantity) -> Self {
        Self::new(step, t, StepErrorKind::NonFinite(what))
    }

    /// Index of the failing step.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Time of the state the failing step started from (the last good state's time).
    pub fn t(&self) -> f64 {
        self.t
    }

    /// The same error re-stamped with another step index and start time (e.g. a composition
    /// or Langevin stepper reporting its inner stepper's failure under its own step index).
    pub fn with_step(mut self, step: u64, t: f64) -> StepError {
        self.step = step;
        self.t = t;
        self
    }

    /// A short stable code of the kind of failure (`"singular-matrix"`, `"ill-conditioned"`,
    /// `"needs-faer"`, `"guard-violated"`, `"non-finite"`, `"invalid-step-size"`,
    /// `"not-converged"`, `"wrong-size"`), for scripts and status files.
    pub fn code(&self) -> &'static str {
        match &self.kind {
            StepErrorKind::Solve(SolveFailure::Singular { .. }) => "singular-matrix",
            StepErrorKind::Solve(SolveFailure::IllConditioned { .. }) => "ill-conditioned",
            StepErrorKind::Solve(SolveFailure::NeedsFaer { .. }) => "needs-faer",
            StepErrorKind::Solve(SolveFailure::NonFinite(_)) | StepErrorKind::NonFinite(_) => {
                "non-finite"
            }
            StepErrorKind::GuardViolated { .. } => "guard-violated",
            StepErrorKind::InvalidStepSize { .. } => "invalid-step-size",
            StepErrorKind::NotConverged { .. } => "not-converged",
            StepErrorKind::Settle(_) => "settle",
            StepErrorKind::WrongSize { .. } => "wrong-size",
        }
    }

    /// True when the failure is a non-finite value, in a quantity of the step or in a linear
    /// solve.
    pub fn is_non_finite(&self) -> bool {
        self.code() == "non-finite"
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_as_a_person_writes_them() {
        use super::{readable, readable_beyond};
        assert_eq!(readable(4.406291083908534e-1), "0.4406");
        assert_eq!(readable(0.4), "0.4");
        assert_eq!(readable(5e-1), "0.5");
        assert_eq!(readable(1250.0), "1250");
        assert_eq!(readable(-12.3456), "-12.35");
        assert_eq!(readable(2.5e-7), "2.5e-7");
        assert_eq!(readable(3.0e8), "3e8");
        assert_eq!(readable(0.0), "0");
        assert_eq!(readable_beyond(1.0503, 1.05), "1.0503");
        assert_eq!(readable_beyond(1.05000001, 1.05), "1.05000001");
        assert_eq!(readable_beyond(0.4406291, 0.4), "0.4406");
        assert_eq!(readable(f64::NAN), "NaN");
    }
}
