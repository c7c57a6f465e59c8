//! The error functions in a `#[mechanical_system]` body: the real-space Ewald pair
//! `q_i q_j erfc(α r) / r` and the excluded pairs' correction `−q_i q_j erf(α r) / r`
//! (Essmann et al. 1995, eq. 2.2). The generated gradient and Hessian equal hand-written ones,
//! the third contraction equals central differences of the Hessian, at random points; an
//! assembled periodic system with the pair term under a cutoff equals the double loop over
//! nearest images, with the same bits on every SIMD path and thread schedule.

use crate::support::fixtures::Rng;
use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::simd::Isa;
use zs_runtime::special::{erf, erfc};
use zs_runtime::{Model, Potential, mechanical_system};

/// Two charges: the screened Coulomb pair of an Ewald sum plus the correction of an excluded
/// pair scaled by `keep` (`V = qq [erfc(αr) − keep · erf(αr)] / r`).
struct TwoCharges {
    qq: f64,
    alpha: f64,
    keep: f64,
}

#[mechanical_system]
impl TwoCharges {
    fn potential(&self, q: &[f64; 6]) -> f64 {
        let r = ((q[3] - q[0]).powi(2) + (q[4] - q[1]).powi(2) + (q[5] - q[2]).powi(2)).sqrt();
        self.qq * (erfc(self.alpha * r) - self.keep * erf(self.alpha * r)) / r
    }
}

/// `f(r) = qq [erfc(αr) − keep·erf(αr)] / r` and its first two derivatives, by hand:
/// with `g = 2α/√π e^{−α²r²}`, `(erfc(αr))' = −g` and `(erf(αr))' = g`.
fn radial(s: &TwoCharges, r: f64) -> [f64; 3] {
    let (a, qq, k) = (s.alpha, s.qq, s.keep);
    let e = erfc(a * r) - k * erf(a * r);
    let g = 2.0 * a / core::f64::consts::PI.sqrt() * (-a * a * r * r).exp();
    // d/dr of [erfc − k erf] is −(1 + k) g; of g it is −2α²r g.
    let de = -(1.0 + k) * g;
    let dde = (1.0 + k) * 2.0 * a * a * r * g;
    let f = qq * e / r;
    let f1 = qq * (de / r - e / (r * r));
    let f2 = qq * (dde / r - 2.0 * de / (r * r) + 2.0 * e / (r * r * r));
    [f, f1, f2]
}

#[test]
fn erfc_and_erf_are_differentiated_exactly() {
    let mut rng = Rng(0x5EED_E4A1_D000_0001);
    for case in 0..200 {
        let s = TwoCharges {
            qq: -0.8476 * 0.4238 * (1.0 + rng.next()),
            alpha: 0.2 + 0.2 * (rng.next() + 1.0),
            keep: if case % 2 == 0 { 0.0 } else { 1.0 },
        };
        let q: [f64; 6] = core::array::from_fn(|_| 2.0 * rng.next());
        let a: [f64; 6] = core::array::from_fn(|_| rng.next());
        let d: [f64; 3] = core::array::from_fn(|k| q[3 + k] - q[k]);
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let [f, f1, f2] = radial(&s, r);
        assert!((s.potential(&q) - f).abs() <= 1e-14 * f.abs().max(1e-3));
        // ∇_b = f' d/r; the Hessian's b-b block f'' d̂d̂ᵀ + f'/r (I − d̂d̂ᵀ), ± for a.
        let g = s.gradient(&q);
        let h = s.hessian(&q);
        let u: [f64; 3] = core::array::from_fn(|k| d[k] / r);
        let scale = f1.abs().max(f2.abs()).max(1e-3);
        for k in 0..3 {
            assert!((g[3 + k] - f1 * u[k]).abs() <= 1e-13 * scale, "case {case}");
            assert!((g[k] + f1 * u[k]).abs() <= 1e-13 * scale, "case {case}");
            for l in 0..3 {
                let delta = if k == l { 1.0 } else { 0.0 };
                let block = f2 * u[k] * u[l] + f1 / r * (delta - u[k] * u[l]);
                for (i, j, sign) in [(3, 3, 1.0), (0, 0, 1.0), (0, 3, -1.0), (3, 0, -1.0)] {
                    let got = h[i + k][j + l];
                    assert!(
                        (got - sign * block).abs() <= 1e-12 * scale / r.min(1.0),
                        "case {case}: H[{}][{}] = {got}, by hand {}",
                        i + k,
                        j + l,
                        sign * block
                    );
                }
            }
        }
        // a·V'''·a against central differences of the Hessian along a, contracted with a.
        let t = s.third_contraction(&q, &a);
        let e = 1e-5;
        let at = |sign: f64| -> [[f64; 6]; 6] {
            s.hessian(&core::array::from_fn(|i| q[i] + sign * e * a[i]))
        };
        let (up, down) = (at(1.0), at(-1.0));
        let t_scale = t.iter().fold(1e-6_f64, |m, x| m.max(x.abs()));
        for i in 0..6 {
            let fd: f64 = (0..6)
                .map(|j| (up[i][j] - down[i][j]) / (2.0 * e) * a[j])
                .sum();
            assert!(
                (t[i] - fd).abs() <= 1e-6 * t_scale,
                "case {case}: T[{i}] = {}, differences {fd}",
                t[i]
            );
        }
    }
}

