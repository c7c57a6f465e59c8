//! `zs reproduce water-multipliers`: Tao & Owhadi Fig. 5 — the Lagrange multipliers of the
//! "1st oxygen atom" estimated from the penalized run by eq. 8 (`λ ≈ ω²⟨g⟩` over a window of 0.2)
//! at ω = 500, no noise or friction, against the multipliers SHAKE computes.
//!
//! Our reading of "1st oxygen atom": the constraints that hold the first molecule's oxygen, its
//! two O–H distance constraints (the paper orders atoms H, O, H; its first oxygen is molecule 1's);
//! the H–H constraint of the same molecule is shown too. Sign: this crate's convention, constraint
//! force `−G(q)ᵀλ` ([`zs_runtime::multipliers`]): a bond the cluster pulls on is stretched, `g > 0`,
//! `λ > 0` — the negative of the paper's eq. 9 sign.
//!
//! The penalized run is Z&Ss-stiff (Integrator 5) at `h = 0.002`, small enough to follow the
//! bonds' vibration at ω = 500 (`hω_bond ≈ 1.9`), which eq. 8 averages; SHAKE is run as RATTLE
//! (Newton) at the same step, its multipliers those of each completed step. Both start from the
//! relaxed cluster made rigid, with rigid thermal velocities at kT = 0.02 kcal/mol (the
//! conditions of eq. 8: on the manifold, tangent velocity).

use std::io;
use std::path::Path;

use zs_runtime::{Rattle, ShakeSolver, TimeSeries, ZhangSkeelStiff};

use super::plot::{Figure, LegendPosition, Panel, Series, Style};
use super::water_conservation::{self, start};
use super::{whole_steps, Csv, Field, Report, Table};
use crate::water::Water;

/// The constraints shown: molecule 1's `|O−H1|² − r²`, `|O−H2|² − r²`, `|H1−H2|² − r²`.
pub const NAMES: [&str; 3] = ["O–H1", "O–H2", "H1–H2"];

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Molecules.
    pub n: usize,
    /// Penalty frequency.
    pub omega: f64,
    /// Step of both runs.
    pub h: f64,
    /// Final time.
    pub t_end: f64,
    /// Window of eq. 8.
    pub window: f64,
    /// Z&Ss-stiff's β.
    pub beta: f64,
    /// Temperature of the initial velocities.
    pub kt: f64,
    /// Seed.
    pub seed: u64,
}

impl Config {
    /// N = 7, ω = 500, h = 0.002, T = 10, window 0.2.
    pub fn paper() -> Self {
        Self {
            n: 7,
            omega: 500.0,
            h: 0.002,
            t_end: 10.0,
            window: 0.2,
            beta: 0.4,
            kt: 0.02,
            seed: 0,
        }
    }

    /// T = 2: for tests.
    pub fn quick() -> Self {
        Self {
            t_end: 2.0,
            ..Self::paper()
        }
    }
}

/// What was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Times of the comparison (window centres).
    pub times: Vec<f64>,
    /// Eq. 8's estimate at each time.
    pub penalized: Vec<[f64; 3]>,
    /// SHAKE's multipliers, averaged over the same window.
    pub shake: Vec<[f64; 3]>,
}

impl Outcome {
    /// Per constraint: RMS of `λ_eq8 − λ_SHAKE` over RMS of `λ_SHAKE`.
    pub fn relative_rms(&self) -> [f64; 3] {
        std::array::from_fn(|c| {
            let d: f64 = self
                .penalized
                .iter()
                .zip(&self.shake)
                .map(|(a, b)| (a[c] - b[c]).powi(2))
                .sum();
            let s: f64 = self.shake.iter().map(|b| b[c] * b[c]).sum();
            (d / s).sqrt()
        })
    }
}

