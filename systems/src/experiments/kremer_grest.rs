//! `zs reproduce kremer-grest`: the step that the Z&S family buys on LAMMPS's polymer melt.
//!
//! The melt of LAMMPS's `in.chain` ([`crate::kremer_grest`], 32 000 beads from `data.chain`)
//! under GLA Langevin dynamics (Tao & Owhadi eq. 27: one deterministic step, then the exact
//! Ornstein–Uhlenbeck flow of the momenta; γ = 1, kT = 1 as `fix langevin 1.0 1.0 1.0`), with
//! two deterministic steps:
//! - velocity Verlet, the reference at LAMMPS's `timestep 0.012` and at longer steps;
//! - Z&Ss-stiff (Integrator 5, eq. 19) with the FENE bonds — their logarithmic spring and their
//!   WCA repulsion — as the stiff part `V1` in the linearly implicit solve (a banded `LDLᵀ`
//!   along the chains, O(N)), and the nonbonded WCA repulsion explicit.
//!
//! Why that split: with β = 1/4 the Z&Ss-stiff step is exact-energy on a quadratic stiff part, so
//! the GLA around it samples a harmonic bond's exact distribution at any step; the FENE bond is
//! close to harmonic at its mean length. The nonbonded repulsion is as stiff as the bonds but
//! its Hessian couples the whole three-dimensional melt: a sparse Cholesky of it fills in
//! (nested dissection of a 3-D graph: O(N^{4/3}) memory, O(N²) flops per factorization), so it
//! stays explicit and bounds the step.
//!
//! Measured per run, on a fixed time grid (burn-in, then a sample every `sample_dt`): the
//! bond-length distribution (mean, width, histogram), the mean-square internal distances
//! `⟨R²(n)⟩/n` along the chains, the potential energy per bead, the virial pressure (the box-scaling derivative of the
//! energy, so that it needs no per-term forces: `P = (Σ m v² − λ ∂V/∂λ)/(3 Vol)` with positions
//! and box scaled by λ, central differences) and the kinetic temperature. Error bars are
//! standard errors of block means. A run *reproduces* the reference when every observable is
//! within two combined standard errors of velocity Verlet at h = 0.012. Time to result is the
//! wall time of the steps alone (sampling excluded) per unit of simulated time, against the
//! reference's.

use std::io;
use std::path::{Path, PathBuf};

use zs_runtime::assembly::Assembled;
use zs_runtime::lammps::DataFile;
use zs_runtime::{DynState, Langevin, Model, Stepper, VelocityVerlet, ZhangSkeelStiff};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{guarded_step, whole_steps, Csv, Field, Report, SampledRun, Table};
use crate::kremer_grest::{KremerGrest, SKIN};

/// LAMMPS's own equilibrated melt (Debian package `lammps-examples`).
pub const LAMMPS_DATA: &str = "/usr/share/lammps/examples/COUPLE/multiple/data.chain";

/// The deterministic step inside the GLA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Velocity Verlet.
    Verlet,
    /// Z&Ss-stiff with the FENE bonds in the solve.
    ZssStiff,
}

impl Method {
    /// Label in tables and figures.
    pub fn label(self) -> &'static str {
        match self {
            Method::Verlet => "Verlet",
            Method::ZssStiff => "Z&Ss-stiff",
        }
    }
}

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The LAMMPS data file of the melt.
    pub data: PathBuf,
    /// The runs: method and step. The first is the reference.
    pub runs: Vec<(Method, f64)>,
    /// Simulated time of each run.
    pub t_end: f64,
    /// Time not sampled at the start.
    pub burn_in: f64,
    /// Time between samples.
    pub sample_dt: f64,
    /// Friction γ (per unit mass) and kT of the GLA.
    pub gamma: f64,
    /// kT.
    pub kt: f64,
    /// β of Z&Ss-stiff (1/4: exact energy on the quadratic part of the bonds).
    pub beta: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// Blocks of the block-average error bars.
    pub blocks: usize,
    /// Chemical distances `n` of `⟨R²(n)⟩/n`.
    pub separations: Vec<usize>,
    /// Bond-length histogram `[lo, hi)` and bin width.
    pub bins: (f64, f64, f64),
}

