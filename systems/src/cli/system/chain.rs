//! `chain`: the chain of `n` pendula of Tao & Owhadi §4.2, assembled (a site term per mass, a
//! bond constraint per rod, the pivot pinned).

use super::{count, gravity, gravity_name, run_assembled, table, Accepts, CliSystem, Count};
use crate::chain::{self, PendulumChain};
use crate::cli::error::CliError;
use crate::cli::job::Job;
use crate::cli::{state_file, EvalArgs, IntegratorName, RunArgs};

pub(super) struct ChainCli;

impl CliSystem for ChainCli {
    fn name(&self) -> &'static str {
        "chain"
    }
    fn about(&self) -> &'static str {
        "Chain of n pendula of Tao & Owhadi §4.2 (2n DOF, n constraints; --n, default 10)"
    }
    fn options(&self) -> Vec<clap::Arg> {
        vec![super::gravity_option()]
    }
    fn eval_options(&self) -> Vec<clap::Arg> {
        vec![super::gravity_option()]
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            n: Some(Count {
                what: "pendula",
                default: chain::N,
                least: 1,
                too_few: "too few bodies",
            }),
            constraints: Ok(()),
            omega: true,
            threads: true,
            ..Accepts::default()
        }
    }
    fn memory_estimate(&self, n: usize, _method: IntegratorName) -> f64 {
        // 157 MB peak for 10⁵ pendula.
        2000.0 * n as f64
    }
    fn omega(&self) -> f64 {
        chain::OMEGA
    }
    fn defaults(&self, method: IntegratorName, omega: f64) -> (f64, f64, f64) {
        let h = if method == IntegratorName::Verlet {
            0.1 / omega
        } else {
            chain::H
        };
        (h, chain::T_END, chain::BETA)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let n = count(self, args.n)?;
        let g = gravity(args.options.get("gravity"));
        let system = PendulumChain {
            gravity: g,
            ..PendulumChain::paper()
        }
        .assemble(n);
        let names = PendulumChain::coordinate_names(n);
        let state = job.initial_state(PendulumChain::initial_state(n), &names)?;
        say!(
            "zs: chain of {n} pendula (Tao & Owhadi §4.2), gravity {} (V = {}Σ y_i), L = √5, pivot pinned at the origin",
            gravity_name(g),
            if g < 0.0 { "+" } else { "-" },
        );
        run_assembled(&job, &system, Some(job.p.omega), state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let n = count(self, args.n)?;
        let system = PendulumChain {
            gravity: gravity(args.options.get("gravity")),
            ..PendulumChain::paper()
        }
        .assemble(n);
        let names = PendulumChain::coordinate_names(n);
        let rows = state_file::read(args.input()?, &names)?;
        Ok(match args.omega {
            Some(w) => table(&system.penalized(w), &rows, &names),
            None => table(&system, &rows, &names),
        })
    }
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse, start, Problem, Units};
        let n = count(self, args.n)?;
        let system = PendulumChain::paper().assemble(n);
        let omega = args.omega.unwrap_or(self.omega());
        let names = PendulumChain::coordinate_names(n);
        let q = start(args, &names, PendulumChain::initial_state(n).q)?;
        let penalized = system.penalized(omega);
        analyse(
            args,
            Problem {
                model: &penalized,
                q,
                sites: None,
                units: Units::ANGULAR,
                about: format!(
                    "chain of {n} pendula (Tao & Owhadi §4.2), penalty ½ω²|g|² with ω = {omega}, physical gravity"
                ),
            },
        )
    }
}
