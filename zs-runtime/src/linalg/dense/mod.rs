//! The dense backend of the solve `(M + s·H) a = b` of a linearly-implicit step, `M` the
//! diagonal mass matrix, `H` a symmetric Hessian and `s = βh²` (Z&S eq. 3; Z&Ss eq. 18), for the
//! fixed-size systems.
//!
//! Everything lives on the stack (`[[f64; N]; N]` arrays), so a solve allocates nothing.
//!
//! Strategy ([`solve_shifted`], what every other entry point is a case of):
//! 1. Cholesky `A = LDLᵀ` (`cholesky.rs`). `M + βh²H` is SPD whenever `H` is positive
//!    semi-definite (convex potentials) or `βh²` is small.
//! 2. If Cholesky fails — the matrix is indefinite, which does happen on non-convex potentials
//!    such as the penalized double pendulum — or its pivots are too unbalanced
//!    (`min d < N·ε · max d`), fall back to LU with partial (row) pivoting (`lu.rs`).
//! 3. If the LU has a zero pivot, or the ratio of its smallest to its largest pivot magnitude is
//!    below `N·ε`, the matrix is singular to working precision: [`SolveFailure::Singular`].
//! 4. Optionally ([`SolveOptions::max_condition`], off by default), a matrix that was factored
//!    but whose estimated 1-norm condition number `κ̂₁(A) = ‖A‖₁·est‖A⁻¹‖₁` exceeds a
//!    user-set limit is rejected as near-singular: [`SolveFailure::IllConditioned`]. The estimate
//!    is Hager's method as refined by Higham (Higham 1988, Algorithm 4.1).
//!
//! The matrix `M + sH` is never built on the Cholesky path: the factorization reads
//! `m_i + s·h_ii` and `s·h_ij` from the lower triangle of `H` as it factors, in place on the
//! right-hand side. The finiteness checks are folded in: a factorization that succeeds proves the
//! lower triangle finite, and a non-finite right-hand side always gives a non-finite solution,
//! so only the strict upper triangle, the pivots and the solution are tested, without a branch
//! per entry. The Cholesky is `nalgebra::Cholesky`'s left-to-right algorithm with each pivot's
//! reciprocal computed once (its result differs from `nalgebra`'s in the last bits; the tests
//! check the factor against `nalgebra`'s to `1e-14` and the backward error of the solve).

mod cholesky;
pub(crate) mod lu;
#[cfg(test)]
mod tests;

use cholesky::Cholesky;
use lu::Lu;

use super::{
    Factorization, Operand, ShiftedSolve, SolveFailure, SolveOptions, inverse_norm_estimate,
};

/// The dense backend for fixed sizes: [`solve_shifted`] on `[[f64; N]; N]`, on the stack. It has
/// no state: there is no symbolic phase for a dense `N × N` matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DenseSolver<const N: usize>;

impl<const N: usize> ShiftedSolve<[f64; N]> for DenseSolver<N> {
    type Matrix = [[f64; N]; N];

    #[inline(always)]
    fn solve_shifted(
        &mut self,
        masses: &[f64; N],
        scale: f64,
        hessian: &[[f64; N]; N],
        x: &mut [f64; N],
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        solve_shifted(masses, scale, hessian, x, options)
    }
}

