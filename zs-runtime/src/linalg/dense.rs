//! The dense backend of the solve `(M + s·H) a = b` of a linearly-implicit step, `M` the
//! diagonal mass matrix, `H` a symmetric Hessian and `s = βh²` (Z&S eq. 3; Z&Ss eq. 18), for the
//! fixed-size systems.
//!
//! Everything lives on the stack (`[[f64; N]; N]` arrays), so a solve allocates nothing.
//!
//! Strategy:
//! 1. Cholesky `A = LLᵀ`. `M + βh²H` is SPD whenever `H` is positive semi-definite
//!    (convex potentials) or `βh²` is small.
//! 2. If Cholesky fails — the matrix is indefinite, which does happen on non-convex potentials
//!    such as the penalized double pendulum — or its pivots are too unbalanced
//!    (`min L_ii² < N·ε · max L_ii²`), fall back to LU with partial (row) pivoting.
//! 3. If the LU has a zero pivot, or the ratio of its smallest to its largest pivot magnitude is
//!    below `N·ε`, the matrix is singular to working precision: [`SolveFailure::Singular`]
//!    (turned into [`crate::SolveFailure::Singular`] by the integrators).
//! 4. Optionally ([`SolveOptions::max_condition`], off by default), a matrix that was factored
//!    but whose estimated 1-norm condition number `κ̂₁(A) = ‖A‖₁·est‖A⁻¹‖₁` exceeds a
//!    user-set limit is rejected as near-singular: [`SolveFailure::IllConditioned`] (turned into
//!    [`crate::SolveFailure::IllConditioned`]). The estimate is Hager's method as refined by Higham
//!    (*ACM TOMS* 14, 1988, Algorithm 4.1, the algorithm of LAPACK's `xLACON`): a few solves
//!    with the factorization already at hand, `O(N²)` each, so it costs a fraction of the
//!    `O(N³)` factorization; it never exceeds `κ₁` and is rarely below `κ₁/3` (measured on
//!    random symmetric matrices, N = 2..9: worst ratio 0.44, exact in 48-91% of the cases).
//!
//! Both factorizations are hand-written, in place on `[[f64; N]; N]`, with plain index loops over
//! `const` bounds that LLVM unrolls completely at the small `N` of mechanical systems.
//!
//! * The Cholesky is `nalgebra::Cholesky`'s left-to-right algorithm (`L_jk = (a_jk −
//!   Σ_{m<k} L_km L_jm) / L_kk`, substitutions with `L` then `Lᵀ`) with one change: each pivot's
//!   reciprocal `1/L_kk` is computed once and every division by `L_kk` becomes a multiplication.
//!   The solve is latency-bound (each step of the substitutions waits for the previous one), and
//!   a multiplication's latency is a fraction of a division's: this is what makes the generated
//!   Z&S step as fast as one written by hand (BENCHMARKS.md, "Generated vs hand-written step").
//!   The result differs from `nalgebra`'s in the last bits; the tests check the factor against
//!   `nalgebra`'s to `1e-14` and the backward error of the solve. The matrix `M + sH` is never
//!   built: [`solve_shifted_in_place`] reads `m_i + s·h_ii` and `s·h_ij` from the lower triangle
//!   of `H` as it factors, in place on the right-hand side. The finiteness checks are folded
//!   in: a factorization that succeeds proves the lower triangle finite (see
//!   `Cholesky::factor_with`), and a non-finite right-hand side always gives a non-finite
//!   solution, so only the strict upper triangle, the pivots and the solution are tested,
//!   without a branch per entry.
//! * The LU: for a generic `const N`, `nalgebra`'s `lu()` requires the bound
//!   `Const<N>: DimMin<Const<N>>`, which only holds for concrete `N` and would leak into every
//!   generic function that steps an integrator. It is the same algorithm (Doolittle with partial
//!   pivoting, in place, on the stack).
//!
//! The `nalgebra` entry points ([`solve_matrix`], [`condition_estimate`]) stay: they copy the
//! [`SMatrix`] into an array and share the code above ([`solve_array`]).

use nalgebra::SMatrix;

use super::{singular_threshold, Factorization, Operand, ShiftedSolve, SolveFailure, SolveOptions};

/// The dense backend for fixed sizes: [`solve_shifted_with`] on `[[f64; N]; N]`, on the stack.
/// It has no state: there is no symbolic phase for a dense `N × N` matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DenseSolver<const N: usize>;

impl<const N: usize> ShiftedSolve<[f64; N]> for DenseSolver<N> {
    #[inline(always)]
    fn solve_shifted(
        &mut self,
        masses: &[f64; N],
        scale: f64,
        hessian: &[[f64; N]; N],
        x: &mut [f64; N],
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        solve_shifted_in_place(masses, scale, hessian, x, options)
    }
}

