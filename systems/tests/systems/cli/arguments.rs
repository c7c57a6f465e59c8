//! Every bad argument: exactly one line on stderr and a non-zero exit; help and version exit 0.

use super::*;

#[test]
fn every_bad_argument_gives_one_line_and_a_nonzero_exit() {
    let d = dir("bad");
    std::fs::write(d.join("garbage.ck"), "t,q0\n1,2\n").unwrap();
    let cases: &[(&[&str], &[&str], i32)] = &[
        // Unknown system, integrator, subcommand, option.
        (&["run", "pendulum"], &["'pendulum'", "double-pendulum"], 2),
        (
            &["run", "double-pendulum", "--integrator", "rk4"],
            &["'rk4'", "--integrator", "zs, zss, zss-stiff, verlet"],
            2,
        ),
        (&["simulate"], &["'simulate'", "run, eval, reproduce"], 2),
        (&[], &["missing subcommand", "run, eval, reproduce"], 2),
        (&["run"], &["missing required argument", "<SYSTEM>"], 2),
        (
            &["run", "double-pendulum", "--t-ed", "5"],
            &["'--t-ed'", "--t-end"],
            2,
        ),
        // h ≤ 0 in every spelling, non-numeric and non-finite values.
        (
            &["run", "double-pendulum", "--h=-1"],
            &["'-1'", "--h", "> 0"],
            2,
        ),
        (
            &["run", "double-pendulum", "--h", "-1"],
            &["'-1'", "--h", "> 0"],
            2,
        ),
        (
            &["run", "double-pendulum", "--h", "0"],
            &["'0'", "--h", "> 0"],
            2,
        ),
        (
            &["run", "double-pendulum", "--h", "abc"],
            &["'abc'", "--h", "not a number"],
            2,
        ),
        (
            &["run", "double-pendulum", "--h", "nan"],
            &["'nan'", "--h"],
            2,
        ),
        (
            &["run", "double-pendulum", "--h"],
            &["--h", "value is required"],
            2,
        ),
        (
            &["run", "double-pendulum", "--t-end", "-5"],
            &["--t-end", "> 0"],
            2,
        ),
        (
            &["run", "double-pendulum", "--omega", "0"],
            &["--omega", "> 0"],
            2,
        ),
        // β < 0.
        (
            &["run", "double-pendulum", "--beta", "-0.5"],
            &["'-0.5'", "--beta", ">= 0"],
            2,
        ),
        (
            &["run", "double-pendulum", "--beta=-1e-3"],
            &["--beta", ">= 0"],
            2,
        ),
        (
            &["run", "double-pendulum", "--every", "0"],
            &["--every", "'0'"],
            2,
        ),
        (
            &["run", "double-pendulum", "--checkpoint-every", "5"],
            &["missing required argument", "--checkpoint"],
            2,
        ),
        (
            &["run", "double-pendulum", "--max-condition", "0.5"],
            &["--max-condition", ">= 1"],
            2,
        ),
        (
            &["run", "double-pendulum", "--max-residual", "-1"],
            &["--max-residual", ">= 0"],
            2,
        ),
        // Options that do not apply to the system or the integrator.
        (
            &["run", "double-pendulum", "--n", "4"],
            &["--n applies to chain, dna and water"],
            1,
        ),
        (
            &["run", "water", "--max-radius", "0"],
            &["--max-radius <R>", "must be a finite number > 0, got 0"],
            2,
        ),
        (
            &["run", "water", "--max-radius", "-2"],
            &["--max-radius <R>", "must be a finite number > 0, got -2"],
            2,
        ),
        (
            &["run", "dna", "--seed", "-1"],
            &[
                "--seed <SEED>",
                "must be an integer from 0 to 18446744073709551615, got -1",
            ],
            2,
        ),
        (
            &["run", "dna", "--max-radius", "9"],
            &["--max-radius applies to water"],
            1,
        ),
        (
            &["run", "chain", "--minimize"],
            &["--minimize applies to water"],
            1,
        ),
        (
            &["run", "dna", "--omega", "3"],
            &["--omega does not apply to dna", "no constraints"],
            1,
        ),
        (
            &["run", "dna", "--integrator", "shake"],
            &["--integrator shake does not apply to dna"],
            1,
        ),
        (
            &["run", "chain", "--integrator", "rattle", "--omega", "20"],
            &["--omega does not apply to rattle", "Lagrange multipliers"],
            1,
        ),
        (
            &["run", "chain", "--gamma", "0.1"],
            &["--gamma needs --kt"],
            1,
        ),
        (&["run", "chain", "--kt", "0.1"], &["--kt needs --gamma"], 1),
        (&["run", "chain", "--n", "0"], &["--n", "'0'"], 2),
        (&["run", "dna", "--n", "2"], &["at least 3 base pairs"], 1),
        (
            &["run", "chain", "--init", "missing.csv"],
            &["cannot read the state file missing.csv"],
            1,
        ),
        (
            &["run", "chain", "--init", "garbage.ck"],
            &["garbage.ck has 1 columns after `t`", "20 coordinates"],
            1,
        ),
        (
            &["eval", "dna", "--in", "garbage.ck", "--n", "1"],
            &["at least 3 base pairs"],
            1,
        ),
        (
            &["eval", "chain", "--in", "garbage.ck", "--n", "1"],
            &["garbage.ck has 1 columns after `t`", "2 coordinates"],
            1,
        ),
        (
            &[
                "run",
                "double-pendulum",
                "--out",
                "d.csv",
                "--checkpoint",
                "d.csv",
            ],
            &["--out and --checkpoint name the same file d.csv"],
            1,
        ),
        (
            &["run", "double-pendulum", "--out", "."],
            &["--out . is a directory"],
            1,
        ),
        (
            &[
                "run",
                "water",
                "--n",
                "2",
                "--out",
                "w.csv",
                "--checkpoint",
                "w.xyz",
            ],
            &["--out's XYZ trajectory and --checkpoint name the same file w.xyz"],
            1,
        ),
        (
            &["run", "water", "--n", "100000"],
            &["--n 100000 is too large: needs about", "GB available"],
            1,
        ),
        (
            &["run", "dna", "--n", "10000000000"],
            &["--n 10000000000 is too large: needs about 7000.0 GB"],
            1,
        ),
        (
            &["eval", "chain"],
            &["chain needs --in FILE", "the state file"],
            1,
        ),
        // Unreadable or invalid checkpoint.
        (
            &["run", "double-pendulum", "--resume", "missing.ck"],
            &["cannot read the checkpoint missing.ck", "No such file"],
            1,
        ),
        (
            &["run", "double-pendulum", "--resume", "garbage.ck"],
            &["cannot resume from garbage.ck", "not a zs checkpoint"],
            1,
        ),
        (
            &[
                "run",
                "double-pendulum",
                "--integrator",
                "verlet",
                "--max-condition",
                "1e8",
            ],
            &["--max-condition", "verlet"],
            1,
        ),
        (&["reproduce", "nothing"], &["'nothing'"], 2),
    ];
    for (args, needles, code) in cases {
        let o = zs(&d, args);
        one_line_error(&o, args, needles);
        assert_eq!(o.status.code(), Some(*code), "zs {args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty() || *code == 1, "zs {args:?}");
    }
    // Nothing was written by the rejected runs.
    let mut left: Vec<_> = std::fs::read_dir(&*d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["garbage.ck"]);
}

#[test]
fn help_and_version_exit_zero_on_stdout() {
    let d = dir("help");
    for args in [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["help", "run"],
    ] {
        let o = zs(&d, args);
        assert!(o.status.success(), "zs {args:?}: {}", stderr(&o));
        assert!(stderr(&o).is_empty(), "zs {args:?}: {}", stderr(&o));
        assert!(!stdout(&o).is_empty());
    }
    let help = stdout(&zs(&d, &["run", "--help"]));
    for option in [
        "--checkpoint <FILE>",
        "--checkpoint-every <K>",
        "--resume <FILE>",
    ] {
        assert!(help.contains(option), "{option} not in help");
    }
    assert!(help.contains("byte-for-byte"), "--resume semantics stated");
}
