//! The energy and gradient of a pair form under a cutoff, by rows of the half list: each pair
//! `(i, j)` once, in the row of its first body `i`, as LAMMPS's half lists with `newton on`
//! hold it. A row holds its body's position, type and gradient across its partners: the body's
//! coordinates are broadcast once, its gradient summed in registers, and only the partners'
//! gradients go out, into the chunk's partials ([`PairRows`](super::rows::PairRows) evaluates
//! every pair twice to avoid even that). Within a row the partners are grouped by type and each
//! group padded to whole blocks, so that a block's terms share their types and the kernel reads
//! each parameter once; the padding is masked out. Against the per-term pass of the half list
//! it saves, per block of lanes, the lookups of each lane's term, types and slots, the
//! compaction of the survivors of the cutoff (every entry is evaluated, those beyond the cutoff
//! masked to zero) and the scatter of the first body's gradient.
//!
//! The bits do not depend on the instruction set or the thread count. A row's partners are
//! visited in blocks of [`BLOCK`]; entry `8b + v` goes to virtual lane `v` of the row's sums
//! (on 4 lanes, lane `v mod 4` of the block's second half when `v ≥ 4`), the eight added in one
//! fixed tree; a partner's gradient is added into its partial entry by entry, whatever the
//! width. Rows are split into fixed chunks (consecutive rows of [`PAIR_CHUNK`] entries or
//! more), each with its own partials — one per distinct body it touches — and each body's
//! partials are summed in chunk order.

use rayon::prelude::*;

use super::super::forms::Form;
use super::super::neighbors::{group_stably, Cell};
use super::super::terms::{Kernel, Kinds};
use super::rows::{block_positions, virtual_sum, BLOCK};
use super::{Image, Inputs, Sites, CHUNK, PAIR_CHUNK};
use crate::simd::{self, Lanes, WithLanes};

/// Rows group their partners by types up to this many types (more: the per-term pass).
const MOST_TYPES: usize = 8;
/// No row yet.
const NONE: u32 = u32::MAX;
/// Rows pay when they are long: at least this many pairs per body (four blocks; the alkane's
/// 14 Å cutoff has about 200, the Kremer–Grest melt's WCA 6, whose rows would be a quarter
/// padding and whose rebuilds, every few steps, would cost more than rows save). Shorter: the
/// per-term pass.
pub(crate) const LONG_ROWS: usize = 4 * BLOCK;
/// `x + ROUND - ROUND` is `x` rounded to an integer, ties to even, for `|x| < 2⁵¹`.
const ROUND: f64 = 6_755_399_441_055_744.0;

/// The partners of one type in a row: `partner[start .. start + len]`, padded to whole
/// blocks with copies of the last.
#[derive(Debug, Clone, Copy)]
struct Group {
    kind: u32,
    start: u32,
    len: u32,
}

/// A half list by rows of first bodies (all bodies free: body and free index agree), its
/// chunks' partials, and the outputs of its last pass.
#[derive(Debug, Default)]
pub(crate) struct HalfRows {
    /// Row `r` is body `body[r]`'s, its groups `groups[group_at[r] .. group_at[r + 1]]`, its
    /// own gradient added into partial `slot[r]` of its chunk.
    body: Vec<u32>,
    slot: Vec<u32>,
    group_at: Vec<u32>,
    groups: Vec<Group>,
    /// Per entry (padded), the partner and its partial in the chunk.
    partner: Vec<[u32; 1]>,
    partner_slot: Vec<u32>,
    /// Chunk `c` is rows `chunk_rows[c] .. chunk_rows[c + 1]`, its partials (three values
    /// each) `part[3 chunk_part[c] ..  3 chunk_part[c + 1]]`.
    chunk_rows: Vec<u32>,
    chunk_part: Vec<u32>,
    part: Vec<f64>,
    /// Body `b`'s partials, in chunk order: `of_body[body_at[b] .. body_at[b + 1]]`.
    body_at: Vec<u32>,
    of_body: Vec<u32>,
    /// Scratch of [`HalfRows::rebuild`], kept between rebuilds.
    row_of: Vec<u32>,
    fill: Vec<u32>,
    sorted: Vec<[u32; 1]>,
    grouping: Vec<[u32; 1]>,
    by_distance: Vec<u64>,
    seen: Vec<u32>,
    local: Vec<u32>,
    slot_body: Vec<u32>,
    /// Per free body, its gradient (three coordinates per body); the last gradient pass's.
    pub grad: Vec<f64>,
    /// Per chunk, the energy of its pairs; the last pass's.
    pub sums: Vec<f64>,
}

