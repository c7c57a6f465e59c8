//! The papers' experiments, reproduced: `zs reproduce <experiment> [--out-dir DIR]`.
//!
//! Each experiment module has a `Config` (the paper's parameters from `Config::paper()`, cheaper
//! ones for tests), a `run` that integrates and measures in memory and returns the results, and
//! a `write` that writes the CSV data, an SVG figure and returns a printable [`Report`]
//! (tables of the measured figures beside the paper's). [`Experiment::run`] does both with the
//! paper's parameters.
//!
//! | experiment | paper | module |
//! |---|---|---|
//! | `double-pendulum` | Tao & Owhadi §4.1, Fig. 1 and the run-time table | [`double_pendulum`] |
//! | `constraint-scaling` | Tao & Owhadi Fig. 2a, `ω²‖g(q(T))‖` against ω | [`constraint_scaling`] |
//! | [`multipliers`] | Tao & Owhadi Fig. 2b, λ(t) from the penalized run (eq. 8) vs SHAKE | [`multipliers`] |
//! | `impulse-convergence` | the impulse paper, Figs. 1–3, error vs macro step of the impulse family | [`impulse_convergence`] |
//! | `chain` | Tao & Owhadi §4.2, Fig. 3, chain of 10 pendula, Z&S vs SHAKE, run-time table | [`chain`] |
//! | `water-conservation` | Tao & Owhadi Fig. 6, energy and momenta of 7 rigid waters | [`water_conservation`] |
//! | `water-rdf`, `water-100` | Tao & Owhadi Figs. 4 and 7, O–O distance histograms under Langevin | [`water_rdf`] |
//! | `water-multipliers` | Tao & Owhadi Fig. 5, eq. 8 multipliers vs SHAKE's, ω = 500 | [`water_multipliers`] |
//! | `rigid-body` | Tao & Owhadi §4.5, Figs. 9–10, penalized Z&S vs the Lie-group eq. 34 | [`rigid_body`] |
//! | `variational` | Patrick et al.: Runge–Kutta methods made variational vs projected, three pendula | [`variational`] |
//! | `dna` | Tao & Owhadi §4.4, Fig. 8, DNA ring of 200 base pairs, Z&S vs Verlet, run-time table | [`dna`] |
//! | `water-modes` | beyond the papers: normal modes of penalized TIP3P waters from the exact Hessian, at growing ω | [`water_modes`] |
//! | `alkane` | beyond the papers: liquid butane (TraPPE-UA) — Verlet, RATTLE and Z&Ss-stiff at growing steps, structure beside LAMMPS's (minutes; not in `all`) | [`alkane`] |
//! | `kremer-grest` | beyond the papers: LAMMPS's polymer melt, Z&Ss-stiff's step and time to result against Verlet (needs LAMMPS's `data.chain`; not in `all`) | [`kremer_grest`] |
//! | `water-box` | beyond the papers: 100 ps of rigid SPC/E water at 300 K, the O–O radial distribution against LAMMPS's, the energy and diffusion against the published values (needs LAMMPS's `data.spce`; minutes; not in `all`) | [`water_box`] |
//! | `water-stiff` | beyond the papers: the same box held rigid by SETTLE at 2 fs and by the penalty under Z&Ss-stiff at its longest stable step, time to the same statistics (minutes; not in `all`) | [`water_stiff`] |
//!
//! Files are written through `<name>.tmp` and renamed when complete ([`write_atomic`]), so an
//! interrupted run never leaves a truncated file under the final name.

pub mod alkane;
pub mod chain;
pub mod constraint_scaling;
pub mod dna;
pub mod double_pendulum;
pub mod impulse_convergence;
pub mod kremer_grest;
pub mod multipliers;
pub mod plot;
pub mod rigid_body;
pub mod variational;
pub mod water_box;
pub mod water_conservation;
pub mod water_modes;
pub mod water_multipliers;
pub mod water_rdf;
pub mod water_stiff;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use zs_runtime::files::write_atomic;
use zs_runtime::{StateOf, StepError, Stepper};

