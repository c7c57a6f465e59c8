//! `zs eval <system> --in FILE [--n N] [--omega W] [--out FILE]`: the potential and its
//! gradient at every state of a state file ([`super::state_file`]), one CSV row per input row:
//! `potential`, then `∂V/∂q` in the system's coordinate order (`dV_<name>` columns); `V`
//! penalized (`V + ½ω²|g|²`) when `--omega` is given (for `rigid-body`, whose penalty
//! `½ω²‖RᵀR − I‖²` is part of its potential: `Bμ R33` without `--omega`, `--b-mu X` sets `Bμ`).
//! Written once; each system's description (`cli/system`) builds its model.

use std::path::Path;

use super::error::CliError;
use super::system::check_eval_options;
use super::EvalArgs;

/// Run `zs eval` with parsed arguments.
///
/// # Errors
/// An option that does not apply, an unreadable state file, an output that cannot be written.
pub fn eval(args: &EvalArgs) -> Result<(), CliError> {
    let sys = args.system.get();
    check_eval_options(args)?;
    super::systems::check_eval(args)?;
    let text = sys.eval(args)?;
    match &args.out {
        None => {
            use std::io::Write as _;
            // A reader that stops early (`| head`) closes the pipe: not an error of ours.
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(CliError::io("write to", "standard output", e))
                }
                _ => Ok(()),
            }
        }
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| CliError::io("create the output directory", dir, e))?;
            }
            zs_runtime::files::write_atomic(Path::new(path), text.as_bytes())
                .map_err(|e| CliError::io("write", path, e))
        }
    }
}
