//! Normal modes of a cluster of exactly rigid TIP3P molecules: the spectrum that the penalized
//! cluster's intermolecular band converges to as ω grows (the penalty's `O(ω⁻²)` modelling
//! error, Tao & Owhadi Remark 6.1), computed without the penalty, in rigid-body coordinates.
//!
//! Each molecule has six coordinates: its centre-of-mass translation and a rotation vector `θ`
//! about its centre of mass, `x_a = c + exp([θ]×) d_a` (`d_a` the atom's offset in the fitted
//! TIP3P geometry). At a point of the rigid manifold the rigid-body Hessian is
//! `Bᵀ H B + C`: `H` the exact Cartesian Hessian of `V`, `B` the rigid motions' tangents
//! (`e_k` for a translation, `e_k × d_a` for a rotation) and `C` the rotations' curvature
//! contracted with the Cartesian gradient `g` — not zero at a constrained minimum, where `g`
//! is the constraint forces: per molecule `C = (S + Sᵀ)/2 − tr(S) I` with `S = Σ_a d_a g_aᵀ`
//! (from `∂²x_a/∂θ_k∂θ_l = ½(e_k × (e_l × d_a) + e_l × (e_k × d_a))`). The kinetic metric is
//! `G = Bᵀ M B`, per molecule the total mass and the inertia tensor, and the frequencies are the
//! eigenvalues of `L⁻¹ (BᵀHB + C) L⁻ᵀ` with `G = L Lᵀ`.
//!
//! [`rigid_modes`] first goes to the rigid stationary point near the given configuration (a
//! minimum when started near one): each molecule replaced by the TIP3P geometry fitted to it
//! (mass-weighted Kabsch), then Newton's method in these coordinates (without the six modes
//! nearest zero, the cluster's own rigid motions).
//!
//! Built with the `experiments` feature (the only user of nalgebra's dense eigensolver here, so
//! the lean `zs` program builds without nalgebra).

use nalgebra::{DMatrix, DVector, Matrix3, Matrix6, Rotation3, SMatrix, Vector3, Vector6};
use zs_runtime::assembly::Assembled;
use zs_runtime::{HessianPart, Model, Vector};

use super::Water;

/// The rigid-body normal modes at a rigid minimum.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidModes {
    /// Eigenvalues, ascending (AKMA units: `√λ` is an angular frequency per 48.888 fs); the
    /// first six are the cluster's rigid motions (near zero).
    pub eigenvalues: Vec<f64>,
    /// Per eigenvalue, the share of the mode's kinetic energy in the molecules' rotations (a
    /// libration above ½, a hindered translation below).
    pub libration: Vec<f64>,
    /// The largest rigid-body gradient component (kcal/mol per Å or per radian) at each Newton
    /// iterate, the last at the minimum.
    pub newton: Vec<f64>,
    /// The rigid minimum, molecule by molecule (O, H, H; Å).
    pub q: Vec<f64>,
}

/// Why [`rigid_modes`] did not reach a rigid minimum.
#[derive(Debug, Clone, PartialEq)]
pub enum RigidModesError {
    /// `q` is not 9 coordinates per molecule of the model, or holds a non-finite value.
    Shape {
        /// Its length.
        len: usize,
    },
    /// The inertia tensor of a molecule is not positive definite (masses not positive).
    Metric,
    /// Newton's method stopped above the tolerance.
    NoConvergence {
        /// Iterations made.
        iterations: usize,
        /// The largest rigid-body gradient component at the last iterate.
        gradient: f64,
    },
}

impl std::fmt::Display for RigidModesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Shape { len } => write!(
                f,
                "rigid modes: {len} coordinates, not 9 finite ones per molecule of the cluster"
            ),
            Self::Metric => write!(f, "rigid modes: a molecule's inertia tensor is singular"),
            Self::NoConvergence {
                iterations,
                gradient,
            } => write!(
                f,
                "rigid modes: Newton's method left a rigid-body gradient of {gradient:.3e} after {iterations} iterations"
            ),
        }
    }
}

impl std::error::Error for RigidModesError {}

/// The molecules' centres of mass and rotations of the reference geometry.
struct Bodies {
    /// The TIP3P geometry about its centre of mass (O, H, H) and the masses.
    reference: [Vector3<f64>; 3],
    masses: [f64; 3],
    c: Vec<Vector3<f64>>,
    r: Vec<Matrix3<f64>>,
}

