//! Normal-mode analysis: the eigenvalues and eigenvectors of the mass-weighted Hessian
//! `M^{-1/2} H M^{-1/2}` at a configuration (Wilson, Decius & Cross, *Molecular Vibrations*,
//! ch. 2: the harmonic modes `q(t) = q0 + M^{-1/2} u cos(√λ t)`), from the exact Hessian the
//! macro generates — where OpenMM's users take finite differences of forces.
//!
//! Dense: faer's self-adjoint eigensolver on the `n × n` matrix, for up to [`MAX_DENSE`]
//! coordinates (a few thousand take seconds; memory grows as `n²`); beyond, the lowest `k`
//! modes by shift-invert Lanczos on the model's own sparse solver ([`lowest_modes`]). The rigid motions of a
//! free cluster (three translations, three rotations about the centre of mass; translations
//! only in a periodic box) are zero modes at a minimum; [`rigid_motions`] builds their span
//! and [`NormalModes::overlap`] tells how much of a mode lies in it.

use crate::model::{HessianPart, Model};
use crate::vector::Vector;

/// The most coordinates [`normal_modes`] takes (a dense `n × n` matrix: 1.2 GB at the limit).
pub const MAX_DENSE: usize = 12_000;

/// Why a normal-mode analysis failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModesError {
    /// Too many coordinates for the dense eigensolver.
    #[error("{n} coordinates: the dense eigensolver takes at most {MAX_DENSE} (an n × n matrix)")]
    TooLarge {
        /// Coordinates.
        n: usize,
    },
    /// A mass is zero, negative or not finite (`M^{-1/2}` does not exist).
    #[error("coordinate {index} has mass {mass}: normal modes need positive masses")]
    Mass {
        /// The coordinate.
        index: usize,
        /// Its mass.
        mass: f64,
    },
    /// The Hessian has a non-finite entry at this configuration.
    #[error("the Hessian has a non-finite entry at row {row}, column {column}")]
    NonFinite {
        /// Row of the entry.
        row: usize,
        /// Column of the entry.
        column: usize,
    },
    /// The eigensolver did not converge.
    #[error("the symmetric eigensolver did not converge")]
    NoConvergence,
    /// [`lowest_modes`] asked for no modes, more than there are, or with a shift that is not
    /// negative.
    #[error(
        "the lowest {k} of {n} modes with shift {shift}: need 1 ≤ k ≤ n and a negative shift below the lowest eigenvalue"
    )]
    BadRequest {
        /// Modes asked for.
        k: usize,
        /// Coordinates.
        n: usize,
        /// The shift σ.
        shift: f64,
    },
    /// A shifted solve of [`lowest_modes`] failed (a shift above the lowest eigenvalue makes
    /// `H − σM` indefinite).
    #[error("the shifted solve failed: {0}")]
    Solve(String),
}

/// The normal modes at one configuration, in ascending order of eigenvalue.
#[derive(Debug, Clone)]
pub struct NormalModes {
    /// The eigenvalues of `M^{-1/2} H M^{-1/2}`, ascending (squared angular frequencies in the
    /// system's units; negative along directions of negative curvature).
    pub eigenvalues: Vec<f64>,
    /// Orthonormal mass-weighted eigenvectors: mode `k` is `vectors[k n .. (k + 1) n]`.
    vectors: Vec<f64>,
    /// Coordinates `n`.
    dimension: usize,
    /// `1 / √m_i` per coordinate.
    inv_sqrt_m: Vec<f64>,
}

impl NormalModes {
    /// Number of modes found (all `n`, or the lowest `k` of [`lowest_modes`]).
    pub fn len(&self) -> usize {
        self.eigenvalues.len()
    }

    /// Number of coordinates `n`.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// True when there are no coordinates.
    pub fn is_empty(&self) -> bool {
        self.eigenvalues.is_empty()
    }

    /// Mode `k`'s mass-weighted eigenvector `u_k` (unit length).
    pub fn mode(&self, k: usize) -> &[f64] {
        let n = self.dimension;
        &self.vectors[k * n..(k + 1) * n]
    }

