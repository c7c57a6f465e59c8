//! Trajectories of point atoms as extended XYZ, the plain-text format that VMD, OVITO and ASE
//! open as they are: per frame, the number of atoms, a comment line of `key=value` pairs
//! (`Properties=species:S:1:pos:R:3 Time=… pbc="F F F"`, which ASE and OVITO parse and VMD
//! ignores), then one line per atom, `symbol x y z`.
//!
//! [`XyzRecorder`] is an [`Observer`] with the guarantees of [`crate::CsvRecorder`]: frames go
//! to `<path>.tmp`, renamed to `<path>` by `finish`; a run stopped by a failed step keeps the
//! frames up to the last good state and writes the sidecar `<path>.incomplete` first; a
//! checkpoint records the file's length and a resumed run truncates to it and continues, so the
//! file is byte-for-byte that of an uninterrupted run.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::files::{Chunks, publish, tmp_path_of};
use crate::model::Model;
use crate::observers::Observer;
use crate::vector::Vector;
use crate::{StateOf, StepError};

/// One symbol per atom, held as the distinct symbols and each atom's index among them: a
/// million atoms of a few elements take 4 bytes each, not a string each, and atoms of one
/// element nothing each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbols {
    distinct: Vec<String>,
    /// Each atom's index in `distinct`; empty while there is one distinct symbol.
    of: Vec<u32>,
    atoms: usize,
}

impl Symbols {
    /// Atoms.
    pub fn len(&self) -> usize {
        self.atoms
    }

    /// True when there are no atoms.
    pub fn is_empty(&self) -> bool {
        self.atoms == 0
    }

    /// Each atom's symbol, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.atoms).map(|a| self.get(a))
    }

    /// Atom `a`'s symbol.
    fn get(&self, a: usize) -> &str {
        let k = self.of.get(a).map_or(0, |&k| k as usize);
        &self.distinct[k]
    }
}

impl<S: AsRef<str>> FromIterator<S> for Symbols {
    fn from_iter<I: IntoIterator<Item = S>>(symbols: I) -> Self {
        let mut held = Self::default();
        let mut index: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        for s in symbols {
            let s = s.as_ref();
            // A string is made per distinct symbol, not per atom.
            let k = match index.get(s) {
                Some(&k) => k,
                None => {
                    let k = held.distinct.len() as u32;
                    held.distinct.push(s.to_string());
                    index.insert(s.to_string(), k);
                    if k == 1 {
                        // A second symbol: every atom before it had the first.
                        held.of.resize(held.atoms, 0);
                    }
                    k
                }
            };
            if held.distinct.len() > 1 {
                held.of.push(k);
            }
            held.atoms += 1;
        }
        held
    }
}

impl From<Vec<String>> for Symbols {
    fn from(symbols: Vec<String>) -> Self {
        symbols.into_iter().collect()
    }
}

/// Writes every `every`-th state's positions as an extended XYZ frame. A large frame's lines
/// are formatted in chunks on rayon's current pool and written in order (the same bytes
/// whatever the threads).
#[derive(Debug)]
pub struct XyzRecorder {
    path: PathBuf,
    tmp_path: PathBuf,
    writer: Option<BufWriter<File>>,
    /// One symbol per atom (3 coordinates each, in order).
    symbols: Symbols,
    every: u64,
    seen: u64,
    frames: u64,
    error: Option<io::Error>,
    ended_early: Option<String>,
    /// The parallel chunks of a large frame's text.
    chunks: Chunks,
    /// A periodic box `(lo, sides)`: frames carry `Lattice=` and positions wrapped into it.
    lattice: Option<([f64; 3], [f64; 3])>,
}

impl XyzRecorder {
    /// Record to `path` (through `path.tmp`), atoms named by `symbols` (one per 3 coordinates).
    ///
    /// # Errors
    /// If `every` is 0 or `path.tmp` cannot be created.
    pub fn create(
        path: impl AsRef<Path>,
        symbols: impl Into<Symbols>,
        every: u64,
    ) -> io::Result<Self> {
        Self::open(path.as_ref(), symbols.into(), every, false)
    }

    /// Reopen the `<path>.tmp` of an interrupted, checkpointed run (see
    /// [`crate::CsvRecorder::reopen`]).
    ///
    /// # Errors
    /// If `every` is 0 or `<path>.tmp` cannot be opened.
    pub fn reopen(
        path: impl AsRef<Path>,
        symbols: impl Into<Symbols>,
        every: u64,
    ) -> io::Result<Self> {
        Self::open(path.as_ref(), symbols.into(), every, true)
    }

