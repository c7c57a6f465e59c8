//! `zs reproduce constraint-scaling`: Tao & Owhadi Fig. 2a — `ω²‖g(q(T))‖` of the penalized
//! double pendulum integrated by Z&S, as a function of the penalty frequency ω, `T = 50`.
//!
//! The penalized dynamics (eq. 7) stay within `g = O(ω⁻²)` of the constraint manifold
//! (Remark 6.1: the modelling error of a finite ω is `O(ω⁻²)`), so `ω²‖g‖` should stay bounded
//! as ω grows. The paper's Fig. 2 uses Z&S at `h = 0.01` "for smooth curves"; the runs of Fig. 1
//! use `h = 0.1`. Both are run here, with β = 0.4, from the paper's initial state, with the
//! physical sign of gravity (`V = +(y1 + y2)`, see [`crate::double_pendulum`]).
//!
//! The paper remarks that for very large ω (it names ω = 2000) Z&S, Newmark and implicit midpoint
//! become unstable "due to strong nonlinearity". The sweep goes past that value and reports,
//! for each run, whether it completed, failed (a [`StepError`]) or left the constraint manifold
//! (`‖g‖ > 0.5`, i.e. a rod length off by tens of percent).

use std::io;
use std::path::Path;

use zs_runtime::observers::{constraint_norm, total_energy};
use zs_runtime::{MechanicalSystem, StepError, ZhangSkeel};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{sci, Csv, Field, Report, Table};
use crate::double_pendulum::{DoublePendulum, BETA};

/// `‖g‖` above which a run is said to have left the constraint manifold.
pub const LOST: f64 = 0.5;

/// Parameters of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The pendulum (sign of gravity, lengths, masses).
    pub system: DoublePendulum,
    /// Penalty frequencies ω, increasing.
    pub omegas: Vec<f64>,
    /// Step sizes of Z&S.
    pub steps: Vec<f64>,
    /// Z&S β.
    pub beta: f64,
    /// Final time T.
    pub t_end: f64,
}

impl Config {
    /// The paper's set-up: T = 50, β = 0.4, `h = 0.1` (Fig. 1's step) and `h = 0.01` (Fig. 2's),
    /// ω log-spaced from 10 to 10^3.5 ≈ 3162 (six per decade) plus the paper's ω = 20 and 2000.
    pub fn paper() -> Self {
        let mut omegas: Vec<f64> = (0..=15).map(|k| 10f64.powf(1.0 + k as f64 / 6.0)).collect();
        omegas.extend([20.0, 2000.0]);
        omegas.sort_by(f64::total_cmp);
        Self {
            system: DoublePendulum::paper(),
            omegas,
            steps: vec![0.1, 0.01],
            beta: BETA,
            t_end: 50.0,
        }
    }

    /// A cheap version for tests: four ω over a decade, T = 5.
    pub fn quick() -> Self {
        Self {
            omegas: vec![10.0, 31.6, 100.0, 316.0],
            t_end: 5.0,
            ..Self::paper()
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Every step succeeded and `‖g‖ ≤ LOST` throughout.
    Completed,
    /// `‖g‖` exceeded [`LOST`] first at this step (the run continued to T or to a failure).
    LeftManifold {
        /// First step with `‖g‖ > LOST`.
        step: u64,
    },
    /// A step failed.
    Failed(StepError),
}

impl Status {
    /// Short description for tables.
    pub fn describe(&self) -> String {
        match self {
            Status::Completed => "ok".into(),
            Status::LeftManifold { step } => format!("‖g‖ > {LOST} from step {step}"),
            Status::Failed(e) => format!("failed at step {}: {}", e.step(), short_error(e)),
        }
    }
}

/// A few words on what failed.
pub fn short_error(e: &StepError) -> &'static str {
    match e {
        StepError::SingularMatrix { .. } => "singular M + βh²H",
        StepError::NonFinite { .. } => "non-finite value",
        StepError::InvalidStepSize { .. } => "invalid h",
        StepError::NotConverged { .. } => "solver did not converge",
        _ => "error",
    }
}

/// One run of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Z&S step.
    pub h: f64,
    /// Penalty frequency.
    pub omega: f64,
    /// `ω²‖g(q(T))‖` at the last completed step (`T` when the run completed).
    pub scaled_final: f64,
    /// `max_t ω²‖g(q(t))‖` over the steps taken.
    pub scaled_max: f64,
    /// `max_t ‖g(q(t))‖`.
    pub g_max: f64,
    /// `max_t |E_ω(t) − E_ω(0)| / |E_ω(0)|`, penalized energy.
    pub energy_error: f64,
    /// Steps completed.
    pub steps: u64,
    /// How it ended.
    pub status: Status,
}

