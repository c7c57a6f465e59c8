//! `zs reproduce double-pendulum`: Tao & Owhadi §4.1, Fig. 1 and the run-time table.
//!
//! The planar double pendulum (`L1 = 1`, `L2 = √2`, unit masses and gravity, `q(0) = (0, -1, 1,
//! -2)` at rest) integrated to `T` by each method of Fig. 1, against a small-step reference in
//! the generalized coordinates (θ, φ) ([`crate::double_pendulum::generalized`], classical RK4 at
//! `h_ref`; the paper uses small-step variational Euler):
//!
//! | row | method | system | step |
//! |---|---|---|---|
//! | 2 | SHAKE (Gauss–Seidel, `|g| ≤ 1e-12`) | constrained | 0.1 |
//! | 3 | Verlet (the paper's "variational Euler") | penalized, ω = 20 | `0.1/ω` (stability) |
//! | 4 | Newmark, β = 0.4, Newton to `1e-12` (eq. 12) | penalized, ω = 20 | 0.1 |
//! | 5 | one-step (linearly-implicit) Newmark, β = 0.4 | penalized, ω = 20 | 0.1 |
//! | 6 | Z&S, β = 0.4 (eq. 3) | penalized, ω = 20 | 0.1 |
//! | — | push-forward Newmark, β = 0.4 (eq. 14; not in the paper's figure) | penalized, ω = 20 | 0.1 |
//!
//! Errors are measured in the generalized coordinates: every Cartesian state is converted to
//! angles by `θ = atan2(x1, -y1)`, `φ = atan2(x2 - x1, -(y2 - y1))`
//! ([`GeneralizedPendulum::from_cartesian`]) and compared with the reference at the same time
//! (differences wrapped to (−π, π]). The position error of the second bob, `|(x2, y2) −
//! (x2, y2)_ref|` (what the paper's figure shows), and the constraint residual `‖g(q)‖` are
//! recorded too.
//!
//! # Gravity
//! The paper prints `V = −g y1 − g y2`, which with its coordinates (`y1 = −L1 cos θ`) points
//! gravity **up** (see [`crate::double_pendulum`]). The figure is reproduced with the physical
//! sign, `V = +(y1 + y2)` ([`DoublePendulum::paper`]), and repeated with the printed one
//! ([`DoublePendulum::paper_printed_sign`]), where Z&S diverges: the report says at which step.
//!
//! # Run times
//! Each method's complete run (set-up and all steps to `T`, no error bookkeeping) is timed in
//! this process as the minimum over several batches of repeated runs
//! ([`super::min_wall_times`], batches of all methods interleaved), and reported as a ratio to Z&S beside the paper's Matlab times
//! (benchmark 91.3, SHAKE 3.8, Verlet 1.0, Newmark 5.3, one-step Newmark 0.2, Z&S 0.4 s).

use std::f64::consts::PI;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use zs_runtime::observers::constraint_norm;
use zs_runtime::{
    LinearlyImplicitNewmark, MechanicalSystem, Newmark, PushForwardNewmark, Shake, State,
    StepError, Stepper, VelocityVerlet, ZhangSkeel,
};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{integrate, min_wall_times, sci, whole_steps, Csv, Field, Report, Table};
use crate::double_pendulum::generalized::{GeneralizedPendulum, ReferenceSample};
use crate::double_pendulum::{DoublePendulum, BETA, H, OMEGA};

/// `‖g‖` above which a run is said to have left the constraint manifold (rod lengths off by
/// tens of percent): its angles no longer describe a double pendulum.
pub const LOST: f64 = 0.5;

