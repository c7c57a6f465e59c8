//! The SIMD per-term pass: a form's terms `Lanes::WIDTH` at a time through the lane kernels
//! the macro emits generic in [`Lanes`], each chunk's gradients summed into per-body partials
//! ([`PartialPlan`]). Under a pair cutoff the half list's terms are first filtered by the
//! cutoff and the survivors compacted, positions and all, into a window
//! ([`windowed_pairs`]); a pair form of point bodies usually goes by rows instead
//! (`super::super::pairs`).

use core::marker::PhantomData;

use super::sums::{Spans, add_partials, chunk_by_chunk, chunk_sum, over_chunks};
use super::{Inputs, lane_chunk};
use crate::assembly::cell::{Image, r2};
use crate::assembly::forms::Form;
use crate::assembly::plan::{NO_SLOT, PINNED, PartialPlan, TermList};
use crate::assembly::terms::{Kernel, Kinds};
use crate::simd::{self, Lanes, Loads, PREFETCH_AHEAD as AHEAD, WithLanes};

/// What a SIMD pass reads (named with a trailing underscore: `Lanes` is the lane trait).
pub(super) struct Lanes_<'a, T, const D: usize, const K: usize> {
    pub list: &'a TermList<K>,
    pub plan: &'a PartialPlan<K>,
    pub input: &'a Inputs<'a, D>,
    pub terms: &'a T,
}

/// Phase A through the SIMD lane kernels ([`crate::simd`]): every term's energy (each chunk's
/// summed into `sums`, [`chunk_sum`]) and, when asked, each chunk's gradient partials into
/// `part` ([`PartialPlan`]), `Lanes::WIDTH` terms at a time (the last block padded with copies
/// of the last term, their lanes dropped). Each lane computes the bits the scalar kernel
/// would, and each chunk sums its terms in term order: the same bits whatever the SIMD width
/// and the thread count.
/// Each chunk's term energies go to scratch on the stack ([`over_chunks`]). With `into` (one
/// thread), each chunk's partials are added into that gradient right after the chunk
/// ([`chunk_by_chunk`]: `part` holds one chunk's at a time), the additions phase B would make
/// ([`super::sums::add_partials_by_piece`]) in the same order. `WINDOWED`: the terms are a
/// neighbour list's pairs under a cutoff, filtered and compacted first ([`windowed_pairs`]);
/// made only for the pair engine's per-term pass.
pub(super) fn lane_pass<T, F, const D: usize, const K: usize, const WINDOWED: bool>(
    parallel: bool,
    at: &Lanes_<'_, T, D, K>,
    sums: &mut Vec<f64>,
    part: Option<&mut [f64]>,
    into: Option<&mut [f64]>,
) where
    T: Kernel<D, K, F>,
    F: Form,
{
    let chunk = lane_chunk::<F>();
    sums.resize(at.list.len().div_ceil(chunk), 0.0);
    let spans = part.map(|buf| Spans {
        buf,
        at: &at.plan.offsets,
        stride: D,
    });
    let one = |c: usize, part: Option<&mut [f64]>, ec: &mut [f64]| -> f64 {
        lane_chunk_pass::<T, F, D, K, WINDOWED>(at, c, part, ec)
    };
    match (spans, into) {
        (Some(spans), Some(grad)) => {
            assert!(!parallel, "one chunk's partials at a time on one thread");
            let mut add = |c: usize, part: &[f64]| {
                add_partials::<D>(at.plan.chunk_bodies(c), part, grad);
            };
            chunk_by_chunk(spans, (at.list.len(), chunk), sums, &one, &mut add);
        }
        (spans, _) => over_chunks(parallel, spans, (at.list.len(), chunk), sums, &one),
    }
}

