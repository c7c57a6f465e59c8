//! The general sparse backend: faer 0.24's sparse symmetric factorizations (see
//! `docs/DEPENDENCIES.md` for the measured facts behind the choices).
//!
//! Set-up (once per layout): the lower triangle of `M + sH` as a compressed-column pattern
//! with, for each stored scalar, its index in the [`SparseMatrix`] values (a gather map); the
//! symbolic Cholesky (AMD ordering, simplicial — chains and block-banded patterns are what it
//! is for); the both-triangle pattern and the COLAMD column ordering of the LU fallback; one
//! scratch buffer (`dyn-stack`) large enough for every phase.
//!
//! Each solve: gather `d + s·h` into the compressed values, then
//! 1. `LLᵀ`; accepted when it succeeds with balanced pivots (`min L_jj² ≥ n·ε·max L_jj²`,
//!    the dense backend's test);
//! 2. otherwise (indefinite) `LDLᵀ` without pivoting on the same symbolic structure, accepted
//!    when `min|D_j| ≥ n·ε·max|D_j|` and the backward error
//!    `‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞)` is below [`BACKWARD_TOLERANCE`] (no pivoting means no
//!    bound on element growth: the residual is the guard);
//! 3. otherwise LU with partial pivoting (faer's simplicial left-looking LU); singular when a
//!    pivot is exactly zero or `min|U_jj| < n·ε·max|U_jj|`. This fallback may allocate when its
//!    fill grows beyond what an earlier factorization needed (pivoting changes the fill); the
//!    first two never do.
//!
//! A non-finite matrix or right-hand side is reported before factoring, a non-finite solution
//! after, as in the dense backend.

use std::sync::Arc;

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::ldlt::factor::LdltRegularization;
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{Conj, MatMut, Par, Side};

use super::lu::SparseLu;
use super::{BACKWARD_TOLERANCE, BlockLayout, SparseMatrix};
use crate::linalg::inverse_norm_estimate;
use crate::linalg::{Factorization, Operand, SolveFailure, SolveOptions, singular_threshold};

/// A compressed-column pattern with, per stored scalar, its index in the block values.
#[derive(Debug)]
struct Gathered {
    pattern: SymbolicSparseColMat<u32>,
    /// Index into [`SparseMatrix::values`] of each stored scalar.
    gather: Vec<u32>,
    /// Stored position of each diagonal entry `(c, c)`.
    diag: Vec<u32>,
    values: Vec<f64>,
}

impl Gathered {
    /// Columns `c`, rows `r` with `r ≥ c` (`lower`) or every row (`!lower`), sorted.
    #[allow(clippy::needless_range_loop)]
    fn new(layout: &BlockLayout, lower: bool) -> Self {
        let d = layout.block();
        let n = layout.dimension();
        // Bodies coupled to each body, with the block index and whether it is stored as
        // (this, other) (`true`) or (other, this).
        let mut coupled: Vec<Vec<(usize, usize, bool)>> = vec![Vec::new(); layout.bodies()];
        for (k, &(i, j)) in layout.pairs().iter().enumerate() {
            let (i, j) = (i as usize, j as usize);
            coupled[i].push((j, k, true));
            if i != j {
                coupled[j].push((i, k, false));
            }
        }
        for c in &mut coupled {
            c.sort_unstable();
        }
        let mut col_ptr = Vec::with_capacity(n + 1);
        let mut row_idx = Vec::new();
        let mut gather = Vec::new();
        let mut diag = vec![0u32; n];
        col_ptr.push(0u32);
        for c in 0..n {
            let (bc, cl) = (c / d, c % d);
            for &(br, k, stored_as_col_first) in &coupled[bc] {
                for rl in 0..d {
                    let r = br * d + rl;
                    if lower && r < c {
                        continue;
                    }
                    // Entry (r, c): block (bc, br) at [cl][rl] when stored with the column's body
                    // first, block (br, bc) at [rl][cl] otherwise (diagonal blocks: either).
                    let within = if stored_as_col_first {
                        cl * d + rl
                    } else {
                        rl * d + cl
                    };
                    if r == c {
                        diag[c] = row_idx.len() as u32;
                    }
                    row_idx.push(r as u32);
                    gather.push((k * d * d + within) as u32);
                }
            }
            col_ptr.push(row_idx.len() as u32);
        }
        let values = vec![0.0; row_idx.len()];
        let pattern = SymbolicSparseColMat::new_checked(n, n, col_ptr, None, row_idx);
        Self {
            pattern,
            gather,
            diag,
            values,
        }
    }

