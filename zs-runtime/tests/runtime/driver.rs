//! The driver, the observers and the CSV recorder.

use std::path::PathBuf;

use zs_runtime::driver::{planned_steps, run, run_steps};
use zs_runtime::observers::{FnObserver, Observer, total_energy};
use zs_runtime::{
    Clocked, ConstraintObserver, CsvRecorder, EnergyObserver, MechanicalSystem, MomentumObserver,
    Potential, Quantity, State, StepError, StepErrorKind, VelocityVerlet, ZhangSkeel,
    ZhangSkeelSimplified,
};

/// Pendulum `V = 1 - cos q`.
struct Pendulum;

impl Potential<1> for Pendulum {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        1.0 - q[0].cos()
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [q[0].sin()]
    }
    fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] {
        [[q[0].cos()]]
    }
    fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
        [-q[0].sin() * a[0] * a[0]]
    }
}

/// Two particles in the plane, `q = (x1, y1, x2, y2)`, joined by a stiff spring of rest length
/// 1 written as a constraint `g = |r2 - r1|² - 1` (so the penalized potential is
/// `½ω²g²`); masses (1, 1, 2, 2). Translation-invariant: the total momentum is conserved.
struct Dumbbell;

impl Dumbbell {
    fn d(q: &[f64; 4]) -> (f64, f64) {
        (q[2] - q[0], q[3] - q[1])
    }
}

impl Potential<4> for Dumbbell {
    fn masses(&self) -> [f64; 4] {
        [1.0, 1.0, 2.0, 2.0]
    }
    fn potential(&self, _: &[f64; 4]) -> f64 {
        0.0
    }
    fn gradient(&self, _: &[f64; 4]) -> [f64; 4] {
        [0.0; 4]
    }
    fn hessian(&self, _: &[f64; 4]) -> [[f64; 4]; 4] {
        [[0.0; 4]; 4]
    }
    fn third_contraction(&self, _: &[f64; 4], _: &[f64; 4]) -> [f64; 4] {
        [0.0; 4]
    }
}

impl MechanicalSystem<4, 1> for Dumbbell {
    fn constraints(&self, q: &[f64; 4]) -> [f64; 1] {
        let (dx, dy) = Self::d(q);
        [dx * dx + dy * dy - 1.0]
    }
    fn constraint_jacobian(&self, q: &[f64; 4]) -> [[f64; 4]; 1] {
        let (dx, dy) = Self::d(q);
        [[-2.0 * dx, -2.0 * dy, 2.0 * dx, 2.0 * dy]]
    }
    fn penalized_potential(&self, omega: f64, q: &[f64; 4]) -> f64 {
        let g = self.constraints(q)[0];
        0.5 * omega * omega * g * g
    }
    fn penalized_gradient(&self, omega: f64, q: &[f64; 4]) -> [f64; 4] {
        let g = self.constraints(q)[0];
        let j = self.constraint_jacobian(q)[0];
        core::array::from_fn(|i| omega * omega * g * j[i])
    }
    fn penalized_hessian(&self, omega: f64, q: &[f64; 4]) -> [[f64; 4]; 4] {
        // ω² (∇g ∇gᵀ + g Hess g), Hess g = 2 [[I, -I], [-I, I]].
        let g = self.constraints(q)[0];
        let j = self.constraint_jacobian(q)[0];
        let hg = |a: usize, b: usize| -> f64 {
            if a % 2 != b % 2 {
                0.0
            } else if (a < 2) == (b < 2) {
                2.0
            } else {
                -2.0
            }
        };
        core::array::from_fn(|a| {
            core::array::from_fn(|b| omega * omega * (j[a] * j[b] + g * hg(a, b)))
        })
    }
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 4], a: &[f64; 4]) -> [f64; 4] {
        // d²/dε² of ω² g ∇g along a: ω² (2 (∇g·a) Hg a + (aᵀ Hg a) ∇g) (g is quadratic).
        let j = self.constraint_jacobian(q)[0];
        let ja: f64 = (0..4).map(|i| j[i] * a[i]).sum();
        let (dax, day) = (a[2] - a[0], a[3] - a[1]);
        let hga = [-2.0 * dax, -2.0 * day, 2.0 * dax, 2.0 * day];
        let aha = 2.0 * (dax * dax + day * day);
        core::array::from_fn(|i| omega * omega * (2.0 * ja * hga[i] + aha * j[i]))
    }
}

