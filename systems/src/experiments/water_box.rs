//! Beyond the papers: a periodic box of rigid SPC/E water at 300 K (`zs reproduce
//! water-box`). Its O–O radial distribution against LAMMPS's reference for the same file
//! (`examples/rdf-adf/spce-rdf.dat.ref`: 1 000 steps of `fix nvt` after 500, cut at 12 Å,
//! `pppm 1e-6`, 10 samples), and its potential energy per molecule against Berendsen, Grigera
//! & Straatsma (1987): −41.5 kJ/mol once the self-polarization energy of 5.22 kJ/mol is added
//! to the simulated one.
//!
//! SETTLE (Miyamoto & Kollman 1992) at h = 2 fs inside the Geometric Langevin Algorithm at 300
//! K, smooth PME at the default tolerance, Lennard-Jones and real-space Coulomb cut at 9.8 Å
//! without shift or tail correction; a burn-in, then a sample every 0.1 ps: the O–O pairs
//! binned as LAMMPS's `compute rdf 100` (bins of 0.12 Å to 12 Å), the potential energy and the
//! kinetic temperature of the molecules' rigid motions (6 degrees of freedom per molecule: the
//! thermostat does not keep the centre of mass's momentum). The GLA's Ornstein–Uhlenbeck step
//! comes after SETTLE's, so the velocities a step ends with carry noise along the bonds, which
//! the next step's SETTLE removes: counted, it reads about 3 % too hot; the rigid motions —
//! each molecule's centre-of-mass velocity and its angular velocity `ω = I⁻¹L` — leave it out. The GLA's friction acts on momenta (`dp = −γ M⁻¹ p dt`), so
//! one γ relaxes each atom's velocity at `γ / m`: γ is set for 1 ps⁻¹ on the oxygens (the
//! hydrogens' 16 ps⁻¹). The data file's velocities are the start (none in `data.spce`: 0 K).

use std::io;
use std::path::{Path, PathBuf};

use zs_runtime::lammps::DataFile;
use zs_runtime::long_range::WithLongRange;
use zs_runtime::{DynState, Langevin, Model, Settle, Stepper, ZhangSkeelStiff};

use super::kremer_grest::InputError;
use super::{block_estimate, guarded_step, sci, whole_steps, Csv, Field, Report, Table};
use crate::water_box::{r_hh, SpcE, WaterBox, WaterBoxOptions, COULOMB, MVV2E, R_OH, SKIN};

/// LAMMPS's water box (Debian package `lammps-examples`).
pub const LAMMPS_DATA: &str = "/usr/share/lammps/examples/rdf-adf/data.spce";
/// LAMMPS's radial distributions of that box, beside it.
pub const LAMMPS_RDF: &str = "/usr/share/lammps/examples/rdf-adf/spce-rdf.dat.ref";
/// Boltzmann's constant in kcal/(mol K).
const KB: f64 = 0.001_987_204_1;
/// kcal → kJ.
const KJ: f64 = 4.184;
/// SPC/E's self-polarization energy (Berendsen et al. 1987), kJ/mol.
const POLARIZATION: f64 = 5.22;
/// Berendsen et al.'s potential energy per molecule with it, kJ/mol.
const PUBLISHED: f64 = -41.5;
/// Berendsen et al.'s self-diffusion coefficient, 10⁻⁵ cm²/s.
const DIFFUSION: f64 = 2.5;

/// How the molecules are held rigid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rigid {
    /// SETTLE (Miyamoto & Kollman 1992): each molecule's three distances exact.
    Settle,
    /// The penalty `½ω²|g|²` on the three distances, stepped by Z&Ss-stiff (Zhang & Skeel,
    /// Integrator 5, eq. 19) with parameter `beta`.
    Penalty {
        /// The penalty's ω, in (kcal/mol)^½/Å: its energy `½ω²g²` in kcal/mol for a
        /// distance off by `g` Å.
        omega: f64,
        /// Z&S's β.
        beta: f64,
    },
}

