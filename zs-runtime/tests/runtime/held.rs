//! A state held in the system's own inner order (`Assembled::held_inside`): the liquid of
//! `resort.rs`, numbered at random and held in spatial order, steps as the system itself does
//! (the same bits, permuted back, while neither re-sorts); re-sorts between steps to the same
//! bits at 1 and 2 threads and on every instruction set; writes its checkpoints, CSV rows and
//! XYZ frames in the user's order; resumes bit for bit.

use crate::resort::{H, bits, liquid, start};
use crate::support::assembled::TypedLiquid;
use zs_runtime::assembly::{Assembled, BodyOrder, HeldInside, Terms, Topology};
use zs_runtime::driver::{Checkpointing, resume, run_checkpointed, run_steps};
use zs_runtime::model::HessianPart;
use zs_runtime::observers::Observer;
use zs_runtime::simd::Isa;
use zs_runtime::xyz::XyzRecorder;
use zs_runtime::{Checkpoint, CsvRecorder, DynState, EnergyObserver, Model, VelocityVerlet};

/// The held system as the steppers see it in `zs run` (behind `dyn`): one instantiation of the
/// steppers and the driver for every test here.
fn model<'a, T: Terms<3>>(held: &'a HeldInside<'_, T, 3>) -> &'a dyn Model<Vec<f64>> {
    held
}

/// Held inside, the liquid in spatial order steps as the system itself, which gathers and
/// scatters at every evaluation: the same bits once permuted back, the same list builds, the
/// same energies to rounding (the kinetic energy is summed in another order).
#[test]
fn a_held_run_is_the_systems_run_permuted_bit_for_bit() {
    let (q, v) = start();
    let steps = 200;
    let system = liquid(BodyOrder::Cells, &q, 0);
    let mut s = system.state(q.clone(), v.clone());
    let mut energy = EnergyObserver::new();
    let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut energy];
    assert!(
        run_steps(
            &mut VelocityVerlet::new(H),
            &system,
            &mut s,
            steps,
            observers
        )
        .is_ok()
    );

    let other = liquid(BodyOrder::Cells, &q, 0);
    let held = other.held_inside();
    let mut h = held.state(other.state(q.clone(), v));
    assert_ne!(h.q, q, "the state is held in another order");
    assert_eq!(held.user_state(&h).q, q, "and shown in the user's");
    let mut held_energy = EnergyObserver::new();
    let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut held_energy];
    assert!(
        run_steps(
            &mut VelocityVerlet::new(H),
            model(&held),
            &mut h,
            steps,
            observers
        )
        .is_ok()
    );

    assert!(
        bits(&held.user_state(&h)) == bits(&s),
        "the held run ends elsewhere"
    );
    assert!(
        system.neighbor_builds() >= 10,
        "{} builds",
        system.neighbor_builds()
    );
    assert_eq!(other.neighbor_builds(), system.neighbor_builds());
    assert_eq!((system.resorts(), other.resorts()), (0, 0));
    let (a, b) = (energy.max_abs_drift(), held_energy.max_abs_drift());
    assert!(
        a > 0.0 && (a - b).abs() <= 1e-9 * a.max(1.0),
        "drifts {a:e} and {b:e}"
    );
    let e0 = energy.initial_energy().expect("observed");
    let e1 = held_energy.initial_energy().expect("observed");
    assert!((e0 - e1).abs() <= 1e-12 * e0.abs(), "{e0} vs {e1}");
}