impl HalfRows {
    /// The rows of the pairs `pairs` of `n` free bodies, with the bodies' types `kinds`
    /// (empty: untyped); `false` (and no rows) when a pair is not two distinct bodies below
    /// `n`, the rows are short (fewer than `long` pairs per body: [`LONG_ROWS`]; checked
    /// first, at no cost), there are more than [`MOST_TYPES`] types or the padded list does not
    /// fit 32-bit indices. Rows come in the order their bodies first lead a pair (the cell list's: rows
    /// near in space are near in the order, and so are their partners), each row's partners
    /// in the list's order within a type.
    pub fn rebuild(
        &mut self,
        pairs: &[[u32; 2]],
        n: usize,
        kinds: &[u32],
        (sites, cell): Sites<'_>,
        long: usize,
    ) -> bool {
        let valid = pairs.len() >= long.saturating_mul(n)
            && pairs
                .iter()
                .all(|p| p[0] != p[1] && (p[0] as usize) < n && (p[1] as usize) < n);
        let types = kinds.iter().max().map_or(0, |&k| k as usize + 1);
        // At most `BLOCK - 1` padding per group: `MOST_TYPES` groups per row.
        let fits = pairs
            .len()
            .checked_add(n.saturating_mul(MOST_TYPES * BLOCK))
            .is_some_and(|m| u32::try_from(m).is_ok());
        if !valid || types > MOST_TYPES || !fits {
            return false;
        }
        let kind = |j: &[u32; 1]| kinds.get(j[0] as usize).map_or(0, |&k| k as usize);
        // Rows in the order their bodies first lead a pair, and their partners (a stable
        // counting sort).
        self.row_of.clear();
        self.row_of.resize(n, NONE);
        self.body.clear();
        self.fill.clear();
        for p in pairs {
            let i = p[0] as usize;
            if self.row_of[i] == NONE {
                self.row_of[i] = self.body.len() as u32;
                self.body.push(p[0]);
                self.fill.push(0);
            }
            self.fill[self.row_of[i] as usize] += 1;
        }
        let rows = self.body.len();
        let mut at = 0;
        for f in &mut self.fill {
            (*f, at) = (at, at + *f);
        }
        self.sorted.clear();
        self.sorted.resize(pairs.len(), [0]);
        for p in pairs {
            let r = self.row_of[p[0] as usize] as usize;
            self.sorted[self.fill[r] as usize] = [p[1]];
            self.fill[r] += 1;
        }
        // Each row's partners grouped by type, each group padded to whole blocks.
        self.partner.clear();
        self.groups.clear();
        self.group_at.clear();
        self.group_at.push(0);
        let mut from = 0;
        for r in 0..rows {
            let to = self.fill[r] as usize;
            let row = &mut self.sorted[from..to];
            if types >= 2 {
                group_stably(row, kind, &mut self.grouping);
            }
            let mut a = 0;
            while a < row.len() {
                let k = kind(&row[a]);
                let b = a + row[a..].iter().take_while(|j| kind(j) == k).count();
                if sites.len() >= n {
                    // Nearest first, by the distance at the build: the partners that drift
                    // beyond the cutoff before the next build are mostly at the group's end,
                    // whole blocks of them, which the passes skip.
                    let xi = sites[self.body[r] as usize];
                    self.by_distance.clear();
                    self.by_distance.extend(row[a..b].iter().map(|j| {
                        let xj = sites[j[0] as usize];
                        let mut d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
                        if let Some(cell) = cell {
                            for (a, x) in d.iter_mut().enumerate() {
                                // Nearest image, rounded by adding and taking away 1.5·2⁵²
                                // (ties to even below 2⁵¹ boxes): arithmetic, not a call of
                                // `rint` per coordinate on the baseline instruction set.
                                let k = (*x * cell.inv[a] + ROUND) - ROUND;
                                *x -= k * cell.len[a];
                            }
                        }
                        // The square distance in single precision (an order, not a value), then
                        // the partner: one key, one total order.
                        let r2 = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) as f32;
                        (u64::from(r2.to_bits()) << 32) | u64::from(j[0])
                    }));
                    self.by_distance.sort_unstable();
                    for (j, &key) in row[a..b].iter_mut().zip(&self.by_distance) {
                        *j = [key as u32];
                    }
                }
                let start = self.partner.len() as u32;
                self.partner.extend_from_slice(&row[a..b]);
                let padded = (b - a).div_ceil(BLOCK) * BLOCK;
                self.partner
                    .extend(core::iter::repeat_n(row[b - 1], padded - (b - a)));
                self.groups.push(Group {
                    kind: k as u32,
                    start,
                    len: (b - a) as u32,
                });
                a = b;
            }
            self.group_at.push(self.groups.len() as u32);
            from = to;
        }
        self.chunk(n);
        true
    }

    /// Cut the rows into chunks of [`PAIR_CHUNK`] entries or more, give each chunk's bodies
    /// their partials (in the order the chunk first touches them) and each body its partials
    /// in chunk order.
    fn chunk(&mut self, n: usize) {
        let rows = self.body.len();
        let entries = |r: usize| {
            let (g0, g1) = (self.group_at[r] as usize, self.group_at[r + 1] as usize);
            if g0 == g1 {
                return 0;
            }
            let last = self.groups[g1 - 1];
            (last.start + last.len.div_ceil(BLOCK as u32) * BLOCK as u32 - self.groups[g0].start)
                as usize
        };
        self.chunk_rows.clear();
        self.chunk_rows.push(0);
        let mut held = 0;
        for r in 0..rows {
            held += entries(r);
            if held >= PAIR_CHUNK || r + 1 == rows {
                self.chunk_rows.push(r as u32 + 1);
                held = 0;
            }
        }
        let chunks = self.chunk_rows.len() - 1;
        self.seen.clear();
        self.seen.resize(n, NONE);
        self.local.resize(n, 0);
        self.slot_body.clear();
        self.slot.resize(rows, 0);
        self.partner_slot.resize(self.partner.len(), 0);
        self.chunk_part.clear();
        self.chunk_part.push(0);
        for c in 0..chunks {
            let base = self.slot_body.len();
            let mut take = |b: u32, slot_body: &mut Vec<u32>| {
                let b = b as usize;
                if self.seen[b] != c as u32 {
                    self.seen[b] = c as u32;
                    self.local[b] = (slot_body.len() - base) as u32;
                    slot_body.push(b as u32);
                }
                self.local[b]
            };
            for r in self.chunk_rows[c] as usize..self.chunk_rows[c + 1] as usize {
                self.slot[r] = take(self.body[r], &mut self.slot_body);
                let (g0, g1) = (self.group_at[r] as usize, self.group_at[r + 1] as usize);
                for g in &self.groups[g0..g1] {
                    let at = g.start as usize
                        ..(g.start + g.len.div_ceil(BLOCK as u32) * BLOCK as u32) as usize;
                    for (s, j) in self.partner_slot[at.clone()]
                        .iter_mut()
                        .zip(&self.partner[at])
                    {
                        *s = take(j[0], &mut self.slot_body);
                    }
                }
            }
            self.chunk_part.push(self.slot_body.len() as u32);
        }
        self.body_at.clear();
        self.body_at.resize(n + 1, 0);
        for &b in &self.slot_body {
            self.body_at[b as usize + 1] += 1;
        }
        for b in 0..n {
            self.body_at[b + 1] += self.body_at[b];
        }
        self.fill.clear();
        self.fill.extend_from_slice(&self.body_at[..n]);
        self.of_body.resize(self.slot_body.len(), 0);
        for (s, &b) in self.slot_body.iter().enumerate() {
            self.of_body[self.fill[b as usize] as usize] = s as u32;
            self.fill[b as usize] += 1;
        }
        self.part.resize(self.slot_body.len() * 3, 0.0);
        self.grad.resize(n * 3, 0.0);
        self.sums.resize(chunks, 0.0);
    }

    /// The energy of every pair within the cutoff (into [`HalfRows::sums`]) and, with
    /// `gradient`, each body's gradient (into [`HalfRows::grad`]), at `input`.
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
        let HalfRows {
            body,
            slot,
            group_at,
            groups,
            partner,
            partner_slot,
            chunk_rows,
            chunk_part,
            part,
            body_at,
            of_body,
            grad,
            sums,
            ..
        } = self;
        let rows = Rows {
            body,
            slot,
            group_at,
            groups,
            partner,
            partner_slot,
        };
        let chunk = |c: usize, part: &mut [f64]| -> f64 {
            simd::dispatch_with(
                input.isa,
                RowPass::<T, F, D, K> {
                    terms,
                    input,
                    rows: &rows,
                    range: chunk_rows[c] as usize..chunk_rows[c + 1] as usize,
                    part: gradient.then_some(part),
                    cut2,
                    form: core::marker::PhantomData,
                },
            )
        };
        let bounds = Bounds {
            part: chunk_part,
            parallel: input.parallel,
        };
        bounds.over(0..sums.len(), part, sums, &chunk);
        if !gradient {
            return;
        }
        // Phase B: each body's partials in chunk order.
        let (part, body_at, of_body) = (&*part, &*body_at, &*of_body);
        let sum = |first: usize, g: &mut [f64]| {
            for (b, gb) in (first..).zip(g.chunks_exact_mut(3)) {
                let mut acc = [0.0; 3];
                for &s in &of_body[body_at[b] as usize..body_at[b + 1] as usize] {
                    let p = &part[s as usize * 3..s as usize * 3 + 3];
                    for d in 0..3 {
                        acc[d] += p[d];
                    }
                }
                gb.copy_from_slice(&acc);
            }
        };
        if input.parallel {
            grad.par_chunks_mut(CHUNK * 3)
                .enumerate()
                .for_each(|(c, g)| sum(c * CHUNK, g));
        } else {
            sum(0, grad);
        }
    }
}

