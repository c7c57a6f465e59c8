//! The order an assembled system holds its bodies in, inside: the user's (the topology's), or
//! spatial — bodies binned in cells of the neighbour list's reach and numbered cell after
//! cell (x fastest, then y, then z), as LAMMPS's `atom_modify sort` does. In spatial order
//! the bodies a pair term joins sit near each other in memory, so the list build and the pair
//! passes read the caches instead of main memory when the user's file is in no spatial order
//! (measured: a shuffled melt of 864 000 beads steps twice as slowly as the same melt in
//! chain order).
//!
//! The permutation lives here and in the evaluation state that holds it (its arrangement,
//! `arrange.rs`); nothing outside sees it. The terms, the neighbour list, the per-body
//! buffers and the Hessian gathers are built over the relabeled topology
//! ([`super::Topology::relabeled`]); the model's interface stays in the user's order: each
//! evaluation gathers `q` (and a direction `a`) into the inner order ([`Order::gather`]) and
//! gathers its vector outputs back ([`Order::scatter`]), masses are the user's, and the
//! Hessian's block pattern is made over the user's free indices ([`Order::to_user`]), so
//! matrices, solvers, state vectors and files never see the inner order. The order is made at
//! set-up from the start, and made again from the positions of the moment every so many
//! neighbour-list builds ([`super::Assembled::with_resort_period`]): a function of the state,
//! so the same at every thread count. A checkpoint keeps it (`history.rs`, opaque to the
//! reader: every body's place inside), so a resumed run evaluates in the same order and
//! continues bit for bit.

use super::cell::Cell;
use super::plan::{Bodies, PINNED};
use super::topology::Topology;
use crate::simd::PREFETCH_AHEAD;

/// How an [`super::Assembled`] system orders its bodies inside ([`super::Assembled::ordered`]).
/// A public value, as faer's choices of algorithm are. Whatever the order, the system's
/// interface (coordinates, gradients, Hessian patterns, masses) is in the topology's order;
/// the order changes only the order of the sums (the last bits) and the speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyOrder {
    /// Spatial order where it applies (a pair cutoff) and the topology's order
    /// is not already local: fewer than half of its consecutive bodies are within the
    /// neighbour list's reach of each other. A polymer melt numbered along its
    /// chains is local (each bead is bonded to the next) and keeps its order and its bits; a
    /// file in random order is sorted.
    #[default]
    Auto,
    /// The topology's order.
    Given,
    /// Spatial order: cells of the neighbour list's reach, x fastest, then y, then z; within
    /// a cell, the topology's order. Needs a pair cutoff.
    Cells,
}

impl BodyOrder {
    /// `ZS_BODY_ORDER=auto|given|cells` from the environment ([`BodyOrder::Auto`] when unset
    /// or unknown): what the command line's condensed-phase systems are set up with, so that
    /// one file can be run in either order (benchmarks).
    pub fn from_env() -> Self {
        Self::from_env_or(Self::Auto)
    }

    /// `ZS_BODY_ORDER=auto|given|cells` from the environment, `default` when unset or
    /// unknown (a system whose files are known to list their bodies in no spatial order).
    pub fn from_env_or(default: Self) -> Self {
        match std::env::var("ZS_BODY_ORDER").as_deref() {
            Ok("auto") => Self::Auto,
            Ok("given") => Self::Given,
            Ok("cells") => Self::Cells,
            _ => default,
        }
    }
}

/// True unless `ZS_BODY_ORDER` is `given` or `auto`: whether the command line holds the state
/// of an explicit run (velocity Verlet, Langevin around it) of a system with a pair cutoff in
/// spatial order ([`super::Assembled::hold_in_cells`], [`super::HeldInside`]), so that no step
/// permutes anything. `given` or `auto` keep the order [`BodyOrder::from_env`] made the
/// system in, and its interface's permutations when that is spatial (benchmarks).
pub fn holds_inside_from_env() -> bool {
    !matches!(
        std::env::var("ZS_BODY_ORDER").as_deref(),
        Ok("given") | Ok("auto")
    )
}

/// A system in spatial order re-sorts its bodies at every this many neighbour-list builds by
/// default ([`super::Assembled::with_resort_period`]).
pub const RESORT_EVERY: usize = 100;

/// `ZS_RESORT_EVERY=K` from the environment (a number of neighbour-list builds; 0: never),
/// [`RESORT_EVERY`] when unset or not a number: what the command line's
/// condensed-phase systems give [`super::Assembled::with_resort_period`], so that one file
/// can be run with any period (benchmarks).
pub fn resort_period_from_env() -> usize {
    std::env::var("ZS_RESORT_EVERY")
        .ok()
        .and_then(|k| k.trim().parse().ok())
        .unwrap_or(RESORT_EVERY)
}

/// A spatial order of the bodies: user body `b` is inner body `rank[b]`; inner free index `i`
/// holds the coordinates of the user's free index `to_user[i]`, and user free index `u` is
/// inner `to_inner[u]`.
#[derive(Debug)]
pub(crate) struct Order {
    pub rank: Vec<u32>,
    pub to_user: Vec<u32>,
    pub to_inner: Vec<u32>,
    /// The user's free index of every user body ([`PINNED`] for a pinned one).
    pub user_free_of: Vec<u32>,
}

