//! Numerical faults: every kind of failed step stops the driver cleanly with a typed error that
//! carries the failing step's index, leaves the caller's state bit-for-bit equal to the last
//! good state, and leaves the observers (the CSV file included) with exactly the states up to
//! it. No fault panics.

use std::path::{Path, PathBuf};

use crate::support::fixtures::NanBeyondOne;
use crate::support::fixtures::Spring;
use zs_runtime::driver::{run, RunFailure};
use zs_runtime::guards::{ConstraintGuard, EnergyGuard, CONSTRAINT_RESIDUAL, ENERGY_DRIFT};
use zs_runtime::observers::{total_energy, FnObserver, Observer};
use zs_runtime::output::incomplete_marker_of;
use zs_runtime::{
    Clock, Clocked, CsvRecorder, Langevin, MechanicalSystem, Newmark, Potential, Quantity, Shake,
    ShakeSolver, SolveFailure, State, StepError, StepErrorKind, Stepper, VelocityVerlet, Yoshida4,
    ZhangSkeel, ZhangSkeelSimplified,
};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-runtime-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn bits<const N: usize>(s: &State<N>) -> Vec<u64> {
    s.q.iter()
        .chain(&s.v)
        .chain([&s.t])
        .map(|x| x.to_bits())
        .collect()
}

/// `k` steps of `stepper` by hand: the reference for "the last good state".
fn by_hand<P: ?Sized, S: Stepper<P, [f64; N]>, const N: usize>(
    mut stepper: S,
    target: &P,
    mut s: State<N>,
    k: u64,
) -> State<N> {
    for _ in 0..k {
        stepper.step(target, &mut s).unwrap();
    }
    s
}

/// Rows of a CSV file (header excluded), parsed.
fn rows(path: &Path) -> Vec<Vec<f64>> {
    csv::Reader::from_path(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// Free flight in `q0` (v0 = 1) and an oscillator in `q1` whose stiffness jumps from 1 to
/// `k_after` once `q0 ≥ 5`. With `M = 1`, β = ¼ and h = 2, `M + βh²H = diag(1, 1 + k)`: the
/// linear system of Z&S is singular for `k_after = -1` and has condition `1/(1 + k_after)` in
/// general. Positions `q0 = 0, 2, 4, 6`: step 2 (from `t = 4`) evaluates `f` at `q0 = 6`.
struct Switch {
    k_after: f64,
}

impl Switch {
    fn k(&self, q: &[f64; 2]) -> f64 {
        if q[0] < 5.0 {
            1.0
        } else {
            self.k_after
        }
    }
}

impl Potential<2> for Switch {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        0.5 * self.k(q) * q[1] * q[1]
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        [0.0, self.k(q) * q[1]]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0, 0.0], [0.0, self.k(q)]]
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        [0.0, 0.0]
    }
}

const S0: State<2> = State {
    q: [0.0, 0.5],
    v: [1.0, 0.0],
    t: 0.0,
};

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
fn non_finite_gradient_is_reported_by_every_stepper() {
    let s0 = State::new([0.0], [1.0]);
    // h = 0.3: q = 0.3, 0.6, 0.9, 1.2: step 3 (from t = 0.9) evaluates the gradient at 1.2.
    let check = |e: Option<StepError>, s: State<1>, good: State<1>| {
        assert_eq!(
            e,
            Some(StepError::non_finite(3, good.t, Quantity::Gradient))
        );
        assert_eq!(bits(&s), bits(&good));
    };
    let mut s = s0;
    let e = run(
        &mut ZhangSkeel::new(0.4, 0.3),
        &NanBeyondOne,
        &mut s,
        3.0,
        &mut [],
    )
    .error;
    check(
        e,
        s,
        by_hand(ZhangSkeel::new(0.4, 0.3), &NanBeyondOne, s0, 3),
    );
    let mut s = s0;
    let e = run(
        &mut VelocityVerlet::new(0.3),
        &NanBeyondOne,
        &mut s,
        3.0,
        &mut [],
    )
    .error;
    check(
        e,
        s,
        by_hand(VelocityVerlet::new(0.3), &NanBeyondOne, s0, 3),
    );
}

