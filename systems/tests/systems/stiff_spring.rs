//! The stiff-spring double pendulum (`zs_systems::stiff_spring`): the generated code against the
//! hand-written reference, and the reference against central differences.

mod generated {
    //! The code `#[mechanical_system]` generates for [`StiffSpringDoublePendulum`] against the
    //! hand-written [`StiffSpringReference`] at random points (relative error ≤ 1e-12, the
    //! measure of `systems/tests/systems/derivatives.rs`).

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use zs_runtime::verify::slope;
    use zs_runtime::{ConstraintCurvature, FastPotential, MechanicalSystem, Potential};
    use zs_systems::stiff_spring::reference::StiffSpringReference;
    use zs_systems::stiff_spring::*;
    use zs_systems::testing::{rel_err, rel_err_mat, rel_err_scalar};

    const TOL: f64 = 1e-12;

    #[test]
    fn generated_derivatives_match_the_reference() {
        let mut r = StdRng::seed_from_u64(7);
        let mut worst: Vec<(&str, f64)> = Vec::new();
        let mut add = |what: &'static str, e: f64| match worst.iter_mut().find(|w| w.0 == what) {
            Some(w) => w.1 = w.1.max(e),
            None => worst.push((what, e)),
        };
        for k in 0..200 {
            // random parameters (ε from 1e-4 to 1) and points with bond lengths in [0.5, 1.5]
            let gen = StiffSpringDoublePendulum {
                eps: 10f64.powf(r.random_range(-4.0..0.0)),
                k1: r.random_range(0.5..5.0),
                k2: r.random_range(0.5..5.0),
                l1: r.random_range(0.5..2.0),
                l2: r.random_range(0.5..2.0),
                m1: r.random_range(0.5..2.0),
                m2: r.random_range(0.5..2.0),
                gravity: r.random_range(-2.0..2.0),
            };
            let re = StiffSpringReference::new(gen);
            let (s1, s2) = (
                gen.l1 * r.random_range(0.5..1.5),
                gen.l2 * r.random_range(0.5..1.5),
            );
            let (a1, a2) = (
                r.random_range(0.0..std::f64::consts::TAU),
                r.random_range(0.0..std::f64::consts::TAU),
            );
            let q = [
                s1 * a1.cos(),
                s1 * a1.sin(),
                s1 * a1.cos() + s2 * a2.cos(),
                s1 * a1.sin() + s2 * a2.sin(),
            ];
            let a: [f64; 4] = core::array::from_fn(|_| r.random_range(-1.0..1.0));
            let lambda = [r.random_range(-3.0..3.0), r.random_range(-3.0..3.0)];
            let omega = r.random_range(1.0..30.0);
            add("masses", rel_err(&Potential::masses(&gen), &re.masses()));
            add(
                "U",
                rel_err_scalar(Potential::potential(&gen, &q), re.potential(&q)),
            );
            add("∇U", rel_err(&gen.gradient(&q), &re.gradient(&q)));
            add("Hess U", rel_err_mat(&gen.hessian(&q), &re.hessian(&q)));
            add(
                "T_U",
                rel_err(
                    &gen.third_contraction(&q, &a),
                    &re.third_contraction(&q, &a),
                ),
            );
            add(
                "W",
                rel_err_scalar(
                    FastPotential::fast_potential(&gen, &q),
                    re.fast_potential(&q),
                ),
            );
            add("∇W", rel_err(&gen.fast_gradient(&q), &re.fast_gradient(&q)));
            add(
                "Hess W",
                rel_err_mat(&gen.fast_hessian(&q), &re.fast_hessian(&q)),
            );
            add(
                "g",
                rel_err(
                    &MechanicalSystem::constraints(&gen, &q),
                    &re.constraints(&q),
                ),
            );
            add(
                "G",
                rel_err_mat(&gen.constraint_jacobian(&q), &re.constraint_jacobian(&q)),
            );
            add(
                "Σλ Hess g",
                rel_err_mat(
                    &gen.weighted_constraint_hessian(&q, &lambda),
                    &re.weighted_constraint_hessian(&q, &lambda),
                ),
            );
            add(
                "V_ω",
                rel_err_scalar(
                    gen.penalized_potential(omega, &q),
                    re.penalized_potential(omega, &q),
                ),
            );
            add(
                "∇V_ω",
                rel_err(
                    &gen.penalized_gradient(omega, &q),
                    &re.penalized_gradient(omega, &q),
                ),
            );
            add(
                "Hess V_ω",
                rel_err_mat(
                    &gen.penalized_hessian(omega, &q),
                    &re.penalized_hessian(omega, &q),
                ),
            );
            add(
                "T_ω",
                rel_err(
                    &gen.penalized_third_contraction(omega, &q, &a),
                    &re.penalized_third_contraction(omega, &q, &a),
                ),
            );
            let _ = k;
        }
        for (what, e) in &worst {
            println!("stiff spring: generated vs reference, {what}: max rel. error {e:.2e}");
        }
        for (what, e) in &worst {
            assert!(*e <= TOL, "{what}: rel. error {e:.3e} > {TOL:e}");
        }
        assert_eq!(worst.len(), 15);
    }

    #[test]
    fn convergence_table_runs_on_the_generated_system() {
        // The public entry point: order 2 for the mollified method at ε = 1e-3 (the full
        // experiment and its assertions: tests/tests/workspace/impulse_convergence.rs in zs-tests).
        let hs = [0.2, 0.1, 0.05];
        let t = convergence_table(ImpulseMethod::Mollified, 1e-3, &hs).unwrap();
        assert_eq!(t.len(), 3);
        let eq: Vec<f64> = t.iter().map(|r| r.position_error).collect();
        let ep: Vec<f64> = t.iter().map(|r| r.momentum_error).collect();
        let slopes = (slope(&hs, &eq), slope(&hs, &ep));
        assert!(
            (slopes.0 - 2.0).abs() < 0.1 && (slopes.1 - 2.0).abs() < 0.1,
            "{slopes:?}"
        );
        assert_eq!(t[2].micro_steps, 5000); // h / (ε/100)
    }
}