/// The methods of Fig. 1 (and push-forward Newmark, which the figure does not have).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// SHAKE on the constrained (unpenalized) system, Gauss–Seidel iteration to `|g| ≤ 1e-12`
    /// (Fig. 1 row 2).
    Shake,
    /// Störmer–Verlet on the penalized system at `h = 0.1/ω` (Fig. 1 row 3).
    Verlet,
    /// Newmark (eq. 12, γ = ½) with Newton to convergence, penalized (Fig. 1 row 4).
    Newmark,
    /// Linearly-implicit ("one-step") Newmark: one Newton step per time step (Fig. 1 row 5).
    OneStepNewmark,
    /// Zhang & Skeel, eq. 3, on the penalized system (Fig. 1 row 6).
    ZhangSkeel,
    /// Push-forward Newmark (eq. 14), penalized: not in Fig. 1; Z&S is its linearization.
    PushForwardNewmark,
}

impl Method {
    /// Every method, in the paper's row order (push-forward Newmark last).
    pub const ALL: [Method; 6] = [
        Method::Shake,
        Method::Verlet,
        Method::Newmark,
        Method::OneStepNewmark,
        Method::ZhangSkeel,
        Method::PushForwardNewmark,
    ];

    /// Name used in tables, legends and CSV files.
    pub fn label(self) -> &'static str {
        match self {
            Method::Shake => "SHAKE",
            Method::Verlet => "Verlet (penalized)",
            Method::Newmark => "Newmark",
            Method::OneStepNewmark => "one-step Newmark",
            Method::ZhangSkeel => "Z&S",
            Method::PushForwardNewmark => "push-forward Newmark",
        }
    }

    /// The paper's run time in seconds (§4.1, Matlab 7.7 on a 2.4 GHz Core 2 Duo), if it
    /// gives one.
    pub fn paper_seconds(self) -> Option<f64> {
        match self {
            Method::Shake => Some(3.8),
            Method::Verlet => Some(1.0),
            Method::Newmark => Some(5.3),
            Method::OneStepNewmark => Some(0.2),
            Method::ZhangSkeel => Some(0.4),
            Method::PushForwardNewmark => None,
        }
    }

    /// Palette colour (one per method across every figure).
    pub fn color(self) -> usize {
        match self {
            Method::Shake => 0,
            Method::Verlet => 1,
            Method::Newmark => 2,
            Method::ZhangSkeel => 3,
            Method::OneStepNewmark => 4,
            Method::PushForwardNewmark => 5,
        }
    }

    /// The step this method takes under `cfg`.
    pub fn step(self, cfg: &Config) -> f64 {
        match self {
            Method::Verlet => cfg.h / cfg.omega,
            _ => cfg.h,
        }
    }
}

/// The paper's benchmark time (generalized-coordinate implicit variational Euler), seconds.
pub const PAPER_BENCHMARK_SECONDS: f64 = 91.3;

/// Parameters of one Fig. 1 run.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The pendulum (its `gravity` field is the sign).
    pub system: DoublePendulum,
    /// Final time.
    pub t_end: f64,
    /// Step of Z&S, SHAKE and the Newmark methods, and the sampling interval of every error
    /// curve; Verlet uses `h / ω`.
    pub h: f64,
    /// Penalty frequency.
    pub omega: f64,
    /// Z&S / Newmark β.
    pub beta: f64,
    /// Step of the RK4 reference (must divide `h`).
    pub h_reference: f64,
    /// Methods to run.
    pub methods: Vec<Method>,
    /// Time each method (batches of at least `min_batch`, minimum over `repetitions`).
    pub timing: Option<Timing>,
}

/// How run times are measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Batches; the minimum is reported.
    pub repetitions: usize,
    /// Each batch repeats the run until it lasts at least this long.
    pub min_batch: Duration,
}

impl Config {
    /// Fig. 1 with the physical sign of gravity: T = 50, h = 0.1, ω = 20, β = 0.4, reference RK4
    /// at `h = 1e-3`, every method, timed (minimum over 15 batches of ≥ 20 ms).
    pub fn paper() -> Self {
        Self {
            system: DoublePendulum::paper(),
            t_end: 50.0,
            h: H,
            omega: OMEGA,
            beta: BETA,
            h_reference: 1e-3,
            methods: Method::ALL.to_vec(),
            timing: Some(Timing {
                repetitions: 15,
                min_batch: Duration::from_millis(20),
            }),
        }
    }

