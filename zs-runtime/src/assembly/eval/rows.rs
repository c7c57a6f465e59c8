//! The energy and gradient of a pair form under a cutoff, by rows of a full neighbour list:
//! each free body's partners — both directions of every pair of the Verlet list — in one row,
//! the body's own gradient summed in registers and nothing added into the partners'. It
//! evaluates every pair twice, where the half list of the term passes evaluates it once, but it
//! needs no partials, no phase-B sum and no scatter, and its rows are independent: the pass
//! scales with the threads. (LAMMPS's `newton off` and the full lists of its GPU and KOKKOS
//! packages make the same trade.) The half list stays for the Hessians, third contractions and
//! pinned bodies (term passes) and, on narrower lanes, for the energy and gradient
//! ([`HalfRows`](super::half_rows::HalfRows)).
//!
//! The bits do not depend on the instruction set or the thread count. A row's partners are
//! visited in blocks of [`BLOCK`]; entry `8b + v` goes to virtual lane `v`, which on 8 lanes
//! is lane `v`, on 4 lanes lane `v mod 4` of the block's second half when `v ≥ 4`, on one lane
//! its own accumulator: every virtual lane adds the same values in the same order, and the
//! eight are added in one fixed tree. Rows are split into fixed chunks of [`ROWS`] whose
//! energies are added in chunk order. Each pair's energy is counted once, by the row of its
//! lower body. Every entry evaluates the term as the half list holds it, `(i, j)` with `i < j`
//! (nearest image of `j` next to `i`), and the row takes the gradient of its own body: a pair
//! function need not be symmetric in its two bodies.

use rayon::prelude::*;

use super::super::forms::Form;
use super::super::neighbors::group_stably;
use super::super::terms::{Kernel, Kinds};
use super::{minimum_image, Inputs};
use crate::simd::{self, Lanes, WithLanes};

/// Partners per block: the widest lanes (narrower ones take a block in several parts).
pub(crate) const BLOCK: usize = 8;
/// Rows per parallel chunk; fixed, so the chunk energies are the same whatever the threads.
const ROWS: usize = 64;
/// Rows group their partners by types up to this many types.
const MOST_TYPES: usize = 8;

/// A full neighbour list by rows (all bodies free, so body and free index agree), and the
/// outputs of its last pass.
#[derive(Debug, Default)]
pub(crate) struct PairRows {
    /// Row `i`'s partners are `partner[start[i] .. start[i] + len[i]]`, padded to whole
    /// blocks with copies of the row's last partner (masked out).
    start: Vec<u32>,
    len: Vec<u32>,
    /// Row `i`'s partners from this position on are above `i`: the row counts the energy of
    /// those pairs, so every pair's once.
    upper: Vec<u32>,
    partner: Vec<[u32; 1]>,
    /// Scratch of [`PairRows::rebuild`]: each row's next positions, and a row's part while its
    /// partners are grouped by types.
    fill: Vec<u32>,
    grouping: Vec<[u32; 1]>,
    /// Per free body, its gradient (three coordinates per body); the last gradient pass's.
    pub grad: Vec<f64>,
    /// Per chunk of [`ROWS`] rows, the energy of its pairs; the last pass's.
    pub sums: Vec<f64>,
}

