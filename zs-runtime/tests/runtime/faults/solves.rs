//! Failed solves: a singular or ill-conditioned matrix, an iteration (Newton, SHAKE) that
//! does not converge — each stops the run at the last good state with a typed error.

use super::*;

#[test]
fn singular_matrix_stops_the_run_at_the_last_good_state() {
    let sys = Switch { k_after: -1.0 };
    let path = temp_path("singular.csv");
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut s = S0;
    let mut zs = ZhangSkeel::new(0.25, 2.0);
    let summary = run(&mut zs, &sys, &mut s, 20.0, &mut [&mut csv]);
    let failure = summary.failure().expect("the run fails");
    match failure.error {
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
            assert_eq!((step, t, n), (2, 4.0, 2));
            // diag(1, 1 + (-1)) exactly: smallest pivot 0, largest 1.
            assert_eq!((pivot, max_pivot), (0.0, 1.0));
        }
        ref other => panic!("expected SingularMatrix, got {other:?}"),
    }
    let good = by_hand(ZhangSkeel::new(0.25, 2.0), &sys, S0, 2);
    assert_eq!(bits(&s), bits(&good));
    assert_eq!(bits(&failure.last_good), bits(&good));
    assert_eq!(
        (failure.steps, summary.steps, summary.planned_steps),
        (2, 2, 10)
    );
    assert_eq!(zs.steps_taken(), 2);
    // The CSV holds the initial state and the two good steps, under its final name, and the
    // sidecar says it ended early, and why.
    let r = rows(&path);
    assert_eq!(r.len(), 3);
    assert_eq!(r[2][..3], [good.t, good.q[0], good.q[1]]);
    let marker = std::fs::read_to_string(incomplete_marker_of(&path)).unwrap();
    assert!(
        marker.starts_with("ended early [singular-matrix]: step 2 (t = 4)"),
        "{marker}"
    );
    assert_eq!(marker.lines().count(), 1);
    assert!(!Path::new(&format!("{}.tmp", path.display())).exists());
    // The message of the failure names the step, the kind and the last good state.
    let text = failure.to_string();
    assert!(text.contains("singular"), "{text}");
    assert!(text.ends_with("last good state: step 2, t = 4"), "{text}");
}

#[test]
fn near_singular_matrix_beyond_the_condition_limit_is_reported_with_its_estimate() {
    // 1 + k_after = 1e-10 (to rounding): κ₁ = 1/(1 + k_after) ≈ 1e10, 16 orders above the
    // working-precision test, so only the user's limit stops it.
    let sys = Switch {
        k_after: -(1.0 - 1e-10),
    };
    let kappa = 1.0 / (1.0 + sys.k_after);
    // Without a limit the run goes through.
    let mut s = S0;
    let summary = run(&mut ZhangSkeel::new(0.25, 2.0), &sys, &mut s, 8.0, &mut []);
    assert!(summary.is_ok(), "{:?}", summary.error);
    for limit in [1e8, 1e9] {
        let mut s = S0;
        let mut zs = ZhangSkeel::new(0.25, 2.0).with_max_condition(limit);
        assert_eq!(zs.max_condition(), limit);
        let summary = run(&mut zs, &sys, &mut s, 8.0, &mut []);
        match summary.error {
            Some(StepError {
                step,
                t,
                kind:
                    StepErrorKind::Solve(SolveFailure::IllConditioned {
                        n,
                        condition,
                        limit: l,
                        ..
                    }),
                ..
            }) => {
                assert_eq!((step, t, n, l), (2, 4.0, 2, limit));
                // Diagonal matrix: the Hager-Higham estimate is exact.
                assert_eq!(condition, kappa);
            }
            ref other => panic!("expected IllConditioned, got {other:?}"),
        }
        assert_eq!(
            bits(&s),
            bits(&by_hand(ZhangSkeel::new(0.25, 2.0), &sys, S0, 2))
        );
    }
    // Z&Ss shares the engine; a limit above κ lets the run through with the same bits as no
    // limit at all.
    let (mut a, mut b) = (S0, S0);
    run(
        &mut ZhangSkeelSimplified::new(0.25, 2.0),
        &sys,
        &mut a,
        8.0,
        &mut [],
    );
    let mut limited = ZhangSkeelSimplified::new(0.25, 2.0).with_max_condition(1e11);
    assert!(run(&mut limited, &sys, &mut b, 8.0, &mut []).is_ok());
    assert_eq!(bits(&a), bits(&b));
}

