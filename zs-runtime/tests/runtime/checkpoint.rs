//! Checkpoint and restart: a run interrupted after a checkpoint and resumed from the file gives
//! bit-for-bit the states, observer summaries and CSV bytes of the uninterrupted run.
//!
//! The interruption is a panic inside an observer a few steps after a checkpoint, caught with
//! `catch_unwind`: like a crash or a kill, nothing is finished (the CSV recorder is dropped
//! without `finish`, its `.tmp` file is longer than at the checkpoint). The resumed run uses a
//! *new* stepper constructed the ordinary way (empty caches), a recorder reopened on the `.tmp`
//! file, and the checkpoint read back from disk.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use zs_runtime::checkpoint::Resumable;
use zs_runtime::driver::{Checkpointing, resume, run, run_checkpointed};
use zs_runtime::observers::{FnObserver, Observer};
use zs_runtime::{
    Checkpoint, CheckpointError, Clocked, ConstraintObserver, CsvRecorder, EnergyGuard,
    EnergyObserver, Langevin, MechanicalSystem, Penalized, Potential, ResumableStepper, State,
    Stepper, VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified,
};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-runtime-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn tmp_of(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.tmp", path.display()))
}

fn bits<const N: usize>(s: &State<N>) -> Vec<u64> {
    s.q.iter()
        .chain(&s.v)
        .chain([&s.t])
        .map(|x| x.to_bits())
        .collect()
}

/// A pendulum of length 1 in Cartesian coordinates with gravity, penalized:
/// `V = y + ½ω²(|q|² - 1)²` — nonlinear, non-convex (the Z&S solve falls back to LU at times),
/// with a nonzero third derivative.
struct Pendulum;

impl Potential<2> for Pendulum {
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

impl MechanicalSystem<2, 1> for Pendulum {
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
    fn constraint_jacobian(&self, q: &[f64; 2]) -> [[f64; 2]; 1] {
        [[2.0 * q[0], 2.0 * q[1]]]
    }
    fn penalized_potential(&self, omega: f64, q: &[f64; 2]) -> f64 {
        let g = self.constraints(q)[0];
        q[1] + 0.5 * omega * omega * g * g
    }
    fn penalized_gradient(&self, omega: f64, q: &[f64; 2]) -> [f64; 2] {
        let g = self.constraints(q)[0];
        let w2 = omega * omega;
        [2.0 * w2 * g * q[0], 1.0 + 2.0 * w2 * g * q[1]]
    }
    fn penalized_hessian(&self, omega: f64, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let g = self.constraints(q)[0];
        let w2 = omega * omega;
        core::array::from_fn(|i| {
            core::array::from_fn(|j| w2 * (4.0 * q[i] * q[j] + if i == j { 2.0 * g } else { 0.0 }))
        })
    }
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        let ga = 2.0 * (q[0] * a[0] + q[1] * a[1]);
        let aa = 2.0 * (a[0] * a[0] + a[1] * a[1]);
        let w2 = omega * omega;
        core::array::from_fn(|i| w2 * (4.0 * ga * a[i] + 2.0 * aa * q[i]))
    }
}

const S0: State<2> = State {
    q: [1.0, 0.0],
    v: [0.0, -0.5],
    t: 0.0,
};