    /// The same with the sign of gravity as printed (`V = −y1 − y2`), not timed.
    pub fn printed_sign() -> Self {
        Self {
            system: DoublePendulum::paper_printed_sign(),
            timing: None,
            ..Self::paper()
        }
    }

    /// `"physical"` or `"printed"`, from the sign of `system.gravity`.
    pub fn sign_name(&self) -> &'static str {
        if self.system.gravity < 0.0 {
            "physical"
        } else {
            "printed"
        }
    }

    /// The potential in words, e.g. `V = +(y1 + y2)`.
    pub fn potential_text(&self) -> &'static str {
        if self.system.gravity < 0.0 {
            "V = +(y1 + y2), gravity down"
        } else {
            "V = −(y1 + y2) as printed, gravity up"
        }
    }
}

/// One method's run, sampled every `cfg.h`.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodRun {
    /// Which method.
    pub method: Method,
    /// Its step.
    pub h: f64,
    /// Steps completed.
    pub steps: u64,
    /// Sample times.
    pub t: Vec<f64>,
    /// `θ − θ_ref`, wrapped to (−π, π].
    pub err_theta: Vec<f64>,
    /// `φ − φ_ref`, wrapped.
    pub err_phi: Vec<f64>,
    /// `|(x2, y2) − (x2, y2)_ref|`.
    pub err_bob2: Vec<f64>,
    /// `‖g(q)‖`.
    pub g_norm: Vec<f64>,
    /// The step that failed, if one did (the run stops there).
    pub failure: Option<StepError>,
    /// Time of the first sample with `‖g‖ > LOST`: from there on the state is no longer a
    /// double pendulum and its errors are not counted.
    pub left_manifold_at: Option<f64>,
    /// Minimum wall time of one complete run, when timed.
    pub wall_time: Option<Duration>,
}

impl MethodRun {
    /// `max_t |θ − θ_ref|` over the samples before any breakdown.
    pub fn max_err_theta(&self) -> f64 {
        self.valid_max(&self.err_theta)
    }

    /// `max_t |φ − φ_ref|` over the samples before any breakdown.
    pub fn max_err_phi(&self) -> f64 {
        self.valid_max(&self.err_phi)
    }

    /// `max_t ‖g(q)‖` over the samples before any breakdown.
    pub fn max_g(&self) -> f64 {
        self.valid_max(&self.g_norm)
    }

    /// True when the run reached `T` on the constraint manifold.
    pub fn completed(&self) -> bool {
        self.failure.is_none() && self.left_manifold_at.is_none()
    }

    /// Samples before the run left the constraint manifold (all of them if it did not).
    pub fn valid_len(&self) -> usize {
        match self.left_manifold_at {
            Some(t) => self.t.iter().take_while(|&&s| s < t).count(),
            None => self.t.len(),
        }
    }

    fn valid_max(&self, v: &[f64]) -> f64 {
        v[..self.valid_len()]
            .iter()
            .fold(0.0, |m: f64, x| m.max(x.abs()))
    }

    /// `|θ(T) − θ_ref(T)|` if the run reached `T` without breakdown, else NaN.
    pub fn final_err_theta(&self, t_end: f64) -> f64 {
        self.final_value(&self.err_theta, t_end)
    }

    /// `|φ(T) − φ_ref(T)|` if the run reached `T` without breakdown, else NaN.
    pub fn final_err_phi(&self, t_end: f64) -> f64 {
        self.final_value(&self.err_phi, t_end)
    }

    fn final_value(&self, v: &[f64], t_end: f64) -> f64 {
        match (self.completed(), self.t.last()) {
            (true, Some(&t)) if (t - t_end).abs() < 1e-9 => v.last().map_or(f64::NAN, |x| x.abs()),
            _ => f64::NAN,
        }
    }

