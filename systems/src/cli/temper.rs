//! `zs temper <system> --temperatures T1,…,Tn --exchange-every K --out-dir DIR [run options]`:
//! replica exchange ([`zs_runtime::tempering`]) — one replica per temperature of the ladder,
//! each the `--integrator` of `zs run` under GLA Langevin at its `kT` (friction `--gamma`, noise
//! seed `--seed` + k), all from the system's start (or `--init`), and every K steps a round of
//! Metropolis swaps between neighbour temperatures, alternating even and odd pairs, each
//! pair's decisions drawn from its own seeded stream.
//!
//! Writes, under `DIR`: `replica-k.csv` (k the replica's starting temperature index; the `run`
//! format, its states at whatever temperature the replica holds), `exchanges.csv` (one row per
//! attempt: `t, pair, accepted, kt_lower, kt_upper, lower_replica, upper_replica,
//! probability`), `walks.csv` (after each round, every replica's temperature index) and
//! `acceptance.csv` (per pair, attempts, acceptances, rate). The replicas run one after
//! another within the process, each on the `--threads` pool.
//!
//! `--checkpoint NAME [--checkpoint-every K]` writes, after the first exchange round at or past
//! every K steps, `DIR/NAME` (the exchanges) and `DIR/NAME.k` (replica k); the same command
//! with `--resume NAME` continues from them — on any number of MPI ranks — to the bytes of an
//! uninterrupted run (without a checkpoint yet, it starts from the beginning).

use std::path::PathBuf;

use super::error::CliError;
pub use super::job::TemperCheckpoint;
use super::job::{in_pool, resume::run_meta, Job, TemperPlan};
use super::ranks::Ranks;
use super::run::{check_memory, check_named_checkpoint, check_options, ensure_dir, profile};
use super::{positive_f64, IntegratorName, RunArgs};

/// Arguments of `zs temper`.
#[derive(clap::Args, Debug)]
pub struct TemperArgs {
    /// kT of each replica, comma-separated, increasing (the system's energy unit).
    #[arg(long, value_delimiter = ',', required = true, num_args = 1.., value_parser = positive_f64)]
    pub temperatures: Vec<f64>,
    /// Steps between two rounds of exchange attempts.
    #[arg(long = "exchange-every", value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub exchange_every: u64,
    /// Directory of the output files (created if missing).
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: PathBuf,
    /// The options of `zs run` (--gamma required; not --kt, --out).
    #[command(flatten)]
    pub run: RunArgs,
}

/// Run `zs temper`.
///
/// # Errors
/// An option that does not apply, a bad ladder, an output that cannot be written, a replica
/// whose step failed (reported after the others finished).
pub fn temper(args: &TemperArgs) -> Result<(), CliError> {
    let r = &args.run;
    let sys = r.system.get();
    let method = r.integrator.unwrap_or_else(|| sys.default_integrator());
    let refused = [
        (
            r.kt.is_some(),
            "--kt",
            "--temperatures gives each replica's kT",
        ),
        (
            r.out.is_some(),
            "--out",
            "each replica writes DIR/replica-k.csv under --out-dir",
        ),
        (
            r.write_data.is_some(),
            "--write-data",
            "a replica's final state is the last row of its CSV",
        ),
        (
            r.max_energy_drift.is_some(),
            "--max-energy-drift",
            "a thermostatted replica's energy is not conserved",
        ),
        (
            method == IntegratorName::LieEuler,
            "--integrator lie-euler",
            "Langevin needs a stepper in the coordinates",
        ),
    ];
    if let Some((_, option, why)) = refused.iter().find(|(given, ..)| *given) {
        return Err(CliError::does_not_apply(*option, "zs temper", Some(why)));
    }
    let gamma = r.gamma.ok_or(CliError::Missing {
        system: sys.name(),
        option: "--gamma G",
        why: "replica exchange runs every replica under Langevin dynamics, with friction G",
    })?;
    check_named_checkpoint(
        r,
        "zs temper",
        "replica exchange's --checkpoint is a file name: DIR/NAME (the exchanges) and DIR/NAME.k (replica k)",
    )?;
    check_options(sys, r, method)?;
    check_memory(sys, r, method)?;
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| CliError::io("create the output directory", &args.out_dir, e))?;
    let ranks = Ranks::world("temper")?;
    let plan = TemperPlan {
        ranks: &ranks,
        kt: args.temperatures.clone(),
        every: args.exchange_every,
        dir: args.out_dir.clone(),
        gamma,
        seed: r.seed.unwrap_or(0),
        checkpoint: r.checkpoint.as_ref().map(|name| TemperCheckpoint {
            path: args.out_dir.join(name),
            every: r.checkpoint_every,
            resume: r.resume.is_some(),
        }),
    };
    let out = plan.replica_path(0);
    ensure_dir("create the output directory", &out)?;
    let p = profile(sys, r, method);
    let mut meta = run_meta(r, sys.name(), &out, &p);
    let mut m = meta.scope_mut("cli");
    m.set_f64s("temperatures", &args.temperatures);
    m.set_u64("exchange-every", args.exchange_every);
    let mut job = Job::new(r, out, None, p, meta);
    job.temper = Some(&plan);
    in_pool(r.threads, move || sys.run(r, job))
}
