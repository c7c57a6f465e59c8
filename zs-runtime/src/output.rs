//! Output files that never look complete when they are not.
//!
//! [`CsvRecorder`] is an [`Observer`] that writes every k-th state (`t, q…, v…`, optionally the
//! total energy and the constraint residual `‖g‖`) under a header row. Its guarantees:
//!
//! - **Interrupted run** (crash, kill, panic, power loss): the rows go to `<path>.tmp`; only
//!   [`CsvRecorder::finish`] flushes, `fsync`s, renames it to `<path>` and `fsync`s the
//!   directory. An interrupted run leaves `<path>.tmp`, never a truncated file under the final
//!   name (a recorder dropped without `finish` does not rename).
//! - **Run stopped by a failed step** (a [`crate::StepError`]: singular matrix, non-finite
//!   value, guard...): the driver tells the recorder ([`Observer::stopped_early`]); `finish`
//!   then keeps the rows up to the last good state, writes the sidecar file
//!   `<path>.incomplete` (one line: the failing step, its time and the error) *before*
//!   renaming the CSV to `<path>`. The CSV itself stays a plain, complete-looking CSV that every
//!   reader can parse (a footer or comment line would break naive readers), and the sidecar is
//!   the marker: a trajectory is complete if and only if `<path>` exists and
//!   `<path>.incomplete` does not. A successful run removes a stale sidecar left by an earlier
//!   run at the same path (after its rename, so a crash in between errs on the side of
//!   "incomplete").
//! - **Checkpointed run**: at each checkpoint the recorder flushes and `fsync`s `<path>.tmp`
//!   and saves its length; [`CsvRecorder::reopen`] plus the driver's
//!   [`crate::driver::resume`] truncate `<path>.tmp` to that length and continue it, so the
//!   final file is byte-for-byte that of an uninterrupted run.
//!
//! [`write_atomic`] writes any other result file with the same temporary-name discipline.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};

mod names;

use names::Names;
pub use names::xyz_name;

use crate::files::{Chunks, publish};
pub use crate::files::{incomplete_marker_of, sync_parent_dir, write_atomic};

use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::files::tmp_path_of;
use crate::model::{ConstrainedModel, ConstraintSpace};
use crate::observers::{Observer, total_energy};
use crate::vector::Vector;
use crate::{Model, StateOf, StepError};

/// A column that is a function of `q`; `Send + Sync`, so that a recorder goes with its replica
/// to whichever thread steps it.
type Residual<'a, V> = Box<dyn Fn(&V) -> f64 + Send + Sync + 'a>;

/// Writes every k-th state of a run to a CSV file (see the [module docs](self)).
///
/// Columns: `t`, `q0…q{N-1}`, `v0…v{N-1}` (or the names given to
/// [`CsvRecorder::with_names`]), then `energy` if [`CsvRecorder::with_energy`], then
/// `constraint_norm` if [`CsvRecorder::with_constraints`], then the columns added by
/// [`CsvRecorder::with_column`], in the order they were added. The initial state is row 1; then
/// every `every`-th step: a run of `n` steps gives `1 + ⌊n / every⌋` rows.
///
/// Floats are written in Rust's shortest round-trip form (exponent notation for very large or
/// small magnitudes). Writing a row reuses its buffers; the `csv` writer buffers the file. A
/// large state's coordinates and velocities are formatted in parallel on rayon's current pool
/// (the same bytes whatever the threads).
pub struct CsvRecorder<'a, V> {
    path: PathBuf,
    tmp_path: PathBuf,
    writer: Option<csv::Writer<File>>,
    every: u64,
    seen: u64,
    rows: u64,
    energy: bool,
    /// Columns that are functions of `q` (`constraint_norm`, [`CsvRecorder::with_column`]).
    columns: Vec<(String, Residual<'a, V>)>,
    names: Option<Names>,
    /// Coordinates per state: `N` for `[f64; N]`, else from the names or the first state.
    dimension: usize,
    header_written: bool,
    buf: String,
    /// The parallel chunks of a large row's text.
    chunks: Chunks,
    error: Option<io::Error>,
    /// Set by [`Observer::stopped_early`]: the one-line reason written to the sidecar.
    ended_early: Option<String>,
    /// The last state written as a row (for the sidecar's message).
    last_row_t: f64,
}