    /// Status for tables.
    pub fn status(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.left_manifold_at {
            parts.push(format!(
                "‖g‖ > {LOST} from t = {t:.1} (step {})",
                (t / self.h).round()
            ));
        }
        if let Some(e) = &self.failure {
            parts.push(format!(
                "step {} (t = {:.1}) failed: {}",
                e.step(),
                e.step() as f64 * self.h,
                super::constraint_scaling::short_error(e)
            ));
        }
        if parts.is_empty() {
            "ok".into()
        } else {
            parts.join("; ")
        }
    }
}

/// Everything one configuration measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The reference, sampled every `cfg.h`.
    pub reference: Vec<ReferenceSample>,
    /// `max_t` of the angle differences between the reference and the same integration at
    /// half the step: an estimate of the reference's own error.
    pub reference_error: f64,
    /// Minimum wall time of the reference integration, when timed.
    pub reference_wall_time: Option<Duration>,
    /// One run per method, in `cfg.methods` order.
    pub runs: Vec<MethodRun>,
}

impl Outcome {
    /// The run of `method`.
    pub fn run_of(&self, method: Method) -> Option<&MethodRun> {
        self.runs.iter().find(|r| r.method == method)
    }
}

fn wrap(d: f64) -> f64 {
    d - 2.0 * PI * (d / (2.0 * PI)).round()
}

/// The reference trajectory at step `h_ref`, sampled every `cfg.h`.
fn reference(cfg: &Config, h_ref: f64) -> Vec<ReferenceSample> {
    let every = whole_steps(cfg.h, h_ref) as usize;
    GeneralizedPendulum::from(&cfg.system).paper_reference_trajectory(cfg.t_end, h_ref, every)
}

/// Compare a trajectory sampled every `cfg.h` with the reference.
fn measure(
    cfg: &Config,
    method: Method,
    samples: &[State<4>],
    steps: u64,
    failure: Option<StepError>,
    reference: &[ReferenceSample],
) -> MethodRun {
    let gp = GeneralizedPendulum::from(&cfg.system);
    let mut run = MethodRun {
        method,
        h: method.step(cfg),
        steps,
        t: Vec::with_capacity(samples.len()),
        err_theta: Vec::with_capacity(samples.len()),
        err_phi: Vec::with_capacity(samples.len()),
        err_bob2: Vec::with_capacity(samples.len()),
        g_norm: Vec::with_capacity(samples.len()),
        failure,
        left_manifold_at: None,
        wall_time: None,
    };
    for (s, r) in samples.iter().zip(reference) {
        let a = gp.from_cartesian(s);
        run.t.push(r.t);
        run.err_theta.push(wrap(a.theta - r.theta));
        run.err_phi.push(wrap(a.phi - r.phi));
        run.err_bob2
            .push(((s.q[2] - r.q[2]).powi(2) + (s.q[3] - r.q[3]).powi(2)).sqrt());
        let g = constraint_norm(&cfg.system, &s.q);
        run.g_norm.push(g);
        if (g > LOST || g.is_nan()) && run.left_manifold_at.is_none() {
            run.left_manifold_at = Some(r.t);
        }
    }
    run
}

/// Run `stepper` from the paper's initial state to `cfg.t_end`, recording every `cfg.h`.
fn run_stepper<P: ?Sized, S: Stepper<P, [f64; 4]>>(
    cfg: &Config,
    method: Method,
    mut stepper: S,
    target: &P,
    reference: &[ReferenceSample],
) -> MethodRun {
    let h = method.step(cfg);
    let steps = whole_steps(cfg.t_end, h);
    let every = whole_steps(cfg.h, h);
    let tr = integrate(
        &mut stepper,
        target,
        DoublePendulum::initial_state(),
        steps,
        every,
    );
    measure(cfg, method, &tr.samples, tr.steps, tr.failure, reference)
}

/// Take every step of a complete run (what is timed); returns the final state so that the work
/// cannot be optimized away.
fn bare_run<P: ?Sized, S: Stepper<P, [f64; 4]>>(
    mut stepper: S,
    target: &P,
    steps: u64,
) -> State<4> {
    let mut state = DoublePendulum::initial_state();
    for _ in 0..steps {
        if stepper.step(target, &mut state).is_err() {
            break;
        }
    }
    state
}

