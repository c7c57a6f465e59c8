//! Where does a Kremer–Grest step's growth of time per bead with size come from, and what
//! would remove it? A plain, scalar, one-thread melt step, independent of `zs-runtime`'s
//! engine (LAMMPS's way: a half list by rows, each pair's force added straight into both
//! bodies), walked four ways (`WALKS`, a comma list; all by default):
//!
//! - `passes`: separate passes over the state in the user's order: the gradient (pairs and
//!   bonds, row by row), then a kick and a drift;
//! - `fused`: one pass. With a half list whose pairs `(i, j)` all have `j > i`, walked in
//!   increasing `i`, body `i` has every contribution to its force once row `i` is done (the
//!   rows before it held the pairs `(k, i)`, `k < i`), and no later row reads its position (a
//!   later row `k` reads only `j > k > i`). So it is kicked, drifted and its gradient zeroed
//!   for the next step right there, while its lines are still in the cache: leapfrog's
//!   `v ← v − h∇V(q)`, `q ← q + hv` (the kick–drift of velocity Verlet's consecutive steps),
//!   the same arithmetic in the same order as `passes`, bit for bit (checked);
//! - `sorted`: the state in the user's order, the positions permuted into the last build's
//!   cell order (cells of the list's reach, x fastest, z slowest) every step, the gradient
//!   over a list in that order, permuted back: the design of `BodyOrder::Cells`;
//! - `windows`: `sorted`, each chunk of `CHUNK` rows (4 096 by default) adding its gradients
//!   into its own dense partials over the bodies it reaches (from its first row to its
//!   farthest partner, and apart the partners across the box's periodic faces), added into
//!   the gradient chunk after chunk: a sum order fixed by the chunks, so the same bits on any
//!   number of threads, as zs requires.
//!
//! LJ cut at 2^(1/6) and shifted, FENE bonds (K = 30, R0 = 1.5) with their own WCA term, the
//! bonded pairs out of the list (LAMMPS's `special_bonds fene`), unit masses; the list (cutoff
//! plus a skin of 0.4) rebuilt by cells when a bead has moved more than half the skin, its
//! time reported apart (this build is not tuned). The energy is summed every step, as a
//! thermostat or an observer would read it. The walks alternate, `ROUNDS` times, each from
//! the file's state; the steps' nanoseconds per bead and step (rebuilds apart) are printed per
//! round. The walks' energies are checked against each other.
//!
//! ```text
//! cargo run --release -p zs-bench --bin kg_fused -- DATA STEPS [ROUNDS] [WALKS] [CHUNK]
//! ```
use std::path::PathBuf;
use std::time::Instant;

use zs_runtime::lammps::DataFile;

const RC2: f64 = 1.259_921_049_894_873_2; // 2^(1/3): (2^(1/6))²
const SKIN: f64 = 0.4;
const K: f64 = 30.0;
const R0: f64 = 1.5;
const H: f64 = 0.012;

fn image(d: f64, side: f64) -> f64 {
    // Branch-free: a melt's pairs cross the box's faces unpredictably.
    let half = 0.5 * side;
    d - side * f64::from(u8::from(d > half)) + side * f64::from(u8::from(d < -half))
}

fn separation(a: &[f64; 3], b: &[f64; 3], side: &[f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|k| image(a[k] - b[k], side[k]))
}

/// LJ (WCA) energy and `-(dV/dr)/r` at square distance `r2` (zero beyond the cutoff).
#[inline(always)]
fn wca(r2: f64) -> (f64, f64) {
    if r2 >= RC2 {
        return (0.0, 0.0);
    }
    let s6 = 1.0 / (r2 * r2 * r2);
    (
        4.0 * s6 * (s6 - 1.0) + 1.0,
        24.0 * s6 * (2.0 * s6 - 1.0) / r2,
    )
}

/// FENE energy and `-(dV/dr)/r`, its WCA term included.
#[inline(always)]
fn fene(r2: f64) -> (f64, f64) {
    let x = 1.0 - r2 / (R0 * R0);
    let (e, f) = wca(r2);
    (e - 0.5 * K * R0 * R0 * x.ln(), f - K / x)
}

