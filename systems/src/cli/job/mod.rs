//! One `zs run` invocation once its options are checked ([`Job`]): the start state, the
//! stepper the options name ([`stepper`]), the observers and the driver loop ([`drive`]), and
//! what a checkpoint records of the run ([`resume`]).
//!
//! The fixed-size double pendulum (`[f64; 4]`) and rigid body (`[f64; 9]`) are stepped
//! monomorphized; the assembled chain, DNA ring and water cluster (`Vec<f64>`, evaluated on a
//! rayon pool of `--threads`) share one instantiation of every stepper through the type-erased
//! [`DynConstrained`] / [`DynStiff`]: a step's dynamic calls are a handful of nanoseconds next
//! to its assembly.

mod drive;
pub(crate) mod resume;
mod stepper;
mod temper;

use std::path::PathBuf;

use zs_runtime::{
    Checkpoint, ConstrainedModel, ConstraintSpace, GuardViolation, MoveGuard, Rattle, Settle,
    Shake, ShakeSolver, StateOf, StiffModel, Symbols, Vector,
};

pub(crate) use stepper::CliStepper;
pub use temper::TemperCheckpoint;
pub(crate) use temper::TemperPlan;

use super::error::CliError;
use super::{state_file, IntegratorName, RunArgs};

/// The coordinates' names: a run's CSV header, and the columns a state file (`--init`) must
/// have. `x1, y1, z1, …` are counted rather than made (a million beads' would be three million
/// strings, made only to be counted), or the names are listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinateNames {
    /// `x1, y1, z1, …` up to `z{bodies}` ([`zs_runtime::output::xyz_name`]).
    Xyz {
        /// The bodies, numbered from 1.
        bodies: usize,
    },
    /// The names, in order.
    Listed(Vec<String>),
}

impl CoordinateNames {
    /// The names as a list: made for [`CoordinateNames::Xyz`] (to read a state file, not to
    /// head a run's CSV).
    pub fn listed(&self) -> std::borrow::Cow<'_, [String]> {
        match self {
            CoordinateNames::Xyz { bodies } => {
                (0..3 * bodies).map(zs_runtime::output::xyz_name).collect()
            }
            CoordinateNames::Listed(names) => names.into(),
        }
    }
}

impl From<Vec<String>> for CoordinateNames {
    fn from(names: Vec<String>) -> Self {
        CoordinateNames::Listed(names)
    }
}

/// An assembled system's constrained model, type-erased (see the [module docs](self)).
pub(crate) type DynConstrained<'a> = dyn ConstrainedModel<Vec<f64>, Vec<f64>> + Sync + 'a;
/// An assembled system's (penalized) potential, type-erased.
pub(crate) type DynStiff<'a> = dyn StiffModel<Vec<f64>> + Sync + 'a;

/// What a system watches in a run beside the shared observers ([`Job::with_watch`]): a guard
/// on the positions, a CSV column, a summary line. Each method has a default that does
/// nothing.
pub trait Watch: Send {
    /// A CSV column of the positions, after the shared ones: its name and value.
    fn column(&self) -> Option<Column> {
        None
    }
    /// Guard: reject the positions a step produced; the run stops with a typed error and
    /// keeps its trajectory up to the last good step.
    ///
    /// # Errors
    /// The violated limit.
    fn check(&mut self, q: &[f64]) -> Result<(), GuardViolation> {
        let _ = q;
        Ok(())
    }
    /// Every recorded-or-not state, the start included.
    fn observe(&mut self, q: &[f64]) {
        let _ = q;
    }
    /// A line of the run's summary (after the shared ones).
    fn summary(&self) -> Option<String> {
        None
    }
}

