//! Piecewise terms: `if`/`else` on a comparison decided at run time, each branch differentiated
//! on its own. The generated value, gradient, Hessian and third contraction equal hand-written
//! derivatives of the branch the point is in (both sides of every boundary); an assembled
//! cut-and-shifted Lennard-Jones pair term equals the direct double loop, and its SIMD passes
//! give the scalar path's bits.

use crate::support::assembled::Melt;
use crate::support::fixtures::Rng;
use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::simd::Isa;
use zs_runtime::{Model, Potential, mechanical_system};

/// A one-sided harmonic wall at `q0 = 0` plus a quartic: `V = ½k q0² [q0 < 0] + c q1⁴ + q0 q1`.
struct Wall {
    k: f64,
    c: f64,
}

#[mechanical_system]
impl Wall {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        let wall = if q[0] < 0.0 {
            0.5 * self.k * q[0] * q[0]
        } else {
            0.0
        };
        wall + self.c * q[1].powi(4) + q[0] * q[1]
    }
}

#[test]
fn each_branch_is_differentiated_on_its_own() {
    let w = Wall { k: 7.0, c: 0.3 };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut sides = [0; 2];
    for _ in 0..200 {
        let q = [rng.next(), rng.next()];
        let a = [rng.next(), rng.next()];
        let inside = q[0] < 0.0;
        sides[usize::from(inside)] += 1;
        let k = if inside { w.k } else { 0.0 };
        let v = 0.5 * k * q[0] * q[0] + w.c * q[1].powi(4) + q[0] * q[1];
        let g = [k * q[0] + q[1], 4.0 * w.c * q[1].powi(3) + q[0]];
        let h = [[k, 1.0], [1.0, 12.0 * w.c * q[1] * q[1]]];
        let t = [0.0, 24.0 * w.c * q[1] * a[1] * a[1]];
        assert!((w.potential(&q) - v).abs() <= 1e-15 * (1.0 + v.abs()));
        let (gv, gg) = w.value_gradient(&q);
        assert_eq!(gv.to_bits(), w.potential(&q).to_bits());
        let gh = w.hessian(&q);
        let gt = w.third_contraction(&q, &a);
        for i in 0..2 {
            assert!(
                (gg[i] - g[i]).abs() <= 1e-14 * (1.0 + g[i].abs()),
                "∂{i} at {q:?}"
            );
            assert!(
                (gt[i] - t[i]).abs() <= 1e-14 * (1.0 + t[i].abs()),
                "T{i} at {q:?}"
            );
            for j in 0..2 {
                assert!((gh[i][j] - h[i][j]).abs() <= 1e-14 * (1.0 + h[i][j].abs()));
            }
        }
    }
    assert!(
        sides[0] > 50 && sides[1] > 50,
        "both sides visited: {sides:?}"
    );
}

/// LAMMPS's `pair_style lj/cut` with `pair_modify shift yes`: `4ε((σ/r)¹² − (σ/r)⁶) − E(rc)`
/// below `rc`, zero beyond (σ = ε = 1), written out: the double loop's reference for the pair
/// term of [`Melt`] (assembled here without bonds).
struct CutLj {
    rc: f64,
}

impl CutLj {
    fn energy(&self, r2: f64) -> f64 {
        if r2 < self.rc * self.rc {
            let s6 = 1.0 / (r2 * r2 * r2);
            let c6 = 1.0 / self.rc.powi(6);
            4.0 * (s6 * s6 - s6) - 4.0 * (c6 * c6 - c6)
        } else {
            0.0
        }
    }
}

#[test]
fn a_cut_and_shifted_pair_term_equals_the_double_loop_on_every_path() {
    let n = 37;
    let rc = 1.5;
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    // A loose random cluster: many pairs on each side of the cutoff, none overlapping.
    let mut q: Vec<f64> = Vec::new();
    while q.len() < 3 * n {
        let p = [
            2.0 + 2.0 * rng.next(),
            2.0 + 2.0 * rng.next(),
            2.0 + 2.0 * rng.next(),
        ];
        let far = q
            .chunks(3)
            .all(|o| (0..3).map(|d| (o[d] - p[d]).powi(2)).sum::<f64>() > 0.8);
        if far {
            q.extend(p);
        }
    }
    let lj = CutLj { rc };
    let (mut e, mut g, mut inside) = (0.0, vec![0.0; 3 * n], 0);
    for i in 0..n {
        for j in i + 1..n {
            let d: Vec<f64> = (0..3).map(|k| q[3 * j + k] - q[3 * i + k]).collect();
            let r2: f64 = d.iter().map(|x| x * x).sum();
            e += lj.energy(r2);
            if r2 < rc * rc {
                inside += 1;
                let s6 = 1.0 / (r2 * r2 * r2);
                let de_dr2 = 4.0 * (-6.0 * s6 * s6 + 3.0 * s6) / r2;
                for k in 0..3 {
                    g[3 * j + k] += 2.0 * de_dr2 * d[k];
                    g[3 * i + k] -= 2.0 * de_dr2 * d[k];
                }
            }
        }
    }
    let pairs = n * (n - 1) / 2;
    assert!(
        inside > 20 && pairs - inside > 200,
        "{inside} of {pairs} pairs inside"
    );
    let scale = g.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let eval = |isa: Isa, parallel: bool| {
        let sys = Assembled::new(Melt { rc }, Topology::new(n))
            .expect("a valid topology")
            .with_simd(isa)
            .with_parallel(parallel);
        let mut gz = vec![0.0; 3 * n];
        let v = sys.value_gradient_into(&q, &mut gz);
        (v, gz)
    };
    let (v0, g0) = eval(Isa::Scalar, false);
    assert!((v0 - e).abs() <= 1e-12 * e.abs(), "{v0} vs {e}");
    for (a, b) in g0.iter().zip(&g) {
        assert!((a - b).abs() <= 1e-12 * scale, "{a} vs {b}");
    }
    for isa in Isa::available() {
        for parallel in [false, true] {
            let (v, gz) = eval(isa, parallel);
            assert_eq!(v.to_bits(), v0.to_bits(), "{isa:?}, parallel {parallel}");
            let same = gz.iter().zip(&g0).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{isa:?}, parallel {parallel}");
        }
    }
}