impl<V> std::fmt::Debug for CsvRecorder<'_, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvRecorder")
            .field("path", &self.path)
            .field("every", &self.every)
            .field("rows", &self.rows)
            .field("energy", &self.energy)
            .field(
                "columns",
                &self.columns.iter().map(|c| &c.0).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<'a, V: Vector> CsvRecorder<'a, V> {
    /// Record every `every`-th state to `path` (created through `path.tmp`).
    ///
    /// # Errors
    /// If `every` is 0 or `path.tmp` cannot be created.
    pub fn create(path: impl AsRef<Path>, every: u64) -> io::Result<Self> {
        if every == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "CsvRecorder: `every` must be at least 1",
            ));
        }
        let path = path.as_ref().to_path_buf();
        let tmp_path = tmp_path_of(&path);
        let file = File::create(&tmp_path)?;
        Ok(Self::create_with(path, tmp_path, file, every))
    }

    /// Reopen the `<path>.tmp` of an interrupted, checkpointed run to continue it: the driver's
    /// [`crate::driver::resume`] then restores the recorder from the checkpoint (truncating the
    /// file to the length it had at the checkpoint). Configure it as the original recorder
    /// (`every`, [`CsvRecorder::with_energy`], its columns): the header is compared. The
    /// coordinates' names need not be given again: without [`CsvRecorder::with_names`] the
    /// recorder keeps those of the header it wrote.
    ///
    /// # Errors
    /// If `every` is 0 or `<path>.tmp` cannot be opened (e.g. it does not exist because the run
    /// completed, or never started).
    pub fn reopen(path: impl AsRef<Path>, every: u64) -> io::Result<Self> {
        if every == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "CsvRecorder: `every` must be at least 1",
            ));
        }
        let path = path.as_ref().to_path_buf();
        let tmp_path = tmp_path_of(&path);
        let file = OpenOptions::new().write(true).open(&tmp_path)?;
        let mut r = Self::create_with(path, tmp_path, file, every);
        // Nothing may be written before the restore positions the file.
        r.header_written = true;
        Ok(r)
    }

    fn create_with(path: PathBuf, tmp_path: PathBuf, file: File, every: u64) -> Self {
        Self {
            path,
            tmp_path,
            writer: Some(csv::WriterBuilder::new().flexible(true).from_writer(file)),
            every,
            seen: 0,
            rows: 0,
            energy: false,
            columns: Vec::new(),
            names: None,
            header_written: false,
            dimension: V::default_zeros().len(),
            buf: String::with_capacity(32),
            chunks: Chunks::default(),
            error: None,
            ended_early: None,
            last_row_t: f64::NAN,
        }
    }

    /// Add an `energy` column: `½vᵀMv + V(q)` of the run's target potential.
    pub fn with_energy(mut self) -> Self {
        self.energy = true;
        self
    }

    /// Add a `constraint_norm` column: `‖g(q)‖` of `system`.
    pub fn with_constraints<S: ConstrainedModel<V, C> + Sync + ?Sized, C: Vector>(
        mut self,
        system: &'a S,
    ) -> Self
    where
        V: ConstraintSpace<C>,
    {
        self.columns.push((
            "constraint_norm".into(),
            Box::new(move |q| system.constraint_norm(q)),
        ));
        self
    }

    /// Add a column `name` holding `f(q)` of every recorded state (e.g. the rigid body's
    /// distance from SO(3)). Set up before the run: nothing is allocated per row.
    pub fn with_column(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&V) -> f64 + Send + Sync + 'a,
    ) -> Self {
        self.columns.push((name.into(), Box::new(f)));
        self
    }

    /// Name the coordinates: the columns become `t, <name>…, v_<name>…`.
    pub fn with_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut held = Names::default();
        for name in names {
            held.push(&name.into());
        }
        // Grown by doubling: a million bodies' names would hold half again their size.
        held.text.shrink_to_fit();
        self.dimension = held.len();
        self.names = Some(held);
        self
    }

    /// [`CsvRecorder::with_names`] of the names `x1, y1, z1, x2, …` ([`xyz_name`]) of `bodies`
    /// 3-D bodies numbered from 1, without making them: a million bodies' three million names
    /// are counted, as `with_names` counts them, and written into the header one at a time.
    pub fn with_xyz_names(mut self, bodies: usize) -> Self {
        self.dimension = 3 * bodies;
        self.names = Some(Names {
            text: String::new(),
            len: 3 * bodies,
            numbered_xyz: true,
        });
        self
    }

    /// The final path (the file exists under it only after [`CsvRecorder::finish`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary path written during the run.
    pub fn tmp_path(&self) -> &Path {
        &self.tmp_path
    }

    /// Data rows written so far (header excluded).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The sidecar file that marks the trajectory as ended early (see the
    /// [module docs](self)): `<path>.incomplete`.
    pub fn incomplete_marker(&self) -> PathBuf {
        incomplete_marker_of(&self.path)
    }

    /// Flush, sync and rename `path.tmp` to `path` (and sync the directory). If the run stopped
    /// early ([`Observer::stopped_early`]), first write the sidecar `<path>.incomplete`; if it
    /// did not, remove a stale sidecar after the rename. Returns the deferred error of a failed
    /// write instead (then the `.tmp` file is left as is). Idempotent once it succeeded.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            self.writer = None;
            return Err(e);
        }
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        if !self.header_written {
            self.write_header(&mut w)?;
        }
        w.flush()?;
        let file = w
            .into_inner()
            .map_err(|e| io::Error::new(e.error().kind(), e.error().to_string()))?;
        file.sync_all()?;
        drop(file);
        let text = self.ended_early.as_ref().map(|reason| {
            format!(
                "{reason}; {} holds the {} rows up to the last good state (last row t = {})\n",
                self.path.display(),
                self.rows,
                self.last_row_t
            )
        });
        publish(&self.tmp_path, &self.path, text.as_deref())
    }

    /// `field` of each of the header row's fields in turn (none of them held at once: a
    /// million bodies have six million).
    fn each_header_field(&self, mut field: impl FnMut(&str)) {
        field("t");
        let mut f = String::new();
        match &self.names {
            Some(names) => {
                names.for_each(&mut field);
                names.for_each(|n| {
                    f.clear();
                    f.push_str("v_");
                    f.push_str(n);
                    field(&f);
                });
            }
            None => {
                for prefix in ["q", "v"] {
                    for i in 0..self.dimension {
                        f.clear();
                        let _ = write!(f, "{prefix}{i}");
                        field(&f);
                    }
                }
            }
        }
        if self.energy {
            field("energy");
        }
        for (name, _) in &self.columns {
            field(name);
        }
    }

    /// The coordinates' columns of the header `saved` (written by a recorder with this one's
    /// energy and extra columns): their names when they are not `q0, q1, …`, else their number.
    fn adopt_coordinates(&mut self, saved: &str) {
        let fields: Vec<&str> = saved.split(',').collect();
        let extra = usize::from(self.energy) + self.columns.len();
        let Some(both) = fields.len().checked_sub(1 + extra) else {
            return;
        };
        if fields.first() != Some(&"t") || both % 2 != 0 {
            return;
        }
        let d = both / 2;
        let coordinates = &fields[1..1 + d];
        let numbered = coordinates
            .iter()
            .enumerate()
            .all(|(i, f)| f.strip_prefix('q') == Some(i.to_string().as_str()));
        if numbered {
            self.dimension = d;
        } else {
            let mut held = Names::default();
            for name in coordinates {
                held.push(name);
            }
            self.dimension = d;
            self.names = Some(held);
        }
    }

    /// The header row's fields joined by commas.
    fn header_line(&self) -> String {
        let mut line = String::new();
        self.each_header_field(|f| {
            if !line.is_empty() {
                line.push(',');
            }
            line.push_str(f);
        });
        line
    }

    fn write_header(&mut self, w: &mut csv::Writer<File>) -> io::Result<()> {
        let mut written = Ok(());
        self.each_header_field(|f| {
            if written.is_ok() {
                written = w.write_field(f);
            }
        });
        written.map_err(csv_io)?;
        w.write_record(None::<&[u8]>).map_err(csv_io)?;
        self.header_written = true;
        Ok(())
    }

    fn write_row<P: Model<V> + ?Sized>(&mut self, target: &P, state: &StateOf<V>) {
        if self.error.is_some() {
            return;
        }
        let Some(mut w) = self.writer.take() else {
            return;
        };
        let r = self.write_row_inner(&mut w, target, state);
        self.writer = Some(w);
        match r {
            Ok(()) => {
                self.rows += 1;
                self.last_row_t = state.t;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// A row of `state`, its coordinates in the user's order: when the target holds them in
    /// an order of its own, read through its index of the user's bodies
    /// ([`Model::user_order_index`], made for the row: 4 bytes a body, not a copy of the
    /// state).
    fn write_row_inner<P: Model<V> + ?Sized>(
        &mut self,
        w: &mut csv::Writer<File>,
        target: &P,
        state: &StateOf<V>,
    ) -> io::Result<()> {
        let (q, v) = (state.q.as_slice(), state.v.as_slice());
        // The writer is flexible (a chunked row's fields pass it by): the row's length is
        // checked here.
        if q.len() != self.dimension || v.len() != self.dimension {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "CsvRecorder: a state of {} coordinates and {} velocities under a header of {} each",
                    q.len(),
                    v.len(),
                    self.dimension
                ),
            ));
        }
        if !self.header_written {
            self.write_header(w)?;
        }
        self.field(w, state.t)?;
        let chunked = q.len() + v.len() >= PARALLEL_FIELDS;
        let mut index = Vec::new();
        let held = target.user_order_index(&mut index);
        let by = held.map(|d| (&index[..], d));
        self.values(w, UserOrder { x: q, by }, UserOrder { x: v, by }, chunked)?;
        if self.energy {
            self.field(w, total_energy(target, state))?;
        }
        drop(index);
        if !self.columns.is_empty() {
            // Functions of the positions in the user's order.
            let mut user = V::default_zeros();
            let q = if target.in_user_order(&state.q, &mut user) {
                &user
            } else {
                &state.q
            };
            for k in 0..self.columns.len() {
                let r = (self.columns[k].1)(q);
                self.field(w, r)?;
            }
        }
        w.write_record(None::<&[u8]>).map_err(csv_io)?;
        Ok(())
    }

    /// The fields of `q` then `v`, after at least one field of the row: one by one, or
    /// `chunked` in parallel and written past the `csv` writer (numbers are never quoted, so
    /// the bytes are the same; the writer then gives the next field its comma).
    fn values(
        &mut self,
        w: &mut csv::Writer<File>,
        q: UserOrder<'_>,
        v: UserOrder<'_>,
        chunked: bool,
    ) -> io::Result<()> {
        let (q, v) = (&q, &v);
        if !chunked {
            for i in 0..q.len() {
                self.field(w, q.get(i))?;
            }
            for i in 0..v.len() {
                self.field(w, v.get(i))?;
            }
            return Ok(());
        }
        w.flush()?;
        // `&File` is `Write`: the writer's buffer is empty after the flush.
        let mut file: &File = w.get_ref();
        let value = |i: usize| {
            if i < q.len() {
                q.get(i)
            } else {
                v.get(i - q.len())
            }
        };
        self.chunks.write(
            q.len() + v.len(),
            |i, text| {
                text.push(',');
                number(text, value(i));
            },
            &mut file,
        )
    }

    fn field(&mut self, w: &mut csv::Writer<File>, x: f64) -> io::Result<()> {
        self.buf.clear();
        number(&mut self.buf, x);
        w.write_field(self.buf.as_bytes()).map_err(csv_io)?;
        Ok(())
    }
}

