//! `zs run <system>`: integrate a system from the paper's initial state (or `--init FILE`),
//! print a summary and write the trajectory as CSV; optionally under guards, with Langevin
//! noise, with checkpoints, or resumed from one.
//!
//! Written once for every system ([`super::system`] describes each): the options are checked
//! against what the system accepts, the paper's defaults fill in what is not given, and one
//! [`Job`] builds the stepper and drives it ([`super::drive`]). The fixed-size double pendulum
//! (`[f64; 4]`) and rigid body (`[f64; 9]`) are stepped monomorphized; the assembled chain, DNA
//! ring and water cluster (`Vec<f64>`, evaluated on a rayon pool of `--threads`) share one
//! instantiation of every stepper through the type-erased [`DynConstrained`] / [`DynStiff`]:
//! a step's dynamic calls are a handful of nanoseconds next to its assembly.

use std::path::{Path, PathBuf};

use zs_runtime::checkpoint::Resumable;
use zs_runtime::{
    Checkpoint, CheckpointError, ConstrainedModel, ConstraintSpace, Langevin,
    LinearlyImplicitNewmark, Model, Newmark, PushForwardNewmark, Rattle, Shake, ShakeSolver,
    StateOf, Stepper, StiffModel, Vector, VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified,
    ZhangSkeelStiff,
};

use super::error::CliError;
use super::resume::run_meta;
use super::system::{describe, which, CliSystem};
use super::{state_file, IntegratorName, RunArgs};
use crate::rigid_body::{cayley::CayleyEuler, MagnetizedRigidBody};
use crate::water::ClusterGuard;

/// An assembled system's constrained model, type-erased (see the [module docs](self)).
pub(crate) type DynConstrained<'a> = dyn ConstrainedModel<Vec<f64>, Vec<f64>> + Sync + 'a;
/// An assembled system's (penalized) potential, type-erased.
pub(crate) type DynStiff<'a> = dyn StiffModel<Vec<f64>> + Sync + 'a;

/// Run `zs run` with parsed arguments.
///
/// # Errors
/// An option that does not apply, an unusable state file or checkpoint, a failed step.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let sys = describe(args.system);
    check_options(sys, args)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.csv", sys.name())));
    ensure_dir("create the output directory", &out)?;
    if let Some(ck) = &args.checkpoint {
        ensure_dir("create the checkpoint directory", ck)?;
    }
    let resume = match &args.resume {
        Some(path) => Some(Checkpoint::read(path).map_err(|e| match e {
            CheckpointError::Io { source, .. } => CliError::CheckpointRead {
                path: path.clone(),
                source,
            },
            source => CliError::Resume {
                path: path.clone(),
                source,
            },
        })?),
        None => None,
    };
    let omega = args.omega.unwrap_or_else(|| sys.omega());
    let (h, t_end, beta) = sys.defaults(args.integrator, omega);
    let p = Profile {
        h: args.h.unwrap_or(h),
        t_end: args.t_end.unwrap_or(t_end),
        omega,
        beta: args.beta.unwrap_or(beta),
    };
    let meta = run_meta(args, sys.name(), &out, &p);
    sys.run(
        args,
        Job {
            args,
            out,
            resume: resume.as_ref(),
            p,
            meta,
            xyz: None,
            cluster_guard: None,
            orthogonality: false,
        },
    )
}

