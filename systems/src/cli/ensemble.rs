//! `zs ensemble <system> --replicas R [--seed S] [--sweep PARAM=A:B:N] --out-dir DIR [run
//! options]`: the same `zs run` for seeds `S, S + 1, …, S + R − 1` (the Langevin noise, and the
//! DNA's initial angles), at each value of a swept parameter if one is given; replica k writes
//! `DIR/replica-k.csv` exactly as `zs run` with its seed (and value) and `--out
//! DIR/replica-k.csv` would, then `DIR/summary.csv`: a row per replica of figures read back
//! from its CSV, and two rows, `mean` and `stderr`, across the replicas that completed (per
//! value of the sweep).
//!
//! `--checkpoint NAME [--checkpoint-every K]`: replica k checkpoints to `DIR/NAME.k`; after an
//! interruption the same command with `--resume NAME` skips the replicas that completed,
//! resumes those with a checkpoint (each byte for byte as uninterrupted, `zs run --resume`)
//! and starts the others, so the whole ensemble ends with the files of an uninterrupted one.
//!
//! Figures: `t_end` (the last row's time), `energy_initial`, `energy_final`, `energy_mean`
//! (over the recorded rows), `energy_max_drift` (`max |E − E0|` over the recorded rows), and
//! with constraints `constraint_norm_max`. A replica whose run stops (a typed step error, a
//! guard) is reported with status `stopped` and its error, the others run to the end, and the
//! command then exits with the first failure. The replicas a rank holds run side by side on its
//! `--threads` pool (each its own run, with its own evaluation state of the model), each
//! replica's lines printed whole when it ends; the files are those of running them in turn.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::error::CliError;
use super::job::in_pool;
use super::output;
use super::ranks::{bits, text_words, words_text, Ranks};
use super::run::{check_named_checkpoint, run};
use super::RunArgs;

/// Arguments of `zs ensemble`.
#[derive(clap::Args, Debug)]
pub struct EnsembleArgs {
    /// Number of replicas R: seeds S … S + R − 1.
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..))]
    pub replicas: u64,
    /// Directory of the output files (created if missing).
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: PathBuf,
    /// A parameter sweep, `PARAM=A:B:N` (`kt`, `gamma`, `h`, `omega`, `beta`): N values from
    /// A to B evenly, R replicas (seeds S … S+R−1) at each; replica `i R + j` has value i, seed
    /// S + j.
    #[arg(long, value_name = "PARAM=A:B:N", value_parser = parse_sweep)]
    pub sweep: Option<Sweep>,
    /// The options of `zs run` (--seed S is the first replica's seed; not --out).
    #[command(flatten)]
    pub run: RunArgs,
}

/// A parameter of `zs run` an ensemble can sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepParam {
    /// `--kt`.
    Kt,
    /// `--gamma`.
    Gamma,
    /// `--h`.
    H,
    /// `--omega`.
    Omega,
    /// `--beta`.
    Beta,
}

/// `--sweep PARAM=A:B:N`: the parameter and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The parameter.
    pub param: SweepParam,
    /// Its name as written (the summary's column).
    pub name: &'static str,
    /// The values, `A + i (B − A) / (N − 1)`.
    pub values: Vec<f64>,
}

impl Sweep {
    /// `run` with the parameter set to `value`.
    fn apply(&self, run: &mut RunArgs, value: f64) {
        let slot = match self.param {
            SweepParam::Kt => &mut run.kt,
            SweepParam::Gamma => &mut run.gamma,
            SweepParam::H => &mut run.h,
            SweepParam::Omega => &mut run.omega,
            SweepParam::Beta => &mut run.beta,
        };
        *slot = Some(value);
    }
}

