//! The banded backend: chains, rings and polymers, whose Hessians have a small bandwidth once
//! their bodies are suitably ordered.
//!
//! Set-up: a reverse Cuthill–McKee ordering of the bodies (a breadth-first numbering from a
//! body of least degree, reversed), which puts a chain in order and folds a ring
//! (`0, 1, n−1, 2, n−2, …`: bandwidth two bodies instead of `n`); the scalar half-bandwidth `b`
//! that results; a map from each entry of the band to the stored Hessian value it comes from.
//!
//! Each solve: gather `M + s·H` into the band (`n·(b+1)` values), factor `L D Lᵀ` without
//! pivoting (`O(n b²)`, no square roots), solve (`O(n b)`). Accepted as
//! [`Factorization::Cholesky`] when every pivot is positive and `min d ≥ n·ε·max d` (the dense
//! backend's test); as [`Factorization::Ldlt`] when some pivot is negative (indefinite) but the
//! pivots are balanced and the backward error is below [`BACKWARD_TOLERANCE`]; otherwise the
//! solve is handed to the general sparse backend ([`super::faer_backend`]: `LDLᵀ`, pivoting LU,
//! singular detection), made at set-up — or, without the `faer` feature, it fails with
//! [`SolveFailure::NeedsFaer`]. For the DNA ring (`n = 200`, `b = 2`) this takes about a
//! microsecond where the general backend, whose per-call overheads dominate at this size, takes
//! ten (`BENCHMARKS.md`).

use std::sync::Arc;

#[cfg(feature = "faer")]
use super::faer_backend::FaerSolver;
use super::{BACKWARD_TOLERANCE, BlockLayout, SparseMatrix};
use crate::linalg::inverse_norm_estimate;
use crate::linalg::{Factorization, Operand, SolveFailure, SolveOptions, singular_threshold};

/// Marks a band entry outside the pattern (structurally zero).
const ZERO: u32 = u32::MAX;

pub(super) struct Banded {
    n: usize,
    /// Half-bandwidth `b`.
    band: usize,
    /// `perm[new] = old` scalar index, and its inverse.
    perm: Vec<u32>,
    /// For each band entry (row `i`, column `i − b + k`, row-major `(b+1)` per row): the index
    /// of its value in the stored Hessian, or [`ZERO`].
    src: Vec<u32>,
    /// The factor: `L` below the diagonal in band storage, `D` on it.
    lb: Vec<f64>,
    /// Scratch: the permuted right-hand side and residual.
    y: Vec<f64>,
    r: Vec<f64>,
    #[cfg(feature = "faer")]
    fallback: Box<FaerSolver>,
    /// Scratch of the condition estimate (three vectors, column sums, a permuted vector).
    work: [Vec<f64>; 5],
}

impl core::fmt::Debug for Banded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Banded")
            .field("n", &self.n)
            .field("half_bandwidth", &self.band)
            .finish_non_exhaustive()
    }
}

/// The reverse Cuthill–McKee order of the bodies of `layout` and the half-bandwidth in bodies
/// it gives.
pub(super) fn rcm(layout: &BlockLayout) -> (Vec<u32>, usize) {
    let nb = layout.bodies();
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); nb];
    for &(i, j) in layout.pairs() {
        if i != j {
            adj[i as usize].push(j);
            adj[j as usize].push(i);
        }
    }
    for a in &mut adj {
        a.sort_unstable();
        a.dedup();
    }
    let mut order = Vec::with_capacity(nb);
    let mut seen = vec![false; nb];
    // Each connected component from a node of least degree; neighbours by increasing degree.
    let mut by_degree: Vec<u32> = (0..nb as u32).collect();
    by_degree.sort_by_key(|&k| (adj[k as usize].len(), k));
    for &start in &by_degree {
        if seen[start as usize] {
            continue;
        }
        seen[start as usize] = true;
        let mut head = order.len();
        order.push(start);
        while head < order.len() {
            let v = order[head] as usize;
            head += 1;
            let mut next: Vec<u32> = adj[v]
                .iter()
                .copied()
                .filter(|&w| !seen[w as usize])
                .collect();
            next.sort_by_key(|&w| (adj[w as usize].len(), w));
            for w in next {
                seen[w as usize] = true;
                order.push(w);
            }
        }
    }
    order.reverse();
    let mut pos = vec![0u32; nb];
    for (p, &b) in order.iter().enumerate() {
        pos[b as usize] = p as u32;
    }
    let width = layout
        .pairs()
        .iter()
        .map(|&(i, j)| (pos[i as usize] as i64 - pos[j as usize] as i64).unsigned_abs() as usize)
        .max()
        .unwrap_or(0);
    (order, width)
}