impl PairRows {
    /// The rows of the pairs `pairs` (`i < j`, bodies below `n`) of `n` free bodies; `false`
    /// (and no rows) when the pairs are not such a half list. Row `i` holds first its partners
    /// below `i`, then those above, each part in the order of `pairs` (the cell list's: one
    /// order for given positions, whatever the threads) — grouped by the partners' types
    /// `kinds` when given (empty: untyped) and there are at most [`MOST_TYPES`], so that
    /// blocks of partners mostly share their types and read each parameter once.
    pub fn rebuild(&mut self, pairs: &[[u32; 2]], n: usize, kinds: &[u32]) -> bool {
        let half = pairs.iter().all(|p| p[0] < p[1] && (p[1] as usize) < n);
        let fits = pairs.len().checked_mul(2).is_some_and(|m| {
            m.checked_add(n * (BLOCK - 1))
                .is_some_and(|m| u32::try_from(m).is_ok())
        });
        if !half || !fits {
            return false;
        }
        self.len.clear();
        self.len.resize(n, 0);
        self.upper.clear();
        self.upper.resize(n, 0);
        for p in pairs {
            self.len[p[0] as usize] += 1;
            self.len[p[1] as usize] += 1;
            self.upper[p[1] as usize] += 1;
        }
        self.start.clear();
        let mut at = 0u32;
        for &l in &self.len {
            self.start.push(at);
            at += l.div_ceil(BLOCK as u32) * BLOCK as u32;
        }
        self.start.push(at);
        self.partner.clear();
        self.partner.resize(at as usize, [0]);
        // Two cursors per row: `fill[i]` for the partners below `i`, `fill[n + i]` above.
        self.fill.clear();
        self.fill.extend_from_slice(&self.start[..n]);
        self.fill
            .extend(self.start[..n].iter().zip(&self.upper).map(|(s, u)| s + u));
        for p in pairs {
            let (i, j) = (p[0] as usize, p[1] as usize);
            self.partner[self.fill[n + i] as usize] = [p[1]];
            self.fill[n + i] += 1;
            self.partner[self.fill[j] as usize] = [p[0]];
            self.fill[j] += 1;
        }
        let types = kinds.iter().max().map_or(0, |&k| k as usize + 1);
        if (2..=MOST_TYPES).contains(&types) {
            for i in 0..n {
                let (start, upper) = (self.start[i] as usize, self.upper[i] as usize);
                let end = start + self.len[i] as usize;
                for part in [start..start + upper, start + upper..end] {
                    let of = |j: &[u32; 1]| kinds[j[0] as usize] as usize;
                    group_stably(&mut self.partner[part], of, &mut self.grouping);
                }
            }
        }
        for i in 0..n {
            let (from, to) = (self.fill[n + i] as usize, self.start[i + 1] as usize);
            if from > self.start[i] as usize {
                let last = self.partner[from - 1];
                self.partner[from..to].fill(last);
            }
        }
        self.grad.resize(n * 3, 0.0);
        self.sums.resize(n.div_ceil(ROWS), 0.0);
        true
    }

    /// The energy of every pair within the cutoff (into [`PairRows::sums`]) and, with
    /// `gradient`, each body's gradient (into [`PairRows::grad`]), at `input`.
    pub fn evaluate<T, F, const D: usize, const K: usize>(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        cut2: f64,
        gradient: bool,
    ) where
        T: Kernel<D, K, F>,
        F: Form,
    {
        assert!(D == 3 && K == 2, "rows of pairs of point bodies");
        let rows = Rows {
            start: &self.start,
            len: &self.len,
            upper: &self.upper,
            partner: &self.partner,
        };
        let chunk = |c: usize, grad: &mut [f64], sum: &mut f64| {
            *sum = simd::dispatch_with(
                input.isa,
                RowPass::<T, F, D, K> {
                    terms,
                    input,
                    rows: &rows,
                    first: c * ROWS,
                    grad,
                    cut2,
                    gradient,
                    form: core::marker::PhantomData,
                },
            );
        };
        if input.parallel {
            self.grad
                .par_chunks_mut(ROWS * D)
                .zip(self.sums.par_iter_mut())
                .enumerate()
                .for_each(|(c, (g, s))| chunk(c, g, s));
        } else {
            let grad = self.grad.chunks_mut(ROWS * D);
            for (c, (g, s)) in grad.zip(self.sums.iter_mut()).enumerate() {
                chunk(c, g, s);
            }
        }
    }
}

/// The rows a pass reads.
struct Rows<'a> {
    start: &'a [u32],
    len: &'a [u32],
    upper: &'a [u32],
    partner: &'a [[u32; 1]],
}

/// One chunk of rows: its bodies' gradients into `grad`, its energy returned.
struct RowPass<'a, T, F, const D: usize, const K: usize> {
    terms: &'a T,
    input: &'a Inputs<'a, D>,
    rows: &'a Rows<'a>,
    first: usize,
    grad: &'a mut [f64],
    cut2: f64,
    gradient: bool,
    form: core::marker::PhantomData<fn() -> F>,
}