/// Integrate `method` under `cfg` and compare with `reference` (not timed).
pub fn run_method(cfg: &Config, method: Method, reference: &[ReferenceSample]) -> MethodRun {
    run_and_timer(cfg, method, reference).0
}

/// A complete bare run (what is timed).
type Timer<'a> = Box<dyn FnMut() + 'a>;

/// The measured run of `method`, and a closure doing one complete bare run of it.
fn run_and_timer<'a>(
    cfg: &'a Config,
    method: Method,
    reference: &[ReferenceSample],
) -> (MethodRun, Timer<'a>) {
    let sys = &cfg.system;
    let penalized = sys.penalized(cfg.omega);
    let h = method.step(cfg);
    let steps = whole_steps(cfg.t_end, h);
    let beta = cfg.beta;
    // Each arm: the measured run, and a closure doing one complete bare run (what is timed).
    let pair: (MethodRun, Timer<'a>) = match method {
        Method::Shake => (
            run_stepper(
                cfg,
                method,
                Shake::<[f64; 4], [f64; 2]>::new(h),
                sys,
                reference,
            ),
            Box::new(move || {
                std::hint::black_box(bare_run(Shake::<[f64; 4], [f64; 2]>::new(h), sys, steps));
            }),
        ),
        Method::Verlet => (
            run_stepper(cfg, method, VelocityVerlet::new(h), &penalized, reference),
            Box::new(move || {
                std::hint::black_box(bare_run(VelocityVerlet::new(h), &penalized, steps));
            }),
        ),
        Method::Newmark => (
            run_stepper(cfg, method, Newmark::new(beta, h), &penalized, reference),
            Box::new(move || {
                std::hint::black_box(bare_run(Newmark::new(beta, h), &penalized, steps));
            }),
        ),
        Method::OneStepNewmark => (
            run_stepper(
                cfg,
                method,
                LinearlyImplicitNewmark::new(beta, h),
                &penalized,
                reference,
            ),
            Box::new(move || {
                std::hint::black_box(bare_run(
                    LinearlyImplicitNewmark::new(beta, h),
                    &penalized,
                    steps,
                ));
            }),
        ),
        Method::ZhangSkeel => (
            run_stepper(cfg, method, ZhangSkeel::new(beta, h), &penalized, reference),
            Box::new(move || {
                std::hint::black_box(bare_run(ZhangSkeel::new(beta, h), &penalized, steps));
            }),
        ),
        Method::PushForwardNewmark => (
            run_stepper(
                cfg,
                method,
                PushForwardNewmark::new(beta, h),
                &penalized,
                reference,
            ),
            Box::new(move || {
                std::hint::black_box(bare_run(
                    PushForwardNewmark::new(beta, h),
                    &penalized,
                    steps,
                ));
            }),
        ),
    };
    pair
}

/// Run every method of `cfg` against the reference.
pub fn run(cfg: &Config) -> Outcome {
    let reference_traj = reference(cfg, cfg.h_reference);
    let half = reference(cfg, cfg.h_reference / 2.0);
    let reference_error = reference_traj
        .iter()
        .zip(&half)
        .map(|(a, b)| wrap(a.theta - b.theta).abs().max(wrap(a.phi - b.phi).abs()))
        .fold(0.0, f64::max);
    let (mut runs, mut timers): (Vec<MethodRun>, Vec<Timer>) = cfg
        .methods
        .iter()
        .map(|&m| run_and_timer(cfg, m, &reference_traj))
        .unzip();
    let mut reference_wall_time = None;
    if let Some(timing) = cfg.timing {
        let gp = GeneralizedPendulum::from(&cfg.system);
        let n = whole_steps(cfg.t_end, cfg.h_reference) as usize;
        timers.push(Box::new(move || {
            std::hint::black_box(gp.paper_reference_trajectory(cfg.t_end, cfg.h_reference, n));
        }));
        let mut fs: Vec<&mut dyn FnMut()> = timers.iter_mut().map(|t| &mut **t as _).collect();
        let times = min_wall_times(&mut fs, timing.repetitions, timing.min_batch);
        for (run, &t) in runs.iter_mut().zip(&times) {
            run.wall_time = Some(t);
        }
        reference_wall_time = times.last().copied();
    }
    Outcome {
        reference: reference_traj,
        reference_error,
        reference_wall_time,
        runs,
    }
}