impl Banded {
    /// The banded solver for `layout` with the RCM `order` of its bodies and that order's
    /// half-bandwidth `width` (in bodies).
    pub(super) fn new(layout: Arc<BlockLayout>, order: &[u32], width: usize) -> Self {
        let d = layout.block();
        let n = layout.dimension();
        let band = (width + 1) * d - 1;
        let mut pos = vec![0u32; layout.bodies()];
        for (p, &b) in order.iter().enumerate() {
            pos[b as usize] = p as u32;
        }
        let mut perm = vec![0u32; n];
        for (p, &b) in order.iter().enumerate() {
            for l in 0..d {
                perm[p * d + l] = (b as usize * d + l) as u32;
            }
        }
        let mut src = vec![ZERO; n * (band + 1)];
        for (k, &(bi, bj)) in layout.pairs().iter().enumerate() {
            for r in 0..d {
                for c in 0..d {
                    // Entry (r, c) of block (bi, bj) is A[bi·d + r][bj·d + c].
                    let rr = pos[bi as usize] as usize * d + r;
                    let cc = pos[bj as usize] as usize * d + c;
                    let (i, j) = if rr >= cc { (rr, cc) } else { (cc, rr) };
                    src[i * (band + 1) + band - (i - j)] = (k * d * d + r * d + c) as u32;
                }
            }
        }
        Self {
            #[cfg(feature = "faer")]
            fallback: Box::new(FaerSolver::new(layout)),
            n,
            band,
            perm,
            src,
            lb: vec![0.0; n * (band + 1)],
            y: vec![0.0; n],
            r: vec![0.0; n],
            work: [
                vec![0.0; n],
                vec![0.0; n],
                vec![0.0; n],
                vec![0.0; n],
                vec![0.0; n],
            ],
        }
    }

    /// The half-bandwidth.
    pub(super) fn half_bandwidth(&self) -> usize {
        self.band
    }

    /// `L D Lᵀ` of `M + s·H` in place (the band then holds `L` below the diagonal and `1/d` on
    /// it); `(min, max)` of `|d|`, and whether every pivot is positive. `None` on a zero or
    /// non-finite pivot (which a non-finite matrix entry always causes).
    ///
    /// The forward sweep `y = L⁻¹ P x` of the solve is done in the same pass.
    fn factor(&mut self, masses: &[f64], scale: f64, h: &[f64], x: &[f64]) -> Option<Pivots> {
        let a = Entries {
            src: &self.src,
            h,
            scale,
            masses,
            perm: &self.perm,
        };
        let (lb, n, y) = (&mut self.lb, self.n, &mut self.y);
        macro_rules! dispatch {
            ($($b:literal)*) => {
                match self.band {
                    $($b => factor_fixed::<$b>(a, lb, n, x, y),)*
                    _ => {
                        let p = factor_any(a, lb, n, self.band, &mut self.r)?;
                        forward_any(lb, n, self.band, &self.perm, x, y);
                        Some(p)
                    }
                }
            };
        }
        dispatch!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }

    /// The backward sweep of the solve, on `y`.
    fn backward(lb: &[f64], n: usize, b: usize, y: &mut [f64]) {
        macro_rules! dispatch {
            ($($b:literal)*) => {
                match b {
                    $($b => backward_fixed::<$b>(lb, n, y),)*
                    _ => backward_any(lb, n, b, y),
                }
            };
        }
        dispatch!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }

    /// `y ← A⁻¹ P x` with the factor (`y` in the new numbering, `x` in the old).
    fn solve_factored(lb: &[f64], n: usize, b: usize, perm: &[u32], x: &[f64], y: &mut [f64]) {
        macro_rules! dispatch {
            ($($b:literal)*) => {
                match b {
                    $($b => solve_fixed::<$b>(lb, n, perm, x, y),)*
                    _ => solve_any(lb, n, b, perm, x, y),
                }
            };
        }
        dispatch!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }

    pub(super) fn solve(
        &mut self,
        masses: &[f64],
        scale: f64,
        h: &SparseMatrix,
        x: &mut [f64],
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        // A non-finite matrix entry gives a non-finite pivot: the fallback then reports it.
        if !crate::linalg::slice_finite(x) {
            return Err(SolveFailure::NonFinite(Operand::RightHandSide));
        }
        let (n, b) = (self.n, self.band);
        let Some((lo, hi, positive)) = self.factor(masses, scale, h.values(), x) else {
            return self.fallback(masses, scale, h, x, options);
        };
        if lo < singular_threshold(n) * hi {
            return self.fallback(masses, scale, h, x, options);
        }
        Self::backward(&self.lb, n, b, &mut self.y);
        if !positive {
            // No pivoting: accept an indefinite factorization only with a small backward
            // error, measured on the unfactored matrix.
            self.gather_residual(masses, scale, h.values(), x);
            // NaN compares false, so a NaN backward error also falls back.
            let accepted = self.backward_error(x) <= BACKWARD_TOLERANCE;
            if !accepted {
                return self.fallback(masses, scale, h, x, options);
            }
        }
        if options.max_condition < f64::INFINITY {
            self.check_condition(masses, scale, h, options.max_condition)?;
        }
        for (i, &old) in self.perm.iter().enumerate() {
            x[old as usize] = self.y[i];
        }
        if crate::linalg::slice_finite(x) {
            Ok(if positive {
                Factorization::Cholesky
            } else {
                Factorization::Ldlt
            })
        } else {
            Err(SolveFailure::NonFinite(Operand::Solution))
        }
    }

    /// A solve the unpivoted `LDLᵀ` could not do: faer's pivoting factorizations, or without
    /// them the failure (a non-finite matrix named as such).
    #[cold]
    fn fallback(
        &mut self,
        masses: &[f64],
        scale: f64,
        h: &SparseMatrix,
        x: &mut [f64],
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        #[cfg(feature = "faer")]
        return self.fallback.solve(masses, scale, h, x, options);
        #[cfg(not(feature = "faer"))]
        {
            let _ = (masses, scale, x, options);
            if !h.is_finite() || !masses.iter().all(|m| m.is_finite()) || !scale.is_finite() {
                return Err(SolveFailure::NonFinite(Operand::Matrix));
            }
            Err(SolveFailure::NeedsFaer {
                n: self.n,
                reason: "is indefinite or ill-balanced and needs a pivoting factorization",
            })
        }
    }

    /// `r = b − A y` in the new numbering (`x` holds `b` in the old one), `A = M + s·H` read
    /// back from the stored Hessian through the source map (the band holds the factor).
    fn gather_residual(&mut self, masses: &[f64], scale: f64, h: &[f64], x: &[f64]) {
        let (n, b) = (self.n, self.band);
        let w = b + 1;
        for (i, &old) in self.perm.iter().enumerate() {
            self.r[i] = x[old as usize];
        }
        let rows = &mut self.work[3];
        rows.fill(0.0);
        for i in 0..n {
            for k in 0..=b {
                let s = self.src[i * w + k];
                let j = (i + k) as isize - b as isize;
                if j < 0 {
                    continue;
                }
                let j = j as usize;
                let mut a = if s == ZERO {
                    0.0
                } else {
                    scale * h[s as usize]
                };
                if j == i {
                    a += masses[self.perm[i] as usize];
                }
                if a == 0.0 {
                    continue;
                }
                self.r[i] -= a * self.y[j];
                rows[i] += a.abs();
                if j != i {
                    self.r[j] -= a * self.y[i];
                    rows[j] += a.abs();
                }
            }
        }
    }