impl Bodies {
    /// Each molecule of `q` replaced by the reference fitted to it: the rotation minimising
    /// `Σ_a m_a |R d_a − p_a|²` (Kabsch, through the SVD of `Σ m_a d_a p_aᵀ`).
    fn fit(w: &Water, q: &[f64]) -> Self {
        let masses = [w.m_o, w.m_h, w.m_h];
        let total: f64 = masses.iter().sum();
        let half = (0.5 * w.r_hh / w.r_oh).asin();
        let geometry = [
            Vector3::zeros(),
            Vector3::new(w.r_oh * half.sin(), w.r_oh * half.cos(), 0.0),
            Vector3::new(-w.r_oh * half.sin(), w.r_oh * half.cos(), 0.0),
        ];
        let com: Vector3<f64> = (0..3)
            .map(|a| geometry[a] * masses[a])
            .sum::<Vector3<f64>>()
            / total;
        let reference = geometry.map(|g| g - com);
        let (mut c, mut r) = (Vec::new(), Vec::new());
        for x in q.chunks_exact(9) {
            let p: [Vector3<f64>; 3] =
                core::array::from_fn(|a| Vector3::from_column_slice(&x[3 * a..3 * a + 3]));
            let centre: Vector3<f64> =
                (0..3).map(|a| p[a] * masses[a]).sum::<Vector3<f64>>() / total;
            let cross: Matrix3<f64> = (0..3)
                .map(|a| reference[a] * (p[a] - centre).transpose() * masses[a])
                .sum();
            let svd = cross.svd(true, true);
            let (u, vt) = (svd.u.expect("u asked for"), svd.v_t.expect("vᵀ asked for"));
            let d = (vt.transpose() * u.transpose()).determinant().signum();
            r.push(
                vt.transpose() * Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, d)) * u.transpose(),
            );
            c.push(centre);
        }
        Self {
            reference,
            masses,
            c,
            r,
        }
    }

    fn positions(&self) -> Vec<f64> {
        let mut q = Vec::with_capacity(9 * self.c.len());
        for (c, r) in self.c.iter().zip(&self.r) {
            for d in &self.reference {
                q.extend((c + r * d).iter());
            }
        }
        q
    }

    /// Molecule `m`'s atoms' offsets from its centre of mass.
    fn offsets(&self, m: usize) -> [Vector3<f64>; 3] {
        self.reference.map(|d| self.r[m] * d)
    }

    /// `B_m`: 9 × 6, the tangents of molecule `m`'s translations, then rotations
    /// (`e_k × d = −[d]× e_k`).
    fn tangents(&self, m: usize) -> SMatrix<f64, 9, 6> {
        let mut b = SMatrix::<f64, 9, 6>::zeros();
        for (a, d) in self.offsets(m).iter().enumerate() {
            b.fixed_view_mut::<3, 3>(3 * a, 0)
                .copy_from(&Matrix3::identity());
            b.fixed_view_mut::<3, 3>(3 * a, 3)
                .copy_from(&(-d.cross_matrix()));
        }
        b
    }

    /// `G_m = B_mᵀ M B_m`.
    fn metric(&self, m: usize) -> Matrix6<f64> {
        let b = self.tangents(m);
        let mass = SMatrix::<f64, 9, 9>::from_diagonal(&SMatrix::<f64, 9, 1>::from_fn(|i, _| {
            self.masses[i / 3]
        }));
        b.transpose() * mass * b
    }

    fn step(&mut self, s: &DVector<f64>) {
        for m in 0..self.c.len() {
            self.c[m] += Vector3::new(s[6 * m], s[6 * m + 1], s[6 * m + 2]);
            let theta = Vector3::new(s[6 * m + 3], s[6 * m + 4], s[6 * m + 5]);
            self.r[m] = Rotation3::new(theta).into_inner() * self.r[m];
        }
    }
}

/// The mass-weighted rigid-body Hessian at the bodies' configuration, its eigen-decomposition,
/// the weighted gradient and the metric's Cholesky factors.
struct Weighted {
    values: DVector<f64>,
    vectors: DMatrix<f64>,
    gradient: DVector<f64>,
    /// The largest component of the rigid-body gradient `Bᵀ g`.
    largest: f64,
    /// `L_m⁻ᵀ` per molecule: a weighted vector's molecule block to rigid-body coordinates.
    back: Vec<Matrix6<f64>>,
}