    /// `values = diag(m) + s·h` in this pattern.
    fn fill(&mut self, masses: &[f64], scale: f64, h: &[f64]) {
        for (v, &g) in self.values.iter_mut().zip(&self.gather) {
            *v = scale * h[g as usize];
        }
        for (c, &p) in self.diag.iter().enumerate() {
            let p = p as usize;
            self.values[p] += masses[c];
        }
    }

    fn matrix(&self) -> SparseColMatRef<'_, u32, f64> {
        SparseColMatRef::new(self.pattern.as_ref(), &self.values)
    }
}

/// The LU fallback: the both-triangle pattern with its gather map, and the LU on it.
#[derive(Debug)]
struct LuFallback {
    gather: Vec<u32>,
    diag: Vec<u32>,
    lu: SparseLu,
}

impl LuFallback {
    fn new(layout: &BlockLayout) -> Self {
        let full = Gathered::new(layout, false);
        let (col_ptr, row_idx) = (
            full.pattern.col_ptr().to_vec(),
            full.pattern.row_idx().to_vec(),
        );
        Self {
            gather: full.gather,
            diag: full.diag,
            lu: SparseLu::new(layout.dimension(), col_ptr, row_idx),
        }
    }

    /// Values `diag(m) + s·h` in the both-triangle pattern.
    fn fill(&mut self, masses: &[f64], scale: f64, h: &[f64]) {
        let values = self.lu.values_mut();
        for (v, &g) in values.iter_mut().zip(&self.gather) {
            *v = scale * h[g as usize];
        }
        for (c, &p) in self.diag.iter().enumerate() {
            values[p as usize] += masses[c];
        }
    }
}

pub(super) struct FaerSolver {
    layout: Arc<BlockLayout>,
    n: usize,
    lower: Gathered,
    symbolic: SymbolicCholesky<u32>,
    /// Column pointers of the simplicial factor `L` (its diagonal entry first in each column).
    l_col_ptr: Vec<u32>,
    l_values: Vec<f64>,
    lu: LuFallback,
    mem: MemBuffer,
    /// The right-hand side, kept for the backward-error check.
    rhs: Vec<f64>,
    /// Scratch of the condition estimate and the residual.
    work: [Vec<f64>; 3],
}

impl core::fmt::Debug for FaerSolver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FaerSolver")
            .field("n", &self.n)
            .field("layout", &self.layout.id())
            .field("factor_values", &self.l_values.len())
            .finish_non_exhaustive()
    }
}

impl FaerSolver {
    pub(super) fn new(layout: Arc<BlockLayout>) -> Self {
        let n = layout.dimension();
        let lower = Gathered::new(&layout, true);
        let symbolic = factorize_symbolic_cholesky(
            lower.pattern.as_ref(),
            Side::Lower,
            SymmetricOrdering::Amd,
            CholeskySymbolicParams {
                supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SIMPLICIAL,
                ..Default::default()
            },
        )
        .expect("faer: symbolic Cholesky (out of memory)");
        let l_col_ptr = match symbolic.raw() {
            SymbolicCholeskyRaw::Simplicial(s) => s.col_ptr().to_vec(),
            SymbolicCholeskyRaw::Supernodal(_) => unreachable!("simplicial was forced"),
        };
        let par = Par::Seq;
        let req = StackReq::any_of(&[
            symbolic.factorize_numeric_llt_scratch::<f64>(par, Default::default()),
            symbolic.factorize_numeric_ldlt_scratch::<f64>(par, Default::default()),
            symbolic.solve_in_place_scratch::<f64>(1, par),
        ]);
        let l_values = vec![0.0; symbolic.len_val()];
        let lu = LuFallback::new(&layout);
        Self {
            layout,
            n,
            lower,
            symbolic,
            l_col_ptr,
            l_values,
            lu,
            mem: MemBuffer::new(req),
            rhs: vec![0.0; n],
            work: [vec![0.0; n], vec![0.0; n], vec![0.0; n]],
        }
    }

