//! Error paths, caching and bookkeeping of the integrators: a failed step leaves the state
//! untouched and reports the failing step's index and start time; the cached `f_k` is exact
//! (bit-for-bit the same trajectory as fresh evaluations); statistics count what happened.

use crate::support::fixtures::NanBeyondOne;
use zs_runtime::{
    Clocked, Potential, Quantity, SolveFailure, State, StepError, StepErrorKind, Stepper,
    VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified,
};

/// `V = ½ k(q0) q1²` with `k = +1` for `q0 < 5` and `k = -1` beyond: `q0` drifts freely, and with
/// `βh² = 1` (β = 1/4, h = 2) the matrix `M + βh²H = diag(1, 1 + k)` becomes exactly singular
/// once `q0 ≥ 5`. Starting at `q0 = 0` with `v0 = 1`, the positions are 0, 2, 4, 6: the step
/// from `t = 4` (index 2) must fail while evaluating `f` at `q0 = 6`.
struct CurvatureSwitch;

impl CurvatureSwitch {
    fn k(q: &[f64; 2]) -> f64 {
        if q[0] < 5.0 { 1.0 } else { -1.0 }
    }
}

impl Potential<2> for CurvatureSwitch {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        0.5 * Self::k(q) * q[1] * q[1]
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        [0.0, Self::k(q) * q[1]]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0, 0.0], [0.0, Self::k(q)]]
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        [0.0, 0.0]
    }
}

/// `V = ½(q0² + q1²) + c q0 q1 + 0.1 q0³`: indefinite Hessian for `|c| > 1`, and a non-zero third
/// derivative so Z&S and Z&Ss differ.
struct Saddle {
    c: f64,
}

impl Potential<2> for Saddle {
    fn masses(&self) -> [f64; 2] {
        [1.0, 2.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        0.5 * (q[0] * q[0] + q[1] * q[1]) + self.c * q[0] * q[1] + 0.1 * q[0].powi(3)
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        [
            q[0] + self.c * q[1] + 0.3 * q[0] * q[0],
            q[1] + self.c * q[0],
        ]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        [[1.0 + 0.6 * q[0], self.c], [self.c, 1.0]]
    }
    fn third_contraction(&self, _: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        [0.6 * a[0] * a[0], 0.0]
    }
}

fn bits<const N: usize>(s: &State<N>) -> Vec<u64> {
    s.q.iter()
        .chain(s.v.iter())
        .chain(std::iter::once(&s.t))
        .map(|x| x.to_bits())
        .collect()
}

/// Steps `stepper` until it fails; returns the error, checking the failed step changed nothing.
fn step_until_error<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    stepper: &mut S,
    p: &P,
    state: &mut State<N>,
    max_steps: usize,
) -> StepError {
    for _ in 0..max_steps {
        let before = *state;
        let done = stepper.steps_taken();
        match stepper.step(p, state) {
            Ok(()) => assert_eq!(stepper.steps_taken(), done + 1),
            Err(e) => {
                assert_eq!(
                    bits(state),
                    bits(&before),
                    "a failed step modified the state"
                );
                assert_eq!(stepper.steps_taken(), done, "a failed step was counted");
                assert_eq!(e.step(), done, "wrong step index in {e}");
                return e;
            }
        }
    }
    panic!("no error in {max_steps} steps");
}

#[test]
fn singular_matrix_is_reported_with_the_failing_step() {
    for third in [true, false] {
        let mut state = State::new([0.0, 0.5], [1.0, 0.0]);
        let e = if third {
            step_until_error(
                &mut ZhangSkeel::new(0.25, 2.0),
                &CurvatureSwitch,
                &mut state,
                10,
            )
        } else {
            step_until_error(
                &mut ZhangSkeelSimplified::new(0.25, 2.0),
                &CurvatureSwitch,
                &mut state,
                10,
            )
        };
        match e {
            StepError {
                step,
                t,
                kind:
                    StepErrorKind::Solve(SolveFailure::Singular {
                        n,
                        pivot,
                        max_pivot,
                        ..
                    }),
                ..
            } => {
                assert_eq!((step, t, n), (2, 4.0, 2), "{e}");
                assert_eq!(pivot, 0.0);
                assert_eq!(max_pivot, 1.0);
            }
            other => panic!("expected SingularMatrix, got {other:?}"),
        }
        assert_eq!(state.q[0], 4.0);
        // The message names the step.
        assert!(e.to_string().starts_with("step 2 (t = 4)"), "{e}");
    }
}