/// Re-sorting between steps: the same bits at 1 and 2 threads and on every instruction set;
/// the checkpoint's state is the user's order (a run of as many steps, shown in it); a run
/// resumed by a system set up afresh ends with the same bits, builds and re-sorts.
#[test]
fn a_held_re_sorting_run_is_deterministic_and_resumes_bit_for_bit() {
    let (q, v) = start();
    let steps = 300;
    let t_end = steps as f64 * H;
    let path = std::env::temp_dir().join(format!("zs-held-{}.ck", std::process::id()));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool");
    let mut ends = Vec::new();
    for (isa, parallel) in Isa::available()
        .into_iter()
        .flat_map(|isa| [(isa, false), (isa, true)])
    {
        let system = liquid(BodyOrder::Cells, &q, 3)
            .with_simd(isa)
            .with_parallel(parallel);
        let held = system.held_inside();
        let mut s = held.state(system.state(q.clone(), v.clone()));
        let summary = pool.install(|| {
            run_checkpointed(
                &mut VelocityVerlet::new(H),
                model(&held),
                &mut s,
                t_end,
                &mut [],
                &Checkpointing::new(&path, 200),
            )
        });
        assert!(summary.is_ok(), "{summary:?}");
        ends.push((
            bits(&held.user_state(&s)),
            system.neighbor_builds(),
            system.resorts(),
        ));
    }
    let (end, builds, resorts) = ends[0].clone();
    assert!(resorts >= 5, "{resorts} re-sorts in {builds} builds");
    assert!(ends.iter().all(|e| *e == ends[0]), "another end elsewhere");

    let cp = Checkpoint::read(&path).expect("the checkpoint");
    assert_eq!(cp.u64("run.done").expect("run.done"), 200);
    let system = liquid(BodyOrder::Cells, &q, 3);
    let held = system.held_inside();
    let mut s = held.state(system.state(q.clone(), v.clone()));
    assert!(
        run_steps(
            &mut VelocityVerlet::new(H),
            model(&held),
            &mut s,
            200,
            &mut []
        )
        .is_ok()
    );
    let at: DynState = cp.state().expect("the state");
    assert!(
        bits(&at) == bits(&held.user_state(&s)),
        "the checkpoint holds the state in the user's order"
    );

    let system = liquid(BodyOrder::Cells, &q, 3);
    let held = system.held_inside();
    let mut r = DynState::new(vec![0.0; q.len()], vec![0.0; q.len()]);
    let summary = resume(
        &mut VelocityVerlet::new(H),
        model(&held),
        &mut r,
        &cp,
        &mut [],
        None,
    )
    .expect("resumes");
    assert!(summary.is_ok(), "{summary:?}");
    assert!(
        bits(&held.user_state(&r)) == end,
        "the resumed run ends elsewhere"
    );
    assert_eq!(
        (system.neighbor_builds(), system.resorts()),
        (builds, resorts)
    );
    std::fs::remove_file(&path).expect("remove the checkpoint");
}

/// The CSV rows and XYZ frames of a held run are those of the system's own run: every
/// coordinate's field the same text, the energy to rounding.
#[test]
fn a_held_run_records_in_the_users_order() {
    let (q, v) = start();
    let n = q.len() / 3;
    let dir = std::env::temp_dir().join(format!("zs-held-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let files = |name: &str, held: bool| {
        let system = liquid(BodyOrder::Cells, &q, 0);
        let csv_path = dir.join(format!("{name}.csv"));
        let xyz_path = dir.join(format!("{name}.xyz"));
        let mut csv = CsvRecorder::create(&csv_path, 25)
            .expect("a CSV")
            .with_xyz_names(n)
            .with_energy();
        let mut xyz = XyzRecorder::create(&xyz_path, vec!["Ar".to_string(); n], 25).expect("XYZ");
        let mut vv = VelocityVerlet::new(H);
        let ok = if held {
            let held = system.held_inside();
            let mut s = held.state(system.state(q.clone(), v.clone()));
            let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut csv, &mut xyz];
            run_steps(&mut vv, model(&held), &mut s, 100, observers).is_ok()
        } else {
            let mut s = system.state(q.clone(), v.clone());
            let observers: &mut [&mut dyn Observer<_, Vec<f64>>] = &mut [&mut csv, &mut xyz];
            run_steps(&mut vv, &system, &mut s, 100, observers).is_ok()
        };
        assert!(ok);
        let read = |p| std::fs::read_to_string(p).expect("written");
        (read(&csv_path), read(&xyz_path))
    };
    let ((csv, xyz), (held_csv, held_xyz)) = (files("system", false), files("held", true));
    assert_eq!(held_xyz, xyz);
    let rows = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    };
    let (a, b) = (rows(&csv), rows(&held_csv));
    assert_eq!(a.len(), 6, "a header and five rows");
    assert_eq!(a[0], b[0], "the header");
    for (x, y) in a[1..].iter().zip(&b[1..]) {
        let last = x.len() - 1;
        assert_eq!(x[..last], y[..last], "t, positions and velocities");
        let (e, f): (f64, f64) = (x[last].parse().unwrap(), y[last].parse().unwrap());
        assert!((e - f).abs() <= 1e-12 * e.abs(), "energies {e} and {f}");
    }
    std::fs::remove_dir_all(&dir).expect("remove the files");
}

/// A stepper that would make the Hessian's matrix is refused: its pattern is the user's.
#[test]
#[should_panic(expected = "takes the system itself")]
fn a_held_system_in_spatial_order_makes_no_matrix() {
    let (q, _) = start();
    let system = liquid(BodyOrder::Cells, &q, 0);
    let _ = system.held_inside().new_matrix(HessianPart::Full);
}