#[test]
fn wrapped_steppers_report_inner_faults_under_their_own_step_index() {
    let sys = Switch {
        k_after: -(1.0 - 1e-10),
    };
    // Yoshida4 takes three inner steps per step (its index is a third of the inner one's), of
    // sizes w1·h, w0·h, w1·h: h = 2/w1 gives the forward substeps the h = 2 of `Switch`.
    let h = 2.0 / zs_runtime::integrators::composition::YOSHIDA4_W1;
    let (k, e, good) = first_failure(
        Yoshida4::new(ZhangSkeel::new(0.25, h).with_max_condition(1e8)),
        &sys,
        S0,
        100,
    );
    assert!(
        matches!(
            e,
            StepError {
                kind: StepErrorKind::Solve(SolveFailure::IllConditioned { .. }),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!((e.step(), e.t()), (k, good.t));
    let mut s = S0;
    let mut y = Yoshida4::new(ZhangSkeel::new(0.25, h).with_max_condition(1e8));
    let summary = run(&mut y, &sys, &mut s, 40.0, &mut []);
    assert_eq!(summary.error, Some(e));
    assert_eq!(bits(&s), bits(&good));
    // Langevin (no friction, no noise: the inner trajectory) likewise.
    let inner = ZhangSkeel::new(0.25, 2.0).with_max_condition(1e8);
    let (k, e, _) = first_failure(Langevin::new(inner, 0.0, 0.0, 1), &sys, S0, 100);
    assert!(
        matches!(
            e,
            StepError {
                kind: StepErrorKind::Solve(SolveFailure::IllConditioned { .. }),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!((k, e.step()), (2, 2));
}

#[test]
fn solver_not_converged_is_reported_with_iterations_and_residual() {
    let mut s = State::new([0.0], [1.0]);
    let mut stepper = Faulty::new(None, Some(7));
    let summary = run(&mut stepper, &NanBeyondOne, &mut s, 10.0, &mut []);
    let failure: RunFailure<[f64; 1]> = summary.failure().unwrap();
    match failure.error {
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
            assert_eq!(
                (step, t, solver, iterations, residual),
                (7, 3.5, "stub Newton", 50, 3.5e-3)
            );
        }
        ref other => panic!("expected NotConverged, got {other:?}"),
    }
    assert_eq!(bits(&s), bits(&State::at([3.5], [1.0], 3.5)));
    assert_eq!(failure.last_good, s);
    assert_eq!(failure.error.code(), "not-converged");
    let text = failure.error.to_string();
    assert_eq!(
        text,
        "step 7 (t = 3.5): stub Newton did not converge in 50 iterations (residual 3.5e-3)"
    );
}

/// The first step at which `stepper` fails, by hand: its index, its error and the state
/// before it.
fn first_failure<P: ?Sized, S: Stepper<P, [f64; N]>, const N: usize>(
    mut stepper: S,
    target: &P,
    mut s: State<N>,
    max_steps: u64,
) -> (u64, StepError, State<N>) {
    for k in 0..max_steps {
        let before = s;
        if let Err(e) = stepper.step(target, &mut s) {
            assert_eq!(
                bits(&s),
                bits(&before),
                "the stepper left the state untouched"
            );
            return (k, e, before);
        }
    }
    panic!("no failure in {max_steps} steps");
}

/// `V = ½q²` for `q < 1`, hardening beyond: `+ 50 (q - 1)⁴` (C³ at 1). Newton on Newmark's
/// `F(q) = M(q - c) + βh²∇V(q)` is exact in one iteration while `F` is linear.
struct Hardening;

impl Potential<1> for Hardening {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        let d = (q[0] - 1.0).max(0.0);
        0.5 * q[0] * q[0] + 50.0 * d.powi(4)
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        let d = (q[0] - 1.0).max(0.0);
        [q[0] + 200.0 * d.powi(3)]
    }
    fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] {
        let d = (q[0] - 1.0).max(0.0);
        [[1.0 + 600.0 * d * d]]
    }
    fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
        let d = (q[0] - 1.0).max(0.0);
        [1200.0 * d * a[0] * a[0]]
    }
}

#[test]
fn newmark_newton_not_converged_stops_the_run_at_the_last_good_state() {
    // One Newton iteration allowed: enough while V is quadratic, not once q passes 1.
    let make = || Newmark::new(0.25, 0.1).with_max_iterations(1);
    let s0 = State::new([0.0], [2.0]);
    let (k, expected, good) = first_failure(make(), &Hardening, s0, 1000);
    eprintln!("Newmark (Newton, cap 1) first fails at step {k}");
    assert!(k >= 3, "some steps converge before the failure (k = {k})");
    match expected {
        StepError {
            kind:
                StepErrorKind::NotConverged {
                    solver,
                    iterations,
                    residual,
                    ..
                },
            ..
        } => {
            assert_eq!((solver, iterations), ("Newmark Newton", 1));
            assert!(residual > make().tolerance(), "{residual}");
        }
        ref other => panic!("expected NotConverged, got {other:?}"),
    }
    let mut s = s0;
    let path = temp_path("newmark.csv");
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let summary = run(&mut make(), &Hardening, &mut s, 100.0, &mut [&mut csv]);
    // The driver reports the stepper's error as is: index, time, iterations, residual.
    assert_eq!(summary.error, Some(expected.clone()));
    assert_eq!((expected.step(), expected.t()), (k, good.t));
    assert_eq!(bits(&s), bits(&good));
    assert_eq!(rows(&path).len() as u64, k + 1);
    assert!(
        std::fs::read_to_string(incomplete_marker_of(&path))
            .unwrap()
            .contains("Newmark Newton did not converge in 1 iterations")
    );
}

/// A pendulum of length 1 under gravity, `V = y`, `g(q) = |q|² - 1`, for SHAKE.
struct Hanging;

impl Potential<2> for Hanging {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn gradient(&self, _: &[f64; 2]) -> [f64; 2] {
        [0.0, 1.0]
    }
    fn hessian(&self, _: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0; 2]; 2]
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        [0.0; 2]
    }
}

