//! Smooth PME: it converges to the plain Ewald sum as the mesh and the spline order grow; at
//! the parameters for a tolerance its reciprocal forces, and the whole Ewald forces with the
//! real-space part cut off, are within that tolerance of the converged sum;
//! its gradient and its Hessian's product equal central differences and the Hessian is
//! symmetric; its mesh sizes are FFT-friendly; bad parameters are typed errors; it gives the
//! same bits at every pool size.

use crate::support::fixtures::Rng;
use zs_runtime::ewald::{Ewald, EwaldError, EwaldParameters};
use zs_runtime::pme::{Pme, PmeParameters};

/// `n` neutral random charges in a box of `sides`, at random positions (some outside the box:
/// the mesh wraps them).
fn charges_in(rng: &mut Rng, n: usize, sides: [f64; 3]) -> (Vec<f64>, Vec<f64>) {
    let mut charges: Vec<f64> = (0..n).map(|_| rng.next()).collect();
    let mean = charges.iter().sum::<f64>() / n as f64;
    charges.iter_mut().for_each(|c| *c -= mean);
    let q = (0..3 * n)
        .map(|i| sides[i % 3] * 0.8 * rng.next())
        .collect();
    (charges, q)
}

/// The plain Ewald sum at `alpha`, converged: on each axis of side `L`, every `|n|` up to the
/// first whose factor `e^{−(π n/(α L))²}` is below `e^{−40}` (4·10⁻¹⁸, beneath the rounding of
/// the sum; `EwaldParameters::from_tolerance` stops at `δ`).
fn converged(alpha: f64, sides: [f64; 3]) -> EwaldParameters {
    let kmax = sides.map(|l| (alpha * l * 40f64.sqrt() / std::f64::consts::PI).ceil() as usize);
    EwaldParameters { alpha, kmax }
}

/// Relative energy difference and largest gradient difference over the largest gradient.
fn against_ewald(pme: &mut Pme, ewald: &mut Ewald, q: &[f64]) -> (f64, f64, f64) {
    let n3 = q.len();
    let (mut gp, mut ge) = (vec![0.0; n3], vec![0.0; n3]);
    let (ep, ee) = (
        pme.energy_gradient(q, &mut gp),
        ewald.energy_gradient(q, &mut ge),
    );
    let big = ge.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let worst = gp
        .iter()
        .zip(&ge)
        .fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
    let rms = (gp
        .iter()
        .zip(&ge)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / ge.iter().map(|b| b * b).sum::<f64>())
    .sqrt();
    (((ep - ee) / ee).abs(), worst / big, rms)
}

#[test]
fn pme_converges_to_the_ewald_sum_and_meets_its_tolerance() {
    let mut rng = Rng(0x5EED_0000_0000_0041);
    let sides = [9.0, 10.0, 11.0];
    let (charges, q) = charges_in(&mut rng, 60, sides);
    let rc = 4.0;
    let exact = converged(0.8, sides);
    let mut ewald = Ewald::new(charges.clone(), sides, exact).expect("valid");
    // A fine mesh and order 8 at the same α: the interpolation error all but gone.
    let fine = PmeParameters {
        alpha: exact.alpha,
        grid: [60, 64, 72],
        order: 8,
    };
    let mut pme = Pme::new(charges.clone(), sides, fine).expect("valid");
    let (de, dg, _) = against_ewald(&mut pme, &mut ewald, &q);
    assert!(de < 1e-9 && dg < 1e-8, "fine mesh: {de:e} {dg:e}");
    // Coarser meshes and lower orders are less accurate, monotonically.
    let mut last = dg;
    for (grid, order) in [([60, 64, 72], 6), ([30, 32, 36], 6), ([30, 32, 36], 4)] {
        let p = PmeParameters {
            alpha: exact.alpha,
            grid,
            order,
        };
        let mut pme = Pme::new(charges.clone(), sides, p).expect("valid");
        let (_, dg, _) = against_ewald(&mut pme, &mut ewald, &q);
        assert!(dg > last, "{grid:?} order {order}: {dg:e} after {last:e}");
        last = dg;
    }
    // The parameters for a tolerance: the RMS relative force error of the mesh within it,
    // against the sum converged at their own α.
    for tolerance in [5e-4, 1e-5] {
        let p = PmeParameters::from_tolerance(rc, sides, tolerance).expect("valid");
        let at_alpha = converged(p.alpha, sides);
        let mut reference = Ewald::new(charges.clone(), sides, at_alpha).expect("valid");
        let mut pme = Pme::new(charges.clone(), sides, p).expect("valid");
        let (_, _, rms) = against_ewald(&mut pme, &mut reference, &q);
        assert!(rms < tolerance, "δ = {tolerance:e}: RMS {rms:e}, {p:?}");
    }
}

