//! The multiplier estimate of a penalized run (Tao & Owhadi Thm 1.2, eq. 8):
//! [`PenalizedMultipliers`] against SHAKE's λ on a single pendulum (sign convention and
//! agreement within the eq. 8 error bound), its CSV output, and zero allocations per step for
//! the observer and for SHAKE/RATTLE steps.
//!
//! A per-thread counting global allocator (`support/counting_alloc.rs`) checks that observing
//! allocates nothing per step.

use zs_runtime::driver::{run, run_steps};
use zs_runtime::observers::Observer;
use zs_runtime::{
    MechanicalSystem, PenalizedMultipliers, Rattle, Shake, ShakeSolver, State, TimeSeries,
    ZhangSkeel, mechanical_system,
};

use crate::support::counting_alloc;
use counting_alloc::allocations_during;

/// A planar pendulum of length 1.5 and mass 2 under gravity 9.81: `V = m·9.81·y`,
/// `g = x² + y² - 1.5²`.
pub struct Pendulum;

#[mechanical_system]
impl Pendulum {
    fn masses(&self) -> [f64; 2] {
        [2.0, 2.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        2.0 * 9.81 * q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 2.25]
    }
}

const L: f64 = 1.5;
const MASS: f64 = 2.0;

fn start() -> State<2> {
    // 1 rad from the bottom, at rest.
    let (s, c) = 1.0f64.sin_cos();
    State::new([L * s, -L * c], [0.0, 0.0])
}

/// SHAKE's λ(t_n) along a run, as a time series.
fn shake_series(h: f64, t_end: f64) -> TimeSeries<1> {
    let n = (t_end / h).round() as usize;
    let mut shake = Shake::new(h)
        .with_solver(ShakeSolver::Newton)
        .with_tolerance(1e-13);
    let mut series = TimeSeries::with_capacity(n);
    let mut s = start();
    for _ in 0..n {
        shake.step(&Pendulum, &mut s).unwrap();
        assert!(series.push(shake.multipliers_time(), shake.multipliers()));
    }
    series
}

#[test]
fn penalized_estimate_has_shakes_sign_and_agrees_within_the_eq8_bound() {
    let (t_end, window) = (3.0, 0.2);
    let lambda_shake = shake_series(1e-3, t_end);
    let lmax = lambda_shake
        .values()
        .iter()
        .fold(0.0f64, |m, l| m.max(l[0].abs()));
    // Released at rest 1 rad from the bottom: the rod is always under tension, λ > 0.
    assert!(lambda_shake.values().iter().all(|l| l[0] > 0.0));

    let mut errors = vec![];
    for omega in [20.0, 100.0] {
        // h ω = 0.05: the fast oscillation is resolved (see the double-pendulum test for what a
        // coarser h ω does to the mean).
        let h = 0.05 / omega;
        let target = Pendulum.penalized(omega);
        let steps = (t_end / h).round() as usize;
        let mut est = PenalizedMultipliers::from_penalized(&target, window, steps + 1);
        assert_eq!((est.omega(), est.window()), (omega, window));
        let mut s = start();
        let summary = run(
            &mut ZhangSkeel::new(0.4, h),
            &target,
            &mut s,
            t_end,
            &mut [&mut est],
        );
        assert!(summary.is_ok());
        assert_eq!(est.constraint_series().len(), steps + 1);

        // The paper's eq. 8 value is -ω²⟨g⟩: the negative of the estimate here.
        let g_mean = est.constraint_series().mean(0.5, 0.5 + window).unwrap()[0];
        let paper_sign = -omega * omega * g_mean;
        assert_eq!(est.lambda(0.5).unwrap()[0], -paper_sign);
        assert!(paper_sign < 0.0);

        // eq. 8 error bound (module docs of zs_runtime::multipliers): the window mean of the
        // fast oscillation of ω²g, amplitude ≤ max|λ| (the run starts at g = 0, the equilibrium
        // is g ≈ λ/ω²), frequency Ω = ω |∇g|/√m = ω·2ℓ/√m, is at most 2·max|λ|/(Ω T).
        let big_omega = omega * 2.0 * L / MASS.sqrt();
        let bound = 2.0 * lmax / (big_omega * window);
        let mut emax = 0.0f64;
        let mut t = 0.0;
        while t + window <= t_end - 1e-2 {
            let lp = est.lambda(t).unwrap()[0];
            let ls = lambda_shake.mean(t, t + window).unwrap()[0];
            emax = emax.max((lp - ls).abs());
            t += 0.01;
        }
        println!(
            "single pendulum, ω = {omega}: max |λ_pen - ⟨λ_SHAKE⟩| = {emax:.3e} \
             (bound 2 max|λ|/(ΩT) = {bound:.3e}; max|λ| = {lmax:.3})"
        );
        assert!(emax <= bound, "{emax:e} > {bound:e}");
        errors.push(emax);
    }
    assert!(errors[1] < errors[0], "{errors:?}");
}

