//! The systems of the command line, one description each ([`CliSystem`]): its name, what the
//! shared options mean for it ([`Accepts`]), the options it adds ([`CliSystem::options`]), the
//! paper's defaults, how it is built from the arguments, what a run writes besides the CSV,
//! and its `zs eval` and `zs nma`. `zs run`, `zs eval`, `zs nma`, `zs ensemble` and
//! `zs temper` are written once over these descriptions; a program offers the systems it
//! gives [`main_with`](super::main_with) (`zs`: [`builtin`]). A new built-in system is a file
//! here and a line in [`builtin`].

mod alkane;
mod chain;
mod dna;
mod double_pendulum;
mod kremer_grest;
#[cfg(feature = "faer")]
pub mod modes;
mod rigid_body;
mod water;
mod water_box;

use std::fmt::Write as _;

use zs_runtime::{Model, Vector};

use super::error::CliError;
use super::job::{CoordinateNames, Job};
use super::{state_file, EvalArgs, GravitySign, IntegratorName, RunArgs};

/// `--n`: what it counts, its default, its least value and why fewer is refused.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    /// What `--n` counts ("pendula").
    pub what: &'static str,
    /// Its value when not given.
    pub default: usize,
    /// The least value taken.
    pub least: usize,
    /// Why fewer is refused ("a DNA ring needs at least 3 base pairs").
    pub too_few: &'static str,
}

/// What the options every system shares mean for a system: which apply (each given to a
/// system that does not take it is a one-line error naming the systems it applies to). The
/// [`Default`] is a system without any: no `--n`, no constraints, no `--threads`, no `--data`.
#[derive(Debug, Clone, Copy)]
pub struct Accepts {
    /// `--n`.
    pub n: Option<Count>,
    /// Constraints: `--max-residual`, `--integrator shake|rattle|zss-stiff`, a penalty `--omega`.
    /// `Err(reason)`: why not.
    pub constraints: Result<(), &'static str>,
    /// `--omega` without constraints (the rigid body's penalty is part of its potential).
    pub omega: bool,
    /// `--integrator lie-euler` (the rigid body, on SO(3)).
    pub lie_euler: bool,
    /// `--threads` (the assembled systems).
    pub threads: bool,
    /// `--data`, `--write-data` (LAMMPS data files: the condensed-phase systems).
    pub data: bool,
    /// `--integrator zss-stiff` without constraints: the system splits its potential into a
    /// soft and a stiff part of its own (the Kremer–Grest melt's FENE bonds).
    pub stiff_split: bool,
    /// A run also writes an extended XYZ trajectory beside the CSV (`<out>.xyz`).
    pub xyz: bool,
    /// `--integrator settle`: the system gives rigid three-site molecules ([`Job`]'s
    /// `settle`).
    pub settle: bool,
}

impl Default for Accepts {
    fn default() -> Self {
        Accepts {
            n: None,
            constraints: Err("it has no constraints"),
            omega: false,
            lie_euler: false,
            threads: false,
            data: false,
            stiff_split: false,
            xyz: false,
            settle: false,
        }
    }
}

