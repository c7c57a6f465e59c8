//! The code `#[mechanical_system]` generates for the three systems, checked against the
//! hand-written references (relative error ≤ 1e-12) and against finite differences.
//!
//! Relative error: `‖gen - ref‖∞ / max(‖ref‖∞, 1e-300)` over the whole vector or matrix
//! (`zs_systems::testing::rel_err`); a reference that is exactly zero (the Hessian and third
//! contraction of the linear pendulum potential, the empty constraint arrays) therefore demands
//! an exactly zero generated value. Finite-difference steps and tolerances are those of
//! `tests/reference.rs` (justified there): `ε = 1e-5` and `1e-6` for gradient and Hessian,
//! `ε = 1e-4` and `1e-5` for the third contraction.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zs_runtime::{MechanicalSystem, Potential};
use zs_systems::double_pendulum::reference::DoublePendulumReference;
use zs_systems::rigid_body::reference::MagnetizedRigidBodyReference;
use zs_systems::testing::{fd_errors, points, rel_err, rel_err_mat, rel_err_scalar, FdErrors};
use zs_systems::triatomic::reference::TriatomicReference;
use zs_systems::{DoublePendulum, MagnetizedRigidBody, Triatomic};

const POINTS: usize = 200;
const TOL: f64 = 1e-12;
const EPS1: f64 = 1e-5;
const EPS3: f64 = 1e-4;
const TOL_FD_1: f64 = 1e-6;
const TOL_FD_3: f64 = 1e-5;

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut r = StdRng::seed_from_u64(seed);
    move || r.random::<f64>()
}

