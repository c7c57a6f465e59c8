//! Explicit Runge–Kutta tableaux: the "standard layer" Patrick et al. converts
//! (`docs/VARIATIONAL.md` §1).

use std::fmt;

/// An explicit Runge–Kutta method `(a, b, c)`: `a` strictly lower triangular, `Σ b = 1`,
/// `c_i = Σ_j a_ij` (checked by [`Tableau::new`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tableau {
    /// `a[i][j]`, `j < i` (the rest zero).
    pub(crate) a: Vec<Vec<f64>>,
    pub(crate) b: Vec<f64>,
    pub(crate) c: Vec<f64>,
    name: &'static str,
}

/// Why [`Tableau::new`] rejected a tableau.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableauError {
    /// No stages, or `a`, `b`, `c` of different lengths (or `a` not square).
    #[error("a Runge–Kutta tableau needs s ≥ 1 stages with a s×s, b and c of length s; got {0}")]
    Shape(String),
    /// `a[i][j] ≠ 0` for some `j ≥ i`: the method would be implicit.
    #[error("a[{0}][{1}] = {2}: an explicit tableau has a strictly lower triangular a")]
    NotExplicit(usize, usize, f64),
    /// `Σ b ≠ 1` (to 1e-12): not consistent.
    #[error("Σ b = {0}, not 1: the method is not consistent")]
    Weights(f64),
    /// `c_i ≠ Σ_j a_ij` (to 1e-12).
    #[error("c[{0}] = {1} but Σ_j a[{0}][j] = {2}")]
    Nodes(usize, f64, f64),
    /// A non-finite entry.
    #[error("the tableau has a non-finite entry")]
    NonFinite,
}

impl Tableau {
    /// Any explicit tableau, checked.
    ///
    /// # Errors
    /// [`TableauError`] naming the first violated condition.
    pub fn new(a: Vec<Vec<f64>>, b: Vec<f64>, c: Vec<f64>) -> Result<Self, TableauError> {
        let s = b.len();
        if s == 0 || c.len() != s || a.len() != s || a.iter().any(|r| r.len() != s) {
            return Err(TableauError::Shape(format!(
                "a {}×{:?}, b {}, c {}",
                a.len(),
                a.iter().map(Vec::len).collect::<Vec<_>>(),
                b.len(),
                c.len()
            )));
        }
        if a.iter()
            .flatten()
            .chain(&b)
            .chain(&c)
            .any(|x| !x.is_finite())
        {
            return Err(TableauError::NonFinite);
        }
        for (i, row) in a.iter().enumerate() {
            if let Some(j) = (i..s).find(|&j| row[j] != 0.0) {
                return Err(TableauError::NotExplicit(i, j, row[j]));
            }
            let sum: f64 = row.iter().sum();
            if (sum - c[i]).abs() > 1e-12 {
                return Err(TableauError::Nodes(i, c[i], sum));
            }
        }
        let total: f64 = b.iter().sum();
        if (total - 1.0).abs() > 1e-12 {
            return Err(TableauError::Weights(total));
        }
        Ok(Self {
            a,
            b,
            c,
            name: "custom",
        })
    }

    fn known(a: Vec<Vec<f64>>, b: Vec<f64>, name: &'static str) -> Self {
        let c = a.iter().map(|r| r.iter().sum()).collect();
        Self { a, b, c, name }
    }

    /// Forward Euler, order 1.
    pub fn euler() -> Self {
        Self::known(vec![vec![0.0]], vec![1.0], "euler")
    }

    /// Heun's method (explicit trapezoid), order 2.
    pub fn heun() -> Self {
        Self::known(vec![vec![0.0, 0.0], vec![1.0, 0.0]], vec![0.5, 0.5], "heun")
    }

    /// Kutta's third-order method `[0; ½; −1 2 | 1/6 2/3 1/6]`.
    pub fn kutta3() -> Self {
        Self::known(
            vec![
                vec![0.0, 0.0, 0.0],
                vec![0.5, 0.0, 0.0],
                vec![-1.0, 2.0, 0.0],
            ],
            vec![1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0],
            "kutta3",
        )
    }

    /// The classical fourth-order Runge–Kutta method.
    pub fn rk4() -> Self {
        Self::known(
            vec![
                vec![0.0, 0.0, 0.0, 0.0],
                vec![0.5, 0.0, 0.0, 0.0],
                vec![0.0, 0.5, 0.0, 0.0],
                vec![0.0, 0.0, 1.0, 0.0],
            ],
            vec![1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0],
            "rk4",
        )
    }

    /// Number of stages.
    pub fn stages(&self) -> usize {
        self.b.len()
    }

    /// `"euler"`, `"heun"`, `"kutta3"`, `"rk4"` or `"custom"`.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl fmt::Display for Tableau {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} stages)", self.name, self.stages())
    }
}