/// A system made in its own order and then held in cells (`Assembled::hold_in_cells`, what
/// `zs run` does) evaluates as one made in cells: a held run of each ends on the same bits,
/// with no re-sort counted for the set-up.
#[test]
fn a_system_held_in_cells_after_set_up_is_one_made_in_cells() {
    let (q, v) = start();
    let run = |system: &Assembled<crate::support::assembled::Melt, 3>| {
        let held = system.held_inside();
        let mut s = held.state(system.state(q.clone(), v.clone()));
        assert!(
            run_steps(
                &mut VelocityVerlet::new(H),
                model(&held),
                &mut s,
                100,
                &mut []
            )
            .is_ok()
        );
        held.user_state(&s)
    };
    let made = liquid(BodyOrder::Cells, &q, 0);
    let given = liquid(BodyOrder::Given, &q, 0);
    assert_eq!(given.body_order(), BodyOrder::Given);
    assert!(given.hold_in_cells(&q).expect("the start's length"));
    assert_eq!((given.body_order(), given.resorts()), (BodyOrder::Cells, 0));
    assert!(bits(&run(&given)) == bits(&run(&made)));
    assert!(
        given.hold_in_cells(&q[1..]).is_err(),
        "a start of the wrong length"
    );
}

/// Bodies of two masses held in spatial order: the masses a stepper reads (copied, not lent:
/// the table's rows are the user's) and the kinetic energy are the permuted ones, and a held
/// run is the system's run bit for bit.
#[test]
fn a_held_system_of_two_masses_gives_its_masses_in_its_order() {
    let (q, v) = start();
    let n = q.len() / 3;
    let make = || {
        let side = 1.1 * (n as f64).cbrt().round();
        let topology = Topology::new(n)
            .periodic([side; 3])
            .cutoff(2.5, 0.3)
            .types((0..n).map(|i| u32::from(i % 3 == 0)));
        let eps4 = [[4.0, 3.0], [3.0, 2.0]];
        Assembled::ordered(TypedLiquid { eps4 }, topology, BodyOrder::Cells, &q)
            .expect("valid")
            .with_resort_period(0)
    };
    let (system, other) = (make(), make());
    let held = other.held_inside();
    assert!(
        held.masses_lent().is_none(),
        "two masses are not lent in the inner order"
    );
    let mut h = held.state(other.state(q.clone(), v.clone()));
    let (mut user_m, mut held_m) = (vec![0.0; q.len()], vec![0.0; q.len()]);
    system.masses_into_slice(&mut user_m);
    held.masses_into_slice(&mut held_m);
    let mut m = DynState::new(held_m.clone(), held_m);
    m = held.user_state(&m);
    assert_eq!(m.q, user_m, "the held masses are the user's, permuted");
    assert!(user_m.contains(&3.0) && user_m.contains(&1.0));
    let (k0, k1) = (system.kinetic_energy(&v), held.kinetic_energy(&h.v));
    assert!((k0 - k1).abs() <= 1e-13 * k0, "{k0} vs {k1}");

    let mut s = system.state(q.clone(), v);
    assert!(run_steps(&mut VelocityVerlet::new(H), &system, &mut s, 100, &mut []).is_ok());
    assert!(
        run_steps(
            &mut VelocityVerlet::new(H),
            model(&held),
            &mut h,
            100,
            &mut []
        )
        .is_ok()
    );
    assert!(
        bits(&held.user_state(&h)) == bits(&s),
        "the held run ends elsewhere"
    );
}

/// Re-sorted at every build, a held liquid follows the same liquid in its own order to
/// rounding: each re-sort permutes the state from the old order to the new one, positions and
/// velocities alike.
#[test]
fn a_held_liquid_re_sorted_at_every_build_follows_its_own_order() {
    let (q, v) = start();
    let run = |system: &Assembled<crate::support::assembled::Melt, 3>, held: bool| {
        let mut s = system.state(q.clone(), v.clone());
        if held {
            let view = system.held_inside();
            s = view.state(s);
            assert!(
                run_steps(
                    &mut VelocityVerlet::new(H),
                    model(&view),
                    &mut s,
                    60,
                    &mut []
                )
                .is_ok()
            );
            view.user_state(&s)
        } else {
            assert!(run_steps(&mut VelocityVerlet::new(H), system, &mut s, 60, &mut []).is_ok());
            s
        }
    };
    let (held, given) = (
        liquid(BodyOrder::Cells, &q, 1),
        liquid(BodyOrder::Given, &q, 0),
    );
    let (a, b) = (run(&held, true), run(&given, false));
    assert!(held.resorts() >= 5, "{} re-sorts", held.resorts());
    let far =
        a.q.iter()
            .chain(&a.v)
            .zip(b.q.iter().chain(&b.v))
            .fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(far <= 1e-10, "the two orders part by {far:e}");
}
