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
//! become unstable "due to strong nonlinearity". The sweep goes past that value, runs Newmark
//! (eq. 12, Newton to convergence) and simplified Z&S (eq. 18, no third-derivative term) beside
//! Z&S, and reports for each run whether it completed,
//! failed (a [`StepError`]) or left the constraint manifold (`‖g‖ > 0.5`, i.e. a rod length off
//! by tens of percent); where a method's runs stop completing, the stability edge in ω is
//! located by bisection.

use std::io;
use std::path::Path;

use zs_runtime::observers::{constraint_norm, total_energy};
use zs_runtime::{
    MechanicalSystem, Newmark, Penalized, StepError, Stepper, ZhangSkeel, ZhangSkeelSimplified,
};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{sci, Csv, Field, Report, Table};
use crate::double_pendulum::{DoublePendulum, BETA};

/// `‖g‖` above which a run is said to have left the constraint manifold.
pub const LOST: f64 = 0.5;

/// The integrators of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrator {
    /// Zhang & Skeel (eq. 3), the method of Fig. 2a.
    ZhangSkeel,
    /// Newmark (eq. 12, γ = ½) with Newton to convergence (the paper's remark on large ω).
    Newmark,
    /// Simplified Z&S (eq. 18): Z&S without the third-derivative term of `f_k`, to show which
    /// part of Z&S sets its stability edge.
    ZhangSkeelSimplified,
}

impl Integrator {
    /// Name for tables and legends.
    pub fn label(self) -> &'static str {
        match self {
            Integrator::ZhangSkeel => "Z&S",
            Integrator::Newmark => "Newmark",
            Integrator::ZhangSkeelSimplified => "Z&Ss",
        }
    }
}

/// Parameters of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Integrators to sweep.
    pub integrators: Vec<Integrator>,
    /// Bisection steps locating the stability edge in ω (0: none).
    pub bisections: usize,
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
            integrators: vec![
                Integrator::ZhangSkeel,
                Integrator::Newmark,
                Integrator::ZhangSkeelSimplified,
            ],
            bisections: 10,
            system: DoublePendulum::paper(),
            omegas,
            steps: vec![0.1, 0.01],
            beta: BETA,
            t_end: 50.0,
        }
    }

    /// A cheap version for tests: Z&S only, four ω over a decade and a half, T = 5.
    pub fn quick() -> Self {
        Self {
            integrators: vec![Integrator::ZhangSkeel],
            bisections: 0,
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
    match e.code() {
        "singular-matrix" => "singular M + βh²H",
        "non-finite" => "non-finite value",
        "invalid-step-size" => "invalid h",
        "not-converged" => "solver did not converge",
        _ => "error",
    }
}

/// One run of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Integrator.
    pub integrator: Integrator,
    /// Step.
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
    /// One point per (integrator, h, ω), grouped by integrator then h.
    pub points: Vec<Point>,
    /// Per (integrator, h) whose runs stop completing: `(integrator, h, ω_ok, ω_bad)`, the
    /// bracket of the stability edge after bisection.
    pub edges: Vec<(Integrator, f64, f64, f64)>,
}

impl Outcome {
    /// The points of `integrator` at step `h`, ω increasing.
    pub fn series(&self, integrator: Integrator, h: f64) -> impl Iterator<Item = &Point> {
        self.points
            .iter()
            .filter(move |p| p.integrator == integrator && p.h == h)
    }

    /// The points of Z&S at step `h`.
    pub fn at_step(&self, h: f64) -> impl Iterator<Item = &Point> {
        self.series(Integrator::ZhangSkeel, h)
    }

    /// The smallest ω whose run (`integrator`, `h`) did not complete, and the largest
    /// completed ω below it.
    pub fn stability_edge(&self, integrator: Integrator, h: f64) -> (Option<f64>, Option<f64>) {
        let first_bad = self
            .series(integrator, h)
            .filter(|p| p.status != Status::Completed)
            .map(|p| p.omega)
            .reduce(f64::min);
        let last_ok = self
            .series(integrator, h)
            .filter(|p| p.status == Status::Completed && first_bad.is_none_or(|b| p.omega < b))
            .map(|p| p.omega)
            .reduce(f64::max);
        (last_ok, first_bad)
    }

    /// The bisected bracket `(ω_ok, ω_bad)` of the stability edge of (`integrator`, `h`).
    pub fn edge(&self, integrator: Integrator, h: f64) -> Option<(f64, f64)> {
        self.edges
            .iter()
            .find(|e| e.0 == integrator && e.1 == h)
            .map(|e| (e.2, e.3))
    }
}