/// Chunk `c` of [`lane_pass`] (its terms' energies into `ec`, as long as the chunk has terms;
/// with `part`, its partials into it): the chunk's energy ([`chunk_sum`]).
pub(super) fn lane_chunk_pass<T, F, const D: usize, const K: usize, const WINDOWED: bool>(
    at: &Lanes_<'_, T, D, K>,
    c: usize,
    part: Option<&mut [f64]>,
    ec: &mut [f64],
) -> f64
where
    T: Kernel<D, K, F>,
    F: Form,
{
    let chunk = lane_chunk::<F>();
    let terms = c * chunk..(c * chunk + ec.len());
    let written = simd::dispatch_with(
        at.input.isa,
        LanePass::<T, F, D, K, WINDOWED> {
            terms: at.terms,
            input: at.input,
            free: &at.list.free[terms.clone()],
            bodies: &at.list.bodies()[terms.clone()],
            codes: at.list.codes.get(terms.clone()).unwrap_or(&[]),
            decoded: &at.list.decoded,
            slots: &at.plan.slot[terms],
            e: ec,
            part,
            form: PhantomData,
        },
    );
    // The chunk's energy, summed here on the pool (`add_energy` then adds the sums).
    chunk_sum(&ec[..written])
}

/// One chunk of [`lane_pass`].
struct LanePass<'a, T, F, const D: usize, const K: usize, const WINDOWED: bool> {
    terms: &'a T,
    input: &'a Inputs<'a, D>,
    free: &'a [[u32; K]],
    bodies: &'a [[u32; K]],
    codes: &'a [u8],
    decoded: &'a [Kinds<K>],
    slots: &'a [[u16; K]],
    e: &'a mut [f64],
    part: Option<&'a mut [f64]>,
    form: PhantomData<fn() -> F>,
}

impl<T, F, const D: usize, const K: usize, const WINDOWED: bool> WithLanes
    for LanePass<'_, T, F, D, K, WINDOWED>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    /// How many terms' energies were written (the first of `e`).
    type Output = usize;

    #[inline(always)]
    fn run<L: Loads>(self) -> usize {
        let LanePass {
            terms,
            input,
            free,
            bodies,
            codes,
            decoded,
            slots,
            e,
            mut part,
            ..
        } = self;
        if let Some(p) = part.as_deref_mut() {
            p.fill(0.0);
        }
        let block = LaneBlock {
            terms,
            omega: input.omega,
            input,
            bodies,
            codes,
            decoded,
            slots,
        };
        if WINDOWED {
            let cut2 = input.cut2.expect("a pair form under a cutoff");
            return windowed_pairs::<L, T, F, D, K>(&block, free, cut2, e, part);
        }
        let n = free.len();
        let w = L::WIDTH;
        let mut soa = [[[0.0; 8]; D]; K];
        let mut order = [0u16; 8];
        let far = simd::prefetches(input.q.len());
        // Whole blocks, then the chunk's last terms (fewer than a block) as one block whose
        // spare lanes repeat the last term, of which only the first `used` lanes are kept.
        // One call of the kernel for both: each call site inlines a copy of it (and the scalar
        // kernel term by term would be one more copy in every lane entry).
        let mut j = 0;
        while j < n {
            let used = (n - j).min(w);
            // Bonded terms in a spatial order reach far along a long `q` as well.
            prefetch_ahead::<D, K>(far, input.q, free, j..j + w);
            for (l, o) in order[..w].iter_mut().enumerate() {
                *o = (j + l.min(used - 1)) as u16;
            }
            let x = load_lanes::<L, D, K>(input, free, bodies, &order[..w], &mut soa);
            let mut kinds = [[0u32; K]; 8];
            let mut slot = [[NO_SLOT; K]; 8];
            let (kinds, slot) = if used == w {
                (block.kinds_of_run(j, w, &mut kinds), &block.slots[j..j + w])
            } else {
                block.rows_of(&order[..w], used, &mut kinds, &mut slot)
            };
            block.evaluate_at(
                x,
                kinds,
                slot,
                &mut e[j..j + used],
                part.as_deref_mut(),
                &mut soa,
            );
            j += used;
        }
        n
    }
}

/// What evaluating a block of a chunk's terms needs beside their positions.
struct LaneBlock<'a, T, const D: usize, const K: usize> {
    terms: &'a T,
    omega: f64,
    input: &'a Inputs<'a, D>,
    bodies: &'a [[u32; K]],
    /// The terms' types as codes ([`TermList::set_codes`]; empty: none) and their types.
    codes: &'a [u8],
    decoded: &'a [Kinds<K>],
    slots: &'a [[u16; K]],
}