mod reference {
    //! The hand-written derivatives against central differences (steps and tolerances as in
    //! `systems/tests/systems/reference.rs`: truncation `~ε²|f'''|`, rounding `~u|f|/ε`).

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use zs_runtime::{ConstraintCurvature, FastPotential, MechanicalSystem, Potential};
    use zs_systems::stiff_spring::reference::*;
    use zs_systems::stiff_spring::{frequencies, StiffSpringDoublePendulum};
    use zs_systems::testing::{fd_gradient, fd_jacobian, rel_err, rel_err_mat};

    /// Random configurations with bond lengths in `[0.7, 1.3]` and angles anywhere.
    fn points(n: usize, seed: u64) -> Vec<[f64; 4]> {
        let mut r = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (s1, s2) = (r.random_range(0.7..1.3), r.random_range(0.7..1.3));
                let (a1, a2) = (
                    r.random_range(0.0..std::f64::consts::TAU),
                    r.random_range(0.0..std::f64::consts::TAU),
                );
                let (x1, y1) = (s1 * a1.cos(), s1 * a1.sin());
                [x1, y1, x1 + s2 * a2.cos(), y1 + s2 * a2.sin()]
            })
            .collect()
    }

    fn system() -> StiffSpringReference {
        // ε = 0.1 keeps W's derivatives O(100): finite differences stay accurate.
        StiffSpringReference::new(StiffSpringDoublePendulum {
            m1: 1.5,
            m2: 0.7,
            l2: 1.2,
            ..StiffSpringDoublePendulum::example1(0.1)
        })
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let sys = system();
        let lambda = [0.37, -1.3];
        let mut worst = [0.0f64; 6];
        for q in points(100, 1) {
            let e = [
                rel_err(
                    &sys.fast_gradient(&q),
                    &fd_gradient(|x| sys.fast_potential(x), &q, 1e-5),
                ),
                rel_err_mat(
                    &sys.fast_hessian(&q),
                    &fd_jacobian(|x| sys.fast_gradient(x), &q, 1e-6),
                ),
                rel_err(
                    &sys.gradient(&q),
                    &fd_gradient(|x| sys.potential(x), &q, 1e-5),
                ),
                rel_err_mat(
                    &sys.constraint_jacobian(&q),
                    &fd_jacobian(|x| sys.constraints(x), &q, 1e-6),
                ),
                rel_err_mat(
                    &sys.weighted_constraint_hessian(&q, &lambda),
                    &fd_jacobian(
                        |x| {
                            let g = sys.constraint_jacobian(x);
                            core::array::from_fn(|i| lambda[0] * g[0][i] + lambda[1] * g[1][i])
                        },
                        &q,
                        1e-6,
                    ),
                ),
                rel_err(
                    &sys.penalized_gradient(3.0, &q),
                    &fd_gradient(|x| sys.penalized_potential(3.0, x), &q, 1e-5),
                ),
            ];
            for (w, e) in worst.iter_mut().zip(e) {
                *w = w.max(e);
            }
        }
        let shown: Vec<String> = worst.iter().map(|e| format!("{e:.1e}")).collect();
        println!("max rel. errors vs FD (∇W, Hess W, ∇U, G, Σλ Hess g, ∇V_ω): {shown:?}");
        assert!(worst.iter().all(|&e| e < 1e-6), "{worst:?}");
    }

    #[test]
    fn w_vanishes_exactly_on_the_constraint_manifold() {
        let sys = system();
        for q in points(20, 2) {
            let g = sys.constraints(&q);
            let w = sys.fast_potential(&q);
            assert!(w > 0.0 && g.iter().any(|c| c.abs() > 1e-6));
            // Move onto the manifold radially along each bond: W and g vanish together.
            let s1 = q[0].hypot(q[1]);
            let (x1, y1) = (q[0] * sys.p.l1 / s1, q[1] * sys.p.l1 / s1);
            let (dx, dy) = (q[2] - q[0], q[3] - q[1]);
            let s2 = dx.hypot(dy);
            let on = [x1, y1, x1 + dx * sys.p.l2 / s2, y1 + dy * sys.p.l2 / s2];
            assert!(sys.fast_potential(&on) < 1e-25);
            assert!(sys.constraints(&on).iter().all(|c| c.abs() < 1e-14));
            assert!(sys.fast_gradient(&on).iter().all(|c| c.abs() < 1e-11));
        }
    }

    #[test]
    fn frequencies_are_the_normal_eigenfrequencies() {
        // On the manifold the nonzero eigenvalues of M^-1/2 Hess W M^-1/2 are ω_i² (two zero
        // eigenvalues: the tangent directions).
        let sys = system();
        let p = sys.p;
        for q in points(20, 3) {
            let s1 = q[0].hypot(q[1]);
            let (x1, y1) = (q[0] * p.l1 / s1, q[1] * p.l1 / s1);
            let (dx, dy) = (q[2] - q[0], q[3] - q[1]);
            let s2 = dx.hypot(dy);
            let on = [x1, y1, x1 + dx * p.l2 / s2, y1 + dy * p.l2 / s2];
            let h = sys.fast_hessian(&on);
            let m = sys.masses();
            let a = nalgebra::Matrix4::from_fn(|i, j| h[i][j] / (m[i] * m[j]).sqrt());
            let mut ev: Vec<f64> = a.symmetric_eigen().eigenvalues.iter().copied().collect();
            ev.sort_by(f64::total_cmp);
            let w = frequencies(&p, &on);
            let e2 = p.eps * p.eps;
            assert!(ev[0].abs() < 1e-9 && ev[1].abs() < 1e-9, "{ev:?}");
            assert!(
                (ev[2] * e2 - w[0] * w[0]).abs() < 1e-12 * ev[3] * e2,
                "{ev:?} {w:?}"
            );
            assert!(
                (ev[3] * e2 - w[1] * w[1]).abs() < 1e-12 * ev[3] * e2,
                "{ev:?} {w:?}"
            );
        }
    }
}
