//! Pair lists under a cutoff: the periodic box's nearest images, a cell list that finds the
//! pairs within `rc + skin` in O(N), and the Verlet-list rule of when to find them again
//! (a body moved more than `skin / 2` since the last build: then no pair can have come from
//! beyond `rc + skin` to within `rc`). The pairs come out in one order — cell by cell, each
//! body's grouped by types ([`Neighbors::build_from`]) — whatever the thread count and the
//! instruction set, so sums over them are deterministic.

use std::sync::Arc;

use rayon::prelude::*;

use super::cell::Cell;
use super::topology::Topology;
use crate::simd::Isa;
use scan::{Grid, LayerScan, PAD};
use stale::Drift;

mod bins;
mod scan;
mod stale;

/// The bodies sorted by cell, as structure of arrays: cell `c`'s are `start[c]..start[c + 1]`.
#[derive(Debug, Default)]
struct Sorted {
    id: Vec<u32>,
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
}

/// The rows of the half stencil, `(dz, dy, first dx)`: the rest of the cell's own row, then
/// the rows after it among the 9 around it, each from `dx = -1` to `1`.
const HALF_ROWS: [(i64, i64, i64); 5] =
    [(0, 0, 1), (0, 1, -1), (1, -1, -1), (1, 0, -1), (1, 1, -1)];

/// Cell `k` of an axis of `m` cells and side `len`, at most one past either face: itself with
/// no shift when inside, else (periodic) the cell at the other face and the box vector that
/// brings it here, or (open) none. No division: this runs for every cell of every build.
#[inline(always)]
fn beside(k: i64, m: usize, len: f64, periodic: bool) -> Option<(usize, f64)> {
    let m = m as i64;
    if (0..m).contains(&k) {
        Some((k as usize, 0.0))
    } else if periodic {
        Some(if k < 0 {
            ((k + m) as usize, -len)
        } else {
            ((k - m) as usize, len)
        })
    } else {
        None
    }
}

/// A contiguous range of the cell-sorted bodies (consecutive cells of a row along x) and the
/// box vector that brings them next to the cell searched (the image a periodic box puts there).
#[derive(Debug, Clone, Copy)]
struct Run {
    from: u32,
    to: u32,
    shift: [f64; 3],
}

/// The Verlet list of a pair cutoff and the cell list that builds it.
#[derive(Debug)]
pub(crate) struct Neighbors {
    reach: f64,
    half_skin: f64,
    cell: Option<Cell>,
    /// Per body `i`, its excluded partners (sorted): `excluded[excluded_at[i]..excluded_at[i + 1]]`
    /// (one flat array: a few hundred kB that stay in cache, not a heap block per body).
    excluded_at: Arc<[u32]>,
    excluded: Arc<[u32]>,
    /// Reference sites at the last build (empty before the first).
    at_build: Vec<[f64; 3]>,
    /// Number of builds so far.
    pub builds: usize,
    /// What the moves handed since the last build bound ([`Neighbors::moved_within`]).
    drift: Option<Drift>,
    /// Number of staleness tests the moves made unnecessary so far.
    pub tests_skipped: usize,
    // Scratch of the cell list, kept between builds (no allocation once large enough).
    /// Cell `c`'s bodies are `sorted[start[c]..start[c + 1]]` (wrapped positions).
    start: Vec<u32>,
    fill: Vec<u32>,
    sorted: Sorted,
    /// Per z-layer of cells: its pairs, a stencil buffer and the candidates of a cell.
    layers: Vec<Layer>,
    cell_of: Vec<u32>,
}

/// [`group_stably`] counts its groups on the stack: at most this many (`2 T²` for `T` types of
/// pairs in [`group_by_types`]: eight types; more are left in the order found).
const MOST_GROUPS: usize = 128;

/// `items` reordered by their `group` (below [`MOST_GROUPS`]), the order of `items` kept within a
/// group: a counting sort through `scratch`, which keeps its memory. Nothing moves when every
/// item is in one group.
pub(crate) fn group_stably<T: Copy>(
    items: &mut [T],
    group: impl Fn(&T) -> usize,
    scratch: &mut Vec<T>,
) {
    let mut at = [0u32; MOST_GROUPS + 1];
    for x in items.iter() {
        at[group(x) + 1] += 1;
    }
    if at.iter().filter(|&&n| n > 0).count() < 2 {
        return;
    }
    for g in 0..MOST_GROUPS {
        at[g + 1] += at[g];
    }
    scratch.clear();
    scratch.extend_from_slice(items);
    for x in scratch.iter() {
        let g = group(x);
        items[at[g] as usize] = *x;
        at[g] += 1;
    }
}

