//! Where an alkane liquid's step goes: the gradient at a fixed point (bonds, angles,
//! dihedrals and the cut, shifted LJ pairs; no neighbour-list rebuild), `REPS` times on a
//! rayon pool of `THREADS` threads; the median of `ROUNDS` rounds is printed (these machines
//! are shared). The liquid is a LAMMPS data file (`zs run alkane … --write-data FILE`).
//!
//! ```text
//! cargo run --release -p zs-bench --bin alkane_parts -- DATA [REPS] [THREADS] [rows|half|terms]
//! ```
//!
//! `rows`, `half` or `terms` forces the pair pass (`Assembled::with_pair_strategy`: full
//! rows, the half list's rows, the per-term pass); by default the machine's choice.
use std::path::PathBuf;
use std::time::Instant;

use zs_runtime::lammps::DataFile;
use zs_runtime::Model;
use zs_systems::alkane::variant::Flexible;
use zs_systems::alkane::Trappe;

const ROUNDS: usize = 7;

fn main() {
    let mut args = std::env::args().skip(1);
    let data = PathBuf::from(args.next().expect("DATA: a LAMMPS data file of the liquid"));
    let reps: usize = args.next().map_or(20, |s| s.parse().expect("REPS"));
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS"));
    let pass = zs_bench::pair_strategy(args.next().as_deref());
    let file = DataFile::read(&data).unwrap_or_else(|e| panic!("{e}"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool");
    let (sys, q, _, _) = Trappe::<Flexible>::trappe()
        .from_data(&file)
        .unwrap_or_else(|e| panic!("{e}"));
    let sys = sys.with_pair_strategy(pass);
    let mut g = vec![0.0; q.len()];
    let sites = q.len() / 3;
    let mut rounds = Vec::new();
    let mut rounds = pool.install(move || {
        sys.gradient_into(&q, &mut g);
        for _ in 0..ROUNDS {
            let t = Instant::now();
            for _ in 0..reps {
                sys.gradient_into(&q, &mut g);
            }
            rounds.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        rounds
    });
    rounds.sort_by(f64::total_cmp);
    println!(
        "{} sites, {threads} thread(s): gradient {:.3} ms (median of {ROUNDS} rounds of {reps}; \
         fastest {:.3})",
        sites,
        rounds[ROUNDS / 2] * 1e3,
        rounds[0] * 1e3
    );
}
