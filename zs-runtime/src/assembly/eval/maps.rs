//! The scalar per-term passes (Hessians, third contractions, Hessian-vector products): each
//! term's kernel into its own output slot, over fixed chunks of [`CHUNK`] terms on rayon's
//! pool when parallel — a term's outputs do not depend on the chunking — and the local
//! arithmetic they share.

use rayon::prelude::*;

use super::CHUNK;
use super::sums::in_chunks;
use crate::assembly::plan::TermList;
use crate::assembly::terms::{Local, LocalThird};

/// `o += m` for a `D × D` block stored row-major in `o`.
#[inline]
pub(super) fn add_block<const D: usize>(o: &mut [f64], m: &[[f64; D]; D]) {
    for r in 0..D {
        for c in 0..D {
            o[r * D + c] += m[r][c];
        }
    }
}

/// `T(x; a)_ai = Σ_bj,ck t[a][i][b][j][c][k] a_bj a_ck` from a kept tensor.
#[inline]
pub(super) fn contract<const D: usize, const K: usize>(
    t: &LocalThird<D, K>,
    a: &Local<D, K>,
) -> Local<D, K> {
    core::array::from_fn(|ka| {
        core::array::from_fn(|i| {
            let mut s = 0.0;
            for (kb, ab) in a.iter().enumerate() {
                for (j, &abj) in ab.iter().enumerate() {
                    let row = &t[ka][i][kb][j];
                    let mut r = 0.0;
                    for (kc, ac) in a.iter().enumerate() {
                        for (k, &ack) in ac.iter().enumerate() {
                            r += row[kc][k] * ack;
                        }
                    }
                    s += r * abj;
                }
            }
            s
        })
    })
}

/// A term's output, an array of `f64` (nested to any depth), seen as its `LEN` numbers: the
/// chunked passes below hand rayon flat `f64` columns, so that its machinery is compiled once,
/// not once per output type, kernel and system.
pub(super) trait Flat: Sized + Send {
    /// The numbers in one value.
    const LEN: usize;
    /// The values of `s` as their numbers, in order.
    fn flat(s: &mut [Self]) -> &mut [f64];
    /// The inverse of [`Flat::flat`] (`s.len()` a multiple of `LEN`).
    fn unflat(s: &mut [f64]) -> &mut [Self];
}

impl Flat for f64 {
    const LEN: usize = 1;
    #[inline(always)]
    fn flat(s: &mut [Self]) -> &mut [f64] {
        s
    }
    #[inline(always)]
    fn unflat(s: &mut [f64]) -> &mut [Self] {
        s
    }
}

impl<A: Flat, const N: usize> Flat for [A; N] {
    const LEN: usize = N * A::LEN;
    #[inline(always)]
    fn flat(s: &mut [Self]) -> &mut [f64] {
        A::flat(s.as_flattened_mut())
    }
    #[inline(always)]
    fn unflat(s: &mut [f64]) -> &mut [Self] {
        let (values, rest) = A::unflat(s).as_chunks_mut::<N>();
        assert!(rest.is_empty(), "whole values");
        values
    }
}

/// `f(first, chunk)` over the chunks of [`CHUNK`] terms of `a` (`la` numbers per term), on
/// rayon's pool when `parallel` and longer than a chunk, else once over the whole (`first`: the
/// chunk's first term). Flat columns and a trait object: one copy of rayon's machinery for
/// every output type, kernel and system.
fn chunked1(parallel: bool, (a, la): (&mut [f64], usize), f: &(dyn Fn(usize, &mut [f64]) + Sync)) {
    if parallel && a.len() > CHUNK * la {
        in_chunks(a, CHUNK * la, &|c, a| f(c * CHUNK, a));
    } else {
        f(0, a);
    }
}

/// The chunk callback of [`chunked3`]: the first term and the three columns' chunks.
type Chunk3<'a> = dyn Fn(usize, &mut [f64], &mut [f64], &mut [f64]) + Sync + 'a;

