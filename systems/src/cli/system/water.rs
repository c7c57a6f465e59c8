//! `water`: the cluster of rigid TIP3P waters of Tao & Owhadi §4.3, assembled (one pair term per
//! molecule pair, three body constraints per molecule); writes an extended XYZ trajectory too,
//! takes `--minimize` and `--max-radius`.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use zs_runtime::minimize::{Fire, Lbfgs, MinimizeError, Minimized};
use zs_runtime::Model;

use super::{count, run_assembled, table, Accepts, CliSystem, Count};
use crate::cli::error::CliError;
use crate::cli::job::{Job, Watch};
use crate::cli::{state_file, EvalArgs, IntegratorName, MinimizerName, RunArgs};
use crate::water::{self, ClusterGuard, Water};

pub(super) struct WaterCli;

/// `--max-radius`: the cluster guard, watching the run.
struct Cluster(ClusterGuard);

impl Watch for Cluster {
    fn check(&mut self, q: &[f64]) -> Result<(), zs_runtime::GuardViolation> {
        let r = ClusterGuard::radius(q);
        if r <= self.0.limit {
            Ok(())
        } else {
            Err(zs_runtime::GuardViolation {
                what: ClusterGuard::WHAT,
                value: r,
                limit: self.0.limit,
            })
        }
    }
}

impl CliSystem for WaterCli {
    fn name(&self) -> &'static str {
        "water"
    }
    fn about(&self) -> &'static str {
        "Cluster of rigid TIP3P waters, Tao & Owhadi §4.3 (9N DOF, 3N constraints; --n, default 7; atoms O, H, H; Å, kcal/mol, AKMA time)"
    }
    fn options(&self) -> Vec<clap::Arg> {
        use crate::cli::positive_f64;
        use clap::{Arg, ArgAction};
        vec![
            Arg::new("max-radius")
                .long("max-radius")
                .value_name("R")
                .value_parser(positive_f64)
                .allow_negative_numbers(true)
                .help("Stop (typed error, trajectory kept and marked) when an oxygen gets farther than this from the cluster's centroid, in Å (water): a molecule leaving the cluster"),
            Arg::new("minimize")
                .long("minimize")
                .action(ArgAction::SetTrue)
                .help("Relax the start first (water): minimise the integrated potential (--minimizer) until the root-mean-square force is below --minimize-tol, so that little energy is released at the start"),
            Arg::new("minimize-tol")
                .long("minimize-tol")
                .value_name("F")
                .value_parser(positive_f64)
                .default_value("0.01")
                .help("Force tolerance of --minimize, kcal/mol/Å: the root-mean-square of the force components for L-BFGS (OpenMM's criterion), the largest component for FIRE"),
            Arg::new("minimizer")
                .long("minimizer")
                .value_parser(clap::value_parser!(MinimizerName))
                .default_value("lbfgs")
                .help("Minimiser of --minimize"),
        ]
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            n: Some(Count {
                what: "molecules",
                default: water::N,
                least: 1,
                too_few: "a water cluster needs at least one molecule",
            }),
            constraints: Ok(()),
            omega: true,
            threads: true,
            xyz: true,
            ..Accepts::default()
        }
    }
    fn memory_estimate(&self, n: usize, method: IntegratorName) -> f64 {
        // Peaks at N = 1 000 (499 500 pairs): 2.4 GB with the full Hessian (each pair's local
        // Hessian and its blocks), 59 MB with Z&Ss-stiff or Verlet.
        let pairs = n as f64 * (n as f64 - 1.0) / 2.0;
        let per_pair = if method.solves() && method != IntegratorName::ZssStiff {
            5_000.0
        } else {
            150.0
        };
        per_pair * pairs + 10_000.0 * n as f64
    }
    fn omega(&self) -> f64 {
        water::OMEGA
    }
    fn defaults(&self, method: IntegratorName, omega: f64) -> (f64, f64, f64) {
        let h = if method == IntegratorName::Verlet {
            0.1 / omega
        } else {
            water::H
        };
        (h, 100.0, water::BETA)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let n = count(self, args.n)?;
        let seed = args.seed.unwrap_or(0);
        let w = Water::tip3p();
        let setup = Instant::now();
        let system = w.assemble(n);
        let setup = setup.elapsed().as_secs_f64();
        let omega = job.p.omega;
        let mut job = job.with_xyz(Water::atom_symbols(n));
        let limit = args.options.get::<f64>("max-radius");
        let make = move || -> Box<dyn Watch> {
            Box::new(Cluster(ClusterGuard {
                limit: limit.unwrap_or(f64::INFINITY),
            }))
        };
        if limit.is_some() {
            job = job.with_watch(&make);
        }
        let built = w.cluster(n, water::SPACING, seed);
        let names = Water::coordinate_names(n);
        let mut state = job.initial_state(system.state(built, vec![0.0; 9 * n]), &names)?;
        say!(
            "zs: cluster of {n} rigid TIP3P waters (Tao & Owhadi §4.3), open (all pairs, no cutoff), AKMA units; start {}",
            if args.init.is_some() {
                "from --init".to_string()
            } else {
                format!("on a {} Å grid, orientations from seed {seed}", water::SPACING)
            }
        );
        let penalized = system.penalized(omega);
        say!(
            "    set-up {setup:.2} s ({} pair terms, SIMD {})",
            system.term_count("pair"),
            system.simd().name()
        );
        if args.options.flag("minimize") && job.resume.is_none() {
            minimize(args, &penalized, &mut state.q)?;
        }
        if let (Some(kt), None, None) = (args.kt, job.resume, &args.init) {
            state.v = water::thermal_velocities(&w, &state.q, kt, seed);
        }
        run_assembled(&job, &system, Some(omega), state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let n = count(self, args.n)?;
        let system = Water::tip3p().assemble(n);
        let names = Water::coordinate_names(n);
        let rows = state_file::read(args.input()?, &names)?;
        Ok(match args.omega {
            Some(w) => table(&system.penalized(w), &rows, &names),
            None => table(&system, &rows, &names),
        })
    }
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse, start, Problem, Sites, Units};
        let n = count(self, args.n)?;
        let w = Water::tip3p();
        let system = w.assemble(n);
        let omega = args.omega.unwrap_or(water::OMEGA);
        let names = Water::coordinate_names(n);
        let q = start(
            args,
            &names,
            w.cluster(n, water::SPACING, args.seed.unwrap_or(0)),
        )?;
        let penalized = system.penalized(omega);
        analyse(
            args,
            Problem {
                model: &penalized,
                q,
                sites: Some(Sites {
                    symbols: Water::atom_symbols(n),
                    lattice: None,
                }),
                units: Units::AKMA_WAVENUMBER,
                about: format!(
                    "{n} TIP3P waters, rigid geometry by the penalty ½ω²|g|² with ω = {omega} (AKMA units)"
                ),
            },
        )
    }
}

