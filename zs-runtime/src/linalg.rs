//! The one linear solve of a linearly-implicit step: `(M + s·H) a = b` with `M` the diagonal
//! mass matrix, `H` a symmetric Hessian and `s = βh²` (Z&S eq. 3, third line; Z&Ss eq. 18).
//!
//! Everything lives on the stack (`nalgebra::SMatrix<f64, N, N>`), so a solve allocates nothing.
//!
//! Strategy:
//! 1. Cholesky (`nalgebra::Cholesky`). `M + βh²H` is SPD whenever `H` is positive semi-definite
//!    (convex potentials) or `βh²` is small.
//! 2. If Cholesky fails — the matrix is indefinite, which does happen on non-convex potentials
//!    such as the penalized double pendulum — or its pivots are too unbalanced, fall back to LU
//!    with partial (row) pivoting.
//! 3. If the LU has a zero pivot, or the ratio of its smallest to its largest pivot magnitude is
//!    below `N·ε`, the matrix is singular to working precision: [`SolveFailure::Singular`]
//!    (turned into [`StepError::SingularMatrix`] by the integrators).
//!
//! The LU is hand-written rather than `nalgebra`'s `lu()`: for a generic `const N` the latter
//! requires the bound `Const<N>: DimMin<Const<N>>`, which only holds for concrete `N` and would
//! leak into every generic function that steps an integrator. It is the same algorithm (Doolittle
//! with partial pivoting, in place, on the stack).

use nalgebra::{SMatrix, SVector};

use crate::StepError;

/// Which factorization solved the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Factorization {
    /// Cholesky: the matrix was symmetric positive definite.
    Cholesky,
    /// LU with partial pivoting: Cholesky failed (indefinite matrix) or was ill-balanced.
    Lu,
}

/// Why [`solve_shifted`] failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SolveFailure {
    /// The matrix is singular to working precision: a zero pivot, or
    /// `pivot / max_pivot < N·ε` in the pivoted LU.
    Singular {
        /// Dimension.
        n: usize,
        /// Smallest pivot magnitude.
        pivot: f64,
        /// Largest pivot magnitude.
        max_pivot: f64,
    },
    /// A non-finite value in the matrix, the right-hand side or the solution.
    NonFinite {
        /// Which one (`"linear system matrix"`, `"right-hand side"`, `"linear solve solution"`).
        what: &'static str,
    },
}

impl SolveFailure {
    /// The [`StepError`] of step `step` started at time `t`.
    pub fn at(self, step: u64, t: f64) -> StepError {
        match self {
            SolveFailure::Singular {
                n,
                pivot,
                max_pivot,
            } => StepError::SingularMatrix {
                step,
                t,
                n,
                pivot,
                max_pivot,
            },
            SolveFailure::NonFinite { what } => StepError::NonFinite { step, t, what },
        }
    }
}

/// Relative pivot threshold below which a matrix is declared singular: `N·ε`.
#[inline]
pub fn singular_threshold(n: usize) -> f64 {
    n.max(1) as f64 * f64::EPSILON
}

/// Solve `(diag(masses) + scale·hessian) x = rhs` on the stack.
///
/// For Z&S (eq. 3) call it with `scale = βh²` and `rhs = -∇V(x_k)`; the solution is `a_k`.
/// Only the lower triangle of `hessian` is read by the Cholesky attempt, the whole matrix by the
/// LU fallback (the Hessians here are symmetric, so this makes no difference).
///
/// Returns the solution and the factorization that produced it.
pub fn solve_shifted<const N: usize>(
    masses: &[f64; N],
    scale: f64,
    hessian: &[[f64; N]; N],
    rhs: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    let a = SMatrix::<f64, N, N>::from_fn(|i, j| {
        let d = if i == j { masses[i] } else { 0.0 };
        d + scale * hessian[i][j]
    });
    solve_matrix(a, rhs)
}

