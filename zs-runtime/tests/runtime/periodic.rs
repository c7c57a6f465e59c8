//! Periodic boxes, cutoffs and neighbour lists: an assembled system of bonded chains with a
//! cut-and-shifted Lennard-Jones pair term, in a periodic box, with coordinates spread over
//! several images, equals the direct double loop over nearest images — energy and gradient,
//! while the bodies move far enough for the neighbour list to be rebuilt many times — and gives
//! the same bits on every SIMD path and thread count. Bad boxes and cutoffs are typed errors.

// Harmonic bonds and LJ cut at `rc`.
use crate::support::assembled::Melt as Beads;
use crate::support::fixtures::Rng;
use zs_runtime::assembly::{Assembled, PairStrategy, Topology, TopologyError};
use zs_runtime::simd::Isa;
use zs_runtime::{HessianPart, Model, mechanical_system};

const CHAINS: usize = 12;
const BEADS: usize = 10;
const SIDE: [f64; 3] = [7.0, 6.5, 7.5];

/// `d` reduced to the nearest image (round half away from zero: any rule works off ties).
fn nearest(mut d: [f64; 3]) -> [f64; 3] {
    for a in 0..3 {
        d[a] -= (d[a] / SIDE[a]).round() * SIDE[a];
    }
    d
}

/// Energy and gradient by the direct double loop over nearest images.
fn direct(q: &[f64], rc: f64, bonded: &[(usize, usize)]) -> (f64, Vec<f64>) {
    direct_in(q, rc, bonded, nearest)
}

/// [`direct`] with the separations reduced by `image` (the identity: no box).
fn direct_in(
    q: &[f64],
    rc: f64,
    bonded: &[(usize, usize)],
    image: fn([f64; 3]) -> [f64; 3],
) -> (f64, Vec<f64>) {
    let n = q.len() / 3;
    let (mut e, mut g) = (0.0, vec![0.0; q.len()]);
    let d = |i: usize, j: usize| image(core::array::from_fn(|a| q[3 * j + a] - q[3 * i + a]));
    for &(i, j) in bonded {
        let v = d(i, j);
        let r = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        e += 10.0 * (r - 1.0).powi(2);
        for a in 0..3 {
            let f = 20.0 * (r - 1.0) * v[a] / r;
            g[3 * j + a] += f;
            g[3 * i + a] -= f;
        }
    }
    let c6 = 1.0 / rc.powi(6);
    for i in 0..n {
        for j in i + 1..n {
            if bonded.contains(&(i, j)) {
                continue;
            }
            let v = d(i, j);
            let r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
            if r2 < rc * rc {
                let s6 = 1.0 / (r2 * r2 * r2);
                e += 4.0 * (s6 * s6 - s6) - 4.0 * (c6 * c6 - c6);
                let de_dr2 = 4.0 * (-6.0 * s6 * s6 + 3.0 * s6) / r2;
                for a in 0..3 {
                    g[3 * j + a] += 2.0 * de_dr2 * v[a];
                    g[3 * i + a] -= 2.0 * de_dr2 * v[a];
                }
            }
        }
    }
    (e, g)
}

/// The melt's topology: `CHAINS` chains of `BEADS` beads bonded in turn.
fn chains() -> Topology {
    let mut t = Topology::new(CHAINS * BEADS);
    for c in 0..CHAINS {
        for b in 1..BEADS {
            t = t.bond(c * BEADS + b - 1, c * BEADS + b);
        }
    }
    t
}

/// An assembled system's energy `v` and gradient `g` against the double loop's `(e, gd)`,
/// both to 1e-12 (relative to the energy and the largest component).
fn assert_matches(at: &str, (v, g): (f64, &[f64]), (e, gd): (f64, &[f64])) {
    assert!(
        (v - e).abs() <= 1e-12 * e.abs().max(1.0),
        "{at}: {v} vs {e}"
    );
    let scale = gd.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    for (a, b) in g.iter().zip(gd) {
        assert!((a - b).abs() <= 1e-12 * scale, "{at}: {a} vs {b}");
    }
}

