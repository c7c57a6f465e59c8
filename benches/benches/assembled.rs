//! Assembled systems: `cargo bench -p zs-bench --bench assembled` (BENCHMARKS.md,
//! "Assembled systems"). Every bench times the steps of one continuing run (steady state: the
//! stepper's cache holds `f_k`), restarted from the initial state every [`RESTART`] steps so the
//! DNA run stays in its bounded regime.
//!
//! - `dna_zs_step/N`: a serial Z&S step (β = 0.3, h = 2) of the DNA ring, N = 200 … 51 200 —
//!   the O(N) claim; `benches/fit_slope.py` fits the log-log slope from criterion's output.
//! - `dna_step_200/*`: Z&S (h = 2) and Verlet (h = 0.2) steps at N = 200, and the parts of a Z&S
//!   step: gradient, gradient + Hessian (+ kept third-derivative tensors), the banded shifted
//!   solve, the third contraction from the kept tensors.
//! - `chain_step/*`: a Z&S step (h = 0.05) and a SHAKE step (Newton, h = 0.05) of the chain of
//!   10 pendula.
//! - `threads/*`: the largest DNA ring's Z&S step, and a Verlet step (force assembly over all
//!   499 500 pairs) of a 1000-body soft-sphere cluster, on rayon pools of 1 and 2 threads.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::linalg::{ShiftedSolve, SolveOptions};
use zs_runtime::{
    mechanical_system, DynState, HessianPart, Model, Shake, ShakeSolver, Stepper, VelocityVerlet,
    ZhangSkeel,
};
use zs_systems::chain::PendulumChain;
use zs_systems::dna::DnaChain;

/// Steps between restarts from the initial state.
const RESTART: u64 = 1000;

/// Time `stepper`'s steps on `target`, from `start`, restarting every [`RESTART`] steps.
fn steps<P: ?Sized, S: Stepper<P, Vec<f64>>>(
    b: &mut criterion::Bencher,
    mut stepper: S,
    target: &P,
    start: &DynState,
) {
    let mut s = start.clone();
    let mut k = 0;
    b.iter_custom(|iters| {
        let t = Instant::now();
        for _ in 0..iters {
            k += 1;
            if k % RESTART == 0 {
                s.q.copy_from_slice(&start.q);
                s.v.copy_from_slice(&start.v);
            }
            stepper.step(black_box(target), &mut s).expect("step");
        }
        t.elapsed()
    });
}

fn dna(n: usize, parallel: bool) -> (Assembled<DnaChain, 1>, DynState) {
    let sys = DnaChain::paper().assemble(n).with_parallel(parallel);
    (sys, DnaChain::initial_state(n, 0))
}

fn dna_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("dna_zs_step");
    // Fresh large buffers run ~30 % slow for the first seconds (first-touch page faults and the
    // kernel's page handling; measured: 3.3 ms at 0.5 s warm-up vs 2.7 ms at 3 s for N = 51 200).
    g.warm_up_time(Duration::from_secs(3))
        .measurement_time(Duration::from_secs(4));
    for n in [200, 800, 3200, 12_800, 51_200] {
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            let (sys, s0) = dna(n, false);
            steps(b, ZhangSkeel::new(0.3, 2.0), &sys, &s0)
        });
    }
    g.finish();
}

fn dna_200(c: &mut Criterion) {
    let (sys, s0) = dna(200, false);
    let mut g = c.benchmark_group("dna_step_200");
    g.bench_function("zs_h2", |b| steps(b, ZhangSkeel::new(0.3, 2.0), &sys, &s0));
    g.bench_function("verlet_h0.2", |b| {
        steps(b, VelocityVerlet::new(0.2), &sys, &s0)
    });
    let q = &s0.q;
    let mut grad = vec![0.0; 200];
    let mut h = sys.new_matrix(HessianPart::Full);
    g.bench_function("gradient", |b| {
        b.iter(|| sys.gradient_into(black_box(q), &mut grad))
    });
    g.bench_function("gradient_hessian", |b| {
        b.iter(|| sys.gradient_hessian_into(black_box(q), &mut grad, &mut h))
    });
    g.bench_function("gradient_hessian_tensors", |b| {
        b.iter(|| sys.gradient_hessian_keeping_third_into(black_box(q), &mut grad, &mut h))
    });
    let mut solver = sys.new_solver(HessianPart::Full);
    let m = vec![1.0; 200];
    let mut x = grad.clone();
    g.bench_function("shifted_solve", |b| {
        b.iter(|| {
            x.copy_from_slice(&grad);
            solver
                .solve_shifted(&m, 1.2, &h, &mut x, &SolveOptions::default())
                .expect("solve")
        })
    });
    let mut t = vec![0.0; 200];
    g.bench_function("third_from_tensors", |b| {
        b.iter(|| sys.third_contraction_into(black_box(q), &x, &mut t))
    });
    g.finish();
}

fn chain(c: &mut Criterion) {
    let sys = PendulumChain::paper().assemble(10).with_parallel(false);
    let penalized = sys.penalized(20.0);
    let s0 = PendulumChain::initial_state(10);
    let mut g = c.benchmark_group("chain_step");
    g.bench_function("zs_h0.05", |b| {
        steps(b, ZhangSkeel::new(0.4, 0.05), &penalized, &s0)
    });
    g.bench_function("shake_h0.05", |b| {
        let shake = Shake::new(0.05).with_solver(ShakeSolver::Newton);
        steps(b, shake, &sys, &s0)
    });
    g.finish();
}

/// Soft spheres in a harmonic trap: every pair interacts (no cutoff), the force assembly is
/// O(N²) and dominates a step.
struct SoftSpheres {
    strength: f64,
}

#[mechanical_system]
impl SoftSpheres {
    fn site_potential(&self, x: &[f64; 3]) -> f64 {
        0.01 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        self.strength / (1.0 + r2)
    }
}

fn spheres(n: usize) -> (Assembled<SoftSpheres, 3>, DynState) {
    let sys = Assembled::new(SoftSpheres { strength: 0.1 }, Topology::new(n))
        .expect("valid topology")
        .with_parallel(true);
    // A Fibonacci-like spiral filling a ball of radius ≈ n^(1/3).
    let q = (0..n)
        .flat_map(|k| {
            let r = (k as f64 + 0.5).cbrt();
            let (phi, z) = (
                2.399_963 * k as f64,
                1.0 - 2.0 * (k as f64 + 0.5) / n as f64,
            );
            let s = (1.0 - z * z).sqrt();
            [r * s * phi.cos(), r * s * phi.sin(), r * z]
        })
        .collect();
    (sys, DynState::new(q, vec![0.0; 3 * n]))
}

fn threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("threads");
    g.warm_up_time(Duration::from_secs(3))
        .measurement_time(Duration::from_secs(4));
    for t in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("pool");
        g.bench_function(BenchmarkId::new("dna_51200_zs", t), |b| {
            // Built in the pool: an evaluation state stays with its thread.
            pool.install(|| {
                let (big, s_big) = dna(51_200, true);
                steps(b, ZhangSkeel::new(0.3, 2.0), &big, &s_big)
            })
        });
        g.bench_function(BenchmarkId::new("spheres_1000_verlet", t), |b| {
            pool.install(|| {
                let (pairs, s_pairs) = spheres(1000);
                steps(b, VelocityVerlet::new(0.01), &pairs, &s_pairs)
            })
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = dna_scaling, dna_200, chain, threads
}
criterion_main!(benches);