impl Rigid {
    /// In words, for a report.
    pub fn describe(&self) -> String {
        match self {
            Rigid::Settle => "SETTLE".into(),
            Rigid::Penalty { omega, beta } => {
                format!(
                    "the penalty ½ω²|g|² (ω = {omega} (kcal/mol)^½/Å, an O–H stretch of period {:.1} fs) under Z&Ss-stiff (β = {beta})",
                    oh_period(*omega)
                )
            }
        }
    }
}

/// The period (fs) of an O–H distance held by the penalty `½ω²g²` alone: `2π √μ / ω` with
/// `μ` the O–H pair's reduced mass (kcal·fs²/(mol·Å²)). SPC/E's own flexible O–H bond, `K =
/// 1000` kcal/mol/Å² without ½, is ω = √(2K) ≈ 44.7: 6.7 fs.
pub fn oh_period(omega: f64) -> f64 {
    let field = SpcE::new(1.0, 0.0);
    let (o, h) = (field.mass[0], field.mass[1]);
    2.0 * std::f64::consts::PI * (o * h / (o + h) * MVV2E).sqrt() / omega
}

/// The run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The data file.
    pub data: PathBuf,
    /// LAMMPS's RDF file, when present.
    pub reference: PathBuf,
    /// The box's cutoff, reciprocal sum and rigid water.
    pub options: WaterBoxOptions,
    /// Step (fs).
    pub h: f64,
    /// Length of the run (fs).
    pub t_end: f64,
    /// Time before the first sample (fs).
    pub burn_in: f64,
    /// Time between samples (fs).
    pub sample_dt: f64,
    /// The oxygens' velocity relaxation rate under the Langevin friction (1/fs).
    pub rate: f64,
    /// Temperature (K).
    pub temperature: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// RDF bins (LAMMPS's: 100 to 12 Å).
    pub bins: usize,
    /// RDF range (Å).
    pub r_max: f64,
    /// Block means for the error bars.
    pub blocks: usize,
    /// The rigid molecules' stepper.
    pub rigid: Rigid,
    /// The lags (ps) over which the oxygens' mean square displacement is fitted by `6Dτ + c`.
    pub diffusion_fit: (f64, f64),
}

impl Config {
    /// 100 ps at 300 K from `data`, the first 10 ps a burn-in.
    pub fn lammps(data: PathBuf) -> Self {
        Self {
            data,
            reference: LAMMPS_RDF.into(),
            options: WaterBoxOptions::default(),
            h: 2.0,
            t_end: 100_000.0,
            burn_in: 10_000.0,
            sample_dt: 100.0,
            rate: 0.001,
            temperature: 300.0,
            seed: 1,
            bins: 100,
            r_max: 12.0,
            blocks: 10,
            rigid: Rigid::Settle,
            diffusion_fit: (0.5, 2.0),
        }
    }
}

/// What the run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Molecules.
    pub molecules: usize,
    /// Steps done, and their wall time (s).
    pub steps: u64,
    /// Wall time of the steps (s).
    pub seconds: f64,
    /// Why it stopped early, if it did.
    pub failure: Option<String>,
    /// g_OO per bin.
    pub rdf: Vec<f64>,
    /// Per sample: potential energy per molecule (kJ/mol) and temperature (K).
    pub energy: Vec<f64>,
    /// Per sample, the kinetic temperature (K).
    pub temperature: Vec<f64>,
    /// LAMMPS's `(r, g_OO)` per bin, when its file was read.
    pub reference: Option<Vec<(f64, f64)>>,
    /// Per block of samples, the oxygens' self-diffusion coefficient (10⁻⁵ cm²/s).
    pub diffusion: Vec<f64>,
    /// The largest deviation of a molecule's distance from its rigid value at a sample (Å).
    pub deviation: f64,
}

