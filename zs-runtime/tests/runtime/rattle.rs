//! RATTLE (Fernández-Pendás, `docs/INTEGRATORS.md` §8) on a spherical pendulum (3 coordinates, 1
//! constraint) and a rigid dumbbell on a sphere (6 coordinates, 2 coupled constraints): tangency to
//! round-off, the multipliers reported from a non-tangent start, reversibility, bounded energy, and
//! symplecticity of the one-step map restricted to the tangent bundle. The double pendulum is
//! tested in `tests/tests/workspace/constrained_double_pendulum.rs`.

use zs_runtime::{
    Clocked, MechanicalSystem, Potential, Rattle, Shake, ShakeSolver, State, mechanical_system,
};

/// A spherical pendulum of length 1 with an anisotropic potential (so the motion is not
/// planar): `V = z + 0.3 x y`, `g = |q|² - 1`.
pub struct Spherical;

#[mechanical_system]
impl Spherical {
    fn masses(&self) -> [f64; 3] {
        [1.5, 1.5, 1.5]
    }
    fn potential(&self, q: &[f64; 3]) -> f64 {
        q[2] + 0.3 * q[0] * q[1]
    }
    fn constraints(&self, q: &[f64; 3]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] + q[2] * q[2] - 1.0]
    }
}

/// Two particles of masses 1 and 2: the first on the unit sphere, the second at distance 0.8
/// from the first, under gravity and a soft spring to a point; `N = 6`, `M = 2`, coupled.
pub struct Dumbbell;