/// Every option that does not apply to the system or the integrator is an error (one line).
fn check_options(sys: &dyn CliSystem, args: &RunArgs) -> Result<(), CliError> {
    use IntegratorName as I;
    let (a, name, method) = (sys.accepts(), sys.name(), args.integrator);
    let method_name = clap_name(method);
    if args.n.is_some() && a.n.is_none() {
        return Err(CliError::applies_only_to(
            "--n",
            which(|a| a.n.is_some()),
            name,
        ));
    }
    if args.threads.is_some() && !a.threads {
        return Err(CliError::applies_only_to(
            "--threads",
            format!("the assembled systems {}", which(|a| a.threads)),
            name,
        ));
    }
    if args.gravity.is_some() && !a.gravity {
        return Err(CliError::applies_only_to(
            "--gravity",
            format!("the pendula {}", which(|a| a.gravity)),
            name,
        ));
    }
    if args.b_mu.is_some() && !a.rigid_body {
        return Err(CliError::applies_only_to(
            "--b-mu",
            which(|a| a.rigid_body),
            name,
        ));
    }
    if method == I::LieEuler && !a.rigid_body {
        return Err(CliError::does_not_apply(
            "--integrator lie-euler",
            name,
            Some("it integrates the rigid body on SO(3)"),
        ));
    }
    if let Err(reason) = a.constraints {
        for (given, option) in [
            (args.omega.is_some() && !a.omega, "--omega".to_string()),
            (args.max_residual.is_some(), "--max-residual".to_string()),
            (
                matches!(method, I::Shake | I::Rattle | I::ZssStiff),
                format!("--integrator {method_name}"),
            ),
        ] {
            if given {
                return Err(CliError::does_not_apply(option, name, Some(reason)));
            }
        }
    }
    if method == I::LieEuler {
        for (given, option) in [
            (args.omega.is_some(), "--omega"),
            (args.beta.is_some(), "--beta"),
            (args.gamma.is_some(), "--gamma/--kt"),
        ] {
            if given {
                return Err(CliError::does_not_apply(
                    option,
                    "lie-euler",
                    Some("it integrates on SO(3), without penalty, solve or noise"),
                ));
            }
        }
    }
    if let Some(r) = args.max_radius.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(CliError::BadValue {
            option: "--max-radius",
            value: r.to_string(),
            why: "must be a positive distance in Å",
        });
    }
    for (given, option) in [
        (args.max_radius.is_some(), "--max-radius"),
        (args.minimize, "--minimize"),
    ] {
        if given && !a.cluster {
            return Err(CliError::applies_only_to(
                option,
                which(|a| a.cluster),
                name,
            ));
        }
    }
    if !method.is_penalty_method() && args.omega.is_some() {
        return Err(CliError::does_not_apply(
            "--omega",
            method_name,
            Some(
                "it integrates the constrained system with Lagrange multipliers, without a penalty",
            ),
        ));
    }
    if args.max_condition.is_some() && !matches!(method, I::Zs | I::Zss) {
        return Err(CliError::applies_only_to(
            "--max-condition",
            "the linearly implicit integrators zs and zss",
            method_name,
        ));
    }
    if cfg!(not(feature = "faer")) && matches!(method, I::Shake | I::Rattle) && a.threads {
        return Err(CliError::NeedsFeature {
            what: format!(
                "--integrator {method_name} on {name} solves SHAKE's sparse Newton system with faer's LU"
            ),
            feature: "faer",
            command: "cargo run --release -p zs-systems --features faer --bin zs -- run ...".into(),
        });
    }
    if args.init.is_some() && args.resume.is_some() {
        return Err(CliError::Exclusive(
            "--init",
            "--resume",
            "a resumed run continues from its checkpoint's state",
        ));
    }
    Ok(())
}

/// The command-line spelling of an integrator.
pub(crate) fn clap_name(m: IntegratorName) -> String {
    use clap::ValueEnum;
    m.to_possible_value()
        .map_or_else(|| format!("{m:?}"), |v| v.get_name().to_string())
}

/// Create the directory `file` goes into when it is missing.
fn ensure_dir(action: &'static str, file: &Path) -> Result<(), CliError> {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => {
            std::fs::create_dir_all(d).map_err(|e| CliError::io(action, d, e))
        }
        _ => Ok(()),
    }
}

/// The paper's parameters of a system, overridden by the command line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Profile {
    pub h: f64,
    pub t_end: f64,
    pub omega: f64,
    pub beta: f64,
}

/// A stepper chosen on the command line: steps, checkpoints, reports its solves.
pub trait CliStepper<P: ?Sized, V>: Stepper<P, V> + Resumable {
    /// `(Cholesky solves, fallbacks)` for the summary, when the method solves.
    fn solves(&self) -> Option<(u64, u64)> {
        None
    }
}

