//! The sparse constraint Jacobian of an assembled system and the `m × m` solves of SHAKE and
//! RATTLE in its pattern: each constraint belongs to one term of a form with constraints (body
//! constraints: one body; bond constraints: two), so the Jacobian `G` has at most `K`
//! `D`-blocks per row ([`SparseJacobian`]), and the `m × m` matrices `G M⁻¹ Gᵀ` (velocity
//! projection) and `G(Q) M⁻¹ G(q_n)ᵀ` (Newton) couple two constraints only when they share a
//! body ([`SparseConstraintSolver`]: the sparse symmetric solve of [`crate::sparse`] for the
//! first, the sparse LU for the second). The storage and the solves only: which rows there are
//! is [`super::constraints`]'s business.

use std::sync::Arc;

use super::plan::PINNED;
use crate::linalg::{ShiftedSolve, SolveFailure, SolveOptions};
use crate::model::{ConstraintSolve, ConstraintSpace, Jacobian};
#[cfg(feature = "faer")]
use crate::sparse::SparseLu;
use crate::sparse::{Backend, BlockLayout, SparseMatrix, SparseSolver};

/// The Jacobian of the constraints of an assembled system: row `c` is `∇g_c`, stored as `width`
/// body blocks of `d` entries (the arity of the widest form with constraints; a term of fewer
/// bodies leaves the rest absent); the pattern (which free bodies each row touches) is fixed at
/// set-up and shared.
#[derive(Debug, Clone)]
pub struct SparseJacobian {
    d: usize,
    width: usize,
    /// Free-body index of row `c`'s blocks at `c·width ..` ([`PINNED`]: absent).
    cols: Arc<Vec<u32>>,
    /// Row `c`, block `s`, entry `k` at `(c·width + s)·d + k`.
    vals: Vec<f64>,
}

impl SparseJacobian {
    pub(super) fn new(d: usize, width: usize, cols: Arc<Vec<u32>>) -> Self {
        let vals = vec![0.0; cols.len() * d];
        Self {
            d,
            width,
            cols,
            vals,
        }
    }

    /// Number of rows (constraints).
    pub fn rows(&self) -> usize {
        self.cols.len() / self.width
    }

    /// Blocks per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The free bodies of row `c` (its present blocks, in block order).
    pub fn row_bodies(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        self.row_cols(c)
            .iter()
            .filter(|&&f| f != PINNED)
            .map(|&f| f as usize)
    }

    fn row_cols(&self, c: usize) -> &[u32] {
        &self.cols[c * self.width..(c + 1) * self.width]
    }

    /// The dense `m × n` matrix (`n` coordinates; for tests and small systems).
    pub fn to_dense(&self, n: usize) -> Vec<Vec<f64>> {
        (0..self.rows())
            .map(|c| {
                let mut row = vec![0.0; n];
                for (o, b) in self.blocks(c) {
                    row[o..o + self.d].copy_from_slice(b);
                }
                row
            })
            .collect()
    }

    /// Block `s` of row `c`.
    pub fn block(&self, c: usize, s: usize) -> &[f64] {
        let (d, at) = (self.d, c * self.width + s);
        &self.vals[at * d..(at + 1) * d]
    }

    pub(crate) fn block_mut(&mut self, c: usize, s: usize) -> &mut [f64] {
        let (d, at) = (self.d, c * self.width + s);
        &mut self.vals[at * d..(at + 1) * d]
    }

    /// Row `c`'s values, every block.
    fn row(&self, c: usize) -> &[f64] {
        let w = self.width * self.d;
        &self.vals[c * w..(c + 1) * w]
    }

    /// `(offset of the body's coordinates, block values)` of each present block of row `c`.
    #[inline]
    fn blocks(&self, c: usize) -> impl Iterator<Item = (usize, &[f64])> {
        let d = self.d;
        let cols = self.row_cols(c);
        (0..self.width)
            .filter(move |&s| cols[s] != PINNED)
            .map(move |s| (cols[s] as usize * d, self.block(c, s)))
    }
}

impl Jacobian<Vec<f64>, Vec<f64>> for SparseJacobian {
    fn row_dot(&self, c: usize, x: &Vec<f64>) -> f64 {
        let mut s = 0.0;
        for (o, b) in self.blocks(c) {
            for (k, v) in b.iter().enumerate() {
                s += v * x[o + k];
            }
        }
        s
    }
    fn rows_dot(&self, other: &Self, c: usize) -> f64 {
        // Same pattern: the blocks pair up.
        self.row(c)
            .iter()
            .zip(other.row(c))
            .map(|(x, y)| x * y)
            .sum()
    }
    fn row_norm(&self, c: usize) -> f64 {
        self.rows_dot(self, c).sqrt()
    }
    fn sub_row(&self, c: usize, alpha: f64, x: &mut Vec<f64>) {
        for (o, b) in self.blocks(c) {
            for (k, v) in b.iter().enumerate() {
                x[o + k] -= v * alpha;
            }
        }
    }
    fn scale_columns(&mut self, source: &Self, w: &Vec<f64>) {
        let d = self.d;
        for (at, &f) in self.cols.iter().enumerate() {
            if f == PINNED {
                continue;
            }
            let o = f as usize * d;
            for k in 0..d {
                self.vals[at * d + k] = w[o + k] * source.vals[at * d + k];
            }
        }
    }
    fn sub_transpose_mul(&self, y: &Vec<f64>, divisor: f64, x: &mut Vec<f64>) {
        for (c, &yc) in y.iter().enumerate() {
            for (o, b) in self.blocks(c) {
                for (k, v) in b.iter().enumerate() {
                    x[o + k] -= v * yc / divisor;
                }
            }
        }
    }
    fn weighted_row_dot(&self, c: usize, w: &Vec<f64>, x: &Vec<f64>) -> f64 {
        let mut s = 0.0;
        for (o, b) in self.blocks(c) {
            for (k, v) in b.iter().enumerate() {
                s += v * w[o + k] * x[o + k];
            }
        }
        s
    }
    fn row_is_finite(&self, c: usize) -> bool {
        self.row(c).iter().all(|v| v.is_finite())
    }
    fn is_finite(&self) -> bool {
        self.vals.iter().all(|v| v.is_finite())
    }
}

