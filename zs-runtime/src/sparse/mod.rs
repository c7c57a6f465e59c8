//! Sparse symmetric matrices over the coordinates of an assembled system, and the backends of
//! the shifted solve `(M + s·H) x = b` for them.
//!
//! An assembled system has `B` free bodies of `d` coordinates each; its Hessian couples body
//! `i` with body `j` only when a term acts on both. [`BlockLayout`] is that pattern, fixed at
//! set-up from the topology and from the terms that enter the solve: a dense `d × d` block on
//! the diagonal for every body and one for every coupled pair `i < j`. [`SparseMatrix`] stores
//! the values of the upper block triangle, block by block (row-major inside a block), and
//! per-term kernels write into them through slot maps computed once.
//!
//! [`SparseSolver`] implements [`ShiftedSolve`] with a two-phase life (made once per layout,
//! then factor + solve each step, nothing allocated):
//! - [`Backend::BlockDiagonal`] when the layout has no off-diagonal block (e.g. the stiff
//!   Hessian of rigid water, one block per molecule): the dense unrolled solve of
//!   [`crate::linalg::dense`] block by block, O(B);
//! - [`Backend::Banded`] when the pattern has a small bandwidth after a reverse Cuthill–McKee
//!   ordering of the bodies (chains, rings, polymers): a banded `LDLᵀ`, O(B);
//! - [`Backend::Sparse`] otherwise: faer's sparse Cholesky — symbolic analysis (AMD ordering,
//!   elimination tree) once, numeric `LLᵀ` each step — with two fallbacks when `M + sH` is
//!   indefinite (the penalized pendulum chain, `docs/systems/chain.md`): `LDLᵀ` on the same
//!   symbolic structure, kept only if its pivots are balanced and its backward error small, then LU
//!   with partial pivoting (faer's simplicial LU, COLAMD ordering). O(B) for chains.
//!
//! faer is behind the crate's `faer` feature (on by default). Without it, [`Backend::Auto`] and
//! [`Backend::Sparse`] solve every layout that is not block diagonal with the banded backend
//! (any bandwidth: `O(n b²)`, dense within the band), and a matrix that the banded `LDLᵀ`
//! cannot factor accurately without pivoting is [`SolveFailure::NeedsFaer`], where faer's
//! pivoting fallback would have solved it.

mod banded;
mod block;
#[cfg(feature = "faer")]
mod faer_backend;
#[cfg(feature = "faer")]
pub mod lu;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::linalg::{Factorization, ShiftedSolve, SolveFailure, SolveOptions};

pub use block::MAX_BLOCK;
#[cfg(feature = "faer")]
pub use lu::SparseLu;

/// The block pattern of a symmetric matrix with `d × d` blocks (see the [module docs](self)).
#[derive(Debug)]
pub struct BlockLayout {
    id: u64,
    block: usize,
    bodies: usize,
    /// `(i, j)`, `i ≤ j`, sorted; block `k` holds rows of body `i`, columns of body `j`.
    pairs: Vec<(u32, u32)>,
    /// Blocks of block row `i`: `row_start[i]..row_start[i + 1]` (the diagonal block first).
    row_start: Vec<u32>,
}

static NEXT_LAYOUT: AtomicU64 = AtomicU64::new(1);

