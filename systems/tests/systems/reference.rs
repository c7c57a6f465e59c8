//! The hand-written references (and the num-dual baseline) checked on their own, without the
//! macro: against central finite differences, against each other, and physical sanity checks.
//!
//! Finite-difference tolerances (relative, `‖fd - exact‖∞ / ‖exact‖∞`; derivation in
//! `zs_systems::testing`): gradient and Hessian use central differences with `ε = 1e-5`
//! (truncation `~ε²/6 ≈ 2e-11`, rounding `~u/ε ≈ 1e-11`, times the ratio of neighbouring
//! derivative magnitudes), tolerance `1e-6`; the third contraction uses the second difference
//! of the gradient along `a` (`|a_i| ≤ 1`) with `ε = 1e-4` (truncation `~ε²/12 ≈ 1e-9`,
//! rounding `~4u‖∇V‖/ε² ≈ 4e-8 ‖∇V‖`), tolerance `1e-5` (the rounding term dominates and
//! scales with `‖∇V‖/‖T‖`, which is O(1–100) at the points drawn).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zs_runtime::{MechanicalSystem, Potential};
use zs_systems::double_pendulum::dual::DoublePendulumDual;
use zs_systems::double_pendulum::generalized::GeneralizedPendulum;
use zs_systems::double_pendulum::reference::DoublePendulumReference;
use zs_systems::double_pendulum::{self, DoublePendulum};
use zs_systems::rigid_body::reference::MagnetizedRigidBodyReference;
use zs_systems::rigid_body::{self, MagnetizedRigidBody};
use zs_systems::testing::{self, fd_errors, points, rel_err, rel_err_mat, FdErrors};
use zs_systems::triatomic::reference::TriatomicReference;
use zs_systems::triatomic::Triatomic;

const POINTS: usize = 200;
const EPS1: f64 = 1e-5;
const EPS3: f64 = 1e-4;
const TOL_FD_1: f64 = 1e-6;
const TOL_FD_3: f64 = 1e-5;

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut r = StdRng::seed_from_u64(seed);
    move || r.random::<f64>()
}

fn check_fd(name: &str, e: FdErrors) {
    println!(
        "{name}: max FD rel. errors: gradient {:.2e}, Hessian {:.2e}, third {:.2e}",
        e.gradient, e.hessian, e.third
    );
    assert!(e.gradient <= TOL_FD_1, "{name}: gradient FD error {e:?}");
    assert!(e.hessian <= TOL_FD_1, "{name}: Hessian FD error {e:?}");
    assert!(
        e.third <= TOL_FD_3,
        "{name}: third-contraction FD error {e:?}"
    );
}

#[test]
fn double_pendulum_reference_vs_finite_differences() {
    let mut u = rng(1);
    let mut worst = FdErrors::default();
    let mut worst_jac = 0.0_f64;
    for _ in 0..POINTS {
        let sys = DoublePendulumReference {
            gravity: points::uniform(&mut u, -2.0, 2.0),
            ..DoublePendulumReference::paper()
        };
        let omega = points::uniform(&mut u, 1.0, 100.0);
        let q = points::double_pendulum(&mut u, sys.l1, sys.l2);
        let a = points::direction(&mut u);
        worst = worst.max(fd_errors(&sys.penalized(omega), &q, &a, EPS1, EPS3));
        // Unpenalized V is linear: gradient exact, Hessian and T zero.
        let fd = testing::fd_gradient(|x| sys.potential(x), &q, EPS1);
        assert!(rel_err(&fd, &sys.gradient(&q)) < 1e-9);
        assert_eq!(sys.hessian(&q), [[0.0; 4]; 4]);
        assert_eq!(sys.third_contraction(&q, &a), [0.0; 4]);
        // Constraint Jacobian.
        let fd_j = testing::fd_jacobian(|x| sys.constraints(x), &q, EPS1);
        worst_jac = worst_jac.max(rel_err_mat(&fd_j, &sys.constraint_jacobian(&q)));
        // gradient_hessian agrees with the separate methods exactly.
        let (g, h) = sys.penalized_gradient_hessian(omega, &q);
        assert_eq!(g, sys.penalized_gradient(omega, &q));
        assert_eq!(h, sys.penalized_hessian(omega, &q));
    }
    println!("double pendulum: constraint Jacobian FD rel. error {worst_jac:.2e}");
    assert!(worst_jac <= TOL_FD_1);
    check_fd("double pendulum (penalized, reference)", worst);
}

