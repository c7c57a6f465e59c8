//! SHAKE (Fernández-Pendás, eq. 4, `docs/INTEGRATORS.md` §7) on small systems with closed forms:
//! the sign and value of the multiplier on a single pendulum, the Gauss–Seidel iteration being
//! Newton for one constraint, no constraints being velocity Verlet, caching, error paths, the
//! driver. The double pendulum is tested in `tests/tests/workspace/constrained_double_pendulum.rs`.

use zs_runtime::driver::run;
use zs_runtime::verify::slope;
use zs_runtime::{
    ConstraintObserver, Potential, Rattle, Shake, ShakeSolver, SolveFailure, State, StepError,
    StepErrorKind, VelocityVerlet, mechanical_system,
};

/// A planar pendulum: bob of mass `mass` on a rod of length `length` from the origin, gravity
/// `gravity` along `-y`. `V = mass·gravity·y`, `g(q) = x² + y² - length²`.
pub struct Pendulum {
    pub length: f64,
    pub mass: f64,
    pub gravity: f64,
}

#[mechanical_system]
impl Pendulum {
    fn masses(&self) -> [f64; 2] {
        [self.mass, self.mass]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        self.mass * self.gravity * q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - self.length * self.length]
    }
}

const PENDULUM: Pendulum = Pendulum {
    length: 1.5,
    mass: 2.0,
    gravity: 9.81,
};

impl Pendulum {
    /// On the circle at angle `theta` from the downward vertical, angular rate `rate`.
    fn state(&self, theta: f64, rate: f64) -> State<2> {
        let (s, c) = theta.sin_cos();
        State::new(
            [self.length * s, -self.length * c],
            [self.length * rate * c, self.length * rate * s],
        )
    }

    /// The exact multiplier at a state on the tangent bundle, in the sign of `Shake` (constraint
    /// force `-∇g λ = -2qλ`). Differentiating `g(q(t)) = 0` twice: `|v|² + q·q̈ = 0` with
    /// `m q̈ = -∇V - 2qλ`, so `λ = (m|v|² - q·∇V) / (2|q|²)`. Here `q·∇V = m·gravity·y`:
    /// `λ = m(|v|² + gravity·ℓ cos θ)/(2ℓ²)`, half the rod tension over `ℓ` (`|2qλ| = 2ℓλ`).
    fn exact_lambda(&self, s: &State<2>) -> f64 {
        let v2 = s.v[0] * s.v[0] + s.v[1] * s.v[1];
        let q_grad = s.q[0] * self.gradient(&s.q)[0] + s.q[1] * self.gradient(&s.q)[1];
        (self.mass * v2 - q_grad) / (2.0 * (s.q[0] * s.q[0] + s.q[1] * s.q[1]))
    }
}