fn parse_sweep(text: &str) -> Result<Sweep, String> {
    let (name, range) = text
        .split_once('=')
        .ok_or_else(|| format!("{text}: expected PARAM=A:B:N"))?;
    let (param, name) = match name {
        "kt" => (SweepParam::Kt, "kt"),
        "gamma" => (SweepParam::Gamma, "gamma"),
        "h" => (SweepParam::H, "h"),
        "omega" => (SweepParam::Omega, "omega"),
        "beta" => (SweepParam::Beta, "beta"),
        other => {
            return Err(format!(
                "{other}: the parameters swept are kt, gamma, h, omega, beta"
            ))
        }
    };
    let parts: Vec<&str> = range.split(':').collect();
    let [a, b, n] = parts[..] else {
        return Err(format!("{range}: expected A:B:N"));
    };
    let number = |x: &str| x.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    let (Some(a), Some(b), Ok(n)) = (number(a), number(b), n.parse::<usize>()) else {
        return Err(format!("{range}: A and B finite numbers ≥ 0, N a count"));
    };
    if n == 0 || (n == 1 && a != b) {
        return Err(format!("{range}: N ≥ 1 values (A = B for one)"));
    }
    let values = (0..n)
        .map(|i| {
            if n == 1 {
                a
            } else {
                a + (b - a) * i as f64 / (n - 1) as f64
            }
        })
        .collect();
    Ok(Sweep {
        param,
        name,
        values,
    })
}

/// The figures of one replica's CSV, in the order of [`FIGURES`].
const FIGURES: [&str; 6] = [
    "t_end",
    "energy_initial",
    "energy_final",
    "energy_mean",
    "energy_max_drift",
    "constraint_norm_max",
];

/// Run `zs ensemble`.
///
/// # Errors
/// An option that does not apply (reported before any replica runs), an output that cannot be
/// written, the first replica that failed (after all ran).
pub fn ensemble(args: &EnsembleArgs) -> Result<(), CliError> {
    for (given, option, why) in [
        (
            args.run.out.is_some(),
            "--out",
            "replica k writes DIR/replica-k.csv under --out-dir",
        ),
        (
            args.run.write_data.is_some(),
            "--write-data",
            "a replica's final state is the last row of its CSV",
        ),
    ] {
        if given {
            return Err(CliError::does_not_apply(option, "zs ensemble", Some(why)));
        }
    }
    check_named_checkpoint(
        &args.run,
        "zs ensemble",
        "an ensemble's --checkpoint is a file name: replica k checkpoints to DIR/NAME.k",
    )?;
    let ranks = Ranks::world("ensemble")?;
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| CliError::io("create the output directory", &args.out_dir, e))?;
    let first = args.run.seed.unwrap_or(0);
    let per_value = args.replicas as usize;
    let values = args.sweep.as_ref().map_or(1, |s| s.values.len());
    let total = per_value * values;
    let value_of = |k: usize| args.sweep.as_ref().map(|s| s.values[k / per_value]);
    let seed_of = |k: usize| first + (k % per_value) as u64;
    let held = ranks.block(total);
    // Per replica: its status (1 completed, 2 stopped), its figures' bits, its error's text.
    let mut words = vec![0_u64; total * RECORD];
    // The replicas this rank holds, side by side on its `--threads` pool, each with its lines
    // collected and printed whole when it ends.
    let side_by_side = held.len() > 1;
    let outcomes: Vec<(usize, Outcome)> = in_pool(args.run.threads, || {
        held.clone()
            .into_par_iter()
            .map(|k| {
                let (outcome, text) = output::captured(|| {
                    let at = (k, held.start, total);
                    replica(args, at, side_by_side, &value_of, &seed_of)
                });
                print!("{text}");
                (k, outcome)
            })
            .collect()
    });
    for (k, outcome) in outcomes {
        let record = &mut words[k * RECORD..(k + 1) * RECORD];
        match outcome {
            Outcome::Figures(figures) => write_record(record, figures),
            // The options are the same for every replica: one refused before it ran (not
            // stopped on a step) is all refused.
            Outcome::Refused(e) => return Err(e),
        }
    }
    ranks.combine(&mut words);
    let rows: Vec<Row> = words
        .chunks_exact(RECORD)
        .enumerate()
        .map(|(k, w)| Row {
            seed: seed_of(k),
            value: value_of(k),
            figures: if w[0] == 1 {
                Ok(core::array::from_fn(|i| f64::from_bits(w[1 + i])))
            } else {
                Err(words_text(&w[7..]))
            },
        })
        .collect();
    let path = args.out_dir.join("summary.csv");
    if ranks.is_root() {
        let text = summary(&rows, args.sweep.as_ref());
        zs_runtime::files::write_atomic(&path, text.as_bytes())
            .map_err(|e| CliError::io("write", &path, e))?;
    }
    let stopped: Vec<usize> = (0..total).filter(|&k| rows[k].figures.is_err()).collect();
    if ranks.is_root() {
        say!(
            "== ensemble: {} of {total} replicas completed on {} rank(s); summary {}",
            total - stopped.len(),
            ranks.size(),
            path.display()
        );
    }
    match stopped.first() {
        None => Ok(()),
        Some(&k) => Err(CliError::ReplicasStopped {
            stopped: stopped.len(),
            total,
            first: k,
            error: rows[k].figures.clone().err().unwrap_or_default(),
        }),
    }
}