impl<T, const D: usize, const K: usize> LaneBlock<'_, T, D, K> {
    /// The terms `block` (`L::WIDTH` of them, indices into the chunk) at positions `x`, of
    /// which the first `used` are kept: their energies into `e[0..used]` and, with `part`,
    /// their gradients added into the chunk's partials in lane order (`soa` is scratch).
    #[inline(always)]
    fn evaluate<L: Lanes, F: Form>(
        &self,
        x: [[L; D]; K],
        block: &[u16],
        used: usize,
        e: &mut [f64],
        part: Option<&mut [f64]>,
        soa: &mut [[[f64; 8]; D]; K],
    ) where
        T: Kernel<D, K, F>,
    {
        let mut kinds = [[0u32; K]; 8];
        let mut slot = [[NO_SLOT; K]; 8];
        let (kinds, slot) = self.rows_of(block, used, &mut kinds, &mut slot);
        self.evaluate_at(x, kinds, slot, e, part, soa);
    }

    /// The types of the terms `block` ([`LaneBlock::kinds_of`]) and the slots of the first
    /// `used`, the lanes kept, held in `kinds` and `slot`.
    #[inline(always)]
    fn rows_of<'k>(
        &self,
        block: &[u16],
        used: usize,
        kinds: &'k mut [Kinds<K>; 8],
        slot: &'k mut [[u16; K]; 8],
    ) -> (&'k [Kinds<K>], &'k [[u16; K]]) {
        for (s, &t) in slot.iter_mut().zip(&block[..used]) {
            *s = self.slots[t as usize];
        }
        (self.kinds_of(block, kinds), &slot[..used])
    }

    /// The types of the bodies of the terms `block` (one per lane), when the form reads them:
    /// one row when every lane's are the same (the neighbour list groups pairs by types), read
    /// once by the kernel; `buf` holds them.
    #[inline(always)]
    fn kinds_of<'k>(&self, block: &[u16], buf: &'k mut [Kinds<K>; 8]) -> &'k [Kinds<K>] {
        let w = block.len();
        if self.input.kinds.is_empty() {
            &buf[..0]
        } else if let Some(&c0) = self.codes.get(block[0] as usize) {
            if block[1..].iter().all(|&t| self.codes[t as usize] == c0) {
                buf[0] = self.decoded[c0 as usize];
                &buf[..1]
            } else {
                for (row, &t) in buf.iter_mut().zip(block) {
                    *row = self.decoded[self.codes[t as usize] as usize];
                }
                &buf[..w]
            }
        } else {
            for (row, &t) in buf.iter_mut().zip(block) {
                *row = self.input.kinds(&self.bodies[t as usize]);
            }
            one_row_if_shared(&buf[..w])
        }
    }

    /// [`LaneBlock::kinds_of`] the `w` consecutive terms from `t`: their types' codes read as a
    /// run.
    #[inline(always)]
    fn kinds_of_run<'k>(&self, t: usize, w: usize, buf: &'k mut [Kinds<K>; 8]) -> &'k [Kinds<K>] {
        if self.input.kinds.is_empty() {
            &buf[..0]
        } else if let Some(codes) = self.codes.get(t..t + w) {
            if codes[1..].iter().all(|&c| c == codes[0]) {
                buf[0] = self.decoded[codes[0] as usize];
                &buf[..1]
            } else {
                for (row, &c) in buf.iter_mut().zip(codes) {
                    *row = self.decoded[c as usize];
                }
                &buf[..w]
            }
        } else {
            for (row, b) in buf.iter_mut().zip(&self.bodies[t..t + w]) {
                *row = self.input.kinds(b);
            }
            one_row_if_shared(&buf[..w])
        }
    }

    /// The kernel on one block (`kinds`: one row, or one per lane; `slot`: the partials of
    /// each lane kept, the first `slot.len()`; the others' results are dropped).
    #[inline(always)]
    fn evaluate_at<L: Lanes, F: Form>(
        &self,
        x: [[L; D]; K],
        kinds: &[Kinds<K>],
        slot: &[[u16; K]],
        e: &mut [f64],
        part: Option<&mut [f64]>,
        soa: &mut [[[f64; 8]; D]; K],
    ) where
        T: Kernel<D, K, F>,
    {
        let used = slot.len();
        let store = |v: L, e: &mut [f64]| {
            if used == L::WIDTH {
                v.store(e);
            } else {
                let mut all = [0.0; 8];
                v.store(&mut all);
                e[..used].copy_from_slice(&all[..used]);
            }
        };
        let Some(p) = part else {
            store(self.terms.value_lanes(self.omega, &x, kinds), e);
            return;
        };
        let (v, grad) = self.terms.value_gradient_lanes(self.omega, &x, kinds);
        store(v, e);
        for k in 0..K {
            for d in 0..D {
                grad[k][d].store(&mut soa[k][d]);
            }
        }
        let rows = p.as_chunks_mut::<D>().0;
        let free = self.input.all_free;
        if let Some(s0) = shared_first_body(slot) {
            // The block's first bodies are one body (a row of a pair tile): its w partials
            // are summed in registers, in lane order as below.
            let dst = &mut rows[s0 as usize];
            for (x, lanes) in dst.iter_mut().zip(&soa[0]) {
                *x = lanes[..used].iter().fold(*x, |acc, g| acc + g);
            }
            scatter(rows, slot, soa, 1, free);
        } else {
            scatter(rows, slot, soa, 0, free);
        }
    }
}