    /// Mode `k`'s angular frequency `√λ_k`, negative for a negative eigenvalue (the convention
    /// for an imaginary frequency).
    pub fn angular_frequency(&self, k: usize) -> f64 {
        let l = self.eigenvalues[k];
        l.signum() * l.abs().sqrt()
    }

    /// Mode `k` as a displacement of the coordinates, `M^{-1/2} u_k`, scaled so that its largest
    /// component has magnitude 1 (what an animation shows).
    pub fn displacement(&self, k: usize) -> Vec<f64> {
        let mut d: Vec<f64> = self
            .mode(k)
            .iter()
            .zip(&self.inv_sqrt_m)
            .map(|(u, s)| u * s)
            .collect();
        let big = d.iter().fold(0.0_f64, |a, x| a.max(x.abs()));
        if big > 0.0 {
            d.iter_mut().for_each(|x| *x /= big);
        }
        d
    }

    /// The fraction of mode `k` in the span of `basis` (orthonormal mass-weighted vectors, as
    /// [`rigid_motions`] makes): `Σ_b (b · u_k)²`, from 0 to 1.
    pub fn overlap(&self, k: usize, basis: &[Vec<f64>]) -> f64 {
        let u = self.mode(k);
        basis
            .iter()
            .map(|b| b.iter().zip(u).map(|(x, y)| x * y).sum::<f64>().powi(2))
            .sum()
    }
}

/// The diagonal of `M`, each entry positive and finite (else [`ModesError::Mass`]).
fn positive_masses<V: Vector, P: Model<V> + ?Sized>(model: &P) -> Result<Vec<f64>, ModesError> {
    let mut m = vec![0.0; model.dimension()];
    model.masses_into_slice(&mut m);
    match m
        .iter()
        .enumerate()
        .find(|&(_, &x)| !(x.is_finite() && x > 0.0))
    {
        Some((index, &mass)) => Err(ModesError::Mass { index, mass }),
        None => Ok(m),
    }
}

/// The normal modes of `model` at `q`: its exact Hessian (penalty included when `model` is
/// a penalized view), mass-weighted, diagonalised.
///
/// # Errors
/// [`ModesError`]: too many coordinates, a mass that is not positive, a non-finite Hessian
/// entry, an eigensolver that does not converge.
pub fn normal_modes<V: Vector, P: Model<V> + ?Sized>(
    model: &P,
    q: &V,
) -> Result<NormalModes, ModesError> {
    let (n, m) = dense_masses(model)?;
    let mut h = model.new_matrix(HessianPart::Full);
    model.hessian_into(q, &mut h);
    let mut dense = vec![0.0; n * n];
    V::matrix_dense_into(&h, &mut dense);
    diagonalise(&dense, &m)
}

/// [`normal_modes`] for a model whose Hessian has no place in its sparse matrices (a long-range
/// term, [`crate::long_range::WithLongRange`]): the dense Hessian from `n` exact products
/// `H e_j` ([`Model::hessian_vector_into`]), then the same diagonalisation.
///
/// # Errors
/// As [`normal_modes`].
pub fn normal_modes_by_products<V: Vector, P: Model<V> + ?Sized>(
    model: &P,
    q: &V,
) -> Result<NormalModes, ModesError> {
    let (n, m) = dense_masses(model)?;
    let mut dense = vec![0.0; n * n];
    let (mut unit, mut column) = (V::zeros(n), V::zeros(n));
    for j in 0..n {
        unit.as_mut_slice()[j] = 1.0;
        model.hessian_vector_into(q, &unit, &mut column);
        unit.as_mut_slice()[j] = 0.0;
        for (i, h) in column.as_slice().iter().enumerate() {
            dense[i * n + j] = *h;
        }
    }
    diagonalise(&dense, &m)
}