#[test]
fn estimates_and_csv() {
    let target = Pendulum.penalized(50.0);
    let mut est = PenalizedMultipliers::from_penalized(&target, 0.1, 101);
    let mut s = start();
    let summary = run_steps(
        &mut ZhangSkeel::new(0.4, 0.005),
        &target,
        &mut s,
        100,
        &mut [&mut est],
    );
    assert!(summary.is_ok());
    // Samples at t = 0, 0.005, …, 0.5; forward windows of 0.1 fit for t ≤ 0.4: 81 estimates.
    let estimates: Vec<_> = est.estimates().collect();
    assert_eq!(estimates.len(), 81);
    assert!(est.lambda(0.41).is_none());
    assert!(est.lambda_centered(0.02).is_none() && est.lambda_centered(0.05).is_some());
    for (t, l) in &estimates {
        assert_eq!(Some(*l), est.lambda(*t));
    }
    let mut csv = Vec::new();
    est.write_csv(&mut csv, 10).unwrap();
    let text = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "t,lambda_0");
    assert_eq!(lines.len(), 1 + 9); // estimates 0, 10, …, 80
    let row: Vec<f64> = lines[1].split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(row, vec![0.0, estimates[0].1[0]]);
    // A repeated time is rejected, not recorded.
    assert!(!est.record(s.t, &s.q));
    assert_eq!(est.constraint_series().rejected(), 1);
}

#[test]
#[should_panic(expected = "window must be positive")]
fn a_zero_window_is_rejected() {
    let _ = PenalizedMultipliers::new(&Pendulum, 20.0, 0.0, 10);
}

#[test]
fn steps_and_observation_allocate_nothing_after_set_up() {
    const STEPS: usize = 1000;
    let mut counts = vec![];
    for solver in [ShakeSolver::GaussSeidel, ShakeSolver::Newton] {
        let mut shake = Shake::new(0.01).with_solver(solver);
        let mut s = start();
        shake.step(&Pendulum, &mut s).unwrap();
        counts.push(allocations_during(|| {
            for _ in 0..STEPS {
                shake.step(&Pendulum, &mut s).unwrap();
            }
        }));
        let mut rattle = Rattle::new(0.01).with_solver(solver);
        let mut s = start();
        rattle.step(&Pendulum, &mut s).unwrap();
        counts.push(allocations_during(|| {
            for _ in 0..STEPS {
                rattle.step(&Pendulum, &mut s).unwrap();
            }
        }));
    }

    // The observer with preallocated storage, stepped by hand and under the driver.
    let target = Pendulum.penalized(20.0);
    let mut zs = ZhangSkeel::new(0.4, 0.005);
    let mut est = PenalizedMultipliers::from_penalized(&target, 0.2, 2 * STEPS + 2);
    let mut s = start();
    est.start(&target, &s);
    zs.step(&target, &mut s).unwrap();
    counts.push(allocations_during(|| {
        for _ in 0..STEPS {
            zs.step(&target, &mut s).unwrap();
            est.observe(&target, &s);
        }
    }));
    let mut observers: [&mut dyn Observer<_, [f64; 2]>; 1] = [&mut est];
    let mut summary = None;
    let n_driver = allocations_during(|| {
        summary = Some(run_steps(
            &mut zs,
            &target,
            &mut s,
            STEPS as u64,
            &mut observers,
        ));
    });
    assert!(summary.unwrap().is_ok());
    // t_0, the 1000 observed by hand, the 1000 of the driver; the driver's start() repeats the
    // last time and is rejected (not stored).
    assert_eq!(est.constraint_series().len(), 1 + 2 * STEPS);
    assert_eq!(est.constraint_series().rejected(), 1);
    println!(
        "allocations over {STEPS} steps: SHAKE/RATTLE (GS, Newton) {counts:?}, \
         driver with the observer: {n_driver}"
    );
    assert_eq!(counts, vec![0; 5]);
    assert_eq!(n_driver, 0);
}