/// One system of a `zs` program (see the [module docs](self)). The smallest description gives
/// its name, its defaults, its run and its eval; everything else has a default.
pub trait CliSystem: Sync {
    /// The command-line name: a word (`ring-melt`).
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn about(&self) -> &'static str {
        ""
    }
    /// The shared options it takes.
    fn accepts(&self) -> Accepts {
        Accepts::default()
    }
    /// The options it adds to `zs run` (and so to `zs ensemble` and `zs temper`), read back
    /// from [`RunArgs::options`]: `clap::Arg::new("bend").long("bend")` with its help, value
    /// name, parser and default. A system that shares an option with another declares it
    /// identically (one function both call).
    fn options(&self) -> Vec<clap::Arg> {
        Vec::new()
    }
    /// The options it adds to `zs eval`, read back from [`EvalArgs::options`].
    fn eval_options(&self) -> Vec<clap::Arg> {
        Vec::new()
    }
    /// The options it adds to `zs nma`, read back from [`NmaArgs::options`](super::NmaArgs).
    fn nma_options(&self) -> Vec<clap::Arg> {
        Vec::new()
    }
    /// Its own checks of a `zs run` command line, after the shared ones (two of its options
    /// that exclude each other, a value out of its range).
    ///
    /// # Errors
    /// What is wrong, one line.
    fn check(&self, _args: &RunArgs) -> Result<(), CliError> {
        Ok(())
    }
    /// The paper's penalty frequency ω (the default of `--omega`; unused without constraints).
    fn omega(&self) -> f64 {
        0.0
    }
    /// The default `(h, T, β)` for `method` with penalty `omega`.
    fn defaults(&self, method: IntegratorName, omega: f64) -> (f64, f64, f64);
    /// `zs run`: build the system, its start and its extra outputs, and drive it with `job`.
    ///
    /// # Errors
    /// What building or running reports.
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError>;
    /// About how many bytes a run of size `n` with `method` needs (measured peak resident
    /// sizes, rounded up; 0: not estimated): `zs run` refuses sizes beyond the machine's
    /// available memory before allocating anything.
    fn memory_estimate(&self, _n: usize, _method: IntegratorName) -> f64 {
        0.0
    }
    /// The default step `h` of `defaults` adjusted to `--n` (unchanged by default).
    fn default_h(&self, h: f64, _n: Option<u64>) -> f64 {
        h
    }
    /// `--integrator` when not given.
    fn default_integrator(&self) -> IntegratorName {
        IntegratorName::Zs
    }
    /// `--every` when not given, for a run of `steps` steps (1: every state).
    fn default_every(&self, _steps: u64) -> u64 {
        1
    }
    /// `zs eval`: `V` (penalized with `--omega`) and `∇V` of every row of `--in`, as CSV
    /// ([`table`]).
    ///
    /// # Errors
    /// An unreadable state file, an option that does not apply.
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError>;
    /// `zs nma`: the normal modes at the state asked for ([`modes::analyse`]).
    ///
    /// # Errors
    /// The system has none, an option that does not apply, what the analysis reports.
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<modes::Spectrum, CliError> {
        let _ = args;
        Err(CliError::does_not_apply(
            "zs nma",
            self.name(),
            Some("its description offers no normal modes"),
        ))
    }
}

/// The systems of the `zs` program, in the order of its help.
pub fn builtin() -> Vec<Box<dyn CliSystem>> {
    vec![
        Box::new(double_pendulum::DoublePendulumCli),
        Box::new(chain::ChainCli),
        Box::new(dna::DnaCli),
        Box::new(water::WaterCli),
        Box::new(rigid_body::RigidBodyCli),
        Box::new(kremer_grest::KremerGrestCli),
        Box::new(water_box::WaterBoxCli),
        Box::new(alkane::FLEXIBLE),
        Box::new(alkane::RIGID),
    ]
}

/// `--gravity`, declared by the pendula (double-pendulum, chain) for `zs run` and `zs eval`.
pub(crate) fn gravity_option() -> clap::Arg {
    clap::Arg::new("gravity")
        .long("gravity")
        .value_parser(clap::value_parser!(GravitySign))
        .help("Sign of gravity in V (pendula)")
}

/// `--write-data`: the final state `q`, `v` (sites of 3 coordinates, in `data`'s atom order)
/// written as a LAMMPS data file with `data`'s box, types and bonded lists, under `title`.
///
/// # Errors
/// The file cannot be written.
pub fn write_final_data(
    out: &std::path::Path,
    data: &zs_runtime::lammps::DataFile,
    title: String,
    q: &[f64],
    v: &[f64],
) -> Result<(), CliError> {
    let mut end = data.clone();
    end.title = title;
    for (i, (p, u)) in end
        .positions
        .iter_mut()
        .zip(&mut end.velocities)
        .enumerate()
    {
        p.copy_from_slice(&q[3 * i..3 * i + 3]);
        u.copy_from_slice(&v[3 * i..3 * i + 3]);
    }
    end.has_velocities = true;
    zs_runtime::files::write_atomic(out, end.to_text().as_bytes())
        .map_err(|e| CliError::io("write", out, e))?;
    say!("  data file        {} (LAMMPS read_data)", out.display());
    Ok(())
}

/// What the set-up line says of the order an assembled system holds its bodies in: nothing
/// for the file's own order, a note for the spatial order ([`zs_runtime::assembly::BodyOrder`]).
pub fn order_note<T: zs_runtime::assembly::Terms<D>, const D: usize>(
    system: &zs_runtime::assembly::Assembled<T, D>,
) -> &'static str {
    match system.body_order() {
        zs_runtime::assembly::BodyOrder::Cells => {
            "\n    bodies held in spatial order inside (the file's numbering is not local); every output is in the file's order"
        }
        _ => "",
    }
}