/// The uninterrupted run and the interrupted-then-resumed one, compared bit for bit.
///
/// `make` builds a fresh stepper; the run goes to `t_end` (not a multiple of `h`, so the
/// driver's adjusted last step is exercised too) with a checkpoint every `every` steps and a
/// crash after `crash_at` steps.
fn straight_vs_resumed<S>(tag: &str, make: impl Fn() -> S, t_end: f64, every: u64, crash_at: u64)
where
    S: for<'a> Stepper<Penalized<'a, Pendulum, 2, 1>, [f64; 2]> + Resumable,
{
    let sys = Pendulum;
    let target = sys.penalized(10.0);

    // 1. Uninterrupted.
    let straight_csv = temp_path(&format!("{tag}-straight.csv"));
    let mut straight_states = Vec::new();
    let (mut energy_a, mut residual_a) = (EnergyObserver::new(), ConstraintObserver::new(&sys));
    {
        let mut csv = CsvRecorder::create(&straight_csv, 3)
            .unwrap()
            .with_energy()
            .with_constraints(&sys);
        let mut rec = FnObserver(|_: &_, s: &State<2>| straight_states.push(bits(s)));
        let mut s = S0;
        let summary = run(
            &mut make(),
            &target,
            &mut s,
            t_end,
            &mut [&mut csv, &mut energy_a, &mut residual_a, &mut rec],
        );
        assert!(summary.is_ok(), "{summary:?}");
    }

    // 2. Checkpointed, crashing after `crash_at` steps.
    let csv_path = temp_path(&format!("{tag}-resumed.csv"));
    let ck_path = temp_path(&format!("{tag}.ck"));
    let _ = std::fs::remove_file(&ck_path);
    let mut first_states = Vec::new();
    let crashed = catch_unwind(AssertUnwindSafe(|| {
        let mut csv = CsvRecorder::create(&csv_path, 3)
            .unwrap()
            .with_energy()
            .with_constraints(&sys);
        let (mut energy, mut residual) = (EnergyObserver::new(), ConstraintObserver::new(&sys));
        let mut count = 0u64;
        let mut rec = FnObserver(|_: &_, s: &State<2>| {
            first_states.push(bits(s));
            if count == crash_at {
                panic!("simulated crash after step {crash_at}");
            }
            count += 1;
        });
        let mut s = S0;
        run_checkpointed(
            &mut make(),
            &target,
            &mut s,
            t_end,
            &mut [&mut csv, &mut energy, &mut residual, &mut rec],
            &Checkpointing::new(&ck_path, every),
        )
    }));
    assert!(crashed.is_err(), "the run was interrupted");
    assert!(
        !csv_path.exists(),
        "an interrupted run never has the final file"
    );
    assert!(tmp_of(&csv_path).exists());
    // Bytes beyond the checkpoint (rows written after it, a torn last write) are discarded on
    // resume, even when there are more of them than the rest of the run writes.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(tmp_of(&csv_path))
            .unwrap();
        f.write_all(&[b'#'; 100_000]).unwrap();
    }

    // 3. Resume from the file with a new stepper and reopened observers.
    let cp = Checkpoint::read(&ck_path).unwrap();
    let at = cp.u64("run.done").unwrap();
    assert_eq!(
        at,
        crash_at / every * every,
        "the last checkpoint before the crash"
    );
    let mut resumed_states = Vec::new();
    let (mut energy_b, mut residual_b) = (EnergyObserver::new(), ConstraintObserver::new(&sys));
    let mut stepper = make();
    let summary = {
        let mut csv = CsvRecorder::reopen(&csv_path, 3)
            .unwrap()
            .with_energy()
            .with_constraints(&sys);
        let mut rec = FnObserver(|_: &_, s: &State<2>| resumed_states.push(bits(s)));
        let mut s = State::new([9.0; 2], [9.0; 2]);
        let summary = resume(
            &mut stepper,
            &target,
            &mut s,
            &cp,
            &mut [&mut csv, &mut energy_b, &mut residual_b, &mut rec],
            Some(&Checkpointing::new(&ck_path, every)),
        )
        .unwrap();
        assert_eq!(bits(&s), *straight_states.last().unwrap());
        summary
    };
    assert!(summary.is_ok(), "{summary:?}");
    assert_eq!(summary.resumed_at, at);
    assert_eq!(summary.steps, straight_states.len() as u64 - 1);
    assert_eq!(stepper.steps_taken(), summary.steps);

    // Every state: the first run's up to the checkpoint, then the resumed run's.
    let n = straight_states.len();
    assert!(first_states.len() as u64 == crash_at + 1 && (at as usize) < n);
    assert_eq!(
        first_states[..=at as usize],
        straight_states[..=at as usize]
    );
    assert_eq!(
        resumed_states[..],
        straight_states[at as usize + 1..],
        "{tag}"
    );
    // Observer summaries and the CSV file, byte for byte.
    assert_eq!(
        energy_a.max_abs_drift().to_bits(),
        energy_b.max_abs_drift().to_bits()
    );
    assert_eq!(energy_a.samples(), energy_b.samples());
    assert_eq!(
        energy_a.final_drift().to_bits(),
        energy_b.final_drift().to_bits()
    );
    assert_eq!(
        residual_a.max_residual().to_bits(),
        residual_b.max_residual().to_bits()
    );
    let (a, b) = (
        std::fs::read(&straight_csv).unwrap(),
        std::fs::read(&csv_path).unwrap(),
    );
    assert!(a.len() > 1000);
    assert!(
        a == b,
        "{tag}: the resumed CSV differs from the uninterrupted one"
    );
    eprintln!(
        "{tag}: {n} states, checkpoint at step {at}, crash after {crash_at}: identical ({} CSV bytes)",
        a.len()
    );
    for p in [straight_csv, csv_path, ck_path] {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn zhang_skeel_resumes_bit_for_bit() {
    // h ω_eff ≈ 0.05 · 20 = 1: beyond Verlet's comfort, where Z&S is used.
    straight_vs_resumed("zs", || ZhangSkeel::new(0.4, 0.05), 10.02, 40, 97);
}

#[test]
fn zhang_skeel_simplified_resumes_bit_for_bit() {
    straight_vs_resumed(
        "zss",
        || ZhangSkeelSimplified::new(0.3, 0.05),
        10.02,
        25,
        130,
    );
}

#[test]
fn velocity_verlet_resumes_bit_for_bit() {
    straight_vs_resumed("verlet", || VelocityVerlet::new(0.01), 5.003, 100, 250);
}

/// A stepper chosen at run time, boxed as `dyn ResumableStepper` (Langevin around a boxed
/// inner one too), checkpoints and resumes like the stepper it holds.
#[test]
fn boxed_resumable_steppers_resume_bit_for_bit() {
    type Boxed = Box<dyn for<'a> ResumableStepper<Penalized<'a, Pendulum, 2, 1>, [f64; 2]>>;
    for langevin in [false, true] {
        let make = || -> Boxed {
            let inner: Boxed = Box::new(ZhangSkeel::new(0.4, 0.05));
            if langevin {
                Box::new(Langevin::new(inner, 0.5, 0.2, 7))
            } else {
                inner
            }
        };
        straight_vs_resumed(&format!("boxed-{langevin}"), make, 10.02, 40, 97);
    }
}

#[test]
fn langevin_over_zhang_skeel_resumes_bit_for_bit() {
    // The noise stream's position is part of the checkpoint: the resumed run draws the same
    // normal deviates.
    straight_vs_resumed(
        "langevin-zs",
        || Langevin::new(ZhangSkeel::new(0.4, 0.05), 0.5, 0.2, 7),
        10.02,
        40,
        97,
    );
}

#[test]
fn langevin_over_verlet_resumes_bit_for_bit() {
    straight_vs_resumed(
        "langevin-verlet",
        || Langevin::new(VelocityVerlet::new(0.01), 2.0, 1.0, u64::MAX),
        5.003,
        64,
        300,
    );
}

#[test]
fn a_langevin_checkpoint_restores_parameters_seed_and_stream_position() {
    let sys = Pendulum;
    let target = sys.penalized(10.0);
    let mut gla = Langevin::new(VelocityVerlet::new(0.01), 2.0, 1.0, 11);
    let mut s = S0;
    for _ in 0..37 {
        gla.step(&target, &mut s).unwrap();
    }
    let mut cp = Checkpoint::new();
    gla.save(&mut cp.scope_mut("stepper"));
    let cp = Checkpoint::from_text(&cp.to_text()).unwrap();
    // Constructed with other parameters and seed: all restored.
    let mut back = Langevin::new(VelocityVerlet::new(0.5), 0.1, 3.0, 99);
    back.restore(&cp.scope("stepper")).unwrap();
    assert_eq!((back.gamma(), back.kt(), back.rng_seed()), (2.0, 1.0, 11));
    assert_eq!(back.rng_state(), gla.rng_state());
    assert_eq!((back.inner().h(), back.steps_taken()), (0.01, 37));
    let mut s2 = s;
    for _ in 0..50 {
        gla.step(&target, &mut s).unwrap();
        back.step(&target, &mut s2).unwrap();
    }
    assert_eq!(bits(&s), bits(&s2));
    // A different seed gives a different trajectory: the test above could fail.
    let mut other = Langevin::new(VelocityVerlet::new(0.01), 2.0, 1.0, 12);
    let mut s3 = S0;
    for _ in 0..87 {
        other.step(&target, &mut s3).unwrap();
    }
    assert_ne!(bits(&s), bits(&s3));
}

#[test]
fn a_checkpoint_taken_with_a_condition_limit_restores_it() {
    let mut zs = ZhangSkeel::<[f64; 2]>::new(0.4, 0.05).with_max_condition(1e9);
    let mut cp = Checkpoint::new();
    zs.save(&mut cp.scope_mut("stepper"));
    let mut back = ZhangSkeel::<[f64; 2]>::new(0.25, 1.0);
    back.restore(&cp.scope("stepper")).unwrap();
    assert_eq!(
        (back.beta(), back.h(), back.max_condition()),
        (0.4, 0.05, 1e9)
    );
    zs.set_beta(0.3);
    assert_eq!(zs.beta(), 0.3);
}

#[test]
fn resume_rejects_checkpoints_of_another_run() {
    let sys = Pendulum;
    let target = sys.penalized(10.0);
    let ck = temp_path("other.ck");
    let mut s = S0;
    let summary = run_checkpointed(
        &mut ZhangSkeel::new(0.4, 0.05),
        &target,
        &mut s,
        1.0,
        &mut [&mut EnergyObserver::new()],
        &Checkpointing::new(&ck, 5),
    );
    assert!(summary.is_ok());
    assert_eq!(
        summary.checkpoints, 3,
        "at steps 5, 10, 15; none after the last step 20"
    );
    let cp = Checkpoint::read(&ck).unwrap();
    assert_eq!(cp.u64("run.done").unwrap(), 15);
    let mut s = S0;
    // Another method.
    let e = resume(
        &mut VelocityVerlet::new(0.05),
        &target,
        &mut s,
        &cp,
        &mut [&mut EnergyObserver::new()],
        None,
    )
    .unwrap_err();
    assert!(matches!(e, CheckpointError::Mismatch(_)), "{e}");
    assert!(e.to_string().contains("'zhang-skeel'"), "{e}");
    // Langevin names its inner method: a run of it around Z&S does not resume around Verlet.
    let lck = temp_path("other-langevin.ck");
    let mut s = S0;
    let summary = run_checkpointed(
        &mut Langevin::new(ZhangSkeel::new(0.4, 0.05), 1.0, 0.1, 3),
        &target,
        &mut s,
        1.0,
        &mut [],
        &Checkpointing::new(&lck, 5),
    );
    assert_eq!(summary.stepper, "langevin(zhang-skeel)");
    let lcp = Checkpoint::read(&lck).unwrap();
    let mut s = S0;
    let e = resume(
        &mut Langevin::new(VelocityVerlet::new(0.05), 1.0, 0.1, 3),
        &target,
        &mut s,
        &lcp,
        &mut [],
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("'langevin(zhang-skeel)'"), "{e}");
    std::fs::remove_file(&lck).unwrap();
    // Other observers.
    let e = resume(
        &mut ZhangSkeel::new(0.4, 0.05),
        &target,
        &mut s,
        &cp,
        &mut [],
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("1 observers at the checkpoint, 0 now"),
        "{e}"
    );
    let mut guard = EnergyGuard::new(1.0);
    let e = resume(
        &mut ZhangSkeel::new(0.4, 0.05),
        &target,
        &mut s,
        &cp,
        &mut [&mut guard],
        None,
    )
    .unwrap_err();
    assert!(matches!(e, CheckpointError::Missing(_)), "{e}");
    // Another dimension.
    let mut s1 = State::new([0.0], [0.0]);
    use crate::support::fixtures::Free;
    let e = resume(
        &mut ZhangSkeel::new(0.4, 0.05),
        &Free,
        &mut s1,
        &cp,
        &mut [&mut EnergyObserver::new()],
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("2 coordinates, the system 1"), "{e}");
    // Nothing was stepped: the states are as given.
    assert_eq!(s, S0);
    // A damaged file.
    let text = std::fs::read_to_string(&ck).unwrap();
    std::fs::write(&ck, &text[..text.len() - 30]).unwrap();
    assert!(matches!(
        Checkpoint::read(&ck),
        Err(CheckpointError::Format { .. })
    ));
    std::fs::remove_file(&ck).unwrap();
    assert!(matches!(
        Checkpoint::read(&ck),
        Err(CheckpointError::Io { .. })
    ));
}

#[test]
fn a_trajectory_file_shorter_than_at_the_checkpoint_is_rejected() {
    let sys = Pendulum;
    let target = sys.penalized(10.0);
    let (csv_path, ck) = (temp_path("short.csv"), temp_path("short.ck"));
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut csv = CsvRecorder::create(&csv_path, 1).unwrap();
        let mut n = 0;
        let mut crash = FnObserver(|_: &_, _: &State<2>| {
            n += 1;
            assert!(n < 30, "simulated crash");
        });
        let mut s = S0;
        run_checkpointed(
            &mut VelocityVerlet::new(0.01),
            &target,
            &mut s,
            1.0,
            &mut [&mut csv, &mut crash],
            &Checkpointing::new(&ck, 10),
        )
    }));
    let cp = Checkpoint::read(&ck).unwrap();
    let tmp = tmp_of(&csv_path);
    std::fs::write(&tmp, "t,q0,q1,v0,v1\n").unwrap();
    let mut csv = CsvRecorder::reopen(&csv_path, 1).unwrap();
    let mut s = S0;
    let mut crash = FnObserver(|_: &_, _: &State<2>| {});
    let obs: &mut [&mut dyn Observer<Penalized<'_, Pendulum, 2, 1>, [f64; 2]>] =
        &mut [&mut csv, &mut crash];
    let e = resume(
        &mut VelocityVerlet::new(0.01),
        &target,
        &mut s,
        &cp,
        obs,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("fewer than the"), "{e}");
    // Reopening a file that does not exist is an I/O error.
    std::fs::remove_file(&tmp).unwrap();
    assert!(CsvRecorder::<[f64; 2]>::reopen(&csv_path, 1).is_err());
    std::fs::remove_file(&ck).unwrap();
}