/// `a[0] + … + a[7]` in one fixed tree.
#[inline(always)]
fn tree(a: &[f64; BLOCK]) -> f64 {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

/// The position of each lane in a block of [`BLOCK`] virtual lanes, per part of `L::WIDTH`.
#[inline(always)]
pub(super) fn block_positions<L: Lanes>() -> [L; BLOCK] {
    let w = L::WIDTH;
    let mut at = [L::splat(0.0); BLOCK];
    for (v, a) in at.iter_mut().enumerate().take(BLOCK / w) {
        *a = L::from_fn(|l| (v * w + l) as f64);
    }
    at
}

/// The sum of a row's [`BLOCK`] virtual lanes (`part(v)`: part `v`'s `L::WIDTH` of them) in
/// one fixed tree: the same bits on every width.
#[inline(always)]
pub(super) fn virtual_sum<L: Lanes>(part: impl Fn(usize) -> L) -> f64 {
    let w = L::WIDTH;
    let mut lanes = [0.0; BLOCK];
    for v in 0..BLOCK / w {
        part(v).store(&mut lanes[v * w..]);
    }
    tree(&lanes)
}

impl<T, F, const D: usize, const K: usize> WithLanes for RowPass<'_, T, F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    type Output = f64;

    #[inline(always)]
    fn run<L: Lanes>(self) -> f64 {
        let RowPass {
            terms,
            input,
            rows,
            first,
            grad,
            cut2,
            gradient,
            ..
        } = self;
        let (w, q) = (L::WIDTH, input.q);
        let parts = BLOCK / w;
        let zero = L::splat(0.0);
        let iota = block_positions::<L>();
        let mut kinds = [[0u32; K]; BLOCK];
        let mut energy = 0.0;
        for (i, g) in (first..).zip(grad.chunks_exact_mut(D)) {
            let (start, len) = (rows.start[i] as usize, rows.len[i] as usize);
            let upper = rows.upper[i] as usize;
            let (len_l, upper_l) = (L::splat(len as f64), L::splat(upper as f64));
            let xi = &q[i * D..i * D + D];
            let ki = input.kinds.get(i).copied().unwrap_or(0);
            let mut acc_g = [[zero; D]; BLOCK];
            let mut acc_e = [zero; BLOCK];
            for b in 0..len.div_ceil(BLOCK) {
                let offset = L::splat((b * BLOCK) as f64);
                for v in 0..parts {
                    let at = start + b * BLOCK + v * w;
                    let js = &rows.partner[at..at + w];
                    let at_row = iota[v] + offset;
                    // A partner below `i` is the pair's first body: the term is evaluated as
                    // the half list has it, `(j, i)`, and the row takes its second gradient
                    // (a pair function need not be symmetric in its bodies).
                    let below = at_row.lt(upper_l);
                    let xj = L::gather_bodies::<D, 1>(q, js, 0);
                    let mut x = [[zero; D]; K];
                    for d in 0..D {
                        let xid = L::splat(xi[d]);
                        x[0][d] = L::select(below, xj[d], xid);
                        x[K - 1][d] = L::select(below, xid, xj[d]);
                    }
                    if let Some(cell) = &input.cell {
                        minimum_image::<L, D, K>(&mut x, cell);
                    }
                    let mut r2 = zero;
                    for (&b, &a) in x[K - 1].iter().zip(&x[0]).take(3) {
                        let d = b - a;
                        r2 = r2 + d * d;
                    }
                    let keep = r2.lt(L::splat(cut2)) * at_row.lt(len_l);
                    let kinds: &[Kinds<K>] = if input.kinds.is_empty() {
                        &[]
                    } else {
                        for (l, (k, j)) in kinds.iter_mut().zip(js).enumerate() {
                            let kj = input.kinds[j[0] as usize];
                            *k = [ki; K];
                            k[if b * BLOCK + v * w + l < upper {
                                0
                            } else {
                                K - 1
                            }] = kj;
                        }
                        // One row for all lanes when they share their types (rows group
                        // their partners by types): each parameter read once.
                        if kinds[1..w].iter().all(|k| *k == kinds[0]) {
                            &kinds[..1]
                        } else {
                            &kinds[..w]
                        }
                    };
                    let e = if gradient {
                        let (e, gr) = terms.value_gradient_lanes(input.omega, &x, kinds);
                        for d in 0..D {
                            let own = L::select(below, gr[K - 1][d], gr[0][d]);
                            acc_g[v][d] = acc_g[v][d] + L::select(keep, own, zero);
                        }
                        e
                    } else {
                        terms.value_lanes(input.omega, &x, kinds)
                    };
                    let counted = keep * upper_l.le(at_row);
                    acc_e[v] = acc_e[v] + L::select(counted, e, zero);
                }
            }
            if gradient {
                for (d, gd) in g.iter_mut().enumerate() {
                    *gd = virtual_sum(|v| acc_g[v][d]);
                }
            }
            energy += virtual_sum(|v| acc_e[v]);
        }
        energy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each pair lands in both its bodies' rows — the partners below a body first, then those
    /// above, each in the list's order — padded to whole blocks with the last partner; a list
    /// that is not a half list (`i < j`, bodies in range) makes no rows.
    #[test]
    fn rows_hold_every_pair_from_both_ends_lower_partners_first() {
        let pairs = [[3, 5], [0, 3], [1, 3], [0, 5], [3, 4]];
        let mut rows = PairRows::default();
        assert!(rows.rebuild(&pairs, 6, &[]));
        let row = |i: usize| {
            let s = rows.start[i] as usize;
            let p: Vec<u32> = rows.partner[s..s + rows.len[i] as usize]
                .iter()
                .map(|p| p[0])
                .collect();
            (p, rows.upper[i] as usize)
        };
        assert_eq!(row(0), (vec![3, 5], 0));
        assert_eq!(row(2), (vec![], 0));
        assert_eq!(row(3), (vec![0, 1, 5, 4], 2));
        assert_eq!(row(5), (vec![3, 0], 2));
        for i in 0..6 {
            let (s, e) = (rows.start[i] as usize, rows.start[i + 1] as usize);
            assert_eq!((e - s) % BLOCK, 0, "row {i} is whole blocks");
            assert_eq!(e - s, (rows.len[i] as usize).div_ceil(BLOCK) * BLOCK);
            if rows.len[i] > 0 {
                let last = rows.partner[s + rows.len[i] as usize - 1];
                assert!(rows.partner[s + rows.len[i] as usize..e]
                    .iter()
                    .all(|&p| p == last));
            }
        }
        assert_eq!(rows.grad.len(), 18);
        assert!(!rows.rebuild(&[[2, 1]], 6, &[]), "i > j");
        assert!(!rows.rebuild(&[[1, 1]], 6, &[]), "i = j");
        assert!(!rows.rebuild(&[[1, 6]], 6, &[]), "a body out of range");
    }

    /// With types, each part of a row (below, above) holds the same partners grouped by type,
    /// in the order found within a type; the padding repeats the row's new last partner.
    #[test]
    fn rows_group_each_part_by_the_partners_types() {
        let pairs = [
            [3, 5],
            [0, 3],
            [1, 3],
            [0, 5],
            [3, 4],
            [2, 3],
            [3, 6],
            [3, 7],
        ];
        let kinds = [1, 0, 1, 0, 0, 1, 0, 1];
        let mut rows = PairRows::default();
        assert!(rows.rebuild(&pairs, 8, &kinds));
        let s = rows.start[3] as usize;
        let p: Vec<u32> = rows.partner[s..s + rows.len[3] as usize]
            .iter()
            .map(|p| p[0])
            .collect();
        // Below 3: 0, 1, 2 found, types 1, 0, 1; above: 5, 4, 6, 7, types 1, 0, 0, 1.
        assert_eq!((p, rows.upper[3]), (vec![1, 0, 2, 4, 6, 5, 7], 3));
        let pad = &rows.partner[s + rows.len[3] as usize..rows.start[4] as usize];
        assert!(pad.iter().all(|&j| j == [7]));
        // Untyped: as found.
        assert!(rows.rebuild(&pairs, 8, &[]));
        let p: Vec<u32> = rows.partner[s..s + rows.len[3] as usize]
            .iter()
            .map(|p| p[0])
            .collect();
        assert_eq!(p, vec![0, 1, 2, 5, 4, 6, 7]);
    }
}
