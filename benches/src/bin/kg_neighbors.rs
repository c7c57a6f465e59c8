//! The neighbour-list build of the Kremer–Grest melt (LAMMPS's `data.chain`, 32 000 beads):
//! the cost of a gradient evaluation that rebuilds the list (every bead moved by 0.3, more than
//! half the skin, between evaluations) against one that does not, on one thread; the
//! difference is the build and the pair form's new plan.
//!
//! ```text
//! cargo run --release -p zs-bench --bin kg_neighbors -- [DATA] [REPEATS]
//! ```
use std::path::PathBuf;
use std::time::Instant;

use zs_runtime::lammps::DataFile;
use zs_runtime::Model;
use zs_systems::kremer_grest::KremerGrest;

fn main() {
    let mut args = std::env::args().skip(1);
    let data = args.next().map_or_else(
        || PathBuf::from("/usr/share/lammps/examples/COUPLE/multiple/data.chain"),
        PathBuf::from,
    );
    let repeats: usize = args.next().map_or(40, |s| s.parse().expect("REPEATS"));
    let melt = DataFile::read(&data).unwrap_or_else(|e| panic!("{e}"));
    let (sys, q, _) = KremerGrest::lammps_chain()
        .from_data(&melt)
        .unwrap_or_else(|e| panic!("{e}"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    let moved: Vec<f64> = q.iter().map(|x| x + 0.3).collect();
    let mut g = vec![0.0; q.len()];
    pool.install(move || {
        let mut time = |alternate: bool| {
            let at = |k: usize| if alternate && k % 2 == 1 { &moved } else { &q };
            sys.gradient_into(at(1), &mut g);
            let t = Instant::now();
            for k in 0..repeats {
                sys.gradient_into(at(k), &mut g);
            }
            t.elapsed().as_secs_f64() / repeats as f64 * 1e3
        };
        let builds = sys.neighbor_builds();
        let rebuilding = time(true);
        let rebuilt = sys.neighbor_builds() - builds;
        let kept = time(false);
        println!(
            "gradient with a rebuild {rebuilding:.3} ms ({rebuilt} builds in {} calls), without {kept:.3} ms: \
             build and plan {:.3} ms",
            repeats + 1,
            rebuilding - kept
        );
    });
}