/// `(v, g)` has the bits of the `first` kept, or is kept as the first.
fn assert_same_bits(at: &str, first: &mut Option<(f64, Vec<f64>)>, v: f64, g: Vec<f64>) {
    match first {
        None => *first = Some((v, g)),
        Some((v0, g0)) => {
            assert_eq!(v.to_bits(), v0.to_bits(), "{at}");
            assert!(
                g.iter()
                    .zip(g0.iter())
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{at}"
            );
        }
    }
}

/// The beads of `topology` on instruction set `isa`, on the pool or not, by pair pass `rows`.
fn beads(
    rc: f64,
    topology: Topology,
    (isa, parallel, rows): (Isa, bool, PairStrategy),
) -> Assembled<Beads, 3> {
    Assembled::new(Beads { rc }, topology)
        .expect("valid")
        .with_simd(isa)
        .with_parallel(parallel)
        .with_pair_strategy(rows)
}

/// Chains of beads 1 apart on random walks (in random images of the box), no two beads
/// closer than 0.9.
fn melt(rng: &mut Rng) -> Vec<f64> {
    let mut q: Vec<f64> = Vec::new();
    while q.len() < 3 * CHAINS * BEADS {
        let k = q.len() / 3;
        let p: [f64; 3] = if k.is_multiple_of(BEADS) {
            core::array::from_fn(|a| SIDE[a] * (1.5 * rng.next()))
        } else {
            let u: [f64; 3] = core::array::from_fn(|_| rng.next());
            let norm = (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
            core::array::from_fn(|a| q[3 * (k - 1) + a] + u[a] / norm)
        };
        let clear = (0..k).all(|j| {
            let v = nearest(core::array::from_fn(|a| p[a] - q[3 * j + a]));
            v[0] * v[0] + v[1] * v[1] + v[2] * v[2] > 0.81
        });
        if clear {
            q.extend(p);
        } else if !k.is_multiple_of(BEADS) {
            // Restart the chain.
            q.truncate(3 * (k - k % BEADS));
        }
    }
    q
}

#[test]
fn a_periodic_melt_with_a_cutoff_equals_the_double_loop_over_nearest_images() {
    let rc = 1.5;
    let n = CHAINS * BEADS;
    let topology = || chains().exclude_bonded().periodic(SIDE).cutoff(rc, 0.3);
    let bonded: Vec<(usize, usize)> = topology().bonds().collect();
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    let mut q = melt(&mut rng);
    let sys = Assembled::new(Beads { rc }, topology()).expect("valid");
    let others: Vec<_> = Isa::available()
        .into_iter()
        .flat_map(|isa| {
            [false, true].map(|par| {
                Assembled::new(Beads { rc }, topology())
                    .expect("valid")
                    .with_simd(isa)
                    .with_parallel(par)
            })
        })
        .collect();
    let sys = sys.with_simd(Isa::Scalar).with_parallel(false);
    let mut g = vec![0.0; 3 * n];
    let mut moves = 0;
    for step in 0..40 {
        let v = sys.value_gradient_into(&q, &mut g);
        let (e, gd) = direct(&q, rc, &bonded);
        let scale = gd.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        assert!(
            (v - e).abs() <= 1e-12 * e.abs().max(1.0),
            "step {step}: {v} vs {e}"
        );
        for (a, b) in g.iter().zip(&gd) {
            assert!((a - b).abs() <= 1e-12 * scale, "step {step}: {a} vs {b}");
        }
        assert_eq!(sys.potential_at(&q).to_bits(), v.to_bits());
        for o in &others {
            let mut go = vec![0.0; 3 * n];
            let vo = o.value_gradient_into(&q, &mut go);
            assert_eq!(vo.to_bits(), v.to_bits(), "step {step}, {:?}", o.simd());
            assert!(go.iter().zip(&g).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        // Move every bead by up to 0.06 per axis (a rebuild every few steps) and a whole
        // random chain by a box vector (no change at all).
        for x in q.iter_mut() {
            *x += 0.06 * rng.next();
        }
        let c = rng.below(CHAINS);
        for b in 0..BEADS {
            q[3 * (c * BEADS + b)] += SIDE[0];
        }
        moves += 1;
    }
    let builds = sys.neighbor_builds();
    // A translated chain moves its beads by a box side: each such step rebuilds.
    assert!(
        builds >= moves / 2 && builds <= moves + 1,
        "{builds} builds in {moves} moves"
    );
    assert!(!sys.hessian_follows_neighbors(HessianPart::Stiff));
    assert!(sys.hessian_follows_neighbors(HessianPart::Full));
}

/// With pinned bodies the pair terms cannot go by rows of free bodies: the per-term pass of the
/// half list (its cutoff filter, compaction and scatter) takes them. It equals the double loop
/// over nearest images, pinned beads included at their pins, and gives the same bits on every
/// SIMD path and thread count.
#[test]
fn pinned_bodies_in_a_periodic_melt_equal_the_double_loop_by_the_term_pass() {
    let rc = 1.5;
    let n = CHAINS * BEADS;
    let q = melt(&mut Rng(0x0bad_5eed));
    let pinned = [0, 17, 64];
    let topology = || {
        let mut t = chains();
        for &p in &pinned {
            t = t.pin(p, q[3 * p..3 * p + 3].to_vec());
        }
        t.exclude_bonded().periodic(SIDE).cutoff(rc, 0.3)
    };
    let bonded: Vec<(usize, usize)> = topology().bonds().collect();
    let free: Vec<usize> = (0..n).filter(|b| !pinned.contains(b)).collect();
    let qf: Vec<f64> = free
        .iter()
        .flat_map(|&b| q[3 * b..3 * b + 3].to_vec())
        .collect();
    let (e, gd) = direct(&q, rc, &bonded);
    let gd: Vec<f64> = free
        .iter()
        .flat_map(|&b| gd[3 * b..3 * b + 3].to_vec())
        .collect();
    let mut first: Option<(f64, Vec<f64>)> = None;
    for isa in Isa::available() {
        for (parallel, rows) in [
            (false, PairStrategy::Auto),
            (true, PairStrategy::FullRows),
            (true, PairStrategy::HalfRows),
            (true, PairStrategy::PerTerm),
        ] {
            let sys = beads(rc, topology(), (isa, parallel, rows));
            let mut g = vec![0.0; qf.len()];
            let v = sys.value_gradient_into(&qf, &mut g);
            let at = format!("{isa:?}, parallel {parallel}, rows {rows:?}");
            assert_matches(&at, (v, &g), (e, &gd));
            assert_same_bits(&at, &mut first, v, g);
        }
    }
}

/// Without a box (a droplet under a cutoff), every pair pass — each layout of rows and the
/// per-term pass, on every SIMD path and thread count — equals the direct double loop with no
/// images (the rows' pass applies none there), and each pass gives the same bits on every path
/// and thread count; the energy alone is the gradient pass's.
#[test]
fn a_melt_in_no_box_equals_the_double_loop_by_every_pair_pass() {
    let rc = 1.5;
    let q = melt(&mut Rng(0xd40_1e7));
    let topology = || chains().exclude_bonded().cutoff(rc, 0.3);
    let bonded: Vec<(usize, usize)> = topology().bonds().collect();
    let (e, gd) = direct_in(&q, rc, &bonded, |d| d);
    for rows in [
        PairStrategy::FullRows,
        PairStrategy::HalfRows,
        PairStrategy::PerTerm,
    ] {
        let mut first: Option<(f64, Vec<f64>)> = None;
        for isa in Isa::available() {
            for parallel in [false, true] {
                let sys = beads(rc, topology(), (isa, parallel, rows));
                let mut g = vec![0.0; q.len()];
                let v = sys.value_gradient_into(&q, &mut g);
                let at = format!("{isa:?}, parallel {parallel}, rows {rows:?}");
                assert_matches(&at, (v, &g), (e, &gd));
                let fresh = beads(rc, topology(), (isa, parallel, rows));
                assert_eq!(fresh.potential_at(&q).to_bits(), v.to_bits(), "{at}");
                assert_same_bits(&at, &mut first, v, g);
            }
        }
    }
}

/// The full Hessian of a cutoff system: its pattern follows the neighbour list (every pair
/// within cutoff + skin has a block, remade at each rebuild). Across rebuilds it equals central
/// differences of the gradient, and full Z&S (Tao & Owhadi eq. 3) steps through the rebuilds,
/// remaking its solver each time, to the trajectory of the same melt with a skin so large that
/// the list is never rebuilt (same potential, another pattern: equal to rounding).
#[test]
fn the_full_hessian_follows_the_neighbour_list_and_zhang_skeel_runs_through_rebuilds() {
    use zs_runtime::ZhangSkeel;
    let rc = 1.5;
    let n = CHAINS * BEADS;
    let topology = |skin: f64| chains().exclude_bonded().periodic(SIDE).cutoff(rc, skin);
    let mut rng = Rng(0x005E_ED0F_1157);
    let q0 = melt(&mut rng);
    let v0: Vec<f64> = (0..3 * n).map(|_| 2.0 * rng.next()).collect();
    let sys = Assembled::new(Beads { rc }, topology(0.3)).expect("valid");
    let wide = Assembled::new(Beads { rc }, topology(1.7)).expect("valid");
    assert!(sys.hessian_follows_neighbors(HessianPart::Full));

    // The Hessian against central differences of the gradient, at configurations a rebuild
    // apart.
    let mut h = sys.new_matrix(HessianPart::Full);
    let mut q = q0.clone();
    let mut layouts = Vec::new();
    for round in 0..3 {
        sys.hessian_into(&q, &mut h);
        layouts.push(sys.matrix_layout(HessianPart::Full));
        assert_eq!(h.layout().id(), *layouts.last().expect("one"));
        let dense = h.to_dense();
        let step = 1e-6;
        let (mut worst, mut largest) = (0.0_f64, 0.0_f64);
        for c in 0..3 * n {
            let (mut up, mut down) = (q.clone(), q.clone());
            up[c] += step;
            down[c] -= step;
            let (mut gu, mut gd) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
            sys.gradient_into(&up, &mut gu);
            sys.gradient_into(&down, &mut gd);
            for r in 0..3 * n {
                let fd = (gu[r] - gd[r]) / (2.0 * step);
                largest = largest.max(fd.abs());
                worst = worst.max((dense[r][c] - fd).abs());
            }
        }
        assert!(
            worst <= 1e-5 * largest,
            "round {round}: {worst} of {largest}"
        );
        for x in q.iter_mut() {
            *x += 0.4 * rng.next();
        }
    }
    assert!(
        layouts.windows(2).all(|w| w[0] != w[1]),
        "a new pattern at each rebuild: {layouts:?}"
    );

    // Z&S through the rebuilds against the never-rebuilt list.
    let (mut a, mut b) = (sys.state(q0.clone(), v0.clone()), wide.state(q0, v0));
    let (mut za, mut zb) = (ZhangSkeel::new(0.4, 0.004), ZhangSkeel::new(0.4, 0.004));
    let (builds_a, builds_b) = (sys.neighbor_builds(), wide.neighbor_builds());
    for k in 0..150 {
        za.step(&sys, &mut a).expect("a step");
        zb.step(&wide, &mut b).expect("a step");
        let scale = b.q.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
        let d =
            a.q.iter()
                .zip(&b.q)
                .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(d <= 1e-9 * scale, "step {k}: {d}");
    }
    assert!(
        sys.neighbor_builds() - builds_a >= 3,
        "rebuilds along the run: {}",
        sys.neighbor_builds() - builds_a
    );
    assert!(
        wide.neighbor_builds() - builds_b < sys.neighbor_builds() - builds_a,
        "the wide skin rebuilds less: {} against {}",
        wide.neighbor_builds() - builds_b,
        sys.neighbor_builds() - builds_a
    );
}

#[test]
fn bad_boxes_and_cutoffs_are_typed_errors() {
    let err = |t: Topology| Assembled::new(Beads { rc: 1.5 }, t).err();
    assert!(matches!(
        err(Topology::new(4).periodic([3.0, f64::NAN, 3.0])),
        Some(TopologyError::BadBox(_))
    ));
    assert_eq!(
        err(Topology::new(4).periodic([3.0; 3]).cutoff(1.5, 0.3)),
        Some(TopologyError::CutoffTooLarge {
            reach: 1.8,
            side: 3.0
        })
    );
    assert_eq!(
        err(Topology::new(4).cutoff(1.5, f64::INFINITY)),
        Some(TopologyError::BadCutoff {
            rc: 1.5,
            skin: f64::INFINITY
        })
    );
    let msg = err(Topology::new(4).periodic([3.0; 3]).cutoff(1.5, 0.3))
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(msg.contains("more than half the periodic box"), "{msg}");
}

/// A definition whose masses are wrong.
struct Massless;

#[mechanical_system]
impl Massless {
    fn body_masses(&self) -> [f64; 3] {
        [1.0, -2.0, 1.0]
    }
    fn site_potential(&self, x: &[f64; 3]) -> f64 {
        x[0] * x[0]
    }
}

#[test]
fn negative_masses_and_bodies_pinned_twice_are_typed_errors_at_set_up() {
    assert_eq!(
        Assembled::new(Massless, Topology::new(2)).err(),
        Some(TopologyError::BadMass {
            coordinate: 1,
            mass: -2.0
        })
    );
    let twice = Topology::new(3).pin(0, [0.0; 3]).pin(0, [1.0, 0.0, 0.0]);
    assert_eq!(
        Assembled::new(Beads { rc: 1.5 }, twice).err(),
        Some(TopologyError::PinnedTwice { body: 0 })
    );
}

/// All pairs of three million bodies (4.5 · 10¹² terms) cannot be listed: a typed error from
/// `Assembled::new`, not an abort in the allocator.
#[test]
fn a_pair_list_too_large_to_allocate_is_a_typed_error() {
    assert_eq!(
        Assembled::new(Beads { rc: 1.5 }, Topology::new(3_000_000)).err(),
        Some(TopologyError::TooLarge("the number of terms of a form"))
    );
    // Four billion bodies of 3 coordinates: the per-body arrays alone would be 300 GB.
    assert_eq!(
        Assembled::new(Uncoupled, Topology::new(4_000_000_000)).err(),
        Some(TopologyError::TooLarge("the number of bodies"))
    );
}

/// Forcing the block-diagonal backend on a ring (bonds couple the bodies): a typed error at
/// set-up, not a panic in the first step; on bodies that nothing couples it is accepted.
#[test]
fn a_backend_that_does_not_fit_is_refused_at_set_up() {
    use zs_runtime::sparse::Backend;
    let (ring, _, _) = crate::support::assembled::dna(12);
    let e = ring
        .with_backend(Backend::BlockDiagonal)
        .err()
        .map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.contains("Backend::BlockDiagonal does not fit the full Hessian")),
        "{e:?}"
    );
    let free = Assembled::new(Uncoupled, Topology::new(4)).expect("valid");
    assert!(free.with_backend(Backend::BlockDiagonal).is_ok());
}

/// Bodies that nothing couples.
struct Uncoupled;

#[mechanical_system]
impl Uncoupled {
    fn site_potential(&self, x: &[f64; 3]) -> f64 {
        x[0] * x[0] + x[1] * x[2]
    }
}

#[test]
fn a_body_moving_more_than_the_skin_in_one_step_stops_the_run() {
    use zs_runtime::driver::run;
    use zs_runtime::guards::{MoveGuard, ONE_STEP_MOVE};
    use zs_runtime::observers::Observer;
    use zs_runtime::{StepErrorKind, VelocityVerlet};
    let (rc, skin) = (1.5, 0.3);
    let n = CHAINS * BEADS;
    let sys = Assembled::new(
        Beads { rc },
        chains().exclude_bonded().periodic(SIDE).cutoff(rc, skin),
    )
    .expect("valid");
    let q0 = melt(&mut Rng(0x0123_4567_89AB_CDEF));
    // A step that is fine: the guard sees moves, all below the skin.
    let mut state = sys.state(q0.clone(), vec![0.0; 3 * n]);
    let mut guard = MoveGuard::new(skin, 3);
    let summary = run(
        &mut VelocityVerlet::new(0.002),
        &sys,
        &mut state,
        0.1,
        &mut [&mut guard],
    );
    assert!(summary.error.is_none(), "{:?}", summary.error);
    assert!(
        guard.max_seen() > 0.0 && guard.max_seen() < skin,
        "{}",
        guard.max_seen()
    );
    // Velocities of 100 (a bead crosses 0.5 in a step of 0.005): stopped at the first step,
    // naming the skin, with the state from before it.
    let mut fast = sys.state(q0.clone(), vec![100.0; 3 * n]);
    let mut guard = MoveGuard::new(skin, 3);
    let summary = run(
        &mut VelocityVerlet::new(0.005),
        &sys,
        &mut fast,
        0.1,
        &mut [&mut guard],
    );
    let e = summary.error.expect("stopped");
    assert_eq!(e.step, 0);
    match e.kind {
        StepErrorKind::GuardViolated { what, value, limit } => {
            assert_eq!(what, ONE_STEP_MOVE);
            assert!(value > 0.8 && limit == skin, "{value} {limit}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fast.q, q0);
    assert_eq!(fast.v, vec![100.0; 3 * n]);
    assert_eq!(fast.t, 0.0);
    // The same under the GLA around Verlet: the driver keeps no copy of the state (both can
    // undo) and the rejected step is taken back, its noise with it.
    let mut fast = sys.state(q0.clone(), vec![100.0; 3 * n]);
    let mut guard = MoveGuard::new(skin, 3);
    let mut gla = zs_runtime::Langevin::new(VelocityVerlet::new(0.005), 1.0, 0.5, 11);
    let word = gla.rng_word_pos();
    let summary = run(&mut gla, &sys, &mut fast, 0.1, &mut [&mut guard]);
    assert_eq!(summary.error.expect("stopped").step, 0);
    assert_eq!(
        (fast.q.clone(), fast.v.clone(), fast.t),
        (q0.clone(), vec![100.0; 3 * n], 0.0)
    );
    assert_eq!(
        gla.rng_word_pos(),
        word,
        "the noise of the rejected step is drawn again"
    );
    assert_eq!(zs_runtime::Clocked::steps_taken(&gla), 0);
    // The guard compares the driver's state before the step with the new one: nothing of its
    // own to keep or checkpoint.
    let mut g = MoveGuard::new(skin, 3);
    let at = sys.state(q0.clone(), vec![0.0; 3 * n]);
    let mut moved = at.clone();
    moved.q[7] += 0.5;
    assert!(Observer::<(), Vec<f64>>::check_step(&mut g, &(), &at, &moved).is_err());
    moved.q[7] -= 0.4;
    assert!(Observer::<(), Vec<f64>>::check_step(&mut g, &(), &at, &moved).is_ok());
    moved.q[8] = f64::NAN;
    assert!(Observer::<(), Vec<f64>>::check_step(&mut g, &(), &at, &moved).is_err());
}

/// A pair term that does not vanish beyond the cutoff: 1 per pair, and a gradient that does not
/// vanish either (a spring on the pair's x difference).
struct Counting {
    k: f64,
}

#[mechanical_system]
impl Counting {
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        1.0 + self.k * (b[0] - a[0])
    }
}

#[test]
fn pair_terms_apply_only_within_the_cutoff_whatever_the_skin() {
    // The energy and gradient passes count exactly the pairs closer than rc (nearest images),
    // not the Verlet list's rc + skin: the cutoff is the term's, the skin only the list's;
    // by full rows and by the half list alike (the term is not symmetric in its bodies).
    let (rc, n) = (1.5, CHAINS * BEADS);
    let q = melt(&mut Rng(0x5eed));
    let within: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let d = nearest(core::array::from_fn(|a| q[3 * j + a] - q[3 * i + a]));
            d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < rc * rc
        })
        .collect();
    let k = 1e-3;
    let mut expected_g = vec![0.0; 3 * n];
    for &(i, j) in &within {
        expected_g[3 * j] += k;
        expected_g[3 * i] -= k;
    }
    for skin in [0.1, 0.6, 1.2] {
        let t = Topology::new(n).periodic(SIDE).cutoff(rc, skin);
        for (isa, rows) in Isa::available().into_iter().flat_map(|i| {
            [
                PairStrategy::Auto,
                PairStrategy::FullRows,
                PairStrategy::HalfRows,
                PairStrategy::PerTerm,
            ]
            .map(|s| (i, s))
        }) {
            let sys = Assembled::new(Counting { k }, t.clone())
                .expect("valid")
                .with_simd(isa)
                .with_pair_strategy(rows);
            let mut g = vec![0.0; 3 * n];
            let v = sys.value_gradient_into(&q, &mut g);
            // 1 per pair plus k·Δx (nearest image) per pair.
            let dx: f64 = within
                .iter()
                .map(|&(i, j)| nearest(core::array::from_fn(|a| q[3 * j + a] - q[3 * i + a]))[0])
                .sum();
            assert!(
                (v - (within.len() as f64 + k * dx)).abs() < 1e-9,
                "skin {skin}, {isa:?}, rows {rows:?}: {v} against {} pairs",
                within.len()
            );
            for (a, b) in g.iter().zip(&expected_g) {
                assert!((a - b).abs() < 1e-12, "skin {skin}, {isa:?}, rows {rows:?}");
            }
        }
    }
}

/// The melt numbered in random order, its topology and coordinates relabeled by `perm`
/// (`perm[b]`: the new number of body `b`).
fn relabeled(
    q: &[f64],
    bonds: &[(usize, usize)],
    perm: &[usize],
) -> (Vec<f64>, Vec<(usize, usize)>) {
    let mut out = vec![0.0; q.len()];
    for (b, &p) in perm.iter().enumerate() {
        out[3 * p..3 * p + 3].copy_from_slice(&q[3 * b..3 * b + 3]);
    }
    // Each bond as (smaller, larger): the double loop's exclusion test.
    let bonds = bonds
        .iter()
        .map(|&(i, j)| (perm[i].min(perm[j]), perm[i].max(perm[j])))
        .collect();
    (out, bonds)
}

/// A melt numbered in random order is held in spatial order inside ([`BodyOrder::Auto`]) and
/// nothing outside sees it: energy and gradient equal the double loop over nearest images in
/// the user's numbering; the Hessian (in the user's order), the third contraction and the
/// Hessian-vector product equal those of the same system held in the given order; a replica
/// and the parallel pass give the same bits; Zhang–Skeel through neighbour-list rebuilds
/// follows the given order's trajectory. A melt numbered along its chains keeps its order
/// (and its bits); the spatial order is refused where it does not apply.
#[test]
fn a_melt_in_random_order_is_held_in_spatial_order_and_nothing_outside_sees_it() {
    use zs_runtime::ZhangSkeel;
    use zs_runtime::assembly::BodyOrder;
    let rc = 1.5;
    let n = CHAINS * BEADS;
    let mut rng = Rng(0x0BAD_5EED_0F0F);
    let chain_q = melt(&mut rng);
    let chain_bonds: Vec<(usize, usize)> = (0..CHAINS)
        .flat_map(|c| (1..BEADS).map(move |b| (c * BEADS + b - 1, c * BEADS + b)))
        .collect();
    // A random relabeling (Fisher–Yates).
    let mut perm: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        perm.swap(k, rng.below(k + 1));
    }
    let (q0, bonds) = relabeled(&chain_q, &chain_bonds, &perm);
    let topology = |bonds: &[(usize, usize)]| {
        Topology::new(n)
            .bonds_from(bonds.iter().copied())
            .exclude_bonded()
            .periodic(SIDE)
            .cutoff(rc, 0.3)
    };
    let given = Assembled::new(Beads { rc }, topology(&bonds))
        .expect("valid")
        .with_parallel(false);
    let spatial = Assembled::ordered(Beads { rc }, topology(&bonds), BodyOrder::Auto, &q0)
        .expect("valid")
        .with_parallel(false);
    assert_eq!(spatial.body_order(), BodyOrder::Cells);
    assert_eq!(given.body_order(), BodyOrder::Given);
    let parallel = Assembled::ordered(Beads { rc }, topology(&bonds), BodyOrder::Cells, &q0)
        .expect("valid")
        .with_parallel(true);
    let replica = spatial.replica();
    let masses = |s: &Assembled<Beads, 3>| {
        let mut m = vec![0.0; s.dimension()];
        s.masses_into(&mut m);
        m
    };
    assert_eq!(masses(&spatial), masses(&given));

    let close = |a: &[f64], b: &[f64], what: &str| {
        let scale = b.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-12 * scale, "{what}[{k}]: {x} vs {y}");
        }
    };
    let mut q = q0.clone();
    let (mut g, mut gg) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    let (mut hs, mut hg) = (
        spatial.new_matrix(HessianPart::Full),
        given.new_matrix(HessianPart::Full),
    );
    for round in 0..12 {
        let v = spatial.value_gradient_into(&q, &mut g);
        let (e, gd) = direct(&q, rc, &bonds);
        assert!((v - e).abs() <= 1e-12 * e.abs().max(1.0), "round {round}");
        close(&g, &gd, "gradient against the double loop");
        for other in [&parallel, &replica] {
            let mut go = vec![0.0; 3 * n];
            let vo = other.value_gradient_into(&q, &mut go);
            assert_eq!(vo.to_bits(), v.to_bits(), "round {round}");
            assert!(go.iter().zip(&g).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        if round % 4 == 0 {
            spatial.hessian_into(&q, &mut hs);
            given.hessian_into(&q, &mut hg);
            let (ds, dg) = (hs.to_dense(), hg.to_dense());
            for (rs, rg) in ds.iter().zip(&dg) {
                close(rs, rg, "Hessian row");
            }
            let a: Vec<f64> = (0..3 * n).map(|_| rng.next() - 0.5).collect();
            let (mut ts, mut tg) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
            spatial.third_contraction_into(&q, &a, &mut ts);
            given.third_contraction_into(&q, &a, &mut tg);
            close(&ts, &tg, "third contraction");
            spatial.hessian_vector_into(&q, &a, &mut ts);
            given.hessian_vector_into(&q, &a, &mut tg);
            close(&ts, &tg, "Hessian-vector product");
        }
        given.gradient_into(&q, &mut gg);
        close(&g, &gg, "gradient against the given order");
        for x in q.iter_mut() {
            *x += 0.08 * rng.next();
        }
    }
    assert!(
        spatial.neighbor_builds() >= 3,
        "{}",
        spatial.neighbor_builds()
    );

    // Z&S through rebuilds: the spatial order's trajectory is the given order's, to rounding.
    let v0: Vec<f64> = (0..3 * n).map(|_| rng.next() - 0.5).collect();
    let (mut a, mut b) = (
        spatial.state(q0.clone(), v0.clone()),
        given.state(q0.clone(), v0),
    );
    let (mut za, mut zb) = (ZhangSkeel::new(0.4, 0.004), ZhangSkeel::new(0.4, 0.004));
    for k in 0..100 {
        za.step(&spatial, &mut a).expect("a step");
        zb.step(&given, &mut b).expect("a step");
        let scale = b.q.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
        let d =
            a.q.iter()
                .zip(&b.q)
                .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(d <= 1e-9 * scale, "step {k}: {d}");
    }

    // Numbered along its chains, the melt is local: Auto keeps its order and its bits.
    let chains = Assembled::ordered(
        Beads { rc },
        topology(&chain_bonds),
        BodyOrder::Auto,
        &chain_q,
    )
    .expect("valid");
    assert_eq!(chains.body_order(), BodyOrder::Given);
    let plain = Assembled::new(Beads { rc }, topology(&chain_bonds)).expect("valid");
    let (mut g1, mut g2) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    let v1 = chains.value_gradient_into(&chain_q, &mut g1);
    let v2 = plain.value_gradient_into(&chain_q, &mut g2);
    assert_eq!(v1.to_bits(), v2.to_bits());
    assert!(g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()));

    // Where it does not apply, the spatial order is refused with the reason.
    let uncut = Topology::new(n).bonds_from(bonds.iter().copied());
    match Assembled::ordered(Beads { rc }, uncut, BodyOrder::Cells, &q0) {
        Err(TopologyError::OrderDoesNotApply(why)) => assert!(why.contains("cutoff"), "{why}"),
        other => panic!("{other:?}"),
    }
    match Assembled::ordered(Beads { rc }, topology(&bonds), BodyOrder::Cells, &q0[3..]) {
        Err(TopologyError::OrderDoesNotApply(why)) => assert!(why.contains("start"), "{why}"),
        other => panic!("{other:?}"),
    }
}
