//! # zs-systems
//!
//! The mechanical systems of the source papers, each defined with `#[mechanical_system]`
//! exactly as a user would, with a hand-written `reference` implementation of the same traits
//! (closed-form derivatives written independently of the macro) beside it:
//!
//! - [`double_pendulum`]: the planar double pendulum of Z&S §4.1 (4 DOF, 2 constraints),
//!   with a num-dual baseline ([`double_pendulum::dual`]) and the generalized-coordinate
//!   reference solution ([`double_pendulum::generalized`]);
//! - [`triatomic`]: a flexible water-like triatomic molecule in 3D (9 DOF, Morse bonds and a
//!   harmonic bond angle);
//! - [`rigid_body`]: the penalized magnetized rigid body of Z&S §4.5 (9 DOF, `R ∈ R^{3×3}`).
//! - [`chain`]: the chain of `n` pendula of Z&S §4.2 (an assembled system: a site term per
//!   mass, a bond constraint per rod, the pivot pinned; `n` at run time);
//! - [`dna`]: the DNA base-pair ring of Z&S §4.4 (an assembled system: a site and a bond term,
//!   `N` at run time);
//! - [`stiff_spring`]: the stiff spring double pendulum of the impulse paper, Example 1 (4 DOF,
//!   slow gravity `U`, fast springs `W` with stiffness `k_i/ε²`, their minimum manifold as 2
//!   constraints), for the impulse family; [`stiff_spring::convergence_table`] is Figs. 1–3.
//!
//! - [`kremer_grest`]: the FENE bead-spring polymer melt of LAMMPS's `in.chain` benchmark
//!   (an assembled system in a periodic box, with a pair cutoff and a neighbour list, read from
//!   a LAMMPS data file);
//!
//! - [`alkane`]: the TraPPE united-atom n-alkane (bonds, bond angles, torsions: terms of two,
//!   three and four bodies; Lennard-Jones pairs mixed from the two sites' types), with
//!   hand-written derivatives of the angle and torsion;
//!
//! - [`pendulum`]: the planar and the spherical pendulum in Cartesian coordinates, Patrick et al.'s
//!   checks (`docs/VARIATIONAL.md` §4).
//!
//! [`experiments`] reproduces the papers' figures (`zs reproduce`).
//!
//! [`testing`] has the error measures and finite differences the derivative tests use.

pub mod alkane;
pub mod chain;
pub mod cli;
pub mod dna;
pub mod double_pendulum;
pub mod ensemble;
#[cfg(feature = "experiments")]
pub mod experiments;
pub mod kremer_grest;
pub mod pendulum;
pub mod rigid_body;
pub mod stiff_spring;
pub mod testing;
pub mod triatomic;
pub mod water;
pub mod water_box;

pub use chain::PendulumChain;
pub use dna::DnaChain;
pub use double_pendulum::DoublePendulum;
pub use rigid_body::MagnetizedRigidBody;
pub use stiff_spring::StiffSpringDoublePendulum;
pub use triatomic::Triatomic;