    /// `‖r‖∞ / (‖A‖∞ ‖y‖∞ + ‖b‖∞)`, `‖A‖∞` from the row sums [`Banded::gather_residual`]
    /// accumulated in `work[3]`.
    fn backward_error(&self, x: &[f64]) -> f64 {
        let norm = |v: &[f64]| v.iter().fold(0.0f64, |m, z| m.max(z.abs()));
        let a_norm = norm(&self.work[3]);
        let denom = a_norm * norm(&self.y) + norm(x);
        if denom == 0.0 {
            0.0
        } else {
            norm(&self.r) / denom
        }
    }

    fn check_condition(
        &mut self,
        masses: &[f64],
        scale: f64,
        h: &SparseMatrix,
        limit: f64,
    ) -> Result<(), SolveFailure> {
        // ‖A‖₁ from the stored matrix (both triangles).
        let [x, s, z, sums, tmp] = &mut self.work;
        sums.fill(0.0);
        let d = h.layout().block();
        for (k, &(bi, bj)) in h.layout().pairs().iter().enumerate() {
            let blk = h.block(k);
            for r in 0..d {
                for c in 0..d {
                    let v = (scale * blk[r * d + c]).abs();
                    sums[bj as usize * d + c] += v;
                    if bi != bj {
                        sums[bi as usize * d + r] += v;
                    }
                }
            }
        }
        for (s, m) in sums.iter_mut().zip(masses) {
            *s += m.abs();
        }
        let a_norm = sums.iter().fold(0.0f64, |m, v| m.max(*v));
        let (n, b) = (self.n, self.band);
        let (lb, perm) = (&self.lb, &self.perm);
        let inv = inverse_norm_estimate(
            n,
            |v| {
                Self::solve_factored(lb, n, b, perm, v, tmp);
                for (i, &old) in perm.iter().enumerate() {
                    v[old as usize] = tmp[i];
                }
            },
            x,
            s,
            z,
        );
        let condition = a_norm * inv;
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
}

/// The entries of `M + s·H` in the band's numbering, read from the stored Hessian through the
/// source map (gathered as the factorization reaches them: no separate pass).
#[derive(Clone, Copy)]
struct Entries<'a> {
    src: &'a [u32],
    h: &'a [f64],
    scale: f64,
    masses: &'a [f64],
    perm: &'a [u32],
}

impl Entries<'_> {
    /// Entry `(i, i − b + k)` (slot `k < b` of row `i`; `b` the half-bandwidth, `w = b + 1`).
    #[inline(always)]
    fn off(&self, i: usize, w: usize, k: usize) -> f64 {
        let s = self.src[i * w + k];
        if s == ZERO {
            0.0
        } else {
            self.scale * self.h[s as usize]
        }
    }
    /// The diagonal entry of row `i`.
    #[inline(always)]
    fn diag(&self, i: usize, w: usize) -> f64 {
        self.off(i, w, w - 1) + self.masses[self.perm[i] as usize]
    }
}

/// Pivot statistics of a factorization: `(min |d|, max |d|, every d > 0)`.
type Pivots = (f64, f64, bool);

