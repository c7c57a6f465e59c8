//! `zs reproduce water-rdf` and `water-100`: Tao & Owhadi Figs. 4 and 7 — histograms of the
//! O–O distances of a TIP3P cluster under Langevin dynamics (GLA, eq. 27, γ = 0.01, β_T = 50,
//! i.e. kT = 0.02 kcal/mol), Z&Ss-stiff (Integrator 5, eq. 19) against SHAKE, and the run times
//! (paper, N = 7, T = 10 000: SHAKE 13 472 s, Z&Ss 1 549 s; N = 100, T = 1000: 42 234 s and
//! 30 059 s).
//!
//! GLA splitting (not printed in the paper): one deterministic step of the inner method, then the
//! exact Ornstein–Uhlenbeck flow `p ← e^{−γh/m} p + √(kT m (1 − e^{−2γh/m})) ξ` on the momenta
//! ([`zs_runtime::Langevin`]). SHAKE is run as RATTLE (same positions; its velocities are
//! tangent, so the noise's normal part is removed by the next step's projection). Each starts
//! from the relaxed cluster of the system it integrates ([`starts`]) with the same rigid thermal
//! velocities; the first
//! [`Config::burn_in`] time units are not sampled. Bins of 0.05 Å.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use zs_runtime::assembly::Assembled;
use zs_runtime::linalg::{ShiftedSolve, SolveOptions};
use zs_runtime::{
    DynState, HessianPart, Langevin, Model, Rattle, ShakeSolver, Stepper, StiffModel,
    ZhangSkeelStiff,
};

use super::plot::{Figure, LegendPosition, Panel, Series, Style};
use super::{whole_steps, Csv, Field, Report, Table};
use crate::water::{self, Water};

/// The two methods of Figs. 4 and 7.
pub const METHODS: [&str; 2] = ["Z&Ss-stiff", "SHAKE (RATTLE)"];

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Experiment name (`water-rdf` or `water-100`).
    pub name: &'static str,
    /// Molecules.
    pub n: usize,
    /// Step.
    pub h: f64,
    /// Final time.
    pub t_end: f64,
    /// Time not sampled at the start.
    pub burn_in: f64,
    /// Time between samples.
    pub sample_dt: f64,
    /// Friction γ.
    pub gamma: f64,
    /// kT = 1/β_T.
    pub kt: f64,
    /// Penalty frequency of Z&Ss-stiff.
    pub omega: f64,
    /// β of Z&Ss-stiff.
    pub beta: f64,
    /// Seed of the cluster, the velocities and the noise.
    pub seed: u64,
    /// Histogram range `[lo, hi)` (Å) and bin width.
    pub bins: (f64, f64, f64),
    /// The paper's run times (s): SHAKE, Z&Ss.
    pub paper_seconds: (f64, f64),
}

impl Config {
    /// Fig. 4: N = 7, T = 10 000.
    pub fn fig4() -> Self {
        Self {
            name: "water-rdf",
            n: water::N,
            h: water::H,
            t_end: 10_000.0,
            burn_in: 500.0,
            sample_dt: 1.0,
            gamma: 0.01,
            kt: 0.02,
            omega: water::OMEGA,
            beta: water::BETA,
            seed: 0,
            bins: (2.0, 10.0, 0.05),
            paper_seconds: (13_472.0, 1_549.0),
        }
    }

    /// Fig. 7: N = 100, T = 1000.
    pub fn fig7() -> Self {
        Self {
            name: "water-100",
            n: 100,
            t_end: 1000.0,
            burn_in: 100.0,
            bins: (2.0, 32.0, 0.05),
            paper_seconds: (42_234.0, 30_059.0),
            ..Self::fig4()
        }
    }

    /// Four molecules to T = 100: for tests.
    pub fn quick() -> Self {
        Self {
            n: 4,
            t_end: 100.0,
            burn_in: 10.0,
            ..Self::fig4()
        }
    }

    fn bin_count(&self) -> usize {
        ((self.bins.1 - self.bins.0) / self.bins.2).round() as usize
    }
}

