//! Checkpoint and restart, bit for bit.
//!
//! A [`Checkpoint`] is everything a run needs to continue exactly as if it had never stopped: the
//! [`StateOf`] (every `f64` stored as its bit pattern), the run's step count and plan, the
//! stepper's own state ([`Resumable`]) and the observers' ([`crate::Observer::save_checkpoint`],
//! e.g. how many bytes of the CSV file belong to the run so far).
//! [`crate::driver::run_checkpointed`] writes one every `K` steps and [`crate::driver::resume`]
//! continues from one; the resumed run's states are bit-for-bit those of an uninterrupted run
//! (`tests/checkpoint.rs`).
//!
//! What a stepper must save is what is *not* a pure function of the state: its step counter,
//! `h`, its parameters (β), and e.g. the position of a random-number stream. Caches need not be
//! saved when they are recomputed deterministically from the state: the cached `f(x_k)` of
//! Zhang–Skeel and `a(x_k)` of Verlet are recomputed by the same code from the same bits,
//! which gives the same bits. What the *model* keeps between evaluations and what its results
//! depend on — an assembled system's neighbour list, rebuilt only when a body moved more than
//! half the skin, whose order sets the order of the pair sums — is saved under `model.`
//! ([`crate::Model::save_history`]) and restored before the resumed run's first step.
//!
//! # File format (version 1)
//!
//! UTF-8 text, one entry per line, so that it can be read and diffed by eye:
//!
//! ```text
//! zs-checkpoint 1
//! n u64 1
//! run.done u64 3
//! state.q f64s 3fe8a3c0e2b1a7f0 # 0.7699...
//! state.t f64 3fd3333333333334 # 0.30000000000000004
//! stepper str zhang-skeel
//! ...
//! end 9c4b2f0d1e3a5b67
//! ```
//!
//! - line 1 is the magic word and the format version;
//! - then `key type value` lines, sorted by key (keys are `[A-Za-z0-9_.-]+`, unique); the types
//!   are `u64` (decimal), `f64` (the 16 hex digits of `f64::to_bits`: exact, NaN payloads and
//!   `-0.0` included), `f64s` (space-separated list of those) and `str` (the rest of the line;
//!   no line breaks). A ` # …` after `f64`/`f64s` values is a decimal rendering for humans and
//!   is ignored when reading;
//! - the last line is `end` and the FNV-1a 64-bit hash of every byte before it, so a file
//!   that was truncated or edited is rejected rather than silently resumed.
//!
//! Files are written atomically ([`crate::files::write_atomic`]: `FILE.tmp`, flush, fsync,
//! rename, fsync of the directory): a crash while checkpointing leaves the previous checkpoint
//! intact.
//!
//! Why not serde with a format crate: this format is ~100 lines, exact by construction (bit
//! patterns, not decimal round trips), and adds no dependency to the runtime.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::StateOf;
use crate::vector::Vector;

/// Magic word of line 1.
pub const MAGIC: &str = "zs-checkpoint";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;

/// Why a checkpoint could not be read or applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The file could not be read (or, for resumed output, reopened).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The text is not a checkpoint of this format.
    #[error("line {line}: {message}")]
    Format {
        /// 1-based line number (0: the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A version this crate cannot read.
    #[error("checkpoint format version {found}, this build reads version {VERSION}")]
    Version {
        /// The version in the file.
        found: String,
    },
    /// A required entry is absent.
    #[error("missing entry '{0}'")]
    Missing(String),
    /// An entry has another type or shape than expected.
    #[error("entry '{key}': expected {expected}, found {found}")]
    Type {
        /// The key.
        key: String,
        /// The expected type.
        expected: String,
        /// What was there.
        found: String,
    },
    /// The checkpoint does not belong to this run (another stepper, dimension, parameters...).
    #[error("checkpoint mismatch: {0}")]
    Mismatch(String),
}

/// A value of a checkpoint entry.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    U64(u64),
    F64(u64),
    F64s(Vec<u64>),
    Str(String),
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Value::U64(_) => "u64",
            Value::F64(_) => "f64",
            Value::F64s(_) => "f64s",
            Value::Str(_) => "str",
        }
    }
}

