//! `water`: the cluster of rigid TIP3P waters of Tao & Owhadi §4.3, assembled (one pair term per
//! molecule pair, three body constraints per molecule); writes an extended XYZ trajectory too,
//! takes `--minimize` and `--max-radius`.

use zs_runtime::Model;

use super::{count, table, Accepts, CliSystem};
use crate::cli::error::CliError;
use crate::cli::job::{DynConstrained, DynStiff, Job};
use crate::cli::{state_file, EvalArgs, IntegratorName, RunArgs};
use crate::water::{self, ClusterGuard, Water};

pub(super) struct WaterCli;

impl CliSystem for WaterCli {
    fn name(&self) -> &'static str {
        "water"
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            n: Some(("molecules", water::N, 1)),
            constraints: Ok(()),
            omega: true,
            gravity: false,
            rigid_body: false,
            threads: true,
            cluster: true,
        }
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
        let system = w.assemble(n);
        let omega = job.p.omega;
        let mut job = job.with_xyz(Water::atom_symbols(n));
        job.cluster_guard = args.max_radius.map(|limit| ClusterGuard { limit });
        let built = w.cluster(n, water::SPACING, seed);
        let mut state = job.initial_state(system.state(built, vec![0.0; 9 * n]))?;
        println!(
            "zs: cluster of {n} rigid TIP3P waters (Tao & Owhadi §4.3), open (all pairs, no cutoff), AKMA units; start {}",
            if args.init.is_some() {
                "from --init".to_string()
            } else {
                format!("on a {} Å grid, orientations from seed {seed}", water::SPACING)
            }
        );
        let penalized = system.penalized(omega);
        if args.minimize && job.resume.is_none() {
            let fire = zs_runtime::minimize::Fire::new(1e-3, 1e-4, 2_000_000);
            let (e0, done) = job.in_pool(|| {
                let e0 = penalized.potential_at(&state.q);
                (e0, fire.minimize(&penalized, &mut state.q))
            });
            let done = done?;
            println!(
                "    minimized: V_ω {e0:.4} -> {:.4} kcal/mol in {} FIRE steps (max force {:.1e})",
                done.energy, done.steps, done.max_force
            );
        }
        if let (Some(kt), None, None) = (args.kt, job.resume, &args.init) {
            state.v = water::thermal_velocities(&w, &state.q, kt, seed);
        }
        let names = Water::coordinate_names(n);
        let (sys, pen): (&DynConstrained<'_>, &DynStiff<'_>) = (&system, &penalized);
        job.in_pool(|| job.run(sys, pen, state, names))
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let n = count(self, args.n)?;
        let system = Water::tip3p().assemble(n);
        let rows = state_file::read(&args.input, 9 * n)?;
        let names = Water::coordinate_names(n);
        Ok(match args.omega {
            Some(w) => table(&system.penalized(w), &rows, &names),
            None => table(&system, &rows, &names),
        })
    }
}