macro_rules! cli_stepper {
    ($bound:ident, $($ty:ident),*) => {$(
        impl<P: $bound<V> + ?Sized, V: Vector> CliStepper<P, V> for $ty<V> {
            fn solves(&self) -> Option<(u64, u64)> {
                let s = self.stats();
                Some((s.cholesky_solves, s.lu_fallbacks))
            }
        }
    )*};
}
cli_stepper!(
    Model,
    ZhangSkeel,
    ZhangSkeelSimplified,
    Newmark,
    LinearlyImplicitNewmark,
    PushForwardNewmark
);
cli_stepper!(StiffModel, ZhangSkeelStiff);

impl<P: Model<V> + ?Sized, V: Vector> CliStepper<P, V> for VelocityVerlet<V> {}

impl CliStepper<MagnetizedRigidBody, [f64; 9]> for CayleyEuler {}

impl<S: ConstrainedModel<V, C> + ?Sized, V: ConstraintSpace<C>, C: Vector> CliStepper<S, V>
    for Shake<V, C>
{
}
impl<S: ConstrainedModel<V, C> + ?Sized, V: ConstraintSpace<C>, C: Vector> CliStepper<S, V>
    for Rattle<V, C>
{
}

impl<'a, P: Model<V> + ?Sized, V: Vector> CliStepper<P, V>
    for Langevin<Box<dyn CliStepper<P, V> + 'a>>
{
    fn solves(&self) -> Option<(u64, u64)> {
        self.inner().solves()
    }
}

/// One `zs run` invocation: its arguments, output, checkpoint to resume, parameters, and what
/// the system adds to the CSV.
pub(crate) struct Job<'a> {
    pub args: &'a RunArgs,
    pub out: PathBuf,
    pub resume: Option<&'a Checkpoint>,
    pub p: Profile,
    /// The arguments saved in checkpoints (and compared on resume).
    pub meta: Checkpoint,
    /// Atom symbols (one per 3 coordinates): also write an extended XYZ trajectory beside the
    /// CSV (`<out>.xyz`).
    pub xyz: Option<Vec<String>>,
    /// `--max-radius` (water): stop when a molecule leaves the cluster.
    pub cluster_guard: Option<ClusterGuard>,
    /// The rigid body: an `orthogonality_defect` column `‖RᵀR − I‖_F` and its maximum in the
    /// summary.
    pub orthogonality: bool,
}

