//! The scan of a neighbour-list build ([`super::Neighbors::build_from`]): each z-layer of
//! cells inside the system's instruction set, every body's candidates on its lanes.

use super::{Neighbors, Run, Scratch, Sorted, group_by_types};
use crate::simd::{Loads, WithLanes};

/// Entries past the last body in the cell-sorted positions, so that a run's last block of lanes
/// loads whole ([`Scan`] masks the lanes past the run): the widest lanes' count.
pub(super) const PAD: usize = 8;

/// How many bodies ahead (in cell order) the scan asks for a body's excluded partners, and
/// twice as far for where they start ([`Neighbors::prefetch_excluded`]).
const EXCLUDED_AHEAD: usize = 8;

/// One body's candidates within reach: its own cell's bodies after it (`own`) and the half
/// stencil's `runs`, scanned [`crate::simd::Lanes::WIDTH`] at a time, a run's last block masked to the run
/// (the positions are padded, [`PAD`]) — the same square distances, by the same operations,
/// on every width, so the same pairs — into `found`, written always and kept when within
/// reach (no branch on the test: a coin toss the branch predictor loses); returns how many.
struct Scan<'a> {
    sorted: &'a Sorted,
    own: Run,
    runs: &'a [Run],
    p: [f64; 3],
    reach2: f64,
    found: &'a mut [f64],
}

impl WithLanes for Scan<'_> {
    type Output = usize;

    #[inline(always)]
    fn run<L: Loads>(self) -> usize {
        let Scan {
            sorted,
            own,
            runs,
            p,
            reach2,
            found,
        } = self;
        let mut kept = 0;
        let iota = L::from_fn(|l| l as f64);
        for r in core::iter::once(&own).chain(runs) {
            let q = [r.shift[0] - p[0], r.shift[1] - p[1], r.shift[2] - p[2]];
            let (from, to) = (r.from as usize, r.to as usize);
            // Padded: every block below `to` loads whole.
            let (x, y, z) = (&sorted.x[from..], &sorted.y[from..], &sorted.z[from..]);
            let (q0, q1, q2) = (L::splat(q[0]), L::splat(q[1]), L::splat(q[2]));
            let cut = L::splat(reach2);
            for c in (0..to - from).step_by(L::WIDTH) {
                let d = [
                    L::load(&x[c..]) + q0,
                    L::load(&y[c..]) + q1,
                    L::load(&z[c..]) + q2,
                ];
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                // The lanes past the run (a last, partial block) never kept.
                let left = to - from - c;
                let run = if left < L::WIDTH { (1 << left) - 1 } else { !0 };
                let mask = r2.lt_mask(cut) & run;
                // The kept lanes' indices, packed (exact: below 2^53).
                (L::splat((from + c) as f64) + iota).compress_store(mask, &mut found[kept..]);
                kept += mask.count_ones() as usize;
            }
        }
        kept
    }
}

/// What every z-layer of a build reads: the list with its cells sorted, the grid, the types.
pub(super) struct Grid<'a> {
    pub(super) list: &'a Neighbors,
    pub(super) dims: [usize; 3],
    /// The bodies' types, or empty (untyped, or too many types to group).
    pub(super) kinds: &'a [u32],
    pub(super) types: usize,
    pub(super) reach2: f64,
    /// The box's sides and half sides (infinite when open).
    pub(super) len: [f64; 3],
    pub(super) half: [f64; 3],
    /// Fewer than three cells along a periodic axis: the whole stencil.
    pub(super) revisits: bool,
}

/// The pairs found from the cells of z-layer `cz` ([`Neighbors::build_from`]'s order), into
/// `pairs`: run on the selected instruction set's lanes, each body's scan inline.
pub(super) struct LayerScan<'a> {
    pub(super) grid: &'a Grid<'a>,
    pub(super) cz: usize,
    pub(super) scratch: &'a mut Scratch,
    pub(super) pairs: &'a mut Vec<[u32; 2]>,
}

impl WithLanes for LayerScan<'_> {
    type Output = ();

    #[inline(always)]
    fn run<L: Loads>(self) {
        let LayerScan {
            grid,
            cz,
            scratch,
            pairs,
        } = self;
        let Grid {
            list,
            dims,
            kinds,
            types,
            reach2,
            len,
            half,
            revisits,
        } = *grid;
        let Scratch {
            stencil,
            runs,
            hits,
            grouping,
        } = scratch;
        let sorted = &list.sorted;
        // The exclusions are asked for only when the positions are long enough to have left
        // the L2 cache (the list build's own test for its counting sort).
        let far = crate::simd::prefetches(3 * sorted.id.len());
        for cy in 0..dims[1] {
            for cx in 0..dims[0] {
                let here = (cz * dims[1] + cy) * dims[0] + cx;
                let (from, to) = (list.start[here] as usize, list.start[here + 1] as usize);
                if from == to {
                    continue;
                }
                if revisits {
                    list.whole_stencil([cx, cy, cz], dims, stencil);
                    for k in from..to {
                        let first = pairs.len();
                        list.pairs_of(k, stencil, reach2, len, half, pairs);
                        if !kinds.is_empty() {
                            let i = sorted.id[k];
                            group_by_types(&mut pairs[first..], i, kinds, types, grouping);
                        }
                    }
                    continue;
                }
                list.half_stencil([cx, cy, cz], dims, len, runs);
                let most: usize = runs.iter().map(|r| (r.to - r.from) as usize).sum();
                hits.clear();
                // A block of lanes writes all its lanes: room for a last one past the count.
                hits.resize(most + to - from + PAD, 0.0);
                for k in from..to {
                    if far {
                        list.prefetch_excluded(
                            sorted.id.get(k + EXCLUDED_AHEAD).copied(),
                            sorted.id.get(k + 2 * EXCLUDED_AHEAD).copied(),
                        );
                    }
                    let (i, p) = (sorted.id[k], [sorted.x[k], sorted.y[k], sorted.z[k]]);
                    // This cell's bodies after this one, then the half stencil's.
                    let own = Run {
                        from: k as u32 + 1,
                        to: to as u32,
                        shift: [0.0; 3],
                    };
                    let kept = Scan {
                        sorted,
                        own,
                        runs,
                        p,
                        reach2,
                        found: hits,
                    }
                    .run::<L>();
                    let excluded = list.excluded_of(i);
                    let first = pairs.len();
                    for &c in &hits[..kept] {
                        let j = sorted.id[c as usize];
                        if !excluded.contains(&j) {
                            pairs.push([i.min(j), i.max(j)]);
                        }
                    }
                    if !kinds.is_empty() {
                        group_by_types(&mut pairs[first..], i, kinds, types, grouping);
                    }
                }
            }
        }
    }
}
