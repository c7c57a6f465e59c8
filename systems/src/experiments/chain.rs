//! `zs reproduce chain`: Tao & Owhadi §4.2, Fig. 3 — the chain of 10 pendula, penalized Z&S
//! (eq. 3, `h = 0.05`, ω = 20, β = 0.4) against SHAKE at `h = 0.05` and `h = 0.025`, and the
//! run-time table (paper: SHAKE 16.5 s and 8.1 s, Z&S 1.1 s).
//!
//! The chain is the assembled system of [`crate::chain`] (site term gravity, bond constraints, the
//! pivot a pinned body); its shifted solve is banded (half-bandwidth 3 after ordering), so a Z&S
//! step is O(n). SHAKE solves its `n × n` multiplier system by Newton (quadratic convergence; the
//! Gauss–Seidel sweep of Fernández-Pendás converges too slowly on a chain of 10 links to reach the
//! tolerance — the paper uses `fsolve`).
//!
//! The paper does not print the final time: T = 100 ([`crate::chain::T_END`]). It prints
//! `V = −Σ y_i`, gravity pointing up, which starts the chain near its unstable equilibrium: the
//! reproduction uses the physical sign and runs the printed one to `t = 20` beside it
//! ([`Config::printed_t_end`]), to show what the printed sign does.

use std::io;
use std::path::Path;
use std::time::Duration;

use zs_runtime::assembly::Assembled;
use zs_runtime::observers::total_energy;
use zs_runtime::{
    ConstrainedModel, DynState, Model, Shake, ShakeSolver, StepError, Stepper, ZhangSkeel,
};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{min_wall_times, sci, whole_steps, Csv, Field, Report, Table};
use crate::chain::{self, PendulumChain};
use crate::experiments::constraint_scaling::short_error;

/// The paper's run times (s): SHAKE `h = 0.025`, SHAKE `h = 0.05`, Z&S `h = 0.05`.
pub const PAPER_SECONDS: [(Method, f64, f64); 3] = [
    (Method::Shake, 0.025, 16.5),
    (Method::Shake, 0.05, 8.1),
    (Method::ZhangSkeel, 0.05, 1.1),
];

/// The two methods of Fig. 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Penalized Z&S (eq. 3).
    ZhangSkeel,
    /// SHAKE (Fernández-Pendás) on the constrained system.
    Shake,
}

impl Method {
    /// Name for tables and legends.
    pub fn label(self) -> &'static str {
        match self {
            Method::ZhangSkeel => "Z&S",
            Method::Shake => "SHAKE",
        }
    }
}

/// Parameters of the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Number of pendula.
    pub n: usize,
    /// Penalty frequency ω of Z&S.
    pub omega: f64,
    /// Z&S β.
    pub beta: f64,
    /// Z&S step.
    pub h: f64,
    /// SHAKE's steps; the smallest is the reference the others are compared with.
    pub shake_h: Vec<f64>,
    /// Final time of the physical-sign runs.
    pub t_end: f64,
    /// Final time of the printed-sign runs.
    pub printed_t_end: f64,
    /// Time between recorded samples (a multiple of every step).
    pub sample_dt: f64,
    /// Interleaved timing repetitions of the bare runs (0: no timing).
    pub timing_repetitions: usize,
}

impl Config {
    /// The paper's set-up, T = 100, the printed sign to `t = 20`.
    pub fn paper() -> Self {
        Self {
            n: chain::N,
            omega: chain::OMEGA,
            beta: chain::BETA,
            h: chain::H,
            shake_h: chain::SHAKE_H.to_vec(),
            t_end: chain::T_END,
            printed_t_end: 20.0,
            sample_dt: 0.1,
            timing_repetitions: 5,
        }
    }

    /// A cheap version for tests: T = 10, the printed sign to `t = 10`, no timing.
    pub fn quick() -> Self {
        Self {
            t_end: 10.0,
            printed_t_end: 10.0,
            timing_repetitions: 0,
            ..Self::paper()
        }
    }