/// The pairs of one body `i` (`pairs`, found in cell order) reordered by their bodies' types
/// `(kinds[a], kinds[b])`, then pairs led by `i` before those led by a partner, keeping the
/// order found within a group (`types` is the number of types). A block of lanes then mostly
/// holds terms of one pair of types, whose parameters a kernel reads once
/// ([`super::Kernel`]); the list is the same for given positions and types.
fn group_by_types(
    pairs: &mut [[u32; 2]],
    i: u32,
    kinds: &[u32],
    types: usize,
    scratch: &mut Vec<[u32; 2]>,
) {
    let group = |p: &[u32; 2]| {
        (kinds[p[0] as usize] as usize * types + kinds[p[1] as usize] as usize) * 2
            + usize::from(p[0] != i)
    };
    group_stably(pairs, group, scratch);
}

/// The layers' pairs one after the other into `out` (exactly as long): halves of the layers
/// copied on rayon's pool (`join`, no allocation).
fn concatenate(layers: &[Layer], out: &mut [[u32; 2]]) {
    match layers {
        [] => {}
        [one] => out.copy_from_slice(&one.pairs),
        _ => {
            let (left, right) = layers.split_at(layers.len() / 2);
            let (a, b) = out.split_at_mut(left.iter().map(|l| l.pairs.len()).sum());
            rayon::join(|| concatenate(left, a), || concatenate(right, b));
        }
    }
}

/// One z-layer's task of a build: its pairs, and scratch (kept between builds).
#[derive(Debug, Default)]
struct Layer {
    pairs: Vec<[u32; 2]>,
    scratch: Scratch,
}

/// The scratch of a layer's task.
#[derive(Debug, Default)]
struct Scratch {
    stencil: Vec<usize>,
    runs: Vec<Run>,
    /// Candidates of one body, kept when within reach (branch-free compaction).
    hits: Vec<f64>,
    /// One body's pairs while they are grouped by types ([`group_by_types`]).
    grouping: Vec<[u32; 2]>,
}

/// Cells per `rc + skin` along an axis. LAMMPS bins at half the reach (a stencil of 125
/// half-cells, 55 reach³ of candidates instead of 27 whole cells' 95); here whole cells
/// were faster on the Kremer–Grest melt (BENCHMARKS.md: the cell list's cost), and the half
/// stencil of [`Neighbors::half_stencil`] is written for them.
const SUB: usize = 1;

/// `⌊x⌋` without a library call (the baseline x86-64 target has no rounding instruction).
#[inline]
fn floor(x: f64) -> f64 {
    let r = crate::simd::round_ties_even(x);
    if r > x { r - 1.0 } else { r }
}

impl Neighbors {
    /// The list of `topology`'s cutoff, or `None` without one.
    pub fn new(topology: &Topology) -> Option<Self> {
        let (rc, skin) = topology.pair_cutoff()?;
        let lists = topology.exclusion_lists();
        let mut excluded_at = Vec::with_capacity(lists.len() + 1);
        excluded_at.push(0);
        let excluded: Vec<u32> = lists
            .iter()
            .flat_map(|l| {
                excluded_at.push(excluded_at[excluded_at.len() - 1] + l.len() as u32);
                l.iter().copied()
            })
            .collect();
        Some(Self {
            reach: rc + skin,
            half_skin: 0.5 * skin,
            cell: topology.box_lengths().map(Cell::new),
            excluded_at: excluded_at.into(),
            excluded: excluded.into(),
            at_build: Vec::new(),
            builds: 0,
            drift: None,
            tests_skipped: 0,
            start: Vec::new(),
            fill: Vec::new(),
            sorted: Sorted::default(),
            layers: Vec::new(),
            cell_of: Vec::new(),
        })
    }

    /// `(rc / (rc + skin))³`: the share of the list within the cutoff in a uniform liquid
    /// (the pair engine's choice of pass reads it).
    pub fn within(&self) -> f64 {
        let rc = self.reach - 2.0 * self.half_skin;
        (rc / self.reach).powi(3)
    }