/// LAMMPS's `fix ave/time … mode vector` file of `compute rdf`: the first block's `(r, g_11)`.
fn read_reference(path: &Path) -> Option<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let rows: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .skip_while(|f| f.len() != 2)
        .skip(1)
        .take_while(|f| f.len() >= 4)
        .filter_map(|f| Some((f[1].parse().ok()?, f[2].parse().ok()?)))
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// The O–O pairs of `q` within `r_max`, nearest images in a box of `sides`, into `counts`
/// (each pair twice, once from each end, as LAMMPS counts them).
fn bin_pairs(q: &[f64], oxygens: &[usize], sides: [f64; 3], cfg: &Config, counts: &mut [u64]) {
    let width = cfg.r_max / cfg.bins as f64;
    for (k, &i) in oxygens.iter().enumerate() {
        for &j in &oxygens[k + 1..] {
            let mut r2 = 0.0;
            for a in 0..3 {
                let d = q[3 * j + a] - q[3 * i + a];
                let d = d - sides[a] * (d / sides[a]).round();
                r2 += d * d;
            }
            let bin = (r2.sqrt() / width) as usize;
            if bin < cfg.bins {
                counts[bin] += 2;
            }
        }
    }
}

/// The kinetic energy of the molecules' rigid motions, `½ M |v_cm|² + ½ ω·L` with `I ω = L`
/// about each centre of mass (`masses` of O, H, H).
pub fn rigid_kinetic(q: &[f64], v: &[f64], molecules: &[[u32; 3]], masses: [f64; 3]) -> f64 {
    let total: f64 = masses.iter().sum();
    let mut ke = 0.0;
    for m in molecules {
        let at = |x: &[f64], k: usize| -> [f64; 3] {
            let b = 3 * m[k] as usize;
            [x[b], x[b + 1], x[b + 2]]
        };
        let (mut xc, mut vc) = ([0.0; 3], [0.0; 3]);
        for (k, &mk) in masses.iter().enumerate() {
            let (x, u) = (at(q, k), at(v, k));
            for a in 0..3 {
                xc[a] += mk * x[a] / total;
                vc[a] += mk * u[a] / total;
            }
        }
        let (mut l, mut inertia) = ([0.0; 3], [[0.0; 3]; 3]);
        for (k, &mk) in masses.iter().enumerate() {
            let (x, u) = (at(q, k), at(v, k));
            let r: [f64; 3] = core::array::from_fn(|a| x[a] - xc[a]);
            let d: [f64; 3] = core::array::from_fn(|a| u[a] - vc[a]);
            let rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
            for a in 0..3 {
                let (b, c) = ((a + 1) % 3, (a + 2) % 3);
                l[a] += mk * (r[b] * d[c] - r[c] * d[b]);
                for (e, row) in inertia[a].iter_mut().enumerate() {
                    let delta = if a == e { rr } else { 0.0 };
                    *row += mk * (delta - r[a] * r[e]);
                }
            }
        }
        // The inertia tensor is positive definite for any molecule that is not a line (a line,
        // which SETTLE never holds, would count no spin).
        let inertia = nalgebra::Matrix3::from_fn(|a, b| inertia[a][b]);
        let omega = inertia
            .cholesky()
            .map_or([0.0; 3], |c| c.solve(&nalgebra::Vector3::from(l)).into());
        let spin: f64 = (0..3).map(|a| omega[a] * l[a]).sum();
        ke += 0.5 * (total * (vc[0] * vc[0] + vc[1] * vc[1] + vc[2] * vc[2]) + spin);
    }
    ke
}

/// The GLA's γ for `cfg.rate` on the oxygens (masses in kcal·fs²/(mol·Å²)).
fn gamma(cfg: &Config) -> f64 {
    cfg.rate * SpcE::new(cfg.options.rc, 0.0).mass[0] * MVV2E
}