/// `zs eval` of a system read from a data file: the rows of `--in`, or, without it, the file's
/// own configuration (`q`, `v`) as one row.
///
/// # Errors
/// An unreadable state file.
pub fn eval_from_data<M: Model<Vec<f64>>>(
    args: &EvalArgs,
    system: &M,
    q: Vec<f64>,
    v: Vec<f64>,
    names: &[String],
) -> Result<String, CliError> {
    let rows = match &args.input {
        Some(input) => state_file::read(input, names)?,
        None => vec![state_file::Row {
            t: 0.0,
            q,
            v: Some(v),
        }],
    };
    Ok(table(system, &rows, names))
}

/// True when `zs run` holds a condensed-phase system's state in its spatial order
/// ([`zs_runtime::assembly::HeldInside`]): one explicit run — velocity Verlet, or GLA Langevin
/// around it — with nothing that reads the positions in the file's order on its own (a
/// [`super::job::Watch`]), unless `ZS_BODY_ORDER` asks for the order the system was made in
/// ([`zs_runtime::assembly::holds_inside_from_env`]). Then no step permutes anything; the
/// files, checkpoints and the written data file are in the file's order.
fn holds_inside(job: &Job<'_>) -> bool {
    job.p.method == IntegratorName::Verlet
        && job.replicas() == 1
        && job.watch.is_none()
        && zs_runtime::assembly::holds_inside_from_env()
}

/// `zs run` of a condensed-phase system: `job` on `system` (constrained and stiff views of one
/// assembled system), its state held in spatial order for an explicit run (velocity Verlet,
/// the GLA around it; [`zs_runtime::assembly::holds_inside_from_env`]), then the number of
/// neighbour-list builds.
///
/// # Errors
/// What the run reports.
pub fn run_with_neighbors<T: zs_runtime::assembly::Terms<3> + Send + Sync>(
    job: &Job<'_>,
    system: &zs_runtime::assembly::Assembled<T, 3>,
    state: zs_runtime::DynState,
    names: impl Into<CoordinateNames>,
) -> Result<(), CliError> {
    let held = holds_inside(job) && system.hold_in_cells(state.q.as_slice())?;
    if held {
        say!(
            "    state held in spatial order (cells of the neighbour list's reach, re-sorted every {} builds; ZS_RESORT_EVERY, ZS_BODY_ORDER=given); every output in the file's order",
            system.resort_period()
        );
    }
    let done = if held {
        run_held(job, system, state, names.into())
    } else {
        run_assembled(job, system, None, state, names)
    };
    say!(
        "  neighbour lists  {:>14}   builds",
        system.neighbor_builds()
    );
    if system.staleness_tests_skipped() > 0 {
        say!(
            "  staleness tests  {:>14}   skipped (the steps' moves added up to less than half the skin)",
            system.staleness_tests_skipped()
        );
    }
    if system.body_order() == zs_runtime::assembly::BodyOrder::Cells && system.resorts() > 0 {
        say!(
            "  spatial order    {:>14}   re-sorts (every {} builds; ZS_RESORT_EVERY)",
            system.resorts(),
            system.resort_period()
        );
    }
    done
}

/// `job` on an assembled `system` whose state the run holds in its inner order
/// ([`zs_runtime::assembly::Assembled::held_inside`]).
fn run_held<T: zs_runtime::assembly::Terms<3> + Send + Sync>(
    job: &Job<'_>,
    system: &zs_runtime::assembly::Assembled<T, 3>,
    state: zs_runtime::DynState,
    names: CoordinateNames,
) -> Result<(), CliError> {
    use super::job::{DynConstrained, DynStiff};
    system.check_start(state.q.as_slice())?;
    let held = system.held_inside();
    let state = held.state(state);
    let constrained: &DynConstrained<'_> = system;
    let target: &DynStiff<'_> = &held;
    job.run(&[constrained], &[target], state, names)
}

