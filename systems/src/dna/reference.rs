//! Hand-written derivatives of the DNA ring, independent of the macro and of the assembly.
//!
//! With `e(θ) = exp(−a[1 − cos θ − x0])`, `U = (e − 1)²`:
//! `e' = −a sin θ · e`, `e'' = e(a² sin²θ − a cos θ)`, `e''' = e(−a³ sin³θ + 3a² sin θ cos θ + a sin θ)`,
//! `U' = 2(e − 1)e'`, `U'' = 2e'² + 2(e − 1)e''`, `U''' = 6e'e'' + 2(e − 1)e'''`.
//! The coupling `½Σ(θ_k+1 − θ_k)²` has the cyclic Laplacian as Hessian and no third derivative.

/// The ring with hand-written derivatives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DnaReference {
    /// `ε`.
    pub epsilon: f64,
    /// `a`.
    pub a: f64,
    /// `x0`.
    pub x0: f64,
}

impl DnaReference {
    /// `[U, U', U'', U''']` at `θ`.
    pub fn site(&self, theta: f64) -> [f64; 4] {
        let (s, c) = theta.sin_cos();
        let a = self.a;
        let e = (-a * (1.0 - c - self.x0)).exp();
        let e1 = -a * s * e;
        let e2 = e * (a * a * s * s - a * c);
        let e3 = e * (-a * a * a * s * s * s + 3.0 * a * a * s * c + a * s);
        let u = e - 1.0;
        [
            u * u,
            2.0 * u * e1,
            2.0 * e1 * e1 + 2.0 * u * e2,
            6.0 * e1 * e2 + 2.0 * u * e3,
        ]
    }

    /// `V(θ)`.
    pub fn potential(&self, theta: &[f64]) -> f64 {
        let n = theta.len();
        (0..n)
            .map(|k| {
                let d = theta[(k + 1) % n] - theta[k];
                0.5 * d * d + self.epsilon * self.site(theta[k])[0]
            })
            .sum()
    }

    /// `∇V(θ)`.
    pub fn gradient(&self, theta: &[f64]) -> Vec<f64> {
        let n = theta.len();
        (0..n)
            .map(|k| {
                let (l, r) = (theta[(k + n - 1) % n], theta[(k + 1) % n]);
                2.0 * theta[k] - l - r + self.epsilon * self.site(theta[k])[1]
            })
            .collect()
    }

    /// `Hess V(θ)`, dense.
    pub fn hessian(&self, theta: &[f64]) -> Vec<Vec<f64>> {
        let n = theta.len();
        let mut h = vec![vec![0.0; n]; n];
        for k in 0..n {
            h[k][k] = 2.0 + self.epsilon * self.site(theta[k])[2];
            h[k][(k + 1) % n] -= 1.0;
            h[k][(k + n - 1) % n] -= 1.0;
        }
        h
    }

    /// `T(θ; a)_k = ε U'''(θ_k) a_k²`.
    pub fn third_contraction(&self, theta: &[f64], a: &[f64]) -> Vec<f64> {
        theta
            .iter()
            .zip(a)
            .map(|(t, a)| self.epsilon * self.site(*t)[3] * a * a)
            .collect()
    }
}
