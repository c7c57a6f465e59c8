//! The Newmark family (Tao & Owhadi §2.1; `docs/INTEGRATORS.md` §5–6), measured on hand-written
//! potentials: order 2 ([`Newmark`], [`LinearlyImplicitNewmark`], [`PushForwardNewmark`]),
//! time-reversibility (Newmark to the Newton tolerance, push-forward Newmark), symplecticity
//! (push-forward Newmark yes, to the solver tolerance; Newmark in `(q, M q̇)` and one-step Newmark
//! no), the push-forward relation eq. 13 between Newmark and push-forward Newmark, Newton
//! non-convergence reported as a typed error, error paths and work counters.
//!
//! Measured values are printed: `cargo test -p zs-runtime --test runtime newmark:: -- --nocapture`.

use zs_runtime::verify::{
    advance, max_diff, reversibility_error, rk4_reference, slope, symplecticity_defect,
};
use zs_runtime::{
    Clocked, LinearlyImplicitNewmark, Newmark, Potential, PushForwardNewmark, SolveFailure, State,
    StepError, StepErrorKind, Stepper,
};

// ---------------------------------------------------------------------------------------------
// Potentials with hand-written derivatives.

use crate::support::coupled2;
use crate::support::fixtures::NanBeyondOne;
use coupled2::Coupled2;

/// `V = k q⁴ / 4`, unit mass: stiff and strongly nonlinear for large `k`.
struct Quartic {
    k: f64,
}

impl Potential<1> for Quartic {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        0.25 * self.k * q[0].powi(4)
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [self.k * q[0].powi(3)]
    }
    fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] {
        [[3.0 * self.k * q[0] * q[0]]]
    }
    fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
        [6.0 * self.k * q[0] * a[0] * a[0]]
    }
}

/// `V = −½ q²`, unit mass: with `βh² = 1` the Newton matrix `1 + βh²·(−1)` is exactly zero.
struct InvertedHarmonic;

impl Potential<1> for InvertedHarmonic {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        -0.5 * q[0] * q[0]
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [-q[0]]
    }
    fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[-1.0]]
    }
    fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
}

#[test]
fn hand_written_derivatives_are_consistent() {
    let d = 1e-5;
    let q = [0.8, -0.5];
    let g = Coupled2.gradient(&q);
    let h = Coupled2.hessian(&q);
    for i in 0..2 {
        let mut p = q;
        let mut m = q;
        p[i] += d;
        m[i] -= d;
        let fd = (Coupled2.potential(&p) - Coupled2.potential(&m)) / (2.0 * d);
        assert!((fd - g[i]).abs() < 1e-8, "gradient {i}");
        let (gp, gm) = (Coupled2.gradient(&p), Coupled2.gradient(&m));
        for j in 0..2 {
            assert!(
                ((gp[j] - gm[j]) / (2.0 * d) - h[i][j]).abs() < 1e-8,
                "H {i}{j}"
            );
        }
    }
    let q = [0.7];
    let fd = (Quartic { k: 3.0 }.potential(&[q[0] + d])
        - Quartic { k: 3.0 }.potential(&[q[0] - d]))
        / (2.0 * d);
    assert!((fd - Quartic { k: 3.0 }.gradient(&q)[0]).abs() < 1e-8);
    let fd = (Quartic { k: 3.0 }.gradient(&[q[0] + d])[0]
        - Quartic { k: 3.0 }.gradient(&[q[0] - d])[0])
        / (2.0 * d);
    assert!((fd - Quartic { k: 3.0 }.hessian(&q)[0][0]).abs() < 1e-7);
}

// ---------------------------------------------------------------------------------------------
// Helpers (the measurement recipes of `tests/properties.rs`).

/// Global error at `t_end` for `h0, h0/2, h0/4, h0/8` against RK4; asserts slope 2 ± 0.1.
fn assert_order_2<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    name: &str,
    make: impl Fn(f64) -> S,
    p: &P,
    s0: State<N>,
    t_end: f64,
    h0: f64,
) -> f64 {
    let reference = rk4_reference(p, s0, t_end, 40_000);
    let hs: Vec<f64> = (0..4).map(|k| h0 / f64::powi(2.0, k)).collect();
    let errs: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let n = (t_end / h).round() as usize;
            max_diff(&advance(&mut make(h), p, s0, n), &reference)
        })
        .collect();
    let k = slope(&hs, &errs);
    let shown: Vec<String> = errs.iter().map(|e| format!("{e:.3e}")).collect();
    eprintln!("order {name}: slope {k:.4}, errors [{}]", shown.join(", "));
    assert!((k - 2.0).abs() < 0.1, "{name}: slope {k}, errors {errs:?}");
    k
}