impl Order {
    /// The order of the relabeling `rank` (user body → inner body), with the user's bodies
    /// `user` and the inner ones `inner`.
    pub fn new(rank: Vec<u32>, user: &Bodies, inner: &Bodies) -> Self {
        let mut to_user = vec![0; user.free];
        let mut to_inner = vec![0; user.free];
        for (b, &f) in user.free_of.iter().enumerate() {
            if f != PINNED {
                let i = inner.free_of[rank[b] as usize];
                to_user[i as usize] = f;
                to_inner[f as usize] = i;
            }
        }
        Self {
            rank,
            to_user,
            to_inner,
            user_free_of: user.free_of.clone(),
        }
    }

    /// `inner[i] = user[to_user[i]]`, blocks of `D`: a vector of the user's order into the
    /// inner one.
    pub fn gather<const D: usize>(&self, user: &[f64], inner: &mut [f64], parallel: bool) {
        permute_blocks::<D>(user, inner, &self.to_user, parallel);
    }

    /// `user[u] = inner[to_inner[u]]`, blocks of `D`: a vector of the inner order back into
    /// the user's (a gather as well: each thread writes its own range).
    pub fn scatter<const D: usize>(&self, inner: &[f64], user: &mut [f64], parallel: bool) {
        permute_blocks::<D>(inner, user, &self.to_inner, parallel);
    }
}

/// One evaluation state's vectors in the inner order, for a system in spatial order (else
/// empty): the point `q`, a direction `a` (made on first use: only the Hessian-vector and
/// third passes take one) and a vector output.
#[derive(Debug, Default)]
pub(crate) struct Inside {
    pub q: Vec<f64>,
    pub a: Vec<f64>,
    pub out: Vec<f64>,
}

impl Inside {
    /// The vectors of a system of `len` coordinates in spatial order (0: none).
    pub fn new(len: usize) -> Self {
        Self {
            q: vec![0.0; len],
            a: Vec::new(),
            out: vec![0.0; len],
        }
    }

    /// The length of its vectors (0: the system is in the topology's order).
    pub fn len(&self) -> usize {
        self.q.len()
    }
}

/// `to[k] = from[index[k]]` by blocks of `D`, in parallel ranges when `parallel`: a copy, the
/// same bits whatever the threads. Past a core's L2 cache ([`crate::simd::prefetches`]) each
/// block is asked for [`PREFETCH_AHEAD`] blocks ahead, both of its lines when it straddles
/// two: in either direction one order's neighbours are anywhere in the other's vector.
pub(crate) fn permute_blocks<const D: usize>(
    from: &[f64],
    to: &mut [f64],
    index: &[u32],
    parallel: bool,
) {
    use rayon::prelude::*;
    const RANGE: usize = 4096;
    let far = crate::simd::prefetches(from.len());
    let copy = |(to, index): (&mut [f64], &[u32])| {
        for (k, t) in to.chunks_exact_mut(D).enumerate() {
            if far && let Some(&a) = index.get(k + PREFETCH_AHEAD) {
                let a = a as usize * D;
                crate::simd::prefetch(from[a..].as_ptr());
                crate::simd::prefetch(from[a + D - 1..].as_ptr());
            }
            let i = index[k] as usize * D;
            t.copy_from_slice(&from[i..i + D]);
        }
    };
    if parallel && index.len() > RANGE {
        to.par_chunks_mut(RANGE * D)
            .zip(index.par_chunks(RANGE))
            .for_each(copy);
    } else {
        copy((to, index));
    }
}

/// Every body's reference site at the user's coordinates `q` (`D` per free body, at the user's
/// free index `free_of[b]`), a pinned body's at its pin.
pub(crate) fn user_site<const D: usize>(
    topology: &Topology,
    free_of: &[u32],
    q: &[f64],
) -> impl Fn(usize) -> [f64; 3] {
    move |b| match free_of[b] {
        PINNED => {
            let p = &topology.pinned()[&b];
            [p[0], p[1], p[2]]
        }
        f => core::array::from_fn(|a| q[f as usize * D + a]),
    }
}

/// Cells of side at least `reach` over the sites: the box's when periodic, else the sites'
/// bounding box. Returns the cells per axis and each site's cell (x fastest).
fn cells_of(
    n: usize,
    site: impl Fn(usize) -> [f64; 3],
    cell: Option<&Cell>,
    reach: f64,
) -> Vec<u32> {
    let (lo, len) = match cell {
        Some(c) => ([0.0; 3], c.len),
        None => {
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for s in (0..n).map(&site) {
                for a in 0..3 {
                    lo[a] = lo[a].min(s[a]);
                    hi[a] = hi[a].max(s[a]);
                }
            }
            (lo, core::array::from_fn(|a| (hi[a] - lo[a]).max(reach)))
        }
    };
    // At most 1024 cells per axis: a reach tiny against the box orders no better for more.
    let cells = len.map(|l| ((l / reach).floor() as usize).clamp(1, 1024));
    (0..n)
        .map(|b| {
            let s = site(b);
            let c: [usize; 3] = core::array::from_fn(|a| {
                let x = s[a] - lo[a];
                let x = if cell.is_some() {
                    x - len[a] * (x / len[a]).floor()
                } else {
                    x
                };
                ((x / len[a] * cells[a] as f64) as usize).min(cells[a] - 1)
            });
            ((c[2] * cells[1] + c[1]) * cells[0] + c[0]) as u32
        })
        .collect()
}