/// A stub stepper that moves `q` by `h`, and either breaks the contract in the way the driver
/// must catch (returns `Ok` with a NaN velocity at step `nan_at`) or stands for an iterative
/// solver that fails to converge at step `not_converged_at` (state untouched, as Newton and
/// SHAKE steppers do).
struct Faulty {
    clock: Clock,
    nan_at: Option<u64>,
    not_converged_at: Option<u64>,
}

impl Faulty {
    fn new(nan_at: Option<u64>, not_converged_at: Option<u64>) -> Self {
        Self {
            clock: Clock::new(0.5),
            nan_at,
            not_converged_at,
        }
    }
}

impl Clocked for Faulty {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "faulty"
    }
}

impl<P: ?Sized> Stepper<P, [f64; 1]> for Faulty {
    fn step(&mut self, _: &P, s: &mut State<1>) -> Result<(), StepError> {
        if Some(self.clock.steps) == self.not_converged_at {
            return Err(StepError::new(
                self.clock.steps,
                s.t,
                StepErrorKind::NotConverged {
                    solver: "stub Newton",
                    iterations: 50,
                    residual: 3.5e-3,
                },
            ));
        }
        s.q[0] += self.clock.h;
        s.v[0] = if Some(self.clock.steps) == self.nan_at {
            f64::NAN
        } else {
            1.0
        };
        s.t += self.clock.h;
        self.clock.steps += 1;
        Ok(())
    }
}

