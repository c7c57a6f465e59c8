//! Velocity Verlet's two kicks on long vectors, the two ways of keeping the force between
//! steps (BENCHMARKS.md, "What a step measures for its observers"): storing the acceleration
//! `a = -g/m` in the second kick for the next step's first (read `g` and `v`, write `a` and
//! `v`), or keeping the gradient `g` and making `a` in both kicks (read `g` and `v`, write `v`;
//! one division more); and a third way that keeps no state replaced, the kick–drift written
//! over `q` and `v` themselves (two streams fewer: what keeping the replaced state costs). A
//! model of the passes in `zs-runtime`'s `verlet.rs` — masses in blocks of 255 from a buffer
//! on the stack as `Masses::in_blocks` gives them, the gradient's own write between the
//! kicks — on the widest lanes (`simd::widest`, every function inlined into it), one thread;
//! `n` coordinates (96 000, 768 000, 2 592 000: the melts of 32 000, 256 000 and 864 000
//! beads), the three ways alternated over seven rounds, medians:
//!
//! ```text
//! cargo run --release -p zs-bench --bin verlet_kicks
//! ```

use std::hint::black_box;
use std::time::Instant;

use zs_runtime::simd::widest;

const BLOCK: usize = 255;

struct Vectors {
    v: Vec<f64>,
    q: Vec<f64>,
    force: Vec<f64>,
    vh: Vec<f64>,
    x1: Vec<f64>,
}

impl Vectors {
    fn new(n: usize) -> Self {
        Self {
            v: vec![0.1; n],
            q: vec![1.0; n],
            force: vec![0.0; n],
            vh: vec![0.0; n],
            x1: vec![0.0; n],
        }
    }

    /// The model's gradient, written into `force` (the same write for both ways).
    #[inline(always)]
    fn gradient(&mut self) {
        for (i, g) in self.force.iter_mut().enumerate() {
            *g = (i & 7) as f64 * 1e-3;
        }
    }

    /// `f(block)` over blocks of [`BLOCK`] coordinates.
    #[inline(always)]
    fn blocks(n: usize, mut f: impl FnMut(core::ops::Range<usize>)) {
        let mut o = 0;
        while o < n {
            let e = (o + BLOCK).min(n);
            f(o..e);
            o = e;
        }
    }

    /// The acceleration stored: `force` holds `a` between steps.
    #[inline(always)]
    fn step_storing_a(&mut self, h: f64, m: &[f64; BLOCK]) {
        let half = 0.5 * h;
        let terms = self.vh.iter_mut().zip(self.x1.iter_mut());
        for ((vh, x1), ((v, q), a)) in terms.zip(self.v.iter().zip(&self.q).zip(&self.force)) {
            *vh = v + half * a;
            *x1 = q + h * *vh;
        }
        self.gradient();
        let (force, vh) = (&mut self.force, &mut self.vh);
        Self::blocks(force.len(), |r| {
            for ((a, v1), m) in force[r.clone()].iter_mut().zip(&mut vh[r]).zip(m) {
                *a = -*a / m;
                *v1 += half * *a;
            }
        });
        std::mem::swap(&mut self.v, &mut self.vh);
        std::mem::swap(&mut self.q, &mut self.x1);
    }

    /// The gradient kept: `force` holds `g` between steps.
    #[inline(always)]
    fn step_keeping_g(&mut self, h: f64, m: &[f64; BLOCK]) {
        let half = 0.5 * h;
        let (vh, x1, v, q, g) = (&mut self.vh, &mut self.x1, &self.v, &self.q, &self.force);
        Self::blocks(g.len(), |r| {
            let terms = vh[r.clone()].iter_mut().zip(x1[r.clone()].iter_mut());
            let from = v[r.clone()].iter().zip(&q[r.clone()]).zip(&g[r]);
            for (((vh, x1), ((v, q), g)), m) in terms.zip(from).zip(m) {
                let a = -g / m;
                *vh = v + half * a;
                *x1 = q + h * *vh;
            }
        });
        self.gradient();
        let (g, vh) = (&self.force, &mut self.vh);
        Self::blocks(g.len(), |r| {
            for ((g, v1), m) in g[r.clone()].iter().zip(&mut vh[r]).zip(m) {
                *v1 += half * (-g / m);
            }
        });
        std::mem::swap(&mut self.v, &mut self.vh);
        std::mem::swap(&mut self.q, &mut self.x1);
    }

    /// The gradient kept, and the kick–drift written over `q` and `v` themselves: no state
    /// replaced is kept (what `VelocityVerlet` keeps for the driver's guards, its undo and a
    /// refused step's state left unchanged) — what keeping it costs.
    #[inline(always)]
    fn step_in_place(&mut self, h: f64, m: &[f64; BLOCK]) {
        let half = 0.5 * h;
        let (v, q, g) = (&mut self.v, &mut self.q, &self.force);
        Self::blocks(g.len(), |r| {
            let terms = v[r.clone()].iter_mut().zip(q[r.clone()].iter_mut());
            for ((v, q), (g, m)) in terms.zip(g[r].iter().zip(m)) {
                *v += half * (-g / m);
                *q += h * *v;
            }
        });
        self.gradient();
        let (g, v) = (&self.force, &mut self.v);
        Self::blocks(g.len(), |r| {
            for ((g, v1), m) in g[r.clone()].iter().zip(&mut v[r]).zip(m) {
                *v1 += half * (-g / m);
            }
        });
    }
}

/// Seconds per call of `step`, over `reps` calls, each inside the widest instruction set's
/// entry (`step` inlined there: mark it `#[inline(always)]`).
fn per_step(reps: usize, mut step: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        // A closure of its own, inlined, not `&mut step`: through `&mut F`'s call the step
        // is compiled apart, for the baseline target, and the two ways then take as long.
        #[allow(clippy::redundant_closure)]
        widest(
            #[inline(always)]
            || step(),
        );
    }
    t.elapsed().as_secs_f64() / reps as f64
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

fn main() {
    let m = [1.0_f64; BLOCK];
    for n in [96_000_usize, 768_000, 2_592_000] {
        let reps = (200_000_000 / n).max(20);
        let (mut a, mut g, mut p) = (Vectors::new(n), Vectors::new(n), Vectors::new(n));
        let (mut ta, mut tg, mut tp) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..7 {
            ta.push(per_step(
                reps,
                #[inline(always)]
                || a.step_storing_a(black_box(0.012), &m),
            ));
            tg.push(per_step(
                reps,
                #[inline(always)]
                || g.step_keeping_g(black_box(0.012), &m),
            ));
            tp.push(per_step(
                reps,
                #[inline(always)]
                || p.step_in_place(black_box(0.012), &m),
            ));
        }
        let (ta, tg, tp) = (median(ta), median(tg), median(tp));
        println!(
            "{n:>9} coordinates: acceleration stored {:.3} ms, gradient kept {:.3} ms per step \
             (the kicks and the gradient's write), kept / stored {:.3}; in place (no state \
             replaced kept) {:.3} ms, {:.3} of kept",
            ta * 1e3,
            tg * 1e3,
            tg / ta,
            tp * 1e3,
            tp / tg
        );
        black_box((&a.v, &g.v, &p.v));
    }
}
