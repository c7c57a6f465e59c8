//! The impulse family of the impulse paper (`Impulse`, `MollifiedImpulse`, `ProjectedImpulse`) on a
//! hand-written stiff spring pendulum (one mass on a stiff spring, under gravity, N = 2, M = 1):
//! the projection and its derivative against closed forms and finite differences, the projected
//! kick's tangency, energy conservation of the micro-step oscillation, reversibility, symplecticity
//! (impulse and mollified: yes; projected: no, the impulse paper, §2.3), error paths, and zero
//! allocations per step.
//!
//! The convergence experiment (the impulse paper, Figs. 1–3) is
//! `tests/tests/workspace/impulse_convergence.rs`.

use zs_runtime::integrators::impulse::{
    ProjectionFailure, mollified_gradient, project, projected_covector, projected_gradient,
};
use zs_runtime::{
    Clocked, ConstraintCurvature, FastPotential, Impulse, MechanicalSystem, MollifiedImpulse,
    Potential, ProjectedImpulse, ProjectionOptions, State, StepError, StepErrorKind, Stepper,
};

// ---------------------------------------------------------------------------------------------
// Counting allocator (this test binary only): steps must allocate nothing. The count is per
// thread, so tests running in parallel do not disturb each other's windows.

use crate::support::counting_alloc;
use counting_alloc::allocations_during;

// ---------------------------------------------------------------------------------------------
// The stiff spring pendulum: q = (x, y), U = gravity·y (the slow potential, unit "weight"),
// W = ½ (k/ε²)(|q| − ℓ)², g = |q|² − ℓ², masses (mx, my) (unequal masses make the M-orthogonal
// projection differ from the Euclidean one).

#[derive(Debug, Clone, Copy)]
struct SpringPendulum {
    eps: f64,
    k: f64,
    l: f64,
    gravity: f64,
    masses: [f64; 2],
}

impl SpringPendulum {
    fn new(eps: f64) -> Self {
        Self {
            eps,
            k: 1.0,
            l: 1.0,
            gravity: 1.0,
            masses: [1.0, 1.0],
        }
    }
    fn kappa(&self) -> f64 {
        self.k / (self.eps * self.eps)
    }
}

impl Potential<2> for SpringPendulum {
    fn masses(&self) -> [f64; 2] {
        self.masses
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        self.gravity * q[1]
    }
    fn gradient(&self, _q: &[f64; 2]) -> [f64; 2] {
        [0.0, self.gravity]
    }
    fn hessian(&self, _q: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0; 2]; 2]
    }
    fn third_contraction(&self, _q: &[f64; 2], _a: &[f64; 2]) -> [f64; 2] {
        [0.0; 2]
    }
}

impl FastPotential<2> for SpringPendulum {
    fn fast_potential(&self, q: &[f64; 2]) -> f64 {
        let s = q[0].hypot(q[1]);
        0.5 * self.kappa() * (s - self.l).powi(2)
    }
    fn fast_gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        let s = q[0].hypot(q[1]);
        let c = self.kappa() * (s - self.l) / s;
        [c * q[0], c * q[1]]
    }
    fn fast_hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let s = q[0].hypot(q[1]);
        let u = [q[0] / s, q[1] / s];
        let (a, b) = (self.kappa() * self.l / s, self.kappa() * (1.0 - self.l / s));
        [
            [a * u[0] * u[0] + b, a * u[0] * u[1]],
            [a * u[1] * u[0], a * u[1] * u[1] + b],
        ]
    }
}