impl Config {
    /// LAMMPS's `data.chain`: Verlet at 0.012 (LAMMPS's step; the reference), at half of it
    /// (how far the reference itself is from the small-step limit) and at 0.015 … 0.024;
    /// Z&Ss-stiff at 0.006 … 0.06; each to t = 28.8 (2 400 reference steps), 36 samples.
    pub fn lammps(data: PathBuf) -> Self {
        let mut runs = vec![(Method::Verlet, 0.012)];
        runs.extend([0.006, 0.015, 0.018, 0.024].map(|h| (Method::Verlet, h)));
        runs.extend([0.006, 0.012, 0.018, 0.024, 0.036, 0.06].map(|h| (Method::ZssStiff, h)));
        Self {
            data,
            runs,
            t_end: 28.8,
            burn_in: 2.88,
            sample_dt: 0.72,
            gamma: 1.0,
            kt: 1.0,
            beta: 0.25,
            seed: 904_297,
            blocks: 6,
            separations: vec![1, 2, 4, 8, 16, 32, 64],
            bins: (0.8, 1.2, 0.005),
        }
    }

    /// A short run of each method on a small melt: for tests.
    pub fn quick(data: PathBuf) -> Self {
        Self {
            runs: vec![(Method::Verlet, 0.006), (Method::ZssStiff, 0.012)],
            t_end: 0.72,
            burn_in: 0.144,
            sample_dt: 0.072,
            blocks: 4,
            separations: vec![1, 2],
            ..Self::lammps(data)
        }
    }

    fn bin_count(&self) -> usize {
        ((self.bins.1 - self.bins.0) / self.bins.2).round() as usize
    }

    /// Names of the observables, in the order of [`Run::series`]: bond length and spread,
    /// `R²(n)/n` per separation, pressure, potential energy per bead, kinetic temperature.
    pub fn observables(&self) -> Vec<String> {
        let mut names = vec!["⟨b⟩".to_string(), "σ_b".to_string()];
        names.extend(self.separations.iter().map(|n| format!("R²({n})/{n}")));
        names.extend(["P".to_string(), "E_pot/N".to_string(), "T_kin".to_string()]);
        names
    }

    /// Index of the pressure in [`Config::observables`] (then `E_pot/N`, then `T_kin`).
    pub fn pressure_index(&self) -> usize {
        2 + self.separations.len()
    }

    /// Whether the printed table shows observable `k` (the CSV has them all): the internal
    /// distances at 8 and 64 bonds only.
    fn shown(&self, k: usize) -> bool {
        match k.checked_sub(2) {
            Some(j) if j < self.separations.len() => matches!(self.separations[j], 8 | 64),
            _ => true,
        }
    }
}

/// One run: its observables in [`Config::observables`] order, its histogram the bond-length
/// probability density per bin.
pub type Run = SampledRun<Method>;

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Beads and bonds.
    pub beads: usize,
    /// Bonds.
    pub bonds: usize,
    /// Threads of rayon's pool.
    pub threads: usize,
    /// The virial pressure and kinetic temperature at the data file's state (to check against
    /// LAMMPS's `run 0` thermo output).
    pub start: (f64, f64),
    /// The runs, in [`Config::runs`] order.
    pub runs: Vec<Run>,
}

/// Why the experiment cannot run.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct InputError {
    /// The data file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// The melt and what measuring it needs: the system at box scales `1 ± δ` for the virial, and
/// each bead's chain segment for the internal distances.
struct Melt {
    system: Assembled<KremerGrest, 3>,
    scaled: [Assembled<KremerGrest, 3>; 2],
    q: Vec<f64>,
    v: Vec<f64>,
    volume: f64,
    /// Beads `i` and `j > i` are on one chain, `j − i` bonds apart, when `segment[i] ==
    /// segment[j]` (chains are runs of consecutive beads bonded `i`–`i+1`).
    segment: Vec<u32>,
    /// The bonds `(i, i + 1)`.
    bonds: Vec<usize>,
}

/// Relative box scaling of the virial's central difference.
const DELTA: f64 = 1e-5;