impl BlockLayout {
    /// The pattern with a diagonal block for each of `bodies` bodies and one block for each of
    /// `pairs` (`(i, j)` or `(j, i)`, `i ≠ j`; duplicates merged), blocks of `block × block`.
    ///
    /// # Panics
    /// If `block` is 0, or a pair names a body `≥ bodies`.
    pub fn new(
        block: usize,
        bodies: usize,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> Arc<Self> {
        assert!(block > 0, "BlockLayout: the block size must be positive");
        let mut all: Vec<(u32, u32)> = (0..bodies).map(|i| (i as u32, i as u32)).collect();
        for (i, j) in pairs {
            assert!(
                i < bodies && j < bodies,
                "BlockLayout: pair ({i}, {j}) out of range 0..{bodies}"
            );
            let (a, b) = if i <= j { (i, j) } else { (j, i) };
            all.push((a as u32, b as u32));
        }
        all.sort_unstable();
        all.dedup();
        let mut row_start = vec![0u32; bodies + 1];
        for &(i, _) in &all {
            row_start[i as usize + 1] += 1;
        }
        for i in 0..bodies {
            row_start[i + 1] += row_start[i];
        }
        Arc::new(Self {
            id: NEXT_LAYOUT.fetch_add(1, Ordering::Relaxed),
            block,
            bodies,
            pairs: all,
            row_start,
        })
    }

    /// A process-unique identifier (see [`crate::Model::matrix_layout`]).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// Block size `d`.
    pub fn block(&self) -> usize {
        self.block
    }
    /// Number of block rows `B`.
    pub fn bodies(&self) -> usize {
        self.bodies
    }
    /// Matrix dimension `n = B·d`.
    pub fn dimension(&self) -> usize {
        self.bodies * self.block
    }
    /// The blocks `(i, j)`, `i ≤ j`, in storage order.
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }
    /// Number of stored blocks (diagonal included).
    pub fn blocks(&self) -> usize {
        self.pairs.len()
    }
    /// Stored scalars, `blocks · d²`.
    pub fn stored_values(&self) -> usize {
        self.pairs.len() * self.block * self.block
    }
    /// True when every block is on the diagonal.
    pub fn is_block_diagonal(&self) -> bool {
        self.pairs.len() == self.bodies
    }
    /// Index of the diagonal block of body `i`.
    pub fn diagonal(&self, i: usize) -> usize {
        self.row_start[i] as usize
    }
    /// Index of block `(i, j)` (`i ≤ j`), if stored.
    pub fn find(&self, i: usize, j: usize) -> Option<usize> {
        assert!(i <= j);
        let (lo, hi) = (self.row_start[i] as usize, self.row_start[i + 1] as usize);
        self.pairs[lo..hi]
            .binary_search(&(i as u32, j as u32))
            .ok()
            .map(|k| lo + k)
    }
}

/// A symmetric matrix in a [`BlockLayout`] (the `Matrix` of `Vec<f64>` coordinates): the upper
/// block triangle, block `k` at `values[k·d² .. (k+1)·d²]`, row-major.
#[derive(Debug, Clone)]
pub struct SparseMatrix {
    layout: Arc<BlockLayout>,
    values: Vec<f64>,
}