/// The error table of one configuration.
pub fn error_table(cfg: &Config, out: &Outcome) -> Table {
    let mut t = Table::new(
        format!(
            "Fig. 1, {} ({}): errors against the (θ, φ) reference, T = {}, ω = {}, β = {}",
            cfg.sign_name(),
            cfg.potential_text(),
            cfg.t_end,
            cfg.omega,
            cfg.beta
        ),
        &[
            "method",
            "h",
            "steps",
            "max|Δθ|",
            "max|Δφ|",
            "|Δθ(T)|",
            "|Δφ(T)|",
            "max‖g‖",
            "status",
        ],
    );
    for r in &out.runs {
        t.push(vec![
            r.method.label().into(),
            format!("{}", r.h),
            r.steps.to_string(),
            sci(r.max_err_theta()),
            sci(r.max_err_phi()),
            sci(r.final_err_theta(cfg.t_end)),
            sci(r.final_err_phi(cfg.t_end)),
            sci(r.max_g()),
            r.status(),
        ]);
    }
    t.push(vec![
        format!("reference RK4 (vs h/2)"),
        format!("{}", cfg.h_reference),
        whole_steps(cfg.t_end, cfg.h_reference).to_string(),
        sci(out.reference_error),
        sci(out.reference_error),
        "—".into(),
        "—".into(),
        "0".into(),
        "max |Δ| between h_ref and h_ref/2".into(),
    ]);
    t
}

/// The run-time table (ratios to Z&S beside the paper's), if the runs were timed.
pub fn timing_table(cfg: &Config, out: &Outcome) -> Option<Table> {
    let zs = out.run_of(Method::ZhangSkeel)?;
    let zs_s = full_run_seconds(cfg, zs)?;
    let paper_zs = Method::ZhangSkeel.paper_seconds().unwrap_or(f64::NAN);
    let mut t = Table::new(
        format!(
            "Run times to T = {} (this machine: min over batches; paper: Matlab 7.7, 2.4 GHz Core 2 Duo)",
            cfg.t_end
        ),
        &[
            "method",
            "h",
            "steps",
            "time (ms)",
            "ratio to Z&S",
            "paper (s)",
            "paper ratio",
            "note",
        ],
    );
    if let Some(w) = out.reference_wall_time {
        t.push(vec![
            "benchmark (θ, φ reference)".into(),
            format!("{}", cfg.h_reference),
            whole_steps(cfg.t_end, cfg.h_reference).to_string(),
            format!("{:.3}", w.as_secs_f64() * 1e3),
            format!("{:.2}", w.as_secs_f64() / zs_s),
            format!("{PAPER_BENCHMARK_SECONDS}"),
            format!("{:.2}", PAPER_BENCHMARK_SECONDS / paper_zs),
            "RK4 here; implicit variational Euler in the paper".into(),
        ]);
    }
    for r in &out.runs {
        let Some(secs) = full_run_seconds(cfg, r) else {
            continue;
        };
        let planned = whole_steps(cfg.t_end, r.h);
        t.push(vec![
            r.method.label().into(),
            format!("{}", r.h),
            planned.to_string(),
            format!("{:.3}", secs * 1e3),
            format!("{:.2}", secs / zs_s),
            r.method
                .paper_seconds()
                .map_or("—".into(), |p| format!("{p}")),
            r.method
                .paper_seconds()
                .map_or("—".into(), |p| format!("{:.2}", p / paper_zs)),
            if r.steps < planned {
                format!(
                    "run stopped at step {}: time scaled by {planned}/{}",
                    r.steps, r.steps
                )
            } else {
                String::new()
            },
        ]);
    }
    Some(t)
}