/// A vector of a state read in the user's order: `x` itself, or, `by` an index of the user's
/// bodies and the coordinates per body ([`Model::user_order_index`]), the user's coordinate
/// `d·u + c` at `x[d·index[u] + c]`.
#[derive(Clone, Copy)]
struct UserOrder<'a> {
    x: &'a [f64],
    by: Option<(&'a [u32], usize)>,
}

impl UserOrder<'_> {
    fn len(&self) -> usize {
        self.x.len()
    }

    fn get(&self, i: usize) -> f64 {
        match self.by {
            None => self.x[i],
            Some((index, d)) => self.x[index[i / d] as usize * d + i % d],
        }
    }
}

/// Rows with at least this many coordinates and velocities are formatted in parallel chunks
/// ([`Chunks`]).
const PARALLEL_FIELDS: usize = 8192;

/// `x` in its shortest round-trip form, in exponent notation when `|x|` is finite, not zero
/// and outside `[1e-5, 1e16)`: the text of Rust's `{x:e}` and `{x}`. A finite `x` is written
/// by `ryu`, which finds the shortest digits faster than the standard library does (a row of
/// a million-body state is millions of numbers) and places them by the same rule; its
/// text differs by the `.0` it gives a whole number, removed here, and where two shortest forms
/// are equally near `x` (a tie at 17 digits: rare) by rounding the last digit to even. Both
/// read back as `x` (`number_writes_rusts_shortest_form`).
fn number(text: &mut String, x: f64) {
    if x.is_finite() {
        let mut digits = ryu::Buffer::new();
        let s = digits.format_finite(x);
        text.push_str(s.strip_suffix(".0").unwrap_or(s));
    } else {
        // Writing to a `String` cannot fail.
        let _ = write!(text, "{x}");
    }
}

