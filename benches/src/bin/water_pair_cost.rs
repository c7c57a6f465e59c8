//! Cost of the generated TIP3P pair kernel: `reps` serial gradient evaluations of an N-molecule
//! cluster (N (N − 1) / 2 pair terms each). Wall time per pair from the command line; instructions
//! per pair with callgrind (deterministic):
//!
//! ```text
//! cargo build --release -p zs-bench --bin water_pair_cost
//! for r in 0 20; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   target/release/water_pair_cost 100 $r 2>&1 | grep Collected; done
//! ```
//! With `reps = 20` the gradient is evaluated 5 × 20 = 100 times (best of 5 batches), so
//! instructions per pair = (count(20) − count(0)) / (100 · 4950). See BENCHMARKS.md.
use std::hint::black_box;
use std::time::Instant;

use zs_runtime::Model;
use zs_systems::water::Water;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(100, |s| s.parse().expect("N"));
    let reps: usize = args.next().map_or(200, |s| s.parse().expect("repetitions"));
    let w = Water::tip3p();
    let sys = w.assemble(n).with_parallel(false);
    let q = w.cluster(n, 3.1, 0);
    let mut g = vec![0.0; q.len()];
    let pairs = n * (n - 1) / 2;
    let mut best = f64::INFINITY;
    for _ in 0..5.min(reps.max(1)) {
        let t = Instant::now();
        for _ in 0..reps {
            sys.gradient_into(black_box(&q), &mut g);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    if reps > 0 {
        println!(
            "N = {n}: {pairs} pairs, gradient {:.1} µs, {:.1} ns per pair (serial, best of 5 × {reps})",
            best / reps as f64 * 1e6,
            best / (reps * pairs) as f64 * 1e9
        );
    }
}