/// A CSV column of the positions: its name and its value.
pub type Column = (&'static str, fn(&[f64]) -> f64);

/// Makes a run's [`Watch`].
pub type MakeWatch<'a> = dyn Fn() -> Box<dyn Watch> + Sync + 'a;

/// What a run does with its final `q` and `v` once it completed.
pub type AtEnd<'a> = dyn Fn(&[f64], &[f64]) -> Result<(), CliError> + Sync + 'a;

/// Run `f` on a rayon pool of `threads` threads (`--threads`; rayon's default without it): a
/// system is built there and its terms evaluated there, and nothing is allocated per step.
/// An assembled system is built inside: it is evaluated by the thread that holds it.
pub(crate) fn in_pool<T: Send>(threads: Option<u64>, f: impl FnOnce() -> T + Send) -> T {
    if rayon::current_thread_index().is_some() {
        // Already on a pool (a replica of `zs ensemble`, side by side with the others on the
        // rank's `--threads`): its threads are the run's.
        return f();
    }
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        builder = builder.num_threads(t as usize);
    }
    match builder.build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// The paper's parameters of a system, overridden by the command line.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// The step.
    pub h: f64,
    /// The final time.
    pub t_end: f64,
    /// The penalty frequency ω.
    pub omega: f64,
    /// Z&S's (and Newmark's) β.
    pub beta: f64,
    /// Record every `every`-th step.
    pub every: u64,
    /// The integrator (`--integrator`, or the system's default).
    pub method: IntegratorName,
}

/// One `zs run` invocation: its arguments, output, checkpoint to resume, parameters, and what
/// the system adds to the CSV.
pub struct Job<'a> {
    pub(crate) args: &'a RunArgs,
    pub(crate) out: PathBuf,
    pub(crate) resume: Option<&'a Checkpoint>,
    pub(crate) p: Profile,
    /// The arguments saved in checkpoints (and compared on resume).
    pub(crate) meta: Checkpoint,
    /// Atom symbols (one per 3 coordinates): also write an extended XYZ trajectory beside the
    /// CSV (`<out>.xyz`).
    pub(crate) xyz: Option<Symbols>,
    /// What the system watches beside the shared observers (water's cluster guard, the rigid
    /// body's orthogonality): made fresh for each run.
    pub(crate) watch: Option<&'a MakeWatch<'a>>,
    /// The set-up line's name for the integrated potential when the system gives one.
    pub(crate) potential: Option<String>,
    /// Under a pair cutoff: stop when a body moves more than the neighbour-list skin in a step.
    pub(crate) move_guard: Option<MoveGuard>,
    /// A periodic box `(lo, sides)`: the XYZ frames carry `Lattice=` and wrapped positions.
    pub(crate) lattice: Option<([f64; 3], [f64; 3])>,
    /// Called with the final `q` and `v` of a run that completed (`--write-data`).
    pub(crate) at_end: Option<&'a AtEnd<'a>>,
    /// `zs temper`: replica exchange over this ladder instead of one run.
    pub(crate) temper: Option<&'a TemperPlan<'a>>,
    /// `--integrator settle`: the rigid molecules (bodies O, H, H) and their O–H and H–H
    /// distances.
    pub(crate) settle: Option<(&'a [[u32; 3]], f64, f64)>,
}

impl<'a> Job<'a> {
    /// The job of `args` writing `out` (resuming `resume`), with parameters `p` and checkpoint
    /// metadata `meta`; nothing a system adds (XYZ, guards, a box) and no replica exchange.
    pub(crate) fn new(
        args: &'a RunArgs,
        out: PathBuf,
        resume: Option<&'a Checkpoint>,
        p: Profile,
        meta: Checkpoint,
    ) -> Self {
        Job {
            args,
            out,
            resume,
            p,
            meta,
            xyz: None,
            watch: None,
            potential: None,
            move_guard: None,
            lattice: None,
            at_end: None,
            temper: None,
            settle: None,
        }
    }
}