/// A checkpoint: typed `key → value` entries with exact `f64`s (see the [module docs](self)).
///
/// Keys group by prefix: `state.*` (the [`StateOf`]), `run.*` (the driver), `stepper.*`
/// ([`Resumable`]), `observer.<i>.*` (the `i`-th observer), and any prefix a program adds
/// (the `zs` CLI uses `cli.*`). Use [`Checkpoint::scope_mut`] / [`Checkpoint::scope`] to
/// read and write under a prefix.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checkpoint {
    entries: BTreeMap<String, Value>,
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// FNV-1a, 64 bits: the integrity hash of the `end` line.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Checkpoint {
    /// An empty checkpoint.
    pub fn new() -> Self {
        Self::default()
    }

    /// A checkpoint holding `state` (`n`, `state.t`, `state.q`, `state.v`).
    pub fn with_state<V: Vector>(state: &StateOf<V>) -> Self {
        let mut c = Self::new();
        c.set_state(state);
        c
    }

    /// Store `state` (overwriting a previous one).
    pub fn set_state<V: Vector>(&mut self, state: &StateOf<V>) {
        self.set_u64("n", state.q.len() as u64);
        self.set_f64("state.t", state.t);
        self.set_f64s("state.q", state.q.as_slice());
        self.set_f64s("state.v", state.v.as_slice());
    }

    /// The stored state, bit for bit.
    ///
    /// # Errors
    /// If absent, or of another dimension than `V` holds (`[f64; N]`: `N`; `Vec<f64>` holds
    /// any, the caller compares with its system).
    pub fn state<V: Vector>(&self) -> Result<StateOf<V>, CheckpointError> {
        let n = self.u64("n")?;
        let t = self.f64("state.t")?;
        let q = self.f64s("state.q")?;
        let v = self.f64s("state.v")?;
        let mismatch = || {
            CheckpointError::Mismatch(format!(
                "the checkpoint has {n} coordinates, the system {}",
                V::default_zeros().len()
            ))
        };
        if q.len() as u64 != n || v.len() as u64 != n {
            return Err(mismatch());
        }
        match (V::try_from_slice(&q), V::try_from_slice(&v)) {
            (Some(q), Some(v)) => Ok(StateOf { q, v, t }),
            _ => Err(mismatch()),
        }
    }

    fn insert(&mut self, key: &str, v: Value) {
        assert!(
            valid_key(key),
            "checkpoint key {key:?}: use [A-Za-z0-9_.-]+"
        );
        self.entries.insert(key.to_string(), v);
    }

    /// Store an `f64` exactly.
    ///
    /// # Panics
    /// If `key` is not `[A-Za-z0-9_.-]+` (a programming error, not a run-time condition).
    pub fn set_f64(&mut self, key: &str, x: f64) {
        self.insert(key, Value::F64(x.to_bits()));
    }
    /// Store a list of `f64`s exactly.
    ///
    /// # Panics
    /// If `key` is invalid (see [`Checkpoint::set_f64`]).
    pub fn set_f64s(&mut self, key: &str, xs: &[f64]) {
        self.insert(key, Value::F64s(xs.iter().map(|x| x.to_bits()).collect()));
    }
    /// Store an integer.
    ///
    /// # Panics
    /// If `key` is invalid (see [`Checkpoint::set_f64`]).
    pub fn set_u64(&mut self, key: &str, x: u64) {
        self.insert(key, Value::U64(x));
    }
    /// Store a one-line string.
    ///
    /// # Panics
    /// If `key` is invalid (see [`Checkpoint::set_f64`]) or `s` contains a line break.
    pub fn set_str(&mut self, key: &str, s: &str) {
        assert!(
            !s.contains(['\n', '\r']),
            "checkpoint value of {key:?} must be one line"
        );
        self.insert(key, Value::Str(s.to_string()));
    }

    /// True when `key` is present.
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    fn get(&self, key: &str) -> Result<&Value, CheckpointError> {
        self.entries
            .get(key)
            .ok_or_else(|| CheckpointError::Missing(key.to_string()))
    }

    fn wrong(key: &str, expected: &str, v: &Value) -> CheckpointError {
        CheckpointError::Type {
            key: key.to_string(),
            expected: expected.to_string(),
            found: v.type_name().to_string(),
        }
    }

    /// Read an `f64`.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] or [`CheckpointError::Type`].
    pub fn f64(&self, key: &str) -> Result<f64, CheckpointError> {
        match self.get(key)? {
            Value::F64(b) => Ok(f64::from_bits(*b)),
            v => Err(Self::wrong(key, "f64", v)),
        }
    }
    /// Read a list of `f64`s.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] or [`CheckpointError::Type`].
    pub fn f64s(&self, key: &str) -> Result<Vec<f64>, CheckpointError> {
        match self.get(key)? {
            Value::F64s(b) => Ok(b.iter().map(|b| f64::from_bits(*b)).collect()),
            v => Err(Self::wrong(key, "f64s", v)),
        }
    }
    /// Read exactly `K` `f64`s.
    ///
    /// # Errors
    /// As [`Checkpoint::f64s`], or a [`CheckpointError::Type`] if the length differs.
    pub fn f64_array<const K: usize>(&self, key: &str) -> Result<[f64; K], CheckpointError> {
        let xs = self.f64s(key)?;
        <[f64; K]>::try_from(xs.as_slice()).map_err(|_| CheckpointError::Type {
            key: key.to_string(),
            expected: format!("{K} values"),
            found: format!("{} values", xs.len()),
        })
    }
    /// Read an integer.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] or [`CheckpointError::Type`].
    pub fn u64(&self, key: &str) -> Result<u64, CheckpointError> {
        match self.get(key)? {
            Value::U64(x) => Ok(*x),
            v => Err(Self::wrong(key, "u64", v)),
        }
    }
    /// Read a string.
    ///
    /// # Errors
    /// [`CheckpointError::Missing`] or [`CheckpointError::Type`].
    pub fn str(&self, key: &str) -> Result<&str, CheckpointError> {
        match self.get(key)? {
            Value::Str(s) => Ok(s),
            v => Err(Self::wrong(key, "str", v)),
        }
    }

    /// The entry under `key` as it appears in the file after the key (`"f64 3fb999999999999a #
    /// 0.1"`), `None` if absent: to compare or display entries whatever their type.
    pub fn value_text(&self, key: &str) -> Option<String> {
        let v = self.entries.get(key)?;
        let mut one = Checkpoint::new();
        one.entries.insert("k".into(), v.clone());
        let text = one.to_text();
        let line = text.lines().nth(1)?;
        Some(line.strip_prefix("k ").unwrap_or(line).to_string())
    }

    /// Copy every entry of `other` into `self` (overwriting equal keys).
    pub fn merge(&mut self, other: &Checkpoint) {
        for (k, v) in &other.entries {
            self.entries.insert(k.clone(), v.clone());
        }
    }

    /// Write access under `prefix.` (e.g. `scope_mut("stepper")` writes `stepper.h`).
    pub fn scope_mut(&mut self, prefix: &str) -> ScopeMut<'_> {
        ScopeMut {
            cp: self,
            prefix: prefix.to_string(),
        }
    }

    /// Read access under `prefix.`.
    pub fn scope(&self, prefix: &str) -> Scope<'_> {
        Scope {
            cp: self,
            prefix: prefix.to_string(),
        }
    }

    /// The text of the file (see the [module docs](self)).
    pub fn to_text(&self) -> String {
        let mut s = format!("{MAGIC} {VERSION}\n");
        for (k, v) in &self.entries {
            // Writing to a String cannot fail.
            let _ = match v {
                Value::U64(x) => writeln!(s, "{k} u64 {x}"),
                Value::F64(b) => writeln!(s, "{k} f64 {b:016x} # {:?}", f64::from_bits(*b)),
                Value::F64s(bs) => {
                    let _ = write!(s, "{k} f64s");
                    for b in bs {
                        let _ = write!(s, " {b:016x}");
                    }
                    let _ = write!(s, " #");
                    for b in bs {
                        let _ = write!(s, " {:?}", f64::from_bits(*b));
                    }
                    writeln!(s)
                }
                Value::Str(x) => writeln!(s, "{k} str {x}"),
            };
        }
        let hash = fnv1a64(s.as_bytes());
        let _ = writeln!(s, "end {hash:016x}");
        s
    }

    /// Parse the text of a file.
    ///
    /// # Errors
    /// [`CheckpointError::Format`] (with the line) or [`CheckpointError::Version`].
    pub fn from_text(text: &str) -> Result<Self, CheckpointError> {
        let format = |line: usize, message: String| CheckpointError::Format { line, message };
        let mut lines = text.split_inclusive('\n').enumerate();
        let first = match lines.next() {
            Some((_, l)) => l.trim_end_matches('\n'),
            None => return Err(format(0, "empty file, not a zs checkpoint".into())),
        };
        match first.split_once(' ') {
            Some((MAGIC, v)) if v == VERSION.to_string() => {}
            Some((MAGIC, v)) => {
                return Err(CheckpointError::Version {
                    found: v.to_string(),
                });
            }
            _ => {
                return Err(format(
                    1,
                    format!("not a zs checkpoint (expected '{MAGIC} {VERSION}')"),
                ));
            }
        }
        let mut cp = Checkpoint::new();
        let mut offset = first.len() + 1;
        for (i, raw) in lines {
            let line_no = i + 1;
            let Some(line) = raw.strip_suffix('\n') else {
                return Err(format(line_no, "truncated (no line break)".into()));
            };
            if let Some(hash) = line.strip_prefix("end ") {
                let want = fnv1a64(&text.as_bytes()[..offset]);
                let found = u64::from_str_radix(hash, 16)
                    .map_err(|_| format(line_no, format!("bad hash '{hash}'")))?;
                if found != want {
                    return Err(format(
                        line_no,
                        "hash mismatch: the file was modified or corrupted".into(),
                    ));
                }
                if offset + raw.len() != text.len() {
                    return Err(format(line_no + 1, "text after the 'end' line".into()));
                }
                return Ok(cp);
            }
            offset += raw.len();
            let mut parts = line.splitn(3, ' ');
            let (Some(key), Some(ty)) = (parts.next(), parts.next()) else {
                return Err(format(
                    line_no,
                    format!("expected 'key type value': {line:?}"),
                ));
            };
            let rest = parts.next().unwrap_or("");
            if !valid_key(key) {
                return Err(format(line_no, format!("invalid key {key:?}")));
            }
            let numbers = rest.split('#').next().unwrap_or("");
            let hex = |w: &str| {
                if w.len() == 16 {
                    u64::from_str_radix(w, 16).ok()
                } else {
                    None
                }
                .ok_or_else(|| {
                    format(
                        line_no,
                        format!("'{key}': {w:?} is not 16 hex digits of an f64"),
                    )
                })
            };
            let value = match ty {
                "u64" => Value::U64(rest.parse().map_err(|_| {
                    format(line_no, format!("'{key}': {rest:?} is not an integer"))
                })?),
                "f64" => Value::F64(hex(numbers.trim())?),
                "f64s" => Value::F64s(
                    numbers
                        .split_whitespace()
                        .map(hex)
                        .collect::<Result<_, _>>()?,
                ),
                "str" => Value::Str(rest.to_string()),
                other => return Err(format(line_no, format!("'{key}': unknown type {other:?}"))),
            };
            if cp.entries.insert(key.to_string(), value).is_some() {
                return Err(format(line_no, format!("duplicate key '{key}'")));
            }
        }
        Err(format(
            0,
            "no 'end' line: the file is truncated or incomplete".into(),
        ))
    }

    /// Write the checkpoint to `path` atomically (see [`crate::output::write_atomic`]).
    ///
    /// # Errors
    /// Any I/O error; the previous file at `path`, if any, is then left intact.
    pub fn write(&self, path: impl AsRef<Path>) -> io::Result<()> {
        crate::files::write_atomic(path.as_ref(), self.to_text().as_bytes())
    }

    /// Read a checkpoint file.
    ///
    /// # Errors
    /// [`CheckpointError::Io`] if it cannot be read (or is not UTF-8), else as
    /// [`Checkpoint::from_text`].
    pub fn read(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_text(&text)
    }
}