    /// The same list for another trajectory: never built, no scratch yet.
    pub fn fresh(&self) -> Self {
        Self {
            reach: self.reach,
            half_skin: self.half_skin,
            cell: self.cell,
            excluded_at: self.excluded_at.clone(),
            excluded: self.excluded.clone(),
            at_build: Vec::new(),
            builds: 0,
            drift: None,
            tests_skipped: 0,
            start: Vec::new(),
            fill: Vec::new(),
            sorted: Sorted::default(),
            layers: Vec::new(),
            cell_of: Vec::new(),
        }
    }

    /// The periodic box, if any.
    pub fn cell(&self) -> Option<Cell> {
        self.cell
    }

    /// [`Neighbors::build_from`] at the sites `pos`.
    #[cfg(test)]
    pub fn build(&mut self, pos: &[[f64; 3]], kinds: &[u32], out: &mut Vec<[u32; 2]>) {
        self.build_from(pos.len(), |b| pos[b], kinds, crate::simd::selected(), out);
    }

    /// The pairs `(i, j)`, `i < j`, not excluded, whose reference sites (nearest images in a
    /// periodic box) are within `rc + skin`, the sites being `site(b)` of the `n` bodies (the
    /// list keeps them, [`Neighbors::sites`]: the caller holds no copy of its own), into `out`:
    /// cell by cell, each cell's bodies in increasing order, each with the bodies after it in
    /// its cell and those of the cells after its cell in the stencil (half the stencil: each pair once, found from the
    /// body whose cell comes first) — one order for given positions. With fewer than three
    /// cells along a periodic axis, the whole stencil and `j > i` instead.
    ///
    /// With the bodies' types `kinds` (empty: untyped), each body's pairs are then grouped by
    /// their types ([`group_by_types`], up to eight types).
    pub fn build_from(
        &mut self,
        n: usize,
        site: impl Fn(usize) -> [f64; 3],
        kinds: &[u32],
        isa: Isa,
        out: &mut Vec<[u32; 2]>,
    ) {
        self.drift = None;
        self.at_build.clear();
        self.at_build.extend((0..n).map(site));
        // Taken for the build and put back: the build reads the sites while it fills the
        // list's other buffers.
        let pos = core::mem::take(&mut self.at_build);
        self.build_at(&pos, kinds, isa, out);
        self.at_build = pos;
    }

    /// The reference sites of the last build.
    pub fn sites(&self) -> &[[f64; 3]] {
        &self.at_build
    }