/// The dimension (at most [`MAX_DENSE`]) and the positive masses of a dense analysis.
fn dense_masses<V: Vector, P: Model<V> + ?Sized>(
    model: &P,
) -> Result<(usize, Vec<f64>), ModesError> {
    let n = model.dimension();
    if n > MAX_DENSE {
        return Err(ModesError::TooLarge { n });
    }
    Ok((n, positive_masses(model)?))
}

/// The modes of the dense Hessian `dense` (row-major, `n × n`) with masses `m`.
fn diagonalise(dense: &[f64], m: &[f64]) -> Result<NormalModes, ModesError> {
    let n = m.len();
    let inv_sqrt_m: Vec<f64> = m.iter().map(|x| 1.0 / x.sqrt()).collect();
    if let Some(at) = dense.iter().position(|x| !x.is_finite()) {
        return Err(ModesError::NonFinite {
            row: at / n,
            column: at % n,
        });
    }
    let a = faer::Mat::<f64>::from_fn(n, n, |i, j| {
        // The mean of the two triangles: symmetric to the last bit whatever the assembly did.
        0.5 * (dense[i * n + j] + dense[j * n + i]) * inv_sqrt_m[i] * inv_sqrt_m[j]
    });
    let evd = a
        .self_adjoint_eigen(faer::Side::Lower)
        .map_err(|_| ModesError::NoConvergence)?;
    let (s, u) = (evd.S(), evd.U());
    let eigenvalues: Vec<f64> = (0..n).map(|k| s[k]).collect();
    let mut vectors = vec![0.0; n * n];
    for (k, v) in vectors.chunks_exact_mut(n.max(1)).enumerate().take(n) {
        for (i, x) in v.iter_mut().enumerate() {
            *x = u[(i, k)];
        }
    }
    Ok(NormalModes {
        eigenvalues,
        vectors,
        dimension: n,
        inv_sqrt_m,
    })
}