impl SparseMatrix {
    /// The zero matrix of `layout`.
    pub fn zeros(layout: Arc<BlockLayout>) -> Self {
        let values = vec![0.0; layout.stored_values()];
        Self { layout, values }
    }
    /// The pattern.
    pub fn layout(&self) -> &Arc<BlockLayout> {
        &self.layout
    }
    /// The stored values (see the type docs for the order).
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// The stored values, mutably.
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }
    /// Set every stored value to zero.
    pub fn fill_zero(&mut self) {
        self.values.fill(0.0);
    }
    /// Block `k`, row-major `d × d`.
    pub fn block(&self, k: usize) -> &[f64] {
        let dd = self.layout.block * self.layout.block;
        &self.values[k * dd..(k + 1) * dd]
    }
    /// Block `k`, mutably.
    pub fn block_mut(&mut self, k: usize) -> &mut [f64] {
        let dd = self.layout.block * self.layout.block;
        &mut self.values[k * dd..(k + 1) * dd]
    }
    /// Entry `(r, c)` (zero outside the pattern).
    pub fn get(&self, r: usize, c: usize) -> f64 {
        let d = self.layout.block;
        let (bi, bj, ri, cj) = (r / d, c / d, r % d, c % d);
        let found = if bi <= bj {
            self.layout.find(bi, bj).map(|k| (k, ri, cj))
        } else {
            self.layout.find(bj, bi).map(|k| (k, cj, ri))
        };
        found.map_or(0.0, |(k, a, b)| self.block(k)[a * d + b])
    }
    /// The full matrix, row-major (`n × n`; for tests and small systems).
    pub fn to_dense(&self) -> Vec<Vec<f64>> {
        let n = self.layout.dimension();
        (0..n)
            .map(|r| (0..n).map(|c| self.get(r, c)).collect())
            .collect()
    }
    /// The full matrix into `out`, row-major (`n × n`, both triangles): each stored block once.
    ///
    /// # Panics
    /// If `out` does not have `n²` entries.
    pub fn dense_into(&self, out: &mut [f64]) {
        let (n, d) = (self.layout.dimension(), self.layout.block);
        assert_eq!(out.len(), n * n, "dense_into: n² entries");
        out.fill(0.0);
        for (k, &(bi, bj)) in self.layout.pairs().iter().enumerate() {
            let (bi, bj) = (bi as usize * d, bj as usize * d);
            for (a, row) in self.block(k).chunks_exact(d).enumerate() {
                for (b, &v) in row.iter().enumerate() {
                    out[(bi + a) * n + bj + b] = v;
                    out[(bj + b) * n + bi + a] = v;
                }
            }
        }
    }
    /// Every nonzero entry of the full symmetric matrix (both triangles) as `(row, column,
    /// value)`, blocks in pattern order: the standard exchange form (faer's
    /// `SparseColMat::try_new_from_triplets`, SciPy's `coo_matrix`, Matrix Market).
    pub fn triplets(&self) -> Vec<(usize, usize, f64)> {
        let d = self.layout.block;
        let mut out = Vec::with_capacity(2 * self.values.len());
        for (k, &(bi, bj)) in self.layout.pairs().iter().enumerate() {
            let (bi, bj) = (bi as usize * d, bj as usize * d);
            for (a, row) in self.block(k).chunks_exact(d).enumerate() {
                for (b, &v) in row.iter().enumerate() {
                    if v != 0.0 {
                        out.push((bi + a, bj + b, v));
                        if bi != bj {
                            out.push((bj + b, bi + a, v));
                        }
                    }
                }
            }
        }
        out
    }
    /// True when every stored value is finite.
    pub fn is_finite(&self) -> bool {
        self.values.iter().all(|v| v.is_finite())
    }
    /// `y += self · x` (symmetric: each off-diagonal block also acts transposed).
    pub fn mul_add(&self, x: &[f64], y: &mut [f64]) {
        let d = self.layout.block;
        for (k, &(i, j)) in self.layout.pairs.iter().enumerate() {
            let (i, j) = (i as usize, j as usize);
            let b = self.block(k);
            for r in 0..d {
                for c in 0..d {
                    let v = b[r * d + c];
                    y[i * d + r] += v * x[j * d + c];
                    if i != j {
                        y[j * d + c] += v * x[i * d + r];
                    }
                }
            }
        }
    }
}

/// Which backend a [`SparseSolver`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// [`Backend::BlockDiagonal`] when the layout is block diagonal with blocks of at most
    /// [`MAX_BLOCK`] coordinates, [`Backend::Banded`] when its half-bandwidth after ordering is
    /// at most [`MAX_AUTO_BANDWIDTH`], [`Backend::Sparse`] otherwise.
    #[default]
    Auto,
    /// One dense unrolled solve per body (block-diagonal layouts only).
    BlockDiagonal,
    /// A banded `LDLᵀ` after a reverse Cuthill–McKee ordering of the bodies (any layout; what
    /// [`Backend::Auto`] picks for chains, rings, polymers), falling back to [`Backend::Sparse`]
    /// on an indefinite matrix it cannot factor accurately.
    Banded,
    /// faer's sparse symmetric factorization (any layout). Without the `faer` feature, the
    /// banded backend at whatever bandwidth the layout has.
    Sparse,
}

/// Largest accepted relative backward error `‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞)` of an unpivoted
/// `LDLᵀ` of an indefinite matrix (banded and faer backends): without pivoting nothing bounds
/// the growth of the factors, so the residual is the guard.
pub(crate) const BACKWARD_TOLERANCE: f64 = 1e-12;

/// [`Backend::Auto`] uses the banded backend up to this half-bandwidth (in scalars) after
/// ordering; beyond, the general sparse one.
pub const MAX_AUTO_BANDWIDTH: usize = 48;

