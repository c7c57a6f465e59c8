//! A neighbour list by rows: each row one body's partners, in groups padded to whole blocks
//! of [`BLOCK`] entries, and the fixed chunks of rows the pass runs over. One layout holds
//! both kinds LAMMPS has (`newton on` and `off`), built by two functions:
//!
//! - [`Rows::build_half`] (Newton's third law): each pair `(i, j)` once, in the row of its
//!   first body; a row's partners grouped by type (one group per type, so a block's terms
//!   share their types) and, within a type, nearest first by their distance at the build, in
//!   shells of a 63rd of the farthest square distance (the partners that drift beyond the
//!   cutoff before the next build gather at a group's end, whole blocks the pass skips). The
//!   partners' gradients go out into partials, one per distinct body a chunk touches, summed
//!   per body in chunk order; chunks are consecutive rows of [`ROW_CHUNK`] entries or more.
//! - [`Rows::build_full`]: every pair from both ends, row `i` for body `i`; its partners
//!   below `i` first (the pair evaluated as `(j, i)`, the row taking the second gradient — a
//!   pair function need not be symmetric), then those above, each part grouped by type; one
//!   group per row, its lanes' types read per lane. Nothing is scattered: a row's gradient is
//!   its body's whole gradient. Each pair's energy is counted by the row of its lower body.
//!   Chunks are [`FULL_CHUNK`] rows.
//!
//! A group's entries go `8b + v` to virtual lane `v` of the row's sums (on 4 lanes, lane
//! `v mod 4` of the block's second half when `v ≥ 4`; on one lane, its own accumulator), and
//! the eight are added in one fixed tree ([`super::super::sums::virtual_sum`]): the same
//! bits on every instruction set and thread count.

use super::counting::Counting;
use crate::assembly::cell::{Cell, Image};
use crate::assembly::neighbors::group_stably;
use crate::simd::{Loads, WithLanes};

/// Entries per block: the widest lanes (narrower ones take a block in several parts).
pub(crate) const BLOCK: usize = 8;
/// Rows group their partners by types up to this many types; the half list's rows need one
/// type per group, so beyond it they are not built ([`super::choose`]).
pub(crate) const MOST_TYPES: usize = 8;
/// Entries per chunk of the half list's rows (at least; fixed, so that the chunk energies and
/// partials do not depend on the threads). A chunk's partials are one per distinct body its
/// rows' partners are — with a cutoff sphere of hundreds of bodies, thousands of them however
/// short the chunk — each zeroed, written and summed again every pass: fewer, longer chunks
/// make fewer of them (a liquid of a few thousand bodies still has tens of chunks to share
/// among threads).
pub(crate) const ROW_CHUNK: usize = 65_536;
/// Rows per chunk of full rows (fixed: the chunk energies do not depend on the threads).
pub(crate) const FULL_CHUNK: usize = 64;
/// A group whose lanes' types are read per lane (full rows).
pub(crate) const MIXED: u32 = u32::MAX;
/// No row yet.
const NONE: u32 = u32::MAX;
/// The half list's groups are ordered by their partners' square distances at the build in this
/// many shells, each as wide as the group's farthest over `SHELLS − 1`: near enough to
/// nearest first for whole blocks beyond the cutoff to gather at a group's end, in one
/// counting pass.
const SHELLS: usize = 64;

/// One type's partners in a row (or, for full rows, the whole row): `partner[start ..
/// start + len]`, padded to whole blocks with copies of the last; the first `below` are
/// below the row's body (full rows: evaluated as `(j, i)`, not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Group {
    pub kind: u32,
    pub start: u32,
    pub len: u32,
    pub below: u32,
}

impl Group {
    /// Its entries with the padding.
    pub fn padded(&self) -> core::ops::Range<usize> {
        self.start as usize..(self.start + self.len.div_ceil(BLOCK as u32) * BLOCK as u32) as usize
    }
}

