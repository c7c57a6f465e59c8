//! Normal modes (`zs_runtime::modes`) against the hand-written Hessians: the eigenvalues of
//! `M^{-1/2} H M^{-1/2}` from the generated, assembled Hessian equal those of the independent
//! hand-written one (diagonalised by nalgebra, not faer) to 1e-9 of the largest, at random
//! configurations, and each mode solves `H u = λ M u` with the hand-written `H`.

use nalgebra::{DMatrix, SymmetricEigen};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zs_runtime::modes::normal_modes;
use zs_runtime::Model;
use zs_systems::chain::reference::ChainReference;
use zs_systems::chain::PendulumChain;
use zs_systems::dna::reference::DnaReference;
use zs_systems::dna::DnaChain;

/// The largest eigenvalue error and `H u − λ M u` residual of `model`'s modes at `q` against
/// the hand-written Hessian `h`, relative to the largest |λ|.
fn compare<P: Model<Vec<f64>>>(model: &P, q: &[f64], h: &[Vec<f64>]) -> (f64, f64) {
    let n = q.len();
    let mut m = vec![0.0; n];
    model.masses_into_slice(&mut m);
    let modes = normal_modes(model, &q.to_vec()).expect("modes");
    let a = DMatrix::from_fn(n, n, |i, j| h[i][j] / (m[i] * m[j]).sqrt());
    let mut exact: Vec<f64> = SymmetricEigen::new(a).eigenvalues.iter().copied().collect();
    exact.sort_by(f64::total_cmp);
    let big = exact.iter().fold(0.0_f64, |b, x| b.max(x.abs()));
    let values = modes
        .eigenvalues
        .iter()
        .zip(&exact)
        .fold(0.0_f64, |w, (x, y)| w.max((x - y).abs()))
        / big;
    let mut residual = 0.0_f64;
    for k in 0..n {
        // The mass-weighted mode u: x = M^{-1/2} u solves H x = λ M x.
        let x: Vec<f64> = modes
            .mode(k)
            .iter()
            .zip(&m)
            .map(|(u, m)| u / m.sqrt())
            .collect();
        for i in 0..n {
            let hx: f64 = (0..n).map(|j| h[i][j] * x[j]).sum();
            let r = (hx - modes.eigenvalues[k] * m[i] * x[i]) / m[i].sqrt();
            residual = residual.max(r.abs() / big);
        }
    }
    (values, residual)
}

#[test]
fn dna_ring_modes_equal_those_of_the_hand_written_hessian() {
    let n = 40;
    let r = DnaReference {
        epsilon: 1.0 / 1400.0,
        a: 7.0,
        x0: 0.3,
    };
    let sys = DnaChain::paper().assemble(n);
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut worst = (0.0_f64, 0.0_f64);
    for _ in 0..10 {
        let q: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let (v, res) = compare(&sys, &q, &r.hessian(&q));
        worst = (worst.0.max(v), worst.1.max(res));
    }
    eprintln!(
        "dna n = {n}: eigenvalues {:.1e}, residuals {:.1e} of the largest",
        worst.0, worst.1
    );
    assert!(worst.0 <= 1e-9 && worst.1 <= 1e-9, "{worst:?}");
}

#[test]
fn penalized_chain_modes_equal_those_of_the_hand_written_hessian() {
    let n = 8;
    let length = 5f64.sqrt();
    let sys = PendulumChain {
        length,
        gravity: -1.0,
    }
    .assemble(n);
    let r = ChainReference {
        n,
        length,
        gravity: -1.0,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(32);
    let mut worst = (0.0_f64, 0.0_f64);
    for _ in 0..10 {
        let omega = rng.random_range(10.0..40.0);
        let q: Vec<f64> = PendulumChain::initial_state(n)
            .q
            .iter()
            .map(|x| x + rng.random_range(-0.3..0.3))
            .collect();
        let (v, res) = compare(&sys.penalized(omega), &q, &r.hessian(omega, &q));
        worst = (worst.0.max(v), worst.1.max(res));
    }
    eprintln!(
        "penalized chain n = {n}: eigenvalues {:.1e}, residuals {:.1e} of the largest",
        worst.0, worst.1
    );
    assert!(worst.0 <= 1e-9 && worst.1 <= 1e-9, "{worst:?}");
}

#[test]
fn lanczos_on_the_banded_solver_finds_the_dna_rings_lowest_modes() {
    use zs_runtime::modes::lowest_modes;
    let n = 300;
    let sys = DnaChain::paper().assemble(n);
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let q: Vec<f64> = (0..n).map(|_| rng.random_range(-0.3..0.3)).collect();
    let all = normal_modes(&sys, &q).expect("dense");
    // Off the minimum the Hessian has negative eigenvalues: the shift goes below them.
    assert!(all.eigenvalues[0] < 0.0 && all.eigenvalues[0] > -1.0);
    let low = lowest_modes(&sys, &q, 6, -1.0).expect("Lanczos");
    let big = all.eigenvalues.iter().fold(0.0_f64, |b, x| b.max(x.abs()));
    for k in 0..6 {
        assert!(
            (low.eigenvalues[k] - all.eigenvalues[k]).abs() <= 1e-9 * big,
            "mode {k}: {} against {}",
            low.eigenvalues[k],
            all.eigenvalues[k]
        );
    }
}
