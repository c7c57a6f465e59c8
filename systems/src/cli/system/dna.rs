//! `dna`: the DNA base-pair ring of Tao & Owhadi §4.4, assembled (a site and a bond term,
//! unconstrained).

use super::{count, run_assembled, table, Accepts, CliSystem, Count};
use crate::cli::error::CliError;
use crate::cli::job::Job;
use crate::cli::{state_file, EvalArgs, IntegratorName, RunArgs};
use crate::dna::{self, DnaChain};

pub(super) struct DnaCli;

impl CliSystem for DnaCli {
    fn name(&self) -> &'static str {
        "dna"
    }
    fn about(&self) -> &'static str {
        "DNA base-pair ring of Tao & Owhadi §4.4 (N DOF, unconstrained; --n, default 200)"
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            n: Some(Count {
                what: "base pairs",
                default: dna::N,
                least: 3,
                too_few: "a DNA ring needs at least 3 base pairs",
            }),
            constraints: Err("it has no constraints (nor a stiff part)"),
            threads: true,
            ..Accepts::default()
        }
    }
    fn memory_estimate(&self, n: usize, _method: IntegratorName) -> f64 {
        // 552 MB peak for 10⁶ base pairs (Z&S, banded solve).
        700.0 * n as f64
    }
    fn default_h(&self, h: f64, n: Option<u64>) -> f64 {
        // The paper's h = 2 is for N = 200. Small rings start with more energy per base pair
        // (the initial velocities are ∝ 1/√N) and Z&S at h = 2 diverges below N ≈ 24 (tried:
        // N = 3 … 23, seeds 0 … 3); h = 1 runs every N from 3 to 63 with every seed tried.
        if n.is_some_and(|n| n < 64) {
            h.min(1.0)
        } else {
            h
        }
    }
    fn omega(&self) -> f64 {
        0.0
    }
    fn defaults(&self, method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        let h = if method == IntegratorName::Verlet {
            dna::VERLET_H
        } else {
            dna::H
        };
        (h, 500.0, dna::BETA)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let n = count(self, args.n)?;
        let seed = args.seed.unwrap_or(0);
        let system = DnaChain::paper().assemble(n);
        let names = DnaChain::coordinate_names(n);
        let state = job.initial_state(DnaChain::initial_state(n, seed), &names)?;
        say!(
            "zs: DNA ring of {n} base pairs (Tao & Owhadi §4.4), ε = 1/1400, a = 7, x0 = 0.3, initial noise seed {seed}"
        );
        let names = DnaChain::coordinate_names(n);
        run_assembled(&job, &system, None, state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let n = count(self, args.n)?;
        let system = DnaChain::paper().assemble(n);
        let rows = state_file::read(args.input()?, &DnaChain::coordinate_names(n))?;
        Ok(table(&system, &rows, &DnaChain::coordinate_names(n)))
    }
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse, start, Problem, Units};
        if args.omega.is_some() {
            return Err(CliError::does_not_apply(
                "--omega",
                self.name(),
                Some("it has no constraints"),
            ));
        }
        let n = count(self, args.n)?;
        let system = DnaChain::paper().assemble(n);
        let names = DnaChain::coordinate_names(n);
        let q = start(
            args,
            &names,
            DnaChain::initial_state(n, args.seed.unwrap_or(0)).q,
        )?;
        analyse(
            args,
            Problem {
                model: &system,
                q,
                sites: None,
                units: Units::ANGULAR,
                about: format!("DNA ring of {n} base pairs (Tao & Owhadi §4.4)"),
            },
        )
    }
}