fn load(path: &Path) -> Result<Melt, InputError> {
    let fail = |message: String| InputError {
        path: path.display().to_string(),
        message,
    };
    let data = DataFile::read(path).map_err(|e| fail(e.to_string()))?;
    let model = KremerGrest::lammps_chain();
    let (system, q, v) = model.from_data(&data).map_err(|e| fail(e.to_string()))?;
    let mut scaled = Vec::new();
    for s in [1.0 + DELTA, 1.0 - DELTA] {
        let mut d = data.clone();
        for a in 0..3 {
            d.hi[a] = d.lo[a] + s * (data.hi[a] - data.lo[a]);
        }
        scaled.push(model.from_data(&d).map_err(|e| fail(e.to_string()))?.0);
    }
    let n = data.len();
    let mut linked = vec![false; n];
    for b in &data.bonds {
        let [i, j] = b.atoms;
        if i.abs_diff(j) != 1 {
            return Err(fail(format!(
                "bond between atoms {} and {}: the internal distances need chains of consecutive atoms",
                data.ids[i], data.ids[j]
            )));
        }
        linked[i.min(j)] = true;
    }
    let mut segment = vec![0u32; n];
    for i in 1..n {
        segment[i] = segment[i - 1] + u32::from(!linked[i - 1]);
    }
    let bonds = (0..n).filter(|&i| linked[i]).collect();
    let l = data.box_lengths();
    let [scaled_up, scaled_down]: [Assembled<KremerGrest, 3>; 2] = scaled
        .try_into()
        .unwrap_or_else(|_| unreachable!("two scales"));
    Ok(Melt {
        system,
        scaled: [scaled_up, scaled_down],
        q,
        v,
        volume: l[0] * l[1] * l[2],
        segment,
        bonds,
    })
}

impl Melt {
    /// The observables of [`Config::observables`] at `s`, and the bond lengths into `counts`.
    fn measure(&self, cfg: &Config, s: &DynState, counts: &mut [u64]) -> Vec<f64> {
        let q = &s.q;
        let d2 = |i: usize, j: usize| -> f64 {
            (0..3).map(|a| (q[3 * j + a] - q[3 * i + a]).powi(2)).sum()
        };
        let (mut sum, mut sum2) = (0.0, 0.0);
        let (lo, _, width) = cfg.bins;
        for &i in &self.bonds {
            let b = d2(i, i + 1).sqrt();
            sum += b;
            sum2 += b * b;
            let bin = ((b - lo) / width).floor();
            if bin >= 0.0 && (bin as usize) < counts.len() {
                counts[bin as usize] += 1;
            }
        }
        let nb = self.bonds.len().max(1) as f64;
        let mean = sum / nb;
        let mut out = vec![mean, (sum2 / nb - mean * mean).max(0.0).sqrt()];
        let n = self.segment.len();
        for &sep in &cfg.separations {
            let (mut r2, mut pairs) = (0.0, 0u64);
            for i in 0..n.saturating_sub(sep) {
                if self.segment[i] == self.segment[i + sep] {
                    r2 += d2(i, i + sep);
                    pairs += 1;
                }
            }
            out.push(r2 / (pairs.max(1) as f64 * sep as f64));
        }
        // Σ m v² (unit masses in this model's data files: checked by `from_data`).
        let mv2 = 2.0 * self.system.kinetic_energy(&s.v);
        let scale = |l: f64| q.iter().map(|x| l * x).collect::<Vec<f64>>();
        let up = self.scaled[0].potential_at(&scale(1.0 + DELTA));
        let down = self.scaled[1].potential_at(&scale(1.0 - DELTA));
        let dv = (up - down) / (2.0 * DELTA);
        out.push((mv2 - dv) / (3.0 * self.volume));
        out.push(self.system.potential_at(q) / self.segment.len() as f64);
        out.push(mv2 / q.len() as f64);
        out
    }
}

