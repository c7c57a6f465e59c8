//! The Lie-group method of eq. 34 (`zs_systems::rigid_body::cayley`): it stays on SO(3) to
//! rounding, is order 2 in R, agrees with closed forms (the free body, the cubic, the Cayley
//! rotation) and with the penalized system integrated by Z&S as ω grows, fails with typed errors,
//! and allocates nothing per step.

use crate::counting_alloc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zs_runtime::{Clocked, Quantity, State, StepError, StepErrorKind, Stepper, ZhangSkeel};
use zs_systems::rigid_body::cayley::{cayley, solve_cubic, CayleyEuler};
use zs_systems::rigid_body::{
    self, body_angular_velocity, from_q, orthogonality_defect, MagnetizedRigidBody,
};

fn body(b_mu: f64) -> MagnetizedRigidBody {
    MagnetizedRigidBody {
        b_mu,
        ..MagnetizedRigidBody::paper()
    }
}

/// The paper's start integrated by eq. 34 with step `h` to `t_end`.
fn cayley_run(b_mu: f64, h: f64, t_end: f64) -> State<9> {
    let sys = body(b_mu);
    let mut s = MagnetizedRigidBody::initial_state();
    let mut m = CayleyEuler::new(h);
    let n = (t_end / h).round() as u64;
    for _ in 0..n {
        m.step(&sys, &mut s).unwrap();
    }
    s
}

