//! Would a step whose data stay in the caches lower the growth of a Kremer–Grest step's time
//! per bead with size? A plain, scalar, one-thread melt step written twice, independently of
//! `zs-runtime`'s engine, measures it:
//!
//! - `passes`: what an engine of separate passes does (zs's and LAMMPS's): the gradient zeroed,
//!   the half list's pairs, the bonds, then a kick and a drift over the whole state;
//! - `fused`: one pass. With a half list whose pairs `(i, j)` all have `j > i`, walked in
//!   increasing `i`, body `i` has every contribution to its force once row `i` is done (the
//!   rows before it held the pairs `(k, i)`, `k < i`), and no later row reads its position (a
//!   later row `k` reads only `j > k > i`). So it is kicked, drifted and its gradient zeroed
//!   for the next step right there, while its lines are still in the cache: leapfrog's
//!   `v ← v − h∇V(q)`, `q ← q + hv` (the kick–drift of velocity Verlet's consecutive steps),
//!   the same arithmetic in the same order as `passes`, bit for bit (checked at the end).
//!
//! LJ cut at 2^(1/6) and shifted, FENE bonds (K = 30, R0 = 1.5) with their own WCA term, the
//! bonded pairs out of the list (LAMMPS's `special_bonds fene`), unit masses; the list (cutoff
//! plus a skin of 0.4) rebuilt by cells when a bead has moved more than half the skin, its
//! time reported apart. The energy is summed every step, as a thermostat or an observer would
//! read it. Both variants alternate, `ROUNDS` times; the steps' seconds (rebuilds apart) are
//! printed per round.
//!
//! ```text
//! cargo run --release -p zs-bench --bin kg_fused -- DATA STEPS [ROUNDS]
//! ```
use std::path::PathBuf;
use std::time::Instant;

use zs_runtime::lammps::DataFile;

const RC2: f64 = 1.259_921_049_894_873_2; // 2^(1/3): (2^(1/6))²
const SKIN: f64 = 0.4;
const K: f64 = 30.0;
const R0: f64 = 1.5;
const H: f64 = 0.012;

/// The melt: positions, velocities, gradient, box, each body's bonded partners above it.
#[derive(Clone)]
struct Melt {
    q: Vec<[f64; 3]>,
    v: Vec<[f64; 3]>,
    g: Vec<[f64; 3]>,
    side: [f64; 3],
    /// Body `i`'s bonded partners above it: `bond[bond_at[i] .. bond_at[i + 1]]`.
    bond_at: Vec<u32>,
    bond: Vec<u32>,
    /// The half list: row `i` is `partner[row_at[i] .. row_at[i + 1]]`, every partner `> i`.
    row_at: Vec<u32>,
    partner: Vec<u32>,
    /// Positions at the last build.
    at_build: Vec<[f64; 3]>,
    builds: usize,
}

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
    (4.0 * s6 * (s6 - 1.0) + 1.0, 24.0 * s6 * (2.0 * s6 - 1.0) / r2)
}

/// FENE energy and `-(dV/dr)/r`, its WCA term included.
#[inline(always)]
fn fene(r2: f64) -> (f64, f64) {
    let x = 1.0 - r2 / (R0 * R0);
    let (e, f) = wca(r2);
    (e - 0.5 * K * R0 * R0 * x.ln(), f - K / x)
}

impl Melt {
    fn new(data: &DataFile) -> Self {
        let n = data.len();
        let side = data.box_lengths();
        let mut bonds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for b in &data.bonds {
            let (i, j) = (b.atoms[0].min(b.atoms[1]), b.atoms[0].max(b.atoms[1]));
            bonds[i].push(j as u32);
        }
        let mut bond_at = vec![0u32];
        let mut bond = Vec::new();
        for b in &bonds {
            bond.extend_from_slice(b);
            bond_at.push(bond.len() as u32);
        }
        let mut m = Melt {
            q: data.positions.clone(),
            v: data.velocities.clone(),
            g: vec![[0.0; 3]; n],
            side,
            bond_at,
            bond,
            row_at: Vec::new(),
            partner: Vec::new(),
            at_build: Vec::new(),
            builds: 0,
        };
        m.build();
        m
    }