/// [`chunked1`] over three columns of as many terms.
fn chunked3(parallel: bool, [(a, la), (b, lb), (c, lc)]: [(&mut [f64], usize); 3], f: &Chunk3) {
    if parallel && a.len() > CHUNK * la {
        a.par_chunks_mut(CHUNK * la)
            .zip(b.par_chunks_mut(CHUNK * lb))
            .zip(c.par_chunks_mut(CHUNK * lc))
            .enumerate()
            .for_each(|(k, ((a, b), c))| f(k * CHUNK, a, b, c));
    } else {
        f(0, a, b, c);
    }
}

/// The chunk callback of [`chunked4`]: the first term and the four columns' chunks.
type Chunk4<'a> = dyn Fn(usize, &mut [f64], &mut [f64], &mut [f64], &mut [f64]) + Sync + 'a;

/// [`chunked1`] over four columns of as many terms.
fn chunked4(parallel: bool, columns: [(&mut [f64], usize); 4], f: &Chunk4) {
    let [(a, la), (b, lb), (c, lc), (e, le)] = columns;
    if parallel && a.len() > CHUNK * la {
        a.par_chunks_mut(CHUNK * la)
            .zip(b.par_chunks_mut(CHUNK * lb))
            .zip(c.par_chunks_mut(CHUNK * lc))
            .zip(e.par_chunks_mut(CHUNK * le))
            .enumerate()
            .for_each(|(k, (((a, b), c), e))| f(k * CHUNK, a, b, c, e));
    } else {
        f(0, a, b, c, e);
    }
}

/// A column of values as its numbers and their count per value.
fn column<A: Flat>(a: &mut [A]) -> (&mut [f64], usize) {
    (A::flat(a), A::LEN)
}

/// `out[t] = f(free[t], bodies[t])` for every term, in parallel chunks when asked.
#[inline]
pub(super) fn map1<O: Flat, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    f: impl Fn(&[u32; K], &[u32; K]) -> O + Sync,
) {
    assert_eq!(out.len(), list.len());
    chunked1(parallel, column(out), &|first, out| {
        let out = O::unflat(out);
        let terms = first..first + out.len();
        for ((o, fr), bo) in out
            .iter_mut()
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies()[terms])
        {
            *o = f(fr, bo);
        }
    });
}

/// [`map1`] for kernels returning three outputs (value, gradient, Hessian).
#[inline]
pub(super) fn map3<A: Flat, B: Flat, C: Flat, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    a: &mut [A],
    b: &mut [B],
    c: &mut [C],
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C) + Sync,
) {
    assert!(a.len() == list.len() && b.len() == list.len() && c.len() == list.len());
    let columns = [column(a), column(b), column(c)];
    chunked3(parallel, columns, &|first, a, b, c| {
        let (a, b, c) = (A::unflat(a), B::unflat(b), C::unflat(c));
        let terms = first..first + a.len();
        for ((((a, b), c), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies()[terms])
        {
            (*a, *b, *c) = f(fr, bo);
        }
    });
}

/// [`map1`] for kernels returning four outputs (value, gradient, Hessian, third tensor).
#[inline]
#[allow(clippy::type_complexity)]
pub(super) fn map4<A: Flat, B: Flat, C: Flat, E: Flat, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    (a, b, c, e): (&mut [A], &mut [B], &mut [C], &mut [E]),
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C, E) + Sync,
) {
    assert!(a.len() == list.len() && e.len() == list.len());
    let columns = [column(a), column(b), column(c), column(e)];
    chunked4(parallel, columns, &|first, a, b, c, e| {
        let (a, b, c, e) = (A::unflat(a), B::unflat(b), C::unflat(c), E::unflat(e));
        let terms = first..first + a.len();
        for (((((a, b), c), e), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(e.iter_mut())
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies()[terms])
        {
            (*a, *b, *c, *e) = f(fr, bo);
        }
    });
}

/// `out[t] = f(free[t], kept[t])` for every term (the third contraction from kept tensors).
#[inline]
pub(super) fn map_kept<O: Flat, X: Sync, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    kept: &[X],
    f: impl Fn(&[u32; K], &X) -> O + Sync,
) {
    assert!(out.len() == list.len() && kept.len() == list.len());
    chunked1(parallel, column(out), &|first, out| {
        let out = O::unflat(out);
        let terms = first..first + out.len();
        for ((o, fr), x) in out
            .iter_mut()
            .zip(&list.free[terms.clone()])
            .zip(&kept[terms])
        {
            *o = f(fr, x);
        }
    });
}
