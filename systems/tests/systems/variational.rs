//! Patrick et al. (`docs/VARIATIONAL.md` §4): every testable property of `Variational` measured on
//! systems defined with `#[mechanical_system]` — orders, symplecticity (1 DOF and the form on a
//! basis of T(T*Q)), bounded energy where the underlying method drifts, constraint residuals, the
//! discrete Noether momentum, chord vs Newton, typed errors and no allocation per step.

// Index loops read best for the Jacobians built column by column here.
#![allow(clippy::needless_range_loop)]

use crate::counting_alloc;

use zs_runtime::{
    ConstraintThirdContraction, MechanicalSystem, PhaseBSolver, ProjectedRungeKutta, SolveFailure,
    State, StepError, StepErrorKind, Tableau, TableauError, Variational,
};
use zs_systems::pendulum::{Pendulum, SphericalPendulum};
use zs_systems::DoublePendulum;

fn tableaux() -> [Tableau; 4] {
    [
        Tableau::euler(),
        Tableau::heun(),
        Tableau::kutta3(),
        Tableau::rk4(),
    ]
}

fn pendulum_at(phi: f64, omega: f64) -> State<2> {
    Pendulum::at(phi, omega)
}

fn pendulum_start() -> State<2> {
    Pendulum::initial_state()
}

fn pendulum_exact(t_end: f64) -> State<2> {
    Pendulum::exact(1.0, 0.5, t_end, 200_000)
}

fn run<S, const N: usize, const M: usize>(
    sys: &S,
    m: &mut Variational<N, M>,
    mut s: State<N>,
    n: usize,
) -> State<N>
where
    S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
{
    for _ in 0..n {
        m.step(sys, &mut s).unwrap();
    }
    s
}

fn max_diff<const N: usize>(a: &State<N>, b: &State<N>) -> f64 {
    a.q.iter()
        .zip(&b.q)
        .chain(a.v.iter().zip(&b.v))
        .fold(0.0_f64, |e, (x, y)| e.max((x - y).abs()))
}

/// Observed orders from errors at n = 10, 20, 40, 80 steps to T.
fn orders(errors: &[f64]) -> Vec<f64> {
    errors.windows(2).map(|w| (w[0] / w[1]).log2()).collect()
}

#[test]
fn pendulum_orders_one_to_four_and_two_two_four_four() {
    // docs/VARIATIONAL.md §4.1: α⁻ = 0 fits 1.03, 2.00, 3.26 → 3, 4.00 (RK4 4.17e-8 at n = 80);
    // α⁻ = −½ fits 2, 2, 4, 4 (odd r gains one order: that layer is symmetric).
    let exact = pendulum_exact(2.0);
    for (alpha, expected) in [(0.0, [1.0, 2.0, 3.0, 4.0]), (-0.5, [2.0, 2.0, 4.0, 4.0])] {
        for (tab, want) in tableaux().into_iter().zip(expected) {
            let name = tab.name();
            let errors: Vec<f64> = [10, 20, 40, 80]
                .iter()
                .map(|&n| {
                    let mut m = Variational::new(tab.clone(), alpha, 2.0 / n as f64);
                    max_diff(&run(&Pendulum, &mut m, pendulum_start(), n), &exact)
                })
                .collect();
            let p = orders(&errors);
            println!("{name}, α⁻ = {alpha}: errors {errors:?}, orders {p:?}");
            let last = p[2];
            assert!(
                (last - want).abs() < 0.3,
                "{name} α⁻ = {alpha}: order {last}"
            );
            if name == "rk4" && alpha == 0.0 {
                assert!((errors[3] / 4.17e-8 - 1.0).abs() < 0.01, "{}", errors[3]);
            }
        }
    }
}

#[test]
fn double_pendulum_orders_two_and_four() {
    // docs/VARIATIONAL.md §4.6: the double pendulum of docs/systems/double-pendulum.md, physical
    // gravity, T = 1: 2.0 (Heun), 4.1 (RK4). The reference is RK4-variational at 8× the finest
    // step.
    let sys = DoublePendulum::paper();
    let start = DoublePendulum::initial_state();
    for (tab, want) in [(Tableau::heun(), 2.0), (Tableau::rk4(), 4.0)] {
        let name = tab.name();
        let reference = run(
            &sys,
            &mut Variational::new(Tableau::rk4(), 0.0, 1.0 / 640.0),
            start,
            640,
        );
        let errors: Vec<f64> = [10, 20, 40, 80]
            .iter()
            .map(|&n| {
                let mut m = Variational::new(tab.clone(), 0.0, 1.0 / n as f64);
                max_diff(&run(&sys, &mut m, start, n), &reference)
            })
            .collect();
        let p = orders(&errors);
        println!("double pendulum {name}: errors {errors:?}, orders {p:?}");
        assert!((p[2] - want).abs() < 0.25, "{name}: {p:?}");
    }
}

