//! Where a Kremer–Grest step's time goes, part by part, as LAMMPS's timing breakdown: the
//! gradient at a fixed point (bonds and pairs, no neighbour-list rebuild), the same point's
//! gradient after a rebuild (the list, its plans, then the gradient), and a whole GLA step
//! (γ = 1, kT = 1, h = 0.012). Each part `REPS` times, alternating, on a rayon pool of
//! `THREADS` threads; the median of `ROUNDS` rounds is printed (these machines are shared).
//! `PART` = `gradient` times the fixed-point gradient alone, `rebuild` the gradient with a
//! rebuild alone (for a profiler), `all` (the default) every part. `PASS` = `rows`, `half` or
//! `terms` forces the pair pass (`Assembled::with_pair_strategy`); by default the machine's
//! choice (the per-term pass, for this melt). The state is held in spatial order as `zs run`
//! holds it (`Assembled::held_inside`: no gather or scatter per evaluation);
//! `KG_PARTS_GIVEN=1` evaluates the system in the order `ZS_BODY_ORDER` makes instead, through
//! its user-order interface.
//!
//! ```text
//! cargo run --release -p zs-bench --bin kg_parts -- [DATA] [REPS] [THREADS] [PART] [PASS]
//! ```
use std::path::PathBuf;
use std::time::Instant;

use zs_runtime::lammps::DataFile;
use zs_runtime::{Langevin, Model, VelocityVerlet};
use zs_systems::kremer_grest::{KremerGrest, H};

const ROUNDS: usize = 7;

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let data = args.next().map_or_else(
        || PathBuf::from("/usr/share/lammps/examples/COUPLE/multiple/data.chain"),
        PathBuf::from,
    );
    let reps: usize = args.next().map_or(50, |s| s.parse().expect("REPS"));
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("THREADS"));
    let part = args.next();
    let pass = zs_bench::pair_strategy(args.next().as_deref());
    let only_gradient = part.as_deref() == Some("gradient");
    let only_rebuild = part.as_deref() == Some("rebuild");
    let melt = DataFile::read(&data).unwrap_or_else(|e| panic!("{e}"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool");
    let (sys, q, v) = KremerGrest::lammps_chain()
        .from_data(&melt)
        .unwrap_or_else(|e| panic!("{e}"));
    let sys = sys.with_pair_strategy(pass);
    // Held in cells, as `zs run` holds the melt: the evaluations skip the gather and scatter.
    let held = std::env::var("KG_PARTS_GIVEN").is_err()
        && sys.hold_in_cells(&q).unwrap_or_else(|e| panic!("{e}"));
    let (q, v) = if held {
        let s = sys.held_inside().state(sys.state(q, v));
        (s.q, s.v)
    } else {
        (q, v)
    };
    // A second point a whole skin away along x: every evaluation there (or back) rebuilds.
    let far: Vec<f64> = q
        .iter()
        .enumerate()
        .map(|(i, &x)| if i % 3 == 0 { x + 0.41 } else { x })
        .collect();
    let mut g = vec![0.0; q.len()];
    let mut state = sys.state(q.clone(), v);
    let mut gla = Langevin::new(VelocityVerlet::new(H), 1.0, 1.0, 904_297);
    let (mut grad, mut rebuilt, mut step) = (Vec::new(), Vec::new(), Vec::new());
    // Moved into the pool: an evaluation state is not shared between threads.
    let (sys, grad, rebuilt, step) = pool.install(move || {
        let inside = sys.held_inside();
        let target: &dyn Model<Vec<f64>> = if held { &inside } else { &sys };
        target.gradient_into(&q, &mut g);
        for _ in 0..ROUNDS {
            if only_rebuild {
                for r in 0..reps {
                    target.gradient_into(if r % 2 == 0 { &far } else { &q }, &mut g);
                }
                continue;
            }
            let t = Instant::now();
            for _ in 0..reps {
                target.gradient_into(&q, &mut g);
            }
            grad.push(t.elapsed().as_secs_f64() / reps as f64);
            if only_gradient {
                continue;
            }
            let builds = sys.neighbor_builds();
            let t = Instant::now();
            for r in 0..reps {
                target.gradient_into(if r % 2 == 0 { &far } else { &q }, &mut g);
            }
            rebuilt.push(t.elapsed().as_secs_f64() / reps as f64);
            assert_eq!(sys.neighbor_builds() - builds, reps, "a rebuild each time");
            let t = Instant::now();
            for _ in 0..reps {
                gla.step(target, &mut state).expect("a step");
            }
            step.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        (sys, grad, rebuilt, step)
    });
    if only_rebuild {
        println!(
            "{} beads, {threads} thread(s): {} rebuilds",
            melt.len(),
            sys.neighbor_builds()
        );
        return;
    }
    if only_gradient {
        println!(
            "{} beads, {threads} thread(s): gradient {:.3} ms",
            melt.len(),
            median(grad) * 1e3
        );
        return;
    }
    let (grad, rebuilt, step) = (median(grad), median(rebuilt), median(step));
    println!(
        "{} beads, {threads} thread(s), median of {ROUNDS} rounds of {reps}:\n  gradient           {:7.3} ms\n  rebuild + gradient {:7.3} ms (rebuild {:.3} ms)\n  GLA step           {:7.3} ms",
        melt.len(),
        grad * 1e3,
        rebuilt * 1e3,
        (rebuilt - grad) * 1e3,
        step * 1e3
    );
}
