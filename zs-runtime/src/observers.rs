//! Observers: quantities monitored along a run by the [`crate::driver`].
//!
//! An [`Observer<P, V>`] sees the target `P` the stepper integrates (a [`Model`] for
//! unconstrained and penalized methods) and the state after every step, so it can compute
//! e.g. the total energy `½vᵀMv + V(q)` of that potential. Observers that need more context
//! (the constraints `g` of a [`crate::MechanicalSystem`] while the target is its penalized potential)
//! hold it themselves. Observers preallocate at construction: observing a step allocates
//! nothing.

use core::marker::PhantomData;

use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::error::StepErrorKind;
use crate::model::{ConstrainedModel, ConstraintSpace};
use crate::vector::Vector;
use crate::{Measured, Model, StateOf, StepError};

/// A guard's rejection of a state (see [`crate::guards`]): the guarded quantity, its value and
/// the limit it exceeded. Defined here, with the [`Observer`] trait that returns it, so that the
/// guards build on the observers and not the other way round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GuardViolation {
    /// The guarded quantity (e.g. `"energy drift |E - E0|"`).
    pub what: &'static str,
    /// Its value in the rejected state.
    pub value: f64,
    /// The limit.
    pub limit: f64,
}

impl GuardViolation {
    /// The [`crate::StepErrorKind::GuardViolated`] of step `step`, started at time `t`.
    pub fn at(self, step: u64, t: f64) -> StepError {
        StepError::new(
            step,
            t,
            StepErrorKind::GuardViolated {
                what: self.what,
                value: self.value,
                limit: self.limit,
            },
        )
    }
}

/// Something that watches a run.
///
/// The driver calls [`Observer::start`] once with the initial state, then after every
/// successful step first [`Observer::check`] on every observer (a guard may reject the new
/// state: the run then stops with [`crate::StepErrorKind::GuardViolated`] and *no* observer sees that
/// state) and then [`Observer::observe`] on every observer; at the end
/// [`Observer::stopped_early`] if the run failed, and [`Observer::finish`] once (also after a
/// failed step; the last state observed is then the last good one).
///
/// For checkpointed runs ([`crate::driver::run_checkpointed`], [`crate::driver::resume`]) an
/// observer that accumulates something over the run (an initial energy, a maximum, rows of a
/// file) saves it in [`Observer::save_checkpoint`] and restores it in
/// [`Observer::restore_checkpoint`]; a resumed run calls the latter *instead of*
/// [`Observer::start`]. The defaults save nothing: such an observer restarts from scratch.
///
/// All methods but `observe` have defaults, so an observer needs only `observe`.
pub trait Observer<P: ?Sized, V> {
    /// The initial state. The default forwards to [`Observer::observe`].
    fn start(&mut self, target: &P, state: &StateOf<V>) {
        self.observe(target, state);
    }
    /// Guard: inspect the state a step just produced, before any observer sees it, and reject
    /// it with a [`GuardViolation`] (see [`crate::guards`]). The default accepts everything.
    fn check(&mut self, target: &P, state: &StateOf<V>) -> Result<(), GuardViolation> {
        let _ = (target, state);
        Ok(())
    }
    /// Guard of a step: inspect the state a step just produced together with the state it
    /// started from (which the driver keeps anyway). The default ignores `before` and calls
    /// [`Observer::check`]; a guard on what a step changed (e.g. [`crate::MoveGuard`]) overrides
    /// it and needs no copy of its own.
    fn check_step(
        &mut self,
        target: &P,
        before: &StateOf<V>,
        state: &StateOf<V>,
    ) -> Result<(), GuardViolation> {
        let _ = before;
        self.check(target, state)
    }
    /// [`Observer::check_step`] with what the stepper measured of the new state in its own
    /// passes ([`Measured`]), which the guard may use instead of reading the state again. The
    /// driver calls this one; the default calls [`Observer::check_step`].
    fn check_measured(
        &mut self,
        target: &P,
        before: &StateOf<V>,
        state: &StateOf<V>,
        measured: &Measured,
    ) -> Result<(), GuardViolation> {
        let _ = measured;
        self.check_step(target, before, state)
    }
    /// The state after a step.
    fn observe(&mut self, target: &P, state: &StateOf<V>);
    /// [`Observer::observe`] with what the stepper measured of the state ([`Measured`]). The
    /// driver calls this one after a step; the default calls [`Observer::observe`].
    fn observe_measured(&mut self, target: &P, state: &StateOf<V>, measured: &Measured) {
        let _ = measured;
        self.observe(target, state);
    }
    /// The run stopped on `error` before its planned end; called before
    /// [`Observer::finish`]. The default does nothing; [`crate::CsvRecorder`] marks its file
    /// as ended early.
    fn stopped_early(&mut self, error: &StepError) {
        let _ = error;
    }
    /// End of the run: flush, close, report an I/O error deferred from `observe`.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    /// Save what this observer accumulated so far under `out` (called by the driver at a
    /// checkpoint, between two steps; a file writer flushes and syncs here).
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        let _ = out;
        Ok(())
    }
    /// Restore what [`Observer::save_checkpoint`] saved (called instead of
    /// [`Observer::start`] when a run resumes).
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let _ = from;
        Ok(())
    }
}

