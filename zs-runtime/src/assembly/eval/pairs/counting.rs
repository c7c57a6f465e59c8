//! The half list's pairs put in rows: a stable counting sort by (leading body, partner's type),
//! its pairs cut into parts that count and place on rayon's pool.
//!
//! Each part counts its pairs per (body, type) and lists the bodies in the order they first
//! lead one of its pairs; the rows are the bodies in the order they first lead a pair (the
//! parts' lists in part order); each (body, type)'s places are given out part after part, so
//! that every part then writes its pairs into places no other part writes, and the whole is the
//! serial stable sort: the same places whatever the number of parts.

use rayon::prelude::*;

/// No row yet.
const NONE: u32 = u32::MAX;

/// Per part of the pairs: per (body, type) its count, then its next place; the bodies in the
/// order they first lead one of the part's pairs.
#[derive(Debug, Default)]
struct Part {
    count: Vec<u32>,
    firsts: Vec<u32>,
}

/// The sort's scratch, kept between builds (see the [module docs](self)).
#[derive(Debug, Default)]
pub(super) struct Counting {
    parts: Vec<Part>,
    types: usize,
}

/// The partner's type (untyped: 0).
#[inline]
fn kind_of(kinds: &[u32], j: u32) -> usize {
    kinds.get(j as usize).map_or(0, |&k| k as usize)
}

/// `task(its pairs, part)` for each part, the pairs cut into as many equal runs as there are
/// parts (those past the pairs' end given none), on rayon's pool when there are several; a
/// trait object, so that rayon's machinery is compiled once.
fn each_part(
    pairs: &[[u32; 2]],
    parts: &mut [Part],
    task: &(dyn Fn(&[[u32; 2]], &mut Part) + Sync),
) {
    if let [one] = parts {
        return task(pairs, one);
    }
    let per = pairs.len().div_ceil(parts.len()).max(1);
    parts.par_iter_mut().enumerate().for_each(|(c, part)| {
        let from = (c * per).min(pairs.len());
        task(&pairs[from..(from + per).min(pairs.len())], part);
    });
}

/// `listed`'s memory, written by the parts at once.
#[derive(Clone, Copy)]
struct Places {
    at: *mut u32,
    len: usize,
}

// SAFETY: a `Places` is only a pointer and a length; what may be written through it, and by
// whom, is the contract of `Places::put`.
unsafe impl Send for Places {}
// SAFETY: as for `Send`.
unsafe impl Sync for Places {}

impl Places {
    /// Write `j` at place `k` (checked to be in bounds).
    ///
    /// # Safety
    /// No other thread reads or writes place `k` while the `Places` is in use, and the slice
    /// it was made from outlives that use.
    #[inline]
    unsafe fn put(self, k: usize, j: u32) {
        assert!(k < self.len, "a place beyond the list");
        // SAFETY: `k` is in bounds (above), the slice is alive and the place is this thread's
        // alone (the caller's contract).
        unsafe { self.at.add(k).write(j) }
    }
}

impl Counting {
    /// Count `pairs` (first body below `n`) per (first body, partner's type of `kinds`, `types`
    /// types) in `parts` parts, and list in `body` the first bodies in the order they first
    /// lead a pair, `row_of` each body's row (or none).
    pub fn count(
        &mut self,
        pairs: &[[u32; 2]],
        (n, types, parts): (usize, usize, usize),
        kinds: &[u32],
        row_of: &mut Vec<u32>,
        body: &mut Vec<u32>,
    ) {
        self.types = types;
        self.parts.resize_with(parts.max(1), Part::default);
        let task = |pairs: &[[u32; 2]], part: &mut Part| {
            part.count.clear();
            part.count.resize(n * types, 0);
            part.firsts.clear();
            // Room for every body: how many a part sees first changes from build to build,
            // and a list grown at a later build would allocate inside a step.
            part.firsts.reserve(n);
            for p in pairs {
                let row = &mut part.count[p[0] as usize * types..(p[0] as usize + 1) * types];
                if row.iter().all(|&c| c == 0) {
                    part.firsts.push(p[0]);
                }
                row[kind_of(kinds, p[1])] += 1;
            }
        };
        each_part(pairs, &mut self.parts, &task);
        row_of.clear();
        row_of.resize(n, NONE);
        body.clear();
        for part in &self.parts {
            for &i in &part.firsts {
                if row_of[i as usize] == NONE {
                    row_of[i as usize] = body.len() as u32;
                    body.push(i);
                }
            }
        }
    }