/// A neighbour list by rows (all bodies free: body and free index agree), its chunks, and
/// the outputs of its last pass (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Rows {
    /// Each pair once (half list), or from both ends (full rows).
    pub newton: bool,
    /// Row `r` is body `body[r]`'s, its groups `groups[group_at[r] .. group_at[r + 1]]`, its
    /// own gradient added into output `slot[r]` of its chunk.
    pub body: Vec<u32>,
    pub slot: Vec<u32>,
    pub group_at: Vec<u32>,
    pub groups: Vec<Group>,
    /// Per entry (padded), the partner and (half list) its partial in the chunk.
    pub partner: Vec<[u32; 1]>,
    pub partner_slot: Vec<u32>,
    /// Chunk `c` is rows `chunk_rows[c] .. chunk_rows[c + 1]`, its outputs (three values
    /// each) `out[3 chunk_out[c] .. 3 chunk_out[c + 1]]`: partials (half list), or its rows'
    /// gradients (full rows: the gradient itself). When the gradient goes with its phase B on
    /// one thread ([`Rows::evaluate`] `into`), a half list's chunks take their partials in
    /// turn into the start of `out`.
    pub chunk_rows: Vec<u32>,
    pub chunk_out: Vec<u32>,
    pub out: Vec<f64>,
    /// Half list: body `b`'s partials, in chunk order: `of_body[body_at[b] .. body_at[b + 1]]`
    /// ([`Rows::add_gradient`] adds them into the gradient).
    pub body_at: Vec<u32>,
    pub of_body: Vec<u32>,
    /// Per chunk, the energy of its pairs; the last pass's.
    pub sums: Vec<f64>,
    pub(super) scratch: Scratch,
}

/// What the builds reorder through, kept between them.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    row_of: Vec<u32>,
    /// The half list's pairs sorted into rows.
    counting: Counting,
    fill: Vec<u32>,
    /// Each group's first place in the partners by row and type, unpadded (which
    /// [`Rows::build_half`] lists in [`Rows::partner_slot`]'s memory before that is made: the
    /// longest list a build holds is not held twice).
    listed_at: Vec<u32>,
    /// Per band of rows, its partners' sort keys.
    keys: Vec<Vec<u64>>,
    grouping: Vec<[u32; 1]>,
    seen: Vec<u32>,
    local: Vec<u32>,
    /// Half list: the body of each partial (slot), chunk after chunk.
    pub(super) slot_body: Vec<u32>,
    len: Vec<u32>,
    upper: Vec<u32>,
}

/// Every body's reference site at a neighbour-list build, and the periodic box.
pub(crate) type Sites<'a> = (&'a [[f64; 3]], Option<&'a Cell>);

/// True when every pair is two distinct bodies below `n` (and, with `ordered`, `i < j`); in
/// chunks on rayon's pool when there are many.
fn valid(pairs: &[[u32; 2]], n: usize, ordered: bool) -> bool {
    use rayon::prelude::*;
    let each = |pairs: &[[u32; 2]]| {
        pairs.iter().all(|p| {
            p[0] != p[1] && (p[0] as usize) < n && (p[1] as usize) < n && (!ordered || p[0] < p[1])
        })
    };
    if pairs.len() < crate::vector::PARALLEL_FROM {
        each(pairs)
    } else {
        pairs.par_chunks(crate::vector::VECTOR_CHUNK).all(each)
    }
}

/// The half list's groups being put in order: each row's body and groups, each group's
/// partners as found (`listed[listed_at[g] ..]`), and the sites at the build (empty: no
/// distance order).
struct Groups<'a> {
    body: &'a [u32],
    group_at: &'a [u32],
    groups: &'a [Group],
    listed_at: &'a [u32],
    listed: &'a [u32],
    sites: &'a [[f64; 3]],
    cell: Option<&'a Cell>,
}