impl<'a> Job<'a> {
    /// How many evaluation states of the model the job steps at once ([`Job::run`] takes a
    /// system and a target for each): one for a run; for `zs temper`, one per replica this
    /// rank holds, stepped side by side on its pool.
    pub fn replicas(&self) -> usize {
        self.temper
            .map_or(1, |plan| plan.ranks.block(plan.kt.len()).len())
    }

    /// The run's parameters: the defaults of the system overridden by the command line.
    pub fn profile(&self) -> Profile {
        self.p
    }

    /// True when the run continues from a checkpoint (`--resume`): a start that is built
    /// only once (a minimisation, thermal velocities) is not built again.
    pub fn is_resumed(&self) -> bool {
        self.resume.is_some()
    }

    /// A periodic box `(lo, sides)`: the XYZ frames carry `Lattice=` and wrapped positions.
    pub fn with_lattice(mut self, lo: [f64; 3], sides: [f64; 3]) -> Self {
        self.lattice = Some((lo, sides));
        self
    }

    /// Stop (a typed error, the trajectory kept) when a body moves more than `guard` allows
    /// in one step: under a pair cutoff, half the neighbour list's skin.
    pub fn with_move_guard(mut self, guard: MoveGuard) -> Self {
        self.move_guard = Some(guard);
        self
    }

    /// Watch the run with what `make` makes ([`Watch`]: a guard, a column, a summary line).
    pub fn with_watch(mut self, make: &'a MakeWatch<'a>) -> Self {
        self.watch = Some(make);
        self
    }

    /// Name the integrated potential on the set-up line (default: "V (no constraints)" or the
    /// penalized potential).
    pub fn with_potential(mut self, text: impl Into<String>) -> Self {
        self.potential = Some(text.into());
        self
    }

    /// Call `at_end` with the final `q` and `v` of a run that completed (`--write-data`).
    pub fn with_at_end(mut self, at_end: &'a AtEnd<'a>) -> Self {
        self.at_end = Some(at_end);
        self
    }

    /// Also write the positions as extended XYZ, atoms named by `symbols`.
    pub fn with_xyz(mut self, symbols: impl Into<Symbols>) -> Self {
        self.xyz = Some(symbols.into());
        self
    }

    /// The paper's start, or the last row of `--init` (a state file of this system: its
    /// coordinates `names`).
    pub fn initial_state<V: Vector>(
        &self,
        paper: StateOf<V>,
        names: &[String],
    ) -> Result<StateOf<V>, CliError> {
        self.initial_state_with(paper, || names.into())
    }

    /// [`Job::initial_state`] of a system whose coordinates are `names`, listed only when a
    /// state file is read.
    pub fn initial_state_of<V: Vector>(
        &self,
        paper: StateOf<V>,
        names: &CoordinateNames,
    ) -> Result<StateOf<V>, CliError> {
        self.initial_state_with(paper, || names.listed())
    }