/// One method's histogram and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Method label.
    pub method: &'static str,
    /// Counts per bin, normalised to a probability density (1/Å).
    pub density: Vec<f64>,
    /// Distances outside the range.
    pub outside: u64,
    /// Mean O–O distance (Å).
    pub mean: f64,
    /// Largest O–O distance seen (Å): a molecule leaving the cluster shows here.
    pub max: f64,
    /// Wall time of the whole run (s).
    pub seconds: f64,
    /// Steps completed, and the error that stopped the run early, if any.
    pub steps: u64,
    /// Why the run stopped early.
    pub failure: Option<String>,
    /// Mean kinetic energy per degree of freedom over the sampled states (`kT/2` expected).
    pub kinetic_per_dof: f64,
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Z&Ss-stiff, then SHAKE.
    pub runs: Vec<Run>,
    /// The parts of a Z&Ss-stiff step at the start, seconds each (minimum of interleaved
    /// batches): the force with the stiff Hessian (all pair terms; the penalty's 9 × 9 blocks),
    /// and the block-diagonal shifted solve.
    pub split: (f64, f64),
    /// `½ Σ_bins |ρ_Z&Ss − ρ_SHAKE| · width`: the total-variation distance of the histograms.
    pub distance: f64,
}

fn oo_distances(q: &[f64], out: &mut Vec<f64>) {
    let n = q.len() / 9;
    for a in 0..n {
        for b in a + 1..n {
            let d2: f64 = (0..3).map(|c| (q[9 * b + c] - q[9 * a + c]).powi(2)).sum();
            out.push(d2.sqrt());
        }
    }
}

fn sample<P: Model<Vec<f64>> + ?Sized, S: Stepper<P, Vec<f64>>>(
    cfg: &Config,
    method: &'static str,
    mut stepper: S,
    target: &P,
    start: &DynState,
    dof: f64,
) -> Run {
    let (lo, _, width) = cfg.bins;
    let mut counts = vec![0u64; cfg.bin_count()];
    let (mut outside, mut sum, mut max, mut samples) = (0u64, 0.0, 0.0f64, 0u64);
    let (mut kinetic, mut kinetic_samples) = (0.0, 0u64);
    let mut d = Vec::new();
    let mut s = start.clone();
    let steps = whole_steps(cfg.t_end, cfg.h);
    let (burn, every) = (
        whole_steps(cfg.burn_in, cfg.h),
        whole_steps(cfg.sample_dt, cfg.h),
    );
    let clock = Instant::now();
    let mut failure = None;
    let mut done = 0;
    for k in 1..=steps {
        if let Err(e) = stepper.step(target, &mut s) {
            failure = Some(e.to_string());
            break;
        }
        done = k;
        if k > burn && k % every == 0 {
            d.clear();
            oo_distances(&s.q, &mut d);
            for &r in &d {
                sum += r;
                max = max.max(r);
                samples += 1;
                let bin = ((r - lo) / width).floor();
                if bin >= 0.0 && (bin as usize) < counts.len() {
                    counts[bin as usize] += 1;
                } else {
                    outside += 1;
                }
            }
            kinetic += target.kinetic_energy(&s.v) / dof;
            kinetic_samples += 1;
        }
    }
    let seconds = clock.elapsed().as_secs_f64();
    let total = samples.max(1) as f64;
    Run {
        method,
        density: counts.iter().map(|&c| c as f64 / (total * width)).collect(),
        outside,
        mean: sum / total,
        max,
        seconds,
        steps: done,
        failure,
        kinetic_per_dof: kinetic / kinetic_samples.max(1) as f64,
    }
}

