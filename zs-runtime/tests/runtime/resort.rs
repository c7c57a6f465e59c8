//! Re-sorting during a run (`Assembled::with_resort_period`): a liquid whose bodies are
//! numbered at random, held in spatial order inside and re-sorted every few neighbour-list
//! builds, gives the energy and gradient of the same liquid in its own order to rounding at
//! every point of a trajectory; runs at 1 and 2 threads and on every instruction set to the
//! same bits; and resumes from a checkpoint taken between re-sorts bit for bit, the order
//! being part of the checkpoint.

use crate::support::assembled::Melt;
use crate::support::fixtures::Rng;
use zs_runtime::assembly::{Assembled, BodyOrder, Topology};
use zs_runtime::driver::{Checkpointing, resume, run_checkpointed};
use zs_runtime::simd::Isa;
use zs_runtime::{Checkpoint, DynState, Model, VelocityVerlet};

const K: usize = 8;
pub(crate) const H: f64 = 0.005;

/// `K³` Lennard-Jones particles on a lattice (cutoff 2.5, skin 0.3, density 0.75), numbered
/// at random, with velocities of a temperature of about 1.
pub(crate) fn start() -> (Vec<f64>, Vec<f64>) {
    start_of(K)
}

/// [`start`] of `k³` particles.
pub(crate) fn start_of(k: usize) -> (Vec<f64>, Vec<f64>) {
    let n = k * k * k;
    let mut rng = Rng(0x0dd5_eed5);
    let mut id: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        id.swap(k, rng.below(k + 1));
    }
    let mut q = vec![0.0; 3 * n];
    for (site, &i) in id.iter().enumerate() {
        let cell = [site % k, (site / k) % k, site / (k * k)];
        for a in 0..3 {
            q[3 * i + a] = 1.1 * cell[a] as f64 + 0.05 * rng.next();
        }
    }
    let v = (0..3 * n).map(|_| 1.7 * rng.next()).collect();
    (q, v)
}

pub(crate) fn liquid(order: BodyOrder, q: &[f64], every: usize) -> Assembled<Melt, 3> {
    liquid_with_skin(order, q, every, 0.3)
}

/// [`liquid`] with a neighbour-list skin of `skin`.
fn liquid_with_skin(order: BodyOrder, q: &[f64], every: usize, skin: f64) -> Assembled<Melt, 3> {
    let n = q.len() / 3;
    let side = 1.1 * (n as f64).cbrt().round();
    let topology = Topology::new(n).periodic([side; 3]).cutoff(2.5, skin);
    Assembled::ordered(Melt { rc: 2.5 }, topology, order, q)
        .expect("valid")
        .with_resort_period(every)
}

pub(crate) fn bits(s: &DynState) -> Vec<u64> {
    s.q.iter().chain(&s.v).map(|x| x.to_bits()).collect()
}

/// Along a trajectory that rebuilds the list every few steps, the re-sorted system's energy
/// and gradient are the file order's to rounding.
#[test]
fn a_re_sorted_liquid_evaluates_as_in_its_own_order() {
    let (mut q, _) = start();
    let sorted = liquid(BodyOrder::Cells, &q, 2);
    let given = liquid(BodyOrder::Given, &q, 2);
    assert_eq!(sorted.body_order(), BodyOrder::Cells);
    let mut rng = Rng(0x5151);
    let (mut g, mut h) = (vec![0.0; q.len()], vec![0.0; q.len()]);
    for step in 0..60 {
        let (a, b) = (
            sorted.value_gradient_into(&q, &mut g),
            given.value_gradient_into(&q, &mut h),
        );
        let scale = h.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        assert!((a - b).abs() <= 1e-12 * b.abs(), "step {step}: {a} vs {b}");
        for (x, y) in g.iter().zip(&h) {
            assert!((x - y).abs() <= 1e-12 * scale, "step {step}: {x} vs {y}");
        }
        // Up to 0.1 per axis: the list is rebuilt every other step or so.
        for x in q.iter_mut() {
            *x += 0.1 * rng.next();
        }
    }
    assert!(
        sorted.neighbor_builds() >= 20,
        "{}",
        sorted.neighbor_builds()
    );
    assert!(sorted.resorts() >= 8, "{} re-sorts", sorted.resorts());
    assert_eq!(
        given.resorts(),
        0,
        "the topology's order is never re-sorted"
    );
}

