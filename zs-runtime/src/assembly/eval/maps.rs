//! The scalar per-term passes (Hessians, third contractions, Hessian-vector products): each
//! term's kernel into its own output slot, over fixed chunks of [`CHUNK`] terms on rayon's
//! pool when parallel — a term's outputs do not depend on the chunking — and the local
//! arithmetic they share.

use rayon::prelude::*;

use super::CHUNK;
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

/// `f(first, chunk)` over the fixed chunks of `out` (`first`: the index of the chunk's first
/// element), on rayon's pool when `parallel`, else once over the whole. The callback is a trait
/// object: rayon's machinery is instantiated once per output type, not once per kernel and
/// system (it was a quarter of the code of a program using three systems).
fn chunked1<A: Send>(parallel: bool, a: &mut [A], f: &(dyn Fn(usize, &mut [A]) + Sync)) {
    if parallel && a.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, a)| f(c * CHUNK, a));
    } else {
        f(0, a);
    }
}

/// [`chunked1`] over three outputs of the same length.
#[allow(clippy::type_complexity)]
fn chunked3<A: Send, B: Send, C: Send>(
    parallel: bool,
    a: &mut [A],
    b: &mut [B],
    c: &mut [C],
    f: &(dyn Fn(usize, &mut [A], &mut [B], &mut [C]) + Sync),
) {
    if parallel && a.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(c.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(k, ((a, b), c))| f(k * CHUNK, a, b, c));
    } else {
        f(0, a, b, c);
    }
}

/// `out[t] = f(free[t], bodies[t])` for every term, in parallel chunks when asked.
#[inline]
pub(super) fn map1<O: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    f: impl Fn(&[u32; K], &[u32; K]) -> O + Sync,
) {
    debug_assert_eq!(out.len(), list.len());
    chunked1(parallel, out, &|first, out| {
        let terms = first..first + out.len();
        for ((o, fr), bo) in out
            .iter_mut()
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies[terms])
        {
            *o = f(fr, bo);
        }
    });
}

/// [`map1`] for kernels returning three outputs (value, gradient, Hessian).
#[inline]
pub(super) fn map3<A: Send, B: Send, C: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    a: &mut [A],
    b: &mut [B],
    c: &mut [C],
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C) + Sync,
) {
    debug_assert!(a.len() == list.len() && b.len() == list.len() && c.len() == list.len());
    chunked3(parallel, a, b, c, &|first, a, b, c| {
        let terms = first..first + a.len();
        for ((((a, b), c), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies[terms])
        {
            (*a, *b, *c) = f(fr, bo);
        }
    });
}

/// [`map1`] for kernels returning four outputs (value, gradient, Hessian, third tensor).
#[inline]
#[allow(clippy::type_complexity)]
pub(super) fn map4<A: Send, B: Send, C: Send, E: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    (a, b, c, e): (&mut [A], &mut [B], &mut [C], &mut [E]),
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C, E) + Sync,
) {
    debug_assert!(a.len() == list.len() && e.len() == list.len());
    chunked4(parallel, (a, b, c, e), &|first, a, b, c, e| {
        let terms = first..first + a.len();
        for (((((a, b), c), e), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(e.iter_mut())
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies[terms])
        {
            (*a, *b, *c, *e) = f(fr, bo);
        }
    });
}

/// [`chunked1`] over four outputs of the same length.
#[allow(clippy::type_complexity)]
fn chunked4<A: Send, B: Send, C: Send, E: Send>(
    parallel: bool,
    (a, b, c, e): (&mut [A], &mut [B], &mut [C], &mut [E]),
    f: &(dyn Fn(usize, &mut [A], &mut [B], &mut [C], &mut [E]) + Sync),
) {
    if parallel && a.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(c.par_chunks_mut(CHUNK))
            .zip(e.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(k, (((a, b), c), e))| f(k * CHUNK, a, b, c, e));
    } else {
        f(0, a, b, c, e);
    }
}

/// `out[t] = f(free[t], kept[t])` for every term (the third contraction from kept tensors).
#[inline]
pub(super) fn map_kept<O: Send, X: Sync, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    kept: &[X],
    f: impl Fn(&[u32; K], &X) -> O + Sync,
) {
    debug_assert!(out.len() == list.len() && kept.len() == list.len());
    chunked1(parallel, out, &|first, out| {
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
