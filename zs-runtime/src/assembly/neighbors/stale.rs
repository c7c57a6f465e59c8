//! The staleness test of a neighbour list ([`Neighbors`]): a list is built again when a body
//! moved more than half the skin since the last build (LAMMPS's `check yes`). The test
//! streams through every body's position at every evaluation; when every body is free it takes
//! the positions' fingerprint on the way ([`Neighbors::stale_free_keyed`]), the key of the
//! evaluation's caches, so that a long `q` is read once for both.

use rayon::prelude::*;

use super::Neighbors;
use crate::simd::widest;
use crate::vector::fingerprint;

/// A bound on how far every body is from its site at the last build, and the fingerprint of
/// the positions it holds for: the moves handed since the build, added up
/// ([`Neighbors::moved_within`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Drift {
    key: u64,
    bound: f64,
}

/// `1 + 2⁻⁴⁰`: each distance and each sum of [`Neighbors::moved_within`] is rounded up by
/// this, far more than the few roundings of a computed distance (a few units of `2⁻⁵³`).
const UP: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;

impl Neighbors {
    /// The list was just built at positions of fingerprint `key` whose bodies are points, each
    /// body's site its position: every body is at its site.
    pub fn built_at_key(&mut self, key: u64) {
        self.drift = Some(Drift { key, bound: 0.0 });
    }

    /// True when no body of the positions of fingerprint `to` can be more than half the skin
    /// from its site at the build, so that the staleness test would find the list fresh: the
    /// bodies are points, moved there from positions of fingerprint `from` by at most
    /// `largest` each, and the positions since the build were handed here in turn, each moved
    /// from the one before (the chain of keys; any other `from` ends it). By the triangle
    /// inequality the moves' sum bounds each body's distance from its site. The sum is rounded
    /// up ([`UP`]) and compared with half the skin less a relative `10⁻⁹`, so that the test's
    /// own rounded distances would stay within its limit too.
    pub fn moved_within(&mut self, from: u64, to: u64, largest: f64) -> bool {
        let bound = match self.drift {
            Some(d) if d.key == from && largest.is_finite() && largest >= 0.0 => {
                (d.bound + largest * UP) * UP
            }
            _ => {
                self.drift = None;
                return false;
            }
        };
        self.drift = Some(Drift { key: to, bound });
        let within = bound < self.half_skin * (1.0 - 1e-9);
        self.tests_skipped += usize::from(within);
        within
    }

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

#[cfg(test)]
mod tests {
    use super::super::Topology;
    use super::*;

    fn uniform(state: &mut u64) -> f64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Random walks of point bodies, some straight (every step the same way, so that a body's
    /// distance from its site is the steps' sum, up to the bound's margin): whenever the moves
    /// say the list is fresh, the test says so too; they say so on some steps; and a move from
    /// positions other than the last ones handed ends the chain until the next build.
    #[test]
    fn moves_that_add_up_within_half_the_skin_leave_a_list_the_test_finds_fresh() {
        let mut s = 0x2545_F491_4F6C_DD1D_u64;
        let n = 200;
        let mut nb = Neighbors::new(&Topology::new(n).cutoff(1.0, 0.4)).expect("a cutoff");
        let (mut skipped, mut tested, mut builds) = (0, 0, 0);
        for walk in 0..400 {
            let mut q: Vec<f64> = (0..3 * n).map(|_| 20.0 * uniform(&mut s)).collect();
            let sites: Vec<[f64; 3]> = q.chunks(3).map(|p| [p[0], p[1], p[2]]).collect();
            nb.build(&sites, &[], &mut Vec::new());
            builds += 1;
            nb.built_at_key(fingerprint(&q));
            let straight = walk % 2 == 0;
            let way: Vec<f64> = (0..3 * n).map(|_| uniform(&mut s) - 0.5).collect();
            let step = 0.2 * uniform(&mut s);
            for _ in 0..12 {
                let from = fingerprint(&q);
                let last = q.clone();
                for (x, w) in q.iter_mut().zip(&way) {
                    let d = if straight { *w } else { uniform(&mut s) - 0.5 };
                    *x += step * d;
                }
                let largest = q
                    .chunks(3)
                    .zip(last.chunks(3))
                    .map(|(a, b)| {
                        let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
                        (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
                    })
                    .fold(0.0, f64::max);
                let to = fingerprint(&q);
                let within = nb.moved_within(from, to, largest);
                let stale = nb.stale_free(&q, 3);
                assert!(
                    !(within && stale),
                    "walk {walk}: the moves passed a stale list"
                );
                skipped += usize::from(within);
                tested += 1;
                if stale {
                    break;
                }
            }
            // Another start: the chain is broken, whatever the move.
            assert!(!nb.moved_within(fingerprint(&q) ^ 1, 0, 0.0));
            assert!(!nb.moved_within(fingerprint(&q), 0, 0.0));
        }
        assert_eq!(nb.builds, builds);
        assert_eq!(nb.tests_skipped, skipped);
        assert!(skipped > tested / 4, "{skipped} of {tested} skipped");
        assert!(skipped < tested, "every test skipped");
    }

    /// Moves along one axis that add up to half the skin, less and more than the margin: the
    /// bound keeps its margin, and a list rebuilt starts a new chain at zero.
    #[test]
    fn the_bound_stops_short_of_half_the_skin() {
        let mut nb = Neighbors::new(&Topology::new(1).cutoff(1.0, 0.4)).expect("a cutoff");
        let mut q = vec![0.0; 3];
        nb.build(&[[0.0; 3]], &[], &mut Vec::new());
        // Not built at a key: no chain.
        assert!(!nb.moved_within(fingerprint(&q), 1, 0.0));
        nb.built_at_key(fingerprint(&q));
        let mut within = Vec::new();
        for _ in 0..5 {
            let from = fingerprint(&q);
            q[0] += 0.0399;
            within.push(nb.moved_within(from, fingerprint(&q), 0.0399));
            assert!(!(within[within.len() - 1] && nb.stale_free(&q, 3)));
        }
        // 0.1995 after five: within 0.2 by more than the margin.
        assert_eq!(within, [true; 5]);
        let from = fingerprint(&q);
        q[0] += 0.0005;
        // 0.2 exactly: the test would find the list fresh (not beyond), but the bound's margin
        // sends it to the test.
        assert!(!nb.moved_within(from, fingerprint(&q), 0.0005));
        assert!(!nb.stale_free(&q, 3));
        nb.build(&[[q[0], q[1], q[2]]], &[], &mut Vec::new());
        // A build ends the chain until it is keyed again.
        assert!(!nb.moved_within(fingerprint(&q), 1, 0.0));
        nb.built_at_key(fingerprint(&q));
        assert!(nb.moved_within(fingerprint(&q), 1, 0.1));
        assert!(!nb.moved_within(1, 2, f64::NAN));
    }
}