/// Wall time of a complete run of `r`'s method, in seconds: the measured minimum, scaled up
/// by `planned / taken` steps if the run stopped early (every step costs about the same).
fn full_run_seconds(cfg: &Config, r: &MethodRun) -> Option<f64> {
    let w = r.wall_time?.as_secs_f64();
    let planned = whole_steps(cfg.t_end, r.h);
    Some(if r.steps > 0 && r.steps < planned {
        w * planned as f64 / r.steps as f64
    } else {
        w
    })
}

/// The error figure of one configuration: one panel per method (as the paper's rows) with
/// `|Δθ|` and `|Δφ|` on a common logarithmic scale, then the running maximum of the angle error
/// of every method together, and the constraint residuals.
pub fn figure(cfg: &Config, out: &Outcome) -> Figure {
    let mut fig = Figure::new(
        format!(
            "Fig. 1: double pendulum, errors against the (θ, φ) reference — {} sign ({}), ω = {}, β = {}, T = {}",
            cfg.sign_name(),
            cfg.potential_text(),
            cfg.omega,
            cfg.beta,
            cfg.t_end
        ),
        4,
        (480, 360),
    );
    // One y-range for all per-method panels, so that rows can be compared by eye.
    let top = out
        .runs
        .iter()
        .map(|r| r.max_err_theta().max(r.max_err_phi()))
        .fold(1e-3, f64::max);
    let y_range = (1e-6, 10f64.powf(top.log10().ceil()));
    for r in &out.runs {
        let n = r.valid_len();
        let series = |v: &[f64]| -> Vec<(f64, f64)> {
            r.t[..n]
                .iter()
                .zip(&v[..n])
                .map(|(&t, &e)| (t, e.abs()))
                .collect()
        };
        let mut p = Panel::new(
            format!("{}, h = {}", r.method.label(), r.h),
            "time t",
            "angle error (rad)",
        )
        .scales(Scale::Linear, Scale::Log)
        .y_range(y_range.0, y_range.1)
        .legend(LegendPosition::LowerRight)
        .with(Series::new(
            "|θ − θ_ref|",
            series(&r.err_theta),
            Style::Line,
            0,
        ))
        .with(Series::new(
            "|φ − φ_ref|",
            series(&r.err_phi),
            Style::Line,
            1,
        ));
        p.x_range = Some((0.0, cfg.t_end));
        if !r.completed() && n > 0 {
            p = p.with(Series::new(
                format!("breaks down (t = {:.1})", r.t[n - 1]),
                vec![(r.t[n - 1], r.err_theta[n - 1].abs())],
                Style::Markers,
                3,
            ));
        }
        fig = fig.with(p);
    }
    let mut envelope = Panel::new(
        "running max of max(|Δθ|, |Δφ|)",
        "time t",
        "angle error (rad)",
    )
    .scales(Scale::Linear, Scale::Log)
    .legend(LegendPosition::LowerRight);
    let mut residual = Panel::new(
        "constraint residual ‖g(q)‖ (colours as left)",
        "time t",
        "‖g(q)‖ (length²)",
    )
    .scales(Scale::Linear, Scale::Log)
    .legend(LegendPosition::Hidden);
    for (k, r) in out.runs.iter().enumerate() {
        let n = r.valid_len();
        let mut m = 0.0f64;
        let env = (0..n)
            .map(|i| {
                m = m.max(r.err_theta[i].abs()).max(r.err_phi[i].abs());
                (r.t[i], m)
            })
            .collect();
        // Alternate solid and dashed so that coinciding curves stay visible.
        let style = if k % 2 == 0 {
            Style::Line
        } else {
            Style::Dashed
        };
        envelope = envelope.with(Series::new(r.method.label(), env, style, r.method.color()));
        residual = residual.with(Series::new(
            r.method.label(),
            r.t[..n]
                .iter()
                .zip(&r.g_norm[..n])
                .map(|(&t, &g)| (t, g))
                .collect(),
            Style::Line,
            r.method.color(),
        ));
    }
    envelope.x_range = Some((0.0, cfg.t_end));
    residual.x_range = Some((0.0, cfg.t_end));
    // Down to below SHAKE's round-off residuals (≈ 1e-12 with its tolerance).
    let g_top = out.runs.iter().map(|r| r.max_g()).fold(1e-3, f64::max);
    residual.y_range = Some((1e-14, 10f64.powf(g_top.log10().ceil())));
    fig.with(envelope).with(residual)
}

