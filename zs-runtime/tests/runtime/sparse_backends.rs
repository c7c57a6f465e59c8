//! Each backend of the shifted solve `(M + s·H) x = b` against a dense LU (nalgebra) on random
//! block-sparse matrices — positive definite, indefinite, singular — and on the Hessian of an
//! assembled pair system.

use crate::support::assembled;

use std::sync::Arc;

use crate::support::fixtures::Rng;
use nalgebra::{DMatrix, DVector};
use zs_runtime::linalg::{Factorization, Operand, ShiftedSolve, SolveFailure, SolveOptions};
use zs_runtime::sparse::{Backend, BlockLayout, SparseMatrix, SparseSolver};
use zs_runtime::{HessianPart, Model};

/// A random symmetric matrix in `layout` (blocks uniform in [-1, 1), diagonal blocks
/// symmetrized).
fn random_matrix(layout: &Arc<BlockLayout>, rng: &mut Rng) -> SparseMatrix {
    let d = layout.block();
    let mut h = SparseMatrix::zeros(layout.clone());
    for (k, &(i, j)) in layout.pairs().iter().enumerate() {
        let b = h.block_mut(k);
        for r in 0..d {
            for c in 0..d {
                if i != j || c >= r {
                    b[r * d + c] = rng.next();
                }
            }
        }
        if i == j {
            for r in 0..d {
                for c in 0..r {
                    b[r * d + c] = b[c * d + r];
                }
            }
        }
    }
    h
}

fn dense(m: &[f64], s: f64, h: &SparseMatrix) -> DMatrix<f64> {
    let n = m.len();
    let hd = h.to_dense();
    DMatrix::from_fn(n, n, |r, c| s * hd[r][c] + if r == c { m[r] } else { 0.0 })
}

/// A random layout: `bodies` blocks of `d`, a chain of couplings plus `extra` random ones.
fn random_layout(bodies: usize, d: usize, extra: usize, rng: &mut Rng) -> Arc<BlockLayout> {
    let mut pairs: Vec<(usize, usize)> = (1..bodies).map(|i| (i - 1, i)).collect();
    for _ in 0..extra {
        let (i, j) = (rng.below(bodies), rng.below(bodies));
        if i != j {
            pairs.push((i, j));
        }
    }
    BlockLayout::new(d, bodies, pairs)
}

/// Solve with `backend` and with nalgebra's LU; returns (factorization, relative difference,
/// condition number).
fn against_dense(
    backend: Backend,
    layout: &Arc<BlockLayout>,
    m: &[f64],
    s: f64,
    h: &SparseMatrix,
    b: &[f64],
) -> Result<(Factorization, f64, f64), SolveFailure> {
    let mut solver = SparseSolver::new(layout.clone(), backend);
    let mut x = b.to_vec();
    let how = solver.solve_shifted(&m.to_vec(), s, h, &mut x, &SolveOptions::default())?;
    let a = dense(m, s, h);
    let y = a
        .clone()
        .lu()
        .solve(&DVector::from_column_slice(b))
        .unwrap();
    let diff = x
        .iter()
        .zip(y.iter())
        .fold(0.0f64, |w, (p, q)| w.max((p - q).abs()));
    let scale = y.iter().fold(0.0f64, |w, v| w.max(v.abs()));
    let sv = a.singular_values();
    let kappa = sv.max() / sv.min();
    Ok((how, diff / scale, kappa))
}

#[test]
fn every_backend_agrees_with_a_dense_lu_on_positive_definite_matrices() {
    let mut rng = Rng(11);
    let mut worst = [0.0f64; 3];
    for case in 0..60 {
        let d = 1 + case % 4;
        let bodies = 3 + rng.below(40);
        // Block diagonal (both backends) or coupled (sparse only).
        let layout = if case % 3 == 0 {
            BlockLayout::new(d, bodies, [])
        } else {
            random_layout(bodies, d, rng.below(20), &mut rng)
        };
        let n = layout.dimension();
        let h = random_matrix(&layout, &mut rng);
        // Diagonal dominance by the masses: positive definite.
        let m: Vec<f64> = (0..n).map(|_| 3.0 * d as f64 * 8.0 + rng.next()).collect();
        let b: Vec<f64> = (0..n).map(|_| rng.next()).collect();
        let backends: &[Backend] = if layout.is_block_diagonal() {
            &[Backend::BlockDiagonal, Backend::Banded, Backend::Sparse]
        } else {
            &[Backend::Banded, Backend::Sparse]
        };
        for &backend in backends {
            let (how, rel, kappa) = against_dense(backend, &layout, &m, 0.5, &h, &b).unwrap();
            assert_eq!(how, Factorization::Cholesky, "{backend:?}");
            assert!(rel <= 1e-13 * kappa, "{backend:?}: {rel:e}, κ = {kappa:e}");
            let k = match backend {
                Backend::BlockDiagonal => 0,
                Backend::Banded => 1,
                _ => 2,
            };
            worst[k] = worst[k].max(rel / kappa);
        }
    }
    eprintln!(
        "positive definite: worst |x - x_dense| / |x| / κ (block diagonal, banded, sparse): \
         {worst:?}"
    );
}

