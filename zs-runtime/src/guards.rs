//! Guards: user-set limits on quantities that a correct run keeps small, checked by the
//! [`crate::driver`] after every step.
//!
//! A guard is an [`Observer`] whose [`Observer::check`] rejects a state. The driver calls
//! `check` on every observer after each successful step and *before* any observer sees the new
//! state; on the first rejection it discards the state (the caller keeps the state from before
//! the step), stops, and reports [`crate::StepErrorKind::GuardViolated`] with the step index, the guarded
//! quantity, its value and the limit. Observers (CSV rows included) thus hold exactly the states
//! up to the last good one.
//!
//! - [`EnergyGuard`]: `|E - E₀| ≤ limit` for the total energy `E = ½vᵀMv + V(q)` of the
//!   run's target (for a penalized run, `V_ω` of Tao & Owhadi eq. 7, the energy a symplectic
//!   method nearly conserves), with an absolute or a relative limit;
//! - [`ConstraintGuard`]: `‖g(q)‖ ≤ limit` for the constraints of a [`crate::ConstrainedModel`]
//!   (e.g. the penalized double pendulum, where `g = O(1/ω)` holds only approximately);
//! - [`MoveGuard`]: no body moves farther than a limit in one step (under a pair cutoff, the
//!   neighbour-list skin: a step that moves a body that far is far too long for the potential).
//!
//! Checking allocates nothing.
//!
//! ```
//! use zs_runtime::guards::EnergyGuard;
//! use zs_runtime::{driver::run, Potential, State, StepErrorKind, VelocityVerlet};
//!
//! struct Spring; // V = ½ q², ω = 1
//! impl Potential<1> for Spring {
//!     fn masses(&self) -> [f64; 1] { [1.0] }
//!     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
//!     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
//!     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
//!     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
//! }
//! // hω = 1.9: Verlet is stable but its energy error is large.
//! let mut vv = VelocityVerlet::new(1.9);
//! let mut state = State::new([1.0], [0.0]);
//! let mut guard = EnergyGuard::relative(0.5);
//! let summary = run(&mut vv, &Spring, &mut state, 100.0, &mut [&mut guard]);
//! let failure = summary.failure().expect("the guard stopped the run");
//! assert!(matches!(failure.error.kind, StepErrorKind::GuardViolated { .. }));
//! assert_eq!(failure.last_good, state); // the state before the offending step
//! ```

use core::marker::PhantomData;

use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::model::{ConstrainedModel, ConstraintSpace};
use crate::observers::{Observer, total_energy, total_energy_measured};
use crate::vector::{Vector, body_moves2, point_moves2};
use crate::{Measured, Model, StateOf};

pub use crate::observers::GuardViolation;