    /// The reference step (SHAKE's smallest).
    pub fn reference_h(&self) -> f64 {
        self.shake_h.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// One recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Method.
    pub method: Method,
    /// Step.
    pub h: f64,
    /// `−1` physical, `+1` printed (coefficient of `V = −gravity Σ y_i`).
    pub gravity: f64,
    /// Sample times.
    pub times: Vec<f64>,
    /// Positions at the sample times.
    pub q: Vec<Vec<f64>>,
    /// `max_i |g_i(q)|` of the rods at the sample times.
    pub residual: Vec<f64>,
    /// Energy at the sample times (penalized `E_ω` for Z&S, `E` for SHAKE).
    pub energy: Vec<f64>,
    /// Steps completed.
    pub steps: u64,
    /// The failed step's error, if one failed.
    pub failure: Option<StepError>,
    /// SHAKE's Newton iterations per completed step (`None` for Z&S).
    pub newton_per_step: Option<f64>,
}

impl Run {
    /// Legend label, e.g. `SHAKE h = 0.025`.
    pub fn label(&self) -> String {
        format!("{} h = {}", self.method.label(), self.h)
    }

    /// `max_t max_i |g_i(q(t))|` over the samples.
    pub fn residual_max(&self) -> f64 {
        self.residual.iter().copied().fold(0.0, f64::max)
    }

    /// `max_t |E(t) − E(0)|` over the samples.
    pub fn energy_drift(&self) -> f64 {
        let e0 = self.energy[0];
        self.energy
            .iter()
            .map(|e| (e - e0).abs())
            .fold(0.0, f64::max)
    }

    /// `(x, y)` of the chain's free end at each sample.
    pub fn free_end(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        self.times.iter().zip(&self.q).map(|(&t, q)| {
            let k = q.len() - 2;
            (t, q[k], q[k + 1])
        })
    }

    /// `max_i |q_i(t) − r_i(t)|` at each common sample, against `reference` (same times).
    pub fn deviation(&self, reference: &Run) -> Vec<(f64, f64)> {
        self.times
            .iter()
            .zip(self.q.iter().zip(&reference.q))
            .map(|(&t, (a, b))| {
                let d = a.iter().zip(b).map(|(x, y)| (x - y).abs());
                (t, d.fold(0.0, f64::max))
            })
            .collect()
    }

    /// `max_t` of [`Run::deviation`] for `t ≤ t_max`.
    pub fn deviation_max(&self, reference: &Run, t_max: f64) -> f64 {
        self.deviation(reference)
            .into_iter()
            .filter(|&(t, _)| t <= t_max + 1e-9)
            .map(|p| p.1)
            .fold(0.0, f64::max)
    }

    /// How the run ended, in a few words.
    pub fn status(&self) -> String {
        match &self.failure {
            None => "ok".into(),
            Some(e) => format!("failed at step {}: {}", e.step(), short_error(e)),
        }
    }
}

/// Measured wall time of one complete bare run to T (no observation).
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Method.
    pub method: Method,
    /// Step.
    pub h: f64,
    /// Seconds per run (minimum over interleaved repetitions).
    pub seconds: f64,
}

/// Everything the experiment measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Physical sign: Z&S, then SHAKE at each step.
    pub physical: Vec<Run>,
    /// Printed sign, same runs to [`Config::printed_t_end`].
    pub printed: Vec<Run>,
    /// Bare-run times of the physical-sign runs (empty without timing).
    pub timings: Vec<Timing>,
}

impl Outcome {
    /// The run of `method` at step `h` among `runs`.
    pub fn find(runs: &[Run], method: Method, h: f64) -> Option<&Run> {
        runs.iter().find(|r| r.method == method && r.h == h)
    }
}

fn system(cfg: &Config, gravity: f64) -> Assembled<PendulumChain, 2> {
    // Ten bodies: evaluating on one thread beats the pool's hand-offs.
    PendulumChain {
        gravity,
        ..PendulumChain::paper()
    }
    .assemble(cfg.n)
    .with_parallel(false)
}

fn shake(h: f64) -> Shake<Vec<f64>, Vec<f64>> {
    Shake::new(h).with_solver(ShakeSolver::Newton)
}

