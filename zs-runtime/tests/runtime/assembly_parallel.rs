//! Assembled systems evaluated on rayon's pool give the same bits whatever the number of
//! threads, and the same bits as the serial evaluation: every term's output and every gathered
//! entry are computed by the same operations in the same order, only by different threads.

use crate::support::assembled;

use zs_runtime::{HessianPart, Langevin, Model, StiffModel, ZhangSkeel, ZhangSkeelStiff};

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// `go` on a pool of `threads` threads, or serially (`None`).
fn on<R: Send>(threads: Option<usize>, go: impl FnOnce() -> R + Send) -> R {
    match threads {
        Some(t) => pool(t).install(go),
        None => go(),
    }
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn dna_trajectories_are_bit_identical_on_1_2_and_3_threads_and_serially() {
    let n = 6000;
    let run = |threads: Option<usize>| {
        // Built where it is stepped: an evaluation state is not shared between threads.
        let go = || {
            let (dna, q, v) = assembled::dna(n);
            let dna = dna.with_parallel(threads.is_some());
            let mut s = dna.state(q, v);
            let mut zs = ZhangSkeel::new(0.3, 2.0);
            for _ in 0..30 {
                zs.step(&dna, &mut s).unwrap();
            }
            (bits(&s.q), bits(&s.v))
        };
        on(threads, go)
    };
    let serial = run(None);
    for t in [1, 2, 3] {
        assert!(run(Some(t)) == serial, "{t} threads differ from serial");
    }
}

#[test]
fn pair_system_derivatives_are_bit_identical_whatever_the_thread_count() {
    let (beads, q, _) = assembled::beads(400);
    assert!(
        beads.is_parallel(),
        "{} pairs: parallel by default",
        beads.term_count("pair")
    );
    let omega = 30.0;
    let eval = |threads: Option<usize>| {
        let go = || {
            let b = assembled::beads(400).0.with_parallel(threads.is_some());
            let p = b.penalized(omega);
            let n = q.len();
            let (mut g, mut t) = (vec![0.0; n], vec![0.0; n]);
            let mut h = p.new_matrix(HessianPart::Full);
            p.gradient_hessian_into(&q, &mut g, &mut h);
            let a: Vec<f64> = (0..n).map(|i| (0.37 * i as f64).sin()).collect();
            p.third_contraction_into(&q, &a, &mut t);
            let mut hs = p.new_matrix(HessianPart::Stiff);
            let mut gs = vec![0.0; n];
            p.gradient_stiff_hessian_into(&q, &mut gs, &mut hs);
            (
                bits(&g),
                bits(h.values()),
                bits(&t),
                bits(hs.values()),
                p.potential_at(&q).to_bits(),
            )
        };
        on(threads, go)
    };
    let serial = eval(None);
    for t in [1, 2, 4] {
        assert!(eval(Some(t)) == serial, "{t} threads differ from serial");
    }
    drop(beads);
}

#[test]
fn langevin_around_stiff_zhang_skeel_is_reproducible_across_thread_counts() {
    let run = |threads: usize| {
        pool(threads).install(|| {
            let (beads, q, v) = assembled::beads(300);
            let p = beads.penalized(40.0);
            let mut s = beads.state(q, v);
            let mut gla = Langevin::new(ZhangSkeelStiff::new(0.4, 0.05), 0.01, 0.02, 7);
            for _ in 0..20 {
                gla.step(&p, &mut s).unwrap();
            }
            (bits(&s.q), bits(&s.v))
        })
    };
    let one = run(1);
    assert!(run(2) == one && run(3) == one);
}

/// Long systems run the steppers' vector loops, the neighbour-list check and the Langevin
/// noise blocks on the pool: the same bits on 1, 2 and 3 threads; and the noise, drawn block by
/// block from one stream, is standard normal in every block (the velocities after one OU step
/// from rest with `c = e^{−γh} ≈ 0`: `v = σ ξ`, `σ² = kT`).
#[test]
fn long_langevin_runs_are_bit_identical_whatever_the_thread_count() {
    use zs_runtime::VelocityVerlet;
    use zs_runtime::integrators::langevin::NOISE_BLOCK;
    let run = |threads: usize| {
        pool(threads).install(|| {
            let (liquid, q, v) = assembled::cut_liquid(23);
            let mut s = liquid.state(q, v);
            let mut gla = Langevin::new(VelocityVerlet::new(0.002), 1.0, 0.5, 5);
            for _ in 0..6 {
                gla.step(&liquid, &mut s).unwrap();
            }
            (bits(&s.q), bits(&s.v))
        })
    };
    let one = run(1);
    assert!(run(2) == one && run(3) == one);
    // Friction 1e4: c = e^{−20}, the velocities are the noise alone.
    let kt = 0.5;
    let s = pool(2).install(|| {
        let (liquid, q, v) = assembled::cut_liquid(23);
        let mut s = liquid.state(q, v);
        let mut gla = Langevin::new(VelocityVerlet::new(0.002), 1e4, kt, 9);
        gla.step(&liquid, &mut s).unwrap();
        s
    });
    let blocks: Vec<&[f64]> = s.v.chunks(NOISE_BLOCK).collect();
    assert!(blocks.len() >= 9, "{} blocks", blocks.len());
    for (b, v) in blocks.iter().enumerate() {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| x * x).sum::<f64>() / n;
        // 5 standard errors: mean sd √(kT/n), variance sd kT √(2/n).
        assert!(mean.abs() < 5.0 * (kt / n).sqrt(), "block {b}: mean {mean}");
        assert!(
            (var - kt).abs() < 5.0 * kt * (2.0 / n).sqrt(),
            "block {b}: variance {var}"
        );
    }
    // Blocks draw different numbers: no two blocks share their first normals.
    assert!(blocks.windows(2).all(|w| w[0][..8] != w[1][..8]));
}

/// The pair passes by rows give one set of bits serially and on pools of any size, alone and
/// added into a bonded form's gradient. A half list's partials are summed after the pass on a
/// pool, but chunk by chunk as they are made on one thread (`pass.rs`), as are the bonds'
/// (`lanes.rs`): the same additions in the same order. 4 096 particles, so that the half list
/// has several chunks and bodies with partials in more than one.
#[test]
fn row_passes_give_the_same_gradient_serially_and_on_a_pool() {
    use zs_runtime::assembly::PairStrategy;
    fn check<S: Model<Vec<f64>>>(q: &[f64], make: impl Fn(PairStrategy, bool) -> S + Sync) {
        let q = q.to_vec();
        for strategy in [PairStrategy::HalfRows, PairStrategy::FullRows] {
            let eval = |threads: Option<usize>| {
                let go = || {
                    let sys = make(strategy, threads.is_some());
                    let mut g = vec![0.0; q.len()];
                    let v = sys.value_gradient_into(&q, &mut g);
                    (v.to_bits(), bits(&g))
                };
                on(threads, go)
            };
            let serial = eval(None);
            for t in [1, 2, 3] {
                assert!(eval(Some(t)) == serial, "{strategy:?}: {t} threads");
            }
        }
    }
    let (_, q, _) = assembled::cut_liquid(16);
    check(&q, |strategy, parallel| {
        let (sys, _, _) = assembled::cut_liquid(16);
        sys.with_pair_strategy(strategy).with_parallel(parallel)
    });
    let (_, q, _) = assembled::cut_melt(16);
    check(&q, |strategy, parallel| {
        let (sys, _, _) = assembled::cut_melt(16);
        sys.with_pair_strategy(strategy).with_parallel(parallel)
    });
}