/// The chunks' partials, to split among rayon's tasks.
struct Bounds<'a> {
    part: &'a [u32],
    parallel: bool,
}

impl Bounds<'_> {
    /// `chunk(c, partials of c)` for the chunks `range`, its energy into `sums` (the range's):
    /// halves on rayon's pool when parallel (a split allocates nothing).
    fn over(
        &self,
        range: core::ops::Range<usize>,
        part: &mut [f64],
        sums: &mut [f64],
        chunk: &(dyn Fn(usize, &mut [f64]) -> f64 + Sync),
    ) {
        if range.len() > 1 && self.parallel {
            let mid = range.start + range.len() / 2;
            let cut = (self.part[mid] - self.part[range.start]) as usize * 3;
            let (p0, p1) = part.split_at_mut(cut);
            let (s0, s1) = sums.split_at_mut(mid - range.start);
            rayon::join(
                || self.over(range.start..mid, p0, s0, chunk),
                || self.over(mid..range.end, p1, s1, chunk),
            );
            return;
        }
        let mut part = part;
        for (c, s) in range.zip(sums) {
            let len = (self.part[c + 1] - self.part[c]) as usize * 3;
            let (pc, rest) = part.split_at_mut(len);
            part = rest;
            *s = chunk(c, pc);
        }
    }
}