#[test]
fn gradient_and_hessian_products_of_pme_equal_differences() {
    let mut rng = Rng(0x5EED_0000_0000_4100);
    let sides = [5.0, 5.5, 6.0];
    let n = 10;
    let (charges, q) = charges_in(&mut rng, n, sides);
    let params = PmeParameters {
        alpha: 0.9,
        grid: [12, 15, 16],
        order: 5,
    };
    let mut pme = Pme::new(charges, sides, params).expect("valid");
    let mut g = vec![0.0; 3 * n];
    let e = pme.energy_gradient(&q, &mut g);
    assert_eq!(e.to_bits(), pme.energy(&q).to_bits());
    let scale = g.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let h = 1e-5;
    let shifted = |i: usize, by: f64| {
        let mut p = q.clone();
        p[i] += by;
        p
    };
    let mut hessian = vec![vec![0.0; 3 * n]; 3 * n];
    for i in 0..3 * n {
        let (up, down) = (shifted(i, h), shifted(i, -h));
        let fd = (pme.energy(&up) - pme.energy(&down)) / (2.0 * h);
        assert!((g[i] - fd).abs() < 1e-7 * scale, "∂{i}: {} vs {fd}", g[i]);
        let mut unit = vec![0.0; 3 * n];
        unit[i] = 1.0;
        pme.hessian_times(&q, &unit, &mut hessian[i]);
        let (mut gu, mut gd) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
        pme.energy_gradient(&up, &mut gu);
        pme.energy_gradient(&down, &mut gd);
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
    let big = hessian
        .iter()
        .flatten()
        .fold(0.0_f64, |m, x| m.max(x.abs()));
    for (i, row) in hessian.iter().enumerate() {
        for (j, column) in hessian.iter().enumerate().take(i) {
            assert!((row[j] - column[i]).abs() < 1e-12 * big, "{i} {j}");
        }
    }
}

/// The splines, the spreading by slabs and the gathering run on the pool: energy, gradient and
/// Hessian product are the same bits on 1, 2 and 3 threads (several tasks of charges, slabs
/// of uneven size).
#[test]
fn pme_gives_the_same_bits_at_every_pool_size() {
    let mut rng = Rng(0x5EED_0000_0000_4101);
    let sides = [9.0, 8.0, 7.5];
    let n = 700;
    let (charges, q) = charges_in(&mut rng, n, sides);
    let v: Vec<f64> = (0..3 * n).map(|_| rng.next()).collect();
    let params = PmeParameters {
        alpha: 0.8,
        grid: [20, 18, 16],
        order: 5,
    };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        pool.install(|| {
            let mut pme = Pme::new(charges.clone(), sides, params).expect("valid");
            let (mut g, mut hv) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
            let e = pme.energy_gradient(&q, &mut g);
            pme.hessian_times(&q, &v, &mut hv);
            let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
            (e.to_bits(), bits(&g), bits(&hv))
        })
    };
    let one = run(1);
    assert!(one.1.iter().any(|&b| f64::from_bits(b) != 0.0));
    for threads in [2, 3] {
        assert!(run(threads) == one, "{threads} threads");
    }
}

#[test]
fn pme_meshes_are_fft_friendly_and_bad_parameters_are_typed_errors() {
    let sides = [31.0, 35.5, 47.3];
    for tolerance in [1e-2, 5e-4, 1e-6] {
        let p = PmeParameters::from_tolerance(9.0, sides, tolerance).expect("valid");
        for (k, l) in p.grid.into_iter().zip(sides) {
            let mut r = k;
            for f in [2, 3, 5, 7] {
                while r % f == 0 {
                    r /= f;
                }
            }
            assert_eq!(r, 1, "{k}");
            let want = 2.0 * p.alpha * l / (3.0 * tolerance.powf(0.2));
            assert!(
                k as f64 >= want && (k as f64) < 1.2 * want + 6.0,
                "{k} for {want}"
            );
        }
    }
    assert!(matches!(
        PmeParameters::from_tolerance(2.0, [1e4; 3], 1e-12),
        Err(EwaldError::GridTooLarge(_))
    ));
    assert!(matches!(
        PmeParameters::from_tolerance(20.0, sides, 1e-4),
        Err(EwaldError::Cutoff { .. })
    ));
    for (grid, order) in [([8, 8, 8], 3), ([8, 8, 8], 9), ([8, 4, 8], 5)] {
        let p = PmeParameters {
            alpha: 1.0,
            grid,
            order,
        };
        assert!(matches!(
            Pme::new(vec![1.0, -1.0], sides, p),
            Err(EwaldError::Mesh { .. })
        ));
    }
    let p = PmeParameters::from_tolerance(9.0, sides, 1e-3).expect("valid");
    assert!(matches!(
        Pme::new(vec![1.0, f64::INFINITY], sides, p),
        Err(EwaldError::Charge { site: 1, .. })
    ));
}