/// `(φ̄, p)` of a pendulum's discrete momentum: the angle of q̄ and `p = μ · ∂q/∂φ` there.
fn canonical(qbar: [f64; 2], mu: [f64; 2]) -> [f64; 2] {
    let phi = qbar[0].atan2(-qbar[1]);
    [phi, mu[0] * phi.cos() + mu[1] * phi.sin()]
}

/// `(φ̄_k, p_k)` and `(φ̄_k+1, p_k+1)` from the state `pendulum_at(φ, ω)`: two steps, reading the
/// discrete momentum of each.
fn pendulum_map(tab: &Tableau, alpha: f64, h: f64, phi: f64, omega: f64) -> [[f64; 2]; 2] {
    let mut m = Variational::new(tab.clone(), alpha, h);
    let mut s = pendulum_at(phi, omega);
    m.step(&Pendulum, &mut s).unwrap();
    let (q0, mu0) = m.discrete_momentum().unwrap();
    m.step(&Pendulum, &mut s).unwrap();
    let (q1, mu1) = m.discrete_momentum().unwrap();
    [canonical(q0, mu0), canonical(q1, mu1)]
}

fn det2(a: [[f64; 2]; 2]) -> f64 {
    a[0][0] * a[1][1] - a[0][1] * a[1][0]
}

#[test]
fn one_degree_of_freedom_map_has_unit_determinant() {
    // docs/VARIATIONAL.md §4.2: det ∂(φ̄, p)_k+1/∂(φ̄, p)_k = 1 to ≤ 2e-11 (central differences,
    // ε = 1e-5), by the chain rule through the state's (φ, ω): det(D_k+1) / det(D_k).
    let (h, eps) = (0.4, 1e-5);
    for alpha in [0.0, -0.5] {
        for tab in tableaux() {
            let mut d = [[[0.0; 2]; 2]; 2]; // d[k][i][j] = ∂(out k)_i / ∂(φ, ω)_j
            for j in 0..2 {
                let (dp, dw) = if j == 0 { (eps, 0.0) } else { (0.0, eps) };
                let plus = pendulum_map(&tab, alpha, h, 1.0 + dp, 0.5 + dw);
                let minus = pendulum_map(&tab, alpha, h, 1.0 - dp, 0.5 - dw);
                for k in 0..2 {
                    for i in 0..2 {
                        d[k][i][j] = (plus[k][i] - minus[k][i]) / (2.0 * eps);
                    }
                }
            }
            let det = det2(d[1]) / det2(d[0]);
            println!(
                "{} α⁻ = {alpha}, h = {h}: det = 1 + {:.2e}",
                tab.name(),
                det - 1.0
            );
            assert!(
                (det - 1.0).abs() < 1e-10,
                "{} α⁻ = {alpha}: {det}",
                tab.name()
            );
        }
    }
}

#[test]
fn the_underlying_projected_method_is_not_symplectic() {
    // docs/VARIATIONAL.md §4.2: the standard layer with projection has |det − 1| = 0.17, 1.8e-2,
    // 3.7e-3, 1.1e-4 at h = 0.4 (r = 1..4), in (φ, φ') here.
    let (h, eps) = (0.4, 1e-5);
    let step = |tab: &Tableau, phi: f64, omega: f64| -> [f64; 2] {
        let mut m: ProjectedRungeKutta<2, 1> = ProjectedRungeKutta::new(tab.clone(), h);
        let mut s = pendulum_at(phi, omega);
        m.step(&Pendulum, &mut s).unwrap();
        let phi1 = s.q[0].atan2(-s.q[1]);
        [phi1, s.v[0] * phi1.cos() + s.v[1] * phi1.sin()]
    };
    let mut dets = Vec::new();
    for tab in tableaux() {
        let mut d = [[0.0; 2]; 2];
        for j in 0..2 {
            let (dp, dw) = if j == 0 { (eps, 0.0) } else { (0.0, eps) };
            let plus = step(&tab, 1.0 + dp, 0.5 + dw);
            let minus = step(&tab, 1.0 - dp, 0.5 - dw);
            for i in 0..2 {
                d[i][j] = (plus[i] - minus[i]) / (2.0 * eps);
            }
        }
        dets.push((det2(d) - 1.0).abs());
    }
    println!("projected Runge–Kutta, h = 0.4: |det − 1| = {dets:?}");
    for x in &dets {
        assert!(*x > 1e-6, "{dets:?}");
    }
}

