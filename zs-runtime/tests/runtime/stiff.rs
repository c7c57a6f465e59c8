//! Simplified Z&S for stiff systems, [`ZhangSkeelStiff`] (Tao & Owhadi Integrator 5, eq. 19;
//! `docs/INTEGRATORS.md` §4), measured on hand-written splits `V = V0 + V1` of 2-DOF anharmonic
//! potentials: order 2, time-reversibility, the two limits (all of `V` stiff: Z&Ss, eq. 18;
//! nothing stiff: velocity Verlet), large-step stability for β > ¼ with a quadratic stiff part
//! (and instability for β < ¼ or for Verlet), error paths and work counters.
//!
//! Measured values are printed: `cargo test -p zs-runtime --test runtime stiff:: -- --nocapture`.

use zs_runtime::verify::{self, advance, max_diff, rk4_reference, slope};
use zs_runtime::{
    Clocked, Potential, SolveFailure, State, StepError, StepErrorKind, Stepper, StiffSplit,
    VelocityVerlet, ZhangSkeelSimplified, ZhangSkeelStiff,
};

// ---------------------------------------------------------------------------------------------
// Potentials with hand-written derivatives.

/// The soft part `V0 = ½(q0² + 2 q1²) + 0.3 q0² q1 + 0.1 q0⁴ + 0.05 q1⁴`, masses (1, 1.5).
fn v0(q: &[f64; 2]) -> (f64, [f64; 2], [[f64; 2]; 2]) {
    let (x, y) = (q[0], q[1]);
    (
        0.5 * (x * x + 2.0 * y * y) + 0.3 * x * x * y + 0.1 * x.powi(4) + 0.05 * y.powi(4),
        [
            x + 0.6 * x * y + 0.4 * x.powi(3),
            2.0 * y + 0.3 * x * x + 0.2 * y.powi(3),
        ],
        [
            [1.0 + 0.6 * y + 1.2 * x * x, 0.6 * x],
            [0.6 * x, 2.0 + 0.6 * y * y],
        ],
    )
}

const MASSES: [f64; 2] = [1.0, 1.5];

/// `V = V0 + V1`, `V1 = (κ/2)(q0 − q1)²`: a quadratic stiff spring (the setting of the paper's
/// stability statement for eq. 19).
struct Spring {
    kappa: f64,
}

impl Potential<2> for Spring {
    fn masses(&self) -> [f64; 2] {
        MASSES
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        v0(q).0 + 0.5 * self.kappa * (q[0] - q[1]).powi(2)
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        let g = v0(q).1;
        let d = self.kappa * (q[0] - q[1]);
        [g[0] + d, g[1] - d]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let h = v0(q).2;
        let s = self.stiff_hessian(q);
        core::array::from_fn(|i| core::array::from_fn(|j| h[i][j] + s[i][j]))
    }
    fn third_contraction(&self, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        let (x, y) = (q[0], q[1]);
        [
            2.4 * x * a[0] * a[0] + 1.2 * a[0] * a[1],
            0.6 * a[0] * a[0] + 1.2 * y * a[1] * a[1],
        ]
    }
}

impl StiffSplit<2> for Spring {
    fn stiff_hessian(&self, _: &[f64; 2]) -> [[f64; 2]; 2] {
        let k = self.kappa;
        [[k, -k], [-k, k]]
    }
}

/// `V = V0 + V1`, `V1 = (κ/4)(|q|² − 1)²`: a nonlinear stiff part (a soft "ring" constraint).
struct Ring {
    kappa: f64,
}

impl Ring {
    fn v1_gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        let c = self.kappa * (q[0] * q[0] + q[1] * q[1] - 1.0);
        [c * q[0], c * q[1]]
    }
}

impl Potential<2> for Ring {
    fn masses(&self) -> [f64; 2] {
        MASSES
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        v0(q).0 + 0.25 * self.kappa * (q[0] * q[0] + q[1] * q[1] - 1.0).powi(2)
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        let (g, g1) = (v0(q).1, self.v1_gradient(q));
        [g[0] + g1[0], g[1] + g1[1]]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let h = v0(q).2;
        let s = self.stiff_hessian(q);
        core::array::from_fn(|i| core::array::from_fn(|j| h[i][j] + s[i][j]))
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        unreachable!("Z&Ss-stiff never needs T")
    }
}