/// The real-space Ewald pair of point charges by type (`charge[t]`), cut at `rc` (no shift:
/// the Ewald convention), in a periodic box.
struct ScreenedCoulomb {
    alpha: f64,
    rc: f64,
    charge: Vec<f64>,
}

#[mechanical_system]
impl ScreenedCoulomb {
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ta: usize, tb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < self.rc * self.rc {
            let r = r2.sqrt();
            self.charge[ta] * self.charge[tb] * erfc(self.alpha * r) / r
        } else {
            0.0
        }
    }
}

#[test]
fn a_periodic_screened_coulomb_pair_term_equals_the_double_loop_on_every_path() {
    let (n, side, rc, alpha) = (64, 9.0, 4.0, 0.7);
    let mut rng = Rng(0xC0FF_EE00_1234_5678);
    let mut q: Vec<f64> = Vec::new();
    let nearest = |x: f64| x - (x / side).round() * side;
    while q.len() < 3 * n {
        let p: [f64; 3] = core::array::from_fn(|_| side * (0.5 + 0.5 * rng.next()));
        let apart = q
            .chunks(3)
            .all(|o| (0..3).map(|d| nearest(o[d] - p[d]).powi(2)).sum::<f64>() > 0.9);
        if apart {
            q.extend(p);
        }
    }
    let charge = |b: usize| if b.is_multiple_of(2) { 1.0 } else { -1.0 };
    let (mut e, mut g, mut inside) = (0.0, vec![0.0; 3 * n], 0);
    for i in 0..n {
        for j in i + 1..n {
            let d: [f64; 3] = core::array::from_fn(|k| nearest(q[3 * j + k] - q[3 * i + k]));
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            if r < rc {
                inside += 1;
                let qq = charge(i) * charge(j);
                e += qq * erfc(alpha * r) / r;
                let gr =
                    2.0 * alpha / core::f64::consts::PI.sqrt() * (-alpha * alpha * r * r).exp();
                let f1 = qq * (-gr / r - erfc(alpha * r) / (r * r));
                for k in 0..3 {
                    g[3 * j + k] += f1 * d[k] / r;
                    g[3 * i + k] -= f1 * d[k] / r;
                }
            }
        }
    }
    assert!(inside > 300, "{inside} pairs inside the cutoff");
    let scale = g.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let topology = || {
        Topology::new(n)
            .periodic([side; 3])
            .cutoff(rc, 0.3)
            .types((0..n).map(|b| (b % 2) as u32))
    };
    let eval = |isa: Isa, parallel: bool| {
        let charge = vec![1.0, -1.0];
        let sys = Assembled::new(ScreenedCoulomb { alpha, rc, charge }, topology())
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