/// A state of the spherical pendulum on TQ from angles and a velocity (projected).
fn spherical_at(theta: f64, phi: f64, v: [f64; 3]) -> State<3> {
    let q = [
        theta.sin() * phi.cos(),
        theta.sin() * phi.sin(),
        -theta.cos(),
    ];
    let vq: f64 = (0..3).map(|i| v[i] * q[i]).sum();
    State::new(q, core::array::from_fn(|i| v[i] - vq * q[i]))
}

#[test]
fn spherical_pendulum_form_on_a_basis_of_the_cotangent_bundle_is_preserved() {
    // docs/VARIATIONAL.md §4.2 for N − d > 1: UᵀDΦᵀJDΦU = UᵀJU for a basis U of T(T*Q). Through the
    // state: with F = (q̄_k, μ_k) and G = (q̄_k+1, μ_k+1) as functions of four coordinates of TQ,
    // (DG)ᵀJ(DG) = (DF)ᵀJ(DF).
    let (h, eps) = (0.2, 1e-5);
    let coords = [1.0, 0.3, 0.0, 0.8];
    let state_of = |c: [f64; 4]| spherical_at(c[0], c[1], [c[2], c[3], 0.1]);
    let maps = |c: [f64; 4]| -> [[f64; 6]; 2] {
        let mut m = Variational::new(Tableau::rk4(), 0.0, h);
        let mut s = state_of(c);
        let mut out = [[0.0; 6]; 2];
        for row in &mut out {
            m.step(&SphericalPendulum, &mut s).unwrap();
            let (q, mu) = m.discrete_momentum().unwrap();
            row[..3].copy_from_slice(&q);
            row[3..].copy_from_slice(&mu);
        }
        out
    };
    let mut d = [[[0.0; 4]; 6]; 2];
    for j in 0..4 {
        let (mut p, mut m) = (coords, coords);
        p[j] += eps;
        m[j] -= eps;
        let (fp, fm) = (maps(p), maps(m));
        for k in 0..2 {
            for i in 0..6 {
                d[k][i][j] = (fp[k][i] - fm[k][i]) / (2.0 * eps);
            }
        }
    }
    // ω(a, b) = Σ_i (a_q,i b_μ,i − a_μ,i b_q,i).
    let form = |d: &[[f64; 4]; 6], a: usize, b: usize| -> f64 {
        (0..3)
            .map(|i| d[i][a] * d[3 + i][b] - d[3 + i][a] * d[i][b])
            .sum()
    };
    let mut worst = 0.0_f64;
    let mut largest = 0.0_f64;
    for a in 0..4 {
        for b in a + 1..4 {
            let (before, after) = (form(&d[0], a, b), form(&d[1], a, b));
            worst = worst.max((after - before).abs());
            largest = largest.max(before.abs());
        }
    }
    println!("spherical pendulum RK4, h = 0.2: max |ω_k+1 − ω_k| = {worst:.2e} (entries up to {largest:.2})");
    assert!(largest > 0.1);
    assert!(worst < 1e-9 * largest, "{worst}");
}

#[test]
fn spherical_pendulum_discrete_noether_momentum_is_constant() {
    // docs/VARIATIONAL.md §4.5: (q̄ × μ)_z constant to 5e-15; (q × v)_z varies by 6e-5 (RK4, h =
    // 0.2).
    let mut m = Variational::new(Tableau::rk4(), 0.0, 0.2);
    let mut st = SphericalPendulum::initial_state();
    let (mut j_min, mut j_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut l_min, mut l_max) = (f64::INFINITY, f64::NEG_INFINITY);
    for _ in 0..500 {
        m.step(&SphericalPendulum, &mut st).unwrap();
        let (q, mu) = m.discrete_momentum().unwrap();
        let j = q[0] * mu[1] - q[1] * mu[0];
        let l = st.q[0] * st.v[1] - st.q[1] * st.v[0];
        j_min = j_min.min(j);
        j_max = j_max.max(j);
        l_min = l_min.min(l);
        l_max = l_max.max(l);
    }
    println!(
        "spherical pendulum: (q̄ × μ)_z varies by {:.2e}, (q × v)_z by {:.2e}",
        j_max - j_min,
        l_max - l_min
    );
    assert!(j_max - j_min < 1e-13, "{}", j_max - j_min);
    assert!(l_max - l_min > 1e-7, "{}", l_max - l_min);
}