/// The `m × m` solves of SHAKE/RATTLE on an assembled system, in the pattern of constraints that
/// share a body (fixed at set-up).
#[derive(Debug)]
pub struct SparseConstraintSolver {
    /// Stored pairs `(r, c)`, `r ≤ c`, of the coupling pattern (block size 1).
    gram: SparseMatrix,
    solver: SparseSolver,
    zeros: Vec<f64>,
    /// The Newton matrix's LU (faer's sparse LU: without the `faer` feature SHAKE's Newton
    /// solve on an assembled system is [`SolveFailure::NeedsFaer`]).
    #[cfg(feature = "faer")]
    newton: SparseLu,
}

impl SparseConstraintSolver {
    pub(super) fn new(jac: &SparseJacobian, free_bodies: usize, backend: Backend) -> Self {
        let m = jac.rows();
        let mut by_body: Vec<Vec<u32>> = vec![Vec::new(); free_bodies];
        for c in 0..m {
            for f in jac.row_bodies(c) {
                by_body[f].push(c as u32);
            }
        }
        let mut pairs = Vec::new();
        for list in &by_body {
            for (i, &r) in list.iter().enumerate() {
                for &c in &list[i + 1..] {
                    if r != c {
                        pairs.push((r as usize, c as usize));
                    }
                }
            }
        }
        let layout = BlockLayout::new(1, m, pairs);
        Self {
            gram: SparseMatrix::zeros(layout.clone()),
            solver: SparseSolver::new(layout.clone(), backend),
            zeros: vec![0.0; m],
            #[cfg(feature = "faer")]
            newton: newton_lu(&layout),
        }
    }
}

/// The LU of the Newton matrix `G(Q) M⁻¹ G(q_n)ᵀ`, in both triangles of the coupling pattern.
#[cfg(feature = "faer")]
fn newton_lu(layout: &BlockLayout) -> SparseLu {
    let m = layout.bodies();
    let mut neighbours: Vec<Vec<u32>> = (0..m as u32).map(|c| vec![c]).collect();
    for &(r, c) in layout.pairs() {
        if r != c {
            neighbours[r as usize].push(c);
            neighbours[c as usize].push(r);
        }
    }
    let mut col_ptr = vec![0u32];
    let mut row_idx = Vec::new();
    for mut rows in neighbours {
        rows.sort_unstable();
        row_idx.extend(rows);
        col_ptr.push(row_idx.len() as u32);
    }
    SparseLu::new(m, col_ptr, row_idx)
}

/// `Σ` over the bodies rows `r` of `a` and `c` of `b` share of `a_r · (w ∘ b_c)` on that body.
fn shared_dot(
    a: &SparseJacobian,
    r: usize,
    b: &SparseJacobian,
    c: usize,
    w: Option<&[f64]>,
) -> f64 {
    let d = a.d;
    let mut s = 0.0;
    for (sa, &fa) in a.row_cols(r).iter().enumerate() {
        if fa == PINNED {
            continue;
        }
        for (sb, &fb) in b.row_cols(c).iter().enumerate() {
            if fb != fa {
                continue;
            }
            let (x, y) = (a.block(r, sa), b.block(c, sb));
            let o = fa as usize * d;
            for k in 0..d {
                s += match w {
                    Some(w) => x[k] * w[o + k] * y[k],
                    None => x[k] * y[k],
                };
            }
        }
    }
    s
}

impl ConstraintSolve<Vec<f64>, Vec<f64>, SparseJacobian> for SparseConstraintSolver {
    fn solve_gram(
        &mut self,
        jac: &SparseJacobian,
        w: &Vec<f64>,
        x: &mut Vec<f64>,
    ) -> Result<(), SolveFailure> {
        let layout = self.gram.layout().clone();
        for (k, &(r, c)) in layout.pairs().iter().enumerate() {
            self.gram.block_mut(k)[0] = shared_dot(jac, r as usize, jac, c as usize, Some(w));
        }
        self.solver
            .solve_shifted(&self.zeros, 1.0, &self.gram, x, &SolveOptions::default())
            .map(|_| ())
    }

    fn solve_newton(
        &mut self,
        a: &SparseJacobian,
        d: &SparseJacobian,
        x: &mut Vec<f64>,
    ) -> Result<(), SolveFailure> {
        #[cfg(feature = "faer")]
        {
            self.newton.fill(|r, c| shared_dot(a, r, d, c, None));
            self.newton.factor_solve(x)
        }
        #[cfg(not(feature = "faer"))]
        {
            let _ = (a, d);
            Err(SolveFailure::NeedsFaer {
                n: x.len(),
                reason: "is SHAKE's nonsymmetric Newton matrix and needs a sparse LU",
            })
        }
    }
}

impl ConstraintSpace<Vec<f64>> for Vec<f64> {
    type Jacobian = SparseJacobian;
    type ConstraintSolver = SparseConstraintSolver;
}
