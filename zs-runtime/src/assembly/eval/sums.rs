//! Every sum the engine makes, each in a fixed order, so that its bits depend on neither the
//! lanes nor the threads: a chunk's term energies ([`chunk_sum`]), a row's eight virtual lanes
//! ([`virtual_sum`]), the chunks of a pass on rayon's pool ([`over_chunks`]) or in turn
//! ([`chunk_by_chunk`]), each body's partials in chunk order ([`add_partials_by_body`],
//! [`add_partials_by_piece`]), and phase B of the engine, every form's contributions in table
//! order ([`sum_vector`], [`sum_hessian`]; on one thread the gradient's with each form's phase
//! A, [`gradient_form_by_form`]).

use rayon::prelude::*;

use super::{CHUNK, FormList, FormOps, Inputs, Interleave, PAIR_CHUNK, Want};
use crate::assembly::plan::{PIECE, PartialPlan};
use crate::model::HessianPart;
use crate::simd::{Lanes, PREFETCH_AHEAD as AHEAD};

/// The sum of a chunk of term energies, in a fixed pattern: term `t` into accumulator `t mod 8`,
/// the eight accumulators added pairwise. Independent sums keep the adder busy, and the pattern
/// does not depend on the SIMD width or the thread count that produced the terms.
#[inline]
pub(crate) fn chunk_sum(e: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let mut blocks = e.chunks_exact(8);
    for b in &mut blocks {
        for (a, x) in acc.iter_mut().zip(b) {
            *a += x;
        }
    }
    for (a, x) in acc.iter_mut().zip(blocks.remainder()) {
        *a += x;
    }
    tree(&acc)
}

/// `a[0] + … + a[7]` in one fixed tree.
#[inline(always)]
fn tree(a: &[f64; 8]) -> f64 {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

/// The position of each lane in a block of 8 virtual lanes, per part of `L::WIDTH`.
#[inline(always)]
pub(crate) fn block_positions<L: Lanes>() -> [L; 8] {
    let w = L::WIDTH;
    let mut at = [L::splat(0.0); 8];
    for (v, a) in at.iter_mut().enumerate().take(8 / w) {
        *a = L::from_fn(|l| (v * w + l) as f64);
    }
    at
}

/// The sum of a row's 8 virtual lanes (`part(v)`: part `v`'s `L::WIDTH` of them) in one
/// fixed tree: the same bits on every width.
#[inline(always)]
pub(crate) fn virtual_sum<L: Lanes>(part: impl Fn(usize) -> L) -> f64 {
    let w = L::WIDTH;
    let mut lanes = [0.0; 8];
    for v in 0..8 / w {
        part(v).store(&mut lanes[v * w..]);
    }
    tree(&lanes)
}

/// The outputs of a pass's chunks: chunk `c`'s are `buf[stride·at[c] .. stride·at[c + 1]]`.
pub(crate) struct Spans<'a> {
    pub buf: &'a mut [f64],
    pub at: &'a [u32],
    pub stride: usize,
}

/// One chunk's part of a pass: `(chunk, its spans' outputs, its scratch)`, its energy
/// returned.
pub(crate) type ChunkFn<'a> = dyn Fn(usize, Option<&mut [f64]>, &mut [f64]) -> f64 + Sync + 'a;

/// `sums[c] = chunk(c, spans of c, scratch)` for every chunk `c` of `sums`, chunk `c` being
/// terms `c·per ..` of `terms` (its scratch as long as it has terms, at most `per` ≤
/// [`PAIR_CHUNK`]; on the stack, so that no buffer as long as the list is held or streamed):
/// halves on rayon's pool when `parallel` — a split allocates nothing, unlike collecting the
/// chunks' slices of varying length — one chunk at a time at the leaves. A chunk's outputs do
/// not depend on the split: the same bits on any number of threads.
pub(crate) fn over_chunks(
    parallel: bool,
    spans: Option<Spans<'_>>,
    (terms, per): (usize, usize),
    sums: &mut [f64],
    chunk: &ChunkFn<'_>,
) {
    split(parallel, 0..sums.len(), spans, (terms, per), sums, chunk);
}

