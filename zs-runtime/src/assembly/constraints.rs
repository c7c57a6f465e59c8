//! Constraints of an assembled system, for SHAKE and RATTLE: each constraint acts on one body
//! (body constraints) or two (bond constraints), so the Jacobian `G` has at most two `D`-blocks
//! per row ([`SparseJacobian`]), and the `m × m` matrices `G M⁻¹ Gᵀ` (velocity projection) and
//! `G(Q) M⁻¹ G(q_n)ᵀ` (Newton) couple two constraints only when they share a body
//! ([`SparseConstraintSolver`]: the sparse symmetric solve of [`crate::sparse`] for the first,
//! the sparse LU for the second). Constraint order: the body constraints of every free body (in
//! body order, each body's components together), then the bond constraints of every bond.

use std::sync::Arc;

use super::plan::PINNED;
use super::system::Assembled;
use super::terms::{Local, Terms};
use crate::linalg::{ShiftedSolve, SolveFailure, SolveOptions};
use crate::model::{ConstrainedModel, ConstraintSolve, ConstraintSpace, Jacobian};
#[cfg(feature = "faer")]
use crate::sparse::SparseLu;
use crate::sparse::{Backend, BlockLayout, SparseMatrix, SparseSolver};

/// The Jacobian of the constraints of an assembled system: row `c` is `∇g_c`, stored as its (at
/// most) two body blocks of `d` entries; the pattern (which free bodies each row touches) is
/// fixed at set-up and shared.
#[derive(Debug, Clone)]
pub struct SparseJacobian {
    d: usize,
    /// Free-body index of each row's two blocks ([`PINNED`]: absent).
    cols: Arc<Vec<[u32; 2]>>,
    /// Row `c`, block `s`, entry `k` at `(2c + s)·d + k`.
    vals: Vec<f64>,
}

/// Constraint components per term evaluated on the stack; a term with more allocates a buffer
/// at each evaluation.
const STACK_ROWS: usize = 16;

impl SparseJacobian {
    fn new(d: usize, cols: Arc<Vec<[u32; 2]>>) -> Self {
        let vals = vec![0.0; cols.len() * 2 * d];
        Self { d, cols, vals }
    }

    /// Number of rows (constraints).
    pub fn rows(&self) -> usize {
        self.cols.len()
    }

    /// The free bodies of row `c` (`None` for an absent block).
    pub fn row_bodies(&self, c: usize) -> [Option<usize>; 2] {
        self.cols[c].map(|f| (f != PINNED).then_some(f as usize))
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
        let d = self.d;
        &self.vals[(2 * c + s) * d..(2 * c + s + 1) * d]
    }

    fn block_mut(&mut self, c: usize, s: usize) -> &mut [f64] {
        let d = self.d;
        &mut self.vals[(2 * c + s) * d..(2 * c + s + 1) * d]
    }

