//! The failures of the `zs` command line, typed: each is printed as one line, `zs: <message>`,
//! with exit status 1 (clap's own parse errors exit with 2, see [`super::main`]).

use std::io;
use std::path::PathBuf;

use zs_runtime::assembly::TopologyError;
use zs_runtime::minimize::MinimizeError;
use zs_runtime::{CheckpointError, StepError};

use super::state_file::StateFileError;

/// Why `zs` could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// Replicas of an ensemble stopped on a failed step (the others ran to the end).
    #[error(
        "{stopped} of {total} replicas stopped (summary.csv says which); replica {first}: {error}"
    )]
    ReplicasStopped {
        /// How many stopped.
        stopped: usize,
        /// Replicas in all.
        total: usize,
        /// The first that stopped.
        first: usize,
        /// Its error.
        error: String,
    },
    /// An option that needs another one.
    #[error("{0} needs {1} (Langevin dynamics takes a friction and a temperature)")]
    Requires(&'static str, &'static str),
    /// An option given to a system or an integrator it does not apply to.
    #[error("{option} does not apply to {target}{}", reason.map(|r| format!(": {r}")).unwrap_or_default())]
    DoesNotApply {
        /// The option as written (`--omega`, `--integrator shake`).
        option: String,
        /// The system or integrator.
        target: String,
        /// Why, when it helps.
        reason: Option<&'static str>,
    },
    /// An option that applies to some systems or integrators only.
    #[error("{option} applies to {applies_to}, not to {target}")]
    AppliesOnlyTo {
        /// The option.
        option: String,
        /// What it applies to.
        applies_to: String,
        /// What it was given to.
        target: String,
    },
    /// A value the system cannot take.
    #[error("{option} {value}: {why}")]
    BadValue {
        /// The option.
        option: &'static str,
        /// Its value as given.
        value: String,
        /// Why.
        why: &'static str,
    },
    /// Two outputs that name the same file (one would be lost), or an output that is a
    /// directory.
    #[error("{first} and {second} name the same file {}: one would overwrite the other", path.display())]
    SameFile {
        /// One option.
        first: &'static str,
        /// The other.
        second: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// A size that would not fit in this machine's memory.
    #[error(
        "--n {n} is too large: needs about {need:.1} GB, this machine has {have:.1} GB available"
    )]
    TooLarge {
        /// The size asked for.
        n: u64,
        /// The estimate, GB.
        need: f64,
        /// `MemAvailable`, GB.
        have: f64,
    },
    /// A directory to create under a path that is a file.
    #[error("cannot {action} {}: {} is a file, not a directory", dir.display(), file.display())]
    UnderAFile {
        /// What was tried.
        action: &'static str,
        /// The directory.
        dir: PathBuf,
        /// The file in its way.
        file: PathBuf,
    },
    /// An output path that is an existing directory.
    #[error("{option} {} is a directory: give a file name", path.display())]
    OutputIsDirectory {
        /// The option.
        option: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// Two options that exclude each other.
    #[error("{0} and {1} exclude each other: {2}")]
    Exclusive(&'static str, &'static str, &'static str),
    /// What the command asks for is left out of this build (a cargo feature).
    #[error("{what}, which this build leaves out: build with `--features {feature}` ({command})")]
    NeedsFeature {
        /// What needs it.
        what: String,
        /// The cargo feature of `zs-systems`.
        feature: &'static str,
        /// The command that builds it.
        command: String,
    },
    /// A normal-mode analysis that failed (too large, bad masses, a non-finite Hessian).
    #[cfg(feature = "faer")]
    #[error("normal modes: {0}")]
    Modes(#[from] zs_runtime::modes::ModesError),
    /// A LAMMPS data file (`--data`) that cannot be read or parsed (file and line named).
    #[error(transparent)]
    Data(#[from] zs_runtime::lammps::DataError),
    /// A data file that is not the system's (masses, overstretched bonds, box).
    #[error("{path}: {source}", path = path.display())]
    Melt {
        /// The data file.
        path: PathBuf,
        /// Why.
        source: crate::kremer_grest::MeltError,
    },
    /// A data file or builder arguments that are not an alkane liquid.
    #[error("{what}: {source}")]
    Alkane {
        /// The data file, or "the liquid builder".
        what: String,
        /// Why.
        source: crate::alkane::AlkaneError,
    },
    /// An option the system needs.
    #[error("{system} needs {option}: {why}")]
    Missing {
        /// The system.
        system: &'static str,
        /// The option.
        option: &'static str,
        /// What to give.
        why: &'static str,
    },
    /// A state file (`--init`, `zs eval --in`) that cannot be used.
    #[error(transparent)]
    StateFile(#[from] StateFileError),
    /// The state file's last state is at or after the end of the run.
    #[error("the last state of {path} is at t = {t}, not before --t-end {t_end}")]
    InitAfterEnd {
        /// The file.
        path: PathBuf,
        /// Its last time.
        t: f64,
        /// The run's end.
        t_end: f64,
    },
    /// A file or directory that cannot be created, read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was tried ("create the output directory", "write").
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// `--resume` with a checkpoint that cannot be read from disk.
    #[error("cannot read the checkpoint {}: {source}", path.display())]
    CheckpointRead {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// `--resume` with a checkpoint that cannot be applied.
    #[error("cannot resume from {}: {source}", path.display())]
    Resume {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        source: CheckpointError,
    },
    /// `--resume` with other arguments than the interrupted run's.
    #[error("cannot resume from {}: --{option} is {here} here but {saved} in the checkpoint (give the interrupted run's arguments)", path.display())]
    ResumeMismatch {
        /// The checkpoint.
        path: PathBuf,
        /// The option that differs.
        option: String,
        /// Its value on this command line.
        here: String,
        /// Its value in the checkpoint.
        saved: String,
    },
    /// `--resume` whose interrupted run's trajectory cannot be reopened.
    #[error("cannot resume: the interrupted run's {}.tmp cannot be opened: {source}{}", out.display(), if *completed { " (the run it belongs to seems to have completed)" } else { "" })]
    ResumeOutput {
        /// The trajectory file.
        out: PathBuf,
        /// Whether the final file exists (the run completed).
        completed: bool,
        /// Why.
        source: io::Error,
    },
    /// The step size cannot reach the end time.
    #[error("h = {h} cannot reach t = {t_end}")]
    Unreachable {
        /// The step size.
        h: f64,
        /// The end time.
        t_end: f64,
    },
    /// The topology of an assembled system is invalid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// `--minimize` failed.
    #[error("--minimize: {0}")]
    Minimize(#[from] MinimizeError),
    /// Writing the trajectory failed during the run.
    #[error("writing the output failed: {0}")]
    Output(io::Error),
    /// A step failed: the trajectory is kept up to the last good step and marked.
    #[error("the run stopped early: {error}; {} holds the trajectory up to the last good step (step {steps}, t = {t}) and {} says so", out.display(), marker.display())]
    Stopped {
        /// The failure.
        error: StepError,
        /// The trajectory file.
        out: PathBuf,
        /// Steps completed.
        steps: u64,
        /// Time of the last good state.
        t: f64,
        /// The `.incomplete` marker.
        marker: PathBuf,
    },
    /// What a system's own description reports (one of a program's own systems, through
    /// [`CliError::system`]).
    #[error("{system}: {message}")]
    System {
        /// The system's name.
        system: &'static str,
        /// What went wrong, one line.
        message: String,
    },
    /// `zs reproduce` failed.
    #[cfg(feature = "experiments")]
    #[error(transparent)]
    Experiment(#[from] crate::experiments::ExperimentError),
}

impl CliError {
    /// `option` does not apply to `target`, for `reason`.
    pub fn does_not_apply(
        option: impl Into<String>,
        target: impl Into<String>,
        reason: Option<&'static str>,
    ) -> Self {
        CliError::DoesNotApply {
            option: option.into(),
            target: target.into(),
            reason,
        }
    }

    /// `option` applies to `applies_to` only, not to `target`.
    pub fn applies_only_to(
        option: impl Into<String>,
        applies_to: impl Into<String>,
        target: impl Into<String>,
    ) -> Self {
        let applies_to: String = applies_to.into();
        CliError::AppliesOnlyTo {
            option: option.into(),
            applies_to: if applies_to.is_empty() {
                "none of this program's systems".into()
            } else {
                applies_to
            },
            target: target.into(),
        }
    }

    /// What `system`'s own description reports: `message` (any error), shown as one line
    /// `zs: <system>: <message>`.
    pub fn system(system: &'static str, message: impl std::fmt::Display) -> Self {
        CliError::System {
            system,
            message: message.to_string(),
        }
    }

    /// An I/O failure while trying `action` on `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        CliError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