impl MechanicalSystem<2, 1> for SpringPendulum {
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - self.l * self.l]
    }
    fn constraint_jacobian(&self, q: &[f64; 2]) -> [[f64; 2]; 1] {
        [[2.0 * q[0], 2.0 * q[1]]]
    }
    fn penalized_potential(&self, omega: f64, q: &[f64; 2]) -> f64 {
        let g = self.constraints(q)[0];
        self.potential(q) + 0.5 * omega * omega * g * g
    }
    fn penalized_gradient(&self, omega: f64, q: &[f64; 2]) -> [f64; 2] {
        let g = self.constraints(q)[0];
        let w2 = omega * omega;
        [2.0 * w2 * g * q[0], self.gravity + 2.0 * w2 * g * q[1]]
    }
    fn penalized_hessian(&self, omega: f64, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let g = self.constraints(q)[0];
        let w2 = omega * omega;
        core::array::from_fn(|i| {
            core::array::from_fn(|j| w2 * (4.0 * q[i] * q[j] + if i == j { 2.0 * g } else { 0.0 }))
        })
    }
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        // ω² Σ [2 (n·a) H a + (aᵀHa) n], n = 2q, H = 2I
        let w2 = omega * omega;
        let na = 2.0 * (q[0] * a[0] + q[1] * a[1]);
        let aha = 2.0 * (a[0] * a[0] + a[1] * a[1]);
        core::array::from_fn(|i| w2 * (2.0 * na * 2.0 * a[i] + aha * 2.0 * q[i]))
    }
}

impl ConstraintCurvature<2, 1> for SpringPendulum {
    fn weighted_constraint_hessian(&self, _q: &[f64; 2], lambda: &[f64; 1]) -> [[f64; 2]; 2] {
        [[2.0 * lambda[0], 0.0], [0.0, 2.0 * lambda[0]]]
    }
}

/// On the manifold at angle θ from the downward vertical, with a normal (radial) velocity
/// `vr` and a tangential one `vt`: bounded energy (the impulse paper, eq. 6).
fn state(sys: &SpringPendulum, theta: f64, vr: f64, vt: f64) -> State<2> {
    let u = [theta.sin(), -theta.cos()];
    let n = [-u[1], u[0]];
    State::new(
        [sys.l * u[0], sys.l * u[1]],
        [vr * u[0] + vt * n[0], vr * u[1] + vt * n[1]],
    )
}