/// `--minimize`: L-BFGS (or FIRE) on the integrated potential, with a progress bar whose
/// position is the fraction of the way, in log(force), from the start's RMS force to the
/// tolerance (an ETA a person can read; L-BFGS's convergence is roughly linear in that scale).
fn minimize(
    args: &RunArgs,
    penalized: &impl Model<Vec<f64>>,
    q: &mut Vec<f64>,
) -> Result<(), CliError> {
    let tol = args.options.get::<f64>("minimize-tol").unwrap_or(0.01);
    let minimizer = args
        .options
        .get::<MinimizerName>("minimizer")
        .unwrap_or(MinimizerName::Lbfgs);
    let started = Instant::now();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("minimising {bar:40} {msg}  eta {eta}")
            .expect("valid progress template"),
    );
    let mut first: Option<f64> = None;
    let mut report = |step: u64, energy: f64, force: f64| {
        let f0 = *first.get_or_insert(force);
        if f0 > tol && force > 0.0 {
            let done = (f0 / force).ln() / (f0 / tol).ln();
            bar.set_position((done.clamp(0.0, 1.0) * 1000.0) as u64);
        }
        bar.set_message(format!(
            "{step} it, V {energy:.3} kcal/mol, force {force:.2e} → {tol:.0e}"
        ));
    };
    let e0 = penalized.potential_at(q);
    let done: Result<Minimized, MinimizeError> = match minimizer {
        MinimizerName::Lbfgs => Lbfgs::new(tol, 100_000).minimize_with(penalized, q, &mut report),
        MinimizerName::Fire => Fire::new(1e-3, tol, 2_000_000).minimize(penalized, q),
    };
    bar.finish_and_clear();
    let done = done?;
    let (name, what) = match minimizer {
        MinimizerName::Lbfgs => (
            "L-BFGS iterations",
            format!("RMS force {:.1e}", done.rms_force),
        ),
        MinimizerName::Fire => ("FIRE steps", format!("max force {:.1e}", done.max_force)),
    };
    say!(
        "    minimized: V_ω {e0:.4} -> {:.4} kcal/mol in {} {name} ({what} kcal/mol/Å), {:.2} s",
        done.energy,
        done.steps,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