impl MechanicalSystem<2, 1> for Hanging {
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        Ring.constraints(q)
    }
    fn constraint_jacobian(&self, q: &[f64; 2]) -> [[f64; 2]; 1] {
        Ring.constraint_jacobian(q)
    }
    fn penalized_potential(&self, omega: f64, q: &[f64; 2]) -> f64 {
        q[1] + Ring.penalized_potential(omega, q)
    }
    fn penalized_gradient(&self, omega: f64, q: &[f64; 2]) -> [f64; 2] {
        let g = Ring.penalized_gradient(omega, q);
        [g[0], 1.0 + g[1]]
    }
    fn penalized_hessian(&self, omega: f64, q: &[f64; 2]) -> [[f64; 2]; 2] {
        Ring.penalized_hessian(omega, q)
    }
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        Ring.penalized_third_contraction(omega, q, a)
    }
}

#[test]
fn shake_not_converged_stops_the_run_at_the_last_good_state() {
    // Two Newton iterations per solve: enough while the pendulum is slow, not once it swings
    // fast (the predictor leaves the circle by O(h²v²)).
    let make = || {
        Shake::new(0.2)
            .with_solver(ShakeSolver::Newton)
            .with_max_iterations(2)
            .with_tolerance(1e-13)
    };
    let s0 = State::new([1.0, 0.0], [0.0, 0.0]);
    let (k, expected, good) = first_failure(make(), &Hanging, s0, 1000);
    assert!(k >= 1, "some steps converge before the failure (k = {k})");
    match expected {
        StepError {
            kind:
                StepErrorKind::NotConverged {
                    solver,
                    iterations,
                    residual,
                    ..
                },
            ..
        } => {
            assert_eq!((solver, iterations), ("SHAKE", 2));
            assert!(residual > 1e-13, "{residual}");
        }
        ref other => panic!("expected NotConverged, got {other:?}"),
    }
    let mut s = s0;
    let summary = run(&mut make(), &Hanging, &mut s, 100.0, &mut []);
    assert_eq!(summary.error, Some(expected));
    assert_eq!(summary.steps, k);
    assert_eq!(bits(&s), bits(&good));
    eprintln!("SHAKE (Newton, cap 2) first fails at step {k}");
}