impl<V: Vector> CsvRecorder<'_, V> {
    fn save(&mut self, out: &mut ScopeMut<'_>) -> io::Result<()> {
        if let Some(e) = &self.error {
            // Keep the error for `finish`, which then leaves the `.tmp` file unrenamed.
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        let Some(w) = self.writer.as_mut() else {
            return Err(io::Error::other("CsvRecorder: checkpoint after finish"));
        };
        w.flush()?;
        // `&File` is `Seek`: the writer's buffer is empty after the flush.
        let mut file: &File = w.get_ref();
        file.sync_data()?;
        let bytes = file.stream_position()?;
        out.set_u64("bytes", bytes);
        out.set_u64("rows", self.rows);
        out.set_u64("seen", self.seen);
        out.set_u64("every", self.every);
        out.set_u64("header_written", u64::from(self.header_written));
        out.set_str("header", &self.header_line());
        out.set_f64("last_row_t", self.last_row_t);
        Ok(())
    }

    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let mismatch = |what: String| CheckpointError::Mismatch(format!("CSV recorder: {what}"));
        let saved = from.str("header")?;
        if self.names.is_none() {
            // Reopened without names: the coordinates' columns are those the file has.
            self.adopt_coordinates(saved);
        }
        let header = self.header_line();
        if saved != header {
            return Err(mismatch(header_difference(saved, &header)));
        }
        let every = from.u64("every")?;
        if every != self.every {
            return Err(mismatch(format!(
                "every {every} at the checkpoint, {} now",
                self.every
            )));
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
        let len = file.metadata().map_err(io_err)?.len();
        if len < bytes {
            return Err(mismatch(format!(
                "{} has {len} bytes, fewer than the {bytes} of the checkpoint",
                self.tmp_path.display()
            )));
        }
        file.set_len(bytes).map_err(io_err)?;
        file.seek(SeekFrom::Start(bytes)).map_err(io_err)?;
        self.rows = from.u64("rows")?;
        self.seen = from.u64("seen")?;
        self.header_written = from.u64("header_written")? != 0;
        self.last_row_t = from.f64("last_row_t")?;
        Ok(())
    }
}