/// Terms a window of [`windowed_pairs`] holds before it evaluates them.
const WINDOW: usize = 256;

/// When `far` ([`simd::prefetches`]): the coordinates in `q` of the bodies of the terms
/// [`AHEAD`] after `block` (their rows of `free`) asked for now, so that they are in cache
/// when that block is loaded. A pinned body's index asks for an address past `q`: a prefetch
/// never faults.
#[inline(always)]
fn prefetch_ahead<const D: usize, const K: usize>(
    far: bool,
    q: &[f64],
    free: &[[u32; K]],
    block: core::ops::Range<usize>,
) {
    if let Some(ahead) = free
        .get(block.start + AHEAD..block.end + AHEAD)
        .filter(|_| far)
    {
        for &b in ahead.iter().flatten() {
            simd::prefetch(q.as_ptr().wrapping_add(b as usize * D));
        }
    }
}

/// The pair terms of a chunk under a cutoff: each block of `WIDTH` terms is loaded once (its
/// partners gathered, nearest images taken), its terms within the cutoff (`|Δ|² < cut2` on the
/// reference sites; about 40 % of a Verlet list with LAMMPS's skin) are compacted, positions
/// and all, into a window, and every `WIDTH` survivors are evaluated from the window — not
/// gathered again. Survivors keep term order and form the same blocks as filtering the whole
/// chunk first would: the same bits. Writes the survivors' energies to `e` in order; returns
/// their number.
#[inline(always)]
fn windowed_pairs<L: Loads, T, F: Form, const D: usize, const K: usize>(
    block: &LaneBlock<'_, T, D, K>,
    free: &[[u32; K]],
    cut2: f64,
    e: &mut [f64],
    mut part: Option<&mut [f64]>,
) -> usize
where
    T: Kernel<D, K, F>,
{
    let (w, n, input) = (L::WIDTH, free.len(), block.input);
    let mut soa = [[[0.0; 8]; D]; K];
    // The window: survivors' term indices and coordinates, `WINDOW` + a block of slack for
    // the whole-vector stores of the compaction.
    let image = input.cell.as_ref().map(Image::<L>::new);
    let mut near = [0u16; WINDOW + 8];
    let mut xs = [[[0.0; WINDOW + 8]; D]; K];
    let (mut filled, mut done) = (0, 0);
    let far = simd::prefetches(input.q.len());
    let mut t = 0;
    while t < n {
        if t + w <= n {
            // A pair's second body is anywhere in a long `q` when the file's order is not
            // spatial.
            prefetch_ahead::<D, K>(far, input.q, free, t..t + w);
            let x = load_consecutive::<L, D, K>(
                input,
                image.as_ref(),
                &free[t..t + w],
                &block.bodies[t..t + w],
                &mut soa,
            );
            let within = r2(&x).lt_mask(L::splat(cut2));
            for k in 0..K {
                for d in 0..D {
                    x[k][d].compress_store(within, &mut xs[k][d][filled..]);
                }
            }
            // Branch-free, in lane order (term order): every index is written and kept when
            // within (a coin toss the branch predictor would lose).
            for l in 0..w {
                near[filled] = (t + l) as u16;
                filled += ((within >> l) & 1) as usize;
            }
            t += w;
        } else {
            // The chunk's last terms, one lane at a time.
            let x = input.x(&free[t], &block.bodies[t]);
            for k in 0..K {
                for d in 0..D {
                    xs[k][d][filled] = x[k][d];
                }
            }
            near[filled] = t as u16;
            filled += usize::from(r2(&x) < cut2);
            t += 1;
        }
        if filled >= WINDOW || t == n {
            // Whole blocks; at the chunk's end the survivors short of a block as well, as one
            // block whose spare lanes repeat the last survivor, of which only the first
            // `used` are kept (so no scalar copy of the kernel). `j` stays a multiple of `w`
            // below `filled < WINDOW + w`, so a block ends within the window's slack.
            let end = if t == n { filled } else { filled - filled % w };
            let mut j = 0;
            while j < end {
                let used = (end - j).min(w);
                for l in used..w {
                    near[j + l] = near[end - 1];
                    for xk in &mut xs {
                        for xd in xk.iter_mut() {
                            xd[j + l] = xd[end - 1];
                        }
                    }
                }
                let mut x = [[L::splat(0.0); D]; K];
                for k in 0..K {
                    for d in 0..D {
                        x[k][d] = L::load(&xs[k][d][j..]);
                    }
                }
                block.evaluate(
                    x,
                    &near[j..j + w],
                    used,
                    &mut e[done + j..done + j + used],
                    part.as_deref_mut(),
                    &mut soa,
                );
                j += used;
            }
            // Carry the survivors short of a block to the window's start.
            near.copy_within(j..filled, 0);
            for xk in &mut xs {
                for xd in xk.iter_mut() {
                    xd.copy_within(j..filled, 0);
                }
            }
            done += j;
            filled -= j;
        }
    }
    done
}

