//! Set-up of an assembled system, one form at a time: which terms the form makes of the
//! topology, and where each term's local outputs go (gather lists). Everything here runs once,
//! in [`super::Assembled::new`]; the evaluation engine ([`super::eval`]) only reads it.
//!
//! The gather lists make the assembly deterministic: every entry of a global vector or matrix
//! is the sum of its terms' contributions in one fixed order (the forms in table order, each
//! form's terms in term order), whatever the number of threads that computed them.

use super::forms::Over;
use super::topology::{Topology, TopologyError};
use crate::sparse::BlockLayout;

/// Marks a pinned body in a term's list of free-body indices.
pub(crate) const PINNED: u32 = u32::MAX;

/// A local Hessian block that is not stored (a pinned body's, or the transposed twin of a stored
/// one).
pub(crate) const NOWHERE: u32 = u32::MAX;

/// Which bodies are coordinates: the free index of every body ([`PINNED`] for a pinned one).
#[derive(Debug)]
pub(crate) struct Bodies {
    pub free_of: Vec<u32>,
    /// Number of free bodies.
    pub free: usize,
}

impl Bodies {
    pub fn new(topology: &Topology) -> Self {
        let mut free_of = vec![PINNED; topology.bodies()];
        let mut free = 0u32;
        for (b, f) in free_of.iter_mut().enumerate() {
            if !topology.pinned().contains_key(&b) {
                *f = free;
                free += 1;
            }
        }
        Self {
            free_of,
            free: free as usize,
        }
    }
}

/// The terms of one form, acting on `K` bodies each.
#[derive(Debug, Clone)]
pub(crate) struct TermList<const K: usize> {
    /// The bodies of each term (topology numbering), when they differ from the free indices
    /// (some body of the model is pinned); else empty, and [`TermList::bodies`] is `free`: a
    /// list of a million pairs is 8 MB less.
    own_bodies: Vec<[u32; K]>,
    /// Their free indices (coordinate blocks of the state), or [`PINNED`].
    pub free: Vec<[u32; K]>,
    /// Each term's bodies' types as one code ([`TermList::set_codes`]), or empty.
    pub codes: Vec<u8>,
    /// The bodies' types of each code.
    pub decoded: Vec<[u32; K]>,
}

impl TermList<2> {
    /// Where a neighbour-list build writes its pairs (bodies, `i < j`): with a pinned body, the
    /// terms' bodies (their free indices follow, [`TermList::pairs_written`]); else the free
    /// indices themselves, which then are the bodies — the list is held once, not copied.
    pub fn pair_buffer(&mut self, bodies: &Bodies) -> &mut Vec<[u32; 2]> {
        if bodies.free < bodies.free_of.len() {
            &mut self.own_bodies
        } else {
            self.own_bodies = Vec::new();
            &mut self.free
        }
    }

    /// The pairs written into [`TermList::pair_buffer`] become the terms: with a pinned body,
    /// those with a free body, and their free indices (the buffers keep their memory).
    pub fn pairs_written(&mut self, bodies: &Bodies) {
        if bodies.free == bodies.free_of.len() {
            return;
        }
        let free_of = &bodies.free_of;
        self.own_bodies
            .retain(|p| p.iter().any(|&b| free_of[b as usize] != PINNED));
        self.free.clear();
        self.free.extend(
            self.own_bodies
                .iter()
                .map(|p| p.map(|b| free_of[b as usize])),
        );
    }
}

