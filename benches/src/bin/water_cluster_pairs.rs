//! A cluster-pair pass for the water box, built to be measured against zs's rows (issue: what
//! GROMACS's `nbnxm` layout would give zs). The same generated pair function (`SpcE`'s
//! `pair_potential`, `Kernel::value_gradient_lanes`), the same lanes, one thread:
//!
//! - the atoms are cut into clusters of 8 as GROMACS does: columns of the box in x and y, each
//!   sorted along z and cut into runs of 8 (the last one padded with masked lanes); `pure`
//!   clusters hold one type each (the O and the H atoms gridded apart: every block's types are
//!   one row, read once), `mixed` clusters hold both (each lane reads its own types);
//! - the list holds each pair of clusters once (`J ≥ I`, within `I = J` each pair of atoms
//!   once), with the whole cluster's periodic shift (no nearest image per pair) and, per atom
//!   of `I`, the bits of `J`'s lanes it may pair with (padding, the same molecule, the diagonal);
//!   its clusters' bounding boxes within the cutoff plus the skin (zs's list: 2 Å);
//! - a block is one atom of `I` against the 8 lanes of `J`, loaded whole (no gather), skipped
//!   when no lane is within the cutoff; `J`'s gradient is summed in registers over `I`'s atoms
//!   and added once per pair of clusters (no scatter per block), `I`'s atoms' at the end of `I`.
//!
//! It prints the blocks evaluated and their lanes within the cutoff, checks the energy and
//! gradient against every pair summed one at a time (the scalar `value_gradient`, the nearest
//! image), and times the pass (the gradient put back in the atoms' order included) against zs's
//! own short-range evaluation of the same file (the rows' pass, with the bonded terms' few
//! thousand exclusion corrections on top), alternated, best of 7 batches of 50 each:
//!
//! ```text
//! cargo run --release -p zs-bench --bin water_cluster_pairs -- [DATA] [pure | mixed]
//! ```
//! See BENCHMARKS.md, "A cluster-pair pass, built and measured".
use std::path::Path;
use std::time::Instant;

use zs_runtime::assembly::forms::Pair;
use zs_runtime::assembly::{Kernel, Kinds};
use zs_runtime::lammps::DataFile;
use zs_runtime::simd::{self, Loads, WithLanes};
use zs_runtime::Model;
use zs_systems::water_box::{SpcE, WaterBox, WaterBoxOptions, RC, SKIN};

/// Atoms per cluster: one block of the widest lanes.
const C: usize = 8;
/// A padded lane's coordinate: beyond every cutoff from any atom.
const FAR: f64 = 1.0e6;

/// The atoms in clusters, their coordinates by lane, and the list of cluster pairs.
struct Clusters {
    /// Slot `C·c + l` is atom `atom[C·c + l]` (`u32::MAX`: padding).
    atom: Vec<u32>,
    /// Coordinate `d` of every slot (wrapped into the box; padding at `FAR`).
    x: [Vec<f64>; 3],
    /// Each slot's type (padding: 0).
    kind: Vec<u32>,
    /// Cluster `I`'s pairs are `pairs[at[I] .. at[I + 1]]`.
    at: Vec<usize>,
    pairs: Vec<ClusterPair>,
}

#[derive(Clone, Copy)]
struct ClusterPair {
    j: u32,
    /// Added to `J`'s coordinates: the image nearest `I`.
    shift: [f64; 3],
    /// Per atom of `I`, the lanes of `J` it pairs with.
    lanes: [u8; C],
}