fn show(v: &[f64]) -> String {
    v.iter()
        .map(|e| format!("{e:.3e}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn single_pendulum_multiplier_has_the_closed_form_value_and_sign() {
    let p = PENDULUM;
    let s0 = p.state(0.7, 1.3);
    let exact = p.exact_lambda(&s0);
    // Tension m v²/ℓ + m g cos θ = 2ℓλ > 0: the rod pulls the bob towards the pivot.
    let tension = p.mass * (1.5 * 1.3f64).powi(2) / 1.5 + p.mass * 9.81 * 0.7f64.cos();
    assert!((2.0 * 1.5 * exact - tension).abs() < 1e-12 * tension);
    assert!(exact > 0.0);

    let hs = [0.02, 0.01, 0.005, 0.0025];
    for solver in [ShakeSolver::GaussSeidel, ShakeSolver::Newton] {
        let errs: Vec<f64> = hs
            .iter()
            .map(|&h| {
                let mut shake = Shake::new(h).with_solver(solver).with_tolerance(1e-13);
                let mut s = s0;
                shake.step(&p, &mut s).unwrap();
                assert_eq!(shake.multipliers_time(), 0.0);
                // The incoming velocity is tangent: nothing to remove.
                let (l, solved) = (shake.multipliers()[0], shake.solved_multipliers()[0]);
                assert!((l - solved).abs() < 1e-9 * exact, "{l} {solved}");
                (l - exact).abs()
            })
            .collect();
        let k = slope(&hs, &errs);
        println!(
            "{}: λ(0) = {exact:.6}, |λ_0 - λ(0)| = {}, slope {k:.3}",
            solver.name(),
            show(&errs)
        );
        // λ_0 = λ(t_0) + O(h) (module docs): first order, and already close.
        assert!((k - 1.0).abs() < 0.1, "slope {k}");
        assert!(errs[0] < 0.05 * exact, "{errs:?}");
    }
}

#[test]
fn symmetric_multiplier_average_is_second_order() {
    // RATTLE's position multiplier λ_n and velocity multiplier μ_n (from the previous step, at q_n)
    // bracket λ(t_n) with opposite O(h) errors; their mean is Fernández-Pendás's SHAKE multiplier
    // ½(λ^(r) + λ^(v)) (eq. 6), an O(h²) estimate. Measured against the closed form at the
    // numerical state (q_n, v_n), which lies on the tangent bundle.
    let p = PENDULUM;
    let hs = [0.02, 0.01, 0.005, 0.0025];
    let (mut e_one, mut e_avg) = (vec![], vec![]);
    for &h in &hs {
        let mut rattle = Rattle::new(h)
            .with_solver(ShakeSolver::Newton)
            .with_tolerance(1e-14);
        let mut s = p.state(0.7, 1.3);
        let n = (0.2 / h).round() as usize;
        for _ in 0..n {
            rattle.step(&p, &mut s).unwrap();
        }
        let mu_n = rattle.velocity_multipliers()[0];
        let exact = p.exact_lambda(&s);
        rattle.step(&p, &mut s).unwrap();
        let lambda_n = rattle.multipliers()[0];
        e_one.push((lambda_n - exact).abs().max((mu_n - exact).abs()));
        e_avg.push((0.5 * (lambda_n + mu_n) - exact).abs());
    }
    let (k1, k2) = (slope(&hs, &e_one), slope(&hs, &e_avg));
    println!("max(|λ_n - λ|, |μ_n - λ|) = {} slope {k1:.3}", show(&e_one));
    println!("|(λ_n + μ_n)/2 - λ|       = {} slope {k2:.3}", show(&e_avg));
    assert!((k1 - 1.0).abs() < 0.1, "{k1}");
    assert!((k2 - 2.0).abs() < 0.1, "{k2}");
}

#[test]
fn gauss_seidel_is_newton_for_one_constraint() {
    // With m = 1 the SHAKE sweep ΔΛ = g(Q)/(∇g(Q)·M⁻¹∇g(q_n)) is the scalar Newton step:
    // the same arithmetic, the same bits.
    let p = PENDULUM;
    let mut gs = Shake::new(0.05).with_solver(ShakeSolver::GaussSeidel);
    let mut nt = Shake::new(0.05).with_solver(ShakeSolver::Newton);
    let (mut a, mut b) = (p.state(0.3, -2.0), p.state(0.3, -2.0));
    for _ in 0..200 {
        gs.step(&p, &mut a).unwrap();
        nt.step(&p, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(gs.multipliers(), nt.multipliers());
    }
    assert_eq!(gs.stats().iterations, nt.stats().iterations);
}

/// A particle in a plane with an anharmonic potential and no constraints.
pub struct Free;

#[mechanical_system]
impl Free {
    fn masses(&self) -> [f64; 2] {
        [1.0, 3.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        0.5 * q[0] * q[0] + q[1].powi(4) + 0.3 * q[0] * q[1]
    }
}

#[test]
fn no_constraints_is_velocity_verlet() {
    let mut shake = Shake::new(0.05);
    let mut rattle = Rattle::new(0.05);
    let mut vv = VelocityVerlet::new(0.05);
    let s0 = State::new([1.0, -0.5], [0.2, 0.7]);
    let (mut a, mut b, mut c) = (s0, s0, s0);
    let mut d = 0.0f64;
    for _ in 0..1000 {
        shake.step(&Free, &mut a).unwrap();
        rattle.step(&Free, &mut b).unwrap();
        vv.step(&Free, &mut c).unwrap();
        assert_eq!(a, b);
        for i in 0..2 {
            d = d.max((a.q[i] - c.q[i]).abs()).max((a.v[i] - c.v[i]).abs());
        }
    }
    // Same formulas up to the order of the floating-point operations (p = Mv, then M⁻¹p).
    println!("max |SHAKE - Verlet| over 1000 steps without constraints: {d:.2e}");
    assert!(d < 1e-12, "{d:e}");
    assert_eq!(shake.stats().iterations, 0);
    assert_eq!(shake.multipliers(), [0.0; 0]);
}

#[test]
fn gradient_and_jacobian_are_cached_between_steps() {
    let p = PENDULUM;
    let mut shake = Shake::new(0.01).with_solver(ShakeSolver::Newton);
    let mut s = p.state(0.5, 0.0);
    for _ in 0..50 {
        shake.step(&p, &mut s).unwrap();
    }
    let st = shake.stats();
    // One ∇V per step plus the first step's ∇V(q_0).
    assert_eq!(st.gradient_evaluations, 51);
    assert_eq!(st.cache_hits, 49);
    // (g, G): one per iteration plus the final check, plus the first step's G(q_0).
    assert_eq!(st.constraint_evaluations, st.iterations + 50 + 1);

    // A fresh integrator on the same path gives the same bits: the cache is exact.
    let mut fresh_path = p.state(0.5, 0.0);
    let mut reference = p.state(0.5, 0.0);
    let mut cached = Shake::new(0.01).with_solver(ShakeSolver::Newton);
    for _ in 0..20 {
        let mut fresh = Shake::new(0.01).with_solver(ShakeSolver::Newton);
        fresh.step(&p, &mut fresh_path).unwrap();
        cached.step(&p, &mut reference).unwrap();
    }
    assert_eq!(fresh_path, reference);

    // A moved state is re-evaluated; reset() forces it.
    let before = shake.stats().gradient_evaluations;
    s.q[0] += 1e-9;
    shake.step(&p, &mut s).unwrap();
    assert_eq!(shake.stats().gradient_evaluations, before + 2);
    shake.reset();
    shake.step(&p, &mut s).unwrap();
    assert_eq!(shake.stats().gradient_evaluations, before + 4);
}

#[test]
fn error_paths_leave_the_state_untouched() {
    let p = PENDULUM;
    let s0 = p.state(0.5, 1.0);

    for h in [0.0, f64::NAN, f64::INFINITY] {
        let mut s = s0;
        let err = Shake::new(h).step(&p, &mut s).unwrap_err();
        assert!(
            matches!(
                err,
                StepError {
                    step: 0,
                    kind: StepErrorKind::InvalidStepSize { .. },
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(s, s0);
    }

    // A NaN position: the constraint values are not finite.
    let mut s = s0;
    s.q[0] = f64::NAN;
    let before = s;
    let err = Shake::new(0.01).step(&p, &mut s).unwrap_err();
    assert!(
        matches!(
            err,
            StepError {
                kind: StepErrorKind::NonFinite(_),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(s.q[1], before.q[1]);
    assert!(s.q[0].is_nan() && s.v == before.v && s.t == before.t);

    // Cap 0: only a predictor already on the manifold is accepted.
    let mut s = s0;
    let err = Shake::new(0.01)
        .with_max_iterations(0)
        .step(&p, &mut s)
        .unwrap_err();
    match err {
        StepError {
            kind:
                StepErrorKind::NotConverged {
                    iterations,
                    residual,
                    solver,
                    ..
                },
            ..
        } => {
            assert_eq!((iterations, solver), (0, "SHAKE"));
            // The Verlet predictor leaves the circle by O(h²).
            assert!(residual > 1e-6 && residual < 1e-2, "{residual:e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s, s0);
}

/// Two copies of the same constraint: `G M⁻¹ Gᵀ` is singular.
pub struct Doubled;

#[mechanical_system]
impl Doubled {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 2] {
        let g = q[0] * q[0] + q[1] * q[1] - 1.0;
        [g, g]
    }
}

#[test]
fn dependent_constraints_are_a_singular_matrix_error() {
    let s0 = State::new([1.0, 0.0], [0.0, 0.5]);
    for solver in [ShakeSolver::GaussSeidel, ShakeSolver::Newton] {
        let mut s = s0;
        let err = Shake::new(0.01)
            .with_solver(solver)
            .step(&Doubled, &mut s)
            .unwrap_err();
        assert!(
            matches!(
                err,
                StepError {
                    kind: StepErrorKind::Solve(SolveFailure::Singular { n: 2, .. }),
                    ..
                }
            ),
            "{solver:?}: {err}"
        );
        assert_eq!(s, s0);
    }
}

#[test]
fn runs_under_the_driver() {
    let p = PENDULUM;
    let mut s = p.state(1.0, 0.0);
    let mut shake = Shake::new(0.01).with_tolerance(1e-13);
    let mut constraint = ConstraintObserver::new(&p);
    let summary = run(&mut shake, &p, &mut s, 2.0, &mut [&mut constraint]);
    assert!(summary.is_ok(), "{:?}", summary.error);
    assert_eq!((summary.steps, s.t), (200, 2.0));
    assert!(
        constraint.max_residual() <= 1e-13,
        "{}",
        constraint.max_residual()
    );
    assert_eq!(constraint.samples(), 201);
    assert_eq!(zs_runtime::Clocked::name(&shake), "shake");
}
