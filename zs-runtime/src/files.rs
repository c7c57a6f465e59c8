//! Files written so that they never look complete when they are not: the temporary-name,
//! `fsync`, rename discipline every result and checkpoint file of the crate follows. The
//! lowest layer of the output modules: [`crate::checkpoint`] and [`crate::output`] build on it.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` atomically: to `<path>.tmp`, flush, `fsync`, rename to `path`,
/// `fsync` the directory (on Unix). A crash at any point leaves either the old `path` (if any)
/// or the new one complete, never a truncated file under `path`.
///
/// # Errors
/// Any I/O error: then `path` is untouched and `<path>.tmp` removed (best effort).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path_of(path);
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.flush()?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    sync_parent_dir(path);
    Ok(())
}

/// Make a rename in `path`'s directory durable (Unix: `fsync` of the directory). Best effort:
/// a directory that cannot be opened for syncing (some filesystems) is not an error, the rename
/// itself having succeeded.
pub fn sync_parent_dir(path: &Path) {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// The sidecar that marks `path` as ended early: `<path>.incomplete`.
pub fn incomplete_marker_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".incomplete");
    PathBuf::from(s)
}

/// `<path>.tmp`, where a file is written before it is renamed to `path`.
pub fn tmp_path_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Publish a recorder's synced `<path>.tmp` under `path`: with `incomplete = Some(text)` (a run
/// that ended early) first write the sidecar `<path>.incomplete` holding `text`, then rename;
/// with `None`, rename and then remove a stale sidecar of an earlier run (after the rename, so a
/// crash in between errs on the side of "incomplete").
///
/// # Errors
/// Writing the sidecar, the rename, or removing a stale sidecar.
pub fn publish(tmp: &Path, path: &Path, incomplete: Option<&str>) -> io::Result<()> {
    let marker = incomplete_marker_of(path);
    if let Some(text) = incomplete {
        write_atomic(&marker, text.as_bytes())?;
    }
    std::fs::rename(tmp, path)?;
    sync_parent_dir(path);
    if incomplete.is_none() {
        match std::fs::remove_file(&marker) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => sync_parent_dir(&marker),
        }
    }
    Ok(())
}