/// The `k` modes of lowest eigenvalue, for systems too large for [`normal_modes`] — more
/// precisely the `k` eigenvalues nearest the shift `σ` on its right, which are the lowest when
/// `σ` is below the lowest eigenvalue (pick it so: below zero at a minimum, below the most
/// negative curvature elsewhere; the solvers do not all detect an indefinite `H − σM`). Lanczos
/// (with full reorthogonalization) on the shift-inverted operator
/// `B = M^{1/2} (H − σM)^{-1} M^{1/2}`, whose largest eigenvalues `θ` are the `λ = σ + 1/θ`
/// nearest the shift `σ < λ_min` (Ericsson & Ruhe 1980). Each product is one solve of
/// `(M + sH) z = b` with `s = −1/σ` by the model's own sparse solver (banded, block or faer's
/// Cholesky: factor and solve, O(N) for chains), so nothing of size `n²` is formed. The Krylov
/// space grows until the `k` Ritz pairs' residuals fall below `1e-10 θ`.
///
/// # Errors
/// `shift` not negative or `k` not in `1..=n`; a mass that is not positive; a failed solve (the
/// shift not below the lowest eigenvalue makes `H − σM` indefinite); no convergence.
pub fn lowest_modes<V: Vector, P: Model<V> + ?Sized>(
    model: &P,
    q: &V,
    k: usize,
    shift: f64,
) -> Result<NormalModes, ModesError> {
    use crate::linalg::{ShiftedSolve, SolveOptions};
    let n = model.dimension();
    if !(shift < 0.0 && shift.is_finite()) || k == 0 || k > n {
        return Err(ModesError::BadRequest { k, n, shift });
    }
    let m = positive_masses(model)?;
    let sqrt_m: Vec<f64> = m.iter().map(|x| x.sqrt()).collect();
    let masses = V::try_from_slice(&m).expect("n masses");
    let mut h = model.new_matrix(HessianPart::Full);
    model.hessian_into(q, &mut h);
    let mut solver = model.new_solver(HessianPart::Full);
    let s = -1.0 / shift;
    let mut x = V::zeros(n);
    // w = B y: z solves (M + sH) z = M^{1/2} y; (H − σM)^{-1} M^{1/2} y = s z.
    let mut apply = |y: &[f64], w: &mut [f64]| -> Result<(), ModesError> {
        for (xi, (yi, r)) in x.as_mut_slice().iter_mut().zip(y.iter().zip(&sqrt_m)) {
            *xi = yi * r;
        }
        solver
            .solve_shifted(&masses, s, &h, &mut x, &SolveOptions::default())
            .map_err(|e| ModesError::Solve(e.to_string()))?;
        for (wi, (zi, r)) in w.iter_mut().zip(x.as_slice().iter().zip(&sqrt_m)) {
            *wi = s * zi * r;
        }
        Ok(())
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    // A fixed start (no randomness: the same modes every run), not orthogonal to any mode.
    let mut v0: Vec<f64> = (0..n)
        .map(|i| 1.0 + 0.5 * ((i as f64 * 0.618_033_988_75).fract() - 0.5))
        .collect();
    let norm = dot(&v0, &v0).sqrt();
    v0.iter_mut().for_each(|x| *x /= norm);
    let mut basis: Vec<Vec<f64>> = vec![v0];
    let (mut alpha, mut beta): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut w = vec![0.0; n];
    let mut steps = (2 * k + 20).max(40).min(n);
    loop {
        while alpha.len() < steps {
            let j = alpha.len();
            apply(&basis[j], &mut w)?;
            let a = dot(&basis[j], &w);
            alpha.push(a);
            // Full reorthogonalization, twice ("twice is enough").
            for _ in 0..2 {
                for b in &basis {
                    let c = dot(b, &w);
                    w.iter_mut().zip(b).for_each(|(x, y)| *x -= c * y);
                }
            }
            let b = dot(&w, &w).sqrt();
            if b <= 1e-13 * a.abs() || basis.len() == n {
                // An invariant subspace: the Ritz values are exact.
                beta.push(0.0);
                break;
            }
            beta.push(b);
            basis.push(w.iter().map(|x| x / b).collect());
        }
        let j = alpha.len();
        let t = faer::Mat::<f64>::from_fn(j, j, |r, c| {
            if r == c {
                alpha[r]
            } else if r + 1 == c {
                beta[r]
            } else if c + 1 == r {
                beta[c]
            } else {
                0.0
            }
        });
        let evd = t
            .self_adjoint_eigen(faer::Side::Lower)
            .map_err(|_| ModesError::NoConvergence)?;
        let (theta, u) = (evd.S(), evd.U());
        // The k largest θ (ascending in faer's order: the last k), as ascending λ.
        let wanted: Vec<usize> = (j.saturating_sub(k)..j).rev().collect();
        let last = beta[j - 1];
        let converged = wanted.len() == k
            && wanted
                .iter()
                .all(|&i| (last * u[(j - 1, i)]).abs() <= 1e-10 * theta[i].abs());
        if converged || j >= n || last == 0.0 {
            if wanted.len() < k {
                return Err(ModesError::NoConvergence);
            }
            let mut eigenvalues = Vec::with_capacity(k);
            let mut vectors = vec![0.0; k * n];
            for (slot, &i) in wanted.iter().enumerate() {
                eigenvalues.push(shift + 1.0 / theta[i]);
                let y = &mut vectors[slot * n..(slot + 1) * n];
                for (r, b) in basis.iter().take(j).enumerate() {
                    let c = u[(r, i)];
                    y.iter_mut().zip(b).for_each(|(x, v)| *x += c * v);
                }
                let norm = dot(y, y).sqrt();
                y.iter_mut().for_each(|x| *x /= norm);
            }
            return Ok(NormalModes {
                eigenvalues,
                vectors,
                dimension: n,
                inv_sqrt_m: sqrt_m.iter().map(|x| 1.0 / x).collect(),
            });
        }
        steps = (2 * steps).min(n);
    }
}

/// The rigid motions of a configuration, in mass-weighted coordinates, orthonormal together.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidMotions {
    /// The three translations.
    pub translations: Vec<Vec<f64>>,
    /// The rotations about the centre of mass (three, two for collinear sites, none asked).
    pub rotations: Vec<Vec<f64>>,
}

