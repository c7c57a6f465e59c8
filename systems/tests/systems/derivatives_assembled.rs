//! The assembled systems' derivatives checked three ways at random points: the generated
//! kernels (assembled over the topology) against hand-written closed forms (`chain::reference`,
//! `dna::reference`), and both against central finite differences.
//!
//! `cargo test -p zs-systems --test systems derivatives_assembled:: -- --nocapture` prints the
//! worst errors.

use zs_runtime::{HessianPart, Model};
use zs_systems::chain::reference::ChainReference;
use zs_systems::chain::PendulumChain;
use zs_systems::dna::reference::DnaReference;
use zs_systems::dna::DnaChain;
use zs_systems::testing::{rel_err, Rng};

/// Central differences of `f` along every coordinate (step `eps`).
fn fd_gradient(f: &dyn Fn(&[f64]) -> f64, q: &[f64], eps: f64) -> Vec<f64> {
    let mut x = q.to_vec();
    (0..q.len())
        .map(|i| {
            x[i] = q[i] + eps;
            let p = f(&x);
            x[i] = q[i] - eps;
            let m = f(&x);
            x[i] = q[i];
            (p - m) / (2.0 * eps)
        })
        .collect()
}

/// `d²/dt² ∇V(q + t a)` at 0 by central differences of the gradient.
fn fd_third(g: &dyn Fn(&[f64]) -> Vec<f64>, q: &[f64], a: &[f64], eps: f64) -> Vec<f64> {
    let at = |t: f64| g(&q.iter().zip(a).map(|(x, d)| x + t * d).collect::<Vec<_>>());
    let (p, z, m) = (at(eps), at(0.0), at(-eps));
    (0..q.len())
        .map(|i| (p[i] - 2.0 * z[i] + m[i]) / (eps * eps))
        .collect()
}

fn flat(h: &[Vec<f64>]) -> Vec<f64> {
    h.iter().flatten().copied().collect()
}

#[test]
fn chain_generated_hand_written_and_finite_differences_agree() {
    let n = 10;
    let mut rng = Rng(21);
    let mut worst = [0.0f64; 6];
    for case in 0..200 {
        let gravity = if case % 2 == 0 { -1.0 } else { 1.0 };
        let sys = PendulumChain {
            length: 5f64.sqrt(),
            gravity,
        }
        .assemble(n);
        let r = ChainReference {
            n,
            length: 5f64.sqrt(),
            gravity,
        };
        let omega = 20.0 * (1.0 + 0.5 * rng.next());
        // Near the paper's configuration, perturbed.
        let q: Vec<f64> = PendulumChain::initial_state(n)
            .q
            .iter()
            .map(|x| x + 0.3 * rng.next())
            .collect();
        let a: Vec<f64> = (0..2 * n).map(|_| rng.next()).collect();
        let p = sys.penalized(omega);
        let mut g = vec![0.0; 2 * n];
        let mut h = p.new_matrix(HessianPart::Full);
        p.gradient_hessian_into(&q, &mut g, &mut h);
        let mut t = vec![0.0; 2 * n];
        p.third_contraction_into(&q, &a, &mut t);
        let (e0, g0, h0, t0) = (
            r.potential(omega, &q),
            r.gradient(omega, &q),
            r.hessian(omega, &q),
            r.third_contraction(omega, &q, &a),
        );
        worst[0] = worst[0].max((p.potential_at(&q) - e0).abs() / e0.abs());
        worst[1] = worst[1].max(rel_err(&g, &g0));
        worst[2] = worst[2].max(rel_err(&flat(&h.to_dense()), &flat(&h0)));
        worst[3] = worst[3].max(rel_err(&t, &t0));
        // Finite differences, of the reference and of the generated code.
        let fd_g = fd_gradient(&|x| r.potential(omega, x), &q, 1e-6);
        worst[4] = worst[4].max(rel_err(&fd_g, &g)).max(rel_err(&fd_g, &g0));
        let fd_t = fd_third(&|x| r.gradient(omega, x), &q, &a, 1e-4);
        worst[5] = worst[5].max(rel_err(&fd_t, &t)).max(rel_err(&fd_t, &t0));
    }
    eprintln!(
        "chain n = 10, 200 points, worst relative: generated vs hand-written (V, ∇V, H, T) \
         {:?}; finite differences (∇V, T) {:?}",
        &worst[..4],
        &worst[4..]
    );
    // Generated and hand-written: round-off. Finite differences: truncation and rounding of a
    // step 1e-6 (gradient, V ~ ω²·g² ~ 1e2) and 1e-4 (second difference of the gradient).
    assert!(worst[..4].iter().all(|&e| e <= 1e-13), "{worst:?}");
    assert!(worst[4] <= 1e-7 && worst[5] <= 1e-5, "{worst:?}");
}

#[test]
fn dna_generated_hand_written_and_finite_differences_agree() {
    let n = 50;
    let r = DnaReference {
        epsilon: 1.0 / 1400.0,
        a: 7.0,
        x0: 0.3,
    };
    let sys = DnaChain::paper().assemble(n);
    let mut rng = Rng(22);
    let mut worst = [0.0f64; 6];
    for _ in 0..200 {
        // Angles anywhere on the circle (the potential is periodic), directions of size 1.
        let q: Vec<f64> = (0..n).map(|_| 3.5 * rng.next()).collect();
        let a: Vec<f64> = (0..n).map(|_| rng.next()).collect();
        let mut g = vec![0.0; n];
        let mut h = sys.new_matrix(HessianPart::Full);
        sys.gradient_hessian_into(&q, &mut g, &mut h);
        let mut t = vec![0.0; n];
        sys.third_contraction_into(&q, &a, &mut t);
        let e0 = r.potential(&q);
        worst[0] = worst[0].max((sys.potential_at(&q) - e0).abs() / e0.abs());
        worst[1] = worst[1].max(rel_err(&g, &r.gradient(&q)));
        worst[2] = worst[2].max(rel_err(&flat(&h.to_dense()), &flat(&r.hessian(&q))));
        let t0 = r.third_contraction(&q, &a);
        worst[3] = worst[3].max(rel_err(&t, &t0));
        let fd_g = fd_gradient(&|x| r.potential(x), &q, 1e-6);
        worst[4] = worst[4].max(rel_err(&fd_g, &g));
        let fd_t = fd_third(&|x| r.gradient(x), &q, &a, 1e-4);
        worst[5] = worst[5].max(rel_err(&fd_t, &t)).max(rel_err(&fd_t, &t0));
    }
    eprintln!(
        "DNA n = 50, 200 points, worst relative: generated vs hand-written (V, ∇V, H, T) {:?}; \
         finite differences (∇V, T) {:?}",
        &worst[..4],
        &worst[4..]
    );
    assert!(worst[..4].iter().all(|&e| e <= 1e-13), "{worst:?}");
    assert!(worst[4] <= 1e-7 && worst[5] <= 1e-5, "{worst:?}");
}
