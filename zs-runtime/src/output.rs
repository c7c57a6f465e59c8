//! CSV output of trajectories.
//!
//! [`CsvRecorder`] is an [`Observer`] that writes every k-th state (`t, q…, v…`, optionally the
//! total energy and the constraint residual `‖g‖`) under a header row. It writes to
//! `<path>.tmp` and renames it to `<path>` only in [`CsvRecorder::finish`], after flushing and
//! syncing: an interrupted run leaves a `.tmp` file, never a truncated file under the final name.

use std::fmt::Write as _;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::observers::{constraint_norm, total_energy, Observer};
use crate::{MechanicalSystem, Potential, State};

type Residual<'a, const N: usize> = Box<dyn Fn(&[f64; N]) -> f64 + 'a>;

/// Writes every k-th state of a run to a CSV file (see the [module docs](self)).
///
/// Columns: `t`, `q0…q{N-1}`, `v0…v{N-1}` (or the names given to
/// [`CsvRecorder::with_names`]), then `energy` if [`CsvRecorder::with_energy`], then
/// `constraint_norm` if [`CsvRecorder::with_constraints`]. The initial state is row 1; then
/// every `every`-th step: a run of `n` steps gives `1 + ⌊n / every⌋` rows.
///
/// Floats are written in Rust's shortest round-trip form (exponent notation for very large or
/// small magnitudes). Writing a row reuses one buffer; the `csv` writer buffers the file.
pub struct CsvRecorder<'a, const N: usize> {
    path: PathBuf,
    tmp_path: PathBuf,
    writer: Option<csv::Writer<File>>,
    every: u64,
    seen: u64,
    rows: u64,
    energy: bool,
    residual: Option<Residual<'a, N>>,
    names: Option<Vec<String>>,
    header_written: bool,
    buf: String,
    error: Option<io::Error>,
}

impl<const N: usize> std::fmt::Debug for CsvRecorder<'_, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvRecorder")
            .field("path", &self.path)
            .field("every", &self.every)
            .field("rows", &self.rows)
            .field("energy", &self.energy)
            .field("constraints", &self.residual.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a, const N: usize> CsvRecorder<'a, N> {
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
        Ok(Self {
            path,
            tmp_path,
            writer: Some(csv::Writer::from_writer(file)),
            every,
            seen: 0,
            rows: 0,
            energy: false,
            residual: None,
            names: None,
            header_written: false,
            buf: String::with_capacity(32),
            error: None,
        })
    }

    /// Add an `energy` column: `½vᵀMv + V(q)` of the run's target potential.
    pub fn with_energy(mut self) -> Self {
        self.energy = true;
        self
    }

    /// Add a `constraint_norm` column: `‖g(q)‖` of `system`.
    pub fn with_constraints<S: MechanicalSystem<N, M> + ?Sized, const M: usize>(
        mut self,
        system: &'a S,
    ) -> Self {
        self.residual = Some(Box::new(move |q| constraint_norm(system, q)));
        self
    }

    /// Name the coordinates: the columns become `t, <name>…, v_<name>…`.
    pub fn with_names(mut self, names: [&str; N]) -> Self {
        self.names = Some(names.iter().map(|s| s.to_string()).collect());
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

    /// Flush, sync and rename `path.tmp` to `path`. Returns the deferred error of a failed
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
        std::fs::rename(&self.tmp_path, &self.path)
    }

    fn write_header(&mut self, w: &mut csv::Writer<File>) -> io::Result<()> {
        w.write_field("t")?;
        match &self.names {
            Some(names) => {
                for n in names {
                    w.write_field(n)?;
                }
                for n in names {
                    w.write_field(format!("v_{n}"))?;
                }
            }
            None => {
                for i in 0..N {
                    w.write_field(format!("q{i}"))?;
                }
                for i in 0..N {
                    w.write_field(format!("v{i}"))?;
                }
            }
        }
        if self.energy {
            w.write_field("energy")?;
        }
        if self.residual.is_some() {
            w.write_field("constraint_norm")?;
        }
        w.write_record(None::<&[u8]>)?;
        self.header_written = true;
        Ok(())
    }

    fn write_row<P: Potential<N> + ?Sized>(&mut self, target: &P, state: &State<N>) {
        if self.error.is_some() {
            return;
        }
        let Some(mut w) = self.writer.take() else {
            return;
        };
        let r = self.write_row_inner(&mut w, target, state);
        self.writer = Some(w);
        match r {
            Ok(()) => self.rows += 1,
            Err(e) => self.error = Some(e),
        }
    }

    fn write_row_inner<P: Potential<N> + ?Sized>(
        &mut self,
        w: &mut csv::Writer<File>,
        target: &P,
        state: &State<N>,
    ) -> io::Result<()> {
        if !self.header_written {
            self.write_header(w)?;
        }
        self.field(w, state.t)?;
        for x in state.q.iter().chain(state.v.iter()) {
            self.field(w, *x)?;
        }
        if self.energy {
            self.field(w, total_energy(target, state))?;
        }
        if let Some(g) = &self.residual {
            let r = g(&state.q);
            self.field(w, r)?;
        }
        w.write_record(None::<&[u8]>)?;
        Ok(())
    }

    fn field(&mut self, w: &mut csv::Writer<File>, x: f64) -> io::Result<()> {
        self.buf.clear();
        let a = x.abs();
        if a != 0.0 && a.is_finite() && !(1e-5..1e16).contains(&a) {
            write!(self.buf, "{x:e}")
        } else {
            write!(self.buf, "{x}")
        }
        .map_err(io::Error::other)?;
        w.write_field(self.buf.as_bytes())?;
        Ok(())
    }
}

impl<P: Potential<N> + ?Sized, const N: usize> Observer<P, N> for CsvRecorder<'_, N> {
    fn start(&mut self, target: &P, state: &State<N>) {
        self.seen = 0;
        self.write_row(target, state);
    }
    fn observe(&mut self, target: &P, state: &State<N>) {
        self.seen += 1;
        if self.seen % self.every == 0 {
            self.write_row(target, state);
        }
    }
    fn finish(&mut self) -> io::Result<()> {
        CsvRecorder::finish(self)
    }
}

fn tmp_path_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}
