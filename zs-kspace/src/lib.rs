//! The reciprocal-space sums of point charges in an orthorhombic periodic box: the plain Ewald
//! sum ([`ewald`]) and smooth particle-mesh Ewald ([`pme`]), each with its gradient and the
//! exact product of its Hessian with a vector. Users reach them as `zs_runtime::ewald` and
//! `zs_runtime::pme`.
//!
//! A crate of its own so that the FFT's generic code (rustfft's planner and algorithms,
//! instantiated for `f64` where PME plans its transforms) is compiled once, here, and not in
//! each of zs-runtime's builds (its library and its unit tests): it depends on nothing of zs.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ewald;
pub mod pme;