/// Total energy `½ vᵀ M v + V(q)` of `state` under `potential`.
pub fn total_energy<P: Model<V> + ?Sized, V: Vector>(potential: &P, state: &StateOf<V>) -> f64 {
    potential.kinetic_energy(&state.v) + potential.potential_at(&state.q)
}

/// [`total_energy`] of the state a step produced, from what the stepper measured of it: `V`
/// found by the positions' key ([`Model::potential_at_keyed`]), the kinetic energy the
/// stepper's own where the model takes it ([`Model::kinetic_energy_measured`]). The same
/// value.
pub fn total_energy_measured<P: Model<V> + ?Sized, V: Vector>(
    potential: &P,
    state: &StateOf<V>,
    measured: &Measured,
) -> f64 {
    let v = match measured.positions_key() {
        Some(key) => potential.potential_at_keyed(&state.q, key),
        None => potential.potential_at(&state.q),
    };
    potential.kinetic_energy_measured(&state.v, measured) + v
}

/// Euclidean norm `‖g(q)‖` of the constraint residual.
pub fn constraint_norm<S, V, C>(system: &S, q: &V) -> f64
where
    S: ConstrainedModel<V, C> + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
{
    system.constraint_norm(q)
}

/// Total energy `E = ½vᵀMv + V(q)` of the target potential along the run: initial value, largest
/// deviation `max |E - E₀|` and final drift `E_end - E₀`.
///
/// For a penalized run the target is `V_ω`, so this is the energy of the penalized system
/// (the one a symplectic method nearly conserves).
#[derive(Debug, Clone, Default)]
pub struct EnergyObserver {
    initial: Option<f64>,
    last: f64,
    max_abs_drift: f64,
    samples: u64,
}

impl EnergyObserver {
    /// An observer with no sample yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// `E₀`, the first energy observed (`None` before any).
    pub fn initial_energy(&self) -> Option<f64> {
        self.initial
    }
    /// The last energy observed (NaN before any).
    pub fn last_energy(&self) -> f64 {
        if self.initial.is_some() {
            self.last
        } else {
            f64::NAN
        }
    }
    /// `max |E - E₀|` over the samples (NaN if a sample was NaN).
    pub fn max_abs_drift(&self) -> f64 {
        self.max_abs_drift
    }
    /// `max |E - E₀| / |E₀|` (infinite if `E₀ = 0` and the energy moved).
    pub fn max_relative_drift(&self) -> f64 {
        self.max_abs_drift / self.initial.unwrap_or(f64::NAN).abs()
    }
    /// `E_last - E₀` (NaN before any sample).
    pub fn final_drift(&self) -> f64 {
        self.last_energy() - self.initial.unwrap_or(f64::NAN)
    }
    /// Number of samples taken (initial state included).
    pub fn samples(&self) -> u64 {
        self.samples
    }
    /// Record one energy value.
    pub fn record(&mut self, energy: f64) {
        self.samples += 1;
        self.last = energy;
        match self.initial {
            None => self.initial = Some(energy),
            Some(e0) => {
                let d = (energy - e0).abs();
                // NaN-propagating max: a NaN energy must not be hidden.
                if d > self.max_abs_drift || d.is_nan() {
                    self.max_abs_drift = d;
                }
            }
        }
    }
}

