//! Checkpoints of `zs temper` (`--checkpoint NAME`), written between two exchange rounds: each
//! replica to `DIR/NAME.k` by the process that holds it (state, Langevin stepper, CSV offsets),
//! then — after every process wrote its replicas — the exchanges to `DIR/NAME` by rank 0
//! (the arguments of the run, the step, the round, the assignment and counts, and the lengths
//! of `exchanges.csv` and `walks.csv`). `DIR/NAME` names the round the set belongs to; a
//! replica's previous file is kept as `DIR/NAME.k.previous` while its next one is written, so
//! a process killed in the middle of a checkpoint leaves, for every replica, a file of the
//! round `DIR/NAME` names. A resumed run reads the replicas of its own block, so it may run
//! on another number of ranks than the interrupted one.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use zs_runtime::files::{publish, tmp_path_of};
use zs_runtime::{Checkpoint, CheckpointError};

use crate::cli::error::CliError;

/// `--checkpoint NAME [--checkpoint-every K] [--resume NAME]` of `zs temper`.
#[derive(Debug, Clone)]
pub struct TemperCheckpoint {
    /// `DIR/NAME`: the exchanges' file; replica k's is `DIR/NAME.k`.
    pub path: PathBuf,
    /// A checkpoint after the first round at or past every multiple of `every` steps.
    pub every: u64,
    /// `--resume`: continue from `DIR/NAME` if it exists (else start from the beginning).
    pub resume: bool,
}

impl TemperCheckpoint {
    /// `DIR/NAME.k`, or with `previous`, `DIR/NAME.k.previous`.
    pub fn replica_path(&self, k: usize, previous: bool) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{k}"));
        if previous {
            name.push(".previous");
        }
        PathBuf::from(name)
    }

    /// Whether the round that ends at step `done` (the previous one at `before`) writes a
    /// checkpoint: it is the first at or past a multiple of `every`, and not the last.
    pub fn due(&self, before: u64, done: u64, planned: u64) -> bool {
        done < planned && done / self.every > before / self.every
    }

    /// Write replica `k`'s checkpoint `cp` (a fresh checkpoint keeps its predecessor as
    /// `.previous` until every process has written its replicas).
    pub fn write_replica(&self, k: usize, cp: &Checkpoint) -> Result<(), CliError> {
        let path = self.replica_path(k, false);
        if path.exists() {
            let previous = self.replica_path(k, true);
            std::fs::rename(&path, &previous)
                .map_err(|e| CliError::io("keep the previous checkpoint", &previous, e))?;
        }
        cp.write(&path)
            .map_err(|e| CliError::io("write the checkpoint", &path, e))
    }

    /// Replica `k`'s checkpoint of `round`: `DIR/NAME.k`, or its predecessor if the run was
    /// killed after writing that one but before `DIR/NAME`.
    pub fn read_replica(&self, k: usize, round: u64) -> Result<Checkpoint, CliError> {
        let mut seen = Vec::new();
        for previous in [false, true] {
            let path = self.replica_path(k, previous);
            if !path.exists() {
                continue;
            }
            let cp = Checkpoint::read(&path).map_err(|source| CliError::Resume {
                path: path.clone(),
                source,
            })?;
            match cp.u64("temper.round") {
                Ok(r) if r == round => return Ok(cp),
                Ok(r) => seen.push(format!("{} is of round {r}", path.display())),
                Err(source) => return Err(CliError::Resume { path, source }),
            }
        }
        Err(CliError::Resume {
            path: self.replica_path(k, false),
            source: CheckpointError::Mismatch(format!(
                "replica {k} has no checkpoint of round {round}, the round of {} ({})",
                self.path.display(),
                if seen.is_empty() {
                    "no file".to_string()
                } else {
                    seen.join(", ")
                }
            )),
        })
    }

    /// Remove the checkpoint files of replicas `held` (and with `exchanges`, `DIR/NAME`) left
    /// by an earlier run, so that a fresh run interrupted before its first checkpoint is not
    /// resumed from them.
    pub fn clear(&self, held: std::ops::Range<usize>, exchanges: bool) -> Result<(), CliError> {
        let mut paths: Vec<PathBuf> = held
            .flat_map(|k| [self.replica_path(k, false), self.replica_path(k, true)])
            .collect();
        if exchanges {
            paths.push(self.path.clone());
        }
        for p in paths {
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(CliError::io("remove the old checkpoint", &p, e))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A text file of `zs temper` (`exchanges.csv`, `walks.csv`) written as it grows to
/// `FILE.tmp`, cut back to a checkpoint's length on resume, and renamed to `FILE` at the end:
/// a killed run leaves no complete-looking file.
pub(super) struct Log {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Log {
    /// A new `path.tmp` starting with `header`.
    pub(super) fn create(path: &Path, header: &str) -> Result<Self, CliError> {
        let tmp = tmp_path_of(path);
        let file = File::create(&tmp).map_err(|e| CliError::io("create", &tmp, e))?;
        let mut log = Self {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
        };
        log.push(header)?;
        Ok(log)
    }

    /// The interrupted run's `path.tmp`, cut back to the `bytes` it had at the checkpoint.
    pub(super) fn reopen(path: &Path, bytes: u64) -> Result<Self, CliError> {
        let tmp = tmp_path_of(path);
        let reopen = || -> io::Result<File> {
            let mut file = OpenOptions::new().write(true).open(&tmp)?;
            let len = file.metadata()?.len();
            if len < bytes {
                return Err(io::Error::other(format!(
                    "{len} bytes, fewer than the {bytes} of the checkpoint"
                )));
            }
            file.set_len(bytes)?;
            file.seek(io::SeekFrom::End(0))?;
            Ok(file)
        };
        let file = reopen().map_err(|source| CliError::ResumeOutput {
            out: path.to_path_buf(),
            completed: path.exists(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
        })
    }

    /// Append `text`.
    pub(super) fn push(&mut self, text: &str) -> Result<(), CliError> {
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| CliError::io("write", tmp_path_of(&self.path), e))
    }

    /// Flush and sync; the length to cut back to on resume.
    pub(super) fn sync(&mut self) -> Result<u64, CliError> {
        let tmp = tmp_path_of(&self.path);
        let sync = |file: &mut BufWriter<File>| -> io::Result<u64> {
            file.flush()?;
            let f = file.get_mut();
            f.sync_data()?;
            f.stream_position()
        };
        sync(&mut self.file).map_err(|e| CliError::io("write", &tmp, e))
    }

    /// Flush, sync and rename `path.tmp` to `path`.
    pub(super) fn publish(mut self) -> Result<(), CliError> {
        self.sync()?;
        let tmp = tmp_path_of(&self.path);
        drop(self.file);
        publish(&tmp, &self.path, None).map_err(|e| CliError::io("rename", &tmp, e))
    }
}