    fn open(path: &Path, symbols: Symbols, every: u64, reopen: bool) -> io::Result<Self> {
        if every == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "XyzRecorder: `every` must be at least 1",
            ));
        }
        let tmp_path = tmp_path_of(path);
        let file = if reopen {
            OpenOptions::new().write(true).open(&tmp_path)?
        } else {
            File::create(&tmp_path)?
        };
        Ok(Self {
            path: path.to_path_buf(),
            tmp_path,
            writer: Some(BufWriter::new(file)),
            symbols,
            every,
            seen: 0,
            frames: 0,
            error: None,
            ended_early: None,
            chunks: Chunks::default(),
            lattice: None,
        })
    }

    /// Frames of a periodic system: `Lattice="Lx 0 0 0 Ly 0 0 0 Lz" Origin="…" pbc="T T T"`
    /// in the comment line, and each atom's position wrapped into the box `lo + [0, L)` (the
    /// unwrapped coordinates stay in the CSV).
    pub fn with_lattice(mut self, lo: [f64; 3], sides: [f64; 3]) -> Self {
        self.lattice = Some((lo, sides));
        self
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The symbols separated by spaces (a checkpoint's record of the atoms).
    fn joined_symbols(&self) -> String {
        let mut s = String::new();
        for (i, sym) in self.symbols.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(sym);
        }
        s
    }

    /// A frame of atoms at `q`, atom `i`'s coordinates at body `index[i]` of `q` when given.
    fn frame(&mut self, t: f64, q: &[f64], index: Option<&[u32]>) {
        if self.error.is_some() {
            return;
        }
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        assert_eq!(
            q.len(),
            3 * self.symbols.len(),
            "XyzRecorder: {} coordinates for {} atoms",
            q.len(),
            self.symbols.len()
        );
        let result = (|| {
            writeln!(w, "{}", self.symbols.len())?;
            match self.lattice {
                None => writeln!(w, "Properties=species:S:1:pos:R:3 Time={t} pbc=\"F F F\"")?,
                Some((lo, l)) => writeln!(
                    w,
                    "Lattice=\"{} 0 0 0 {} 0 0 0 {}\" Origin=\"{} {} {}\" Properties=species:S:1:pos:R:3 Time={t} pbc=\"T T T\"",
                    l[0], l[1], l[2], lo[0], lo[1], lo[2]
                )?,
            }
            let (symbols, lattice) = (&self.symbols, self.lattice);
            // Atoms' lines in parallel chunks for a large frame: the same bytes.
            self.chunks.write(
                symbols.len(),
                |i, text| {
                    let b = index.map_or(i, |index| index[i] as usize);
                    let x = &q[3 * b..3 * b + 3];
                    let p: [f64; 3] = match lattice {
                        None => [x[0], x[1], x[2]],
                        // Wrapped into the box.
                        Some((lo, l)) => {
                            core::array::from_fn(|a| x[a] - ((x[a] - lo[a]) / l[a]).floor() * l[a])
                        }
                    };
                    text.push_str(symbols.get(i));
                    for x in p {
                        text.push(' ');
                        ten_decimals(text, x);
                    }
                    text.push('\n');
                },
                w,
            )
        })();
        match result {
            Ok(()) => self.frames += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Flush, sync and rename `path.tmp` to `path`; the sidecar first if the run stopped
    /// early, a stale one removed otherwise. Idempotent once it succeeded.
    ///
    /// # Errors
    /// A write deferred from a frame, or the flush, sync or rename.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            self.writer = None;
            return Err(e);
        }
        let Some(w) = self.writer.take() else {
            return Ok(());
        };
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        let text = self.ended_early.as_ref().map(|reason| {
            format!(
                "{reason}; {} holds the {} frames up to the last good state\n",
                self.path.display(),
                self.frames
            )
        });
        publish(&self.tmp_path, &self.path, text.as_deref())
    }
}

