//! Beyond the papers: the Z&S family's own question on water (`zs reproduce water-stiff`).
//! Rigid SPC/E in LAMMPS's box at 300 K, held rigid two ways — SETTLE (Miyamoto & Kollman
//! 1992) at the usual 2 fs, and the penalty `½ω²|g|²` on each molecule's three distances under
//! Z&Ss-stiff (Zhang & Skeel, Integrator 5, eq. 19: only the penalty's Hessian in the linear
//! solve) at its longest stable step — each for the same simulated time under the same GLA
//! Langevin thermostat, from the same start. Reported side by side: the statistics (potential
//! energy per molecule, temperature of the rigid motions, the oxygens' self-diffusion
//! coefficient, g_OO against LAMMPS's reference), how rigid the molecules stay, and the wall
//! time per simulated picosecond: the time to the same statistics, since both sample the same
//! physics at the same rate per picosecond.
//!
//! The longest stable step of Z&Ss-stiff was found beforehand by scans of `zs run water-box
//! --integrator zss-stiff --omega W --h H`, without and with the thermostat (`--gamma`, `--kt`;
//! EXPERIMENTS.md, "water-stiff"): under the thermostat, whose noise gives each penalized
//! distance its thermal share, it is stable only with a soft penalty and a shorter step than
//! SETTLE's. This experiment runs the step and penalty the scans found.

use std::io;
use std::path::Path;

use super::water_box::{self, Config as BoxConfig, Outcome, Rigid};
use super::{block_estimate, sci, Report, Table};
use crate::experiments::kremer_grest::InputError;

/// Z&Ss-stiff's longest stable step on this box under the thermostat (fs), from the scans.
pub const LONGEST_STEP: f64 = 1.5;
/// The penalty's ω at that step ((kcal/mol)^½/Å, [`water_box::oh_period`]): the stiffest the
/// scans ran stably under the thermostat (EXPERIMENTS.md, "water-stiff").
pub const OMEGA: f64 = 20.0;

/// The two runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// SETTLE's run (its `rigid` is SETTLE's).
    pub settle: BoxConfig,
    /// The penalized run: the same but for its step and `rigid`.
    pub stiff: BoxConfig,
}

impl Config {
    /// 21 ps of each from LAMMPS's `data.spce` (`data`), the first 3 ps a burn-in, a sample
    /// every 60 fs, 4 blocks: SETTLE at 2 fs, Z&Ss-stiff at `h` fs with the penalty's `omega`
    /// ((kcal/mol)^½/Å), β = ¼. The times are whole numbers of 2 and 1.5 fs steps.
    pub fn lammps(data: std::path::PathBuf, h: f64, omega: f64) -> Self {
        let settle = BoxConfig {
            t_end: 21_000.0,
            burn_in: 3_000.0,
            sample_dt: 60.0,
            blocks: 4,
            ..BoxConfig::lammps(data)
        };
        let stiff = BoxConfig {
            h,
            rigid: Rigid::Penalty { omega, beta: 0.25 },
            ..settle.clone()
        };
        Self { settle, stiff }
    }
}

/// Both runs' outcomes, SETTLE's first.
pub type Outcomes = [Outcome; 2];

/// Both runs of `cfg`.
///
/// # Errors
/// The data file cannot be read or is not SPC/E water.
pub fn run(cfg: &Config) -> Result<Outcomes, InputError> {
    Ok([water_box::run(&cfg.settle)?, water_box::run(&cfg.stiff)?])
}

/// Wall seconds per simulated picosecond of a run (its steps alone).
fn per_ps(cfg: &BoxConfig, out: &Outcome) -> f64 {
    out.seconds / (out.steps as f64 * cfg.h / 1000.0).max(1e-12)
}