#[test]
fn indefinite_matrices_fall_back_and_stay_accurate() {
    let mut rng = Rng(12);
    let mut seen = std::collections::BTreeMap::new();
    let mut worst = 0.0f64;
    for case in 0..80 {
        let d = 1 + case % 3;
        let bodies = 4 + rng.below(30);
        let layout = if case % 4 == 0 {
            BlockLayout::new(d, bodies, [])
        } else {
            random_layout(bodies, d, rng.below(15), &mut rng)
        };
        let n = layout.dimension();
        let h = random_matrix(&layout, &mut rng);
        let m: Vec<f64> = (0..n).map(|_| 0.2 + 0.1 * rng.next()).collect();
        let b: Vec<f64> = (0..n).map(|_| rng.next()).collect();
        for backend in [Backend::Auto, Backend::Banded, Backend::Sparse] {
            match against_dense(backend, &layout, &m, 2.0, &h, &b) {
                Ok((how, rel, kappa)) => {
                    *seen.entry(format!("{how:?}")).or_insert(0) += 1;
                    assert!(
                        rel <= 1e-12 * kappa,
                        "{backend:?} {how:?}: {rel:e}, κ = {kappa:e}"
                    );
                    worst = worst.max(rel / kappa);
                }
                Err(e) => panic!("case {case}, {backend:?}: {e:?}"),
            }
        }
    }
    eprintln!("indefinite: factorizations used {seen:?}, worst error / κ {worst:e}");
    // Random indefinite matrices exercise both fallbacks.
    assert!(seen.get("Ldlt").copied().unwrap_or(0) + seen.get("Lu").copied().unwrap_or(0) > 100);
    assert!(seen.get("Lu").copied().unwrap_or(0) > 0, "{seen:?}");
}

#[test]
fn singular_and_non_finite_matrices_are_typed_errors() {
    let mut rng = Rng(13);
    for backend in [Backend::Auto, Backend::Banded, Backend::Sparse] {
        for d in [1, 2, 3] {
            // Block diagonal for Auto (block backend), a chain for Sparse.
            let layout = if backend == Backend::Auto {
                BlockLayout::new(d, 6, [])
            } else {
                random_layout(6, d, 3, &mut rng)
            };
            let n = layout.dimension();
            // M + sH with a zero row and column: singular.
            let mut h = random_matrix(&layout, &mut rng);
            let m: Vec<f64> = (0..n)
                .map(|i| if i == n - 1 { 0.0 } else { 50.0 })
                .collect();
            for k in 0..layout.blocks() {
                let (i, j) = layout.pairs()[k];
                let blk = h.block_mut(k);
                for r in 0..d {
                    for c in 0..d {
                        if (j as usize * d + c == n - 1) || (i as usize * d + r == n - 1) {
                            blk[r * d + c] = 0.0;
                        }
                    }
                }
            }
            let mut solver = SparseSolver::new(layout.clone(), backend);
            let mut x = vec![1.0; n];
            let r = solver.solve_shifted(&m, 1.0, &h, &mut x, &SolveOptions::default());
            assert!(
                matches!(r, Err(SolveFailure::Singular { .. })),
                "{backend:?}, d = {d}: {r:?}"
            );
            // A NaN in the matrix, then in the right-hand side.
            let mut bad = h.clone();
            bad.values_mut()[0] = f64::NAN;
            let mut x = vec![1.0; n];
            let r = solver.solve_shifted(&vec![50.0; n], 1.0, &bad, &mut x, &Default::default());
            assert_eq!(
                r,
                Err(SolveFailure::NonFinite(Operand::Matrix)),
                "{backend:?}"
            );
            let mut x = vec![1.0; n];
            x[0] = f64::INFINITY;
            let r = solver.solve_shifted(&vec![50.0; n], 0.01, &h, &mut x, &Default::default());
            assert_eq!(
                r,
                Err(SolveFailure::NonFinite(Operand::RightHandSide)),
                "{backend:?}"
            );
        }
    }
}

#[test]
fn the_hessian_of_an_assembled_pair_system_is_solved_as_densely() {
    let (beads, q, _) = assembled::beads(60);
    for omega in [0.0, 40.0] {
        let p = beads.penalized(omega);
        let mut h = p.new_matrix(HessianPart::Full);
        let mut g = vec![0.0; q.len()];
        p.gradient_hessian_into(&q, &mut g, &mut h);
        let layout = h.layout().clone();
        let m = vec![1.0; q.len()];
        for s in [0.001, 0.1, 1.0] {
            for backend in [Backend::Sparse, Backend::Banded] {
                let (how, rel, kappa) = against_dense(backend, &layout, &m, s, &h, &g).unwrap();
                eprintln!(
                    "beads 60, ω = {omega}, s = {s}, {backend:?}: {how:?}, {rel:e}, κ = {kappa:e}"
                );
                assert!(rel <= 1e-12 * kappa, "{rel:e}");
            }
        }
    }
}

#[test]
fn rings_and_chains_get_the_banded_backend_with_a_small_bandwidth() {
    // A ring of 200 bodies of 1 coordinate: folded by the ordering to a half-bandwidth of 2.
    let ring = BlockLayout::new(1, 200, (0..200).map(|k| (k, (k + 1) % 200)));
    let s = SparseSolver::new(ring, Backend::Auto);
    assert_eq!(
        (s.backend(), s.half_bandwidth()),
        (Backend::Banded, Some(2))
    );
    // A chain of 2-coordinate bodies: half-bandwidth 3 (two bodies' worth minus one).
    let chain = BlockLayout::new(2, 50, (1..50).map(|k| (k - 1, k)));
    let s = SparseSolver::new(chain, Backend::Auto);
    assert_eq!(
        (s.backend(), s.half_bandwidth()),
        (Backend::Banded, Some(3))
    );
    // All pairs of 40 bodies: dense, left to faer.
    let all = BlockLayout::new(
        2,
        40,
        (0..40).flat_map(|i| (i + 1..40).map(move |j| (i, j))),
    );
    assert_eq!(
        SparseSolver::new(all, Backend::Auto).backend(),
        Backend::Sparse
    );
}
