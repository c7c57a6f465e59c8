//! O(N): the Kremer–Grest melt's step cost up to 256 000 beads, a melt's data file replicated 1,
//! 2, 4, 8 … times (`DataFile::replicate`, as LAMMPS's `replicate`) while it has at most 256 000
//! beads — LAMMPS's `data.chain` (32 000) or the 4 000-bead melt that
//! `benches/peers/lammps_kremer_grest.py --scaling` makes from it: GLA Langevin
//! around velocity Verlet (γ = 1, kT = 1, h = 0.012, in.chain's), `STEPS` steps after 20 of
//! warm-up, on a rayon pool of `THREADS` threads; prints the time per step and per bead and the
//! log-log slope of time against size (1: linear).
//!
//! ```text
//! cargo run --release -p zs-bench --bin kg_scaling -- [DATA] [STEPS] [THREADS]
//! ```
use std::path::PathBuf;
use std::time::Instant;

use zs_runtime::lammps::DataFile;
use zs_runtime::verify::slope;
use zs_runtime::{Langevin, VelocityVerlet};
use zs_systems::kremer_grest::{KremerGrest, H};

fn main() {
    let mut args = std::env::args().skip(1);
    let data = args.next().map_or_else(
        || PathBuf::from("/usr/share/lammps/examples/COUPLE/multiple/data.chain"),
        PathBuf::from,
    );
    let steps: usize = args.next().map_or(100, |s| s.parse().expect("STEPS"));
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS"));
    let base = DataFile::read(&data).unwrap_or_else(|e| panic!("{e}"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool");
    let (mut sizes, mut times) = (Vec::new(), Vec::new());
    let factors = [
        [1, 1, 1],
        [2, 1, 1],
        [2, 2, 1],
        [2, 2, 2],
        [4, 2, 2],
        [4, 4, 2],
        [4, 4, 4],
    ];
    for n in factors
        .into_iter()
        .take_while(|n| base.len() * n.iter().product::<usize>() <= 256_000)
    {
        let melt = base.replicate(n);
        let (sys, q, v) = KremerGrest::lammps_chain()
            .from_data(&melt)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut state = sys.state(q, v);
        let mut gla = Langevin::new(VelocityVerlet::new(H), 1.0, 1.0, 904_297);
        let beads = melt.len();
        let per_step = pool.install(move || {
            for _ in 0..20 {
                gla.step(&sys, &mut state).expect("a step");
            }
            let builds = sys.neighbor_builds();
            let t = Instant::now();
            for _ in 0..steps {
                gla.step(&sys, &mut state).expect("a step");
            }
            let dt = t.elapsed().as_secs_f64() / steps as f64;
            println!(
                "{:>7} beads: {:8.2} ms per step, {:6.1} ns per bead-step ({} neighbour-list builds in {steps} steps)",
                beads,
                dt * 1e3,
                dt / beads as f64 * 1e9,
                sys.neighbor_builds() - builds
            );
            dt
        });
        sizes.push(beads as f64);
        times.push(per_step);
    }
    println!(
        "log-log slope of time per step against beads, {} to {}: {:.3} ({threads} thread(s))",
        sizes[0],
        sizes[sizes.len() - 1],
        slope(&sizes, &times)
    );
}