fn record<P: Model<Vec<f64>> + ?Sized, S: Stepper<P, Vec<f64>>>(
    cfg: &Config,
    stepper: &mut S,
    target: &P,
    sys: &Assembled<PendulumChain, 2>,
    (method, h, t_end): (Method, f64, f64),
) -> Run {
    let steps = whole_steps(t_end, h);
    let every = whole_steps(cfg.sample_dt, h);
    let tr = super::integrate(
        stepper,
        target,
        PendulumChain::initial_state(cfg.n),
        steps,
        every,
    );
    let mut g = vec![0.0; sys.constraint_count()];
    let at = |s: &DynState| {
        sys.constraints_into(&s.q, &mut g);
        let worst = g.iter().map(|x| x.abs()).fold(0.0, f64::max);
        (worst, total_energy(target, s))
    };
    let (residual, energy) = tr.samples.iter().map(at).unzip();
    Run {
        method,
        h,
        gravity: sys.terms().gravity,
        times: (0..tr.samples.len())
            .map(|k| k as f64 * cfg.sample_dt)
            .collect(),
        q: tr.samples.into_iter().map(|s| s.q).collect(),
        residual,
        energy,
        steps: tr.steps,
        failure: tr.failure,
        newton_per_step: None,
    }
}

fn runs(cfg: &Config, gravity: f64, t_end: f64) -> Vec<Run> {
    let sys = system(cfg, gravity);
    let penalized = sys.penalized(cfg.omega);
    let mut zs = ZhangSkeel::new(cfg.beta, cfg.h);
    let what = (Method::ZhangSkeel, cfg.h, t_end);
    let mut out = vec![record(cfg, &mut zs, &penalized, &sys, what)];
    for &h in &cfg.shake_h {
        let mut s = shake(h);
        let mut r = record(cfg, &mut s, &sys, &sys, (Method::Shake, h, t_end));
        r.newton_per_step = Some(s.stats().iterations as f64 / r.steps.max(1) as f64);
        out.push(r);
    }
    out
}

fn bare<P: ?Sized, S: Stepper<P, Vec<f64>>>(mut s: S, target: &P, cfg: &Config, steps: u64) {
    let mut state = PendulumChain::initial_state(cfg.n);
    for _ in 0..steps {
        if s.step(target, &mut state).is_err() {
            break;
        }
    }
    std::hint::black_box(state);
}

/// Time one bare run of each physical-sign method to T, interleaved.
fn timings(cfg: &Config) -> Vec<Timing> {
    if cfg.timing_repetitions == 0 {
        return Vec::new();
    }
    let sys = system(cfg, -1.0);
    let penalized = sys.penalized(cfg.omega);
    let (beta, h) = (cfg.beta, cfg.h);
    let mut zs = || {
        bare(
            ZhangSkeel::new(beta, h),
            &penalized,
            cfg,
            whole_steps(cfg.t_end, h),
        )
    };
    let mut shakes: Vec<Box<dyn FnMut() + '_>> = cfg
        .shake_h
        .iter()
        .map(|&hs| {
            let sys = &sys;
            Box::new(move || bare(shake(hs), sys, cfg, whole_steps(cfg.t_end, hs)))
                as Box<dyn FnMut()>
        })
        .collect();
    let mut fs: Vec<&mut dyn FnMut()> = vec![&mut zs];
    fs.extend(shakes.iter_mut().map(|f| &mut **f as &mut dyn FnMut()));
    let t = min_wall_times(&mut fs, cfg.timing_repetitions, Duration::from_millis(20));
    let mut out = vec![Timing {
        method: Method::ZhangSkeel,
        h,
        seconds: t[0].as_secs_f64(),
    }];
    for (&hs, d) in cfg.shake_h.iter().zip(&t[1..]) {
        out.push(Timing {
            method: Method::Shake,
            h: hs,
            seconds: d.as_secs_f64(),
        });
    }
    out
}

/// Run the experiment.
pub fn run(cfg: &Config) -> Outcome {
    Outcome {
        physical: runs(cfg, -1.0, cfg.t_end),
        printed: runs(cfg, 1.0, cfg.printed_t_end),
        timings: timings(cfg),
    }
}

fn trajectory_panel(title: String, runs: &[Run], y: bool) -> Panel {
    let axis = if y { "y_n" } else { "x_n" };
    let mut p = Panel::new(title, "time t", format!("{axis} (length)")).legend(if y {
        LegendPosition::LowerLeft
    } else {
        LegendPosition::UpperRight
    });
    for (i, r) in runs.iter().enumerate() {
        let pts = r
            .free_end()
            .map(|(t, x, yy)| (t, if y { yy } else { x }))
            .filter(|p| p.1.is_finite() && p.1.abs() < 1e3)
            .collect();
        let style = if i == 0 { Style::Line } else { Style::Dashed };
        p = p.with(Series::new(r.label(), pts, style, i));
    }
    p
}