impl XyzRecorder {
    /// A frame of `state`'s positions, in the user's order whatever order `target` holds
    /// them in (read through its index of the user's bodies, [`Model::user_order_index`]:
    /// 4 bytes a body for the frame, not a copy of the positions).
    fn frame_of<P: Model<V> + ?Sized, V: Vector>(&mut self, target: &P, state: &StateOf<V>) {
        let mut index = Vec::new();
        match target.user_order_index(&mut index) {
            Some(d) => {
                assert_eq!(d, 3, "XyzRecorder: bodies of {d} coordinates");
                self.frame(state.t, state.q.as_slice(), Some(&index));
            }
            None => self.frame(state.t, state.q.as_slice(), None),
        }
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Observer<P, V> for XyzRecorder {
    fn start(&mut self, target: &P, state: &StateOf<V>) {
        self.seen = 0;
        self.frame_of(target, state);
    }
    fn observe(&mut self, target: &P, state: &StateOf<V>) {
        self.seen += 1;
        if self.seen.is_multiple_of(self.every) {
            self.frame_of(target, state);
        }
    }
    fn stopped_early(&mut self, error: &StepError) {
        self.ended_early = Some(format!("ended early [{}]: {error}", error.code()));
    }
    fn finish(&mut self) -> io::Result<()> {
        XyzRecorder::finish(self)
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        let Some(w) = self.writer.as_mut() else {
            return Err(io::Error::other("XyzRecorder: checkpoint after finish"));
        };
        w.flush()?;
        let mut file: &File = w.get_ref();
        file.sync_data()?;
        out.set_u64("bytes", file.stream_position()?);
        out.set_u64("frames", self.frames);
        out.set_u64("seen", self.seen);
        out.set_u64("every", self.every);
        out.set_str("symbols", &self.joined_symbols());
        Ok(())
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let mismatch = |what: String| CheckpointError::Mismatch(format!("XYZ recorder: {what}"));
        if from.str("symbols")? != self.joined_symbols() || from.u64("every")? != self.every {
            return Err(mismatch(
                "atoms or `every` differ from the checkpoint's".into(),
            ));
        }
        let bytes = from.u64("bytes")?;
        let io_err = |source: io::Error| CheckpointError::Io {
            path: self.tmp_path.clone(),
            source,
        };
        let Some(w) = self.writer.as_mut() else {
            return Err(mismatch("already finished".into()));
        };
        let mut file: &File = w.get_ref();
        if file.metadata().map_err(io_err)?.len() < bytes {
            return Err(mismatch(format!(
                "{} is shorter than at the checkpoint",
                self.tmp_path.display()
            )));
        }
        file.set_len(bytes).map_err(io_err)?;
        file.seek(SeekFrom::Start(bytes)).map_err(io_err)?;
        self.frames = from.u64("frames")?;
        self.seen = from.u64("seen")?;
        Ok(())
    }
}

/// `x` with ten decimals: the text of `{x:.10}`, the exact value of `x` rounded half to even.
/// Where `x` is `m·2^e` with `−120 ≤ e < 0` (every coordinate of a simulation but those beyond
/// `2^53` or within `2^-67` of zero), the rounding is made exactly in integers — `m·10¹⁰` fits
/// in 128 bits — faster than the standard library's exact formatting (a frame of a million
/// atoms is three million numbers); elsewhere by the standard library.
fn ten_decimals(text: &mut String, x: f64) {
    const SCALE: u128 = 10_000_000_000;
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    if biased == 0x7ff || !(-120..0).contains(&e) {
        // Writing to a `String` cannot fail.
        let _ = write!(text, "{x:.10}");
        return;
    }
    let shift = e.unsigned_abs();
    let scaled = u128::from(m) * SCALE;
    let (mut units, rest) = (scaled >> shift, scaled & ((1 << shift) - 1));
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && units & 1 == 1) {
        units += 1;
    }
    if x.is_sign_negative() {
        text.push('-');
    }
    match u64::try_from(units) {
        // Below 2⁶⁴ (|x| < 1.8·10⁹: every coordinate), the digits by 64-bit division by
        // constants: the formatter's 128-bit division is a call per digit group.
        Ok(units) => {
            // Right to left: the ten decimals, the point, the integer part.
            let mut digits = [0u8; 32];
            let mut at = digits.len();
            let (mut n, mut written) = (units % SCALE as u64, 0);
            while written < 10 {
                at -= 1;
                digits[at] = b'0' + (n % 10) as u8;
                (n, written) = (n / 10, written + 1);
            }
            at -= 1;
            digits[at] = b'.';
            let mut n = units / SCALE as u64;
            loop {
                at -= 1;
                digits[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            // ASCII digits and a point.
            text.push_str(core::str::from_utf8(&digits[at..]).unwrap_or_default());
        }
        Err(_) => {
            let _ = write!(text, "{}.{:010}", units / SCALE, units % SCALE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard library's text for every kind of `f64`: random bit patterns (every
    /// exponent), coordinates of a simulation's sizes, numbers a tie away from ten decimals
    /// (`k/2^11` and `k/2^20`: an odd eleventh-and-later decimal tail of exactly one half),
    /// both zeros, the smallest numbers, the non-finite ones and the bounds of the integer path.
    #[test]
    fn ten_decimals_writes_what_the_standard_library_writes() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        use rand_distr::{Distribution, Uniform};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let sizes = Uniform::new(-200.0, 200.0).unwrap();
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            1.0,
            -1e-12,
            5e-11,
            -5e-11,
            0.5e-10,
            f64::MIN_POSITIVE,
            5e-324,
            2f64.powi(53),
            2f64.powi(52) + 0.5,
            2f64.powi(-67),
            2f64.powi(-68),
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for k in 0..20_000 {
            let k = f64::from(k);
            xs.extend([k / 2048.0, -k / 2048.0, k / 1_048_576.0, (k + 0.5) * 1e-10]);
        }
        // Random bits are mostly very large or very small numbers, hundreds of digits each
        // in the standard library's text: fewer of them.
        for k in 0..200_000 {
            if k % 10 == 0 {
                xs.push(f64::from_bits(rng.next_u64()));
            }
            xs.push(sizes.sample(&mut rng));
        }
        let mut text = String::new();
        for &x in &xs {
            text.clear();
            ten_decimals(&mut text, x);
            assert_eq!(text, format!("{x:.10}"), "{:#x}", x.to_bits());
        }
    }
    use crate::files::incomplete_marker_of;
    use crate::{Potential, State};

    /// Two free atoms: a target for the recorder, which asks it only for the user's order.
    struct Still;
    impl Potential<6> for Still {
        fn masses(&self) -> [f64; 6] {
            [1.0; 6]
        }
        fn potential(&self, _: &[f64; 6]) -> f64 {
            0.0
        }
        fn gradient(&self, _: &[f64; 6]) -> [f64; 6] {
            [0.0; 6]
        }
        fn hessian(&self, _: &[f64; 6]) -> [[f64; 6]; 6] {
            [[0.0; 6]; 6]
        }
        fn third_contraction(&self, _: &[f64; 6], _: &[f64; 6]) -> [f64; 6] {
            [0.0; 6]
        }
    }

    #[test]
    fn symbols_hold_each_distinct_one_once_and_give_every_atom_back_in_order() {
        let atoms = ["O", "H", "H", "O", "H", "H", "Na"];
        let held: Symbols = atoms.iter().collect();
        assert_eq!(held.len(), atoms.len());
        assert_eq!(held.distinct, ["O", "H", "Na"]);
        assert!(held.iter().eq(atoms.iter().copied()));
        let from_vec = Symbols::from(atoms.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(from_vec, held);
        assert!(Symbols::from(Vec::new()).is_empty());
        // One element: nothing per atom, until a second one comes.
        let carbon: Symbols = core::iter::repeat_n("C", 1000).collect();
        assert!(carbon.of.is_empty() && carbon.len() == 1000);
        assert!(carbon.iter().all(|s| s == "C"));
        let mixed: Symbols = ["C", "C", "C", "N", "C"].iter().collect();
        assert!(mixed.iter().eq(["C", "C", "C", "N", "C"]));
    }

    #[test]
    fn frames_every_k_steps_renamed_on_finish_and_marked_when_stopped_early() {
        let dir = std::env::temp_dir().join(format!("zs-xyz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("two.xyz");
        let symbols = vec!["O".to_string(), "H".to_string()];
        let mut r = XyzRecorder::create(&path, symbols.clone(), 2).unwrap();
        let mut s = State::new([0.0, 0.0, 0.0, 0.9572, 0.0, 0.0], [0.0; 6]);
        Observer::<Still, [f64; 6]>::start(&mut r, &Still, &s);
        for k in 1..=4 {
            s.t = k as f64 * 0.5;
            s.q[3] += 0.01;
            Observer::<Still, [f64; 6]>::observe(&mut r, &Still, &s);
        }
        assert!(!path.exists(), "nothing under the final name before finish");
        Observer::<Still, [f64; 6]>::finish(&mut r).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3 * 4, "frames at steps 0, 2, 4");
        assert_eq!(lines[0], "2");
        assert_eq!(
            lines[1],
            "Properties=species:S:1:pos:R:3 Time=0 pbc=\"F F F\""
        );
        assert_eq!(lines[3], "H 0.9572000000 0.0000000000 0.0000000000");
        assert!(lines[9].starts_with("Properties=species:S:1:pos:R:3 Time=2 "));
        assert_eq!(lines[11], "H 0.9972000000 0.0000000000 0.0000000000");
        assert!(!incomplete_marker_of(&path).exists());

        let mut r = XyzRecorder::create(&path, symbols, 1).unwrap();
        Observer::<Still, [f64; 6]>::start(&mut r, &Still, &s);
        let e = StepError::non_finite(7, 3.5, crate::error::Quantity::NewPosition);
        Observer::<Still, [f64; 6]>::stopped_early(&mut r, &e);
        Observer::<Still, [f64; 6]>::finish(&mut r).unwrap();
        let marker = std::fs::read_to_string(incomplete_marker_of(&path)).unwrap();
        assert!(marker.contains("1 frames"), "{marker}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
