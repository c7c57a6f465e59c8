//! The cell list's counting sort (a build of [`super::Neighbors`]): the bodies in cell order, each cell's
//! in increasing index (stable), with their wrapped positions, so that a cell is a contiguous
//! run to scan.
//!
//! On rayon's pool the cells are cut into contiguous ranges, one task each. A task reads the
//! whole of `cell_of` and counts, then places, only the bodies of its own cells: the places are
//! those of the serial sort whatever the number of tasks (a cell's bodies in increasing index
//! from its start), and a task writes only the places of its cells, a contiguous range of the
//! sorted arrays of its own. At a million bodies in chain order the placing is random writes
//! across tens of megabytes: on one core it was the largest part of a two-thread step that the
//! other thread waited for (BENCHMARKS.md, "Two threads: the cell sort on the pool").

use super::Sorted;

/// Bodies ahead of the one placed whose places the sort asks for.
const SCATTER_AHEAD: usize = 32;

/// The destination of one range of cells: their slice of `fill` (each cell's next place) and
/// of the sorted arrays, whose first entry is place `base`.
struct Places<'a> {
    cells: core::ops::Range<u32>,
    fill: &'a mut [u32],
    base: u32,
    id: &'a mut [u32],
    x: &'a mut [f64],
    y: &'a mut [f64],
    z: &'a mut [f64],
}

impl Places<'_> {
    /// The range cut at cell `mid`: the cells below and from it, each with its places.
    fn split(self, mid: u32, start: &[u32]) -> (Self, Self) {
        let at = (start[mid as usize] - self.base) as usize;
        let (fa, fb) = self.fill.split_at_mut((mid - self.cells.start) as usize);
        let (ia, ib) = self.id.split_at_mut(at);
        let (xa, xb) = self.x.split_at_mut(at);
        let (ya, yb) = self.y.split_at_mut(at);
        let (za, zb) = self.z.split_at_mut(at);
        (
            Places {
                cells: self.cells.start..mid,
                fill: fa,
                base: self.base,
                id: ia,
                x: xa,
                y: ya,
                z: za,
            },
            Places {
                cells: mid..self.cells.end,
                fill: fb,
                base: start[mid as usize],
                id: ib,
                x: xb,
                y: yb,
                z: zb,
            },
        )
    }
}

/// `start` (cell `c`'s bodies are `sorted[start[c]..start[c + 1]]`) and `sorted` (index and
/// wrapped position `wrapped(i)` of each body, in cell order) from each body's cell `cell_of`,
/// over `cells` cells; `fill` is scratch. `parallel`: on rayon's pool.
pub(super) fn sort_by_cell(
    cell_of: &[u32],
    cells: usize,
    (start, fill, sorted): (&mut Vec<u32>, &mut Vec<u32>, &mut Sorted),
    wrapped: &(impl Fn(usize) -> [f64; 3] + Sync),
    parallel: bool,
) {
    let n = cell_of.len();
    // A task per range of cells: as many as threads (each reads all of `cell_of`).
    let tasks = if parallel {
        rayon::current_num_threads()
    } else {
        1
    };
    let grain = cells.div_ceil(tasks).max(1) as u32;
    start.clear();
    start.resize(cells + 1, 0);
    count(cell_of, 0..cells as u32, &mut start[1..], grain);
    for c in 0..cells {
        start[c + 1] += start[c];
    }
    fill.clear();
    fill.extend_from_slice(&start[..cells]);
    let Sorted { id, x, y, z } = sorted;
    // Every entry below `n` is written: sized, not cleared; the padding past `n` is never kept
    // as a pair.
    id.resize(n, 0);
    for v in [&mut *x, &mut *y, &mut *z] {
        v.resize(n + super::PAD, 0.0);
    }
    let places = Places {
        cells: 0..cells as u32,
        fill,
        base: 0,
        id,
        x: &mut x[..n],
        y: &mut y[..n],
        z: &mut z[..n],
    };
    let far = crate::simd::prefetches(3 * n);
    place(cell_of, start, places, wrapped, grain, far);
}

