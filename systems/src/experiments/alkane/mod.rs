//! `zs reproduce alkane`: what each treatment of the bonds allows on a molecular liquid, and the
//! same liquid sampled by LAMMPS beside it.
//!
//! Liquid butane in the TraPPE united-atom force field ([`crate::alkane`], LAMMPS `real` units),
//! built by [`crate::alkane::Trappe::liquid`] and equilibrated once under GLA Langevin dynamics
//! (Tao & Owhadi eq. 27) around velocity Verlet at 1 fs. From that state, three treatments of
//! the bonds, each under the same GLA at the same temperature and friction:
//! - velocity Verlet on the flexible force field (harmonic bonds; the reference at 1 fs);
//! - RATTLE with every bond held at 1.54 Å (TraPPE's own model; [`AlkaneRigidBonds`]);
//! - Z&Ss-stiff (Integrator 5, eq. 19) with the bonds and the angles as the stiff part `V1`,
//!   solved implicitly along the chains, torsions and pairs explicit ([`AlkaneStiff`]);
//! - Z&Ss-stiff with the bonds of [`AlkaneRigidBonds`] held by the penalty `½ω²|g|²` (eq. 4)
//!   instead of constraints, the penalty as the stiff part: the Z&S family's answer to SHAKE.
//!
//! Measured per run, on a fixed time grid: the torsion-angle distribution (trans `|φ| > 120°`,
//! gauche±), the end-to-end distance, the mean bond angle and the kinetic temperature (per
//! degree of freedom left by the constraints), with standard errors of block means; a run
//! *reproduces* the reference when each is within two combined standard errors of Verlet's at
//! 1 fs. Separately, the largest step each treatment allows: the energy error
//! `max |E − E0| / KE0` of NVE runs of 400 fs from the equilibrated state, step by step.
//!
//! When a LAMMPS binary is at hand (`--lammps BIN`, default `lmp`), the same equilibrated state
//! goes to LAMMPS as a data file with the same force field (`fix nve` + `fix langevin` at the same
//! relaxation rate, 1 fs) and its trajectory is measured by the same code: the two engines side
//! by side. LAMMPS's own SHAKE cannot hold a chain's bonds ("Shake clusters are connected"), so
//! LAMMPS runs the flexible model only.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use zs_runtime::lammps::DataFile;
use zs_runtime::{
    ConstrainedModel, DynState, Langevin, Model, Rattle, ShakeSolver, Stepper, VelocityVerlet,
    ZhangSkeelStiff,
};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{
    compare_series, guarded_step, largest_move, whole_steps, Csv, Field, Report, SampledRun, Table,
};
use crate::alkane::{Alkane, AlkaneRigidBonds, AlkaneStiff, Trappe, KB, REAL_ACCELERATION, SKIN};

mod lammps;
mod report;

use lammps::lammps;
pub use report::write;

/// A treatment of the bonds and its integrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Velocity Verlet, flexible bonds.
    Verlet,
    /// RATTLE, bonds held at `r0`.
    Rattle,
    /// Z&Ss-stiff, bonds and angles stiff.
    ZssStiff,
    /// Z&Ss-stiff on the bonds held by the penalty `½ω²|g|²` (Tao & Owhadi eq. 4), the
    /// penalty as the stiff part.
    Penalty,
    /// LAMMPS (velocity Verlet, flexible bonds, `fix langevin`).
    Lammps,
}