    fn build_at(&mut self, pos: &[[f64; 3]], kinds: &[u32], isa: Isa, out: &mut Vec<[u32; 2]>) {
        self.builds += 1;
        let types = kinds.iter().max().map_or(0, |&k| k as usize + 1);
        let kinds = if 2 * types * types <= MOST_GROUPS {
            kinds
        } else {
            &[]
        };
        let n = pos.len();
        let reach2 = self.reach * self.reach;
        let (dims, origin, size) = self.grid(pos);
        let cells = dims[0] * dims[1] * dims[2];
        let index = |c: [usize; 3]| (c[2] * dims[1] + c[1]) * dims[0] + c[0];
        // Positions relative to the grid's origin, wrapped into the box when periodic (then a
        // difference is within one box side of its nearest image), and their cells; on the
        // pool when there are many bodies (each body's by the same operations).
        let box_ = self.cell;
        let wrap = |p: &[f64; 3]| -> [f64; 3] {
            core::array::from_fn(|a| {
                let x = p[a] - origin[a];
                match &box_ {
                    Some(c) => x - floor(x * c.inv[a]) * c.len[a],
                    None => x,
                }
            })
        };
        let cell_at = |w: [f64; 3]| -> u32 {
            let c: [usize; 3] = core::array::from_fn(|a| {
                let k = w[a] / size[a];
                // Rounding at the top edge of a periodic box, or a NaN: the last cell.
                if k >= 0.0 {
                    (k as usize).min(dims[a] - 1)
                } else {
                    0
                }
            });
            index(c) as u32
        };
        // The cells first; the wrapped positions are made again where they are stored (the
        // same operations, the same bits), so that they are not held twice.
        self.cell_of.resize(n, 0);
        if 3 * n >= crate::vector::PARALLEL_FROM {
            pos.par_iter()
                .zip(self.cell_of.par_iter_mut())
                .for_each(|(p, c)| *c = cell_at(wrap(p)));
        } else {
            for (p, c) in pos.iter().zip(&mut self.cell_of) {
                *c = cell_at(wrap(p));
            }
        }
        // Bodies sorted by cell, their positions copied in that order ([`bins`]).
        bins::sort_by_cell(
            &self.cell_of,
            cells,
            (&mut self.start, &mut self.fill, &mut self.sorted),
            &|i| wrap(&pos[i]),
            3 * n >= crate::vector::PARALLEL_FROM,
        );
        // With fewer than 2 SUB + 1 cells along a periodic axis the stencil visits a cell twice.
        let periodic = self.cell.is_some();
        let revisits = periodic && dims.iter().any(|&d| d < 2 * SUB + 1);
        let (len, half) = match &self.cell {
            Some(c) => (c.len, c.len.map(|l| 0.5 * l)),
            None => ([f64::INFINITY; 3], [f64::INFINITY; 3]),
        };
        // One task per z-layer of cells (rayon), each into its own list, joined in layer
        // order: the same pairs in the same order whatever the number of threads.
        let mut layers = core::mem::take(&mut self.layers);
        layers.resize_with(dims[2], Default::default);
        let grid = Grid {
            list: self,
            dims,
            kinds,
            types,
            reach2,
            len,
            half,
            revisits,
        };
        // Each layer inside the system's instruction set (`isa`): one call per layer, the
        // scans of its bodies inline on that set's lanes.
        let layer = |cz: usize, l: &mut Scratch, pairs: &mut Vec<[u32; 2]>| {
            crate::simd::dispatch_with(
                isa,
                LayerScan {
                    grid: &grid,
                    cz,
                    scratch: l,
                    pairs,
                },
            );
        };
        if rayon::current_num_threads() == 1 {
            // One thread: the layers in order straight into `out` (the same pairs in the same
            // order as joined layer lists, without holding them twice).
            out.clear();
            // Room for the pairs a uniform density would give, and a twentieth more: a list
            // grown by doubling would hold its pairs twice while it moves (a million bodies'
            // list is 40 MB).
            if let Some(c) = &self.cell {
                let volume = c.len[0] * c.len[1] * c.len[2];
                let expected = n as f64
                    * (n as f64 / volume)
                    * (4.0 / 3.0 * core::f64::consts::PI * self.reach.powi(3))
                    / 2.0;
                if expected.is_finite() {
                    out.reserve((1.05 * expected) as usize);
                }
            }
            let scratch = &mut layers[0].scratch;
            for cz in 0..dims[2] {
                layer(cz, scratch, out);
            }
        } else {
            layers[..dims[2]]
                .par_iter_mut()
                .enumerate()
                .for_each(|(cz, l)| {
                    l.pairs.clear();
                    layer(cz, &mut l.scratch, &mut l.pairs);
                });
            let total = layers[..dims[2]].iter().map(|l| l.pairs.len()).sum();
            out.resize(total, [0; 2]);
            concatenate(&layers[..dims[2]], out);
        }
        self.layers = layers;
    }

    /// Ask for the exclusions of body `near` (their start is asked for `far`): a body's are
    /// found by its index, anywhere in the exclusion arrays when the bodies are not held in
    /// spatial order, while the scan visits the bodies cell by cell. A hint, no value changes.
    #[inline(always)]
    fn prefetch_excluded(&self, near: Option<u32>, far: Option<u32>) {
        if let Some(f) = far {
            crate::simd::prefetch(self.excluded_at.as_ptr().wrapping_add(f as usize));
        }
        if let Some(&at) = near.and_then(|b| self.excluded_at.get(b as usize)) {
            crate::simd::prefetch(self.excluded.as_ptr().wrapping_add(at as usize));
        }
    }

    /// The partners excluded from body `i`'s pairs.
    #[inline]
    fn excluded_of(&self, i: u32) -> &[u32] {
        let i = i as usize;
        &self.excluded[self.excluded_at[i] as usize..self.excluded_at[i + 1] as usize]
    }

