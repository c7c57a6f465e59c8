//! The triple-jump composition [`Yoshida4`] (Tao & Owhadi Remark 2.1; `docs/INTEGRATORS.md` §10),
//! measured on a hand-written 2-DOF anharmonic potential: order 4 over Verlet, Z&S and Newmark,
//! time-reversibility, symplecticity over Z&S, the cost in evaluations per macro step, and the
//! error contract (state restored, error re-stamped with the macro step).
//!
//! Measured values are printed: `cargo test -p zs-runtime --test runtime composition:: --
//! --nocapture`.

use zs_runtime::integrators::composition::{YOSHIDA4_W0, YOSHIDA4_W1};
use zs_runtime::verify::{
    advance, max_diff, reversibility_error, rk4_reference, slope, symplecticity_defect,
};
use zs_runtime::{
    Clocked, Newmark, Potential, State, StepError, StepErrorKind, Stepper, VelocityVerlet,
    Yoshida4, ZhangSkeel, ZhangSkeelSimplified,
};

use crate::support::coupled2;
use coupled2::Coupled2;

/// Free motion whose gradient is NaN outside `[lo, hi]`.
struct NanOutside {
    lo: f64,
    hi: f64,
}

impl Potential<1> for NanOutside {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, _: &[f64; 1]) -> f64 {
        0.0
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [if q[0] < self.lo || q[0] > self.hi {
            f64::NAN
        } else {
            0.0
        }]
    }
    fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[0.0]]
    }
    fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
}

/// Global error at `t_end` for `h0, h0/2, h0/4, h0/8` against RK4 with 40 000 steps (its own
/// error ~ (t_end/40 000)⁴, below 1e-15 here); returns the fitted slope and the errors.
fn measured_order<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    make: impl Fn(f64) -> S,
    p: &P,
    s0: State<N>,
    t_end: f64,
    h0: f64,
) -> (f64, Vec<f64>) {
    let reference = rk4_reference(p, s0, t_end, 40_000);
    let hs: Vec<f64> = (0..4).map(|k| h0 / f64::powi(2.0, k)).collect();
    let errs: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let n = (t_end / h).round() as usize;
            max_diff(&advance(&mut make(h), p, s0, n), &reference)
        })
        .collect();
    (slope(&hs, &errs), errs)
}

fn report(name: &str, (k, errs): &(f64, Vec<f64>)) {
    let shown: Vec<String> = errs.iter().map(|e| format!("{e:.3e}")).collect();
    eprintln!("order {name}: slope {k:.4}, errors [{}]", shown.join(", "));
}

const S2: State<2> = State {
    q: [0.8, -0.5],
    v: [0.3, 0.6],
    t: 0.0,
};

/// Macro steps 0.1 … 0.0125 over t = 3: errors from ~1e-3 down to ~1e-8, well above the
/// round-off of a few hundred steps (~1e-13). From 0.2 Yoshida4(Z&S) is not yet asymptotic
/// (measured slope 3.88, successive error ratios 13.3, 15.2, 15.8).
const H0: f64 = 0.1;

#[test]
fn weights() {
    let w1 = 1.0 / (2.0 - 2f64.cbrt());
    assert!((YOSHIDA4_W1 - w1).abs() < 1e-15);
    assert!((YOSHIDA4_W0 - (1.0 - 2.0 * w1)).abs() < 1e-15);
    // Consistency (Σw = 1) and the order-3 condition (Σw³ = 0).
    assert!((2.0 * YOSHIDA4_W1 + YOSHIDA4_W0 - 1.0).abs() < 1e-15);
    assert!((2.0 * YOSHIDA4_W1.powi(3) + YOSHIDA4_W0.powi(3)).abs() < 1e-14);
}

#[test]
fn order_four() {
    let cases = [
        (
            "Yoshida4(Verlet)",
            measured_order(
                |h| Yoshida4::new(VelocityVerlet::new(h)),
                &Coupled2,
                S2,
                3.0,
                H0,
            ),
        ),
        (
            "Yoshida4(Z&S beta=0.4)",
            measured_order(
                |h| Yoshida4::new(ZhangSkeel::new(0.4, h)),
                &Coupled2,
                S2,
                3.0,
                H0,
            ),
        ),
        (
            "Yoshida4(Z&Ss beta=0.4)",
            measured_order(
                |h| Yoshida4::new(ZhangSkeelSimplified::new(0.4, h)),
                &Coupled2,
                S2,
                3.0,
                H0,
            ),
        ),
        (
            "Yoshida4(Newmark beta=0.25)",
            measured_order(
                |h| Yoshida4::new(Newmark::new(0.25, h).with_tolerance(1e-14)),
                &Coupled2,
                S2,
                3.0,
                H0,
            ),
        ),
    ];
    for (name, result) in &cases {
        report(name, result);
    }
    for (name, (k, errs)) in &cases {
        assert!((k - 4.0).abs() < 0.1, "{name}: slope {k}, errors {errs:?}");
    }
    // The base methods at the same steps: order 2 and far larger errors.
    let base = measured_order(|h| ZhangSkeel::new(0.4, h), &Coupled2, S2, 3.0, H0);
    report("Z&S alone", &base);
    assert!((base.0 - 2.0).abs() < 0.1);
    assert!(base.1[3] > 100.0 * cases[1].1.1[3]);
}