/// The run of `cfg`.
///
/// # Errors
/// The data file cannot be read or is not SPC/E water.
pub fn run(cfg: &Config) -> Result<Outcome, InputError> {
    let fail = |message: String| InputError {
        path: cfg.data.display().to_string(),
        message,
    };
    let data = DataFile::read(&cfg.data).map_err(|e| fail(e.to_string()))?;
    let water = WaterBox::from_data_with(&data, &cfg.options).map_err(|e| fail(e.to_string()))?;
    let molecules: Vec<[u32; 3]> = data
        .angles
        .iter()
        .map(|a| [a.atoms[1], a.atoms[0], a.atoms[2]].map(|b| b as u32))
        .collect();
    let oxygens: Vec<usize> = molecules.iter().map(|m| m[0] as usize).collect();
    let sides = data.box_lengths();
    let model = water.model();
    let kt = KB * cfg.temperature;
    let field = SpcE::new(cfg.options.rc, 0.0);
    let masses = [0, 1, 1].map(|k| field.mass[k] * MVV2E);
    let mut sampled = Sampled::default();
    let mut s = DynState::new(water.q.clone(), water.v.clone());
    let on = Run {
        cfg,
        model: &model,
        molecules: &molecules,
        oxygens: &oxygens,
        sides,
        masses,
    };
    match cfg.rigid {
        Rigid::Settle => {
            let settle = Settle::new(cfg.h, molecules.clone(), R_OH, r_hh());
            let mut stepper = Langevin::new(settle, gamma(cfg), kt, cfg.seed);
            on.sample(&mut stepper, &model, &mut s, &mut sampled);
        }
        Rigid::Penalty { omega, beta } => {
            let penalized = water.short.penalized(omega);
            let target = WithLongRange::new(&penalized, water.long.clone(), COULOMB);
            let zss = ZhangSkeelStiff::new(beta, cfg.h);
            let mut stepper = Langevin::new(zss, gamma(cfg), kt, cfg.seed);
            on.sample(&mut stepper, &target, &mut s, &mut sampled);
        }
    }
    let Sampled {
        counts,
        energy,
        temperature,
        track,
        deviation,
        seconds,
        done,
        failure,
    } = sampled;
    let n = molecules.len() as f64;
    let samples = energy.len() as u64;
    // g(r) = pairs in a shell / (samples · N · ρ · shell volume), ρ = N / V.
    let width = cfg.r_max / cfg.bins as f64;
    let volume = sides[0] * sides[1] * sides[2];
    let rdf = counts
        .iter()
        .enumerate()
        .map(|(b, &c)| {
            let (r0, r1) = (b as f64 * width, (b + 1) as f64 * width);
            let shell = 4.0 / 3.0 * std::f64::consts::PI * (r1.powi(3) - r0.powi(3));
            c as f64 / (samples.max(1) as f64 * n * (n / volume) * shell)
        })
        .collect();
    Ok(Outcome {
        molecules: molecules.len(),
        steps: done,
        seconds,
        failure,
        rdf,
        energy,
        temperature,
        reference: read_reference(&cfg.reference),
        diffusion: diffusion(&track, oxygens.len(), cfg),
        deviation,
    })
}

/// What a run's loop gathers.
#[derive(Debug, Default)]
struct Sampled {
    counts: Vec<u64>,
    energy: Vec<f64>,
    temperature: Vec<f64>,
    /// The oxygens' positions at each sample (unwrapped: the steppers never wrap).
    track: Vec<f64>,
    deviation: f64,
    seconds: f64,
    done: u64,
    failure: Option<String>,
}

/// A run's fixed inputs.
struct Run<'a, M: ?Sized> {
    cfg: &'a Config,
    /// The model whose potential energy is sampled (without a penalty).
    model: &'a M,
    molecules: &'a [[u32; 3]],
    oxygens: &'a [usize],
    sides: [f64; 3],
    masses: [f64; 3],
}