/// A recorder reopened without the coordinates' names keeps those of the header it wrote (named
/// or numbered), and the resumed file is the uninterrupted one; a recorder set up with other
/// columns is refused in one line that names the first column that differs, not all of them.
#[test]
fn a_reopened_recorder_keeps_the_header_it_wrote() {
    let sys = Pendulum;
    let target = sys.penalized(10.0);
    for named in [true, false] {
        let tag = if named { "named" } else { "numbered" };
        let (straight, csv_path, ck) = (
            temp_path(&format!("header-{tag}-straight.csv")),
            temp_path(&format!("header-{tag}.csv")),
            temp_path(&format!("header-{tag}.ck")),
        );
        let recorder = |path: &Path| {
            let csv = CsvRecorder::create(path, 1).unwrap().with_energy();
            if named {
                csv.with_names(["x", "y"])
            } else {
                csv
            }
        };
        {
            let mut csv = recorder(&straight);
            let mut s = S0;
            assert!(
                run(
                    &mut VelocityVerlet::new(0.01),
                    &target,
                    &mut s,
                    0.5,
                    &mut [&mut csv]
                )
                .is_ok()
            );
        }
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let mut csv = recorder(&csv_path);
            let mut n = 0;
            let mut crash = FnObserver(|_: &_, _: &State<2>| {
                n += 1;
                assert!(n < 30, "simulated crash");
            });
            let mut s = S0;
            run_checkpointed(
                &mut VelocityVerlet::new(0.01),
                &target,
                &mut s,
                0.5,
                &mut [&mut csv, &mut crash],
                &Checkpointing::new(&ck, 10),
            )
        }));
        let cp = Checkpoint::read(&ck).unwrap();
        // Other columns: refused, naming the first difference.
        {
            let mut csv = CsvRecorder::reopen(&csv_path, 1).unwrap();
            let mut quiet = FnObserver(|_: &_, _: &State<2>| {});
            let mut s = S0;
            let e = resume(
                &mut VelocityVerlet::new(0.01),
                &target,
                &mut s,
                &cp,
                &mut [&mut csv, &mut quiet],
                None,
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("the columns differ from column")
                    && e.contains("(6 columns at the checkpoint, 5 now)"),
                "{e}"
            );
            assert!(e.lines().count() == 1 && e.len() < 300, "{e}");
        }
        let mut csv = CsvRecorder::reopen(&csv_path, 1).unwrap().with_energy();
        let mut quiet = FnObserver(|_: &_, _: &State<2>| {});
        let mut s = S0;
        let summary = resume(
            &mut VelocityVerlet::new(0.01),
            &target,
            &mut s,
            &cp,
            &mut [&mut csv, &mut quiet],
            None,
        )
        .unwrap();
        assert!(summary.is_ok(), "{summary:?}");
        assert_eq!(
            std::fs::read(&csv_path).unwrap(),
            std::fs::read(&straight).unwrap(),
            "{tag}"
        );
        let header = std::fs::read_to_string(&csv_path).unwrap();
        let first = header.lines().next().unwrap().to_string();
        assert_eq!(
            first,
            if named {
                "t,x,y,v_x,v_y,energy"
            } else {
                "t,q0,q1,v0,v1,energy"
            }
        );
        for p in [straight, csv_path, ck] {
            std::fs::remove_file(p).unwrap();
        }
    }
}