/// How a replica ended: its figures (or why it stopped), or refused before it ran.
enum Outcome {
    Figures(Result<[f64; 6], String>),
    Refused(CliError),
}

/// Replica `k` of `total`: `zs run` with its seed (and swept value), its lines said as a run's
/// (`side_by_side`: without a progress bar); refused when it is this rank's `first` and cannot
/// start.
fn replica(
    args: &EnsembleArgs,
    (k, first, total): (usize, usize, usize),
    side_by_side: bool,
    value_of: &(dyn Fn(usize) -> Option<f64> + Sync),
    seed_of: &(dyn Fn(usize) -> u64 + Sync),
) -> Outcome {
    let mut r = args.run.clone();
    r.seed = Some(seed_of(k));
    r.quiet |= side_by_side;
    if let (Some(sweep), Some(v)) = (&args.sweep, value_of(k)) {
        sweep.apply(&mut r, v);
    }
    let out = args.out_dir.join(format!("replica-{k}.csv"));
    r.out = Some(out.clone());
    let resumed = match checkpointing(args, k, &out) {
        Resume::Done => {
            say!(
                "== replica {k}: completed before the interruption ({})",
                out.display()
            );
            return Outcome::Figures(figures(&out));
        }
        Resume::From(ck) => {
            r.checkpoint = Some(ck.clone());
            r.resume = Some(ck);
            true
        }
        Resume::Fresh(ck) => {
            r.checkpoint = ck;
            r.resume = None;
            false
        }
    };
    if resumed {
        say!("== replica {k}: resumed from its checkpoint");
    }
    match (&args.sweep, value_of(k)) {
        (Some(sweep), Some(v)) => say!(
            "== replica {k} of {total} (seed {}, {} = {v})",
            seed_of(k),
            sweep.name
        ),
        _ => say!("== replica {k} of {total} (seed {})", seed_of(k)),
    }
    match run(&r) {
        Err(e) if !matches!(e, CliError::Stopped { .. }) && k == first => Outcome::Refused(e),
        outcome => {
            let figures = outcome
                .map_err(|e| e.to_string())
                .and_then(|()| figures(&out));
            if let Err(e) = &figures {
                say!("  replica {k} stopped: {e}");
            }
            Outcome::Figures(figures)
        }
    }
}

/// Where replica k of a checkpointed ensemble starts.
enum Resume {
    /// Its run completed before the interruption: its CSV is final.
    Done,
    /// From its checkpoint, `DIR/NAME.k`.
    From(PathBuf),
    /// From the beginning (checkpointing to `DIR/NAME.k` if asked).
    Fresh(Option<PathBuf>),
}

/// With `--checkpoint NAME`, replica k checkpoints to `DIR/NAME.k`; with `--resume NAME` too, a
/// replica whose CSV is final and not marked incomplete is done, one with a checkpoint resumes
/// from it (`zs run --resume`: the same bytes as an uninterrupted run), any other starts over.
fn checkpointing(args: &EnsembleArgs, k: usize, out: &Path) -> Resume {
    let Some(name) = &args.run.checkpoint else {
        return Resume::Fresh(None);
    };
    let mut file = name.as_os_str().to_owned();
    file.push(format!(".{k}"));
    let ck = args.out_dir.join(file);
    if args.run.resume.is_none() {
        return Resume::Fresh(Some(ck));
    }
    let marker = zs_runtime::output::incomplete_marker_of(out);
    if out.exists() && !marker.exists() {
        Resume::Done
    } else if ck.exists() {
        Resume::From(ck)
    } else {
        Resume::Fresh(Some(ck))
    }
}

