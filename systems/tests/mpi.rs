//! The `mpi` feature's tests on their own (`.ci/run`: `cargo test --workspace --features
//! zs-systems/mpi --test mpi under_mpirun`): the ensembles' tests, whose `under_mpirun` module
//! runs `zs` under `mpirun`, compiled without the rest of the systems' tests — which the
//! feature would otherwise make CI compile a second time.

#[path = "systems/ensembles.rs"]
mod ensembles;
#[path = "systems/scratch.rs"]
mod scratch;
