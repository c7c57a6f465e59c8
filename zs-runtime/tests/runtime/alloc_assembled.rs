//! Steps on assembled systems allocate nothing after set-up, with the terms evaluated on a
//! 2-thread rayon pool: counted in every thread of the process. The count runs in a child
//! process of this test binary that runs this test alone (`ZS_ALLOC_ALONE`), so that no other
//! test allocates meanwhile. The stepping loops run inside `ThreadPool::install`, as the driver
//! and the command line do: called from outside a pool, rayon's injector allocates a block
//! every few dozen injected jobs (`docs/DEPENDENCIES.md`).

use crate::support::assembled;
use crate::support::counting_alloc::allocations_in_all_threads_during;
use zs_runtime::driver::run_steps;
use zs_runtime::observers::Observer;
use zs_runtime::{
    ConstraintObserver, EnergyObserver, Langevin, LinearlyImplicitNewmark, Model, Rattle,
    VelocityVerlet, Yoshida4, ZhangSkeel, ZhangSkeelSimplified, ZhangSkeelStiff,
};

const STEPS: usize = 50;
/// Set in the child process: run the count here.
const ALONE: &str = "ZS_ALLOC_ALONE";

/// This binary again, running only this test, with [`ALONE`] set: it must succeed.
#[test]
fn assembled_steps_allocate_nothing_after_set_up_with_rayon_on() {
    if std::env::var_os(ALONE).is_some() {
        count_every_thread();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "alloc_assembled::assembled_steps_allocate_nothing_after_set_up_with_rayon_on",
            "--test-threads",
            "1",
            "--nocapture",
        ])
        .env(ALONE, "1")
        .output()
        .expect("run this test binary again");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("1 passed"),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The count itself (in the child process).