/// Everything the sweep measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// One point per (h, ω), grouped by h in the order of [`Config::steps`].
    pub points: Vec<Point>,
}

impl Outcome {
    /// The points of step `h`.
    pub fn at_step(&self, h: f64) -> impl Iterator<Item = &Point> {
        self.points.iter().filter(move |p| p.h == h)
    }

    /// Largest ω whose run at step `h` completed, and the smallest that did not.
    pub fn stability_edge(&self, h: f64) -> (Option<f64>, Option<f64>) {
        let last_ok = self
            .at_step(h)
            .filter(|p| p.status == Status::Completed)
            .map(|p| p.omega)
            .fold(None, |a: Option<f64>, w| Some(a.map_or(w, |a| a.max(w))));
        let first_bad = self
            .at_step(h)
            .filter(|p| p.status != Status::Completed)
            .map(|p| p.omega)
            .fold(None, |a: Option<f64>, w| Some(a.map_or(w, |a| a.min(w))));
        (last_ok, first_bad)
    }
}

/// One penalized Z&S run at (h, ω) to `cfg.t_end`.
pub fn run_one(cfg: &Config, h: f64, omega: f64) -> Point {
    let sys = &cfg.system;
    let target = sys.penalized(omega);
    let mut zs = ZhangSkeel::new(cfg.beta, h);
    let mut state = DoublePendulum::initial_state();
    let steps = super::whole_steps(cfg.t_end, h);
    let e0 = total_energy(&target, &state);
    let w2 = omega * omega;
    let mut p = Point {
        h,
        omega,
        scaled_final: w2 * constraint_norm(sys, &state.q),
        scaled_max: 0.0,
        g_max: 0.0,
        energy_error: 0.0,
        steps: 0,
        status: Status::Completed,
    };
    for k in 1..=steps {
        if let Err(e) = zs.step(&target, &mut state) {
            p.status = Status::Failed(e);
            break;
        }
        p.steps = k;
        let g = constraint_norm(sys, &state.q);
        p.scaled_final = w2 * g;
        p.g_max = p.g_max.max(g);
        p.scaled_max = p.scaled_max.max(w2 * g);
        let de = ((total_energy(&target, &state) - e0) / e0).abs();
        p.energy_error = p.energy_error.max(de);
        if g > LOST && p.status == Status::Completed {
            p.status = Status::LeftManifold { step: k };
        }
    }
    p
}

/// Run the sweep.
pub fn run(cfg: &Config) -> Outcome {
    let mut points = Vec::new();
    for &h in &cfg.steps {
        for &omega in &cfg.omegas {
            points.push(run_one(cfg, h, omega));
        }
    }
    Outcome { points }
}

