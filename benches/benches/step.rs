//! One penalized double-pendulum Zhang–Skeel step (ω = 20, β = 0.4, h = 0.1), with the
//! derivatives of `V_ω` from
//! (a) the code `#[mechanical_system]` generates (`DoublePendulum::paper().penalized(ω)`),
//! (b) the hand-written closed forms (`DoublePendulumReference`), in the same stepper,
//! (c) forward-mode AD with num-dual (`DoublePendulumDual`: 10 hyper-dual passes for ∇V and H,
//!     4 hyper-hyper-dual passes for T),
//! plus the raw derivative evaluations (`gradient_hessian` + `third_contraction`) of each.
//!
//! What "one step" measures: the **steady-state** Z&S step, i.e. one evaluation of
//! `(∇V_ω, Hess V_ω)` at `x_k+1`, one 4 × 4 symmetric solve of `(M + βh²H) a = -∇V`, one third
//! contraction `T(x_k+1; a)`, and the x, v updates; `f_k` at `x_k` comes from the stepper's
//! cache, as in every step of a run after the first. To keep the measured step fixed, each
//! iteration steps a copy of the same state `s` (the paper's initial state advanced 7 steps so
//! it is generic) with a stepper whose cache has been primed at `s` — the priming step runs in
//! criterion's untimed `iter_batched` set-up. `zs_step_running/*` times the steps of one
//! continuing run instead (same work per step, without `iter_batched`'s per-input overhead).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use zs_runtime::{MechanicalSystem, Potential, State, ZhangSkeel};
use zs_systems::double_pendulum::dual::DoublePendulumDual;
use zs_systems::double_pendulum::reference::DoublePendulumReference;
use zs_systems::double_pendulum::{DoublePendulum, BETA, H, OMEGA};

/// Number of steps from the paper's initial state to the benchmarked state.
const WARM_UP_STEPS: usize = 7;

/// `(s_prev, s)`: stepping `s_prev` once gives `s`, the state whose step is measured.
fn states() -> (State<4>, State<4>) {
    let sys = DoublePendulumReference::paper();
    let p = sys.penalized(OMEGA);
    let mut zs = ZhangSkeel::new(BETA, H);
    let mut s = DoublePendulum::initial_state();
    for _ in 0..WARM_UP_STEPS - 1 {
        zs.step(&p, &mut s).expect("warm-up step");
    }
    let prev = s;
    zs.step(&p, &mut s).expect("warm-up step");
    (prev, s)
}

fn bench_variant<P: Potential<4>>(c: &mut Criterion, name: &str, p: &P) {
    let (prev, s) = states();
    // A generic direction for the raw third contraction: the Z&S `a` is of this size.
    let a = [0.013, -0.021, 0.017, 0.009];
    c.bench_function(&format!("zs_step/{name}"), |b| {
        b.iter_batched(
            || {
                // Prime the cache at `s` (untimed).
                let mut zs = ZhangSkeel::new(BETA, H);
                let mut st = prev;
                zs.step(p, &mut st).expect("priming step");
                debug_assert_eq!(st.q, s.q);
                (zs, st)
            },
            |(mut zs, mut st)| {
                zs.step(black_box(p), &mut st).expect("step");
                black_box(st)
            },
            BatchSize::SmallInput,
        )
    });
    // Secondary figure: steps of one continuing run (no per-iteration set-up, so no
    // `iter_batched` overhead; the state moves along a bounded trajectory, and the cost of a
    // step does not depend on the state: no iterations).
    c.bench_function(&format!("zs_step_running/{name}"), |b| {
        let mut zs = ZhangSkeel::new(BETA, H);
        let mut st = s;
        b.iter(|| {
            zs.step(black_box(p), &mut st).expect("step");
            black_box(&st);
        })
    });
    c.bench_function(&format!("derivatives/{name}"), |b| {
        b.iter(|| {
            let q = black_box(&s.q);
            let gh = p.gradient_hessian(q);
            let t = p.third_contraction(q, black_box(&a));
            black_box((gh, t))
        })
    });
}

fn step(c: &mut Criterion) {
    let generated = DoublePendulum::paper();
    let reference = DoublePendulumReference::paper();
    let dual = DoublePendulumDual::new(&generated, OMEGA);
    // Same physics: one step from the same state agrees to rounding in all three variants.
    let (prev, _) = states();
    let mut out = Vec::new();
    for run in 0..3 {
        let mut st = prev;
        let mut zs = ZhangSkeel::new(BETA, H);
        match run {
            0 => zs.step(&generated.penalized(OMEGA), &mut st),
            1 => zs.step(&reference.penalized(OMEGA), &mut st),
            _ => zs.step(&dual, &mut st),
        }
        .expect("step");
        out.push(st.q);
    }
    for q in &out[1..] {
        for i in 0..4 {
            assert!(
                (q[i] - out[0][i]).abs() < 1e-12,
                "variants disagree: {out:?}"
            );
        }
    }

    bench_variant(c, "generated", &generated.penalized(OMEGA));
    bench_variant(c, "reference", &reference.penalized(OMEGA));
    bench_variant(c, "num-dual", &dual);
}

criterion_group!(benches, step);
criterion_main!(benches);
