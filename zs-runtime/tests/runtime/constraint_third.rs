//! The generated `weighted_constraint_third_contraction` (what Patrick et al.'s variational
//! equations need) checked three ways at random points: against a hand-written closed form, against
//! central differences of the generated `weighted_constraint_hessian`, and for a quadratic
//! constraint, where it vanishes.

use zs_runtime::{ConstraintCurvature, ConstraintThirdContraction, mechanical_system};

/// Two non-quadratic constraints: `g1 = q0³ + q1 q2`, `g2 = sin(q0) q2`.
struct Curved;

#[mechanical_system]
impl Curved {
    fn potential(&self, q: &[f64; 3]) -> f64 {
        q[0] * q[1]
    }
    fn constraints(&self, q: &[f64; 3]) -> [f64; 2] {
        [q[0] * q[0] * q[0] + q[1] * q[2], q[0].sin() * q[2]]
    }
}

/// A sphere: `|q|² − 1`, whose third derivatives are zero.
struct Sphere;

#[mechanical_system]
impl Sphere {
    fn potential(&self, q: &[f64; 3]) -> f64 {
        q[2]
    }
    fn constraints(&self, q: &[f64; 3]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] + q[2] * q[2] - 1.0]
    }
}

/// `Σ_c λ_c ∇³g_c[a, a, ·]` by hand: for g1 only `∂³/∂q0³ = 6`; for g2 `∂³/∂q0³ = −cos(q0) q2`
/// and `∂³/∂q0²∂q2 = −sin(q0)` (three orderings).
fn by_hand(q: &[f64; 3], a: &[f64; 3], l: &[f64; 2]) -> [f64; 3] {
    let (s, c) = q[0].sin_cos();
    [
        l[0] * 6.0 * a[0] * a[0] + l[1] * (-c * q[2] * a[0] * a[0] - 2.0 * s * a[0] * a[2]),
        0.0,
        l[1] * (-s * a[0] * a[0]),
    ]
}

/// A small deterministic generator (no dependency): uniform in [−1, 1).
fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

#[test]
fn generated_third_contraction_of_constraints_three_ways() {
    let mut seed = 2026;
    let mut worst_hand = 0.0_f64;
    let mut worst_fd = 0.0_f64;
    for _ in 0..200 {
        let q: [f64; 3] = core::array::from_fn(|_| 1.5 * lcg(&mut seed));
        let a: [f64; 3] = core::array::from_fn(|_| lcg(&mut seed));
        let l: [f64; 2] = core::array::from_fn(|_| 2.0 * lcg(&mut seed));
        let got = Curved.weighted_constraint_third_contraction(&q, &a, &l);
        let hand = by_hand(&q, &a, &l);
        let scale = 1.0 + hand.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        for i in 0..3 {
            worst_hand = worst_hand.max((got[i] - hand[i]).abs() / scale);
        }
        // ∇_q (aᵀ H_λ(q) a) by central differences of the generated Hessian.
        let e = 1e-5;
        for i in 0..3 {
            let quad = |x: &[f64; 3]| {
                let h = Curved.weighted_constraint_hessian(x, &l);
                (0..3)
                    .map(|j| (0..3).map(|k| a[j] * h[j][k] * a[k]).sum::<f64>())
                    .sum::<f64>()
            };
            let (mut p, mut m) = (q, q);
            p[i] += e;
            m[i] -= e;
            let fd = (quad(&p) - quad(&m)) / (2.0 * e);
            worst_fd = worst_fd.max((got[i] - fd).abs() / scale);
        }
        assert_eq!(
            Sphere.weighted_constraint_third_contraction(&q, &a, &[l[0]]),
            [0.0; 3]
        );
    }
    println!(
        "constraint third contraction: vs hand {worst_hand:.1e}, vs central differences {worst_fd:.1e}"
    );
    assert!(worst_hand < 1e-14, "{worst_hand}");
    assert!(worst_fd < 1e-8, "{worst_fd}");
}