fn weighted(model: &Assembled<Water, 9>, bodies: &Bodies) -> Result<Weighted, RigidModesError> {
    let n = bodies.c.len();
    let q = bodies.positions();
    let mut g = vec![0.0; 9 * n];
    model.gradient_into(&q, &mut g);
    let mut h = model.new_matrix(HessianPart::Full);
    model.hessian_into(&q, &mut h);
    let mut dense = vec![0.0; 81 * n * n];
    <Vec<f64> as Vector>::matrix_dense_into(&h, &mut dense);
    let b: Vec<_> = (0..n).map(|m| bodies.tangents(m)).collect();
    let mut l_inv = Vec::with_capacity(n);
    for m in 0..n {
        let chol = bodies.metric(m).cholesky().ok_or(RigidModesError::Metric)?;
        l_inv.push(chol.l().try_inverse().ok_or(RigidModesError::Metric)?);
    }
    let mut a = DMatrix::zeros(6 * n, 6 * n);
    let mut gw = DVector::zeros(6 * n);
    let mut largest = 0.0f64;
    for i in 0..n {
        let gi = SMatrix::<f64, 9, 1>::from_column_slice(&g[9 * i..9 * i + 9]);
        let gs = b[i].transpose() * gi;
        largest = largest.max(gs.amax());
        gw.fixed_rows_mut::<6>(6 * i).copy_from(&(l_inv[i] * gs));
        for j in 0..n {
            let hij = SMatrix::<f64, 9, 9>::from_fn(|r, c| {
                0.5 * (dense[(9 * i + r) * 9 * n + 9 * j + c]
                    + dense[(9 * j + c) * 9 * n + 9 * i + r])
            });
            let mut block = b[i].transpose() * hij * b[j];
            if i == j {
                let d = bodies.offsets(i);
                let s: Matrix3<f64> = (0..3)
                    .map(|k| {
                        d[k] * Vector3::new(gi[3 * k], gi[3 * k + 1], gi[3 * k + 2]).transpose()
                    })
                    .sum();
                let curvature = 0.5 * (s + s.transpose()) - Matrix3::identity() * s.trace();
                let mut rot = block.fixed_view_mut::<3, 3>(3, 3);
                rot += curvature;
            }
            a.view_mut((6 * i, 6 * j), (6, 6))
                .copy_from(&(l_inv[i] * block * l_inv[j].transpose()));
        }
    }
    let a: DMatrix<f64> = (&a + a.transpose()) * 0.5;
    let eigen = a.symmetric_eigen();
    Ok(Weighted {
        values: eigen.eigenvalues,
        vectors: eigen.eigenvectors,
        gradient: gw,
        largest,
        back: l_inv.iter().map(|l| l.transpose()).collect(),
    })
}

/// Indices of `values` in ascending order.
fn ascending(values: &DVector<f64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    order
}

/// The rigid-body normal modes of `model` (the TIP3P cluster of `w`, `w.assemble(n)`: without
/// the penalty) at the rigid stationary point next to `q`: Newton's method from the fitted rigid
/// molecules until the largest rigid-body gradient component is below `tolerance`, at most
/// `max_newton` iterations. Newton goes to the nearest stationary point, which is a minimum when
/// `q` is near one (a penalized minimum, as in `zs reproduce water-modes`); a negative
/// eigenvalue above the six rigid motions says it is not.
///
/// # Errors
/// [`RigidModesError`]: `q` of the wrong length or not finite, a singular inertia tensor, or no
/// convergence.
pub fn rigid_modes(
    w: &Water,
    model: &Assembled<Water, 9>,
    q: &[f64],
    tolerance: f64,
    max_newton: usize,
) -> Result<RigidModes, RigidModesError> {
    if q.len() != model.dimension() || q.iter().any(|x| !x.is_finite()) {
        return Err(RigidModesError::Shape { len: q.len() });
    }
    let mut bodies = Bodies::fit(w, q);
    let n = bodies.c.len();
    let mut newton = Vec::new();
    loop {
        let wt = weighted(model, &bodies)?;
        let largest = wt.largest;
        newton.push(largest);
        if largest < tolerance {
            let order = ascending(&wt.values);
            let libration = order
                .iter()
                .map(|&k| {
                    (0..n)
                        .map(|m| {
                            let s: Vector6<f64> =
                                wt.back[m] * wt.vectors.fixed_view::<6, 1>(6 * m, k);
                            let rot = s.fixed_rows::<3>(3);
                            (rot.transpose() * bodies.metric(m).fixed_view::<3, 3>(3, 3) * rot)[0]
                        })
                        .sum()
                })
                .collect();
            return Ok(RigidModes {
                eigenvalues: order.iter().map(|&k| wt.values[k]).collect(),
                libration,
                newton,
                q: bodies.positions(),
            });
        }
        if newton.len() > max_newton || !largest.is_finite() {
            return Err(RigidModesError::NoConvergence {
                iterations: newton.len() - 1,
                gradient: largest,
            });
        }
        // Newton in the weighted coordinates, without the six modes nearest zero.
        let mut by_size: Vec<usize> = (0..6 * n).collect();
        by_size.sort_by(|&i, &j| wt.values[i].abs().total_cmp(&wt.values[j].abs()));
        let mut y = DVector::zeros(6 * n);
        for &k in &by_size[6.min(6 * n)..] {
            let v = wt.vectors.column(k);
            y -= v * (v.dot(&wt.gradient) / wt.values[k]);
        }
        let mut s = DVector::zeros(6 * n);
        for m in 0..n {
            s.fixed_rows_mut::<6>(6 * m)
                .copy_from(&(wt.back[m] * y.fixed_rows::<6>(6 * m)));
        }
        bodies.step(&s);
    }
}