/// Velocity Verlet on the re-sorted liquid: the same bits serial and on two threads, on every
/// instruction set; a run resumed from a checkpoint (taken after re-sorts, and with a re-sort
/// after it) ends with the same bits and counts.
#[test]
fn a_re_sorting_run_is_deterministic_and_resumes_bit_for_bit() {
    let (q, v) = start();
    let steps = 300;
    let t_end = steps as f64 * H;
    let path = std::env::temp_dir().join(format!("zs-resort-{}.ck", std::process::id()));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool");
    let mut ends = Vec::new();
    for (isa, parallel) in Isa::available()
        .into_iter()
        .flat_map(|isa| [(isa, false), (isa, true)])
    {
        let system = liquid(BodyOrder::Cells, &q, 3)
            .with_simd(isa)
            .with_parallel(parallel);
        let mut s = DynState {
            q: q.clone(),
            v: v.clone(),
            t: 0.0,
        };
        let summary = pool.install(|| {
            run_checkpointed(
                &mut VelocityVerlet::new(H),
                &system,
                &mut s,
                t_end,
                &mut [],
                &Checkpointing::new(&path, 200),
            )
        });
        assert!(summary.is_ok(), "{summary:?}");
        ends.push((bits(&s), system.neighbor_builds(), system.resorts()));
    }
    let (end, builds, resorts) = ends[0].clone();
    assert!(resorts >= 5, "{resorts} re-sorts in {builds} builds");
    for e in &ends {
        assert!(
            *e == ends[0],
            "another end on another instruction set or thread count"
        );
    }
    // Resumed at step 200 by a system set up afresh (in the start's order).
    let cp = Checkpoint::read(&path).expect("the checkpoint");
    assert_eq!(cp.u64("run.done").expect("run.done"), 200);
    let at = cp.u64("model.order.resorts").expect("the order's history") as usize;
    assert!(
        at >= 1 && at < resorts,
        "{at} re-sorts at the checkpoint of {resorts}"
    );
    let system = liquid(BodyOrder::Cells, &q, 3);
    let mut r = DynState {
        q: vec![0.0; q.len()],
        v: vec![0.0; q.len()],
        t: 0.0,
    };
    let summary = resume(
        &mut VelocityVerlet::new(H),
        &system,
        &mut r,
        &cp,
        &mut [],
        None,
    )
    .expect("resumes");
    assert!(summary.is_ok(), "{summary:?}");
    assert!(bits(&r) == end, "the resumed run ends elsewhere");
    assert_eq!(
        (system.neighbor_builds(), system.resorts()),
        (builds, resorts)
    );
    // A checkpoint of the spatial order is not resumed by the topology's.
    let given = liquid(BodyOrder::Given, &q, 3);
    let refused = resume(
        &mut VelocityVerlet::new(H),
        &given,
        &mut r,
        &cp,
        &mut [],
        None,
    );
    assert!(refused.is_err(), "a checkpoint of another order");
    std::fs::remove_file(&path).expect("remove the checkpoint");
}

/// Z&S, whose matrix follows the neighbour list, steps the re-sorting liquid: the matrix and
/// its solver are made again at each re-sort as at each rebuild, and the run follows the same
/// liquid in its own order to rounding.
#[test]
fn zhang_skeel_steps_through_re_sorts() {
    use zs_runtime::ZhangSkeel;
    // 125 particles (the matrix's factorization is dense for a liquid), the order made anew
    // at every build; a skin of 0.24, so that the box of 5.5 holds the cutoff's sphere.
    let (q, v) = start_of(5);
    let run = |order: BodyOrder| {
        let system = liquid_with_skin(order, &q, 1, 0.24);
        let mut s = DynState {
            q: q.clone(),
            v: v.clone(),
            t: 0.0,
        };
        let mut zs = ZhangSkeel::new(0.3, 2.0 * H);
        for k in 0..30 {
            zs.step(&system, &mut s)
                .unwrap_or_else(|e| panic!("{order:?}, step {k}: {e}"));
        }
        (s, system.resorts())
    };
    let ((a, resorts), (b, none)) = (run(BodyOrder::Cells), run(BodyOrder::Given));
    assert!(resorts >= 2 && none == 0, "{resorts} re-sorts");
    let far =
        a.q.iter()
            .chain(&a.v)
            .zip(b.q.iter().chain(&b.v))
            .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(far <= 1e-10, "the two orders part by {far:e}");
}