/// Largest relative error seen for each compared quantity.
#[derive(Default)]
struct Worst(BTreeMap<&'static str, f64>);

impl Worst {
    fn add(&mut self, what: &'static str, e: f64) {
        let w = self.0.entry(what).or_insert(0.0);
        *w = w.max(e);
    }

    fn report_and_check(&self, system: &str) {
        for (what, e) in &self.0 {
            println!("{system}: generated vs reference, {what}: max rel. error {e:.2e}");
        }
        for (what, e) in &self.0 {
            assert!(*e <= TOL, "{system}: {what}: rel. error {e:.3e} > {TOL:e}");
        }
    }
}

/// Every method of `MechanicalSystem<N, M>` (and its `Potential<N>` supertrait) of the
/// generated system against the reference at one point.
fn compare<const N: usize, const M: usize>(
    gen: &impl MechanicalSystem<N, M>,
    re: &impl MechanicalSystem<N, M>,
    q: &[f64; N],
    a: &[f64; N],
    omega: f64,
    w: &mut Worst,
) {
    assert_eq!(gen.masses(), re.masses());
    w.add(
        "potential",
        rel_err_scalar(gen.potential(q), re.potential(q)),
    );
    w.add("gradient", rel_err(&gen.gradient(q), &re.gradient(q)));
    w.add("hessian", rel_err_mat(&gen.hessian(q), &re.hessian(q)));
    w.add(
        "third_contraction",
        rel_err(&gen.third_contraction(q, a), &re.third_contraction(q, a)),
    );
    let (g, h) = gen.gradient_hessian(q);
    w.add("gradient_hessian.0", rel_err(&g, &re.gradient(q)));
    w.add("gradient_hessian.1", rel_err_mat(&h, &re.hessian(q)));
    w.add(
        "constraints",
        rel_err(&gen.constraints(q), &re.constraints(q)),
    );
    w.add(
        "constraint_jacobian",
        rel_err(
            gen.constraint_jacobian(q).as_flattened(),
            re.constraint_jacobian(q).as_flattened(),
        ),
    );
    w.add(
        "penalized_potential",
        rel_err_scalar(
            gen.penalized_potential(omega, q),
            re.penalized_potential(omega, q),
        ),
    );
    w.add(
        "penalized_gradient",
        rel_err(
            &gen.penalized_gradient(omega, q),
            &re.penalized_gradient(omega, q),
        ),
    );
    w.add(
        "penalized_hessian",
        rel_err_mat(
            &gen.penalized_hessian(omega, q),
            &re.penalized_hessian(omega, q),
        ),
    );
    w.add(
        "penalized_third_contraction",
        rel_err(
            &gen.penalized_third_contraction(omega, q, a),
            &re.penalized_third_contraction(omega, q, a),
        ),
    );
    let (g, h) = gen.penalized_gradient_hessian(omega, q);
    w.add(
        "penalized_gradient_hessian.0",
        rel_err(&g, &re.penalized_gradient(omega, q)),
    );
    w.add(
        "penalized_gradient_hessian.1",
        rel_err_mat(&h, &re.penalized_hessian(omega, q)),
    );
    // The `penalized(ω)` view is the same code again, through `Potential<N>`.
    let (pg, pr) = (gen.penalized(omega), re.penalized(omega));
    w.add(
        "penalized(ω).third_contraction",
        rel_err(&pg.third_contraction(q, a), &pr.third_contraction(q, a)),
    );
}

fn check_fd(name: &str, e: FdErrors) {
    println!(
        "{name}: generated vs finite differences: gradient {:.2e}, Hessian {:.2e}, third {:.2e}",
        e.gradient, e.hessian, e.third
    );
    assert!(e.gradient <= TOL_FD_1, "{name}: {e:?}");
    assert!(e.hessian <= TOL_FD_1, "{name}: {e:?}");
    assert!(e.third <= TOL_FD_3, "{name}: {e:?}");
}

#[test]
fn double_pendulum_generated_vs_reference() {
    let mut u = rng(11);
    let mut w = Worst::default();
    let mut fd = FdErrors::default();
    for _ in 0..POINTS {
        let sys = DoublePendulum {
            l1: points::uniform(&mut u, 0.5, 2.0),
            l2: points::uniform(&mut u, 0.5, 2.0),
            gravity: points::uniform(&mut u, -2.0, 2.0),
        };
        let re = DoublePendulumReference::from(&sys);
        let q = points::double_pendulum(&mut u, sys.l1, sys.l2);
        let a = points::direction(&mut u);
        let omega = points::uniform(&mut u, 1.0, 100.0);
        compare(&sys, &re, &q, &a, omega, &mut w);
        fd = fd.max(fd_errors(&sys.penalized(omega), &q, &a, EPS1, EPS3));
        // The user's own functions stay callable and agree with the generated ones.
        w.add(
            "user's potential()",
            rel_err_scalar(sys.potential(&q), Potential::potential(&sys, &q)),
        );
        w.add(
            "user's constraints()",
            rel_err(
                &sys.constraints(&q),
                &MechanicalSystem::constraints(&sys, &q),
            ),
        );
    }
    w.report_and_check("double pendulum");
    check_fd("double pendulum (penalized)", fd);
}

#[test]
fn double_pendulum_paper_parameters() {
    // The exact paper system (physical and printed sign) at its initial state and nearby.
    let mut u = rng(12);
    let mut w = Worst::default();
    for sys in [
        DoublePendulum::paper(),
        DoublePendulum::paper_printed_sign(),
    ] {
        let re = DoublePendulumReference::from(&sys);
        for _ in 0..POINTS / 2 {
            let q0 = DoublePendulum::initial_state().q;
            let d: [f64; 4] = points::direction(&mut u);
            let q = core::array::from_fn(|i| q0[i] + 0.1 * d[i]);
            let a = points::direction(&mut u);
            compare(
                &sys,
                &re,
                &q,
                &a,
                zs_systems::double_pendulum::OMEGA,
                &mut w,
            );
        }
    }
    w.report_and_check("double pendulum (paper)");
}

#[test]
fn triatomic_generated_vs_reference() {
    let mut u = rng(13);
    let mut w = Worst::default();
    let mut fd = FdErrors::default();
    for k in 0..POINTS {
        // Water parameters, and perturbed ones for half of the points.
        let sys = if k % 2 == 0 {
            Triatomic::water()
        } else {
            let p = Triatomic::water();
            Triatomic {
                d_e: p.d_e * points::uniform(&mut u, 0.5, 1.5),
                alpha: p.alpha * points::uniform(&mut u, 0.5, 1.5),
                r0: p.r0 * points::uniform(&mut u, 0.9, 1.1),
                k_theta: p.k_theta * points::uniform(&mut u, 0.5, 1.5),
                theta0: p.theta0 * points::uniform(&mut u, 0.9, 1.1),
                m_a: p.m_a,
                m_b: p.m_b * points::uniform(&mut u, 1.0, 2.0),
                m_c: p.m_c,
            }
        };
        let re = TriatomicReference(sys);
        let q = points::triatomic(&mut u);
        let a = points::direction(&mut u);
        let omega = points::uniform(&mut u, 1.0, 100.0);
        compare(&sys, &re, &q, &a, omega, &mut w);
        fd = fd.max(fd_errors(&sys, &q, &a, EPS1, EPS3));
        w.add(
            "user's potential()",
            rel_err_scalar(sys.potential(&q), Potential::potential(&sys, &q)),
        );
    }
    w.report_and_check("triatomic");
    check_fd("triatomic", fd);
}

#[test]
fn rigid_body_generated_vs_reference() {
    let mut u = rng(14);
    let mut w = Worst::default();
    let mut fd = FdErrors::default();
    for _ in 0..POINTS {
        let sys = MagnetizedRigidBody {
            b_mu: points::uniform(&mut u, -2.0, 2.0),
            omega: points::uniform(&mut u, 1.0, 30.0),
        };
        let re = MagnetizedRigidBodyReference(sys);
        let q = points::near_rotation(&mut u, 0.05);
        let a = points::direction(&mut u);
        let omega = points::uniform(&mut u, 1.0, 100.0);
        compare(&sys, &re, &q, &a, omega, &mut w);
        fd = fd.max(fd_errors(&sys, &q, &a, EPS1, EPS3));
        w.add(
            "user's potential()",
            rel_err_scalar(sys.potential(&q), Potential::potential(&sys, &q)),
        );
    }
    w.report_and_check("rigid body");
    check_fd("rigid body", fd);
}
