//! `double-pendulum`: the penalized double pendulum of Tao & Owhadi §4.1 (4 coordinates,
//! 2 constraints), fixed size.

use zs_runtime::MechanicalSystem;

use super::{gravity, gravity_name, table, Accepts, CliSystem};
use crate::cli::error::CliError;
use crate::cli::job::Job;
use crate::cli::{state_file, EvalArgs, IntegratorName, RunArgs};
use crate::double_pendulum::{self, DoublePendulum};

pub(super) struct DoublePendulumCli;

const NAMES: [&str; 4] = ["x1", "y1", "x2", "y2"];

impl CliSystem for DoublePendulumCli {
    fn name(&self) -> &'static str {
        "double-pendulum"
    }
    fn about(&self) -> &'static str {
        "Planar double pendulum of Tao & Owhadi §4.1 (4 DOF, 2 constraints)"
    }
    fn options(&self) -> Vec<clap::Arg> {
        vec![super::gravity_option()]
    }
    fn eval_options(&self) -> Vec<clap::Arg> {
        vec![super::gravity_option()]
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            constraints: Ok(()),
            omega: true,
            ..Accepts::default()
        }
    }
    fn omega(&self) -> f64 {
        double_pendulum::OMEGA
    }
    fn defaults(&self, method: IntegratorName, omega: f64) -> (f64, f64, f64) {
        let h = if method == IntegratorName::Verlet {
            double_pendulum::H / omega
        } else {
            double_pendulum::H
        };
        (h, 50.0, double_pendulum::BETA)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let g = gravity(args.options.get("gravity"));
        let system = DoublePendulum {
            gravity: g,
            ..DoublePendulum::paper()
        };
        let state = job.initial_state(DoublePendulum::initial_state(), &NAMES.map(String::from))?;
        say!(
            "zs: double pendulum (Tao & Owhadi §4.1), gravity {} (V = {}(y1 + y2)), L1 = {}, L2 = {:.6}",
            gravity_name(g),
            if g < 0.0 { "+" } else { "-" },
            system.l1,
            system.l2
        );
        let names = NAMES.map(String::from).to_vec();
        let n = job.replicas();
        let penalized = system.penalized(job.p.omega);
        job.run(&vec![&system; n], &vec![&penalized; n], state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let system = DoublePendulum {
            gravity: gravity(args.options.get("gravity")),
            ..DoublePendulum::paper()
        };
        let names = NAMES.map(String::from);
        let rows = state_file::read(args.input()?, &names)?;
        Ok(match args.omega {
            Some(w) => table(&system.penalized(w), &rows, &names),
            None => table(&system, &rows, &names),
        })
    }
    #[cfg(feature = "faer")]
    fn nma(&self, args: &crate::cli::NmaArgs) -> Result<super::modes::Spectrum, CliError> {
        use super::modes::{analyse, start, Problem, Units};
        use zs_runtime::Vector;
        if args.n.is_some() {
            return Err(CliError::does_not_apply(
                "--n",
                self.name(),
                Some("it has two pendula"),
            ));
        }
        let system = DoublePendulum::paper();
        let omega = args.omega.unwrap_or(self.omega());
        let names = NAMES.map(String::from).to_vec();
        let q0 = <[f64; 4]>::try_from_slice(&DoublePendulum::initial_state().q)
            .expect("four coordinates");
        let q = start(args, &names, q0)?;
        let penalized = system.penalized(omega);
        analyse(
            args,
            Problem {
                model: &penalized,
                q,
                sites: None,
                units: Units::ANGULAR,
                about: format!(
                    "double pendulum (Tao & Owhadi §4.1), penalty ½ω²|g|² with ω = {omega}, physical gravity"
                ),
            },
        )
    }
}