fn frobenius(a: &[f64; 9], b: &[f64; 9]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Rotation by `angle` about the unit vector `k` (Rodrigues), written independently of `cayley`.
fn rodrigues(k: [f64; 3], angle: f64) -> [f64; 9] {
    let (s, c) = angle.sin_cos();
    let kk = |i: usize, j: usize| k[i] * k[j];
    [
        c + kk(0, 0) * (1.0 - c),
        kk(0, 1) * (1.0 - c) - k[2] * s,
        kk(0, 2) * (1.0 - c) + k[1] * s,
        kk(1, 0) * (1.0 - c) + k[2] * s,
        c + kk(1, 1) * (1.0 - c),
        kk(1, 2) * (1.0 - c) - k[0] * s,
        kk(2, 0) * (1.0 - c) - k[1] * s,
        kk(2, 1) * (1.0 - c) + k[0] * s,
        c + kk(2, 2) * (1.0 - c),
    ]
}

#[test]
fn stays_on_so3_to_rounding() {
    for b_mu in [-1.0, 1.0] {
        let sys = body(b_mu);
        let mut s = MagnetizedRigidBody::initial_state();
        let mut m = CayleyEuler::new(rigid_body::H);
        let mut worst = 0.0_f64;
        for _ in 0..10_000 {
            m.step(&sys, &mut s).unwrap();
            worst = worst.max(orthogonality_defect(&s.q));
        }
        println!("Bμ = {b_mu}: max ‖RᵀR − I‖ over 10 000 steps of h = 0.1: {worst:.2e}");
        // Rounding accumulates as a random walk over 10⁴ products of rotations.
        assert!(worst < 1e-13, "{worst}");
        assert_eq!(m.steps_taken(), 10_000);
        assert!((s.t - 1000.0).abs() < 1e-9);
    }
}

#[test]
fn order_two_in_r() {
    // docs/systems/rigid-body.md measured 6.0e-2, 1.5e-2, 3.8e-3, 9.6e-4 at h = 0.1 … 0.0125
    // (against the h = 1e-4 benchmark); T = 10 here.
    let t_end = 10.0;
    let reference = cayley_run(rigid_body::B_MU, 1e-4, t_end);
    let hs = [0.1, 0.05, 0.025, 0.0125];
    let errors: Vec<f64> = hs
        .iter()
        .map(|&h| frobenius(&cayley_run(rigid_body::B_MU, h, t_end).q, &reference.q))
        .collect();
    let orders: Vec<f64> = errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect();
    println!("errors in R at T = 10: {errors:?}, observed orders {orders:.3?}");
    for p in orders {
        assert!((1.9..2.1).contains(&p), "order {p}");
    }
}

#[test]
fn free_body_matches_closed_forms() {
    // Bμ = 0: Ω is constant (the cubic's root is |Ω| itself), and R_k = R_0 cay(hΩ̂)^k is the
    // rotation about Ω by k · 2 atan(h|Ω|/2); the exact flow rotates by t|Ω|.
    let sys = body(0.0);
    let w0 = rigid_body::BODY_ANGULAR_VELOCITY;
    let norm = w0.iter().map(|x| x * x).sum::<f64>().sqrt();
    let axis = w0.map(|x| x / norm);
    let mut worst_discrete = 0.0_f64;
    let mut worst_omega = 0.0_f64;
    let mut errors = Vec::new();
    for h in [0.1, 0.05] {
        let mut s = MagnetizedRigidBody::initial_state();
        let mut m = CayleyEuler::new(h);
        let n = (10.0 / h) as u64;
        for k in 1..=n {
            m.step(&sys, &mut s).unwrap();
            let w = body_angular_velocity(&s);
            for (a, b) in w.iter().zip(&w0) {
                worst_omega = worst_omega.max((a - b).abs());
            }
            let discrete = rodrigues(axis, k as f64 * 2.0 * (0.5 * h * norm).atan());
            worst_discrete = worst_discrete.max(frobenius(&s.q, &discrete));
        }
        errors.push(frobenius(&s.q, &rodrigues(axis, s.t * norm)));
    }
    println!("free body: max |Ω − Ω(0)| {worst_omega:.2e}, max distance to the discrete closed form {worst_discrete:.2e}; to the exact flow at T = 10: {errors:?}");
    assert!(worst_omega < 1e-13, "{worst_omega}");
    // Ω is read back from (R, Ṙ) at each step, so its rounding (worst_omega) accumulates in
    // the rotation angle: at most T · max|δΩ| = 10 · worst_omega, plus the products' rounding.
    assert!(
        worst_discrete < 10.0 * worst_omega + 1e-13,
        "{worst_discrete}"
    );
    let order = (errors[0] / errors[1]).log2();
    assert!((1.95..2.05).contains(&order), "{order}");
}

#[test]
fn cayley_map_and_cubic() {
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    for _ in 0..200 {
        // The Cayley map of x is the rotation about x by 2 atan(|x|/2).
        let x: [f64; 3] = core::array::from_fn(|_| rng.random_range(-3.0..3.0));
        let n = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let c = cayley(x);
        let expect = rodrigues(x.map(|v| v / n), 2.0 * (0.5 * n).atan());
        let flat: [f64; 9] = core::array::from_fn(|k| c[k / 3][k % 3]);
        assert!(frobenius(&flat, &expect) < 1e-14);
        // The cubic s + a s³ = b: the root is nonnegative and solves it to rounding.
        let a = 10f64.powf(rng.random_range(-8.0..4.0));
        let b = 10f64.powf(rng.random_range(-6.0..6.0));
        let s = solve_cubic(a, b).unwrap();
        assert!(s >= 0.0);
        let residual = (s + a * s * s * s - b).abs();
        assert!(
            residual <= 8.0 * f64::EPSILON * b,
            "a {a} b {b}: residual {residual}"
        );
    }
    assert_eq!(solve_cubic(1.0, 0.0), Ok(0.0));
    assert_eq!(solve_cubic(0.0, 2.5), Ok(2.5));
}

#[test]
fn penalized_zs_approaches_eq34_as_omega_grows() {
    // An independent check of eq. 34's torque and sign: the penalized 9-DOF system tends to the
    // rigid body as ω → ∞. Z&S at h = 1e-3 (resolving the penalty) against eq. 34 at h = 1e-4,
    // T = 5, both Bμ signs; the distance must shrink as ω grows.
    for b_mu in [-1.0, 1.0] {
        let reference = cayley_run(b_mu, 1e-4, 5.0);
        let mut distances = Vec::new();
        for omega in [25.0, 100.0] {
            let sys = MagnetizedRigidBody { b_mu, omega };
            let mut s = MagnetizedRigidBody::initial_state();
            let mut zs = ZhangSkeel::new(rigid_body::BETA, 1e-3);
            for _ in 0..5000 {
                zs.step(&sys, &mut s).unwrap();
            }
            distances.push(frobenius(&s.q, &reference.q));
        }
        println!("Bμ = {b_mu}: ‖R_Z&S − R_eq34‖ at T = 5 for ω = 25, 100: {distances:?}");
        assert!(distances[1] < 2e-3, "{distances:?}");
        assert!(distances[1] < 0.5 * distances[0], "{distances:?}");
    }
}

#[test]
fn energy_error_is_bounded_without_drift() {
    // Ω_k+1 is the body velocity *over* the step (R_k+1 = R_k cay(hΩ_k+1)), so the energy read
    // at the step's end, ½|Ω_k+1|² + V(R_k+1), pairs a mid-step velocity with an end position:
    // an O(h) offset that oscillates and does not drift. Pairing it with the step's mean
    // potential, ½|Ω_k+1|² + ½(V(R_k) + V(R_k+1)), removes that offset: O(h²).
    let sys = body(rigid_body::B_MU);
    let kinetic = |s: &State<9>| {
        let w = body_angular_velocity(s);
        0.5 * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    };
    let v = |s: &State<9>| sys.b_mu * from_q(&s.q)[2][2];
    // (max |ΔE_end| over T ≤ 1000, the same over 1000 < T ≤ 2000, max |ΔE_mean| over T ≤ 2000).
    let run = |h: f64| {
        let mut s = MagnetizedRigidBody::initial_state();
        let e0 = kinetic(&s) + v(&s);
        let mut m = CayleyEuler::new(h);
        let n = (1000.0 / h).round() as u64;
        let (mut first, mut second, mut mean) = (0.0_f64, 0.0_f64, 0.0_f64);
        for k in 0..2 * n {
            let before = v(&s);
            m.step(&sys, &mut s).unwrap();
            let d = (kinetic(&s) + v(&s) - e0).abs();
            if k < n {
                first = first.max(d);
            } else {
                second = second.max(d);
            }
            mean = mean.max((kinetic(&s) + 0.5 * (before + v(&s)) - e0).abs());
        }
        (first, second, mean)
    };
    let (coarse, fine) = (run(0.1), run(0.05));
    println!("eq. 34 (|ΔE_end| T ≤ 1000, 1000 < T ≤ 2000, |ΔE_mean|): h = 0.1 {coarse:?}, h = 0.05 {fine:?}");
    let order_end = (coarse.0 / fine.0).log2();
    let order_mean = (coarse.2 / fine.2).log2();
    assert!((0.9..1.2).contains(&order_end), "{order_end}");
    assert!((1.9..2.2).contains(&order_mean), "{order_mean}");
    for (first, second, _) in [coarse, fine] {
        assert!(second <= 1.05 * first, "{first} {second}");
    }
}

#[test]
fn bad_input_is_a_typed_error_and_loses_nothing() {
    let sys = MagnetizedRigidBody::paper();
    let mut s = MagnetizedRigidBody::initial_state();
    let mut m = CayleyEuler::new(0.1);
    m.step(&sys, &mut s).unwrap();
    let good = s;
    s.v[4] = f64::NAN;
    let bad = s;
    let e = m.step(&sys, &mut s).unwrap_err();
    assert!(
        matches!(
            e,
            StepError {
                step: 1,
                kind: StepErrorKind::NonFinite(Quantity::State),
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(s.q, bad.q);
    assert_eq!(s.t, good.t);
    let mut s = good;
    let mut zero = CayleyEuler::new(0.0);
    let e = zero.step(&sys, &mut s).unwrap_err();
    assert!(
        matches!(
            e,
            StepError {
                kind: StepErrorKind::InvalidStepSize { .. },
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(s, good);
    // A huge angular velocity still gives a rotation (Newton on the cubic converges).
    let mut fast = good;
    fast.v = fast.v.map(|x| x * 1e8);
    m.step(&sys, &mut fast).unwrap();
    assert!(orthogonality_defect(&fast.q) < 1e-13);
}

#[test]
fn a_step_allocates_nothing() {
    let sys = MagnetizedRigidBody::paper();
    let mut s = MagnetizedRigidBody::initial_state();
    let mut m = CayleyEuler::new(0.1);
    m.step(&sys, &mut s).unwrap();
    let n = counting_alloc::allocations_during(|| {
        for _ in 0..1000 {
            m.step(&sys, &mut s).unwrap();
        }
    });
    assert_eq!(n, 0);
}
