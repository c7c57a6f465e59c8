//! `rigid-body`: the magnetized rigid body of Tao & Owhadi §4.5, `R` relaxed to 9 coordinates
//! with the penalty `½ω²‖RᵀR − I‖²` in its potential; `--integrator lie-euler` integrates it
//! on SO(3) (eq. 34); writes the orthogonality defect.

use zs_runtime::Clocked;

use super::{table, Accepts, CliSystem};
use crate::cli::error::CliError;
use crate::cli::job::{CliStepper, Job, Watch};
use crate::cli::{state_file, EvalArgs, IntegratorName, RunArgs};
use crate::rigid_body::{self, cayley::CayleyEuler, MagnetizedRigidBody};

pub(super) struct RigidBodyCli;

/// The distance of `R` from SO(3), `‖RᵀR − I‖_F`: a CSV column, and its maximum in the summary.
struct Orthogonality(f64);

/// `‖RᵀR − I‖_F` of the 9 coordinates.
fn defect(q: &[f64]) -> f64 {
    <&[f64; 9]>::try_from(q).map_or(f64::NAN, rigid_body::orthogonality_defect)
}

impl Watch for Orthogonality {
    fn column(&self) -> Option<crate::cli::job::Column> {
        Some(("orthogonality_defect", defect))
    }
    fn observe(&mut self, q: &[f64]) {
        self.0 = self.0.max(defect(q));
    }
    fn summary(&self) -> Option<String> {
        Some(format!(
            "  max ‖RᵀR − I‖    {:>14.3e}   (distance from SO(3), Frobenius)",
            self.0
        ))
    }
}

/// `--b-mu`, for `zs run` and `zs eval`.
fn b_mu_option() -> clap::Arg {
    clap::Arg::new("b-mu")
        .long("b-mu")
        .value_name("X")
        .allow_negative_numbers(true)
        .value_parser(crate::cli::finite_f64)
        .help("Field strength × dipole moment Bμ of the rigid body's V = Bμ R33 (default −1: R = I is the minimum; the paper does not print it)")
}

impl CliSystem for RigidBodyCli {
    fn name(&self) -> &'static str {
        "rigid-body"
    }
    fn about(&self) -> &'static str {
        "Magnetized rigid body of Tao & Owhadi §4.5, R relaxed to 9 coordinates R11…R33 with the penalty ½ω²‖RᵀR − I‖² (ω = 10); --b-mu (default −1); lie-euler integrates on SO(3)"
    }
    fn options(&self) -> Vec<clap::Arg> {
        vec![b_mu_option()]
    }
    fn eval_options(&self) -> Vec<clap::Arg> {
        vec![b_mu_option()]
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            constraints: Err("its penalty is part of V (no constraints, no stiff split)"),
            omega: true,
            lie_euler: true,
            ..Accepts::default()
        }
    }
    fn omega(&self) -> f64 {
        rigid_body::OMEGA
    }
    fn defaults(&self, _method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        (rigid_body::H, 100.0, rigid_body::BETA_PAPER_SCHEME)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let b_mu = args.options.get::<f64>("b-mu").unwrap_or(rigid_body::B_MU);
        let omega = job.p.omega;
        let system = MagnetizedRigidBody { b_mu, omega };
        let make = || -> Box<dyn Watch> { Box::new(Orthogonality(0.0)) };
        let job = job.with_watch(&make).with_potential(format!(
            "V = Bμ R33 + ½ω²‖RᵀR − I‖², ω = {omega} (the penalty is part of V)"
        ));
        let state = job.initial_state(
            MagnetizedRigidBody::initial_state(),
            &rigid_body::coordinate_names(),
        )?;
        let lie_euler = job.p.method == IntegratorName::LieEuler;
        say!(
            "zs: magnetized rigid body (Tao & Owhadi §4.5), identity inertia, V = Bμ R33 with Bμ = {b_mu}{}; R(0) = I, Ω(0) = (1, 0.2, 0.1)",
            if lie_euler {
                " on SO(3)".to_string()
            } else {
                format!(" + ½ω²‖RᵀR − I‖², ω = {omega}, M = ½I₉")
            }
        );
        let names = rigid_body::coordinate_names();
        if lie_euler {
            let stepper: Box<dyn CliStepper<MagnetizedRigidBody, [f64; 9]>> =
                Box::new(CayleyEuler::new(job.p.h));
            say!(
                "    integrator lie-euler (Hamilton–Pontryagin / Cayley variational Euler, eq. 34), h = {}, T = {}",
                stepper.h(),
                job.p.t_end
            );
            job.drive(&system, &system, stepper, state, names.into())
        } else {
            let n = job.replicas();
            job.run(&vec![&system; n], &vec![&system; n], state, names)
        }
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        // The penalty is part of the rigid body's potential: without --omega, V = Bμ R33.
        let system = MagnetizedRigidBody {
            b_mu: args.options.get::<f64>("b-mu").unwrap_or(rigid_body::B_MU),
            omega: args.omega.unwrap_or(0.0),
        };
        let rows = state_file::read(args.input()?, &rigid_body::coordinate_names())?;
        Ok(table(&system, &rows, &rigid_body::coordinate_names()))
    }
}
