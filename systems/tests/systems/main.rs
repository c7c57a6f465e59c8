//! The integration tests of `zs-systems`, one module per subject, in one test binary (one link
//! instead of one per file; `cargo test -p zs-systems --test systems <module>::` runs a subject).
//!
//! The binary counts allocations per thread, for the tests that prove a step allocates nothing.

#[path = "../../../zs-runtime/tests/support/counting_alloc.rs"]
mod counting_alloc;

mod alkane;
mod angles;
mod cli;
mod derivatives;
mod derivatives_assembled;
mod dynamics;
mod ensembles;
mod experiments;
mod hessian_vector;
mod kremer_grest;
mod modes;
mod parameters;
mod reference;
mod rigid_body;
mod types;
mod variational;
mod water;