/// A replica's record: status 1 and its figures' bits, or status 2 and its error's text.
fn write_record(record: &mut [u64], figures: Result<[f64; 6], String>) {
    match figures {
        Ok(f) => {
            record[0] = 1;
            record[1..7].copy_from_slice(&bits(&f));
        }
        Err(e) => {
            record[0] = 2;
            record[7..].copy_from_slice(&text_words(&e, RECORD - 7));
        }
    }
}

/// Words per replica in the ranks' combined record: status, 6 figures, 240 bytes of error.
const RECORD: usize = 7 + 30;

/// The figures of a completed replica's CSV (NaN where a column is absent).
fn figures(path: &Path) -> Result<[f64; 6], String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (energy, norm) = (col("energy"), col("constraint_norm"));
    let mut f = [f64::NAN; 6];
    let (mut sum, mut n, mut drift, mut worst) = (0.0, 0.0, 0.0_f64, 0.0_f64);
    for line in lines {
        let cells: Vec<f64> = line
            .split(',')
            .map(|c| c.parse().unwrap_or(f64::NAN))
            .collect();
        f[0] = cells[0];
        if let Some(e) = energy.map(|c| cells[c]) {
            if n == 0.0 {
                f[1] = e;
            }
            f[2] = e;
            sum += e;
            n += 1.0;
            drift = drift.max((e - f[1]).abs());
        }
        if let Some(g) = norm.map(|c| cells[c]) {
            worst = worst.max(g);
        }
    }
    if n > 0.0 {
        f[3] = sum / n;
        f[4] = drift;
    }
    if norm.is_some() {
        f[5] = worst;
    }
    Ok(f)
}

/// One replica's line of the summary.
struct Row {
    seed: u64,
    /// The swept parameter's value.
    value: Option<f64>,
    /// Its figures, or why it stopped.
    figures: Result<[f64; 6], String>,
}

/// `summary.csv`: a row per replica, then `mean` and `stderr` of each figure over the
/// completed replicas (the standard error `s / √n`; empty for fewer than two) — one pair of
/// rows per value of a sweep, the value in the parameter's column.
fn summary(rows: &[Row], sweep: Option<&Sweep>) -> String {
    let param = sweep.map(|s| format!("{},", s.name)).unwrap_or_default();
    let mut text = format!("replica,seed,{param}status,{},error\n", FIGURES.join(","));
    let value = |v: Option<f64>| v.map(|x| format!("{x},")).unwrap_or_default();
    for (k, row) in rows.iter().enumerate() {
        let (seed, v) = (row.seed, value(row.value));
        match &row.figures {
            Ok(f) => {
                let cells: Vec<String> = f.iter().map(|x| cell(*x)).collect();
                let _ = writeln!(text, "{k},{seed},{v}completed,{},", cells.join(","));
            }
            Err(e) => {
                let _ = writeln!(
                    text,
                    "{k},{seed},{v}stopped,{},\"{}\"",
                    [""; 6].join(","),
                    e.replace('"', "'")
                );
            }
        }
    }
    let groups: Vec<Option<f64>> = match sweep {
        Some(s) => s.values.iter().map(|&v| Some(v)).collect(),
        None => vec![None],
    };
    for g in groups {
        let done: Vec<&[f64; 6]> = rows
            .iter()
            .filter(|r| r.value == g)
            .filter_map(|r| r.figures.as_ref().ok())
            .collect();
        let n = done.len() as f64;
        let mean: Vec<f64> = (0..6)
            .map(|i| done.iter().map(|f| f[i]).sum::<f64>() / n)
            .collect();
        let stderr: Vec<f64> = (0..6)
            .map(|i| {
                if done.len() < 2 {
                    return f64::NAN;
                }
                let var = done.iter().map(|f| (f[i] - mean[i]).powi(2)).sum::<f64>() / (n - 1.0);
                (var / n).sqrt()
            })
            .collect();
        for (name, values) in [("mean", &mean), ("stderr", &stderr)] {
            let cells: Vec<String> = values.iter().map(|x| cell(*x)).collect();
            let _ = writeln!(text, "{name},,{},{},", value(g), cells.join(","));
        }
    }
    text
}

/// A figure as written: shortest round-trip decimal, empty for NaN (absent).
fn cell(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        format!("{x}")
    }
}
