//! `zs run <system>`: integrate a system from the paper's initial state (or `--init FILE`),
//! print a summary and write the trajectory as CSV; optionally under guards, with Langevin
//! noise, with checkpoints, or resumed from one.
//!
//! One driver (`Job::drive`) serves every system and integrator: the fixed-size double
//! pendulum (`[f64; 4]`) and the assembled chain and DNA ring (`Vec<f64>`, evaluated on a rayon
//! pool of `--threads`), the penalty methods on `V + ½ω²|g|²` and SHAKE/RATTLE on the
//! constrained system, each optionally wrapped in GLA Langevin.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zs_runtime::checkpoint::Resumable;
use zs_runtime::driver::{self, Checkpointing, RunSummary};
use zs_runtime::observers::{EnergyObserver, FnObserver, Observer};
use zs_runtime::output::{incomplete_marker_of, CsvRecorder};
use zs_runtime::xyz::XyzRecorder;
use zs_runtime::{
    Checkpoint, CheckpointError, ConstrainedModel, ConstraintGuard, ConstraintObserver,
    ConstraintSpace, EnergyGuard, Langevin, LinearlyImplicitNewmark, MechanicalSystem, Model,
    Newmark, PushForwardNewmark, Rattle, Shake, ShakeSolver, StateOf, Stepper, StiffModel, Vector,
    VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified, ZhangSkeelStiff,
};

use super::{state_file, GravitySign, IntegratorName, RunArgs, SystemName};
use crate::chain::{self, PendulumChain};
use crate::dna::{self, DnaChain};
use crate::double_pendulum::{self, DoublePendulum};
use crate::rigid_body::{self, cayley::CayleyEuler, MagnetizedRigidBody};
use crate::water::{self, ClusterGuard, Water};