/// Write `constraint-scaling.csv` and `constraint-scaling.svg` into `dir` and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let mut csv = Csv::new(&[
        "h",
        "omega",
        "omega2_g_final",
        "omega2_g_max",
        "g_max",
        "energy_rel_error_max",
        "steps",
        "status",
    ]);
    for p in &out.points {
        let status = p.status.describe();
        csv.push(&[
            Field::Num(p.h),
            Field::Num(p.omega),
            Field::Num(p.scaled_final),
            Field::Num(p.scaled_max),
            Field::Num(p.g_max),
            Field::Num(p.energy_error),
            Field::Int(p.steps as i64),
            Field::Text(&status),
        ]);
    }
    let csv_path = dir.join("constraint-scaling.csv");
    csv.write(&csv_path)?;

    let diverged: Vec<String> = cfg
        .steps
        .iter()
        .filter_map(|&h| {
            out.stability_edge(h)
                .1
                .map(|w| format!("h = {h} diverges from ω = {w:.0}"))
        })
        .collect();
    let mut scaled = Panel::new(
        if diverged.is_empty() {
            format!("ω²‖g(q(T))‖ vs ω (T = {})", cfg.t_end)
        } else {
            format!(
                "ω²‖g(q(T))‖ vs ω (T = {}; {})",
                cfg.t_end,
                diverged.join(", ")
            )
        },
        "penalty frequency ω (1/time)",
        "ω²‖g(q)‖ (length²/time²)",
    )
    .scales(Scale::Log, Scale::Log)
    .legend(LegendPosition::UpperLeft);
    let mut raw = Panel::new(
        "‖g(q(T))‖ vs ω, with slope −2",
        "penalty frequency ω (1/time)",
        "‖g(q(T))‖ (length²)",
    )
    .scales(Scale::Log, Scale::Log)
    .legend(LegendPosition::LowerLeft);
    for (i, &h) in cfg.steps.iter().enumerate() {
        let ok: Vec<&Point> = out
            .at_step(h)
            .filter(|p| p.status == Status::Completed)
            .collect();
        scaled = scaled
            .with(Series::new(
                format!("Z&S h = {h}: ω²‖g(q(T))‖"),
                ok.iter().map(|p| (p.omega, p.scaled_final)).collect(),
                Style::LineMarkers,
                2 * i,
            ))
            .with(Series::new(
                format!("Z&S h = {h}: max over t ≤ T"),
                ok.iter().map(|p| (p.omega, p.scaled_max)).collect(),
                Style::Dashed,
                2 * i,
            ));
        raw = raw.with(Series::new(
            format!("Z&S h = {h}"),
            ok.iter()
                .map(|p| (p.omega, p.scaled_final / (p.omega * p.omega)))
                .collect(),
            Style::LineMarkers,
            2 * i,
        ));
    }
    // Slope −2 guide through the geometric middle of the first step's data.
    if let Some(mid) = out
        .at_step(cfg.steps[0])
        .filter(|p| p.status == Status::Completed)
        .nth(cfg.omegas.len() / 4)
    {
        let c = mid.scaled_final;
        let (w0, w1) = (cfg.omegas[0], *cfg.omegas.last().unwrap_or(&cfg.omegas[0]));
        raw = raw.with(Series::new(
            "C·ω⁻²",
            vec![(w0, c / (w0 * w0)), (w1, c / (w1 * w1))],
            Style::Dashed,
            7,
        ));
    }
    let figure = Figure::new(
        format!(
            "Fig. 2a: constraint violation of the penalized double pendulum (Z&S, β = {}, physical gravity)",
            cfg.beta
        ),
        2,
        (620, 460),
    )
    .with(scaled)
    .with(raw);
    let svg_path = dir.join("constraint-scaling.svg");
    figure.write_svg(&svg_path)?;

    let mut table = Table::new(
        format!("ω²‖g(q(T))‖, T = {}, Z&S β = {}", cfg.t_end, cfg.beta),
        &[
            "h",
            "ω",
            "ω²‖g(q(T))‖",
            "max_t ω²‖g‖",
            "max ‖g‖",
            "max |ΔE/E|",
            "status",
        ],
    );
    for p in &out.points {
        table.push(vec![
            format!("{}", p.h),
            format!("{:.1}", p.omega),
            sci(p.scaled_final),
            sci(p.scaled_max),
            sci(p.g_max),
            sci(p.energy_error),
            p.status.describe(),
        ]);
    }
    let mut notes = Vec::new();
    for &h in &cfg.steps {
        let ok: Vec<&Point> = out
            .at_step(h)
            .filter(|p| p.status == Status::Completed)
            .collect();
        if let (Some(lo), Some(hi)) = (
            ok.iter().map(|p| p.scaled_final).reduce(f64::min),
            ok.iter().map(|p| p.scaled_final).reduce(f64::max),
        ) {
            let wmax = ok.iter().map(|p| p.omega).fold(0.0, f64::max);
            notes.push(format!(
                "h = {h}: over the {} completed runs (ω from {} to {:.0}), ω²‖g(q(T))‖ stays in [{}, {}] (ratio {:.1}), while ω² grows by {:.0}x.",
                ok.len(),
                cfg.omegas[0],
                wmax,
                sci(lo),
                sci(hi),
                hi / lo,
                (wmax / cfg.omegas[0]).powi(2)
            ));
        }
        let (last_ok, first_bad) = out.stability_edge(h);
        match first_bad {
            None => notes.push(format!(
                "h = {h}: every run completed (up to ω = {}).",
                last_ok.unwrap_or(f64::NAN)
            )),
            Some(w) => {
                let p = out.at_step(h).find(|p| p.omega == w).expect("point exists");
                notes.push(format!(
                    "h = {h}: the smallest ω whose run did not complete is {w:.0} ({}); largest completed ω: {}.",
                    p.status.describe(),
                    last_ok.map_or("none".into(), |w| format!("{w:.0}"))
                ));
            }
        }
    }
    Ok(Report {
        experiment: "constraint-scaling".into(),
        setup: format!(
            "Tao & Owhadi Fig. 2a: penalized double pendulum (physical gravity, V = +(y1 + y2)), Z&S β = {}, h ∈ {:?}, T = {}, {} values of ω from {} to {:.0}.",
            cfg.beta,
            cfg.steps,
            cfg.t_end,
            cfg.omegas.len(),
            cfg.omegas[0],
            cfg.omegas.last().copied().unwrap_or(f64::NAN)
        ),
        tables: vec![table],
        notes,
        files: vec![csv_path, svg_path],
    })
}