const S2: State<2> = State {
    q: [0.8, -0.5],
    v: [0.3, 0.6],
    t: 0.0,
};

// ---------------------------------------------------------------------------------------------
// Order 2.

#[test]
fn order_two_on_a_two_dof_anharmonic_potential() {
    for beta in [0.25, 0.4] {
        assert_order_2(
            &format!("Newmark beta={beta}"),
            |h| Newmark::new(beta, h),
            &Coupled2,
            S2,
            3.0,
            0.1,
        );
        assert_order_2(
            &format!("one-step Newmark beta={beta}"),
            |h| LinearlyImplicitNewmark::new(beta, h),
            &Coupled2,
            S2,
            3.0,
            0.1,
        );
        assert_order_2(
            &format!("push-forward Newmark beta={beta}"),
            |h| PushForwardNewmark::new(beta, h),
            &Coupled2,
            S2,
            3.0,
            0.1,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Reversibility, symplecticity, eq. 13.

#[test]
fn newmark_and_push_forward_are_reversible() {
    let e_nm = reversibility_error(
        Newmark::new(0.4, 0.1).with_tolerance(1e-14),
        &Coupled2,
        S2,
        10,
        0.1,
    );
    let e_nm_default = reversibility_error(Newmark::new(0.4, 0.1), &Coupled2, S2, 10, 0.1);
    let e_pf = reversibility_error(PushForwardNewmark::new(0.4, 0.1), &Coupled2, S2, 10, 0.1);
    let e_li = reversibility_error(
        LinearlyImplicitNewmark::new(0.4, 0.1),
        &Coupled2,
        S2,
        10,
        0.1,
    );
    let e_li_big = reversibility_error(
        LinearlyImplicitNewmark::new(0.4, 0.5),
        &Coupled2,
        S2,
        10,
        0.1,
    );
    eprintln!(
        "reversibility (10 steps of h = 0.1 and back): Newmark tol 1e-14 {e_nm:.2e}, \
         Newmark default tol {e_nm_default:.2e}, push-forward {e_pf:.2e}, one-step Newmark \
         {e_li:.2e} (h = 0.5: {e_li_big:.2e})"
    );
    assert!(e_nm <= 1e-12, "Newmark {e_nm:e}");
    assert!(
        e_nm_default <= 1e-12,
        "Newmark default tolerance {e_nm_default:e}"
    );
    assert!(e_pf <= 1e-12, "push-forward Newmark {e_pf:e}");
}

#[test]
fn push_forward_newmark_is_symplectic_newmark_is_not() {
    let s0 = State::new([1.1, -0.9], [0.3, 0.6]);
    let (beta, h) = (0.4, 0.5);
    let d_pf = symplecticity_defect(
        || PushForwardNewmark::new(beta, h).with_tolerance(1e-14),
        &Coupled2,
        s0,
    );
    let d_nm = symplecticity_defect(
        || Newmark::new(beta, h).with_tolerance(1e-14),
        &Coupled2,
        s0,
    );
    let d_li = symplecticity_defect(|| LinearlyImplicitNewmark::new(beta, h), &Coupled2, s0);
    eprintln!(
        "symplecticity defect (beta {beta}, h {h}): push-forward {d_pf:.2e}, Newmark in \
         (q, M q') {d_nm:.2e}, one-step Newmark {d_li:.2e}"
    );
    // Central differences with δ = 1e-6 of a map computed to ~1e-16 have a noise floor of
    // ~1e-10 (Z&S measures 7.6e-11 on this state in tests/properties.rs).
    assert!(d_pf <= 1e-8, "push-forward Newmark defect {d_pf:e}");
    // Newmark preserves a non-canonical symplectic form (paper §2.1): in (q, M q') it is off
    // by O(βh²) terms, ~1e-2 here; 1e-4 is far above the noise floor.
    assert!(d_nm > 1e-4, "Newmark defect {d_nm:e}");
    assert!(d_li > 1e-4, "one-step Newmark defect {d_li:e}");
}

/// Eq. 13: push-forward Newmark is Newmark seen through `η(q, q̇) = (q + βh²M⁻¹∇V(q), q̇)`.
#[test]
fn push_forward_is_newmark_through_eta() {
    let (beta, h) = (0.4, 0.2);
    let eta = |q: &[f64; 2]| -> [f64; 2] {
        let g = Coupled2.gradient(q);
        let m = Coupled2.masses();
        core::array::from_fn(|i| q[i] + beta * h * h * g[i] / m[i])
    };
    let mut nm = Newmark::new(beta, h).with_tolerance(1e-15);
    let mut pf = PushForwardNewmark::new(beta, h).with_tolerance(1e-15);
    let mut sq = S2;
    let mut sx = State::new(eta(&S2.q), S2.v);
    let mut worst = 0.0f64;
    for _ in 0..100 {
        nm.step(&Coupled2, &mut sq).unwrap();
        pf.step(&Coupled2, &mut sx).unwrap();
        let pushed = State::at(eta(&sq.q), sq.v, sq.t);
        worst = worst.max(max_diff(&pushed, &sx));
    }
    eprintln!("|η(Newmark) − push-forward Newmark| over 100 steps of h = {h}: {worst:.2e}");
    assert!(worst < 1e-12, "{worst:e}");
    // And they are different maps of the same variables: the difference η makes is O(βh²).
    assert!(max_diff(&sq, &sx) > 1e-3);
}

// ---------------------------------------------------------------------------------------------
// Newton: convergence, non-convergence.

#[test]
fn newton_converges_quadratically_and_reports_residual() {
    let p = Quartic { k: 100.0 };
    let mut nm = Newmark::new(0.25, 0.1).with_tolerance(1e-14);
    let mut s = State::new([1.0], [0.0]);
    for _ in 0..50 {
        nm.step(&p, &mut s).unwrap();
        assert!(nm.stats().last_residual <= 1e-14);
    }
    let st = nm.stats();
    eprintln!("Newmark on k q⁴/4 (k = 100, h = 0.1): {st:?}");
    // A gradient per Newton iterate, plus one for the initial a_0.
    assert_eq!(st.gradient_evaluations, st.iterations + 50 + 1, "{st:?}");
    assert_eq!(st.hessian_evaluations, st.iterations);
    assert_eq!(st.cache_hits, 49);
    assert!(
        st.max_step_iterations >= 2 && st.max_step_iterations <= 8,
        "{st:?}"
    );
}

#[test]
fn newmark_not_converged_is_a_typed_error_and_leaves_the_state() {
    // A stiff, strongly nonlinear step: k q⁴/4 with k = 10⁴ (ω ≈ 170 at q = 1), h = 0.1.
    let p = Quartic { k: 1e4 };
    let s0 = State::at([1.0], [0.5], 2.0);
    let mut nm = Newmark::new(0.25, 0.1).with_max_iterations(1);
    let mut s = s0;
    let err = nm.step(&p, &mut s).unwrap_err();
    eprintln!("cap 1: {err}");
    match err {
        StepError {
            step,
            t,
            kind:
                StepErrorKind::NotConverged {
                    solver,
                    iterations,
                    residual,
                },
        } => {
            assert_eq!(step, 0);
            assert_eq!(t, 2.0);
            assert_eq!(solver, "Newmark Newton");
            assert_eq!(iterations, 1);
            assert!(residual.is_finite() && residual > 1e-6, "{residual:e}");
            assert_eq!(nm.stats().last_residual, residual);
        }
        e => panic!("expected NotConverged, got {e:?}"),
    }
    assert_eq!(s, s0, "state must be untouched");
    assert_eq!(nm.steps_taken(), 0);
    // The same step converges with the default cap, in more than one iteration.
    let mut nm = Newmark::new(0.25, 0.1);
    nm.step(&p, &mut s).unwrap();
    eprintln!(
        "default cap: {} iterations, residual {:.2e}",
        nm.stats().last_iterations,
        nm.stats().last_residual
    );
    assert!(nm.stats().last_iterations > 1);
    assert!(nm.stats().last_residual <= nm.tolerance());
    assert_eq!(s.t, 2.1);

    // Push-forward Newmark likewise.
    let mut pf = PushForwardNewmark::new(0.25, 0.1).with_max_iterations(1);
    let mut s = s0;
    match pf.step(&p, &mut s).unwrap_err() {
        StepError {
            step,
            kind:
                StepErrorKind::NotConverged {
                    solver,
                    iterations,
                    residual,
                    ..
                },
            ..
        } => {
            assert_eq!(
                (step, solver, iterations),
                (0, "push-forward Newmark Newton", 1)
            );
            assert!(residual.is_finite() && residual > 1e-6, "{residual:e}");
        }
        e => panic!("expected NotConverged, got {e:?}"),
    }
    assert_eq!(s, s0);
    // One-step Newmark never reports non-convergence; its leftover residual is visible.
    let mut li = LinearlyImplicitNewmark::new(0.25, 0.1);
    let mut s = s0;
    li.step(&p, &mut s).unwrap();
    eprintln!(
        "one-step Newmark residual on that step: {:.2e}",
        li.stats().last_residual
    );
    assert_eq!(li.stats().last_iterations, 1);
    assert!(li.stats().last_residual > 1e-6);
}

#[test]
fn failed_step_in_the_middle_reports_its_index() {
    // Newton needs 4 or 5 iterations per step on this stiff quartic (measured: 4 on the first
    // step, from the turning point); cap 4 fails at some later step k > 0, and the error carries
    // that k and the start time of that step.
    let p = Quartic { k: 1e3 };
    let mut nm = Newmark::new(0.25, 0.05).with_max_iterations(4);
    let mut s = State::new([1.0], [0.0]);
    let mut last_good = s;
    let err = loop {
        match nm.step(&p, &mut s) {
            Ok(()) => last_good = s,
            Err(e) => break e,
        }
        assert!(nm.steps_taken() < 10_000, "cap 4 never failed");
    };
    eprintln!("first failure with cap 4: {err}");
    assert_eq!(err.step(), nm.steps_taken());
    assert!(err.step() > 0);
    assert_eq!(s, last_good);
    match err {
        StepError {
            t,
            kind: StepErrorKind::NotConverged { iterations, .. },
            ..
        } => {
            assert_eq!(t, last_good.t);
            assert_eq!(iterations, 4);
        }
        e => panic!("{e:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Error paths.

fn check_errors<S: Stepper<NanBeyondOne, [f64; 1]> + Stepper<InvertedHarmonic, [f64; 1]>>(
    name: &str,
    make: impl Fn(f64, f64) -> S,
) {
    // Zero and non-finite h.
    for h in [0.0, f64::NAN, f64::INFINITY] {
        let mut st = make(0.25, h);
        let s0 = State::at([0.5], [1.0], 3.0);
        let mut s = s0;
        let e =
            Stepper::<NanBeyondOne, [f64; 1]>::step(&mut st, &NanBeyondOne, &mut s).unwrap_err();
        assert!(
            matches!(
                e,
                StepError {
                    step: 0,
                    kind: StepErrorKind::InvalidStepSize { .. },
                    ..
                }
            ),
            "{name}: {e:?}"
        );
        assert_eq!(s, s0);
    }
    // NaN gradient on the second step of free flight (q: 0.5 → 0.9 → 1.3).
    let mut st = make(0.25, 0.4);
    let mut s = State::new([0.5], [1.0]);
    Stepper::<NanBeyondOne, [f64; 1]>::step(&mut st, &NanBeyondOne, &mut s).unwrap();
    let s1 = s;
    let e = Stepper::<NanBeyondOne, [f64; 1]>::step(&mut st, &NanBeyondOne, &mut s).unwrap_err();
    assert!(
        matches!(
            e,
            StepError {
                step: 1,
                kind: StepErrorKind::NonFinite(_),
                ..
            }
        ),
        "{name}: {e:?}"
    );
    assert_eq!(s, s1, "{name}");
    // Singular Newton matrix: 1 + βh²·(−1) = 0 with β = 1/4, h = 2.
    let mut st = make(0.25, 2.0);
    let s0 = State::new([0.3], [0.1]);
    let mut s = s0;
    let e = Stepper::<InvertedHarmonic, [f64; 1]>::step(&mut st, &InvertedHarmonic, &mut s)
        .unwrap_err();
    assert!(
        matches!(
            e,
            StepError {
                step: 0,
                kind: StepErrorKind::Solve(SolveFailure::Singular { .. }),
                ..
            }
        ),
        "{name}: {e:?}"
    );
    assert_eq!(s, s0, "{name}");
}

#[test]
fn error_paths_leave_the_state_untouched() {
    check_errors("Newmark", Newmark::new);
    check_errors("one-step Newmark", LinearlyImplicitNewmark::new);
    check_errors("push-forward Newmark", PushForwardNewmark::new);
}

// ---------------------------------------------------------------------------------------------
// Caching and bookkeeping.

#[test]
fn caches_are_exact_and_counted() {
    // Stepping with the cache gives bit-for-bit the trajectory of a stepper reset every step.
    fn compare<S: Stepper<Coupled2, [f64; 2]>>(
        name: &str,
        mut a: S,
        mut b: S,
        reset: impl Fn(&mut S),
    ) {
        let (mut sa, mut sb) = (S2, S2);
        for _ in 0..30 {
            a.step(&Coupled2, &mut sa).unwrap();
            reset(&mut b);
            b.step(&Coupled2, &mut sb).unwrap();
            assert_eq!(sa, sb, "{name}");
        }
    }
    compare(
        "Newmark",
        Newmark::new(0.4, 0.1),
        Newmark::new(0.4, 0.1),
        Newmark::reset,
    );
    compare(
        "one-step Newmark",
        LinearlyImplicitNewmark::new(0.4, 0.1),
        LinearlyImplicitNewmark::new(0.4, 0.1),
        LinearlyImplicitNewmark::reset,
    );
    compare(
        "push-forward Newmark",
        PushForwardNewmark::new(0.4, 0.1),
        PushForwardNewmark::new(0.4, 0.1),
        PushForwardNewmark::reset,
    );

    let mut li = LinearlyImplicitNewmark::new(0.4, 0.1);
    let mut s = S2;
    for _ in 0..30 {
        li.step(&Coupled2, &mut s).unwrap();
    }
    let st = li.stats();
    // Per step: gradient at the predictor and at q_k+1, one Hessian, one solve; + the initial a_0.
    assert_eq!(st.gradient_evaluations, 61, "{st:?}");
    assert_eq!((st.hessian_evaluations, st.iterations), (30, 30));
    assert_eq!(st.cache_hits, 29);
    assert_eq!(st.cholesky_solves + st.lu_fallbacks, 30);

    let mut pf = PushForwardNewmark::new(0.4, 0.1);
    let mut s = S2;
    for _ in 0..30 {
        pf.step(&Coupled2, &mut s).unwrap();
    }
    let st = pf.stats();
    eprintln!("push-forward Newmark, 30 steps of h = 0.1: {st:?}");
    assert_eq!(st.cache_hits, 29);
    // One converged-check gradient per nonlinear solve (31 solves) on top of one per iteration.
    assert_eq!(st.gradient_evaluations, st.iterations + 31);
    // Z&Ss's a is the first iterate; each solve needs at least one more to reach 1e-12.
    assert!(st.iterations >= 2 * 31, "{st:?}");

    // Changing the sign of h keeps the push-forward cache (it depends on h²), not h itself.
    pf.set_h(-0.1);
    pf.step(&Coupled2, &mut s).unwrap();
    assert_eq!(pf.stats().cache_hits, 30);
    pf.set_h(0.05);
    pf.step(&Coupled2, &mut s).unwrap();
    assert_eq!(pf.stats().cache_hits, 30);
    // Newmark's a_k = −M⁻¹∇V(q_k) does not depend on h at all.
    let mut nm = Newmark::new(0.4, 0.1);
    let mut s = S2;
    nm.step(&Coupled2, &mut s).unwrap();
    nm.set_h(0.05);
    nm.step(&Coupled2, &mut s).unwrap();
    assert_eq!(nm.stats().cache_hits, 1);
}

#[test]
fn accessors_and_names() {
    let nm = Newmark::<[f64; 2]>::new(0.3, 0.1)
        .with_tolerance(1e-10)
        .with_max_iterations(7);
    assert_eq!(
        (nm.beta(), nm.h(), nm.tolerance(), nm.max_iterations()),
        (0.3, 0.1, 1e-10, 7)
    );
    assert!(nm.stats().last_residual.is_nan());
    assert_eq!(Clocked::name(&nm), "newmark");
    let li = LinearlyImplicitNewmark::<[f64; 2]>::new(0.3, 0.1);
    assert_eq!(Clocked::name(&li), "linearly-implicit-newmark");
    let mut pf = PushForwardNewmark::<[f64; 2]>::new(0.3, 0.1).with_tolerance(1e-9);
    assert_eq!(Clocked::name(&pf), "push-forward-newmark");
    assert_eq!((pf.beta(), pf.tolerance()), (0.3, 1e-9));
    pf.set_beta(0.25);
    assert_eq!(pf.beta(), 0.25);
}

#[test]
#[should_panic(expected = "tolerance")]
fn zero_tolerance_is_rejected() {
    let _ = Newmark::<[f64; 1]>::new(0.25, 0.1).with_tolerance(0.0);
}

#[test]
#[should_panic(expected = "at least one")]
fn zero_iteration_cap_is_rejected() {
    let _ = PushForwardNewmark::<[f64; 1]>::new(0.25, 0.1).with_max_iterations(0);
}
