//! Hand-written derivatives of the penalized pendulum chain, written independently of the
//! macro and of the assembly, for `n` pendula given at run time (dense, for tests).
//!
//! `V_ω(q) = −gravity·Σ_i y_i + ½ω² Σ_c g_c²`, `g_1 = |q_1|² − L²`,
//! `g_i = |q_i − q_{i−1}|² − L²`. With `d_c` the rod vector of constraint `c` (`q_1` for the
//! first, `q_i − q_{i−1}`) and `n_c = ∇g_c = 2(±d_c)` on the two masses it joins, `Hess g_c`
//! constant (`2I` on the diagonal blocks, `−2I` off the diagonal):
//! `∇V_ω = ∇V + ω² Σ g_c n_c`, `Hess V_ω = ω² Σ (n_c n_cᵀ + g_c Hess g_c)`,
//! `T_ω(a) = ω² Σ [2(n_c·a) Hess g_c a + (aᵀ Hess g_c a) n_c]`.

/// The chain with hand-written derivatives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainReference {
    /// Number of pendula.
    pub n: usize,
    /// Rod length.
    pub length: f64,
    /// Coefficient of `V = −gravity·Σ y_i`.
    pub gravity: f64,
}

impl ChainReference {
    /// Rod `c` (0-based): the indices of its two masses' x coordinates (`None` for the pivot)
    /// and its vector `d = q_c − q_{c−1}`.
    fn rod(&self, q: &[f64], c: usize) -> (Option<usize>, usize, [f64; 2]) {
        let j = 2 * c;
        let i = c.checked_sub(1).map(|p| 2 * p);
        let base = i.map_or([0.0, 0.0], |i| [q[i], q[i + 1]]);
        (i, j, [q[j] - base[0], q[j + 1] - base[1]])
    }

    /// `g(q)`.
    pub fn constraints(&self, q: &[f64]) -> Vec<f64> {
        (0..self.n)
            .map(|c| {
                let (_, _, d) = self.rod(q, c);
                d[0] * d[0] + d[1] * d[1] - self.length * self.length
            })
            .collect()
    }

    /// `V_ω(q)`.
    pub fn potential(&self, omega: f64, q: &[f64]) -> f64 {
        let v: f64 = (0..self.n).map(|i| -self.gravity * q[2 * i + 1]).sum();
        v + 0.5 * omega * omega * self.constraints(q).iter().map(|g| g * g).sum::<f64>()
    }

    /// `∇V_ω(q)`.
    pub fn gradient(&self, omega: f64, q: &[f64]) -> Vec<f64> {
        let mut grad = vec![0.0; 2 * self.n];
        for i in 0..self.n {
            grad[2 * i + 1] = -self.gravity;
        }
        let w2 = omega * omega;
        for c in 0..self.n {
            let (i, j, d) = self.rod(q, c);
            let g = d[0] * d[0] + d[1] * d[1] - self.length * self.length;
            for k in 0..2 {
                grad[j + k] += w2 * g * 2.0 * d[k];
                if let Some(i) = i {
                    grad[i + k] -= w2 * g * 2.0 * d[k];
                }
            }
        }
        grad
    }

    /// `Hess V_ω(q)`, dense.
    pub fn hessian(&self, omega: f64, q: &[f64]) -> Vec<Vec<f64>> {
        let n = 2 * self.n;
        let mut h = vec![vec![0.0; n]; n];
        let w2 = omega * omega;
        for c in 0..self.n {
            let (i, j, d) = self.rod(q, c);
            let g = d[0] * d[0] + d[1] * d[1] - self.length * self.length;
            // Entries of (n nᵀ + g Hess g) on the blocks (j, j), (i, i), (i, j).
            let mut add = |a: usize, b: usize, sign: f64| {
                for r in 0..2 {
                    for s in 0..2 {
                        let nn = 4.0 * d[r] * d[s];
                        let hg = if r == s { 2.0 * g } else { 0.0 };
                        h[a + r][b + s] += w2 * sign * (nn + hg);
                    }
                }
            };
            add(j, j, 1.0);
            if let Some(i) = i {
                add(i, i, 1.0);
                add(i, j, -1.0);
                add(j, i, -1.0);
            }
        }
        h
    }

    /// `T_ω(q; a)`.
    pub fn third_contraction(&self, omega: f64, q: &[f64], a: &[f64]) -> Vec<f64> {
        let mut t = vec![0.0; 2 * self.n];
        let w2 = omega * omega;
        for c in 0..self.n {
            let (i, j, d) = self.rod(q, c);
            // The rod's relative direction δ = a_j − a_i, n·a = 2 d·δ, Hess g a = ±2δ,
            // aᵀ Hess g a = 2|δ|².
            let base = i.map_or([0.0, 0.0], |i| [a[i], a[i + 1]]);
            let delta = [a[j] - base[0], a[j + 1] - base[1]];
            let na = 2.0 * (d[0] * delta[0] + d[1] * delta[1]);
            let aha = 2.0 * (delta[0] * delta[0] + delta[1] * delta[1]);
            for k in 0..2 {
                let v = w2 * (2.0 * na * 2.0 * delta[k] + aha * 2.0 * d[k]);
                t[j + k] += v;
                if let Some(i) = i {
                    t[i + k] -= v;
                }
            }
        }
        t
    }
}
