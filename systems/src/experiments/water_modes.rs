//! `zs reproduce water-modes`: the normal modes of a minimised cluster of TIP3P waters held rigid
//! by the penalty `½ω²|g|²` (Tao & Owhadi eq. 7), from the exact Hessian (`zs nma`), at growing ω.
//!
//! A rigid water has 6 degrees of freedom, the penalty holds the other 3 (two O–H distances and
//! the H–H distance): of the `9N` modes, 6 are the cluster's rigid motions, `6N − 6` the
//! intermolecular band (the molecules' hindered translations and librations) and `3N` the
//! penalty's band. As ω grows the penalty band moves up as ω (its frequencies divided by ω stay
//! put) while the intermolecular band converges to the rigid-molecule modes — the spectrum the
//! penalty method integrates with, and what a rigid-body normal-mode analysis gives
//! ([`crate::water::rigid_modes`], computed here at the last ω's minimum and compared mode by
//! mode; `benches/peers/openmm_rigid_water_modes.py` computes it again from OpenMM's forces). The
//! experiment measures both: the bands at each ω, the penalty band's frequency ÷ ω, and how far
//! the intermolecular band still moves when ω doubles (the penalty's modelling error,
//! Tao & Owhadi Remark 6.1: `O(ω⁻²)`).

use std::io;
use std::path::Path;

use zs_runtime::minimize::Lbfgs;
use zs_runtime::modes::{normal_modes, rigid_motions};
use zs_runtime::Model;

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{sci, Csv, Field, Report, Table};
use crate::water::rigid_modes::rigid_modes;
use crate::water::{self, Water};

/// cm⁻¹ per unit of `√λ` in AKMA units (time unit 48.888 fs): `1 / (2π c t)`.
pub const WAVENUMBER_PER_AKMA: f64 =
    1.0 / (2.0 * core::f64::consts::PI * 2.997_924_58e10 * 4.888_821e-14);

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Molecules.
    pub n: usize,
    /// Penalty frequencies, increasing (each run starts from the previous minimum).
    pub omegas: Vec<f64>,
    /// RMS force at which L-BFGS stops (kcal/mol/Å).
    pub tolerance: f64,
    /// Seed of the start's orientations (on the 3.1 Å grid).
    pub seed: u64,
    /// Width of the density-of-states bins (cm⁻¹).
    pub bin: f64,
}

impl Config {
    /// 100 waters (900 coordinates), ω = 20 (the paper's), 40, 80, 160.
    pub fn paper() -> Self {
        Self {
            n: 100,
            omegas: vec![water::OMEGA, 40.0, 80.0, 160.0],
            tolerance: 1e-5,
            seed: 0,
            bin: 25.0,
        }
    }
}

/// The spectrum at one ω.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectrum {
    /// The penalty frequency.
    pub omega: f64,
    /// L-BFGS iterations to the minimum and its RMS force.
    pub iterations: u64,
    /// RMS force at the minimum.
    pub rms_force: f64,
    /// Frequencies (cm⁻¹, negative for a negative eigenvalue), ascending, all `9N`.
    pub frequencies: Vec<f64>,
    /// How many of the lowest modes are rigid motions of the cluster (90 % in their span).
    pub rigid: usize,
}

impl Spectrum {
    /// The intermolecular band: the `6N − 6` modes above the rigid motions.
    pub fn intermolecular(&self) -> &[f64] {
        let n = self.frequencies.len() / 9;
        &self.frequencies[6..6 * n]
    }
    /// The penalty band: the `3N` highest modes.
    pub fn penalty(&self) -> &[f64] {
        let n = self.frequencies.len() / 9;
        &self.frequencies[6 * n..]
    }
}

/// The rigid-molecule spectrum the intermolecular band converges to
/// ([`crate::water::rigid_modes`]: rigid-body coordinates, no penalty), at the rigid minimum
/// nearest the last ω's.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidSpectrum {
    /// Frequencies (cm⁻¹, negative for a negative eigenvalue), ascending, all `6N`.
    pub frequencies: Vec<f64>,
    /// Per mode, the share of its kinetic energy in the molecules' rotations.
    pub libration: Vec<f64>,
    /// The largest rigid-body gradient component at each Newton iterate.
    pub newton: Vec<f64>,
}

impl RigidSpectrum {
    /// The `6N − 6` modes above the cluster's rigid motions.
    pub fn intermolecular(&self) -> &[f64] {
        &self.frequencies[6..]
    }
}