impl Job<'_> {
    /// Also write the positions as extended XYZ, atoms named by `symbols`.
    pub fn with_xyz(mut self, symbols: Vec<String>) -> Self {
        self.xyz = Some(symbols);
        self
    }

    /// Run `f` on a rayon pool of `--threads` threads (rayon's default without it): the terms
    /// of an assembled system are evaluated there, and nothing is allocated per step.
    pub fn in_pool<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let mut builder = rayon::ThreadPoolBuilder::new();
        if let Some(t) = self.args.threads {
            builder = builder.num_threads(t as usize);
        }
        match builder.build() {
            Ok(pool) => pool.install(f),
            Err(_) => f(),
        }
    }

    /// The paper's start, or the last row of `--init`.
    pub fn initial_state<V: Vector>(&self, paper: StateOf<V>) -> Result<StateOf<V>, CliError> {
        let Some(path) = &self.args.init else {
            return Ok(paper);
        };
        let n = paper.q.len();
        let (t, q, v) = state_file::last_state(path, n)?;
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
        system: &S,
        penalized: &P,
        state: StateOf<V>,
        names: Vec<String>,
    ) -> Result<(), CliError>
    where
        S: ConstrainedModel<V, C> + Sync + ?Sized,
        P: StiffModel<V> + Sync + ?Sized,
        V: ConstraintSpace<C>,
        C: Vector,
    {
        let (args, p) = (self.args, self.p);
        if let (Some(saved), Some(path)) = (self.resume, &args.resume) {
            super::resume::check_same_run(&self.meta, saved, path)?;
        }
        let method = args.integrator;
        let beta_text = if method.solves() {
            format!(", β = {}", p.beta)
        } else {
            String::new()
        };
        let target_text = if !method.is_penalty_method() {
            "the constrained system (Lagrange multipliers)".to_string()
        } else if system.constraint_count() > 0 {
            format!("the penalized potential V + ½ω²|g|², ω = {}", p.omega)
        } else if self.orthogonality {
            format!(
                "V = Bμ R33 + ½ω²‖RᵀR − I‖², ω = {} (the penalty is part of V)",
                p.omega
            )
        } else {
            "V (no constraints)".to_string()
        };
        let langevin = match (args.gamma, args.kt) {
            (Some(g), Some(kt)) => format!(
                ", GLA Langevin γ = {g}, kT = {kt}, seed {}",
                args.seed.unwrap_or(0)
            ),
            _ => String::new(),
        };
        println!(
            "    integrator {}, h = {}, T = {}{beta_text}{langevin}, on {target_text}",
            clap_name(method),
            p.h,
            p.t_end
        );
        if method.is_penalty_method() {
            let stepper = self.maybe_langevin(self.penalty_stepper::<P, V>());
            self.drive(system, penalized, stepper, state, names)
        } else {
            // Newton on the m × m system (quadratic convergence): the Gauss–Seidel SHAKE
            // iteration converges linearly, too slowly on a chain of 10 links to reach 1e-12
            // in 100 sweeps (the paper solves with `fsolve`).
            let stepper: Box<dyn CliStepper<S, V>> = match method {
                IntegratorName::Shake => {
                    Box::new(Shake::<V, C>::new(p.h).with_solver(ShakeSolver::Newton))
                }
                _ => Box::new(Rattle::<V, C>::new(p.h).with_solver(ShakeSolver::Newton)),
            };
            let stepper = self.maybe_langevin(stepper);
            self.drive(system, system, stepper, state, names)
        }
    }

    /// The penalty method of `--integrator` (not SHAKE, RATTLE or lie-euler, which
    /// [`Job::run`] and the rigid body's description handle).
    fn penalty_stepper<P: StiffModel<V> + ?Sized, V: Vector>(&self) -> Box<dyn CliStepper<P, V>> {
        let (h, beta) = (self.p.h, self.p.beta);
        let limit = self.args.max_condition;
        match self.args.integrator {
            IntegratorName::Zs => {
                let mut s = ZhangSkeel::new(beta, h);
                if let Some(c) = limit {
                    s = s.with_max_condition(c);
                }
                Box::new(s)
            }
            IntegratorName::Zss => {
                let mut s = ZhangSkeelSimplified::new(beta, h);
                if let Some(c) = limit {
                    s = s.with_max_condition(c);
                }
                Box::new(s)
            }
            IntegratorName::ZssStiff => Box::new(ZhangSkeelStiff::new(beta, h)),
            IntegratorName::Newmark => Box::new(Newmark::new(beta, h)),
            IntegratorName::Newmark1 => Box::new(LinearlyImplicitNewmark::new(beta, h)),
            IntegratorName::Pushforward => Box::new(PushForwardNewmark::new(beta, h)),
            IntegratorName::Verlet => Box::new(VelocityVerlet::new(h)),
            IntegratorName::Shake | IntegratorName::Rattle | IntegratorName::LieEuler => {
                unreachable!("SHAKE, RATTLE and lie-euler are not penalty methods")
            }
        }
    }

    /// Wrap in GLA Langevin when `--gamma` and `--kt` are given.
    fn maybe_langevin<'s, P: Model<V> + ?Sized + 's, V: Vector>(
        &self,
        inner: Box<dyn CliStepper<P, V> + 's>,
    ) -> Box<dyn CliStepper<P, V> + 's> {
        match (self.args.gamma, self.args.kt) {
            (Some(gamma), Some(kt)) => {
                Box::new(Langevin::new(inner, gamma, kt, self.args.seed.unwrap_or(0)))
            }
            _ => inner,
        }
    }
}
