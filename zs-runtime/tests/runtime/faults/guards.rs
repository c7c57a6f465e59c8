//! Guards (energy drift, constraint residual) stop a run at the first state beyond their
//! limit, before any observer sees it; markers of incomplete files.

use super::*;

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
    // The driver took the discarded step back through the stepper (velocity Verlet can undo:
    // the driver keeps no copy of its own), so the stepper's count is the state's.
    assert_eq!(vv.steps_taken(), first_bad);
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
    let mut good = by_hand(ZhangSkeel::new(0.4, h), &target, s0, first_bad);
    // The driver's clock: after step k the time is t0 + k·h, not k additions of h.
    good.t = s0.t + first_bad as f64 * h;
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
        text.contains("constraint residual |g(q)|") && text.contains("exceeds the limit 0.4"),
        "{text}"
    );
}

#[test]
fn a_successful_run_removes_a_stale_incomplete_marker() {
    let path = temp_path("rerun.csv");
    let sys = Switch { k_after: -1.0 };
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut s = S0;
    assert!(
        !run(
            &mut ZhangSkeel::new(0.25, 2.0),
            &sys,
            &mut s,
            20.0,
            &mut [&mut csv]
        )
        .is_ok()
    );
    assert!(incomplete_marker_of(&path).exists());
    // Same path, a run that completes (t_end before the switch).
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut s = S0;
    assert!(
        run(
            &mut ZhangSkeel::new(0.25, 2.0),
            &sys,
            &mut s,
            4.0,
            &mut [&mut csv]
        )
        .is_ok()
    );
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

/// `MoveGuard::largest_move` against the plain maximum over the bodies, on lengths that end
/// inside and outside its blocks of eight bodies and past the length it splits on the pool,
/// with the largest move at every kind of place and a NaN anywhere.
#[test]
fn the_largest_move_is_the_plain_maximum_over_the_bodies() {
    use zs_runtime::MoveGuard;
    let plain = |last: &[f64], q: &[f64], stride: usize| {
        let mut most = 0.0_f64;
        for (a, b) in q.chunks_exact(stride).zip(last.chunks_exact(stride)) {
            let r2 = (0..3).map(|c| (a[c] - b[c]) * (a[c] - b[c])).sum::<f64>();
            if r2.is_nan() {
                return f64::NAN;
            }
            most = most.max(r2);
        }
        most.sqrt()
    };
    let mut seed = 0x2545_F491_4F6C_DD1D_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for stride in [3, 4] {
        let guard = MoveGuard::new(0.3, stride);
        for bodies in [0, 1, 7, 8, 9, 17, 2731, 12_001, 40_003] {
            let last: Vec<f64> = (0..bodies * stride).map(|_| next()).collect();
            let moved: Vec<f64> = last.iter().map(|x| x + 0.01 * next()).collect();
            let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            let got = guard.largest_move(&last, &moved);
            assert!(same(got, plain(&last, &moved, stride)), "{stride} {bodies}");
            for at in [0, bodies / 2, bodies.saturating_sub(1)]
                .into_iter()
                .filter(|_| bodies > 0)
            {
                let mut far = moved.clone();
                far[at * stride + 2] += 0.25;
                let want = plain(&last, &far, stride);
                assert!(want > 0.2, "the far body is the largest move");
                assert!(
                    same(guard.largest_move(&last, &far), want),
                    "{stride} {bodies} {at}"
                );
                far[at * stride + 1] = f64::NAN;
                assert!(
                    guard.largest_move(&last, &far).is_nan(),
                    "{stride} {bodies} {at}"
                );
            }
        }
    }
}