/// Largest Newton iterations to the rigid minimum, and the rigid-body gradient it stops below
/// (kcal/mol per Å or per radian).
const RIGID_NEWTON: (usize, f64) = (30, 1e-8);

/// The spectra at every ω and the rigid-molecule one.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// One per ω, in `cfg.omegas`' order.
    pub spectra: Vec<Spectrum>,
    /// The limit ω → ∞.
    pub rigid: RigidSpectrum,
}

/// The largest and the mean relative difference of the intermolecular band of `s` from the
/// rigid-molecule modes, mode by mode in ascending order.
pub fn rigid_difference(s: &Spectrum, rigid: &RigidSpectrum) -> (f64, f64) {
    let d: Vec<f64> = s
        .intermolecular()
        .iter()
        .zip(rigid.intermolecular())
        .map(|(x, y)| (x - y).abs() / y.abs())
        .collect();
    (d.iter().copied().fold(0.0, f64::max), mean(&d))
}

/// Minimise and analyse at every ω of `cfg`, then the rigid molecules.
///
/// # Panics
/// If a minimisation or an eigensolve fails, or Newton's method does not reach the rigid
/// minimum (the cluster and tolerances are fixed).
pub fn run(cfg: &Config) -> Outcome {
    let w = Water::tip3p();
    let system = w.assemble(cfg.n);
    let mut q = w.cluster(cfg.n, water::SPACING, cfg.seed);
    let masses: Vec<f64> = {
        let mut m = vec![0.0; 9 * cfg.n];
        system.masses_into_slice(&mut m);
        m.chunks_exact(3).map(|c| c[0]).collect()
    };
    let spectra = cfg
        .omegas
        .iter()
        .map(|&omega| {
            let penalized = system.penalized(omega);
            let min = Lbfgs::new(cfg.tolerance, 200_000)
                .minimize(&penalized, &mut q)
                .unwrap_or_else(|e| panic!("water-modes: minimising at ω = {omega}: {e}"));
            let modes = normal_modes(&penalized, &q)
                .unwrap_or_else(|e| panic!("water-modes: modes at ω = {omega}: {e}"));
            let sites: Vec<[f64; 3]> = q.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
            let motions = rigid_motions(&sites, &masses, true);
            let rigid = (0..modes.len())
                .filter(|&k| {
                    modes.overlap(k, &motions.translations) + modes.overlap(k, &motions.rotations)
                        > 0.9
                })
                .count();
            Spectrum {
                omega,
                iterations: min.steps,
                rms_force: min.rms_force,
                frequencies: (0..modes.len())
                    .map(|k| modes.angular_frequency(k) * WAVENUMBER_PER_AKMA)
                    .collect(),
                rigid,
            }
        })
        .collect();
    let (most, tolerance) = RIGID_NEWTON;
    let modes = rigid_modes(&w, &system, &q, tolerance, most)
        .unwrap_or_else(|e| panic!("water-modes: {e}"));
    Outcome {
        spectra,
        rigid: RigidSpectrum {
            frequencies: modes
                .eigenvalues
                .iter()
                .map(|l| l.signum() * l.abs().sqrt() * WAVENUMBER_PER_AKMA)
                .collect(),
            libration: modes.libration,
            newton: modes.newton,
        },
    }
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// The largest change of the intermolecular band's frequencies from `a` to `b`, relative to
/// `b`'s (mode by mode, in ascending order).
pub fn band_change(a: &Spectrum, b: &Spectrum) -> f64 {
    a.intermolecular()
        .iter()
        .zip(b.intermolecular())
        .map(|(x, y)| (x - y).abs() / y.abs())
        .fold(0.0, f64::max)
}

/// Write the CSV, the figure and the report.
///
/// # Errors
/// The files cannot be written.
pub fn write(cfg: &Config, outcome: &Outcome, dir: &Path) -> io::Result<Report> {
    let (out, rigid) = (&outcome.spectra[..], &outcome.rigid);
    let differences: Vec<(f64, f64)> = out.iter().map(|s| rigid_difference(s, rigid)).collect();
    let mut csv = Csv::new(&["omega", "mode", "frequency_cm1", "band"]);
    for s in out {
        for (k, &f) in s.frequencies.iter().enumerate() {
            let band = if k < s.rigid {
                "rigid"
            } else if k < 6 * cfg.n {
                "intermolecular"
            } else {
                "penalty"
            };
            csv.push(&[
                Field::Num(s.omega),
                Field::Int(k as i64),
                Field::Num(f),
                Field::Text(band),
            ]);
        }
    }
    let csv_path = dir.join("water-modes.csv");
    csv.write(&csv_path)?;
    let mut rigid_csv = Csv::new(&["mode", "frequency_cm1", "libration_fraction"]);
    for (k, (&f, &l)) in rigid.frequencies.iter().zip(&rigid.libration).enumerate() {
        rigid_csv.push(&[Field::Int(k as i64), Field::Num(f), Field::Num(l)]);
    }
    let rigid_path = dir.join("water-modes-rigid.csv");
    rigid_csv.write(&rigid_path)?;

    let mut table = Table::new(
        format!(
            "{} TIP3P waters at the minimum of V + ½ω²|g|² (frequencies in cm⁻¹)",
            cfg.n
        ),
        &[
            "ω",
            "L-BFGS it.",
            "RMS force",
            "rigid",
            "intermolecular band",
            "its mean",
            "penalty band",
            "penalty mean ÷ ω",
            "inter. change to next ω",
            "vs rigid: largest",
            "vs rigid: mean",
            "mean × ω²",
        ],
    );
    for (i, s) in out.iter().enumerate() {
        let (inter, pen) = (s.intermolecular(), s.penalty());
        table.push(vec![
            format!("{}", s.omega),
            s.iterations.to_string(),
            sci(s.rms_force),
            s.rigid.to_string(),
            format!("{:.1} – {:.1}", inter[0], inter[inter.len() - 1]),
            format!("{:.1}", mean(inter)),
            format!("{:.0} – {:.0}", pen[0], pen[pen.len() - 1]),
            format!("{:.2}", mean(pen) / s.omega),
            out.get(i + 1)
                .map_or("—".into(), |next| sci(band_change(s, next))),
            sci(differences[i].0),
            sci(differences[i].1),
            format!("{:.1}", differences[i].1 * s.omega * s.omega),
        ]);
    }
    let inter = rigid.intermolecular();
    let blank = || "".to_string();
    table.push(vec![
        "∞ (rigid)".into(),
        format!("{} Newton", rigid.newton.len() - 1),
        sci(rigid.newton[rigid.newton.len() - 1]),
        "6".into(),
        format!("{:.1} – {:.1}", inter[0], inter[inter.len() - 1]),
        format!("{:.1}", mean(inter)),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
    ]);

    let mut dos = Panel::new(
        "intermolecular band: modes per bin",
        "frequency (cm⁻¹)",
        format!("modes per {} cm⁻¹", cfg.bin),
    )
    .legend(LegendPosition::UpperRight);
    for (i, s) in out.iter().enumerate() {
        let inter = s.intermolecular();
        let top = inter[inter.len() - 1].max(0.0);
        let bins = (top / cfg.bin).ceil() as usize + 1;
        let mut counts = vec![0.0; bins];
        for &f in inter {
            if f >= 0.0 {
                counts[(f / cfg.bin) as usize] += 1.0;
            }
        }
        let points = counts
            .iter()
            .enumerate()
            .map(|(b, &c)| ((b as f64 + 0.5) * cfg.bin, c))
            .collect();
        dos = dos.with(Series::new(
            format!("ω = {}", s.omega),
            points,
            Style::Line,
            i,
        ));
    }
    let top = inter[inter.len() - 1].max(0.0);
    let mut counts = vec![0.0; (top / cfg.bin).ceil() as usize + 1];
    for &f in inter.iter().filter(|&&f| f >= 0.0) {
        counts[(f / cfg.bin) as usize] += 1.0;
    }
    dos = dos.with(Series::new(
        "rigid molecules",
        counts
            .iter()
            .enumerate()
            .map(|(b, &c)| ((b as f64 + 0.5) * cfg.bin, c))
            .collect(),
        Style::Markers,
        out.len(),
    ));
    let mut scaled = Panel::new(
        "penalty band: frequency ÷ ω against mode",
        "mode of the penalty band",
        "frequency ÷ ω (cm⁻¹ per AKMA⁻¹)",
    )
    .legend(LegendPosition::LowerRight);
    for (i, s) in out.iter().enumerate() {
        let points = s
            .penalty()
            .iter()
            .enumerate()
            .map(|(k, &f)| (k as f64, f / s.omega))
            .collect();
        scaled = scaled.with(Series::new(
            format!("ω = {}", s.omega),
            points,
            Style::Line,
            i,
        ));
    }
    let mut change = Panel::new(
        "intermolecular band: change when ω doubles, difference from rigid",
        "ω",
        "relative change or difference",
    )
    .scales(Scale::Log, Scale::Log)
    .legend(LegendPosition::LowerLeft);
    change = change.with(Series::new(
        "largest change to 2ω",
        out.windows(2)
            .map(|p| (p[0].omega, band_change(&p[0], &p[1])))
            .collect(),
        Style::LineMarkers,
        3,
    ));
    for (which, name) in ["largest", "mean"].into_iter().enumerate() {
        change = change.with(Series::new(
            format!("{name} difference from rigid"),
            out.iter()
                .zip(&differences)
                .map(|(s, d)| (s.omega, if which == 0 { d.0 } else { d.1 }))
                .collect(),
            Style::LineMarkers,
            1 + which,
        ));
    }
    let svg = dir.join("water-modes.svg");
    Figure::new(
        format!(
            "Normal modes of {} penalized TIP3P waters from the exact Hessian (zs nma)",
            cfg.n
        ),
        3,
        (560, 420),
    )
    .with(dos)
    .with(scaled)
    .with(change)
    .write_svg(&svg)?;

    let slope = super::log_log_slope(
        &out.windows(2)
            .map(|p| (p[0].omega, band_change(&p[0], &p[1])))
            .collect::<Vec<_>>(),
    );
    let mut notes = vec![format!(
        "Every run finds the cluster's 6 rigid motions as its 6 lowest modes: {}.",
        if out.iter().all(|s| s.rigid == 6) {
            "yes".to_string()
        } else {
            format!("no ({:?})", out.iter().map(|s| s.rigid).collect::<Vec<_>>())
        }
    )];
    if let Some(s) = slope {
        notes.push(format!(
            "The intermolecular band converges as ω grows: its largest change when ω doubles falls with log-log slope {s:.2} (the penalty's O(ω⁻²) modelling error: −2)."
        ));
    }
    let to_rigid = super::log_log_slope(
        &out.iter()
            .zip(&differences)
            .map(|(s, d)| (s.omega, d.1))
            .collect::<Vec<_>>(),
    );
    let librations: Vec<f64> = inter
        .iter()
        .zip(&rigid.libration[6..])
        .filter(|(_, &l)| l > 0.5)
        .map(|(&f, _)| f)
        .collect();
    if let (Some(slope), Some(lo), Some(hi)) = (to_rigid, librations.first(), librations.last()) {
        notes.push(format!(
            "Against the rigid molecules themselves (rigid-body normal modes without the penalty, at the rigid minimum next to the last ω's, {} Newton iterations to a rigid-body gradient of {}): {} of the {} intermolecular modes are librations (more than half their kinetic energy in rotation, {lo:.1}–{hi:.1} cm⁻¹), the rest hindered translations; the mean relative difference of the penalized band from them falls with log-log slope {slope:.2} in ω (−2: Tao & Owhadi Remark 6.1).",
            rigid.newton.len() - 1,
            sci(rigid.newton[rigid.newton.len() - 1]),
            librations.len(),
            inter.len(),
        ));
    }
    if let Some(first) = out.first() {
        let pen = first.penalty();
        notes.push(format!(
            "The penalty band scales as ω (frequency ÷ ω constant across ω): those modes are the penalty's, not water's O–H stretches and bend — at ω = {} they span {:.0}–{:.0} cm⁻¹, not the 1 600 and 3 700 cm⁻¹ of flexible water: a rigid model has no such modes, and the penalty puts them where they stay out of the way.",
            first.omega,
            pen[0],
            pen[pen.len() - 1]
        ));
    }
    Ok(Report {
        experiment: "water-modes".into(),
        setup: format!(
            "{} TIP3P waters from the 3.1 Å grid (orientations seed {}), minimised by L-BFGS to an RMS force of {} kcal/mol/Å at each ω (from the previous minimum), exact Hessian of V + ½ω²|g|², faer's dense symmetric eigensolver; then rigid-body normal modes of exactly rigid molecules (no penalty) at the rigid minimum next to the last; frequencies ν̃ = √λ / (2πc) in cm⁻¹ (AKMA units).",
            cfg.n, cfg.seed, cfg.tolerance
        ),
        tables: vec![table],
        notes,
        files: vec![csv_path, rigid_path, svg],
    })
}
