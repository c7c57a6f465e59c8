//! Cost of monitoring the energy: Z&Ss-stiff steps of a relaxed TIP3P cluster with and without
//! the total energy `½vᵀMv + V(q)` evaluated after every step (what `EnergyObserver`, the energy
//! guard and the CSV rows do). With the energy coming out of the step's last gradient pass the
//! two cost the same (goal ≤ 1.05×). The two loops alternate three times; best of each.
//!
//! ```text
//! cargo run --release -p zs-bench --bin water_monitor_cost -- 300 40
//! ```
use std::hint::black_box;
use std::time::Instant;

use zs_runtime::minimize::Lbfgs;
use zs_runtime::observers::total_energy;
use zs_runtime::{Clocked, ZhangSkeelStiff};
use zs_systems::water::{Water, BETA, H, OMEGA};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(300, |s| s.parse().expect("N"));
    let steps: u64 = args.next().map_or(40, |s| s.parse().expect("steps"));
    let w = Water::tip3p();
    let sys = w.assemble(n);
    let pen = sys.penalized(OMEGA);
    let mut q = w.cluster(n, 3.1, 0);
    let _ = Lbfgs::new(0.1, 20_000).minimize(&pen, &mut q);
    let start = sys.state(q, vec![0.0; 9 * n]);
    let run = |monitor: bool| {
        let mut zs = ZhangSkeelStiff::new(BETA, H);
        let mut s = start.clone();
        zs.step(&pen, &mut s).expect("step"); // set-up (matrices, buffers)
        let mut e = 0.0;
        let t = Instant::now();
        for _ in 0..steps {
            zs.step(&pen, &mut s).expect("step");
            if monitor {
                e += total_energy(&pen, black_box(&s));
            }
        }
        black_box(e);
        assert_eq!(zs.steps_taken(), steps + 1);
        t.elapsed().as_secs_f64() / steps as f64
    };
    let (mut bare, mut monitored) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        bare = bare.min(run(false));
        monitored = monitored.min(run(true));
    }
    println!(
        "N = {n}: step {:.2} ms, step + energy {:.2} ms, ratio {:.3} (best of 3 × {steps} steps)",
        bare * 1e3,
        monitored * 1e3,
        monitored / bare
    );
}