/// The rows a pass reads.
struct Rows<'a> {
    body: &'a [u32],
    slot: &'a [u32],
    group_at: &'a [u32],
    groups: &'a [Group],
    partner: &'a [[u32; 1]],
    partner_slot: &'a [u32],
}

/// One chunk of rows: its partials into `part` (when given), its energy returned.
struct RowPass<'a, T, F, const D: usize, const K: usize> {
    terms: &'a T,
    input: &'a Inputs<'a, D>,
    rows: &'a Rows<'a>,
    range: core::ops::Range<usize>,
    part: Option<&'a mut [f64]>,
    cut2: f64,
    form: core::marker::PhantomData<fn() -> F>,
}

impl<T, F, const D: usize, const K: usize> WithLanes for RowPass<'_, T, F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    type Output = f64;

    /// [`RowPass::pass`] made for the gradient or not, in a box or not: the choices out of
    /// the loops (the compiler does not take them out itself).
    #[inline(always)]
    fn run<L: Lanes>(self) -> f64 {
        match (self.part.is_some(), self.input.cell.is_some()) {
            (true, true) => self.pass::<L, true, true>(),
            (true, false) => self.pass::<L, true, false>(),
            (false, true) => self.pass::<L, false, true>(),
            (false, false) => self.pass::<L, false, false>(),
        }
    }
}

