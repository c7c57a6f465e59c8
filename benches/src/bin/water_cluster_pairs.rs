//! A cluster-pair pass for the water box, built to measure what GROMACS's `nbnxm` layout would
//! give zs against its rows. The same generated pair function (`SpcE`'s
//! `pair_potential`, `Kernel::value_gradient_lanes`), the same lanes, one thread:
//!
//! - the atoms are cut into clusters of `SIZE` (8, or 4) as GROMACS does: columns of the box in
//!   x and y, each sorted along z and cut into runs (the last one padded with masked lanes);
//!   `pure` clusters hold one type each (the O and the H atoms gridded apart), `mixed` ones both
//!   (a block's lanes then read their own types);
//! - the list holds each pair of clusters once (`J ≥ I`, within `I = J` each pair of atoms
//!   once), with the whole cluster's periodic shift (no nearest image per pair) and, per row, the
//!   bits of the lanes that pair atoms (padding, the same molecule, the diagonal masked); its
//!   clusters' bounding boxes within the cutoff plus the skin (zs's list: 2 Å);
//! - a block of 8 lanes is one atom of `I` against `J` (clusters of 8: GROMACS's `4xM` on 8
//!   lanes) or two atoms of `I` against `J` twice (clusters of 4: its `2xMM`), `J`'s coordinates
//!   loaded whole (no gather), skipped when no lane is within the cutoff; `J`'s gradient is
//!   summed in registers over `I`'s atoms and added once per pair of clusters (no scatter per
//!   block), `I`'s atoms' at the end of `I`.
//!
//! It prints the blocks evaluated and their lanes within the cutoff, checks the energy and
//! gradient against every pair summed one at a time (the scalar `value_gradient`, the nearest
//! image), and times the pass (the gradient put back in the atoms' order included) against zs's
//! own short-range evaluation of the same file (the rows' pass, with the bonded terms' few
//! thousand exclusion corrections on top), alternated, best of 7 batches of 50 each:
//!
//! ```text
//! cargo run --release -p zs-bench --bin water_cluster_pairs -- [DATA] [mixed | pure] [SIZE]
//! ```
//! (`mixed` clusters of 8 unless told.) See BENCHMARKS.md, "A cluster-pair pass, built and measured".
// Coordinates, lanes and clusters by index: the loops read as GROMACS's kernels do.
#![allow(clippy::needless_range_loop)]
use std::path::Path;
use std::time::Instant;

use zs_runtime::assembly::forms::Pair;
use zs_runtime::assembly::Kernel;
use zs_runtime::lammps::DataFile;
use zs_runtime::simd::{self, Loads, WithLanes};
use zs_runtime::Model;
use zs_systems::water_box::{SpcE, WaterBox, WaterBoxOptions, RC, SKIN};

/// Lanes per block: the widest lanes' (narrower ones take a block in parts).
const B: usize = 8;
/// A padded lane's coordinate: beyond every cutoff from any atom.
const FAR: f64 = 1.0e6;

/// The atoms in clusters of `size` (8, or 4: GROMACS's `4xM` and `2xMM` on 8 lanes), their
/// coordinates, and the list of cluster pairs. A block's lane `l` pairs atom `row·(8/size) +
/// l / size` of `I` with atom `l mod size` of `J`: one atom of `I` against `J` (size 8), or two
/// against `J` twice (size 4); a cluster pair is `size²/8` such rows.
struct Clusters {
    size: usize,
    /// Slot `size·c + a` is atom `atom[size·c + a]` (`u32::MAX`: padding).
    atom: Vec<u32>,
    /// Coordinate `d` of every slot (wrapped into the box; padding at `FAR`).
    x: [Vec<f64>; 3],
    /// Each slot's type (padding: 0).
    kind: Vec<u32>,
    /// By block, `8c + l`: cluster `c`'s slot `l mod size` as a partner (its coordinates, its type).
    xb: [Vec<f64>; 3],
    kind_b: Vec<u32>,
    /// Per cluster, its one type when every slot has it (padding included).
    one_kind: Vec<Option<u32>>,
    /// Cluster `I`'s pairs are `pairs[at[I] .. at[I + 1]]`.
    at: Vec<usize>,
    pairs: Vec<ClusterPair>,
}

#[derive(Clone, Copy)]
struct ClusterPair {
    j: u32,
    /// Added to `J`'s coordinates: the image nearest `I`.
    shift: [f64; 3],
    /// Per row, the lanes that pair atoms.
    lanes: [u8; B],
}

impl Clusters {
    fn rows(&self) -> usize {
        self.size * self.size / B
    }