/// The rigid motions of point sites at `x` with masses `m` (coordinates `3s .. 3s + 3` of site
/// `s`): the three translations, then (with `rotations`) the rotations about the centre of mass
/// — three, or two for collinear sites (one drops out of the Gram–Schmidt).
pub fn rigid_motions(x: &[[f64; 3]], m: &[f64], rotations: bool) -> RigidMotions {
    let n = 3 * x.len();
    let total: f64 = m.iter().sum();
    let mut centre = [0.0; 3];
    for (p, &w) in x.iter().zip(m) {
        for a in 0..3 {
            centre[a] += w * p[a] / total;
        }
    }
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let push = |mut v: Vec<f64>, basis: &mut Vec<Vec<f64>>| {
        // Gram–Schmidt twice (Kahan's "twice is enough"), kept when a tenth of it survives.
        let norm0 = v.iter().map(|y| y * y).sum::<f64>().sqrt();
        for _ in 0..2 {
            for b in basis.iter() {
                let d: f64 = b.iter().zip(&v).map(|(p, q)| p * q).sum();
                v.iter_mut().zip(b).for_each(|(y, p)| *y -= d * p);
            }
        }
        let norm = v.iter().map(|y| y * y).sum::<f64>().sqrt();
        if norm0 > 0.0 && norm > 1e-6 * norm0 {
            v.iter_mut().for_each(|y| *y /= norm);
            basis.push(v);
        }
    };
    for a in 0..3 {
        let mut v = vec![0.0; n];
        for (s, &w) in m.iter().enumerate() {
            v[3 * s + a] = w.sqrt();
        }
        push(v, &mut basis);
    }
    let translations = basis.len();
    if rotations {
        for a in 0..3 {
            // ω = e_a: the velocity of site s is e_a × (x_s − centre), mass-weighted.
            let mut v = vec![0.0; n];
            for (s, (p, &w)) in x.iter().zip(m).enumerate() {
                let r = [p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]];
                let (b, c) = ((a + 1) % 3, (a + 2) % 3);
                v[3 * s + c] += w.sqrt() * r[b];
                v[3 * s + b] -= w.sqrt() * r[c];
            }
            push(v, &mut basis);
        }
    }
    let rotations = basis.split_off(translations);
    RigidMotions {
        translations: basis,
        rotations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Point masses on a line joined by springs `k`, free ends: `V = ½ k Σ (x_{i+1} − x_i)²`.
    /// Its eigenvalues with equal masses are `(4k/m) sin²(jπ / 2N)`, `j = 0 … N − 1`.
    struct Springs {
        k: f64,
        m: f64,
        n: usize,
    }

    impl crate::Potential<6> for Springs {
        fn masses(&self) -> [f64; 6] {
            [self.m; 6]
        }
        fn potential(&self, q: &[f64; 6]) -> f64 {
            (0..self.n - 1)
                .map(|i| 0.5 * self.k * (q[i + 1] - q[i]).powi(2))
                .sum()
        }
        fn gradient(&self, q: &[f64; 6]) -> [f64; 6] {
            let mut g = [0.0; 6];
            for i in 0..self.n - 1 {
                let f = self.k * (q[i + 1] - q[i]);
                g[i + 1] += f;
                g[i] -= f;
            }
            g
        }
        fn hessian(&self, _q: &[f64; 6]) -> [[f64; 6]; 6] {
            let mut h = [[0.0; 6]; 6];
            for i in 0..self.n - 1 {
                h[i][i] += self.k;
                h[i + 1][i + 1] += self.k;
                h[i][i + 1] -= self.k;
                h[i + 1][i] -= self.k;
            }
            h
        }
        fn third_contraction(&self, _q: &[f64; 6], _a: &[f64; 6]) -> [f64; 6] {
            [0.0; 6]
        }
    }

    #[test]
    fn a_spring_chain_has_its_textbook_spectrum_and_one_zero_mode() {
        let s = Springs {
            k: 3.0,
            m: 2.0,
            n: 6,
        };
        let modes = normal_modes(&s, &[0.1, 1.3, 2.2, 2.9, 4.4, 5.0]).expect("modes");
        for (j, &l) in modes.eigenvalues.iter().enumerate() {
            let exact = 4.0 * s.k / s.m * (j as f64 * core::f64::consts::PI / 12.0).sin().powi(2);
            assert!((l - exact).abs() < 1e-13, "mode {j}: {l} against {exact}");
        }
        // Mode 0 is the uniform translation; every mode has unit length and they are orthogonal.
        let u0 = modes.mode(0);
        assert!(
            u0.iter()
                .all(|x| (x.abs() - 6f64.sqrt().recip()).abs() < 1e-12)
        );
        for a in 0..6 {
            for b in 0..6 {
                let d: f64 = modes
                    .mode(a)
                    .iter()
                    .zip(modes.mode(b))
                    .map(|(x, y)| x * y)
                    .sum();
                assert!((d - f64::from(u8::from(a == b))).abs() < 1e-12);
            }
        }
        assert!(
            modes.angular_frequency(5) > 0.0
                && modes.displacement(5).iter().any(|x| x.abs() == 1.0)
        );
    }

    #[test]
    fn shift_invert_lanczos_finds_the_lowest_modes_of_the_dense_spectrum() {
        let s = Springs {
            k: 3.0,
            m: 2.0,
            n: 6,
        };
        let q = [0.1, 1.3, 2.2, 2.9, 4.4, 5.0];
        let all = normal_modes(&s, &q).expect("modes");
        let low = lowest_modes(&s, &q, 3, -0.05).expect("lowest");
        assert_eq!((low.len(), low.dimension()), (3, 6));
        for k in 0..3 {
            assert!((low.eigenvalues[k] - all.eigenvalues[k]).abs() < 1e-10);
            // The same vector up to sign.
            let d: f64 = low
                .mode(k)
                .iter()
                .zip(all.mode(k))
                .map(|(a, b)| a * b)
                .sum();
            assert!((d.abs() - 1.0).abs() < 1e-9, "mode {k}: {d}");
        }
        assert!(matches!(
            lowest_modes(&s, &q, 3, 0.5),
            Err(ModesError::BadRequest { .. })
        ));
        assert!(matches!(
            lowest_modes(&s, &q, 7, -0.5),
            Err(ModesError::BadRequest { .. })
        ));
    }

    #[test]
    fn rigid_motions_are_orthonormal_and_a_line_has_two_rotations() {
        let m = [16.0, 1.0, 1.0];
        let bent = [[0.0, 0.0, 0.0], [0.96, 0.0, 0.0], [-0.24, 0.93, 0.0]];
        let rigid = rigid_motions(&bent, &m, true);
        let (t, r) = (&rigid.translations, &rigid.rotations);
        assert_eq!((t.len(), r.len()), (3, 3));
        let all: Vec<&Vec<f64>> = t.iter().chain(r).collect();
        for (a, x) in all.iter().enumerate() {
            for (b, y) in all.iter().enumerate() {
                let d: f64 = x.iter().zip(y.iter()).map(|(p, q)| p * q).sum();
                assert!((d - f64::from(u8::from(a == b))).abs() < 1e-12);
            }
        }
        let line = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.5, 0.0, 0.0]];
        assert_eq!(rigid_motions(&line, &m, true).rotations.len(), 2);
        assert_eq!(rigid_motions(&line, &m, false).rotations.len(), 0);
    }

    #[test]
    fn bad_masses_and_non_finite_hessians_are_errors() {
        let s = Springs {
            k: 1.0,
            m: 0.0,
            n: 6,
        };
        assert!(matches!(
            normal_modes(&s, &[0.0; 6]),
            Err(ModesError::Mass { index: 0, .. })
        ));
        let s = Springs {
            k: f64::NAN,
            m: 1.0,
            n: 6,
        };
        assert!(matches!(
            normal_modes(&s, &[0.0; 6]),
            Err(ModesError::NonFinite { row: 0, column: 0 })
        ));
    }
}