impl StiffSplit<2> for Ring {
    fn stiff_hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let r = q[0] * q[0] + q[1] * q[1] - 1.0;
        let k = self.kappa;
        [
            [k * (r + 2.0 * q[0] * q[0]), 2.0 * k * q[0] * q[1]],
            [2.0 * k * q[0] * q[1], k * (r + 2.0 * q[1] * q[1])],
        ]
    }
}

/// The [`Ring`] potential with a chosen split: all of `V` stiff, or none of it.
struct Resplit {
    all_stiff: bool,
}

const RING: Ring = Ring { kappa: 5.0 };

impl Potential<2> for Resplit {
    fn masses(&self) -> [f64; 2] {
        MASSES
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        RING.potential(q)
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        RING.gradient(q)
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        RING.hessian(q)
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        unreachable!()
    }
}

impl StiffSplit<2> for Resplit {
    fn stiff_hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        if self.all_stiff {
            RING.hessian(q)
        } else {
            [[0.0; 2]; 2]
        }
    }
}

/// `V = −½q²` entirely stiff, unit mass: with `βh² = 1` the matrix `1 − βh²` is exactly zero.
struct InvertedStiff;

impl Potential<1> for InvertedStiff {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        -0.5 * q[0] * q[0]
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [if q[0] > 10.0 { f64::NAN } else { -q[0] }]
    }
    fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[-1.0]]
    }
    fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
}

impl StiffSplit<1> for InvertedStiff {
    fn stiff_hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[-1.0]]
    }
}

/// Central differences of each level against the next (gradient, total and stiff Hessians).
#[test]
fn hand_written_derivatives_are_consistent() {
    fn check<P: StiffSplit<2>>(p: &P, stiff_part: impl Fn(&[f64; 2]) -> [f64; 2], q: [f64; 2]) {
        let d = 1e-5;
        let g = p.gradient(&q);
        let h = p.hessian(&q);
        let hs = p.stiff_hessian(&q);
        for i in 0..2 {
            let (mut qp, mut qm) = (q, q);
            qp[i] += d;
            qm[i] -= d;
            let fd = (p.potential(&qp) - p.potential(&qm)) / (2.0 * d);
            assert!((fd - g[i]).abs() < 1e-6, "gradient {i}: {fd} {}", g[i]);
            let (gp, gm) = (p.gradient(&qp), p.gradient(&qm));
            let (sp, sm) = (stiff_part(&qp), stiff_part(&qm));
            for j in 0..2 {
                let fd = (gp[j] - gm[j]) / (2.0 * d);
                assert!((fd - h[i][j]).abs() < 1e-5, "H {i}{j}: {fd} {}", h[i][j]);
                let fd = (sp[j] - sm[j]) / (2.0 * d);
                assert!((fd - hs[i][j]).abs() < 1e-5, "H1 {i}{j}: {fd} {}", hs[i][j]);
            }
        }
    }
    let spring = Spring { kappa: 7.0 };
    check(
        &spring,
        |q| {
            let d = 7.0 * (q[0] - q[1]);
            [d, -d]
        },
        [0.8, -0.5],
    );
    check(&RING, |q| RING.v1_gradient(q), [0.8, -0.5]);
}

// ---------------------------------------------------------------------------------------------
// Helpers.

fn assert_order_2<P: StiffSplit<2>>(name: &str, p: &P, beta: f64, t_end: f64, h0: f64) {
    let reference = rk4_reference(p, S2, t_end, 40_000);
    let hs: Vec<f64> = (0..4).map(|k| h0 / f64::powi(2.0, k)).collect();
    let errs: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let n = (t_end / h).round() as usize;
            max_diff(
                &advance(&mut ZhangSkeelStiff::new(beta, h), p, S2, n),
                &reference,
            )
        })
        .collect();
    let k = slope(&hs, &errs);
    let shown: Vec<String> = errs.iter().map(|e| format!("{e:.3e}")).collect();
    eprintln!("order {name}: slope {k:.4}, errors [{}]", shown.join(", "));
    assert!((k - 2.0).abs() < 0.1, "{name}: slope {k}, errors {errs:?}");
}