/// Solve the general (not necessarily symmetric) `a x = b` by LU with partial pivoting on the
/// stack (the Newton matrix `G(Q) M⁻¹ G(q_n)ᵀ` of SHAKE). [`solve_array`] is not used there: its
/// Cholesky attempt reads only the lower triangle, right for the symmetric matrices it is meant
/// for and wrong for a nonsymmetric one. Singular (zero pivot, or pivot ratio below `m·ε`) →
/// [`SolveFailure::Singular`].
pub fn lu_solve_general<const M: usize>(
    mut a: [[f64; M]; M],
    mut b: [f64; M],
) -> Result<[f64; M], SolveFailure> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for k in 0..M {
        let mut p = k;
        for i in k + 1..M {
            if a[i][k].abs() > a[p][k].abs() {
                p = i;
            }
        }
        let best = a[p][k].abs();
        lo = lo.min(best);
        hi = hi.max(best);
        if best == 0.0 || !best.is_finite() {
            return Err(SolveFailure::Singular {
                n: M,
                pivot: best,
                max_pivot: hi,
            });
        }
        a.swap(k, p);
        b.swap(k, p);
        for i in k + 1..M {
            let f = a[i][k] / a[k][k];
            let row_k = a[k];
            for (x, y) in a[i][k..].iter_mut().zip(&row_k[k..]) {
                *x -= f * y;
            }
            b[i] -= f * b[k];
        }
    }
    if M > 0 && lo < singular_threshold(M) * hi {
        return Err(SolveFailure::Singular {
            n: M,
            pivot: lo,
            max_pivot: hi,
        });
    }
    for i in (0..M).rev() {
        let s: f64 = (i + 1..M).map(|j| a[i][j] * b[j]).sum();
        b[i] = (b[i] - s) / a[i][i];
    }
    if b.iter().all(|x| x.is_finite()) {
        Ok(b)
    } else {
        Err(SolveFailure::NonFinite(Operand::Solution))
    }
}

/// Solve `(diag(masses) + scale·hessian) x = rhs` on the stack.
///
/// For Z&S (eq. 3) call it with `scale = βh²` and `rhs = -∇V(x_k)`; the solution is `a_k`.
/// The Cholesky attempt computes with the lower triangle of `hessian` only (the strict upper one
/// is only tested for finiteness), the LU fallback with the whole matrix (the Hessians here are
/// symmetric, so this makes no difference).
///
/// Returns the solution and the factorization that produced it.
pub fn solve_shifted<const N: usize>(
    masses: &[f64; N],
    scale: f64,
    hessian: &[[f64; N]; N],
    rhs: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    solve_shifted_with(masses, scale, hessian, rhs, &SolveOptions::default())
}

