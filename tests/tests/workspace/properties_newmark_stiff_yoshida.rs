//! The Newmark family, Z&Ss-stiff and the triple jump on the penalized double pendulum of Tao &
//! Owhadi §4.1 (ω = 20, β = 0.4, `DoublePendulum::paper()`, `DoublePendulum::initial_state()`), for
//! both the macro-generated system and the hand-written reference: order 2 (Newmark, one-step
//! Newmark, push-forward Newmark, Z&Ss-stiff), order 4 (Yoshida4 over Z&S), time-reversibility of
//! the symmetric ones, symplecticity of push-forward Newmark to the solver tolerance, Z&Ss-stiff =
//! Z&Ss on this system (its `V` is linear, so all of `Hess V_ω` is the penalty's), and boundedness
//! at the paper's h = 0.1.
//!
//! Measured values are printed:
//! `cargo test -p zs-tests --test workspace properties_newmark_stiff_yoshida:: -- --nocapture`.

use zs_runtime::verify::{
    advance, max_diff, reversibility_error, rk4_reference, slope, symplecticity_defect,
};
use zs_runtime::{
    Clocked, LinearlyImplicitNewmark, MechanicalSystem, Newmark, Potential, PushForwardNewmark,
    State, Stepper, StiffSplit, Yoshida4, ZhangSkeel, ZhangSkeelSimplified, ZhangSkeelStiff,
};
use zs_systems::double_pendulum::reference::DoublePendulumReference;
use zs_systems::double_pendulum::{DoublePendulum, BETA, OMEGA};

fn generated() -> DoublePendulum {
    DoublePendulum::paper()
}

fn reference() -> DoublePendulumReference {
    DoublePendulumReference::paper()
}

/// A state off the constraint manifold with non-zero velocities, reached by the dynamics
/// (0.5 time units of Z&S at h = 0.01): penalty forces and Hessians all act.
fn moving_state<S: MechanicalSystem<4, 2>>(sys: &S) -> State<4> {
    let p = sys.penalized(OMEGA);
    let mut s = DoublePendulum::initial_state();
    let mut zs = ZhangSkeel::new(BETA, 0.01);
    for _ in 0..50 {
        zs.step(&p, &mut s).unwrap();
    }
    let g = sys.constraints(&s.q);
    assert!(g.iter().any(|x| x.abs() > 1e-4), "penalty inactive: {g:?}");
    s
}