/// Where the header `saved` at a checkpoint and `now` differ, in one line: the first field
/// that differs and the number of fields of each (a million coordinates have six million).
fn header_difference(saved: &str, now: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (saved.split(',').collect(), now.split(',').collect());
    let k = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let field = |f: &[&str]| f.get(k).map_or("(none)".to_string(), |x| format!("'{x}'"));
    format!(
        "the columns differ from column {}: {} at the checkpoint, {} now ({} columns at the \
         checkpoint, {} now)",
        k + 1,
        field(&a),
        field(&b),
        a.len(),
        b.len()
    )
}

impl<P: Model<V> + ?Sized, V: Vector> Observer<P, V> for CsvRecorder<'_, V> {
    fn start(&mut self, target: &P, state: &StateOf<V>) {
        self.seen = 0;
        self.dimension = state.q.len();
        if let Some(names) = &self.names {
            assert_eq!(
                names.len(),
                self.dimension,
                "CsvRecorder: {} column names for {} coordinates",
                names.len(),
                self.dimension
            );
        }
        self.write_row(target, state);
    }
    fn observe(&mut self, target: &P, state: &StateOf<V>) {
        self.seen += 1;
        if self.seen.is_multiple_of(self.every) {
            self.write_row(target, state);
        }
    }
    fn stopped_early(&mut self, error: &StepError) {
        self.ended_early = Some(format!("ended early [{}]: {error}", error.code()));
    }
    fn finish(&mut self) -> io::Result<()> {
        CsvRecorder::finish(self)
    }
    fn save_checkpoint(&mut self, out: &mut ScopeMut<'_>) -> io::Result<()> {
        self.save(out)
    }
    fn restore_checkpoint(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.restore(from)
    }
}