fn norm_inf(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// A point `O(0.05)` off the manifold.
const Q_OFF: [f64; 2] = [0.61, -0.83];

// ---------------------------------------------------------------------------------------------
// The projection π(q) of the impulse paper, eq. 15 and the mollified force.

#[test]
fn projection_converges_to_the_closed_form() {
    // Equal masses: π(q) = ℓ q/|q|, and from π = q + M⁻¹∇g(π)μ = q + 2πμ/m,
    // μ = (m/2)(1 − |q|/ℓ).
    let sys = SpringPendulum::new(0.01);
    let default = ProjectionOptions::default();
    let tight = ProjectionOptions {
        tolerance: 1e-15,
        max_iterations: 20,
    };
    for q in [Q_OFF, [0.0, -1.3], [0.9, 0.2], [-0.2, -0.7]] {
        let s = q[0].hypot(q[1]);
        let pi_exact = [q[0] / s, q[1] / s];
        let mu_exact = 0.5 * (1.0 - s);
        for opts in [default, tight] {
            let proj = project(&sys, &q, &opts).unwrap();
            let g = sys.constraints(&proj.pi)[0];
            let err = norm_inf(&[proj.pi[0] - pi_exact[0], proj.pi[1] - pi_exact[1]])
                .max((proj.mu[0] - mu_exact).abs());
            println!(
                "q = {q:?}, tol {:.0e}: {} Newton updates, residual {:.1e}, |g(π)| = {:.1e}, \
                 |(π, μ) − exact| = {err:.1e}",
                opts.tolerance,
                proj.iterations,
                proj.residual,
                g.abs()
            );
            assert!(proj.residual <= opts.tolerance);
            assert!(g.abs() <= opts.tolerance, "|g(π)| = {g:e}");
            // the Newton matrix is O(1) here: the error is of the size of the residual
            assert!(err <= 10.0 * opts.tolerance, "{err:e}");
            assert!(proj.iterations <= 6, "Newton should converge quadratically");
        }
    }
    // On the manifold: no update.
    let on = project(&sys, &[0.6, -0.8], &default).unwrap();
    assert_eq!(on.iterations, 0);
}

#[test]
fn projection_is_m_orthogonal_with_unequal_masses() {
    let sys = SpringPendulum {
        masses: [1.0, 3.0],
        ..SpringPendulum::new(0.01)
    };
    let opts = ProjectionOptions {
        tolerance: 1e-15,
        max_iterations: 20,
    };
    let proj = project(&sys, &Q_OFF, &opts).unwrap();
    assert!(sys.constraints(&proj.pi)[0].abs() <= opts.tolerance);
    // M(π − q) is normal to the manifold at π (parallel to ∇g(π) = 2π), and differs from the
    // Euclidean projection.
    let d = [
        sys.masses[0] * (proj.pi[0] - Q_OFF[0]),
        sys.masses[1] * (proj.pi[1] - Q_OFF[1]),
    ];
    let cross = d[0] * proj.pi[1] - d[1] * proj.pi[0];
    assert!(cross.abs() < 1e-14, "M(π − q) × π = {cross:e}");
    let s = Q_OFF[0].hypot(Q_OFF[1]);
    assert!((proj.pi[0] - Q_OFF[0] / s).abs() > 1e-3);
}

#[test]
fn projection_not_converged_is_reported() {
    let sys = SpringPendulum::new(0.01);
    let opts = ProjectionOptions {
        tolerance: 1e-12,
        max_iterations: 1,
    };
    match project(&sys, &Q_OFF, &opts) {
        Err(ProjectionFailure::NotConverged {
            iterations,
            residual,
        }) => {
            assert_eq!(iterations, 1);
            assert!(residual > 1e-12);
        }
        other => panic!("expected NotConverged, got {other:?}"),
    }
    // In a step: a typed error with the step index, state untouched.
    let mut st = MollifiedImpulse::new(0.1, 10).with_projection(opts);
    let mut x = State::new(Q_OFF, [0.1, 0.2]);
    let before = x;
    let err = st.step(&sys, &mut x).unwrap_err();
    assert!(
        matches!(
            err,
            StepError {
                step: 0,
                kind: StepErrorKind::NotConverged { iterations: 1, .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(x, before);
}

#[test]
fn mollified_force_matches_closed_form_and_finite_differences() {
    // Equal masses: Dπ(q) = (ℓ/|q|)(I − uuᵀ), so Dπᵀ∇U = (ℓ/|q|)(∇U − (u·∇U)u).
    let sys = SpringPendulum::new(0.01);
    let opts = ProjectionOptions {
        tolerance: 1e-15,
        max_iterations: 30,
    };
    let (f, _) = mollified_gradient(&sys, &Q_OFF, &opts).unwrap();
    let s = Q_OFF[0].hypot(Q_OFF[1]);
    let u = [Q_OFF[0] / s, Q_OFF[1] / s];
    let gu = [0.0, sys.gravity];
    let ug = u[0] * gu[0] + u[1] * gu[1];
    let exact = [(gu[0] - ug * u[0]) / s, (gu[1] - ug * u[1]) / s];
    let e = norm_inf(&[f[0] - exact[0], f[1] - exact[1]]);
    println!("Dπᵀ∇U(π) vs closed form: {e:.1e}");
    assert!(e < 1e-13);

    // Unequal masses (no closed form at hand): central differences of q ↦ U(π(q)).
    let sys = SpringPendulum {
        masses: [1.0, 3.0],
        ..sys
    };
    let (f, _) = mollified_gradient(&sys, &Q_OFF, &opts).unwrap();
    let h = 1e-6;
    let fd: [f64; 2] = core::array::from_fn(|i| {
        let (mut qp, mut qm) = (Q_OFF, Q_OFF);
        qp[i] += h;
        qm[i] -= h;
        let up = sys.potential(&project(&sys, &qp, &opts).unwrap().pi);
        let um = sys.potential(&project(&sys, &qm, &opts).unwrap().pi);
        (up - um) / (2.0 * h)
    });
    let e = norm_inf(&[f[0] - fd[0], f[1] - fd[1]]);
    println!("Dπᵀ∇U(π) vs central differences (unequal masses): {e:.1e}, f = {f:?}");
    // truncation ~h²|∂³(U∘π)| ~ 1e-12, rounding ~1e-16/1e-6 = 1e-10
    assert!(e < 1e-8, "{e:e}");
    // Lemma 2.1: Dπ(q) = P(q) + O(|q − π(q)|): the two forces differ at first order.
    let pf = projected_gradient(&sys, &Q_OFF).unwrap();
    let d = norm_inf(&[f[0] - pf[0], f[1] - pf[1]]);
    println!("|Dπᵀ∇U(π) − P(q)ᵀ∇U(q)| = {d:.2e} at distance ~0.03 from the manifold");
    assert!(d > 1e-4 && d < 0.2);
}

#[test]
fn projected_kick_is_tangent() {
    // M⁻¹P(q)ᵀ∇U(q) = P(q)M⁻¹∇U(q) is tangent to the level set of g through q: G(q)·it = 0.
    let sys = SpringPendulum {
        masses: [1.0, 3.0],
        ..SpringPendulum::new(0.01)
    };
    let f = projected_gradient(&sys, &Q_OFF).unwrap();
    let a = [f[0] / sys.masses[0], f[1] / sys.masses[1]];
    let gj = sys.constraint_jacobian(&Q_OFF)[0];
    let dot = gj[0] * a[0] + gj[1] * a[1];
    assert!(dot.abs() < 1e-15, "G M⁻¹Pᵀ∇U = {dot:e}");
    // Pᵀ is a projection: Pᵀ(Pᵀy) = Pᵀy.
    let y = [0.3, -1.7];
    let p1 = projected_covector(&sys, &Q_OFF, &y).unwrap();
    let p2 = projected_covector(&sys, &Q_OFF, &p1).unwrap();
    assert!(norm_inf(&[p1[0] - p2[0], p1[1] - p2[1]]) < 1e-15);
}

// ---------------------------------------------------------------------------------------------
// The steppers.

/// Runs `steps` macro steps of each method from `x0` (generic over the trait, so the three
/// are used through `Stepper` exactly as a driver would).
fn run<T: Stepper<SpringPendulum, [f64; 2]>>(
    st: &mut T,
    sys: &SpringPendulum,
    x0: State<2>,
    steps: usize,
) -> State<2> {
    let mut x = x0;
    for _ in 0..steps {
        st.step(sys, &mut x).unwrap();
    }
    x
}

#[test]
fn micro_step_verlet_conserves_the_fast_energy() {
    // With U ≡ 0 every method is micro-step Störmer–Verlet on ½pᵀM⁻¹p + W: its energy error
    // is bounded (no drift over 10⁴ fast periods) and O(δ²).
    let eps = 0.01;
    let sys = SpringPendulum {
        gravity: 0.0,
        ..SpringPendulum::new(eps)
    };
    let x0 = state(&sys, 0.7, 1.0, 0.5);
    let energy = |x: &State<2>| x.kinetic_energy(&sys.masses) + sys.fast_potential(&x.q);
    let e0 = energy(&x0);
    let mut worst = [0.0f64; 2];
    let mut early = [0.0f64; 2];
    let mut late = [0.0f64; 2];
    for (j, micro) in [20usize, 40].into_iter().enumerate() {
        // h = 0.1, δ = h/micro = ε/2, ε/4; T = 100 ≈ 10⁴ periods of the fast oscillation
        let mut st = Impulse::new(0.1, micro);
        let mut x = x0;
        for n in 0..1000 {
            st.step(&sys, &mut x).unwrap();
            let e = (energy(&x) - e0).abs() / e0;
            worst[j] = worst[j].max(e);
            if n < 100 {
                early[j] = early[j].max(e);
            }
            if n >= 900 {
                late[j] = late[j].max(e);
            }
        }
    }
    let ratio = worst[0] / worst[1];
    println!(
        "fast energy, max rel. error over T = 100: δ = ε/2: {:.2e}, δ = ε/4: {:.2e} (ratio \
         {ratio:.2}); first 10%: {:.2e}, {:.2e}; last 10%: {:.2e}, {:.2e}",
        worst[0], worst[1], early[0], early[1], late[0], late[1]
    );
    assert!(worst[0] < 0.1 && worst[1] < 0.03);
    assert!((3.0..5.0).contains(&ratio), "O(δ²): ratio {ratio}");
    // No drift: the error in the last tenth is no larger than in the first tenth (a drift
    // would make it ~10 times larger).
    for j in 0..2 {
        assert!(
            late[j] <= 1.5 * early[j],
            "drift: {} -> {}",
            early[j],
            late[j]
        );
    }
}

fn reversal_error<T: Stepper<SpringPendulum, [f64; 2]>>(mut st: T, sys: &SpringPendulum) -> f64 {
    let x0 = state(sys, 0.9, 0.8, -0.4);
    let h = st.h();
    let x1 = run(&mut st, sys, x0, 5);
    st.set_h(-h);
    let back = run(&mut st, sys, x1, 5);
    let d: Vec<f64> = (0..2)
        .flat_map(|i| [back.q[i] - x0.q[i], back.v[i] - x0.v[i]])
        .collect();
    assert!((back.t - x0.t).abs() < 1e-14);
    norm_inf(&d)
}

#[test]
fn all_three_methods_are_reversible() {
    // The impulse paper: the impulse method is a symmetric splitting (§2.1), the mollified one the
    // same splitting of a modified Hamiltonian, and the projected one "maintains the time-reversal
    // symmetry" (§2.3). Measured: 5 steps of h, then 5 of −h.
    let sys = SpringPendulum {
        masses: [1.0, 3.0],
        ..SpringPendulum::new(0.01)
    };
    let (h, micro) = (0.1, 50);
    let e = [
        reversal_error(Impulse::new(h, micro), &sys),
        reversal_error(MollifiedImpulse::new(h, micro), &sys),
        reversal_error(ProjectedImpulse::new(h, micro), &sys),
    ];
    println!(
        "reversal errors (impulse, mollified, projected): {:.1e} {:.1e} {:.1e}",
        e[0], e[1], e[2]
    );
    for e in e {
        assert!(e < 1e-12, "{e:e}");
    }
}

/// `max |JᵀΩJ − Ω|` of the one-step map in canonical variables `(q, p = Mv)`, by central
/// differences with step `d`.
fn symplecticity_defect<T: Stepper<SpringPendulum, [f64; 2]> + Clone>(
    st: &T,
    sys: &SpringPendulum,
    z0: [f64; 4],
    d: f64,
) -> f64 {
    let m = sys.masses;
    let flow = |z: [f64; 4]| -> [f64; 4] {
        let mut s = st.clone();
        let mut x = State::new([z[0], z[1]], [z[2] / m[0], z[3] / m[1]]);
        s.step(sys, &mut x).unwrap();
        [x.q[0], x.q[1], m[0] * x.v[0], m[1] * x.v[1]]
    };
    let mut j = [[0.0; 4]; 4];
    for c in 0..4 {
        let (mut zp, mut zm) = (z0, z0);
        zp[c] += d;
        zm[c] -= d;
        let (fp, fm) = (flow(zp), flow(zm));
        for r in 0..4 {
            j[r][c] = (fp[r] - fm[r]) / (2.0 * d);
        }
    }
    let omega = |a: usize, b: usize| -> f64 {
        match (a, b) {
            (0, 2) | (1, 3) => 1.0,
            (2, 0) | (3, 1) => -1.0,
            _ => 0.0,
        }
    };
    let mut worst = 0.0f64;
    for a in 0..4 {
        for b in 0..4 {
            let mut s = 0.0;
            for r in 0..4 {
                for c in 0..4 {
                    s += j[r][a] * omega(r, c) * j[c][b];
                }
            }
            worst = worst.max((s - omega(a, b)).abs());
        }
    }
    worst
}

#[test]
fn impulse_and_mollified_are_symplectic_projected_is_not() {
    // Moderately stiff (ε = 0.1) so that central differences resolve the map; off the manifold
    // so that Dπ ≠ P.
    let sys = SpringPendulum {
        masses: [1.0, 3.0],
        ..SpringPendulum::new(0.1)
    };
    let z0 = [0.62, -0.84, 0.3, -0.5];
    let (h, micro, d) = (0.2, 20, 1e-5);
    let opts = ProjectionOptions {
        tolerance: 1e-15,
        max_iterations: 30,
    };
    let imp = symplecticity_defect(&Impulse::new(h, micro), &sys, z0, d);
    let mol = symplecticity_defect(
        &MollifiedImpulse::new(h, micro).with_projection(opts),
        &sys,
        z0,
        d,
    );
    let pro = symplecticity_defect(&ProjectedImpulse::new(h, micro), &sys, z0, d);
    println!("max |JᵀΩJ − Ω|: impulse {imp:.1e}, mollified {mol:.1e}, projected {pro:.1e}");
    // central differences: truncation ~d²·|Φ'''| , rounding ~1e-16·|Φ|/d ~ 1e-10
    assert!(imp < 1e-7 && mol < 1e-7);
    assert!(pro > 1e-3, "projected impulse should not be symplectic");
}

#[test]
fn error_paths_leave_the_state_untouched() {
    let sys = SpringPendulum::new(0.01);
    let x0 = state(&sys, 0.3, 0.5, 0.5);
    for h in [0.0, f64::NAN] {
        let mut x = x0;
        let e = Impulse::new(h, 10).step(&sys, &mut x).unwrap_err();
        assert!(
            matches!(
                e,
                StepError {
                    step: 0,
                    kind: StepErrorKind::InvalidStepSize { .. },
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(x, x0);
    }
    // A non-finite position: reported, state untouched, step index counts completed steps.
    let mut st = ProjectedImpulse::new(0.05, 10);
    let mut x = x0;
    st.step(&sys, &mut x).unwrap();
    st.step(&sys, &mut x).unwrap();
    let mut bad = x;
    bad.v[0] = f64::INFINITY;
    let keep = bad;
    let e = st.step(&sys, &mut bad).unwrap_err();
    assert_eq!(e.step(), 2, "{e:?}");
    assert!(matches!(
        e,
        StepError {
            kind: StepErrorKind::NonFinite(_),
            ..
        }
    ));
    // (∞·0 in the oscillation turns into NaN: compare bit patterns)
    assert_eq!(format!("{bad:?}"), format!("{keep:?}"));
}

#[test]
#[should_panic(expected = "micro_steps must be at least 1")]
fn zero_micro_steps_is_rejected() {
    let _ = Impulse::<2>::new(0.1, 0);
}

#[test]
fn caches_and_counters() {
    let sys = SpringPendulum::new(0.01);
    let x0 = state(&sys, 0.3, 0.5, 0.5);
    let mut st = MollifiedImpulse::new(0.1, 25);
    let mut x = x0;
    for _ in 0..4 {
        st.step(&sys, &mut x).unwrap();
    }
    let s = st.stats();
    // first step: two slow forces; then one per step (the first kick reuses the last one)
    assert_eq!(s.evaluations, 5);
    assert_eq!(s.cache_hits, 3);
    // one ∇W per micro-step, plus the first
    assert_eq!(s.fast_evaluations, 4 * 25 + 1);
    assert!(s.iterations >= 5 && s.max_step_iterations <= 6);
    assert_eq!(st.steps_taken(), 4);
    let last = st.last_projection().unwrap();
    assert!(sys.constraints(&last.pi)[0].abs() <= 1e-12);
    assert!((x.t - 0.4).abs() < 1e-15);
}

#[test]
fn steps_allocate_nothing() {
    let sys = SpringPendulum {
        masses: [1.0, 3.0],
        ..SpringPendulum::new(0.01)
    };
    let x0 = state(&sys, 0.3, 0.5, 0.5);
    let mut a = Impulse::new(0.1, 20);
    let mut b = MollifiedImpulse::new(0.1, 20);
    let mut c = ProjectedImpulse::new(0.1, 20);
    let (mut xa, mut xb, mut xc) = (x0, x0, x0);
    // warm up (nothing is lazily allocated, but be fair)
    a.step(&sys, &mut xa).unwrap();
    b.step(&sys, &mut xb).unwrap();
    c.step(&sys, &mut xc).unwrap();
    let n = allocations_during(|| {
        for _ in 0..50 {
            a.step(&sys, &mut xa).unwrap();
            b.step(&sys, &mut xb).unwrap();
            c.step(&sys, &mut xc).unwrap();
        }
    });
    assert_eq!(n, 0, "allocations during 150 steps");
}
