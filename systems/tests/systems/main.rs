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
mod ensemble_tool;
mod ensembles;
mod experiment_tools;
mod experiments;
mod hessian_vector;
mod kremer_grest;
mod modes;
mod output;
mod parameters;
mod plot;
mod reference;
mod rigid_body;
mod rigid_modes;
mod scratch;
mod state_file;
mod stiff_spring;
mod temper_checkpoint;
mod types;
mod variational;
mod water;
mod water_box;
mod water_stiff;
