//! The one linear solve of a linearly-implicit step: `(M + s·H) a = b` with `M` the diagonal
//! mass matrix, `H` a symmetric Hessian and `s = βh²` (Z&S eq. 3, third line; Z&Ss eq. 18).
//!
//! [`ShiftedSolve`] is the interface the integrators call, with a two-phase life: a solver is
//! made once per sparsity pattern (set-up), then factors and solves each step without
//! allocating. Backends:
//! - [`dense`]: `[[f64; N]; N]` on the stack, unrolled Cholesky with a pivoted-LU fallback, for
//!   the fixed-size systems ([`DenseSolver`]);
//! - [`crate::sparse`]: assembled systems — block diagonal (one dense block per body, e.g. the
//!   stiff Hessian of rigid water) or general sparse symmetric via faer (symbolic Cholesky once,
//!   numeric `LLᵀ` each step, `LDLᵀ` and pivoting-LU fallbacks when indefinite).
//!
//! Every backend reports the same typed failures ([`SolveFailure`]): a non-finite matrix or
//! right-hand side, a matrix singular to working precision (smallest/largest pivot below
//! `n·ε`), an estimated condition number above a user-set limit, a non-finite solution.

pub mod dense;

pub use dense::{DenseSolver, condition_estimate, solve_shifted};

/// Which factorization solved the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Factorization {
    /// Cholesky: the matrix was symmetric positive definite.
    Cholesky,
    /// LU with partial pivoting: Cholesky failed (indefinite matrix) or was ill-balanced.
    Lu,
    /// `LDLᵀ` without pivoting (the sparse backend, [`crate::sparse`]): Cholesky failed on an
    /// indefinite matrix whose `LDLᵀ` is well balanced and accurate (checked backward error).
    Ldlt,
}

impl Factorization {
    /// True for [`Factorization::Cholesky`]: the matrix was found positive definite. Every other
    /// factorization is a fallback on an indefinite or ill-balanced matrix (counted as such in
    /// the steppers' statistics, e.g. [`crate::StepStats::lu_fallbacks`]).
    pub fn is_cholesky(self) -> bool {
        self == Factorization::Cholesky
    }
}

/// The shifted solve `(M + s·H) x = b` of every linearly-implicit step (Z&S eq. 3, Z&Ss eq. 18,
/// eq. 19, the Newton steps of Newmark eqs. 12, 14), behind one interface with a two-phase life:
/// the solver is made once per sparsity pattern ([`crate::Model::new_solver`]: for the sparse
/// backend that is the symbolic factorization and all scratch memory), then each call factors
/// the numeric values and solves, allocating nothing.
///
/// Backends: [`DenseSolver`] (the unrolled stack solve of this module, fixed sizes) and
/// [`crate::sparse::SparseSolver`] (block diagonal, or sparse `LLᵀ` via faer with `LDLᵀ` and
/// pivoting-LU fallbacks).
pub trait ShiftedSolve<V> {
    /// How the Hessian is stored: `[[f64; N]; N]`, or a [`crate::sparse::SparseMatrix`].
    type Matrix;

    /// Factor `diag(masses) + scale·hessian` and overwrite `x` (holding `b`) by the solution.
    ///
    /// Failures, as [`solve_shifted`]: a non-finite matrix or right-hand side, a matrix
    /// singular to working precision, an estimated condition number above
    /// `options.max_condition`, a non-finite solution. On failure `x` is unspecified.
    fn solve_shifted(
        &mut self,
        masses: &V,
        scale: f64,
        hessian: &Self::Matrix,
        x: &mut V,
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure>;
}

/// Why [`solve_shifted`] failed.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveFailure {
    /// The matrix is singular to working precision: a zero pivot, or
    /// `pivot / max_pivot < N·ε` in the pivoted LU.
    #[error(
        "the {n}x{n} linear system is singular (smallest pivot {pivot:e}, largest {max_pivot:e})"
    )]
    Singular {
        /// Dimension.
        n: usize,
        /// Smallest pivot magnitude.
        pivot: f64,
        /// Largest pivot magnitude.
        max_pivot: f64,
    },
    /// The matrix was factored, but its estimated condition number exceeds the user's limit
    /// ([`SolveOptions::max_condition`]).
    #[error(
        "the {n}x{n} linear system is near-singular (condition estimate {condition:e} > limit {limit:e})"
    )]
    IllConditioned {
        /// Dimension.
        n: usize,
        /// Estimate `κ̂₁ ≤ κ₁(A) = ‖A‖₁‖A⁻¹‖₁` (Hager–Higham).
        condition: f64,
        /// The limit it exceeded.
        limit: f64,
    },
    /// A non-finite value in the matrix, the right-hand side or the solution.
    #[error("non-finite value in {0}")]
    NonFinite(Operand),
    /// The system needs one of faer's factorizations and this build has no `faer` feature
    /// ([`crate::sparse`]): an indefinite or ill-balanced matrix that the banded `LDLᵀ` cannot
    /// factor accurately without pivoting, or the nonsymmetric Newton matrix of SHAKE on an
    /// assembled system.
    #[error("the {n}x{n} linear system {reason}: build zs-runtime with its `faer` feature")]
    NeedsFaer {
        /// Dimension.
        n: usize,
        /// Why, e.g. "is indefinite or ill-balanced and needs a pivoting factorization".
        reason: &'static str,
    },
}