/// Solve `(diag(masses) + scale·hessian) x = b` in place: `x` holds `b` on entry and the
/// solution on success (on failure it is unspecified). The Cholesky attempt reads the lower
/// triangle of `hessian` (the strict upper one is only tested for finiteness), the LU fallback
/// the whole matrix.
///
/// For Z&S (eq. 3) call it with `scale = βh²` and `b = -∇V(x_k)`; the solution is `a_k`.
///
/// # Errors
/// Checked in this order, whichever factorization is used: a non-finite matrix, a non-finite
/// right-hand side, a singular matrix (LU), an ill-conditioned one (if a limit is set), a
/// non-finite solution.
#[inline(always)]
pub fn solve_shifted<const N: usize>(
    masses: &[f64; N],
    scale: f64,
    hessian: &[[f64; N]; N],
    x: &mut [f64; N],
    options: &SolveOptions,
) -> Result<Factorization, SolveFailure> {
    let mut upper = 0.0;
    for (i, row) in hessian.iter().enumerate() {
        for v in &row[i + 1..] {
            upper += 0.0 * v;
        }
    }
    let entry = |i: usize, j: usize| {
        if i == j {
            masses[i] + scale * hessian[i][i]
        } else {
            scale * hessian[i][j]
        }
    };
    let Some(chol) = Cholesky::factor_with(entry, 0.0 * scale + upper) else {
        return solve_lu(&shifted(masses, scale, hessian), x, options);
    };
    // The factorization succeeded, so the matrix is finite.
    let rhs_finite = zero_if_finite(x) == 0.0;
    if options.max_condition < f64::INFINITY {
        if !rhs_finite {
            return Err(NON_FINITE_RHS);
        }
        check_cholesky_condition(
            &shifted(masses, scale, hessian),
            chol,
            options.max_condition,
        )?;
    }
    chol.solve(x);
    finish(x, rhs_finite, Factorization::Cholesky)
}

/// Solve `a x = b` in place for a symmetric `a`: [`solve_shifted`] with no masses and scale 1
/// (the same operations on the same values).
///
/// # Errors
/// As [`solve_shifted`].
#[inline]
pub fn solve<const N: usize>(
    a: &[[f64; N]; N],
    x: &mut [f64; N],
    options: &SolveOptions,
) -> Result<Factorization, SolveFailure> {
    solve_shifted(&[0.0; N], 1.0, a, x, options)
}

/// Solve the general (not necessarily symmetric) `a x = b` in place by LU with partial pivoting
/// (the Newton matrix `G(Q) M⁻¹ G(q_n)ᵀ` of SHAKE): [`solve`] would attempt a Cholesky, which
/// reads only the lower triangle.
///
/// # Errors
/// A singular `a` ([`SolveFailure::Singular`]) or a non-finite solution.
pub fn solve_general<const N: usize>(
    a: &[[f64; N]; N],
    x: &mut [f64; N],
) -> Result<(), SolveFailure> {
    Lu::factor(a)?.solve(x);
    finish(x, true, Factorization::Lu).map(|_| ())
}

/// Estimate of the 1-norm condition number `κ₁(a) = ‖a‖₁‖a⁻¹‖₁` of a symmetric matrix, NaN for
/// a non-finite one, `+∞` for one singular to working precision. Costs one factorization and a
/// few `O(N²)` solves; never overestimates (up to rounding).
pub fn condition_estimate<const N: usize>(a: &[[f64; N]; N]) -> f64 {
    if !a.iter().all(|row| row.iter().all(|v| v.is_finite())) {
        return f64::NAN;
    }
    let upper = 0.0;
    if let Some(chol) = Cholesky::factor_with(|i, j| a[i][j], upper) {
        return condition_with(a, |x| chol.solve(x));
    }
    match Lu::factor(a) {
        Ok(lu) => condition_with(a, |x| lu.solve(x)),
        Err(_) => f64::INFINITY,
    }
}

/// `M + s·H` as a row-major array (for the LU fallback and the condition estimate).
fn shifted<const N: usize>(
    masses: &[f64; N],
    scale: f64,
    hessian: &[[f64; N]; N],
) -> [[f64; N]; N] {
    core::array::from_fn(|i| {
        core::array::from_fn(|j| {
            let d = if i == j { masses[i] } else { 0.0 };
            d + scale * hessian[i][j]
        })
    })
}

/// The condition-limit check of the Cholesky path. Out of line, and taking the factor by value
/// (a copy): the path without a limit does not pay for it, and the factor never escapes the
/// solve, so it can stay in registers.
#[inline(never)]
fn check_cholesky_condition<const N: usize>(
    a: &[[f64; N]; N],
    chol: Cholesky<N>,
    limit: f64,
) -> Result<(), SolveFailure> {
    reject_ill_conditioned::<N>(condition_with(a, |x| chol.solve(x)), limit)
}