/// The spatial relabeling of `n` bodies at `site(b)` (every body's reference site, pinned
/// ones included): `rank[b]`, body `b`'s number in cell order — a stable counting sort by
/// cell, so a function of the sites alone.
pub(crate) fn cell_rank(
    n: usize,
    site: impl Fn(usize) -> [f64; 3],
    cell: Option<&Cell>,
    reach: f64,
) -> Vec<u32> {
    let of = cells_of(n, site, cell, reach);
    let cells = of.iter().max().map_or(0, |&c| c as usize + 1);
    let mut start = vec![0u32; cells + 1];
    for &c in &of {
        start[c as usize + 1] += 1;
    }
    for c in 0..cells {
        start[c + 1] += start[c];
    }
    of.iter()
        .map(|&c| {
            let r = start[c as usize];
            start[c as usize] += 1;
            r
        })
        .collect()
}

/// The share of consecutive bodies (`b`, `b + 1`) whose sites are within `reach` of each other
/// (nearest image in a periodic box): 1 for a polymer numbered along its chains, about 0 for
/// a liquid in random order.
pub(crate) fn locality(
    n: usize,
    site: impl Fn(usize) -> [f64; 3],
    cell: Option<&Cell>,
    reach: f64,
) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let near = (1..n)
        .filter(|&b| {
            let (x, y) = (site(b - 1), site(b));
            let d = [y[0] - x[0], y[1] - x[1], y[2] - x[2]];
            let d = cell.map_or(d, |c| c.nearest(d));
            d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= reach * reach
        })
        .count();
    near as f64 / (n - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells are numbered x fastest; bodies of one cell keep their order; periodic sites are
    /// wrapped into the box first.
    #[test]
    fn cell_rank_is_a_stable_sort_by_cell() {
        let cell = Cell::new([4.0, 4.0, 4.0]);
        // Cells of side 2: (0,0,0) is 0, (1,0,0) is 1, (0,1,0) is 2, (0,0,1) is 4.
        let sites = [
            [3.0, 0.5, 0.5],  // cell 1
            [0.5, 0.5, 2.5],  // cell 4
            [0.5, 0.5, 0.5],  // cell 0
            [-1.0, 0.5, 0.5], // wraps to x = 3: cell 1
            [0.5, 2.5, 0.5],  // cell 2
        ];
        let rank = cell_rank(sites.len(), |b| sites[b], Some(&cell), 2.0);
        assert_eq!(rank, vec![1, 4, 0, 2, 3]);
        let mut seen = rank.clone();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3, 4], "a permutation");
    }

    /// A chain of steps shorter than the reach is local; the same points in an order that
    /// jumps across the box are not.
    #[test]
    fn locality_tells_a_chain_from_a_shuffle() {
        let chain: Vec<[f64; 3]> = (0..100).map(|k| [k as f64 * 0.9, 0.0, 0.0]).collect();
        assert_eq!(locality(chain.len(), |b| chain[b], None, 1.0), 1.0);
        let jumps: Vec<[f64; 3]> = (0..100)
            .map(|k| [((k * 37) % 100) as f64 * 0.9, 0.0, 0.0])
            .collect();
        assert!(locality(jumps.len(), |b| jumps[b], None, 1.0) < 0.05);
        // Through the periodic box, the last and first sites of a ring are neighbours.
        let cell = Cell::new([90.0, 90.0, 90.0]);
        let wrap = [[89.5, 0.0, 0.0], [0.2, 0.0, 0.0]];
        assert_eq!(locality(wrap.len(), |b| wrap[b], Some(&cell), 1.0), 1.0);
    }

    /// Gathering into the inner order and back gives the user's vector bit for bit, serial
    /// and parallel.
    #[test]
    fn gather_then_scatter_is_the_identity() {
        let n = 10_000;
        let rank: Vec<u32> = (0..n as u32).map(|b| (b * 7919) % n as u32).collect();
        let user = Bodies {
            free_of: (0..n as u32).collect(),
            free: n,
        };
        let inner = Bodies {
            free_of: (0..n as u32).collect(),
            free: n,
        };
        let order = Order::new(rank.clone(), &user, &inner);
        let q: Vec<f64> = (0..3 * n).map(|k| k as f64 * 0.25).collect();
        for parallel in [false, true] {
            let mut inside = vec![0.0; 3 * n];
            order.gather::<3>(&q, &mut inside, parallel);
            // Inner body rank[b] holds user body b.
            assert_eq!(inside[3 * rank[5] as usize + 1], q[3 * 5 + 1]);
            let mut back = vec![0.0; 3 * n];
            order.scatter::<3>(&inside, &mut back, parallel);
            assert_eq!(back, q);
        }
    }
}