impl EnergyObserver {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64s("initial", self.initial.as_slice());
        out.set_f64("last", self.last);
        out.set_f64("max_abs_drift", self.max_abs_drift);
        out.set_u64("samples", self.samples);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let initial = from.f64s("initial")?;
        self.initial = initial.first().copied();
        self.last = from.f64("last")?;
        self.max_abs_drift = from.f64("max_abs_drift")?;
        self.samples = from.u64("samples")?;
        Ok(())
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Observer<P, V> for EnergyObserver {
    fn observe(&mut self, target: &P, state: &StateOf<V>) {
        self.record(total_energy(target, state));
    }
    fn observe_measured(&mut self, target: &P, state: &StateOf<V>, measured: &Measured) {
        self.record(total_energy_measured(target, state, measured));
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        self.save(out);
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.restore(from)
    }
}

/// The constraint residual `‖g(q)‖` of a [`ConstrainedModel`] along a run (typically a penalized
/// run, where `g = 0` holds only approximately): the largest and the last value.
#[derive(Debug)]
pub struct ConstraintObserver<'a, S: ?Sized, V, C> {
    system: &'a S,
    storage: PhantomData<fn() -> (V, C)>,
    max: f64,
    last: f64,
    samples: u64,
}

impl<'a, S, V, C> ConstraintObserver<'a, S, V, C>
where
    S: ConstrainedModel<V, C> + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
{
    /// Observe the constraints of `system`, whatever the target of the run.
    pub fn new(system: &'a S) -> Self {
        Self {
            system,
            storage: PhantomData,
            max: 0.0,
            last: f64::NAN,
            samples: 0,
        }
    }
    /// `max ‖g(q)‖` over the samples (NaN if a sample was NaN).
    pub fn max_residual(&self) -> f64 {
        self.max
    }
    /// The last `‖g(q)‖` (NaN before any sample).
    pub fn last_residual(&self) -> f64 {
        self.last
    }
    /// Number of samples.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

impl<P, S, V, C> Observer<P, V> for ConstraintObserver<'_, S, V, C>
where
    P: ?Sized,
    S: ConstrainedModel<V, C> + ?Sized,
    V: ConstraintSpace<C>,
    C: Vector,
{
    fn observe(&mut self, _target: &P, state: &StateOf<V>) {
        let r = self.system.constraint_norm(&state.q);
        self.samples += 1;
        self.last = r;
        if r > self.max || r.is_nan() {
            self.max = r;
        }
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        out.set_f64("max", self.max);
        out.set_f64("last", self.last);
        out.set_u64("samples", self.samples);
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.max = from.f64("max")?;
        self.last = from.f64("last")?;
        self.samples = from.u64("samples")?;
        Ok(())
    }
}

/// Linear momentum `P_g = Σ_{i ∈ g} m_i v_i` over chosen groups of coordinates (e.g. all the
/// x-coordinates of a set of particles), along a run: initial, last and largest deviation per
/// group. Conserved by every method here when the potential is translation-invariant along
/// the group's direction.
#[derive(Debug, Clone)]
pub struct MomentumObserver {
    groups: Vec<Vec<usize>>,
    /// `Some(dim)`: the groups are made per component at the first state.
    by_component: Option<usize>,
    initial: Vec<f64>,
    last: Vec<f64>,
    max_dev: Vec<f64>,
    masses: Vec<f64>,
    /// The dimension the groups were made and checked for.
    prepared: Option<usize>,
    started: bool,
}

impl MomentumObserver {
    /// One momentum per group of coordinate indices (checked against the system's dimension at
    /// the first state: an index out of range panics there).
    pub fn new(groups: Vec<Vec<usize>>) -> Self {
        let k = groups.len();
        Self {
            groups,
            by_component: None,
            initial: vec![0.0; k],
            last: vec![0.0; k],
            max_dev: vec![0.0; k],
            masses: Vec::new(),
            prepared: None,
            started: false,
        }
    }

    /// Make the groups and buffers for a system of `n` coordinates now (otherwise done at the
    /// first state): nothing is allocated during the run.
    ///
    /// # Panics
    /// As at the first state: an index out of range, or `n` not a multiple of the
    /// `by_component` dimension.
    pub fn with_dimension(mut self, n: usize) -> Self {
        self.prepare(n);
        self
    }

    /// Particles in `dim` dimensions stored as `(x₁, y₁, …, x₂, y₂, …)`: one group per component,
    /// `{c, c + dim, c + 2·dim, …}` for `c < dim` (made at the first state, whose dimension `dim`
    /// must divide).
    ///
    /// # Panics
    /// If `dim` is 0.
    pub fn by_component(dim: usize) -> Self {
        assert!(dim > 0, "MomentumObserver: the dimension must be positive");
        let mut o = Self::new(vec![Vec::new(); dim]);
        o.by_component = Some(dim);
        o
    }

    /// The coordinate groups (for [`MomentumObserver::by_component`], once the first state was
    /// seen).
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }
    /// Momentum of each group at the first sample.
    pub fn initial(&self) -> &[f64] {
        &self.initial
    }
    /// Momentum of each group at the last sample.
    pub fn last(&self) -> &[f64] {
        &self.last
    }
    /// `max |P_g - P_g(0)|` per group.
    pub fn max_deviation(&self) -> &[f64] {
        &self.max_dev
    }

    /// Make the groups for a system of `n` coordinates and check them.
    ///
    /// # Panics
    /// If an index is out of range or `n` is not a multiple of the `by_component` dimension.
    fn prepare(&mut self, n: usize) {
        if self.prepared == Some(n) {
            return;
        }
        if let Some(dim) = self.by_component {
            assert!(
                n.is_multiple_of(dim),
                "MomentumObserver: {dim} does not divide {n}"
            );
            self.groups = (0..dim).map(|c| (c..n).step_by(dim).collect()).collect();
        }
        for g in &self.groups {
            for &i in g {
                assert!(
                    i < n,
                    "MomentumObserver: coordinate {i} out of range 0..{n}"
                );
            }
        }
        self.masses.resize(n, 0.0);
        self.prepared = Some(n);
    }

    /// Record the momenta of `v` with masses `masses`.
    pub fn record(&mut self, masses: &[f64], v: &[f64]) {
        for (k, g) in self.groups.iter().enumerate() {
            let p: f64 = g.iter().map(|&i| masses[i] * v[i]).sum();
            self.last[k] = p;
            if !self.started {
                self.initial[k] = p;
            } else {
                let d = (p - self.initial[k]).abs();
                if d > self.max_dev[k] || d.is_nan() {
                    self.max_dev[k] = d;
                }
            }
        }
        self.started = true;
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Observer<P, V> for MomentumObserver {
    fn start(&mut self, target: &P, state: &StateOf<V>) {
        self.prepare(state.v.len());
        self.observe(target, state);
    }
    fn observe(&mut self, target: &P, state: &StateOf<V>) {
        self.prepare(state.v.len());
        let mut masses = core::mem::take(&mut self.masses);
        target.masses_into_slice(&mut masses);
        self.record(&masses, state.v.as_slice());
        self.masses = masses;
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> std::io::Result<()> {
        out.set_f64s("initial", &self.initial);
        out.set_f64s("last", &self.last);
        out.set_f64s("max_dev", &self.max_dev);
        out.set_u64("started", u64::from(self.started));
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let k = self.groups.len();
        let get = |key: &str| -> Result<Vec<f64>, CheckpointError> {
            let v = from.f64s(key)?;
            if v.len() == k {
                Ok(v)
            } else {
                Err(CheckpointError::Mismatch(format!(
                    "momentum observer: {} groups saved, {k} now",
                    v.len()
                )))
            }
        };
        self.initial = get("initial")?;
        self.last = get("last")?;
        self.max_dev = get("max_dev")?;
        self.started = from.u64("started")? != 0;
        Ok(())
    }
}

/// Adapts a closure `FnMut(&P, &StateOf<V>)` into an [`Observer`].
#[derive(Debug, Clone)]
pub struct FnObserver<F>(pub F);

impl<P: ?Sized, V, F: FnMut(&P, &StateOf<V>)> Observer<P, V> for FnObserver<F> {
    fn observe(&mut self, target: &P, state: &StateOf<V>) {
        (self.0)(target, state);
    }
}