impl Method {
    /// Label in tables and figures.
    pub fn label(self) -> &'static str {
        match self {
            Method::Verlet => "Verlet, flexible",
            Method::Rattle => "RATTLE, rigid bonds",
            Method::ZssStiff => "Z&Ss-stiff, bonds + angles stiff",
            Method::Penalty => "Z&Ss-stiff, bonds by the penalty",
            Method::Lammps => "LAMMPS, flexible",
        }
    }
}

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Molecules of the liquid.
    pub molecules: usize,
    /// Sites per molecule (4: butane).
    pub length: usize,
    /// Density (g/cm³).
    pub density: f64,
    /// Temperature (K) of the start and of the thermostat.
    pub temperature: f64,
    /// Seed of the builder; the noise uses `seed + 1`.
    pub seed: u64,
    /// GLA friction γ (kcal/mol·fs/Å²): the relaxation rate γ/m.
    pub gamma: f64,
    /// ω of the penalty that holds the bonds in [`Method::Penalty`] (kcal/mol/Å² is ω²).
    pub omega: f64,
    /// Equilibration (fs), once, before every run.
    pub equil: f64,
    /// Sampled time of each run (fs).
    pub prod: f64,
    /// Time between samples (fs).
    pub sample_dt: f64,
    /// Blocks of the error bars.
    pub blocks: usize,
    /// The runs; the first is the reference.
    pub runs: Vec<(Method, f64)>,
    /// Steps of the NVE energy-error scan (fs).
    pub scan: Vec<f64>,
    /// Length of each NVE run (fs).
    pub scan_time: f64,
    /// Bins of the torsion histogram over (−180°, 180°].
    pub bins: usize,
    /// The LAMMPS binary (`None`: zs alone).
    pub lammps: Option<PathBuf>,
}

impl Config {
    /// 250 butanes (1 000 sites) at 0.58 g/cm³ and 272 K; friction 335 kcal/mol·fs/Å² (a
    /// relaxation rate of 0.01/fs for CH2, LAMMPS's `fix langevin … 100`); 30 ps of
    /// equilibration from the all-trans start (the trans fraction relaxes over ~10 ps), then
    /// 40 ps per run, a sample every 100 fs, 5 blocks. Runs: Verlet at 1 fs
    /// (reference) and 2 fs, RATTLE at 2, 4 and 5 fs, Z&Ss-stiff at 2 and 4 fs (bonds and
    /// angles stiff; and the bonds held by the penalty with ω = 100 — ω² = 10 000 kcal/mol/Å²,
    /// 11 times the flexible bond's `2K`, a bond period of 8 fs: at ω = 300 (2.7 fs) the GLA
    /// around Z&Ss-stiff heated a liquid to 10⁴ K within 11 steps of 4 fs, the penalty being
    /// quadratic in `g`, not in the coordinates), LAMMPS at 1 fs;
    /// the NVE scan at 1, 2, 4, 5 and 6 fs over 420 fs (a whole number of each).
    pub fn liquid_butane(lammps: Option<PathBuf>) -> Self {
        let mut runs = vec![(Method::Verlet, 1.0), (Method::Verlet, 2.0)];
        runs.extend([2.0, 4.0, 5.0].map(|h| (Method::Rattle, h)));
        runs.extend([2.0, 4.0].map(|h| (Method::ZssStiff, h)));
        runs.extend([2.0, 4.0].map(|h| (Method::Penalty, h)));
        if lammps.is_some() {
            runs.push((Method::Lammps, 1.0));
        }
        Self {
            molecules: 250,
            length: 4,
            density: 0.58,
            temperature: 272.0,
            seed: 11,
            gamma: 335.0,
            omega: 100.0,
            equil: 30_000.0,
            prod: 40_000.0,
            sample_dt: 100.0,
            blocks: 5,
            runs,
            scan: vec![1.0, 2.0, 4.0, 5.0, 6.0],
            scan_time: 420.0,
            bins: 36,
            lammps,
        }
    }

    /// The same liquid, runs of a few dozen steps: for tests.
    pub fn quick() -> Self {
        Self {
            equil: 20.0,
            prod: 40.0,
            sample_dt: 4.0,
            blocks: 2,
            runs: vec![
                (Method::Verlet, 1.0),
                (Method::Rattle, 4.0),
                (Method::ZssStiff, 2.0),
                (Method::Penalty, 4.0),
            ],
            scan: vec![1.0, 4.0],
            scan_time: 8.0,
            ..Self::liquid_butane(None)
        }
    }

    /// Names of the observables, in the order of [`Run::series`].
    pub fn observables() -> [&'static str; 6] {
        [
            "trans",
            "gauche+",
            "gauche−",
            "R_ee (Å)",
            "θ (°)",
            "T_kin (K)",
        ]
    }