/// Run `zs run` with parsed arguments; `Err` is the one-line message to print.
pub fn run(args: &RunArgs) -> Result<(), String> {
    check_options(args)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.csv", args.system.name())));
    ensure_dir("output", &out)?;
    if let Some(ck) = &args.checkpoint {
        ensure_dir("checkpoint", ck)?;
    }
    let resume = match &args.resume {
        Some(path) => Some(Checkpoint::read(path).map_err(|e| match e {
            CheckpointError::Io { source, .. } => {
                format!("cannot read the checkpoint {}: {source}", path.display())
            }
            e => format!("cannot resume from {}: {e}", path.display()),
        })?),
        None => None,
    };
    let gravity = match args.gravity.unwrap_or(GravitySign::Physical) {
        GravitySign::Physical => -1.0,
        GravitySign::Printed => 1.0,
    };
    let seed = args.seed.unwrap_or(0);
    match args.system {
        SystemName::DoublePendulum => {
            let system = DoublePendulum {
                gravity,
                ..DoublePendulum::paper()
            };
            let omega = args.omega.unwrap_or(double_pendulum::OMEGA);
            let job = Job::new(args, out, resume.as_ref(), profile(args, omega));
            let state = job.initial_state(DoublePendulum::initial_state())?;
            println!(
                "zs: double pendulum (Tao & Owhadi §4.1), gravity {} (V = {}(y1 + y2)), L1 = {}, L2 = {:.6}",
                gravity_name(gravity),
                if gravity < 0.0 { "+" } else { "-" },
                system.l1,
                system.l2
            );
            let names = ["x1", "y1", "x2", "y2"].map(String::from).to_vec();
            job.run(&system, &system.penalized(omega), state, names)
        }
        SystemName::Chain => {
            let n = args.n.unwrap_or(chain::N as u64) as usize;
            let system = PendulumChain {
                gravity,
                ..PendulumChain::paper()
            }
            .assemble(n);
            let omega = args.omega.unwrap_or(chain::OMEGA);
            let job = Job::new(args, out, resume.as_ref(), profile(args, omega));
            let state = job.initial_state(PendulumChain::initial_state(n))?;
            println!(
                "zs: chain of {n} pendula (Tao & Owhadi §4.2), gravity {} (V = {}Σ y_i), L = √5, pivot pinned at the origin",
                gravity_name(gravity),
                if gravity < 0.0 { "+" } else { "-" },
            );
            let names = PendulumChain::coordinate_names(n);
            in_pool(args, || {
                job.run(&system, &system.penalized(omega), state, names)
            })
        }
        SystemName::Dna => {
            let n = args.n.unwrap_or(dna::N as u64) as usize;
            if n < 3 {
                return Err(format!("--n {n}: a DNA ring needs at least 3 base pairs"));
            }
            let system = DnaChain::paper().assemble(n);
            let job = Job::new(args, out, resume.as_ref(), profile(args, 0.0));
            let state = job.initial_state(DnaChain::initial_state(n, seed))?;
            println!(
                "zs: DNA ring of {n} base pairs (Tao & Owhadi §4.4), ε = 1/1400, a = 7, x0 = 0.3, initial noise seed {seed}"
            );
            let names = DnaChain::coordinate_names(n);
            in_pool(args, || job.run(&system, &system, state, names))
        }
        SystemName::Water => {
            let n = args.n.unwrap_or(water::N as u64) as usize;
            if n == 0 {
                return Err("--n 0: a water cluster needs at least one molecule".into());
            }
            let w = Water::tip3p();
            let system = w.assemble(n);
            let omega = args.omega.unwrap_or(water::OMEGA);
            let job = Job::new(args, out, resume.as_ref(), profile(args, omega))
                .with_xyz(Water::atom_symbols(n))
                .with_cluster_guard(args.max_radius);
            let built = w.cluster(n, water::SPACING, seed);
            let mut state = job.initial_state(system.state(built, vec![0.0; 9 * n]))?;
            println!(
                "zs: cluster of {n} rigid TIP3P waters (Tao & Owhadi §4.3), open (all pairs, no cutoff), AKMA units; start {}",
                if args.init.is_some() { "from --init".to_string() } else { format!("on a {} Å grid, orientations from seed {seed}", water::SPACING) }
            );
            if args.minimize && resume.is_none() {
                let penalized = system.penalized(omega);
                let fire = zs_runtime::minimize::Fire::new(1e-3, 1e-4, 2_000_000);
                let (e0, done) = in_pool(args, || {
                    let e0 = penalized.potential_at(&state.q);
                    (e0, fire.minimize(&penalized, &mut state.q))
                });
                let done = done.map_err(|e| format!("--minimize: {e}"))?;
                println!(
                    "    minimized: V_ω {e0:.4} -> {:.4} kcal/mol in {} FIRE steps (max force {:.1e})",
                    done.energy, done.steps, done.max_force
                );
            }
            if let (Some(kt), None) = (args.kt, resume.as_ref()) {
                if args.init.is_none() {
                    state.v = water::thermal_velocities(&w, &state.q, kt, seed);
                }
            }
            let names = Water::coordinate_names(n);
            in_pool(args, || {
                job.run(&system, &system.penalized(omega), state, names)
            })
        }
        SystemName::RigidBody => {
            let b_mu = args.b_mu.unwrap_or(rigid_body::B_MU);
            let omega = args.omega.unwrap_or(rigid_body::OMEGA);
            let system = MagnetizedRigidBody { b_mu, omega };
            let job =
                Job::new(args, out, resume.as_ref(), profile(args, omega)).with_orthogonality();
            let state = job.initial_state(MagnetizedRigidBody::initial_state())?;
            println!(
                "zs: magnetized rigid body (Tao & Owhadi §4.5), identity inertia, V = Bμ R33 with Bμ = {b_mu}{}; R(0) = I, Ω(0) = (1, 0.2, 0.1)",
                if args.integrator == IntegratorName::LieEuler {
                    " on SO(3)".to_string()
                } else {
                    format!(" + ½ω²‖RᵀR − I‖², ω = {omega}, M = ½I₉")
                }
            );
            let names = rigid_body::coordinate_names();
            if args.integrator == IntegratorName::LieEuler {
                println!(
                    "    integrator lie-euler (Hamilton–Pontryagin / Cayley variational Euler, eq. 34), h = {}, T = {}",
                    job.p.h, job.p.t_end
                );
                let stepper: Box<dyn CliStepper<MagnetizedRigidBody, [f64; 9]>> =
                    Box::new(CayleyEuler::new(job.p.h));
                job.drive(&system, &system, stepper, state, names)
            } else {
                job.run(&system, &system, state, names)
            }
        }
    }
}

fn gravity_name(g: f64) -> &'static str {
    if g < 0.0 {
        "physical"
    } else {
        "printed"
    }
}