/// The rest of a solve when the Cholesky factorization failed: the matrix is indefinite, its
/// pivots are ill-balanced (the LU decides whether it is singular), or it is not finite. `x`
/// holds the right-hand side and receives the solution. Out of line, to keep the Cholesky path
/// small.
#[inline(never)]
fn solve_lu<const N: usize>(
    a: &[[f64; N]; N],
    x: &mut [f64; N],
    options: &SolveOptions,
) -> Result<Factorization, SolveFailure> {
    if !a.iter().all(|row| row.iter().all(|v| v.is_finite())) {
        return Err(NON_FINITE_MATRIX);
    }
    if !x.iter().all(|v| v.is_finite()) {
        return Err(NON_FINITE_RHS);
    }
    let lu = Lu::factor(a)?;
    if options.max_condition < f64::INFINITY {
        let condition = condition_with(a, |x| lu.solve(x));
        reject_ill_conditioned::<N>(condition, options.max_condition)?;
    }
    lu.solve(x);
    finish(x, true, Factorization::Lu)
}

pub(super) const NON_FINITE_MATRIX: SolveFailure = SolveFailure::NonFinite(Operand::Matrix);
pub(super) const NON_FINITE_RHS: SolveFailure = SolveFailure::NonFinite(Operand::RightHandSide);

/// `Σ 0·x_i`: `±0` if every `x_i` is finite, NaN otherwise (`0·∞` is NaN, and a NaN survives
/// the sum). A finiteness test without a branch per entry.
#[inline]
fn zero_if_finite<const N: usize>(x: &[f64; N]) -> f64 {
    let mut acc = 0.0;
    for v in x {
        acc += 0.0 * v;
    }
    acc
}

fn reject_ill_conditioned<const N: usize>(condition: f64, limit: f64) -> Result<(), SolveFailure> {
    // `!(κ ≤ limit)`: a NaN estimate is rejected too.
    if condition <= limit {
        Ok(())
    } else {
        Err(SolveFailure::IllConditioned {
            n: N,
            condition,
            limit,
        })
    }
}

/// `‖a‖₁ · est(‖a⁻¹‖₁)` with `solve(x)` overwriting `x` by `a⁻¹x` (`a` symmetric, so
/// `a⁻ᵀ = a⁻¹`). Out of line, to keep the solve without a condition limit small.
#[inline(never)]
fn condition_with<const N: usize>(a: &[[f64; N]; N], solve: impl Fn(&mut [f64; N])) -> f64 {
    if N == 0 {
        return 1.0;
    }
    let mut a_norm = 0.0f64;
    for j in 0..N {
        let mut col = 0.0;
        for row in a {
            col += row[j].abs();
        }
        a_norm = a_norm.max(col);
    }
    let (mut x, mut sign, mut z) = ([0.0; N], [0.0; N], [0.0; N]);
    let solve_slice = |v: &mut [f64]| {
        let v: &mut [f64; N] = v.try_into().expect("a vector of the system's size");
        solve(v);
    };
    a_norm * inverse_norm_estimate(N, solve_slice, &mut x, &mut sign, &mut z)
}

/// `Ok(how)` if the solution is finite. Otherwise the error: a non-finite right-hand side
/// (`rhs_finite = false`; on the Cholesky path it is only tested here: it always gives a
/// non-finite solution, because the accepted factor is finite with a positive diagonal), or an
/// overflow in the solve.
#[inline]
fn finish<const N: usize>(
    x: &[f64; N],
    rhs_finite: bool,
    how: Factorization,
) -> Result<Factorization, SolveFailure> {
    if zero_if_finite(x) == 0.0 {
        Ok(how)
    } else if !rhs_finite {
        Err(NON_FINITE_RHS)
    } else {
        Err(SolveFailure::NonFinite(Operand::Solution))
    }
}
