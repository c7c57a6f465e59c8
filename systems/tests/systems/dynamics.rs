//! Short runs of the systems with the Zhang–Skeel integrator: the documented behaviour of the
//! two gravity signs of the double pendulum, conservation laws of the triatomic molecule and
//! the rigid body, and agreement of the penalized pendulum with the generalized-coordinate
//! reference.

use zs_runtime::{MechanicalSystem, Potential, State, ZhangSkeel};
use zs_systems::double_pendulum::generalized::GeneralizedPendulum;
use zs_systems::double_pendulum::{self, DoublePendulum};
use zs_systems::rigid_body::{self, MagnetizedRigidBody};
use zs_systems::testing::norm_inf;
use zs_systems::Triatomic;

/// Z&S β = 0.4, h = 0.1, ω = 20 from the paper's initial state: `(max |g|, steps completed)`
/// over at most `steps` steps (stops at the first failed or non-finite step).
fn run_pendulum(sys: &DoublePendulum, steps: usize) -> (f64, usize) {
    let p = sys.penalized(double_pendulum::OMEGA);
    let mut zs = ZhangSkeel::new(double_pendulum::BETA, double_pendulum::H);
    let mut s = DoublePendulum::initial_state();
    let mut max_g = 0.0_f64;
    for k in 0..steps {
        if zs.step(&p, &mut s).is_err() || !s.is_finite() {
            return (f64::INFINITY, k);
        }
        max_g = max_g.max(norm_inf(&sys.constraints(&s.q)));
        if max_g > 1.0 {
            return (max_g, k + 1);
        }
    }
    (max_g, steps)
}

#[test]
fn physical_gravity_stays_on_the_constraints() {
    let (max_g, done) = run_pendulum(&DoublePendulum::paper(), 500);
    println!("physical sign: 500 Z&S steps, max |g| = {max_g:.4}");
    assert_eq!(done, 500);
    assert!(max_g < 0.02, "max |g| = {max_g}");
}

#[test]
fn printed_gravity_sign_diverges() {
    let (max_g, done) = run_pendulum(&DoublePendulum::paper_printed_sign(), 500);
    println!("printed sign: stopped after {done} steps, max |g| = {max_g:.3e}");
    assert!(
        done < 100,
        "expected divergence, ran {done} steps (max |g| {max_g})"
    );
}

#[test]
fn penalized_pendulum_follows_the_generalized_reference_at_small_steps() {
    // Large ω and small h: the penalized Cartesian run approaches the constrained motion.
    // Over a short time (T = 1, before chaos amplifies differences) positions agree to O(1/ω²).
    let sys = DoublePendulum::paper();
    let omega = 1000.0;
    let h = 1e-3;
    let p = sys.penalized(omega);
    let mut zs = ZhangSkeel::new(double_pendulum::BETA, h);
    let mut s = DoublePendulum::initial_state();
    let gp = GeneralizedPendulum::from(&sys);
    let reference = gp.paper_reference_trajectory(1.0, 1e-4, 10);
    let mut max_err = 0.0_f64;
    for smp in reference.iter().skip(1) {
        zs.step(&p, &mut s).unwrap();
        assert!((s.t - smp.t).abs() < 1e-9);
        let err = norm_inf(&core::array::from_fn::<f64, 4, _>(|i| s.q[i] - smp.q[i]));
        max_err = max_err.max(err);
    }
    println!("penalized (ω = 1000, h = 1e-3) vs generalized RK4, T = 1: max |Δq| = {max_err:.2e}");
    assert!(max_err < 1e-3, "{max_err}");
}

#[test]
fn triatomic_conserves_momentum_and_energy() {
    let sys = Triatomic::water();
    let m = Potential::masses(&sys);
    // Stretched bonds and a bent angle, plus a centre-of-mass drift and some rotation.
    let mut q = sys.equilibrium();
    q[3] += 0.08;
    q[7] -= 0.05;
    let v = [0.01, -0.02, 0.005, 0.3, -0.1, 0.2, -0.15, 0.25, -0.05];
    let mut s = State::new(q, v);
    let energy = |s: &State<9>| s.kinetic_energy(&m) + Potential::potential(&sys, &s.q);
    let momentum = |s: &State<9>| -> [f64; 3] {
        core::array::from_fn(|k| (0..3).map(|a| m[3 * a + k] * s.v[3 * a + k]).sum())
    };
    let (e0, p0) = (energy(&s), momentum(&s));
    // The O–H stretch period is ≈ 0.18 AKMA units (≈ 9 fs); h = 0.002 resolves it.
    let mut zs = ZhangSkeel::new(0.4, 0.002);
    let mut max_de = 0.0_f64;
    let mut max_dp = 0.0_f64;
    for _ in 0..5000 {
        zs.step(&sys, &mut s).unwrap();
        max_de = max_de.max((energy(&s) - e0).abs());
        let p = momentum(&s);
        max_dp = max_dp.max(norm_inf(&core::array::from_fn::<f64, 3, _>(|k| {
            p[k] - p0[k]
        })));
    }
    println!("triatomic Z&S h = 0.002, 5000 steps: E0 = {e0:.4}, max |ΔE| = {max_de:.2e}, max |ΔP| = {max_dp:.2e}");
    assert!(max_dp < 1e-12, "{max_dp}");
    assert!(max_de < 1e-2 * e0.abs(), "{max_de}");
}

#[test]
fn rigid_body_paper_run_stays_near_so3() {
    // Generic Z&S with β = 0.4 at h = 0.1: the penalty modes are far from resolved
    // (ω_fast = 2√2·ω ≈ 28, h·ω_fast ≈ 2.8), yet the step is stable, stays near SO(3) and its
    // energy error is bounded without drift: the same maximum over T ≤ 500 and 500 < T ≤ 1000
    // (measured 4.4e-2 for Bμ = −1, 0.23 for Bμ = +1).
    for b_mu in [-1.0, 1.0] {
        let sys = MagnetizedRigidBody {
            b_mu,
            ..MagnetizedRigidBody::paper()
        };
        let mut s = MagnetizedRigidBody::initial_state();
        let e0 = sys.energy(&s);
        let mut zs = ZhangSkeel::new(rigid_body::BETA, rigid_body::H);
        let mut max_defect = 0.0_f64;
        let mut halves = [0.0_f64; 2];
        for k in 0..10000 {
            zs.step(&sys, &mut s).unwrap();
            max_defect = max_defect.max(rigid_body::orthogonality_defect(&s.q));
            let h = &mut halves[k / 5000];
            *h = h.max((sys.energy(&s) - e0).abs());
        }
        println!(
            "rigid body Bμ = {b_mu}, Z&S h = 0.1, ω = 10, T = 1000: max ‖RᵀR - I‖ = {max_defect:.2e}, max |ΔE| over each half {halves:?} (E0 = {e0})"
        );
        assert!(max_defect < 0.1, "{max_defect}");
        assert!(halves[0] < 0.3, "{halves:?}");
        assert!(halves[1] <= 1.05 * halves[0], "{halves:?}");
    }
}