#[mechanical_system]
impl Dumbbell {
    fn masses(&self) -> [f64; 6] {
        [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    }
    fn potential(&self, q: &[f64; 6]) -> f64 {
        q[2] + 2.0 * q[5] + 0.5 * ((q[3] - 0.4).powi(2) + q[4] * q[4])
    }
    fn constraints(&self, q: &[f64; 6]) -> [f64; 2] {
        let (dx, dy, dz) = (q[3] - q[0], q[4] - q[1], q[5] - q[2]);
        [
            q[0] * q[0] + q[1] * q[1] + q[2] * q[2] - 1.0,
            dx * dx + dy * dy + dz * dz - 0.64,
        ]
    }
}

fn dumbbell_start() -> State<6> {
    // q1 on the sphere, q2 = q1 + 0.8 e; velocities tangent (checked below).
    let q1 = [0.6, 0.0, -0.8];
    let e = [0.0, 0.6, -0.8];
    let q = [
        q1[0],
        q1[1],
        q1[2],
        q1[0] + 0.8 * e[0],
        q1[1] + 0.8 * e[1],
        q1[2] + 0.8 * e[2],
    ];
    // v1 ⟂ q1, (v2 - v1) ⟂ e.
    let v1 = [0.0, 1.0, 0.0];
    let w = [1.0, 0.4, 0.3];
    State::new(
        q,
        [
            v1[0],
            v1[1],
            v1[2],
            v1[0] + w[0],
            v1[1] + w[1],
            v1[2] + w[2],
        ],
    )
}

/// `max_c |∇g_c(q) · v|`.
fn tangency<S: MechanicalSystem<N, M>, const N: usize, const M: usize>(
    sys: &S,
    s: &State<N>,
) -> f64 {
    sys.constraint_jacobian(&s.q)
        .iter()
        .map(|row| (0..N).map(|i| row[i] * s.v[i]).sum::<f64>().abs())
        .fold(0.0, f64::max)
}

fn energy<S: MechanicalSystem<N, M>, const N: usize, const M: usize>(sys: &S, s: &State<N>) -> f64 {
    s.kinetic_energy(&sys.masses()) + sys.potential(&s.q)
}

#[test]
fn tangent_to_round_off_and_on_the_manifold() {
    let s0 = dumbbell_start();
    assert!(tangency(&Dumbbell, &s0) < 1e-15);
    assert!(Dumbbell.constraints(&s0.q).iter().all(|g| g.abs() < 1e-15));
    for solver in [ShakeSolver::GaussSeidel, ShakeSolver::Newton] {
        let mut rattle = Rattle::new(0.02).with_solver(solver);
        let mut s = s0;
        let (mut tan, mut g) = (0.0f64, 0.0f64);
        for _ in 0..2000 {
            rattle.step(&Dumbbell, &mut s).unwrap();
            tan = tan.max(tangency(&Dumbbell, &s));
            g = g.max(
                Dumbbell
                    .constraints(&s.q)
                    .iter()
                    .fold(0.0, |m, x| m.max(x.abs())),
            );
        }
        println!(
            "{}: max |G v| {tan:.2e}, max |g| {g:.2e}, {:.2} iterations/step",
            solver.name(),
            rattle.stats().iterations as f64 / 2000.0
        );
        assert!(tan <= 1e-12, "{tan:e}");
        assert!(g <= rattle.tolerance(), "{g:e}");
    }
}

#[test]
fn a_non_tangent_start_is_projected_and_reported_as_from_the_projected_state() {
    let sys = Spherical;
    let q0 = [0.6, 0.0, -0.8];
    let tangent = [0.0, 1.0, 0.0];
    let normal = 0.7; // a radial velocity component
    let v_bad: [f64; 3] = core::array::from_fn(|i| tangent[i] + normal * q0[i]);
    let (mut a, mut b) = (State::new(q0, v_bad), State::new(q0, tangent));
    let h = 0.01;
    let (mut ra, mut rb) = (
        Rattle::new(h)
            .with_solver(ShakeSolver::Newton)
            .with_tolerance(1e-14),
        Rattle::new(h)
            .with_solver(ShakeSolver::Newton)
            .with_tolerance(1e-14),
    );
    ra.step(&sys, &mut a).unwrap();
    rb.step(&sys, &mut b).unwrap();
    assert!(tangency(&sys, &a) < 1e-14);
    // The radial component is removed by the position solve: same step as from the tangent start.
    let dq = (0..3).map(|i| (a.q[i] - b.q[i]).abs()).fold(0.0, f64::max);
    let dv = (0..3).map(|i| (a.v[i] - b.v[i]).abs()).fold(0.0, f64::max);
    let (la, lb) = (ra.multipliers()[0], rb.multipliers()[0]);
    println!(
        "non-tangent vs tangent start: |Δq| {dq:.2e} |Δv| {dv:.2e}, λ {la} vs {lb}, \
         solved {} vs {}",
        ra.solved_multipliers()[0],
        rb.solved_multipliers()[0]
    );
    assert!(dq < 1e-14 && dv < 1e-12, "{dq:e} {dv:e}");
    // λ_n = λ_solved - ν_n: the same multiplier, while λ_solved carries the normal velocity:
    // ν = (2/h) (g M⁻¹ gᵀ)⁻¹ ∇g·v = (2/h)·(1.5/4)·2·0.7 for |q| = 1, m = 1.5.
    assert!((la - lb).abs() < 1e-9 * lb.abs(), "{la} {lb}");
    let nu = 2.0 / h * (1.5 / 4.0) * 2.0 * normal;
    assert!((ra.solved_multipliers()[0] - la - nu).abs() < 1e-9 * nu);
}

#[test]
fn reversible_to_round_off() {
    for h in [0.01, 0.1] {
        let mut r = Rattle::new(h)
            .with_solver(ShakeSolver::Newton)
            .with_tolerance(1e-14);
        let s0 = dumbbell_start();
        let mut s = s0;
        for _ in 0..50 {
            r.step(&Dumbbell, &mut s).unwrap();
        }
        r.set_h(-h);
        for _ in 0..50 {
            r.step(&Dumbbell, &mut s).unwrap();
        }
        let e = (0..6)
            .map(|i| (s.q[i] - s0.q[i]).abs().max((s.v[i] - s0.v[i]).abs()))
            .fold(0.0, f64::max);
        println!("h = {h}: 50 steps forward and back: {e:.2e}");
        assert!(e <= 1e-12, "{e:e}");
        assert!(s.t.abs() < 1e-12);
    }
}

#[test]
fn energy_error_stays_bounded_and_scales_as_h_squared() {
    // Symplectic: the energy error oscillates at O(h²) without drift. Compare the largest error
    // over the first 10% of a long run (T = 1000) with the largest over all of it, at two steps;
    // the order is fitted on the first 10% (the motion is chaotic: over T = 1000 the two runs
    // visit different regions, whose error constants differ).
    let hs = [0.04, 0.02];
    let mut early_errs = vec![];
    for &h in &hs {
        let mut r = Rattle::new(h).with_solver(ShakeSolver::Newton);
        let mut s = dumbbell_start();
        let e0 = energy(&Dumbbell, &s);
        let (mut early, mut all) = (0.0f64, 0.0f64);
        let n = (1000.0 / h) as usize;
        for k in 0..n {
            r.step(&Dumbbell, &mut s).unwrap();
            let d = (energy(&Dumbbell, &s) - e0).abs();
            all = all.max(d);
            if k < n / 10 {
                early = early.max(d);
            }
        }
        println!(
            "RATTLE h = {h}: E0 = {e0:.4}, max |E - E0| over T = 100: {early:.3e}, \
             over T = 1000: {all:.3e}"
        );
        assert!(all < 2.0 * early, "energy drifts: {early:e} then {all:e}");
        early_errs.push(early);
    }
    let k = (early_errs[0] / early_errs[1]).log2();
    println!("energy error order: {k:.3}");
    assert!((k - 2.0).abs() < 0.2, "{k}");
}

/// The canonical two-form `Σ dq_i ∧ dp_i` (p = M v) of tangent vectors `(δq, δv)`.
fn two_form<const N: usize>(
    m: &[f64; N],
    a: &([f64; N], [f64; N]),
    b: &([f64; N], [f64; N]),
) -> f64 {
    (0..N)
        .map(|i| m[i] * (a.0[i] * b.1[i] - b.0[i] * a.1[i]))
        .sum()
}

#[test]
fn symplectic_on_the_tangent_bundle() {
    // The tangent bundle of the spherical pendulum is 4-dimensional: chart it by two angles and
    // their rates, push four coordinate directions through the chart (tangent vectors of TM),
    // and through chart ∘ RATTLE; the 4×4 matrices of the canonical two-form on them must agree.
    // Derivatives by central differences (ε = 1e-5: truncation ~ε² ~ 1e-10, rounding ~1e-11).
    let sys = &Spherical;
    let m = sys.masses();
    let chart = |y: &[f64; 4]| -> State<3> {
        let (st, ct) = y[0].sin_cos();
        let (sp, cp) = y[1].sin_cos();
        let q = [st * cp, st * sp, -ct];
        let dq_dt = [ct * cp, ct * sp, st];
        let dq_dp = [-st * sp, st * cp, 0.0];
        State::new(
            q,
            core::array::from_fn(|i| dq_dt[i] * y[2] + dq_dp[i] * y[3]),
        )
    };
    let y0 = [0.9, 0.4, 0.6, -1.1];
    let eps = 1e-5;
    let tangent = |f: &dyn Fn(&[f64; 4]) -> State<3>, k: usize| -> ([f64; 3], [f64; 3]) {
        let (mut yp, mut ym) = (y0, y0);
        yp[k] += eps;
        ym[k] -= eps;
        let (a, b) = (f(&yp), f(&ym));
        (
            core::array::from_fn(|i| (a.q[i] - b.q[i]) / (2.0 * eps)),
            core::array::from_fn(|i| (a.v[i] - b.v[i]) / (2.0 * eps)),
        )
    };
    let step = |solver: ShakeSolver, project: bool| {
        move |y: &[f64; 4]| -> State<3> {
            let mut s = chart(y);
            if project {
                Rattle::new(0.1)
                    .with_solver(solver)
                    .with_tolerance(1e-15)
                    .step(sys, &mut s)
                    .unwrap();
            } else {
                Shake::new(0.1)
                    .with_solver(solver)
                    .with_tolerance(1e-15)
                    .step(sys, &mut s)
                    .unwrap();
            }
            s
        }
    };
    // A consistent map of TM that is not symplectic, to show the measurement can see it:
    // explicit Euler, then q normalized and v projected onto the tangent plane.
    let projected_euler = |y: &[f64; 4]| -> State<3> {
        let s = chart(y);
        let h = 0.1;
        let grad = sys.gradient(&s.q);
        let q: [f64; 3] = core::array::from_fn(|i| s.q[i] + h * s.v[i]);
        let v: [f64; 3] = core::array::from_fn(|i| s.v[i] - h * grad[i] / m[i]);
        let r = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]).sqrt();
        let q = q.map(|x| x / r);
        let vn: f64 = (0..3).map(|i| v[i] * q[i]).sum();
        State::new(q, core::array::from_fn(|i| v[i] - vn * q[i]))
    };
    let before: Vec<_> = (0..4).map(|k| tangent(&chart, k)).collect();
    let defect = |f: &dyn Fn(&[f64; 4]) -> State<3>| -> f64 {
        let after: Vec<_> = (0..4).map(|k| tangent(f, k)).collect();
        let mut d = 0.0f64;
        for k in 0..4 {
            for l in k + 1..4 {
                let w0 = two_form(&m, &before[k], &before[l]);
                let w1 = two_form(&m, &after[k], &after[l]);
                d = d.max((w1 - w0).abs());
            }
        }
        d
    };
    let d_euler = defect(&projected_euler);
    println!("projected explicit Euler (h = 0.1): two-form defect {d_euler:.2e}");
    assert!(d_euler > 1e-3, "{d_euler:e}");
    for solver in [ShakeSolver::Newton, ShakeSolver::GaussSeidel] {
        let (d_rattle, d_shake) = (defect(&step(solver, true)), defect(&step(solver, false)));
        println!(
            "{}: two-form defect on TM after one step (h = 0.1): RATTLE {d_rattle:.2e}, \
             SHAKE {d_shake:.2e}",
            solver.name(),
        );
        assert!(d_rattle < 1e-8, "RATTLE: {d_rattle:e}");
        // SHAKE's output differs from RATTLE's by (h/2)G(q)ᵀμ, and dq ∧ d(Gᵀμ) = 0 on vectors
        // with G dq = 0 (Fernández-Pendás): the restricted form is preserved too.
        assert!(d_shake < 1e-8, "SHAKE: {d_shake:e}");
    }
}
