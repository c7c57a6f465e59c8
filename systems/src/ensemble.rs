//! Ensembles of independent replicas inside one process — the runner under `zs ensemble` and
//! the experiments that average over seeds (`zs reproduce dna`): replica `k` of seed
//! `seeds[k]` runs on rayon's current pool beside the others, each with models of its own
//! (an assembled system caches its last evaluation behind a lock, so replicas must not share
//! one), and the results come back in the order of `seeds`. Each replica's computation depends
//! on its seed alone, so the results are the same bits whatever the number of threads. Across
//! processes, `zs ensemble` and `zs temper` spread replicas over MPI ranks (feature `mpi`).

use rayon::prelude::*;

/// `run(seed)` for every seed, in parallel on rayon's current pool, results in seed order.
pub fn replicas<T: Send>(seeds: &[u64], run: impl Fn(u64) -> T + Sync) -> Vec<T> {
    seeds.par_iter().map(|&seed| run(seed)).collect()
}
