//! The TraPPE-UA alkane's variants (`zs_systems::alkane::variant`): one force field with its
//! bonds flexible, constrained (SHAKE/RATTLE, the penalty) or, with the angles, the stiff part
//! of Z&Ss-stiff — the same energy where they should agree, and each running with the
//! integrators made for it on a liquid of butane.

use zs_runtime::{ConstrainedModel, DynState, Model, Rattle, ShakeSolver, ZhangSkeelStiff};
use zs_systems::alkane::{Alkane, AlkaneRigidBonds, AlkaneStiff};

/// 250 butanes at 0.58 g/cm³, 272 K.
fn butane() -> (Vec<f64>, Vec<f64>, zs_runtime::lammps::DataFile) {
    let (_, q, v, data) = Alkane::trappe()
        .liquid(250, 4, 0.58, 272.0, 11)
        .expect("liquid butane");
    (q, v, data)
}

/// The bonds of `data` moved to exactly `r0` (both ends along the bond, repeated: SHAKE's
/// iteration without masses), for a start on the constraint manifold.
fn onto_bonds(q: &mut [f64], data: &zs_runtime::lammps::DataFile, r0: f64) {
    for _ in 0..200 {
        for b in &data.bonds {
            let [i, j] = b.atoms;
            let d: Vec<f64> = (0..3).map(|a| q[3 * j + a] - q[3 * i + a]).collect();
            let r = d.iter().map(|x| x * x).sum::<f64>().sqrt();
            let s = 0.5 * (r - r0) / r;
            for a in 0..3 {
                q[3 * i + a] += s * d[a];
                q[3 * j + a] -= s * d[a];
            }
        }
    }
}

#[test]
fn the_variants_share_one_force_field() {
    let (q, _, data) = butane();
    let (flexible, ..) = Alkane::trappe().from_data(&data).expect("flexible");
    let (stiff, ..) = AlkaneStiff::trappe().from_data(&data).expect("stiff");
    let (rigid, ..) = AlkaneRigidBonds::trappe().from_data(&data).expect("rigid");
    let ff = Alkane::trappe();
    let bonds: f64 = data
        .bonds
        .iter()
        .map(|b| {
            let [i, j] = b.atoms;
            let r = (0..3)
                .map(|a| (q[3 * j + a] - q[3 * i + a]).powi(2))
                .sum::<f64>()
                .sqrt();
            ff.k_bond * (r - ff.r0).powi(2)
        })
        .sum();
    let (vf, vs, vr) = (
        flexible.potential_at(&q),
        stiff.potential_at(&q),
        rigid.potential_at(&q),
    );
    assert!((vs - vf).abs() <= 1e-12 * vf.abs(), "{vs} vs {vf}");
    assert!(
        (vr - (vf - bonds)).abs() <= 1e-11 * vf.abs(),
        "{vr} vs {}",
        vf - bonds
    );
    assert_eq!(rigid.constraint_count(), data.bonds.len());
}

/// RATTLE at 2 fs (twice Verlet's step on the flexible bonds) keeps every bond at 1.54 Å to
/// its tolerance and the energy within a small fraction of the kinetic energy; Z&Ss-stiff
/// runs the stiff variant at the same step.
#[test]
fn rattle_holds_the_bonds_and_zss_stiff_runs_the_stiff_variant() {
    let (mut q, v, data) = butane();
    let r0 = Alkane::trappe().r0;
    onto_bonds(&mut q, &data, r0);
    let (rigid, ..) = AlkaneRigidBonds::trappe().from_data(&data).expect("rigid");
    let mut g = vec![0.0; data.bonds.len()];
    rigid.constraints_into(&q, &mut g);
    assert!(g.iter().all(|x| x.abs() < 1e-12), "start on the manifold");
    // The built velocities stretch the bonds too: RATTLE's first step projects them onto the
    // bonds' tangent space (removing that kinetic energy); the energy is watched from there.
    let mut s = DynState::new(q.clone(), v.clone());
    let mut rattle = Rattle::new(2.0).with_solver(ShakeSolver::Newton);
    rattle.step(&rigid, &mut s).expect("a RATTLE step");
    let e0 = rigid.kinetic_energy(&s.v) + rigid.potential_at(&s.q);
    let mut worst = 0.0f64;
    for _ in 0..50 {
        rattle.step(&rigid, &mut s).expect("a RATTLE step");
        rigid.constraints_into(&s.q, &mut g);
        worst = worst.max(g.iter().fold(0.0f64, |m, x| m.max(x.abs())));
    }
    let e1 = rigid.kinetic_energy(&s.v) + rigid.potential_at(&s.q);
    let ke = rigid.kinetic_energy(&s.v);
    eprintln!("RATTLE 2 fs, 50 steps: max bond residual {worst:.1e} Å, E drift {:.3} kcal/mol of KE {ke:.1}", e1 - e0);
    assert!(worst < 1e-9, "{worst:e}");
    assert!((e1 - e0).abs() < 0.05 * ke, "{} of {ke}", e1 - e0);
    let (stiff, ..) = AlkaneStiff::trappe().from_data(&data).expect("stiff");
    let mut s = DynState::new(q, v);
    let mut zss = ZhangSkeelStiff::new(0.25, 2.0);
    for _ in 0..20 {
        zss.step(&stiff, &mut s).expect("a Z&Ss-stiff step");
    }
    assert!(s.q.iter().chain(&s.v).all(|x| x.is_finite()));
}