/// The starts: the seeded grid cluster relaxed by FIRE on the penalized potential Z&Ss-stiff
/// integrates, with rigid thermal velocities — Z&Ss-stiff's start —, and the same made rigid
/// ([`Water::make_rigid`]) — SHAKE's: each method starts at (or next to) a minimum of the
/// system it integrates, so that neither releases energy the weak thermostat must remove.
pub fn starts(cfg: &Config, sys: &Assembled<Water, 9>) -> (DynState, DynState) {
    let w = sys.terms();
    let mut q = w.cluster(cfg.n, water::SPACING, cfg.seed);
    super::water_conservation::relax(sys, cfg.omega, &mut q);
    let v = water::thermal_velocities(w, &q, cfg.kt, cfg.seed);
    let mut rigid = q.clone();
    w.make_rigid(&mut rigid);
    (DynState::new(q, v.clone()), DynState::new(rigid, v))
}

/// Run both methods from the same start.
pub fn run(cfg: &Config) -> Outcome {
    let sys: Assembled<Water, 9> = Water::tip3p().assemble(cfg.n);
    let (s_penalized, s_rigid) = starts(cfg, &sys);
    let pen = sys.penalized(cfg.omega);
    // Degrees of freedom that carry kinetic energy: all 9 per molecule on the penalized system
    // (the bond vibrations are thermalised too), 6 per rigid molecule under RATTLE.
    let (dof_penalized, dof_rigid) = ((9 * cfg.n) as f64, (6 * cfg.n) as f64);
    let zs = Langevin::new(
        ZhangSkeelStiff::new(cfg.beta, cfg.h),
        cfg.gamma,
        cfg.kt,
        cfg.seed,
    );
    let rattle = Langevin::new(
        Rattle::new(cfg.h).with_solver(ShakeSolver::Newton),
        cfg.gamma,
        cfg.kt,
        cfg.seed,
    );
    let runs = vec![
        sample(cfg, METHODS[0], zs, &pen, &s_penalized, dof_penalized),
        sample(cfg, METHODS[1], rattle, &sys, &s_rigid, dof_rigid),
    ];
    let distance = 0.5
        * runs[0]
            .density
            .iter()
            .zip(&runs[1].density)
            .map(|(a, b)| (a - b).abs() * cfg.bins.2)
            .sum::<f64>();
    Outcome {
        runs,
        distance,
        split: split(&pen, &s_penalized, cfg),
    }
}

/// Time the two parts of a Z&Ss-stiff step at `s`: `(force + stiff Hessian, shifted solve)`.
fn split<P: StiffModel<Vec<f64>>>(target: &P, s: &DynState, cfg: &Config) -> (f64, f64) {
    let n = s.q.len();
    let (mut g, mut h) = (vec![0.0; n], target.new_matrix(HessianPart::Stiff));
    let mut solver = target.new_solver(HessianPart::Stiff);
    let mut m = vec![0.0; n];
    target.masses_into(&mut m);
    target.gradient_stiff_hessian_into(&s.q, &mut g, &mut h);
    let mut x = g.clone();
    let scale = cfg.beta * cfg.h * cfg.h;
    let mut h2 = target.new_matrix(HessianPart::Stiff);
    let mut force =
        || target.gradient_stiff_hessian_into(std::hint::black_box(&s.q), &mut g, &mut h2);
    let mut solve = || {
        x.copy_from_slice(&s.q);
        let _ = solver.solve_shifted(&m, scale, &h, &mut x, &SolveOptions::default());
    };
    let t = super::min_wall_times(&mut [&mut force, &mut solve], 5, Duration::from_millis(20));
    (t[0].as_secs_f64(), t[1].as_secs_f64())
}