/// `counts[c - cells.start]` += the bodies of each cell `c` of `cells`, tasks of `grain` cells
/// on the pool.
fn count(cell_of: &[u32], cells: core::ops::Range<u32>, counts: &mut [u32], grain: u32) {
    if cells.len() as u32 > grain {
        let mid = cells.start + grain * (cells.len() as u32 / grain).div_ceil(2);
        let (a, b) = counts.split_at_mut((mid - cells.start) as usize);
        rayon::join(
            || count(cell_of, cells.start..mid, a, grain),
            || count(cell_of, mid..cells.end, b, grain),
        );
        return;
    }
    for &c in cell_of {
        if cells.contains(&c) {
            counts[(c - cells.start) as usize] += 1;
        }
    }
}

/// Each body of the cells of `to` at its cell's next place, in increasing index, tasks of
/// `grain` cells on the pool. `far`: ask for the places of the bodies [`SCATTER_AHEAD`] on
/// (their cell's next place now: the same line, or the next, as the one they will take).
fn place(
    cell_of: &[u32],
    start: &[u32],
    to: Places<'_>,
    wrapped: &(impl Fn(usize) -> [f64; 3] + Sync),
    grain: u32,
    far: bool,
) {
    let cells = to.cells.clone();
    if cells.len() as u32 > grain {
        let mid = cells.start + grain * (cells.len() as u32 / grain).div_ceil(2);
        let (a, b) = to.split(mid, start);
        rayon::join(
            || place(cell_of, start, a, wrapped, grain, far),
            || place(cell_of, start, b, wrapped, grain, far),
        );
        return;
    }
    let Places {
        fill,
        base,
        id,
        x,
        y,
        z,
        ..
    } = to;
    let lo = cells.start;
    for (i, &c) in cell_of.iter().enumerate() {
        if let Some(&a) = cell_of
            .get(i + SCATTER_AHEAD)
            .filter(|&&a| far && cells.contains(&a))
        {
            let k = (fill[(a - lo) as usize] - base) as usize;
            crate::simd::prefetch(id.as_ptr().wrapping_add(k));
            for v in [&*x, &*y, &*z] {
                crate::simd::prefetch(v.as_ptr().wrapping_add(k));
            }
        }
        if cells.contains(&c) {
            let f = &mut fill[(c - lo) as usize];
            let k = (*f - base) as usize;
            let w = wrapped(i);
            (id[k], x[k], y[k], z[k]) = (i as u32, w[0], w[1], w[2]);
            *f += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sort of `cell_of` on a pool of `threads` (serial when not `parallel`).
    fn sorted_on(
        cell_of: &[u32],
        cells: usize,
        threads: usize,
        parallel: bool,
    ) -> (Vec<u32>, Sorted) {
        let (mut start, mut fill, mut sorted) = (Vec::new(), Vec::new(), Sorted::default());
        let wrapped = |i: usize| [i as f64, 0.5 * i as f64, -(i as f64)];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            sort_by_cell(
                cell_of,
                cells,
                (&mut start, &mut fill, &mut sorted),
                &wrapped,
                parallel,
            );
        });
        (start, sorted)
    }

    #[test]
    fn the_cell_sort_is_the_stable_sort_by_cell_on_any_pool() {
        // Cells at random, some empty (more cells than bodies in the small case), and a
        // number of cells that no pool divides evenly.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for (n, cells) in [(50_000, 4_099), (3_000, 7_001), (1, 1), (0, 5)] {
            let cell_of: Vec<u32> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % cells as u64) as u32
                })
                .collect();
            // The reference: indices stably sorted by cell, and each cell's start.
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&i| cell_of[i as usize]);
            let mut start = vec![0u32; cells + 1];
            for &c in &cell_of {
                start[c as usize + 1] += 1;
            }
            for c in 0..cells {
                start[c + 1] += start[c];
            }
            for threads in [1, 2, 3, 5] {
                for parallel in [false, true] {
                    let at = format!(
                        "{n} bodies, {cells} cells, {threads} threads, parallel {parallel}"
                    );
                    let (s, sorted) = sorted_on(&cell_of, cells, threads, parallel);
                    assert_eq!(s, start, "{at}");
                    assert_eq!(sorted.id, order, "{at}");
                    for (k, &i) in order.iter().enumerate() {
                        let i = i as f64;
                        assert_eq!(
                            [sorted.x[k], sorted.y[k], sorted.z[k]],
                            [i, 0.5 * i, -i],
                            "{at}"
                        );
                    }
                }
            }
        }
    }
}
