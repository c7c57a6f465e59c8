//! The log-log slope of the Kremer–Grest melt's velocity Verlet step from one size to another,
//! with the host's drift taken out; for two files of one size, the ratio of their steps' times
//! (one melt with its atoms in two orders). Both melts are held in one process and stepped in
//! turn, a few seconds each: `SMALL_STEPS` steps of the small one (540 by default), then as many
//! steps of the large one as make the same bead-steps. `ROUNDS` such rounds (20) run on a rayon
//! pool of `THREADS` threads (1).
//!
//! `kg_slope.py --run` alternates whole runs of `zs run`, a minute apart, and these machines'
//! speed drifts over minutes (BENCHMARKS.md). Here the two melts are seconds apart. The host
//! also moves within seconds, so the rounds' slopes still spread: the estimate is the slope
//! of the times summed over all rounds. Each segment starts after one untimed step of its
//! melt, so that it does not pay for the caches the other one emptied (two melts of one size
//! that fit in the caches would otherwise favour the first). A neighbour-list build costs about a step, and a
//! segment holds one build more or fewer than the average: a round's slope moves with that
//! count, the summed times' do not (each melt's builds per step are printed). The steps are
//! those of `zs run kremer-grest --integrator verlet`: in.chain's force field, `h = 0.012`,
//! the state held in spatial order (`Assembled::held_inside`), re-sorted between steps, or with
//! `ZS_BODY_ORDER=given|auto` the bodies in the order that makes (as for `zs`); a path given as
//! `PATH@file` keeps its melt's state in the file's order whatever the environment says, so that
//! `kg_alternated DATA DATA@file` measures what holding the state in spatial order is worth.
//!
//! Printed: each round's time per step of both melts, their ratio and its slope
//! `ln(t_large / t_small) / ln(N_large / N_small)` (times per step, `N` beads); then the ratio
//! of the times summed over the rounds and its slope (the estimate) with its 95 % bootstrap
//! interval (the rounds resampled with replacement 4 000 times, seeded: the same rounds give
//! the same interval), the median of the rounds' slopes, the slope between the fastest
//! segments, and each melt's builds per step. The interval counts the noise within one run;
//! the host's load moves between runs minutes apart by more (BENCHMARKS.md).
//!
//! ```text
//! cargo run --release -p zs-bench --bin kg_alternated -- SMALL LARGE [ROUNDS] [THREADS] [SMALL_STEPS]
//! ```
use std::path::Path;
use std::time::Instant;

use zs_runtime::assembly::{holds_inside_from_env, Assembled};
use zs_runtime::lammps::DataFile;
use zs_runtime::{DynState, Model, VelocityVerlet};
use zs_systems::kremer_grest::{KremerGrest, H};

/// One melt and its state, ready to step.
struct Melt {
    beads: usize,
    sys: Assembled<KremerGrest, 3>,
    state: DynState,
    /// The state held in the system's spatial order (`Assembled::held_inside`), as `zs run`
    /// holds it.
    held: bool,
    /// Each melt its own stepper: a stepper keeps buffers the length of its state.
    verlet: VelocityVerlet<Vec<f64>>,
}

impl Melt {
    /// The melt of `arg`, a data file's path: its state held in spatial order as `zs run`
    /// holds it (`ZS_BODY_ORDER` as for `zs`), or, for `PATH@file`, in the file's order (so
    /// that one process compares the two).
    fn read(arg: &str) -> Melt {
        let (path, hold) = match arg.strip_suffix("@file") {
            Some(path) => (Path::new(path), false),
            None => (Path::new(arg), holds_inside_from_env()),
        };
        let data = DataFile::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (sys, q, v) = KremerGrest::lammps_chain()
            .from_data(&data)
            .unwrap_or_else(|e| panic!("{e}"));
        let state = sys.state(q, v);
        let held = hold && sys.hold_in_cells(&state.q).unwrap_or(false);
        let state = if held {
            sys.held_inside().state(state)
        } else {
            state
        };
        Melt {
            beads: data.len(),
            sys,
            state,
            held,
            verlet: VelocityVerlet::new(H),
        }
    }