/// Every option that does not apply to the system or the integrator is an error (one line).
fn check_options(args: &RunArgs) -> Result<(), String> {
    let (sys, method) = (args.system.name(), args.integrator);
    let method_name = format!("{method:?}").to_lowercase();
    if args.system == SystemName::Dna {
        for (given, what) in [
            (args.omega.is_some(), "--omega"),
            (args.gravity.is_some(), "--gravity"),
            (args.max_residual.is_some(), "--max-residual"),
        ] {
            if given {
                return Err(format!(
                    "{what} does not apply to dna: it has no constraints"
                ));
            }
        }
        if !method.is_penalty_method() || method == IntegratorName::ZssStiff {
            return Err(format!(
                "--integrator {} does not apply to dna: it has no constraints (nor a stiff part)",
                clap_name(method)
            ));
        }
    }
    if args.system == SystemName::Water && args.gravity.is_some() {
        return Err("--gravity does not apply to water".into());
    }
    if args.b_mu.is_some() && args.system != SystemName::RigidBody {
        return Err(format!("--b-mu applies to rigid-body, not to {sys}"));
    }
    if method == IntegratorName::LieEuler && args.system != SystemName::RigidBody {
        return Err(format!(
            "--integrator lie-euler integrates the rigid body on SO(3), not {sys}"
        ));
    }
    if args.system == SystemName::RigidBody
        && matches!(
            method,
            IntegratorName::ZssStiff | IntegratorName::Shake | IntegratorName::Rattle
        )
    {
        return Err(format!(
            "--integrator {} does not apply to rigid-body: its penalty is part of V (no constraints, no stiff split)",
            clap_name(method)
        ));
    }
    if args.system == SystemName::RigidBody {
        for (given, what) in [
            (args.gravity.is_some(), "--gravity"),
            (args.n.is_some(), "--n"),
            (args.threads.is_some(), "--threads"),
            (args.max_residual.is_some(), "--max-residual"),
        ] {
            if given {
                return Err(format!("{what} does not apply to rigid-body"));
            }
        }
        if method == IntegratorName::LieEuler {
            for (given, what) in [
                (args.omega.is_some(), "--omega"),
                (args.beta.is_some(), "--beta"),
                (args.gamma.is_some(), "--gamma/--kt"),
            ] {
                if given {
                    return Err(format!(
                        "{what} does not apply to lie-euler: it integrates on SO(3), without penalty, solve or noise"
                    ));
                }
            }
        }
    }
    if let Some(r) = args.max_radius.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(format!(
            "--max-radius {r}: must be a positive distance in Å"
        ));
    }
    if args.max_radius.is_some() && args.system != SystemName::Water {
        return Err(format!("--max-radius applies to water, not to {sys}"));
    }
    if args.minimize && args.system != SystemName::Water {
        return Err(format!("--minimize applies to water, not to {sys}"));
    }
    if args.system == SystemName::DoublePendulum {
        if args.n.is_some() {
            return Err("--n applies to chain, dna and water, not to double-pendulum".into());
        }
        if args.threads.is_some() {
            return Err("--threads applies to the assembled systems chain, dna and water".into());
        }
    }
    if !method.is_penalty_method() && args.omega.is_some() {
        return Err(format!(
            "--omega does not apply to {method_name}: it integrates the constrained system with Lagrange multipliers, without a penalty"
        ));
    }
    if args.max_condition.is_some() && !matches!(method, IntegratorName::Zs | IntegratorName::Zss) {
        return Err(format!(
            "--max-condition applies to the linearly implicit integrators zs and zss, not {}",
            clap_name(method)
        ));
    }
    if cfg!(not(feature = "faer"))
        && matches!(method, IntegratorName::Shake | IntegratorName::Rattle)
        && matches!(args.system, SystemName::Chain | SystemName::Water)
    {
        return Err(format!(
            "--integrator {} on {sys} solves SHAKE's sparse Newton system with faer's LU, which this build leaves out: build with `--features faer` (cargo run --release -p zs-systems --features faer --bin zs -- run ...)",
            clap_name(method)
        ));
    }
    if args.init.is_some() && args.resume.is_some() {
        return Err("--init and --resume exclude each other: a resumed run continues from its checkpoint's state".into());
    }
    Ok(())
}