    /// Every time a whole number of its steps, before anything runs.
    ///
    /// # Errors
    /// The first time that is not.
    pub fn check(&self) -> Result<(), SetupError> {
        let runs = self
            .runs
            .iter()
            .flat_map(|&(_, h)| [(h, self.prod), (h, self.sample_dt)]);
        let scan = self.scan.iter().map(|&h| (h, self.scan_time));
        for (h, t) in runs.chain(scan).chain([(1.0, self.equil)]) {
            let n = t / h;
            if !(n >= 1.0 && (n - n.round()).abs() < 1e-9 * n) {
                return Err(SetupError(format!(
                    "{t} fs is not a whole number of steps of {h} fs"
                )));
            }
        }
        Ok(())
    }

    /// The kT of the thermostat (kcal/mol).
    pub fn kt(&self) -> f64 {
        KB * self.temperature
    }
}

/// One run: its observables in [`Config::observables`] order, its histogram the torsion-angle
/// probability density per degree, per bin; time in fs (LAMMPS's seconds: its loop time).
pub type Run = SampledRun<Method>;

/// One run of the NVE scan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanPoint {
    /// Its method.
    pub method: Method,
    /// Its step (fs).
    pub h: f64,
    /// `max |E − E0| / KE0` after the first step; `None` if a step failed or left the skin.
    pub error: Option<f64>,
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Sites of the liquid.
    pub sites: usize,
    /// Threads of rayon's pool.
    pub threads: usize,
    /// The runs, in [`Config::runs`] order (LAMMPS's missing when it could not run).
    pub runs: Vec<Run>,
    /// The NVE scan.
    pub scan: Vec<ScanPoint>,
    /// Why LAMMPS did not run, when it was asked for.
    pub lammps_note: Option<String>,
}

/// What the observables need of the liquid: its torsions, angles, chain ends and masses.
struct Shape {
    dihedrals: Vec<[usize; 4]>,
    angles: Vec<[usize; 3]>,
    ends: Vec<[usize; 2]>,
    /// Per site, g/mol.
    masses: Vec<f64>,
    bonds: Vec<[usize; 2]>,
    cell: [f64; 3],
}

impl Shape {
    fn of(data: &DataFile) -> Self {
        let mut ends: Vec<[usize; 2]> = Vec::new();
        for (i, &m) in data.molecules.iter().enumerate() {
            match ends.last_mut() {
                Some(e) if data.molecules[e[0]] == m => e[1] = i,
                _ => ends.push([i, i]),
            }
        }
        Self {
            dihedrals: data.dihedrals.iter().map(|d| d.atoms).collect(),
            angles: data.angles.iter().map(|a| a.atoms).collect(),
            ends,
            masses: data.types.iter().map(|&t| data.masses[t - 1]).collect(),
            bonds: data.bonds.iter().map(|b| b.atoms).collect(),
            cell: data.box_lengths(),
        }
    }

    /// `x_j − x_i`, nearest image.
    fn d(&self, q: &[f64], i: usize, j: usize) -> [f64; 3] {
        core::array::from_fn(|a| {
            let d = q[3 * j + a] - q[3 * i + a];
            d - self.cell[a] * (d / self.cell[a]).round()
        })
    }