impl Clusters {
    fn build(data: &DataFile, pure: bool, rlist: f64) -> Self {
        let n = data.len();
        let side: [f64; 3] = data.box_lengths();
        let wrap = |a: usize, d: usize| (data.positions[a][d] - data.lo[d]).rem_euclid(side[d]);
        let mut groups: Vec<Vec<usize>> = if pure {
            let mut by = vec![Vec::new(); data.masses.len()];
            for a in 0..n {
                by[data.types[a] - 1].push(a);
            }
            by
        } else {
            vec![(0..n).collect()]
        };
        let (mut atom, mut x, mut kind) = (Vec::new(), [vec![], vec![], vec![]], Vec::new());
        for group in &mut groups {
            // Columns about a cluster's width apart (the group's density), sorted along z.
            let volume = side[0] * side[1] * side[2];
            let width = (C as f64 * volume / group.len() as f64).cbrt();
            let cols = [0, 1].map(|d| ((side[d] / width).floor() as usize).max(1));
            let column = |a: usize| {
                let c =
                    |d: usize| ((wrap(a, d) / side[d] * cols[d] as f64) as usize).min(cols[d] - 1);
                c(0) * cols[1] + c(1)
            };
            group.sort_by(|&a, &b| {
                (column(a), wrap(a, 2))
                    .partial_cmp(&(column(b), wrap(b, 2)))
                    .unwrap()
            });
            let mut k = 0;
            while k < group.len() {
                let col = column(group[k]);
                let mut run = 0;
                while k < group.len() && column(group[k]) == col && run < C {
                    let a = group[k];
                    atom.push(a as u32);
                    for d in 0..3 {
                        x[d].push(wrap(a, d));
                    }
                    kind.push(data.types[a] as u32 - 1);
                    (k, run) = (k + 1, run + 1);
                }
                for _ in run..C {
                    atom.push(u32::MAX);
                    for xd in &mut x {
                        xd.push(FAR);
                    }
                    kind.push(0);
                }
            }
        }
        let nc = atom.len() / C;
        let real = |s: usize| atom[s] != u32::MAX;
        let bounds: Vec<([f64; 3], [f64; 3])> = (0..nc)
            .map(|c| {
                let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
                for s in (C * c..C * c + C).filter(|&s| real(s)) {
                    for d in 0..3 {
                        lo[d] = lo[d].min(x[d][s]);
                        hi[d] = hi[d].max(x[d][s]);
                    }
                }
                (lo, hi)
            })
            .collect();
        let molecule = |s: usize| data.molecules[atom[s] as usize];
        let (mut at, mut pairs) = (vec![0], Vec::new());
        for i in 0..nc {
            let (lo_i, hi_i) = bounds[i];
            for j in i..nc {
                let (lo_j, hi_j) = bounds[j];
                let mut shift = [0.0; 3];
                let mut gap2 = 0.0;
                for d in 0..3 {
                    let centre = 0.5 * (lo_j[d] + hi_j[d] - lo_i[d] - hi_i[d]);
                    shift[d] = -side[d] * (centre / side[d]).round();
                    let gap = (lo_j[d] + shift[d] - hi_i[d])
                        .max(lo_i[d] - hi_j[d] - shift[d])
                        .max(0.0);
                    gap2 += gap * gap;
                }
                if gap2 >= rlist * rlist {
                    continue;
                }
                let mut lanes = [0u8; C];
                for (a, bits) in lanes.iter_mut().enumerate() {
                    let si = C * i + a;
                    for l in 0..C {
                        let sj = C * j + l;
                        let ok = real(si)
                            && real(sj)
                            && molecule(si) != molecule(sj)
                            && (i != j || l > a);
                        *bits |= u8::from(ok) << l;
                    }
                }
                if lanes.iter().any(|&b| b != 0) {
                    pairs.push(ClusterPair {
                        j: j as u32,
                        shift,
                        lanes,
                    });
                }
            }
            at.push(pairs.len());
        }
        Self {
            atom,
            x,
            kind,
            at,
            pairs,
        }
    }
}

/// The pass's outputs, kept (no allocation per pass).
struct Outputs {
    /// Per slot, its gradient by coordinate.
    g: [Vec<f64>; 3],
    /// Per lane count: the blocks evaluated, their lanes within the cutoff.
    blocks: usize,
    live: usize,
}

/// One pass over every cluster pair.
struct Pass<'a> {
    field: &'a SpcE,
    clusters: &'a Clusters,
    out: &'a mut Outputs,
    /// 0/1 per lane of each lane mask.
    bits: &'a [[f64; C]],
    cut2: f64,
}