    pub(super) fn solve(
        &mut self,
        masses: &[f64],
        scale: f64,
        h: &SparseMatrix,
        x: &mut [f64],
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        assert_eq!(h.layout().id(), self.layout.id());
        let n = self.n;
        if !h.is_finite() {
            return Err(SolveFailure::NonFinite(Operand::Matrix));
        }
        self.lower.fill(masses, scale, h.values());
        if !self.lower.values.iter().all(|v| v.is_finite()) {
            return Err(SolveFailure::NonFinite(Operand::Matrix));
        }
        if !x.iter().all(|v| v.is_finite()) {
            return Err(SolveFailure::NonFinite(Operand::RightHandSide));
        }
        self.rhs.copy_from_slice(x);
        let threshold = singular_threshold(n);
        let par = Par::Seq;

        // 1. LLᵀ.
        let llt = {
            let stack = MemStack::new(&mut self.mem);
            self.symbolic
                .factorize_numeric_llt::<f64>(
                    &mut self.l_values,
                    self.lower.matrix(),
                    Side::Lower,
                    LltRegularization::default(),
                    par,
                    stack,
                    Default::default(),
                )
                .is_ok()
        };
        if llt {
            let (lo, hi) = diagonal_range(&self.l_col_ptr, &self.l_values, |v| v * v);
            if n == 0 || lo >= threshold * hi {
                self.solve_llt(x);
                self.check_condition(true, options)?;
                return finish(x, Factorization::Cholesky);
            }
        }

        // 2. LDLᵀ without pivoting.
        let ldlt = {
            let stack = MemStack::new(&mut self.mem);
            self.symbolic
                .factorize_numeric_ldlt::<f64>(
                    &mut self.l_values,
                    self.lower.matrix(),
                    Side::Lower,
                    LdltRegularization::default(),
                    par,
                    stack,
                    Default::default(),
                )
                .is_ok()
        };
        if ldlt {
            let (lo, hi) = diagonal_range(&self.l_col_ptr, &self.l_values, f64::abs);
            if lo >= threshold * hi {
                self.solve_ldlt(x);
                if x.iter().all(|v| v.is_finite()) && self.backward_error(x) <= BACKWARD_TOLERANCE {
                    self.check_condition(false, options)?;
                    return finish(x, Factorization::Ldlt);
                }
                x.copy_from_slice(&self.rhs);
            }
        }

        // 3. LU with partial pivoting.
        self.lu.fill(masses, scale, h.values());
        x.copy_from_slice(&self.rhs);
        self.lu.lu.factor_solve(x)?;
        self.check_condition_lu(options)?;
        Ok(Factorization::Lu)
    }

