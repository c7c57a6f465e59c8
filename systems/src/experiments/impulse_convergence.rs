//! `zs reproduce impulse-convergence`: the impulse paper, Figs. 1–3 — log-log error against the
//! macro step `h` of the impulse, mollified impulse and projected impulse methods on the stiff
//! spring double pendulum ([`crate::stiff_spring`]), in positions and in projected momenta
//! `P(q)ᵀp`, at two values of ε an order of magnitude apart.
//!
//! The impulse paper (Theorem 2.2): the mollified and projected impulse methods have error `O(h²)`
//! in positions and projected momenta with macro steps not restricted by ε (uniformly in ε); the
//! plain impulse method does not (Fig. 1). The text available to the project lost Example 1's
//! parameters and initial value (14); [`StiffSpringDoublePendulum::example1`] and [`initial_state`]
//! are the project's choice (see [`crate::stiff_spring`]), `T = 1`.
//!
//! Measurement ([`convergence_table_with`]): the reference is the same Hamiltonian at the same ε
//! integrated by Störmer–Verlet at step `δ = ε/100`, the methods' micro-step is the same `δ`;
//! the error of a run is the maximum over its macro-step times of the maximum norm (the paper's
//! measure). The reference's own error is reported (the same run at `δ/2`). The paper measures
//! against the effective constrained system instead, which is `O(ε)` from the oscillatory
//! solution: against ours, the two good methods' errors are `O(h²)` above an ε-dependent floor,
//! and the macro steps of each ε are chosen above it (`h/ε` from 50 to 2000).

use std::io;
use std::path::Path;

use zs_runtime::StepError;

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{log_log_slope, sci, Csv, Field, Report, Table};
use crate::stiff_spring::{
    convergence_table_with, initial_state, max_errors, reference_for, ConvergencePoint,
    ConvergenceSetup, ImpulseMethod, StiffSpringDoublePendulum,
};

/// One ε and its macro steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The small parameter.
    pub eps: f64,
    /// Macro steps (each dividing `T`).
    pub hs: Vec<f64>,
}

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The two (or more) ε and their macro steps.
    pub sweeps: Vec<Sweep>,
    /// End time, micro-step and reference step.
    pub setup: ConvergenceSetup,
}

fn inverse(ns: &[u32]) -> Vec<f64> {
    ns.iter().map(|&n| 1.0 / f64::from(n)).collect()
}

impl Config {
    /// ε = 10⁻³ with `h = 1/5 … 1/20` and ε = 10⁻⁴ with `h = 1/5 … 1/80` (`h/ε` from 50 to
    /// 2000, above each ε's floor), `T = 1`, micro-step and reference step `ε/100`.
    pub fn paper() -> Self {
        Self {
            sweeps: vec![
                Sweep {
                    eps: 1e-3,
                    hs: inverse(&[5, 8, 10, 16, 20]),
                },
                Sweep {
                    eps: 1e-4,
                    hs: inverse(&[5, 10, 20, 40, 80]),
                },
            ],
            setup: ConvergenceSetup::default(),
        }
    }

    /// A cheap version for tests: ε = 10⁻³ and 3·10⁻⁴, macro steps 1/5, 1/10, 1/20, micro-step
    /// and reference step `ε/50`.
    pub fn quick() -> Self {
        Self {
            sweeps: vec![
                Sweep {
                    eps: 1e-3,
                    hs: inverse(&[5, 10, 20]),
                },
                Sweep {
                    eps: 3e-4,
                    hs: inverse(&[5, 10, 20]),
                },
            ],
            setup: ConvergenceSetup {
                micro_step_per_eps: 2e-2,
                reference_step_per_eps: 2e-2,
                ..ConvergenceSetup::default()
            },
        }
    }
}

/// The errors of one method at one ε.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodSweep {
    /// Method.
    pub method: ImpulseMethod,
    /// ε.
    pub eps: f64,
    /// One point per macro step.
    pub points: Vec<ConvergencePoint>,
}

impl MethodSweep {
    /// Least-squares slope of log(position error) against log h.
    pub fn position_slope(&self) -> f64 {
        self.slope(|p| p.position_error)
    }

    /// Least-squares slope of log(projected-momentum error) against log h.
    pub fn momentum_slope(&self) -> f64 {
        self.slope(|p| p.momentum_error)
    }

    fn slope(&self, f: fn(&ConvergencePoint) -> f64) -> f64 {
        let pts: Vec<(f64, f64)> = self.points.iter().map(|p| (p.h, f(p))).collect();
        log_log_slope(&pts).unwrap_or(f64::NAN)
    }

