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

/// Every row of `path` for a system of `n` coordinates.
///
/// # Errors
/// The file cannot be read, has no header or no `t` column first, has fewer than `1 + n`
/// columns, or a field that is not a number.
pub fn read(path: &Path, n: usize) -> Result<Vec<Row>, StateFileError> {
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
    let with_v = columns > 2 * n;
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

/// The last row of `path`, with velocities, all finite: the state `--init` starts from.
///
/// # Errors
/// As [`read`], or: no data row, no velocity columns, a non-finite value.
pub fn last_state(path: &Path, n: usize) -> Result<(f64, Vec<f64>, Vec<f64>), StateFileError> {
    let mut rows = read(path, n)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("zs-state-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_rows_with_and_without_velocities() {
        let p = file(
            "a.csv",
            "t,x,y,v_x,v_y,energy\n0,1,2,3,4,9\n0.5,1.5,2.5,3.5,4.5,9\n",
        );
        let rows = read(&p, 2).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].q, vec![1.5, 2.5]);
        assert_eq!(rows[1].v, Some(vec![3.5, 4.5]));
        assert_eq!(
            last_state(&p, 2).unwrap(),
            (0.5, vec![1.5, 2.5], vec![3.5, 4.5])
        );
        let p = file("b.csv", "t,x,y\n0,1,2\n");
        assert_eq!(read(&p, 2).unwrap()[0].v, None);
        assert!(last_state(&p, 2)
            .unwrap_err()
            .to_string()
            .contains("no velocity columns"));
    }

    #[test]
    fn reports_bad_files_on_one_line() {
        let p = file("c.csv", "time,x\n0,1\n");
        assert!(read(&p, 1)
            .unwrap_err()
            .to_string()
            .contains("first column must be `t`"));
        let p = file("d.csv", "t,x\n0,1\n");
        assert!(read(&p, 2)
            .unwrap_err()
            .to_string()
            .contains("1 columns after `t`, but the system has 2"));
        let p = file("e.csv", "t,x,v\n0,abc,1\n");
        assert!(read(&p, 1)
            .unwrap_err()
            .to_string()
            .contains("line 2, column 2 (`x`): `abc` is not a number"));
        let p = file("f.csv", "t,x,v\n0,1\n");
        assert!(read(&p, 1)
            .unwrap_err()
            .to_string()
            .contains("a row has 2 fields"));
        let p = file("g.csv", "t,x,v\n");
        assert!(last_state(&p, 1)
            .unwrap_err()
            .to_string()
            .contains("no state"));
        let p = file("h.csv", "t,x,v\n0,inf,1\n");
        assert!(last_state(&p, 1)
            .unwrap_err()
            .to_string()
            .contains("not finite"));
        let missing = std::env::temp_dir().join("zs-no-such-dir/none.csv");
        assert!(read(&missing, 1)
            .unwrap_err()
            .to_string()
            .starts_with("cannot read the state file"));
        for e in [read(&p, 1).err(), last_state(&p, 1).err()]
            .into_iter()
            .flatten()
        {
            assert!(!e.to_string().contains('\n'));
        }
    }
}