fn pendulum_energy(s: &State<2>) -> f64 {
    Pendulum::energy(s)
}

#[test]
fn energy_is_bounded_where_the_underlying_method_drifts_and_constraints_hold() {
    // docs/VARIATIONAL.md §4.3–4.4: h = 0.25, T = 500. The converted method's max |ΔE| is the same
    // in the first and the last 10 % (0.118, 0.046, 5.6e-3, 4.7e-4 for r = 1..4); the projected RK3
    // and RK4 drift (mean ΔE −0.03 → −0.35, −1e-3 → −2e-2); |g|, |Gv| ≤ 1e-15.
    let (h, n) = (0.25, 2000);
    let tenth = n / 10;
    let e0 = pendulum_energy(&pendulum_start());
    for tab in tableaux() {
        let name = tab.name();
        let mut m = Variational::new(tab.clone(), 0.0, h);
        let mut s = pendulum_start();
        let (mut first, mut last, mut residual) = (0.0_f64, 0.0_f64, 0.0_f64);
        for k in 0..n {
            m.step(&Pendulum, &mut s).unwrap();
            let d = (pendulum_energy(&s) - e0).abs();
            if k < tenth {
                first = first.max(d);
            } else if k >= n - tenth {
                last = last.max(d);
            }
            let g = Pendulum.constraints(&s.q)[0];
            let gv = 2.0 * (s.q[0] * s.v[0] + s.q[1] * s.v[1]);
            residual = residual.max(g.abs()).max(gv.abs());
        }
        println!("{name}: max |ΔE| first 10 % {first:.3e}, last 10 % {last:.3e}; max |g|, |Gv| {residual:.1e}");
        assert!(
            last <= 1.1 * first && last >= first / 1.1,
            "{name}: {first} {last}"
        );
        assert!(residual < 1e-14, "{name}: {residual}");
    }
    for tab in [Tableau::kutta3(), Tableau::rk4()] {
        let mut m: ProjectedRungeKutta<2, 1> = ProjectedRungeKutta::new(tab.clone(), h);
        let mut s = pendulum_start();
        let (mut first, mut last) = (0.0, 0.0);
        for k in 0..n {
            m.step(&Pendulum, &mut s).unwrap();
            let d = pendulum_energy(&s) - e0;
            if k < tenth {
                first += d / tenth as f64;
            } else if k >= n - tenth {
                last += d / tenth as f64;
            }
        }
        println!(
            "projected {}: mean ΔE first 10 % {first:.3e}, last 10 % {last:.3e}",
            tab.name()
        );
        assert!(
            last < 5.0 * first && first < 0.0,
            "{}: {first} {last}",
            tab.name()
        );
    }
}

#[test]
fn chord_and_newton_agree() {
    // docs/VARIATIONAL.md §4.7: the two solvers of Phase B reach the same solution, to 1e-13, from
    // the same state at every step of a run.
    for alpha in [0.0, -0.5] {
        for tab in tableaux() {
            let mut newton = Variational::new(tab.clone(), alpha, 0.1);
            let mut chord =
                Variational::new(tab.clone(), alpha, 0.1).with_solver(PhaseBSolver::Chord);
            let mut a = pendulum_start();
            let (mut worst, mut iterations, mut jacobians) = (0.0_f64, 0, 0);
            for _ in 0..20 {
                let mut b = a;
                newton.step(&Pendulum, &mut a).unwrap();
                chord.step(&Pendulum, &mut b).unwrap();
                worst = worst.max(max_diff(&a, &b));
                iterations = iterations.max(chord.last_iterations());
                jacobians = jacobians.max(newton.last_jacobians());
                assert_eq!(chord.last_jacobians(), 0);
            }
            // Simplified Newton: the finite-difference Jacobian is formed once or twice a step
            // here, not at every iteration.
            assert!(
                (1..=2).contains(&jacobians),
                "{} α⁻ = {alpha}: {jacobians}",
                tab.name()
            );
            println!(
                "{} α⁻ = {alpha}: chord − Newton {worst:.1e}, chord iterations ≤ {iterations}, Newton {}",
                tab.name(),
                newton.last_iterations()
            );
            assert!(worst < 1e-13, "{} α⁻ = {alpha}: {worst}", tab.name());
        }
    }
}