/// The I/O error inside a `csv` error (so that e.g. "disk full" keeps its
/// [`io::ErrorKind`]); other `csv` errors cannot occur for the records written here.
fn csv_io(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("CSV: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::{CsvRecorder, xyz_name};

    /// A large row formatted in parallel chunks (on 3 threads) has the bytes of the same row
    /// written field by field.
    #[test]
    fn a_large_rows_chunks_write_the_bytes_of_its_fields_one_by_one() {
        let dir = std::env::temp_dir().join(format!("zs-chunked-row-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let q: Vec<f64> = (0..9000)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => -1e-7 * i as f64,
                2 => 1e20 / (i as f64),
                3 => f64::NAN,
                4 => f64::NEG_INFINITY,
                _ => (i as f64).sqrt() - 40.0,
            })
            .collect();
        let v: Vec<f64> = q.iter().map(|x| -x / 3.0).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let row = |chunked: bool| {
            let path = dir.join(format!("{chunked}.csv"));
            let mut recorder = CsvRecorder::<Vec<f64>>::create(dir.join("unused.csv"), 1).unwrap();
            let mut w = csv::Writer::from_writer(std::fs::File::create(&path).unwrap());
            pool.install(|| {
                recorder.field(&mut w, 0.25).unwrap();
                let (q, v) = (
                    super::UserOrder { x: &q, by: None },
                    super::UserOrder { x: &v, by: None },
                );
                recorder.values(&mut w, q, v, chunked).unwrap();
                recorder.field(&mut w, -3.5).unwrap();
            });
            w.write_record(None::<&[u8]>).unwrap();
            w.flush().unwrap();
            drop(w);
            std::fs::read_to_string(&path).unwrap()
        };
        let (one_by_one, chunked) = (row(false), row(true));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(one_by_one.split(',').count(), 2 + q.len() + v.len());
        assert!(one_by_one.starts_with("0.25,0,") && one_by_one.ends_with(",-3.5\n"));
        assert_eq!(one_by_one, chunked);
    }

    /// What [`super::number`] wrote before it took its digits from `ryu`: the standard
    /// library's shortest round-trip form.
    fn rusts_shortest_form(x: f64) -> String {
        let a = x.abs();
        if a != 0.0 && a.is_finite() && !(1e-5..1e16).contains(&a) {
            format!("{x:e}")
        } else {
            format!("{x}")
        }
    }

    /// The standard library's text, but in ties, for every kind of `f64`: random bit patterns
    /// (every exponent), numbers of a simulation's sizes, whole numbers, both zeros, the
    /// non-finite ones and the doubles at either side of the exponent notation's bounds; every
    /// text reads back as its number.
    #[test]
    fn number_writes_rusts_shortest_form() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        use rand_distr::{Distribution, Uniform};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (sizes, unit) = (
            Uniform::new(-200.0, 200.0).unwrap(),
            Uniform::new(-1.0, 1.0).unwrap(),
        );
        let (whole, powers) = (
            Uniform::new(-100_000, 100_000).unwrap(),
            Uniform::new(-30, 30).unwrap(),
        );
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.1,
            1e15,
            9.9e15,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for b in [1e-5, 1e16, 1e-4, 1e15] {
            for s in [1.0, -1.0] {
                let x: f64 = s * b;
                xs.extend([x, x.next_up(), x.next_down()]);
            }
        }
        for _ in 0..200_000 {
            xs.push(f64::from_bits(rng.next_u64()));
            xs.push(sizes.sample(&mut rng));
            xs.push(f64::from(whole.sample(&mut rng)));
            xs.push(unit.sample(&mut rng) * 10f64.powi(powers.sample(&mut rng)));
        }
        let (mut text, mut ties) = (String::new(), 0);
        for &x in &xs {
            text.clear();
            super::number(&mut text, x);
            let rusts = rusts_shortest_form(x);
            if text != rusts {
                // Only a tie may differ: two shortest forms as near as each other to `x`,
                // the same but for their last digit, both read back as `x`.
                let (a, b) = (text.as_bytes(), rusts.as_bytes());
                let last = a.len().saturating_sub(1);
                assert!(
                    a.len() == b.len() && a[..last] == b[..last] && a[last].abs_diff(b[last]) == 1,
                    "{:#x}: {text} against {rusts}",
                    x.to_bits()
                );
                assert_eq!(rusts.parse::<f64>().unwrap().to_bits(), x.to_bits());
                ties += 1;
            }
            if x.is_nan() {
                assert_eq!(text, "NaN");
            } else {
                assert_eq!(
                    text.parse::<f64>().unwrap().to_bits(),
                    x.to_bits(),
                    "{text}"
                );
            }
        }
        // Ties are rare: fewer than one number in a thousand.
        assert!(ties * 1000 < xs.len(), "{ties} ties in {}", xs.len());
    }

    /// Counted names give the header the listed ones give, for no bodies, one and many.
    #[test]
    fn xyz_names_counted_head_the_file_as_the_same_names_listed() {
        let dir = std::env::temp_dir().join(format!("zs-xyz-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for bodies in [0, 1, 2, 1000] {
            let create = |name: &str| {
                CsvRecorder::<Vec<f64>>::create(dir.join(name), 1)
                    .unwrap()
                    .with_energy()
            };
            let listed = create("listed.csv").with_names((0..3 * bodies).map(xyz_name));
            let counted = create("counted.csv").with_xyz_names(bodies);
            assert_eq!(counted.dimension, 3 * bodies);
            assert_eq!(counted.header_line(), listed.header_line());
            if bodies == 2 {
                assert_eq!(
                    counted.header_line(),
                    "t,x1,y1,z1,x2,y2,z2,v_x1,v_y1,v_z1,v_x2,v_y2,v_z2,energy"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