fn sample<S: Stepper<Assembled<KremerGrest, 3>, Vec<f64>>>(
    cfg: &Config,
    melt: &Melt,
    method: Method,
    h: f64,
    mut stepper: S,
) -> Run {
    let observables = cfg.observables().len();
    let mut series = vec![Vec::new(); observables];
    let mut counts = vec![0u64; cfg.bin_count()];
    let mut s = DynState::new(melt.q.clone(), melt.v.clone());
    let mut before = s.q.clone();
    let steps = whole_steps(cfg.t_end, h);
    let (burn, every) = (whole_steps(cfg.burn_in, h), whole_steps(cfg.sample_dt, h));
    let (mut seconds, mut done, mut failure) = (0.0, 0, None);
    for k in 1..=steps {
        // As the command line's guard: a failed step, or a bead that moved more than the skin.
        let guard = (&mut before[..], SKIN);
        if let Err(f) = guarded_step(&mut stepper, &melt.system, &mut s, guard, k, &mut seconds) {
            failure = Some(f);
            break;
        }
        done = k;
        if k > burn && k % every == 0 {
            for (x, v) in series.iter_mut().zip(melt.measure(cfg, &s, &mut counts)) {
                x.push(v);
            }
        }
    }
    let total = counts.iter().sum::<u64>().max(1) as f64;
    Run {
        method,
        h,
        steps: done,
        seconds,
        failure,
        series,
        density: counts
            .iter()
            .map(|&c| c as f64 / (total * cfg.bins.2))
            .collect(),
    }
}

/// Every run of `cfg` from the data file's state.
///
/// # Errors
/// The data file cannot be read or is not a melt of chains of consecutive beads.
pub fn run(cfg: &Config) -> Result<Outcome, InputError> {
    let melt = load(&cfg.data)?;
    let at_start = melt.measure(
        cfg,
        &DynState::new(melt.q.clone(), melt.v.clone()),
        &mut vec![0; cfg.bin_count()],
    );
    let k = cfg.pressure_index();
    let runs = cfg
        .runs
        .iter()
        .map(|&(method, h)| match method {
            Method::Verlet => sample(
                cfg,
                &melt,
                method,
                h,
                Langevin::new(VelocityVerlet::new(h), cfg.gamma, cfg.kt, cfg.seed),
            ),
            Method::ZssStiff => sample(
                cfg,
                &melt,
                method,
                h,
                Langevin::new(
                    ZhangSkeelStiff::new(cfg.beta, h),
                    cfg.gamma,
                    cfg.kt,
                    cfg.seed,
                ),
            ),
        })
        .collect();
    Ok(Outcome {
        beads: melt.segment.len(),
        bonds: melt.bonds.len(),
        threads: rayon::current_num_threads(),
        start: (at_start[k], at_start[k + 2]),
        runs,
    })
}

pub use super::Estimate;

/// A run against the reference: an [`Estimate`] per observable, and whether every `|z|` is at
/// most 2.
pub fn compare(cfg: &Config, reference: &Run, run: &Run) -> (Vec<Estimate>, bool) {
    super::compare_series(
        &reference.series,
        &run.series,
        cfg.blocks,
        run.failure.is_some(),
    )
}

/// Each observable's small-step limit, by Richardson extrapolation of Verlet's O(h²) bias from
/// the reference and a Verlet run at half its step, `X₀ = X(h/2) − (X(h) − X(h/2))/3`, and the
/// reference's own error against it, floored at two combined standard errors: `(X₀, tolerance)`.
/// `None` without such a run.
pub fn small_step_limit(cfg: &Config, out: &Outcome) -> Option<Vec<(f64, f64)>> {
    let reference = &out.runs[0];
    let half = out.runs.iter().find(|r| {
        r.method == Method::Verlet && r.failure.is_none() && (r.h - 0.5 * reference.h).abs() < 1e-12
    })?;
    (0..cfg.observables().len())
        .map(|k| {
            let (x, e) = reference.estimate(k, cfg.blocks)?;
            let (y, f) = half.estimate(k, cfg.blocks)?;
            let limit = y - (x - y) / 3.0;
            Some((limit, (x - limit).abs().max(2.0 * (e * e + f * f).sqrt())))
        })
        .collect()
}

/// A run's worst error against the small-step limit, in units of the reference's own
/// ([`small_step_limit`]): at most 1 when the run is as accurate as Verlet at LAMMPS's step.
pub fn error_ratio(cfg: &Config, limit: &[(f64, f64)], run: &Run) -> Option<f64> {
    if run.failure.is_some() {
        return None;
    }
    limit
        .iter()
        .enumerate()
        .map(|(k, &(x0, tol))| {
            run.estimate(k, cfg.blocks)
                .map(|(x, _)| (x - x0).abs() / tol)
        })
        .try_fold(0.0_f64, |m, r| r.map(|r| m.max(r)))
}