    /// `max_h e(h)/h²` over the macro steps in `hs` (positions, projected momenta): the
    /// constant of an `O(h²)` bound, to compare across ε on common steps.
    pub fn constants(&self, hs: &[f64]) -> (f64, f64) {
        self.points
            .iter()
            .filter(|p| hs.iter().any(|&h| (p.h - h).abs() <= 1e-12 * h))
            .fold((0.0f64, 0.0f64), |(a, b), p| {
                (
                    a.max(p.position_error / (p.h * p.h)),
                    b.max(p.momentum_error / (p.h * p.h)),
                )
            })
    }
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// One entry per (ε, method), ε in [`Config::sweeps`] order, methods in
    /// [`ImpulseMethod::ALL`] order.
    pub sweeps: Vec<MethodSweep>,
    /// Per ε: the reference's own error estimate (positions, projected momenta): the reference
    /// at step δ against the same at δ/2.
    pub reference_checks: Vec<(f64, (f64, f64))>,
}

impl Outcome {
    /// The sweep of `method` at `eps`.
    pub fn sweep(&self, method: ImpulseMethod, eps: f64) -> Option<&MethodSweep> {
        self.sweeps
            .iter()
            .find(|s| s.method == method && s.eps == eps)
    }
}

/// Run every method at every ε.
///
/// # Errors
/// A step of one of the methods failed.
pub fn run(cfg: &Config) -> Result<Outcome, StepError> {
    let mut out = Outcome {
        sweeps: Vec::new(),
        reference_checks: Vec::new(),
    };
    for sw in &cfg.sweeps {
        let sys = StiffSpringDoublePendulum::example1(sw.eps);
        let x0 = initial_state(&sys);
        let reference = reference_for(&sys, sw.eps, &x0, &sw.hs, &cfg.setup);
        let fine = ConvergenceSetup {
            reference_step_per_eps: 0.5 * cfg.setup.reference_step_per_eps,
            ..cfg.setup
        };
        let reference_fine = reference_for(&sys, sw.eps, &x0, &sw.hs, &fine);
        out.reference_checks
            .push((sw.eps, max_errors(&sys, &reference, &reference_fine)));
        for method in ImpulseMethod::ALL {
            let points =
                convergence_table_with(&sys, sw.eps, &x0, &reference, method, &sw.hs, &cfg.setup)?;
            out.sweeps.push(MethodSweep {
                method,
                eps: sw.eps,
                points,
            });
        }
    }
    Ok(out)
}

fn title(method: ImpulseMethod) -> &'static str {
    match method {
        ImpulseMethod::Impulse => "impulse (the impulse paper, Fig. 1)",
        ImpulseMethod::Mollified => "mollified impulse (Fig. 2)",
        ImpulseMethod::Projected => "projected impulse (Fig. 3)",
    }
}