    /// The half stencil of `cell` — the cells after it among the 27 around it, `(dz, dy, dx)`
    /// after `(0, 0, 0)` in lexicographic order — as runs of consecutive cells along x, each
    /// with the box vector that brings it next to `cell` (periodic), or cut at the grid's faces
    /// (open). Needs at least three cells along every periodic axis.
    ///
    /// A cell away from the grid's x faces has one run per row of the stencil, its cells all
    /// inside along x: made here straight, the runs [`Neighbors::half_stencil_any`] makes of
    /// it by merging cell after cell (this runs for every cell of every build).
    #[inline]
    fn half_stencil(&self, cell: [usize; 3], dims: [usize; 3], len: [f64; 3], runs: &mut Vec<Run>) {
        let cx = cell[0];
        if cx == 0 || cx + 1 >= dims[0] {
            return self.half_stencil_any(cell, dims, len, runs);
        }
        let periodic = self.cell.is_some();
        runs.clear();
        let at = |d: i64, a: usize| beside(cell[a] as i64 + d, dims[a], len[a], periodic);
        for (dz, dy, first) in HALF_ROWS {
            let (Some((y, sy)), Some((z, sz))) = (at(dy, 1), at(dz, 2)) else {
                continue;
            };
            let row = (z * dims[1] + y) * dims[0];
            let from = if first > 0 { cx + 1 } else { cx - 1 };
            runs.push(Run {
                from: self.start[row + from],
                to: self.start[row + cx + 2],
                shift: [0.0, sy, sz],
            });
        }
    }

    /// [`Neighbors::half_stencil`] of any cell, cell by cell.
    #[inline]
    fn half_stencil_any(
        &self,
        cell: [usize; 3],
        dims: [usize; 3],
        len: [f64; 3],
        runs: &mut Vec<Run>,
    ) {
        let periodic = self.cell.is_some();
        runs.clear();
        let at = |k: i64, a: usize| beside(k, dims[a], len[a], periodic);
        let (cx, cy, cz) = (cell[0] as i64, cell[1] as i64, cell[2] as i64);
        for (dz, dy, first) in HALF_ROWS {
            let (Some((y, sy)), Some((z, sz))) = (at(cy + dy, 1), at(cz + dz, 2)) else {
                continue;
            };
            let row = (z * dims[1] + y) * dims[0];
            // Consecutive cells with the same shift along x make one run.
            for dx in first..=1 {
                let Some((x, sx)) = at(cx + dx, 0) else {
                    continue;
                };
                let (from, to) = (self.start[row + x], self.start[row + x + 1]);
                let shift = [sx, sy, sz];
                match runs.last_mut() {
                    Some(r) if r.to == from && r.shift == shift && dx > first => r.to = to,
                    _ => runs.push(Run { from, to, shift }),
                }
            }
        }
    }

    /// The cells around `cell` (itself included) in a periodic grid with fewer than three
    /// cells along some axis: each once, in increasing order.
    fn whole_stencil(&self, cell: [usize; 3], dims: [usize; 3], stencil: &mut Vec<usize>) {
        let r = SUB as i64;
        stencil.clear();
        for dz in -r..=r {
            for dy in -r..=r {
                for dx in -r..=r {
                    let c: [usize; 3] = core::array::from_fn(|a| {
                        let k = cell[a] as i64 + [dx, dy, dz][a];
                        k.rem_euclid(dims[a] as i64) as usize
                    });
                    stencil.push((c[2] * dims[1] + c[1]) * dims[0] + c[0]);
                }
            }
        }
        stencil.sort_unstable();
        stencil.dedup();
    }

    /// The pairs `(i, j > i)` within reach with `j` in the `stencil` cells, into `out`, for
    /// the body `i` at position `k` of the cell-sorted list.
    #[inline]
    fn pairs_of(
        &self,
        k: usize,
        stencil: &[usize],
        reach2: f64,
        len: [f64; 3],
        half: [f64; 3],
        out: &mut Vec<[u32; 2]>,
    ) {
        let s = &self.sorted;
        let (i, p) = (s.id[k], [s.x[k], s.y[k], s.z[k]]);
        let excluded = self.excluded_of(i);
        for &c in stencil {
            for m in self.start[c] as usize..self.start[c + 1] as usize {
                let (j, q) = (s.id[m], [s.x[m], s.y[m], s.z[m]]);
                if j > i {
                    let mut r2 = 0.0;
                    for a in 0..3 {
                        let mut d = q[a] - p[a];
                        // Wrapped positions: one box side brings `d` to its nearest image.
                        if d > half[a] {
                            d -= len[a];
                        } else if d < -half[a] {
                            d += len[a];
                        }
                        r2 += d * d;
                    }
                    if r2 < reach2 && !excluded.contains(&j) {
                        out.push([i, j]);
                    }
                }
            }
        }
    }

