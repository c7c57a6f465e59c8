//! The ring melt through every subcommand of the program `main_with` makes: `run` (built, then
//! from its own data file, with Langevin), `eval`, `nma`, `ensemble`, `temper`, a killed run
//! resumed to the uninterrupted run's bytes, and one-line errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PROGRAM: &str = env!("CARGO_BIN_EXE_own-system");

/// A fresh directory for one test, removed at the end.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("own-system-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

fn program(cwd: &Path, args: &[&str]) -> Output {
    Command::new(PROGRAM)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn ok(cwd: &Path, args: &[&str]) -> String {
    let o = program(cwd, args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn rows(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Build rings and write them as a LAMMPS data file.
fn rings(d: &Path) {
    let built = [
        "run",
        "ring-melt",
        "--rings",
        "8",
        "--beads",
        "20",
        "--t-end",
        "0.1",
        "--quiet",
        "--out",
        "built.csv",
        "--write-data",
        "rings.data",
    ];
    let said = ok(d, &built);
    assert!(said.contains("160 beads in 8 rings (built)"), "{said}");
}

#[test]
fn every_subcommand_runs_the_ring_melt() {
    let t = dir("every");
    let d = t.0.as_path();
    rings(d);
    let data = zs_runtime::lammps::DataFile::read(&d.join("rings.data")).unwrap();
    assert_eq!((data.len(), data.bonds.len()), (160, 160));

    // run from the data file, Langevin, a declared option; CSV with x/y/z columns and XYZ.
    let said = ok(
        d,
        &[
            "run",
            "ring-melt",
            "--data",
            "rings.data",
            "--gamma",
            "1",
            "--kt",
            "1",
            "--bend",
            "8",
            "--t-end",
            "0.5",
            "--quiet",
            "--out",
            "a.csv",
        ],
    );
    assert!(said.contains("bending K = 8"), "{said}");
    assert!(said.contains("longest bond"), "{said}");
    let a = rows(&d.join("a.csv"));
    assert!(a[0].starts_with("t,x1,y1,z1,x2"), "{}", &a[0][..40]);
    assert_eq!(a.len(), 1 + 11);
    assert!(d.join("a.xyz").exists());

    // eval: the file's own configuration, then every row of a state file.
    ok(
        d,
        &[
            "eval",
            "ring-melt",
            "--data",
            "rings.data",
            "--out",
            "f.csv",
        ],
    );
    let f = rows(&d.join("f.csv"));
    assert_eq!(f.len(), 2);
    let v: f64 = f[1].split(',').next().unwrap().parse().unwrap();
    // 160 bending terms of K (1 + cos θ) at θ = π − 2π/20, nothing else (bonds at rest, no
    // contact): V = 160 · 5 · (1 − cos(2π/20)).
    let expected = 160.0 * 5.0 * (1.0 - (2.0 * std::f64::consts::PI / 20.0).cos());
    assert!((v - expected).abs() < 1e-9 * expected, "{v} vs {expected}");
    ok(
        d,
        &[
            "eval",
            "ring-melt",
            "--data",
            "rings.data",
            "--in",
            "a.csv",
            "--out",
            "g.csv",
        ],
    );
    assert_eq!(rows(&d.join("g.csv")).len(), 12);

    // nma: the lowest modes from the exact Hessian.
    ok(
        d,
        &[
            "nma",
            "ring-melt",
            "--data",
            "rings.data",
            "--lowest",
            "5",
            "--out",
            "m.csv",
        ],
    );
    assert_eq!(rows(&d.join("m.csv")).len(), 1 + 5);

    // ensemble and temper.
    ok(
        d,
        &[
            "ensemble",
            "ring-melt",
            "--data",
            "rings.data",
            "--replicas",
            "2",
            "--gamma",
            "1",
            "--kt",
            "1",
            "--t-end",
            "0.2",
            "--quiet",
            "--out-dir",
            "ens",
        ],
    );
    assert!(d.join("ens/summary.csv").exists() && d.join("ens/replica-1.csv").exists());
    ok(
        d,
        &[
            "temper",
            "ring-melt",
            "--data",
            "rings.data",
            "--temperatures",
            "0.8,1.2",
            "--exchange-every",
            "10",
            "--gamma",
            "1",
            "--t-end",
            "0.2",
            "--quiet",
            "--out-dir",
            "tmp",
        ],
    );
    assert!(d.join("tmp/exchanges.csv").exists());
}

/// The system's own guard stops a run whose bonds stretch beyond `--max-bond`, keeping the
/// trajectory up to the last good step.
#[test]
fn its_own_guard_stops_a_run_and_keeps_the_trajectory() {
    let t = dir("guard");
    let d = t.0.as_path();
    rings(d);
    let args = [
        "run",
        "ring-melt",
        "--data",
        "rings.data",
        "--gamma",
        "1",
        "--kt",
        "1",
        "--t-end",
        "1",
        "--max-bond",
        "1.05",
        "--quiet",
        "--out",
        "g.csv",
    ];
    let o = program(d, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("longest bond") && err.contains("exceeds the limit 1.05"),
        "{err}"
    );
    assert!(
        d.join("g.csv").exists() && d.join("g.csv.incomplete").exists(),
        "{err}"
    );
}

#[test]
fn errors_are_one_line_with_a_nonzero_status() {
    let t = dir("errors");
    let d = t.0.as_path();
    rings(d);
    // One ring of 20 beads (diameter 6.39) in a box 6.45 wide: it reaches its own image.
    ok(
        d,
        &[
            "run",
            "ring-melt",
            "--rings",
            "1",
            "--beads",
            "20",
            "--t-end",
            "0.01",
            "--quiet",
            "--out",
            "one.csv",
            "--write-data",
            "one.data",
        ],
    );
    let mut one = zs_runtime::lammps::DataFile::read(&d.join("one.data")).unwrap();
    one.hi[0] = one.lo[0] + 6.45;
    std::fs::write(d.join("narrow.data"), one.to_text()).unwrap();
    for (args, status, says) in [
        (
            &["run", "ring-melt", "--data", "narrow.data"][..],
            1,
            "of one molecule are 0.05",
        ),
        (
            &["eval", "ring-melt", "--data", "narrow.data"][..],
            1,
            "reaches its own periodic image",
        ),
        (
            &["run", "ring-melt", "--data", "rings.data", "--rings", "3"][..],
            1,
            "--rings does not apply to ring-melt",
        ),
        (&["eval", "ring-melt"][..], 1, "ring-melt needs --data FILE"),
        (&["run", "ring-melt", "--bend", "0"][..], 2, "--bend"),
        (&["run", "ring-melt", "--n", "3"][..], 1, "--n applies to"),
        (&["run", "water"][..], 2, "possible values: ring-melt"),
        (
            &["run", "ring-melt", "--data", "missing.data"][..],
            1,
            "missing.data",
        ),
    ] {
        let o = program(d, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(status), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("zs: ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

/// A run killed after its first checkpoint, resumed, ends with the bytes of the run never
/// killed: CSV and XYZ.
#[test]
fn a_killed_run_resumes_to_the_same_bytes() {
    let t = dir("resume");
    let d = t.0.as_path();
    rings(d);
    for t_end in ["40", "400", "4000"] {
        let base = [
            "run",
            "ring-melt",
            "--data",
            "rings.data",
            "--gamma",
            "1",
            "--kt",
            "1",
            "--t-end",
            t_end,
            "--every",
            "400",
            "--quiet",
            "--out",
            "k.csv",
            "--checkpoint",
            "k.ck",
            "--checkpoint-every",
            "2000",
        ];
        for f in ["k.csv", "k.csv.tmp", "k.xyz", "k.xyz.tmp", "k.ck"] {
            let _ = std::fs::remove_file(d.join(f));
        }
        let mut child = Command::new(PROGRAM)
            .args(base)
            .current_dir(d)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !d.join("k.ck").exists() && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        if child.wait().unwrap().success() {
            continue; // finished before the kill: a longer run
        }
        let mut resumed = base.to_vec();
        resumed.extend(["--resume", "k.ck"]);
        ok(d, &resumed);
        let (csv, xyz) = (
            std::fs::read(d.join("k.csv")).unwrap(),
            std::fs::read(d.join("k.xyz")).unwrap(),
        );
        let mut whole = base.to_vec();
        let n = whole.len();
        whole[n - 5] = "whole.csv";
        whole.truncate(n - 4);
        ok(d, &whole);
        assert!(
            csv == std::fs::read(d.join("whole.csv")).unwrap(),
            "CSV differs"
        );
        assert!(
            xyz == std::fs::read(d.join("whole.xyz")).unwrap(),
            "XYZ differs"
        );
        return;
    }
    panic!("every run finished before it could be killed");
}
