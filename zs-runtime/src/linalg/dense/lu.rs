//! LU with partial pivoting, written once for every dense square matrix of the crate: the
//! fixed-size `[[f64; N]; N]` on the stack (the fallback of the symmetric solve on indefinite
//! matrices, SHAKE's `M × M` Newton matrix) and the run-time-sized [`LuMatrix`] allocated
//! once (the `N + d`, `2N + 2d`, `3N + 3d` systems of a variational step).
//!
//! Why not a library's: `nalgebra`'s LU needs the bound `Const<N>: DimMin<Const<N>>`, which
//! holds only for concrete sizes (typenum), not in code generic over `const N`, and allocates
//! its permutation for dynamic sizes; faer's dense LU is built for large matrices and absent
//! from the build without the `faer` feature. Written over [`Square`], the fixed-size
//! instantiation has constant loop bounds that LLVM unrolls at the small `N` of mechanical
//! systems.

// Index loops read best for the elimination written out.
#![allow(clippy::needless_range_loop)]

use crate::linalg::{SolveFailure, singular_threshold};

/// A square row-major matrix the LU works on.
pub(crate) trait Square {
    /// Its dimension.
    fn dim(&self) -> usize;
    /// Entry `(i, j)`.
    fn at(&self, i: usize, j: usize) -> f64;
    /// Entry `(i, j)`, mutably.
    fn at_mut(&mut self, i: usize, j: usize) -> &mut f64;
    /// Exchange rows `a` and `b`.
    fn swap_rows(&mut self, a: usize, b: usize);
}

impl<const N: usize> Square for [[f64; N]; N] {
    #[inline(always)]
    fn dim(&self) -> usize {
        N
    }
    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> f64 {
        self[i][j]
    }
    #[inline(always)]
    fn at_mut(&mut self, i: usize, j: usize) -> &mut f64 {
        &mut self[i][j]
    }
    #[inline(always)]
    fn swap_rows(&mut self, a: usize, b: usize) {
        self.swap(a, b);
    }
}

/// An `n × n` row-major matrix of run-time size and room for its LU factors, allocated once:
/// written entry by entry ([`LuMatrix::set`]), factored in place ([`LuMatrix::factor`]), then
/// solved against any number of right-hand sides ([`LuMatrix::solve`]).
#[derive(Debug, Clone)]
pub(crate) struct LuMatrix {
    n: usize,
    a: Vec<f64>,
    swaps: Vec<usize>,
}

impl LuMatrix {
    /// The `n × n` zero matrix.
    pub(crate) fn zeros(n: usize) -> Self {
        Self {
            n,
            a: vec![0.0; n * n],
            swaps: vec![0; n],
        }
    }
    /// Set every entry to zero (before writing a new matrix with [`LuMatrix::set`]).
    pub(crate) fn clear(&mut self) {
        self.a.fill(0.0);
    }
    /// Set entry `(i, j)`.
    #[inline]
    pub(crate) fn set(&mut self, i: usize, j: usize, x: f64) {
        self.a[i * self.n + j] = x;
    }
    /// Factor the matrix in place (see [`factor`]).
    pub(crate) fn factor(&mut self) -> Result<(), SolveFailure> {
        let mut swaps = core::mem::take(&mut self.swaps);
        let result = factor(self, &mut swaps);
        self.swaps = swaps;
        result
    }
    /// Overwrite `b` by `A⁻¹ b` with the factors (see [`solve`]).
    pub(crate) fn solve(&self, b: &mut [f64]) {
        solve(self, &self.swaps, b);
    }
}

impl Square for LuMatrix {
    #[inline]
    fn dim(&self) -> usize {
        self.n
    }
    #[inline]
    fn at(&self, i: usize, j: usize) -> f64 {
        self.a[i * self.n + j]
    }
    #[inline]
    fn at_mut(&mut self, i: usize, j: usize) -> &mut f64 {
        &mut self.a[i * self.n + j]
    }
    fn swap_rows(&mut self, a: usize, b: usize) {
        let n = self.n;
        for j in 0..n {
            self.a.swap(a * n + j, b * n + j);
        }
    }
}

/// Doolittle with partial pivoting, in place: `L` (unit diagonal) below the diagonal of `a`, `U`
/// on and above it; `swaps[k]` is the row exchanged with row `k` at elimination step `k`. Fails
/// with [`SolveFailure::Singular`] on a zero pivot, a pivot ratio below `n·ε`, or a non-finite
/// largest pivot.
pub(crate) fn factor<A: Square>(a: &mut A, swaps: &mut [usize]) -> Result<(), SolveFailure> {
    let n = a.dim();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for k in 0..n {
        // Partial pivoting: the largest |a_ik| for i ≥ k.
        let mut p = k;
        let mut best = a.at(k, k).abs();
        for i in k + 1..n {
            let v = a.at(i, k).abs();
            if v > best {
                best = v;
                p = i;
            }
        }
        swaps[k] = p;
        lo = lo.min(best);
        // A NaN pivot column makes `hi` infinite: reported as singular below.
        hi = if best.is_nan() {
            f64::INFINITY
        } else {
            hi.max(best)
        };
        if best == 0.0 {
            // Exactly singular: keep eliminating nothing, report below with the final `hi`.
            continue;
        }
        if p != k {
            a.swap_rows(k, p);
        }
        let pivot = a.at(k, k);
        for i in k + 1..n {
            let m = a.at(i, k) / pivot;
            *a.at_mut(i, k) = m;
            if m != 0.0 {
                for j in k + 1..n {
                    let akj = a.at(k, j);
                    *a.at_mut(i, j) -= m * akj;
                }
            }
        }
    }
    if n > 0 && (lo == 0.0 || lo < singular_threshold(n) * hi || !hi.is_finite()) {
        return Err(SolveFailure::Singular {
            n,
            pivot: lo,
            max_pivot: hi,
        });
    }
    Ok(())
}

/// Overwrite `b` by `A⁻¹ b` with the factors of [`factor`]: all the row exchanges, forward
/// substitution with `L`, back substitution with `U` (the same operations, in the same order per
/// entry, as eliminating `b` alongside `A`; `L`'s rows are stored in their final order, hence
/// the exchanges first).
pub(crate) fn solve<A: Square>(lu: &A, swaps: &[usize], b: &mut [f64]) {
    let n = lu.dim();
    for k in 0..n {
        let p = swaps[k];
        if p != k {
            b.swap(k, p);
        }
    }
    for k in 0..n {
        for i in k + 1..n {
            let m = lu.at(i, k);
            if m != 0.0 {
                b[i] -= m * b[k];
            }
        }
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s -= lu.at(i, j) * b[j];
        }
        b[i] = s / lu.at(i, i);
    }
}

/// The LU factors of a fixed-size matrix, on the stack.
pub(super) struct Lu<const N: usize> {
    lu: [[f64; N]; N],
    swaps: [usize; N],
}

impl<const N: usize> Lu<N> {
    /// Factor `a` (see [`factor`]).
    pub(super) fn factor(a: &[[f64; N]; N]) -> Result<Self, SolveFailure> {
        let mut lu = *a;
        let mut swaps = [0usize; N];
        factor(&mut lu, &mut swaps)?;
        Ok(Self { lu, swaps })
    }

    /// Overwrite `b` by `a⁻¹ b` (see [`solve`]).
    pub(super) fn solve(&self, b: &mut [f64; N]) {
        solve(&self.lu, &self.swaps, b);
    }
}
