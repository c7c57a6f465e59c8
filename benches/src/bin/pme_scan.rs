//! Smooth PME's accuracy and cost per spline order and mesh at one splitting parameter: the
//! reciprocal-space gradient of `N` random SPC/E charges in a cubic box of `data.spce`'s
//! density against the plain Ewald sum at the same α (converged: tolerance 1e-14), as the RMS
//! error over the RMS of the reference and the time of one energy and gradient (best of 5 ×
//! 50, one thread). α is OpenMM's for `tolerance` and the water box's cutoff (9.8 Å), so the
//! real-space part is the same for every row: the rows differ by the mesh's error alone.
//!
//! ```text
//! cargo run --release -p zs-bench --bin pme_scan [N] [tolerance]
//! ```
//! See BENCHMARKS.md.
use std::time::Instant;

use zs_runtime::ewald::{Ewald, EwaldParameters};
use zs_runtime::pme::{Pme, PmeParameters};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(4500, |s| s.parse().expect("N"));
    let tolerance: f64 = args.next().map_or(5e-4, |s| s.parse().expect("tolerance"));
    let (side, q, charges) = zs_bench::random_water_charges(n);
    let sides = [side; 3];
    let openmm = PmeParameters::from_tolerance(9.8, sides, tolerance).expect("parameters");
    let alpha = openmm.alpha;
    let exact = EwaldParameters {
        alpha,
        kmax: EwaldParameters::from_tolerance(9.8, sides, 1e-14)
            .expect("parameters")
            .kmax,
    };
    let mut ewald = Ewald::new(charges.clone(), sides, exact).expect("Ewald");
    let mut reference = vec![0.0; 3 * n];
    ewald.energy_gradient(&q, &mut reference);
    let norm = (reference.iter().map(|x| x * x).sum::<f64>() / n as f64).sqrt();
    println!(
        "{n} charges, side {side:.2} Å, α = {alpha:.4}/Å (tolerance {tolerance:e}); OpenMM's mesh {:?}, order {}",
        openmm.grid, openmm.order
    );
    println!("order  mesh  RMS error / RMS force  ms per energy and gradient");
    let mut g = vec![0.0; 3 * n];
    // One thread, as the table says: PME's spreading and gathering otherwise take rayon's
    // global pool.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    for order in 4..=6 {
        for k in [24, 25, 27, 28, 30, 32, 35, 36, 40, 42, 45, 48] {
            let params = PmeParameters {
                alpha,
                grid: [k; 3],
                order,
            };
            let Ok(mut pme) = Pme::new(charges.clone(), sides, params) else {
                continue;
            };
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                one.install(|| {
                    for _ in 0..50 {
                        pme.energy_gradient(&q, &mut g);
                    }
                });
                best = best.min(t.elapsed().as_secs_f64() / 50.0);
            }
            let err = (g
                .iter()
                .zip(&reference)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                / n as f64)
                .sqrt();
            println!("{order:5}  {k:4}  {:21.3e}  {:.3}", err / norm, best * 1e3);
        }
    }
}
