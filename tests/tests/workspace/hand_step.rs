//! The hand-written Z&S step of the benchmarks (`zs_bench::hand_step`, the bar the generated
//! step is measured against) is the library's step to rounding: otherwise the comparison in
//! BENCHMARKS.md would compare different computations.

use zs_bench::hand_step::HandZhangSkeel;
use zs_runtime::{MechanicalSystem, ZhangSkeel};
use zs_systems::double_pendulum::{DoublePendulum, BETA, H, OMEGA};

#[test]
fn hand_written_step_is_the_library_step_to_rounding() {
    let sys = DoublePendulum::paper();
    let mut hand = HandZhangSkeel::new(BETA, H, OMEGA, sys.l1, sys.l2, sys.gravity);
    let mut zs = ZhangSkeel::new(BETA, H);
    let (mut a, mut b) = (
        DoublePendulum::initial_state(),
        DoublePendulum::initial_state(),
    );
    let mut worst = 0.0f64;
    for _ in 0..500 {
        hand.step(&mut a);
        zs.step(&sys.penalized(OMEGA), &mut b).unwrap();
        for i in 0..4 {
            worst = worst
                .max((a.q[i] - b.q[i]).abs())
                .max((a.v[i] - b.v[i]).abs());
        }
    }
    // 500 steps of a chaotic system: rounding differences grow, but stay small over T = 50.
    assert!(
        worst < 1e-9,
        "hand-written and library Z&S differ by {worst:e}"
    );
}