#[test]
fn non_finite_state_returned_as_ok_is_caught_by_the_driver() {
    let path = temp_path("nan-state.csv");
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut seen = 0u64;
    let mut count = FnObserver(|_: &NanBeyondOne, _: &State<1>| seen += 1);
    let mut s = State::new([0.0], [1.0]);
    let summary = run(
        &mut Faulty::new(Some(4), None),
        &NanBeyondOne,
        &mut s,
        10.0,
        &mut [&mut csv, &mut count],
    );
    assert_eq!(
        summary.error,
        Some(StepError::non_finite(4, 2.0, Quantity::StateAfterStep))
    );
    // The NaN state was discarded: the caller holds the state after 4 steps.
    assert_eq!(bits(&s), bits(&State::at([2.0], [1.0], 2.0)));
    assert_eq!(summary.steps, 4);
    assert_eq!(seen, 5, "observers never saw the NaN state");
    let r = rows(&path);
    assert_eq!(r.len(), 5);
    assert!(r.iter().flatten().all(|x| x.is_finite()));
    assert!(incomplete_marker_of(&path).exists());
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
    assert!(std::fs::read_to_string(incomplete_marker_of(&path))
        .unwrap()
        .contains("Newmark Newton did not converge in 1 iterations"));
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

#[test]
fn energy_guard_stops_at_the_first_state_beyond_the_limit() {
    // Verlet at hω = 1.9 is stable, but its energy error oscillates with amplitude O(1).
    let (h, limit) = (1.9, 0.3);
    let s0 = State::new([1.0], [0.0]);
    let e0 = total_energy(&Spring, &s0);
    // The reference: the first step whose state drifts beyond the limit.
    let (mut vv, mut s, mut k) = (VelocityVerlet::new(h), s0, 0u64);
    let (first_bad, value) = loop {
        vv.step(&Spring, &mut s).unwrap();
        let d = (total_energy(&Spring, &s) - e0).abs();
        if d > limit {
            break (k, d);
        }
        k += 1;
        assert!(k < 100, "the drift never exceeds {limit}");
    };
    assert!(
        first_bad >= 1,
        "a non-trivial test: some steps pass the guard"
    );
    let path = temp_path("energy-guard.csv");
    let mut csv = CsvRecorder::create(&path, 1).unwrap().with_energy();
    let mut guard = EnergyGuard::new(limit);
    let mut s = s0;
    let mut vv = VelocityVerlet::new(h);
    let summary = run(
        &mut vv,
        &Spring,
        &mut s,
        1000.0,
        &mut [&mut csv, &mut guard],
    );
    let good = by_hand(VelocityVerlet::new(h), &Spring, s0, first_bad);
    assert_eq!(
        summary.error,
        Some(StepError::new(
            first_bad,
            good.t,
            StepErrorKind::GuardViolated {
                what: ENERGY_DRIFT,
                value,
                limit
            }
        ))
    );
    assert_eq!(bits(&s), bits(&good));
    // The stepper did take the discarded step.
    assert_eq!(vv.steps_taken(), first_bad + 1);
    assert!(guard.max_seen() <= limit && guard.max_seen() > 0.0);
    assert_eq!(guard.initial_energy(), Some(e0));
    // CSV: the initial state and the good steps only; every energy within the limit.
    let r = rows(&path);
    assert_eq!(r.len() as u64, first_bad + 1);
    assert!(r.iter().all(|row| (row[3] - e0).abs() <= limit));
    let marker = std::fs::read_to_string(incomplete_marker_of(&path)).unwrap();
    assert!(
        marker.contains("[guard-violated]") && marker.contains("energy drift"),
        "{marker}"
    );
    // A relative guard with the same absolute limit stops at the same step.
    let mut s = s0;
    let mut rel = EnergyGuard::relative(limit / e0);
    let e = run(
        &mut VelocityVerlet::new(h),
        &Spring,
        &mut s,
        1000.0,
        &mut [&mut rel],
    )
    .error;
    assert_eq!(e.map(|e| e.step()), Some(first_bad));
    assert_eq!(rel.limit(), Some(limit / e0 * e0));
}

/// A planar pendulum of length 1 in Cartesian coordinates, `g(q) = |q|² - 1`, no gravity.
struct Ring;

impl Potential<2> for Ring {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, _: &[f64; 2]) -> f64 {
        0.0
    }
    fn gradient(&self, _: &[f64; 2]) -> [f64; 2] {
        [0.0; 2]
    }
    fn hessian(&self, _: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0; 2]; 2]
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        [0.0; 2]
    }
}

impl MechanicalSystem<2, 1> for Ring {
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
    fn constraint_jacobian(&self, q: &[f64; 2]) -> [[f64; 2]; 1] {
        [[2.0 * q[0], 2.0 * q[1]]]
    }
    fn penalized_potential(&self, omega: f64, q: &[f64; 2]) -> f64 {
        let g = self.constraints(q)[0];
        0.5 * omega * omega * g * g
    }
    fn penalized_gradient(&self, omega: f64, q: &[f64; 2]) -> [f64; 2] {
        let g = self.constraints(q)[0];
        [
            2.0 * omega * omega * g * q[0],
            2.0 * omega * omega * g * q[1],
        ]
    }
    fn penalized_hessian(&self, omega: f64, q: &[f64; 2]) -> [[f64; 2]; 2] {
        // ω² (∇g∇gᵀ + g·2I)
        let g = self.constraints(q)[0];
        let w2 = omega * omega;
        core::array::from_fn(|i| {
            core::array::from_fn(|j| w2 * (4.0 * q[i] * q[j] + if i == j { 2.0 * g } else { 0.0 }))
        })
    }
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        // d²/dε² of ω² g ∇g along a: ω² (2(∇g·a)(2a) + (2|a|²)∇g)
        let ga = 2.0 * (q[0] * a[0] + q[1] * a[1]);
        let aa = 2.0 * (a[0] * a[0] + a[1] * a[1]);
        let w2 = omega * omega;
        core::array::from_fn(|i| w2 * (2.0 * ga * 2.0 * a[i] + aa * 2.0 * q[i]))
    }
}