/// Write `double-pendulum-<sign>.csv` (errors per method and time) and `.svg`.
///
/// # Errors
/// I/O failures.
pub fn write_files(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let stem = format!("double-pendulum-{}", cfg.sign_name());
    let mut csv = Csv::new(&[
        "method",
        "h",
        "t",
        "err_theta",
        "err_phi",
        "err_bob2",
        "g_norm",
    ]);
    for r in &out.runs {
        for i in 0..r.t.len() {
            csv.push(&[
                Field::Text(r.method.label()),
                Field::Num(r.h),
                Field::Num(r.t[i]),
                Field::Num(r.err_theta[i]),
                Field::Num(r.err_phi[i]),
                Field::Num(r.err_bob2[i]),
                Field::Num(r.g_norm[i]),
            ]);
        }
    }
    let csv_path = dir.join(format!("{stem}.csv"));
    csv.write(&csv_path)?;
    let svg_path = dir.join(format!("{stem}.svg"));
    figure(cfg, out).write_svg(&svg_path)?;
    Ok(vec![csv_path, svg_path])
}

/// Write the run-time table as `double-pendulum-times.csv`.
fn write_times(table: &Table, dir: &Path) -> io::Result<PathBuf> {
    let mut csv = Csv::new(&[
        "method",
        "h",
        "steps",
        "time_ms",
        "ratio_to_zs",
        "paper_s",
        "paper_ratio",
        "note",
    ]);
    for r in &table.rows {
        let f: Vec<Field> = r.iter().map(|c| Field::Text(c)).collect();
        csv.push(&f);
    }
    let path = dir.join("double-pendulum-times.csv");
    csv.write(&path)?;
    Ok(path)
}

/// Notes on one configuration's outcome: who broke down where.
fn notes(cfg: &Config, out: &Outcome) -> Vec<String> {
    let mut notes = Vec::new();
    for r in &out.runs {
        if !r.completed() {
            notes.push(format!(
                "{} sign: {} {}",
                cfg.sign_name(),
                r.method.label(),
                r.status()
            ));
        }
    }
    notes
}

/// The whole experiment: the physical sign (timed) and the printed sign; files into `dir`.
///
/// # Errors
/// I/O failures.
pub fn reproduce(dir: &Path, physical: &Config, printed: &Config) -> io::Result<Report> {
    let out_phys = run(physical);
    let out_print = run(printed);
    let mut files = write_files(physical, &out_phys, dir)?;
    files.extend(write_files(printed, &out_print, dir)?);
    let mut tables = vec![error_table(physical, &out_phys)];
    if let Some(t) = timing_table(physical, &out_phys) {
        files.push(write_times(&t, dir)?);
        tables.push(t);
    }
    tables.push(error_table(printed, &out_print));
    let mut notes = notes(physical, &out_phys);
    notes.extend(self::notes(printed, &out_print));
    Ok(Report {
        experiment: "double-pendulum".into(),
        setup: format!(
            "Tao & Owhadi §4.1 Fig. 1: L1 = 1, L2 = √2, m = 1, q(0) = (0, −1, 1, −2) at rest; penalized methods at ω = {}, β = {}; reference: RK4 in (θ, φ) at h = {}; errors in (θ, φ) via atan2, sampled every {}.",
            physical.omega, physical.beta, physical.h_reference, physical.h
        ),
        tables,
        notes,
        files,
    })
}
