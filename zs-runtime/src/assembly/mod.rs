//! Systems assembled over a topology: sizes read at run time, per-term kernels, a sparse
//! Hessian, O(N) solves.
//!
//! A fixed-size `#[mechanical_system]` unrolls one `potential` over a constant number of
//! coordinates. Molecules, polymers and chains are instead written term by term, as engines
//! such as OpenMM (custom forces) and JAX-MD (`smap.bond`, `smap.pair`) do: small energies of
//! one body (`site_potential`), of a bonded pair (`bond_potential`), of every other pair
//! (`pair_potential`), with constraints per body and per bond. `#[mechanical_system]`
//! differentiates each term in its own few coordinates — gradient, Hessian blocks, third
//! contraction, constraint Jacobians, penalty — and implements [`Terms`]; at run time the user
//! gives a [`Topology`] and [`Assembled`] gathers, evaluates and scatters:
//!
//! - [`topology`]: bodies, bonds, exclusions, pinned bodies, the periodic box and the pair
//!   cutoff;
//! - `neighbors`: the cutoff's pair list — nearest images, a cell list, the Verlet-list
//!   rebuild rule;
//! - [`forms`]: the term forms, described once (arity, which terms, stiff, constraints, how
//!   the third derivative is obtained);
//! - [`terms`]: the kernel trait the macro implements, one per form, generic in `(D, K)`;
//! - `plan`: set-up of one form — its term list, gather lists into the Hessian block patterns;
//! - [`jacobian`]: the sparse constraint Jacobian and the `m × m` solves of SHAKE/RATTLE in its
//!   pattern;
//! - `eval`: the engine, written once over the forms — kernels in parallel chunks into per-term
//!   buffers, then a fixed-order gather (bit-identical whatever the thread count, nothing
//!   allocated);
//! - `arrange`: where an evaluation state holds its bodies (the topology's order or a spatial
//!   one, re-sorted as the run goes on) and the forms made over it;
//! - [`system`]: [`Assembled`], a [`crate::Model`] / [`crate::StiffModel`] over `Vec<f64>`;
//! - `history`: what a checkpoint keeps of its evaluations (the neighbour list's sites);
//! - [`constraints`]: which constraints there are, [`Assembled`] as a
//!   [`crate::ConstrainedModel`].
//!
//! Each module imports only from those listed before it (`topology` and `forms` from none).
//!
//! ```
//! use zs_runtime::assembly::{Assembled, Topology};
//! use zs_runtime::{mechanical_system, Model, ZhangSkeel};
//!
//! /// The DNA base-pair chain of Tao & Owhadi §4.4: V = ½Σ(θ_k+1 − θ_k)² + εΣU(θ_k).
//! pub struct Dna { pub epsilon: f64, pub a: f64, pub x0: f64 }
//!
//! #[mechanical_system]
//! impl Dna {
//!     fn site_potential(&self, theta: &[f64; 1]) -> f64 {
//!         let u = (-self.a * (1.0 - theta[0].cos() - self.x0)).exp() - 1.0;
//!         self.epsilon * u * u
//!     }
//!     fn bond_potential(&self, left: &[f64; 1], right: &[f64; 1]) -> f64 {
//!         0.5 * (right[0] - left[0]).powi(2)
//!     }
//! }
//!
//! let dna = Assembled::new(Dna { epsilon: 1.0 / 1400.0, a: 7.0, x0: 0.3 }, Topology::ring(200))
//!     .unwrap();
//! let mut state = dna.state(vec![0.8; 200], vec![0.01; 200]);
//! let mut zs = ZhangSkeel::new(0.3, 2.0);
//! for _ in 0..100 {
//!     zs.step(&dna, &mut state).unwrap();
//! }
//! assert_eq!(dna.dimension(), 200);
//! assert!(state.q.iter().all(|x| x.is_finite()));
//! ```

mod arrange;
mod cell;
pub mod constraints;
mod eval;
mod evaluate;
pub mod forms;
mod held;
mod history;
pub mod jacobian;
mod neighbors;
mod order;
mod overlap;
mod plan;
pub mod system;
pub mod terms;
pub mod topology;
mod workspace;

pub use eval::pairs::PairStrategy;
pub use evaluate::PenalizedAssembly;
pub use forms::{
    Angle, Bond, Dihedral, Form, FormInfo, Forms, Over, Pair, Pair14, Site, ThirdForm,
};
pub use held::HeldInside;
pub use jacobian::{SparseConstraintSolver, SparseJacobian};
pub use order::{BodyOrder, RESORT_EVERY, holds_inside_from_env, resort_period_from_env};
pub use system::{Assembled, PARALLEL_BY_DEFAULT_ABOVE};
pub use terms::{Body, Kernel, Kinds, Local, LocalHessian, LocalThird, Terms};
pub use topology::{Topology, TopologyError};