/// [`over_chunks`] on one thread, each chunk's outputs kept only until the next: chunk `c`
/// writes them into the start of `spans.buf` (one chunk's room, reused), and `then(c, its
/// outputs)` adds them into their sums right after, while they are in cache — where the pass on
/// a pool writes every chunk's outputs to memory and sums them in a later stream.
pub(crate) fn chunk_by_chunk(
    spans: Spans<'_>,
    (terms, per): (usize, usize),
    sums: &mut [f64],
    chunk: &ChunkFn<'_>,
    then: &mut dyn FnMut(usize, &[f64]),
) {
    let Spans { buf, at, stride } = spans;
    on_stack(per.min(terms), |scratch| {
        for (c, s) in sums.iter_mut().enumerate() {
            let out = &mut buf[..(at[c + 1] - at[c]) as usize * stride];
            let len = per.min(terms.saturating_sub(c * per));
            *s = chunk(c, Some(&mut *out), &mut scratch[..len]);
            then(c, out);
        }
    });
}

/// `f` of `len` zeros on the stack (none when `len` is 0), from the smallest array of a
/// power of two from 64 that holds them: the whole array is zeroed, and a small system's pass
/// (a few hundred terms, a chunk of [`PAIR_CHUNK`]) would otherwise clear 128 KiB at every
/// evaluation.
fn on_stack<R>(len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
    macro_rules! sized {
        ($($n:literal)*) => {
            match len {
                0 => f(&mut []),
                $(_ if len <= $n => f(&mut [0.0; $n][..len]),)*
                _ => panic!("a chunk of {len} terms"),
            }
        };
    }
    const _: () = assert!(PAIR_CHUNK == 16_384 && CHUNK <= PAIR_CHUNK);
    sized!(64 128 256 512 1024 2048 4096 8192 16384)
}

fn split(
    parallel: bool,
    range: core::ops::Range<usize>,
    spans: Option<Spans<'_>>,
    (terms, per): (usize, usize),
    sums: &mut [f64],
    chunk: &ChunkFn<'_>,
) {
    if range.len() > 1 && parallel {
        let mid = range.start + range.len() / 2;
        let (s0, s1) = match spans {
            Some(Spans { buf, at, stride }) => {
                let cut = (at[mid] - at[range.start]) as usize * stride;
                let (a, b) = buf.split_at_mut(cut);
                (
                    Some(Spans { buf: a, at, stride }),
                    Some(Spans { buf: b, at, stride }),
                )
            }
            None => (None, None),
        };
        let (e0, e1) = sums.split_at_mut(mid - range.start);
        rayon::join(
            || split(true, range.start..mid, s0, (terms, per), e0, chunk),
            || split(true, mid..range.end, s1, (terms, per), e1, chunk),
        );
        return;
    }
    on_stack(per.min(terms), |scratch| {
        leaf(range, spans, (terms, per, scratch), sums, chunk)
    });
}

/// The chunks of `range` (of `per` terms) in turn, each with its part of `scratch`.
fn leaf(
    range: core::ops::Range<usize>,
    spans: Option<Spans<'_>>,
    (terms, per, scratch): (usize, usize, &mut [f64]),
    sums: &mut [f64],
    chunk: &ChunkFn<'_>,
) {
    let mut spans = spans;
    for (c, s) in range.zip(sums) {
        let out = match spans.take() {
            Some(Spans { buf, at, stride }) => {
                let len = (at[c + 1] - at[c]) as usize * stride;
                let (here, rest) = buf.split_at_mut(len);
                spans = Some(Spans {
                    buf: rest,
                    at,
                    stride,
                });
                Some(here)
            }
            None => None,
        };
        let len = per.min(terms.saturating_sub(c * per));
        *s = chunk(c, out, &mut scratch[..len]);
    }
}

/// Bodies `first_body ..` of `out` (`D` values each): each body's partials (`part`, `D`
/// values each) added into it in the order `of_body[body_at[b] .. body_at[b + 1]]` lists them
/// (chunk order); from zero when `first`.
pub(crate) fn add_partials_by_body<const D: usize>(
    first_body: usize,
    (body_at, of_body): (&[u32], &[u32]),
    part: &[f64],
    out: &mut [f64],
    first: bool,
) {
    for (b, ob) in (first_body..).zip(out.chunks_exact_mut(D)) {
        let mut acc: [f64; D] = if first {
            [0.0; D]
        } else {
            core::array::from_fn(|d| ob[d])
        };
        for &s in &of_body[body_at[b] as usize..body_at[b + 1] as usize] {
            let p = &part[s as usize * D..s as usize * D + D];
            for d in 0..D {
                acc[d] += p[d];
            }
        }
        ob.copy_from_slice(&acc);
    }
}