/// The gradient of the real-space Ewald sum over nearest-image pairs of different molecules
/// (`molecule[i]`) within `rc` (at most half the shortest side), `Σ q_i q_j erfc(αr)/r`, and of
/// the correction of the pairs within a molecule, `−Σ q_i q_j erf(αr)/r` (the reciprocal sum's
/// share of them taken back), added into `g`.
fn add_real_space_gradient(
    q: &[f64],
    charges: &[f64],
    molecule: impl Fn(usize) -> usize,
    sides: [f64; 3],
    alpha: f64,
    rc: f64,
    g: &mut [f64],
) {
    use zs_runtime::special::erfc;
    let n = charges.len();
    for i in 0..n {
        for j in i + 1..n {
            let d: [f64; 3] = core::array::from_fn(|a| {
                let e = q[3 * j + a] - q[3 * i + a];
                e - sides[a] * (e / sides[a]).round()
            });
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let within = molecule(i) == molecule(j);
            if r >= rc && !within {
                continue;
            }
            // d/dr [erfc(αr)/r] = −erfc(αr)/r² − 2α/√π e^{−α²r²}/r, and −erf = erfc − 1.
            let mut de = -erfc(alpha * r) / (r * r)
                - 2.0 * alpha / core::f64::consts::PI.sqrt() * (-(alpha * r).powi(2)).exp() / r;
            if within {
                de += 1.0 / (r * r);
            }
            de *= charges[i] * charges[j];
            for a in 0..3 {
                g[3 * j + a] += de * d[a] / r;
                g[3 * i + a] -= de * d[a] / r;
            }
        }
    }
}

#[test]
fn the_whole_ewald_force_at_a_tolerance_is_within_it_of_the_converged_sum() {
    // Water-like molecules (SPC/E's charges and shape) on a cubic lattice at water's density,
    // each turned at random: the part of the pairs beyond the cutoff, which the tolerance sets
    // through α, is most of the whole error, as in a water box. Turned at random, the molecules
    // make no hydrogen bonds and their forces are about half a liquid's, so that the same
    // absolute error is about twice as large a part of them: within 2δ here (and not with
    // OpenMM's α, `√(−ln 2δ)/rc`), within δ on a liquid (`pme_forces_on_data_spce_…` in
    // zs-systems' tests, ignored: it needs LAMMPS's data file).
    let mut rng = Rng(0x5EED_0000_0000_4142);
    let (per_side, spacing) = (5, 3.1);
    let sides = [per_side as f64 * spacing; 3];
    let (mut q, mut charges) = (Vec::new(), Vec::new());
    let unit = |v: [f64; 3]| {
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|x| x / n)
    };
    let (c, s) = (
        (0.5 * 109.47_f64.to_radians()).cos(),
        (0.5 * 109.47_f64.to_radians()).sin(),
    );
    for cell in 0..per_side * per_side * per_side {
        let o: [f64; 3] = core::array::from_fn(|a| {
            let k = [
                cell / (per_side * per_side),
                cell / per_side % per_side,
                cell % per_side,
            ][a];
            (k as f64 + 0.5) * spacing + 0.3 * (rng.next() - 0.5)
        });
        let a = unit(core::array::from_fn(|_| rng.next() - 0.5));
        let t = unit(core::array::from_fn(|_| rng.next() - 0.5));
        let dot = a[0] * t[0] + a[1] * t[1] + a[2] * t[2];
        let b = unit(core::array::from_fn(|k| t[k] - dot * a[k]));
        q.extend_from_slice(&o);
        for sign in [1.0, -1.0] {
            q.extend((0..3).map(|k| o[k] + c * a[k] + sign * s * b[k]));
        }
        charges.extend([-0.8476, 0.4238, 0.4238]);
    }
    let molecule = |i: usize| i / 3;
    let rc = 7.0;
    // The converged sum: real space to 1e-14 within the same cutoff, its reciprocal vectors
    // for that accuracy.
    let exact = EwaldParameters::from_tolerance(rc, sides, 1e-14).expect("valid");
    let mut ewald = Ewald::new(charges.clone(), sides, exact).expect("valid");
    let mut reference = vec![0.0; q.len()];
    ewald.energy_gradient(&q, &mut reference);
    add_real_space_gradient(
        &q,
        &charges,
        molecule,
        sides,
        exact.alpha,
        rc,
        &mut reference,
    );
    let norm = reference.iter().map(|x| x * x).sum::<f64>();
    for tolerance in [5e-4, 1e-4, 1e-5] {
        let p = PmeParameters::from_tolerance(rc, sides, tolerance).expect("valid");
        let mut pme = Pme::new(charges.clone(), sides, p).expect("valid");
        let mut g = vec![0.0; q.len()];
        pme.energy_gradient(&q, &mut g);
        add_real_space_gradient(&q, &charges, molecule, sides, p.alpha, rc, &mut g);
        let error = g
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>();
        let rms = (error / norm).sqrt();
        assert!(
            rms < 2.0 * tolerance,
            "δ = {tolerance:e}: RMS relative force error {rms:e}, {p:?}"
        );
    }
}