    /// Every torsion angle (degrees, in (−180°, 180°], trans at 180°).
    fn torsions<'a>(&'a self, q: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
        self.dihedrals.iter().map(move |&[a, b, c, d]| {
            let (b1, b2, b3) = (self.d(q, a, b), self.d(q, b, c), self.d(q, c, d));
            let (m, n) = (cross(b1, b2), cross(b2, b3));
            let y = dot(b2, b2).sqrt() * dot(b1, n);
            y.atan2(dot(m, n)).to_degrees()
        })
    }

    /// The observables of [`Config::observables`] at `(q, v)` with `dof` degrees of freedom;
    /// the torsions into `counts`. With fewer degrees of freedom than coordinates (bonds held),
    /// the kinetic temperature is that of `v` made tangent to the bonds: a GLA step ends with
    /// the Ornstein–Uhlenbeck noise in every direction, and the next constrained step removes
    /// its part along the bonds (Tao & Owhadi eq. 27 with the constraints: the projected noise is
    /// the Ornstein–Uhlenbeck process of the tangent velocities, which is what is sampled).
    fn measure(&self, q: &[f64], v: &[f64], dof: usize, counts: &mut [u64]) -> Vec<f64> {
        let tangent;
        let v = if dof < v.len() {
            let mut t = v.to_vec();
            crate::alkane::tangent_velocities(&self.bonds, &self.masses, q, &mut t);
            tangent = t;
            &tangent[..]
        } else {
            v
        };
        let (mut trans, mut plus, mut minus) = (0usize, 0usize, 0usize);
        let width = 360.0 / counts.len() as f64;
        for phi in self.torsions(q) {
            trans += usize::from(phi.abs() > 120.0);
            plus += usize::from(phi > 0.0 && phi <= 120.0);
            minus += usize::from((-120.0..0.0).contains(&phi));
            let bin = ((phi + 180.0) / width).floor() as usize;
            counts[bin.min(counts.len() - 1)] += 1;
        }
        let nt = self.dihedrals.len().max(1) as f64;
        let ree = self
            .ends
            .iter()
            .map(|&[i, j]| dot(self.d(q, i, j), self.d(q, i, j)).sqrt())
            .sum::<f64>()
            / self.ends.len().max(1) as f64;
        let theta = self
            .angles
            .iter()
            .map(|&[a, b, c]| {
                let (u, w) = (self.d(q, b, a), self.d(q, b, c));
                (dot(u, w) / (dot(u, u) * dot(w, w)).sqrt())
                    .clamp(-1.0, 1.0)
                    .acos()
                    .to_degrees()
            })
            .sum::<f64>()
            / self.angles.len().max(1) as f64;
        let mv2: f64 = self
            .masses
            .iter()
            .zip(v.chunks_exact(3))
            .map(|(m, u)| m * dot([u[0], u[1], u[2]], [u[0], u[1], u[2]]))
            .sum::<f64>()
            / REAL_ACCELERATION;
        vec![
            trans as f64 / nt,
            plus as f64 / nt,
            minus as f64 / nt,
            ree,
            theta,
            mv2 / (dof.max(1) as f64 * KB),
        ]
    }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Why the experiment cannot run.
#[derive(Debug, thiserror::Error)]
#[error("alkane: {0}")]
pub struct SetupError(pub String);

/// The state `(q, v)` written into a copy of `data`.
fn with_state(data: &DataFile, q: &[f64], v: &[f64]) -> DataFile {
    let mut d = data.clone();
    for (i, (p, u)) in d.positions.iter_mut().zip(&mut d.velocities).enumerate() {
        p.copy_from_slice(&q[3 * i..3 * i + 3]);
        u.copy_from_slice(&v[3 * i..3 * i + 3]);
    }
    d.has_velocities = true;
    d
}

fn flat(x: &[[f64; 3]]) -> Vec<f64> {
    x.iter().flatten().copied().collect()
}

/// A GLA run of `stepper` on `system` from `(q, v)`: `prod` fs, sampled every `sample_dt`
/// (or, for the equilibration, not at all: `shape = None`). Stops at a failed step or a site
/// that moved more than the skin in one step (the neighbour list would miss pairs).
#[allow(clippy::too_many_arguments)]
fn sample<M: Model<Vec<f64>>, S: Stepper<M, Vec<f64>>>(
    cfg: &Config,
    shape: Option<&Shape>,
    system: &M,
    state: &mut DynState,
    (method, h, dof): (Method, f64, usize),
    t: f64,
    mut stepper: S,
) -> Run {
    let mut series = vec![Vec::new(); Config::observables().len()];
    let mut counts = vec![0u64; cfg.bins];
    let mut before = state.q.clone();
    let (steps, every) = (whole_steps(t, h), whole_steps(cfg.sample_dt, h));
    let (mut seconds, mut done, mut failure) = (0.0, 0, None);
    for k in 1..=steps {
        let guard = (&mut before[..], SKIN);
        if let Err(f) = guarded_step(&mut stepper, system, state, guard, k, &mut seconds) {
            failure = Some(f);
            break;
        }
        done = k;
        if let Some(shape) = shape.filter(|_| k % every == 0) {
            for (x, o) in series
                .iter_mut()
                .zip(shape.measure(&state.q, &state.v, dof, &mut counts))
            {
                x.push(o);
            }
        }
    }
    Run {
        method,
        h,
        steps: done,
        seconds,
        failure,
        series,
        density: density(&counts),
    }
}