/// The terms of body `i` with `partners` at `q` under `law` into `g` (the partners') and
/// `gi`; their energy.
#[inline(always)]
fn terms<G: Grad + ?Sized>(
    q: &[[f64; 3]],
    g: &mut G,
    side: &[f64; 3],
    qi: &[f64; 3],
    gi: &mut [f64; 3],
    partners: &[u32],
    law: impl Fn(f64) -> (f64, f64),
) -> f64 {
    let mut e = 0.0;
    for &j in partners {
        let j = j as usize;
        let s = separation(qi, &q[j], side);
        let (ej, f) = law(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
        e += ej;
        for k in 0..3 {
            gi[k] -= f * s[k];
        }
        g.add(j, s.map(|x| f * x));
    }
    e
}

/// Where a pass's gradients go: body `j`'s.
trait Grad {
    fn add(&mut self, j: usize, d: [f64; 3]);
}

impl Grad for [[f64; 3]] {
    #[inline(always)]
    fn add(&mut self, j: usize, d: [f64; 3]) {
        for k in 0..3 {
            self[j][k] += d[k];
        }
    }
}

/// A chunk of rows' partials (`Windows`): bodies from `lo` in `low`, from `hi` (the partners
/// across the box's periodic faces, far in a spatial order) in `high`.
struct Window<'a> {
    lo: usize,
    low: &'a mut [[f64; 3]],
    hi: usize,
    high: &'a mut [[f64; 3]],
}

impl Grad for Window<'_> {
    #[inline(always)]
    fn add(&mut self, j: usize, d: [f64; 3]) {
        if j >= self.hi {
            self.high.add(j - self.hi, d);
        } else {
            self.low.add(j - self.lo, d);
        }
    }
}

/// Chunk `c` of rows `c·chunk ..`: its partials' windows `[lo, lo_end)` and `[hi, n)`.
#[derive(Clone, Copy)]
struct Span {
    lo_end: usize,
    hi: usize,
}

/// `(key, value)` items grouped by key (a counting sort, stable): key `k`'s values are
/// `values[start[k] .. start[k + 1]]`. Returns `(start, values)`.
fn grouped(keys: usize, items: impl Iterator<Item = (usize, u32)> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; keys + 1];
    for (k, _) in items.clone() {
        start[k + 1] += 1;
    }
    for k in 0..keys {
        start[k + 1] += start[k];
    }
    let mut fill = start.clone();
    let mut values = vec![0u32; start[keys] as usize];
    for (k, v) in items {
        values[fill[k] as usize] = v;
        fill[k] += 1;
    }
    (start, values)
}

/// A half list and the bonds, in some order of the bodies: row `i` is
/// `partner[row_at[i] .. row_at[i + 1]]`, every partner `> i`, and body `i`'s bonded partners
/// above it are `bond[bond_at[i] .. bond_at[i + 1]]`.
#[derive(Clone, Default)]
struct Lists {
    row_at: Vec<u32>,
    partner: Vec<u32>,
    bond_at: Vec<u32>,
    bond: Vec<u32>,
}

impl Lists {
    /// The lists of the bodies at `q` (in their order), `bonds` each pair `(i, j)`, `i < j`,
    /// built by cells of at least `rc + skin`; rows in body order.
    fn build(q: &[[f64; 3]], bonds: &[(u32, u32)], cells: &Cells) -> Self {
        let (bond_at, bond) = grouped(q.len(), bonds.iter().map(|&(i, j)| (i as usize, j)));
        let (start, members) = cells.sort(q);
        let mut row_at = vec![0u32];
        let mut partner = Vec::new();
        let reach = RC2.sqrt() + SKIN;
        for (i, qi) in q.iter().enumerate() {
            let c = cells.of(qi);
            let bonded = &bond[bond_at[i] as usize..bond_at[i + 1] as usize];
            for d in 0..27 {
                let nc = [0, 1, 2]
                    .map(|k| (c[k] + cells.n[k] + (d / [1, 3, 9][k]) % 3 - 1) % cells.n[k]);
                let ci = cells.index(nc);
                for &j in &members[start[ci] as usize..start[ci + 1] as usize] {
                    if j as usize <= i || bonded.contains(&j) {
                        continue;
                    }
                    let s = separation(qi, &q[j as usize], &cells.side);
                    if s[0] * s[0] + s[1] * s[1] + s[2] * s[2] < reach * reach {
                        partner.push(j);
                    }
                }
            }
            row_at.push(partner.len() as u32);
        }
        Lists {
            row_at,
            partner,
            bond_at,
            bond,
        }
    }

