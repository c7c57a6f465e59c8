//! `zs run <system>`: integrate a system from the paper's initial state (or `--init FILE`),
//! print a summary and write the trajectory as CSV; optionally under guards, with Langevin
//! noise, with checkpoints, or resumed from one.
//!
//! Written once for every system (`cli/system` describes each): the options are checked
//! against what the system accepts, the paper's defaults fill in what is not given, and one
//! `Job` builds the stepper and drives it (`cli/job`).

use std::path::{Path, PathBuf};

use zs_runtime::{Checkpoint, CheckpointError};

use super::error::CliError;
use super::job::{in_pool, resume::run_meta, Job, Profile};
use super::system::CliSystem;
use super::{IntegratorName, RunArgs};

/// Run `zs run` with parsed arguments.
///
/// # Errors
/// An option that does not apply, an unusable state file or checkpoint, a failed step.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let sys = args.system.get();
    let method = args.integrator.unwrap_or_else(|| sys.default_integrator());
    match (args.gamma, args.kt) {
        (Some(_), None) => return Err(CliError::Requires("--gamma", "--kt")),
        (None, Some(_)) => return Err(CliError::Requires("--kt", "--gamma")),
        _ => {}
    }
    check_options(sys, args, method)?;
    check_memory(sys, args, method)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.csv", sys.name())));
    check_outputs(sys, args, &out)?;
    ensure_dir("create the output directory", &out)?;
    if let Some(ck) = &args.checkpoint {
        ensure_dir("create the checkpoint directory", ck)?;
    }
    let resume = match &args.resume {
        Some(path) => Some(Checkpoint::read(path).map_err(|e| match e {
            CheckpointError::Io { source, .. } => CliError::CheckpointRead {
                path: path.clone(),
                source,
            },
            source => CliError::Resume {
                path: path.clone(),
                source,
            },
        })?),
        None => None,
    };
    let p = profile(sys, args, method);
    let meta = run_meta(args, sys.name(), &out, &p);
    let job = Job::new(args, out, resume.as_ref(), p, meta);
    in_pool(args.threads, move || sys.run(args, job))
}

/// The paper's `(h, T, β, ω, every)` for `sys` and `method`, overridden by `args`.
pub(super) fn profile(sys: &dyn CliSystem, args: &RunArgs, method: IntegratorName) -> Profile {
    let omega = args.omega.unwrap_or_else(|| sys.omega());
    let (h, t_end, beta) = sys.defaults(method, omega);
    let h = args.h.unwrap_or_else(|| sys.default_h(h, args.n));
    let t_end = args.t_end.unwrap_or(t_end);
    let steps = (t_end / h).ceil().max(1.0) as u64;
    Profile {
        h,
        t_end,
        omega,
        beta: args.beta.unwrap_or(beta),
        every: args.every.unwrap_or_else(|| sys.default_every(steps)),
        method,
    }
}

/// Every option that does not apply to the system or the integrator is an error (one line).
pub(super) fn check_options(
    sys: &dyn CliSystem,
    args: &RunArgs,
    method: IntegratorName,
) -> Result<(), CliError> {
    use IntegratorName as I;
    let (a, name, all) = (sys.accepts(), sys.name(), args.system.all());
    let method_name = method.clap_name();
    if args.n.is_some() && a.n.is_none() {
        return Err(CliError::applies_only_to(
            "--n",
            all.which(|s| s.accepts().n.is_some()),
            name,
        ));
    }
    if args.threads.is_some() && !a.threads {
        return Err(CliError::applies_only_to(
            "--threads",
            format!(
                "the assembled systems {}",
                all.which(|s| s.accepts().threads)
            ),
            name,
        ));
    }
    for (given, option) in [
        (args.data.is_some(), "--data"),
        (args.write_data.is_some(), "--write-data"),
    ] {
        if given && !a.data {
            return Err(CliError::applies_only_to(
                option,
                all.which(|s| s.accepts().data),
                name,
            ));
        }
    }
    args.options.check(all.run_options(), name)?;
    if method == I::Settle && !a.settle {
        return Err(CliError::does_not_apply(
            "--integrator settle",
            name,
            Some("it holds rigid three-site molecules (water-box)"),
        ));
    }
    if method == I::LieEuler && !a.lie_euler {
        return Err(CliError::does_not_apply(
            "--integrator lie-euler",
            name,
            Some("it integrates the rigid body on SO(3)"),
        ));
    }
    if let Err(reason) = a.constraints {
        for (given, option) in [
            (args.omega.is_some() && !a.omega, "--omega".to_string()),
            (args.max_residual.is_some(), "--max-residual".to_string()),
            (
                matches!(method, I::Shake | I::Rattle) || (method == I::ZssStiff && !a.stiff_split),
                format!("--integrator {method_name}"),
            ),
        ] {
            if given {
                return Err(CliError::does_not_apply(option, name, Some(reason)));
            }
        }
    }
    if method == I::LieEuler {
        for (given, option) in [
            (args.omega.is_some(), "--omega"),
            (args.beta.is_some(), "--beta"),
            (args.gamma.is_some(), "--gamma/--kt"),
        ] {
            if given {
                return Err(CliError::does_not_apply(
                    option,
                    "lie-euler",
                    Some("it integrates on SO(3), without penalty, solve or noise"),
                ));
            }
        }
    }
    if !method.is_penalty_method() && args.omega.is_some() {
        return Err(CliError::does_not_apply(
            "--omega",
            method_name,
            Some(
                "it integrates the constrained system with Lagrange multipliers, without a penalty",
            ),
        ));
    }
    if args.max_condition.is_some() && !matches!(method, I::Zs | I::Zss) {
        return Err(CliError::applies_only_to(
            "--max-condition",
            "the linearly implicit integrators zs and zss",
            method_name,
        ));
    }
    if cfg!(not(feature = "faer")) && matches!(method, I::Shake | I::Rattle) && a.threads {
        return Err(CliError::NeedsFeature {
            what: format!(
                "--integrator {method_name} on {name} solves SHAKE's sparse Newton system with faer's LU"
            ),
            feature: "faer",
            command: "cargo run --release -p zs-systems --features faer --bin zs -- run ...".into(),
        });
    }
    if args.init.is_some() && args.resume.is_some() {
        return Err(CliError::Exclusive(
            "--init",
            "--resume",
            "a resumed run continues from its checkpoint's state",
        ));
    }
    sys.check(args)
}