/// Errors at `t_end` for `h0, h0/2, h0/4, h0/8` against `reference`; asserts the fitted slope
/// is within 0.1 of `order`.
fn check_order<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    name: &str,
    order: f64,
    make: impl Fn(f64) -> S,
    p: &P,
    (s0, reference, t_end): (State<N>, &State<N>, f64),
    h0: f64,
) {
    let hs: Vec<f64> = (0..4).map(|k| h0 / f64::powi(2.0, k)).collect();
    let errs: Vec<f64> = hs
        .iter()
        .map(|&h| {
            max_diff(
                &advance(&mut make(h), p, s0, (t_end / h).round() as usize),
                reference,
            )
        })
        .collect();
    let k = slope(&hs, &errs);
    let shown: Vec<String> = errs.iter().map(|e| format!("{e:.3e}")).collect();
    eprintln!("order {name}: slope {k:.4}, errors [{}]", shown.join(", "));
    assert!(
        (k - order).abs() < 0.1,
        "{name}: slope {k}, errors {errs:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Order.

/// Largest step of the second-order tests, as in `properties_double_pendulum.rs`: at h = 0.01
/// the errors of the penalized pendulum are not yet asymptotic; from 0.00125 the successive
/// ratios are ≈ 4.
const H0_ORDER_2: f64 = 0.00125;

fn order_two<S: MechanicalSystem<4, 2>>(label: &str, sys: &S) {
    let p = sys.penalized(OMEGA);
    let s0 = DoublePendulum::initial_state();
    let reference = rk4_reference(&p, s0, 1.0, 100_000);
    let run = (s0, &reference, 1.0);
    check_order(
        &format!("Newmark DP {label}"),
        2.0,
        |h| Newmark::new(BETA, h),
        &p,
        run,
        H0_ORDER_2,
    );
    check_order(
        &format!("one-step Newmark DP {label}"),
        2.0,
        |h| LinearlyImplicitNewmark::new(BETA, h),
        &p,
        run,
        H0_ORDER_2,
    );
    check_order(
        &format!("push-forward Newmark DP {label}"),
        2.0,
        |h| PushForwardNewmark::new(BETA, h),
        &p,
        run,
        H0_ORDER_2,
    );
    check_order(
        &format!("Z&Ss-stiff DP {label}"),
        2.0,
        |h| ZhangSkeelStiff::new(BETA, h),
        &p,
        run,
        H0_ORDER_2,
    );
}

#[test]
fn order_two_on_the_penalized_double_pendulum() {
    order_two("generated", &generated());
    order_two("reference", &reference());
}

/// Largest macro step of the fourth-order test. Measured errors of Yoshida4(Z&S) at t = 1:
/// h = 0.02: 1.5e-2, 0.01: 3.4e-3, 0.005: 2.9e-4, 0.0025: 4.4e-5, 0.00125: 3.1e-6,
/// 0.000625: 2.0e-7, 0.0003125: 1.2e-8 — successive ratios 4.5, 11.9, 6.5, 14.2, 15.6, 15.9:
/// asymptotic only from ~0.00125 (the penalty modes, ω ≈ 20–40, must be resolved). The
/// smallest error, ~8e-10 at h = 0.00016, is well above the RK4 reference's own error
/// (2.4e-12, measured against 200 000 steps).
const H0_ORDER_4: f64 = 0.00125;

fn order_four<S: MechanicalSystem<4, 2>>(label: &str, sys: &S) {
    let p = sys.penalized(OMEGA);
    let s0 = DoublePendulum::initial_state();
    let reference = rk4_reference(&p, s0, 1.0, 100_000);
    check_order(
        &format!("Yoshida4(Z&S) DP {label}"),
        4.0,
        |h| Yoshida4::new(ZhangSkeel::new(BETA, h)),
        &p,
        (s0, &reference, 1.0),
        H0_ORDER_4,
    );
}

#[test]
fn order_four_on_the_penalized_double_pendulum() {
    order_four("generated", &generated());
    order_four("reference", &reference());
}

// ---------------------------------------------------------------------------------------------
// Reversibility, symplecticity.

fn reversibility<S: MechanicalSystem<4, 2>>(label: &str, sys: &S) {
    let p = sys.penalized(OMEGA);
    for (which, s0) in [
        ("initial", DoublePendulum::initial_state()),
        ("moving", moving_state(sys)),
    ] {
        let errs = [
            (
                "Newmark (tol 1e-14)",
                reversibility_error(
                    Newmark::new(BETA, 0.1).with_tolerance(1e-14),
                    &p,
                    s0,
                    10,
                    0.01,
                ),
            ),
            (
                "push-forward Newmark",
                reversibility_error(PushForwardNewmark::new(BETA, 0.1), &p, s0, 10, 0.01),
            ),
            (
                "Z&Ss-stiff",
                reversibility_error(ZhangSkeelStiff::new(BETA, 0.1), &p, s0, 10, 0.01),
            ),
            (
                "Yoshida4(Z&S)",
                reversibility_error(Yoshida4::new(ZhangSkeel::new(BETA, 0.1)), &p, s0, 10, 0.01),
            ),
        ];
        for (name, e) in errs {
            eprintln!(
                "reversibility DP {label} {which} (10 steps of h = 0.1 and back): {name} {e:.2e}"
            );
            assert!(e <= 1e-12, "{label} {which} {name}: {e:e}");
        }
    }
}

#[test]
fn symmetric_methods_are_reversible_on_the_double_pendulum() {
    reversibility("generated", &generated());
    reversibility("reference", &reference());
}

#[test]
fn push_forward_newmark_is_symplectic_on_the_double_pendulum() {
    let sys = generated();
    let p = sys.penalized(OMEGA);
    let s0 = moving_state(&sys);
    for h in [0.1, 0.02] {
        let d_pf = symplecticity_defect(
            || PushForwardNewmark::new(BETA, h).with_tolerance(1e-14),
            &p,
            s0,
        );
        let d_nm = symplecticity_defect(|| Newmark::new(BETA, h).with_tolerance(1e-14), &p, s0);
        let d_zs = symplecticity_defect(|| ZhangSkeel::new(BETA, h), &p, s0);
        eprintln!(
            "symplecticity defect DP h = {h}: push-forward Newmark {d_pf:.2e}, Newmark (q, M q') \
             {d_nm:.2e}, Z&S {d_zs:.2e} (finite-difference floor)"
        );
        // At most 10x the defect Z&S shows on the same map (the noise floor of the central
        // differences, ~1e-9 on this stiff map): symplectic to the solver tolerance.
        assert!(
            d_pf <= 10.0 * d_zs.max(1e-10),
            "push-forward h = {h}: {d_pf:e}"
        );
        assert!(d_nm > 1e-4, "Newmark h = {h}: {d_nm:e}");
    }
}

/// On the double pendulum `V` is linear (gravity), so the whole Hessian of `V_ω` is the
/// penalty's: Z&Ss-stiff (eq. 19) and Z&Ss (eq. 18) solve the same system.
#[test]
fn stiff_split_of_the_penalized_pendulum() {
    let sys = generated();
    let p = sys.penalized(OMEGA);
    let s = moving_state(&sys);
    let (h, h1) = (p.hessian(&s.q), p.stiff_hessian(&s.q));
    let scale = h.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    for i in 0..4 {
        for j in 0..4 {
            assert!((h[i][j] - h1[i][j]).abs() <= 1e-14 * scale, "{i}{j}");
        }
    }
    let (mut zss, mut stiff) = (
        ZhangSkeelSimplified::new(BETA, 0.1),
        ZhangSkeelStiff::new(BETA, 0.1),
    );
    let (mut a, mut b) = (
        DoublePendulum::initial_state(),
        DoublePendulum::initial_state(),
    );
    let mut worst = 0.0f64;
    for _ in 0..100 {
        zss.step(&p, &mut a).unwrap();
        stiff.step(&p, &mut b).unwrap();
        worst = worst.max(max_diff(&a, &b));
    }
    eprintln!("Z&Ss-stiff vs Z&Ss on the penalized pendulum, 100 steps of h = 0.1: {worst:.2e}");
    // Same formulas up to the order of the Hessian's floating-point operations; a chaotic flow
    // over 10 time units amplifies rounding.
    assert!(worst < 1e-9, "{worst:e}");
}

/// The paper's step h = 0.1 (Fig. 1): Newmark, push-forward Newmark and Z&Ss-stiff stay bounded
/// over t = 100.
#[test]
fn bounded_at_the_papers_step() {
    let sys = generated();
    let p = sys.penalized(OMEGA);
    let s0 = DoublePendulum::initial_state();
    let energy = |s: &State<4>| s.kinetic_energy(&p.masses()) + p.potential(&s.q);
    let e0 = energy(&s0);
    let report = |name: &str, stepper: &mut dyn Stepper<_, [f64; 4]>| -> (f64, f64) {
        let mut s = s0;
        let (mut de, mut g) = (0.0f64, 0.0f64);
        for _ in 0..1000 {
            stepper.step(&p, &mut s).expect("step failed");
            de = de.max((energy(&s) - e0).abs());
            g = g.max(
                sys.constraints(&s.q)
                    .iter()
                    .map(|c| c * c)
                    .sum::<f64>()
                    .sqrt(),
            );
        }
        eprintln!("h = 0.1, t = 100, {name}: max |ΔE| = {de:.3e}, max ‖g‖ = {g:.3e}");
        (de, g)
    };
    let mut nm = Newmark::new(BETA, 0.1);
    let runs = [
        report("Newmark", &mut nm),
        report(
            "push-forward Newmark",
            &mut PushForwardNewmark::new(BETA, 0.1),
        ),
        report("Z&Ss-stiff", &mut ZhangSkeelStiff::new(BETA, 0.1)),
    ];
    let st = nm.stats();
    eprintln!(
        "Newmark Newton at h = 0.1: {:.2} iterations per step (at most {}), {} LU fallbacks",
        st.iterations as f64 / 1000.0,
        st.max_step_iterations,
        st.lu_fallbacks
    );
    // Z&S on the same run: max |ΔE| 2.7e-2, max ‖g‖ 1.5e-2 (properties_double_pendulum.rs);
    // the bounds leave a factor ~4 over that.
    for (de, g) in runs {
        assert!(de < 0.1 && g < 0.05, "{de} {g}");
    }
}

/// Paper Fig. 1 row 5: one-step Newmark at h = 0.1 "has a large error due to the loss of
/// symplecticity, even though the method is still consistent". Measured here: its energy error
/// grows steadily (Newmark's stays bounded at ~1e-3) and the run breaks down — a non-finite
/// gradient — near t = 29, whereas the paper shows a large but finite error. The comparison is
/// made over t ≤ 25, before the breakdown.
#[test]
fn one_step_newmark_drifts_at_the_papers_step() {
    let sys = generated();
    let p = sys.penalized(OMEGA);
    let s0 = DoublePendulum::initial_state();
    let energy = |s: &State<4>| s.kinetic_energy(&p.masses()) + p.potential(&s.q);
    let e0 = energy(&s0);
    // Largest |ΔE| over steps [0, 50) and [200, 250).
    let windows = |stepper: &mut dyn Stepper<_, [f64; 4]>| -> (f64, f64) {
        let mut s = s0;
        let (mut first, mut last) = (0.0f64, 0.0f64);
        for k in 0..250 {
            stepper.step(&p, &mut s).expect("step failed");
            let de = (energy(&s) - e0).abs();
            if k < 50 {
                first = first.max(de);
            } else if k >= 200 {
                last = last.max(de);
            }
        }
        (first, last)
    };
    let (li_first, li_last) = windows(&mut LinearlyImplicitNewmark::new(BETA, 0.1));
    let (nm_first, nm_last) = windows(&mut Newmark::new(BETA, 0.1));
    eprintln!(
        "h = 0.1, max |ΔE| over t in [0, 5) and [20, 25): one-step Newmark {li_first:.2e}, \
         {li_last:.2e}; Newmark {nm_first:.2e}, {nm_last:.2e}"
    );
    assert!(li_last > 3.0 * li_first, "no drift: {li_first} {li_last}");
    // Measured: 2.7e-2 against Newmark's 4.7e-3 (5.8x) and against its own 4.3e-3 at the start.
    assert!(
        li_last > 3.0 * nm_first.max(nm_last),
        "{li_last} vs Newmark {nm_last}"
    );
    // Beyond t ≈ 29 the one-step run fails with a typed error, not a silent NaN.
    let mut li = LinearlyImplicitNewmark::new(BETA, 0.1);
    let mut s = s0;
    let failure = (0..1000).find_map(|_| li.step(&p, &mut s).err());
    eprintln!("one-step Newmark at h = 0.1 over t = 100: {failure:?}");
    if let Some(e) = failure {
        assert_eq!(e.step(), li.steps_taken());
        assert!(s.is_finite());
    }
}