#[test]
fn non_finite_is_reported_with_the_failing_step() {
    // q = 0.25 k: the step from q = 1.0 (index 4, t = 1.0) lands on 1.25 where ∇V is NaN.
    let s0 = State::new([0.0], [1.0]);
    let mut s = s0;
    let e = step_until_error(&mut ZhangSkeel::new(0.4, 0.25), &NanBeyondOne, &mut s, 10);
    assert_eq!(e, StepError::non_finite(4, 1.0, Quantity::Gradient));
    let mut s = s0;
    let e = step_until_error(
        &mut ZhangSkeelSimplified::new(0.4, 0.25),
        &NanBeyondOne,
        &mut s,
        10,
    );
    assert_eq!(e.step(), 4);
    let mut s = s0;
    let e = step_until_error(&mut VelocityVerlet::new(0.25), &NanBeyondOne, &mut s, 10);
    assert_eq!(e, StepError::non_finite(4, 1.0, Quantity::Gradient));
    // A non-finite state is reported too (here through its gradient), not propagated.
    let mut s = State::new([f64::INFINITY], [0.0]);
    let e = ZhangSkeel::new(0.4, 0.1)
        .step(&Saddle { c: 0.0 }.into_1d(), &mut s)
        .unwrap_err();
    assert!(
        matches!(
            e,
            StepError {
                step: 0,
                kind: StepErrorKind::NonFinite(_),
                ..
            }
        ),
        "{e:?}"
    );
}

/// Project `Saddle` onto its first coordinate (helper for 1-DOF checks).
struct FirstCoordinate(Saddle);
impl Saddle {
    fn into_1d(self) -> FirstCoordinate {
        FirstCoordinate(self)
    }
}
impl Potential<1> for FirstCoordinate {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        self.0.potential(&[q[0], 0.0])
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [self.0.gradient(&[q[0], 0.0])[0]]
    }
    fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] {
        [[self.0.hessian(&[q[0], 0.0])[0][0]]]
    }
    fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
        [self.0.third_contraction(&[q[0], 0.0], &[a[0], 0.0])[0]]
    }
}

#[test]
fn invalid_step_size_is_reported() {
    let p = Saddle { c: 0.5 };
    for h in [0.0, -0.0, f64::NAN, f64::INFINITY] {
        let s0 = State::at([0.1, 0.2], [0.0, 0.0], 3.0);
        let mut s = s0;
        let e = ZhangSkeel::new(0.4, h).step(&p, &mut s).unwrap_err();
        assert!(
            matches!(e, StepError { step: 0, t: 3.0, kind: StepErrorKind::InvalidStepSize { h: hh } } if hh.to_bits() == h.to_bits()),
            "{e:?}"
        );
        assert_eq!(bits(&s), bits(&s0));
        let e = ZhangSkeelSimplified::new(0.4, h)
            .step(&p, &mut s)
            .unwrap_err();
        assert!(matches!(
            e,
            StepError {
                kind: StepErrorKind::InvalidStepSize { .. },
                ..
            }
        ));
        let e = VelocityVerlet::new(h).step(&p, &mut s).unwrap_err();
        assert!(matches!(
            e,
            StepError {
                kind: StepErrorKind::InvalidStepSize { .. },
                ..
            }
        ));
        assert_eq!(bits(&s), bits(&s0));
    }
}

