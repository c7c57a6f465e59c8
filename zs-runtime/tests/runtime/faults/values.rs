//! Non-finite values and states of the wrong size: typed errors at the step, never a silent
//! wrong trajectory.

use super::*;
use crate::support::fixtures::Free;

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

/// Velocity Verlet and Langevin dynamics around it test the positions and velocities they
/// write (`Stepper::checks_finite`), so the driver does not read the state again: a position
/// that overflows is still a typed error at its step, with the state before it kept and the
/// observers never shown it. A stepper that does not say so is checked by the driver (above).
#[test]
fn a_stepper_that_checks_its_own_state_still_stops_at_a_non_finite_one() {
    // q_k ≈ k·10³⁰⁷: finite up to k = 17, infinite at 18 (f64::MAX ≈ 1.8·10³⁰⁸).
    let (h, s0) = (1e7, State::new([0.0], [1e300]));
    let expect = |e: Option<StepError>, s: State<1>, seen: u64, name: &str| {
        assert_eq!(
            e,
            Some(StepError::non_finite(
                17,
                s0.t + 17.0 * h,
                Quantity::NewPosition
            )),
            "{name}"
        );
        let good = by_hand(VelocityVerlet::new(h), &Free, s0, 17);
        assert_eq!(bits(&s), bits(&good), "{name}");
        assert_eq!(seen, 18, "{name}: the observers saw the start and 17 steps");
    };
    let mut verlet = VelocityVerlet::new(h);
    let mut langevin = Langevin::new(VelocityVerlet::new(h), 0.0, 0.0, 7);
    assert!(!Stepper::<Free, [f64; 1]>::checks_finite(&ZhangSkeel::new(
        0.3, h
    )));
    let steppers: [(&mut dyn Stepper<Free, [f64; 1]>, &str); 2] = [
        (&mut verlet, "velocity Verlet"),
        (&mut langevin, "Langevin around velocity Verlet"),
    ];
    for (stepper, name) in steppers {
        assert!(stepper.checks_finite(), "{name}");
        let mut seen = 0u64;
        let mut s = s0;
        let e = run(
            stepper,
            &Free,
            &mut s,
            1e9,
            &mut [&mut FnObserver(|_: &Free, _: &State<1>| seen += 1)],
        )
        .error;
        expect(e, s, seen, name);
    }
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