/// Write `chain.csv` (every sample of every run) and `chain.svg`, and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let mut header = vec!["gravity", "method", "h", "t", "residual", "energy"];
    let names = PendulumChain::coordinate_names(cfg.n);
    header.extend(names.iter().map(String::as_str));
    let mut csv = Csv::new(&header);
    for r in out.physical.iter().chain(&out.printed) {
        let gravity = if r.gravity < 0.0 {
            "physical"
        } else {
            "printed"
        };
        for k in 0..r.times.len() {
            let mut row = vec![
                Field::Text(gravity),
                Field::Text(r.method.label()),
                Field::Num(r.h),
                Field::Num(r.times[k]),
                Field::Num(r.residual[k]),
                Field::Num(r.energy[k]),
            ];
            row.extend(r.q[k].iter().map(|&x| Field::Num(x)));
            csv.push(&row);
        }
    }
    let csv_path = dir.join("chain.csv");
    csv.write(&csv_path)?;

    let h_ref = cfg.reference_h();
    let reference = Outcome::find(&out.physical, Method::Shake, h_ref).expect("reference run");
    let mut residuals = Panel::new(
        "rod residual max_i |g_i(q)|",
        "time t",
        "max_i |g_i| (length²)",
    )
    .scales(Scale::Linear, Scale::Log)
    .legend(LegendPosition::LowerRight);
    let mut deviations = Panel::new(
        format!("max_i |q_i − q_i^ref|, reference SHAKE h = {h_ref}"),
        "time t",
        "deviation (length)",
    )
    .scales(Scale::Linear, Scale::Log)
    .legend(LegendPosition::LowerRight);
    for (i, r) in out.physical.iter().enumerate() {
        let pts = r.times.iter().copied().zip(r.residual.iter().copied());
        residuals = residuals.with(Series::new(r.label(), pts.collect(), Style::Line, i));
        if r.h != h_ref || r.method != Method::Shake {
            let d = r.deviation(reference);
            deviations = deviations.with(Series::new(r.label(), d, Style::Line, i));
        }
    }
    let figure = Figure::new(
        format!(
            "Fig. 3: chain of {} pendula, Z&S (β = {}, ω = {}) vs SHAKE; free end (x_n, y_n)",
            cfg.n, cfg.beta, cfg.omega
        ),
        2,
        (640, 400),
    )
    .with(trajectory_panel(
        "physical gravity (V = +Σ y_i): x_n(t)".into(),
        &out.physical,
        false,
    ))
    .with(trajectory_panel(
        "physical gravity: y_n(t)".into(),
        &out.physical,
        true,
    ))
    .with(residuals)
    .with(deviations)
    .with(trajectory_panel(
        "printed sign (V = −Σ y_i, gravity up): x_n(t)".into(),
        &out.printed,
        false,
    ))
    .with(trajectory_panel(
        "printed sign: y_n(t)".into(),
        &out.printed,
        true,
    ));
    let svg_path = dir.join("chain.svg");
    figure.write_svg(&svg_path)?;

    let mut tables = vec![run_table(
        format!("physical gravity, T = {}", cfg.t_end),
        &out.physical,
        reference,
        cfg,
    )];
    let printed_ref =
        Outcome::find(&out.printed, Method::Shake, h_ref).expect("printed reference run");
    tables.push(run_table(
        format!("printed sign (gravity up), T = {}", cfg.printed_t_end),
        &out.printed,
        printed_ref,
        cfg,
    ));
    if !out.timings.is_empty() {
        tables.push(time_table(cfg, out));
    }
    Ok(Report {
        experiment: "chain".into(),
        setup: format!(
            "Tao & Owhadi §4.2, Fig. 3: chain of {} pendula (L = √5, unit masses, pivot pinned at the origin), x_i(0) = i, y_i(0) = −2i at rest; Z&S on the penalized system (ω = {}, β = {}, h = {}) vs SHAKE (Newton) at h ∈ {:?}; T = {} (not printed in the paper).",
            cfg.n, cfg.omega, cfg.beta, cfg.h, cfg.shake_h, cfg.t_end
        ),
        tables,
        notes: notes(cfg, out, reference, printed_ref),
        files: vec![csv_path, svg_path],
    })
}