/// One penalized run of `integrator` at (h, ω) to `cfg.t_end`.
pub fn run_one(cfg: &Config, integrator: Integrator, h: f64, omega: f64) -> Point {
    match integrator {
        Integrator::ZhangSkeel => run_with(cfg, integrator, ZhangSkeel::new(cfg.beta, h), h, omega),
        Integrator::Newmark => run_with(cfg, integrator, Newmark::new(cfg.beta, h), h, omega),
        Integrator::ZhangSkeelSimplified => run_with(
            cfg,
            integrator,
            ZhangSkeelSimplified::new(cfg.beta, h),
            h,
            omega,
        ),
    }
}

fn run_with<S: for<'a> Stepper<Penalized<'a, DoublePendulum, 4, 2>, [f64; 4]>>(
    cfg: &Config,
    integrator: Integrator,
    mut stepper: S,
    h: f64,
    omega: f64,
) -> Point {
    let sys = &cfg.system;
    let target = sys.penalized(omega);
    let mut state = DoublePendulum::initial_state();
    let steps = super::whole_steps(cfg.t_end, h);
    let e0 = total_energy(&target, &state);
    let w2 = omega * omega;
    let mut p = Point {
        integrator,
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
        if let Err(e) = stepper.step(&target, &mut state) {
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

/// Run the sweep, then bisect the stability edges (in log ω).
pub fn run(cfg: &Config) -> Outcome {
    let mut out = Outcome {
        points: Vec::new(),
        edges: Vec::new(),
    };
    for &integrator in &cfg.integrators {
        for &h in &cfg.steps {
            for &omega in &cfg.omegas {
                out.points.push(run_one(cfg, integrator, h, omega));
            }
        }
    }
    if cfg.bisections > 0 {
        for &integrator in &cfg.integrators {
            for &h in &cfg.steps {
                if let (Some(mut lo), Some(mut hi)) = out.stability_edge(integrator, h) {
                    for _ in 0..cfg.bisections {
                        let mid = (lo * hi).sqrt();
                        if run_one(cfg, integrator, h, mid).status == Status::Completed {
                            lo = mid;
                        } else {
                            hi = mid;
                        }
                    }
                    out.edges.push((integrator, h, lo, hi));
                }
            }
        }
    }
    out
}

/// The panel of `ω²‖g(q(T))‖` (markers and line) and its maximum over `t ≤ T` (dashed)
/// against ω for `integrator`, one colour per step.
fn scaled_panel(cfg: &Config, out: &Outcome, integrator: Integrator) -> Panel {
    let diverged: Vec<String> = cfg
        .steps
        .iter()
        .filter_map(|&h| {
            let edge = out.edge(integrator, h).map(|e| e.1);
            edge.or(out.stability_edge(integrator, h).1)
                .map(|w| format!("h = {h} unstable from ω ≈ {w:.0}"))
        })
        .collect();
    let mut panel = Panel::new(
        if diverged.is_empty() {
            format!(
                "{}: ω²‖g(q(T))‖ vs ω, T = {}",
                integrator.label(),
                cfg.t_end
            )
        } else {
            format!(
                "{}: ω²‖g(q(T))‖ vs ω, T = {} ({})",
                integrator.label(),
                cfg.t_end,
                diverged.join("; ")
            )
        },
        "penalty frequency ω (1/time)",
        "ω²‖g(q)‖ (length²/time²)",
    )
    .scales(Scale::Log, Scale::Log)
    .legend(LegendPosition::UpperLeft);
    for (i, &h) in cfg.steps.iter().enumerate() {
        let ok: Vec<&Point> = out
            .series(integrator, h)
            .filter(|p| p.status == Status::Completed)
            .collect();
        panel = panel
            .with(Series::new(
                format!("h = {h}: ω²‖g(q(T))‖"),
                ok.iter().map(|p| (p.omega, p.scaled_final)).collect(),
                Style::LineMarkers,
                2 * i,
            ))
            .with(Series::new(
                format!("h = {h}: max over t ≤ T"),
                ok.iter().map(|p| (p.omega, p.scaled_max)).collect(),
                Style::Dashed,
                2 * i,
            ));
    }
    panel
}

/// Write `constraint-scaling.csv` and `constraint-scaling.svg` into `dir` and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let mut csv = Csv::new(&[
        "integrator",
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
            Field::Text(p.integrator.label()),
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

    let mut figure = Figure::new(
        format!(
            "Fig. 2a: constraint violation of the penalized double pendulum (β = {}, physical gravity, T = {})",
            cfg.beta, cfg.t_end
        ),
        2,
        (640, 440),
    );
    if cfg.integrators.contains(&Integrator::ZhangSkeel) {
        figure = figure.with(scaled_panel(cfg, out, Integrator::ZhangSkeel));
        let mut raw = Panel::new(
            "max over t ≤ T of ‖g(q)‖ vs ω, with slope −2",
            "penalty frequency ω (1/time)",
            "max ‖g(q)‖ (length²)",
        )
        .scales(Scale::Log, Scale::Log)
        .legend(LegendPosition::LowerLeft);
        // Colour by integrator, line style by step.
        for &integrator in &cfg.integrators {
            let color = match integrator {
                Integrator::ZhangSkeel => 3,
                Integrator::Newmark => 2,
                Integrator::ZhangSkeelSimplified => 4,
            };
            for (i, &h) in cfg.steps.iter().enumerate() {
                raw = raw.with(Series::new(
                    format!("{} h = {h}", integrator.label()),
                    out.series(integrator, h)
                        .filter(|p| p.status == Status::Completed)
                        .map(|p| (p.omega, p.g_max))
                        .collect(),
                    if i == 0 {
                        Style::Dashed
                    } else {
                        Style::LineMarkers
                    },
                    color,
                ));
            }
        }
        // Slope −2 guide through the first step's first point.
        if let Some(first) = out
            .at_step(cfg.steps[0])
            .find(|p| p.status == Status::Completed)
        {
            let c = first.g_max * first.omega * first.omega;
            let (w0, w1) = (cfg.omegas[0], *cfg.omegas.last().unwrap_or(&cfg.omegas[0]));
            raw = raw.with(Series::new(
                "C·ω⁻²",
                vec![(w0, c / (w0 * w0)), (w1, c / (w1 * w1))],
                Style::Dashed,
                7,
            ));
        }
        figure = figure.with(raw);
    }
    for &integrator in cfg
        .integrators
        .iter()
        .filter(|&&i| i != Integrator::ZhangSkeel)
    {
        figure = figure.with(scaled_panel(cfg, out, integrator));
    }
    let svg_path = dir.join("constraint-scaling.svg");
    figure.write_svg(&svg_path)?;

    let mut table = Table::new(
        format!("ω²‖g(q(T))‖, T = {}, β = {}", cfg.t_end, cfg.beta),
        &[
            "method",
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
            p.integrator.label().into(),
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
    for &integrator in &cfg.integrators {
        for &h in &cfg.steps {
            let name = format!("{} h = {h}", integrator.label());
            let ok: Vec<&Point> = out
                .series(integrator, h)
                .filter(|p| p.status == Status::Completed)
                .collect();
            if let (Some(lo), Some(hi)) = (
                ok.iter().map(|p| p.scaled_max).reduce(f64::min),
                ok.iter().map(|p| p.scaled_max).reduce(f64::max),
            ) {
                let wmax = ok.iter().map(|p| p.omega).fold(0.0, f64::max);
                notes.push(format!(
                    "{name}: over the {} completed runs (ω from {} to {:.0}), max_t ω²‖g‖ stays in [{}, {}] (ratio {:.1}) while ω² grows {:.0}x.",
                    ok.len(),
                    cfg.omegas[0],
                    wmax,
                    sci(lo),
                    sci(hi),
                    hi / lo,
                    (wmax / cfg.omegas[0]).powi(2)
                ));
            }
            let (last_ok, first_bad) = out.stability_edge(integrator, h);
            match first_bad {
                None => notes.push(format!(
                    "{name}: every run completed (up to ω = {:.0}).",
                    last_ok.unwrap_or(f64::NAN)
                )),
                Some(w) => {
                    let p = out
                        .series(integrator, h)
                        .find(|p| p.omega == w)
                        .expect("point exists");
                    let edge = out.edge(integrator, h).map_or(String::new(), |(a, b)| {
                        format!(
                            "; bisection: completes at ω = {a:.2}, not at ω = {b:.2} (hω ≈ {:.2})",
                            h * b
                        )
                    });
                    notes.push(format!(
                        "{name}: the smallest ω of the sweep whose run did not complete is {w:.0} ({}){edge}.",
                        p.status.describe(),
                    ));
                }
            }
        }
    }
    let names: Vec<&str> = cfg.integrators.iter().map(|i| i.label()).collect();
    Ok(Report {
        experiment: "constraint-scaling".into(),
        setup: format!(
            "Tao & Owhadi Fig. 2a: penalized double pendulum (physical gravity, V = +(y1 + y2)), {} with β = {}, h ∈ {:?}, T = {}, {} values of ω from {} to {:.0}.",
            names.join(" and "),
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