/// Write `kremer-grest.csv` (every run's estimates), `kremer-grest-bonds.csv` and
/// `kremer-grest.svg` (the bond-length distributions), and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let names = cfg.observables();
    let reference = &out.runs[0];
    let mut header = vec!["method".to_string(), "h".into()];
    for n in &names {
        header.extend([n.clone(), format!("se {n}"), format!("z {n}")]);
    }
    header.extend([
        "seconds per time".into(),
        "speed-up".into(),
        "reproduces".into(),
        "error ratio".into(),
    ]);
    let limit = small_step_limit(cfg, out);
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut csv = Csv::new(&header_refs);
    let mut table_header = vec!["method", "h"];
    table_header.extend(
        names
            .iter()
            .enumerate()
            .filter(|&(k, _)| cfg.shown(k))
            .map(|(_, n)| n.as_str()),
    );
    table_header.extend(["s per τ", "÷ ref", "err ÷ ref's", "status"]);
    let mut table = Table::new(
        format!(
            "mean ± standard error ({} blocks); the first row is the reference",
            cfg.blocks
        ),
        &table_header,
    );
    let mut best: Option<&Run> = None;
    let mut accurate: Option<(&Run, f64)> = None;
    for r in &out.runs {
        let (rows, ok) = compare(cfg, reference, r);
        let ratio = limit.as_deref().and_then(|l| error_ratio(cfg, l, r));
        let speedup = reference.seconds_per_time() / r.seconds_per_time();
        let mut fields = vec![Field::Text(r.method.label()), Field::Num(r.h)];
        let mut cells = vec![r.method.label().to_string(), format!("{}", r.h)];
        for (k, row) in rows.iter().enumerate() {
            let cell = match row {
                Some((m, e, z)) => {
                    fields.extend([Field::Num(*m), Field::Num(*e), Field::Num(*z)]);
                    format!("{m:.5} ± {e:.5} ({z:+.1})")
                }
                None => {
                    fields.extend([Field::Text(""), Field::Text(""), Field::Text("")]);
                    "—".into()
                }
            };
            if cfg.shown(k) {
                cells.push(cell);
            }
        }
        fields.extend([
            Field::Num(r.seconds_per_time()),
            Field::Num(speedup),
            Field::Text(if ok { "true" } else { "false" }),
            ratio.map_or(Field::Text(""), Field::Num),
        ]);
        csv.push(&fields);
        let failed = r.failure.is_some();
        cells.extend([
            format!("{:.2}", r.seconds_per_time()),
            if failed {
                "—".into()
            } else {
                format!("{speedup:.2}")
            },
            ratio.map_or_else(|| "—".into(), |x| format!("{x:.2}")),
            match &r.failure {
                Some(f) => format!("failed: {f}"),
                None if ok => "reproduces".into(),
                None => "differs".into(),
            },
        ]);
        table.push(cells);
        if ok && best.is_none_or(|b| speedup > reference.seconds_per_time() / b.seconds_per_time())
        {
            best = Some(r);
        }
        if ratio.is_some_and(|x| x <= 1.0) && accurate.is_none_or(|(_, s)| speedup > s) {
            accurate = Some((r, speedup));
        }
    }
    let csv_path = dir.join("kremer-grest.csv");
    csv.write(&csv_path)?;

    let (lo, _, width) = cfg.bins;
    let centre = |i: usize| lo + (i as f64 + 0.5) * width;
    let mut bond_header = vec!["b".to_string()];
    bond_header.extend(
        out.runs
            .iter()
            .map(|r| format!("{} h={}", r.method.label(), r.h)),
    );
    let bond_refs: Vec<&str> = bond_header.iter().map(String::as_str).collect();
    let mut bonds = Csv::new(&bond_refs);
    for i in 0..cfg.bin_count() {
        let mut row = vec![Field::Num(centre(i))];
        row.extend(out.runs.iter().map(|r| Field::Num(r.density[i])));
        bonds.push(&row);
    }
    let bonds_path = dir.join("kremer-grest-bonds.csv");
    bonds.write(&bonds_path)?;

    let mut figure = Figure::new(
        format!(
            "Kremer–Grest melt, GLA Langevin (γ = {}, kT = {}): bond lengths and internal distances",
            cfg.gamma, cfg.kt
        ),
        3,
        (620, 420),
    );
    for method in [Method::Verlet, Method::ZssStiff] {
        let mut panel = Panel::new(method.label(), "bond length b (σ)", "probability density")
            .legend(LegendPosition::UpperRight);
        panel = panel.with(Series::new(
            format!("reference, h = {}", reference.h),
            (0..cfg.bin_count())
                .map(|i| (centre(i), reference.density[i]))
                .collect(),
            Style::Dashed,
            0,
        ));
        for (c, r) in out.runs.iter().enumerate().skip(1) {
            if r.method == method && r.failure.is_none() {
                let pts = (0..cfg.bin_count())
                    .map(|i| (centre(i), r.density[i]))
                    .collect();
                panel = panel.with(Series::new(format!("h = {}", r.h), pts, Style::Line, c));
            }
        }
        figure = figure.with(panel);
    }
    let mut internal = Panel::new("internal distances", "bonds apart n", "R²(n)/n (σ²)")
        .scales(Scale::Log, Scale::Linear)
        .legend(LegendPosition::LowerRight);
    for (c, r) in out.runs.iter().enumerate() {
        if r.failure.is_none() {
            let pts = cfg
                .separations
                .iter()
                .enumerate()
                .filter_map(|(j, &n)| r.estimate(2 + j, cfg.blocks).map(|(m, _)| (n as f64, m)))
                .collect();
            let label = format!("{} h = {}", r.method.label(), r.h);
            internal = internal.with(Series::new(label, pts, Style::LineMarkers, c));
        }
    }
    figure = figure.with(internal);
    let svg_path = dir.join("kremer-grest.svg");
    figure.write_svg(&svg_path)?;

    let mut notes = vec![format!(
        "{} beads, {} bonds, {} threads; t = {} per run, burn-in {}, a sample every {}; seconds are the steps' wall time alone (sampling and the skin check excluded); a failed run's seconds are those of the steps it took.",
        out.beads, out.bonds, out.threads, cfg.t_end, cfg.burn_in, cfg.sample_dt
    )];
    notes.push(format!(
        "At the data file's state: virial pressure {:.6}, kinetic temperature Σmv²/(3N) {:.6} (LAMMPS's thermo: its Press is the same (Σmv² + W)/(3V); its Temp divides Σmv² by 3N − 3).",
        out.start.0, out.start.1
    ));
    notes.push(match best {
        Some(b) => format!(
            "Fastest run that reproduces the reference (every observable within 2 combined standard errors): {} at h = {}, time to result {:.2}× the reference's.",
            b.method.label(),
            b.h,
            reference.seconds_per_time() / b.seconds_per_time()
        ),
        None => "No run reproduces the reference.".into(),
    });
    if let Some(l) = &limit {
        notes.push(format!(
            "Small-step limits (Richardson from Verlet at h = {} and {}): {}. `err ÷ ref's` is a run's worst error against them in units of the reference's own (floored at 2 standard errors).",
            reference.h,
            reference.h / 2.0,
            names
                .iter()
                .zip(l)
                .map(|(n, (x, t))| format!("{n} {x:.5} (reference off by {t:.5})"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        notes.push(match accurate {
            Some((r, s)) => format!(
                "Fastest run at least as accurate as the reference (err ÷ ref's ≤ 1): {} at h = {}, time to result {s:.2}× the reference's.",
                r.method.label(),
                r.h
            ),
            None => "No run is as accurate as the reference.".into(),
        });
    }
    Ok(Report {
        experiment: "kremer-grest".into(),
        setup: format!(
            "LAMMPS's in.chain melt from {}: GLA Langevin (γ = {}, kT = {}) around velocity Verlet and around Z&Ss-stiff (β = {}; FENE bonds stiff, nonbonded WCA explicit), every run from the file's state with noise seed {}.",
            cfg.data.display(),
            cfg.gamma,
            cfg.kt,
            cfg.beta,
            cfg.seed
        ),
        tables: vec![table],
        notes,
        files: vec![csv_path, bonds_path, svg_path],
    })
}
