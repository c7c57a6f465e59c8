//! State files (docs/CLI.md): what `zs run --out` writes and what `--init` and `zs eval`
//! read. A CSV with a header; column 1 is `t`, then the `n` coordinates, then the `n`
//! velocities, in the system's coordinate order; any further columns (energy, residuals, ...)
//! are outputs and are ignored on input. `--init FILE` starts from the last row (coordinates
//! and velocities required); `zs eval` reads every row (velocity and output columns may be
//! absent).

use std::path::{Path, PathBuf};

/// Why a state file cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StateFileError {
    /// The file cannot be opened or its header read.
    #[error("cannot read the state file {}: {message}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The reader's message.
        message: String,
    },
    /// Its first column is not `t`.
    #[error("{} is not a state file: its first column must be `t` (a header line `t,<coordinates>,<velocities>`)", path.display())]
    NotAStateFile {
        /// The file.
        path: PathBuf,
    },
    /// Fewer columns than the system has coordinates.
    #[error("{} has {columns} columns after `t`, but the system has {n} coordinates", path.display())]
    TooFewColumns {
        /// The file.
        path: PathBuf,
        /// Columns after `t`.
        columns: usize,
        /// Coordinates of the system.
        n: usize,
    },
    /// A column whose name is not the system's (a file of another system or size).
    #[error("{} column {column} is `{found}`, but this system's is `{expected}`: a state file of another system or size", path.display())]
    OtherSystem {
        /// The file.
        path: PathBuf,
        /// The column (1-based).
        column: usize,
        /// Its header.
        found: String,
        /// The system's name for it.
        expected: String,
    },
    /// A line the CSV reader rejects (e.g. a row of another length).
    #[error("{} line {line}: {message}", path.display())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// The line (1-based, header included).
        line: usize,
        /// The reader's message.
        message: String,
    },
    /// A field that is not a number.
    #[error("{} line {line}, column {column} (`{header}`): `{text}` is not a number", path.display())]
    NotANumber {
        /// The file.
        path: PathBuf,
        /// The line (1-based, header included).
        line: usize,
        /// The column (1-based).
        column: usize,
        /// Its header.
        header: String,
        /// The field.
        text: String,
    },
    /// A header and no row (`--init`).
    #[error("{} has a header but no state", path.display())]
    NoState {
        /// The file.
        path: PathBuf,
    },
    /// No velocity columns (`--init`).
    #[error("{} has no velocity columns: --init needs t, the {n} coordinates and the {n} velocities", path.display())]
    NoVelocities {
        /// The file.
        path: PathBuf,
        /// Coordinates of the system.
        n: usize,
    },
    /// A last state with a non-finite value (`--init`).
    #[error("the last state of {} is not finite (t = {t}): cannot start from it", path.display())]
    NotFinite {
        /// The file.
        path: PathBuf,
        /// Its time.
        t: f64,
    },
}

/// One row: time, coordinates, velocities when the file has them.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `t`.
    pub t: f64,
    /// The `n` coordinates.
    pub q: Vec<f64>,
    /// The `n` velocities, when the row has `1 + 2n` columns or more.
    pub v: Option<Vec<f64>>,
}