#[test]
fn dumbbell_penalized_derivatives_match_finite_differences() {
    let p = Dumbbell.penalized(3.0);
    let q = [0.1, -0.2, 1.0, 0.4];
    let a = [0.3, -0.1, 0.2, 0.5];
    let d = 1e-5;
    let g = p.gradient(&q);
    let h = p.hessian(&q);
    let shifted = |i: usize, s: f64| {
        let mut x = q;
        x[i] += s;
        x
    };
    for i in 0..4 {
        let fd = (p.potential(&shifted(i, d)) - p.potential(&shifted(i, -d))) / (2.0 * d);
        assert!((fd - g[i]).abs() < 1e-6, "gradient {i}");
        let (gp, gm) = (p.gradient(&shifted(i, d)), p.gradient(&shifted(i, -d)));
        for j in 0..4 {
            assert!(
                ((gp[j] - gm[j]) / (2.0 * d) - h[i][j]).abs() < 1e-6,
                "hessian {i}{j}"
            );
        }
    }
    let along = |s: f64| p.gradient(&core::array::from_fn(|i| q[i] + s * a[i]));
    let (gp, g0, gm) = (along(d), along(0.0), along(-d));
    let t = p.third_contraction(&q, &a);
    for i in 0..4 {
        let fd = (gp[i] - 2.0 * g0[i] + gm[i]) / (d * d);
        assert!(
            (fd - t[i]).abs() < 1e-3,
            "third contraction {i}: {fd} vs {}",
            t[i]
        );
    }
}

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-runtime-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn short_run_conserves_energy_and_ends_at_t_end() {
    let mut zs = ZhangSkeel::new(0.4, 0.01);
    let mut state = State::new([2.0], [0.0]);
    let mut energy = EnergyObserver::new();
    let summary = run(&mut zs, &Pendulum, &mut state, 10.0, &mut [&mut energy]);
    assert!(summary.is_ok(), "{summary:?}");
    assert_eq!((summary.planned_steps, summary.steps), (1000, 1000));
    assert_eq!(state.t, 10.0);
    assert!(summary.failure().is_none());
    assert_eq!(summary.stepper, "zhang-skeel");
    assert!(summary.steps_per_second > 0.0);
    assert_eq!(energy.samples(), 1001);
    assert_eq!(energy.initial_energy(), Some(1.0 - 2f64.cos()));
    eprintln!(
        "pendulum, Z&S h = 0.01, t = 10: max |ΔE| = {:.3e}, final drift = {:.3e}, {:.0} steps/s",
        energy.max_abs_drift(),
        energy.final_drift(),
        summary.steps_per_second
    );
    // Second-order method, h = 0.01: |ΔE| = O(h²) with a small constant; and not identically 0.
    assert!(energy.max_abs_drift() < 1e-4 && energy.max_abs_drift() > 0.0);
    assert!(energy.final_drift().abs() <= energy.max_abs_drift());
    assert_eq!(energy.last_energy(), total_energy(&Pendulum, &state));
}

