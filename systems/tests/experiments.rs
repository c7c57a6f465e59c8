//! The experiments of `zs reproduce`, run in cheap versions (short T, few ω, coarse sweeps), and
//! the qualitative facts the paper's figures show, asserted. The full runs are
//! `cargo run --release -p zs-systems --bin zs -- reproduce <experiment>` (see EXPERIMENTS.md).

use std::path::PathBuf;
use std::process::Command;

use zs_systems::experiments::constraint_scaling::{self, Status};

/// A fresh, empty directory under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-exp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn constraint_scaling_omega2_g_stays_bounded_over_a_decade_and_a_half() {
    let cfg = constraint_scaling::Config::quick();
    let out = constraint_scaling::run(&cfg);
    // h = 0.01 (the paper's Fig. 2 step): every run completes and ω²‖g‖ (max over t ≤ T) stays
    // within a factor 10 while ω² grows a thousandfold — g = O(ω⁻²).
    let fine: Vec<_> = out.at_step(0.01).collect();
    assert_eq!(fine.len(), cfg.omegas.len());
    assert!(
        fine.iter().all(|p| p.status == Status::Completed),
        "{fine:#?}"
    );
    let max = fine.iter().map(|p| p.scaled_max).fold(0.0, f64::max);
    let min = fine
        .iter()
        .map(|p| p.scaled_max)
        .fold(f64::INFINITY, f64::min);
    assert!(max / min < 10.0, "ω²‖g‖ ranges over [{min}, {max}]");
    // ‖g‖ itself does decrease with ω: by more than 100x over the sweep.
    let g_first = fine.first().unwrap().g_max;
    let g_last = fine.last().unwrap().g_max;
    assert!(g_first / g_last > 100.0, "max ‖g‖ {g_first} → {g_last}");
    // h = 0.1: the step of Fig. 1 is stable at ω = 10 but Z&S diverges at ω = 316
    // (hω ≈ 32): the paper's "instability for too large ω", measured.
    let coarse: Vec<_> = out.at_step(0.1).collect();
    assert_eq!(coarse[0].status, Status::Completed);
    assert!(
        matches!(
            coarse.last().unwrap().status,
            Status::Failed(_) | Status::LeftManifold { .. }
        ),
        "{:?}",
        coarse.last().unwrap().status
    );
    let (last_ok, first_bad) = out.stability_edge(0.1);
    assert!(last_ok.unwrap() < first_bad.unwrap());
}

#[test]
fn constraint_scaling_writes_csv_svg_and_a_table() {
    let cfg = constraint_scaling::Config {
        omegas: vec![10.0, 100.0],
        t_end: 1.0,
        ..constraint_scaling::Config::quick()
    };
    let out = constraint_scaling::run(&cfg);
    let dir = scratch("cs");
    let report = constraint_scaling::write(&cfg, &out, &dir).unwrap();
    let csv = read(&dir.join("constraint-scaling.csv"));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "h,omega,omega2_g_final,omega2_g_max,g_max,energy_rel_error_max,steps,status"
    );
    assert_eq!(lines.count(), 4);
    let svg = read(&dir.join("constraint-scaling.svg"));
    assert!(svg.contains("Fig. 2a") && svg.contains("penalty frequency ω (1/time)"));
    assert!(!dir.join("constraint-scaling.svg.tmp").exists());
    assert_eq!(report.tables[0].rows.len(), 4);
    assert_eq!(report.files.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cli_reproduce_writes_into_out_dir_and_rejects_a_missing_one() {
    let exe = env!("CARGO_BIN_EXE_zs");
    let dir = scratch("cli");
    let ok = Command::new(exe)
        .args(["reproduce", "constraint-scaling", "--out-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(stdout.contains("ω²‖g(q(T))‖"), "{stdout}");
    assert!(dir.join("constraint-scaling.csv").is_file());
    assert!(dir.join("constraint-scaling.svg").is_file());

    let missing = dir.join("does-not-exist");
    let bad = Command::new(exe)
        .args(["reproduce", "constraint-scaling", "--out-dir"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");

    let unknown = Command::new(exe)
        .args(["reproduce", "no-such-experiment"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}