#[test]
fn cache_gives_the_same_trajectory_as_fresh_evaluations() {
    let p = Saddle { c: 0.5 };
    let s0 = State::new([0.3, -0.2], [0.1, 0.4]);
    let (mut cached, mut fresh) = (s0, s0);
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    for _ in 0..50 {
        zs.step(&p, &mut cached).unwrap();
        let mut z = ZhangSkeel::new(0.4, 0.1);
        z.step(&p, &mut fresh).unwrap();
    }
    assert_eq!(bits(&cached), bits(&fresh));
    let st = zs.stats();
    assert_eq!(
        st.evaluations, 51,
        "one evaluation per step plus the first: {st:?}"
    );
    assert_eq!(st.cache_hits, 49);

    // Interleaving two states on one stepper: the cache misses and recomputes, never mixes.
    let (mut a, mut b) = (s0, State::new([-0.4, 0.1], [0.0, 0.0]));
    let (mut a_ref, mut b_ref) = (a, b);
    let mut shared = ZhangSkeelSimplified::new(0.4, 0.1);
    let (mut za, mut zb) = (
        ZhangSkeelSimplified::new(0.4, 0.1),
        ZhangSkeelSimplified::new(0.4, 0.1),
    );
    for _ in 0..20 {
        shared.step(&p, &mut a).unwrap();
        shared.step(&p, &mut b).unwrap();
        za.step(&p, &mut a_ref).unwrap();
        zb.step(&p, &mut b_ref).unwrap();
    }
    assert_eq!(bits(&a), bits(&a_ref));
    assert_eq!(bits(&b), bits(&b_ref));
    assert_eq!(shared.stats().cache_hits, 0);

    // Changing the velocity only keeps the (position-only) cache valid; changing h recomputes.
    let mut s = s0;
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    zs.step(&p, &mut s).unwrap();
    s.v = [1.0, -1.0];
    zs.step(&p, &mut s).unwrap();
    assert_eq!(zs.stats().cache_hits, 1);
    zs.set_h(0.05);
    zs.step(&p, &mut s).unwrap();
    assert_eq!(zs.stats().cache_hits, 1);
    // h → -h keeps h², so the cache is reused.
    zs.set_h(-0.05);
    zs.step(&p, &mut s).unwrap();
    assert_eq!(zs.stats().cache_hits, 2);
    // reset() forgets it.
    zs.reset();
    zs.step(&p, &mut s).unwrap();
    assert_eq!(zs.stats().cache_hits, 2);
}

#[test]
fn different_potential_needs_reset() {
    // Documented behaviour: the cache key is (q, h²), not the potential.
    let (p1, p2) = (Saddle { c: 0.5 }, Saddle { c: -0.3 });
    let s0 = State::new([0.3, -0.2], [0.1, 0.4]);
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    let mut s = s0;
    zs.step(&p1, &mut s).unwrap();
    let mid = s;
    zs.reset();
    zs.step(&p2, &mut s).unwrap();
    let mut expected = mid;
    ZhangSkeel::new(0.4, 0.1).step(&p2, &mut expected).unwrap();
    assert_eq!(bits(&s), bits(&expected));
}

#[test]
fn indefinite_matrix_falls_back_to_lu_and_is_counted() {
    // βh²c = 0.4·1·5 = 2: M + βh²H = [[1.4 + 0.24 q0, 2], [2, 2.4]] has determinant
    // 2.4 (1.4 + 0.24 q0) - 4 < 0, i.e. is indefinite, for q0 < 1.1.
    let p = Saddle { c: 5.0 };
    let mut s = State::new([0.01, -0.02], [0.0, 0.0]);
    let mut zs = ZhangSkeel::new(0.4, 1.0);
    zs.step(&p, &mut s).unwrap();
    assert!(s.q[0] < 1.0, "{s:?}");
    let st = zs.stats();
    assert_eq!((st.lu_fallbacks, st.cholesky_solves), (2, 0), "{st:?}");
    assert_eq!(zs.lu_fallbacks(), 2);
    assert_eq!(st.lu_fallbacks + st.cholesky_solves, st.evaluations);
    // Small h: SPD, Cholesky.
    let mut zs = ZhangSkeel::new(0.4, 0.01);
    let mut s = State::new([0.01, -0.02], [0.0, 0.0]);
    zs.step(&p, &mut s).unwrap();
    assert_eq!((zs.stats().cholesky_solves, zs.lu_fallbacks()), (2, 0));
}