/// Write access to the entries of a [`Checkpoint`] under one prefix.
#[derive(Debug)]
pub struct ScopeMut<'a> {
    cp: &'a mut Checkpoint,
    prefix: String,
}

/// Read access to the entries of a [`Checkpoint`] under one prefix.
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    cp: &'a Checkpoint,
    prefix: String,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

impl ScopeMut<'_> {
    /// See [`Checkpoint::set_f64`].
    pub fn set_f64(&mut self, key: &str, x: f64) {
        self.cp.set_f64(&join(&self.prefix, key), x);
    }
    /// See [`Checkpoint::set_f64s`].
    pub fn set_f64s(&mut self, key: &str, xs: &[f64]) {
        self.cp.set_f64s(&join(&self.prefix, key), xs);
    }
    /// See [`Checkpoint::set_u64`].
    pub fn set_u64(&mut self, key: &str, x: u64) {
        self.cp.set_u64(&join(&self.prefix, key), x);
    }
    /// See [`Checkpoint::set_str`].
    pub fn set_str(&mut self, key: &str, s: &str) {
        self.cp.set_str(&join(&self.prefix, key), s);
    }
    /// A nested scope `prefix.sub`.
    pub fn scope_mut(&mut self, sub: &str) -> ScopeMut<'_> {
        ScopeMut {
            prefix: join(&self.prefix, sub),
            cp: self.cp,
        }
    }
}