    /// Lane `l` of row `row`: the slot of `I`'s atom and of `J`'s, within their clusters.
    fn lane(&self, row: usize, l: usize) -> (usize, usize) {
        (row * (B / self.size) + l / self.size, l % self.size)
    }

    fn build(data: &DataFile, pure: bool, size: usize, rlist: f64) -> Self {
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
            let width = (size as f64 * volume / group.len() as f64).cbrt();
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
                while k < group.len() && column(group[k]) == col && run < size {
                    let a = group[k];
                    atom.push(a as u32);
                    for d in 0..3 {
                        x[d].push(wrap(a, d));
                    }
                    kind.push(data.types[a] as u32 - 1);
                    (k, run) = (k + 1, run + 1);
                }
                for _ in run..size {
                    atom.push(u32::MAX);
                    for xd in &mut x {
                        xd.push(FAR);
                    }
                    kind.push(0);
                }
            }
        }
        let nc = atom.len() / size;
        let by_block = |v: &[f64]| (0..B * nc).map(|s| v[size * (s / B) + s % size]).collect();
        let xb = [by_block(&x[0]), by_block(&x[1]), by_block(&x[2])];
        let kind_b = (0..B * nc)
            .map(|s| kind[size * (s / B) + s % size])
            .collect();
        let real = |s: usize| atom[s] != u32::MAX;
        let bounds: Vec<([f64; 3], [f64; 3])> = (0..nc)
            .map(|c| {
                let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
                for s in (size * c..size * c + size).filter(|&s| real(s)) {
                    for d in 0..3 {
                        lo[d] = lo[d].min(x[d][s]);
                        hi[d] = hi[d].max(x[d][s]);
                    }
                }
                (lo, hi)
            })
            .collect();
        let one_kind = kind
            .chunks(size)
            .map(|k| k.iter().all(|&t| t == k[0]).then_some(k[0]))
            .collect();
        let mut clusters = Self {
            size,
            atom,
            x,
            kind,
            xb,
            one_kind,
            kind_b,
            at: vec![0],
            pairs: Vec::new(),
        };
        let real = |s: usize| clusters.atom[s] != u32::MAX;
        let molecule = |s: usize| data.molecules[clusters.atom[s] as usize];
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
                let mut lanes = [0u8; B];
                for (row, bits) in lanes[..clusters.rows()].iter_mut().enumerate() {
                    for l in 0..B {
                        let (a, b) = clusters.lane(row, l);
                        let (si, sj) = (size * i + a, size * j + b);
                        let ok = real(si)
                            && real(sj)
                            && molecule(si) != molecule(sj)
                            && (i != j || b > a);
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
        (clusters.at, clusters.pairs) = (at, pairs);
        clusters
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

/// One pass over every cluster pair, clusters of `S` atoms (a constant: the rows' loop
/// unrolled, their sums kept in registers).
struct Pass<'a, const S: usize> {
    field: &'a SpcE,
    clusters: &'a Clusters,
    out: &'a mut Outputs,
    /// 0/1 per lane of each lane mask.
    bits: &'a [[f64; B]],
    cut2: f64,
}

impl<const S: usize> WithLanes for Pass<'_, S> {
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
        let (parts, size, rows) = (B / w, S, S * S / B);
        assert_eq!(cl.size, S);
        for g in &mut out.g {
            g.fill(0.0);
        }
        let (mut blocks, mut live) = (0, 0);
        let mut energy = L::splat(0.0);
        let mut lane_kinds = [[0u32; 2]; B];
        let mut xi = [[[0.0; B]; 3]; B];
        let mut ki = [[0u32; B]; B];
        let mut ki_one = [None; B];
        for i in 0..cl.at.len() - 1 {
            // Each row's atoms of `I`, by lane.
            for row in 0..rows {
                for l in 0..B {
                    let s = size * i + row * (B / S) + l / S;
                    for d in 0..3 {
                        xi[row][d][l] = cl.x[d][s];
                    }
                    ki[row][l] = cl.kind[s];
                }
                ki_one[row] = ki[row]
                    .iter()
                    .all(|&k| k == ki[row][0])
                    .then_some(ki[row][0]);
            }
            let mut acc_i = [[[zero; 3]; B]; B];
            for p in &cl.pairs[cl.at[i]..cl.at[i + 1]] {
                let j = p.j as usize;
                let mut acc_j = [[zero; 3]; B];
                let one_j = cl.one_kind[j];
                for v in 0..parts {
                    let s = B * j + v * w;
                    let xj: [L; 3] = core::array::from_fn(|d| {
                        L::load(&cl.xb[d][s..s + w]) + L::splat(p.shift[d])
                    });
                    let kj = &cl.kind_b[s..s + w];
                    for row in 0..rows {
                        let allowed = p.lanes[row] >> (v * w);
                        if allowed == 0 {
                            continue;
                        }
                        let at = v * w..v * w + w;
                        // One atom of `I` per row (S = 8): a broadcast; two (S = 4): a load.
                        let x = [
                            xi[row].map(|c| {
                                if S == B {
                                    L::splat(c[0])
                                } else {
                                    L::load(&c[at.clone()])
                                }
                            }),
                            xj,
                        ];
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
                        let keep = r2.lt(cut) * L::load(&bits[p.lanes[row] as usize][at.clone()]);
                        // One row of types when `I`'s row and `J` have one type each.
                        let one;
                        let kinds = if let (Some(a), Some(b)) = (ki_one[row], one_j) {
                            one = [[a, b]];
                            &one[..]
                        } else {
                            for (l, k) in lane_kinds[..w].iter_mut().enumerate() {
                                let a = if S == B {
                                    ki[row][0]
                                } else {
                                    ki[row][v * w + l]
                                };
                                *k = [a, kj[l]];
                            }
                            &lane_kinds[..w]
                        };
                        let (e, gr) = <SpcE as Kernel<3, 2, Pair>>::value_gradient_lanes(
                            field, 0.0, &x, kinds,
                        );
                        for d in 0..3 {
                            acc_i[row][v][d] = acc_i[row][v][d] + L::select(keep, gr[0][d], zero);
                            acc_j[v][d] = acc_j[v][d] + L::select(keep, gr[1][d], zero);
                        }
                        energy = energy + L::select(keep, e, zero);
                    }
                }
                // `J`'s gradient: whole blocks added (size 8), or each atom's lanes summed.
                for d in 0..3 {
                    if size == B {
                        for v in 0..parts {
                            let g = &mut out.g[d][B * j + v * w..B * j + v * w + w];
                            (L::load(g) + acc_j[v][d]).store(g);
                        }
                    } else {
                        let mut lanes = [0.0; B];
                        for (v, part) in acc_j[..parts].iter().enumerate() {
                            part[d].store(&mut lanes[v * w..v * w + w]);
                        }
                        for (l, x) in lanes.iter().enumerate() {
                            out.g[d][size * j + l % size] += x;
                        }
                    }
                }
            }
            for (row, acc) in acc_i[..rows].iter().enumerate() {
                for d in 0..3 {
                    let mut lanes = [0.0; B];
                    for (v, part) in acc[..parts].iter().enumerate() {
                        part[d].store(&mut lanes[v * w..v * w + w]);
                    }
                    for (l, x) in lanes.iter().enumerate() {
                        out.g[d][size * i + row * (B / S) + l / S] += x;
                    }
                }
            }
        }
        out.blocks = blocks;
        out.live = live;
        let mut lanes = [0.0; B];
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
        Some("pure") => true,
        None | Some("mixed") => false,
        Some(other) => panic!("`pure` or `mixed`, not {other}"),
    };
    let size: usize = args
        .next()
        .map_or(8, |s| s.parse().expect("a cluster size"));
    assert!(size == 8 || size == 4, "clusters of 8 or 4 atoms");
    let data = DataFile::read(Path::new(&path)).expect("a data file");
    let water = WaterBox::from_data_with(&data, &WaterBoxOptions::default()).expect("water");
    let field = SpcE::new(RC, water.long.alpha());
    let n = data.len();
    let t = Instant::now();
    let clusters = Clusters::build(&data, pure, size, RC + SKIN);
    let build = t.elapsed().as_secs_f64();
    let bits: Vec<[f64; B]> = (0..256u32)
        .map(|b| core::array::from_fn(|l| f64::from((b >> l) & 1)))
        .collect();
    let mut out = Outputs {
        g: core::array::from_fn(|_| vec![0.0; clusters.atom.len()]),
        blocks: 0,
        live: 0,
    };
    let mut g = vec![0.0; 3 * n];
    let pass = |out: &mut Outputs, g: &mut [f64]| {
        let e = if size == B {
            simd::dispatch(Pass::<B> {
                field: &field,
                clusters: &clusters,
                out: &mut *out,
                bits: &bits,
                cut2: RC * RC,
            })
        } else {
            simd::dispatch(Pass::<4> {
                field: &field,
                clusters: &clusters,
                out: &mut *out,
                bits: &bits,
                cut2: RC * RC,
            })
        };
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
        "{n} atoms, {} clusters of {size} ({}), {} cluster pairs (built in {:.1} ms, not tuned): {} blocks of 8 lanes evaluated, {:.2} of their lanes within the cutoff ({} pairs)",
        clusters.atom.len() / size,
        if pure { "one type each" } else { "mixed types" },
        clusters.pairs.len(),
        build * 1e3,
        out.blocks * simd::selected().width() / B,
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