/// [`load_lanes`] of `L::WIDTH` consecutive terms (`free` and `bodies` their rows): when
/// every body is free, each body's coordinates come from one [`Lanes::gather_bodies`] (the
/// indices read straight from the list) or one broadcast when the block shares it — for pairs
/// of point bodies both at once, by [`Lanes::load_pairs3`].
#[inline(always)]
fn load_consecutive<L: Loads, const D: usize, const K: usize>(
    input: &Inputs<'_, D>,
    image: Option<&Image<L>>,
    free: &[[u32; K]],
    bodies: &[[u32; K]],
    soa: &mut [[[f64; 8]; D]; K],
) -> [[L; D]; K] {
    let mut x = [[L::splat(0.0); D]; K];
    let all_free = input.all_free || free.iter().all(|f| f.iter().all(|&b| b != PINNED));
    if all_free && K == 2 && D == 3 {
        // Pairs of point bodies (every pair form of the condensed phase): both loaded at once.
        let xy = L::load_pairs3::<K>(input.q, free);
        for (xk, yk) in x.iter_mut().zip(&xy) {
            for (xd, &yd) in xk.iter_mut().zip(yk) {
                *xd = yd;
            }
        }
    } else if all_free {
        for (k, xk) in x.iter_mut().enumerate() {
            let first = free[0][k];
            if free.iter().all(|f| f[k] == first) {
                let o = first as usize * D;
                for (xd, &v) in xk.iter_mut().zip(&input.q[o..o + D]) {
                    *xd = L::splat(v);
                }
            } else {
                *xk = L::gather_bodies::<D, K>(input.q, free, k);
            }
        }
    } else {
        for (l, (f, b)) in free.iter().zip(bodies).enumerate() {
            input.x_into(f, b, l, soa);
        }
        for k in 0..K {
            for d in 0..D {
                x[k][d] = L::load(&soa[k][d]);
            }
        }
    }
    if let Some(image) = image {
        image.apply(&mut x);
    }
    x
}