fn count_every_thread() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut counts = Vec::new();
    pool.install(|| {
        // DNA ring, 20 000 base pairs: parallel evaluation, sparse (faer) solves.
        let (dna, q, v) = assembled::dna(20_000);
        assert!(dna.is_parallel());
        let mut s = dna.state(q, v);
        let mut zs = ZhangSkeel::new(0.3, 2.0);
        zs.step(&dna, &mut s).unwrap();
        counts.push((
            "Z&S, DNA 20 000",
            allocations_in_all_threads_during(|| {
                for _ in 0..STEPS {
                    zs.step(&dna, &mut s).unwrap();
                }
            }),
        ));
        let mut zss = ZhangSkeelSimplified::new(0.3, 2.0);
        zss.step(&dna, &mut s).unwrap();
        counts.push((
            "Z&Ss, DNA",
            allocations_in_all_threads_during(|| {
                for _ in 0..STEPS {
                    zss.step(&dna, &mut s).unwrap();
                }
            }),
        ));
        let mut vv = VelocityVerlet::new(0.2);
        vv.step(&dna, &mut s).unwrap();
        counts.push((
            "Verlet, DNA",
            allocations_in_all_threads_during(|| {
                for _ in 0..STEPS {
                    vv.step(&dna, &mut s).unwrap();
                }
            }),
        ));
        let mut nm = LinearlyImplicitNewmark::new(0.3, 1.0);
        nm.step(&dna, &mut s).unwrap();
        counts.push((
            "one-step Newmark, DNA",
            allocations_in_all_threads_during(|| {
                for _ in 0..STEPS {
                    nm.step(&dna, &mut s).unwrap();
                }
            }),
        ));
        let mut y4 = Yoshida4::new(ZhangSkeel::new(0.3, 1.0));
        y4.step(&dna, &mut s).unwrap();
        counts.push((
            "Yoshida4(Z&S), DNA",
            allocations_in_all_threads_during(|| {
                for _ in 0..10 {
                    y4.step(&dna, &mut s).unwrap();
                }
            }),
        ));
        // The driver with observers on it: a run allocates its backup of the state (two `Vec`s)
        // once, whatever its length; a run that succeeds copies no state into its summary.
        let mut zs = ZhangSkeel::new(0.3, 2.0);
        let mut energy = EnergyObserver::new();
        zs.step(&dna, &mut s).unwrap();
        let mut per_run = [0; 2];
        for (i, steps) in [10u64, 40].into_iter().enumerate() {
            per_run[i] = allocations_in_all_threads_during(|| {
                let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut energy];
                assert!(run_steps(&mut zs, &dna, &mut s, steps, observers).is_ok());
            });
        }
        assert_eq!(per_run, [2, 2], "driver runs of 10 and 40 steps");
        counts.push((
            "driver + energy observer, DNA, per step",
            per_run[1] - per_run[0],
        ));

        // 300 beads with all pairs (44 850 pair terms, parallel), penalized body constraints:
        // GLA around Z&Ss-stiff with the block-diagonal stiff solve.
        let (beads, q, v) = assembled::beads(300);
        let p = beads.penalized(40.0);
        let mut s = beads.state(q, v);
        let mut gla = Langevin::new(ZhangSkeelStiff::new(0.4, 0.05), 0.01, 0.02, 3);
        gla.step(&p, &mut s).unwrap();
        counts.push((
            "GLA + Z&Ss-stiff, beads 300",
            allocations_in_all_threads_during(|| {
                for _ in 0..STEPS {
                    gla.step(&p, &mut s).unwrap();
                }
            }),
        ));
        let mut zs = ZhangSkeel::new(0.4, 0.05);
        zs.step(&p, &mut s).unwrap();
        let mut constraints = ConstraintObserver::new(&beads);
        let mut per_run = [0; 2];
        for (i, steps) in [5u64, 15].into_iter().enumerate() {
            per_run[i] = allocations_in_all_threads_during(|| {
                let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut constraints];
                assert!(run_steps(&mut zs, &p, &mut s, steps, observers).is_ok());
            });
        }
        assert_eq!(per_run, [2, 2], "driver runs of 5 and 15 steps");
        counts.push((
            "driver + constraint observer, Z&S (sparse full Hessian), beads, per step",
            per_run[1] - per_run[0],
        ));
        // RATTLE on the unpenalized constrained beads (sparse Jacobian, Gram solve).
        let mut rattle = Rattle::new(0.01);
        let mut s = beads.state(assembled::beads(300).1, vec![0.0; 600]);
        rattle.step(&beads, &mut s).unwrap();
        counts.push((
            "RATTLE, beads",
            allocations_in_all_threads_during(|| {
                for _ in 0..10 {
                    rattle.step(&beads, &mut s).unwrap();
                }
            }),
        ));
        assert!(Model::dimension(&beads) == 600);

        // A periodic liquid under a cutoff: Verlet steps between neighbour-list rebuilds
        // allocate nothing, and a rebuild allocates nothing once the lists have held as many
        // pairs (positions A, B, A, B: the second A and B builds reuse the memory of the first).
        let (liquid, q, v) = assembled::cut_liquid(10);
        let mut s = liquid.state(q, v);
        let mut vv = VelocityVerlet::new(0.002);
        vv.step(&liquid, &mut s).unwrap();
        let builds = liquid.neighbor_builds();
        counts.push((
            "Verlet, periodic liquid 1000, between rebuilds",
            allocations_in_all_threads_during(|| {
                for _ in 0..20 {
                    vv.step(&liquid, &mut s).unwrap();
                }
            }),
        ));
        assert_eq!(liquid.neighbor_builds(), builds, "no rebuild in the window");
        let a = s.q.clone();
        let mut b = a.clone();
        b[0] += 0.2;
        let mut g = vec![0.0; a.len()];
        liquid.gradient_into(&b, &mut g);
        liquid.gradient_into(&a, &mut g);
        counts.push((
            "two neighbour-list rebuilds, periodic liquid",
            allocations_in_all_threads_during(|| {
                liquid.gradient_into(&b, &mut g);
                liquid.gradient_into(&a, &mut g);
            }),
        ));
        assert_eq!(liquid.neighbor_builds(), builds + 4);

        // The same liquid held in cells, its state in the inner order (`held_inside`): driver
        // runs of 10 and 30 Verlet steps, with the energy observer and the driver's
        // `Model::reorder` before every step, allocate the same (the driver's own).
        let (held_liquid, q, v) = assembled::cut_liquid(10);
        assert!(held_liquid.hold_in_cells(&q).unwrap());
        let held = held_liquid.held_inside();
        let mut s = held.state(held_liquid.state(q, v));
        // Behind `dyn`, as `zs run` steps it.
        let held: &dyn Model<Vec<f64>> = &held;
        let mut vv = VelocityVerlet::new(0.002);
        vv.step(held, &mut s).unwrap();
        let mut energy = EnergyObserver::new();
        let mut per_run = [0; 2];
        for (i, steps) in [10u64, 30].into_iter().enumerate() {
            per_run[i] = allocations_in_all_threads_during(|| {
                let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut energy];
                assert!(run_steps(&mut vv, held, &mut s, steps, observers).is_ok());
            });
        }
        assert_eq!(
            per_run[0], per_run[1],
            "driver runs of 10 and 30 held steps"
        );
        counts.push((
            "driver + energy observer, Verlet, liquid held in cells, per step",
            per_run[1] - per_run[0],
        ));

        // The same with two types of sites: pairs grouped by types at a rebuild, each term's
        // types coded (their memory kept between rebuilds too).
        let (typed, q, v) = assembled::typed_liquid(10);
        let mut s = typed.state(q, v);
        vv.step(&typed, &mut s).unwrap();
        let (a, mut b) = (s.q.clone(), s.q.clone());
        b[0] += 0.2;
        typed.gradient_into(&b, &mut g);
        typed.gradient_into(&a, &mut g);
        let builds = typed.neighbor_builds();
        counts.push((
            "Verlet and two rebuilds, periodic liquid of two types",
            allocations_in_all_threads_during(|| {
                for _ in 0..5 {
                    vv.step(&typed, &mut s).unwrap();
                }
                typed.gradient_into(&b, &mut g);
                typed.gradient_into(&a, &mut g);
            }),
        ));
        assert!(typed.neighbor_builds() >= builds + 2);

        // Long enough (36 501 coordinates) for the steppers' vector loops, the neighbour-list
        // check, the copies and the Langevin noise blocks to run on the pool.
        let (liquid, q, v) = assembled::cut_liquid(23);
        let mut s = liquid.state(q, v);
        let mut gla = Langevin::new(VelocityVerlet::new(0.002), 1.0, 0.5, 11);
        gla.step(&liquid, &mut s).unwrap();
        counts.push((
            "GLA + Verlet, periodic liquid 12 167 (parallel vector loops and noise)",
            allocations_in_all_threads_during(|| {
                for _ in 0..5 {
                    gla.step(&liquid, &mut s).unwrap();
                }
            }),
        ));
    });
    eprintln!("allocations over the windows: {counts:?}");
    assert!(counts.iter().all(|&(_, n)| n == 0), "{counts:?}");
    // The counter sees worker threads: a parallel allocation is counted.
    let n = allocations_in_all_threads_during(|| {
        pool.install(|| rayon::join(|| drop(std::hint::black_box(vec![1u8; 8])), || ()));
    });
    assert!(n >= 1);
}