#[test]
fn constraint_guard_stops_a_penalized_run_that_leaves_the_manifold() {
    // Fast rotation on a soft penalty: the centrifugal force stretches the pendulum,
    // ‖g‖ grows to O(v²/ω²).
    let sys = Ring;
    let target = sys.penalized(4.0);
    let s0 = State::new([1.0, 0.0], [0.0, 3.0]);
    let (h, limit) = (0.01, 0.4);
    let norm = |s: &State<2>| sys.constraints(&s.q)[0].abs();
    let (mut zs, mut s, mut k) = (ZhangSkeel::new(0.4, h), s0, 0u64);
    let (first_bad, value) = loop {
        zs.step(&target, &mut s).unwrap();
        if norm(&s) > limit {
            break (k, norm(&s));
        }
        k += 1;
        assert!(k < 10_000, "the residual never exceeds {limit}");
    };
    // Measured: the residual first exceeds 0.4 at step 29 (‖g‖ = 0.401).
    assert!(first_bad >= 5, "{first_bad}");
    let mut guard = ConstraintGuard::new(&sys, limit);
    let mut s = s0;
    let summary = run(
        &mut ZhangSkeel::new(0.4, h),
        &target,
        &mut s,
        100.0,
        &mut [&mut guard],
    );
    let good = by_hand(ZhangSkeel::new(0.4, h), &target, s0, first_bad);
    assert_eq!(
        summary.error,
        Some(StepError::new(
            first_bad,
            good.t,
            StepErrorKind::GuardViolated {
                what: CONSTRAINT_RESIDUAL,
                value,
                limit
            }
        ))
    );
    assert_eq!(bits(&s), bits(&good));
    assert!(guard.max_seen() <= limit);
    assert_eq!(guard.limit(), limit);
    let text = summary.error.unwrap().to_string();
    assert!(
        text.contains("constraint residual |g(q)|") && text.contains("exceeds the limit 4e-1"),
        "{text}"
    );
}

#[test]
fn a_successful_run_removes_a_stale_incomplete_marker() {
    let path = temp_path("rerun.csv");
    let sys = Switch { k_after: -1.0 };
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut s = S0;
    assert!(!run(
        &mut ZhangSkeel::new(0.25, 2.0),
        &sys,
        &mut s,
        20.0,
        &mut [&mut csv]
    )
    .is_ok());
    assert!(incomplete_marker_of(&path).exists());
    // Same path, a run that completes (t_end before the switch).
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut s = S0;
    assert!(run(
        &mut ZhangSkeel::new(0.25, 2.0),
        &sys,
        &mut s,
        4.0,
        &mut [&mut csv]
    )
    .is_ok());
    assert!(!incomplete_marker_of(&path).exists());
    assert_eq!(rows(&path).len(), 3);
}

/// The observer hooks a guard relies on are called in the documented order.
#[test]
fn guards_see_the_new_state_before_any_observer() {
    struct Order<'a>(&'a std::cell::RefCell<Vec<String>>, &'static str);
    impl Observer<Spring, [f64; 1]> for Order<'_> {
        fn start(&mut self, _: &Spring, _: &State<1>) {
            self.0.borrow_mut().push(format!("{}:start", self.1));
        }
        fn check(&mut self, _: &Spring, s: &State<1>) -> Result<(), zs_runtime::GuardViolation> {
            self.0.borrow_mut().push(format!("{}:check", self.1));
            if s.t > 0.25 {
                Err(zs_runtime::GuardViolation {
                    what: "t",
                    value: s.t,
                    limit: 0.25,
                })
            } else {
                Ok(())
            }
        }
        fn observe(&mut self, _: &Spring, _: &State<1>) {
            self.0.borrow_mut().push(format!("{}:observe", self.1));
        }
        fn stopped_early(&mut self, e: &StepError) {
            self.0
                .borrow_mut()
                .push(format!("{}:stopped {}", self.1, e.code()));
        }
        fn finish(&mut self) -> std::io::Result<()> {
            self.0.borrow_mut().push(format!("{}:finish", self.1));
            Ok(())
        }
    }
    let log = std::cell::RefCell::new(Vec::new());
    let mut s = State::new([1.0], [0.0]);
    let (mut a, mut b) = (Order(&log, "a"), Order(&log, "b"));
    let summary = run(
        &mut VelocityVerlet::new(0.25),
        &Spring,
        &mut s,
        1.0,
        &mut [&mut a, &mut b],
    );
    assert_eq!(summary.steps, 1);
    let expected = [
        "a:start",
        "b:start",
        "a:check",
        "b:check",
        "a:observe",
        "b:observe",
        // Step 2: `a` rejects the state; `b` is not asked, nobody observes it.
        "a:check",
        "a:stopped guard-violated",
        "b:stopped guard-violated",
        "a:finish",
        "b:finish",
    ];
    assert_eq!(log.into_inner(), expected);
}