impl<const K: usize> TermList<K> {
    /// The terms a form applying to `over` makes of `topology` (none when `present` is false).
    /// Terms whose bodies are all pinned are constant and left out.
    ///
    /// # Errors
    /// [`TopologyError::TooLarge`] when the term list cannot be allocated (all pairs of a
    /// large topology): checked by reserving it first, so it is an error, not an abort.
    pub fn new(
        over: Over,
        present: bool,
        topology: &Topology,
        bodies: &Bodies,
    ) -> Result<Self, TopologyError> {
        let mut list = Self::empty();
        if !present {
            return Ok(list);
        }
        let n = topology.bodies();
        let terms = match (over, K) {
            (Over::Bodies, _) => n,
            (Over::Bonds, _) => topology.bonds().len(),
            (Over::Angles, _) => topology.angles().len(),
            (Over::Dihedrals, _) => topology.dihedrals().len(),
            (Over::Pairs14, _) => 0,
            (Over::Pairs, _) if topology.pair_cutoff().is_some() => 0,
            (Over::Pairs, _) => n.saturating_mul(n.saturating_sub(1)) / 2,
        };
        let too_large = |_| TopologyError::TooLarge("the number of terms of a form");
        let pinned = bodies.free < bodies.free_of.len();
        if pinned {
            list.own_bodies
                .try_reserve_exact(terms)
                .map_err(too_large)?;
        }
        list.free.try_reserve_exact(terms).map_err(too_large)?;
        let free_of = &bodies.free_of;
        let mut push = |b: [usize; K]| {
            let fr = b.map(|i| free_of[i]);
            if fr.iter().any(|&f| f != PINNED) {
                if pinned {
                    list.own_bodies.push(b.map(|i| i as u32));
                }
                list.free.push(fr);
            }
        };
        match (over, K) {
            (Over::Bodies, 1) => (0..topology.bodies()).for_each(|b| push([b; K])),
            (Over::Bonds, 2) => {
                for (i, j) in topology.bonds() {
                    push(core::array::from_fn(|k| [i, j][k]));
                }
            }
            (Over::Angles, 3) => {
                for a in topology.angles() {
                    push(core::array::from_fn(|k| a[k]));
                }
            }
            (Over::Dihedrals, 4) => {
                for a in topology.dihedrals() {
                    push(core::array::from_fn(|k| a[k]));
                }
            }
            (Over::Pairs14, 2) => {
                for (i, j) in topology.pairs_at(3) {
                    push(core::array::from_fn(|k| [i, j][k]));
                }
            }
            // Under a cutoff the pairs come from the neighbour list, at the first evaluation.
            (Over::Pairs, 2) if topology.pair_cutoff().is_some() => {}
            (Over::Pairs, 2) => {
                // Tiles of PAIR_TILE × PAIR_TILE bodies, so that a chunk of terms touches few
                // bodies and its gradient partials stay small (see `PartialPlan`).
                let n = topology.bodies();
                let excluded = topology.exclusion_lists();
                for bi in (0..n).step_by(PAIR_TILE) {
                    for bj in (bi..n).step_by(PAIR_TILE) {
                        let rows = excluded.iter().enumerate().take(bi + PAIR_TILE).skip(bi);
                        for (i, excluded) in rows {
                            for j in bj.max(i + 1)..(bj + PAIR_TILE).min(n) {
                                if excluded.binary_search(&(j as u32)).is_err() {
                                    push(core::array::from_fn(|k| [i, j][k]));
                                }
                            }
                        }
                    }
                }
            }
            _ => unreachable!("a form over {over:?} cannot have arity {K}"),
        }
        Ok(list)
    }