#[inline]
fn within(what: &'static str, value: f64, limit: f64) -> Result<(), GuardViolation> {
    if value <= limit {
        Ok(())
    } else {
        Err(GuardViolation { what, value, limit })
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Limit {
    Absolute(f64),
    Relative(f64),
}

/// Stops a run when the total energy drifts: `|E - E₀| > limit`, `E = ½vᵀMv + V(q)` of the
/// run's target, `E₀` its value at the initial state (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct EnergyGuard {
    limit: Limit,
    initial: Option<f64>,
    max_seen: f64,
}

/// The `what` of an [`EnergyGuard`] violation.
pub const ENERGY_DRIFT: &str = "energy drift |E - E0|";
/// The `what` of a [`ConstraintGuard`] violation.
pub const CONSTRAINT_RESIDUAL: &str = "constraint residual |g(q)|";
/// [`GuardViolation::what`] of [`MoveGuard`].
pub const ONE_STEP_MOVE: &str =
    "largest distance a body moved in one step (limit: the neighbour-list skin)";

impl EnergyGuard {
    /// Stop when `|E - E₀| > max_abs_drift`.
    ///
    /// # Panics
    /// If `max_abs_drift` is negative or NaN.
    pub fn new(max_abs_drift: f64) -> Self {
        assert!(
            max_abs_drift >= 0.0,
            "EnergyGuard: the limit must be >= 0, got {max_abs_drift}"
        );
        Self {
            limit: Limit::Absolute(max_abs_drift),
            initial: None,
            max_seen: 0.0,
        }
    }

    /// Stop when `|E - E₀| > max_relative_drift · |E₀|`.
    ///
    /// # Panics
    /// If `max_relative_drift` is negative or NaN.
    pub fn relative(max_relative_drift: f64) -> Self {
        assert!(
            max_relative_drift >= 0.0,
            "EnergyGuard: the limit must be >= 0, got {max_relative_drift}"
        );
        Self {
            limit: Limit::Relative(max_relative_drift),
            initial: None,
            max_seen: 0.0,
        }
    }

    /// The absolute limit on `|E - E₀|` (`None` before the run started, for a relative guard).
    pub fn limit(&self) -> Option<f64> {
        match (self.limit, self.initial) {
            (Limit::Absolute(l), _) => Some(l),
            (Limit::Relative(r), Some(e0)) => Some(r * e0.abs()),
            (Limit::Relative(_), None) => None,
        }
    }

    /// `E₀` (`None` before the run started).
    pub fn initial_energy(&self) -> Option<f64> {
        self.initial
    }

    /// The largest `|E - E₀|` among the accepted states.
    pub fn max_seen(&self) -> f64 {
        self.max_seen
    }

    fn drift<P: Model<V> + ?Sized, V: Vector>(
        &self,
        target: &P,
        s: &StateOf<V>,
        measured: &Measured,
    ) -> f64 {
        match self.initial {
            Some(e0) => (total_energy_measured(target, s, measured) - e0).abs(),
            None => 0.0,
        }
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Observer<P, V> for EnergyGuard {
    fn start(&mut self, target: &P, state: &StateOf<V>) {
        self.initial = Some(total_energy(target, state));
        self.max_seen = 0.0;
    }
    fn check(&mut self, target: &P, state: &StateOf<V>) -> Result<(), GuardViolation> {
        self.check_measured(target, state, state, &Measured::default())
    }
    /// `V` found by the new positions' key when the stepper measured it.
    fn check_measured(
        &mut self,
        target: &P,
        _before: &StateOf<V>,
        state: &StateOf<V>,
        measured: &Measured,
    ) -> Result<(), GuardViolation> {
        let limit = self.limit().unwrap_or(f64::INFINITY);
        within(ENERGY_DRIFT, self.drift(target, state, measured), limit)
    }
    fn observe(&mut self, target: &P, state: &StateOf<V>) {
        self.observe_measured(target, state, &Measured::default());
    }
    fn observe_measured(&mut self, target: &P, state: &StateOf<V>, measured: &Measured) {
        let d = self.drift(target, state, measured);
        if d > self.max_seen {
            self.max_seen = d;
        }
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        out.set_f64s("initial", self.initial.as_slice());
        out.set_f64("max_seen", self.max_seen);
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.initial = from.f64s("initial")?.first().copied();
        self.max_seen = from.f64("max_seen")?;
        Ok(())
    }
}

/// Stops a run when the constraint residual `‖g(q)‖` of `system` exceeds a limit, whatever the
/// target of the run (typically `system.penalized(ω)`).
#[derive(Debug)]
pub struct ConstraintGuard<'a, S: ?Sized, V, C> {
    system: &'a S,
    storage: PhantomData<fn() -> (V, C)>,
    limit: f64,
    max_seen: f64,
}

impl<'a, S, V, C> ConstraintGuard<'a, S, V, C>
where
    S: ConstrainedModel<V, C> + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
{
    /// Stop when `‖g(q)‖ > max_residual`.
    ///
    /// # Panics
    /// If `max_residual` is negative or NaN.
    pub fn new(system: &'a S, max_residual: f64) -> Self {
        assert!(
            max_residual >= 0.0,
            "ConstraintGuard: the limit must be >= 0, got {max_residual}"
        );
        Self {
            system,
            storage: PhantomData,
            limit: max_residual,
            max_seen: 0.0,
        }
    }

    /// The limit.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// The largest `‖g(q)‖` among the accepted states (the initial one included).
    pub fn max_seen(&self) -> f64 {
        self.max_seen
    }
}

impl<P, S, V, C> Observer<P, V> for ConstraintGuard<'_, S, V, C>
where
    P: ?Sized,
    S: ConstrainedModel<V, C> + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
{
    fn check(&mut self, _target: &P, state: &StateOf<V>) -> Result<(), GuardViolation> {
        within(
            CONSTRAINT_RESIDUAL,
            self.system.constraint_norm(&state.q),
            self.limit,
        )
    }
    fn observe(&mut self, _target: &P, state: &StateOf<V>) {
        let r = self.system.constraint_norm(&state.q);
        if r > self.max_seen {
            self.max_seen = r;
        }
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        out.set_f64("max_seen", self.max_seen);
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.max_seen = from.f64("max_seen")?;
        Ok(())
    }
}

/// Stops a run when a body moves more than `limit` in one step: bodies are consecutive blocks
/// of `stride` coordinates whose first three are the body's position (its reference site).
///
/// Under a pair cutoff the limit is the neighbour-list skin. The list itself stays right — an
/// assembled system checks it at every evaluation and rebuilds it when a body has moved more
/// than half the skin — but a body that crosses a whole skin in one step means a step far too
/// long for the potential (LAMMPS calls such a rebuild "dangerous"): the run stops with
/// [`crate::StepErrorKind::GuardViolated`] naming the skin, at the last state before. It compares
/// the driver's state before the step with the new one ([`Observer::check_step`]): no copy, and
/// nothing to checkpoint. Called through [`Observer::check`] alone it has no earlier state and
/// accepts.
#[derive(Debug, Clone)]
pub struct MoveGuard {
    limit: f64,
    stride: usize,
    max_seen: f64,
    /// The move `check_step` just measured (what `observe` records).
    checked: Option<f64>,
}

impl MoveGuard {
    /// Stop when a body (blocks of `stride ≥ 3` coordinates) moves more than `limit` in a step.
    ///
    /// # Panics
    /// If `limit` is negative or NaN, or `stride < 3`.
    pub fn new(limit: f64, stride: usize) -> Self {
        assert!(
            limit >= 0.0,
            "MoveGuard: the limit must be >= 0, got {limit}"
        );
        assert!(
            stride >= 3,
            "MoveGuard: a body has at least 3 coordinates, got {stride}"
        );
        Self {
            limit,
            stride,
            max_seen: 0.0,
            checked: None,
        }
    }

    /// The limit.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// The largest one-step move among the accepted steps.
    pub fn max_seen(&self) -> f64 {
        self.max_seen
    }

    /// The largest distance a body moved from `last` to `q` (NaN when a position is not finite).
    pub fn largest_move(&self, last: &[f64], q: &[f64]) -> f64 {
        if last.len() != q.len() {
            return 0.0;
        }
        // No early exit and no branch: the loop vectorizes; a NaN is carried by `nan`. In
        // chunks on rayon's current pool when long (a maximum: the same in any order).
        let stride = self.stride;
        let most = |q: &[f64], last: &[f64]| {
            crate::simd::widest(
                #[inline(always)]
                || {
                    if stride == 3 {
                        point_moves2(q, last)
                    } else {
                        body_moves2(q, last, stride)
                    }
                },
            )
        };
        let (most, nan) = if q.len() < crate::vector::PARALLEL_FROM {
            most(q, last)
        } else {
            use rayon::prelude::*;
            let chunk = crate::vector::VECTOR_CHUNK / stride * stride;
            q.par_chunks(chunk)
                .zip(last.par_chunks(chunk))
                .map(|(q, last)| most(q, last))
                .reduce(|| (0.0, false), |a, b| (a.0.max(b.0), a.1 | b.1))
        };
        if nan { f64::NAN } else { most.sqrt() }
    }
}

impl<P: ?Sized, V: Vector> Observer<P, V> for MoveGuard {
    fn start(&mut self, _target: &P, _state: &StateOf<V>) {
        self.max_seen = 0.0;
        self.checked = None;
    }
    fn check_step(
        &mut self,
        _target: &P,
        before: &StateOf<V>,
        state: &StateOf<V>,
    ) -> Result<(), GuardViolation> {
        let d = self.largest_move(before.q.as_slice(), state.q.as_slice());
        self.checked = Some(d);
        // `within` rejects a NaN (not ≤ the limit).
        within(ONE_STEP_MOVE, d, self.limit)
    }
    /// The stepper's own measure of the largest move of a point body when it took one — the
    /// bits [`MoveGuard::largest_move`] gives — else [`Observer::check_step`].
    fn check_measured(
        &mut self,
        target: &P,
        before: &StateOf<V>,
        state: &StateOf<V>,
        measured: &Measured,
    ) -> Result<(), GuardViolation> {
        match measured.largest_point_move() {
            Some(d) if self.stride == 3 => {
                self.checked = Some(d);
                within(ONE_STEP_MOVE, d, self.limit)
            }
            _ => self.check_step(target, before, state),
        }
    }
    fn observe(&mut self, _target: &P, _state: &StateOf<V>) {
        if let Some(d) = self.checked.take()
            && d > self.max_seen
        {
            self.max_seen = d;
        }
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        out.set_f64("max_seen", self.max_seen);
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.max_seen = from.f64("max_seen")?;
        self.checked = None;
        Ok(())
    }
}