/// The command-line spelling of an integrator.
fn clap_name(m: IntegratorName) -> String {
    use clap::ValueEnum;
    m.to_possible_value()
        .map_or_else(|| format!("{m:?}"), |v| v.get_name().to_string())
}

/// Create the directory `file` goes into when it is missing.
fn ensure_dir(what: &str, file: &Path) -> Result<(), String> {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => std::fs::create_dir_all(d)
            .map_err(|e| format!("cannot create the {what} directory {}: {e}", d.display())),
        _ => Ok(()),
    }
}

/// Run `f` on a rayon pool of `--threads` threads (rayon's default without it): the terms of an
/// assembled system are evaluated there, and nothing is allocated per step.
fn in_pool<T: Send>(args: &RunArgs, f: impl FnOnce() -> T + Send) -> T {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = args.threads {
        builder = builder.num_threads(t as usize);
    }
    match builder.build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// The paper's parameters of a system, overridden by the command line.
#[derive(Debug, Clone, Copy)]
struct Profile {
    h: f64,
    t_end: f64,
    omega: f64,
    beta: f64,
}

fn profile(args: &RunArgs, omega: f64) -> Profile {
    use IntegratorName as I;
    let m = args.integrator;
    let (h, t_end, beta) = match args.system {
        SystemName::DoublePendulum => (
            if m == I::Verlet {
                double_pendulum::H / omega
            } else {
                double_pendulum::H
            },
            50.0,
            double_pendulum::BETA,
        ),
        SystemName::Chain => (
            if m == I::Verlet {
                0.1 / omega
            } else {
                chain::H
            },
            chain::T_END,
            chain::BETA,
        ),
        SystemName::Dna => (
            if m == I::Verlet {
                dna::VERLET_H
            } else {
                dna::H
            },
            500.0,
            dna::BETA,
        ),
        SystemName::Water => (
            if m == I::Verlet {
                0.1 / omega
            } else {
                water::H
            },
            100.0,
            water::BETA,
        ),
        SystemName::RigidBody => (rigid_body::H, 100.0, rigid_body::BETA_PAPER_SCHEME),
    };
    Profile {
        h: args.h.unwrap_or(h),
        t_end: args.t_end.unwrap_or(t_end),
        omega,
        beta: args.beta.unwrap_or(beta),
    }
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
    LinearlyImplicitNewmark
);
cli_stepper!(Model, PushForwardNewmark);
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

/// One `zs run` invocation.
struct Job<'a> {
    args: &'a RunArgs,
    out: PathBuf,
    resume: Option<&'a Checkpoint>,
    p: Profile,
    meta: Checkpoint,
    /// Atom symbols (one per 3 coordinates): also write an extended XYZ trajectory beside the
    /// CSV (`<out>.xyz`).
    xyz: Option<Vec<String>>,
    /// `--max-radius` (water): stop when a molecule leaves the cluster.
    cluster_guard: Option<ClusterGuard>,
    /// Rigid body: an `orthogonality_defect` column `‖RᵀR − I‖_F` and its maximum in the summary.
    orthogonality: bool,
}

impl<'a> Job<'a> {
    fn new(args: &'a RunArgs, out: PathBuf, resume: Option<&'a Checkpoint>, p: Profile) -> Self {
        let meta = run_meta(args, &out, &p);
        Self {
            args,
            out,
            resume,
            p,
            meta,
            xyz: None,
            cluster_guard: None,
            orthogonality: false,
        }
    }

    /// Record `‖RᵀR − I‖_F` (9 coordinates, the rigid body).
    fn with_orthogonality(mut self) -> Self {
        self.orthogonality = true;
        self
    }

    /// Stop when an oxygen is farther than `limit` from the cluster's centroid.
    fn with_cluster_guard(mut self, limit: Option<f64>) -> Self {
        self.cluster_guard = limit.map(|limit| ClusterGuard { limit });
        self
    }

    /// Also write the positions as extended XYZ, atoms named by `symbols`.
    fn with_xyz(mut self, symbols: Vec<String>) -> Self {
        self.xyz = Some(symbols);
        self
    }

