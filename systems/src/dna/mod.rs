//! The DNA base-pair chain of Tao & Owhadi §4.4 (Fig. 8): a ring of `N` base-pair angles
//! `θ_k` with harmonic nearest-neighbour coupling and a weak on-site Morse-like potential,
//!
//! ```text
//! V(θ) = ½ Σ_k (θ_k+1 − θ_k)² + ε Σ_k U(θ_k),   U(θ) = (exp(−a[1 − cos θ − x0]) − 1)²,
//! ```
//!
//! `a = 7`, `x0 = 0.3`, `ε = 1/1400`, unit masses, periodic boundaries (not printed; free ends
//! behave the same, `docs/systems/dna.md`). Written term by term ([`DnaChain`]: a site term `εU`
//! and a bond term `½(θ_j − θ_i)²`) and assembled over a ring ([`DnaChain::assemble`]): the Hessian
//! is cyclic tridiagonal, `T` diagonal, and Z&S's solve is O(N).
//!
//! The start: `θ_k(0) = 0.8 + 0.1 ξ_k` (`ξ_k` i.i.d. standard normal, seeded: ChaCha8 and
//! `rand_distr`'s normal), `θ̇_k(0) = cos(4πk/N)/√N`. The slow variable is the mean angle, with
//! metastable states at `arccos(0.7) ≈ 0.795` and `2π − arccos(0.7) ≈ 5.49`.

pub mod reference;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::{mechanical_system, DynState};

/// Base pairs of the paper's experiment.
pub const N: usize = 200;
/// `ε`.
pub const EPSILON: f64 = 1.0 / 1400.0;
/// `a`.
pub const A: f64 = 7.0;
/// `x0`.
pub const X0: f64 = 0.3;
/// Z&S β.
pub const BETA: f64 = 0.3;
/// Z&S step.
pub const H: f64 = 2.0;
/// Verlet's step in the paper's benchmark.
pub const VERLET_H: f64 = 0.2;

/// The base pairs' on-site potential and their coupling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DnaChain {
    /// Strength `ε` of the on-site potential.
    pub epsilon: f64,
    /// `a`.
    pub a: f64,
    /// `x0`.
    pub x0: f64,
}

#[mechanical_system]
impl DnaChain {
    fn site_potential(&self, theta: &[f64; 1]) -> f64 {
        let u = (-self.a * (1.0 - theta[0].cos() - self.x0)).exp() - 1.0;
        self.epsilon * u * u
    }
    fn bond_potential(&self, left: &[f64; 1], right: &[f64; 1]) -> f64 {
        0.5 * (right[0] - left[0]).powi(2)
    }
}

impl DnaChain {
    /// The paper's parameters.
    pub fn paper() -> Self {
        Self {
            epsilon: EPSILON,
            a: A,
            x0: X0,
        }
    }

    /// The ring of `n` base pairs (bonds `k`–`k+1` and `n−1`–`0`).
    ///
    /// # Panics
    /// If `n < 3` (a ring needs three).
    pub fn assemble(self, n: usize) -> Assembled<Self, 1> {
        assert!(n >= 3, "a DNA ring needs at least 3 base pairs, got {n}");
        Assembled::new(self, Topology::ring(n)).expect("a ring topology is valid")
    }

    /// The paper's start for `n` base pairs, noise from `seed`.
    pub fn initial_state(n: usize, seed: u64) -> DynState {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let q = (0..n)
            .map(|_| {
                let xi: f64 = StandardNormal.sample(&mut rng);
                0.8 + 0.1 * xi
            })
            .collect();
        let v = (0..n)
            .map(|k| (4.0 * std::f64::consts::PI * k as f64 / n as f64).cos() / (n as f64).sqrt())
            .collect();
        DynState::new(q, v)
    }

    /// The coordinate names `theta0, …, theta{n−1}`.
    pub fn coordinate_names(n: usize) -> Vec<String> {
        (0..n).map(|k| format!("theta{k}")).collect()
    }
}

/// The mean angle `⟨θ⟩` (the slow variable).
pub fn mean_angle(theta: &[f64]) -> f64 {
    theta.iter().sum::<f64>() / theta.len() as f64
}