    /// Seconds of `steps` steps, and the neighbour-list builds they made.
    fn steps(&mut self, steps: usize) -> (f64, usize) {
        let builds = self.sys.neighbor_builds();
        let t = Instant::now();
        let held = self.sys.held_inside();
        // Behind `dyn`, as `zs run` steps it.
        let target: &dyn Model<Vec<f64>> = if self.held { &held } else { &self.sys };
        for _ in 0..steps {
            // As the driver steps a state held inside: re-sorted between steps when due.
            target.reorder(&mut self.state);
            self.verlet
                .step(target, &mut self.state)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        (
            t.elapsed().as_secs_f64(),
            self.sys.neighbor_builds() - builds,
        )
    }
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

fn fastest(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The 2.5 and 97.5 percentiles of `estimate` over 4 000 resamplings of `rounds` (with
/// replacement, a seeded generator).
fn bootstrap(rounds: &[(f64, f64)], estimate: impl Fn(&[(f64, f64)]) -> f64) -> (f64, f64) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut sample = vec![(0.0, 0.0); rounds.len()];
    let mut estimates: Vec<f64> = (0..4000)
        .map(|_| {
            for s in &mut sample {
                *s = rounds[rng.random_range(0..rounds.len())];
            }
            estimate(&sample)
        })
        .collect();
    estimates.sort_by(f64::total_cmp);
    (estimates[100], estimates[3899])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: kg_alternated SMALL LARGE [ROUNDS] [THREADS] [SMALL_STEPS]");
        std::process::exit(2);
    }
    let number = |i: usize, default: usize| {
        args.get(i)
            .map_or(default, |s| s.parse().expect("a whole number"))
    };
    let (rounds, threads, small_steps) = (number(2, 20), number(3, 1), number(4, 540));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool");
    let (mut small, mut large) = (Melt::read(&args[0]), Melt::read(&args[1]));
    assert!(
        large.beads >= small.beads,
        "LARGE has fewer beads than SMALL"
    );
    let large_steps = (small_steps * small.beads).div_ceil(large.beads);
    // The ratio of the times per step of `(small, large)` seconds, and its log-log slope
    // (none for two melts of one size).
    let ratio = |(a, b): (f64, f64)| (b / large_steps as f64) / (a / small_steps as f64);
    let span = (large.beads as f64 / small.beads as f64).ln();
    let slope = |t: (f64, f64)| (span > 0.0).then(|| ratio(t).ln() / span);
    let shown = |s: Option<f64>| s.map_or_else(|| "-".to_string(), |s| format!("{s:.3}"));
    println!(
        "{} and {} beads, {threads} thread(s): rounds of {small_steps} and {large_steps} steps",
        small.beads, large.beads
    );
    pool.install(|| {
        // Past the first builds and the first evaluations' set-up.
        small.steps(20);
        large.steps(2);
        let mut times = Vec::new();
        let mut builds = [0, 0];
        for r in 0..rounds {
            small.steps(1);
            let (a, builds_small) = small.steps(small_steps);
            large.steps(1);
            let (b, builds_large) = large.steps(large_steps);
            println!(
                "round {:>2}: {:.3} ms a step of {} beads ({builds_small} builds), {:.2} ms of {} ({builds_large} builds): ratio {:.4}, slope {}",
                r + 1,
                a / small_steps as f64 * 1e3,
                small.beads,
                b / large_steps as f64 * 1e3,
                large.beads,
                ratio((a, b)),
                shown(slope((a, b)))
            );
            times.push((a, b));
            builds[0] += builds_small;
            builds[1] += builds_large;
        }
        // The times summed over rounds (the estimate's), of these rounds or of a resampling.
        let sum = |t: &[(f64, f64)]| t.iter().fold((0.0, 0.0), |(s, l), &(a, b)| (s + a, l + b));
        let summed = sum(&times);
        let slopes: Vec<f64> = times.iter().filter_map(|&t| slope(t)).collect();
        let (ts, tl): (Vec<f64>, Vec<f64>) = times.iter().copied().unzip();
        let interval = (span > 0.0 && !times.is_empty()).then(|| {
            let (lo, hi) = bootstrap(&times, |t| slope(sum(t)).unwrap_or(f64::NAN));
            format!(" (95 % bootstrap {lo:.4} to {hi:.4})")
        });
        println!(
            "{threads} thread(s), {} to {} beads, {rounds} rounds: summed times per step LARGE / SMALL {:.4}, slope {}{}; rounds' median slope {} (from {} to {}); of the fastest segments {}; neighbour-list builds per step {:.4} and {:.4}",
            small.beads,
            large.beads,
            ratio(summed),
            shown(slope(summed)),
            interval.unwrap_or_default(),
            shown((!slopes.is_empty()).then(|| median(slopes.clone()))),
            shown((!slopes.is_empty()).then(|| fastest(&slopes))),
            shown((!slopes.is_empty()).then(|| slopes.iter().copied().fold(f64::NEG_INFINITY, f64::max))),
            shown(slope((fastest(&ts), fastest(&tl)))),
            builds[0] as f64 / (rounds * small_steps) as f64,
            builds[1] as f64 / (rounds * large_steps) as f64,
        );
    });
}
