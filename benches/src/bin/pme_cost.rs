//! Cost of one smooth-PME energy and gradient (`zs_runtime::pme::Pme::energy_gradient`) on
//! `N` random charges of SPC/E's in a cubic box of LAMMPS's `data.spce` density, at OpenMM's
//! default tolerance (5e-4) and the water box's cutoff (9.8 Å): best of 7 batches of 200,
//! on one thread unless `threads` is given.
//!
//! ```text
//! cargo run --release -p zs-bench --bin pme_cost [N] [threads]
//! ```
//! It prints the parameters, the time per evaluation, the energy and a checksum of the
//! gradient (the same bits from two builds: the same arithmetic). See BENCHMARKS.md.
use std::time::Instant;

use zs_runtime::pme::{Pme, PmeParameters};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(4500, |s| s.parse().expect("N"));
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("threads"));
    let (side, q, charges) = zs_bench::random_water_charges(n);
    let params = PmeParameters::from_tolerance(9.8, [side; 3], 5e-4).expect("parameters");
    println!("{n} charges, side {side:.2} Å, {params:?}, {threads} thread(s)");
    let mut pme = Pme::new(charges, [side; 3], params).expect("PME");
    let mut g = vec![0.0; 3 * n];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool");
    pool.install(|| {
        let (mut e, mut best) = (0.0, f64::INFINITY);
        for _ in 0..7 {
            let t = Instant::now();
            for _ in 0..200 {
                e = pme.energy_gradient(&q, &mut g);
            }
            best = best.min(t.elapsed().as_secs_f64() / 200.0);
        }
        let sum: f64 = g.iter().enumerate().map(|(i, x)| x * (i % 7) as f64).sum();
        println!(
            "{:.3} ms per energy and gradient; energy {e:.17e}, checksum {sum:.17e}",
            best * 1e3
        );
    });
}
