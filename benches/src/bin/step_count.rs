//! Run `STEPS` penalized double-pendulum Z&S steps with one derivative back end, for counting
//! instructions with callgrind (deterministic, unlike wall time on a shared machine):
//!
//! ```text
//! cargo build --release -p zs-bench --bin step_count
//! for v in generated reference num-dual; do for n in 0 100000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/step_count $v $n 2>&1 | grep 'Collected'
//! done; done
//! ```
//! A third argument `derivatives` counts only the derivative evaluations of a step
//! (`gradient_hessian` + `third_contraction`).
//! Instructions per step = (count at 100000 − count at 0) / 100000. See BENCHMARKS.md.

use std::hint::black_box;

use zs_bench::hand_step::HandZhangSkeel;
use zs_runtime::{MechanicalSystem, Potential, State, ZhangSkeel};
use zs_systems::double_pendulum::dual::DoublePendulumDual;
use zs_systems::double_pendulum::reference::DoublePendulumReference;
use zs_systems::double_pendulum::{DoublePendulum, BETA, H, OMEGA};

fn run<P: Potential<4>>(p: &P, steps: u64) -> State<4> {
    let mut zs = ZhangSkeel::new(BETA, H);
    let mut s = DoublePendulum::initial_state();
    for _ in 0..steps {
        zs.step(black_box(p), &mut s).expect("step");
    }
    s
}

/// Only the derivatives a Z&S step evaluates (`gradient_hessian` + `third_contraction`), at
/// `steps` points of a fixed trajectory.
fn derivatives<P: Potential<4>>(p: &P, steps: u64) -> State<4> {
    let mut s = DoublePendulum::initial_state();
    let a = [0.013, -0.021, 0.017, 0.009];
    for k in 0..steps {
        s.q[0] = 0.01 * (k % 97) as f64;
        let (g, h) = p.gradient_hessian(black_box(&s.q));
        let t = p.third_contraction(black_box(&s.q), black_box(&a));
        black_box((g, h, t));
    }
    s
}

fn main() {
    let mut args = std::env::args().skip(1);
    let variant = args.next().unwrap_or_else(|| "generated".into());
    let steps: u64 = args
        .next()
        .map_or(100_000, |s| s.parse().expect("step count"));
    let only_derivatives = args.next().as_deref() == Some("derivatives");
    let sys = DoublePendulum::paper();
    let reference = DoublePendulumReference::paper();
    let s = match (variant.as_str(), only_derivatives) {
        ("generated", false) => run(&sys.penalized(OMEGA), steps),
        ("reference", false) => run(&reference.penalized(OMEGA), steps),
        ("num-dual", false) => run(&DoublePendulumDual::new(&sys, OMEGA), steps),
        ("generated", true) => derivatives(&sys.penalized(OMEGA), steps),
        ("reference", true) => derivatives(&reference.penalized(OMEGA), steps),
        ("num-dual", true) => derivatives(&DoublePendulumDual::new(&sys, OMEGA), steps),
        ("hand", false) => {
            let mut zs = HandZhangSkeel::new(BETA, H, OMEGA, sys.l1, sys.l2, sys.gravity);
            let mut s = DoublePendulum::initial_state();
            for _ in 0..steps {
                black_box(&mut zs).step(&mut s);
            }
            s
        }
        (other, _) => {
            eprintln!("step_count: unknown variant {other} (generated, reference, num-dual, hand)");
            std::process::exit(2);
        }
    };
    println!("{variant}: {steps} steps, t = {:.1}, q = {:?}", s.t, s.q);
}