    /// Row `i`'s pairs and bonds at `q` into `g` (`i`'s and its partners'); its energy.
    #[inline(always)]
    fn row<G: Grad + ?Sized>(&self, q: &[[f64; 3]], g: &mut G, side: &[f64; 3], i: usize) -> f64 {
        let qi = q[i];
        let mut gi = [0.0; 3];
        let pairs = &self.partner[self.row_at[i] as usize..self.row_at[i + 1] as usize];
        let bonds = &self.bond[self.bond_at[i] as usize..self.bond_at[i + 1] as usize];
        let e = terms(q, g, side, &qi, &mut gi, pairs, wca)
            + terms(q, g, side, &qi, &mut gi, bonds, fene);
        g.add(i, gi);
        e
    }

    /// Each chunk's windows ([`Span`]) over `n` bodies.
    fn spans(&self, n: usize, chunk: usize) -> Vec<Span> {
        (0..n.div_ceil(chunk))
            .map(|c| {
                let rows = c * chunk..n.min((c + 1) * chunk);
                let split = rows.start + n / 2;
                let (mut lo_end, mut hi) = (rows.end, n);
                for i in rows {
                    let pairs = self.row_at[i] as usize..self.row_at[i + 1] as usize;
                    let bonds = self.bond_at[i] as usize..self.bond_at[i + 1] as usize;
                    for &j in self.partner[pairs].iter().chain(&self.bond[bonds]) {
                        let j = j as usize;
                        if j >= split {
                            hi = hi.min(j);
                        } else {
                            lo_end = lo_end.max(j + 1);
                        }
                    }
                }
                Span { lo_end, hi }
            })
            .collect()
    }
}

/// The box's cells of at least `rc + skin`.
#[derive(Clone)]
struct Cells {
    side: [f64; 3],
    n: [usize; 3],
}

impl Cells {
    fn of(&self, p: &[f64; 3]) -> [usize; 3] {
        [0, 1, 2].map(|k| {
            let f = p[k] / self.side[k];
            (((f - f.floor()) * self.n[k] as f64) as usize).min(self.n[k] - 1)
        })
    }
    fn index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.n[1] + c[1]) * self.n[0] + c[0]
    }
    /// Each cell's first place and the bodies cell by cell (z slowest), in body order within one.
    fn sort(&self, q: &[[f64; 3]]) -> (Vec<u32>, Vec<u32>) {
        let home = q.iter().enumerate();
        grouped(
            self.n.iter().product(),
            home.map(|(i, p)| (self.index(self.of(p)), i as u32)),
        )
    }
}

/// How a step walks the melt.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Walk {
    /// The gradient over the list in the user's order, then a kick and a drift over the state.
    Passes,
    /// Each body kicked and drifted right after its row (the module docs).
    Fused,
    /// The positions permuted into the last build's cell order every step, the gradient over
    /// a list in that order, permuted back, then a kick and a drift in the user's order.
    Sorted,
    /// `Sorted`, with each chunk of rows' gradients into its own partials over the window of
    /// bodies it reaches, added into the gradient chunk after chunk: a sum order fixed by the
    /// chunks, not by the threads that would run them.
    Windows,
}

/// The melt in the user's order, and its list in the walk's order.
#[derive(Clone)]
struct Melt {
    q: Vec<[f64; 3]>,
    v: Vec<[f64; 3]>,
    g: Vec<[f64; 3]>,
    cells: Cells,
    /// Each bond `(i, j)`, `i < j`, in the user's order.
    bonds: Vec<(u32, u32)>,
    lists: Lists,
    /// `Sorted`: body `order[k]` is the `k`-th in the list's order; `q`, `g` in that order.
    order: Vec<u32>,
    qs: Vec<[f64; 3]>,
    gs: Vec<[f64; 3]>,
    /// `Windows`: rows per chunk, each chunk's windows, and the partials' buffers (as long as
    /// the longest).
    chunk: usize,
    spans: Vec<Span>,
    low: Vec<[f64; 3]>,
    high: Vec<[f64; 3]>,
    /// Positions at the last build.
    at_build: Vec<[f64; 3]>,
    builds: usize,
}