/// The positions of the terms `block` (`L::WIDTH` of them) of a chunk as lanes, nearest
/// images in a periodic box: gathered when every body is free, else lane by lane through `soa`.
#[inline(always)]
fn load_lanes<L: Lanes, const D: usize, const K: usize>(
    input: &Inputs<'_, D>,
    free: &[[u32; K]],
    bodies: &[[u32; K]],
    block: &[u16],
    soa: &mut [[[f64; 8]; D]; K],
) -> [[L; D]; K] {
    // Loops, not `array::from_fn`: a closure may stay out of line, and the intrinsics inside
    // it would then be calls compiled without the instruction set.
    let mut x = [[L::splat(0.0); D]; K];
    if input.all_free
        || block
            .iter()
            .all(|&t| free[t as usize].iter().all(|&f| f != PINNED))
    {
        let mut rows = [[0usize; 8]; K];
        for (l, &t) in block.iter().enumerate() {
            for k in 0..K {
                rows[k][l] = free[t as usize][k] as usize * D;
            }
        }
        for (xk, rows) in x.iter_mut().zip(&rows) {
            let rows = &rows[..block.len()];
            if rows.iter().all(|&o| o == rows[0]) {
                // One body in every lane (a row of a neighbour list or of a pair tile): a
                // broadcast, not a gather — the same values.
                for (xd, &v) in xk.iter_mut().zip(&input.q[rows[0]..rows[0] + D]) {
                    *xd = L::splat(v);
                }
            } else {
                *xk = L::gather::<D>(input.q, rows);
            }
        }
    } else {
        for (l, &t) in block.iter().enumerate() {
            input.x_into(&free[t as usize], &bodies[t as usize], l, soa);
        }
        for k in 0..K {
            for d in 0..D {
                x[k][d] = L::load(&soa[k][d]);
            }
        }
    }
    if let Some(cell) = &input.cell {
        Image::new(cell).apply(&mut x);
    }
    x
}

/// The slot of a block's first bodies when it is one body for every term and no other body
/// of the block has it. Then adding its partials first, lane by lane, and the other bodies'
/// after adds into every slot in the order of [`accumulate`] term after term: the same bits.
#[inline(always)]
fn shared_first_body<const K: usize>(block: &[[u16; K]]) -> Option<u16> {
    let s0 = block.first()?[0];
    let shared = s0 != NO_SLOT
        && block
            .iter()
            .all(|s| s[0] == s0 && s[1..].iter().all(|&x| x != s0));
    shared.then_some(s0)
}

/// `kinds` as one row when every lane's is the same (a kernel then reads each parameter once).
#[inline(always)]
fn one_row_if_shared<const K: usize>(kinds: &[Kinds<K>]) -> &[Kinds<K>] {
    if kinds[1..].iter().all(|k| *k == kinds[0]) {
        &kinds[..1]
    } else {
        kinds
    }
}

/// [`accumulate`] for every lane of a block (`slot`: each lane's slots), in lane order;
/// `all_free`: no slot is [`NO_SLOT`] (only pinned bodies have none), none is looked at.
#[inline(always)]
fn scatter<const D: usize, const K: usize>(
    rows: &mut [[f64; D]],
    slot: &[[u16; K]],
    soa: &[[[f64; 8]; D]; K],
    from: usize,
    all_free: bool,
) {
    if all_free {
        for (l, slot) in slot.iter().enumerate() {
            for k in from..K {
                let dst = &mut rows[slot[k] as usize];
                for d in 0..D {
                    dst[d] += soa[k][d][l];
                }
            }
        }
    } else {
        for (l, slot) in slot.iter().enumerate() {
            accumulate(rows, slot, soa, l, from);
        }
    }
}

/// `part[slot[k]] += soa[k][·][lane]` for each free body `k ≥ from` of a term.
#[inline(always)]
fn accumulate<const D: usize, const K: usize>(
    rows: &mut [[f64; D]],
    slot: &[u16; K],
    soa: &[[[f64; 8]; D]; K],
    lane: usize,
    from: usize,
) {
    for k in from..K {
        if slot[k] != NO_SLOT {
            let dst = &mut rows[slot[k] as usize];
            for d in 0..D {
                dst[d] += soa[k][d][lane];
            }
        }
    }
}
