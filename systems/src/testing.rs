//! Helpers for testing derivative code: error measures and central finite differences.
//!
//! Error measure used throughout: `rel(x, ref) = ‖x - ref‖∞ / max(‖ref‖∞, 1e-300)` over the
//! whole vector or matrix (so a component that cancels to nearly zero is judged on the scale
//! of the whole object, not on its own).

use zs_runtime::Potential;

/// A seeded xorshift stream for test points (no dependency, the same numbers everywhere).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number, uniform in `[-1, 1)`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// `n` numbers from [`Rng::next`].
    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }
}

/// `max_i |x_i|`.
pub fn norm_inf(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// `‖x - r‖∞ / max(‖r‖∞, 1e-300)`; `NaN` anywhere gives `+∞`.
pub fn rel_err(x: &[f64], r: &[f64]) -> f64 {
    assert_eq!(x.len(), r.len(), "length mismatch");
    let mut d = 0.0_f64;
    for (a, b) in x.iter().zip(r) {
        let e = (a - b).abs();
        if e.is_nan() {
            return f64::INFINITY;
        }
        d = d.max(e);
    }
    d / norm_inf(r).max(1e-300)
}

/// [`rel_err`] of a scalar.
pub fn rel_err_scalar(x: f64, r: f64) -> f64 {
    rel_err(&[x], &[r])
}

/// [`rel_err`] of two matrices, over all entries.
pub fn rel_err_mat<const N: usize, const M: usize>(x: &[[f64; N]; M], r: &[[f64; N]; M]) -> f64 {
    rel_err(x.as_flattened(), r.as_flattened())
}

/// Central-difference gradient `(f(q + εe_i) - f(q - εe_i)) / 2ε`
/// (truncation `ε²/6·|f'''|`, rounding `≈ u|f|/ε`).
pub fn fd_gradient<const N: usize>(
    f: impl Fn(&[f64; N]) -> f64,
    q: &[f64; N],
    eps: f64,
) -> [f64; N] {
    core::array::from_fn(|i| {
        let (mut qp, mut qm) = (*q, *q);
        qp[i] += eps;
        qm[i] -= eps;
        (f(&qp) - f(&qm)) / (2.0 * eps)
    })
}

/// Central-difference Jacobian of a vector function, `J[r][i] = ∂f_r/∂q_i`
/// (Hessian when `f` is a gradient).
pub fn fd_jacobian<const N: usize, const M: usize>(
    f: impl Fn(&[f64; N]) -> [f64; M],
    q: &[f64; N],
    eps: f64,
) -> [[f64; N]; M] {
    let mut j = [[0.0; N]; M];
    for i in 0..N {
        let (mut qp, mut qm) = (*q, *q);
        qp[i] += eps;
        qm[i] -= eps;
        let (fp, fm) = (f(&qp), f(&qm));
        for r in 0..M {
            j[r][i] = (fp[r] - fm[r]) / (2.0 * eps);
        }
    }
    j
}

/// Third contraction by the second central difference of the gradient along `a`:
/// `(∇V(q + εa) - 2∇V(q) + ∇V(q - εa)) / ε²` (truncation `ε²/12·|∂⁴∇V[a,a,a,a]|`,
/// rounding `≈ 4u‖∇V‖/ε²`).
pub fn fd_third_contraction<const N: usize>(
    grad: impl Fn(&[f64; N]) -> [f64; N],
    q: &[f64; N],
    a: &[f64; N],
    eps: f64,
) -> [f64; N] {
    let qp: [f64; N] = core::array::from_fn(|i| q[i] + eps * a[i]);
    let qm: [f64; N] = core::array::from_fn(|i| q[i] - eps * a[i]);
    let (gp, g0, gm) = (grad(&qp), grad(q), grad(&qm));
    core::array::from_fn(|i| (gp[i] - 2.0 * g0[i] + gm[i]) / (eps * eps))
}

/// Relative errors of a [`Potential`]'s derivatives against finite differences of itself.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FdErrors {
    /// Gradient vs central differences of the potential.
    pub gradient: f64,
    /// Hessian vs central differences of the gradient.
    pub hessian: f64,
    /// Third contraction vs second differences of the gradient along `a`.
    pub third: f64,
}

impl FdErrors {
    /// Componentwise maximum.
    pub fn max(self, o: Self) -> Self {
        Self {
            gradient: self.gradient.max(o.gradient),
            hessian: self.hessian.max(o.hessian),
            third: self.third.max(o.third),
        }
    }
}

