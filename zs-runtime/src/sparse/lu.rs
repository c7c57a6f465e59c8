//! LU with partial pivoting on a fixed sparsity pattern (faer's simplicial left-looking LU,
//! COLAMD column ordering computed once): the pivoting fallback of the sparse symmetric solve
//! and the solver of SHAKE's nonsymmetric Newton matrix on assembled systems.
//!
//! The numeric factorization may allocate when its fill grows beyond what an earlier one
//! needed (row pivoting changes the fill); it is a fallback, not the common path.

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::perm::PermRef;
use faer::sparse::linalg::lu::{LuSymbolicParams, factorize_symbolic_lu, simplicial};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{Conj, MatMut, Par};

use crate::linalg::{Operand, SolveFailure, singular_threshold};

/// A square matrix in a fixed compressed-column pattern, its values and an LU solver for it.
pub struct SparseLu {
    n: usize,
    pattern: SymbolicSparseColMat<u32>,
    /// Values in pattern order (fill them with [`SparseLu::values_mut`] before
    /// [`SparseLu::factor_solve`]).
    values: Vec<f64>,
    col_fwd: Vec<u32>,
    col_inv: Vec<u32>,
    row_fwd: Vec<u32>,
    row_inv: Vec<u32>,
    numeric: simplicial::SimplicialLu<u32, f64>,
    mem: MemBuffer,
}

impl core::fmt::Debug for SparseLu {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SparseLu")
            .field("n", &self.n)
            .field("stored", &self.values.len())
            .finish_non_exhaustive()
    }
}

impl SparseLu {
    /// The solver for the `n × n` pattern with sorted row indices `row_idx[col_ptr[c]..col_ptr[c+1]]`
    /// in column `c` (set-up: the column ordering and every scratch buffer).
    ///
    /// # Panics
    /// If the pattern is invalid or faer runs out of memory.
    pub fn new(n: usize, col_ptr: Vec<u32>, row_idx: Vec<u32>) -> Self {
        let pattern = SymbolicSparseColMat::new_checked(n, n, col_ptr, None, row_idx);
        let symbolic = factorize_symbolic_lu(pattern.as_ref(), LuSymbolicParams::default())
            .expect("faer: symbolic LU (out of memory)");
        let (col_fwd, col_inv) = {
            let (f, i) = symbolic.col_perm().arrays();
            (f.to_vec(), i.to_vec())
        };
        let req = StackReq::any_of(&[
            simplicial::factorize_simplicial_numeric_lu_scratch::<u32, f64>(n, n),
            simplicial::solve_in_place_scratch::<u32, f64>(n, 1, Par::Seq),
        ]);
        let values = vec![0.0; pattern.row_idx().len()];
        Self {
            n,
            pattern,
            values,
            col_fwd,
            col_inv,
            row_fwd: vec![0; n],
            row_inv: vec![0; n],
            numeric: simplicial::SimplicialLu::new(),
            mem: MemBuffer::new(req),
        }
    }

    /// Column pointers of the pattern.
    pub fn col_ptr(&self) -> &[u32] {
        self.pattern.col_ptr()
    }
    /// Row indices of the pattern.
    pub fn row_idx(&self) -> &[u32] {
        self.pattern.row_idx()
    }
    /// The values, in pattern order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// The values, mutably.
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }

    /// Set every stored value: entry `(r, c)` to `f(r, c)`.
    pub fn fill(&mut self, mut f: impl FnMut(usize, usize) -> f64) {
        let (cp, ri) = (self.pattern.col_ptr(), self.pattern.row_idx());
        for c in 0..self.n {
            let (a, b) = (cp[c] as usize, cp[c + 1] as usize);
            for (v, &r) in self.values[a..b].iter_mut().zip(&ri[a..b]) {
                *v = f(r as usize, c);
            }
        }
    }

    /// Factor the current values (`P A Q = L U`) and overwrite `x` (holding `b`) by `A⁻¹ b`.
    ///
    /// # Errors
    /// [`SolveFailure::Singular`] when a pivot column is empty or exactly zero, or when
    /// `min|U_jj| < n·ε·max|U_jj|`; [`SolveFailure::NonFinite`] for a non-finite solution.
    pub fn factor_solve(&mut self, x: &mut [f64]) -> Result<(), SolveFailure> {
        let n = self.n;
        {
            let stack = MemStack::new(&mut self.mem);
            let col = PermRef::new_checked(&self.col_fwd, &self.col_inv, n);
            let a = SparseColMatRef::new(self.pattern.as_ref(), &self.values);
            if simplicial::factorize_simplicial_numeric_lu(
                &mut self.row_fwd,
                &mut self.row_inv,
                &mut self.numeric,
                a,
                col,
                stack,
            )
            .is_err()
            {
                return Err(SolveFailure::Singular {
                    n,
                    pivot: 0.0,
                    max_pivot: f64::NAN,
                });
            }
        }
        let (lo, hi) = {
            let u = self.numeric.u_factor_unsorted();
            let (cp, ri, vals) = (u.symbolic().col_ptr(), u.symbolic().row_idx(), u.val());
            let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
            for j in 0..n {
                let p = (cp[j] as usize..cp[j + 1] as usize)
                    .find(|&s| ri[s] as usize == j)
                    .map_or(0.0, |s| vals[s].abs());
                lo = lo.min(p);
                hi = hi.max(p);
            }
            (lo, hi)
        };
        if n > 0 && (lo == 0.0 || lo < singular_threshold(n) * hi || !hi.is_finite()) {
            return Err(SolveFailure::Singular {
                n,
                pivot: lo,
                max_pivot: hi,
            });
        }
        self.solve_again(x);
        if x.iter().all(|v| v.is_finite()) {
            Ok(())
        } else {
            Err(SolveFailure::NonFinite(Operand::Solution))
        }
    }

    /// Overwrite `x` by `A⁻¹ x` with the factorization of the last successful
    /// [`SparseLu::factor_solve`].
    pub fn solve_again(&mut self, x: &mut [f64]) {
        let n = self.n;
        let stack = MemStack::new(&mut self.mem);
        self.numeric.solve_in_place_with_conj(
            PermRef::new_checked(&self.row_fwd, &self.row_inv, n),
            PermRef::new_checked(&self.col_fwd, &self.col_inv, n),
            Conj::No,
            MatMut::from_column_major_slice_mut(x, n, 1),
            Par::Seq,
            stack,
        );
    }

    /// `‖A‖₁` of the current values.
    pub fn norm_1(&self) -> f64 {
        let cp = self.pattern.col_ptr();
        (0..self.n)
            .map(|c| {
                (cp[c] as usize..cp[c + 1] as usize)
                    .map(|s| self.values[s].abs())
                    .sum::<f64>()
            })
            .fold(0.0f64, f64::max)
    }
}