impl WithLanes for Pass<'_> {
    type Output = f64;

    #[inline(always)]
    fn run<L: Loads>(self) -> f64 {
        let Pass {
            field,
            clusters: cl,
            out,
            bits,
            cut2,
        } = self;
        let (w, zero, cut) = (L::WIDTH, L::splat(0.0), L::splat(cut2));
        let parts = C / w;
        for g in &mut out.g {
            g.fill(0.0);
        }
        let (mut blocks, mut live) = (0, 0);
        let mut energy = L::splat(0.0);
        let mut lane_kinds = [[0u32; 2]; C];
        for i in 0..cl.at.len() - 1 {
            let xi: [[f64; 3]; C] =
                core::array::from_fn(|a| core::array::from_fn(|d| cl.x[d][C * i + a]));
            let mut acc_i = [[[zero; 3]; C]; C];
            for p in &cl.pairs[cl.at[i]..cl.at[i + 1]] {
                let j = p.j as usize;
                let pure = cl.kind[C * j..C * j + C]
                    .iter()
                    .all(|&k| k == cl.kind[C * j]);
                let mut acc_j = [[zero; 3]; C];
                for v in 0..parts {
                    let s = C * j + v * w;
                    let xj: [L; 3] = core::array::from_fn(|d| {
                        L::load(&cl.x[d][s..s + w]) + L::splat(p.shift[d])
                    });
                    for a in 0..C {
                        let allowed = p.lanes[a] >> (v * w);
                        if allowed == 0 {
                            continue;
                        }
                        let x = [xi[a].map(L::splat), xj];
                        let mut r2 = zero;
                        for d in 0..3 {
                            let e = x[1][d] - x[0][d];
                            r2 = r2 + e * e;
                        }
                        let within = r2.lt_mask(cut) & u32::from(allowed);
                        if within == 0 {
                            continue;
                        }
                        blocks += 1;
                        live += within.count_ones() as usize;
                        let keep =
                            r2.lt(cut) * L::load(&bits[p.lanes[a] as usize][v * w..v * w + w]);
                        let ki = cl.kind[C * i + a];
                        let one = [[ki, cl.kind[C * j]]];
                        let kinds: &[Kinds<2>] = if pure {
                            &one
                        } else {
                            for (l, k) in lane_kinds[..w].iter_mut().enumerate() {
                                *k = [ki, cl.kind[s + l]];
                            }
                            &lane_kinds[..w]
                        };
                        let (e, gr) = <SpcE as Kernel<3, 2, Pair>>::value_gradient_lanes(
                            field, 0.0, &x, kinds,
                        );
                        for d in 0..3 {
                            acc_i[a][v][d] = acc_i[a][v][d] + L::select(keep, gr[0][d], zero);
                            acc_j[v][d] = acc_j[v][d] + L::select(keep, gr[1][d], zero);
                        }
                        energy = energy + L::select(keep, e, zero);
                    }
                    for d in 0..3 {
                        let g = &mut out.g[d][s..s + w];
                        (L::load(g) + acc_j[v][d]).store(g);
                    }
                }
            }
            for (a, acc) in acc_i.iter().enumerate() {
                for d in 0..3 {
                    let mut lanes = [0.0; C];
                    for (v, part) in acc[..parts].iter().enumerate() {
                        part[d].store(&mut lanes[v * w..v * w + w]);
                    }
                    out.g[d][C * i + a] += lanes.iter().sum::<f64>();
                }
            }
        }
        out.blocks = blocks;
        out.live = live;
        let mut lanes = [0.0; C];
        energy.store(&mut lanes[..w]);
        lanes[..w].iter().sum()
    }
}

