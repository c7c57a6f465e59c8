//! Runs: the CSV of a good run, a failed run kept and marked, checkpoints and resumes byte for
//! byte (also after SIGKILL), state files, every system run and evaluated.

use super::*;

#[test]
fn a_good_short_run_writes_the_csv() {
    let d = dir("good");
    let o = zs(&d, &["run", "double-pendulum", "--t-end", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("double-pendulum.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("t,x1,y1,x2,y2,v_x1,v_y1,v_x2,v_y2,energy,constraint_norm")
    );
    // h = 0.1, T = 1: the initial state and 10 steps.
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 11);
    assert_eq!(rows[10][0], 1.0);
    assert!(rows
        .iter()
        .all(|r| r.len() == 11 && r.iter().all(|x| x.is_finite())));
    assert!(!d.join("double-pendulum.csv.tmp").exists());
    assert!(!d.join("double-pendulum.csv.incomplete").exists());
    assert!(stdout(&o).contains("double-pendulum.csv (11 rows)"));
}

#[test]
fn a_failed_run_keeps_its_rows_and_says_it_ended_early() {
    let d = dir("failed");
    // The paper's printed sign of gravity points up: Z&S diverges (non-finite at step 36).
    let args = [
        "run",
        "double-pendulum",
        "--gravity",
        "printed",
        "--out",
        "p.csv",
    ];
    let o = zs(&d, &args);
    let line = one_line_error(
        &o,
        &args,
        &["stopped early", "step 36", "non-finite", "p.csv"],
    );
    assert_eq!(o.status.code(), Some(1));
    let csv = std::fs::read_to_string(d.join("p.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 37,
        "initial state and 36 good steps"
    );
    let marker = std::fs::read_to_string(d.join("p.csv.incomplete")).unwrap();
    assert!(
        marker.starts_with("ended early [non-finite]: step 36"),
        "{marker}"
    );
    // A guard stops the same run much earlier, while the state is still sane.
    let args = [
        "run",
        "double-pendulum",
        "--gravity",
        "printed",
        "--out",
        "g.csv",
        "--max-residual",
        "0.5",
    ];
    let o = zs(&d, &args);
    let guarded = one_line_error(&o, &args, &["constraint residual", "exceeds the limit 0.5"]);
    assert_ne!(line, guarded);
    let marker = std::fs::read_to_string(d.join("g.csv.incomplete")).unwrap();
    assert!(marker.contains("[guard-violated]"), "{marker}");
    let rows = std::fs::read_to_string(d.join("g.csv")).unwrap();
    let last: Vec<f64> = rows
        .lines()
        .last()
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(
        last[10] <= 0.5,
        "every kept row satisfies the guard: {last:?}"
    );
    assert!(rows.lines().count() < 1 + 37);
}

/// Run to completion with checkpoints; then rebuild the state of an interrupted run from the
/// last checkpoint (the final file moved back to `.tmp`, garbage appended after the part the
/// checkpoint covers) and resume: the file is recreated byte for byte, and the summary's
/// energy and residual lines are the same.
#[test]
fn resume_recreates_the_uninterrupted_file_byte_for_byte() {
    let d = dir("resume");
    let base = [
        "run",
        "double-pendulum",
        "--t-end",
        "20",
        "--every",
        "3",
        "--out",
        "a.csv",
        "--checkpoint",
        "a.ck",
        "--checkpoint-every",
        "70",
    ];
    let o = zs(&d, &base);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(field(&stdout(&o), "checkpoints"), "2", "{}", stdout(&o));
    let reference = std::fs::read(d.join("a.csv")).unwrap();
    let ck = std::fs::read_to_string(d.join("a.ck")).unwrap();
    assert!(ck.starts_with("zs-checkpoint 1\n") && ck.contains("run.done u64 140\n"));
    std::fs::rename(d.join("a.csv"), d.join("a.csv.tmp")).unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.join("a.csv.tmp"))
            .unwrap();
        f.write_all(b"1e300,garbage from a torn write").unwrap();
    }
    let resume: Vec<&str> = base.iter().copied().chain(["--resume", "a.ck"]).collect();
    let o2 = zs(&d, &resume);
    assert!(o2.status.success(), "{}", stderr(&o2));
    assert_eq!(
        field(&stdout(&o2), "resumed at step"),
        "140",
        "{}",
        stdout(&o2)
    );
    assert_eq!(std::fs::read(d.join("a.csv")).unwrap(), reference);
    assert!(!d.join("a.csv.tmp").exists());
    let summary_lines = |s: &str| {
        s.lines()
            .filter(|l| l.contains("energy") || l.contains("‖g(q)‖") || l.contains("final state"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(summary_lines(&stdout(&o)), summary_lines(&stdout(&o2)));
    assert_eq!(summary_lines(&stdout(&o)).len(), 4);

    // Resuming with other arguments is refused, naming the argument.
    std::fs::rename(d.join("a.csv"), d.join("a.csv.tmp")).unwrap();
    let mut other = resume.clone();
    other.extend(["--h", "0.05"]);
    let o3 = zs(&d, &other);
    one_line_error(&o3, &other, &["--h is 0.05 here but 0.1 in the checkpoint"]);
    // Another system's checkpoint: the message names the system, not a parameter.
    let chain = ["run", "chain", "--out", "a.csv", "--resume", "a.ck"];
    let o4 = zs(&d, &chain);
    one_line_error(
        &o4,
        &chain,
        &["--system is chain here but double-pendulum in the checkpoint"],
    );
    // A completed run's checkpoint cannot be resumed: its .tmp is gone.
    std::fs::rename(d.join("a.csv.tmp"), d.join("a.csv")).unwrap();
    let o4 = zs(&d, &resume);
    one_line_error(&o4, &resume, &["a.csv.tmp", "completed"]);
}

/// A real interruption: SIGKILL right after the first checkpoint appears, then `--resume`.
#[test]
fn a_killed_run_resumes_to_the_same_file() {
    let d = dir("kill");
    // Long enough that the kill lands mid-run: retried with a 10× longer run if the process
    // finished first (a very fast machine).
    for t_end in ["2000", "20000", "200000"] {
        let base = [
            "run",
            "double-pendulum",
            "--t-end",
            t_end,
            "--every",
            "50",
            "--out",
            "k.csv",
            "--checkpoint",
            "k.ck",
            "--checkpoint-every",
            "500",
            "--quiet",
        ];
        for f in ["k.csv", "k.csv.tmp", "k.ck", "ref.csv"] {
            let _ = std::fs::remove_file(d.join(f));
        }
        let mut child = Command::new(ZS)
            .args(base)
            .current_dir(&*d)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !d.join("k.ck").exists() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        if status.success() {
            continue; // finished before the kill: try a longer run
        }
        assert!(!d.join("k.csv").exists(), "a killed run has no final file");
        let ck = std::fs::read_to_string(d.join("k.ck")).unwrap();
        let done = ck.lines().find(|l| l.starts_with("run.done ")).unwrap();
        eprintln!("killed the --t-end {t_end} run; resuming from its checkpoint ({done})");
        assert!(d.join("k.csv.tmp").exists());
        let resume: Vec<&str> = base.iter().copied().chain(["--resume", "k.ck"]).collect();
        let o = zs(&d, &resume);
        assert!(o.status.success(), "{}", stderr(&o));
        let resumed = std::fs::read(d.join("k.csv")).unwrap();
        // The uninterrupted reference.
        std::fs::rename(d.join("k.csv"), d.join("resumed.csv")).unwrap();
        let o = zs(&d, &base);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(resumed == std::fs::read(d.join("k.csv")).unwrap());
        return;
    }
    panic!("the run always finished before it could be killed");
}

#[test]
fn assembled_systems_run_continue_from_state_files_and_evaluate() {
    let d = dir("assembled");
    // The chain of 10 pendula, into a directory that does not exist yet.
    let o = zs(
        &d,
        &["run", "chain", "--t-end", "2", "--out", "new/dir/chain.csv"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (header, rows) = read_csv(&d.join("new/dir/chain.csv"));
    assert_eq!(header.len(), 1 + 20 + 20 + 2);
    assert_eq!((&header[1][..], &header[20][..]), ("x1", "y10"));
    assert_eq!(
        (&header[21][..], &header[42][..]),
        ("v_x1", "constraint_norm")
    );
    assert_eq!(rows.len(), 41, "h = 0.05, T = 2");
    // Continue from its last row: the new file starts where the first ended, bit for bit.
    let o = zs(
        &d,
        &[
            "run",
            "chain",
            "--init",
            "new/dir/chain.csv",
            "--t-end",
            "3",
            "--out",
            "c2.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, rows2) = read_csv(&d.join("c2.csv"));
    assert_eq!(rows2[0][..41], rows[40][..41]);
    assert_eq!(rows2.last().unwrap()[0], 3.0);
    // A state file of another size or system: one line naming the column, nothing written.
    for (args, needle) in [
        (
            &[
                "run", "chain", "--n", "5", "--init", "c2.csv", "--out", "c5.csv",
            ][..],
            "c2.csv column 12 is `x6`, but this system's is `v_x1`",
        ),
        (
            &[
                "run", "dna", "--n", "10", "--init", "c2.csv", "--out", "d10.csv",
            ][..],
            "c2.csv column 2 is `x1`, but this system's is `theta0`",
        ),
        (
            &["eval", "water", "--n", "2", "--in", "c2.csv"][..],
            "c2.csv column 2 is `x1`, but this system's is `O1x`",
        ),
    ] {
        let o = zs(&d, args);
        one_line_error(
            &o,
            args,
            &[needle, "a state file of another system or size"],
        );
    }
    assert!(!d.join("c5.csv").exists() && !d.join("c5.csv.tmp").exists());
    assert!(!d.join("d10.csv").exists() && !d.join("d10.csv.tmp").exists());
    // eval: the penalized potential plus the kinetic energy is the run's energy column.
    let o = zs(
        &d,
        &[
            "eval",
            "chain",
            "--in",
            "c2.csv",
            "--omega",
            "20",
            "--out",
            "e/chain.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (eh, evals) = read_csv(&d.join("e/chain.csv"));
    assert_eq!(
        (&eh[0][..], &eh[1][..], eh.len()),
        ("potential", "dV_x1", 21)
    );
    assert_eq!(evals.len(), rows2.len());
    for (e, r) in evals.iter().zip(&rows2) {
        let kinetic: f64 = 0.5 * r[21..41].iter().map(|v| v * v).sum::<f64>();
        let energy = r[41];
        assert!(
            (e[0] + kinetic - energy).abs() <= 1e-12 * energy.abs(),
            "{e:?} {r:?}"
        );
    }
    // SHAKE on the unpenalized chain keeps the constraints to its tolerance.
    let o = zs(
        &d,
        &[
            "run",
            "chain",
            "--integrator",
            "shake",
            "--t-end",
            "2",
            "--out",
            "s.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, s) = read_csv(&d.join("s.csv"));
    assert!(s.iter().all(|r| r[42] < 1e-11), "‖g‖ column");

    // The DNA ring: the seed sets the initial angles; the same seed, the same file.
    for (out, seed) in [("d7a.csv", "7"), ("d7b.csv", "7"), ("d8.csv", "8")] {
        let o = zs(
            &d,
            &[
                "run", "dna", "--n", "50", "--seed", seed, "--t-end", "20", "--out", out,
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let read = |f: &str| std::fs::read(d.join(f)).unwrap();
    assert_eq!(read("d7a.csv"), read("d7b.csv"));
    let (dh, d7) = read_csv(&d.join("d7a.csv"));
    let (_, d8) = read_csv(&d.join("d8.csv"));
    assert_eq!((&dh[1][..], dh.len()), ("theta0", 1 + 50 + 50 + 1));
    assert_ne!(d7[0][1..51], d8[0][1..51]);
    // Mean angle 0.8 ± 0.1/√50·(a few): the paper's θ_k(0) = 0.8 + 0.1 ξ_k.
    let mean: f64 = d7[0][1..51].iter().sum::<f64>() / 50.0;
    assert!((mean - 0.8).abs() < 0.06, "{mean}");
    // Its threads do not change its bits.
    let o = zs(
        &d,
        &[
            "run",
            "dna",
            "--n",
            "50",
            "--seed",
            "7",
            "--t-end",
            "20",
            "--threads",
            "1",
            "--out",
            "d7c.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read("d7a.csv"), read("d7c.csv"));
}

#[test]
fn rigid_body_runs_on_so3_and_as_a_penalized_system() {
    let d = dir("rigid");
    // eq. 34: R11…R33, the velocities Ṙ, energy and the distance from SO(3).
    let o = zs(
        &d,
        &[
            "run",
            "rigid-body",
            "--integrator",
            "lie-euler",
            "--t-end",
            "10",
            "--out",
            "lie.csv",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (header, rows) = read_csv(&d.join("lie.csv"));
    let names: Vec<&str> = header.iter().map(String::as_str).collect();
    assert_eq!(
        &names[..10],
        ["t", "R11", "R12", "R13", "R21", "R22", "R23", "R31", "R32", "R33"]
    );
    assert_eq!(&names[19..], ["energy", "orthogonality_defect"]);
    assert_eq!(rows.len(), 101);
    let defect = rows.iter().map(|r| r[20]).fold(0.0_f64, f64::max);
    assert!(defect < 1e-13, "{defect}");
    assert!(stdout(&o).contains("max ‖RᵀR − I‖"));
    // The same start with penalized Z&S and Bμ = +1: leaves SO(3) by the penalty's margin.
    let o = zs(
        &d,
        &[
            "run",
            "rigid-body",
            "--b-mu",
            "1",
            "--t-end",
            "10",
            "--out",
            "zs.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Bμ = 1") && stdout(&o).contains("β = 0.2"));
    let (_, rows) = read_csv(&d.join("zs.csv"));
    let defect = rows.iter().map(|r| r[20]).fold(0.0_f64, f64::max);
    assert!(defect > 1e-4, "{defect}");
    // eval: V = Bμ R33 on SO(3) without --omega; the gradient is Bμ e33 there.
    let o = zs(&d, &["eval", "rigid-body", "--in", "lie.csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("potential,dV_R11"));
    for (line, row) in lines.zip(&read_csv(&d.join("lie.csv")).1) {
        let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        assert!((v[0] - (-row[9])).abs() < 1e-15);
        assert_eq!(v[9], -1.0);
    }
    // Options that do not apply.
    for (args, needles) in [
        (
            &["run", "rigid-body", "--integrator", "shake"][..],
            &["shake", "rigid-body"][..],
        ),
        (
            &["run", "rigid-body", "--integrator", "zss-stiff"],
            &["zss-stiff", "rigid-body"],
        ),
        (
            &["run", "water", "--integrator", "lie-euler"],
            &["lie-euler", "water"],
        ),
        (
            &[
                "run",
                "rigid-body",
                "--integrator",
                "lie-euler",
                "--omega",
                "5",
            ],
            &["--omega", "lie-euler"],
        ),
        (&["run", "rigid-body", "--n", "3"], &["--n", "rigid-body"]),
        (&["run", "chain", "--b-mu", "1"], &["--b-mu", "chain"]),
        (
            &["run", "rigid-body", "--b-mu", "inf"],
            &["--b-mu", "finite"],
        ),
        (
            &["eval", "dna", "--b-mu", "1", "--in", "lie.csv"],
            &["--b-mu", "dna"],
        ),
    ] {
        one_line_error(&zs(&d, args), args, needles);
    }
}

/// The defaults work for every size `zs run` accepts: the DNA ring's default step is 1 below
/// 64 base pairs (the paper's h = 2, for N = 200, diverged below N ≈ 24).
#[test]
fn dna_defaults_run_at_every_small_size() {
    let d = dir("dna-small");
    for n in ["3", "7", "12", "20", "23", "63"] {
        let out = format!("dna{n}.csv");
        let o = zs(&d, &["run", "dna", "--n", n, "--quiet", "--out", &out]);
        assert!(o.status.success(), "--n {n}: {}", stderr(&o));
    }
}

/// A checkpoint or output under a path that is a file: the message says which path is a file
/// (the OS says "File exists").
#[test]
fn an_output_under_a_file_names_the_file() {
    let d = dir("under-a-file");
    std::fs::write(d.join("afile"), "x").unwrap();
    for args in [
        &[
            "run",
            "double-pendulum",
            "--checkpoint",
            "afile/x.ck",
            "--out",
            "o.csv",
        ][..],
        &["run", "double-pendulum", "--out", "afile/sub/o.csv"][..],
    ] {
        let o = zs(&d, args);
        one_line_error(&o, args, &["afile is a file, not a directory"]);
    }
}

/// `zs run alkane` builds a liquid and writes it as a LAMMPS data file; `zs eval alkane --data`
/// reads it back with the energy the run started from; builder options and `--data` exclude
/// each other, apply to the alkane only, and a liquid too small for the cutoff is a one-line
/// error.
#[test]
fn alkane_builds_runs_writes_and_evaluates_its_liquid() {
    let d = dir("alkane");
    let args = [
        "run",
        "alkane",
        "--n-molecules",
        "250",
        "--length",
        "4",
        "--seed",
        "3",
        "--t-end",
        "4",
        "--out",
        "a.csv",
        "--write-data",
        "a.data",
        "--quiet",
    ];
    let o = zs(&d, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("1000 sites")
            && out.contains("750 bonds (harmonic), 500 angles, 250 dihedrals"),
        "{out}"
    );
    assert_eq!(field(&out, "steps"), "4");
    let data = std::fs::read_to_string(d.join("a.data")).expect("the data file");
    assert!(
        data.contains("500 angles") && data.contains("\nDihedrals\n"),
        "{data}"
    );
    // The run's last row is the data file's state: eval of the file equals eval of that row.
    let e = zs(
        &d,
        &["eval", "alkane", "--data", "a.data", "--out", "e.csv"],
    );
    assert!(e.status.success(), "{}", stderr(&e));
    let e2 = zs(
        &d,
        &[
            "eval", "alkane", "--data", "a.data", "--in", "a.csv", "--out", "e2.csv",
        ],
    );
    assert!(e2.status.success(), "{}", stderr(&e2));
    let (_, file_row) = read_csv(&d.join("e.csv"));
    let (_, rows) = read_csv(&d.join("e2.csv"));
    assert_eq!(rows.len(), 2);
    let (a, b) = (&file_row[0], &rows[1]);
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(
        a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * scale),
        "{:?} vs {:?}",
        &a[..3],
        &b[..3]
    );
    // The bonds held at 1.54 Å: RATTLE by default, the constraint residual at rounding.
    let r = [
        "run",
        "alkane-rigid",
        "--n-molecules",
        "250",
        "--seed",
        "3",
        "--t-end",
        "8",
        "--out",
        "r.csv",
        "--quiet",
    ];
    let o = zs(&d, &r);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("integrator rattle") && out.contains("held at 1.54"),
        "{out}"
    );
    let residual: f64 = field(&out, "max ‖g(q)‖").parse().expect("a residual");
    assert!(residual < 1e-9, "{residual}");
    // Refusals, one line each.
    for (bad, needles) in [
        (
            &["run", "alkane", "--integrator", "rattle"][..],
            &["alkane-rigid"][..],
        ),
        (
            &["run", "alkane", "--data", "a.data", "--length", "6"][..],
            &["--length", "--data"][..],
        ),
        (
            &["run", "kremer-grest", "--n-molecules", "10"][..],
            &["--n-molecules", "alkane"][..],
        ),
        (
            &["run", "alkane", "--n-molecules", "10", "--quiet"][..],
            &["box", "cutoff"][..],
        ),
        (&["eval", "alkane"][..], &["alkane needs --data"][..]),
    ] {
        one_line_error(&zs(&d, bad), bad, needles);
    }
}
