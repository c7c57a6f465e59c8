//! `zs reproduce multipliers`: Tao & Owhadi Fig. 2b — the Lagrange multipliers of the double
//! pendulum estimated from the **penalized** run by eq. 8, against SHAKE's.
//!
//! Eq. 8 (Thm 1.2): `λ(t) = −lim_{T→0} lim_{ω→∞} (1/T) ∫_t^{t+T} ω² g(q^ω(s)) ds`. The paper
//! approximates it with ω = 20 and a window `T = 0.2`, on a Z&S run at `h = 0.01` (Fig. 2's step,
//! "for smooth curves"), and compares with the multipliers SHAKE computes. Here:
//!
//! - the penalized estimate comes from [`PenalizedMultipliers`] (forward window, as in eq. 8)
//!   on a Z&S run (β = 0.4, h = 0.01);
//! - SHAKE runs on the constrained system at the same `h`; its reported multiplier
//!   ([`Shake::multipliers`]) is a first-order approximation of `λ(t_n)`;
//! - as a third, independent curve, the exact multiplier of the constrained motion is computed
//!   along the (θ, φ) reference trajectory from the second time derivative of `g = 0`:
//!   `(G M⁻¹ Gᵀ) λ = −G M⁻¹ ∇V + c`, `c_i = q̇ᵀ Hess g_i q̇` (with the constraint force `−Gᵀλ`).
//!
//! # Sign
//! Tables, figure and CSV use **the paper's sign** (its eq. 8; constraint force `+λᵀ∇g`), the
//! negative of this crate's (`−Gᵀλ`, see [`PenalizedMultipliers`]): a rod under tension has
//! `λ < 0`.
//!
//! The paper notes that the convergence is only "two-scale F-convergence", not strong: the
//! estimate oscillates about the true multiplier, with an error of order `1/(ωT)` from the fast
//! oscillation left in the window. The experiment measures that error at ω = 20 and at larger ω.

use std::io;
use std::path::Path;

use zs_runtime::{
    MechanicalSystem, PenalizedMultipliers, Potential, Shake, TimeSeries, ZhangSkeel,
};

use super::plot::{Figure, LegendPosition, Panel, Series, Style};
use super::{sci, whole_steps, Csv, Field, Report, Table};
use crate::double_pendulum::generalized::GeneralizedPendulum;
use crate::double_pendulum::{DoublePendulum, BETA, OMEGA};

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The pendulum (physical gravity).
    pub system: DoublePendulum,
    /// Penalty frequency of the figure.
    pub omega: f64,
    /// Further ω at which the estimate's error is measured (not plotted), each at the step with
    /// the same `hω` as the figure's run and at the figure's `h`.
    pub more_omegas: Vec<f64>,
    /// Window of eq. 8.
    pub window: f64,
    /// Step of Z&S and SHAKE.
    pub h: f64,
    /// Z&S β.
    pub beta: f64,
    /// Final time.
    pub t_end: f64,
    /// The figure shows `0 ≤ t ≤ t_plot`.
    pub t_plot: f64,
    /// Step of the RK4 reference (must divide `h`).
    pub h_reference: f64,
}

impl Config {
    /// The paper's Fig. 2b: ω = 20, window 0.2, Z&S β = 0.4 at h = 0.01, T = 50, physical
    /// gravity; the error of the estimate also at ω = 40, 80, 160.
    pub fn paper() -> Self {
        Self {
            system: DoublePendulum::paper(),
            omega: OMEGA,
            more_omegas: vec![40.0, 80.0, 160.0],
            window: 0.2,
            h: 0.01,
            beta: BETA,
            t_end: 50.0,
            t_plot: 10.0,
            h_reference: 1e-3,
        }
    }

    /// A cheap version for tests: T = 5, one extra ω.
    pub fn quick() -> Self {
        Self {
            more_omegas: vec![80.0],
            t_end: 5.0,
            t_plot: 5.0,
            ..Self::paper()
        }
    }
}

