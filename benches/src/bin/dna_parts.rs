//! Time the parts of a DNA Z&S step (N from the command line, default 200), serial: the
//! gradient, gradient + Hessian, the shifted solve, the third contraction, a whole Z&S step and a
//! whole Verlet step. `cargo run --release -p zs-bench --bin dna_parts -- 200`
use std::hint::black_box;
use std::time::Instant;

use zs_runtime::linalg::{ShiftedSolve, SolveOptions};
use zs_runtime::{HessianPart, Model, VelocityVerlet, ZhangSkeel};
use zs_systems::dna::DnaChain;

fn time(label: &str, reps: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    println!("{label:<28} {:>10.3} µs", best * 1e6);
    best
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(200, |s| s.parse().unwrap());
    let dna = DnaChain::paper().assemble(n).with_parallel(false);
    let s0 = DnaChain::initial_state(n, 0);
    let q = s0.q.clone();
    let mut g = vec![0.0; n];
    let mut h = dna.new_matrix(HessianPart::Full);
    let mut solver = dna.new_solver(HessianPart::Full);
    let m = vec![1.0; n];
    let reps = (200_000 / n).max(3);
    let tg = time("gradient", reps, || {
        dna.gradient_into(black_box(&q), &mut g)
    });
    time("gradient + Hessian", reps, || {
        dna.gradient_hessian_into(black_box(&q), &mut g, &mut h)
    });
    let r = zs_systems::dna::reference::DnaReference {
        epsilon: zs_systems::dna::EPSILON,
        a: zs_systems::dna::A,
        x0: zs_systems::dna::X0,
    };
    time("hand-written gradient", reps, || {
        black_box(r.gradient(black_box(&q)));
    });
    let mut x = g.clone();
    if std::env::args().nth(2).as_deref() == Some("zs-only") {
        let mut zs = ZhangSkeel::new(0.3, 2.0);
        let mut s = s0.clone();
        for k in 1..200_000 {
            if k % 1000 == 0 {
                s = s0.clone();
            }
            zs.step(&dna, &mut s).unwrap();
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("solve-only") {
        for _ in 0..20_000 {
            x.copy_from_slice(&g);
            solver
                .solve_shifted(&m, 1.2, &h, &mut x, &SolveOptions::default())
                .unwrap();
        }
        return;
    }
    time("solve (M + βh²H) x = b", reps, || {
        x.copy_from_slice(&g);
        solver
            .solve_shifted(&m, 1.2, &h, &mut x, &SolveOptions::default())
            .unwrap();
    });
    println!("  backend: {:?}", solver.backend());
    let mut t = vec![0.0; n];
    time("third contraction", reps, || {
        dna.third_contraction_into(black_box(&q), &x, &mut t)
    });
    time("gradient + Hessian + tensors", reps, || {
        dna.gradient_hessian_keeping_third_into(black_box(&q), &mut g, &mut h)
    });
    time("third from kept tensors", reps, || {
        dna.third_contraction_into(black_box(&q), &x, &mut t)
    });
    // Restart from the initial state every 1000 steps (Z&S at h = 2 leaves the bounded regime
    // after t ≈ 5000).
    let mut s = s0.clone();
    let mut zs = ZhangSkeel::new(0.3, 2.0);
    let mut k = 0;
    let tz = time("Z&S step (h = 2)", reps, || {
        k += 1;
        if k % 1000 == 0 {
            s = s0.clone();
        }
        zs.step(&dna, &mut s).unwrap()
    });
    let mut s = s0.clone();
    let mut vv = VelocityVerlet::new(0.2);
    let tv = time("Verlet step (h = 0.2)", reps, || {
        k += 1;
        if k % 10000 == 0 {
            s = s0.clone();
        }
        vv.step(&dna, &mut s).unwrap()
    });
    println!(
        "Z&S / Verlet per step {:.2}; to the same T: Verlet(0.2) / Z&S(2) = {:.2}; gradient / Verlet step {:.2}",
        tz / tv,
        10.0 * tv / tz,
        tg / tv
    );
}
