//! # zs-runtime
//!
//! Runtime of **zs**: the traits that `#[mechanical_system]` implements ([`Potential`],
//! [`MechanicalSystem`]), the integrators that consume them (Zhang–Skeel, its simplified
//! variant, velocity Verlet), a driver with observers, and CSV output.
//!
//! Users depend on this crate alone; it re-exports the macro.
//!
//! ```
//! use zs_runtime::{mechanical_system, MechanicalSystem, Potential, State, ZhangSkeel};
//!
//! pub struct DoublePendulum { pub l1: f64, pub l2: f64, pub gravity: f64 }
//!
//! #[mechanical_system]
//! impl DoublePendulum {
//!     fn masses(&self) -> [f64; 4] { [1.0, 1.0, 1.0, 1.0] }
//!     fn potential(&self, q: &[f64; 4]) -> f64 { -self.gravity * (q[1] + q[3]) }
//!     fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
//!         let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
//!         [x1 * x1 + y1 * y1 - self.l1 * self.l1,
//!          (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2]
//!     }
//! }
//!
//! let sys = DoublePendulum { l1: 1.0, l2: 2f64.sqrt(), gravity: -1.0 };
//! let mut state = State::new([0.0, -1.0, 1.0, -2.0], [0.0; 4]);
//! let mut zs = ZhangSkeel::new(0.4, 0.1);
//! for _ in 0..100 {
//!     zs.step(&sys.penalized(20.0), &mut state).unwrap();
//! }
//! assert!(sys.constraints(&state.q).iter().all(|g| g.abs() < 0.05));
//! ```

// The macro expands to paths under `::zs_runtime`; this lets the crate's own tests use it.
extern crate self as zs_runtime;

pub mod assembly;
pub mod checkpoint;
pub mod driver;
pub mod error;
/// The Ewald sum (the `zs-kspace` crate's).
pub use zs_kspace::ewald;
pub mod files;
pub mod guards;
pub mod integrators;
pub mod lammps;
pub mod linalg;
pub mod long_range;
pub mod masses;
pub mod minimize;
pub mod model;
#[cfg(feature = "faer")]
pub mod modes;
pub mod multipliers;
pub mod observers;
pub mod output;
/// Smooth particle-mesh Ewald (the `zs-kspace` crate's).
pub use zs_kspace::pme;
pub mod settle;
pub mod simd;
pub mod sparse;
pub mod special;
pub mod state;
pub mod stepper;
pub mod system;
pub mod tempering;
pub mod vector;
pub mod verify;
pub mod xyz;

pub use checkpoint::{Checkpoint, CheckpointError, Resumable};
pub use driver::{RunFailure, RunSummary, run, run_checkpointed, run_steps};
pub use error::{Operand, Quantity, SolveFailure, StepError, StepErrorKind};
pub use guards::{ConstraintGuard, EnergyGuard, GuardViolation, MoveGuard};
pub use integrators::{
    Impulse, Langevin, LinearlyImplicitNewmark, MollifiedImpulse, Newmark, PhaseBSolver,
    ProjectedImpulse, ProjectedRungeKutta, ProjectionOptions, PushForwardNewmark, Rattle, RngState,
    Settle, Shake, ShakeSolver, StepStats, Tableau, TableauError, Variational, VelocityVerlet,
    Yoshida4, ZhangSkeel, ZhangSkeelSimplified, ZhangSkeelStiff,
};
pub use linalg::Factorization;
pub use masses::Masses;
pub use model::{ConstrainedModel, ConstraintSpace, HessianPart, Jacobian, Model, StiffModel};
pub use multipliers::{PenalizedMultipliers, TimeSeries};
pub use observers::{ConstraintObserver, EnergyObserver, MomentumObserver, Observer};
pub use output::CsvRecorder;
pub use state::{DynState, Measured, PointMove, PositionsKey, State, StateOf};
pub use stepper::{Clock, Clocked, ResumableStepper, Stepper};
pub use system::{
    ConstraintCurvature, ConstraintThirdContraction, FastPotential, MechanicalSystem,
    ParameterDerivatives, Penalized, Potential, StiffSplit,
};
pub use vector::Vector;
pub use xyz::Symbols;
pub use zs_macros::mechanical_system;

/// The README's example, compiled and run as a doctest so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
