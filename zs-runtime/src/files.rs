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

/// Items of a row (or a frame) per chunk of text formatted at once.
const CHUNK: usize = 2048;
/// Chunks formatted before they are written: the text held at once stays a few megabytes
/// whatever the number of items (a million bodies' row is over a hundred).
const WAVE: usize = 64;

/// Chunks of text reused from one row (or frame) to the next: [`Chunks::write`].
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    texts: Vec<String>,
}

impl Chunks {
    /// Write items `0..n` to `out` in order, item `i` as the text `item(i, text)` appends.
    /// Beyond [`CHUNK`] items, chunks of them are formatted in parallel on rayon's current
    /// pool, then written in order: the bytes are those of formatting them one after another
    /// (formatting is a function of the item alone), whatever the threads. The per-value text
    /// formatting is most of a large state's output time, and a run's first and last states
    /// are written however rarely it samples. The chunks' strings are kept for the next call.
    pub(crate) fn write<W: io::Write + ?Sized>(
        &mut self,
        n: usize,
        item: impl Fn(usize, &mut String) + Sync,
        out: &mut W,
    ) -> io::Result<()> {
        use rayon::prelude::*;
        let chunks = n.div_ceil(CHUNK);
        if self.texts.len() < chunks.min(WAVE) {
            self.texts.resize_with(chunks.min(WAVE), String::new);
        }
        let mut first = 0;
        while first < chunks {
            let wave = (chunks - first).min(WAVE);
            let texts = &mut self.texts[..wave];
            let fill = |(k, text): (usize, &mut String)| {
                text.clear();
                let start = (first + k) * CHUNK;
                for i in start..(start + CHUNK).min(n) {
                    item(i, text);
                }
            };
            if wave > 1 {
                texts.par_iter_mut().enumerate().for_each(fill);
            } else {
                texts.iter_mut().enumerate().for_each(fill);
            }
            for text in texts.iter() {
                out.write_all(text.as_bytes())?;
            }
            first += wave;
        }
        Ok(())
    }
}

#[cfg(test)]
mod chunk_tests {
    use super::Chunks;
    use std::fmt::Write as _;

    /// Any number of items, on pools of 1 and 3 threads, gives the text of writing them one by
    /// one.
    #[test]
    fn chunks_write_the_items_text_in_order_whatever_the_threads() {
        let item = |i: usize, s: &mut String| {
            let _ = write!(s, ",{}", (i as f64).sqrt());
        };
        for n in [0, 1, 2047, 2048, 2049, 64 * 2048 + 5, 200_000] {
            let mut one = String::new();
            (0..n).for_each(|i| item(i, &mut one));
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut out = Vec::new();
                let mut chunks = Chunks::default();
                pool.install(|| chunks.write(n, item, &mut out)).unwrap();
                // Again with the kept strings.
                pool.install(|| chunks.write(n, item, &mut out)).unwrap();
                assert_eq!(out, [one.as_bytes(), one.as_bytes()].concat(), "{n} items");
            }
        }
    }
}
