//! `zs eval <system> --in FILE [--n N] [--omega W] [--out FILE]`: the potential and its
//! gradient at every state of a state file ([`super::state_file`]), one CSV row per input row:
//! `potential`, then `∂V/∂q` in the system's coordinate order (`dV_<name>` columns); `V`
//! penalized (`V + ½ω²|g|²`) when `--omega` is given (for `rigid-body`, whose penalty
//! `½ω²‖RᵀR − I‖²` is part of its potential: `Bμ R33` without `--omega`, `--b-mu X` sets `Bμ`).

use std::fmt::Write as _;
use std::path::Path;

use zs_runtime::{MechanicalSystem, Model, Vector};

use super::{state_file, EvalArgs, GravitySign, SystemName};
use crate::chain::{self, PendulumChain};
use crate::dna::{self, DnaChain};
use crate::double_pendulum::DoublePendulum;
use crate::rigid_body::{self, MagnetizedRigidBody};
use crate::water::{self, Water};

/// Run `zs eval` with parsed arguments; `Err` is the one-line message to print.
pub fn eval(args: &EvalArgs) -> Result<(), String> {
    let gravity = match args.gravity.unwrap_or(GravitySign::Physical) {
        GravitySign::Physical => -1.0,
        GravitySign::Printed => 1.0,
    };
    if args.b_mu.is_some() && args.system != SystemName::RigidBody {
        return Err(format!(
            "--b-mu applies to rigid-body, not to {}",
            args.system.name()
        ));
    }
    let text = match args.system {
        SystemName::DoublePendulum => {
            if args.n.is_some() {
                return Err("--n applies to chain, dna and water, not to double-pendulum".into());
            }
            let system = DoublePendulum {
                gravity,
                ..DoublePendulum::paper()
            };
            let rows = state_file::read(&args.input, 4)?;
            let names = ["x1", "y1", "x2", "y2"].map(String::from);
            match args.omega {
                Some(w) => table(&system.penalized(w), &rows, &names),
                None => table(&system, &rows, &names),
            }
        }
        SystemName::Chain => {
            let n = args.n.unwrap_or(chain::N as u64) as usize;
            let system = PendulumChain {
                gravity,
                ..PendulumChain::paper()
            }
            .assemble(n);
            let rows = state_file::read(&args.input, 2 * n)?;
            let names = PendulumChain::coordinate_names(n);
            match args.omega {
                Some(w) => table(&system.penalized(w), &rows, &names),
                None => table(&system, &rows, &names),
            }
        }
        SystemName::Dna => {
            if args.omega.is_some() || args.gravity.is_some() {
                return Err(format!(
                    "{} does not apply to dna: it has no constraints",
                    if args.omega.is_some() {
                        "--omega"
                    } else {
                        "--gravity"
                    }
                ));
            }
            let n = args.n.unwrap_or(dna::N as u64) as usize;
            if n < 3 {
                return Err(format!("--n {n}: a DNA ring needs at least 3 base pairs"));
            }
            let system = DnaChain::paper().assemble(n);
            let rows = state_file::read(&args.input, n)?;
            table(&system, &rows, &DnaChain::coordinate_names(n))
        }
        SystemName::Water => {
            if args.gravity.is_some() {
                return Err("--gravity does not apply to water".into());
            }
            let n = args.n.unwrap_or(water::N as u64) as usize;
            let system = Water::tip3p().assemble(n);
            let rows = state_file::read(&args.input, 9 * n)?;
            let names = Water::coordinate_names(n);
            match args.omega {
                Some(w) => table(&system.penalized(w), &rows, &names),
                None => table(&system, &rows, &names),
            }
        }
        SystemName::RigidBody => {
            if args.n.is_some() || args.gravity.is_some() {
                return Err(format!(
                    "{} does not apply to rigid-body",
                    if args.n.is_some() { "--n" } else { "--gravity" }
                ));
            }
            // The penalty is part of the rigid body's potential: without --omega, V = Bμ R33.
            let system = MagnetizedRigidBody {
                b_mu: args.b_mu.unwrap_or(rigid_body::B_MU),
                omega: args.omega.unwrap_or(0.0),
            };
            let rows = state_file::read(&args.input, 9)?;
            table(&system, &rows, &rigid_body::coordinate_names())
        }
    };
    match &args.out {
        None => {
            use std::io::Write as _;
            // A reader that stops early (`| head`) closes the pipe: not an error of ours.
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(format!("cannot write to standard output: {e}"))
                }
                _ => Ok(()),
            }
        }
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    format!("cannot create the output directory {}: {e}", dir.display())
                })?;
            }
            zs_runtime::files::write_atomic(Path::new(path), text.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
    }
}

/// The CSV text: header, then `V, ∇V` per row.
fn table<P: Model<V>, V: Vector>(target: &P, rows: &[state_file::Row], names: &[String]) -> String {
    let mut out = String::from("potential");
    for n in names {
        let _ = write!(out, ",dV_{n}");
    }
    out.push('\n');
    let mut g = V::zeros(names.len());
    for row in rows {
        let q = V::try_from_slice(&row.q).expect("rows have the system's size");
        target.gradient_into(&q, &mut g);
        let _ = write!(out, "{:e}", target.potential_at(&q));
        for x in g.as_slice() {
            let _ = write!(out, ",{x:e}");
        }
        out.push('\n');
    }
    out
}