impl Scope<'_> {
    /// See [`Checkpoint::f64`].
    ///
    /// # Errors
    /// As [`Checkpoint::f64`] (the key in the error is the full key).
    pub fn f64(&self, key: &str) -> Result<f64, CheckpointError> {
        self.cp.f64(&join(&self.prefix, key))
    }
    /// See [`Checkpoint::f64s`].
    ///
    /// # Errors
    /// As [`Checkpoint::f64s`].
    pub fn f64s(&self, key: &str) -> Result<Vec<f64>, CheckpointError> {
        self.cp.f64s(&join(&self.prefix, key))
    }
    /// See [`Checkpoint::f64_array`].
    ///
    /// # Errors
    /// As [`Checkpoint::f64_array`].
    pub fn f64_array<const K: usize>(&self, key: &str) -> Result<[f64; K], CheckpointError> {
        self.cp.f64_array(&join(&self.prefix, key))
    }
    /// See [`Checkpoint::u64`].
    ///
    /// # Errors
    /// As [`Checkpoint::u64`].
    pub fn u64(&self, key: &str) -> Result<u64, CheckpointError> {
        self.cp.u64(&join(&self.prefix, key))
    }
    /// See [`Checkpoint::str`].
    ///
    /// # Errors
    /// As [`Checkpoint::str`].
    pub fn str(&self, key: &str) -> Result<&str, CheckpointError> {
        self.cp.str(&join(&self.prefix, key))
    }
    /// True when `prefix.key` is present.
    pub fn contains(&self, key: &str) -> bool {
        self.cp.contains(&join(&self.prefix, key))
    }
    /// A nested scope `prefix.sub`.
    pub fn scope(&self, sub: &str) -> Scope<'_> {
        Scope {
            prefix: join(&self.prefix, sub),
            cp: self.cp,
        }
    }
}

