//! The generated double-pendulum Z&S step against one written entirely by hand ([`HandZhangSkeel`]:
//! closed-form derivatives, an in-place 4 × 4 Cholesky, no checks), the outside check of the
//! assembled-systems work ("the fixed-size path must not get slower"; goal ≤ 1.0×): `cargo bench -p
//! zs-bench --bench hand_step`. Both time the steps of one continuing run from the paper's initial
//! state (penalized, ω = 20, β = 0.4, h = 0.1), restarted every 1000 steps.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use zs_bench::hand_step::HandZhangSkeel;
use zs_runtime::{MechanicalSystem, ZhangSkeel};
use zs_systems::double_pendulum::{DoublePendulum, BETA, H, OMEGA};

fn step(c: &mut Criterion) {
    let sys = DoublePendulum::paper();
    let penalized = sys.penalized(OMEGA);
    let s0 = DoublePendulum::initial_state();
    // Same trajectory: 1000 steps of each end within rounding of each other.
    let (mut a, mut b) = (s0, s0);
    let mut zs = ZhangSkeel::new(BETA, H);
    let mut hand = HandZhangSkeel::new(BETA, H, OMEGA, sys.l1, sys.l2, sys.gravity);
    for _ in 0..1000 {
        zs.step(&penalized, &mut a).expect("step");
        hand.step(&mut b);
    }
    for i in 0..4 {
        assert!((a.q[i] - b.q[i]).abs() < 1e-9, "{:?} vs {:?}", a.q, b.q);
    }

    let mut g = c.benchmark_group("dp_step");
    g.bench_function("generated", |bench| {
        let mut zs = ZhangSkeel::new(BETA, H);
        let (mut s, mut k) = (s0, 0u32);
        bench.iter(|| {
            k += 1;
            if k % 1000 == 0 {
                s = s0;
            }
            zs.step(black_box(&penalized), &mut s).expect("step");
        })
    });
    g.bench_function("hand", |bench| {
        let mut hand = HandZhangSkeel::new(BETA, H, OMEGA, sys.l1, sys.l2, sys.gravity);
        let (mut s, mut k) = (s0, 0u32);
        bench.iter(|| {
            k += 1;
            if k % 1000 == 0 {
                s = s0;
            }
            hand.step(black_box(&mut s));
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = step
}
criterion_main!(benches);