/// Multipliers sampled at the SHAKE step times `t_n`, in the paper's sign.
#[derive(Debug, Clone, PartialEq)]
pub struct Curves {
    /// Times `t_n`, those whose forward window `[t_n, t_n + window]` lies in `[0, T]`.
    pub t: Vec<f64>,
    /// SHAKE's `λ_n`.
    pub shake: Vec<[f64; 2]>,
    /// The exact multiplier along the reference.
    pub exact: Vec<[f64; 2]>,
    /// Eq. 8 from the penalized Z&S run at [`Config::omega`].
    pub penalized: Vec<[f64; 2]>,
    /// Window means (same window as eq. 8) of SHAKE's λ.
    pub shake_window_mean: Vec<[f64; 2]>,
    /// Window means of the exact λ.
    pub exact_window_mean: Vec<[f64; 2]>,
}

/// One row of the error table: `‖a − b‖_rms / ‖b‖_rms` and `max |a − b|` over both components
/// and all common times.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// What is compared with what.
    pub what: String,
    /// Relative RMS difference.
    pub rel_rms: f64,
    /// Largest absolute difference.
    pub max_abs: f64,
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The curves of the figure (ω = [`Config::omega`]).
    pub curves: Curves,
    /// Error table rows.
    pub comparisons: Vec<Comparison>,
    /// SHAKE's largest constraint residual.
    pub shake_max_g: f64,
}

/// The exact multiplier (this crate's sign, force `−Gᵀλ`) of the constrained double pendulum at
/// `(q, v)`: `(G M⁻¹ Gᵀ) λ = −G M⁻¹ ∇V + c`, `c_i = vᵀ Hess g_i v`.
pub fn exact_multiplier(sys: &DoublePendulum, q: &[f64; 4], v: &[f64; 4]) -> [f64; 2] {
    let m = sys.masses();
    let grad = sys.gradient(q);
    let g = sys.constraint_jacobian(q);
    // Hess g_1 = 2 I on (x1, y1); Hess g_2 = 2 [[I, −I], [−I, I]].
    let c = [
        2.0 * (v[0] * v[0] + v[1] * v[1]),
        2.0 * ((v[2] - v[0]).powi(2) + (v[3] - v[1]).powi(2)),
    ];
    let mut a = [[0.0; 2]; 2];
    let mut rhs = c;
    for i in 0..2 {
        for j in 0..2 {
            a[i][j] = (0..4).map(|k| g[i][k] * g[j][k] / m[k]).sum();
        }
        rhs[i] -= (0..4).map(|k| g[i][k] * grad[k] / m[k]).sum::<f64>();
    }
    let det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
    [
        (a[1][1] * rhs[0] - a[0][1] * rhs[1]) / det,
        (a[0][0] * rhs[1] - a[1][0] * rhs[0]) / det,
    ]
}

/// `x` to 6 significant digits (so that `0.01 · 20 / 40` prints as `0.005`).
fn round_sig(x: f64) -> f64 {
    format!("{x:.6e}").parse().unwrap_or(x)
}

fn neg(x: [f64; 2]) -> [f64; 2] {
    [-x[0], -x[1]]
}

fn compare(what: String, a: &[[f64; 2]], b: &[[f64; 2]]) -> Comparison {
    let (mut num, mut den, mut max) = (0.0, 0.0, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        for c in 0..2 {
            let d = x[c] - y[c];
            num += d * d;
            den += y[c] * y[c];
            max = max.max(d.abs());
        }
    }
    Comparison {
        what,
        rel_rms: (num / den).sqrt(),
        max_abs: max,
    }
}

/// The penalized Z&S run at `omega` with step `h`: eq. 8's estimator over the whole run.
fn penalized_run<'a>(
    cfg: &Config,
    sys: &'a DoublePendulum,
    omega: f64,
    h: f64,
) -> PenalizedMultipliers<'a, DoublePendulum, 4, 2> {
    let steps = whole_steps(cfg.t_end, h);
    let target = sys.penalized(omega);
    let mut est = PenalizedMultipliers::new(sys, omega, cfg.window, steps as usize + 1);
    let mut zs = ZhangSkeel::new(cfg.beta, h);
    let mut state = DoublePendulum::initial_state();
    est.record(state.t, &state.q);
    for _ in 0..steps {
        if zs.step(&target, &mut state).is_err() {
            break;
        }
        est.record(state.t, &state.q);
    }
    est
}

