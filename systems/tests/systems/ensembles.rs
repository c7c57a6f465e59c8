//! `zs ensemble` and `zs temper` (issue: ensembles and replica exchange): the files they write,
//! that a replica of an ensemble is the `zs run` of its seed, that the summary's figures are
//! those of the replicas' CSVs, that a failing replica is reported while the others finish, and
//! that replica exchange's files agree with one another and do not depend on the thread count.

use std::path::Path;
use std::process::{Command, Output};

const ZS: &str = env!("CARGO_BIN_EXE_zs");

use crate::scratch::TempDir;

fn dir(name: &str) -> TempDir {
    TempDir::new("ens", name)
}

fn zs(cwd: &Path, args: &[&str]) -> Output {
    Command::new(ZS)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run the zs binary")
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The rows of a CSV as strings, header first.
fn rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Run `zs args` in `d` to the end (`full`), then again (`part`) killed (SIGKILL) as soon as
/// `d/marker` exists; asserts that it did before the kill.
fn run_then_kill_at(d: &Path, full: &[String], part: &[String], marker: &str) {
    ok(&Command::new(ZS).args(full).current_dir(d).output().unwrap());
    let mut child = Command::new(ZS)
        .args(part)
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let marker = d.join(marker);
    for _ in 0..1200 {
        if marker.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(marker.exists(), "{} before the kill", marker.display());
}

/// `zs part --resume ck` in `d`, which must succeed; its standard output.
fn resume_ck(d: &Path, part: &[String]) -> String {
    let o = Command::new(ZS)
        .args(part)
        .args(["--resume", "ck"])
        .current_dir(d)
        .output()
        .unwrap();
    ok(&o);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const DNA: [&str; 10] = [
    "--n", "12", "--gamma", "0.1", "--kt", "0.5", "--t-end", "30", "--quiet", "--h",
];

#[test]
fn an_ensemble_is_the_runs_of_its_seeds_and_summarises_them() {
    let d = dir("ensemble");
    let mut args = vec!["ensemble", "dna", "--replicas", "3", "--seed", "4"];
    args.extend(DNA);
    args.extend(["1", "--out-dir", "e"]);
    ok(&zs(&d, &args));
    // Replica 1 is `zs run` with seed 5, byte for byte.
    let mut single = vec!["run", "dna", "--seed", "5"];
    single.extend(DNA);
    single.extend(["1", "--out", "single.csv"]);
    ok(&zs(&d, &single));
    assert_eq!(
        std::fs::read(d.join("single.csv")).unwrap(),
        std::fs::read(d.join("e/replica-1.csv")).unwrap()
    );
    let summary = rows(&d.join("e/summary.csv"));
    assert_eq!(
        summary[0].join(","),
        "replica,seed,status,t_end,energy_initial,energy_final,energy_mean,energy_max_drift,constraint_norm_max,error"
    );
    assert_eq!(summary.len(), 1 + 3 + 2);
    let figure = |r: usize, c: usize| summary[r][c].parse::<f64>().unwrap();
    for k in 0..3 {
        assert_eq!(
            summary[1 + k][..3],
            [k.to_string(), (4 + k).to_string(), "completed".into()]
        );
        // The replica's figures are those of its CSV.
        let csv = rows(&d.join(format!("e/replica-{k}.csv")));
        let e = csv[0].iter().position(|h| h == "energy").unwrap();
        let energy: Vec<f64> = csv[1..].iter().map(|r| r[e].parse().unwrap()).collect();
        let mean = energy.iter().sum::<f64>() / energy.len() as f64;
        let drift = energy
            .iter()
            .fold(0.0_f64, |m, x| m.max((x - energy[0]).abs()));
        assert_eq!(figure(1 + k, 4), energy[0]);
        assert_eq!(figure(1 + k, 5), *energy.last().unwrap());
        assert!((figure(1 + k, 6) - mean).abs() <= 1e-12 * mean.abs());
        assert_eq!(figure(1 + k, 7), drift);
    }
    for c in 3..8 {
        let x: Vec<f64> = (1..4).map(|r| figure(r, c)).collect();
        let mean = x.iter().sum::<f64>() / 3.0;
        let se = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0 / 3.0).sqrt();
        assert!(
            (figure(4, c) - mean).abs() <= 1e-12 * mean.abs().max(1.0),
            "column {c}"
        );
        assert!(
            (figure(5, c) - se).abs() <= 1e-9 * se.max(1e-300),
            "column {c}"
        );
    }
    // A guard between the replicas' drifts stops the larger ones; the others complete, the
    // summary covers all, and the command fails naming the first that stopped.
    let mut drifts: Vec<f64> = (1..4).map(|r| figure(r, 7)).collect();
    drifts.sort_by(f64::total_cmp);
    let limit = format!("{}", 0.5 * (drifts[0] + drifts[1]));
    let mut guarded = vec!["ensemble", "dna", "--replicas", "3", "--seed", "4"];
    guarded.extend(DNA);
    guarded.extend(["1", "--out-dir", "g", "--max-energy-drift", &limit]);
    let o = zs(&d, &guarded);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("stopped early"));
    let summary = rows(&d.join("g/summary.csv"));
    let status: Vec<&str> = summary[1..4].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(
        status.iter().filter(|s| **s == "completed").count(),
        1,
        "{status:?}"
    );
    assert_eq!(
        status.iter().filter(|s| **s == "stopped").count(),
        2,
        "{status:?}"
    );
}

/// The replicas side by side (2 threads) write the bytes of the replicas in turn (1 thread), and
/// each replica's lines come out whole, in one block, not interleaved with another's.
#[test]
fn replicas_side_by_side_write_the_bytes_of_replicas_in_turn() {
    let d = dir("side");
    let run = |threads: &str, out: &str| {
        let mut args = vec!["ensemble", "dna", "--replicas", "4", "--seed", "3"];
        args.extend(DNA);
        args.extend(["1", "--threads", threads, "--out-dir", out]);
        let o = zs(&d, &args);
        ok(&o);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    run("1", "one");
    let said = run("2", "two");
    for f in [
        "replica-0.csv",
        "replica-1.csv",
        "replica-2.csv",
        "replica-3.csv",
        "summary.csv",
    ] {
        assert_eq!(
            std::fs::read(d.join("one").join(f)).unwrap(),
            std::fs::read(d.join("two").join(f)).unwrap(),
            "{f}"
        );
    }
    // Each block starts with its replica's header and names only that replica's file.
    let blocks: Vec<&str> = said.split("== replica ").skip(1).collect();
    assert_eq!(blocks.len(), 4, "{said}");
    for b in blocks {
        let k = b.split_whitespace().next().unwrap();
        let files: Vec<&str> = b.matches("replica-").collect();
        assert!(
            b.contains(&format!("replica-{k}.csv")) && files.len() == 1,
            "{b}"
        );
    }
}

/// `--sweep kt=A:B:N`: R seeds at each of N values; replica `i R + j` is `zs run` with the
/// i-th value and seed S + j, and the summary has the value's column and a mean and stderr per
/// value.
#[test]
fn a_sweep_runs_every_seed_at_every_value() {
    let d = dir("sweep");
    let common = [
        "--n", "12", "--gamma", "0.1", "--t-end", "10", "--quiet", "--h", "1",
    ];
    let mut args = vec!["ensemble", "dna", "--replicas", "2", "--seed", "7"];
    args.extend(common);
    args.extend(["--sweep", "kt=0.5:1.5:3", "--out-dir", "s"]);
    ok(&zs(&d, &args));
    let mut single = vec!["run", "dna", "--seed", "8", "--kt", "1"];
    single.extend(common);
    single.extend(["--out", "single.csv"]);
    ok(&zs(&d, &single));
    assert_eq!(
        std::fs::read(d.join("single.csv")).unwrap(),
        std::fs::read(d.join("s/replica-3.csv")).unwrap()
    );
    let summary = rows(&d.join("s/summary.csv"));
    assert_eq!(summary[0][..4], ["replica", "seed", "kt", "status"]);
    let kt: Vec<&str> = summary[1..7].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(kt, ["0.5", "0.5", "1", "1", "1.5", "1.5"]);
    let seeds: Vec<&str> = summary[1..7].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(seeds, ["7", "8", "7", "8", "7", "8"]);
    let tail: Vec<(&str, &str)> = summary[7..]
        .iter()
        .map(|r| (r[0].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        tail,
        [
            ("mean", "0.5"),
            ("stderr", "0.5"),
            ("mean", "1"),
            ("stderr", "1"),
            ("mean", "1.5"),
            ("stderr", "1.5")
        ]
    );
    // The mean of a value's energy_mean is that of its two replicas.
    let f = |r: usize| summary[r][7].parse::<f64>().unwrap();
    assert!((f(9) - 0.5 * (f(3) + f(4))).abs() <= 1e-12 * f(9).abs());
}

/// An ensemble killed mid-run (SIGKILL, in its second replica) and run again with `--resume`
/// ends with the files of an uninterrupted one: the first replica is kept, the second resumes
/// from its checkpoint, the third starts. On one thread the replicas run in turn, so the kill
/// finds them in those three states (side by side, any of them may be in any).
#[test]
fn a_killed_ensemble_resumes_to_the_files_of_an_uninterrupted_one() {
    let d = dir("resume");
    let args = |out: &str| -> Vec<String> {
        [
            "ensemble",
            "dna",
            "--n",
            "400",
            "--replicas",
            "3",
            "--seed",
            "2",
            "--integrator",
            "verlet",
            "--h",
            "0.2",
            "--t-end",
            "1000",
            "--every",
            "500",
            "--gamma",
            "0.1",
            "--kt",
            "0.5",
            "--quiet",
            "--checkpoint",
            "ck",
            "--checkpoint-every",
            "250",
            "--threads",
            "1",
            "--out-dir",
            out,
        ]
        .map(str::to_string)
        .to_vec()
    };
    let part = args("part");
    run_then_kill_at(&d, &args("full"), &part, "part/ck.1");
    assert!(!d.join("part/summary.csv").exists());
    assert!(!d.join("part/replica-2.csv").exists());
    let said = resume_ck(&d, &part);
    assert!(
        said.contains("replica 0: completed before the interruption"),
        "{said}"
    );
    for f in [
        "replica-0.csv",
        "replica-1.csv",
        "replica-2.csv",
        "summary.csv",
    ] {
        assert_eq!(
            std::fs::read(d.join("full").join(f)).unwrap(),
            std::fs::read(d.join("part").join(f)).unwrap(),
            "{f}"
        );
    }
}

/// `zs temper --checkpoint ck` on a DNA ring whose replicas swap often.
fn checkpointed_temper(out: &str) -> Vec<String> {
    [
        "temper",
        "dna",
        "--n",
        "200",
        "--integrator",
        "verlet",
        "--h",
        "0.2",
        "--temperatures",
        "0.5,0.52,0.54,0.56",
        "--exchange-every",
        "10",
        "--gamma",
        "1",
        "--t-end",
        "4000",
        "--every",
        "50",
        "--seed",
        "9",
        "--quiet",
        "--checkpoint",
        "ck",
        "--checkpoint-every",
        "1000",
        "--out-dir",
        out,
    ]
    .map(str::to_string)
    .to_vec()
}

/// The files `zs temper` writes for a ladder of 4.
const TEMPER_FILES: [&str; 7] = [
    "replica-0.csv",
    "replica-1.csv",
    "replica-2.csv",
    "replica-3.csv",
    "exchanges.csv",
    "walks.csv",
    "acceptance.csv",
];

fn same_outputs(a: &Path, b: &Path, files: &[&str]) {
    for f in files {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap_or_else(|e| panic!("{}: {e}", a.join(f).display())),
            std::fs::read(b.join(f)).unwrap_or_else(|e| panic!("{}: {e}", b.join(f).display())),
            "{f}"
        );
    }
}

/// Replica exchange killed mid-run (SIGKILL) and run again with `--resume` ends with the files
/// of an uninterrupted run — also when a replica's newest checkpoint file is missing (the
/// process was killed between keeping its previous one and writing the next: the previous one
/// is of the round the exchanges' checkpoint names). A resume with another exchange interval
/// is refused before anything is touched.
#[test]
fn a_killed_replica_exchange_resumes_to_the_files_of_an_uninterrupted_one() {
    let d = dir("temper-resume");
    let part = checkpointed_temper("part");
    run_then_kill_at(&d, &checkpointed_temper("full"), &part, "part/ck");
    for f in TEMPER_FILES {
        assert!(!d.join("part").join(f).exists(), "{f} before the end");
    }
    let mut other = part.clone();
    let at = other.iter().position(|a| a == "--exchange-every").unwrap();
    other[at + 1] = "20".to_string();
    other.extend(["--resume".to_string(), "ck".to_string()]);
    let o = Command::new(ZS)
        .args(&other)
        .current_dir(&d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--exchange-every is 20 here but 10"),
        "{err}"
    );
    // As if killed between keeping replica 1's previous checkpoint and writing its next.
    let (newest, previous) = (d.join("part/ck.1"), d.join("part/ck.1.previous"));
    std::fs::rename(&newest, &previous).unwrap();
    let said = resume_ck(&d, &part);
    assert!(said.contains("resumed at step"), "{said}");
    same_outputs(&d.join("full"), &d.join("part"), &TEMPER_FILES);
    let accepted: u64 = rows(&d.join("full/acceptance.csv"))[1..]
        .iter()
        .map(|r| r[4].parse::<u64>().unwrap())
        .sum();
    assert!(accepted > 100, "the replicas swap: {accepted}");
}

/// `zs temper` on a small DNA ring: the exchange log, the walks and the acceptance table
/// tell one story; the same command gives the same bytes on 1 and 2 threads.
#[test]
fn replica_exchange_files_agree_and_do_not_depend_on_threads() {
    let d = dir("temper");
    let run = |out: &str, threads: &str| {
        let o = zs(
            &d,
            &[
                "temper",
                "dna",
                "--n",
                "10",
                "--integrator",
                "verlet",
                "--h",
                "0.2",
                "--temperatures",
                "0.5,0.8,1.3,2",
                "--exchange-every",
                "10",
                "--gamma",
                "1",
                "--t-end",
                "200",
                "--seed",
                "3",
                "--threads",
                threads,
                "--out-dir",
                out,
            ],
        );
        ok(&o);
    };
    run("a", "1");
    run("b", "2");
    for f in [
        "replica-0.csv",
        "replica-1.csv",
        "replica-2.csv",
        "replica-3.csv",
        "exchanges.csv",
        "walks.csv",
        "acceptance.csv",
    ] {
        assert_eq!(
            std::fs::read(d.join("a").join(f)).unwrap(),
            std::fs::read(d.join("b").join(f)).unwrap(),
            "{f}"
        );
    }
    let ex = rows(&d.join("a/exchanges.csv"));
    assert_eq!(ex[0][..3], ["t", "pair", "accepted"]);
    let walks = rows(&d.join("a/walks.csv"));
    // 1000 steps, a round every 10: 100 rounds of alternately 2 and 1 attempts.
    assert_eq!(walks.len(), 1 + 100);
    assert_eq!(ex.len(), 1 + 50 * 2 + 50);
    // Replaying the accepted swaps from the identity gives every row of the walks.
    let mut slot: Vec<usize> = (0..4).collect();
    let mut at = 1;
    let mut counts = [(0_u64, 0_u64); 3];
    for w in &walks[1..] {
        while at < ex.len() && ex[at][0] == w[0] {
            let (pair, accepted): (usize, bool) = (ex[at][1].parse().unwrap(), ex[at][2] == "1");
            let (lo, hi): (usize, usize) = (ex[at][5].parse().unwrap(), ex[at][6].parse().unwrap());
            assert_eq!((slot[lo], slot[hi]), (pair, pair + 1));
            counts[pair].0 += 1;
            if accepted {
                counts[pair].1 += 1;
                slot.swap(lo, hi);
            }
            at += 1;
        }
        let expected: Vec<String> = slot.iter().map(usize::to_string).collect();
        assert_eq!(w[1..], expected[..], "t = {}", w[0]);
    }
    assert_eq!(at, ex.len());
    let acceptance = rows(&d.join("a/acceptance.csv"));
    for (pair, (tried, accepted)) in counts.iter().enumerate() {
        assert_eq!(
            acceptance[1 + pair][3..5],
            [tried.to_string(), accepted.to_string()]
        );
        assert!(
            *accepted > 0 && accepted < tried,
            "pair {pair}: {accepted} of {tried}"
        );
    }
    // Each replica's CSV starts from the common start and has every step.
    let r0 = rows(&d.join("a/replica-0.csv"));
    let r3 = rows(&d.join("a/replica-3.csv"));
    assert_eq!(r0.len(), 1 + 1001);
    assert_eq!(r0[1], r3[1]);
    assert_ne!(r0[2], r3[2]);
}

/// A replica that fails (here the hottest of a ladder up to 1e308, whose energy overflows) is
/// reported — its CSV marked incomplete, the command failing after the end — while the other
/// runs to the end and its pairs are no longer attempted.
#[test]
fn a_failed_replica_is_reported_and_the_others_finish() {
    let d = dir("temper-fail");
    let o = zs(
        &d,
        &[
            "temper",
            "dna",
            "--n",
            "10",
            "--integrator",
            "verlet",
            "--h",
            "0.2",
            "--temperatures",
            "0.5,1e308",
            "--exchange-every",
            "5",
            "--gamma",
            "1",
            "--t-end",
            "40",
            "--quiet",
            "--out-dir",
            "f",
        ],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("replica-1.csv") && err.contains("non-finite"),
        "{err}"
    );
    let f = d.join("f");
    assert!(f.join("replica-1.csv.incomplete").exists());
    assert!(!f.join("replica-0.csv.incomplete").exists());
    assert_eq!(rows(&f.join("replica-0.csv")).len(), 1 + 201);
    let failed_at: f64 = rows(&f.join("replica-1.csv")).last().unwrap()[0]
        .parse()
        .unwrap();
    let ex = rows(&f.join("exchanges.csv"));
    assert!(ex.len() > 1, "the pair was attempted before the failure");
    assert!(ex[1..]
        .iter()
        .all(|r| r[0].parse::<f64>().unwrap() < failed_at + 1e-9));
    assert_eq!(ex[1][4], "1e308");
}

#[test]
fn temper_and_ensemble_refuse_what_they_cannot_do_in_one_line() {
    let d = dir("refuse");
    let base = ["dna", "--n", "10", "--out-dir", "x"];
    for (command, extra, needle) in [
        (
            "temper",
            &["--temperatures", "1,2", "--exchange-every", "5"][..],
            "--gamma",
        ),
        (
            "temper",
            &[
                "--temperatures",
                "1,2",
                "--exchange-every",
                "5",
                "--gamma",
                "1",
                "--kt",
                "1",
            ],
            "--kt",
        ),
        (
            "temper",
            &[
                "--temperatures",
                "2,1",
                "--exchange-every",
                "5",
                "--gamma",
                "1",
            ],
            "--temperatures",
        ),
        (
            "temper",
            &[
                "--temperatures",
                "1",
                "--exchange-every",
                "5",
                "--gamma",
                "1",
            ],
            "--temperatures",
        ),
        (
            "temper",
            &[
                "--temperatures",
                "1,2",
                "--exchange-every",
                "5",
                "--gamma",
                "1",
                "--out",
                "a.csv",
            ],
            "--out",
        ),
        ("ensemble", &["--replicas", "2", "--out", "a.csv"], "--out"),
        (
            "ensemble",
            &["--replicas", "2", "--resume", "ck"],
            "--resume without --checkpoint",
        ),
        (
            "ensemble",
            &["--replicas", "2", "--checkpoint", "a/ck"],
            "a file name",
        ),
        ("ensemble", &["--replicas", "2", "--omega", "3"], "--omega"),
        (
            "ensemble",
            &["--replicas", "2", "--sweep", "mass=1:2:3"],
            "kt, gamma, h, omega, beta",
        ),
        (
            "ensemble",
            &["--replicas", "2", "--sweep", "kt=1:2"],
            "A:B:N",
        ),
    ] {
        let mut args = vec![command];
        args.extend(base);
        args.extend(extra);
        let o = zs(&d, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("zs: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
}

/// Under `mpirun` (feature `mpi`; `.ci/run` runs these): every file of `zs temper` and
/// `zs ensemble` is byte-identical for 1, 2 and 3 ranks (3 oversubscribing the 2 cores, and
/// more ranks than the ensemble's replicas), and a rank killed mid-run leaves no
/// complete-looking output.
#[cfg(feature = "mpi")]
mod under_mpirun {
    use super::*;

    fn mpirun(cwd: &Path, ranks: usize, args: &[&str]) -> Output {
        let mut c = Command::new("mpirun");
        c.args(["-np", &ranks.to_string(), "--oversubscribe", ZS])
            .args(args)
            .current_dir(cwd)
            // CI runs as root, which Open MPI refuses unless told.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        c.output().expect("mpirun (Debian's openmpi-bin)")
    }

    fn same_files(a: &Path, b: &Path) {
        let mut names: Vec<_> = std::fs::read_dir(a)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        let mut other: Vec<_> = std::fs::read_dir(b)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        other.sort();
        assert_eq!(names, other);
        for n in names {
            assert_eq!(
                std::fs::read(a.join(&n)).unwrap(),
                std::fs::read(b.join(&n)).unwrap(),
                "{n:?}"
            );
        }
    }

    #[test]
    fn temper_and_ensemble_write_the_same_bytes_on_1_2_and_3_ranks() {
        let d = dir("mpi");
        let temper = [
            "temper",
            "dna",
            "--n",
            "10",
            "--integrator",
            "verlet",
            "--h",
            "0.2",
            "--temperatures",
            "0.5,0.8,1.3,2,3",
            "--exchange-every",
            "10",
            "--gamma",
            "1",
            "--t-end",
            "100",
            "--seed",
            "3",
            "--quiet",
            "--out-dir",
        ];
        let ensemble = [
            "ensemble",
            "dna",
            "--n",
            "12",
            "--replicas",
            "2",
            "--seed",
            "4",
            "--gamma",
            "0.1",
            "--kt",
            "0.5",
            "--t-end",
            "20",
            "--quiet",
            "--out-dir",
        ];
        ok(&zs(&d, &[&temper[..], &["t1"]].concat()));
        ok(&zs(&d, &[&ensemble[..], &["e1"]].concat()));
        for p in [2, 3] {
            let (t, e) = (format!("t{p}"), format!("e{p}"));
            ok(&mpirun(&d, p, &[&temper[..], &[t.as_str()]].concat()));
            ok(&mpirun(&d, p, &[&ensemble[..], &[e.as_str()]].concat()));
            same_files(&d.join("t1"), &d.join(&t));
            same_files(&d.join("e1"), &d.join(&e));
        }
    }

    /// A process whose parent is `parent` (a rank of `mpirun`).
    fn a_rank_of(parent: u32) -> u32 {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit(')')
                            .next()?
                            .split_whitespace()
                            .nth(1)?
                            .parse::<u32>()
                            .ok()
                    })
                    == Some(parent)
            })
            .expect("a rank of mpirun")
    }

    /// Replica exchange checkpointed on 2 ranks, one rank SIGKILLed, resumed on 3: the files
    /// of the uninterrupted run on 1.
    #[test]
    fn replica_exchange_checkpointed_on_2_ranks_resumes_on_3() {
        let d = dir("mpi-resume");
        ok(&Command::new(ZS)
            .args(checkpointed_temper("full"))
            .current_dir(&d)
            .output()
            .unwrap());
        let part = checkpointed_temper("part");
        let mut child = Command::new("mpirun")
            .args(["-np", "2", "--oversubscribe", ZS])
            .args(&part)
            .current_dir(&d)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mpirun");
        let ck = d.join("part/ck");
        for _ in 0..2000 {
            if ck.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let killed = Command::new("kill")
            .args(["-9", &a_rank_of(child.id()).to_string()])
            .status();
        assert!(killed.expect("kill").success());
        assert!(!child.wait().expect("mpirun ends").success());
        assert!(ck.exists(), "a checkpoint before the kill");
        let mut again: Vec<&str> = part.iter().map(String::as_str).collect();
        again.extend(["--resume", "ck"]);
        let o = mpirun(&d, 3, &again);
        ok(&o);
        assert!(String::from_utf8_lossy(&o.stdout).contains("resumed at step"));
        same_outputs(&d.join("full"), &d.join("part"), &TEMPER_FILES);
    }

    #[test]
    fn a_rank_killed_mid_run_leaves_no_complete_looking_output() {
        let d = dir("mpi-kill");
        let mut child = Command::new("mpirun")
            .args(["-np", "2", "--oversubscribe", ZS])
            .args([
                "temper",
                "dna",
                "--n",
                "200",
                "--temperatures",
                "0.5,1,2,4",
                "--exchange-every",
                "10",
                "--gamma",
                "1",
                "--t-end",
                "1e7",
                "--quiet",
                "--out-dir",
                "k",
            ])
            .current_dir(&d)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mpirun");
        // Wait until the replicas are writing, then kill one rank (a child of mpirun).
        let k = d.join("k");
        for _ in 0..200 {
            if k.join("replica-3.csv.tmp").exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        let rank = a_rank_of(child.id());
        let killed = Command::new("kill")
            .args(["-9", &rank.to_string()])
            .status();
        assert!(killed.expect("kill").success());
        let status = child.wait().expect("mpirun ends");
        assert!(!status.success());
        for name in ["exchanges.csv", "walks.csv", "acceptance.csv"] {
            assert!(!k.join(name).exists(), "{name}");
        }
        for r in 0..4 {
            assert!(
                !k.join(format!("replica-{r}.csv")).exists(),
                "replica-{r}.csv"
            );
        }
    }
}
