//! A dense LU with partial pivoting on storage allocated once (the systems of seed 004's step
//! have run-time sizes `N + d`, `2N + 2d`, `3N + 3d`; a step allocates nothing).

// Index loops read best for the matrices and blocks of the equations written out here.
#![allow(clippy::needless_range_loop)]

use crate::linalg::singular_threshold;

/// `n × n` row-major matrix and its LU factors in place, with the row permutation.
#[derive(Debug, Clone)]
pub(crate) struct Lu {
    n: usize,
    pub(crate) a: Vec<f64>,
    piv: Vec<usize>,
}

/// A zero or tiny pivot (`pivot < n·ε·max_pivot`), or a non-finite entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Singular {
    pub(crate) n: usize,
    pub(crate) pivot: f64,
    pub(crate) max_pivot: f64,
}

impl Lu {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            n,
            a: vec![0.0; n * n],
            piv: vec![0; n],
        }
    }

    /// Zero the matrix (before writing entries with [`Lu::set`]).
    pub(crate) fn clear(&mut self) {
        self.a.fill(0.0);
    }

    #[inline]
    pub(crate) fn set(&mut self, i: usize, j: usize, x: f64) {
        self.a[i * self.n + j] = x;
    }

    /// Factor the matrix in place.
    pub(crate) fn factor(&mut self) -> Result<(), Singular> {
        let n = self.n;
        let (mut lo, mut hi) = (f64::INFINITY, 0.0_f64);
        for k in 0..n {
            let mut p = k;
            for i in k + 1..n {
                if self.a[i * n + k].abs() > self.a[p * n + k].abs() {
                    p = i;
                }
            }
            let best = self.a[p * n + k].abs();
            hi = hi.max(best);
            lo = lo.min(best);
            if best == 0.0 || !best.is_finite() {
                return Err(Singular {
                    n,
                    pivot: best,
                    max_pivot: hi,
                });
            }
            self.piv[k] = p;
            if p != k {
                for j in 0..n {
                    self.a.swap(k * n + j, p * n + j);
                }
            }
            let pivot = self.a[k * n + k];
            for i in k + 1..n {
                let f = self.a[i * n + k] / pivot;
                self.a[i * n + k] = f;
                for j in k + 1..n {
                    self.a[i * n + j] -= f * self.a[k * n + j];
                }
            }
        }
        if n > 0 && lo < singular_threshold(n) * hi {
            return Err(Singular {
                n,
                pivot: lo,
                max_pivot: hi,
            });
        }
        Ok(())
    }

    /// Solve `A x = b` in place with the factors.
    pub(crate) fn solve(&self, b: &mut [f64]) {
        let n = self.n;
        for k in 0..n {
            b.swap(k, self.piv[k]);
        }
        for i in 0..n {
            let s: f64 = (0..i).map(|j| self.a[i * n + j] * b[j]).sum();
            b[i] -= s;
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|j| self.a[i * n + j] * b[j]).sum();
            b[i] = (b[i] - s) / self.a[i * n + i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lu;

    #[test]
    fn solves_a_pivoting_system_and_rejects_a_singular_one() {
        // [[0, 2, 1], [1, 1, 0], [3, 0, 1]] x = b with x = (1, −2, 3).
        let rows = [[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]];
        let x = [1.0, -2.0, 3.0];
        let mut lu = Lu::new(3);
        for (i, r) in rows.iter().enumerate() {
            for (j, v) in r.iter().enumerate() {
                lu.set(i, j, *v);
            }
        }
        let mut b: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().zip(&x).map(|(a, b)| a * b).sum())
            .collect();
        lu.factor().unwrap();
        lu.solve(&mut b);
        for (got, want) in b.iter().zip(&x) {
            assert!((got - want).abs() < 1e-14);
        }
        let mut s = Lu::new(2);
        s.set(0, 0, 1.0);
        s.set(0, 1, 2.0);
        s.set(1, 0, 2.0);
        s.set(1, 1, 4.0);
        assert!(s.factor().is_err());
    }
}