/// Run the experiment.
pub fn run(cfg: &Config) -> Outcome {
    let sys = &cfg.system;
    let steps = whole_steps(cfg.t_end, cfg.h);

    // SHAKE: λ_n at t_n after each step.
    let mut shake = Shake::<[f64; 4], [f64; 2]>::new(cfg.h);
    let mut state = DoublePendulum::initial_state();
    let mut shake_t = Vec::with_capacity(steps as usize);
    let mut shake_l = Vec::with_capacity(steps as usize);
    let mut shake_series = TimeSeries::<2>::with_capacity(steps as usize);
    let mut shake_max_g = 0.0f64;
    for _ in 0..steps {
        if shake.step(sys, &mut state).is_err() {
            break;
        }
        let (t, l) = (shake.multipliers_time(), neg(shake.multipliers()));
        shake_t.push(t);
        shake_l.push(l);
        shake_series.push(t, l);
        shake_max_g = shake_max_g.max(
            sys.constraints(&state.q)
                .iter()
                .fold(0.0, |m: f64, g| m.max(g.abs())),
        );
    }

    // Exact λ along the reference, at the same times.
    let every = whole_steps(cfg.h, cfg.h_reference) as usize;
    let reference = GeneralizedPendulum::from(sys).paper_reference_trajectory(
        cfg.t_end,
        cfg.h_reference,
        every,
    );
    let mut exact_series = TimeSeries::<2>::with_capacity(reference.len());
    let exact_all: Vec<[f64; 2]> = reference
        .iter()
        .map(|r| {
            let l = neg(exact_multiplier(sys, &r.q, &r.v));
            exact_series.push(r.t, l);
            l
        })
        .collect();

    let est = penalized_run(cfg, sys, cfg.omega, cfg.h);
    let mut curves = Curves {
        t: Vec::new(),
        shake: Vec::new(),
        exact: Vec::new(),
        penalized: Vec::new(),
        shake_window_mean: Vec::new(),
        exact_window_mean: Vec::new(),
    };
    for (k, (&t, &l)) in shake_t.iter().zip(&shake_l).enumerate() {
        // Forward windows inside both runs (SHAKE's last λ is at T − h).
        let (Some(p), Some(sm), Some(em)) = (
            est.lambda(t),
            shake_series.mean(t, t + cfg.window),
            exact_series.mean(t, t + cfg.window),
        ) else {
            continue;
        };
        curves.t.push(t);
        curves.shake.push(l);
        curves.exact.push(exact_all[k]);
        curves.penalized.push(neg(p));
        curves.shake_window_mean.push(sm);
        curves.exact_window_mean.push(em);
    }

    let mut comparisons = vec![
        compare(
            format!("SHAKE (h = {}) vs exact λ", cfg.h),
            &curves.shake,
            &curves.exact,
        ),
        compare(
            format!("eq. 8, ω = {} vs SHAKE (the paper's comparison)", cfg.omega),
            &curves.penalized,
            &curves.shake,
        ),
        compare(
            format!("eq. 8, ω = {} vs exact λ", cfg.omega),
            &curves.penalized,
            &curves.exact,
        ),
        compare(
            format!(
                "eq. 8, ω = {}, h = {} vs window mean of exact λ",
                cfg.omega, cfg.h
            ),
            &curves.penalized,
            &curves.exact_window_mean,
        ),
    ];
    // Larger ω, at the same hω (the fast oscillation resolved as well as at ω = 20) and at the
    // same h (hω grows: Z&S no longer resolves the fast oscillation).
    for &omega in &cfg.more_omegas {
        for h in [cfg.h * cfg.omega / omega, cfg.h] {
            let est = penalized_run(cfg, sys, omega, h);
            let est_l: Vec<[f64; 2]> = curves
                .t
                .iter()
                .map(|&t| est.lambda(t).map_or([f64::NAN; 2], neg))
                .collect();
            comparisons.push(compare(
                format!(
                    "eq. 8, ω = {omega}, h = {} (hω = {:.2}) vs window mean of exact λ",
                    round_sig(h),
                    h * omega
                ),
                &est_l,
                &curves.exact_window_mean,
            ));
        }
    }
    Outcome {
        curves,
        comparisons,
        shake_max_g,
    }
}

