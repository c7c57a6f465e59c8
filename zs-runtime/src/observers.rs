//! Observers: quantities monitored along a run by the [`crate::driver`].
//!
//! An [`Observer<P, N>`] sees the target `P` the stepper integrates (a [`Potential`] for
//! unconstrained and penalized methods) and the state after every step, so it can compute
//! e.g. the total energy `½vᵀMv + V(q)` of that potential. Observers that need more context
//! (the constraints `g` of a [`MechanicalSystem`] while the target is its penalized potential)
//! hold it themselves. Observers preallocate at construction: observing a step allocates
//! nothing.

use crate::{MechanicalSystem, Potential, State};

/// Something that watches a run.
///
/// The driver calls [`Observer::start`] once with the initial state, [`Observer::observe`]
/// after every successful step, and [`Observer::finish`] once at the end (also after a failed
/// step; the last state observed is then the last good one).
pub trait Observer<P: ?Sized, const N: usize> {
    /// The initial state. The default forwards to [`Observer::observe`].
    fn start(&mut self, target: &P, state: &State<N>) {
        self.observe(target, state);
    }
    /// The state after a step.
    fn observe(&mut self, target: &P, state: &State<N>);
    /// End of the run: flush, close, report an I/O error deferred from `observe`.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Total energy `½ vᵀ M v + V(q)` of `state` under `potential`.
pub fn total_energy<P: Potential<N> + ?Sized, const N: usize>(
    potential: &P,
    state: &State<N>,
) -> f64 {
    state.kinetic_energy(&potential.masses()) + potential.potential(&state.q)
}

/// Euclidean norm `‖g(q)‖` of the constraint residual.
pub fn constraint_norm<S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize>(
    system: &S,
    q: &[f64; N],
) -> f64 {
    system
        .constraints(q)
        .iter()
        .map(|g| g * g)
        .sum::<f64>()
        .sqrt()
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

impl<P: Potential<N> + ?Sized, const N: usize> Observer<P, N> for EnergyObserver {
    fn observe(&mut self, target: &P, state: &State<N>) {
        self.record(total_energy(target, state));
    }
}

/// The constraint residual `‖g(q)‖` of a [`MechanicalSystem`] along a run (typically a penalized
/// run, where `g = 0` holds only approximately): the largest and the last value.
#[derive(Debug)]
pub struct ConstraintObserver<'a, S: ?Sized, const N: usize, const M: usize> {
    system: &'a S,
    max: f64,
    last: f64,
    samples: u64,
}

impl<'a, S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize>
    ConstraintObserver<'a, S, N, M>
{
    /// Observe the constraints of `system`, whatever the target of the run.
    pub fn new(system: &'a S) -> Self {
        Self {
            system,
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

impl<P: ?Sized, S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize> Observer<P, N>
    for ConstraintObserver<'_, S, N, M>
{
    fn observe(&mut self, _target: &P, state: &State<N>) {
        let r = constraint_norm(self.system, &state.q);
        self.samples += 1;
        self.last = r;
        if r > self.max || r.is_nan() {
            self.max = r;
        }
    }
}

/// Linear momentum `P_g = Σ_{i ∈ g} m_i v_i` over chosen groups of coordinates (e.g. all the
/// x-coordinates of a set of particles), along a run: initial, last and largest deviation per
/// group. Conserved by every method here when the potential is translation-invariant along
/// the group's direction.
#[derive(Debug, Clone)]
pub struct MomentumObserver<const N: usize> {
    groups: Vec<Vec<usize>>,
    initial: Vec<f64>,
    last: Vec<f64>,
    max_dev: Vec<f64>,
    started: bool,
}

impl<const N: usize> MomentumObserver<N> {
    /// One momentum per group of coordinate indices.
    ///
    /// # Panics
    /// If an index is `≥ N`.
    pub fn new(groups: Vec<Vec<usize>>) -> Self {
        for g in &groups {
            for &i in g {
                assert!(
                    i < N,
                    "MomentumObserver: coordinate {i} out of range 0..{N}"
                );
            }
        }
        let k = groups.len();
        Self {
            groups,
            initial: vec![0.0; k],
            last: vec![0.0; k],
            max_dev: vec![0.0; k],
            started: false,
        }
    }

    /// Particles in `dim` dimensions stored as `(x₁, y₁, …, x₂, y₂, …)`: one group per component,
    /// `{c, c + dim, c + 2·dim, …}` for `c < dim`.
    ///
    /// # Panics
    /// If `dim` is 0 or does not divide `N`.
    pub fn by_component(dim: usize) -> Self {
        assert!(
            dim > 0 && N % dim == 0,
            "MomentumObserver: {dim} does not divide {N}"
        );
        Self::new((0..dim).map(|c| (c..N).step_by(dim).collect()).collect())
    }

    /// The coordinate groups.
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

    /// Record the momenta of `v` with masses `masses`.
    pub fn record(&mut self, masses: &[f64; N], v: &[f64; N]) {
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

impl<P: Potential<N> + ?Sized, const N: usize> Observer<P, N> for MomentumObserver<N> {
    fn observe(&mut self, target: &P, state: &State<N>) {
        self.record(&target.masses(), &state.v);
    }
}

/// Adapts a closure `FnMut(&P, &State<N>)` into an [`Observer`].
#[derive(Debug, Clone)]
pub struct FnObserver<F>(pub F);

impl<P: ?Sized, F: FnMut(&P, &State<N>), const N: usize> Observer<P, N> for FnObserver<F> {
    fn observe(&mut self, target: &P, state: &State<N>) {
        (self.0)(target, state);
    }
}