/// The shifted solve for [`SparseMatrix`] (see the [module docs](self)).
#[derive(Debug)]
pub struct SparseSolver {
    layout: Arc<BlockLayout>,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Block(block::BlockDiagonal),
    Banded(Box<banded::Banded>),
    #[cfg(feature = "faer")]
    Sparse(Box<faer_backend::FaerSolver>),
}

impl SparseSolver {
    /// The solver for `layout` (set-up: for [`Backend::Sparse`] the symbolic factorizations and
    /// every scratch buffer are made here).
    ///
    /// # Panics
    /// If [`Backend::BlockDiagonal`] is asked for a layout with off-diagonal blocks or blocks
    /// larger than [`MAX_BLOCK`], or faer cannot analyse the pattern (out of memory).
    pub fn new(layout: Arc<BlockLayout>, backend: Backend) -> Self {
        let block_ok = layout.is_block_diagonal() && layout.block() <= MAX_BLOCK;
        let inner = match backend {
            Backend::BlockDiagonal => {
                assert!(
                    block_ok,
                    "Backend::BlockDiagonal needs a block-diagonal layout with blocks of at most \
                     {MAX_BLOCK} coordinates"
                );
                Inner::Block(block::BlockDiagonal::new(&layout))
            }
            Backend::Auto if block_ok => Inner::Block(block::BlockDiagonal::new(&layout)),
            Backend::Auto | Backend::Banded | Backend::Sparse => {
                banded_or_general(&layout, backend)
            }
        };
        Self { layout, inner }
    }

    /// The backend in use.
    #[must_use]
    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Block(_) => Backend::BlockDiagonal,
            Inner::Banded(_) => Backend::Banded,
            #[cfg(feature = "faer")]
            Inner::Sparse(_) => Backend::Sparse,
        }
    }

    /// The half-bandwidth of the banded backend (in scalars, after ordering), if in use.
    pub fn half_bandwidth(&self) -> Option<usize> {
        match &self.inner {
            Inner::Banded(b) => Some(b.half_bandwidth()),
            _ => None,
        }
    }

    /// The layout it solves for.
    pub fn layout(&self) -> &Arc<BlockLayout> {
        &self.layout
    }
}

/// The banded backend, or faer's general one when asked for ([`Backend::Sparse`]) or when
/// [`Backend::Auto`] finds the band too wide (with the `faer` feature).
fn banded_or_general(layout: &Arc<BlockLayout>, backend: Backend) -> Inner {
    #[cfg(feature = "faer")]
    if backend == Backend::Sparse {
        return Inner::Sparse(Box::new(faer_backend::FaerSolver::new(layout.clone())));
    }
    let (order, width) = banded::rcm(layout);
    let band = (width + 1) * layout.block() - 1;
    #[cfg(feature = "faer")]
    if backend == Backend::Auto && band > MAX_AUTO_BANDWIDTH {
        return Inner::Sparse(Box::new(faer_backend::FaerSolver::new(layout.clone())));
    }
    let _ = (backend, band);
    Inner::Banded(Box::new(banded::Banded::new(layout.clone(), &order, width)))
}

impl ShiftedSolve<Vec<f64>> for SparseSolver {
    type Matrix = SparseMatrix;

    fn solve_shifted(
        &mut self,
        masses: &Vec<f64>,
        scale: f64,
        hessian: &SparseMatrix,
        x: &mut Vec<f64>,
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        assert!(
            Arc::ptr_eq(&self.layout, &hessian.layout) || self.layout.id == hessian.layout.id,
            "SparseSolver: the matrix is of another layout"
        );
        let n = self.layout.dimension();
        assert!(
            masses.len() == n && x.len() == n,
            "SparseSolver: dimension {n}, masses {} and right-hand side {}",
            masses.len(),
            x.len()
        );
        match &mut self.inner {
            Inner::Block(b) => b.solve(masses, scale, hessian, x, options),
            Inner::Banded(b) => b.solve(masses, scale, hessian, x, options),
            #[cfg(feature = "faer")]
            Inner::Sparse(s) => s.solve(masses, scale, hessian, x, options),
        }
    }
}