/// `job` on an assembled `system` and its target — the system itself, or (`omega`) its
/// penalized potential — once per evaluation state the job steps at once ([`Job::replicas`]):
/// the system's own, then replicas of its model (`zs temper`: the rank's replicas side by side).
///
/// # Errors
/// What the run reports.
pub fn run_assembled<T, const D: usize>(
    job: &Job<'_>,
    system: &zs_runtime::assembly::Assembled<T, D>,
    omega: Option<f64>,
    state: zs_runtime::DynState,
    names: impl Into<CoordinateNames>,
) -> Result<(), CliError>
where
    T: zs_runtime::assembly::Terms<D> + Send + Sync,
{
    use super::job::{DynConstrained, DynStiff};
    system.check_start(state.q.as_slice())?;
    let more: Vec<_> = (1..job.replicas()).map(|_| system.replica()).collect();
    let states: Vec<_> = core::iter::once(system).chain(&more).collect();
    let systems: Vec<&DynConstrained<'_>> = states.iter().map(|&s| s as _).collect();
    match omega {
        None => {
            let targets: Vec<&DynStiff<'_>> = states.iter().map(|&s| s as _).collect();
            job.run(&systems, &targets, state, names)
        }
        Some(w) => {
            let penalized: Vec<_> = states.iter().map(|s| s.penalized(w)).collect();
            let targets: Vec<&DynStiff<'_>> = penalized.iter().map(|p| p as _).collect();
            job.run(&systems, &targets, state, names)
        }
    }
}

/// The coefficient `gravity` of `V = -gravity·Σ y` for `--gravity` (physical: `-1`).
pub(crate) fn gravity(sign: Option<GravitySign>) -> f64 {
    match sign.unwrap_or(GravitySign::Physical) {
        GravitySign::Physical => -1.0,
        GravitySign::Printed => 1.0,
    }
}

/// `"physical"` or `"printed"`.
pub(crate) fn gravity_name(g: f64) -> &'static str {
    if g < 0.0 {
        "physical"
    } else {
        "printed"
    }
}

/// `--n`, its default, checked against the least value the system takes.
pub(crate) fn count(sys: &dyn CliSystem, n: Option<u64>) -> Result<usize, CliError> {
    let c = sys.accepts().n.expect("a system with --n");
    let n = n.map_or(c.default, |n| n as usize);
    if n < c.least {
        return Err(CliError::BadValue {
            option: "--n",
            value: n.to_string(),
            why: c.too_few,
        });
    }
    Ok(n)
}

/// The options `zs eval` shares with `zs run`, checked against what `args.system` accepts.
pub(crate) fn check_eval_options(args: &EvalArgs) -> Result<(), CliError> {
    let sys = args.system.get();
    let (a, name, all) = (sys.accepts(), sys.name(), args.system.all());
    if args.n.is_some() && a.n.is_none() {
        return Err(CliError::applies_only_to(
            "--n",
            all.which(|s| s.accepts().n.is_some()),
            name,
        ));
    }
    if args.data.is_some() && !a.data {
        return Err(CliError::applies_only_to(
            "--data",
            all.which(|s| s.accepts().data),
            name,
        ));
    }
    if let (Some(_), Err(reason)) = (args.omega, a.constraints) {
        if !a.omega {
            return Err(CliError::does_not_apply("--omega", name, Some(reason)));
        }
    }
    Ok(())
}

/// The CSV text: header, then `V, ∇V` per row.
pub fn table<P: Model<V>, V: Vector>(
    target: &P,
    rows: &[state_file::Row],
    names: &[String],
) -> String {
    let mut g = V::zeros(names.len());
    table_of(rows, names, |q, out| {
        let q = V::try_from_slice(q).expect("rows have the system's size");
        target.gradient_into(&q, &mut g);
        out.copy_from_slice(g.as_slice());
        target.potential_at(&q)
    })
}

/// [`table`] of a potential that is not one [`Model`]: `value_gradient(q, ∇V)` returns `V`.
pub fn table_of(
    rows: &[state_file::Row],
    names: &[String],
    mut value_gradient: impl FnMut(&[f64], &mut [f64]) -> f64,
) -> String {
    let mut out = String::from("potential");
    for n in names {
        let _ = write!(out, ",dV_{n}");
    }
    out.push('\n');
    let mut g = vec![0.0; names.len()];
    for row in rows {
        let v = value_gradient(&row.q, &mut g);
        let _ = write!(out, "{v:e}");
        for x in &g {
            let _ = write!(out, ",{x:e}");
        }
        out.push('\n');
    }
    out
}