    /// The half list by cells of at least `rc + skin`, rows in body order.
    fn build(&mut self) {
        let n = self.q.len();
        let reach = RC2.sqrt() + SKIN;
        let cells = self.side.map(|s| ((s / reach) as usize).max(3));
        let cell_of = |p: &[f64; 3]| -> [usize; 3] {
            [0, 1, 2].map(|k| {
                let f = p[k] / self.side[k];
                let w = f - f.floor();
                ((w * cells[k] as f64) as usize).min(cells[k] - 1)
            })
        };
        let index = |c: [usize; 3]| (c[2] * cells[1] + c[1]) * cells[0] + c[0];
        let total = cells[0] * cells[1] * cells[2];
        let mut start = vec![0u32; total + 1];
        let home: Vec<usize> = self.q.iter().map(|p| index(cell_of(p))).collect();
        for &c in &home {
            start[c + 1] += 1;
        }
        for c in 0..total {
            start[c + 1] += start[c];
        }
        let mut fill = start.clone();
        let mut members = vec![0u32; n];
        for (i, &c) in home.iter().enumerate() {
            members[fill[c] as usize] = i as u32;
            fill[c] += 1;
        }
        self.row_at.clear();
        self.partner.clear();
        self.row_at.push(0);
        let r2max = reach * reach;
        for i in 0..n {
            let c = cell_of(&self.q[i]);
            let bonded = &self.bond[self.bond_at[i] as usize..self.bond_at[i + 1] as usize];
            for dz in 0..3 {
                for dy in 0..3 {
                    for dx in 0..3 {
                        let d = [dx, dy, dz];
                        let nc = [0, 1, 2].map(|k| (c[k] + cells[k] + d[k] - 1) % cells[k]);
                        let ci = index(nc);
                        for &j in &members[start[ci] as usize..start[ci + 1] as usize] {
                            if j as usize <= i || bonded.contains(&j) {
                                continue;
                            }
                            let s = separation(&self.q[i], &self.q[j as usize], &self.side);
                            if s[0] * s[0] + s[1] * s[1] + s[2] * s[2] < r2max {
                                self.partner.push(j);
                            }
                        }
                    }
                }
            }
            self.row_at.push(self.partner.len() as u32);
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

    /// Row `i`'s pairs and bonds into `g` (`i`'s and its partners'); its energy.
    #[inline(always)]
    fn row(&mut self, i: usize) -> f64 {
        let qi = self.q[i];
        let mut gi = [0.0; 3];
        let mut e = 0.0;
        let (a, b) = (self.row_at[i] as usize, self.row_at[i + 1] as usize);
        for t in a..b {
            let j = self.partner[t] as usize;
            let s = separation(&qi, &self.q[j], &self.side);
            let (ej, f) = wca(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
            e += ej;
            for k in 0..3 {
                gi[k] -= f * s[k];
                self.g[j][k] += f * s[k];
            }
        }
        for t in self.bond_at[i] as usize..self.bond_at[i + 1] as usize {
            let j = self.bond[t] as usize;
            let s = separation(&qi, &self.q[j], &self.side);
            let (ej, f) = fene(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
            e += ej;
            for k in 0..3 {
                gi[k] -= f * s[k];
                self.g[j][k] += f * s[k];
            }
        }
        for k in 0..3 {
            self.g[i][k] += gi[k];
        }
        e
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

    /// One step in separate passes; its energy (at the step's start).
    fn step_passes(&mut self) -> f64 {
        let n = self.q.len();
        let mut e = 0.0;
        for i in 0..n {
            e += self.row(i);
        }
        for i in 0..n {
            self.kick_drift(i);
        }
        e
    }

    /// One step in one pass.
    fn step_fused(&mut self) -> f64 {
        let mut e = 0.0;
        for i in 0..self.q.len() {
            e += self.row(i);
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
    let file = DataFile::read(&data).unwrap_or_else(|e| panic!("{e}"));
    let start = Melt::new(&file);
    let n = start.q.len();
    println!("{n} beads, {steps} steps, {} pairs in the first list", start.partner.len());
    let mut last = Vec::new();
    for round in 1..=rounds {
        let mut line = format!("round {round}:");
        let mut ends = Vec::new();
        for (name, fused) in [("passes", false), ("fused", true)] {
            let mut m = start.clone();
            m.builds = 0;
            let (mut stepping, mut building, mut energy) = (0.0, 0.0, 0.0);
            for _ in 0..steps {
                let t = Instant::now();
                energy += if fused { m.step_fused() } else { m.step_passes() };
                stepping += t.elapsed().as_secs_f64();
                let t = Instant::now();
                if m.stale() {
                    m.build();
                }
                building += t.elapsed().as_secs_f64();
            }
            line += &format!(
                "  {name} {stepping:.3} s ({:.1} ns/bead-step; {} builds, {building:.3} s)",
                1e9 * stepping / (n * steps) as f64,
                m.builds
            );
            ends.push((m.q, energy));
        }
        assert!(ends[0] == ends[1], "the two variants differ");
        last = ends;
        println!("{line}");
    }
    println!("energy sum {:.12e}: the same bits from both", last[0].1);
}