/// Solve `a x = rhs` for a (symmetric) matrix `a`: Cholesky, falling back to pivoted LU.
/// The building block of [`solve_shifted`].
pub fn solve_matrix<const N: usize>(
    a: SMatrix<f64, N, N>,
    rhs: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    if !a.iter().all(|x| x.is_finite()) {
        return Err(SolveFailure::NonFinite {
            what: "linear system matrix",
        });
    }
    if !rhs.iter().all(|x| x.is_finite()) {
        return Err(SolveFailure::NonFinite {
            what: "right-hand side",
        });
    }
    let tol = singular_threshold(N);

    if let Some(chol) = a.cholesky() {
        // The pivots of the (LDLᵀ-equivalent) elimination are L_ii².
        let l = chol.l_dirty();
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for i in 0..N {
            let p = l[(i, i)] * l[(i, i)];
            lo = lo.min(p);
            hi = hi.max(p);
        }
        if N == 0 || (lo > 0.0 && lo >= tol * hi) {
            let mut b = SVector::<f64, N>::from_column_slice(rhs);
            chol.solve_mut(&mut b);
            return finish(&b, Factorization::Cholesky);
        }
        // Ill-balanced pivots: let the LU decide whether it is singular.
    }

    let mut b = SVector::<f64, N>::from_column_slice(rhs);
    lu_solve_in_place(a, &mut b)?;
    finish(&b, Factorization::Lu)
}

fn finish<const N: usize>(
    b: &SVector<f64, N>,
    how: Factorization,
) -> Result<([f64; N], Factorization), SolveFailure> {
    let x: [f64; N] = core::array::from_fn(|i| b[i]);
    if x.iter().all(|v| v.is_finite()) {
        Ok((x, how))
    } else {
        Err(SolveFailure::NonFinite {
            what: "linear solve solution",
        })
    }
}

