//! The Ewald sum: rock salt has its Madelung energy and one charge in a cubic box its Wigner
//! energy (each from the real-space sum over images written here and `Ewald`'s reciprocal,
//! self and background terms, at two splittings); the gradient and the Hessian's product equal
//! central differences, the Hessian is symmetric and annihilates a rigid translation; bad
//! parameters are typed errors.

use crate::support::fixtures::Rng;
use zs_runtime::ewald::{Ewald, EwaldError, EwaldParameters};
use zs_runtime::special::erfc;

/// The real-space sum `½ Σ_{i,j,n}' q_i q_j erfc(α|r_ij + nL|)/|r_ij + nL|` over the images
/// within `rc` (the pair with itself in the home box left out).
fn real_space(q: &[f64], charges: &[f64], sides: [f64; 3], alpha: f64, rc: f64) -> f64 {
    let n = charges.len();
    let mut e = 0.0;
    for i in 0..n {
        for j in 0..n {
            for (ix, iy, iz) in images() {
                if i == j && (ix, iy, iz) == (0, 0, 0) {
                    continue;
                }
                let shift = [ix, iy, iz];
                let d: [f64; 3] = core::array::from_fn(|a| {
                    q[3 * j + a] - q[3 * i + a] + f64::from(shift[a]) * sides[a]
                });
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                if r < rc {
                    e += 0.5 * charges[i] * charges[j] * erfc(alpha * r) / r;
                }
            }
        }
    }
    e
}

fn images() -> impl Iterator<Item = (i32, i32, i32)> {
    (-1..=1).flat_map(|x| (-1..=1).flat_map(move |y| (-1..=1).map(move |z| (x, y, z))))
}

#[test]
fn rock_salt_has_its_madelung_energy_at_every_splitting() {
    // 2 × 2 × 2 conventional cells, nearest neighbours 1 apart: 64 ions of charge ±1.
    const MADELUNG: f64 = 1.747_564_594_633_182;
    let (mut q, mut charges) = (Vec::new(), Vec::new());
    for i in 0..4 {
        for j in 0..4 {
            for k in 0..4 {
                q.extend([i, j, k].map(f64::from));
                charges.push(if (i + j + k) % 2 == 0 { 1.0 } else { -1.0 });
            }
        }
    }
    let sides = [4.0; 3];
    let want = -0.5 * 64.0 * MADELUNG;
    for (rc, tolerance) in [(2.0, 1e-12), (1.7, 1e-10)] {
        let params = EwaldParameters::from_tolerance(rc, sides, tolerance).expect("valid");
        let mut ewald = Ewald::new(charges.clone(), sides, params).expect("valid");
        let e = ewald.energy(&q) + real_space(&q, &charges, sides, params.alpha, rc);
        assert!(
            ((e - want) / want).abs() < 10.0 * tolerance.max(1e-13),
            "rc {rc}, δ {tolerance}: {e} against {want}"
        );
        // Every ion of a perfect crystal is at a minimum: no force.
        let mut g = vec![0.0; q.len()];
        ewald.energy_gradient(&q, &mut g);
        assert!(g.iter().all(|x| x.abs() < 1e-9), "{:?}", &g[..6]);
    }
}

#[test]
fn one_charge_in_a_cubic_box_has_the_wigner_energy_wherever_it_is() {
    // E = −ξ q² / (2L), ξ = 2.837297479 (the simple cubic lattice of charges in a neutralising
    // background): the background term is what makes a charged box finite.
    const XI: f64 = 2.837_297_479_480_6;
    let side = 3.0;
    let want = -XI / (2.0 * side);
    for x in [[0.0, 0.0, 0.0], [1.1, 2.9, 0.4]] {
        let params = EwaldParameters::from_tolerance(1.5, [side; 3], 1e-12).expect("valid");
        let mut ewald = Ewald::new(vec![1.0], [side; 3], params).expect("valid");
        let e = ewald.energy(&x) + real_space(&x, &[1.0], [side; 3], params.alpha, 1.5);
        assert!(((e - want) / want).abs() < 1e-10, "{e} against {want}");
    }
}