    /// Cells per axis, the grid's origin and the cells' sides (each ≥ `(rc + skin) / SUB`, so
    /// the `(2 SUB + 1)³` cells around a body's hold every body within reach).
    fn grid(&self, pos: &[[f64; 3]]) -> ([usize; 3], [f64; 3], [f64; 3]) {
        // Enough cells to be O(N), never more than about 2 per body (sparse open clusters).
        let most = (2 * pos.len()).max(1) as f64;
        let per_axis = |extent: f64| -> usize {
            let k = (extent * SUB as f64 / self.reach).floor();
            if k.is_finite() && k >= 1.0 {
                k.min(most.cbrt().ceil().max(1.0)) as usize
            } else {
                1
            }
        };
        match &self.cell {
            Some(c) => {
                let dims = c.len.map(per_axis);
                let size = core::array::from_fn(|a| c.len[a] / dims[a] as f64);
                (dims, [0.0; 3], size)
            }
            None => {
                let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
                for p in pos {
                    for a in 0..3 {
                        lo[a] = lo[a].min(p[a]);
                        hi[a] = hi[a].max(p[a]);
                    }
                }
                let dims: [usize; 3] = core::array::from_fn(|a| per_axis(hi[a] - lo[a]));
                let size = core::array::from_fn(|a| {
                    let s = (hi[a] - lo[a]) / dims[a] as f64;
                    if s.is_finite() && s > 0.0 {
                        s * (1.0 + 1e-12)
                    } else {
                        1.0
                    }
                });
                (dims, lo, size)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::fingerprint;

    /// Uniform in [0, 1) from a xorshift (reproducible, no dependency).
    fn uniform(state: &mut u64) -> f64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Every pair within reach by the direct double loop (nearest images when periodic).
    fn direct(pos: &[[f64; 3]], reach: f64, cell: Option<Cell>, ex: &[Vec<u32>]) -> Vec<[u32; 2]> {
        let mut out = Vec::new();
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let mut d = [0.0; 3];
                for a in 0..3 {
                    d[a] = pos[j][a] - pos[i][a];
                }
                if let Some(c) = &cell {
                    d = c.nearest(d);
                }
                let inside = d.iter().map(|x| x * x).sum::<f64>() < reach * reach;
                if inside && !ex[i].contains(&(j as u32)) {
                    out.push([i as u32, j as u32]);
                }
            }
        }
        out
    }

    #[test]
    fn the_cell_list_finds_exactly_the_pairs_of_the_double_loop() {
        let mut s = 0x2545_F491_4F6C_DD1D_u64;
        for (n, side, periodic) in [
            (300, 9.0, true),
            (500, 7.3, true),
            (40, 3.5, true),
            (400, 4.0, false),
            (1, 5.0, false),
        ] {
            // Positions spread over several periodic images (unwrapped coordinates).
            let pos: Vec<[f64; 3]> = (0..n)
                .map(|_| core::array::from_fn(|_| (3.0 * uniform(&mut s) - 1.0) * side))
                .collect();
            let mut top = Topology::chain(n).exclude_bonded().cutoff(1.1, 0.4);
            if periodic {
                top = top.periodic([side, side * 1.1, side * 0.9]);
            }
            let mut nb = Neighbors::new(&top).expect("a cutoff");
            let mut pairs = Vec::new();
            nb.build(&pos, &[], &mut pairs);
            let want = direct(&pos, 1.5, nb.cell, &top.exclusion_lists());
            let mut sorted = pairs.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, want, "n = {n}, side {side}, periodic {periodic}");
            assert!(pairs.iter().all(|p| p[0] < p[1]), "lower index first");
            let mut again = Vec::new();
            nb.build(&pos, &[], &mut again);
            assert_eq!(again, pairs, "one order");
            assert!(n < 100 || pairs.len() > n / 4, "{} pairs", pairs.len());
        }
    }