const S2: State<2> = State {
    q: [0.8, -0.5],
    v: [0.3, 0.6],
    t: 0.0,
};

// ---------------------------------------------------------------------------------------------
// Properties.

#[test]
fn order_two() {
    for beta in [0.25, 0.4] {
        assert_order_2(
            &format!("Z&Ss-stiff spring kappa=10 beta={beta}"),
            &Spring { kappa: 10.0 },
            beta,
            3.0,
            0.05,
        );
        assert_order_2(
            &format!("Z&Ss-stiff ring kappa=5 beta={beta}"),
            &RING,
            beta,
            3.0,
            0.05,
        );
    }
}

fn reversibility_error<P: StiffSplit<2>>(p: &P, h: f64, n: usize) -> f64 {
    verify::reversibility_error(ZhangSkeelStiff::new(0.4, h), p, S2, n, 0.1)
}

#[test]
fn reversible() {
    let e_spring = reversibility_error(&Spring { kappa: 10.0 }, 0.1, 10);
    let e_ring = reversibility_error(&RING, 0.1, 10);
    let e_stiff = reversibility_error(&Spring { kappa: 1e4 }, 0.1, 10);
    eprintln!(
        "Z&Ss-stiff reversibility (10 steps of h = 0.1 and back): spring {e_spring:.2e}, ring \
         {e_ring:.2e}, spring kappa=1e4 {e_stiff:.2e}"
    );
    assert!(e_spring <= 1e-12 && e_ring <= 1e-12 && e_stiff <= 1e-12);
}

/// All of `V` declared stiff: eq. 19 is eq. 18 (Z&Ss), bit for bit. Nothing stiff: the solve is
/// `M a = −∇V` and the method is velocity Verlet (to rounding: the two order their operations
/// differently).
#[test]
fn the_two_limits_of_the_split() {
    let (mut zss, mut stiff) = (
        ZhangSkeelSimplified::new(0.4, 0.1),
        ZhangSkeelStiff::new(0.4, 0.1),
    );
    let all = Resplit { all_stiff: true };
    let (mut a, mut b) = (S2, S2);
    for _ in 0..200 {
        zss.step(&all, &mut a).unwrap();
        stiff.step(&all, &mut b).unwrap();
        assert_eq!(a, b);
    }
    let none = Resplit { all_stiff: false };
    let (mut vv, mut stiff) = (VelocityVerlet::new(0.05), ZhangSkeelStiff::new(0.4, 0.05));
    let (mut a, mut b) = (S2, S2);
    let mut worst = 0.0f64;
    for _ in 0..200 {
        vv.step(&none, &mut a).unwrap();
        stiff.step(&none, &mut b).unwrap();
        worst = worst.max(max_diff(&a, &b));
    }
    eprintln!("Z&Ss-stiff with V1 = 0 vs velocity Verlet, 200 steps: {worst:.2e}");
    assert!(worst < 1e-12, "{worst:e}");
}

/// The point of eq. 19: with a quadratic stiff part, steps far beyond Verlet's limit stay
/// bounded for β > ¼ (paper §2.3, footnote 2), and do not for β < ¼.
#[test]
fn stable_at_large_steps_with_a_stiff_spring() {
    // κ = 10⁴: the stiff mode has ω² = κ(1/m0 + 1/m1) ≈ 1.67e4, ω ≈ 129; h = 0.1 is hω ≈ 13.
    let p = Spring { kappa: 1e4 };
    let s0 = State::new([0.8, 0.79], [0.3, 0.6]);
    let energy = |s: &State<2>| s.kinetic_energy(&p.masses()) + p.potential(&s.q);
    let e0 = energy(&s0);
    // Largest |E − E0| / |E0| over the first and over the last tenth of `n` steps (infinite if
    // a step failed).
    let run = |stepper: &mut dyn Stepper<Spring, [f64; 2]>, n: usize| -> (f64, f64) {
        let mut s = s0;
        let (mut first, mut last) = (0.0f64, 0.0f64);
        for k in 0..n {
            if stepper.step(&p, &mut s).is_err() {
                return (f64::INFINITY, f64::INFINITY);
            }
            let de = (energy(&s) - e0).abs() / e0.abs();
            if k < n / 10 {
                first = first.max(de);
            }
            if k >= n - n / 10 {
                last = last.max(de);
            }
        }
        (first, last)
    };
    let (first, last) = run(&mut ZhangSkeelStiff::new(0.4, 0.1), 10_000);
    let (_, unstable) = run(&mut ZhangSkeelStiff::new(0.2, 0.1), 200);
    let (_, verlet) = run(&mut VelocityVerlet::new(0.1), 200);
    eprintln!(
        "stiff spring, h = 0.1 (hω ≈ 13), E0 = {e0:.3}: Z&Ss-stiff β = 0.4 max |ΔE|/E0 over \
         the first 10³ of 10⁴ steps {first:.3e}, over the last 10³ {last:.3e}; after 200 steps \
         β = 0.2 {unstable:.3e}, Verlet {verlet:.3e}"
    );
    // The true energy is not conserved at hω ≫ 1 (the stiff mode is integrated at a modified
    // frequency ω/sqrt(1 + βh²ω²)), but it stays bounded, with no drift between the first and
    // the last thousand steps; β < ¼ and Verlet blow up.
    assert!(last.is_finite() && last < 10.0, "{last}");
    assert!(last < 2.0 * first, "drift: {first} → {last}");
    assert!(unstable > 1e6, "{unstable}");
    assert!(verlet > 1e6, "{verlet}");
}