#[test]
fn double_pendulum_penalized_potential_definition() {
    let mut u = rng(2);
    let sys = DoublePendulumReference::paper();
    for _ in 0..POINTS {
        let q = points::double_pendulum(&mut u, sys.l1, sys.l2);
        let omega = points::uniform(&mut u, 1.0, 100.0);
        let g = sys.constraints(&q);
        let expect =
            -sys.gravity * (q[1] + q[3]) + 0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1]);
        assert!(
            (sys.penalized_potential(omega, &q) - expect).abs() <= 1e-14 * expect.abs().max(1.0)
        );
        // On the constraint manifold g = 0.
        let t: f64 = points::uniform(&mut u, 0.0, 6.0);
        let p: f64 = points::uniform(&mut u, 0.0, 6.0);
        let on = [
            sys.l1 * t.sin(),
            -sys.l1 * t.cos(),
            sys.l1 * t.sin() + sys.l2 * p.sin(),
            -sys.l1 * t.cos() - sys.l2 * p.cos(),
        ];
        assert!(testing::norm_inf(&sys.constraints(&on)) < 1e-14);
    }
}

#[test]
fn double_pendulum_dual_matches_reference() {
    let mut u = rng(3);
    let mut worst = [0.0_f64; 5];
    for _ in 0..POINTS {
        let base = DoublePendulum {
            gravity: points::uniform(&mut u, -2.0, 2.0),
            ..DoublePendulum::paper()
        };
        let omega = points::uniform(&mut u, 1.0, 100.0);
        let reference = DoublePendulumReference::from(&base);
        let pen = reference.penalized(omega);
        let dual = DoublePendulumDual::new(&base, omega);
        let q = points::double_pendulum(&mut u, base.l1, base.l2);
        let a = points::direction(&mut u);
        let (g, h) = dual.gradient_hessian(&q);
        let errs = [
            testing::rel_err_scalar(dual.potential(&q), pen.potential(&q)),
            rel_err(&dual.gradient(&q), &pen.gradient(&q)),
            rel_err(&g, &pen.gradient(&q)),
            rel_err_mat(&h, &pen.hessian(&q)).max(rel_err_mat(&dual.hessian(&q), &pen.hessian(&q))),
            rel_err(
                &dual.third_contraction(&q, &a),
                &pen.third_contraction(&q, &a),
            ),
        ];
        for (w, e) in worst.iter_mut().zip(errs) {
            *w = w.max(e);
        }
        assert_eq!(dual.masses(), pen.masses());
    }
    println!(
        "num-dual vs reference, max rel. errors: V {:.2e}, ∇V {:.2e}, ∇V (hyper-dual) {:.2e}, H {:.2e}, T {:.2e}",
        worst[0], worst[1], worst[2], worst[3], worst[4]
    );
    assert!(worst.iter().all(|&e| e <= 1e-12), "{worst:?}");
}

#[test]
fn triatomic_reference_vs_finite_differences() {
    let mut u = rng(4);
    let sys = TriatomicReference::water();
    let mut worst = FdErrors::default();
    for _ in 0..POINTS {
        let q = points::triatomic(&mut u);
        let a = points::direction(&mut u);
        worst = worst.max(fd_errors(&sys, &q, &a, EPS1, EPS3));
        let (g, h) = sys.gradient_hessian(&q);
        assert_eq!(g, sys.gradient(&q));
        assert_eq!(h, sys.hessian(&q));
        let j = sys.jet(&q, &a);
        assert!((j.v - sys.potential(&q)).abs() <= 1e-12 * j.v.abs().max(1.0));
    }
    check_fd("triatomic (reference)", worst);
}