/// [`FdErrors`] of `p` at `q` along `a`, with steps `eps1` (gradient, Hessian) and `eps3`
/// (third contraction; `a` should be of unit size for `eps3` to be meaningful).
pub fn fd_errors<const N: usize, P: Potential<N>>(
    p: &P,
    q: &[f64; N],
    a: &[f64; N],
    eps1: f64,
    eps3: f64,
) -> FdErrors {
    let g = p.gradient(q);
    let h = p.hessian(q);
    let t = p.third_contraction(q, a);
    let fd_g = fd_gradient(|x| p.potential(x), q, eps1);
    let fd_h = fd_jacobian(|x| p.gradient(x), q, eps1);
    let fd_t = fd_third_contraction(|x| p.gradient(x), q, a, eps3);
    FdErrors {
        gradient: rel_err(&fd_g, &g),
        hessian: rel_err_mat(&fd_h, &h),
        third: rel_err(&fd_t, &t),
    }
}

/// Random points in the physically meaningful region of each system, drawn from a source of
/// uniform numbers in `[0, 1)` (so the library needs no random-number crate).
pub mod points {
    /// Uniform in `[lo, hi)`.
    pub fn uniform(u: &mut impl FnMut() -> f64, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * u()
    }

    /// A vector with components uniform in `[-1, 1)` (a random direction `a`).
    pub fn direction<const N: usize>(u: &mut impl FnMut() -> f64) -> [f64; N] {
        core::array::from_fn(|_| uniform(u, -1.0, 1.0))
    }

    /// A random unit vector of R³ (rejection sampling in the cube).
    pub fn unit3(u: &mut impl FnMut() -> f64) -> [f64; 3] {
        loop {
            let v: [f64; 3] = direction(u);
            let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            if (0.1..=1.0).contains(&n) {
                return v.map(|x| x / n);
            }
        }
    }

    /// Double pendulum: bobs at distances `L1·(1 ± 0.2)` from the pivot and `L2·(1 ± 0.2)`
    /// from each other, at uniformly random angles (so the constraints are violated by up to
    /// ~40 %, as in a penalized run far from equilibrium).
    pub fn double_pendulum(u: &mut impl FnMut() -> f64, l1: f64, l2: f64) -> [f64; 4] {
        let tau = std::f64::consts::TAU;
        let (r1, t1) = (l1 * uniform(u, 0.8, 1.2), uniform(u, 0.0, tau));
        let (r2, t2) = (l2 * uniform(u, 0.8, 1.2), uniform(u, 0.0, tau));
        let (x1, y1) = (r1 * t1.sin(), -r1 * t1.cos());
        [x1, y1, x1 + r2 * t2.sin(), y1 - r2 * t2.cos()]
    }

    /// Triatomic: A uniform in `[-1, 1)³`, bond lengths in `[0.8, 1.2)` Å, bond angle in
    /// `[50°, 160°)` (away from the acos singularities at 0 and π), random orientation.
    pub fn triatomic(u: &mut impl FnMut() -> f64) -> [f64; 9] {
        let a: [f64; 3] = direction(u);
        let e1 = unit3(u);
        // e2 ⟂ e1 by Gram–Schmidt of another random unit vector (retry if nearly parallel).
        let e2 = loop {
            let w = unit3(u);
            let d: f64 = (0..3).map(|k| w[k] * e1[k]).sum();
            let p: [f64; 3] = core::array::from_fn(|k| w[k] - d * e1[k]);
            let n = p.iter().map(|x| x * x).sum::<f64>().sqrt();
            if n > 0.3 {
                break p.map(|x| x / n);
            }
        };
        let (ru, rv) = (uniform(u, 0.8, 1.2), uniform(u, 0.8, 1.2));
        let th = uniform(u, 50.0, 160.0).to_radians();
        let (s, c) = th.sin_cos();
        let mut q = [0.0; 9];
        for k in 0..3 {
            q[k] = a[k];
            q[3 + k] = a[k] + ru * e1[k];
            q[6 + k] = a[k] + rv * (c * e1[k] + s * e2[k]);
        }
        q
    }

    /// A random rotation matrix (from a random unit quaternion), row-major, with every entry
    /// perturbed by a uniform amount in `[-perturbation, perturbation)`.
    pub fn near_rotation(u: &mut impl FnMut() -> f64, perturbation: f64) -> [f64; 9] {
        let (w, x, y, z) = loop {
            let v: [f64; 4] = direction(u);
            let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            if (0.1..=1.0).contains(&n) {
                break (v[0] / n, v[1] / n, v[2] / n, v[3] / n);
            }
        };
        let r = [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ];
        r.map(|e| e + uniform(u, -perturbation, perturbation))
    }
}