#[test]
fn gradient_and_hessian_products_equal_differences_and_the_hessian_is_exact() {
    let mut rng = Rng(0xE3A1_D5C0_0000_0041);
    let sides = [3.1, 3.7, 4.3];
    let n = 8;
    let mut charges: Vec<f64> = (0..n).map(|_| rng.next()).collect();
    let mean = charges.iter().sum::<f64>() / n as f64;
    charges.iter_mut().for_each(|c| *c -= mean);
    let q: Vec<f64> = (0..3 * n)
        .map(|i| sides[i % 3] * 0.5 * (1.0 + rng.next()))
        .collect();
    let params = EwaldParameters::from_tolerance(1.5, sides, 1e-6).expect("valid");
    let mut ewald = Ewald::new(charges, sides, params).expect("valid");
    assert!(ewald.vectors() > 100);
    let mut g = vec![0.0; 3 * n];
    let e = ewald.energy_gradient(&q, &mut g);
    assert_eq!(e.to_bits(), ewald.energy(&q).to_bits());
    let scale = g.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    // Newton's third law: the forces sum to zero.
    for a in 0..3 {
        let sum: f64 = (0..n).map(|j| g[3 * j + a]).sum();
        assert!(sum.abs() < 1e-13 * scale * n as f64, "axis {a}: {sum}");
    }
    let h = 1e-5;
    let shifted = |i: usize, by: f64| {
        let mut p = q.clone();
        p[i] += by;
        p
    };
    let mut hessian = vec![vec![0.0; 3 * n]; 3 * n];
    for i in 0..3 * n {
        let (up, down) = (shifted(i, h), shifted(i, -h));
        let fd = (ewald.energy(&up) - ewald.energy(&down)) / (2.0 * h);
        assert!((g[i] - fd).abs() < 1e-7 * scale, "∂{i}: {} vs {fd}", g[i]);
        // H e_i against differences of the gradient.
        let mut unit = vec![0.0; 3 * n];
        unit[i] = 1.0;
        ewald.hessian_times(&q, &unit, &mut hessian[i]);
        let (mut gu, mut gd) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
        ewald.energy_gradient(&up, &mut gu);
        ewald.energy_gradient(&down, &mut gd);
        for j in 0..3 * n {
            let fd = (gu[j] - gd[j]) / (2.0 * h);
            let hs = hessian[i][j].abs().max(scale);
            assert!(
                (hessian[i][j] - fd).abs() < 1e-6 * hs,
                "H[{j}][{i}]: {} vs {fd}",
                hessian[i][j]
            );
        }
    }
    // Symmetric, and a rigid translation costs nothing: H (t, t, …, t) = 0.
    let big = hessian
        .iter()
        .flatten()
        .fold(0.0_f64, |m, x| m.max(x.abs()));
    for (i, row) in hessian.iter().enumerate() {
        for (j, column) in hessian.iter().enumerate().take(i) {
            assert!((row[j] - column[i]).abs() < 1e-13 * big);
        }
    }
    let t: Vec<f64> = (0..3 * n).map(|i| [0.3, -1.2, 0.7][i % 3]).collect();
    let mut ht = vec![0.0; 3 * n];
    ewald.hessian_times(&q, &t, &mut ht);
    assert!(
        ht.iter().all(|x| x.abs() < 1e-12 * big * n as f64),
        "{ht:?}"
    );
    // The product with a random vector is the dense Hessian's.
    let v: Vec<f64> = (0..3 * n).map(|_| rng.next()).collect();
    let mut hv = vec![0.0; 3 * n];
    ewald.hessian_times(&q, &v, &mut hv);
    for j in 0..3 * n {
        let dense: f64 = (0..3 * n).map(|i| hessian[i][j] * v[i]).sum();
        assert!((hv[j] - dense).abs() < 1e-12 * big * n as f64);
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let sides = [3.0, 3.0, 3.0];
    for tol in [0.0, 1.0, -1e-3, f64::NAN] {
        assert!(matches!(
            EwaldParameters::from_tolerance(1.0, sides, tol),
            Err(EwaldError::Tolerance(_))
        ));
    }
    assert!(matches!(
        EwaldParameters::from_tolerance(1.6, sides, 1e-5),
        Err(EwaldError::Cutoff { .. })
    ));
    assert!(matches!(
        EwaldParameters::from_tolerance(1.0, [3.0, -1.0, 3.0], 1e-5),
        Err(EwaldError::Box(_))
    ));
    assert!(matches!(
        EwaldParameters::from_tolerance(1e-3, [300.0; 3], 1e-15),
        Err(EwaldError::TooManyVectors(_))
    ));
    let params = EwaldParameters::from_tolerance(1.0, sides, 1e-5).expect("valid");
    assert!(matches!(
        Ewald::new(vec![1.0, f64::NAN], sides, params),
        Err(EwaldError::Charge { site: 1, .. })
    ));
}