/// The partials of `plan` (`part`, `D` values each) that land on the free bodies of `out`
/// (from `first_body`, a multiple of [`PIECE`]), each added into its body in storage (chunk)
/// order — a stream through `part`, not a cache miss per partial; `first`: `out` is zeroed
/// first.
pub(crate) fn add_partials_by_piece<const D: usize, const K: usize>(
    plan: &PartialPlan<K>,
    part: &[f64],
    first_body: usize,
    out: &mut [f64],
    first: bool,
) {
    assert_eq!(first_body % PIECE, 0, "ranges start at a piece");
    if first {
        out.fill(0.0);
    }
    if first_body == 0 && !plan.pieces {
        // Every body at once (one thread): a stream through the partials in storage order,
        // each body's added in the order the pieces would add them.
        add_partials::<D>(&plan.body, part, out);
        return;
    }
    assert!(plan.pieces, "the pieces are made for a pool of threads");
    let pieces = first_body / PIECE..(first_body + out.len() / D).div_ceil(PIECE);
    // A piece's partials are spread over every chunk's: a long `part`'s are asked for ahead.
    let far = crate::simd::prefetches(part.len());
    for piece in pieces {
        let row = plan.by_piece.row(piece);
        for (k, &p) in row.iter().enumerate() {
            if let Some(&a) = row.get(k + AHEAD).filter(|_| far) {
                crate::simd::prefetch(plan.body.as_ptr().wrapping_add(a as usize));
                crate::simd::prefetch(part.as_ptr().wrapping_add(a as usize * D));
            }
            let (p, b) = (p as usize, plan.body[p as usize] as usize);
            let o = (b - first_body) * D;
            let v = &part[p * D..p * D + D];
            for d in 0..D {
                out[o + d] += v[d];
            }
        }
    }
}

/// Each of the partials `part` (`D` values each) added into its body `body[p]` of `out`, in
/// storage order.
#[inline]
pub(crate) fn add_partials<const D: usize>(body: &[u32], part: &[f64], out: &mut [f64]) {
    add_partials_first::<D>(body, part, out, &[]);
}

/// [`add_partials`], but the bodies at the positions `fresh` of `body` (ascending) are set to
/// `0 + partial`, the bits of zeroing them first and adding, in the same pass (their lines
/// asked for ahead like the others'), not in a store of their own.
pub(crate) fn add_partials_first<const D: usize>(
    body: &[u32],
    part: &[f64],
    out: &mut [f64],
    fresh: &[u32],
) {
    // The bodies are anywhere in `out`: a long one's are asked for `2 AHEAD` partials on (an
    // addition is quicker than a term of a pass, so twice as many items cover the same time).
    // A body's `D` values straddle two cache lines when they cross a 64-byte boundary (a
    // quarter of the bodies for `D = 3`): both lines are asked for, the last value's too.
    let far = crate::simd::prefetches(out.len());
    let mut next = fresh.iter().copied().peekable();
    for (k, (&b, v)) in body.iter().zip(part.chunks_exact(D)).enumerate() {
        if let Some(&f) = body.get(k + 2 * AHEAD).filter(|_| far) {
            let at = out.as_ptr().wrapping_add(f as usize * D);
            crate::simd::prefetch(at);
            crate::simd::prefetch(at.wrapping_add(D - 1));
        }
        let o = b as usize * D;
        if next.next_if_eq(&(k as u32)).is_some() {
            for d in 0..D {
                out[o + d] = 0.0 + v[d];
            }
        } else {
            for d in 0..D {
                out[o + d] += v[d];
            }
        }
    }
    debug_assert!(
        next.next().is_none(),
        "every fresh position within the chunk"
    );
}

/// Phase B for a vector (gradient or third contraction) over the forms that `include` selects,
/// each form's contributions in turn: per free body, the first form's, then the next one's, ...
/// (`out` has the free coordinates; zero when no form contributes).
pub(crate) fn sum_vector<T, const D: usize>(
    forms: &FormList<T, D>,
    include: &(dyn Fn(&dyn FormOps<T, D>) -> bool + Sync),
    free: usize,
    parallel: bool,
    out: &mut [f64],
) {
    let included = || {
        forms
            .iter()
            .map(|f| &**f)
            .filter(|&f| f.len() > 0 && include(f))
    };
    if included().next().is_none() {
        out.fill(0.0);
    } else if parallel && free > PIECE && included().all(|f| f.gathers_by_piece()) {
        in_chunks(out, PIECE * D, &|c, piece| {
            for (i, f) in included().enumerate() {
                f.gather_vector(c * PIECE, piece, i == 0);
            }
        });
    } else {
        for (i, f) in included().enumerate() {
            f.scatter_vector(out, i == 0);
        }
    }
}