    fn solve_llt(&mut self, x: &mut [f64]) {
        let n = self.n;
        let stack = MemStack::new(&mut self.mem);
        let f = faer::sparse::linalg::cholesky::LltRef::new(&self.symbolic, &self.l_values);
        f.solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(x, n, 1),
            Par::Seq,
            stack,
        );
    }

    fn solve_ldlt(&mut self, x: &mut [f64]) {
        let n = self.n;
        let stack = MemStack::new(&mut self.mem);
        let f = faer::sparse::linalg::cholesky::LdltRef::new(&self.symbolic, &self.l_values);
        f.solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(x, n, 1),
            Par::Seq,
            stack,
        );
    }

    /// `‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞)` with `A` the symmetric matrix of `self.lower`.
    fn backward_error(&mut self, x: &[f64]) -> f64 {
        let [r, rows, _] = &mut self.work;
        r.copy_from_slice(&self.rhs);
        rows.fill(0.0);
        let a = self.lower.matrix();
        let (cp, ri, v) = (a.symbolic().col_ptr(), a.symbolic().row_idx(), a.val());
        for c in 0..self.n {
            for s in cp[c] as usize..cp[c + 1] as usize {
                let rr = ri[s] as usize;
                r[rr] -= v[s] * x[c];
                rows[rr] += v[s].abs();
                if rr != c {
                    r[c] -= v[s] * x[rr];
                    rows[c] += v[s].abs();
                }
            }
        }
        let norm = |y: &[f64]| y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let denom = norm(rows) * norm(x) + norm(&self.rhs);
        if denom == 0.0 { 0.0 } else { norm(r) / denom }
    }

    /// `‖A‖₁` of the symmetric matrix held in `self.lower` (column sums of both triangles).
    fn norm_1(&mut self) -> f64 {
        let sums = &mut self.work[2];
        sums.fill(0.0);
        let a = self.lower.matrix();
        let (cp, ri, v) = (a.symbolic().col_ptr(), a.symbolic().row_idx(), a.val());
        for c in 0..self.n {
            for s in cp[c] as usize..cp[c + 1] as usize {
                let rr = ri[s] as usize;
                sums[c] += v[s].abs();
                if rr != c {
                    sums[rr] += v[s].abs();
                }
            }
        }
        sums.iter().fold(0.0f64, |m, v| m.max(*v))
    }

    /// Rejects a factorization whose `κ̂₁ = ‖A‖₁ · est‖A⁻¹‖₁` exceeds the limit (only when one
    /// is set). `llt` selects which factor in `l_values` the solves use.
    fn check_condition(&mut self, llt: bool, options: &SolveOptions) -> Result<(), SolveFailure> {
        if options.max_condition == f64::INFINITY {
            return Ok(());
        }
        let a_norm = self.norm_1();
        let n = self.n;
        let [x, s, z] = &mut self.work;
        let symbolic = &self.symbolic;
        let l_values = &self.l_values;
        let mem = &mut self.mem;
        let inv = inverse_norm_estimate(
            n,
            |y| {
                let stack = MemStack::new(mem);
                let rhs = MatMut::from_column_major_slice_mut(y, n, 1);
                if llt {
                    faer::sparse::linalg::cholesky::LltRef::new(symbolic, l_values)
                        .solve_in_place_with_conj(Conj::No, rhs, Par::Seq, stack);
                } else {
                    faer::sparse::linalg::cholesky::LdltRef::new(symbolic, l_values)
                        .solve_in_place_with_conj(Conj::No, rhs, Par::Seq, stack);
                }
            },
            x,
            s,
            z,
        );
        reject(n, a_norm * inv, options.max_condition)
    }

    fn check_condition_lu(&mut self, options: &SolveOptions) -> Result<(), SolveFailure> {
        if options.max_condition == f64::INFINITY {
            return Ok(());
        }
        let a_norm = self.lu.lu.norm_1();
        let n = self.n;
        let lu = &mut self.lu.lu;
        let [x, s, z] = &mut self.work;
        let inv = inverse_norm_estimate(n, |y| lu.solve_again(y), x, s, z);
        reject(n, a_norm * inv, options.max_condition)
    }
}

/// `(min, max)` of `f(L_jj)` over the first entry of each column of the simplicial factor.
fn diagonal_range(col_ptr: &[u32], values: &[f64], f: impl Fn(f64) -> f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for j in 0..col_ptr.len().saturating_sub(1) {
        let v = f(values[col_ptr[j] as usize]);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo, hi)
}

fn reject(n: usize, condition: f64, limit: f64) -> Result<(), SolveFailure> {
    if condition <= limit {
        Ok(())
    } else {
        Err(SolveFailure::IllConditioned {
            n,
            condition,
            limit,
        })
    }
}

fn finish(x: &[f64], how: Factorization) -> Result<Factorization, SolveFailure> {
    if x.iter().all(|v| v.is_finite()) {
        Ok(how)
    } else {
        Err(SolveFailure::NonFinite(Operand::Solution))
    }
}
