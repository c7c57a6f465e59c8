//! Normal modes of exactly rigid water molecules (`zs_systems::water::rigid_modes`).

use zs_runtime::assembly::Assembled;
use zs_runtime::minimize::Lbfgs;
use zs_systems::water::rigid_modes::*;
use zs_systems::water::{self, Water};

/// Three waters at a minimum of the paper's penalized potential.
fn start() -> (Water, Assembled<Water, 9>, Vec<f64>) {
    let w = Water::tip3p();
    let sys = w.assemble(3);
    let mut q = w.cluster(3, water::SPACING, 0);
    Lbfgs::new(1e-5, 100_000)
        .minimize(&sys.penalized(water::OMEGA), &mut q)
        .expect("the penalized minimum");
    (w, sys, q)
}

/// Newton reaches the rigid minimum: the molecules keep TIP3P's geometry exactly, the
/// rigid-body gradient vanishes, the cluster's six rigid motions are the six modes at zero
/// and every other mode is a positive curvature; the librations are the upper modes.
#[test]
fn newton_reaches_a_rigid_minimum_with_six_zero_modes() {
    let (w, sys, q) = start();
    let rm = rigid_modes(&w, &sys, &q, 1e-9, 20).expect("converges");
    assert!(
        rm.newton.len() >= 2,
        "starts off the rigid minimum: {:?}",
        rm.newton
    );
    assert!(*rm.newton.last().unwrap() < 1e-9);
    // Constraints hold to rounding.
    for x in rm.q.chunks_exact(9) {
        let g = w.body_constraints(x.try_into().unwrap());
        assert!(g.iter().all(|c| c.abs() < 1e-12), "{g:?}");
    }
    let top = rm.eigenvalues.last().copied().unwrap();
    assert!(
        rm.eigenvalues[..6].iter().all(|l| l.abs() < 1e-9 * top),
        "{:?}",
        &rm.eigenvalues[..7]
    );
    assert!(rm.eigenvalues[6] > 1e-4 * top, "{:?}", &rm.eigenvalues[..7]);
    assert!(rm.libration.iter().all(|f| (0.0..=1.0 + 1e-12).contains(f)));
    assert!(
        rm.libration[17] > 0.5,
        "the highest mode is a libration: {}",
        rm.libration[17]
    );
}

/// The penalized cluster's intermolecular band converges to the rigid modes as `ω⁻²`
/// (Tao & Owhadi Remark 6.1): doubling ω divides the mean relative difference by about 4.
#[cfg(feature = "faer")]
#[test]
fn the_penalized_band_converges_to_the_rigid_modes_as_omega_squared() {
    let (w, sys, q) = start();
    let rm = rigid_modes(&w, &sys, &q, 1e-9, 20).expect("converges");
    let rigid: Vec<f64> = rm.eigenvalues[6..18].iter().map(|l| l.sqrt()).collect();
    let difference = |omega: f64| {
        let mut q = rm.q.clone();
        let penalized = sys.penalized(omega);
        Lbfgs::new(1e-5, 1_000_000)
            .minimize(&penalized, &mut q)
            .expect("the penalized minimum");
        let modes = zs_runtime::modes::normal_modes(&penalized, &q).expect("modes");
        (6..18)
            .map(|k| (modes.angular_frequency(k) - rigid[k - 6]).abs() / rigid[k - 6])
            .sum::<f64>()
            / 12.0
    };
    let (d1, d2) = (difference(160.0), difference(320.0));
    assert!(d2 < 1e-3, "{d2:e}");
    let ratio = d1 / d2;
    assert!(
        (3.5..4.5).contains(&ratio),
        "ω⁻²: ratio {ratio} ({d1:e}, {d2:e})"
    );
}

#[test]
fn a_state_of_the_wrong_length_is_refused() {
    let (w, sys, q) = start();
    assert_eq!(
        rigid_modes(&w, &sys, &q[..18], 1e-9, 20),
        Err(RigidModesError::Shape { len: 18 })
    );
}