/// The largest step each treatment of the bonds allows on liquid butane (NVE from the same
/// start, 400 fs): the relative energy error `max |E − E0| / KE0` after the first step, per
/// step size, for Verlet on the flexible force field, RATTLE with the bonds fixed, and
/// Z&Ss-stiff with bonds and angles implicit. Prints the table; asserts that RATTLE at four
/// times Verlet's 1 fs has the smaller error, and that every run stays finite to 6 fs.
/// `cargo test --release -p zs-systems --test systems alkane::largest -- --ignored --nocapture`
#[test]
#[ignore = "a 1-minute stability scan; run by hand (command above)"]
fn largest_stable_steps_of_the_three_treatments_of_the_bonds() {
    use zs_runtime::VelocityVerlet;
    let (mut q, v, data) = butane();
    let (flexible, ..) = Alkane::trappe().from_data(&data).expect("flexible");
    let (rigid, ..) = AlkaneRigidBonds::trappe().from_data(&data).expect("rigid");
    let (stiff, ..) = AlkaneStiff::trappe().from_data(&data).expect("stiff");
    onto_bonds(&mut q, &data, Alkane::trappe().r0);
    let t_end = 400.0;
    let drift = |name: &str,
                 h: f64,
                 step: &mut dyn FnMut(&mut DynState) -> bool,
                 e: &dyn Fn(&DynState) -> f64| {
        let mut s = DynState::new(q.clone(), v.clone());
        if !step(&mut s) {
            return f64::INFINITY;
        }
        let (e0, mut worst) = (e(&s), 0.0f64);
        let steps = (t_end / h).round() as usize;
        for _ in 1..steps {
            if !step(&mut s) {
                return f64::INFINITY;
            }
            worst = worst.max((e(&s) - e0).abs());
        }
        let r = worst / flexible.kinetic_energy(&v);
        eprintln!("{name:12} h = {h:4} fs: max |E - E0| / KE0 = {r:.2e}");
        r
    };
    let mut table = Vec::new();
    for h in [1.0, 2.0, 4.0, 5.0, 6.0] {
        let mut vv = VelocityVerlet::new(h);
        let verlet = drift(
            "verlet",
            h,
            &mut |s| vv.step(&flexible, s).is_ok() && s.q.iter().all(|x| x.is_finite()),
            &|s| flexible.kinetic_energy(&s.v) + flexible.potential_at(&s.q),
        );
        let mut ra = Rattle::new(h).with_solver(ShakeSolver::Newton);
        let rattle = drift("rattle", h, &mut |s| ra.step(&rigid, s).is_ok(), &|s| {
            rigid.kinetic_energy(&s.v) + rigid.potential_at(&s.q)
        });
        let mut zs = ZhangSkeelStiff::new(0.25, h);
        let zss = drift(
            "zss-stiff",
            h,
            &mut |s| zs.step(&stiff, s).is_ok() && s.q.iter().all(|x| x.is_finite()),
            &|s| stiff.kinetic_energy(&s.v) + stiff.potential_at(&s.q),
        );
        table.push((h, verlet, rattle, zss));
    }
    let at = |h: f64| table.iter().find(|r| r.0 == h).expect("scanned");
    // Measured (2026-11-27): Verlet 3.4e-3 at 1 fs; RATTLE 2.4e-3 at 4 fs, 3.6e-3 at 5 fs;
    // Z&Ss-stiff above Verlet at every step (6.8e-3 at 1 fs, 0.26 at 6 fs).
    assert!(
        at(4.0).2 < at(1.0).1,
        "RATTLE at 4 fs beats Verlet at 1 fs: {table:?}"
    );
    assert!(
        table.iter().all(|r| r.2.is_finite() && r.3.is_finite()),
        "{table:?}"
    );
}