#[test]
fn triatomic_equilibrium_and_invariance() {
    let sys = TriatomicReference::water();
    let q0 = Triatomic::water().equilibrium();
    assert!(sys.potential(&q0).abs() < 1e-20);
    let g = sys.gradient(&q0);
    assert!(testing::norm_inf(&g) < 1e-10, "{g:?}");
    // Translation invariance: Σ over atoms of each gradient component vanishes.
    let mut u = rng(5);
    for _ in 0..POINTS {
        let q = points::triatomic(&mut u);
        let g = sys.gradient(&q);
        for k in 0..3 {
            let s = g[k] + g[3 + k] + g[6 + k];
            assert!(s.abs() <= 1e-11 * testing::norm_inf(&g), "{s}");
        }
    }
    let (ru, rv, th) = Triatomic::internal_coordinates(&q0);
    assert!((ru - 0.9419).abs() < 1e-15 && (rv - 0.9419).abs() < 1e-15);
    assert!((th - 107.4_f64.to_radians()).abs() < 1e-12);
}

#[test]
fn rigid_body_reference_vs_finite_differences() {
    let mut u = rng(6);
    let mut worst = FdErrors::default();
    for _ in 0..POINTS {
        let sys = MagnetizedRigidBodyReference(MagnetizedRigidBody {
            b_mu: points::uniform(&mut u, -2.0, 2.0),
            omega: points::uniform(&mut u, 1.0, 30.0),
        });
        let q = points::near_rotation(&mut u, 0.05);
        let a = points::direction(&mut u);
        worst = worst.max(fd_errors(&sys, &q, &a, EPS1, EPS3));
        let (g, h) = sys.gradient_hessian(&q);
        assert_eq!(g, sys.gradient(&q));
        assert_eq!(h, sys.hessian(&q));
        for i in 0..9 {
            for j in 0..9 {
                assert!((h[i][j] - h[j][i]).abs() <= 1e-13 * testing::norm_inf(h.as_flattened()));
            }
        }
    }
    check_fd("rigid body (reference)", worst);
}

#[test]
fn rigid_body_on_so3() {
    // On SO(3) the penalty and its gradient vanish: ∇V = Bμ e33 exactly (up to rounding).
    let mut u = rng(7);
    let sys = MagnetizedRigidBodyReference::paper();
    for _ in 0..POINTS {
        let q = points::near_rotation(&mut u, 0.0);
        assert!(rigid_body::orthogonality_defect(&q) < 1e-14);
        let g = sys.gradient(&q);
        let mut expect = [0.0; 9];
        expect[8] = sys.0.b_mu;
        assert!(rel_err(&g, &expect) < 1e-12, "{g:?}");
        assert!((sys.potential(&q) - sys.0.b_mu * q[8]).abs() < 1e-12);
    }
    // Initial state: R = I, Ṙ = Ω̂, body angular velocity recovered, energy ½|Ω|² + Bμ.
    let s = MagnetizedRigidBody::initial_state();
    let w = rigid_body::body_angular_velocity(&s);
    assert_eq!(w, rigid_body::BODY_ANGULAR_VELOCITY);
    let e = MagnetizedRigidBody::paper().energy(&s);
    let w2: f64 = w.iter().map(|x| x * x).sum();
    assert!((e - (0.5 * w2 + rigid_body::B_MU)).abs() < 1e-15);
}