/// Every row of `path` for a system whose coordinates are `names`: the header must be `t`, the
/// names, then (when there are velocity columns) `v_<name>` for each.
///
/// # Errors
/// The file cannot be read, has no header or no `t` column first, has fewer than `1 + n`
/// columns, a column named otherwise than the system's (another system, another size), or a
/// field that is not a number.
pub fn read(path: &Path, names: &[String]) -> Result<Vec<Row>, StateFileError> {
    let n = names.len();
    let unreadable = |e: csv::Error| StateFileError::Unreadable {
        path: path.to_path_buf(),
        message: csv_message(&e),
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_path(path)
        .map_err(unreadable)?;
    let header = reader.headers().map_err(unreadable)?.clone();
    if header.get(0).map(str::trim) != Some("t") {
        return Err(StateFileError::NotAStateFile {
            path: path.to_path_buf(),
        });
    }
    let columns = header.len();
    if columns < 1 + n {
        return Err(StateFileError::TooFewColumns {
            path: path.to_path_buf(),
            columns: columns - 1,
            n,
        });
    }
    let other = |column: usize, expected: String| {
        let found = header.get(column).unwrap_or("").trim();
        (found != expected).then(|| StateFileError::OtherSystem {
            path: path.to_path_buf(),
            column: column + 1,
            found: found.to_string(),
            expected,
        })
    };
    for (k, name) in names.iter().enumerate() {
        if let Some(e) = other(k + 1, name.clone()) {
            return Err(e);
        }
    }
    // Velocity columns when the column after the coordinates is the first one's.
    let with_v = n > 0 && header.get(n + 1).map(str::trim) == Some(&format!("v_{}", names[0]));
    if with_v {
        for (k, name) in names.iter().enumerate() {
            if let Some(e) = other(n + 1 + k, format!("v_{name}")) {
                return Err(e);
            }
        }
    } else if let Some(next) = header.get(n + 1).map(str::trim) {
        // Not a velocity: an output column or another system's coordinate. Outputs are not
        // coordinates' names.
        if let Some(e) = (next.starts_with("v_") || looks_like_a_coordinate(next, names))
            .then(|| other(n + 1, format!("v_{}", names[0])))
            .flatten()
        {
            return Err(e);
        }
    }
    let mut rows = Vec::new();
    for (k, record) in reader.records().enumerate() {
        let line = k + 2;
        let record = record.map_err(|e| StateFileError::BadLine {
            path: path.to_path_buf(),
            line,
            message: csv_message(&e),
        })?;
        let field = |i: usize| -> Result<f64, StateFileError> {
            let text = record.get(i).unwrap_or("").trim();
            text.parse::<f64>().map_err(|_| StateFileError::NotANumber {
                path: path.to_path_buf(),
                line,
                column: i + 1,
                header: header.get(i).unwrap_or("?").to_string(),
                text: text.to_string(),
            })
        };
        let t = field(0)?;
        let q = (1..=n).map(field).collect::<Result<Vec<_>, _>>()?;
        let v = if with_v {
            Some((n + 1..=2 * n).map(field).collect::<Result<Vec<_>, _>>()?)
        } else {
            None
        };
        rows.push(Row { t, q, v });
    }
    Ok(rows)
}

/// Whether `column` is named like the coordinates `names` (the same letters, another number:
/// `x_O3` beside `x_O1`, `θ_10` beside `θ_0`) — a coordinate of a larger system.
fn looks_like_a_coordinate(column: &str, names: &[String]) -> bool {
    let stem = |s: &str| s.trim_end_matches(|c: char| c.is_ascii_digit()).to_string();
    names
        .iter()
        .any(|n| !stem(n).is_empty() && stem(n) == stem(column))
}

/// The last row of `path`, with velocities, all finite: the state `--init` starts from.
///
/// # Errors
/// As [`read`], or: no data row, no velocity columns, a non-finite value.
pub fn last_state(
    path: &Path,
    names: &[String],
) -> Result<(f64, Vec<f64>, Vec<f64>), StateFileError> {
    let n = names.len();
    let mut rows = read(path, names)?;
    let Some(row) = rows.pop() else {
        return Err(StateFileError::NoState {
            path: path.to_path_buf(),
        });
    };
    let Some(v) = row.v else {
        return Err(StateFileError::NoVelocities {
            path: path.to_path_buf(),
            n,
        });
    };
    if !(row.t.is_finite() && row.q.iter().chain(&v).all(|x| x.is_finite())) {
        return Err(StateFileError::NotFinite {
            path: path.to_path_buf(),
            t: row.t,
        });
    }
    Ok((row.t, row.q, v))
}

fn csv_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("a row has {len} fields, the header {expected_len}"),
        _ => e.to_string(),
    }
}