#[test]
fn reversible() {
    let e_vv = reversibility_error(
        Yoshida4::new(VelocityVerlet::new(0.1)),
        &Coupled2,
        S2,
        10,
        0.1,
    );
    let e_zs = reversibility_error(
        Yoshida4::new(ZhangSkeel::new(0.4, 0.1)),
        &Coupled2,
        S2,
        10,
        0.1,
    );
    let e_nm = reversibility_error(
        Yoshida4::new(Newmark::new(0.4, 0.1).with_tolerance(1e-14)),
        &Coupled2,
        S2,
        10,
        0.1,
    );
    eprintln!(
        "reversibility (10 macro steps of h = 0.1 and back): Yoshida4(Verlet) {e_vv:.2e}, \
         Yoshida4(Z&S) {e_zs:.2e}, Yoshida4(Newmark) {e_nm:.2e}"
    );
    assert!(e_vv <= 1e-12 && e_zs <= 1e-12 && e_nm <= 1e-12);
}

#[test]
fn composition_of_symplectic_maps_is_symplectic() {
    let s0 = State::new([1.1, -0.9], [0.3, 0.6]);
    let d_zs = symplecticity_defect(|| Yoshida4::new(ZhangSkeel::new(0.4, 0.5)), &Coupled2, s0);
    let d_zss = symplecticity_defect(
        || Yoshida4::new(ZhangSkeelSimplified::new(0.4, 0.5)),
        &Coupled2,
        s0,
    );
    eprintln!("symplecticity defect h = 0.5: Yoshida4(Z&S) {d_zs:.2e}, Yoshida4(Z&Ss) {d_zss:.2e}");
    // Noise floor of the central differences ~1e-10; Z&Ss is not symplectic (~1e-3 per step).
    assert!(d_zs <= 1e-8, "{d_zs:e}");
    assert!(d_zss > 1e-4, "{d_zss:e}");
}

/// Evaluations per macro step in steady state: Verlet's cached `a(x)` does not depend on `h`
/// (3 gradients per macro step); Z&S's `f(x; h²)` does, so the middle and last substeps must
/// re-evaluate it at their starting point (5 per macro step). One inner stepper per weight
/// (clones) would not help: each substep starts where the *other* weight's substep ended.
#[test]
fn evaluations_per_macro_step() {
    let n = 100u64;
    let mut y = Yoshida4::new(VelocityVerlet::new(0.1));
    let mut s = S2;
    for _ in 0..n {
        y.step(&Coupled2, &mut s).unwrap();
    }
    let vv = y.inner().stats().gradient_evaluations;
    let mut y = Yoshida4::new(ZhangSkeel::new(0.4, 0.1));
    let mut s = S2;
    for _ in 0..n {
        y.step(&Coupled2, &mut s).unwrap();
    }
    let zs = y.inner().stats();
    eprintln!(
        "{n} macro steps: Yoshida4(Verlet) {vv} gradients ({:.2}/step), Yoshida4(Z&S) {} \
         evaluations ({:.2}/step), {} cache hits",
        vv as f64 / n as f64,
        zs.evaluations,
        zs.evaluations as f64 / n as f64,
        zs.cache_hits
    );
    assert_eq!(vv, 3 * n + 1);
    assert_eq!(zs.evaluations, 5 * n + 1);
    assert_eq!(zs.cache_hits, n - 1);
    // Macro-step bookkeeping.
    assert_eq!(y.steps_taken(), n);
    assert_eq!(y.inner().steps_taken(), 3 * n);
    assert_eq!(y.inner().h(), 0.1, "the inner step size is restored");
    assert_eq!(Clocked::h(&y), 0.1);
    assert_eq!(Clocked::name(&y), "yoshida4");
    assert!((s.t - 10.0).abs() < 1e-12);
}

#[test]
fn failed_substep_restores_the_state_and_reports_the_macro_step() {
    // Free flight at v = 1 from q = 0 with macro step 0.25: macro steps end at 0.25, 0.5, 0.75
    // (substeps overshoot by 1.351·0.25 = 0.338 at most: 0.838 < 1 in the third). In macro step
    // 3 (from t = 0.75) the first substep reaches 0.75 + 0.338 = 1.088 > 1.
    let p = NanOutside { lo: -1.0, hi: 1.0 };
    let mut y = Yoshida4::new(VelocityVerlet::new(0.25));
    let mut s = State::new([0.0], [1.0]);
    for _ in 0..3 {
        y.step(&p, &mut s).unwrap();
    }
    let before = s;
    let e = y.step(&p, &mut s).unwrap_err();
    eprintln!("failure in the first substep: {e}");
    match e {
        StepError {
            step,
            t,
            kind: StepErrorKind::NonFinite(_),
            ..
        } => {
            assert_eq!(
                step, 3,
                "the macro step's index, not the inner substep's (9)"
            );
            assert_eq!(t, before.t);
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(s, before);
    assert_eq!(y.steps_taken(), 3);
    assert_eq!(y.inner().h(), 0.25, "the inner step size is restored");

    // A failure in the middle substep, after the first one has moved the state: from q = 0 with
    // v = 1 and h = 0.5 the substeps end at 0.676 and then 0.676 − 0.851 = −0.176 < −0.1.
    let p = NanOutside { lo: -0.1, hi: 1.0 };
    let mut y = Yoshida4::new(VelocityVerlet::new(0.5));
    let before = State::at([0.0], [1.0], 7.0);
    let mut s = before;
    let e = y.step(&p, &mut s).unwrap_err();
    eprintln!("failure in the middle substep: {e}");
    assert!(
        matches!(e, StepError { step: 0, t, kind: StepErrorKind::NonFinite(_), .. } if t == 7.0),
        "{e:?}"
    );
    assert_eq!(
        y.inner().steps_taken(),
        1,
        "one substep succeeded before the failure"
    );
    assert_eq!(s, before, "restored to the start of the macro step");
}