/// In-place LU with partial pivoting (Doolittle), then forward/back substitution into `b`.
/// Fails with [`SolveFailure::Singular`] on a zero pivot or a pivot ratio below `N·ε`.
fn lu_solve_in_place<const N: usize>(
    mut a: SMatrix<f64, N, N>,
    b: &mut SVector<f64, N>,
) -> Result<(), SolveFailure> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for k in 0..N {
        // Partial pivoting: the largest |a_ik| for i ≥ k.
        let mut p = k;
        let mut best = a[(k, k)].abs();
        for i in k + 1..N {
            let v = a[(i, k)].abs();
            if v > best {
                best = v;
                p = i;
            }
        }
        lo = lo.min(best);
        hi = hi.max(best);
        if best == 0.0 {
            // Exactly singular: keep eliminating nothing, report below with the final `hi`.
            continue;
        }
        if p != k {
            a.swap_rows(k, p);
            b.swap_rows(k, p);
        }
        let pivot = a[(k, k)];
        for i in k + 1..N {
            let m = a[(i, k)] / pivot;
            a[(i, k)] = m;
            if m != 0.0 {
                for j in k + 1..N {
                    a[(i, j)] -= m * a[(k, j)];
                }
                b[i] -= m * b[k];
            }
        }
    }
    if N > 0 && (lo == 0.0 || lo < singular_threshold(N) * hi || !hi.is_finite()) {
        return Err(SolveFailure::Singular {
            n: N,
            pivot: lo,
            max_pivot: hi,
        });
    }
    // Back substitution with U (forward substitution with the unit L was done above).
    for i in (0..N).rev() {
        let mut s = b[i];
        for j in i + 1..N {
            s -= a[(i, j)] * b[j];
        }
        b[i] = s / a[(i, i)];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn residual<const N: usize>(
        m: &[f64; N],
        s: f64,
        h: &[[f64; N]; N],
        x: &[f64; N],
        b: &[f64; N],
    ) -> f64 {
        (0..N)
            .map(|i| {
                let ax: f64 = m[i] * x[i] + (0..N).map(|j| s * h[i][j] * x[j]).sum::<f64>();
                (ax - b[i]).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn spd_uses_cholesky() {
        let m = [1.0, 2.0, 3.0];
        let h = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let b = [1.0, -2.0, 0.5];
        let (x, how) = solve_shifted(&m, 0.1, &h, &b).unwrap();
        assert_eq!(how, Factorization::Cholesky);
        assert!(residual(&m, 0.1, &h, &x, &b) < 1e-14, "{x:?}");
    }

    #[test]
    fn indefinite_falls_back_to_lu() {
        // M + H has eigenvalues of both signs: Cholesky must fail, LU must solve it.
        let m = [1.0, 1.0];
        let h = [[0.0, 3.0], [3.0, 0.0]];
        let b = [1.0, 2.0];
        let (x, how) = solve_shifted(&m, 1.0, &h, &b).unwrap();
        assert_eq!(how, Factorization::Lu);
        assert!(residual(&m, 1.0, &h, &x, &b) < 1e-14, "{x:?}");
        // Negative-definite also goes to LU.
        let h = [[-5.0, 0.0], [0.0, -7.0]];
        let (x, how) = solve_shifted(&m, 1.0, &h, &b).unwrap();
        assert_eq!(how, Factorization::Lu);
        assert!((x[0] + 0.25).abs() < 1e-15 && (x[1] + 2.0 / 6.0).abs() < 1e-15);
    }

    #[test]
    fn lu_pivots_when_leading_entry_is_zero() {
        // a_00 = 0 exactly: LU without pivoting would divide by zero.
        let m = [1.0, 1.0, 1.0];
        let h = [[-1.0, 2.0, 0.0], [2.0, 1.0, 1.0], [0.0, 1.0, -3.0]];
        let b = [1.0, 0.0, -1.0];
        let (x, how) = solve_shifted(&m, 1.0, &h, &b).unwrap();
        assert_eq!(how, Factorization::Lu);
        assert!(residual(&m, 1.0, &h, &x, &b) < 1e-14, "{x:?}");
    }

    #[test]
    fn singular_is_reported() {
        // 1 + 1·(-1) = 0 exactly in the first coordinate.
        let m = [1.0, 1.0];
        let h = [[-1.0, 0.0], [0.0, 1.0]];
        match solve_shifted(&m, 1.0, &h, &[1.0, 1.0]) {
            Err(SolveFailure::Singular {
                n,
                pivot,
                max_pivot,
            }) => {
                assert_eq!(n, 2);
                assert_eq!(pivot, 0.0);
                assert_eq!(max_pivot, 2.0);
            }
            other => panic!("expected Singular, got {other:?}"),
        }
        // Rank-deficient but no zero entry on the diagonal: [[2, 1], [4, 2]] after the shift.
        let h = [[1.0, 1.0], [4.0, 1.0]];
        assert!(matches!(
            solve_shifted(&m, 1.0, &h, &[1.0, 1.0]),
            Err(SolveFailure::Singular { .. })
        ));
        // SPD but singular to working precision: pivots ε and 1001, ratio ≈ 2e-19 < 2ε. Cholesky
        // succeeds, its pivot check rejects it, and the LU reports it.
        let h = [[-1.0 + f64::EPSILON, 0.0], [0.0, 1e3]];
        assert!(matches!(
            solve_shifted(&m, 1.0, &h, &[1.0, 1.0]),
            Err(SolveFailure::Singular { .. })
        ));
    }

    #[test]
    fn non_finite_inputs_are_reported() {
        let m = [1.0, 1.0];
        let h = [[f64::NAN, 0.0], [0.0, 1.0]];
        assert_eq!(
            solve_shifted(&m, 1.0, &h, &[1.0, 1.0]),
            Err(SolveFailure::NonFinite {
                what: "linear system matrix"
            })
        );
        let h = [[1.0, 0.0], [0.0, 1.0]];
        assert_eq!(
            solve_shifted(&m, 1.0, &h, &[f64::INFINITY, 1.0]),
            Err(SolveFailure::NonFinite {
                what: "right-hand side"
            })
        );
        // Finite inputs, overflowing solution.
        let r = solve_shifted(&[0.5, 0.5], 0.0, &h, &[f64::MAX, 1.0]);
        assert_eq!(
            r,
            Err(SolveFailure::NonFinite {
                what: "linear solve solution"
            })
        );
    }
}