    /// The start, the names made by `names` when a state file is read.
    fn initial_state_with<'n, V: Vector>(
        &self,
        paper: StateOf<V>,
        names: impl FnOnce() -> std::borrow::Cow<'n, [String]>,
    ) -> Result<StateOf<V>, CliError> {
        let Some(path) = &self.args.init else {
            return Ok(paper);
        };
        let (t, q, v) = state_file::last_state(path, &names())?;
        if t >= self.p.t_end {
            return Err(CliError::InitAfterEnd {
                path: path.clone(),
                t,
                t_end: self.p.t_end,
            });
        }
        let conv = |x: &[f64]| V::try_from_slice(x).expect("the state file has the system's size");
        Ok(StateOf::at(conv(&q), conv(&v), t))
    }

    /// Check the checkpoint, print the set-up, make the stepper and drive it.
    pub fn run<S, P, V, C>(
        &self,
        systems: &[&S],
        targets: &[&P],
        state: StateOf<V>,
        names: impl Into<CoordinateNames>,
    ) -> Result<(), CliError>
    where
        S: ConstrainedModel<V, C> + Sync + ?Sized,
        P: StiffModel<V> + Sync + ?Sized,
        V: ConstraintSpace<C> + Send,
        C: Vector,
    {
        // One instantiation of the run per system, whatever the names' type.
        self.run_named(systems, targets, state, names.into())
    }

    fn run_named<S, P, V, C>(
        &self,
        systems: &[&S],
        targets: &[&P],
        state: StateOf<V>,
        names: CoordinateNames,
    ) -> Result<(), CliError>
    where
        S: ConstrainedModel<V, C> + Sync + ?Sized,
        P: StiffModel<V> + Sync + ?Sized,
        V: ConstraintSpace<C> + Send,
        C: Vector,
    {
        assert!(
            systems.len() == self.replicas() && targets.len() == self.replicas(),
            "one system and one target per evaluation state the job steps"
        );
        let (system, penalized) = (systems[0], targets[0]);
        let (args, p) = (self.args, self.p);
        if let (Some(saved), Some(path)) = (self.resume, &args.resume) {
            resume::check_same_run(&self.meta, saved, path)?;
        }
        let method = p.method;
        let beta_text = if method.solves() {
            format!(", β = {}", p.beta)
        } else {
            String::new()
        };
        let target_text = if method == IntegratorName::Settle {
            "rigid three-site molecules (SETTLE)".to_string()
        } else if !method.is_penalty_method() {
            "the constrained system (Lagrange multipliers)".to_string()
        } else if system.constraint_count() > 0 {
            format!("the penalized potential V + ½ω²|g|², ω = {}", p.omega)
        } else if let Some(text) = &self.potential {
            text.clone()
        } else {
            "V (no constraints)".to_string()
        };
        let langevin = match (self.temper, args.gamma, args.kt) {
            (Some(plan), ..) => format!(
                ", GLA Langevin γ = {}, replica exchange over kT = {:?} every {} steps, seeds {}…{}",
                plan.gamma,
                plan.kt,
                plan.every,
                plan.seed,
                plan.seed + plan.kt.len() as u64 - 1
            ),
            (None, Some(g), Some(kt)) => format!(
                ", GLA Langevin γ = {g}, kT = {kt}, seed {}",
                args.seed.unwrap_or(0)
            ),
            _ => String::new(),
        };
        say!(
            "    integrator {}, h = {}, T = {}{beta_text}{langevin}, on {target_text}",
            method.clap_name(),
            p.h,
            p.t_end
        );
        if method.is_penalty_method() {
            let make = || self.penalty_stepper::<P, V>();
            if let Some(plan) = self.temper {
                return self.temper(systems, targets, &make, state, names, plan);
            }
            self.drive(system, penalized, self.maybe_langevin(make()), state, names)
        } else {
            // Newton on the m × m system (quadratic convergence): the Gauss–Seidel SHAKE
            // iteration converges linearly, too slowly on a chain of 10 links to reach 1e-12
            // in 100 sweeps (the paper solves with `fsolve`).
            let make = || -> Box<dyn CliStepper<S, V>> {
                match method {
                    IntegratorName::Shake => {
                        Box::new(Shake::<V, C>::new(p.h).with_solver(ShakeSolver::Newton))
                    }
                    IntegratorName::Settle => {
                        // Without molecules (run.rs admits settle only for systems that give
                        // them) it is velocity Verlet.
                        let (molecules, d_oh, d_hh) = self.settle.unwrap_or((&[], 1.0, 1.0));
                        Box::new(Settle::<V>::new(p.h, molecules.to_vec(), d_oh, d_hh))
                    }
                    _ => Box::new(Rattle::<V, C>::new(p.h).with_solver(ShakeSolver::Newton)),
                }
            };
            if let Some(plan) = self.temper {
                return self.temper(systems, systems, &make, state, names, plan);
            }
            self.drive(system, system, self.maybe_langevin(make()), state, names)
        }
    }
}