/// The experiments `zs reproduce` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Tao & Owhadi Fig. 1: errors of SHAKE, Verlet, Newmark, one-step Newmark and Z&S on the
    /// double pendulum against a generalized-coordinate reference, and the run-time table.
    DoublePendulum,
    /// Tao & Owhadi Fig. 2a: ω²‖g(q(T))‖ of the penalized Z&S run for ω over two decades.
    ConstraintScaling,
    /// Tao & Owhadi Fig. 2b: Lagrange multipliers from the penalized run vs SHAKE's.
    Multipliers,
    /// The impulse paper, Figs. 1–3: error vs macro step of the impulse, mollified impulse and
    /// projected impulse methods on the stiff spring double pendulum.
    ImpulseConvergence,
    /// Tao & Owhadi §4.2, Fig. 3: the chain of 10 pendula, Z&S vs SHAKE at two steps, and the
    /// run-time table.
    Chain,
    /// Tao & Owhadi §4.4, Fig. 8: the DNA ring of 200 base pairs, Z&S (h = 2) vs Verlet at the
    /// paper's step and at its largest stable step, ten seeds, and the run-time table.
    Dna,
    /// Tao & Owhadi Fig. 6: energy, linear and angular momentum of 7 rigid TIP3P waters with
    /// Z&Ss-stiff, SHAKE, one-step Newmark and full Z&S.
    WaterConservation,
    /// Tao & Owhadi Fig. 5: eq. 8 multipliers of the first oxygen's constraints vs SHAKE's.
    WaterMultipliers,
    /// Tao & Owhadi Fig. 4: O–O distances of 7 waters under Langevin, Z&Ss-stiff vs SHAKE.
    WaterRdf,
    /// Tao & Owhadi Fig. 7: the same for 100 waters.
    Water100,
    /// Tao & Owhadi §4.5, Figs. 9–10: the magnetized rigid body, penalized Z&S (two β) and
    /// the Lie-group eq. 34 at h = 0.1 against eq. 34 at h = 1e-4, Bμ = −1 and +1.
    RigidBody,
    /// Patrick et al. (no numerical examples in the paper): orders and long-time energy of
    /// Runge–Kutta methods made variational against the same methods projected, on three pendula.
    Variational,
    /// Beyond the papers: LAMMPS's Kremer–Grest melt under Langevin, Verlet against Z&Ss-stiff
    /// at growing steps — structure, pressure, time to result. Needs a LAMMPS data file
    /// ([`kremer_grest::LAMMPS_DATA`] by default); not in [`Experiment::ALL`].
    KremerGrest,
    /// Beyond the papers: normal modes of 100 TIP3P waters held by the penalty at growing ω.
    WaterModes,
    /// Beyond the papers: liquid butane (TraPPE-UA) under Langevin — Verlet, RATTLE with the
    /// bonds fixed and Z&Ss-stiff at growing steps, the torsion distribution and end-to-end
    /// distance beside LAMMPS's (when a LAMMPS binary is given); not in [`Experiment::ALL`].
    Alkane,
    /// Beyond the papers: 100 ps of rigid SPC/E water at 300 K in LAMMPS's box — the O–O
    /// radial distribution against LAMMPS's, the potential energy against Berendsen et al.'s
    /// ([`water_box::LAMMPS_DATA`] by default); not in [`Experiment::ALL`].
    WaterBox,
    /// Beyond the papers: that box held rigid by SETTLE at 2 fs and by the penalty under
    /// Z&Ss-stiff at its longest stable step — statistics and the time to them; not in
    /// [`Experiment::ALL`].
    WaterStiff,
}

impl Experiment {
    /// Every experiment, in the order `zs reproduce all` runs them.
    pub const ALL: [Experiment; 13] = [
        Experiment::DoublePendulum,
        Experiment::ConstraintScaling,
        Experiment::Multipliers,
        Experiment::ImpulseConvergence,
        Experiment::Chain,
        Experiment::Dna,
        Experiment::WaterConservation,
        Experiment::WaterMultipliers,
        Experiment::WaterRdf,
        Experiment::Water100,
        Experiment::RigidBody,
        Experiment::Variational,
        Experiment::WaterModes,
    ];

