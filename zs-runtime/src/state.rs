//! The phase-space state `(q, v, t)` every stepper advances.

use crate::vector::Vector;

/// Positions `q`, velocities `v = M⁻¹p` and time `t`, in the storage `V` of a system's
/// coordinates ([`Vector`]: `[f64; N]` or `Vec<f64>`).
///
/// Fixed-size systems use the alias [`State<N>`](State); assembled systems [`DynState`].
#[derive(Debug, PartialEq)]
pub struct StateOf<V> {
    /// Configuration `q`.
    pub q: V,
    /// Velocity `v = q̇` (momentum is `p = M v`).
    pub v: V,
    /// Time.
    pub t: f64,
}

/// The state of an `N`-coordinate fixed-size system: `q`, `v` are `[f64; N]`.
pub type State<const N: usize> = StateOf<[f64; N]>;

/// The state of an assembled system (sizes read at run time): `q`, `v` are `Vec<f64>`.
pub type DynState = StateOf<Vec<f64>>;

impl<V: Clone> Clone for StateOf<V> {
    fn clone(&self) -> Self {
        Self {
            q: self.q.clone(),
            v: self.v.clone(),
            t: self.t,
        }
    }
    /// Reuses the storage of `self` (no allocation for `Vec` of the same length): what the
    /// driver and the composite steppers use to keep the state before a step.
    fn clone_from(&mut self, source: &Self) {
        self.q.clone_from(&source.q);
        self.v.clone_from(&source.v);
        self.t = source.t;
    }
}

impl<V: Copy> Copy for StateOf<V> {}

impl<V> StateOf<V> {
    /// A state at `t = 0`.
    pub fn new(q: V, v: V) -> Self {
        Self { q, v, t: 0.0 }
    }

    /// A state at time `t`.
    pub fn at(q: V, v: V, t: f64) -> Self {
        Self { q, v, t }
    }
}

impl<V: Vector> StateOf<V> {
    /// Number of coordinates.
    pub fn dimension(&self) -> usize {
        self.q.len()
    }

    /// Momenta `p = M v` for the diagonal mass matrix `masses`.
    pub fn momenta(&self, masses: &V) -> V {
        let mut p = self.v.clone();
        for (p, m) in p.as_mut_slice().iter_mut().zip(masses.as_slice()) {
            *p *= m;
        }
        p
    }

    /// Kinetic energy `½ vᵀ M v`.
    pub fn kinetic_energy(&self, masses: &V) -> f64 {
        0.5 * self
            .v
            .as_slice()
            .iter()
            .zip(masses.as_slice())
            .map(|(v, m)| m * v * v)
            .sum::<f64>()
    }

    /// True when every coordinate, velocity and the time are finite.
    pub fn is_finite(&self) -> bool {
        self.t.is_finite()
            && crate::vector::all_finite(&self.q)
            && crate::vector::all_finite(&self.v)
    }
}