/// The stepping time counts the steps and not the observers: observers that sleep 2 ms after
/// each of 20 steps leave at least 40 ms of the wall time outside it.
#[test]
fn the_stepping_time_leaves_out_the_observers() {
    let mut zs = ZhangSkeel::new(0.4, 0.01);
    let mut state = State::new([2.0], [0.0]);
    let nap = std::time::Duration::from_millis(2);
    let mut slow = FnObserver(|_: &Pendulum, _: &State<1>| std::thread::sleep(nap));
    let summary = run(&mut zs, &Pendulum, &mut state, 0.2, &mut [&mut slow]);
    assert!(summary.is_ok(), "{summary:?}");
    assert_eq!(summary.steps, 20);
    assert!(summary.stepping_time > std::time::Duration::ZERO);
    assert!(
        summary.wall_time >= summary.stepping_time + 20 * nap,
        "wall {:?}, stepping {:?}",
        summary.wall_time,
        summary.stepping_time
    );
}

#[test]
fn last_step_is_adjusted_to_land_on_t_end() {
    assert_eq!(planned_steps(0.0, 1.0, 0.3), Some(3));
    assert_eq!(planned_steps(0.0, 1.0, 0.4), Some(3));
    assert_eq!(planned_steps(0.0, 0.1, 0.3), Some(1));
    assert_eq!(planned_steps(1.0, 1.0, 0.3), Some(0));
    assert_eq!(planned_steps(0.0, 1.0, -0.1), None);
    assert_eq!(planned_steps(0.0, -1.0, -0.1), Some(10));
    assert_eq!(planned_steps(0.0, 1.0, 0.0), None);

    // 3 steps: 0.3, 0.3, 0.4.
    let mut vv = VelocityVerlet::new(0.3);
    let mut s = State::new([0.5], [0.0]);
    let mut times = Vec::new();
    let mut rec = FnObserver(|_: &Pendulum, st: &State<1>| times.push(st.t));
    let summary = run(&mut vv, &Pendulum, &mut s, 1.0, &mut [&mut rec]);
    assert!(summary.is_ok());
    assert_eq!(times.len(), 4);
    assert!((times[1] - 0.3).abs() < 1e-15 && (times[2] - 0.6).abs() < 1e-15);
    assert_eq!(times[3], 1.0);
    assert_eq!(vv.h(), 0.3, "h restored");
    // Same as stepping by hand with the shortened last step.
    let mut by_hand = State::new([0.5], [0.0]);
    let mut v2 = VelocityVerlet::new(0.3);
    v2.step(&Pendulum, &mut by_hand).unwrap();
    v2.step(&Pendulum, &mut by_hand).unwrap();
    v2.set_h(1.0 - by_hand.t);
    v2.step(&Pendulum, &mut by_hand).unwrap();
    assert_eq!(by_hand.q, s.q);
    assert_eq!(by_hand.v, s.v);

    // Backwards in time.
    let mut zs = ZhangSkeelSimplified::new(0.4, -0.1);
    let mut s = State::at([0.5], [0.0], 2.0);
    let summary = run(&mut zs, &Pendulum, &mut s, 1.0, &mut []);
    assert!(summary.is_ok());
    assert_eq!((summary.steps, s.t), (10, 1.0));

    // h pointing away from t_end: an error, no step.
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    let mut s = State::new([0.5], [0.0]);
    let summary = run(&mut zs, &Pendulum, &mut s, -1.0, &mut []);
    assert!(matches!(
        summary.error,
        Some(StepError {
            step: 0,
            kind: StepErrorKind::InvalidStepSize { .. },
            ..
        })
    ));
    assert_eq!(summary.steps, 0);
    assert_eq!(s, State::new([0.5], [0.0]));
}

