//! Hessian-vector products (`Potential::hessian_vector`, `Model::hessian_vector_into`),
//! generated as one directional derivative of the gradient and never forming the Hessian,
//! checked three ways at random points and directions: against the hand-written Hessians times
//! the direction, against the generated Hessian times the direction, and against central
//! differences of the gradient along the direction — fixed-size and assembled, plain and
//! penalized, open clusters and a periodic box with a neighbour list.

use zs_runtime::{HessianPart, MechanicalSystem, Model, Potential};
use zs_systems::chain::reference::ChainReference;
use zs_systems::chain::PendulumChain;
use zs_systems::dna::reference::DnaReference;
use zs_systems::dna::DnaChain;
use zs_systems::double_pendulum::reference::DoublePendulumReference;
use zs_systems::double_pendulum::DoublePendulum;
use zs_systems::testing::{rel_err, Rng};
use zs_systems::water::{self, Water};

fn mat_vec(h: &[Vec<f64>], a: &[f64]) -> Vec<f64> {
    h.iter()
        .map(|r| r.iter().zip(a).map(|(x, y)| x * y).sum())
        .collect()
}

/// `(∇V(q + εa) − ∇V(q − εa)) / 2ε` of an assembled model.
fn fd_hv<P: Model<Vec<f64>>>(p: &P, q: &[f64], a: &[f64], eps: f64) -> Vec<f64> {
    let at = |t: f64| {
        let x: Vec<f64> = q.iter().zip(a).map(|(x, d)| x + t * d).collect();
        let mut g = vec![0.0; q.len()];
        p.gradient_into(&x, &mut g);
        g
    };
    let (plus, minus) = (at(eps), at(-eps));
    plus.iter()
        .zip(&minus)
        .map(|(p, m)| (p - m) / (2.0 * eps))
        .collect()
}

/// The product of `model` at `q` along `a`, and the generated sparse Hessian times `a`.
fn products<P: Model<Vec<f64>>>(p: &P, q: &[f64], a: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut hv = vec![0.0; q.len()];
    p.hessian_vector_into(&q.to_vec(), &a.to_vec(), &mut hv);
    let mut h = p.new_matrix(HessianPart::Full);
    p.hessian_into(&q.to_vec(), &mut h);
    let mut ha = vec![0.0; q.len()];
    h.mul_add(a, &mut ha);
    (hv, ha)
}

#[test]
fn assembled_products_equal_hand_written_and_generated_hessians_times_the_direction() {
    let mut rng = Rng(41);
    let mut worst = [0.0f64; 6];
    let dna = DnaChain::paper().assemble(50);
    let r = DnaReference {
        epsilon: 1.0 / 1400.0,
        a: 7.0,
        x0: 0.3,
    };
    let chain = PendulumChain::paper().assemble(10);
    let rc = ChainReference {
        n: 10,
        length: 5f64.sqrt(),
        gravity: -1.0,
    };
    for _ in 0..50 {
        let q: Vec<f64> = rng.vec(50).iter().map(|x| 3.5 * x).collect();
        let a = rng.vec(50);
        let (hv, ha) = products(&dna, &q, &a);
        worst[0] = worst[0].max(rel_err(&hv, &mat_vec(&r.hessian(&q), &a)));
        worst[1] = worst[1].max(rel_err(&hv, &ha));
        worst[2] = worst[2].max(rel_err(&hv, &fd_hv(&dna, &q, &a, 1e-5)));
        let omega = 20.0 * (1.0 + 0.5 * rng.next());
        let q: Vec<f64> = PendulumChain::initial_state(10)
            .q
            .iter()
            .map(|x| x + 0.3 * rng.next())
            .collect();
        let a = rng.vec(20);
        let p = chain.penalized(omega);
        let (hv, ha) = products(&p, &q, &a);
        worst[3] = worst[3].max(rel_err(&hv, &mat_vec(&rc.hessian(omega, &q), &a)));
        worst[4] = worst[4].max(rel_err(&hv, &ha));
        worst[5] = worst[5].max(rel_err(&hv, &fd_hv(&p, &q, &a, 1e-5)));
    }
    eprintln!(
        "dna (hand-written, generated H, FD) {:?}, penalized chain {:?}",
        &worst[..3],
        &worst[3..]
    );
    assert!(
        worst[0] <= 1e-12 && worst[1] <= 1e-12 && worst[3] <= 1e-12 && worst[4] <= 1e-12,
        "{worst:?}"
    );
    assert!(worst[2] <= 1e-7 && worst[5] <= 1e-7, "{worst:?}");
}

