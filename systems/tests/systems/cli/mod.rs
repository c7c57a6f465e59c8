//! The `zs` binary: every bad argument gives exactly one line on stderr and a non-zero exit;
//! help and version exit 0; a good run writes its CSV; failed runs keep their trajectory and
//! mark it; checkpoint and resume reproduce the uninterrupted run's file byte for byte, also
//! after a real SIGKILL.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod arguments;
mod descriptions;
mod modes;
mod runs;

const ZS: &str = env!("CARGO_BIN_EXE_zs");

use crate::scratch::TempDir;

fn dir(name: &str) -> TempDir {
    TempDir::new("cli", name)
}

fn zs(cwd: &Path, args: &[&str]) -> Output {
    Command::new(ZS)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run the zs binary")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The first word after `label` on the summary line that starts with it.
fn field(out: &str, label: &str) -> String {
    let line = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .unwrap_or_else(|| panic!("no line '{label}' in\n{out}"));
    line.split_whitespace().next().unwrap_or("").to_string()
}

/// Exit status not 0, exactly one line on stderr starting with "zs: " and containing every
/// `needle`; returns the line.
fn one_line_error(o: &Output, args: &[&str], needles: &[&str]) -> String {
    let err = stderr(o);
    assert!(!o.status.success(), "zs {args:?} succeeded");
    assert_eq!(
        err.lines().count(),
        1,
        "zs {args:?}: not exactly one line on stderr:\n{err}"
    );
    assert!(err.ends_with('\n'));
    assert!(err.starts_with("zs: "), "zs {args:?}: {err}");
    for n in needles {
        assert!(
            err.contains(n),
            "zs {args:?}: {err:?} does not mention {n:?}"
        );
    }
    err
}

/// Parse a CSV written by `zs`: header and numeric rows.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (header, rows)
}
