//! What a checkpoint of `zs run` says about its run: the arguments that define it, saved in
//! every checkpoint and compared on `--resume`.

use std::path::Path;

use zs_runtime::Checkpoint;

use super::Profile;
use crate::cli::error::CliError;
use crate::cli::RunArgs;

/// The arguments that define the run, saved in every checkpoint (`cli.*`) and compared on
/// resume. The names are the options' names.
pub(crate) fn run_meta(args: &RunArgs, system: &str, out: &Path, p: &Profile) -> Checkpoint {
    let mut cp = Checkpoint::new();
    let mut m = cp.scope_mut("cli");
    m.set_str("system", system);
    m.set_str("integrator", &p.method.clap_name());
    m.set_f64("h", p.h);
    m.set_f64("t-end", p.t_end);
    m.set_f64("omega", p.omega);
    m.set_f64("beta", p.beta);
    m.set_u64("every", p.every);
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
    m.set_f64s("max-condition", args.max_condition.as_slice());
    // The options the system declares, as written (or their defaults): a value option is
    // part of the run; a flag (water's `--minimize`) only acts before the first step.
    for d in args.system.all().run_options() {
        let id = d.arg.get_id().as_str();
        if d.by.contains(&system) && d.arg.get_action().takes_values() {
            m.set_str(id, &args.options.raw(id).unwrap_or_default());
        }
    }
    cp
}

/// `Err` naming the first argument that differs between this command line and the checkpoint.
pub(crate) fn check_same_run(
    now: &Checkpoint,
    saved: &Checkpoint,
    path: &Path,
) -> Result<(), CliError> {
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
    // The system first, then the integrator: a checkpoint of another system differs in its
    // parameters too, and the system is what the user needs to read.
    let first = ["cli.system", "cli.integrator"];
    let keys = first
        .into_iter()
        .filter(|k| now.keys().any(|n| n == *k))
        .chain(now.keys().filter(|k| !first.contains(k)));
    for key in keys {
        let (a, b) = (now.value_text(key), saved.value_text(key));
        if a != b {
            let name = key.strip_prefix("cli.").unwrap_or(key);
            return Err(CliError::ResumeMismatch {
                path: path.to_path_buf(),
                option: name.to_string(),
                here: human(a),
                saved: human(b),
            });
        }
    }
    Ok(())
}