    /// The half stencil made straight for the cells away from the x faces is the one made
    /// cell by cell, run for run (bounds and box vectors, bit for bit), for every cell of
    /// periodic and open grids of 3 to 7 cells along each axis.
    #[test]
    fn the_half_stencil_is_the_same_made_straight_and_cell_by_cell() {
        let mut s = 0x2545_F491_4F6C_DD1D_u64;
        let mut straight = 0;
        for (n, sides, periodic) in [
            (300, [4.6, 6.1, 9.2], true),
            (500, [10.7, 4.6, 7.7], true),
            (400, [7.0, 5.0, 11.0], false),
        ] {
            let pos: Vec<[f64; 3]> = (0..n)
                .map(|_| core::array::from_fn(|a| uniform(&mut s) * sides[a]))
                .collect();
            let mut top = Topology::chain(n).exclude_bonded().cutoff(1.1, 0.4);
            if periodic {
                top = top.periodic(sides);
            }
            let mut nb = Neighbors::new(&top).expect("a cutoff");
            nb.build(&pos, &[], &mut Vec::new());
            let (dims, _, _) = nb.grid(&pos);
            assert!(dims.iter().all(|&d| (3..=7).contains(&d)), "{dims:?}");
            let len = nb.cell.map_or([f64::INFINITY; 3], |c| c.len);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for z in 0..dims[2] {
                for y in 0..dims[1] {
                    for x in 0..dims[0] {
                        nb.half_stencil([x, y, z], dims, len, &mut a);
                        nb.half_stencil_any([x, y, z], dims, len, &mut b);
                        let bits = |r: &Run| (r.from, r.to, r.shift.map(f64::to_bits));
                        let (a, b): (Vec<_>, Vec<_>) =
                            (a.iter().map(bits).collect(), b.iter().map(bits).collect());
                        assert_eq!(a, b, "cell {:?} of {dims:?}", [x, y, z]);
                        straight += usize::from(x > 0 && x + 1 < dims[0]);
                    }
                }
            }
        }
        assert!(straight > 100, "{straight} cells made straight");
    }