impl<M: Model<Vec<f64>> + ?Sized> Run<'_, M> {
    /// Steps `stepper` on `target` from `s` to the end (or the first failed step), sampling
    /// after the burn-in.
    fn sample<T: ?Sized, S: Stepper<T, Vec<f64>>>(
        &self,
        stepper: &mut S,
        target: &T,
        s: &mut DynState,
        out: &mut Sampled,
    ) {
        let cfg = self.cfg;
        let (steps, burn, every) = (
            whole_steps(cfg.t_end, cfg.h),
            whole_steps(cfg.burn_in, cfg.h),
            whole_steps(cfg.sample_dt, cfg.h),
        );
        let n = self.molecules.len() as f64;
        out.counts = vec![0u64; cfg.bins];
        let mut before = s.q.clone();
        for k in 1..=steps {
            let guard = (&mut before[..], SKIN);
            if let Err(f) = guarded_step(stepper, target, s, guard, k, &mut out.seconds) {
                out.failure = Some(f);
                break;
            }
            out.done = k;
            if k > burn && k % every == 0 {
                bin_pairs(&s.q, self.oxygens, self.sides, cfg, &mut out.counts);
                out.energy.push(self.model.potential_at(&s.q) * KJ / n);
                let ke = rigid_kinetic(&s.q, &s.v, self.molecules, self.masses);
                out.temperature.push(2.0 * ke / (6.0 * n * KB));
                for &o in self.oxygens {
                    out.track.extend_from_slice(&s.q[3 * o..3 * o + 3]);
                }
                out.deviation = out.deviation.max(deviation(&s.q, self.molecules));
            }
        }
    }
}