/// A state of the wrong size given to any stepper on an assembled system (a `q` counting a
/// pinned body, a `v` one short): a typed `WrongSize` error at the step, the state untouched.
#[test]
fn a_state_of_the_wrong_size_is_a_typed_error_for_every_stepper() {
    use crate::support::assembled;
    use zs_runtime::{
        DynState, LinearlyImplicitNewmark, PushForwardNewmark, Rattle, ZhangSkeelStiff,
    };
    let (beads, q, v) = assembled::beads(6);
    let pen = beads.penalized(10.0);
    let n = q.len();
    let cases = [
        (
            "q one long",
            [q.clone(), vec![0.0]].concat(),
            v.clone(),
            "q",
            n + 1,
        ),
        ("v one short", q.clone(), v[..n - 1].to_vec(), "v", n - 1),
    ];
    for (label, q, v, what, got) in cases {
        let expect = |r: Result<(), StepError>, s: &DynState, name: &str| {
            let e = r.expect_err(name);
            assert_eq!(
                e.kind,
                StepErrorKind::WrongSize {
                    what,
                    expected: n,
                    got
                },
                "{name}, {label}"
            );
            assert_eq!(e.code(), "wrong-size");
            assert!(
                s.q == q && s.v == v && s.t == 0.0,
                "{name}, {label}: state changed"
            );
        };
        let fresh = || DynState::new(q.clone(), v.clone());
        let mut s = fresh();
        expect(ZhangSkeel::new(0.3, 0.01).step(&pen, &mut s), &s, "Z&S");
        expect(
            ZhangSkeelSimplified::new(0.3, 0.01).step(&pen, &mut s),
            &s,
            "Z&Ss",
        );
        expect(
            ZhangSkeelStiff::new(0.3, 0.01).step(&pen, &mut s),
            &s,
            "Z&Ss-stiff",
        );
        expect(VelocityVerlet::new(0.01).step(&pen, &mut s), &s, "Verlet");
        expect(Newmark::new(0.3, 0.01).step(&pen, &mut s), &s, "Newmark");
        expect(
            LinearlyImplicitNewmark::new(0.3, 0.01).step(&pen, &mut s),
            &s,
            "one-step Newmark",
        );
        expect(
            PushForwardNewmark::new(0.3, 0.01).step(&pen, &mut s),
            &s,
            "push-forward Newmark",
        );
        expect(Shake::new(0.01).step(&beads, &mut s), &s, "SHAKE");
        expect(Rattle::new(0.01).step(&beads, &mut s), &s, "RATTLE");
        expect(
            Langevin::new(ZhangSkeel::new(0.3, 0.01), 0.1, 0.1, 1).step(&pen, &mut s),
            &s,
            "Langevin(Z&S)",
        );
        expect(
            Yoshida4::new(VelocityVerlet::new(0.01)).step(&pen, &mut s),
            &s,
            "Yoshida4(Verlet)",
        );
    }
}