/// Banded `L D Lᵀ` of `M + s·H` for a half-bandwidth `B` known at compile time: row by row,
/// `u_k = a_ik − Σ_m u_m L_km` (`u_k = L_ik d_k`), `L_ik = u_k / d_k`, `d_i = a_ii − Σ_k u_k L_ik`;
/// `lb` receives `L` (row `i` holds column `i − B + k` at slot `k < B`) and `1/d_i` at slot `B`.
/// The last `B` rows' `L` and `1/d` stay in registers (a window), so the chain from one pivot
/// to the next does not go through memory; the rows after the first `B` run with the loops
/// fully unrolled. The forward sweep `L z = P x` runs in the same loop (`z` into `y`): its
/// chain overlaps the pivots'. `None` on a zero or non-finite pivot (which a non-finite entry
/// causes).
fn factor_fixed<const B: usize>(
    a: Entries<'_>,
    lb: &mut [f64],
    n: usize,
    x: &[f64],
    y: &mut [f64],
) -> Option<Pivots> {
    let mut win = Window::<B> {
        l: [[0.0; B]; B],
        inv: [0.0; B],
        z: [0.0; B],
        lo: f64::INFINITY,
        hi: 0.0,
        positive: true,
    };
    let head = B.min(n);
    for i in 0..head {
        factor_row(&a, lb, i, B - i, &mut win, x, y)?;
    }
    for i in head..n {
        factor_row(&a, lb, i, 0, &mut win, x, y)?;
    }
    Some((win.lo, win.hi, win.positive))
}

/// The state [`factor_fixed`] carries from row to row: the last `B` rows' `L` (`l[k]`: row
/// `i − B + k`), `1/d` and forward-sweep values, and the pivot statistics.
struct Window<const B: usize> {
    l: [[f64; B]; B],
    inv: [f64; B],
    /// The forward sweep's last `B` values `z` (`L z = P b`).
    z: [f64; B],
    lo: f64,
    hi: f64,
    positive: bool,
}

/// Row `i` of [`factor_fixed`]; `first` is the first slot inside the matrix (`B − i` for the
/// first `B` rows, 0 after: a constant there, so the loops unroll).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn factor_row<const B: usize>(
    a: &Entries<'_>,
    lb: &mut [f64],
    i: usize,
    first: usize,
    win: &mut Window<B>,
    x: &[f64],
    y: &mut [f64],
) -> Option<()> {
    let w = B + 1;
    let mut u = [0.0; B];
    let mut l = [0.0; B];
    for k in first..B {
        let mut s = a.off(i, w, k);
        // Row i − B + k holds column i − B + m at slot B − k + m.
        for m in first..k {
            s -= u[m] * win.l[k][B - k + m];
        }
        u[k] = s;
        l[k] = s * win.inv[k];
    }
    let mut d = a.diag(i, w);
    for k in first..B {
        d -= u[k] * l[k];
    }
    if d == 0.0 || !d.is_finite() {
        return None;
    }
    win.positive &= d > 0.0;
    let m = d.abs();
    win.lo = if m < win.lo { m } else { win.lo };
    win.hi = if m > win.hi { m } else { win.hi };
    let inv = 1.0 / d;
    lb[i * w..i * w + B].copy_from_slice(&l);
    lb[i * w + B] = inv;
    // The forward sweep's row i, off the pivots' dependency chain.
    let mut z = x[a.perm[i] as usize];
    for k in first..B {
        z -= l[k] * win.z[k];
    }
    y[i] = z;
    if B > 0 {
        for k in 1..B {
            win.l[k - 1] = win.l[k];
            win.inv[k - 1] = win.inv[k];
            win.z[k - 1] = win.z[k];
        }
        win.l[B - 1] = l;
        win.inv[B - 1] = inv;
        win.z[B - 1] = z;
    }
    Some(())
}