/// An operand of a linear solve ([`SolveFailure::NonFinite`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The matrix.
    Matrix,
    /// The right-hand side.
    RightHandSide,
    /// The solution.
    Solution,
}

impl core::fmt::Display for Operand {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Operand::Matrix => "linear system matrix",
            Operand::RightHandSide => "right-hand side",
            Operand::Solution => "linear solve solution",
        })
    }
}

/// Options of [`solve_shifted`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolveOptions {
    /// Reject a factored matrix whose estimated 1-norm condition number exceeds this limit
    /// ([`SolveFailure::IllConditioned`]). `f64::INFINITY` (the default) turns the check off and
    /// skips the estimate. A limit near `1/ε ≈ 4.5e15` only adds to the pivot test; limits like
    /// `1e8`–`1e12` stop a run whose linear systems lose more than 8–12 digits.
    pub max_condition: f64,
}

impl Default for SolveOptions {
    fn default() -> Self {
        Self {
            max_condition: f64::INFINITY,
        }
    }
}

impl SolveOptions {
    /// Options with a condition-number limit.
    ///
    /// # Panics
    /// If `max_condition` is NaN or below 1 (every matrix has `κ ≥ 1`).
    pub fn with_max_condition(max_condition: f64) -> Self {
        assert!(
            max_condition >= 1.0,
            "SolveOptions: max_condition must be >= 1, got {max_condition}"
        );
        Self { max_condition }
    }
}

/// Relative pivot threshold below which a matrix is declared singular: `N·ε`.
#[inline]
pub fn singular_threshold(n: usize) -> f64 {
    n.max(1) as f64 * f64::EPSILON
}

/// The Hager–Higham estimate of `‖A⁻¹‖₁` for a symmetric `A` of dimension `n`, with
/// `solve(x)` overwriting `x` by `A⁻¹x` (Higham 1988, Algorithm 4.1), the one estimate of every
/// backend's condition check. `x`, `sign`, `z` are scratch of length `n`.
pub(crate) fn inverse_norm_estimate(
    n: usize,
    mut solve: impl FnMut(&mut [f64]),
    x: &mut [f64],
    sign: &mut [f64],
    z: &mut [f64],
) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let norm_1 = |x: &[f64]| x.iter().map(|v| v.abs()).sum::<f64>();
    let iamax = |x: &[f64]| {
        let mut best = 0;
        for i in 1..x.len() {
            if x[i].abs() > x[best].abs() {
                best = i;
            }
        }
        best
    };
    let nf = n as f64;
    if n == 1 {
        x[0] = 1.0;
        solve(x);
        return x[0].abs();
    }
    x.fill(1.0 / nf);
    solve(x);
    let mut est = norm_1(x);
    for (s, v) in sign.iter_mut().zip(x.iter()) {
        *s = if *v >= 0.0 { 1.0 } else { -1.0 };
    }
    z.copy_from_slice(sign);
    solve(z);
    let mut j = iamax(z);
    for _ in 0..4 {
        x.fill(0.0);
        x[j] = 1.0;
        solve(x);
        let est_new = norm_1(x);
        let same = sign
            .iter()
            .zip(x.iter())
            .all(|(s, v)| *s == if *v >= 0.0 { 1.0 } else { -1.0 });
        if same || est_new <= est {
            est = est.max(est_new);
            break;
        }
        est = est_new;
        for (s, v) in sign.iter_mut().zip(x.iter()) {
            *s = if *v >= 0.0 { 1.0 } else { -1.0 };
        }
        z.copy_from_slice(sign);
        solve(z);
        let j_new = iamax(z);
        if j_new == j || z[j_new].abs() <= z[j].abs() {
            break;
        }
        j = j_new;
    }
    for (i, v) in x.iter_mut().enumerate() {
        let s = if i % 2 == 0 { 1.0 } else { -1.0 };
        *v = s * (1.0 + i as f64 / (nf - 1.0));
    }
    solve(x);
    let alt = 2.0 * norm_1(x) / (3.0 * nf);
    est.max(alt)
}

/// True when every entry of `x` is finite ([`crate::vector::all_finite`] on a slice).
#[inline]
pub fn slice_finite(x: &[f64]) -> bool {
    // An OR of per-entry tests on the exponent bits (all ones: ±∞ or NaN) has no floating-point
    // dependency chain and no early exit, so it vectorizes: a few hundred entries cost tens of
    // cycles (a running `acc += 0.0 * v` costs one add latency per entry).
    const EXPONENT: u64 = 0x7ff0_0000_0000_0000;
    let bad = x.iter().fold(0u64, |m, v| {
        m | u64::from(v.to_bits() & EXPONENT == EXPONENT)
    });
    bad == 0
}