    /// `(offset of the body's coordinates, block values)` of each present block of row `c`.
    #[inline]
    fn blocks(&self, c: usize) -> impl Iterator<Item = (usize, &[f64])> {
        let d = self.d;
        let cols = self.cols[c];
        (0..2)
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
        let (a, b) = (
            &self.vals[2 * c * self.d..2 * (c + 1) * self.d],
            &other.vals,
        );
        let b = &b[2 * c * self.d..2 * (c + 1) * self.d];
        a.iter().zip(b).map(|(x, y)| x * y).sum()
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
        for c in 0..self.cols.len() {
            for s in 0..2 {
                let f = self.cols[c][s];
                if f == PINNED {
                    continue;
                }
                let o = f as usize * d;
                for k in 0..d {
                    self.vals[(2 * c + s) * d + k] = w[o + k] * source.vals[(2 * c + s) * d + k];
                }
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
        self.vals[2 * c * self.d..2 * (c + 1) * self.d]
            .iter()
            .all(|v| v.is_finite())
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
    fn new(cols: &[[u32; 2]], free_bodies: usize, backend: Backend) -> Self {
        let m = cols.len();
        let mut by_body: Vec<Vec<u32>> = vec![Vec::new(); free_bodies];
        for (c, fr) in cols.iter().enumerate() {
            for &f in fr {
                if f != PINNED {
                    by_body[f as usize].push(c as u32);
                }
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
    for sa in 0..2 {
        let fa = a.cols[r][sa];
        if fa == PINNED {
            continue;
        }
        for sb in 0..2 {
            if b.cols[c][sb] != fa {
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

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// Components per body and per bond.
    fn constraint_shape(&self) -> (usize, usize) {
        let f = T::FORMS;
        (f.body_constraints, f.bond_constraints)
    }

    /// The free-body pattern of every constraint row.
    fn constraint_pattern(&self) -> Vec<[u32; 2]> {
        let (kb, kp) = self.constraint_shape();
        let mut cols = Vec::with_capacity(kb * self.plan.sites.len() + kp * self.plan.bonds.len());
        if kb > 0 {
            for fr in &self.plan.sites.free {
                cols.extend(std::iter::repeat_n([fr[0], PINNED], kb));
            }
        }
        if kp > 0 {
            for fr in &self.plan.bonds.free {
                cols.extend(std::iter::repeat_n(*fr, kp));
            }
        }
        cols
    }

    /// Evaluate the constraints of site term `t` (`kb` components) into `g`, and their rows
    /// into `jac` starting at row `first`.
    fn site_constraints(
        &self,
        q: &[f64],
        t: usize,
        g: &mut [f64],
        jac: Option<(&mut SparseJacobian, usize)>,
    ) {
        let x: Local<D, 1> =
            self.local_positions(q, &self.plan.sites.free[t], &self.plan.sites.bodies[t]);
        let kb = g.len();
        let mut rows = [[[0.0; D]; 1]; STACK_ROWS];
        let mut big = Vec::new();
        let rows: &mut [Local<D, 1>] = if kb <= STACK_ROWS {
            &mut rows[..kb]
        } else {
            big.resize(kb, [[0.0; D]; 1]);
            &mut big
        };
        self.terms().body_constraints(&x, g, rows);
        if let Some((jac, first)) = jac {
            for (k, row) in rows.iter().enumerate() {
                jac.block_mut(first + k, 0).copy_from_slice(&row[0]);
            }
        }
    }

    fn bond_constraints(
        &self,
        q: &[f64],
        t: usize,
        g: &mut [f64],
        jac: Option<(&mut SparseJacobian, usize)>,
    ) {
        let x: Local<D, 2> =
            self.local_positions(q, &self.plan.bonds.free[t], &self.plan.bonds.bodies[t]);
        let kp = g.len();
        let mut rows = [[[0.0; D]; 2]; STACK_ROWS];
        let mut big = Vec::new();
        let rows: &mut [Local<D, 2>] = if kp <= STACK_ROWS {
            &mut rows[..kp]
        } else {
            big.resize(kp, [[0.0; D]; 2]);
            &mut big
        };
        self.terms().bond_constraints(&x, g, rows);
        if let Some((jac, first)) = jac {
            for (k, row) in rows.iter().enumerate() {
                for (s, body) in row.iter().enumerate() {
                    jac.block_mut(first + k, s).copy_from_slice(body);
                }
            }
        }
    }

    fn local_positions<const K: usize>(
        &self,
        q: &[f64],
        free: &[u32; K],
        bodies: &[u32; K],
    ) -> Local<D, K> {
        core::array::from_fn(|k| {
            let f = free[k];
            if f == PINNED {
                self.pins[bodies[k] as usize]
            } else {
                core::array::from_fn(|d| q[f as usize * D + d])
            }
        })
    }

    /// Every constraint into `g` (and the Jacobian when given).
    fn all_constraints(&self, q: &[f64], g: &mut [f64], mut jac: Option<&mut SparseJacobian>) {
        let (kb, kp) = self.constraint_shape();
        let sites = if kb > 0 { self.plan.sites.len() } else { 0 };
        for t in 0..sites {
            let first = t * kb;
            self.site_constraints(
                q,
                t,
                &mut g[first..first + kb],
                jac.as_deref_mut().map(|j| (j, first)),
            );
        }
        let base = sites * kb;
        if kp > 0 {
            for t in 0..self.plan.bonds.len() {
                let first = base + t * kp;
                self.bond_constraints(
                    q,
                    t,
                    &mut g[first..first + kp],
                    jac.as_deref_mut().map(|j| (j, first)),
                );
            }
        }
    }
}

impl<T: Terms<D>, const D: usize> ConstrainedModel<Vec<f64>, Vec<f64>> for Assembled<T, D> {
    fn constraint_count(&self) -> usize {
        let (kb, kp) = self.constraint_shape();
        kb * self.plan.sites.len() + kp * self.plan.bonds.len()
    }

    fn new_jacobian(&self) -> SparseJacobian {
        SparseJacobian::new(D, Arc::new(self.constraint_pattern()))
    }

    fn new_constraint_solver(&self) -> SparseConstraintSolver {
        SparseConstraintSolver::new(
            &self.constraint_pattern(),
            self.free_bodies(),
            Backend::Auto,
        )
    }

    fn constraints_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
        self.all_constraints(q, g, None);
    }

    fn constraints_jacobian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, jac: &mut SparseJacobian) {
        self.all_constraints(q, g, Some(jac));
    }

    fn constraint_row_into(
        &self,
        q: &Vec<f64>,
        c: usize,
        g: &mut Vec<f64>,
        jac: &mut SparseJacobian,
    ) -> f64 {
        let (kb, kp) = self.constraint_shape();
        let sites = if kb > 0 { self.plan.sites.len() } else { 0 };
        if c < sites * kb {
            let t = c / kb;
            self.site_constraints(q, t, &mut g[t * kb..(t + 1) * kb], Some((jac, t * kb)));
        } else {
            let t = (c - sites * kb) / kp;
            let first = sites * kb + t * kp;
            self.bond_constraints(q, t, &mut g[first..first + kp], Some((jac, first)));
        }
        g[c]
    }

    fn constraint_norm(&self, q: &Vec<f64>) -> f64 {
        let (kb, kp) = self.constraint_shape();
        let mut buf = [0.0; 16];
        let mut sum = 0.0;
        let sites = if kb > 0 { self.plan.sites.len() } else { 0 };
        if kb <= 16 {
            for t in 0..sites {
                self.site_constraints(q, t, &mut buf[..kb], None);
                sum += buf[..kb].iter().map(|x| x * x).sum::<f64>();
            }
        }
        if kp > 0 && kp <= 16 {
            for t in 0..self.plan.bonds.len() {
                self.bond_constraints(q, t, &mut buf[..kp], None);
                sum += buf[..kp].iter().map(|x| x * x).sum::<f64>();
            }
        }
        if kb > 16 || kp > 16 {
            let mut g = vec![0.0; self.constraint_count()];
            self.all_constraints(q, &mut g, None);
            return g.iter().map(|x| x * x).sum::<f64>().sqrt();
        }
        sum.sqrt()
    }
}
