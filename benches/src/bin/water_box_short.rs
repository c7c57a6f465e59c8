//! Cost of the water box's short-range energy and gradient (real-space Coulomb and O–O
//! Lennard-Jones through the pair engine, with the exclusions' corrections) at the data file's
//! positions: the neighbour list built once, then best of 7 batches of 50 evaluations, on one
//! thread unless `threads` is given. The pair engine's own cost, without PME, SETTLE or a
//! list build — what a change to the pair pass is measured with. With `rebuild`, every
//! evaluation is at the other of two points a skin apart (every molecule moved along x), so
//! each one rebuilds the neighbour list first: the difference is a build's cost. With a
//! second data file `LATER` of the same box (`zs run water-box --write-data` a few steps on),
//! the list is built at `DATA`'s positions and the evaluations are timed at `LATER`'s, with
//! that list while it is not stale: what a list's order loses as the bodies move.
//!
//! ```text
//! cargo run --release -p zs-bench --bin water_box_short -- DATA [threads] [rebuild | LATER]
//! ```
//! It prints the time per evaluation, the energy and a checksum of the gradient (the same bits
//! from two builds: the same sums). See BENCHMARKS.md.
use std::path::Path;
use std::time::Instant;

use zs_runtime::lammps::DataFile;
use zs_runtime::Model;
use zs_systems::water_box::{WaterBox, WaterBoxOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "/usr/share/lammps/examples/rdf-adf/data.spce".to_string());
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("threads"));
    let mode = args.next();
    let rebuild = mode.as_deref() == Some("rebuild");
    let later = mode.filter(|m| m != "rebuild").map(|m| {
        let later = DataFile::read(Path::new(&m)).expect("a second data file");
        WaterBox::from_data_with(&later, &WaterBoxOptions::default())
            .expect("water")
            .q
    });
    let data = DataFile::read(Path::new(&path)).expect("a data file");
    let water = WaterBox::from_data_with(&data, &WaterBoxOptions::default()).expect("water");
    let sys = &water.short;
    let built_at = water.q.clone();
    let q = later.unwrap_or_else(|| built_at.clone());
    // Beyond half the skin (2 Å) along x: the list is stale at either point seen from the other.
    let far: Vec<f64> = q
        .iter()
        .enumerate()
        .map(|(i, &x)| if i % 3 == 0 { x + 1.01 } else { x })
        .collect();
    let mut g = vec![0.0; q.len()];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool");
    pool.install(|| {
        // The list built at the first file's positions.
        sys.value_gradient_into(&built_at, &mut g);
        let builds = sys.neighbor_builds();
        let (mut e, mut best) = (0.0, f64::INFINITY);
        for _ in 0..7 {
            let t = Instant::now();
            for k in 0..50 {
                let at = if rebuild && k % 2 == 0 { &far } else { &q };
                e = sys.value_gradient_into(at, &mut g);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        let rebuilt = sys.neighbor_builds() - builds;
        let check: f64 = g.iter().enumerate().map(|(k, x)| x * (1 + k % 7) as f64).sum();
        println!(
            "{} atoms, {threads} thread(s){}: {:.3} ms per energy and gradient, energy {e:.12e}, checksum {check:.12e}, {rebuilt} builds",
            q.len() / 3,
            if rebuild { ", a rebuild each" } else { "" },
            best / 50.0 * 1e3
        );
    });
}