fn run_table(title: String, runs: &[Run], reference: &Run, cfg: &Config) -> Table {
    let t_mid = 20f64.min(cfg.printed_t_end).min(cfg.t_end);
    let mut t = Table::new(
        title,
        &[
            "method",
            "steps",
            "max |g_i|",
            "max |ΔE|",
            &format!("max dev. t ≤ {t_mid}"),
            "dev. at T",
            "max dev. to T",
            "Newton its/step",
            "status",
        ],
    );
    for r in runs {
        t.push(vec![
            r.label(),
            r.steps.to_string(),
            sci(r.residual_max()),
            sci(r.energy_drift()),
            sci(r.deviation_max(reference, t_mid)),
            sci(r.deviation(reference).last().map_or(f64::NAN, |p| p.1)),
            sci(r.deviation_max(reference, f64::INFINITY)),
            r.newton_per_step.map_or("—".into(), |k| format!("{k:.2}")),
            r.status(),
        ]);
    }
    t
}

fn time_table(cfg: &Config, out: &Outcome) -> Table {
    let zs = out.timings[0].seconds;
    let paper_zs = PAPER_SECONDS[2].2;
    let mut t = Table::new(
        format!(
            "run time to T = {} (bare runs, minimum of {} interleaved repetitions)",
            cfg.t_end, cfg.timing_repetitions
        ),
        &[
            "method",
            "measured (ms)",
            "÷ Z&S",
            "paper (s)",
            "paper ÷ Z&S",
        ],
    );
    for m in &out.timings {
        let paper = PAPER_SECONDS
            .iter()
            .find(|p| p.0 == m.method && p.1 == m.h)
            .map(|p| p.2);
        t.push(vec![
            format!("{} h = {}", m.method.label(), m.h),
            format!("{:.2}", m.seconds * 1e3),
            format!("{:.1}", m.seconds / zs),
            paper.map_or("—".into(), |p| format!("{p}")),
            paper.map_or("—".into(), |p| format!("{:.1}", p / paper_zs)),
        ]);
    }
    t
}

fn notes(cfg: &Config, out: &Outcome, reference: &Run, printed_ref: &Run) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(zs) = Outcome::find(&out.physical, Method::ZhangSkeel, cfg.h) {
        notes.push(format!(
            "Physical sign: Z&S keeps every rod within |g_i| ≤ {} (docs/systems/chain.md measured 0.0114); its largest coordinate differs from SHAKE h = {} by {} at t = {} and by at most {} over the run (docs/systems/chain.md: \"within 0.037 up to t = 100\", norm not stated). The deviation grows linearly in t: a phase error, as between the two SHAKE runs.",
            sci(zs.residual_max()),
            reference.h,
            sci(zs.deviation(reference).last().map_or(f64::NAN, |p| p.1)),
            cfg.t_end,
            sci(zs.deviation_max(reference, f64::INFINITY)),
        ));
    }
    if let Some(zs) = Outcome::find(&out.printed, Method::ZhangSkeel, cfg.h) {
        let fate = match &zs.failure {
            Some(e) => format!("fails at step {} ({})", e.step(), short_error(e)),
            None => format!("completes with |g_i| up to {}", sci(zs.residual_max())),
        };
        notes.push(format!(
            "Printed sign (gravity up, the chain starts near its unstable equilibrium): Z&S {fate}; docs/systems/chain.md measured a blow-up at step 176."
        ));
    }
    for r in out
        .printed
        .iter()
        .filter(|r| r.method == Method::Shake && r.h != printed_ref.h)
    {
        notes.push(format!(
            "Printed sign: {} and SHAKE h = {} differ by {} at t = {} (chaos; docs/systems/chain.md: 5.6 at t = 20).",
            r.label(),
            printed_ref.h,
            sci(r.deviation(printed_ref).last().map_or(f64::NAN, |p| p.1)),
            cfg.printed_t_end
        ));
    }
    if let (Some(z), Some(s)) = (out.timings.first(), out.timings.last()) {
        notes.push(format!(
            "SHAKE h = {} takes {:.1}x Z&S's time to T (paper: {:.1}x); Z&S solves once per step (banded LDLᵀ, O(n)), SHAKE iterates Newton on its n × n multiplier system (pivoted dense LU, {:.1} iterations per step to the 1e-12 tolerance).",
            s.h,
            s.seconds / z.seconds,
            PAPER_SECONDS[0].2 / PAPER_SECONDS[2].2,
            Outcome::find(&out.physical, Method::Shake, s.h)
                .and_then(|r| r.newton_per_step)
                .unwrap_or(f64::NAN)
        ));
    }
    notes
}