    /// The command-line name, also the stem of the files it writes.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::DoublePendulum => "double-pendulum",
            Experiment::ConstraintScaling => "constraint-scaling",
            Experiment::Multipliers => "multipliers",
            Experiment::ImpulseConvergence => "impulse-convergence",
            Experiment::Chain => "chain",
            Experiment::Dna => "dna",
            Experiment::WaterConservation => "water-conservation",
            Experiment::WaterMultipliers => "water-multipliers",
            Experiment::WaterRdf => "water-rdf",
            Experiment::Water100 => "water-100",
            Experiment::RigidBody => "rigid-body",
            Experiment::Variational => "variational",
            Experiment::KremerGrest => "kremer-grest",
            Experiment::WaterModes => "water-modes",
            Experiment::Alkane => "alkane",
            Experiment::WaterBox => "water-box",
            Experiment::WaterStiff => "water-stiff",
        }
    }

    /// Run the experiment with the paper's parameters, writing its files into `out_dir`.
    ///
    /// # Errors
    /// The output cannot be written, or (impulse convergence) a step failed.
    pub fn run(self, out_dir: &Path) -> Result<Report, ExperimentError> {
        self.run_on(out_dir, &Inputs::default())
    }

    /// [`Experiment::run`] with the inputs of the experiments that read files or run a peer.
    ///
    /// # Errors
    /// As [`Experiment::run`]; a data file that cannot be read or used.
    pub fn run_on(self, out_dir: &Path, inputs: &Inputs<'_>) -> Result<Report, ExperimentError> {
        match self {
            Experiment::Alkane => {
                let cfg = alkane::Config::liquid_butane(inputs.lammps.map(Path::to_path_buf));
                let out = alkane::run(&cfg)?;
                alkane::write(&cfg, &out, out_dir).map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::WaterBox => {
                let path = inputs
                    .data
                    .map_or_else(|| water_box::LAMMPS_DATA.into(), Path::to_path_buf);
                let cfg = water_box::Config::lammps(path);
                let out = water_box::run(&cfg)?;
                water_box::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::WaterStiff => {
                let path = inputs
                    .data
                    .map_or_else(|| water_box::LAMMPS_DATA.into(), Path::to_path_buf);
                let cfg = water_stiff::Config::lammps(
                    path,
                    water_stiff::LONGEST_STEP,
                    water_stiff::OMEGA,
                );
                let out = water_stiff::run(&cfg)?;
                water_stiff::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::KremerGrest => {
                let path = inputs
                    .data
                    .map_or_else(|| kremer_grest::LAMMPS_DATA.into(), Path::to_path_buf);
                let cfg = kremer_grest::Config::lammps(path);
                let out = kremer_grest::run(&cfg)?;
                kremer_grest::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::ConstraintScaling => {
                let cfg = constraint_scaling::Config::paper();
                let out = constraint_scaling::run(&cfg);
                constraint_scaling::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::DoublePendulum => double_pendulum::reproduce(
                out_dir,
                &double_pendulum::Config::paper(),
                &double_pendulum::Config::printed_sign(),
            )
            .map_err(|e| ExperimentError::write(out_dir, e)),
            Experiment::Multipliers => {
                let cfg = multipliers::Config::paper();
                let out = multipliers::run(&cfg);
                multipliers::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::ImpulseConvergence => {
                let cfg = impulse_convergence::Config::paper();
                let out =
                    impulse_convergence::run(&cfg).map_err(|source| ExperimentError::Step {
                        experiment: "impulse-convergence",
                        source,
                    })?;
                impulse_convergence::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::Chain => {
                let cfg = chain::Config::paper();
                let out = chain::run(&cfg);
                chain::write(&cfg, &out, out_dir).map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::Dna => {
                let cfg = dna::Config::paper();
                let out = dna::run(&cfg);
                dna::write(&cfg, &out, out_dir).map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::WaterConservation => {
                let cfg = water_conservation::Config::paper();
                let out = water_conservation::run(&cfg);
                water_conservation::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::WaterMultipliers => {
                let cfg = water_multipliers::Config::paper();
                let out = water_multipliers::run(&cfg);
                water_multipliers::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::WaterRdf | Experiment::Water100 => {
                let cfg = if self == Experiment::WaterRdf {
                    water_rdf::Config::fig4()
                } else {
                    water_rdf::Config::fig7()
                };
                let out = water_rdf::run(&cfg);
                water_rdf::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::RigidBody => {
                let cfg = rigid_body::Config::paper();
                let out = rigid_body::run(&cfg);
                rigid_body::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::WaterModes => {
                let cfg = water_modes::Config::paper();
                let out = water_modes::run(&cfg);
                water_modes::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
            Experiment::Variational => {
                let cfg = variational::Config::paper();
                let out = variational::run(&cfg);
                variational::write(&cfg, &out, out_dir)
                    .map_err(|e| ExperimentError::write(out_dir, e))
            }
        }
    }
}

/// What some experiments read beyond their parameters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The data file of `kremer-grest` and `water-box` (`None`: their
    /// [`kremer_grest::LAMMPS_DATA`], [`water_box::LAMMPS_DATA`]).
    pub data: Option<&'a Path>,
    /// The LAMMPS binary that `alkane` runs beside zs (`None`: zs alone).
    pub lammps: Option<&'a Path>,
}

/// Why an experiment could not be reproduced.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// Its files cannot be written.
    #[error("cannot write the results into {}: {source}", dir.display())]
    Write {
        /// The output directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Its input file cannot be read or used.
    #[error(transparent)]
    Input(#[from] kremer_grest::InputError),
    /// The alkane liquid cannot be built or equilibrated.
    #[error(transparent)]
    Alkane(#[from] alkane::SetupError),
    /// A step of a run it needs failed.
    #[error("{experiment}: a step failed: {source}")]
    Step {
        /// The experiment.
        experiment: &'static str,
        /// The failure.
        source: StepError,
    },
}

impl ExperimentError {
    fn write(dir: &Path, source: io::Error) -> Self {
        ExperimentError::Write {
            dir: dir.to_path_buf(),
            source,
        }
    }
}

/// What an experiment measured: tables to print, notes, and the files written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// Experiment name.
    pub experiment: String,
    /// One-paragraph description of the set-up.
    pub setup: String,
    /// Measured tables.
    pub tables: Vec<Table>,
    /// Findings and differences from the paper, one per line.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "zs reproduce {}", self.experiment)?;
        if !self.setup.is_empty() {
            writeln!(f, "  {}", self.setup)?;
        }
        for t in &self.tables {
            writeln!(f)?;
            write!(f, "{t}")?;
        }
        if !self.notes.is_empty() {
            writeln!(f)?;
            for n in &self.notes {
                writeln!(f, "  * {n}")?;
            }
        }
        if !self.files.is_empty() {
            writeln!(f)?;
            for p in &self.files {
                writeln!(f, "  wrote {}", p.display())?;
            }
        }
        Ok(())
    }
}

/// A table of strings with a title, printed with aligned columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Title line.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows (each as long as the header).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table.
    pub fn new(title: impl Into<String>, header: &[&str]) -> Self {
        Self {
            title: title.into(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row.
    ///
    /// # Panics
    /// If the row's length differs from the header's.
    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(
            row.len(),
            self.header.len(),
            "row length differs from header"
        );
        self.rows.push(row);
    }

    /// The table as GitHub Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("| {} |\n", self.header.join(" | "));
        s += &format!("|{}\n", "---|".repeat(self.header.len()));
        for r in &self.rows {
            s += &format!("| {} |\n", r.join(" | "));
        }
        s
    }

    /// The cell in the row whose first cell is `key`, column `column`.
    pub fn cell(&self, key: &str, column: &str) -> Option<&str> {
        let c = self.header.iter().position(|h| h == column)?;
        self.rows
            .iter()
            .find(|r| r[0] == key)
            .map(|r| r[c].as_str())
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = |i: usize| {
            self.rows
                .iter()
                .map(|r| r[i].chars().count())
                .chain(std::iter::once(self.header[i].chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.header.len()).map(width).collect();
        let line = |cells: &[String]| {
            let mut s = String::from(" ");
            for (i, c) in cells.iter().enumerate() {
                let pad = widths[i] - c.chars().count();
                if i == 0 {
                    s += &format!(" {c}{}", " ".repeat(pad));
                } else {
                    s += &format!("  {}{c}", " ".repeat(pad));
                }
            }
            s.trim_end().to_string()
        };
        writeln!(f, "  {}", self.title)?;
        writeln!(f, "{}", line(&self.header))?;
        let total: usize = widths.iter().sum::<usize>() + 2 * widths.len();
        writeln!(f, "  {}", "-".repeat(total))?;
        for r in &self.rows {
            writeln!(f, "{}", line(r))?;
        }
        Ok(())
    }
}

/// CSV data built in memory and written atomically ([`write_atomic`]).
///
/// Numbers are written in Rust's shortest round-trip form; text fields are quoted when they
/// contain a comma, a quote or a line break.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Csv {
    columns: usize,
    text: String,
}

/// One CSV field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field<'a> {
    /// A number (written in shortest round-trip form; NaN and ±inf as `NaN`, `inf`, `-inf`).
    Num(f64),
    /// An integer.
    Int(i64),
    /// Text.
    Text(&'a str),
}

impl Csv {
    /// An empty CSV with the given header.
    pub fn new(header: &[&str]) -> Self {
        let mut c = Self {
            columns: header.len(),
            text: String::new(),
        };
        let fields: Vec<Field> = header.iter().map(|h| Field::Text(h)).collect();
        c.push_unchecked(&fields);
        c
    }

    /// Append a row.
    ///
    /// # Panics
    /// If the row's length differs from the header's.
    pub fn push(&mut self, row: &[Field]) {
        assert_eq!(
            row.len(),
            self.columns,
            "CSV row length differs from header"
        );
        self.push_unchecked(row);
    }

    fn push_unchecked(&mut self, row: &[Field]) {
        use std::fmt::Write as _;
        for (i, f) in row.iter().enumerate() {
            if i > 0 {
                self.text.push(',');
            }
            match *f {
                Field::Num(x) => {
                    let _ = write!(self.text, "{x}");
                }
                Field::Int(x) => {
                    let _ = write!(self.text, "{x}");
                }
                Field::Text(s) if s.contains([',', '"', '\n', '\r']) => {
                    let _ = write!(self.text, "\"{}\"", s.replace('"', "\"\""));
                }
                Field::Text(s) => self.text.push_str(s),
            }
        }
        self.text.push('\n');
    }

    /// Data rows so far (header excluded).
    pub fn rows(&self) -> usize {
        self.text.lines().count().saturating_sub(1)
    }

    /// The CSV text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Write to `path` atomically.
    ///
    /// # Errors
    /// I/O failures.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        write_atomic(path, self.text.as_bytes())
    }
}

/// Minimum wall time of `f` over `repetitions` batches, each batch repeating `f` enough times to
/// last at least `min_batch` (so the clock's resolution does not matter); returned per call.
///
/// Taking the minimum over batches discards the interference of other processes on a shared
/// machine, which only ever adds time.
pub fn min_wall_time(mut f: impl FnMut(), repetitions: usize, min_batch: Duration) -> Duration {
    min_wall_times(&mut [&mut f], repetitions, min_batch)[0]
}

/// [`min_wall_time`] of several functions, with their batches **interleaved** (round-robin:
/// one batch of each, `repetitions` times), so that a slow phase of a shared machine affects
/// them all alike and their ratios stay stable.
pub fn min_wall_times(
    fs: &mut [&mut dyn FnMut()],
    repetitions: usize,
    min_batch: Duration,
) -> Vec<Duration> {
    // Calibrate: double each batch size until one batch lasts `min_batch`.
    let sizes: Vec<u32> = fs
        .iter_mut()
        .map(|f| {
            let mut n: u32 = 1;
            loop {
                let start = Instant::now();
                for _ in 0..n {
                    f();
                }
                if start.elapsed() >= min_batch || n >= 1 << 20 {
                    break n;
                }
                n *= 2;
            }
        })
        .collect();
    let mut best = vec![Duration::MAX; fs.len()];
    for _ in 0..repetitions.max(1) {
        for (i, f) in fs.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..sizes[i] {
                f();
            }
            best[i] = best[i].min(start.elapsed() / sizes[i]);
        }
    }
    best
}

/// States recorded along a run, and how the run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory<V> {
    /// The initial state and then every `every`-th state (the last state of a complete run is
    /// recorded when `every` divides the number of steps).
    pub samples: Vec<StateOf<V>>,
    /// Steps completed.
    pub steps: u64,
    /// The error of the step that failed, if one did (the run stops there).
    pub failure: Option<StepError>,
}

/// Take `steps` steps of `stepper` on `target` from `state`, recording the initial state and
/// every `every`-th state; stop at the first failed step.
///
/// # Panics
/// If `every` is zero.
pub fn integrate<P: ?Sized, S: Stepper<P, V>, V: Clone>(
    stepper: &mut S,
    target: &P,
    mut state: StateOf<V>,
    steps: u64,
    every: u64,
) -> Trajectory<V> {
    assert!(every > 0, "`every` must be at least 1");
    let mut samples = Vec::with_capacity((steps / every) as usize + 1);
    samples.push(state.clone());
    let mut failure = None;
    let mut done = 0;
    for k in 1..=steps {
        if let Err(e) = stepper.step(target, &mut state) {
            failure = Some(e);
            break;
        }
        done = k;
        if k % every == 0 {
            samples.push(state.clone());
        }
    }
    Trajectory {
        samples,
        steps: done,
        failure,
    }
}

/// Number of steps of size `h` in `[0, t_end]`, checked to be a whole number (to 1e-9).
///
/// # Panics
/// If `t_end / h` is not a whole number: the experiments compare runs on a common time grid.
pub fn whole_steps(t_end: f64, h: f64) -> u64 {
    let n = t_end / h;
    let r = n.round();
    assert!(
        (n - r).abs() < 1e-9 * r.max(1.0) && r >= 1.0,
        "t_end = {t_end} is not a whole number of steps h = {h}"
    );
    r as u64
}

/// Mean and standard error of `series` from `blocks` consecutive block means (the last
/// `len % blocks` samples left out); `None` with fewer samples than blocks or fewer than 2 blocks.
pub fn block_estimate(series: &[f64], blocks: usize) -> Option<(f64, f64)> {
    let per = series.len() / blocks.max(1);
    if per == 0 || blocks < 2 {
        return None;
    }
    let means: Vec<f64> = series
        .chunks_exact(per)
        .take(blocks)
        .map(|c| c.iter().sum::<f64>() / per as f64)
        .collect();
    let mean = means.iter().sum::<f64>() / blocks as f64;
    let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (blocks - 1) as f64;
    Some((mean, (var / blocks as f64).sqrt()))
}

/// One sampled run of an experiment that compares methods at several steps (`kremer-grest`,
/// `alkane`): what it ran, how long its steps took, its observables at each sample and one
/// histogram (a probability density per bin).
#[derive(Debug, Clone, PartialEq)]
pub struct SampledRun<M> {
    /// Its method.
    pub method: M,
    /// Its step.
    pub h: f64,
    /// Steps done.
    pub steps: u64,
    /// Wall time of the steps alone (s).
    pub seconds: f64,
    /// Why it stopped early, if it did.
    pub failure: Option<String>,
    /// Per observable, its value at each sample.
    pub series: Vec<Vec<f64>>,
    /// The experiment's histogram, as a probability density per bin.
    pub density: Vec<f64>,
}

impl<M> SampledRun<M> {
    /// Mean and standard error (of `blocks` block means) of observable `k`; `None` when there
    /// are fewer samples than blocks.
    pub fn estimate(&self, k: usize, blocks: usize) -> Option<(f64, f64)> {
        block_estimate(&self.series[k], blocks)
    }

    /// Wall seconds per unit of simulated time.
    pub fn seconds_per_time(&self) -> f64 {
        self.seconds / (self.steps.max(1) as f64 * self.h)
    }
}

/// One observable of a run against a reference: `(mean, standard error, z)` with `z` the
/// difference from the reference's mean in combined standard errors; `None` without enough
/// samples.
pub type Estimate = Option<(f64, f64, f64)>;

/// Each observable of `run` against `reference` (per observable, its samples) from `blocks`
/// block means: an [`Estimate`] per observable, and whether every `|z| ≤ 2` (false for a run
/// that `failed`).
pub fn compare_series(
    reference: &[Vec<f64>],
    run: &[Vec<f64>],
    blocks: usize,
    failed: bool,
) -> (Vec<Estimate>, bool) {
    let mut all = !failed;
    let rows = reference
        .iter()
        .zip(run)
        .map(|(r, x)| {
            let (Some((m0, e0)), Some((m, e))) =
                (block_estimate(r, blocks), block_estimate(x, blocks))
            else {
                all = false;
                return None;
            };
            let z = (m - m0) / (e0 * e0 + e * e).sqrt().max(f64::MIN_POSITIVE);
            all &= z.abs() <= 2.0;
            Some((m, e, z))
        })
        .collect();
    (rows, all)
}

/// One step of `stepper` (its wall time added to `seconds`), then the neighbour-list guard of
/// the command line: `Err` says why a run stops at step `k` — a failed step, or a site that moved
/// more than `skin` in one step (a pair the list does not hold may then have come within the
/// cutoff). `before` is scratch of the state's length.
pub fn guarded_step<M: ?Sized, S: Stepper<M, Vec<f64>>>(
    stepper: &mut S,
    system: &M,
    state: &mut StateOf<Vec<f64>>,
    (before, skin): (&mut [f64], f64),
    k: u64,
    seconds: &mut f64,
) -> Result<(), String> {
    before.copy_from_slice(&state.q);
    let clock = Instant::now();
    let stepped = stepper.step(system, state);
    *seconds += clock.elapsed().as_secs_f64();
    stepped.map_err(|e| e.to_string())?;
    let moved = largest_move(before, &state.q);
    if moved > skin {
        return Err(format!(
            "step {k}: a site moved {moved:.3} > the skin {skin} in one step"
        ));
    }
    Ok(())
}

/// Largest displacement of a site (three coordinates) between `a` and `b`: the experiments on
/// neighbour lists stop a run when it exceeds the skin (the list may then miss a pair).
pub fn largest_move(a: &[f64], b: &[f64]) -> f64 {
    a.chunks_exact(3)
        .zip(b.chunks_exact(3))
        .map(|(x, y)| (0..3).map(|k| (y[k] - x[k]).powi(2)).sum::<f64>())
        .fold(0.0, f64::max)
        .sqrt()
}

/// `x` formatted with 3 significant digits in exponent form (`1.23e-4`), or `—` if NaN.
pub fn sci(x: f64) -> String {
    if x.is_nan() {
        "—".into()
    } else {
        format!("{x:.2e}")
    }
}

/// Least-squares slope of `log10 y` against `log10 x` over the points with positive finite
/// coordinates (the measured order of a convergence plot); `None` with fewer than two.
/// ([`zs_runtime::verify::slope`] on the usable points).
pub fn log_log_slope(points: &[(f64, f64)]) -> Option<f64> {
    let (x, y): (Vec<f64>, Vec<f64>) = points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .copied()
        .unzip();
    Some(zs_runtime::verify::slope(&x, &y)).filter(|s| s.is_finite())
}