// ---------------------------------------------------------------------------------------------
// Errors and bookkeeping.

#[test]
fn error_paths_leave_the_state_untouched() {
    for h in [0.0, f64::NAN] {
        let mut st = ZhangSkeelStiff::new(0.25, h);
        let s0 = State::at([0.3], [0.1], 1.5);
        let mut s = s0;
        let e = st.step(&InvertedStiff, &mut s).unwrap_err();
        assert!(
            matches!(
                e,
                StepError {
                    step: 0,
                    kind: StepErrorKind::InvalidStepSize { .. },
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(s, s0);
    }
    // 1 + βh²·(−1) = 0 with β = ¼, h = 2.
    let mut st = ZhangSkeelStiff::new(0.25, 2.0);
    let s0 = State::new([0.3], [0.1]);
    let mut s = s0;
    let e = st.step(&InvertedStiff, &mut s).unwrap_err();
    assert!(
        matches!(
            e,
            StepError {
                step: 0,
                kind: StepErrorKind::Solve(SolveFailure::Singular { n: 1, .. }),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(s, s0);
    // A NaN gradient beyond q = 10, met on a later step.
    let mut st = ZhangSkeelStiff::new(0.25, 1.0);
    let mut s = State::new([1.0], [2.0]);
    let e = loop {
        let before = s;
        match st.step(&InvertedStiff, &mut s) {
            Ok(()) => assert!(st.steps_taken() < 100),
            Err(e) => {
                assert_eq!(s, before);
                break e;
            }
        }
    };
    eprintln!("{e}");
    assert!(
        matches!(
            e,
            StepError {
                kind: StepErrorKind::NonFinite(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.step() > 0);
    assert_eq!(e.step(), st.steps_taken());
}

#[test]
fn cache_is_exact_and_counted() {
    let p = Spring { kappa: 10.0 };
    let (mut a, mut b) = (
        ZhangSkeelStiff::new(0.4, 0.1),
        ZhangSkeelStiff::new(0.4, 0.1),
    );
    let (mut sa, mut sb) = (S2, S2);
    for _ in 0..30 {
        a.step(&p, &mut sa).unwrap();
        b.reset();
        b.step(&p, &mut sb).unwrap();
        assert_eq!(sa, sb);
    }
    let st = a.stats();
    assert_eq!((st.evaluations, st.cache_hits), (31, 29));
    assert_eq!(st.cholesky_solves + st.lu_fallbacks, 31);
    assert_eq!(b.stats().evaluations, 60);
    a.set_h(-0.1);
    a.step(&p, &mut sa).unwrap();
    assert_eq!(a.stats().cache_hits, 30, "h → −h keeps a(x; h²)");
    a.set_beta(0.3);
    a.step(&p, &mut sa).unwrap();
    assert_eq!(a.stats().cache_hits, 30, "a new β drops it");
    assert_eq!((a.beta(), a.h()), (0.3, -0.1));
    assert_eq!(Clocked::name(&a), "zhang-skeel-stiff");
}