    /// No terms.
    pub fn empty() -> Self {
        Self {
            own_bodies: Vec::new(),
            free: Vec::new(),
            codes: Vec::new(),
            decoded: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// The bodies of each term (topology numbering).
    pub fn bodies(&self) -> &[[u32; K]] {
        if self.own_bodies.is_empty() {
            &self.free
        } else {
            &self.own_bodies
        }
    }

    /// Each term's bodies' types `kinds[b]` as one byte, the digits of a number in base `T`
    /// (the number of types), when `T^K ≤ 256`; else (and without types) no codes. A SIMD
    /// block reads one byte per term to see whether its terms share types, instead of the
    /// types of every body (two dependent loads per body).
    pub fn set_codes(&mut self, kinds: &[u32]) {
        let types = kinds.iter().max().map_or(0, |&k| k as usize + 1);
        let codes = (1..=K).try_fold(1usize, |n, _| n.checked_mul(types));
        self.codes.clear();
        self.decoded.clear();
        let Some(count @ 1..=256) = codes else {
            return;
        };
        self.decoded.extend(
            (0..count).map(|c| core::array::from_fn(|k| (c / types.pow(k as u32) % types) as u32)),
        );
        let code = |b: &[u32; K]| -> u8 {
            let c = b
                .iter()
                .rev()
                .fold(0, |c, &b| c * types + kinds[b as usize] as usize);
            c as u8
        };
        self.codes.resize(self.len(), 0);
        let list = if self.own_bodies.is_empty() {
            &self.free
        } else {
            &self.own_bodies
        };
        if list.len() >= PARALLEL_PLAN_FROM {
            use rayon::prelude::*;
            self.codes
                .par_iter_mut()
                .zip(list.par_iter())
                .for_each(|(c, b)| *c = code(b));
        } else {
            for (c, b) in self.codes.iter_mut().zip(list) {
                *c = code(b);
            }
        }
    }

    /// The pairs of free bodies its terms couple (both free, distinct or not).
    pub fn couplings(&self, out: &mut Vec<(usize, usize)>) {
        for fr in &self.free {
            for a in 0..K {
                for b in a + 1..K {
                    if fr[a] != PINNED && fr[b] != PINNED {
                        out.push((fr[a] as usize, fr[b] as usize));
                    }
                }
            }
        }
    }

    /// The gradient gather into `csr`: per free body, the local slots `t·K + k` that land on
    /// it, in term order; with `scratch`. Both keep their memory (a neighbour-list rebuild
    /// allocates only when the list outgrows every earlier one).
    pub fn gradient_gather_into(&self, free: usize, csr: &mut Csr, scratch: &mut Vec<(u32, u32)>) {
        scratch.clear();
        for (t, fr) in self.free.iter().enumerate() {
            for (k, &f) in fr.iter().enumerate() {
                if f != PINNED {
                    scratch.push((f, (K * t + k) as u32));
                }
            }
        }
        csr.rebuild(free, scratch);
    }
}

/// `v` resized to `n` (new entries `fill`); when it must grow, to an eighth more than `n`, so
/// that the slowly growing lists of neighbour-list rebuilds reallocate seldom (each
/// reallocation of a long list leaves its old pages behind in the process's memory).
pub(crate) fn resize_with_room<T: Clone>(v: &mut Vec<T>, n: usize, fill: T) {
    if v.capacity() < n {
        v.reserve_exact(n + n / 8 - v.len());
    }
    v.resize(n, fill);
}

/// Bodies per side of the tiles in which the pair terms are listed.
pub(crate) const PAIR_TILE: usize = 16;

/// Marks a pinned body's slot in [`PartialPlan::slot`].
pub(crate) const NO_SLOT: u16 = u16::MAX;

/// The gradient partials of the SIMD pass: each chunk of [`super::eval::CHUNK`] terms sums its
/// terms' gradient contributions, in term order, into one `D`-vector per distinct free body it
/// touches (its partials); a body's gradient is then the sum of its partials in chunk order.
/// Deterministic like the per-term gather, with far less memory traffic when a chunk's terms
/// share bodies (the pair tiles: 512 terms, at most 48 bodies, instead of 1 024 local vectors).
/// The sum runs over the partials in storage order, adding each into its body's gradient
/// ([`PartialPlan::body`]): a stream through the partials, where a gather per body (its
/// partials scattered over all the chunks) missed the cache at every one.
#[derive(Debug, Clone)]
pub(crate) struct PartialPlan<const K: usize> {
    /// Per term and body: the body's index among its chunk's partials ([`NO_SLOT`]: pinned).
    pub slot: Vec<[u16; K]>,
    /// Chunk `c`'s partials are bodies `offsets[c] .. offsets[c + 1]` of the partial storage.
    pub offsets: Vec<u32>,
    /// Per partial, the free body it lands on.
    pub body: Vec<u32>,
    /// Per piece of [`PIECE`] free bodies, the partials landing in it, in storage order: made
    /// when the plan is made in a pool of more than one thread (`pieces`), which then sums the
    /// pieces in parallel; one thread streams the partials in storage order instead (the same
    /// sums) and holds no 4 bytes a partial for it.
    pub by_piece: Csr,
    /// `by_piece` is made.
    pub pieces: bool,
}

/// Free bodies per piece of a [`PartialPlan`]'s sum: the unit of its parallel work (the bits
/// do not depend on it: each body's partials are added in storage order in any piece).
pub(crate) const PIECE: usize = 4096;

impl<const K: usize> PartialPlan<K> {
    /// The free bodies chunk `c`'s partials land on, in storage order.
    pub fn chunk_bodies(&self, c: usize) -> &[u32] {
        &self.body[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }

    pub fn new(list: &TermList<K>, free: usize, chunk: usize) -> Self {
        let mut plan = Self {
            slot: Vec::new(),
            offsets: Vec::new(),
            body: Vec::new(),
            by_piece: Csr::default(),
            pieces: false,
        };
        plan.rebuild(list, free, chunk, &mut PlanScratch::default());
        plan
    }

    /// The plan of `list` again, in place (a neighbour-list rebuild): the vectors keep their
    /// memory, and `scratch` too. Each chunk finds its distinct bodies on its own (a small hash
    /// table on the stack), so the chunks run on rayon's current pool when there are many; the
    /// plan is the same whatever the thread count.
    pub fn rebuild(
        &mut self,
        list: &TermList<K>,
        free: usize,
        chunk: usize,
        scratch: &mut PlanScratch,
    ) {
        use rayon::prelude::*;
        assert!(K * chunk < NO_SLOT as usize);
        let n = list.len();
        let chunks = n.div_ceil(chunk);
        // Every slot is written by `distinct`: sized, not cleared.
        resize_with_room(&mut self.slot, n, [NO_SLOT; K]);
        self.pieces = rayon::current_num_threads() > 1;
        if !self.pieces {
            // One thread: the chunks in turn, each chunk's bodies written as they are found.
            self.by_piece = Csr::default();
            let (offsets, body) = (&mut self.offsets, &mut self.body);
            offsets.clear();
            offsets.push(0);
            body.clear();
            in_turn(&list.free, chunk, &mut self.slot, &mut |count, found| {
                body.extend_from_slice(found);
                offsets.push(offsets[offsets.len() - 1] + count);
            });
            return;
        }
        // Per chunk: the number of its distinct free bodies.
        let counts = &mut scratch.counts;
        counts.clear();
        counts.resize(chunks, 0);
        let parallel = n >= PARALLEL_PLAN_FROM;
        let work = self
            .slot
            .par_chunks_mut(chunk)
            .zip(list.free.par_chunks(chunk))
            .zip(counts.par_iter_mut());
        if parallel {
            work.for_each(|((slot, terms), count)| *count = distinct(terms, slot));
        } else {
            for (c, (slot, terms)) in self
                .slot
                .chunks_mut(chunk)
                .zip(list.free.chunks(chunk))
                .enumerate()
            {
                counts[c] = distinct(terms, slot);
            }
        }
        let offsets = &mut self.offsets;
        offsets.clear();
        offsets.push(0);
        for &c in counts.iter() {
            offsets.push(offsets[offsets.len() - 1] + c);
        }
        // Each chunk's bodies in order of first appearance, read back from its slots.
        let partials = *offsets.last().expect("offsets start with 0") as usize;
        resize_with_room(&mut self.body, partials, 0);
        let at = Firsts {
            slot: &self.slot,
            free: &list.free,
            offsets,
            chunk,
        };
        at.fill(parallel, 0..chunks, &mut self.body);
        let body = &self.body;
        self.by_piece.rebuild_with(free.div_ceil(PIECE), || {
            (0u32..)
                .zip(body)
                .map(|(p, &b)| ((b as usize / PIECE) as u32, p))
        });
    }

    /// Number of partials (bodies).
    pub fn len(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0") as usize
    }

    /// The most partials of one chunk: the room a pass that adds each chunk's partials right
    /// after the chunk needs.
    pub fn widest_chunk(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }
}

/// The scratch of [`PartialPlan::rebuild`] and [`TermList::gradient_gather_into`], kept between
/// neighbour-list rebuilds.
#[derive(Debug, Default)]
pub(crate) struct PlanScratch {
    counts: Vec<u32>,
    pub gather: Vec<(u32, u32)>,
}

/// What [`Firsts::fill`] reads: the plan's slots, the terms, the chunks' offsets.
struct Firsts<'a, const K: usize> {
    slot: &'a [[u16; K]],
    free: &'a [[u32; K]],
    offsets: &'a [u32],
    chunk: usize,
}

impl<const K: usize> Firsts<'_, K> {
    /// The partials' bodies of `chunks` into `body` (theirs, from `offsets[chunks.start]`): a
    /// chunk's `s`-th distinct body is where its slot `s` first appears, since [`distinct`]
    /// numbers them in order of first appearance. Halves on rayon's pool when `parallel`.
    fn fill(&self, parallel: bool, chunks: core::ops::Range<usize>, body: &mut [u32]) {
        if parallel && chunks.len() > 1 {
            let mid = chunks.start + chunks.len() / 2;
            let cut = (self.offsets[mid] - self.offsets[chunks.start]) as usize;
            let (a, b) = body.split_at_mut(cut);
            rayon::join(
                || self.fill(true, chunks.start..mid, a),
                || self.fill(true, mid..chunks.end, b),
            );
            return;
        }
        let base = self.offsets[chunks.start] as usize;
        for c in chunks {
            let out = &mut body[self.offsets[c] as usize - base..];
            let terms = c * self.chunk..((c + 1) * self.chunk).min(self.free.len());
            let mut next = 0u16;
            for (fr, sl) in self.free[terms.clone()].iter().zip(&self.slot[terms]) {
                for (&f, &s) in fr.iter().zip(sl) {
                    if s == next {
                        out[next as usize] = f;
                        next += 1;
                    }
                }
            }
        }
    }
}

/// Terms from which [`PartialPlan::rebuild`] runs its chunks on rayon's pool.
const PARALLEL_PLAN_FROM: usize = 16_384;

/// One chunk of a [`PartialPlan`]: its distinct free bodies numbered in order of first
/// appearance (their number returned), each term's bodies' numbers into `slot`. An
/// open-addressing table on the stack holds what was seen: twice as many slots as the chunk
/// names bodies, a power of two (2 048 for 512 pairs).
fn distinct<const K: usize>(terms: &[[u32; K]], slot: &mut [[u16; K]]) -> u32 {
    let refs = K * terms.len();
    let mut none = |_: u32| {};
    if refs <= 1024 {
        distinct_in(terms, slot, &mut [EMPTY; 2048], 0, &mut none)
    } else if refs <= 4096 {
        distinct_in(terms, slot, &mut [EMPTY; 8192], 0, &mut none)
    } else if refs <= 8192 {
        distinct_in(terms, slot, &mut [EMPTY; 16384], 0, &mut none)
    } else {
        distinct_in(terms, slot, &mut [EMPTY; 65536], 0, &mut none)
    }
}

/// The chunks of `chunk` terms of `free` in turn on one thread: [`distinct`] of each, then
/// `done(its count, its bodies in order of first appearance)`. One table serves every chunk,
/// cleared once: its entries carry their chunk's tag, and another chunk's are empty.
fn in_turn<const K: usize>(
    free: &[[u32; K]],
    chunk: usize,
    slot: &mut [[u16; K]],
    done: &mut dyn FnMut(u32, &[u32]),
) {
    let refs = K * chunk;
    if refs <= 1024 {
        in_turn_with(free, chunk, slot, &mut [EMPTY; 2048], done);
    } else if refs <= 4096 {
        in_turn_with(free, chunk, slot, &mut [EMPTY; 8192], done);
    } else if refs <= 8192 {
        in_turn_with(free, chunk, slot, &mut [EMPTY; 16384], done);
    } else {
        in_turn_with(free, chunk, slot, &mut [EMPTY; 65536], done);
    }
}

fn in_turn_with<const K: usize, const T: usize>(
    free: &[[u32; K]],
    chunk: usize,
    slot: &mut [[u16; K]],
    table: &mut [u64; T],
    done: &mut dyn FnMut(u32, &[u32]),
) {
    // A chunk names at most `K · chunk` ≤ `T / 2` bodies: its found bodies fit on the stack
    // beside the table.
    let mut found = [0u32; 32_768];
    let mut tag = 0u16;
    for (terms, slot) in free.chunks(chunk).zip(slot.chunks_mut(chunk)) {
        if tag == STALE_TAGS {
            // Every tag used: the table cleared again, so that no old entry passes for new.
            table.fill(EMPTY);
            tag = 0;
        }
        let mut n = 0;
        let count = distinct_in(terms, slot, table, tag, &mut |b| {
            found[n] = b;
            n += 1;
        });
        done(count, &found[..n]);
        tag += 1;
    }
}

/// An empty entry of [`distinct_in`]'s table (its tag is [`STALE_TAGS`], never a chunk's).
const EMPTY: u64 = u64::MAX;
/// Tags a table takes before it is cleared again.
const STALE_TAGS: u16 = u16::MAX;

/// [`distinct`] with a table of `T` slots, each `key | index << 32 | tag << 48`; an entry of
/// another tag than `tag` is empty (so one table serves many chunks, [`in_turn`]). Each body
/// is given to `found` when first seen. Linear probing stays exact with stale entries: within
/// a chunk a slot only goes from stale to current, so a body's lookup meets only current
/// entries before its own.
fn distinct_in<const K: usize, const T: usize>(
    terms: &[[u32; K]],
    slot: &mut [[u16; K]],
    table: &mut [u64; T],
    tag: u16,
    found: &mut impl FnMut(u32),
) -> u32 {
    assert!(K * terms.len() <= T / 2, "a table at most half full");
    let bits = T.trailing_zeros();
    let tag = u64::from(tag) << 48;
    let mut count = 0u16;
    for (fr, slot) in terms.iter().zip(slot.iter_mut()) {
        for (k, &f) in fr.iter().enumerate() {
            if f == PINNED {
                slot[k] = NO_SLOT;
                continue;
            }
            // Fibonacci hashing, then linear probing.
            let mut h = (f.wrapping_mul(0x9E37_79B1) >> (32 - bits)) as usize;
            let index = loop {
                let e = table[h];
                if e >> 48 << 48 != tag {
                    table[h] = u64::from(f) | u64::from(count) << 32 | tag;
                    found(f);
                    count += 1;
                    break count - 1;
                }
                if e as u32 == f {
                    break (e >> 32) as u16;
                }
                h = (h + 1) & (T - 1);
            };
            slot[k] = index;
        }
    }
    u32::from(count)
}

/// Compressed rows: `src[offsets[i]..offsets[i + 1]]` are the sources of target `i`, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Csr {
    pub offsets: Vec<u32>,
    pub src: Vec<u32>,
}

