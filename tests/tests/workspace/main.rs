//! The cross-crate integration tests, one module per subject, in one test binary
//! (`cargo test -p zs-tests --test workspace <module>::` runs a subject).

mod constrained_double_pendulum;
mod hand_step;
mod impulse_convergence;
mod module_layers;
mod properties_double_pendulum;
mod properties_newmark_stiff_yoshida;