/// Counts as a probability density per degree.
fn density(counts: &[u64]) -> Vec<f64> {
    let total = counts.iter().sum::<u64>().max(1) as f64;
    let width = 360.0 / counts.len() as f64;
    counts.iter().map(|&c| c as f64 / (total * width)).collect()
}

/// `max |E − E0| / ke0` of an NVE run of `t` fs from `state`, E0 after the first step (RATTLE's
/// first step removes the velocities along the bonds); `None` on a failed step.
fn nve_error<M: Model<Vec<f64>>, S: Stepper<M, Vec<f64>>>(
    system: &M,
    mut state: DynState,
    h: f64,
    t: f64,
    ke0: f64,
    mut stepper: S,
) -> Option<f64> {
    let energy = |s: &DynState| system.kinetic_energy(&s.v) + system.potential_at(&s.q);
    let mut before = state.q.clone();
    let mut step = |s: &mut DynState| {
        before.copy_from_slice(&s.q);
        stepper.step(system, s).is_ok()
            && largest_move(&before, &s.q) <= SKIN
            && s.q.iter().chain(&s.v).all(|x| x.is_finite())
    };
    if !step(&mut state) {
        return None;
    }
    let e0 = energy(&state);
    let mut worst = 0.0f64;
    for _ in 1..whole_steps(t, h) {
        if !step(&mut state) {
            return None;
        }
        worst = worst.max((energy(&state) - e0).abs());
    }
    Some(worst / ke0)
}

/// The three systems of one liquid.
struct Liquid {
    flexible: zs_runtime::assembly::Assembled<Alkane, 3>,
    rigid: zs_runtime::assembly::Assembled<AlkaneRigidBonds, 3>,
    stiff: zs_runtime::assembly::Assembled<AlkaneStiff, 3>,
    data: DataFile,
}

impl Liquid {
    fn build(cfg: &Config) -> Result<Self, SetupError> {
        let fail = |e: crate::alkane::AlkaneError| SetupError(e.to_string());
        let (flexible, _, _, data) = Alkane::trappe()
            .liquid(
                cfg.molecules,
                cfg.length,
                cfg.density,
                cfg.temperature,
                cfg.seed,
            )
            .map_err(fail)?;
        let (rigid, ..) = AlkaneRigidBonds::trappe().from_data(&data).map_err(fail)?;
        let (stiff, ..) = AlkaneStiff::trappe().from_data(&data).map_err(fail)?;
        // Both cores for the 1 000-site liquid (below the size where the default turns it on);
        // bit-identical whatever the thread count.
        Ok(Self {
            flexible: flexible.with_parallel(true),
            rigid: rigid.with_parallel(true),
            stiff: stiff.with_parallel(true),
            data,
        })
    }

    /// The start of `method`'s runs from the equilibrated state `eq`: on the bonds for RATTLE and
    /// the penalty.
    fn start(&self, method: Method, eq: &DataFile) -> DynState {
        let mut d = eq.clone();
        if matches!(method, Method::Rattle | Method::Penalty) {
            Trappe::<crate::alkane::variant::RigidBonds>::trappe().hold_bonds(&mut d);
        }
        DynState::new(flat(&d.positions), flat(&d.velocities))
    }

    /// Degrees of freedom of `method`'s dynamics.
    fn dof(&self, method: Method) -> usize {
        let n = 3 * self.data.len();
        match method {
            Method::Rattle => n - self.rigid.constraint_count(),
            _ => n,
        }
    }
}