/// A stepper whose internal state can be saved and restored, so that a run continued from a
/// checkpoint is bit-for-bit the uninterrupted run.
///
/// `save` writes, under the scope it is given (the driver uses `stepper.*`), everything that is
/// not a pure function of the state: the step counter, `h` and the method's parameters as exact
/// bits, random-number stream positions. `restore` reads them back into a stepper constructed
/// the ordinary way and drops any cache (caches are recomputed from the state, giving the same
/// bits). The driver checks [`crate::Clocked::name`] itself.
pub trait Resumable {
    /// Save the stepper's state.
    fn save(&self, out: &mut ScopeMut<'_>);
    /// Restore it.
    ///
    /// # Errors
    /// A missing or mistyped entry, or a parameter that cannot be restored.
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError>;
}

impl<R: Resumable + ?Sized> Resumable for Box<R> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        (**self).save(out);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        (**self).restore(from)
    }
}

/// `Err(Mismatch)` unless `x` is finite (a restored parameter).
pub(crate) fn finite_param(what: &str, x: f64) -> Result<f64, CheckpointError> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(CheckpointError::Mismatch(format!(
            "{what} = {x} in the checkpoint is not finite"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::State;

    fn sample() -> Checkpoint {
        let mut c = Checkpoint::with_state(&State::at(
            [0.1, -0.0, f64::MIN_POSITIVE],
            [1e300, -2.5, f64::NAN],
            0.30000000000000004,
        ));
        c.set_u64("run.done", 12);
        c.set_str("stepper", "zhang-skeel");
        c.scope_mut("stepper").set_f64("h", 0.1);
        c.scope_mut("observer.0")
            .scope_mut("energy")
            .set_f64s("empty", &[]);
        c
    }

    #[test]
    fn text_round_trips_bit_for_bit() {
        let c = sample();
        let text = c.to_text();
        let back = Checkpoint::from_text(&text).unwrap();
        let s: State<3> = back.state().unwrap();
        let s0: State<3> = c.state().unwrap();
        let bits = |s: &State<3>| {
            s.q.iter()
                .chain(&s.v)
                .chain([&s.t])
                .map(|x| x.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&s), bits(&s0));
        assert_eq!(back.u64("run.done").unwrap(), 12);
        assert_eq!(back.scope("stepper").f64("h").unwrap(), 0.1);
        assert_eq!(back.str("stepper").unwrap(), "zhang-skeel");
        assert_eq!(
            back.f64s("observer.0.energy.empty").unwrap(),
            Vec::<f64>::new()
        );
        assert_eq!(back.to_text(), text);
        assert_eq!(
            back.value_text("stepper.h").as_deref(),
            Some("f64 3fb999999999999a # 0.1")
        );
        assert_eq!(back.value_text("run.done").as_deref(), Some("u64 12"));
        assert_eq!(back.value_text("nope"), None);
        assert!(text.starts_with("zs-checkpoint 1\n"));
        assert!(
            text.contains("stepper.h f64 3fb999999999999a # 0.1\n"),
            "{text}"
        );
    }

    #[test]
    fn damaged_files_are_rejected_with_the_line() {
        let text = sample().to_text();
        // Truncated: no end line.
        let cut = &text[..text.len() / 2];
        let cut = &cut[..cut.rfind('\n').unwrap() + 1];
        assert!(matches!(
            Checkpoint::from_text(cut),
            Err(CheckpointError::Format { line: 0, .. })
        ));
        // One digit changed: the hash catches it.
        let edited = text.replacen("run.done u64 12", "run.done u64 13", 1);
        let e = Checkpoint::from_text(&edited).unwrap_err();
        assert!(e.to_string().contains("hash mismatch"), "{e}");
        // Another version, another file.
        let v2 = text.replacen("zs-checkpoint 1", "zs-checkpoint 2", 1);
        assert!(matches!(
            Checkpoint::from_text(&v2),
            Err(CheckpointError::Version { .. })
        ));
        assert!(matches!(
            Checkpoint::from_text("t,q0\n1,2\n"),
            Err(CheckpointError::Format { line: 1, .. })
        ));
        assert!(Checkpoint::from_text("").is_err());
        // Wrong types and dimensions are typed errors.
        let c = sample();
        assert!(matches!(
            c.f64("run.done"),
            Err(CheckpointError::Type { .. })
        ));
        assert!(matches!(c.u64("nope"), Err(CheckpointError::Missing(_))));
        assert!(matches!(
            c.state::<[f64; 2]>(),
            Err(CheckpointError::Mismatch(_))
        ));
    }
}