    /// Give body `b`'s pairs with partners of type `t` the places from `at` on (each part's
    /// after the part before's); how many there are.
    pub fn give(&mut self, b: usize, t: usize, mut at: u32) -> u32 {
        let from = at;
        for part in &mut self.parts {
            let c = &mut part.count[b * self.types + t];
            let len = *c;
            *c = at;
            at += len;
        }
        at - from
    }

    /// Each pair's partner into its place (after [`Counting::give`] gave every (body, type)
    /// its places), the parts on rayon's pool.
    pub fn place(&mut self, pairs: &[[u32; 2]], kinds: &[u32], listed: &mut [u32]) {
        let types = self.types;
        let places = Places {
            at: listed.as_mut_ptr(),
            len: listed.len(),
        };
        let task = |pairs: &[[u32; 2]], part: &mut Part| {
            for p in pairs {
                let next = &mut part.count[p[0] as usize * types + kind_of(kinds, p[1])];
                // SAFETY: `give` handed each part, for each (body, type), its own run of
                // places, one per pair of the part with that body first and a partner of that
                // type — the runs of all parts and (body, type)s disjoint, consecutive from
                // each (body, type)'s first place — and this part writes only into its runs,
                // each place once (`next` moves on). `listed` is borrowed mutably for the
                // whole call, which the tasks do not outlive.
                unsafe { places.put(*next as usize, p[1]) };
                *next += 1;
            }
        };
        each_part(pairs, &mut self.parts, &task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serial stable sort the parts must equal: rows by first lead, within a row by type,
    /// within a type in the order found.
    fn serial(pairs: &[[u32; 2]], n: usize, kinds: &[u32], types: usize) -> (Vec<u32>, Vec<u32>) {
        let mut body = Vec::new();
        let mut seen = vec![false; n];
        for p in pairs {
            if !seen[p[0] as usize] {
                seen[p[0] as usize] = true;
                body.push(p[0]);
            }
        }
        let mut listed = Vec::new();
        for &b in &body {
            for t in 0..types {
                listed.extend(
                    pairs
                        .iter()
                        .filter(|p| p[0] == b && kind_of(kinds, p[1]) == t)
                        .map(|p| p[1]),
                );
            }
        }
        (body, listed)
    }

    #[test]
    fn any_number_of_parts_gives_the_serial_stable_sort() {
        let (n, types) = (97usize, 3usize);
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |m: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as u32
        };
        let kinds: Vec<u32> = (0..n).map(|_| next(types)).collect();
        let pairs: Vec<[u32; 2]> = (0..2000)
            .map(|_| [next(n), next(n)])
            .filter(|p| p[0] != p[1])
            .collect();
        let (body_serial, listed_serial) = serial(&pairs, n, &kinds, types);
        let mut sort = Counting::default();
        for parts in [1, 2, 3, 7, 4000] {
            let (mut row_of, mut body) = (Vec::new(), Vec::new());
            sort.count(&pairs, (n, types, parts), &kinds, &mut row_of, &mut body);
            assert_eq!(body, body_serial, "{parts} parts: the rows");
            for (r, &b) in body.iter().enumerate() {
                assert_eq!(row_of[b as usize], r as u32);
            }
            let mut at = 0;
            for &b in &body {
                for t in 0..types {
                    at += sort.give(b as usize, t, at);
                }
            }
            assert_eq!(at as usize, pairs.len());
            let mut listed = vec![u32::MAX; pairs.len()];
            sort.place(&pairs, &kinds, &mut listed);
            assert_eq!(listed, listed_serial, "{parts} parts: the places");
        }
    }
}