impl Melt {
    fn new(data: &DataFile) -> Self {
        let n = data.len();
        let side = data.box_lengths();
        let reach = RC2.sqrt() + SKIN;
        let cells = Cells {
            side,
            n: side.map(|s| ((s / reach) as usize).max(3)),
        };
        let bonds = data
            .bonds
            .iter()
            .map(|b| {
                (
                    b.atoms[0].min(b.atoms[1]) as u32,
                    b.atoms[0].max(b.atoms[1]) as u32,
                )
            })
            .collect();
        Melt {
            q: data.positions.clone(),
            v: data.velocities.clone(),
            g: vec![[0.0; 3]; n],
            cells,
            bonds,
            lists: Lists::default(),
            order: Vec::new(),
            qs: vec![[0.0; 3]; n],
            gs: vec![[0.0; 3]; n],
            chunk: 4096,
            spans: Vec::new(),
            low: Vec::new(),
            high: Vec::new(),
            at_build: Vec::new(),
            builds: 0,
        }
    }

    /// The list for `walk` at the current positions.
    fn build(&mut self, walk: Walk) {
        if matches!(walk, Walk::Sorted | Walk::Windows) {
            self.order = self.cells.sort(&self.q).1;
            let mut place = vec![0u32; self.q.len()];
            for (k, &b) in self.order.iter().enumerate() {
                place[b as usize] = k as u32;
                self.qs[k] = self.q[b as usize];
            }
            let bonds: Vec<(u32, u32)> = self
                .bonds
                .iter()
                .map(|&(i, j)| {
                    let (a, b) = (place[i as usize], place[j as usize]);
                    (a.min(b), a.max(b))
                })
                .collect();
            self.lists = Lists::build(&self.qs, &bonds, &self.cells);
            let n = self.q.len();
            self.spans = self.lists.spans(n, self.chunk);
            let low = self
                .spans
                .iter()
                .enumerate()
                .map(|(c, s)| s.lo_end - c * self.chunk);
            self.low = vec![[0.0; 3]; low.max().unwrap_or(0)];
            self.high = vec![[0.0; 3]; self.spans.iter().map(|s| n - s.hi).max().unwrap_or(0)];
        } else {
            self.lists = Lists::build(&self.q, &self.bonds, &self.cells);
        }
        self.at_build = self.q.clone();
        self.builds += 1;
    }

    /// Whether a body has moved more than half the skin since the build.
    fn stale(&self) -> bool {
        let limit = 0.25 * SKIN * SKIN;
        self.q.iter().zip(&self.at_build).any(|(a, b)| {
            let s = [0, 1, 2].map(|k| a[k] - b[k]);
            s[0] * s[0] + s[1] * s[1] + s[2] * s[2] > limit
        })
    }

    /// Leapfrog's kick and drift of body `i`; its gradient zeroed for the next step.
    #[inline(always)]
    fn kick_drift(&mut self, i: usize) {
        for k in 0..3 {
            self.v[i][k] -= H * self.g[i][k];
            self.q[i][k] += H * self.v[i][k];
        }
        self.g[i] = [0.0; 3];
    }

    /// `Windows`' gradient into `gs`, chunk after chunk; its energy.
    fn windows(&mut self) -> f64 {
        let (n, mut e) = (self.q.len(), 0.0);
        for (c, span) in self.spans.iter().enumerate() {
            let lo = c * self.chunk;
            let mut w = Window {
                lo,
                low: &mut self.low[..span.lo_end - lo],
                hi: span.hi,
                high: &mut self.high[..n - span.hi],
            };
            for k in lo..n.min(lo + self.chunk) {
                e += self.lists.row(&self.qs, &mut w, &self.cells.side, k);
            }
            for (at, w) in [(lo, &mut *w.low), (span.hi, &mut *w.high)] {
                for (g, p) in self.gs[at..].iter_mut().zip(w.iter_mut()) {
                    for k in 0..3 {
                        g[k] += p[k];
                    }
                    *p = [0.0; 3];
                }
            }
        }
        e
    }