#[test]
fn generalized_pendulum_rk4_conserves_energy() {
    let gp = GeneralizedPendulum::paper();
    let s0 = gp.paper_initial_state();
    assert!(s0.theta.abs() < 1e-15);
    assert!((s0.phi - std::f64::consts::FRAC_PI_4).abs() < 1e-15);
    let e0 = gp.energy(&s0);
    assert!((e0 - (-3.0)).abs() < 1e-14, "E0 = {e0}");
    let traj = gp.reference_trajectory(s0, 20.0, 1e-3, 100);
    assert_eq!(traj.len(), 201);
    assert!((traj.last().unwrap().t - 20.0).abs() < 1e-12);
    let sys = DoublePendulum::paper();
    let mut max_de = 0.0_f64;
    let mut max_g = 0.0_f64;
    for smp in &traj {
        let gs = zs_systems::double_pendulum::generalized::GeneralizedState {
            t: smp.t,
            theta: smp.theta,
            phi: smp.phi,
            theta_dot: smp.theta_dot,
            phi_dot: smp.phi_dot,
        };
        max_de = max_de.max((gp.energy(&gs) - e0).abs());
        // Cartesian state: on the constraints, same energy as the Cartesian formula.
        let st = zs_runtime::State::at(smp.q, smp.v, smp.t);
        let r = DoublePendulumReference::paper();
        max_g = max_g.max(testing::norm_inf(&r.constraints(&smp.q)));
        assert!((sys.energy(&st) - gp.energy(&gs)).abs() < 1e-12);
        // Round trip through Cartesian coordinates.
        let back = gp.from_cartesian(&st);
        assert!((back.theta_dot - smp.theta_dot).abs() < 1e-12);
        assert!((back.phi_dot - smp.phi_dot).abs() < 1e-12);
    }
    println!(
        "generalized RK4 h = 1e-3, T = 20: max |E - E0| = {max_de:.2e}, max |g| = {max_g:.2e}"
    );
    assert!(max_de < 1e-10, "energy drift {max_de}");
    assert!(max_g < 1e-13);
    // The motion is non-trivial (the pendulum actually swings).
    let max_theta = traj.iter().map(|s| s.theta.abs()).fold(0.0, f64::max);
    assert!(max_theta > 0.3, "{max_theta}");
}

#[test]
fn generalized_pendulum_matches_cartesian_equations() {
    // The generalized accelerations, mapped to Cartesian ones, satisfy M q̈ = -∇V - Gᵀλ for
    // some λ: the residual M q̈ + ∇V is in the row space of G (the constraint forces).
    let gp = GeneralizedPendulum::paper();
    let r = DoublePendulumReference::paper();
    let mut u = rng(8);
    for _ in 0..POINTS {
        let (th, ph) = (
            points::uniform(&mut u, -3.0, 3.0),
            points::uniform(&mut u, -3.0, 3.0),
        );
        let (td, pd) = (
            points::uniform(&mut u, -2.0, 2.0),
            points::uniform(&mut u, -2.0, 2.0),
        );
        let [tdd, pdd] = gp.acceleration(th, ph, td, pd);
        let (st, ct, sp, cp) = (th.sin(), th.cos(), ph.sin(), ph.cos());
        // q̈ of x1 = L1 sin θ, y1 = -L1 cos θ, x2 = x1 + L2 sin φ, y2 = y1 - L2 cos φ.
        let a1 = [
            gp.l1 * (ct * tdd - st * td * td),
            gp.l1 * (st * tdd + ct * td * td),
        ];
        let a2 = [
            a1[0] + gp.l2 * (cp * pdd - sp * pd * pd),
            a1[1] + gp.l2 * (sp * pdd + cp * pd * pd),
        ];
        let qdd = [a1[0], a1[1], a2[0], a2[1]];
        let q = [
            gp.l1 * st,
            -gp.l1 * ct,
            gp.l1 * st + gp.l2 * sp,
            -gp.l1 * ct - gp.l2 * cp,
        ];
        let m = r.masses();
        let grad = r.gradient(&q);
        let res: [f64; 4] = core::array::from_fn(|i| m[i] * qdd[i] + grad[i]);
        // Tangent vectors of the constraint manifold: ∂q/∂θ and ∂q/∂φ; the residual must be
        // orthogonal to both.
        let dth = [gp.l1 * ct, gp.l1 * st, gp.l1 * ct, gp.l1 * st];
        let dph = [0.0, 0.0, gp.l2 * cp, gp.l2 * sp];
        let scale = testing::norm_inf(&res).max(1.0);
        for t in [dth, dph] {
            let d: f64 = (0..4).map(|i| res[i] * t[i]).sum();
            assert!(d.abs() < 1e-12 * scale, "{d}");
        }
    }
}