#[test]
fn failed_step_stops_the_run_cleanly() {
    /// Free flight with a NaN gradient beyond q = 1.
    struct Wall;
    impl Potential<1> for Wall {
        fn masses(&self) -> [f64; 1] {
            [1.0]
        }
        fn potential(&self, _: &[f64; 1]) -> f64 {
            0.0
        }
        fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
            [if q[0] > 1.0 { f64::NAN } else { 0.0 }]
        }
        fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
            [[0.0]]
        }
        fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
            [0.0]
        }
    }
    let path = temp_path("failed.csv");
    let mut zs = ZhangSkeel::new(0.4, 0.25);
    let mut s = State::new([0.0], [1.0]);
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut energy = EnergyObserver::new();
    let summary = run(&mut zs, &Wall, &mut s, 10.0, &mut [&mut csv, &mut energy]);
    assert!(!summary.is_ok());
    assert_eq!((summary.planned_steps, summary.steps), (40, 4));
    assert_eq!(
        summary.error,
        Some(StepError::non_finite(4, 1.0, Quantity::Gradient))
    );
    assert_eq!((s.q[0], s.t), (1.0, 1.0));
    assert_eq!(summary.failure().unwrap().last_good, s);
    assert_eq!(energy.samples(), 5);
    // The CSV holds the run up to the last good state.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1 + 5);
    assert!(text.lines().last().unwrap().starts_with("1,1,1"));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn csv_has_header_and_every_kth_row_and_no_tmp_left() {
    let path = temp_path("dumbbell.csv");
    let sys = Dumbbell;
    let target = sys.penalized(30.0);
    let s0 = State::new([0.0, 0.0, 1.05, 0.0], [0.0, 0.5, 0.3, -0.25]);
    let mut s = s0;
    // The stretching mode has ω_eff = ω·2·sqrt(3/2) ≈ 73: h ω_eff ≈ 0.15.
    let h = 0.002;
    let mut zs = ZhangSkeel::new(0.4, h);
    let (t_end, every) = (3.0, 7);
    let n = planned_steps(0.0, t_end, h).unwrap();
    let mut csv = CsvRecorder::create(&path, every)
        .unwrap()
        .with_energy()
        .with_constraints(&sys)
        .with_names(["x1", "y1", "x2", "y2"]);
    let tmp = csv.tmp_path().to_path_buf();
    assert!(
        tmp.exists() && !path.exists(),
        "written through the .tmp file"
    );
    let mut constraints = ConstraintObserver::new(&sys);
    let mut momentum = MomentumObserver::by_component(2);
    let mut energy = EnergyObserver::new();
    let summary = run(
        &mut zs,
        &target,
        &mut s,
        t_end,
        &mut [&mut csv, &mut constraints, &mut momentum, &mut energy],
    );
    assert!(summary.is_ok(), "{summary:?}");
    assert!(
        path.exists() && !tmp.exists(),
        "renamed on finish, no .tmp left"
    );
    assert_eq!(csv.rows(), 1 + n / every);

    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "t",
            "x1",
            "y1",
            "x2",
            "y2",
            "v_x1",
            "v_y1",
            "v_x2",
            "v_y2",
            "energy",
            "constraint_norm"
        ]
    );
    let rows: Vec<Vec<f64>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len() as u64, 1 + n / every);
    // Row 0 is the initial state, row k the state after k·every steps (values round-trip).
    assert_eq!(&rows[0][1..5], &s0.q[..]);
    assert_eq!(rows[0][9], total_energy(&target, &s0));
    // ‖g‖ = |1.05² - 1| (sqrt(x²) = |x| exactly in binary floating point).
    assert_eq!(rows[0][10], (1.05f64 * 1.05 - 1.0).abs());
    for (k, r) in rows.iter().enumerate() {
        assert!(
            (r[0] - (k as u64 * every) as f64 * h).abs() < 1e-12,
            "row {k}: t = {}",
            r[0]
        );
        assert!((r[9] - rows[0][9]).abs() <= energy.max_abs_drift() * (1.0 + 1e-12));
        assert!(r[10] <= constraints.max_residual() * (1.0 + 1e-12));
    }

    // The observers measured sensible things.
    eprintln!(
        "dumbbell ω = 30, Z&S h = 0.002: max |ΔE|/E = {:.2e}, max ‖g‖ = {:.3e}, max |ΔP| = {:?}",
        energy.max_relative_drift(),
        constraints.max_residual(),
        momentum.max_deviation()
    );
    // Measured 1.4e-2 (β h² ω_eff² ≈ 9e-3 sets the scale of the oscillation; 0.6 at h = 0.02).
    assert!(energy.max_relative_drift() < 3e-2);
    assert!(constraints.max_residual() > 0.05 && constraints.max_residual() < 0.5);
    assert_eq!(constraints.samples(), n + 1);
    // Translation invariance: Z&S conserves the linear momentum (Σ m f = 0 exactly).
    assert_eq!(momentum.groups(), &[vec![0, 2], vec![1, 3]]);
    assert_eq!(momentum.initial(), &[0.6, 0.0]);
    for d in momentum.max_deviation() {
        assert!(*d < 1e-12, "momentum drift {d:e}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn csv_recorder_rejects_bad_arguments_and_is_atomic() {
    assert!(CsvRecorder::<[f64; 1]>::create(temp_path("zero.csv"), 0).is_err());
    assert!(CsvRecorder::<[f64; 1]>::create("/nonexistent-dir/zs/x.csv", 1).is_err());
    // A recorder dropped without `finish` (an interrupted run) leaves only the .tmp file.
    let path = temp_path("interrupted.csv");
    {
        let mut csv = CsvRecorder::create(&path, 1).unwrap();
        let s = State::new([0.1], [0.0]);
        Observer::<Pendulum, [f64; 1]>::start(&mut csv, &Pendulum, &s);
        Observer::<Pendulum, [f64; 1]>::observe(&mut csv, &Pendulum, &s);
    }
    assert!(!path.exists());
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    assert!(tmp.exists());
    std::fs::remove_file(tmp).unwrap();
    // Default column names, no optional columns; a zero-step run has the header and one row.
    let path = temp_path("plain.csv");
    let mut csv = CsvRecorder::create(&path, 3).unwrap();
    let mut s = State::new([0.1], [0.2]);
    let summary = run_steps(
        &mut VelocityVerlet::new(0.1),
        &Pendulum,
        &mut s,
        0,
        &mut [&mut csv],
    );
    assert!(summary.is_ok());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, "t,q0,v0\n0,0.1,0.2\n");
    std::fs::remove_file(&path).unwrap();
}