/// [`solve_shifted`] with options (a condition-number limit).
#[inline]
pub fn solve_shifted_with<const N: usize>(
    masses: &[f64; N],
    scale: f64,
    hessian: &[[f64; N]; N],
    rhs: &[f64; N],
    options: &SolveOptions,
) -> Result<([f64; N], Factorization), SolveFailure> {
    let mut x = *rhs;
    let how = solve_shifted_in_place(masses, scale, hessian, &mut x, options)?;
    Ok((x, how))
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

/// [`solve_shifted_with`] in place: `x` holds the right-hand side on entry and the solution on
/// success (on failure it is unspecified). What the integrators call ([`super::DenseSolver`]).
///
/// Errors are checked in the order of [`solve_array_with`].
#[inline(always)]
pub fn solve_shifted_in_place<const N: usize>(
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
        return solve_lu_in_place(&shifted(masses, scale, hessian), x, options);
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
    finish_in_place(x, rhs_finite, Factorization::Cholesky)
}

/// Solve `a x = rhs` for a symmetric matrix `a`: Cholesky, falling back to pivoted LU.
/// The building block of [`solve_shifted`].
pub fn solve_matrix<const N: usize>(
    a: SMatrix<f64, N, N>,
    rhs: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    solve_matrix_with(a, rhs, &SolveOptions::default())
}

/// [`solve_matrix`] with options (a condition-number limit).
pub fn solve_matrix_with<const N: usize>(
    a: SMatrix<f64, N, N>,
    rhs: &[f64; N],
    options: &SolveOptions,
) -> Result<([f64; N], Factorization), SolveFailure> {
    solve_array_with(&to_rows(&a), rhs, options)
}

/// [`solve_matrix`] on a row-major array, `a[i][j] = A_ij`.
pub fn solve_array<const N: usize>(
    a: &[[f64; N]; N],
    rhs: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    solve_array_with(a, rhs, &SolveOptions::default())
}

/// [`solve_matrix_with`] on a row-major array, `a[i][j] = A_ij`: the implementation of all the
/// solves of this module.
///
/// Errors are checked in this order, whichever factorization is used: a non-finite matrix, a
/// non-finite right-hand side, a singular matrix (LU), an ill-conditioned one (if a limit is
/// set), a non-finite solution.
pub fn solve_array_with<const N: usize>(
    a: &[[f64; N]; N],
    rhs: &[f64; N],
    options: &SolveOptions,
) -> Result<([f64; N], Factorization), SolveFailure> {
    let mut x = *rhs;
    let Some(chol) = Cholesky::factor(a) else {
        let how = solve_lu_in_place(a, &mut x, options)?;
        return Ok((x, how));
    };
    // The factorization succeeded, so the matrix is finite.
    let rhs_finite = zero_if_finite(rhs) == 0.0;
    if options.max_condition < f64::INFINITY {
        if !rhs_finite {
            return Err(NON_FINITE_RHS);
        }
        check_cholesky_condition(a, chol, options.max_condition)?;
    }
    chol.solve(&mut x);
    let how = finish_in_place(&x, rhs_finite, Factorization::Cholesky)?;
    Ok((x, how))
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
    reject_ill_conditioned::<N>(condition_estimate_with(a, |x| chol.solve(x)), limit)
}

/// The rest of a solve when the Cholesky factorization failed: the matrix is indefinite, its
/// pivots are ill-balanced (the LU decides whether it is singular), or it is not finite. `x`
/// holds the right-hand side and receives the solution. Out of line, to keep the Cholesky path
/// small.
#[inline(never)]
fn solve_lu_in_place<const N: usize>(
    a: &[[f64; N]; N],
    x: &mut [f64; N],
    options: &SolveOptions,
) -> Result<Factorization, SolveFailure> {
    if !a.iter().all(all_finite) {
        return Err(NON_FINITE_MATRIX);
    }
    if !all_finite(x) {
        return Err(NON_FINITE_RHS);
    }
    let lu = Lu::factor(a)?;
    if options.max_condition < f64::INFINITY {
        let condition = condition_estimate_with(a, |x| lu.solve(x));
        reject_ill_conditioned::<N>(condition, options.max_condition)?;
    }
    lu.solve(x);
    finish_in_place(x, true, Factorization::Lu)
}

const NON_FINITE_MATRIX: SolveFailure = SolveFailure::NonFinite(Operand::Matrix);
const NON_FINITE_RHS: SolveFailure = SolveFailure::NonFinite(Operand::RightHandSide);

/// The row-major array of an `nalgebra` matrix.
fn to_rows<const N: usize>(a: &SMatrix<f64, N, N>) -> [[f64; N]; N] {
    core::array::from_fn(|i| core::array::from_fn(|j| a[(i, j)]))
}

fn all_finite<const N: usize>(x: &[f64; N]) -> bool {
    x.iter().all(|v| v.is_finite())
}

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

/// Estimate of the 1-norm condition number `κ₁(a) = ‖a‖₁‖a⁻¹‖₁` of a symmetric matrix, or
/// `+∞` if it is singular to working precision (the test of [`solve_matrix`]). Costs one
/// factorization and a few `O(N²)` solves (see the [module docs](self)). Never overestimates
/// (up to rounding).
pub fn condition_estimate<const N: usize>(a: &SMatrix<f64, N, N>) -> f64 {
    condition_estimate_array(&to_rows(a))
}

/// [`condition_estimate`] of a row-major array, `a[i][j] = A_ij`.
pub fn condition_estimate_array<const N: usize>(a: &[[f64; N]; N]) -> f64 {
    if !a.iter().all(all_finite) {
        return f64::NAN;
    }
    if let Some(chol) = Cholesky::factor(a) {
        return condition_estimate_with(a, |x| chol.solve(x));
    }
    match Lu::factor(a) {
        Ok(lu) => condition_estimate_with(a, |x| lu.solve(x)),
        Err(_) => f64::INFINITY,
    }
}

/// `‖a‖₁ · est(‖a⁻¹‖₁)` with `solve(x)` overwriting `x` by `a⁻¹x`: Hager's method with Higham's
/// refinements (Higham 1988, Algorithm 4.1; `a` symmetric, so `a⁻ᵀ = a⁻¹`). Out of line, to
/// keep the solve without a condition limit small.
#[inline(never)]
fn condition_estimate_with<const N: usize>(
    a: &[[f64; N]; N],
    solve: impl Fn(&mut [f64; N]),
) -> f64 {
    if N == 0 {
        return 1.0;
    }
    let norm_1 = |x: &[f64; N]| x.iter().map(|v| v.abs()).sum::<f64>();
    let sign_of = |x: &[f64; N]| x.map(|v| if v >= 0.0 { 1.0 } else { -1.0 });
    // Index of the first entry of largest magnitude (`nalgebra`'s `iamax`).
    let iamax = |x: &[f64; N]| {
        let mut best = 0;
        for i in 1..N {
            if x[i].abs() > x[best].abs() {
                best = i;
            }
        }
        best
    };
    let mut a_norm = 0.0f64;
    for j in 0..N {
        let mut col = 0.0;
        for row in a {
            col += row[j].abs();
        }
        a_norm = a_norm.max(col);
    }
    let n = N as f64;
    if N == 1 {
        let mut x = [1.0; N];
        solve(&mut x);
        return a_norm * x[0].abs();
    }
    // Hager's iteration: maximize ‖a⁻¹x‖₁ over the unit 1-ball, starting from x = e/n.
    let mut x = [1.0 / n; N];
    solve(&mut x);
    let mut est = norm_1(&x);
    let mut sign = sign_of(&x);
    let mut z = sign;
    solve(&mut z);
    let mut j = iamax(&z);
    for _ in 0..4 {
        let mut x = [0.0; N];
        x[j] = 1.0;
        solve(&mut x);
        let est_new = norm_1(&x);
        let new_sign = sign_of(&x);
        if new_sign == sign || est_new <= est {
            est = est.max(est_new);
            break;
        }
        est = est_new;
        sign = new_sign;
        let mut z = sign;
        solve(&mut z);
        let j_new = iamax(&z);
        if j_new == j || z[j_new].abs() <= z[j].abs() {
            break;
        }
        j = j_new;
    }
    // Higham's extra vector x_i = (-1)^i (1 + i/(n-1)) guards against the bad cases of Hager.
    let mut x: [f64; N] = core::array::from_fn(|i| {
        let s = if i % 2 == 0 { 1.0 } else { -1.0 };
        s * (1.0 + i as f64 / (n - 1.0))
    });
    solve(&mut x);
    let alt = 2.0 * norm_1(&x) / (3.0 * n);
    a_norm * est.max(alt)
}

/// `Ok(how)` if the solution is finite. Otherwise the error: a non-finite right-hand side
/// (`rhs_finite = false`; on the Cholesky path it is only tested here: it always gives a
/// non-finite solution, because the accepted factor is finite with a positive diagonal), or an
/// overflow in the solve.
#[inline]
fn finish_in_place<const N: usize>(
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

/// A Cholesky factorization of a symmetric positive definite `A`, in its square-root-free form
/// `A = L D Lᵀ` (`L` unit lower triangular, `D` diagonal: the `LLᵀ` factor is `L D^½`), on the
/// stack: `L` below the diagonal of `l` (row-major, `l[i][j] = L_ij`; the diagonal and the strict
/// upper triangle are unused) and the reciprocal pivots `dinv[j] = 1/D_j`.
#[derive(Clone, Copy)]
struct Cholesky<const N: usize> {
    l: [[f64; N]; N],
    dinv: [f64; N],
}

impl<const N: usize> Cholesky<N> {
    /// Factor a row-major symmetric `a` (its lower triangle; the strict upper one is only
    /// tested for finiteness).
    #[inline]
    fn factor(a: &[[f64; N]; N]) -> Option<Self> {
        let mut upper = 0.0;
        for (i, row) in a.iter().enumerate() {
            for v in &row[i + 1..] {
                upper += 0.0 * v;
            }
        }
        Self::factor_with(|i, j| a[i][j], upper)
    }

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
    fn factor_with(a: impl Fn(usize, usize) -> f64, upper: f64) -> Option<Self> {
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
    fn solve(&self, b: &mut [f64; N]) {
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

/// An LU factorization with partial pivoting, `P a = L U`, in place on the stack (row-major):
/// `L` (unit diagonal) below the diagonal of `lu`, `U` on and above it; `swaps[k]` is the row
/// exchanged with row `k` at elimination step `k`.
struct Lu<const N: usize> {
    lu: [[f64; N]; N],
    swaps: [usize; N],
}

// Plain index loops over `const` bounds, as in the Cholesky.
#[allow(clippy::needless_range_loop)]
impl<const N: usize> Lu<N> {
    /// Doolittle with partial pivoting. Fails with [`SolveFailure::Singular`] on a zero pivot
    /// or a pivot ratio below `N·ε`.
    fn factor(a: &[[f64; N]; N]) -> Result<Self, SolveFailure> {
        let mut a = *a;
        let mut swaps = [0usize; N];
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for k in 0..N {
            // Partial pivoting: the largest |a_ik| for i ≥ k.
            let mut p = k;
            let mut best = a[k][k].abs();
            for i in k + 1..N {
                let v = a[i][k].abs();
                if v > best {
                    best = v;
                    p = i;
                }
            }
            swaps[k] = p;
            lo = lo.min(best);
            hi = hi.max(best);
            if best == 0.0 {
                // Exactly singular: keep eliminating nothing, report below with the final `hi`.
                continue;
            }
            if p != k {
                a.swap(k, p);
            }
            let pivot = a[k][k];
            for i in k + 1..N {
                let m = a[i][k] / pivot;
                a[i][k] = m;
                if m != 0.0 {
                    for j in k + 1..N {
                        a[i][j] -= m * a[k][j];
                    }
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
        Ok(Self { lu: a, swaps })
    }

    /// Overwrite `b` by `a⁻¹ b`: all the row exchanges, forward substitution with `L`, back
    /// substitution with `U` (the same operations, in the same order per entry, as eliminating
    /// `b` alongside `a`; `L`'s rows are stored in their final order, hence the exchanges first).
    fn solve(&self, b: &mut [f64; N]) {
        let a = &self.lu;
        for k in 0..N {
            let p = self.swaps[k];
            if p != k {
                b.swap(k, p);
            }
        }
        for k in 0..N {
            for i in k + 1..N {
                let m = a[i][k];
                if m != 0.0 {
                    b[i] -= m * b[k];
                }
            }
        }
        for i in (0..N).rev() {
            let mut s = b[i];
            for j in i + 1..N {
                s -= a[i][j] * b[j];
            }
            b[i] = s / a[i][i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::SVector;

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
            Err(SolveFailure::NonFinite(Operand::Matrix))
        );
        let h = [[1.0, 0.0], [0.0, 1.0]];
        assert_eq!(
            solve_shifted(&m, 1.0, &h, &[f64::INFINITY, 1.0]),
            Err(SolveFailure::NonFinite(Operand::RightHandSide))
        );
        // Finite inputs, overflowing solution.
        let r = solve_shifted(&[0.5, 0.5], 0.0, &h, &[f64::MAX, 1.0]);
        assert_eq!(r, Err(SolveFailure::NonFinite(Operand::Solution)));
    }

    /// Exact `κ₁ = ‖A‖₁‖A⁻¹‖₁` through nalgebra's inverse.
    fn exact_condition<const N: usize>(a: &SMatrix<f64, N, N>) -> f64 {
        let norm1 = |m: &SMatrix<f64, N, N>| {
            (0..N)
                .map(|j| (0..N).map(|i| m[(i, j)].abs()).sum::<f64>())
                .fold(0.0, f64::max)
        };
        let inv = a.try_inverse().expect("invertible");
        norm1(a) * norm1(&inv)
    }

    /// xorshift64*: a deterministic stream of uniform numbers in [-1, 1).
    struct Xs(u64);
    impl Xs {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let u = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
            2.0 * (u as f64 / (1u64 << 53) as f64) - 1.0
        }
    }

    fn random_symmetric<const N: usize>(rng: &mut Xs, shift: f64) -> SMatrix<f64, N, N> {
        let mut a = SMatrix::<f64, N, N>::zeros();
        for i in 0..N {
            for j in 0..=i {
                let x = rng.next();
                a[(i, j)] = x;
                a[(j, i)] = x;
            }
            a[(i, i)] += shift;
        }
        a
    }

    /// Over 200 random symmetric matrices (half SPD, half indefinite): the worst `κ̂₁/κ₁` and
    /// the fraction of exact estimates.
    fn estimate_quality<const N: usize>(rng: &mut Xs) -> (f64, f64) {
        let (mut worst, mut exact_count) = (f64::INFINITY, 0);
        for case in 0..200 {
            // Alternate SPD (Cholesky path) and indefinite (LU path) matrices.
            let shift = if case % 2 == 0 { N as f64 + 0.5 } else { 0.0 };
            let a = random_symmetric::<N>(rng, shift);
            let exact = exact_condition(&a);
            let est = condition_estimate(&a);
            // A lower bound, up to rounding.
            assert!(est <= exact * (1.0 + 1e-9), "N = {N}: {est} > {exact}");
            worst = worst.min(est / exact);
            if est >= exact * (1.0 - 1e-9) {
                exact_count += 1;
            }
        }
        (worst, exact_count as f64 / 200.0)
    }

    #[test]
    fn condition_estimate_is_a_tight_lower_bound() {
        let mut rng = Xs(0x9e37_79b9_7f4a_7c15);
        let q = [
            estimate_quality::<2>(&mut rng),
            estimate_quality::<3>(&mut rng),
            estimate_quality::<4>(&mut rng),
            estimate_quality::<6>(&mut rng),
            estimate_quality::<9>(&mut rng),
        ];
        eprintln!("(worst κ̂₁/κ₁, fraction exact), N = 2, 3, 4, 6, 9: {q:?}");
        // Higham (1988): rarely off by more than a factor 3. Measured: worst 0.44-0.64, exact
        // in 91% (N = 2) down to 48% (N = 9) of the cases.
        for (worst, exact) in q {
            assert!(worst >= 1.0 / 3.0 && exact >= 0.4, "{q:?}");
        }
        // Diagonal: exact, κ₁ = max|d| / min|d|.
        let d = SMatrix::<f64, 3, 3>::from_diagonal(&SVector::from([2.0, -1e-6, 5.0]));
        assert_eq!(condition_estimate(&d), 5.0 / 1e-6);
        // Singular: infinite.
        let s = SMatrix::<f64, 2, 2>::new(1.0, 2.0, 2.0, 4.0);
        assert_eq!(condition_estimate(&s), f64::INFINITY);
    }

    #[test]
    fn condition_limit_rejects_near_singular_systems() {
        // M + s·H = diag(1, 1 - (1 - 1e-10)) = diag(1, 1e-10): κ₁ = 1e10, far from singular to
        // working precision (pivot ratio 1e-10 ≫ 2ε), so the default accepts it.
        let m = [1.0, 1.0];
        let h = [[0.0, 0.0], [0.0, -(1.0 - 1e-10)]];
        let b = [1.0, 1.0];
        let (x, how) = solve_shifted(&m, 1.0, &h, &b).unwrap();
        assert_eq!(how, Factorization::Cholesky);
        assert!((x[1] - 1e10).abs() < 1e-3 * 1e10);
        let kappa = 1.0 / (1.0 + -(1.0 - 1e-10));
        match solve_shifted_with(&m, 1.0, &h, &b, &SolveOptions::with_max_condition(1e8)) {
            Err(SolveFailure::IllConditioned {
                n,
                condition,
                limit,
            }) => {
                assert_eq!((n, limit), (2, 1e8));
                assert_eq!(condition, kappa);
            }
            other => panic!("expected IllConditioned, got {other:?}"),
        }
        // A limit above κ accepts it, with the same solution bits as without options.
        let (y, _) =
            solve_shifted_with(&m, 1.0, &h, &b, &SolveOptions::with_max_condition(1e11)).unwrap();
        assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits));
        // The LU path too: an indefinite near-singular matrix [[1, 0], [0, -1e-10]].
        let h = [[0.0, 0.0], [0.0, -(1.0 + 1e-10)]];
        match solve_shifted_with(&m, 1.0, &h, &b, &SolveOptions::with_max_condition(1e8)) {
            Err(SolveFailure::IllConditioned { condition, .. }) => {
                assert_eq!(condition, 1.0 / (1.0 + 1e-10 - 1.0));
            }
            other => panic!("expected IllConditioned, got {other:?}"),
        }
        // The error it becomes.
        let e = SolveFailure::IllConditioned {
            n: 2,
            condition: 1e10,
            limit: 1e8,
        }
        .at(7, 0.7);
        assert_eq!(e.step(), 7);
        assert_eq!(e.code(), "ill-conditioned");
    }

    #[test]
    fn lu_factor_then_solve_matches_elimination_bit_for_bit() {
        // The LU path is bitwise what eliminating the right-hand side alongside gives, checked
        // against a direct transcription of that algorithm (on nalgebra matrices).
        let mut rng = Xs(42);
        for _ in 0..100 {
            let a = random_symmetric::<5>(&mut rng, 0.0);
            let rhs: [f64; 5] = core::array::from_fn(|_| rng.next());
            let mut b = rhs;
            Lu::factor(&to_rows(&a)).unwrap().solve(&mut b);
            let mut m = a;
            let mut c = SVector::<f64, 5>::from_column_slice(&rhs);
            for k in 0..5 {
                let p = (k..5)
                    .max_by(|&i, &j| m[(i, k)].abs().total_cmp(&m[(j, k)].abs()).then(j.cmp(&i)))
                    .unwrap();
                m.swap_rows(k, p);
                c.swap_rows(k, p);
                for i in k + 1..5 {
                    let f = m[(i, k)] / m[(k, k)];
                    m[(i, k)] = f;
                    if f != 0.0 {
                        for j in k + 1..5 {
                            m[(i, j)] -= f * m[(k, j)];
                        }
                        c[i] -= f * c[k];
                    }
                }
            }
            for i in (0..5).rev() {
                let mut s = c[i];
                for j in i + 1..5 {
                    s -= m[(i, j)] * c[j];
                }
                c[i] = s / m[(i, i)];
            }
            assert_eq!(b.map(f64::to_bits), <[f64; 5]>::from(c).map(f64::to_bits));
        }
    }

    /// `B Bᵀ + δ I` with `B` uniform in [-1, 1) and `δ = 10^(-8u)`, `u` uniform in [0, 1): SPD,
    /// with condition numbers up to ~1e9.
    fn random_spd<const N: usize>(rng: &mut Xs) -> SMatrix<f64, N, N> {
        let b = SMatrix::<f64, N, N>::from_fn(|_, _| rng.next());
        let delta = 10f64.powf(-4.0 * (rng.next() + 1.0));
        b * b.transpose() + SMatrix::<f64, N, N>::identity() * delta
    }

    fn norm_inf<const N: usize>(x: &[f64; N]) -> f64 {
        x.iter().fold(0.0, |m, v| m.max(v.abs()))
    }

    /// The decision of the former `solve_matrix`: `nalgebra`'s Cholesky succeeds and its pivots
    /// `L_ii²` pass the ratio test; with the ratio `min/(N·ε·max)` (1 at the threshold).
    fn nalgebra_cholesky_accepted<const N: usize>(
        a: &SMatrix<f64, N, N>,
    ) -> (Option<nalgebra::Cholesky<f64, nalgebra::Const<N>>>, f64) {
        let Some(chol) = a.cholesky() else {
            return (None, f64::NAN);
        };
        let l = chol.l_dirty();
        let p = (0..N).map(|i| l[(i, i)] * l[(i, i)]);
        let lo = p.clone().fold(f64::INFINITY, f64::min);
        let hi = p.fold(0.0, f64::max);
        let ratio = lo / (singular_threshold(N) * hi);
        let ok = N == 0 || (lo > 0.0 && lo >= singular_threshold(N) * hi);
        (ok.then_some(chol), ratio)
    }

    /// On random SPD matrices: the same accept decision as `nalgebra`'s `LLᵀ`; the factor is
    /// `nalgebra`'s (`L_nalgebra = L D^½`) to rounding; the solution has a backward error of a
    /// few ε and agrees with `nalgebra`'s and with the LU's within `κ₁·1e-13`.
    fn cholesky_against_nalgebra_and_lu<const N: usize>(rng: &mut Xs) -> (usize, f64) {
        let mut worst = 0.0f64;
        let mut accepted = 0;
        for _ in 0..200 {
            let a = random_spd::<N>(rng);
            let rows = to_rows(&a);
            let b: [f64; N] = core::array::from_fn(|_| rng.next());
            let ours = Cholesky::factor(&rows);
            let (theirs, _) = nalgebra_cholesky_accepted(&a);
            assert_eq!(ours.is_some(), theirs.is_some(), "N = {N}: {a}");
            let (Some(ours), Some(theirs)) = (ours, theirs) else {
                continue;
            };
            accepted += 1;
            let kappa = exact_condition(&a);
            let l = theirs.l_dirty();
            for j in 0..N {
                let dj = 1.0 / ours.dinv[j];
                let ljj = l[(j, j)];
                assert!(
                    (dj - ljj * ljj).abs() <= 1e-13 * kappa * ljj * ljj,
                    "N = {N}"
                );
                for i in j + 1..N {
                    let ours_ij = ours.l[i][j] * dj.sqrt();
                    let scale = l[(j, j)].abs().max(l[(i, j)].abs());
                    assert!(
                        (ours_ij - l[(i, j)]).abs() <= 1e-13 * kappa * scale,
                        "N = {N}: L[{i}][{j}] {ours_ij} vs {}",
                        l[(i, j)]
                    );
                }
            }
            let mut expected = SVector::<f64, N>::from_column_slice(&b);
            theirs.solve_mut(&mut expected);
            let (x, how) = solve_array(&rows, &b).unwrap();
            assert_eq!(how, Factorization::Cholesky);
            let diff: [f64; N] = core::array::from_fn(|i| x[i] - expected[i]);
            assert!(norm_inf(&diff) <= 1e-13 * kappa * norm_inf(&x), "N = {N}");
            // Backward error ‖b - Ax‖ / (‖A‖‖x‖), ∞-norms.
            let a_norm = (0..N)
                .map(|i| (0..N).map(|j| a[(i, j)].abs()).sum::<f64>())
                .fold(0.0, f64::max);
            let r: [f64; N] =
                core::array::from_fn(|i| b[i] - (0..N).map(|j| a[(i, j)] * x[j]).sum::<f64>());
            let backward = norm_inf(&r) / (a_norm * norm_inf(&x));
            assert!(backward <= 1e-13, "N = {N}: backward error {backward:e}");
            // Against the LU: the forward errors of both are bounded by κ times a few ε.
            let mut y = b;
            Lu::factor(&rows).unwrap().solve(&mut y);
            let diff: [f64; N] = core::array::from_fn(|i| x[i] - y[i]);
            let rel = norm_inf(&diff) / norm_inf(&y);
            assert!(
                rel <= 1e-13 * kappa,
                "N = {N}: {rel:e} > 1e-13·κ, κ = {kappa:e}"
            );
            worst = worst.max(rel / kappa);
        }
        (accepted, worst)
    }

    #[test]
    fn ldlt_is_nalgebras_cholesky_to_rounding_and_agrees_with_lu() {
        let mut rng = Xs(0x2545_f491_4f6c_dd1d);
        let r = [
            cholesky_against_nalgebra_and_lu::<1>(&mut rng),
            cholesky_against_nalgebra_and_lu::<2>(&mut rng),
            cholesky_against_nalgebra_and_lu::<3>(&mut rng),
            cholesky_against_nalgebra_and_lu::<4>(&mut rng),
            cholesky_against_nalgebra_and_lu::<5>(&mut rng),
            cholesky_against_nalgebra_and_lu::<6>(&mut rng),
            cholesky_against_nalgebra_and_lu::<7>(&mut rng),
            cholesky_against_nalgebra_and_lu::<8>(&mut rng),
            cholesky_against_nalgebra_and_lu::<9>(&mut rng),
        ];
        eprintln!("(accepted of 200, worst |x_ldlt - x_lu| / |x_lu| / κ₁), N = 1..9: {r:?}");
        // Nearly all are accepted (δ ≥ 1e-8 keeps the pivot ratio above N·ε).
        assert!(r.iter().all(|&(n, _)| n >= 190), "{r:?}");
    }

    /// On random symmetric matrices — indefinite, SPD, and SPD with one pivot near `N·ε` of
    /// the largest — the `LDLᵀ` is accepted exactly when `nalgebra`'s Cholesky was, except for
    /// matrices whose pivot ratio is within a factor 100 of the threshold: there the smallest
    /// pivot is itself at the rounding level (`~N·ε` relative, computed by cancellation), both
    /// algorithms' values of it are mostly rounding error, and either decision is right; such
    /// a matrix, when accepted, must still be solved with a backward error of a few ε. When not
    /// accepted the solve is the LU's, bit for bit. Returns (LU fallbacks, borderline cases).
    fn fallback_as_before<const N: usize>(rng: &mut Xs) -> (usize, usize) {
        let (mut lu_count, mut borderline) = (0, 0);
        for case in 0..300 {
            let a = match case % 3 {
                0 => random_symmetric::<N>(rng, 0.0),
                1 => random_symmetric::<N>(rng, N as f64 + 0.5),
                _ => {
                    // A v vᵀ + ε-ish: one pivot of relative size around N·ε.
                    let v = SVector::<f64, N>::from_fn(|_, _| rng.next());
                    let tiny = singular_threshold(N) * 10f64.powf(rng.next()) * v.norm_squared();
                    v * v.transpose()
                        + SMatrix::<f64, N, N>::from_diagonal_element(tiny.max(f64::MIN_POSITIVE))
                }
            };
            let rows = to_rows(&a);
            let b: [f64; N] = core::array::from_fn(|_| rng.next());
            let (before, ratio) = nalgebra_cholesky_accepted(&a);
            let ours = Cholesky::factor(&rows).is_some();
            if (1e-2..=1e2).contains(&ratio) {
                borderline += 1;
            } else {
                assert_eq!(ours, before.is_some(), "N = {N}: ratio {ratio}, {a}");
            }
            if ours {
                let (x, how) = solve_array(&rows, &b).unwrap();
                assert_eq!(how, Factorization::Cholesky);
                let a_norm = (0..N)
                    .map(|i| (0..N).map(|j| a[(i, j)].abs()).sum::<f64>())
                    .fold(0.0, f64::max);
                let r: [f64; N] =
                    core::array::from_fn(|i| b[i] - (0..N).map(|j| a[(i, j)] * x[j]).sum::<f64>());
                let backward = norm_inf(&r) / (a_norm * norm_inf(&x));
                assert!(backward <= 1e-13, "N = {N}: backward error {backward:e}");
                continue;
            }
            lu_count += 1;
            let lu = Lu::factor(&rows);
            match (solve_array(&rows, &b), lu) {
                (Ok((x, how)), Ok(lu)) => {
                    assert_eq!(how, Factorization::Lu);
                    let mut y = b;
                    lu.solve(&mut y);
                    assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits));
                }
                (Err(e), Err(f)) => assert_eq!(e, f),
                (r, lu) => panic!("N = {N}: {r:?} but LU {:?}", lu.err()),
            }
        }
        (lu_count, borderline)
    }

    #[test]
    fn non_positive_definite_falls_back_to_lu_as_before() {
        let mut rng = Xs(7);
        let counts = [
            fallback_as_before::<1>(&mut rng),
            fallback_as_before::<2>(&mut rng),
            fallback_as_before::<3>(&mut rng),
            fallback_as_before::<4>(&mut rng),
            fallback_as_before::<5>(&mut rng),
            fallback_as_before::<6>(&mut rng),
            fallback_as_before::<7>(&mut rng),
            fallback_as_before::<8>(&mut rng),
            fallback_as_before::<9>(&mut rng),
        ];
        eprintln!("(LU fallbacks, borderline pivot ratios) of 300, N = 1..9: {counts:?}");
        // The indefinite third, at least, for N ≥ 2 (random symmetric, no shift); borderline
        // decisions are rare.
        assert!(counts[1..].iter().all(|&(c, _)| c >= 60), "{counts:?}");
        assert!(counts.iter().all(|&(_, b)| b <= 100), "{counts:?}");
    }

    #[test]
    fn non_finite_entries_are_reported_on_every_path() {
        // SPD (Cholesky) and indefinite (LU) 3×3 matrices, each entry in turn non-finite: the
        // matrix is reported, with or without a condition limit, whatever the right-hand side.
        let spd = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let indefinite = [[0.0, 3.0, 0.0], [3.0, 0.0, 1.0], [0.0, 1.0, 1.0]];
        let b = [1.0, -2.0, 0.5];
        let limit = SolveOptions::with_max_condition(1e12);
        for base in [spd, indefinite] {
            for opts in [SolveOptions::default(), limit] {
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    for i in 0..3 {
                        for j in 0..3 {
                            let mut a = base;
                            a[i][j] = bad;
                            assert_eq!(solve_array_with(&a, &b, &opts), Err(NON_FINITE_MATRIX));
                            let mut c = b;
                            c[j] = bad;
                            // Both: the matrix first.
                            assert_eq!(solve_array_with(&a, &c, &opts), Err(NON_FINITE_MATRIX));
                            assert_eq!(solve_array_with(&base, &c, &opts), Err(NON_FINITE_RHS));
                        }
                    }
                }
            }
        }
        // The right-hand side before an ill-conditioned matrix (Cholesky path).
        let near = [[1.0, 0.0], [0.0, 1e-10]];
        assert_eq!(
            solve_array_with(
                &near,
                &[f64::NAN, 1.0],
                &SolveOptions::with_max_condition(1e8)
            ),
            Err(NON_FINITE_RHS)
        );
        // All-infinite diagonal: every Cholesky pivot is +∞ (formerly rejected up front).
        assert_eq!(
            solve_array(&[[f64::INFINITY]], &[1.0]),
            Err(NON_FINITE_MATRIX)
        );
    }
}