/// Every pair of atoms of different molecules one at a time, by the nearest image: the scalar
/// kernel's energy and gradient (the reference).
fn every_pair(field: &SpcE, data: &DataFile, q: &[f64]) -> (f64, Vec<f64>) {
    let side = data.box_lengths();
    let n = data.len();
    let mut g = vec![0.0; 3 * n];
    let mut energy = 0.0;
    for a in 0..n {
        for b in a + 1..n {
            if data.molecules[a] == data.molecules[b] {
                continue;
            }
            let mut xb = [0.0; 3];
            for d in 0..3 {
                let e = q[3 * b + d] - q[3 * a + d];
                xb[d] = q[3 * a + d] + e - side[d] * (e / side[d]).round();
            }
            let xa = [q[3 * a], q[3 * a + 1], q[3 * a + 2]];
            let kinds = [data.types[a] as u32 - 1, data.types[b] as u32 - 1];
            let (e, gr) =
                <SpcE as Kernel<3, 2, Pair>>::value_gradient(field, 0.0, &[xa, xb], &kinds);
            energy += e;
            for d in 0..3 {
                g[3 * a + d] += gr[0][d];
                g[3 * b + d] += gr[1][d];
            }
        }
    }
    (energy, g)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "/usr/share/lammps/examples/rdf-adf/data.spce".to_string());
    let pure = match args.next().as_deref() {
        None | Some("pure") => true,
        Some("mixed") => false,
        Some(other) => panic!("`pure` or `mixed`, not {other}"),
    };
    let data = DataFile::read(Path::new(&path)).expect("a data file");
    let water = WaterBox::from_data_with(&data, &WaterBoxOptions::default()).expect("water");
    let field = SpcE::new(RC, water.long.alpha());
    let n = data.len();
    let t = Instant::now();
    let clusters = Clusters::build(&data, pure, RC + SKIN);
    let build = t.elapsed().as_secs_f64();
    let bits: Vec<[f64; C]> = (0..256u32)
        .map(|b| core::array::from_fn(|l| f64::from((b >> l) & 1)))
        .collect();
    let mut out = Outputs {
        g: core::array::from_fn(|_| vec![0.0; clusters.atom.len()]),
        blocks: 0,
        live: 0,
    };
    let mut g = vec![0.0; 3 * n];
    let pass = |out: &mut Outputs, g: &mut [f64]| {
        let e = simd::dispatch(Pass {
            field: &field,
            clusters: &clusters,
            out,
            bits: &bits,
            cut2: RC * RC,
        });
        for (s, &a) in clusters
            .atom
            .iter()
            .enumerate()
            .filter(|(_, a)| **a != u32::MAX)
        {
            for d in 0..3 {
                g[3 * a as usize + d] = out.g[d][s];
            }
        }
        e
    };
    let energy = pass(&mut out, &mut g);
    println!(
        "{n} atoms, {} clusters of {C} ({}), {} cluster pairs (built in {:.1} ms, not tuned): {} blocks of 8 lanes evaluated, {:.2} of their lanes within the cutoff ({} pairs)",
        clusters.atom.len() / C,
        if pure { "one type each" } else { "mixed types" },
        clusters.pairs.len(),
        build * 1e3,
        out.blocks * simd::selected().width() / C,
        out.live as f64 / (out.blocks * simd::selected().width()) as f64,
        out.live
    );
    let q = &water.q;
    let (reference, g_ref) = every_pair(&field, &data, q);
    let largest = g_ref.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let off = g
        .iter()
        .zip(&g_ref)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    println!(
        "against every pair one at a time: energy {energy:.12e} vs {reference:.12e} (relative {:.1e}), largest gradient difference over the largest {:.1e}",
        ((energy - reference) / reference).abs(),
        off / largest
    );
    let mut g_rows = vec![0.0; 3 * n];
    let sys = &water.short;
    // One thread for both: zs's assembly goes parallel on the global pool above a size.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    one.install(|| sys.value_gradient_into(q, &mut g_rows));
    for round in 0..2 {
        let mut best = [f64::INFINITY; 2];
        for _ in 0..7 {
            let t = Instant::now();
            one.install(|| {
                for _ in 0..50 {
                    sys.value_gradient_into(q, &mut g_rows);
                }
            });
            best[0] = best[0].min(t.elapsed().as_secs_f64() / 50.0);
            let t = Instant::now();
            for _ in 0..50 {
                pass(&mut out, &mut g);
            }
            best[1] = best[1].min(t.elapsed().as_secs_f64() / 50.0);
        }
        println!(
            "round {round}: zs's rows {:.3} ms, cluster pairs {:.3} ms per energy and gradient (clusters ÷ rows {:.2})",
            best[0] * 1e3,
            best[1] * 1e3,
            best[1] / best[0]
        );
    }
}