/// The comparison table of `outs`, and each run's own files.
///
/// # Errors
/// The files cannot be written.
pub fn write(cfg: &Config, outs: &Outcomes, dir: &Path) -> io::Result<Report> {
    let configs = [&cfg.settle, &cfg.stiff];
    let mut files = Vec::new();
    for (c, out) in configs.iter().zip(outs) {
        let sub = dir.join(match c.rigid {
            Rigid::Settle => "settle",
            Rigid::Penalty { .. } => "zss-stiff",
        });
        std::fs::create_dir_all(&sub)?;
        files.extend(water_box::write(c, out, &sub)?.files);
    }
    let mut table = Table::new(
        "Rigid SPC/E at 300 K: SETTLE against the penalty under Z&Ss-stiff (mean ± standard error of block means)",
        &["", "SETTLE", "Z&Ss-stiff"],
    );
    let both = |f: &dyn Fn(&BoxConfig, &Outcome) -> String| -> Vec<String> {
        configs.iter().zip(outs).map(|(c, o)| f(c, o)).collect()
    };
    let row = |name: &str, cells: Vec<String>| {
        let mut r = vec![name.to_string()];
        r.extend(cells);
        r
    };
    let est = |x: &[f64], blocks: usize| {
        block_estimate(x, blocks).map_or_else(|| "—".into(), |(m, e)| format!("{m:.3} ± {e:.3}"))
    };
    table.push(row("h (fs)", both(&|c, _| format!("{}", c.h))));
    table.push(row(
        "ω ((kcal/mol)^½/Å)",
        both(&|c, _| match c.rigid {
            Rigid::Settle => "—".into(),
            Rigid::Penalty { omega, .. } => format!("{omega}"),
        }),
    ));
    table.push(row(
        "the penalty's O–H period (fs)",
        both(&|c, _| match c.rigid {
            Rigid::Settle => "—".into(),
            Rigid::Penalty { omega, .. } => format!("{:.1}", water_box::oh_period(omega)),
        }),
    ));
    table.push(row(
        "simulated (ps)",
        both(&|c, o| format!("{:.1}", o.steps as f64 * c.h / 1000.0)),
    ));
    table.push(row(
        "V / N (kJ/mol)",
        both(&|c, o| est(&o.energy, c.blocks)),
    ));
    table.push(row(
        "T of the rigid motions (K)",
        both(&|c, o| est(&o.temperature, c.blocks)),
    ));
    table.push(row(
        "D (10⁻⁵ cm²/s)",
        both(&|_, o| est(&o.diffusion, o.diffusion.len())),
    ));
    table.push(row(
        "g_OO: RMS difference from LAMMPS's, 2.4–12 Å",
        both(&|c, o| {
            water_box::rdf_difference(c, o).map_or_else(|| "—".into(), |r| format!("{:.3}", r.0))
        }),
    ));
    table.push(row(
        "largest distance deviation (Å)",
        both(&|_, o| sci(o.deviation)),
    ));
    table.push(row(
        "steps/s",
        both(&|_, o| format!("{:.1}", o.steps as f64 / o.seconds.max(1e-9))),
    ));
    table.push(row(
        "wall s per simulated ps",
        both(&|c, o| format!("{:.2}", per_ps(c, o))),
    ));
    let ratio = per_ps(&cfg.stiff, &outs[1]) / per_ps(&cfg.settle, &outs[0]);
    let differ = differences(cfg, outs);
    table.push(row(
        "time to the same statistics (SETTLE = 1)",
        vec![
            "1".into(),
            if differ.is_empty() {
                format!("{ratio:.2}")
            } else {
                "never: other statistics".into()
            },
        ],
    ));
    let mut notes = Vec::new();
    for (c, o) in configs.iter().zip(outs) {
        if let Some(f) = &o.failure {
            notes.push(format!(
                "{}: the run stopped early: {f}",
                c.rigid.describe()
            ));
        }
    }
    if differ.is_empty() {
        notes.push(format!(
            "the two agree within 3 standard errors on V / N and D, so the time to the same error \
             bars is the wall time per simulated picosecond: Z&Ss-stiff at h = {} fs takes \
             {ratio:.2} times SETTLE's at {} fs ({} threads)",
            cfg.stiff.h,
            cfg.settle.h,
            rayon::current_num_threads()
        ));
    } else {
        notes.push(format!(
            "the penalized run samples another liquid: {} — it never reaches SETTLE's statistics, \
             whatever its cost per picosecond ({ratio:.2} times SETTLE's, {} threads)",
            differ.join("; "),
            rayon::current_num_threads()
        ));
    }
    Ok(Report {
        experiment: "water-stiff".into(),
        setup: format!(
            "{} SPC/E molecules from {}; SETTLE at {} fs and {} at {} fs, each {} ps (the \
             first {} ps a burn-in) under GLA Langevin at {} K, a sample every {} ps",
            outs[0].molecules,
            cfg.settle.data.display(),
            cfg.settle.h,
            cfg.stiff.rigid.describe(),
            cfg.stiff.h,
            cfg.settle.t_end / 1000.0,
            cfg.settle.burn_in / 1000.0,
            cfg.settle.temperature,
            cfg.settle.sample_dt / 1000.0
        ),
        tables: vec![table],
        notes,
        files,
    })
}

/// The observables on which the two runs differ by more than 3 combined standard errors, each
/// with its difference in them (empty when they agree, or when a run has no estimate).
fn differences(cfg: &Config, outs: &Outcomes) -> Vec<String> {
    let pairs = [
        ("V / N", &outs[0].energy, &outs[1].energy, cfg.settle.blocks),
        (
            "D",
            &outs[0].diffusion,
            &outs[1].diffusion,
            outs[0].diffusion.len().min(outs[1].diffusion.len()),
        ),
    ];
    pairs
        .iter()
        .filter_map(|(name, a, b, blocks)| {
            let (ma, ea) = block_estimate(a, *blocks)?;
            let (mb, eb) = block_estimate(b, *blocks)?;
            let z = (ma - mb).abs() / (ea * ea + eb * eb).sqrt().max(1e-300);
            (z > 3.0).then(|| format!("{name} differs by {z:.0} standard errors"))
        })
        .collect()
}