#[test]
fn bad_input_is_a_typed_error_and_loses_nothing() {
    let mut m = Variational::new(Tableau::rk4(), 0.0, 0.0);
    let s0 = pendulum_start();
    let mut s = s0;
    assert!(matches!(
        m.step(&Pendulum, &mut s),
        Err(StepError {
            kind: StepErrorKind::InvalidStepSize { .. },
            ..
        })
    ));
    assert_eq!(s, s0);
    let mut m = Variational::new(Tableau::rk4(), 0.0, 0.1);
    s.v[0] = f64::NAN;
    let bad = s;
    assert!(matches!(
        m.step(&Pendulum, &mut s),
        Err(StepError {
            step: 0,
            kind: StepErrorKind::NonFinite(_),
            ..
        })
    ));
    assert_eq!(s.q, bad.q);
    // Tableaux that are not explicit, consistent or well-formed.
    assert!(matches!(
        Tableau::new(vec![vec![0.5]], vec![1.0], vec![0.5]),
        Err(TableauError::NotExplicit(0, 0, _))
    ));
    assert!(matches!(
        Tableau::new(
            vec![vec![0.0, 0.0], vec![1.0, 0.0]],
            vec![0.5, 0.4],
            vec![0.0, 1.0]
        ),
        Err(TableauError::Weights(_))
    ));
    assert!(matches!(
        Tableau::new(
            vec![vec![0.0, 0.0], vec![1.0, 0.0]],
            vec![0.5, 0.5],
            vec![0.0, 0.5]
        ),
        Err(TableauError::Nodes(1, _, _))
    ));
    assert!(matches!(
        Tableau::new(vec![vec![0.0]], vec![1.0, 0.0], vec![0.0]),
        Err(TableauError::Shape(_))
    ));
    // A custom tableau equal to Heun's gives Heun's trajectory.
    let custom = Tableau::new(
        vec![vec![0.0, 0.0], vec![1.0, 0.0]],
        vec![0.5, 0.5],
        vec![0.0, 1.0],
    )
    .unwrap();
    let a = run(
        &Pendulum,
        &mut Variational::new(custom, 0.0, 0.1),
        pendulum_start(),
        5,
    );
    let b = run(
        &Pendulum,
        &mut Variational::new(Tableau::heun(), 0.0, 0.1),
        pendulum_start(),
        5,
    );
    assert_eq!(a, b);
}

#[test]
fn a_step_allocates_nothing() {
    let mut m = Variational::new(Tableau::rk4(), -0.5, 0.1);
    let mut chord = Variational::new(Tableau::kutta3(), 0.0, 0.1).with_solver(PhaseBSolver::Chord);
    let sys = DoublePendulum::paper();
    let mut s = DoublePendulum::initial_state();
    let mut c = DoublePendulum::initial_state();
    m.step(&sys, &mut s).unwrap();
    chord.step(&sys, &mut c).unwrap();
    let n = counting_alloc::allocations_during(|| {
        for _ in 0..20 {
            m.step(&sys, &mut s).unwrap();
            chord.step(&sys, &mut c).unwrap();
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn a_step_too_large_to_solve_is_a_typed_error() {
    // h = 3, 6, 12 on the pendulum: the layer's segments no longer determine the step
    // (docs/VARIATIONAL.md §2 needs small h); the step fails with a typed error and the state is
    // kept.
    let mut failures = 0;
    for h in [3.0, 6.0, 12.0] {
        for solver in [PhaseBSolver::Newton, PhaseBSolver::Chord] {
            let mut m = Variational::new(Tableau::rk4(), 0.0, h).with_solver(solver);
            let s0 = pendulum_start();
            let mut s = s0;
            match m.step(&Pendulum, &mut s) {
                Ok(()) => {}
                Err(e) => {
                    println!("h = {h}, {solver:?}: {e}");
                    assert!(matches!(
                        e,
                        StepError {
                            step: 0,
                            kind: StepErrorKind::NotConverged { .. },
                            ..
                        } | StepError {
                            step: 0,
                            kind: StepErrorKind::Solve(SolveFailure::Singular { .. }),
                            ..
                        } | StepError {
                            step: 0,
                            kind: StepErrorKind::NonFinite(_),
                            ..
                        }
                    ));
                    assert_eq!(s, s0);
                    failures += 1;
                }
            }
        }
    }
    assert!(failures > 0, "no step failed");
}