impl Groups<'_> {
    /// Where row `r`'s entries begin among the padded entries (`r` may be one past the last).
    fn entry(&self, r: usize) -> usize {
        match self.groups.get(self.group_at[r] as usize) {
            Some(g) => g.start as usize,
            None => self.groups.last().map_or(0, |g| g.padded().end),
        }
    }

    /// The rows `rows`' groups into `partner` (their entries, from [`Groups::entry`]`(rows
    /// .start)`), split into as many bands as `keys` has, halves on rayon's pool (`join`:
    /// no allocation).
    fn order(
        &self,
        rows: core::ops::Range<usize>,
        partner: &mut [[u32; 1]],
        keys: &mut [Vec<u64>],
    ) {
        if keys.len() > 1 && rows.len() > 1 {
            let (ka, kb) = keys.split_at_mut(keys.len() / 2);
            // Split where the entries (the work), not the rows, divide as the bands do: in
            // a periodic box the rows near the start of the order hold the pairs that wrap
            // round to its end. Each row's order is its own: the split changes no bit.
            let (first, last) = (self.entry(rows.start), self.entry(rows.end));
            let target = first + (last - first) * ka.len() / (ka.len() + kb.len());
            // The first row from which the entries reach `target` (a binary search: `entry`
            // grows with the row).
            let (mut lo, mut hi) = (rows.start, rows.end);
            while lo < hi {
                let m = lo + (hi - lo) / 2;
                if self.entry(m) < target {
                    lo = m + 1;
                } else {
                    hi = m;
                }
            }
            let mid = lo.clamp(rows.start + 1, rows.end - 1);
            let (a, b) = partner.split_at_mut(self.entry(mid) - self.entry(rows.start));
            rayon::join(
                || self.order(rows.start..mid, a, ka),
                || self.order(mid..rows.end, b, kb),
            );
            return;
        }
        let band = Band {
            groups: self,
            base: self.entry(rows.start),
            rows,
            partner,
            keys: &mut keys[0],
        };
        crate::simd::dispatch(band);
    }
}

/// One band of [`Groups::order`]: the rows `rows`, whose entries begin at `base` of the
/// padded list, into `partner`; the square distances on the lanes, eight partners at a time.
struct Band<'a, 'g> {
    groups: &'a Groups<'g>,
    rows: core::ops::Range<usize>,
    partner: &'a mut [[u32; 1]],
    base: usize,
    keys: &'a mut Vec<u64>,
}

impl WithLanes for Band<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn run<L: Loads>(self) {
        let Band {
            groups: g,
            rows,
            partner,
            base,
            keys,
        } = self;
        let w = L::WIDTH;
        let flat = g.sites.as_flattened();
        let image = g.cell.map(Image::<L>::new);
        let one = g.cell.map(Image::<f64>::new);
        let mut r2s = [0.0; 8];
        for r in rows {
            for (at, group) in (g.group_at[r]..g.group_at[r + 1])
                .zip(&g.groups[g.group_at[r] as usize..g.group_at[r + 1] as usize])
            {
                let from = g.listed_at[at as usize] as usize;
                let found = &g.listed[from..from + group.len as usize];
                let padded = group.padded();
                let out = &mut partner[padded.start - base..padded.end - base];
                if g.sites.is_empty() {
                    for (o, &j) in out.iter_mut().zip(found) {
                        *o = [j];
                    }
                } else {
                    // Nearest first by a counting sort: the square distance at the build as one
                    // of `SHELLS` shells of the group's farthest, the order found within one.
                    let xi = g.sites[g.body[r] as usize];
                    let mut farthest = 0.0_f64;
                    keys.clear();
                    let mut key = |r2: f64, j: u32| {
                        farthest = farthest.max(r2);
                        keys.push((r2.to_bits() & !0xffff_ffff) | u64::from(j));
                    };
                    let js = found.as_chunks::<1>().0;
                    let whole = found.len() / w * w;
                    for b in (0..whole).step_by(w) {
                        let at = &js[b..b + w];
                        let xj = L::gather_bodies::<3, 1>(flat, at, 0);
                        let d = core::array::from_fn(|a| xj[a] - L::splat(xi[a]));
                        distance2(d, image.as_ref()).store(&mut r2s);
                        for (&r2, &[j]) in r2s.iter().zip(at) {
                            key(r2, j);
                        }
                    }
                    for &j in &found[whole..] {
                        let xj = g.sites[j as usize];
                        let d = core::array::from_fn(|a| xj[a] - xi[a]);
                        key(distance2(d, one.as_ref()), j);
                    }
                    shells_in_order(farthest, keys, out);
                }
                let last = out[group.len as usize - 1];
                out[group.len as usize..].fill(last);
            }
        }
    }
}