/// Write `multipliers.csv` and `multipliers.svg` into `dir` and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let c = &out.curves;
    let mut csv = Csv::new(&[
        "t",
        "lambda1_shake",
        "lambda2_shake",
        "lambda1_penalized",
        "lambda2_penalized",
        "lambda1_exact",
        "lambda2_exact",
        "lambda1_exact_window_mean",
        "lambda2_exact_window_mean",
    ]);
    for i in 0..c.t.len() {
        csv.push(&[
            Field::Num(c.t[i]),
            Field::Num(c.shake[i][0]),
            Field::Num(c.shake[i][1]),
            Field::Num(c.penalized[i][0]),
            Field::Num(c.penalized[i][1]),
            Field::Num(c.exact[i][0]),
            Field::Num(c.exact[i][1]),
            Field::Num(c.exact_window_mean[i][0]),
            Field::Num(c.exact_window_mean[i][1]),
        ]);
    }
    let csv_path = dir.join("multipliers.csv");
    csv.write(&csv_path)?;

    let n = c.t.iter().take_while(|&&t| t <= cfg.t_plot + 1e-9).count();
    let panel = |comp: usize, title: &str| {
        let pts = |v: &[[f64; 2]]| -> Vec<(f64, f64)> {
            c.t[..n]
                .iter()
                .zip(&v[..n])
                .map(|(&t, x)| (t, x[comp]))
                .collect()
        };
        let mut p = Panel::new(title, "time t", "λ (force/length, paper's sign)")
            .legend(LegendPosition::LowerLeft)
            .with(Series::new(
                format!(
                    "eq. 8 from the penalized Z&S run (ω = {}, window {})",
                    cfg.omega, cfg.window
                ),
                pts(&c.penalized),
                Style::Line,
                3,
            ))
            .with(Series::new(
                format!("SHAKE (h = {})", cfg.h),
                pts(&c.shake),
                Style::Line,
                0,
            ))
            .with(Series::new(
                "exact λ along the (θ, φ) reference",
                pts(&c.exact),
                Style::Dashed,
                7,
            ));
        p.x_range = Some((0.0, cfg.t_plot));
        p
    };
    let figure = Figure::new(
        format!(
            "Fig. 2b: Lagrange multipliers of the double pendulum (physical gravity), penalized estimate (eq. 8) vs SHAKE, h = {}",
            cfg.h
        ),
        1,
        (1100, 380),
    )
    .with(panel(0, "λ1 (rod 1, pivot – bob 1)"))
    .with(panel(1, "λ2 (rod 2, bob 1 – bob 2)"));
    let svg_path = dir.join("multipliers.svg");
    figure.write_svg(&svg_path)?;

    let mut table = Table::new(
        format!(
            "Multipliers over 0 ≤ t ≤ {:.1} (both components; paper's sign)",
            c.t.last().copied().unwrap_or(0.0)
        ),
        &["comparison", "rel. RMS diff", "max |diff|"],
    );
    for r in &out.comparisons {
        table.push(vec![r.what.clone(), sci(r.rel_rms), sci(r.max_abs)]);
    }
    let rms = |v: &[[f64; 2]]| {
        (v.iter().map(|x| x[0] * x[0] + x[1] * x[1]).sum::<f64>() / (2 * v.len()).max(1) as f64)
            .sqrt()
    };
    Ok(Report {
        experiment: "multipliers".into(),
        setup: format!(
            "Tao & Owhadi Fig. 2b: λ from eq. 8 (window {}) on a penalized Z&S run (ω = {}, β = {}, h = {}) vs SHAKE (h = {}, |g| ≤ 1e-12) and the exact λ along the RK4 (θ, φ) reference; T = {}, physical gravity. Paper's sign (tension < 0).",
            cfg.window, cfg.omega, cfg.beta, cfg.h, cfg.h, cfg.t_end
        ),
        tables: vec![table],
        notes: vec![
            format!("RMS of the exact λ: {}; SHAKE's max |g| = {}.", sci(rms(&c.exact)), sci(out.shake_max_g)),
        ],
        files: vec![csv_path, svg_path],
    })
}