    /// One step; its energy (at the step's start).
    fn step(&mut self, walk: Walk) -> f64 {
        let n = self.q.len();
        let mut e = 0.0;
        match walk {
            Walk::Passes => {
                for i in 0..n {
                    e += self
                        .lists
                        .row(&self.q, &mut self.g[..], &self.cells.side, i);
                }
            }
            Walk::Fused => {
                for i in 0..n {
                    e += self
                        .lists
                        .row(&self.q, &mut self.g[..], &self.cells.side, i);
                    self.kick_drift(i);
                }
                return e;
            }
            Walk::Sorted | Walk::Windows => {
                for (k, &b) in self.order.iter().enumerate() {
                    self.qs[k] = self.q[b as usize];
                }
                if walk == Walk::Sorted {
                    for k in 0..n {
                        e += self
                            .lists
                            .row(&self.qs, &mut self.gs[..], &self.cells.side, k);
                    }
                } else {
                    e += self.windows();
                }
                for (k, &b) in self.order.iter().enumerate() {
                    self.g[b as usize] = self.gs[k];
                    self.gs[k] = [0.0; 3];
                }
            }
        }
        for i in 0..n {
            self.kick_drift(i);
        }
        e
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let data = PathBuf::from(args.next().expect("DATA"));
    let steps: usize = args.next().map_or(100, |s| s.parse().expect("STEPS"));
    let rounds: usize = args.next().map_or(3, |s| s.parse().expect("ROUNDS"));
    let all = [Walk::Passes, Walk::Fused, Walk::Sorted, Walk::Windows];
    let walks: Vec<Walk> = args.next().map_or(all.to_vec(), |s| {
        s.split(',')
            .map(|w| {
                *all.iter()
                    .find(|a| format!("{a:?}").eq_ignore_ascii_case(w))
                    .unwrap_or_else(|| panic!("WALKS: passes, fused, sorted or windows, not {w}"))
            })
            .collect()
    });
    let chunk: usize = args.next().map_or(4096, |s| s.parse().expect("CHUNK"));
    let file = DataFile::read(&data).unwrap_or_else(|e| panic!("{e}"));
    let mut start = Melt::new(&file);
    start.chunk = chunk;
    let n = start.q.len();
    println!("{n} beads, {steps} steps, chunks of {chunk} rows");
    for round in 1..=rounds {
        let mut line = format!("round {round}:");
        let mut ends = Vec::new();
        for &walk in &walks {
            let mut m = start.clone();
            m.build(walk);
            let (mut stepping, mut building, mut energy) = (0.0, 0.0, 0.0);
            for _ in 0..steps {
                let t = Instant::now();
                energy += m.step(walk);
                stepping += t.elapsed().as_secs_f64();
                let t = Instant::now();
                if m.stale() {
                    m.build(walk);
                }
                building += t.elapsed().as_secs_f64();
            }
            line += &format!(
                "  {walk:?} {:.1} ns/bead-step ({} builds, {building:.2} s)",
                1e9 * stepping / (n * steps) as f64,
                m.builds
            );
            ends.push((walk, m.q, energy));
        }
        // Passes and Fused: the same arithmetic in the same order, so the same bits. Sorted
        // and Windows: the same sums in other orders, so the same energies to rounding.
        let find = |w: Walk| ends.iter().find(|e| e.0 == w);
        if let (Some(a), Some(b)) = (find(Walk::Passes), find(Walk::Fused)) {
            assert!(
                a.1 == b.1 && a.2 == b.2,
                "the fused step differs from the passes"
            );
        }
        for (walk, _, energy) in &ends[1..] {
            let drift = (energy - ends[0].2).abs() / ends[0].2.abs();
            assert!(drift < 1e-9, "{walk:?}'s energies differ by {drift:e}");
        }
        println!("{line}");
    }
}