    /// The paper's start, or the last row of `--init`.
    fn initial_state<V: Vector>(&self, paper: StateOf<V>) -> Result<StateOf<V>, String> {
        let Some(path) = &self.args.init else {
            return Ok(paper);
        };
        let n = paper.q.len();
        let (t, q, v) = state_file::last_state(path, n)?;
        if t >= self.p.t_end {
            return Err(format!(
                "the last state of {} is at t = {t}, not before --t-end {}",
                path.display(),
                self.p.t_end
            ));
        }
        let conv = |x: &[f64]| V::try_from_slice(x).ok_or("state size");
        Ok(StateOf::at(conv(&q)?, conv(&v)?, t))
    }

    /// Check the checkpoint, print the set-up, make the stepper and drive it.
    fn run<S, P, V, C>(
        &self,
        system: &S,
        penalized: &P,
        state: StateOf<V>,
        names: Vec<String>,
    ) -> Result<(), String>
    where
        S: ConstrainedModel<V, C> + Sync,
        P: StiffModel<V> + Sync,
        V: ConstraintSpace<C>,
        C: Vector,
    {
        let (args, p) = (self.args, self.p);
        if let (Some(saved), Some(path)) = (self.resume, &args.resume) {
            check_same_run(&self.meta, saved, path)?;
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
        } else {
            if args.system == SystemName::RigidBody {
                format!(
                    "V = Bμ R33 + ½ω²‖RᵀR − I‖², ω = {} (the penalty is part of V)",
                    p.omega
                )
            } else {
                "V (no constraints)".to_string()
            }
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
            let stepper = self.penalty_stepper::<P, V>()?;
            let stepper = self.maybe_langevin(stepper);
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

    fn penalty_stepper<P: StiffModel<V> + ?Sized, V: Vector>(
        &self,
    ) -> Result<Box<dyn CliStepper<P, V>>, String> {
        let (h, beta) = (self.p.h, self.p.beta);
        let limit = self.args.max_condition;
        Ok(match self.args.integrator {
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
            IntegratorName::Verlet => Box::new(VelocityVerlet::new(h)),
            IntegratorName::Newmark => Box::new(Newmark::new(beta, h)),
            IntegratorName::Newmark1 => Box::new(LinearlyImplicitNewmark::new(beta, h)),
            IntegratorName::Pushforward => Box::new(PushForwardNewmark::new(beta, h)),
            IntegratorName::Shake | IntegratorName::Rattle | IntegratorName::LieEuler => {
                return Err("SHAKE, RATTLE and lie-euler are not penalty methods".into())
            }
        })
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

    /// Run `stepper` on `target` to `t_end` (or resume it) with energy, constraint, CSV, guard
    /// and progress observers, and print the summary.
    fn drive<S, T, V, C>(
        &self,
        system: &S,
        target: &T,
        mut stepper: Box<dyn CliStepper<T, V> + '_>,
        mut state: StateOf<V>,
        names: Vec<String>,
    ) -> Result<(), String>
    where
        S: ConstrainedModel<V, C>,
        T: Model<V> + ?Sized,
        V: ConstraintSpace<C>,
        C: Vector,
    {
        let (args, p) = (self.args, self.p);
        let out = &self.out;
        let planned = driver::planned_steps(state.t, p.t_end, stepper.h())
            .ok_or_else(|| format!("h = {} cannot reach t = {}", stepper.h(), p.t_end))?;
        let constrained = system.constraint_count() > 0;
        let mut energy = EnergyObserver::new();
        let mut residual = ConstraintObserver::new(system);
        let csv = match self.resume {
            None => CsvRecorder::create(out, args.every)
                .map_err(|e| format!("cannot create {}.tmp: {e}", out.display()))?,
            Some(_) => CsvRecorder::reopen(out, args.every).map_err(|e| {
                format!(
                    "cannot resume: the interrupted run's {}.tmp cannot be opened: {e}{}",
                    out.display(),
                    if out.exists() {
                        " (the run it belongs to seems to have completed)"
                    } else {
                        ""
                    }
                )
            })?,
        };
        let csv = csv.with_names(names).with_energy();
        let mut csv = if constrained {
            csv.with_constraints(system)
        } else {
            csv
        };
        let defect = |q: &V| {
            <&[f64; 9]>::try_from(q.as_slice()).map_or(f64::NAN, rigid_body::orthogonality_defect)
        };
        if self.orthogonality {
            csv = csv.with_column("orthogonality_defect", defect);
        }
        let mut max_defect = 0.0_f64;
        let mut defect_observer = FnObserver(|_: &T, s: &StateOf<V>| {
            max_defect = max_defect.max(defect(&s.q));
        });
        let xyz_path = out.with_extension("xyz");
        let mut xyz = match &self.xyz {
            None => None,
            Some(symbols) => Some(
                match self.resume {
                    None => XyzRecorder::create(&xyz_path, symbols.clone(), args.every),
                    Some(_) => XyzRecorder::reopen(&xyz_path, symbols.clone(), args.every),
                }
                .map_err(|e| format!("cannot open {}.tmp: {e}", xyz_path.display()))?,
            ),
        };
        let mut energy_guard = args.max_energy_drift.map(EnergyGuard::new);
        let mut residual_guard = args.max_residual.map(|r| ConstraintGuard::new(system, r));
        let mut cluster_guard = self.cluster_guard;
        let first = match self.resume {
            Some(cp) => cp.u64("run.done").unwrap_or(0),
            None => 0,
        };
        let progress = if args.quiet || planned < 20_000 {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::with_draw_target(Some(planned), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}")
                    .expect("valid progress template"),
            );
            bar.set_position(first);
            bar
        };
        let mut count = first;
        let mut ticker = FnObserver(|_: &T, _: &StateOf<V>| {
            count += 1;
            if count % 4096 == 0 {
                progress.set_position(count);
            }
        });
        let checkpointing = args.checkpoint.as_ref().map(|path| {
            Checkpointing::new(path, args.checkpoint_every).with_meta(self.meta.clone())
        });
        let summary = {
            // The same observers in the same order for a fresh and a resumed run (the
            // checkpoint stores them by position; the guards are part of the compared
            // arguments).
            let mut observers: Vec<&mut dyn Observer<T, V>> =
                vec![&mut energy, &mut residual, &mut csv];
            if let Some(x) = xyz.as_mut() {
                observers.push(x);
            }
            if let Some(g) = energy_guard.as_mut() {
                observers.push(g);
            }
            if let Some(g) = residual_guard.as_mut() {
                observers.push(g);
            }
            if let Some(g) = cluster_guard.as_mut() {
                observers.push(g);
            }
            if self.orthogonality {
                observers.push(&mut defect_observer);
            }
            observers.push(&mut ticker);
            let stepper = stepper.as_mut();
            match (self.resume, &checkpointing) {
                (Some(cp), c) => {
                    driver::resume(stepper, target, &mut state, cp, &mut observers, c.as_ref())
                        .map_err(|e| {
                            let path = args.resume.as_deref().unwrap_or(Path::new("?"));
                            format!("cannot resume from {}: {e}", path.display())
                        })?
                }
                (None, Some(c)) => driver::run_checkpointed(
                    stepper,
                    target,
                    &mut state,
                    p.t_end,
                    &mut observers,
                    c,
                ),
                (None, None) => driver::run(stepper, target, &mut state, p.t_end, &mut observers),
            }
        };
        progress.finish_and_clear();

        let rows = csv.rows();
        println!();
        if summary.resumed_at > 0 {
            println!(
                "  resumed at step {:>8}   from {}",
                summary.resumed_at,
                args.resume.as_deref().unwrap_or(Path::new("?")).display()
            );
        }
        println!("  steps            {:>14}", summary.steps);
        println!(
            "  wall time        {:>14.3} s",
            summary.wall_time.as_secs_f64()
        );
        println!(
            "  steps/s          {:>14.0}   (observers and CSV output included)",
            summary.steps_per_second
        );
        let energy_name = if args.integrator.is_penalty_method() && constrained {
            "penalized energy ½vᵀMv + V + ½ω²|g|²"
        } else {
            "energy ½vᵀMv + V"
        };
        println!(
            "  energy E0        {:>14.6e}   ({energy_name})",
            energy.initial_energy().unwrap_or(f64::NAN)
        );
        println!(
            "  energy drift     {:>14.3e}   max |E - E0|, final E - E0 = {:.3e}",
            energy.max_abs_drift(),
            energy.final_drift()
        );
        if constrained {
            println!(
                "  max ‖g(q)‖       {:>14.3e}   final ‖g(q)‖ = {:.3e}",
                residual.max_residual(),
                residual.last_residual()
            );
        }
        if self.orthogonality {
            println!("  max ‖RᵀR − I‖    {max_defect:>14.3e}   (distance from SO(3), Frobenius)");
        }
        if let Some((cholesky, fallbacks)) = stepper.solves() {
            println!(
                "  linear solves    {cholesky:>14} Cholesky, {fallbacks} fallbacks (M + βh²H indefinite: LDLᵀ or pivoted LU)"
            );
        }
        let q = summary.last_state.q.as_slice();
        let fmt = |x: f64| {
            if x.abs() < 1e6 {
                format!("{x:.5}")
            } else {
                format!("{x:.3e}")
            }
        };
        let shown: Vec<String> = q.iter().take(4).map(|&x| fmt(x)).collect();
        println!(
            "  final state      t = {:.4}, q = ({}{})",
            summary.last_state.t,
            shown.join(", "),
            if q.len() > 4 { ", …" } else { "" }
        );
        if let Some(c) = &checkpointing {
            println!(
                "  checkpoints      {:>14}   {} (every {} steps)",
                summary.checkpoints,
                c.path.display(),
                c.every
            );
        }
        if summary.output_error.is_none() {
            println!("  trajectory       {} ({rows} rows)", out.display());
            if let Some(x) = &xyz {
                println!(
                    "  extended XYZ     {} ({} frames; VMD, OVITO, ASE)",
                    xyz_path.display(),
                    x.frames()
                );
            }
        }
        finish(summary, out)
    }
}

/// The arguments that define the run, saved in every checkpoint (`cli.*`) and compared on
/// resume. The names are the options' names.
fn run_meta(args: &RunArgs, out: &Path, p: &Profile) -> Checkpoint {
    let mut cp = Checkpoint::new();
    let mut m = cp.scope_mut("cli");
    m.set_str("system", args.system.name());
    m.set_str("integrator", &clap_name(args.integrator));
    m.set_f64("h", p.h);
    m.set_f64("t-end", p.t_end);
    m.set_f64("omega", p.omega);
    m.set_f64("beta", p.beta);
    m.set_u64("every", args.every);
    m.set_str(
        "gravity",
        &format!("{:?}", args.gravity.unwrap_or(GravitySign::Physical)),
    );
    m.set_str("out", &out.display().to_string());
    m.set_f64s(
        "n",
        &args.n.map(|n| n as f64).into_iter().collect::<Vec<_>>(),
    );
    m.set_f64s(
        "seed",
        &args.seed.map(|s| s as f64).into_iter().collect::<Vec<_>>(),
    );
    m.set_f64s("gamma", args.gamma.as_slice());
    m.set_f64s("kt", args.kt.as_slice());
    m.set_f64s("max-energy-drift", args.max_energy_drift.as_slice());
    m.set_f64s("max-residual", args.max_residual.as_slice());
    m.set_f64s("max-radius", args.max_radius.as_slice());
    m.set_f64s("max-condition", args.max_condition.as_slice());
    cp
}

/// `Err` naming the first argument that differs between this command line and the checkpoint.
fn check_same_run(now: &Checkpoint, saved: &Checkpoint, path: &Path) -> Result<(), String> {
    let human = |text: Option<String>| match text {
        None => "absent".to_string(),
        Some(t) => {
            let value = t.split_once(' ').map_or(t.as_str(), |(_, v)| v);
            let shown = value.split_once("# ").map_or(value, |(_, d)| d).trim();
            if shown.is_empty() {
                "unset".to_string()
            } else {
                shown.to_string()
            }
        }
    };
    for key in now.keys() {
        let (a, b) = (now.value_text(key), saved.value_text(key));
        if a != b {
            let name = key.strip_prefix("cli.").unwrap_or(key);
            return Err(format!(
                "cannot resume from {}: --{name} is {} here but {} in the checkpoint (give the interrupted run's arguments)",
                path.display(),
                human(a),
                human(b)
            ));
        }
    }
    Ok(())
}

fn finish<V: Vector>(summary: RunSummary<V>, out: &Path) -> Result<(), String> {
    if let Some(e) = summary.output_error {
        return Err(format!("writing the output failed: {e}"));
    }
    match summary.failure() {
        None => Ok(()),
        Some(f) => Err(format!(
            "the run stopped early: {}; {} holds the trajectory up to the last good step (step {}, t = {}) and {} says so",
            f.error,
            out.display(),
            f.steps,
            f.last_good.t,
            incomplete_marker_of(out).display()
        )),
    }
}