    #[test]
    fn every_instruction_set_finds_the_same_pairs_in_the_same_order() {
        // Cells of a few bodies (a melt's: runs shorter than a block of lanes) and of many (a
        // dense box: whole blocks and a masked remainder), each against the direct loop and
        // against the scalar build, order included.
        let mut s = 0x2545_F491_4F6C_DD1D_u64;
        for (n, side) in [(300, 7.0), (3000, 6.0)] {
            let pos: Vec<[f64; 3]> = (0..n)
                .map(|_| core::array::from_fn(|_| uniform(&mut s) * side))
                .collect();
            let top = Topology::chain(n)
                .exclude_bonded()
                .cutoff(1.1, 0.4)
                .periodic([side; 3]);
            let mut nb = Neighbors::new(&top).expect("a cutoff");
            let on = |nb: &mut Neighbors, isa| {
                let mut pairs = Vec::new();
                nb.build_from(n, |b| pos[b], &[], isa, &mut pairs);
                pairs
            };
            let scalar = on(&mut nb, Isa::Scalar);
            let mut sorted = scalar.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, direct(&pos, 1.5, nb.cell, &top.exclusion_lists()));
            for isa in Isa::available() {
                assert_eq!(on(&mut nb, isa), scalar, "{isa:?}, {n} bodies");
            }
        }
    }

    #[test]
    fn each_bodys_pairs_are_grouped_by_types_in_the_order_found() {
        // Against a stable sort by the same key, on pairs led by `i` and by partners.
        let mut s = 0x9E37_79B9_7F4A_7C15_u64;
        let kinds: Vec<u32> = (0..200).map(|_| (3.0 * uniform(&mut s)) as u32).collect();
        for i in [0u32, 57, 199] {
            let mut pairs: Vec<[u32; 2]> = (0..200u32)
                .filter(|&j| j != i && uniform(&mut s) < 0.5)
                .map(|j| [i.min(j), i.max(j)])
                .collect();
            let key = |p: &[u32; 2]| (kinds[p[0] as usize], kinds[p[1] as usize], p[0] != i);
            let mut want = pairs.clone();
            want.sort_by_key(key);
            group_by_types(&mut pairs, i, &kinds, 3, &mut Vec::new());
            assert_eq!(pairs, want, "body {i}");
        }
        // In a list: the same pairs, one order, far fewer changes of types between neighbours.
        let n = 2000;
        let side = 6.0;
        let pos: Vec<[f64; 3]> = (0..n)
            .map(|_| core::array::from_fn(|_| uniform(&mut s) * side))
            .collect();
        let kinds: Vec<u32> = (0..n).map(|_| (3.0 * uniform(&mut s)) as u32).collect();
        let top = Topology::new(n).cutoff(1.1, 0.4).periodic([side; 3]);
        let mut nb = Neighbors::new(&top).expect("a cutoff");
        let (mut plain, mut grouped, mut again) = (Vec::new(), Vec::new(), Vec::new());
        nb.build(&pos, &[], &mut plain);
        nb.build(&pos, &kinds, &mut grouped);
        nb.build(&pos, &kinds, &mut again);
        assert_eq!(grouped, again, "one order");
        let changes = |l: &[[u32; 2]]| {
            l.windows(2)
                .filter(|w| w[0].map(|b| kinds[b as usize]) != w[1].map(|b| kinds[b as usize]))
                .count()
        };
        assert!(
            4 * changes(&grouped) < changes(&plain),
            "{} changes of types grouped, {} not",
            changes(&grouped),
            changes(&plain)
        );
        let (mut a, mut b) = (plain.clone(), grouped.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "the same pairs");
    }

    #[test]
    fn the_list_is_stale_after_half_the_skin() {
        let top = Topology::new(3).cutoff(1.0, 0.4);
        let mut nb = Neighbors::new(&top).expect("a cutoff");
        let mut pos = vec![[0.0; 3], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]];
        assert!(nb.stale(&pos));
        let mut pairs = Vec::new();
        nb.build(&pos, &[], &mut pairs);
        assert_eq!(pairs, vec![[0, 1]]);
        pos[2][1] -= 0.199;
        assert!(!nb.stale(&pos));
        pos[2][1] -= 0.002;
        assert!(nb.stale(&pos));
        pos[0][0] = f64::NAN;
        assert!(nb.stale(&pos));
    }

    #[test]
    fn the_staleness_pass_takes_the_fingerprint_of_the_positions() {
        // Below and above the length whose ranges go on the pool; points of 3 and 4
        // coordinates (the fourth is hashed, not tested for motion).
        let mut s = 0x9E37_79B9_7F4A_7C15_u64;
        for (n, stride) in [(3, 3), (50, 4), (12_000, 3), (9_000, 4)] {
            let side = (n as f64).cbrt() * 3.0;
            let pos: Vec<[f64; 3]> = (0..n)
                .map(|_| core::array::from_fn(|_| side * uniform(&mut s)))
                .collect();
            let mut q: Vec<f64> = pos
                .iter()
                .flat_map(|p| (0..stride).map(move |d| p.get(d).copied().unwrap_or(0.5)))
                .collect();
            let mut nb = Neighbors::new(&Topology::new(n).cutoff(1.0, 0.4)).expect("a cutoff");
            // Never built: stale, and still keyed.
            assert_eq!(nb.stale_free_keyed(&q, stride), (true, fingerprint(&q)));
            nb.build(&pos, &[], &mut Vec::new());
            let keyed = |q: &[f64]| {
                let (stale, key) = nb.stale_free_keyed(q, stride);
                assert_eq!(stale, nb.stale_free(q, stride), "n = {n}");
                assert_eq!(key, fingerprint(q), "n = {n}, stride {stride}");
                stale
            };
            assert!(!keyed(&q));
            // The last body (the last range's): a little; along one axis by more than
            // 1/√3 of half the skin (0.2), so that its group is tested body by body; along a
            // second axis, still within half the skin; along the third, beyond it, though by
            // less than half the skin along each; not a number.
            let last = (n - 1) * stride;
            let before = q[last..last + 3].to_vec();
            q[last + 1] += 0.05;
            assert!(!keyed(&q));
            q[last + 1] += 0.1;
            assert!(!keyed(&q));
            q[last] += 0.13;
            assert!(!keyed(&q));
            q[last + 2] += 0.13;
            assert!(keyed(&q));
            q[last..last + 3].copy_from_slice(&before);
            if stride > 3 {
                // The fourth coordinate: another key, not a move.
                q[last + 3] += 1.0;
                assert!(!keyed(&q));
            }
            q[last] = f64::NAN;
            assert!(keyed(&q));
        }
    }
}