/// The largest deviation of an O–H or H–H distance of `molecules` from SPC/E's (Å).
fn deviation(q: &[f64], molecules: &[[u32; 3]]) -> f64 {
    let distance = |a: u32, b: u32| -> f64 {
        let (a, b) = (3 * a as usize, 3 * b as usize);
        (0..3)
            .map(|k| (q[a + k] - q[b + k]).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    molecules.iter().fold(0.0, |worst, m| {
        let d = [
            distance(m[0], m[1]) - R_OH,
            distance(m[0], m[2]) - R_OH,
            distance(m[1], m[2]) - r_hh(),
        ];
        d.iter().fold(worst, |w, x| w.max(x.abs()))
    })
}

/// Per block of the samples in `track` (`oxygens` positions each), the self-diffusion
/// coefficient (10⁻⁵ cm²/s) from Einstein's relation: the slope of the mean square
/// displacement over the block's time origins, `⟨|x(t + τ) − x(t)|²⟩ = 6Dτ + c`, fitted by
/// least squares over the lags of `cfg.diffusion_fit`. Empty when a block is shorter than them.
pub fn diffusion(track: &[f64], oxygens: usize, cfg: &Config) -> Vec<f64> {
    let frame = 3 * oxygens;
    let frames = track.len() / frame.max(1);
    let per = frames / cfg.blocks.max(1);
    let dt = cfg.sample_dt / 1000.0;
    let (first, last) = (
        (cfg.diffusion_fit.0 / dt).round() as usize,
        (cfg.diffusion_fit.1 / dt).round() as usize,
    );
    if oxygens == 0 || first == 0 || last <= first || last >= per {
        return Vec::new();
    }
    (0..cfg.blocks)
        .map(|b| {
            let at = |t: usize| &track[(b * per + t) * frame..(b * per + t + 1) * frame];
            let points: Vec<(f64, f64)> = (first..=last)
                .map(|lag| {
                    let origins = per - lag;
                    let sum: f64 = (0..origins)
                        .map(|t| {
                            let (x0, x1) = (at(t), at(t + lag));
                            x0.iter().zip(x1).map(|(a, b)| (b - a).powi(2)).sum::<f64>()
                        })
                        .sum();
                    (lag as f64 * dt, sum / (origins * oxygens) as f64)
                })
                .collect();
            let m = points.len() as f64;
            let (tx, ty) = points
                .iter()
                .fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
            let (tm, ym) = (tx / m, ty / m);
            let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(a, b), p| {
                (a + (p.0 - tm) * (p.1 - ym), b + (p.0 - tm).powi(2))
            });
            // Å²/ps = 10⁻⁴ cm²/s.
            sxy / sxx / 6.0 * 10.0
        })
        .collect()
}

/// The first peak of a `g(r)` (its bin), the first minimum after it, and the coordination
/// number there.
type Shell = (usize, usize, f64);

/// [`Shell`] of `g` (the coordination number `4πρ ∫ g r² dr` to the minimum's upper edge).
fn shell(g: &[f64], width: f64, density: f64) -> Shell {
    let peak = (0..g.len()).fold(0, |m, b| if g[b] > g[m] { b } else { m });
    let stop = ((4.0 / width) as usize).min(g.len());
    let minimum = (peak..stop).fold(peak, |m, b| if g[b] < g[m] { b } else { m });
    let count = (0..=minimum)
        .map(|b| {
            let (r0, r1) = (b as f64 * width, (b + 1) as f64 * width);
            g[b] * 4.0 / 3.0 * std::f64::consts::PI * (r1.powi(3) - r0.powi(3)) * density
        })
        .sum();
    (peak, minimum, count)
}

/// The RMS and the largest difference of `out`'s g_OO from LAMMPS's over 2.4–12 Å (from the
/// first bin either has pairs in: the excluded core would only add zeros), when its reference
/// was read.
pub fn rdf_difference(cfg: &Config, out: &Outcome) -> Option<(f64, f64)> {
    let g = out.reference.as_ref()?;
    let from = (2.4 / (cfg.r_max / cfg.bins as f64)) as usize;
    let diffs: Vec<f64> = (from..g.len().min(out.rdf.len()))
        .map(|b| out.rdf[b] - g[b].1)
        .collect();
    let rms = (diffs.iter().map(|d| d * d).sum::<f64>() / diffs.len().max(1) as f64).sqrt();
    let worst = diffs.iter().fold(0.0_f64, |w, d| w.max(d.abs()));
    Some((rms, worst))
}

/// The tables and files of `out`.
///
/// # Errors
/// The files cannot be written.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let width = cfg.r_max / cfg.bins as f64;
    let center = |b: usize| (b as f64 + 0.5) * width;
    let mut csv = Csv::new(&["r", "g_oo", "g_oo_lammps"]);
    for (b, &g) in out.rdf.iter().enumerate() {
        let lammps = out.reference.as_ref().and_then(|r| r.get(b)).map(|r| r.1);
        csv.push(&[
            Field::Num(center(b)),
            Field::Num(g),
            lammps.map_or(Field::Text(""), Field::Num),
        ]);
    }
    let rdf_path = dir.join("water-box-rdf.csv");
    csv.write(&rdf_path)?;
    let mut series = Csv::new(&["t_ps", "potential_kj_per_mol", "temperature_k"]);
    for (k, (&e, &t)) in out.energy.iter().zip(&out.temperature).enumerate() {
        let time = (cfg.burn_in + (k + 1) as f64 * cfg.sample_dt) / 1000.0;
        series.push(&[Field::Num(time), Field::Num(e), Field::Num(t)]);
    }
    let series_path = dir.join("water-box-series.csv");
    series.write(&series_path)?;

    let data = DataFile::read(&cfg.data).ok();
    let volume = data.map_or(1.0, |d| d.box_lengths().iter().product());
    let density = out.molecules as f64 / volume;
    let mut table = Table::new(
        "O–O radial distribution: zs against LAMMPS's reference",
        &["", "zs", "LAMMPS"],
    );
    let (p, m, c) = shell(&out.rdf, width, density);
    let reference = out.reference.as_ref().map(|r| {
        let g: Vec<f64> = r.iter().map(|x| x.1).collect();
        (shell(&g, width, density), g)
    });
    let theirs = |f: &dyn Fn(&Shell, &[f64]) -> String| {
        reference
            .as_ref()
            .map_or_else(|| "—".into(), |(s, g)| f(s, g))
    };
    table.push(vec![
        "first peak (Å)".into(),
        format!("{:.2}", center(p)),
        theirs(&|s, _| format!("{:.2}", center(s.0))),
    ]);
    table.push(vec![
        "its height".into(),
        format!("{:.3}", out.rdf[p]),
        theirs(&|s, g| format!("{:.3}", g[s.0])),
    ]);
    table.push(vec![
        "first minimum (Å)".into(),
        format!("{:.2}", center(m)),
        theirs(&|s, _| format!("{:.2}", center(s.1))),
    ]);
    table.push(vec![
        "neighbours within it".into(),
        format!("{c:.2}"),
        theirs(&|s, _| format!("{:.2}", s.2)),
    ]);
    let mut notes = Vec::new();
    if let Some((rms, worst)) = rdf_difference(cfg, out) {
        notes.push(format!(
            "g_OO from 2.4 to 12 Å against LAMMPS's: RMS difference {rms:.3}, largest {worst:.3} \
             (LAMMPS's is 10 samples of 2 ps; zs's {} samples of {} ps)",
            out.energy.len(),
            (cfg.t_end - cfg.burn_in) / 1000.0
        ));
    } else {
        notes.push(format!(
            "LAMMPS's reference {} not found: zs's g_OO alone",
            cfg.reference.display()
        ));
    }
    let mut energies = Table::new(
        "Potential energy per molecule and temperature (mean ± standard error of block means)",
        &["", "zs", "published / set"],
    );
    let est = |x: &[f64]| {
        block_estimate(x, cfg.blocks)
            .map_or_else(|| "—".into(), |(m, e)| format!("{m:.3} ± {e:.3}"))
    };
    let corrected: Vec<f64> = out.energy.iter().map(|e| e + POLARIZATION).collect();
    energies.push(vec!["V / N (kJ/mol)".into(), est(&out.energy), "".into()]);
    energies.push(vec![
        "V / N + E_pol (kJ/mol)".into(),
        est(&corrected),
        format!("{PUBLISHED} (Berendsen et al. 1987)"),
    ]);
    energies.push(vec![
        "T (K)".into(),
        est(&out.temperature),
        format!("{}", cfg.temperature),
    ]);
    energies.push(vec![
        "D (10⁻⁵ cm²/s)".into(),
        block_estimate(&out.diffusion, out.diffusion.len())
            .map_or_else(|| "—".into(), |(m, e)| format!("{m:.3} ± {e:.3}")),
        format!("{DIFFUSION} (Berendsen et al. 1987, without friction)"),
    ]);
    if let Some(f) = &out.failure {
        notes.push(format!("the run stopped early: {f}"));
    }
    notes.push(format!(
        "largest deviation of an O–H or H–H distance from SPC/E's at a sample: {} Å",
        sci(out.deviation)
    ));
    notes.push(format!(
        "{} steps in {:.0} s ({} steps/s on {} threads)",
        out.steps,
        out.seconds,
        sci(out.steps as f64 / out.seconds.max(1e-9)),
        rayon::current_num_threads()
    ));
    Ok(Report {
        experiment: "water-box".into(),
        setup: format!(
            "{} SPC/E molecules from {}, rigid by {}, h = {} fs, GLA Langevin at {} K (the \
             oxygens' velocities relaxed at {} ps⁻¹), PME, cut at {} Å; {} ps, the first {} ps a burn-in, a sample every {} ps; D from the oxygens' mean square displacement over lags of {} to {} ps, per block",
            out.molecules,
            cfg.data.display(),
            cfg.rigid.describe(),
            cfg.h,
            cfg.temperature,
            cfg.rate * 1000.0,
            cfg.options.rc,
            cfg.t_end / 1000.0,
            cfg.burn_in / 1000.0,
            cfg.sample_dt / 1000.0,
            cfg.diffusion_fit.0,
            cfg.diffusion_fit.1
        ),
        tables: vec![table, energies],
        notes,
        files: vec![rdf_path, series_path],
    })
}
