//! The chain of pendula of Tao & Owhadi §4.2 (Fig. 3): `n` point masses in the plane, the first
//! joined to a pivot at the origin and each to the next by a rod of length `L`, under gravity.
//!
//! Written term by term ([`PendulumChain`]): a site term (gravity) for each mass and a bond
//! constraint `|x_j − x_i|² − L²` for each rod; [`PendulumChain::assemble`] puts them over a
//! chain topology of `n + 1` bodies whose body 0, the pivot, is pinned at the origin, so the
//! coordinates are `q = (x1, y1, …, xn, yn)` (`docs/CLI.md`) and the constraints are
//! `g_1 = |q_1|² − L²`, `g_i = |q_i − q_{i−1}|² − L²`, as in the paper.
//!
//! # The sign of gravity
//! The paper prints `V = −Σ y_i`: the force points along `+y`, and from the paper's start (`x_i =
//! i`, `y_i = −2i`, the chain hanging 26.6° from the vertical) the chain starts near its *unstable*
//! equilibrium. Measured independently (`docs/systems/chain.md`): Z&S then blows up at step 176 and
//! SHAKE(0.05) and SHAKE(0.025) disagree by 5.6 at t = 20 (chaos); with `V = +Σ y_i` (gravity down)
//! Z&S stays bounded and within 0.037 of SHAKE(0.025) up to t = 100. As for the double pendulum,
//! the field [`PendulumChain::gravity`] is the coefficient of `V = −gravity·Σ y_i`:
//! [`PendulumChain::paper`] uses `gravity = −1` (physical), [`PendulumChain::paper_printed_sign`]
//! `+1`.

pub mod reference;

use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::{mechanical_system, DynState};

/// Number of pendula of the paper's experiment.
pub const N: usize = 10;
/// Rod length `L = √5`.
pub const L: f64 = 2.236_067_977_499_79;
/// Penalty frequency ω.
pub const OMEGA: f64 = 20.0;
/// Z&S β.
pub const BETA: f64 = 0.4;
/// Z&S step.
pub const H: f64 = 0.05;
/// SHAKE's two steps.
pub const SHAKE_H: [f64; 2] = [0.05, 0.025];
/// Final time (not printed in the paper; chosen and stated).
pub const T_END: f64 = 100.0;

/// One mass of the chain (2 coordinates) under gravity, and the rods between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendulumChain {
    /// Rod length `L`.
    pub length: f64,
    /// Coefficient of `V = −gravity · Σ y_i` (`−1` physical, `+1` as printed).
    pub gravity: f64,
}

#[mechanical_system]
impl PendulumChain {
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        -self.gravity * x[1]
    }
    fn bond_constraints(&self, a: &[f64; 2], b: &[f64; 2]) -> [f64; 1] {
        [(b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) - self.length * self.length]
    }
}

impl PendulumChain {
    /// `L = √5`, gravity pointing down (`V = +Σ y_i`).
    pub fn paper() -> Self {
        Self {
            length: L,
            gravity: -1.0,
        }
    }

    /// The sign as printed (`V = −Σ y_i`, gravity pointing up).
    pub fn paper_printed_sign() -> Self {
        Self {
            length: L,
            gravity: 1.0,
        }
    }

    /// The chain of `n` pendula: bodies `0..=n` bonded in a line, body 0 (the pivot) pinned at
    /// the origin.
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn assemble(self, n: usize) -> Assembled<Self, 2> {
        assert!(n > 0, "a chain needs at least one pendulum");
        Assembled::new(self, Topology::chain(n + 1).pin(0, [0.0, 0.0]))
            .expect("a chain topology is valid")
    }

    /// The paper's start for `n` pendula: `x_i = i`, `y_i = −2i` (each rod of length √5), at
    /// rest.
    pub fn initial_state(n: usize) -> DynState {
        let q = (1..=n).flat_map(|i| [i as f64, -2.0 * i as f64]).collect();
        DynState::new(q, vec![0.0; 2 * n])
    }

    /// The coordinate names `x1, y1, …, xn, yn`.
    pub fn coordinate_names(n: usize) -> Vec<String> {
        (1..=n)
            .flat_map(|i| [format!("x{i}"), format!("y{i}")])
            .collect()
    }
}