#[test]
fn water_cluster_products_equal_its_sparse_hessian_times_the_direction() {
    // Pair terms of 18 coordinates (TIP3P: Coulomb and LJ) and the rigid-water penalty.
    let w = Water::tip3p();
    let n = 5;
    let sys = w.assemble(n);
    let mut rng = Rng(42);
    let mut worst = [0.0f64; 2];
    for seed in 0..5 {
        let q = w.cluster(n, water::SPACING, seed);
        let a = rng.vec(9 * n);
        for p in [&sys.penalized(0.0), &sys.penalized(water::OMEGA)] {
            let (hv, ha) = products(p, &q, &a);
            worst[0] = worst[0].max(rel_err(&hv, &ha));
            worst[1] = worst[1].max(rel_err(&hv, &fd_hv(p, &q, &a, 1e-5)));
        }
    }
    // The exchange forms of the same Hessian: triplets (both triangles) and dense_into rebuild
    // exactly the matrix `get` reads.
    let q = w.cluster(n, water::SPACING, 7);
    let p = sys.penalized(water::OMEGA);
    let mut h = p.new_matrix(HessianPart::Full);
    p.hessian_into(&q, &mut h);
    let m = 9 * n;
    let mut from_triplets = vec![0.0; m * m];
    for (r, c, v) in h.triplets() {
        assert_eq!(from_triplets[r * m + c], 0.0, "({r}, {c}) listed twice");
        from_triplets[r * m + c] = v;
    }
    let mut dense = vec![0.0; m * m];
    h.dense_into(&mut dense);
    for r in 0..m {
        for c in 0..m {
            assert_eq!(dense[r * m + c], h.get(r, c));
            assert_eq!(from_triplets[r * m + c], h.get(r, c));
        }
    }
    eprintln!("water (generated H, FD) {worst:?}");
    assert!(worst[0] <= 1e-12 && worst[1] <= 1e-6, "{worst:?}");
}

#[test]
fn fixed_size_products_equal_the_hand_written_hessian_times_the_direction() {
    let sys = DoublePendulum::paper();
    let r = DoublePendulumReference::from(&sys);
    let mut rng = Rng(43);
    let mut worst = 0.0f64;
    for _ in 0..200 {
        let q: [f64; 4] = core::array::from_fn(|_| 2.0 * rng.next());
        let a: [f64; 4] = core::array::from_fn(|_| rng.next());
        let omega = 30.0 * (1.0 + rng.next().abs());
        let hv = sys.penalized(omega).hessian_vector(&q, &a);
        let h = r.penalized(omega).hessian(&q);
        let ha: Vec<f64> = h
            .iter()
            .map(|row| row.iter().zip(&a).map(|(x, y)| x * y).sum())
            .collect();
        worst = worst.max(rel_err(&hv, &ha));
        // The generated product is the generated Hessian's, unpenalized too.
        let h = sys.hessian(&q);
        let ha: Vec<f64> = h
            .iter()
            .map(|row| row.iter().zip(&a).map(|(x, y)| x * y).sum())
            .collect();
        worst = worst.max(rel_err(&sys.hessian_vector(&q, &a), &ha));
        let mut out = [0.0; 4];
        Model::hessian_vector_into(&sys.penalized(omega), &q, &a, &mut out);
        assert_eq!(out, sys.penalized_hessian_vector(omega, &q, &a));
    }
    eprintln!("double pendulum: {worst:.1e}");
    assert!(worst <= 1e-13, "{worst}");
}
