//! Measurements of the properties' accuracy and of their generators (run on demand).

use super::*;

/// Measurement (not a check): worst errors in units of `u·S`, generator shapes, cases per
/// second. Run with
/// `ZS_CASES=2000 cargo test -p zs-symbolic --lib tests::prop::measure -- --ignored --nocapture`.
#[test]
#[ignore = "measurement; prints statistics (see the doc comment for the command)"]
pub(super) fn measure_accuracy_and_generators() {
    let n_cases: u32 = std::env::var("ZS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let rng = || TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let config = ProptestConfig {
        cases: n_cases,
        max_global_rejects: 1 << 20,
        ..ProptestConfig::default()
    };
    let report = |name: &str, w: &Worst, n: u32, secs: f64| {
        println!(
            "{name}: {n} cases in {secs:.1} s ({:.1} cases/s); worst |Δ|/(u·S): value {:.2}, \
             grad {:.2}, Hessian {:.2}, T {:.2}, Cond jet {:.2}; max S/|ref| {:.1e}; \
             outputs with ref = 0, S/|ref| ≤ 10, ≤ 1e3, ≤ 1e6, ≤ 1e10, > 1e10: {:?}",
            f64::from(n) / secs,
            w.value / U,
            w.grad / U,
            w.hess / U,
            w.third / U,
            w.scale_jet / U,
            w.amplification,
            w.histogram
        );
    };

    // Rejections by reason (a `Reject` is retried with a new case).
    let rejects = RefCell::new(std::collections::BTreeMap::<String, u32>::new());
    let note = |r: &TestCaseError| {
        if let TestCaseError::Reject(why) = r {
            *rejects.borrow_mut().entry(why.to_string()).or_default() += 1;
        }
    };

    let worst = RefCell::new(Worst::default());
    let t0 = Instant::now();
    let mut runner = TestRunner::new_with_rng(config.clone(), rng());
    runner
        .run(&shallow_case(6), |(n, raw, pts, dir)| {
            let w = run_shallow(n, &raw, &pts, &dir).inspect_err(note)?;
            worst.borrow_mut().merge(&w);
            Ok(())
        })
        .unwrap();
    let secs = t0.elapsed().as_secs_f64();
    report("shallow", &worst.borrow(), n_cases, secs);
    println!("  shallow rejections: {:?}", rejects.take());

    let worst = RefCell::new(0.0f64);
    let t0 = Instant::now();
    let mut runner = TestRunner::new_with_rng(config.clone(), rng());
    runner
        .run(&identity_case(), |case| {
            let w = run_identities(case).inspect_err(note)?;
            worst.replace_with(|x| x.max(w));
            Ok(())
        })
        .unwrap();
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "identities: {n_cases} cases in {secs:.1} s ({:.1} cases/s); worst |Δ|/(u·S) {:.2}; \
         rejections: {:?}",
        f64::from(n_cases) / secs,
        worst.take() / U,
        rejects.take()
    );

    let worst = RefCell::new(Worst::default());
    let shapes = RefCell::new(Vec::new());
    let t0 = Instant::now();
    let mut runner = TestRunner::new_with_rng(config, rng());
    runner
        .run(&deep_case(), |(n, raw, pts, dir)| {
            let (w, s) = run_deep(n, &raw, &pts, &dir)?;
            worst.borrow_mut().merge(&w);
            shapes.borrow_mut().push(s);
            Ok(())
        })
        .unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let shapes = shapes.into_inner();
    report("deep", &worst.borrow(), n_cases, secs);
    let stat = |f: &dyn Fn(&DeepShape) -> usize| {
        let mut v: Vec<usize> = shapes.iter().map(f).collect();
        v.sort_unstable();
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    println!(
        "deep shapes (min, median, max): nodes {:?}, depth {:?}, shared nodes {:?}, \
         operand reach {:?}; points skipped (a zero of differing sign at an atan2): {}",
        stat(&|s| s.nodes),
        stat(&|s| s.depth),
        stat(&|s| s.shared),
        stat(&|s| s.reach),
        shapes.iter().map(|s| s.skipped).sum::<usize>()
    );
}