/// The state's time after step k is t0 + k·h, not k additions of h: 1 000 steps of 0.01 give
/// the times 1, 2, …, 10 exactly (accumulated, the tenth would be 10.000000000000163), in the
/// state and in the CSV.
#[test]
fn the_clock_is_t0_plus_k_h_not_an_accumulated_sum() {
    let mut accumulated = 0.0_f64;
    for _ in 0..1000 {
        accumulated += 0.01;
    }
    assert_ne!(accumulated, 10.0, "the sum this test is about");
    let mut times = Vec::new();
    let mut s = State::new([1.0], [0.0]);
    let mut seen = FnObserver(|_: &_, st: &State<1>| times.push(st.t));
    let summary = run_steps(
        &mut VelocityVerlet::new(0.01),
        &Pendulum,
        &mut s,
        1000,
        &mut [&mut seen],
    );
    assert!(summary.is_ok());
    // The start, then every step.
    assert_eq!(times.len(), 1001);
    for (k, &t) in times.iter().enumerate() {
        assert_eq!(t, k as f64 * 0.01, "step {k}");
    }
    assert_eq!(s.t, 10.0);
    let path = temp_path("clock.csv");
    let mut csv = CsvRecorder::create(&path, 100).unwrap();
    let mut s = State::new([1.0], [0.0]);
    assert!(
        run(
            &mut VelocityVerlet::new(0.01),
            &Pendulum,
            &mut s,
            10.0,
            &mut [&mut csv]
        )
        .is_ok()
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let ts: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(ts, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
    std::fs::remove_file(&path).unwrap();
}
