//! The phase-space state `(q, v, t)` every stepper advances.

/// Positions `q`, velocities `v = M⁻¹p` and time `t` of an `N`-coordinate system.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct State<const N: usize> {
    /// Configuration `q`.
    pub q: [f64; N],
    /// Velocity `v = q̇` (momentum is `p = M v`).
    pub v: [f64; N],
    /// Time.
    pub t: f64,
}

impl<const N: usize> State<N> {
    /// A state at `t = 0`.
    pub fn new(q: [f64; N], v: [f64; N]) -> Self {
        Self { q, v, t: 0.0 }
    }

    /// A state at time `t`.
    pub fn at(q: [f64; N], v: [f64; N], t: f64) -> Self {
        Self { q, v, t }
    }

    /// Momenta `p = M v` for the diagonal mass matrix `masses`.
    pub fn momenta(&self, masses: &[f64; N]) -> [f64; N] {
        core::array::from_fn(|i| masses[i] * self.v[i])
    }

    /// Kinetic energy `½ vᵀ M v`.
    pub fn kinetic_energy(&self, masses: &[f64; N]) -> f64 {
        0.5 * (0..N)
            .map(|i| masses[i] * self.v[i] * self.v[i])
            .sum::<f64>()
    }

    /// True when every coordinate, velocity and the time are finite.
    pub fn is_finite(&self) -> bool {
        self.t.is_finite()
            && self.q.iter().all(|x| x.is_finite())
            && self.v.iter().all(|x| x.is_finite())
    }
}
