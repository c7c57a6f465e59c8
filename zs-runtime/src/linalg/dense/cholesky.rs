//! The Cholesky factorization of the dense backend, in its square-root-free `LDLᵀ` form, in place
//! on the stack.

use crate::linalg::singular_threshold;

/// A Cholesky factorization of a symmetric positive definite `A`, in its square-root-free form
/// `A = L D Lᵀ` (`L` unit lower triangular, `D` diagonal: the `LLᵀ` factor is `L D^½`), on the
/// stack: `L` below the diagonal of `l` (row-major, `l[i][j] = L_ij`; the diagonal and the strict
/// upper triangle are unused) and the reciprocal pivots `dinv[j] = 1/D_j`.
#[derive(Clone, Copy)]
pub(super) struct Cholesky<const N: usize> {
    pub(super) l: [[f64; N]; N],
    pub(super) dinv: [f64; N],
}

impl<const N: usize> Cholesky<N> {
    /// Factor the symmetric matrix with lower-triangle entries `a(i, j)` (`j ≤ i`; each read
    /// once). `None` if it is not (numerically) positive definite — a pivot
    /// `d_j = a_jj - Σ_{k<j} L_jk² d_k` that is not `> 0` (the `L_jj²` of `LLᵀ`) — or if the
    /// pivots are too unbalanced, `min d < N·ε·max d` (the same test as the LU's, so that the
    /// LU decides whether such a matrix is singular), or if the matrix is not finite. `upper` is
    /// `Σ 0·a_ij` over the strict upper triangle: `±0` when it is finite, NaN otherwise.
    ///
    /// The finiteness test costs nothing on the lower triangle: with every `d_k` finite and
    /// positive, a non-finite `a_jk` (`k < j`) gives a non-finite `L_jk`, hence `d_j = -∞` or
    /// NaN, which fails `d_j > 0`; a non-finite `a_jj` gives a non-finite `d_j` (`+∞` is caught
    /// by the accumulated `0·d_j`).
    ///
    /// Why `LDLᵀ`: the factorization and the substitutions are chains of dependent operations
    /// (each pivot waits for the previous column), so a small system's solve is latency-bound.
    /// `LLᵀ` puts a square root and a division on the chain at every column and a division (or a
    /// multiplication by `1/L_jj`) at every step of both substitutions; `LDLᵀ` has one division
    /// per column and unit-diagonal substitutions whose `D⁻¹` scaling is off the chain.
    // Plain index loops over `const` bounds: LLVM unrolls them completely at small `N` and
    // proves every index in bounds; they read as the formulas.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    pub(super) fn factor_with(a: impl Fn(usize, usize) -> f64, upper: f64) -> Option<Self> {
        let mut l = [[0.0; N]; N];
        let mut dinv = [0.0; N];
        let mut non_finite = upper;
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for j in 0..N {
            // u_k = L_jk d_k, k < j.
            let mut u = [0.0; N];
            for k in 0..j {
                let mut s = a(j, k);
                for m in 0..k {
                    s -= u[m] * l[k][m];
                }
                u[k] = s;
                l[j][k] = s * dinv[k];
            }
            let mut dj = a(j, j);
            for k in 0..j {
                dj -= u[k] * l[j][k];
            }
            // `d > 0` fails for NaN too; `+∞` is caught by `non_finite`.
            if dj.partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater) {
                return None;
            }
            non_finite += 0.0 * dj;
            dinv[j] = 1.0 / dj;
            // Positive, not NaN: these selects are `f64::min`/`max` without their NaN handling.
            lo = if dj < lo { dj } else { lo };
            hi = if dj > hi { dj } else { hi };
        }
        if non_finite == 0.0 && (N == 0 || lo >= singular_threshold(N) * hi) {
            Some(Self { l, dinv })
        } else {
            None
        }
    }

    /// Overwrite `b` by `A⁻¹ b`: `L y = b`, `z = D⁻¹ y`, then `Lᵀ x = z`.
    #[allow(clippy::needless_range_loop)]
    #[inline]
    pub(super) fn solve(&self, b: &mut [f64; N]) {
        let l = &self.l;
        for i in 0..N {
            let mut s = b[i];
            for k in 0..i {
                s -= b[k] * l[i][k];
            }
            b[i] = s;
        }
        for i in 0..N {
            b[i] *= self.dinv[i];
        }
        for i in (0..N).rev() {
            b[i] -= dot_below(l, b, i);
        }
    }
}

/// `Σ_{r>i} L_ri x_r` (column `i` of `L` below the diagonal, times `x`), summed like
/// `nalgebra`'s `dot` on a dynamically sized view: eight partial sums over the whole blocks of
/// eight, then the rest in order. For `N ≤ 8` there is no whole block and this is a plain sum
/// from `0.0`.
#[inline]
fn dot_below<const N: usize>(l: &[[f64; N]; N], x: &[f64; N], i: usize) -> f64 {
    let mut r = i + 1;
    let mut res = 0.0;
    if N >= 9 {
        let mut acc = [0.0f64; 8];
        while N - r >= 8 {
            for (k, acc_k) in acc.iter_mut().enumerate() {
                *acc_k += l[r + k][i] * x[r + k];
            }
            r += 8;
        }
        res += acc[0] + acc[4];
        res += acc[1] + acc[5];
        res += acc[2] + acc[6];
        res += acc[3] + acc[7];
    }
    while r < N {
        res += l[r][i] * x[r];
        r += 1;
    }
    res
}