/// [`factor_fixed`] for any half-bandwidth (`u` has room for `b` values).
#[allow(clippy::needless_range_loop)]
fn factor_any(a: Entries<'_>, lb: &mut [f64], n: usize, b: usize, u: &mut [f64]) -> Option<Pivots> {
    let w = b + 1;
    let (mut lo, mut hi, mut positive) = (f64::INFINITY, 0.0f64, true);
    for i in 0..n {
        let first = b - b.min(i);
        for k in first..b {
            let col = i + k - b;
            let mut s = a.off(i, w, k);
            for m in first..k {
                s -= u[m] * lb[col * w + b - k + m];
            }
            u[k] = s;
            lb[i * w + k] = s * lb[col * w + b];
        }
        let mut d = a.diag(i, w);
        for k in first..b {
            d -= u[k] * lb[i * w + k];
        }
        if d == 0.0 || !d.is_finite() {
            return None;
        }
        positive &= d > 0.0;
        lo = lo.min(d.abs());
        hi = hi.max(d.abs());
        lb[i * w + b] = 1.0 / d;
    }
    Some((lo, hi, positive))
}

/// `y ← (L D Lᵀ)⁻¹ P b` for a compile-time half-bandwidth `B`, `b = x` in the old numbering
/// (`y[i] = x[perm[i]]` is gathered by the forward sweep). The last `B` values of each sweep
/// stay in registers.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn solve_fixed<const B: usize>(lb: &[f64], n: usize, perm: &[u32], x: &[f64], y: &mut [f64]) {
    forward_fixed::<B>(lb, n, perm, x, y);
    backward_fixed::<B>(lb, n, y);
}

/// The forward sweep of [`solve_fixed`]: `y = L⁻¹ P x`.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn forward_fixed<const B: usize>(lb: &[f64], n: usize, perm: &[u32], x: &[f64], y: &mut [f64]) {
    let w = B + 1;
    // win[k] = z_{i − B + k}.
    let mut win = [0.0; B];
    for i in 0..n {
        let mut s = x[perm[i] as usize];
        let l = &lb[i * w..i * w + B];
        for k in 0..B {
            s -= l[k] * win[k];
        }
        y[i] = s;
        if B > 0 {
            for k in 1..B {
                win[k - 1] = win[k];
            }
            win[B - 1] = s;
        }
    }
}

/// The backward sweep of [`solve_fixed`]: `y ← L⁻ᵀ D⁻¹ y`.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn backward_fixed<const B: usize>(lb: &[f64], n: usize, y: &mut [f64]) {
    let w = B + 1;
    // win[t − 1] = y_{i + t}; row i + t holds column i at slot B − t.
    let mut win = [0.0; B];
    for i in (0..n).rev() {
        let mut s = y[i] * lb[i * w + B];
        for t in 1..=B {
            if i + t < n {
                s -= lb[(i + t) * w + B - t] * win[t - 1];
            }
        }
        y[i] = s;
        if B > 0 {
            for t in (1..B).rev() {
                win[t] = win[t - 1];
            }
            win[0] = s;
        }
    }
}

/// [`solve_fixed`] for any half-bandwidth.
fn solve_any(lb: &[f64], n: usize, b: usize, perm: &[u32], x: &[f64], y: &mut [f64]) {
    forward_any(lb, n, b, perm, x, y);
    backward_any(lb, n, b, y);
}

/// The forward sweep of [`solve_any`].
fn forward_any(lb: &[f64], n: usize, b: usize, perm: &[u32], x: &[f64], y: &mut [f64]) {
    let w = b + 1;
    for i in 0..n {
        let first = b - b.min(i);
        let mut s = x[perm[i] as usize];
        for k in first..b {
            s -= lb[i * w + k] * y[i + k - b];
        }
        y[i] = s;
    }
}

/// The backward sweep of [`solve_any`].
fn backward_any(lb: &[f64], n: usize, b: usize, y: &mut [f64]) {
    let w = b + 1;
    for i in (0..n).rev() {
        let mut s = y[i] * lb[i * w + b];
        for t in 1..=b {
            let r = i + t;
            if r < n {
                s -= lb[r * w + b - t] * y[r];
            }
        }
        y[i] = s;
    }
}