impl Csr {
    /// From `(target, source)` pairs listed in the order the sums must take.
    fn build(targets: usize, pairs: &[(u32, u32)]) -> Self {
        let mut csr = Self::default();
        csr.rebuild(targets, pairs);
        csr
    }

    /// [`Csr::build`] in place, keeping the memory.
    fn rebuild(&mut self, targets: usize, pairs: &[(u32, u32)]) {
        self.rebuild_with(targets, || pairs.iter().copied());
    }

    /// [`Csr::rebuild`] of the pairs `pairs()` lists (read twice, never held).
    fn rebuild_with<I: Iterator<Item = (u32, u32)>>(
        &mut self,
        targets: usize,
        pairs: impl Fn() -> I,
    ) {
        let offsets = &mut self.offsets;
        offsets.clear();
        offsets.resize(targets + 1, 0);
        let mut len = 0;
        for (t, _) in pairs() {
            offsets[t as usize + 1] += 1;
            len += 1;
        }
        for i in 0..targets {
            offsets[i + 1] += offsets[i];
        }
        self.src.clear();
        resize_with_room(&mut self.src, len, 0);
        // `offsets[t]` counts up while target `t` is filled, then is put back.
        for (t, s) in pairs() {
            self.src[offsets[t as usize] as usize] = s;
            offsets[t as usize] += 1;
        }
        for i in (1..=targets).rev() {
            offsets[i] = offsets[i - 1];
        }
        if let Some(first) = offsets.first_mut() {
            *first = 0;
        }
    }