#[test]
fn paper_constants() {
    let p = DoublePendulum::paper();
    assert_eq!(
        (p.l1, p.l2, p.gravity, p.masses()),
        (1.0, 2f64.sqrt(), -1.0, [1.0; 4])
    );
    assert_eq!(DoublePendulum::paper_printed_sign().gravity, 1.0);
    assert_eq!(DoublePendulum::initial_state().q, [0.0, -1.0, 1.0, -2.0]);
    assert_eq!(
        (
            double_pendulum::OMEGA,
            double_pendulum::BETA,
            double_pendulum::H
        ),
        (20.0, 0.4, 0.1)
    );
    let r = DoublePendulumReference::paper();
    assert!(testing::norm_inf(&r.constraints(&DoublePendulum::initial_state().q)) < 1e-15);
}

/// A test function exercising every rule of the hand-written jet:
/// `f(q) = exp(q0 q1) / q2 + √(q0² + q3² + 1) · acos(q1/2) - 3 q3 + 0.7`.
struct JetProbe;

impl JetProbe {
    fn jet(q: &[f64; 4], a: &[f64; 4]) -> zs_systems::triatomic::jet::Jet<4> {
        use zs_systems::triatomic::jet::Jet;
        let x = |i| Jet::coordinate(q, i);
        let e = x(0).mul(&x(1), a).exp(a);
        let t1 = e.mul(&x(2).recip(a), a);
        let r = x(0)
            .mul(&x(0), a)
            .add(&x(3).mul(&x(3), a))
            .add_const(1.0)
            .sqrt(a);
        let t2 = r.mul(&x(1).scale(0.5).acos(a), a);
        t1.add(&t2).sub(&x(3).scale(3.0)).add_const(0.7)
    }
}

impl Potential<4> for JetProbe {
    fn masses(&self) -> [f64; 4] {
        [1.0; 4]
    }
    fn potential(&self, q: &[f64; 4]) -> f64 {
        (q[0] * q[1]).exp() / q[2] + (q[0] * q[0] + q[3] * q[3] + 1.0).sqrt() * (q[1] / 2.0).acos()
            - 3.0 * q[3]
            + 0.7
    }
    fn gradient(&self, q: &[f64; 4]) -> [f64; 4] {
        Self::jet(q, &[0.0; 4]).g
    }
    fn hessian(&self, q: &[f64; 4]) -> [[f64; 4]; 4] {
        Self::jet(q, &[0.0; 4]).h
    }
    fn third_contraction(&self, q: &[f64; 4], a: &[f64; 4]) -> [f64; 4] {
        Self::jet(q, a).t
    }
}

#[test]
fn jet_rules_vs_finite_differences() {
    let mut u = rng(9);
    let mut worst = FdErrors::default();
    for _ in 0..POINTS {
        let q = [
            points::uniform(&mut u, -1.0, 1.0),
            points::uniform(&mut u, -1.5, 1.5),
            points::uniform(&mut u, 0.5, 2.0),
            points::uniform(&mut u, -1.0, 1.0),
        ];
        let a = points::direction(&mut u);
        let j = JetProbe::jet(&q, &a);
        assert!((j.v - JetProbe.potential(&q)).abs() <= 1e-14 * j.v.abs().max(1.0));
        worst = worst.max(fd_errors(&JetProbe, &q, &a, EPS1, EPS3));
    }
    check_fd("jet probe", worst);
}