/// Every file the run writes is a distinct file and none is a directory: refused before any
/// step (a checkpoint renamed over the trajectory would lose it).
fn check_outputs(sys: &dyn CliSystem, args: &RunArgs, out: &Path) -> Result<(), CliError> {
    let xyz = out.with_extension("xyz");
    let mut files: Vec<(&'static str, &Path)> = vec![("--out", out)];
    if sys.accepts().xyz {
        files.push(("--out's XYZ trajectory", &xyz));
    }
    if let Some(c) = &args.checkpoint {
        files.push(("--checkpoint", c));
    }
    if let Some(w) = &args.write_data {
        files.push(("--write-data", w));
    }
    let key = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    for (k, &(option, path)) in files.iter().enumerate() {
        if path.is_dir() {
            return Err(CliError::OutputIsDirectory {
                option,
                path: path.to_path_buf(),
            });
        }
        if let Some(&(first, _)) = files[..k].iter().find(|(_, p)| key(p) == key(path)) {
            return Err(CliError::SameFile {
                first,
                second: option,
                path: path.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// `--n` whose run would need more memory than the machine has available: refused before
/// anything is allocated (one line naming the estimate), not an abort in the allocator.
pub(super) fn check_memory(
    sys: &dyn CliSystem,
    args: &RunArgs,
    method: IntegratorName,
) -> Result<(), CliError> {
    let Some(n) = args.n else {
        return Ok(());
    };
    let need = sys.memory_estimate(usize::try_from(n).unwrap_or(usize::MAX), method);
    let Some(have) = available_memory() else {
        return Ok(());
    };
    if need > have {
        return Err(CliError::TooLarge {
            n,
            need: need / 1e9,
            have: have / 1e9,
        });
    }
    Ok(())
}

/// `MemAvailable` of `/proc/meminfo`, bytes (None where there is none).
fn available_memory() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// Create the directory `file` goes into when it is missing.
pub(super) fn ensure_dir(action: &'static str, file: &Path) -> Result<(), CliError> {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => {
            // A file where a directory must be: say so (the OS says "File exists").
            if let Some(f) = d.ancestors().find(|a| a.exists() && !a.is_dir()) {
                return Err(CliError::UnderAFile {
                    action,
                    dir: d.to_path_buf(),
                    file: f.to_path_buf(),
                });
            }
            std::fs::create_dir_all(d).map_err(|e| CliError::io(action, d, e))
        }
        _ => Ok(()),
    }
}

/// The checkpoint options of a command that runs several replicas under `--out-dir DIR`
/// (`command`, e.g. "zs ensemble"): `--checkpoint NAME` is a file name (`layout` says which
/// files it names), and `--resume` repeats it.
pub(super) fn check_named_checkpoint(
    args: &RunArgs,
    command: &'static str,
    layout: &'static str,
) -> Result<(), CliError> {
    for (given, option, why) in [
        (
            args.resume.is_some() && args.checkpoint.is_none(),
            "--resume without --checkpoint",
            "give --checkpoint NAME and --resume NAME: the run resumes from the checkpoints NAME names",
        ),
        (
            args.resume.is_some() && args.resume != args.checkpoint,
            "--resume NAME other than --checkpoint's",
            "give the same NAME to both",
        ),
        (
            args.checkpoint
                .as_ref()
                .is_some_and(|c| c.components().count() != 1),
            "--checkpoint with a directory",
            layout,
        ),
    ] {
        if given {
            return Err(CliError::does_not_apply(option, command, Some(why)));
        }
    }
    Ok(())
}