impl<T, F, const D: usize, const K: usize> RowPass<'_, T, F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    /// The chunk's rows: with `GRADIENT`, the partials (`part` given); with `PERIODIC`, the
    /// nearest images (`input.cell` given).
    #[inline(always)]
    fn pass<L: Lanes, const GRADIENT: bool, const PERIODIC: bool>(self) -> f64 {
        let RowPass {
            terms,
            input,
            rows,
            range,
            part,
            cut2,
            ..
        } = self;
        let (w, q) = (L::WIDTH, input.q);
        let parts = BLOCK / w;
        let zero = L::splat(0.0);
        let cut2 = L::splat(cut2);
        let image = Image::<L>::new(&input.cell.unwrap_or(Cell::new([1.0; 3])));
        let iota = block_positions::<L>();
        let part: &mut [[f64; 3]] = match part {
            Some(p) => {
                p.fill(0.0);
                p.as_chunks_mut::<3>().0
            }
            None => &mut [],
        };
        let mut soa = [[0.0; 8]; 3];
        let mut energy = 0.0;
        for r in range {
            let i = rows.body[r] as usize;
            let xi: [L; 3] = core::array::from_fn(|d| L::splat(q[i * 3 + d]));
            let ki = input.kinds.get(i).copied().unwrap_or(0);
            let mut acc_g = [[zero; 3]; BLOCK];
            let mut acc_e = [zero; BLOCK];
            let groups = &rows.groups[rows.group_at[r] as usize..rows.group_at[r + 1] as usize];
            for g in groups {
                // One row of types for every lane of the group: each parameter read once.
                let mut kinds = [[ki; K]];
                kinds[0][K - 1] = g.kind;
                let kinds: &[Kinds<K>] = if input.kinds.is_empty() { &[] } else { &kinds };
                let len = L::splat(g.len as f64);
                for b in 0..(g.len as usize).div_ceil(BLOCK) {
                    let offset = L::splat((b * BLOCK) as f64);
                    for v in 0..parts {
                        let at = g.start as usize + b * BLOCK + v * w;
                        let js = &rows.partner[at..at + w];
                        let xj = L::gather_bodies::<3, 1>(q, js, 0);
                        let mut x = [[zero; D]; K];
                        x[0][..3].copy_from_slice(&xi);
                        x[K - 1][..3].copy_from_slice(&xj);
                        if PERIODIC {
                            image.apply(&mut x);
                        }
                        let mut r2 = zero;
                        for (&b, &a) in x[K - 1].iter().zip(&x[0]).take(3) {
                            let d = b - a;
                            r2 = r2 + d * d;
                        }
                        if r2.lt_mask(cut2) == 0 {
                            // Every lane beyond the cutoff: nothing to add (adding zeros
                            // would change no bit: no sum here is ever −0).
                            continue;
                        }
                        let keep = r2.lt(cut2) * (iota[v] + offset).lt(len);
                        let e = if GRADIENT {
                            let (e, gr) = terms.value_gradient_lanes(input.omega, &x, kinds);
                            for d in 0..3 {
                                acc_g[v][d] = acc_g[v][d] + L::select(keep, gr[0][d], zero);
                                L::select(keep, gr[K - 1][d], zero).store(&mut soa[d]);
                            }
                            let slots = &rows.partner_slot[at..at + w];
                            for (l, &s) in slots.iter().enumerate() {
                                let dst = &mut part[s as usize];
                                for d in 0..3 {
                                    dst[d] += soa[d][l];
                                }
                            }
                            e
                        } else {
                            terms.value_lanes(input.omega, &x, kinds)
                        };
                        acc_e[v] = acc_e[v] + L::select(keep, e, zero);
                    }
                }
            }
            if GRADIENT {
                let dst = &mut part[rows.slot[r] as usize];
                for (d, gd) in dst.iter_mut().enumerate() {
                    *gd += virtual_sum(|v| acc_g[v][d]);
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

    /// Each row's partners as listed, without padding.
    fn partners(rows: &HalfRows, r: usize) -> Vec<(u32, Vec<u32>)> {
        let g = &rows.groups[rows.group_at[r] as usize..rows.group_at[r + 1] as usize];
        g.iter()
            .map(|g| {
                let at = g.start as usize..(g.start + g.len) as usize;
                (g.kind, rows.partner[at].iter().map(|j| j[0]).collect())
            })
            .collect()
    }

    /// A row per first body, in the order the bodies first lead a pair; its partners grouped
    /// by type (in increasing type, the order found within one), each group padded to whole blocks with its last partner;
    /// the pairs' second bodies below or above the first alike.
    #[test]
    fn rows_hold_each_pair_once_by_its_first_body_grouped_by_type() {
        let pairs = [
            [3, 5],
            [0, 3],
            [3, 1],
            [0, 5],
            [3, 4],
            [5, 2],
            [3, 6],
            [3, 7],
        ];
        let kinds = [1, 0, 1, 0, 0, 1, 0, 1];
        let mut rows = HalfRows::default();
        assert!(rows.rebuild(&pairs, 8, &kinds, (&[], None), 0));
        assert_eq!(rows.body, vec![3, 0, 5]);
        // Types in increasing order; the order found within a type.
        assert_eq!(
            partners(&rows, 0),
            vec![(0, vec![1, 4, 6]), (1, vec![5, 7])]
        );
        assert_eq!(partners(&rows, 1), vec![(0, vec![3]), (1, vec![5])]);
        assert_eq!(partners(&rows, 2), vec![(1, vec![2])]);
        for g in &rows.groups {
            let padded = g.len.div_ceil(BLOCK as u32) * BLOCK as u32;
            let at = g.start as usize..(g.start + padded) as usize;
            let last = rows.partner[(g.start + g.len - 1) as usize];
            assert!(rows.partner[at][g.len as usize..]
                .iter()
                .all(|&j| j == last));
        }
        // Untyped: one group per row, in the order found.
        assert!(rows.rebuild(&pairs, 8, &[], (&[], None), 0));
        assert_eq!(partners(&rows, 0), vec![(0, vec![5, 1, 4, 6, 7])]);
        assert!(!rows.rebuild(&[[1, 1]], 6, &[], (&[], None), 0), "i = j");
        assert!(
            !rows.rebuild(&[[1, 6]], 6, &[], (&[], None), 0),
            "a body out of range"
        );
        assert!(
            !rows.rebuild(&pairs, 8, &[], (&[], None), 2),
            "fewer than 2 pairs per body (8 pairs of 8 bodies)"
        );
        let many: Vec<u32> = (0..10).collect();
        assert!(
            !rows.rebuild(&[[0, 1]], 10, &many, (&[], None), 0),
            "more than eight types"
        );
    }

    /// Given the sites at the build, each group's partners come nearest first (nearest images
    /// in a box), still grouped by type.
    #[test]
    fn partners_come_nearest_first_by_their_distance_at_the_build() {
        let sites = [
            [0.0, 0.0, 0.0],
            [3.0, 0.0, 0.0],
            [9.5, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 2.0, 0.0],
            [0.0, 0.0, 1.5],
        ];
        let pairs = [[0, 1], [0, 2], [0, 3], [0, 4], [0, 5]];
        let cell = Cell::new([10.0; 3]);
        let mut rows = HalfRows::default();
        assert!(rows.rebuild(&pairs, 6, &[], (&sites, Some(&cell)), 0));
        assert_eq!(partners(&rows, 0), vec![(0, vec![2, 3, 5, 4, 1])]);
        assert!(rows.rebuild(&pairs, 6, &[], (&sites, None), 0));
        assert_eq!(partners(&rows, 0), vec![(0, vec![3, 5, 4, 1, 2])]);
        let kinds = [0, 1, 0, 1, 0, 1];
        assert!(rows.rebuild(&pairs, 6, &kinds, (&sites, Some(&cell)), 0));
        assert_eq!(
            partners(&rows, 0),
            vec![(0, vec![2, 4]), (1, vec![3, 5, 1])]
        );
    }

    /// Every entry's partial is its partner's in its chunk, every row's its body's; a chunk's
    /// partials are distinct bodies; each body's partials are listed in chunk order, and they
    /// are all the partials there are.
    #[test]
    fn each_chunk_gives_its_bodies_one_partial_each_summed_in_chunk_order() {
        // Two rows of more than a chunk each, then two short ones: three chunks.
        let n = 3 * PAIR_CHUNK / 2;
        let mut pairs = Vec::new();
        for i in [7u32, 2, 9, 4] {
            let m = if i == 7 || i == 2 { PAIR_CHUNK + 3 } else { 5 };
            pairs.extend((0..m as u32).map(|k| [i, (i + 1 + k) % n as u32]));
        }
        let mut rows = HalfRows::default();
        assert!(rows.rebuild(&pairs, n, &[], (&[], None), 0));
        assert_eq!(rows.chunk_rows, vec![0, 1, 2, 4]);
        let slot_body = &rows.slot_body;
        for c in 0..rows.chunk_rows.len() - 1 {
            let base = rows.chunk_part[c] as usize;
            let bodies = &slot_body[base..rows.chunk_part[c + 1] as usize];
            let mut seen = bodies.to_vec();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), bodies.len(), "chunk {c}: one partial per body");
            for r in rows.chunk_rows[c] as usize..rows.chunk_rows[c + 1] as usize {
                assert_eq!(bodies[rows.slot[r] as usize], rows.body[r]);
                let g = &rows.groups[rows.group_at[r] as usize..rows.group_at[r + 1] as usize];
                for g in g {
                    let end = g.start + g.len.div_ceil(BLOCK as u32) * BLOCK as u32;
                    for e in g.start as usize..end as usize {
                        let s = rows.partner_slot[e] as usize;
                        assert_eq!(bodies[s], rows.partner[e][0], "entry {e}");
                    }
                }
            }
        }
        let mut listed = 0;
        for b in 0..n {
            let of = &rows.of_body[rows.body_at[b] as usize..rows.body_at[b + 1] as usize];
            assert!(of.windows(2).all(|w| w[0] < w[1]), "body {b}: chunk order");
            assert!(of.iter().all(|&s| slot_body[s as usize] as usize == b));
            listed += of.len();
        }
        assert_eq!(listed, slot_body.len());
    }
}
