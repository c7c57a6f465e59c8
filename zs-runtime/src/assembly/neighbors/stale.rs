//! The staleness test of a neighbour list ([`Neighbors`]): a list is built again when a body
//! moved more than half the skin since the last build (LAMMPS's `check yes`). The test
//! streams through every body's position at every evaluation; when every body is free it takes
//! the positions' fingerprint on the way ([`Neighbors::stale_free_keyed`]), the key of the
//! evaluation's caches, so that a long `q` is read once for both.

use rayon::prelude::*;

use super::Neighbors;
use crate::simd::widest;
use crate::vector::fingerprint;

impl Neighbors {
    /// True when the list must be built at reference sites `pos`: never built, or a body
    /// moved more than half the skin since (LAMMPS's `check yes`).
    #[cfg(test)]
    pub fn stale(&self, pos: &[[f64; 3]]) -> bool {
        self.stale_at(pos.len(), |b| pos[b])
    }

    /// [`Neighbors::stale`] for the `n` reference sites `site(b)`, in chunks on rayon's current
    /// pool when there are many (an OR: the same answer on any number of threads).
    pub fn stale_at(&self, n: usize, site: impl Fn(usize) -> [f64; 3] + Sync) -> bool {
        let limit = self.half_skin * self.half_skin;
        self.any_moved(n, &|bodies| {
            widest(
                #[inline(always)]
                || {
                    let mut any = false;
                    for b in bodies {
                        any |= moved_beyond(site(b), self.at_build[b], limit);
                    }
                    any
                },
            )
        })
    }

    /// [`Neighbors::stale_at`] when every body is free: body `b`'s reference site the first
    /// three of its `stride` coordinates in `q` (a stream through `q`, vectorized).
    pub fn stale_free(&self, q: &[f64], stride: usize) -> bool {
        let limit = self.half_skin * self.half_skin;
        let axis = axis_bound(limit);
        self.any_moved(q.len() / stride, &|bodies| {
            widest(
                #[inline(always)]
                || {
                    let q = &q[bodies.start * stride..bodies.end * stride];
                    moved_in(q, &self.at_build[bodies], stride, (limit, axis))
                },
            )
        })
    }

    /// [`Neighbors::stale_free`] and the fingerprint of `q` ([`fingerprint`]) in one pass: each
    /// range's entries hashed while they are in the caches (a sum, so the same key on any
    /// number of threads). Every range is read (no stop at the first body that moved).
    pub fn stale_free_keyed(&self, q: &[f64], stride: usize) -> (bool, u64) {
        use crate::vector::{PARALLEL_FROM, VECTOR_CHUNK, fingerprint_of_sum, fingerprint_term};
        let n = q.len() / stride;
        if self.at_build.len() != n {
            return (true, fingerprint(q));
        }
        let limit = self.half_skin * self.half_skin;
        let axis = axis_bound(limit);
        let range = |bodies: core::ops::Range<usize>| -> (bool, u64) {
            widest(
                #[inline(always)]
                || {
                    let first = bodies.start * stride;
                    let q = &q[first..bodies.end * stride];
                    let any = moved_in(q, &self.at_build[bodies], stride, (limit, axis));
                    let key = (first..)
                        .zip(q)
                        .fold(0u64, |h, (i, &v)| h.wrapping_add(fingerprint_term(i, v)));
                    (any, key)
                },
            )
        };
        let (any, sum) = if 3 * n < PARALLEL_FROM {
            range(0..n)
        } else {
            (0..n.div_ceil(VECTOR_CHUNK))
                .into_par_iter()
                .map(|c| range(c * VECTOR_CHUNK..((c + 1) * VECTOR_CHUNK).min(n)))
                .reduce(|| (false, 0), |a, b| (a.0 | b.0, a.1.wrapping_add(b.1)))
        };
        (any, fingerprint_of_sum(sum, q.len()))
    }

    /// True when the list was built for other than `n` bodies, or `moved` is for some range of
    /// them (ranges of [`VECTOR_CHUNK`] on rayon's current pool when there are many). Not
    /// generic: rayon's machinery compiled once, not once per system that asks.
    fn any_moved(
        &self,
        n: usize,
        moved: &(dyn Fn(core::ops::Range<usize>) -> bool + Sync),
    ) -> bool {
        use crate::vector::{PARALLEL_FROM, VECTOR_CHUNK};
        if self.at_build.len() != n {
            return true;
        }
        if 3 * n < PARALLEL_FROM {
            moved(0..n)
        } else {
            (0..n.div_ceil(VECTOR_CHUNK))
                .into_par_iter()
                .any(|c| moved(c * VECTOR_CHUNK..((c + 1) * VECTOR_CHUNK).min(n)))
        }
    }
}

/// True when the site `p` is more than `√limit` from `o`, its place at the build, or not a
/// number (a NaN position rebuilds; the pass then reports it). No branch: the loops vectorize.
#[inline(always)]
fn moved_beyond(p: [f64; 3], o: [f64; 3], limit: f64) -> bool {
    let d = [p[0] - o[0], p[1] - o[1], p[2] - o[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    (r2 > limit) | r2.is_nan()
}

/// Bodies tested at once by their largest displacement along an axis ([`moved_in`]).
const GROUP: usize = 64;

/// The largest square of a displacement along one axis whose three times stays within
/// `limit` ([`moved_in`]'s bound).
fn axis_bound(limit: f64) -> f64 {
    let mut axis = limit / 3.0;
    while 3.0 * axis > limit {
        axis = axis.next_down();
    }
    axis
}

/// True when a body of `q` (`stride` coordinates each, the first three its site) moved from
/// its site at the build `at` by more than `√limit` ([`moved_beyond`]), `axis` being
/// [`axis_bound`]`(limit)`.
#[inline(always)]
fn moved_in(q: &[f64], at: &[[f64; 3]], stride: usize, (limit, axis): (f64, f64)) -> bool {
    let mut any = false;
    if stride == 3 {
        // A group of bodies at a time: first, on the lanes (a flat stream), whether some
        // coordinate moved by a square above `axis`. When none did, no body's sum of three
        // squares is above the limit (rounding is monotone: the sum is at most `3 axis`, itself
        // within the limit); else, or on a NaN, the group body by body.
        let at = at.as_flattened();
        for (p, o) in q.chunks(3 * GROUP).zip(at.chunks(3 * GROUP)) {
            let near = p.iter().zip(o).fold(true, |near, (&p, &o)| {
                let d = p - o;
                near & (d * d <= axis)
            });
            if !near {
                for (p, o) in p.chunks_exact(3).zip(o.chunks_exact(3)) {
                    let (p, o) = ([p[0], p[1], p[2]], [o[0], o[1], o[2]]);
                    any |= moved_beyond(p, o, limit);
                }
            }
        }
    } else {
        for (p, &o) in q.chunks_exact(stride).zip(at) {
            any |= moved_beyond([p[0], p[1], p[2]], o, limit);
        }
    }
    any
}
