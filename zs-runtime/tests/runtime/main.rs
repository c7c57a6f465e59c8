//! The integration tests of `zs-runtime`, one module per subject, in one test binary (one link
//! instead of one per file; `cargo test -p zs-runtime --test runtime <module>::` runs a subject).
//! `alloc_assembled` counts the allocations of every thread in a child process of this binary
//! that runs that test alone.
//!
//! The binary counts allocations per thread (`support::counting_alloc`), for the tests that
//! prove a step allocates nothing.

#[path = "../support/mod.rs"]
mod support;

mod alloc;
mod alloc_assembled;
mod assembly;
mod assembly_parallel;
mod checkpoint;
mod checkpoint_neighbors;
mod composition;
mod constraint_third;
mod driver;
mod error_function;
mod ewald;
mod faults;
mod held;
mod impulse;
mod integrators;
mod langevin;
mod macro_expansion;
mod macro_large;
mod macro_lints;
mod macro_split;
mod measured;
mod multipliers;
mod newmark;
mod output_safety;
mod own_image;
mod periodic;
mod piecewise;
mod pme;
mod properties;
mod rattle;
mod resort;
mod settle;
mod shake;
mod sparse_backends;
mod stiff;
mod tempering;