/// Write `<name>.csv` (the two densities) and `<name>.svg`, and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let (lo, _, width) = cfg.bins;
    let centre = |i: usize| lo + (i as f64 + 0.5) * width;
    let mut csv = Csv::new(&["r_OO", "density_zss_stiff", "density_shake"]);
    for i in 0..cfg.bin_count() {
        csv.push(&[
            Field::Num(centre(i)),
            Field::Num(out.runs[0].density[i]),
            Field::Num(out.runs[1].density[i]),
        ]);
    }
    let csv_path = dir.join(format!("{}.csv", cfg.name));
    csv.write(&csv_path)?;
    let mut panel = Panel::new(
        format!(
            "O–O distances, {} waters, t ∈ [{}, {}]",
            cfg.n, cfg.burn_in, cfg.t_end
        ),
        "r_OO (Å)",
        "probability density (1/Å)",
    )
    .legend(LegendPosition::UpperRight);
    for (i, r) in out.runs.iter().enumerate() {
        let pts = r
            .density
            .iter()
            .enumerate()
            .map(|(k, &y)| (centre(k), y))
            .collect();
        let style = if i == 0 { Style::Line } else { Style::Dashed };
        panel = panel.with(Series::new(r.method, pts, style, i));
    }
    let fig = if cfg.n == water::N {
        "Fig. 4"
    } else {
        "Fig. 7"
    };
    let figure = Figure::new(
        format!(
            "{fig}: GLA Langevin (γ = {}, kT = {}), h = {}, Z&Ss-stiff (ω = {}, β = {}) vs SHAKE",
            cfg.gamma, cfg.kt, cfg.h, cfg.omega, cfg.beta
        ),
        1,
        (900, 480),
    )
    .with(panel);
    let svg_path = dir.join(format!("{}.svg", cfg.name));
    figure.write_svg(&svg_path)?;

    let mut table = Table::new(
        format!("N = {}, T = {}, h = {}", cfg.n, cfg.t_end, cfg.h),
        &[
            "method",
            "mean r_OO (Å)",
            "max r_OO (Å)",
            "⟨KE⟩/dof ÷ kT/2",
            "run (s)",
            "÷ Z&Ss",
            "paper (s)",
            "paper ÷ Z&Ss",
            "status",
        ],
    );
    let z = out.runs[0].seconds;
    let paper = [cfg.paper_seconds.1, cfg.paper_seconds.0];
    for (r, p) in out.runs.iter().zip(paper) {
        table.push(vec![
            r.method.into(),
            format!("{:.3}", r.mean),
            format!("{:.2}", r.max),
            format!("{:.3}", r.kinetic_per_dof / (0.5 * cfg.kt)),
            format!("{:.2}", r.seconds),
            format!("{:.2}", r.seconds / z),
            format!("{p}"),
            format!("{:.2}", p / cfg.paper_seconds.1),
            r.failure.clone().unwrap_or_else(|| "ok".into()),
        ]);
    }
    let (force, solve) = out.split;
    let per_step = out.runs[0].seconds / out.runs[0].steps.max(1) as f64;
    let mut notes = vec![format!(
        "A Z&Ss-stiff step ({:.1} µs in the run, Langevin and sampling included): force and stiff Hessian {:.1} µs ({:.0} %), block-diagonal solve {:.2} µs ({:.1} %), measured apart at the start. The paper: Z&Ss spent 67 of 1 549 s (N = 7) and 319 of 30 059 s (N = 100) in linear solves.",
        per_step * 1e6,
        force * 1e6,
        100.0 * force / per_step,
        solve * 1e6,
        100.0 * solve / per_step
    )];
    notes.push(format!(
        "Total-variation distance between the two histograms: {:.3} (0: identical, 1: disjoint); distances outside [{}, {}) Å: {} and {}.",
        out.distance, cfg.bins.0, cfg.bins.1, out.runs[0].outside, out.runs[1].outside
    ));
    Ok(Report {
        experiment: cfg.name.into(),
        setup: format!(
            "Tao & Owhadi {fig}: {} rigid TIP3P waters (open cluster), GLA Langevin (γ = {}, kT = {} kcal/mol) around Z&Ss-stiff (ω = {}, β = {}) and around SHAKE (as RATTLE), h = {}, T = {}, burn-in {}, a sample every {} time units.",
            cfg.n, cfg.gamma, cfg.kt, cfg.omega, cfg.beta, cfg.h, cfg.t_end, cfg.burn_in, cfg.sample_dt
        ),
        tables: vec![table],
        notes,
        files: vec![csv_path, svg_path],
    })
}