/// Run both.
pub fn run(cfg: &Config) -> Outcome {
    let (s0, _) = start(&water_conservation::Config {
        n: cfg.n,
        kt: cfg.kt,
        seed: cfg.seed,
        ..water_conservation::Config::paper()
    });
    let sys = Water::tip3p().assemble(cfg.n).with_parallel(false);
    let pen = sys.penalized(cfg.omega);
    let steps = whole_steps(cfg.t_end, cfg.h);
    let (mut g_series, mut l_series) = (
        TimeSeries::<3>::with_capacity(steps as usize + 1),
        TimeSeries::<3>::with_capacity(steps as usize + 1),
    );
    let mut g = vec![0.0; 3 * cfg.n];
    let mut s = s0.clone();
    let mut zs = ZhangSkeelStiff::new(cfg.beta, cfg.h);
    use zs_runtime::ConstrainedModel;
    sys.constraints_into(&s.q, &mut g);
    g_series.push(0.0, [g[0], g[1], g[2]]);
    for _ in 0..steps {
        if zs.step(&pen, &mut s).is_err() {
            break;
        }
        sys.constraints_into(&s.q, &mut g);
        g_series.push(s.t, [g[0], g[1], g[2]]);
    }
    let mut s = s0;
    let mut rattle = Rattle::new(cfg.h).with_solver(ShakeSolver::Newton);
    for _ in 0..steps {
        // The multipliers of a step belong to its start time (`Rattle::multipliers_time`).
        let t0 = s.t;
        if rattle.step(&sys, &mut s).is_err() {
            break;
        }
        let l = rattle.multipliers();
        l_series.push(t0, [l[0], l[1], l[2]]);
    }
    let w2 = cfg.omega * cfg.omega;
    let half = 0.5 * cfg.window;
    let mut out = Outcome {
        times: Vec::new(),
        penalized: Vec::new(),
        shake: Vec::new(),
    };
    let mut t = half;
    while t + half <= cfg.t_end - cfg.h {
        if let (Some(a), Some(b)) = (
            g_series.mean(t - half, t + half),
            l_series.mean(t - half, t + half),
        ) {
            out.times.push(t);
            out.penalized.push(a.map(|x| w2 * x));
            out.shake.push(b);
        }
        t += cfg.window / 4.0;
    }
    out
}

/// Write `water-multipliers.csv` and `.svg`, and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let mut csv = Csv::new(&[
        "t",
        "lambda_eq8_OH1",
        "lambda_eq8_OH2",
        "lambda_eq8_HH",
        "lambda_shake_OH1",
        "lambda_shake_OH2",
        "lambda_shake_HH",
    ]);
    for (k, &t) in out.times.iter().enumerate() {
        let (a, b) = (out.penalized[k], out.shake[k]);
        csv.push(&[
            Field::Num(t),
            Field::Num(a[0]),
            Field::Num(a[1]),
            Field::Num(a[2]),
            Field::Num(b[0]),
            Field::Num(b[1]),
            Field::Num(b[2]),
        ]);
    }
    let csv_path = dir.join("water-multipliers.csv");
    csv.write(&csv_path)?;
    let mut panel = Panel::new(
        format!(
            "molecule 1, window {}: eq. 8 (solid) vs SHAKE (dashed)",
            cfg.window
        ),
        "time t (AKMA)",
        "λ (kcal/mol/Å², this crate's sign: λ > 0 for a stretched bond)",
    )
    .legend(LegendPosition::UpperRight);
    for c in 0..3 {
        let pts = |v: &Vec<[f64; 3]>| out.times.iter().zip(v).map(|(&t, x)| (t, x[c])).collect();
        panel = panel
            .with(Series::new(
                format!("{} eq. 8, ω = {}", NAMES[c], cfg.omega),
                pts(&out.penalized),
                Style::Line,
                c,
            ))
            .with(Series::new(
                format!("{} SHAKE", NAMES[c]),
                pts(&out.shake),
                Style::Dashed,
                c,
            ));
    }
    let figure = Figure::new(
        format!(
            "Fig. 5: multipliers of the first oxygen's constraints, {} waters, no noise",
            cfg.n
        ),
        1,
        (900, 480),
    )
    .with(panel);
    let svg_path = dir.join("water-multipliers.svg");
    figure.write_svg(&svg_path)?;
    let rms = out.relative_rms();
    let mut table = Table::new(
        format!(
            "ω = {}, h = {}, T = {}, window {}",
            cfg.omega, cfg.h, cfg.t_end, cfg.window
        ),
        &[
            "constraint",
            "mean λ SHAKE",
            "mean λ eq. 8",
            "RMS(eq. 8 − SHAKE) / RMS(SHAKE)",
        ],
    );
    let mean =
        |v: &Vec<[f64; 3]>, c: usize| v.iter().map(|x| x[c]).sum::<f64>() / v.len().max(1) as f64;
    for c in 0..3 {
        table.push(vec![
            NAMES[c].into(),
            format!("{:.4}", mean(&out.shake, c)),
            format!("{:.4}", mean(&out.penalized, c)),
            format!("{:.3}", rms[c]),
        ]);
    }
    Ok(Report {
        experiment: "water-multipliers".into(),
        setup: format!(
            "Tao & Owhadi Fig. 5: {} rigid TIP3P waters, no noise or friction; eq. 8 (window {}) from Z&Ss-stiff on the penalized system, ω = {}, h = {}, against SHAKE (RATTLE, Newton) at the same step; \"1st oxygen atom\" read as the constraints of molecule 1's oxygen; λ in this crate's sign (constraint force −Gᵀλ, the negative of eq. 9's).",
            cfg.n, cfg.window, cfg.omega, cfg.h
        ),
        tables: vec![table],
        notes: vec![],
        files: vec![csv_path, svg_path],
    })
}
