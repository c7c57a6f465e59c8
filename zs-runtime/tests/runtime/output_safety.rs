//! Output files never look complete when they are not: interrupted runs leave only `.tmp`
//! files, failed writes are reported and never renamed, finished files are complete, result
//! files are replaced atomically.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use crate::support::fixtures::Spring;
use zs_runtime::driver::run;
use zs_runtime::observers::{FnObserver, Observer};
use zs_runtime::output::{incomplete_marker_of, write_atomic};
use zs_runtime::{CsvRecorder, State, VelocityVerlet};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-runtime-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn tmp_of(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.tmp", path.display()))
}

#[test]
fn a_recorder_dropped_without_finish_leaves_only_the_tmp_file() {
    let path = temp_path("dropped.csv");
    {
        let mut csv = CsvRecorder::create(&path, 1).unwrap();
        let s = State::new([0.1], [0.0]);
        Observer::<Spring, [f64; 1]>::start(&mut csv, &Spring, &s);
        for _ in 0..10 {
            Observer::<Spring, [f64; 1]>::observe(&mut csv, &Spring, &s);
        }
        assert_eq!(csv.rows(), 11);
    }
    assert!(!path.exists(), "no file under the final name");
    assert!(tmp_of(&path).exists());
    assert!(!incomplete_marker_of(&path).exists());
    std::fs::remove_file(tmp_of(&path)).unwrap();
}

#[test]
fn a_crash_mid_run_keeps_the_previous_complete_file_and_adds_nothing_that_looks_complete() {
    let path = temp_path("crash.csv");
    // A complete file from an earlier run.
    let mut s = State::new([1.0], [0.0]);
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    assert!(
        run(
            &mut VelocityVerlet::new(0.1),
            &Spring,
            &mut s,
            1.0,
            &mut [&mut csv]
        )
        .is_ok()
    );
    let before = std::fs::read(&path).unwrap();
    assert_eq!(String::from_utf8_lossy(&before).lines().count(), 1 + 11);
    // A longer run at the same path crashes (a panic stands for a kill or a power cut).
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut csv = CsvRecorder::create(&path, 1).unwrap();
        let mut n = 0;
        let mut crash = FnObserver(|_: &Spring, _: &State<1>| {
            n += 1;
            assert!(n < 50, "simulated crash");
        });
        let mut s = State::new([1.0], [0.0]);
        run(
            &mut VelocityVerlet::new(0.1),
            &Spring,
            &mut s,
            100.0,
            &mut [&mut csv, &mut crash],
        )
    }));
    assert!(r.is_err());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the old file is intact"
    );
    let partial = std::fs::read_to_string(tmp_of(&path)).unwrap();
    assert_eq!(
        partial.lines().count(),
        1 + 50,
        "the crashed run's rows are in .tmp"
    );
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(tmp_of(&path)).unwrap();
}

#[test]
fn finish_leaves_a_complete_file_and_no_tmp() {
    let path = temp_path("complete.csv");
    let mut csv = CsvRecorder::create(&path, 4).unwrap().with_energy();
    let mut s = State::new([1.0], [0.0]);
    let summary = run(
        &mut VelocityVerlet::new(0.01),
        &Spring,
        &mut s,
        10.0,
        &mut [&mut csv],
    );
    assert!(summary.is_ok());
    assert!(!tmp_of(&path).exists());
    let text = std::fs::read_to_string(&path).unwrap();
    // 1000 steps, every 4th: 1 + 250 rows, each complete, the last at t = 10.
    assert_eq!(text.lines().count(), 1 + 1 + 250);
    assert!(text.ends_with('\n'));
    assert!(text.lines().all(|l| l.split(',').count() == 4));
    assert!(text.lines().last().unwrap().starts_with("10,"));
    // finish is idempotent.
    assert!(csv.finish().is_ok());
    std::fs::remove_file(&path).unwrap();
}

/// Writes fail with ENOSPC on `/dev/full`: the error is reported in the summary and the file is
/// not renamed to its final name.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_is_reported_and_never_renamed() {
    let path = temp_path("full.csv");
    let tmp = tmp_of(&path);
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let mut csv = CsvRecorder::create(&path, 1).unwrap();
    let mut s = State::new([1.0], [0.0]);
    let summary = run(
        &mut VelocityVerlet::new(0.01),
        &Spring,
        &mut s,
        100.0,
        &mut [&mut csv],
    );
    let e = summary.output_error.as_ref().expect("the write failed");
    assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "ENOSPC: {e}");
    assert!(!summary.is_ok());
    assert_eq!(summary.steps, 10_000, "the run itself completed");
    assert!(!path.exists(), "nothing under the final name");
    std::fs::remove_file(&tmp).unwrap();
}

#[test]
fn write_atomic_replaces_whole_files_only() {
    let path = temp_path("result.txt");
    write_atomic(&path, b"first\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"first\n");
    // A stale .tmp from a crashed writer does not matter.
    std::fs::write(tmp_of(&path), b"garbage").unwrap();
    write_atomic(&path, b"second\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second\n");
    assert!(!tmp_of(&path).exists());
    // A missing directory is an error, and creates nothing.
    let bad = temp_path("no-such-dir").join("result.txt");
    assert!(write_atomic(&bad, b"x").is_err());
    assert!(!bad.exists());
    std::fs::remove_file(&path).unwrap();
}