/// `zs reproduce alkane` in miniature (a few dozen steps per run): every treatment runs from
/// the equilibrated liquid, the observables are those of liquid butane, the scan has every
/// point and the files are written.
#[test]
fn the_alkane_experiment_measures_every_treatment_on_one_liquid() {
    use zs_systems::experiments::alkane::{self, Config, Method};
    let cfg = Config::quick();
    assert!(Config::liquid_butane(None).check().is_ok());
    let bad = Config {
        scan: vec![7.0],
        ..Config::quick()
    };
    let err = alkane::run(&bad).expect_err("8 fs is not a whole number of 7 fs steps");
    assert!(err.to_string().contains("7 fs"), "{err}");
    let out = alkane::run(&cfg).expect("the quick experiment");
    assert_eq!(out.sites, 1000);
    assert_eq!(out.runs.len(), cfg.runs.len());
    for r in &out.runs {
        assert!(
            r.failure.is_none(),
            "{:?} at {}: {:?}",
            r.method,
            r.h,
            r.failure
        );
        let mean = |k: usize| r.series[k].iter().sum::<f64>() / r.series[k].len() as f64;
        let (trans, plus, minus) = (mean(0), mean(1), mean(2));
        // Every torsion is trans or gauche (φ = 0 exactly has probability zero).
        assert!((trans + plus + minus - 1.0).abs() < 1e-12, "{r:?}");
        // Butane's end-to-end distance lies between the eclipsed cis (~2.6 Å) and trans (3.9 Å),
        // its angles near θ0 = 114°, its kinetic temperature near 272 K after 20 fs from 272 K.
        assert!((2.6..4.0).contains(&mean(3)), "R_ee {}", mean(3));
        assert!((mean(4) - 114.0).abs() < 3.0, "θ {}", mean(4));
        assert!((150.0..450.0).contains(&mean(5)), "T {}", mean(5));
        let area: f64 = r.density.iter().sum::<f64>() * 360.0 / cfg.bins as f64;
        assert!(
            (area - 1.0).abs() < 1e-12,
            "torsion density integrates to {area}"
        );
    }
    // The bonds of the RATTLE run held at 1.54 Å leave 3N − 750 degrees of freedom: its kinetic
    // temperature is measured per those, so it is near 272 K like the others (not 272·3N/(3N−750)).
    assert_eq!(out.scan.len(), 4 * cfg.scan.len());
    let verlet = out
        .scan
        .iter()
        .find(|p| p.method == Method::Verlet && p.h == 1.0)
        .and_then(|p| p.error)
        .expect("Verlet at 1 fs completes");
    assert!(verlet > 0.0 && verlet < 0.05, "{verlet}");
    let dir = std::env::temp_dir().join(format!("zs-alkane-exp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = alkane::write(&cfg, &out, &dir).expect("written");
    for f in &report.files {
        assert!(
            std::fs::metadata(f).is_ok_and(|m| m.len() > 0),
            "{}",
            f.display()
        );
    }
    let text = report.to_string();
    assert!(text.contains("RATTLE, rigid bonds"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The exact Hessian of a periodic liquid (bonds, angles, torsions, the neighbour list's pair
/// terms across the box's faces) equals central differences of its gradient: what `zs nma
/// alkane` diagonalises. A dilute liquid (0.2 g/cm³) keeps the box above twice the cutoff with
/// 70 butanes; the positions are jiggled so no pair sits at a special distance.
#[test]
fn the_liquid_hessian_equals_differences_of_its_gradient() {
    use rand::{Rng, SeedableRng};
    use zs_runtime::HessianPart;
    let (sys, mut q, _, _) = Alkane::trappe()
        .liquid(70, 4, 0.2, 272.0, 3)
        .expect("dilute butane");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for x in &mut q {
        *x += rng.random_range(-0.05..0.05);
    }
    let mut h = sys.new_matrix(HessianPart::Full);
    sys.hessian_into(&q, &mut h);
    let exact = h.to_dense();
    let n = q.len();
    let step = 1e-5;
    let (mut worst, mut largest) = (0.0_f64, 0.0_f64);
    let (mut up, mut down) = (vec![0.0; n], vec![0.0; n]);
    for c in 0..n {
        let mut x = q.clone();
        x[c] += step;
        sys.gradient_into(&x, &mut up);
        x[c] -= 2.0 * step;
        sys.gradient_into(&x, &mut down);
        for r in 0..n {
            let fd = (up[r] - down[r]) / (2.0 * step);
            worst = worst.max((exact[r][c] - fd).abs());
            largest = largest.max(fd.abs());
        }
    }
    assert!(
        largest > 100.0,
        "the bonds' curvature is missing: {largest}"
    );
    assert!(
        worst <= 1e-5 * largest,
        "Hessian vs differences: {worst:e} of {largest:e}"
    );
}

/// A liquid's energy and gradient by every pass of the pair engine — full rows, the half
/// list's rows, the per-term pass (which of them the default takes depends on the machine's
/// lanes; each is forced here): each one set of bits on every instruction set, serial or
/// parallel, on 1, 2 or 3 threads; all equal to 1e-12, and the same as the half list's
/// per-term kernels (a Hessian pass) to 1e-12; and Newton's third law holds, the pair forces
/// summing to zero (full rows count each pair from both ends, so nothing forces it but correct
/// rows).
#[test]
fn the_pair_passes_give_one_set_of_bits_each_and_the_half_lists_values() {
    use zs_runtime::assembly::PairStrategy;
    use zs_runtime::simd::Isa;
    use zs_runtime::HessianPart;
    use zs_systems::testing::{norm_inf, rel_err, rel_err_scalar};
    let (q, _, data) = butane();
    let eval = |strategy: PairStrategy, isa: Isa, parallel: bool, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        pool.install(|| {
            let (sys, ..) = Alkane::trappe().from_data(&data).expect("the liquid");
            let sys = sys
                .with_simd(isa)
                .with_parallel(parallel)
                .with_pair_strategy(strategy);
            let mut g = vec![0.0; q.len()];
            let v = sys.value_gradient_into(&q, &mut g);
            let (fresh, ..) = Alkane::trappe().from_data(&data).expect("the liquid");
            let e = fresh
                .with_simd(isa)
                .with_parallel(parallel)
                .with_pair_strategy(strategy)
                .potential_at(&q);
            (v, e, g)
        })
    };
    let bits = |g: &[f64]| g.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let mut by_pass = Vec::new();
    for strategy in [
        PairStrategy::FullRows,
        PairStrategy::HalfRows,
        PairStrategy::PerTerm,
    ] {
        let (v0, e0, g0) = eval(strategy, Isa::Scalar, false, 1);
        assert_eq!(
            v0.to_bits(),
            e0.to_bits(),
            "{strategy:?}: energy pass against gradient pass"
        );
        for isa in Isa::available() {
            for (parallel, threads) in [(false, 1), (true, 1), (true, 2), (true, 3)] {
                let (v, e, g) = eval(strategy, isa, parallel, threads);
                let at = format!("{strategy:?}, {isa:?}, parallel {parallel}, {threads} threads");
                assert_eq!(v.to_bits(), v0.to_bits(), "{at}");
                assert_eq!(e.to_bits(), e0.to_bits(), "{at}");
                assert_eq!(bits(&g), bits(&g0), "{at}");
            }
        }
        by_pass.push((v0, g0));
    }
    for (v, g) in &by_pass[1..] {
        assert!(
            rel_err_scalar(*v, by_pass[0].0) < 1e-12,
            "{v} vs {}",
            by_pass[0].0
        );
        assert!(
            rel_err(g, &by_pass[0].1) < 1e-12,
            "a pass against full rows"
        );
    }
    let (v0, g0) = by_pass.swap_remove(0);
    let (sys, ..) = Alkane::trappe().from_data(&data).expect("the liquid");
    let mut h = sys.new_matrix(HessianPart::Full);
    let mut gh = vec![0.0; q.len()];
    sys.gradient_hessian_into(&q, &mut gh, &mut h);
    let vh = sys.potential_at(&q);
    assert!(rel_err_scalar(vh, v0) < 1e-12, "{vh} vs {v0}");
    let worst = rel_err(&gh, &g0);
    assert!(worst < 1e-12, "rows vs terms: {worst:e}");
    let scale = norm_inf(&g0);
    for a in 0..3 {
        let total: f64 = g0.iter().skip(a).step_by(3).sum();
        assert!(
            total.abs() <= 1e-9 * scale,
            "net force along {a}: {total:e}"
        );
    }
}

/// A liquid whose atoms are numbered at random (the same butane, renumbered) is held in spatial
/// order inside and gives the energy, gradient and Hessian-vector product of the liquid in its
/// own numbering, to rounding: bonds, angles, dihedrals, 1-4 pairs, exclusions and types all
/// follow their atoms. The liquid as built (each molecule's atoms consecutive) keeps its
/// order. The variant with constraints is held in spatial order too: its constraints are the
/// built liquid's (the rows in another order) and RATTLE follows the built liquid's RATTLE to
/// rounding.
#[test]
fn a_liquid_numbered_at_random_is_held_in_spatial_order_with_the_same_forces() {
    use zs_runtime::assembly::BodyOrder;
    let (q, _, data) = butane();
    let n = data.len();
    let mut s = 0x00C0_FFEE_u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    // perm[i]: the new index of atom i.
    let mut perm: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        perm.swap(k, (next() % (k as u64 + 1)) as usize);
    }
    let mut shuffled = data.clone();
    for (i, &p) in perm.iter().enumerate() {
        shuffled.positions[p] = data.positions[i];
        shuffled.velocities[p] = data.velocities[i];
        shuffled.types[p] = data.types[i];
        shuffled.molecules[p] = data.molecules[i];
    }
    for b in &mut shuffled.bonds {
        b.atoms = b.atoms.map(|a| perm[a]);
    }
    for a in &mut shuffled.angles {
        a.atoms = a.atoms.map(|x| perm[x]);
    }
    for d in &mut shuffled.dihedrals {
        d.atoms = d.atoms.map(|x| perm[x]);
    }
    let (built, ..) = Alkane::trappe().from_data(&data).expect("as built");
    let (spatial, q2, ..) = Alkane::trappe().from_data(&shuffled).expect("renumbered");
    assert_eq!(built.body_order(), BodyOrder::Given);
    assert_eq!(spatial.body_order(), BodyOrder::Cells);
    let (rigid, ..) = AlkaneRigidBonds::trappe()
        .from_data(&shuffled)
        .expect("rigid");
    assert_eq!(rigid.body_order(), BodyOrder::Cells);
    let moved = |x: &[f64]| {
        let mut y = vec![0.0; x.len()];
        for (i, &p) in perm.iter().enumerate() {
            y[3 * p..3 * p + 3].copy_from_slice(&x[3 * i..3 * i + 3]);
        }
        y
    };
    let (rigid_built, ..) = AlkaneRigidBonds::trappe()
        .from_data(&data)
        .expect("rigid, as built");
    assert_eq!(rigid_built.body_order(), BodyOrder::Given);
    let (mut c, mut c2) = (vec![0.0; data.bonds.len()], vec![0.0; data.bonds.len()]);
    rigid_built.constraints_into(&q, &mut c);
    rigid.constraints_into(&moved(&q), &mut c2);
    c.sort_by(f64::total_cmp);
    c2.sort_by(f64::total_cmp);
    assert_eq!(
        c, c2,
        "the same constraint values, each row by the same arithmetic"
    );
    let mut on = q.clone();
    onto_bonds(&mut on, &data, Alkane::trappe().r0);
    let vel: Vec<f64> = data.velocities.iter().flatten().copied().collect();
    let mut s1 = DynState::new(on.clone(), vel.clone());
    let mut s2 = DynState::new(moved(&on), moved(&vel));
    // One stepper per system: a stepper keeps its system's Jacobian pattern and solver.
    let mut rattle = Rattle::new(2.0).with_solver(ShakeSolver::Newton);
    let mut rattle2 = Rattle::new(2.0).with_solver(ShakeSolver::Newton);
    for _ in 0..10 {
        rattle
            .step(&rigid_built, &mut s1)
            .expect("RATTLE, as built");
        rattle2
            .step(&rigid, &mut s2)
            .expect("RATTLE, spatial order");
    }
    rigid.constraints_into(&s2.q, &mut c2);
    assert!(
        c2.iter().all(|x| x.abs() < 1e-9),
        "the bonds held in spatial order"
    );
    assert_eq!(q2, moved(&q));
    let (mut g, mut g2) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    let v = built.value_gradient_into(&q, &mut g);
    let v2 = spatial.value_gradient_into(&q2, &mut g2);
    assert!((v - v2).abs() <= 1e-12 * v.abs(), "{v} vs {v2}");
    let close = |a: &[f64], b: &[f64], what: &str| {
        let scale = b.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-11 * scale, "{what}[{k}]: {x} vs {y}");
        }
    };
    close(&g2, &moved(&g), "gradient");
    close(&s2.q, &moved(&s1.q), "RATTLE's positions");
    close(&s2.v, &moved(&s1.v), "RATTLE's velocities");
    let a: Vec<f64> = (0..3 * n)
        .map(|_| (next() % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    let (mut h, mut h2) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    built.hessian_vector_into(&q, &a, &mut h);
    spatial.hessian_vector_into(&q2, &moved(&a), &mut h2);
    close(&h2, &moved(&h), "Hessian-vector product");
}