/// The two parts of the condition scale at work (module docs), on two small expressions
/// the engine simplifies and the raw reference does not.
///
/// 1. `V = ((c + q) − c)²` with `c = 2³⁰ + 0.3`. The engine folds it to `q²` (`∂V/∂q = 2q`
///    exactly); the raw reference rounds `c + q`, so its `(c + q) − c` is off by up to
///    `ulp(c)/2 ≈ 1.2e-7` and its `∂V/∂q` by twice that. `A ≈ 2|q|` (the derivative itself
///    does not cancel) would call that a failure at most points; `E` carries the rounding of
///    `c + q` into the derivative, and the difference is within `u·S`: the scale is tight,
///    not lenient.
/// 2. `V = p/p`, `p = ½ + q²`. The engine folds `p/p → 1` (Hessian exactly 0); num-dual's
///    `∂²(p/p)/∂q²` is rounding noise, non-zero at some points: infinitely wrong relative
///    to its own magnitude, within a few `u·A` of the exact 0.
/// 3. Without cancellation the scale is not inflated: for `V = exp(q₀q₁) + q₀³` at a point
///    with positive coordinates (every chain-rule term positive), `S ≤ 10·|reference|` for
///    the value, gradient, Hessian and third contraction (`A = |reference|`; `E` counts each
///    rounding once, so the excess over 1 is about the number of roundings along a path).
#[test]
pub(super) fn condition_scale_cases() {
    use Binary::{Add as BAdd, Div, Sub as BSub};
    let c = 2f64.powi(30) + 0.3;
    let ops = [
        Op::Q(0),
        Op::C(c),
        Op::Bin(BAdd, 1, 0),
        Op::Bin(BSub, 2, 1),
        Op::Powi(3, 2),
    ];
    let mut g = Graph::new();
    let v = build_graph(&mut g, &ops)[4];
    let d = g.gradient(v, 1)[0];
    let (mut beyond_a, mut worst) = (0, 0.0f64);
    for k in 0..100 {
        let q = 0.0137 + 0.01 * f64::from(k);
        let got = g.eval(d, &|_| q);
        assert_eq!(got, 2.0 * q);
        let want = eval_ops(&ops, &[HyperDual64::new(q, 1.0, 0.0, 0.0)])[4].eps1;
        let c = eval_ops(&ops, &[Cond::var(q, [1.0, 0.0, 0.0])])[4];
        let diff = (got - want).abs();
        worst = worst.max(diff / (U * c.scale(1)));
        beyond_a += usize::from(diff > TOL * c.a.0[1]);
    }
    println!("((c + q) − c)²: worst |Δ|/(u·S) {worst:.2}; beyond 1e-10·A at {beyond_a}/100");
    assert!(worst <= 1.0, "{worst}");
    assert!(beyond_a >= 50, "{beyond_a}");

    let ops = [
        Op::Q(0),
        Op::C(0.5),
        Op::Powi(0, 2),
        Op::Bin(BAdd, 1, 2),
        Op::Bin(Div, 3, 3),
    ];
    let mut g = Graph::new();
    let v = build_graph(&mut g, &ops)[4];
    let grad = g.gradient(v, 1);
    let h = g.hessian(&grad)[0][0];
    assert_eq!(g.as_const(h), Some(0.0));
    let (mut noisy, mut worst) = (0, 0.0f64);
    for k in 0..100 {
        let q = 0.0137 + 0.1 * f64::from(k);
        let want = eval_ops(&ops, &[HyperDual64::new(q, 1.0, 1.0, 0.0)])[4].eps1eps2;
        let c = eval_ops(&ops, &[Cond::var(q, [1.0, 1.0, 0.0])])[4];
        noisy += usize::from(want != 0.0);
        worst = worst.max(want.abs() / (U * c.scale(3)));
    }
    println!("p/p: reference ≠ 0 at {noisy}/100, worst |Δ|/(u·S) {worst:.2}");
    assert!(noisy > 0 && worst <= 4.0, "{noisy} {worst}");

    let ops = [
        Op::Q(0),
        Op::Q(1),
        Op::Bin(Binary::Mul, 0, 1),
        Op::Un(Unary::Exp, 2),
        Op::Powi(0, 3),
        Op::Bin(BAdd, 3, 4),
    ];
    let (p, a) = ([0.7, 1.3], [0.4, 0.9]);
    let mut ratios = Vec::new();
    for (i, j) in [(0, 0), (0, 1), (1, 1)] {
        let seed = |k: usize, m: usize| f64::from(u8::from(k == m));
        let q: Vec<Cond> = (0..2)
            .map(|k| Cond::var(p[k], [seed(k, i), seed(k, j), 0.0]))
            .collect();
        let c = eval_ops(&ops, &q)[5];
        ratios.extend([0, 1, 3].map(|m| c.scale(m) / c.v.0[m].abs()));
    }
    for i in 0..2 {
        let q: Vec<Cond> = (0..2)
            .map(|k| Cond::var(p[k], [f64::from(u8::from(k == i)), a[k], a[k]]))
            .collect();
        let c = eval_ops(&ops, &q)[5];
        ratios.push(c.scale(7) / c.v.0[7].abs());
    }
    println!("no cancellation: S/|V| {ratios:.2?}");
    assert!(
        ratios.iter().all(|&r| (1.0..=10.0).contains(&r)),
        "{ratios:?}"
    );
}

/// Engine issue (module docs): the simplifier folds `q·0` to `+0`, but `q·0` is `-0` for
/// `q < 0`, and `atan2` tells them apart on its branch cut. Minimal case, found by
/// `deep_dags_match_num_dual`; the same with a literal `-0.0` (canonicalised to `+0.0`).
/// Ignored until the engine keeps signed zeros (it fails today, by design of the record):
/// `cargo test -p zs-symbolic --lib tests -- --ignored signed_zero`.
#[test]
#[ignore = "engine bug: the simplifier drops the sign of zero (x*0 -> +0, -0.0 -> +0.0), so \
            atan2(q*0, -1) is +pi instead of -pi for q < 0"]
