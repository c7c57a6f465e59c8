//! Energy minimisation: L-BFGS ([`Lbfgs`], the default of `zs run --minimize`) and FIRE
//! ([`Fire`]), both on any [`crate::Model`] (for a constrained system, its penalized potential),
//! both allocating only at set-up.

mod fire;
mod lbfgs;

pub use fire::Fire;
pub use lbfgs::Lbfgs;

/// Root-mean-square of the entries of `g`: `√(Σ gᵢ² / n)` (OpenMM's convergence criterion,
/// over every force component).
pub fn rms<V: crate::vector::Vector>(g: &V) -> f64 {
    let g = g.as_slice();
    if g.is_empty() {
        return 0.0;
    }
    (g.iter().map(|x| x * x).sum::<f64>() / g.len() as f64).sqrt()
}

/// How a minimisation ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Minimized {
    /// `V` at the end.
    pub energy: f64,
    /// `max_i |∂V/∂q_i|` at the end.
    pub max_force: f64,
    /// `√(Σ_i (∂V/∂q_i)² / n)` at the end ([`rms`]).
    pub rms_force: f64,
    /// Steps (iterations) taken.
    pub steps: u64,
}

/// Why a minimisation failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MinimizeError {
    /// The force tolerance was not reached in `max_steps`; `q` holds the last point.
    NotConverged(Minimized),
    /// The energy or a force became non-finite at this step; `q` holds the last finite point.
    NonFinite {
        /// Step index.
        step: u64,
    },
}

impl std::fmt::Display for MinimizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MinimizeError::NotConverged(m) => write!(
                f,
                "the minimiser did not reach the force tolerance in {} steps (RMS force {:.3e}, \
                 max force {:.3e}, energy {})",
                m.steps, m.rms_force, m.max_force, m.energy
            ),
            MinimizeError::NonFinite { step } => {
                write!(f, "minimiser: non-finite energy or force at step {step}")
            }
        }
    }
}

impl std::error::Error for MinimizeError {}