#[test]
fn zhang_skeel_step_matches_equation_3_by_hand() {
    // One step on a 1-DOF cubic potential written out by hand: V = q³/3 (V' = q², H = 2q, V''' =
    // 2).
    struct Cubic;
    impl Potential<1> for Cubic {
        fn masses(&self) -> [f64; 1] {
            [2.0]
        }
        fn potential(&self, q: &[f64; 1]) -> f64 {
            q[0].powi(3) / 3.0
        }
        fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
            [q[0] * q[0]]
        }
        fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] {
            [[2.0 * q[0]]]
        }
        fn third_contraction(&self, _: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
            [2.0 * a[0] * a[0]]
        }
    }
    let (beta, h, m) = (0.3, 0.2, 2.0);
    let f = |x: f64, third: bool| {
        let a = -x * x / (m + beta * h * h * 2.0 * x);
        if third {
            a - 0.5 * beta * beta * h.powi(4) * 2.0 * a * a / m
        } else {
            a
        }
    };
    for third in [true, false] {
        let (x0, v0) = (0.7, -0.3);
        let x1 = x0 + h * v0 + 0.5 * h * h * f(x0, third);
        let v1 = v0 + 0.5 * h * (f(x0, third) + f(x1, third));
        let mut s = State::new([x0], [v0]);
        if third {
            ZhangSkeel::new(beta, h).step(&Cubic, &mut s).unwrap();
        } else {
            ZhangSkeelSimplified::new(beta, h)
                .step(&Cubic, &mut s)
                .unwrap();
        }
        assert!((s.q[0] - x1).abs() < 1e-15 && (s.v[0] - v1).abs() < 1e-15);
        assert_eq!(s.t, h);
    }
}

#[test]
fn accessors_and_stepper_trait() {
    let mut zs = ZhangSkeel::<[f64; 2]>::new(0.4, 0.1);
    assert_eq!((zs.beta(), zs.h(), zs.steps_taken()), (0.4, 0.1, 0));
    zs.set_beta(0.3);
    assert_eq!(zs.beta(), 0.3);
    fn name<S: Stepper<Saddle, [f64; 2]>>(s: &S) -> &'static str {
        s.name()
    }
    assert_eq!(name(&zs), "zhang-skeel");
    assert_eq!(
        name(&ZhangSkeelSimplified::new(0.4, 0.1)),
        "zhang-skeel-simplified"
    );
    assert_eq!(name(&VelocityVerlet::new(0.1)), "velocity-verlet");
    // Through a trait object.
    let mut steppers: Vec<Box<dyn Stepper<Saddle, [f64; 2]>>> = vec![
        Box::new(ZhangSkeel::new(0.4, 0.1)),
        Box::new(ZhangSkeelSimplified::new(0.4, 0.1)),
        Box::new(VelocityVerlet::new(0.1)),
    ];
    for st in &mut steppers {
        let mut s = State::new([0.1, 0.0], [0.0, 0.0]);
        st.step(&Saddle { c: 0.2 }, &mut s).unwrap();
        assert_eq!(st.steps_taken(), 1);
        assert_eq!(s.t, 0.1);
    }
    // A `dyn Potential` target works too.
    let p: &dyn Potential<2> = &Saddle { c: 0.2 };
    let mut s = State::new([0.1, 0.0], [0.0, 0.0]);
    ZhangSkeel::new(0.4, 0.1).step(p, &mut s).unwrap();
}