pub(super) fn signed_zero_at_atan2_branch_cut() {
    let mut g = Graph::new();
    let q = g.var(Var::Q(0));
    let zero = g.constant(0.0);
    let y = g.mul(q, zero);
    let m1 = g.constant(-1.0);
    let v = g.atan2(y, m1);
    let q0 = -1.0f64;
    assert_eq!(g.eval(v, &|_| q0), (q0 * 0.0).atan2(-1.0));
    let mz = g.constant(-0.0);
    let w = g.atan2(mz, m1);
    assert_eq!(g.eval(w, &|_| q0), (-0.0f64).atan2(-1.0));
}

/// The engine's `tanh' = 1 − tanh²` has absolute accuracy only: relative error of
/// `d/dx tanh x` against `1/cosh²x`, measured over `|x| ≤ 12`. Within `TANH_MAX` it is
/// below 1e-12 (the exclusion threshold of the property tests, with room to the 1e-10
/// tolerance); beyond, it grows like `u·e^{2|x|}/4` (printed). Measured: 3e-13 at 5,
/// 3e-10 at 8, 3e-7 at 12.
#[test]
pub(super) fn tanh_derivative_accuracy() {
    let mut g = Graph::new();
    let x = g.var(Var::Q(0));
    let t = g.tanh(x);
    let d = g.derivative(t, Var::Q(0));
    let mut worst_in_range = 0.0f64;
    for k in 0..=240 {
        let xv = f64::from(k) * 0.05;
        let got = g.eval(d, &|_| xv);
        let want = xv.cosh().powi(-2);
        let r = (got - want).abs() / want;
        if xv <= TANH_MAX {
            worst_in_range = worst_in_range.max(r);
        }
        if k % 20 == 0 {
            println!("x = {xv:5.2}: relative error {r:.1e}");
        }
    }
    assert!(worst_in_range < 1e-12, "{worst_in_range:e}");
}

/// The error functions' jets, which num-dual lacks (its reference is this jet): each
/// derivative against central differences of the one before, from the body of the
/// distribution to its tail (erfc at 5 is 1.5e-12: relative accuracy kept).
#[test]
pub(super) fn erf_taylor_by_differences() {
    for op in [Unary::Erf, Unary::Erfc] {
        for x in [-2.2, -0.4, 0.0, 0.3, 1.1, 2.7, 5.0] {
            if op == Unary::Erf && x > 3.0 {
                // erf(5) = 1 − 1.5e-12: its differences are rounding (erfc's are not).
                continue;
            }
            let f = taylor(op, x);
            let e = 1e-5;
            let (up, down) = (taylor(op, x + e), taylor(op, x - e));
            for k in 0..4 {
                let fd = (up[k] - down[k]) / (2.0 * e);
                let scale = f[k + 1].abs().max(1e-3 * f[1].abs()).max(f64::MIN_POSITIVE);
                assert!(
                    (f[k + 1] - fd).abs() <= 1e-6 * scale,
                    "{op:?} at {x}: derivative {} is {}, differences {fd}",
                    k + 1,
                    f[k + 1]
                );
            }
        }
    }
    // erf + erfc = 1 and erf odd, to rounding.
    assert!((libm::erf(0.7) + libm::erfc(0.7) - 1.0).abs() < 1e-16);
    assert_eq!(libm::erf(-0.7), -libm::erf(0.7));
}

/// The scale's jet arithmetic: `taylor` against num-dual (f..f''') and central differences
/// (f''''), for every unary function.
#[test]
pub(super) fn taylor_coefficients() {
    let ops = [
        Unary::Neg,
        Unary::Sqrt,
        Unary::Exp,
        Unary::Ln,
        Unary::Sin,
        Unary::Cos,
        Unary::Tan,
        Unary::Tanh,
        Unary::Acos,
        Unary::Asin,
        Unary::Atan,
        Unary::Erf,
        Unary::Erfc,
    ];
    for op in ops {
        for x in [0.3, 0.7, -0.55] {
            let x = if matches!(op, Unary::Sqrt | Unary::Ln) {
                x + 1.0
            } else {
                x
            };
            let f = taylor(op, x);
            let h = HyperHyperDual64::new(x, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0).unary(op);
            let want = [h.re, h.eps1, h.eps1eps2, h.eps1eps2eps3];
            for k in 0..4 {
                assert!(
                    (f[k] - want[k]).abs() <= 1e-13 * want[k].abs().max(1.0),
                    "{op:?}"
                );
            }
            let e = 1e-4;
            let fd = (taylor(op, x + e)[3] - taylor(op, x - e)[3]) / (2.0 * e);
            assert!(
                (f[4] - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                "{op:?} {} {fd}",
                f[4]
            );
        }
    }
    for n in [-3, -1, 0, 1, 2, 5] {
        let x = 0.8;
        let f = powi_taylor(n, x);
        let h = DualNum::powi(
            &HyperHyperDual64::new(x, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0),
            n,
        );
        let want = [h.re, h.eps1, h.eps1eps2, h.eps1eps2eps3];
        for k in 0..4 {
            assert!(
                (f[k] - want[k]).abs() <= 1e-13 * want[k].abs().max(1.0),
                "{n}"
            );
        }
    }
}