    #[inline]
    pub fn row(&self, i: usize) -> &[u32] {
        &self.src[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// Where one form's local Hessian blocks go in one block layout: for each stored block, its
/// contributions in order (local block `[a][b]` of term `t` as `t·K² + a·K + b`) — the parallel
/// gather; and, for each term, the stored block each of its local blocks goes to ([`NOWHERE`]
/// when none) — the serial scatter, which visits the terms in the same order and so sums every
/// entry in the same order.
#[derive(Debug, Clone)]
pub(crate) struct HessianGather<const K: usize> {
    pub blocks: Csr,
    pub dest: Vec<[[u32; K]; K]>,
}

impl<const K: usize> HessianGather<K> {
    /// The gathers of `list` into `layout`, which is over the free indices `to_user[f]` of
    /// the terms' free indices `f` when given (a system in spatial order).
    pub fn new(list: &TermList<K>, layout: &BlockLayout, to_user: Option<&[u32]>) -> Self {
        let mut pairs = Vec::new();
        let mut dest = vec![[[NOWHERE; K]; K]; list.len()];
        let map = |f: u32| match to_user {
            Some(to) if f != PINNED => to[f as usize],
            _ => f,
        };
        for (t, fr) in list.free.iter().enumerate() {
            let fr = fr.map(map);
            for a in 0..K {
                for b in 0..K {
                    let (i, j) = (fr[a], fr[b]);
                    // Each stored block (i ≤ j) once: the diagonal blocks [a][a], and the
                    // off-diagonal one from the local block whose rows are the smaller body.
                    if i == PINNED || j == PINNED || i > j || (a != b && i == j) {
                        continue;
                    }
                    let k = layout
                        .find(i as usize, j as usize)
                        .expect("the layout holds every coupled pair");
                    pairs.push((k as u32, (K * K * t + K * a + b) as u32));
                    dest[t][a][b] = k as u32;
                }
            }
        }
        Self {
            blocks: Csr::build(layout.blocks(), &pairs),
            dest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terms_code_gives_back_its_bodies_types() {
        let kinds = [2, 0, 1, 1, 2, 0, 0];
        let mut list = TermList::<2> {
            own_bodies: Vec::new(),
            free: vec![[0, 1], [1, 2], [4, 0], [5, 6], [3, 4], [6, 6]],
            codes: Vec::new(),
            decoded: Vec::new(),
        };
        list.set_codes(&kinds);
        assert_eq!(list.codes.len(), list.bodies().len());
        assert_eq!(list.decoded.len(), 9, "3 types, 2 bodies");
        for (b, &c) in list.bodies().iter().zip(&list.codes) {
            assert_eq!(
                list.decoded[c as usize],
                b.map(|b| kinds[b as usize]),
                "{b:?}"
            );
        }
        // Distinct types, distinct codes.
        assert_ne!(list.codes[0], list.codes[2]);
        // 17 types of pairs: 289 codes do not fit a byte, and untyped lists have none.
        list.set_codes(&[16, 0, 1, 1, 2, 0, 0]);
        assert!(list.codes.is_empty() && list.decoded.is_empty());
        list.set_codes(&[]);
        assert!(list.codes.is_empty() && list.decoded.is_empty());
    }

    /// A list of the pairs of free bodies `free`, untyped.
    fn pairs(free: Vec<[u32; 2]>) -> TermList<2> {
        TermList {
            own_bodies: Vec::new(),
            free,
            codes: Vec::new(),
            decoded: Vec::new(),
        }
    }

    /// The partial plan of `list` made on a pool of `threads` threads.
    fn plan_on(threads: usize, list: &TermList<2>, free: usize, chunk: usize) -> PartialPlan<2> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| PartialPlan::new(list, free, chunk))
    }

    /// The room of one chunk's partials is the most distinct free bodies a chunk touches:
    /// chunks of 3 pairs over bodies 0..4, with a pinned body, touch 4, 3 and 1.
    #[test]
    fn the_widest_chunk_holds_the_most_bodies_of_a_chunk() {
        let list = pairs(vec![
            [0, 1],
            [2, 3],
            [1, 2],
            [0, 0],
            [0, PINNED],
            [1, 0],
            [3, 3],
        ]);
        let plan = PartialPlan::new(&list, 4, 3);
        assert_eq!(plan.offsets, [0, 4, 6, 7]);
        assert_eq!(plan.widest_chunk(), 4);
        assert_eq!(plan.len(), 7);
        assert_eq!(PartialPlan::new(&pairs(Vec::new()), 4, 3).widest_chunk(), 0);
    }

    /// A partial plan made on one thread (the chunks in turn, one tagged table) is the plan
    /// made on a pool (each chunk its own table, then its bodies read back from its slots):
    /// for pairs in chunks of 512 and 16 384 with pinned bodies, and in chunks of one pair —
    /// more chunks than the table's tags, so that it is cleared on the way.
    #[test]
    fn a_partial_plan_is_the_same_made_in_turn_and_on_a_pool() {
        let (n, bodies) = (80_000usize, 5_000u32);
        let free: Vec<[u32; 2]> = (0..n as u32)
            .map(|t| {
                let i = t.wrapping_mul(2_654_435_761) % bodies;
                let j = (i + 1 + t % 97) % bodies;
                let pin = |b: u32| if b.is_multiple_of(41) { PINNED } else { b };
                [pin(i), pin(j)]
            })
            .collect();
        let list = pairs(free);
        let made = |threads: usize, chunk: usize| {
            let plan = plan_on(threads, &list, bodies as usize, chunk);
            assert_eq!(plan.pieces, threads > 1);
            (plan.slot, plan.offsets, plan.body)
        };
        for chunk in [1, 512, 16_384] {
            let one = made(1, chunk);
            assert_eq!(one.1.len(), n.div_ceil(chunk) + 1, "chunk {chunk}");
            assert!(one == made(2, chunk), "chunk {chunk}");
        }
        // The first pair's entries stay in the table while the next 65 534 chunks use other
        // slots; the 65 536th chunk holds the first pair the other way round. A table not
        // cleared when its tags run out would take the old entries for its own and number
        // its bodies the other way.
        let wrap = STALE_TAGS as usize;
        let free: Vec<[u32; 2]> = (0..wrap + 2)
            .map(|t| match t {
                0 => [1, 2],
                t if t == wrap => [2, 1],
                _ => [3, 4],
            })
            .collect();
        let plan = plan_on(1, &pairs(free), 5, 1);
        assert_eq!(plan.slot[wrap], [0, 1]);
        assert_eq!(plan.body[2 * wrap..2 * wrap + 2], [2, 1]);
    }

    /// The plan of a list made of rows — each body's pairs one after another, the body first
    /// or second in a pair, as a neighbour list lists them — is the plan of its definition:
    /// per chunk, the distinct free bodies numbered in order of first appearance (a map
    /// searched from scratch), on one thread and on a pool, for chunks of 1, 3, 512 and 16 384
    /// pairs, some bodies pinned.
    #[test]
    fn a_plan_of_rows_numbers_each_chunks_bodies_in_order_of_first_appearance() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(39);
        let mut below = |n: u32| rng.next_u32() % n;
        let bodies = 3_000u32;
        let mut free: Vec<[u32; 2]> = Vec::new();
        for i in 0..bodies {
            let pin = |b: u32| if b.is_multiple_of(37) { PINNED } else { b };
            for _ in 0..below(14) {
                let j = below(bodies);
                let pair = if below(2) == 0 { [i, j] } else { [j, i] };
                free.push(pair.map(pin));
            }
        }
        let list = pairs(free);
        for chunk in [1, 3, 512, 16_384] {
            let (mut slot, mut offsets, mut body) = (Vec::new(), vec![0u32], Vec::new());
            for terms in list.free.chunks(chunk) {
                let mut number = std::collections::HashMap::new();
                for t in terms {
                    slot.push(t.map(|b| {
                        if b == PINNED {
                            return NO_SLOT;
                        }
                        let next = number.len() as u16;
                        *number.entry(b).or_insert_with(|| {
                            body.push(b);
                            next
                        })
                    }));
                }
                offsets.push(body.len() as u32);
            }
            for threads in [1, 2] {
                let plan = plan_on(threads, &list, bodies as usize, chunk);
                assert!(plan.slot == slot, "chunk {chunk}, {threads} threads");
                assert_eq!(plan.offsets, offsets, "chunk {chunk}, {threads} threads");
                assert_eq!(plan.body, body, "chunk {chunk}, {threads} threads");
            }
        }
    }
}