/// Every run and the scan of `cfg`.
///
/// # Errors
/// The liquid cannot be built (see [`crate::alkane::Trappe::liquid`]), or the equilibration
/// failed.
pub fn run(cfg: &Config) -> Result<Outcome, SetupError> {
    cfg.check()?;
    let liquid = Liquid::build(cfg)?;
    let shape = Shape::of(&liquid.data);
    let (kt, seed) = (cfg.kt(), cfg.seed + 1);
    let mut s = DynState::new(flat(&liquid.data.positions), flat(&liquid.data.velocities));
    let n = liquid.data.len();
    let eq = sample(
        cfg,
        None,
        &liquid.flexible,
        &mut s,
        (Method::Verlet, 1.0, 3 * n),
        cfg.equil,
        Langevin::new(VelocityVerlet::new(1.0), cfg.gamma, kt, seed),
    );
    if let Some(f) = eq.failure {
        return Err(SetupError(format!("the equilibration failed: {f}")));
    }
    let eq = with_state(&liquid.data, &s.q, &s.v);
    let mut runs = Vec::new();
    let mut lammps_note = None;
    for &(method, h) in &cfg.runs {
        let mut s = liquid.start(method, &eq);
        let at = (method, h, liquid.dof(method));
        let run = match method {
            Method::Verlet => sample(
                cfg,
                Some(&shape),
                &liquid.flexible,
                &mut s,
                at,
                cfg.prod,
                Langevin::new(VelocityVerlet::new(h), cfg.gamma, kt, seed),
            ),
            Method::Rattle => sample(
                cfg,
                Some(&shape),
                &liquid.rigid,
                &mut s,
                at,
                cfg.prod,
                Langevin::new(
                    Rattle::new(h).with_solver(ShakeSolver::Newton),
                    cfg.gamma,
                    kt,
                    seed,
                ),
            ),
            Method::ZssStiff => sample(
                cfg,
                Some(&shape),
                &liquid.stiff,
                &mut s,
                at,
                cfg.prod,
                Langevin::new(ZhangSkeelStiff::new(0.25, h), cfg.gamma, kt, seed),
            ),
            Method::Penalty => sample(
                cfg,
                Some(&shape),
                &liquid.rigid.penalized(cfg.omega),
                &mut s,
                at,
                cfg.prod,
                Langevin::new(ZhangSkeelStiff::new(0.25, h), cfg.gamma, kt, seed),
            ),
            Method::Lammps => {
                let bin = cfg.lammps.clone().unwrap_or_else(|| "lmp".into());
                match lammps(cfg, &bin, &eq, &shape, liquid.dof(method)) {
                    Ok(r) => r,
                    Err(e) => {
                        lammps_note = Some(e);
                        continue;
                    }
                }
            }
        };
        runs.push(run);
    }
    let ke0 = liquid.flexible.kinetic_energy(&flat(&eq.velocities));
    let mut scan = Vec::new();
    for &h in &cfg.scan {
        let t = cfg.scan_time;
        for (method, error) in [
            (
                Method::Verlet,
                nve_error(
                    &liquid.flexible,
                    liquid.start(Method::Verlet, &eq),
                    h,
                    t,
                    ke0,
                    VelocityVerlet::new(h),
                ),
            ),
            (
                Method::Rattle,
                nve_error(
                    &liquid.rigid,
                    liquid.start(Method::Rattle, &eq),
                    h,
                    t,
                    ke0,
                    Rattle::new(h).with_solver(ShakeSolver::Newton),
                ),
            ),
            (
                Method::ZssStiff,
                nve_error(
                    &liquid.stiff,
                    liquid.start(Method::ZssStiff, &eq),
                    h,
                    t,
                    ke0,
                    ZhangSkeelStiff::new(0.25, h),
                ),
            ),
            (
                Method::Penalty,
                nve_error(
                    &liquid.rigid.penalized(cfg.omega),
                    liquid.start(Method::Penalty, &eq),
                    h,
                    t,
                    ke0,
                    ZhangSkeelStiff::new(0.25, h),
                ),
            ),
        ] {
            scan.push(ScanPoint { method, h, error });
        }
    }
    Ok(Outcome {
        sites: n,
        threads: rayon::current_num_threads(),
        runs,
        scan,
        lammps_note,
    })
}

/// The largest step of `method` in the scan whose energy error is at most `bound`.
pub fn largest_step(out: &Outcome, method: Method, bound: f64) -> Option<f64> {
    out.scan
        .iter()
        .filter(|p| p.method == method && p.error.is_some_and(|e| e <= bound))
        .map(|p| p.h)
        .fold(None, |m: Option<f64>, h| Some(m.map_or(h, |m| m.max(h))))
}