/// Write `impulse-convergence.csv` and `.svg` into `dir` and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let mut csv = Csv::new(&[
        "method",
        "eps",
        "h",
        "micro_steps",
        "position_error",
        "projected_momentum_error",
    ]);
    for s in &out.sweeps {
        for p in &s.points {
            csv.push(&[
                Field::Text(s.method.name()),
                Field::Num(s.eps),
                Field::Num(p.h),
                Field::Int(p.micro_steps as i64),
                Field::Num(p.position_error),
                Field::Num(p.momentum_error),
            ]);
        }
    }
    let csv_path = dir.join("impulse-convergence.csv");
    csv.write(&csv_path)?;

    // Shared axes so that the three methods compare by eye.
    let all = |f: fn(&ConvergencePoint) -> f64| {
        out.sweeps
            .iter()
            .flat_map(|s| s.points.iter().map(f))
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (e_lo, e_hi) = {
        let (a, b) = all(|p| p.position_error);
        let (c, d) = all(|p| p.momentum_error);
        (a.min(c), b.max(d))
    };
    let y_range = (
        10f64.powf(e_lo.log10().floor()),
        10f64.powf(e_hi.log10().ceil()),
    );
    let (h_lo, h_hi) = all(|p| p.h);
    let x_range = (10f64.powf(h_lo.log10().floor()), h_hi * 1.25);
    let mut figure = Figure::new(
        format!(
            "The impulse paper, Figs. 1–3: stiff spring double pendulum, max error over 0 ≤ t ≤ {} vs macro step h (micro-step ε/{:.0})",
            cfg.setup.t_end,
            1.0 / cfg.setup.micro_step_per_eps
        ),
        2,
        (560, 380),
    );
    for method in ImpulseMethod::ALL {
        for (what, f, label) in [
            (
                "positions",
                (|p: &ConvergencePoint| p.position_error) as fn(&ConvergencePoint) -> f64,
                "max ‖q − q_ref‖∞ (length)",
            ),
            (
                "projected momenta",
                |p: &ConvergencePoint| p.momentum_error,
                "max ‖Pᵀp − (Pᵀp)_ref‖∞ (momentum)",
            ),
        ] {
            let mut panel = Panel::new(
                format!("{}: {what}", title(method)),
                "macro step h (time)",
                label,
            )
            .scales(Scale::Log, Scale::Log)
            .legend(LegendPosition::LowerRight);
            panel.x_range = Some(x_range);
            panel.y_range = Some(y_range);
            for (i, sw) in cfg.sweeps.iter().enumerate() {
                let Some(s) = out.sweep(method, sw.eps) else {
                    continue;
                };
                let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.h, f(p))).collect();
                let slope = log_log_slope(&pts).unwrap_or(f64::NAN);
                panel = panel.with(Series::new(
                    format!("ε = {:.0e} (slope {slope:.2})", sw.eps),
                    pts,
                    Style::LineMarkers,
                    i,
                ));
            }
            // Slope-2 guide through the largest error of the first ε at its largest h.
            if let Some(s) = out.sweep(method, cfg.sweeps[0].eps) {
                if let Some(p) = s.points.iter().max_by(|a, b| a.h.total_cmp(&b.h)) {
                    let c = f(p) / (p.h * p.h);
                    panel = panel.with(Series::new(
                        "slope 2",
                        vec![(x_range.0, c * x_range.0 * x_range.0), (p.h, c * p.h * p.h)],
                        Style::Dashed,
                        7,
                    ));
                }
            }
            figure = figure.with(panel);
        }
    }
    let svg_path = dir.join("impulse-convergence.svg");
    figure.write_svg(&svg_path)?;

    // Macro steps common to all ε, for the uniformity constants.
    let h_common: Vec<f64> = cfg.sweeps[0]
        .hs
        .iter()
        .copied()
        .filter(|&h| {
            cfg.sweeps
                .iter()
                .all(|s| s.hs.iter().any(|&k| (k - h).abs() <= 1e-12 * h))
        })
        .collect();
    let common_text: Vec<String> = h_common.iter().map(|h| format!("{h}")).collect();
    let mut slopes = Table::new(
        format!(
            "Fitted orders (least squares over the macro steps) and C = max e/h² over the steps common to every ε, h ∈ {{{}}}",
            common_text.join(", ")
        ),
        &[
            "method",
            "ε",
            "h/ε",
            "slope q",
            "slope Pᵀp",
            "C q",
            "C Pᵀp",
        ],
    );
    for s in &out.sweeps {
        let (cq, cp) = s.constants(&h_common);
        let hmin = s.points.iter().map(|p| p.h).fold(f64::INFINITY, f64::min);
        let hmax = s.points.iter().map(|p| p.h).fold(0.0, f64::max);
        slopes.push(vec![
            s.method.name().into(),
            format!("{:.0e}", s.eps),
            format!("{:.0}–{:.0}", hmin / s.eps, hmax / s.eps),
            format!("{:.2}", s.position_slope()),
            format!("{:.2}", s.momentum_slope()),
            sci(cq),
            sci(cp),
        ]);
    }
    let mut errors = Table::new(
        "Errors (positions / projected momenta) per macro step",
        &["method", "ε", "h", "micro-steps", "error q", "error Pᵀp"],
    );
    for s in &out.sweeps {
        for p in &s.points {
            errors.push(vec![
                s.method.name().into(),
                format!("{:.0e}", s.eps),
                format!("{:.4}", p.h),
                p.micro_steps.to_string(),
                sci(p.position_error),
                sci(p.momentum_error),
            ]);
        }
    }
    let mut notes: Vec<String> = out
        .reference_checks
        .iter()
        .map(|(eps, (q, p))| {
            format!(
                "ε = {eps:.0e}: reference at δ vs δ/2 differs by {} (q), {} (Pᵀp); it is shared by the methods' micro-steps.",
                sci(*q),
                sci(*p)
            )
        })
        .collect();
    for method in ImpulseMethod::ALL {
        let cs: Vec<(f64, f64)> = cfg
            .sweeps
            .iter()
            .filter_map(|sw| out.sweep(method, sw.eps))
            .map(|s| s.constants(&h_common))
            .collect();
        if cs.len() >= 2 {
            let (first, last) = (cs[0], cs[cs.len() - 1]);
            notes.push(format!(
                "{}: C(ε) from ε = {:.0e} to {:.0e} changes by a factor {:.2} (q), {:.2} (Pᵀp).",
                method.name(),
                cfg.sweeps[0].eps,
                cfg.sweeps[cfg.sweeps.len() - 1].eps,
                last.0 / first.0,
                last.1 / first.1
            ));
        }
    }
    let eps_list: Vec<String> = cfg
        .sweeps
        .iter()
        .map(|s| format!("{:.0e}", s.eps))
        .collect();
    Ok(Report {
        experiment: "impulse-convergence".into(),
        setup: format!(
            "The impulse paper, Figs. 1–3: stiff spring double pendulum (k1 = 1, k2 = 4, unit masses and lengths, gravity 1), ε ∈ {{{}}}, T = {}, micro-step and reference step ε/{:.0}; error = max over macro-step times of the max norm, against Störmer–Verlet on the full system.",
            eps_list.join(", "),
            cfg.setup.t_end,
            1.0 / cfg.setup.micro_step_per_eps
        ),
        tables: vec![slopes, errors],
        notes,
        files: vec![csv_path, svg_path],
    })
}