/// The gradient on one thread, form by form: each form's phase A with its phase B
/// ([`FormOps::gradient_into`]), its additions after the previous form's — the order
/// [`sum_vector`] adds them in after every form's phase A, so the same bits. When every form
/// with terms goes by chunks, their chunks run interleaved ([`Interleave`]: the same additions
/// in the same order per body, in one sweep through `out`).
pub(crate) fn gradient_form_by_form<T, const D: usize>(
    forms: &mut FormList<T, D>,
    terms: &T,
    input: &Inputs<'_, D>,
    (out, interleave): (&mut [f64], &mut Interleave),
) {
    assert!(!input.parallel, "phase B after every phase A on a pool");
    if let Some(widest) = interleave.ready(forms, input, out.len() / D) {
        for f in forms.iter_mut().filter(|f| f.len() == 0) {
            f.evaluate(terms, input, Want::Gradient);
        }
        on_stack(widest, |scratch| {
            for (f, c, fresh) in interleave.order() {
                forms[f].gradient_chunk(terms, input, c, (&mut *out, fresh, &mut *scratch));
            }
        });
        for &b in interleave.untouched() {
            out[b as usize * D..(b as usize + 1) * D].fill(0.0);
        }
        return;
    }
    let mut first = true;
    for f in forms.iter_mut() {
        if f.len() > 0 {
            f.gradient_into(terms, input, out, first);
            first = false;
        } else {
            f.evaluate(terms, input, Want::Gradient);
        }
    }
    if first {
        out.fill(0.0);
    }
}

/// Phase B for the Hessian `part` into `values` (the stored blocks of its layout, `blocks` of
/// them), over the forms that enter it.
pub(crate) fn sum_hessian<T, const D: usize>(
    forms: &FormList<T, D>,
    part: HessianPart,
    blocks: usize,
    parallel: bool,
    values: &mut [f64],
) {
    let included = || {
        forms
            .iter()
            .map(|f| &**f)
            .filter(|&f| f.len() > 0 && f.enters(part))
    };
    if parallel && blocks > CHUNK {
        in_chunks(values, CHUNK * D * D, &|c, chunk| {
            chunk.fill(0.0);
            for f in included() {
                f.gather_hessian(part, c * CHUNK, chunk);
            }
        });
    } else {
        values.fill(0.0);
        for f in included() {
            f.scatter_hessian(part, values);
        }
    }
}

/// `f(c, chunk)` for the `c`-th chunk of `len` values of `out`, on rayon's pool. Not generic:
/// rayon's machinery is compiled once, not once per system, form and caller.
pub(super) fn in_chunks(out: &mut [f64], len: usize, f: &(dyn Fn(usize, &mut [f64]) + Sync)) {
    out.par_chunks_mut(len)
        .enumerate()
        .for_each(|(c, chunk)| f(c, chunk));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The partials added with prefetches (every length prefetches in the crate's tests) are
    /// the plain loop's sums, bit for bit, bodies repeated and scattered.
    #[test]
    fn partials_added_with_prefetches_are_the_plain_sums() {
        let (bodies, partials) = (1000, 5000);
        let body: Vec<u32> = (0..partials)
            .map(|p| ((p * 7919) % bodies) as u32)
            .collect();
        let part: Vec<f64> = (0..3 * partials).map(|k| (k as f64 * 0.37).sin()).collect();
        let mut plain = vec![0.5; 3 * bodies];
        for (&b, v) in body.iter().zip(part.chunks_exact(3)) {
            for d in 0..3 {
                plain[3 * b as usize + d] += v[d];
            }
        }
        let mut out = vec![0.5; 3 * bodies];
        assert!(crate::simd::prefetches(out.len()), "the prefetching path");
        add_partials::<3>(&body, &part, &mut out);
        assert!(
            out.iter()
                .zip(&plain)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
    }
}
