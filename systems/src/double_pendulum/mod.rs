//! The planar double pendulum of Tao & Owhadi §4.1 (Figs. 1, 2): 4 Cartesian coordinates
//! `q = (x1, y1, x2, y2)`, 2 holonomic length constraints, penalized with frequency ω (eq. 7).
//!
//! The system is defined with `#[mechanical_system]` exactly as a user would write it;
//! [`reference`](mod@reference) holds hand-written closed-form derivatives of the same system,
//! [`dual`] a forward-mode automatic-differentiation (num-dual) version of the penalized potential,
//! and [`generalized`] the pendulum in the generalized coordinates (θ, φ) of §4.1
//! (position-dependent mass matrix, eq. 23) with a small-step high-order reference integrator.
//!
//! # The sign of gravity
//! The paper prints `V = -g y1 - g y2` with `g = 1` and the generalized coordinates `y1 = -L1 cos
//! θ`, `y2 = -L1 cos θ - L2 cos φ`. With those coordinates the printed potential is `g (2 L1 cos
//! θ + L2 cos φ)`, minimal at θ = φ = π: gravity pointing **up**. Starting from the paper's initial
//! state (below the pivot) the pendulum then falls over, and the penalized Z&S run (β = 0.4, h =
//! 0.1, ω = 20) diverges within about 40 steps (measured independently, see
//! docs/systems/double-pendulum.md). The field [`DoublePendulum::gravity`] is the coefficient of
//! the README's potential `V = -gravity · (y1 + y2)`, so
//! - [`DoublePendulum::paper`] uses `gravity = -1`, i.e. `V = +(y1 + y2)`: gravity pointing
//!   **down**, the physical pendulum hanging below its pivot (the one the figures show);
//! - [`DoublePendulum::paper_printed_sign`] uses `gravity = +1`, the sign as printed.
//!
//! Masses: the paper takes `m1 = m2 = 1`, and so does this type, whose fields are exactly the
//! README's example (`l1`, `l2`, `gravity`). The hand-written
//! [`reference`](mod@reference) and the [`generalized`](mod@generalized) model accept general
//! masses.

#[cfg(feature = "num-dual")]
pub mod dual;
pub mod generalized;
pub mod reference;

use zs_runtime::{mechanical_system, State};

/// Penalty frequency ω of the paper's double-pendulum experiments (Fig. 1, rows 3–6).
pub const OMEGA: f64 = 20.0;
/// The Z&S / Newmark parameter β of the paper's experiments.
pub const BETA: f64 = 0.4;
/// The step of Z&S, Newmark and linearly-implicit Newmark in Fig. 1 (Verlet needs `H / OMEGA`).
pub const H: f64 = 0.1;
/// Length of the first rod, `L1 = 1`.
pub const L1: f64 = 1.0;
/// Length of the second rod, `L2 = √2`.
pub const L2: f64 = std::f64::consts::SQRT_2;
/// The paper's initial configuration `q(0) = (x1, y1, x2, y2) = (0, -1, 1, -2)` (zero momenta).
pub const Q0: [f64; 4] = [0.0, -1.0, 1.0, -2.0];

/// Planar double pendulum in Cartesian coordinates `q = (x1, y1, x2, y2)` (Z&S §4.1).
///
/// `V(q) = -gravity · (y1 + y2)`, constraints
/// `g(q) = [x1² + y1² - l1², (x2 - x1)² + (y2 - y1)² - l2²]`,
/// unit masses (`M = I`). See the [module docs](self) for the sign of `gravity`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoublePendulum {
    /// Length `L1` of the rod from the pivot (origin) to the first bob.
    pub l1: f64,
    /// Length `L2` of the rod between the bobs.
    pub l2: f64,
    /// Coefficient of `V = -gravity · (y1 + y2)`: `-1` is the physical sign (gravity along `-y`),
    /// `+1` the sign printed in the paper.
    pub gravity: f64,
}

#[mechanical_system]
impl DoublePendulum {
    fn masses(&self) -> [f64; 4] {
        [1.0, 1.0, 1.0, 1.0]
    }

    fn potential(&self, q: &[f64; 4]) -> f64 {
        -self.gravity * (q[1] + q[3])
    }

    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
        [
            x1 * x1 + y1 * y1 - self.l1 * self.l1,
            (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2,
        ]
    }
}

impl DoublePendulum {
    /// The paper's pendulum with the **physical** sign of gravity: `L1 = 1`, `L2 = √2`,
    /// `m1 = m2 = 1`, `gravity = -1` (so `V = +(y1 + y2)`, gravity pointing down). This is the
    /// system the Fig. 1 reproduction uses.
    pub fn paper() -> Self {
        Self {
            l1: L1,
            l2: L2,
            gravity: -1.0,
        }
    }

    /// The paper's pendulum with the sign of `V = -g y1 - g y2` **as printed** (`gravity = +1`,
    /// gravity pointing up for the paper's coordinates): from [`DoublePendulum::initial_state`]
    /// the penalized Z&S run at β = 0.4, h = 0.1, ω = 20 diverges within about 40 steps.
    pub fn paper_printed_sign() -> Self {
        Self {
            gravity: 1.0,
            ..Self::paper()
        }
    }

    /// The paper's initial state: `q(0) = (0, -1, 1, -2)`, zero velocities, `t = 0`
    /// (consistent with `L1 = 1`, `L2 = √2`: θ(0) = 0, φ(0) = π/4).
    pub fn initial_state() -> State<4> {
        State::new(Q0, [0.0; 4])
    }

    /// Total energy `½ vᵀ M v + V(q)` of the constrained (unpenalized) system.
    pub fn energy(&self, state: &State<4>) -> f64 {
        state.kinetic_energy(&[1.0; 4]) - self.gravity * (state.q[1] + state.q[3])
    }
}