/// `|d|²`, `d` reduced to its nearest image in a box: the operations of [`Cell::nearest`] and
/// of `d₀² + d₁² + d₂²`, the same bits on every lane width.
#[inline(always)]
fn distance2<L: crate::simd::Lanes>(d: [L; 3], image: Option<&Image<L>>) -> L {
    let d = image.map_or(d, |i| i.nearest(d));
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// The keys of a group's partners (each a square distance's high word and the partner) into
/// `out` by a counting sort on [`SHELLS`] shells of `farthest`, the order found within one.
#[inline(always)]
fn shells_in_order(farthest: f64, keys: &mut [u64], out: &mut [[u32; 1]]) {
    let per = if farthest > 0.0 {
        (SHELLS - 1) as f64 / farthest
    } else {
        0.0
    };
    let mut at = [0u32; SHELLS + 1];
    for k in keys.iter_mut() {
        // The high word's square distance (its low mantissa bits cleared: an order, not a
        // value); NaN sites go to the first shell.
        let r2 = f64::from_bits(*k & !0xffff_ffff);
        let shell = ((r2 * per) as usize).min(SHELLS - 1);
        *k = ((shell as u64) << 32) | (*k & 0xffff_ffff);
        at[shell + 1] += 1;
    }
    for c in 0..SHELLS {
        at[c + 1] += at[c];
    }
    for &k in keys.iter() {
        let shell = (k >> 32) as usize;
        out[at[shell] as usize] = [k as u32];
        at[shell] += 1;
    }
}

impl Rows {
    /// Full rows of the pairs `pairs` (`i < j`, bodies below `n`) of `n` free bodies: row `i`
    /// holds first its partners below `i`, then those above, each part in the order of
    /// `pairs` — grouped by the partners' types `kinds` when given (empty: untyped) and there
    /// are 2 to [`MOST_TYPES`] types. `false` (no rows) when the pairs are not such a list or
    /// the rows do not fit 32-bit indices.
    pub fn build_full(&mut self, pairs: &[[u32; 2]], n: usize, kinds: &[u32]) -> bool {
        let fits = pairs.len().checked_mul(2).is_some_and(|m| {
            m.checked_add(n * (BLOCK - 1))
                .is_some_and(|m| u32::try_from(m).is_ok())
        });
        if !valid(pairs, n, true) || !fits {
            return false;
        }
        self.newton = false;
        let Scratch {
            fill,
            grouping,
            len,
            upper,
            ..
        } = &mut self.scratch;
        len.clear();
        len.resize(n, 0);
        upper.clear();
        upper.resize(n, 0);
        for p in pairs {
            len[p[0] as usize] += 1;
            len[p[1] as usize] += 1;
            upper[p[1] as usize] += 1;
        }
        self.groups.clear();
        self.group_at.clear();
        let mut at = 0u32;
        for i in 0..n {
            self.group_at.push(i as u32);
            self.groups.push(Group {
                kind: MIXED,
                start: at,
                len: len[i],
                below: upper[i],
            });
            at += len[i].div_ceil(BLOCK as u32) * BLOCK as u32;
        }
        self.group_at.push(n as u32);
        self.partner.clear();
        self.partner.resize(at as usize, [0]);
        // Two cursors per row: `fill[i]` for the partners below `i`, `fill[n + i]` above.
        fill.clear();
        fill.extend(self.groups.iter().map(|g| g.start));
        fill.extend(self.groups.iter().map(|g| g.start + g.below));
        for p in pairs {
            let (i, j) = (p[0] as usize, p[1] as usize);
            self.partner[fill[n + i] as usize] = [p[1]];
            fill[n + i] += 1;
            self.partner[fill[j] as usize] = [p[0]];
            fill[j] += 1;
        }
        let types = kinds.iter().max().map_or(0, |&k| k as usize + 1);
        for g in &self.groups {
            let (start, below, end) = (
                g.start as usize,
                (g.start + g.below) as usize,
                (g.start + g.len) as usize,
            );
            if (2..=MOST_TYPES).contains(&types) {
                for part in [start..below, below..end] {
                    let of = |j: &[u32; 1]| kinds[j[0] as usize] as usize;
                    group_stably(&mut self.partner[part], of, grouping);
                }
            }
            if end > start {
                let last = self.partner[end - 1];
                self.partner[end..g.padded().end].fill(last);
            }
        }
        self.body.clear();
        self.body.extend(0..n as u32);
        self.slot.clear();
        self.slot.extend((0..n).map(|i| (i % FULL_CHUNK) as u32));
        self.chunk_rows.clear();
        self.chunk_rows
            .extend((0..n.div_ceil(FULL_CHUNK)).map(|c| (c * FULL_CHUNK) as u32));
        self.chunk_rows.push(n as u32);
        self.chunk_out.clone_from(&self.chunk_rows);
        self.out.resize(n * 3, 0.0);
        self.sums.resize(n.div_ceil(FULL_CHUNK), 0.0);
        true
    }

    /// Half-list rows of the pairs `pairs` of `n` free bodies, with the bodies' types `kinds`
    /// (empty: untyped) and, when `sites` has every body's, its partners nearest first by
    /// their distance there (in [`SHELLS`] shells); `false` (and no rows) when a pair is not
    /// two distinct bodies below `n`, there are more than [`MOST_TYPES`] types or the padded
    /// list does not fit 32-bit indices. Rows come in the order their bodies first lead a pair (the cell list's:
    /// rows near in space are near in the order, and so are their partners).
    pub fn build_half(
        &mut self,
        pairs: &[[u32; 2]],
        n: usize,
        kinds: &[u32],
        (sites, cell): Sites<'_>,
    ) -> bool {
        let types = kinds.iter().max().map_or(0, |&k| k as usize + 1);
        // At most `BLOCK - 1` padding per group: `MOST_TYPES` groups per row.
        let fits = pairs
            .len()
            .checked_add(n.saturating_mul(MOST_TYPES * BLOCK))
            .is_some_and(|m| u32::try_from(m).is_ok());
        if !valid(pairs, n, false) || types > MOST_TYPES || !fits {
            return false;
        }
        self.newton = true;
        let types = types.max(1);
        let Scratch {
            row_of,
            counting,
            listed_at,
            keys,
            ..
        } = &mut self.scratch;
        let mut listed = core::mem::take(&mut self.partner_slot);
        // Rows in the order their bodies first lead a pair, and each row's partners counted
        // by type (in parts on the pool: the same counts and order whatever the parts).
        let parts = if pairs.len() >= crate::vector::PARALLEL_FROM {
            rayon::current_num_threads()
        } else {
            1
        };
        counting.count(pairs, (n, types, parts), kinds, row_of, &mut self.body);
        // A group per row and type present, in increasing type, padded to whole blocks,
        // each (row, type) given its first place in `listed`, the groups unpadded.
        self.groups.clear();
        self.group_at.clear();
        self.group_at.push(0);
        listed_at.clear();
        let (mut at, mut padded) = (0u32, 0u32);
        for &b in &self.body {
            for t in 0..types {
                let len = counting.give(b as usize, t, at);
                if len > 0 {
                    self.groups.push(Group {
                        kind: t as u32,
                        start: padded,
                        len,
                        below: 0,
                    });
                    listed_at.push(at);
                    at += len;
                    padded += len.div_ceil(BLOCK as u32) * BLOCK as u32;
                }
            }
            self.group_at.push(self.groups.len() as u32);
        }
        // Each partner into its row's group of its type, in the order found (the stable
        // counting sort's placement).
        listed.clear();
        // Room for the padded partners too, which `chunk_half` gives a slot each in this
        // memory: one growth (amortized, so that a list that grows a little at each build
        // does not move at each; the capacity beyond the length is address space, not
        // memory), not a second when the slots are made.
        listed.reserve(padded as usize);
        listed.resize(pairs.len(), 0);
        counting.place(pairs, kinds, &mut listed);
        // Each group nearest first and padded, the rows in bands on the pool (one band per
        // thread, each with its keys; every row's the same whatever the bands).
        self.partner.clear();
        self.partner.resize(padded as usize, [0]);
        let bands = if pairs.len() >= crate::vector::PARALLEL_FROM {
            rayon::current_num_threads()
        } else {
            1
        };
        keys.resize_with(bands.max(keys.len()), Vec::new);
        let groups = Groups {
            body: &self.body,
            group_at: &self.group_at,
            groups: &self.groups,
            listed_at,
            listed: &listed,
            sites: if sites.len() >= n { sites } else { &[] },
            cell,
        };
        groups.order(0..self.body.len(), &mut self.partner, &mut keys[..bands]);
        self.partner_slot = listed;
        self.chunk_half(n);
        true
    }

    /// Cut the half list's rows into chunks of [`ROW_CHUNK`] entries or more, give each
    /// chunk's bodies their partials (in the order the chunk first touches them) and each body
    /// its partials in chunk order.
    fn chunk_half(&mut self, n: usize) {
        let rows = self.body.len();
        let Scratch {
            fill,
            seen,
            local,
            slot_body,
            ..
        } = &mut self.scratch;
        let (group_at, groups) = (&self.group_at, &self.groups);
        let entries = |r: usize| -> usize {
            let g = &groups[group_at[r] as usize..group_at[r + 1] as usize];
            g.iter().map(|g| g.padded().len()).sum()
        };
        self.chunk_rows.clear();
        self.chunk_rows.push(0);
        let mut held = 0;
        for r in 0..rows {
            held += entries(r);
            if held >= ROW_CHUNK || r + 1 == rows {
                self.chunk_rows.push(r as u32 + 1);
                held = 0;
            }
        }
        let chunks = self.chunk_rows.len() - 1;
        seen.clear();
        seen.resize(n, NONE);
        local.resize(n, 0);
        slot_body.clear();
        self.slot.resize(rows, 0);
        self.partner_slot.resize(self.partner.len(), 0);
        self.chunk_out.clear();
        self.chunk_out.push(0);
        for c in 0..chunks {
            let base = slot_body.len();
            let mut take = |b: u32, slot_body: &mut Vec<u32>| {
                let b = b as usize;
                if seen[b] != c as u32 {
                    seen[b] = c as u32;
                    local[b] = (slot_body.len() - base) as u32;
                    slot_body.push(b as u32);
                }
                local[b]
            };
            for r in self.chunk_rows[c] as usize..self.chunk_rows[c + 1] as usize {
                self.slot[r] = take(self.body[r], slot_body);
                for g in &groups[group_at[r] as usize..group_at[r + 1] as usize] {
                    let at = g.padded();
                    for (s, j) in self.partner_slot[at.clone()]
                        .iter_mut()
                        .zip(&self.partner[at])
                    {
                        *s = take(j[0], slot_body);
                    }
                }
            }
            self.chunk_out.push(slot_body.len() as u32);
        }
        self.body_at.clear();
        self.body_at.resize(n + 1, 0);
        for &b in slot_body.iter() {
            self.body_at[b as usize + 1] += 1;
        }
        for b in 0..n {
            self.body_at[b + 1] += self.body_at[b];
        }
        fill.clear();
        fill.extend_from_slice(&self.body_at[..n]);
        self.of_body.resize(slot_body.len(), 0);
        for (s, &b) in slot_body.iter().enumerate() {
            self.of_body[fill[b as usize] as usize] = s as u32;
            fill[b as usize] += 1;
        }
        self.out.resize(slot_body.len() * 3, 0.0);
        self.sums.resize(chunks, 0.0);
    }
}

#[cfg(test)]
mod tests;
