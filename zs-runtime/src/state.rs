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

/// The key of a vector of positions: the fingerprint of its bits (each entry's bits mixed with
/// its index, summed), as a stepper found it in its own pass over the positions it wrote. A
/// model that caches its last evaluation keys it by this too
/// ([`crate::Model::gradient_into_keyed`]), so that the energy an observer asks for next
/// ([`crate::Model::potential_at_keyed`]) is found without reading the positions again. Made
/// only by this crate's steppers, for the positions they pass it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionsKey(pub(crate) u64);

/// How far the positions a stepper hands a model moved from positions it handed before: no
/// point body (three consecutive coordinates, its position) is farther than `largest` from
/// where it was in the positions of key `from`. A step's kick-drift pass measures it on its way
/// ([`Measured::largest_point_move`]), and a model whose neighbour list tests its staleness by
/// reading every position adds these moves up instead while they stay below half the skin
/// ([`crate::Model::gradient_into_moved`]). Made only by this crate's steppers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointMove {
    pub(crate) from: PositionsKey,
    pub(crate) largest: f64,
}

/// What a stepper measured of the state its last step produced, in its own passes over that
/// state ([`crate::Stepper::measured`]). The driver hands it to the observers
/// ([`crate::Observer::check_measured`], [`crate::Observer::observe_measured`]), which use it
/// instead of reading the state again: for a long state each such read is a pass over main
/// memory, every step. What the stepper did not measure is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    pub(crate) positions_key: Option<PositionsKey>,
    pub(crate) largest_point_move: Option<f64>,
    pub(crate) kinetic: Option<f64>,
}

impl Measured {
    /// The key of the new positions.
    pub fn positions_key(&self) -> Option<PositionsKey> {
        self.positions_key
    }

    /// The largest distance a point body — three consecutive coordinates, its position —
    /// moved in the step: what [`crate::MoveGuard::largest_move`] gives for bodies of three
    /// coordinates, the same bits.
    pub fn largest_point_move(&self) -> Option<f64> {
        self.largest_point_move
    }

    /// `½ vᵀ M v` of the new velocities, summed as an assembled system sums it: what its
    /// [`crate::Model::kinetic_energy`] gives, the same bits.
    pub fn kinetic_energy(&self) -> Option<f64> {
        self.kinetic
    }
}
