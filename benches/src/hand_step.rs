//! A complete Zhang–Skeel step of the penalized double pendulum written by hand, independently
//! of `zs-runtime`: closed-form `∇V_ω`, `Hess V_ω` and `T_ω(a)` (as in `zs_systems::double_pendulum::reference`),
//! `M + βh²H` with `M = I`, an in-place 4 × 4 Cholesky, the third-derivative correction and the
//! updates of eq. 3, with `f_k+1` kept for the next step — what a careful user would write
//! without the library. It is the bar the generated step is measured against (BENCHMARKS.md:
//! "Generated vs hand-written step"): `cargo bench -p zs-bench --bench hand_step`.
//!
//! It checks nothing (no finiteness, no singular matrix): the library's step does.

use zs_runtime::State;

/// Z&S (eq. 3) on `V_ω = -gravity·(y1 + y2) + ½ω²(g1² + g2²)`, unit masses.
#[derive(Debug, Clone)]
pub struct HandZhangSkeel {
    /// β.
    pub beta: f64,
    /// Step `h`.
    pub h: f64,
    /// Penalty frequency ω.
    pub omega: f64,
    /// `L1`, `L2`, the gravity coefficient of the README's potential.
    pub l1: f64,
    /// `L2`.
    pub l2: f64,
    /// `V = -gravity·(y1 + y2)`.
    pub gravity: f64,
    /// `f(q_k)` with its `q_k`.
    cache: Option<([f64; 4], [f64; 4])>,
}

impl HandZhangSkeel {
    /// The integrator for the pendulum `(l1, l2, gravity)` penalized at `omega`.
    pub fn new(beta: f64, h: f64, omega: f64, l1: f64, l2: f64, gravity: f64) -> Self {
        Self {
            beta,
            h,
            omega,
            l1,
            l2,
            gravity,
            cache: None,
        }
    }

    /// `f(x) = a − ½β²h⁴ T(x; a)`, `(I + βh²H(x)) a = −∇V(x)`.
    #[allow(clippy::needless_range_loop)]
    #[inline]
    fn f(&self, q: &[f64; 4]) -> [f64; 4] {
        let [x1, y1, x2, y2] = *q;
        let w2 = self.omega * self.omega;
        let (dx, dy) = (x2 - x1, y2 - y1);
        let g1 = x1 * x1 + y1 * y1 - self.l1 * self.l1;
        let g2 = dx * dx + dy * dy - self.l2 * self.l2;
        // ∇g1 = 2(x1, y1, 0, 0), ∇g2 = 2(−dx, −dy, dx, dy).
        let (a1, b1) = (2.0 * x1, 2.0 * y1);
        let (a2, b2) = (2.0 * dx, 2.0 * dy);
        let grad = [
            w2 * (g1 * a1 - g2 * a2),
            -self.gravity + w2 * (g1 * b1 - g2 * b2),
            w2 * g2 * a2,
            -self.gravity + w2 * g2 * b2,
        ];
        // H = ω² Σ (∇g ∇gᵀ + g Hess g): Hess g1 = diag(2,2,0,0), Hess g2 = 2[[I,−I],[−I,I]].
        let (s1, s2) = (2.0 * g1, 2.0 * g2);
        let h00 = w2 * (a1 * a1 + s1 + a2 * a2 + s2);
        let h01 = w2 * (a1 * b1 + a2 * b2);
        let h11 = w2 * (b1 * b1 + s1 + b2 * b2 + s2);
        let h02 = w2 * (-a2 * a2 - s2);
        let h03 = w2 * (-a2 * b2);
        let h12 = h03;
        let h13 = w2 * (-b2 * b2 - s2);
        let h22 = w2 * (a2 * a2 + s2);
        let h23 = w2 * (a2 * b2);
        let h33 = w2 * (b2 * b2 + s2);
        let c = self.beta * self.h * self.h;
        let m = [
            [1.0 + c * h00, c * h01, c * h02, c * h03],
            [c * h01, 1.0 + c * h11, c * h12, c * h13],
            [c * h02, c * h12, 1.0 + c * h22, c * h23],
            [c * h03, c * h13, c * h23, 1.0 + c * h33],
        ];
        // Cholesky M = LLᵀ, in place on the lower triangle.
        let mut l = m;
        for j in 0..4 {
            for k in 0..j {
                let mut s = l[j][k];
                for p in 0..k {
                    s -= l[j][p] * l[k][p];
                }
                l[j][k] = s / l[k][k];
            }
            let mut d = l[j][j];
            for p in 0..j {
                d -= l[j][p] * l[j][p];
            }
            l[j][j] = d.sqrt();
        }
        let mut a = [-grad[0], -grad[1], -grad[2], -grad[3]];
        for i in 0..4 {
            let mut s = a[i];
            for k in 0..i {
                s -= l[i][k] * a[k];
            }
            a[i] = s / l[i][i];
        }
        for i in (0..4).rev() {
            let mut s = a[i];
            for k in i + 1..4 {
                s -= l[k][i] * a[k];
            }
            a[i] = s / l[i][i];
        }
        // T(a) = ω² Σ_c [2(∇g_c·a) Hess g_c a + (aᵀ Hess g_c a) ∇g_c].
        let n1a = a1 * a[0] + b1 * a[1];
        let (da0, da1) = (a[2] - a[0], a[3] - a[1]);
        let n2a = a2 * da0 + b2 * da1;
        let q1 = 2.0 * (a[0] * a[0] + a[1] * a[1]);
        let q2 = 2.0 * (da0 * da0 + da1 * da1);
        let t = [
            w2 * (4.0 * n1a * a[0] + q1 * a1 - 4.0 * n2a * da0 - q2 * a2),
            w2 * (4.0 * n1a * a[1] + q1 * b1 - 4.0 * n2a * da1 - q2 * b2),
            w2 * (4.0 * n2a * da0 + q2 * a2),
            w2 * (4.0 * n2a * da1 + q2 * b2),
        ];
        let k = 0.5 * self.beta * self.beta * self.h.powi(4);
        [
            a[0] - k * t[0],
            a[1] - k * t[1],
            a[2] - k * t[2],
            a[3] - k * t[3],
        ]
    }

    /// One step of eq. 3.
    #[inline]
    pub fn step(&mut self, s: &mut State<4>) {
        let h = self.h;
        let f0 = match self.cache {
            Some((q, f)) if q == s.q => f,
            _ => self.f(&s.q),
        };
        let x1: [f64; 4] = core::array::from_fn(|i| s.q[i] + h * s.v[i] + 0.5 * h * h * f0[i]);
        let f1 = self.f(&x1);
        for i in 0..4 {
            s.v[i] += 0.5 * h * (f0[i] + f1[i]);
        }
        s.q = x1;
        s.t += h;
        self.cache = Some((x1, f1));
    }
}
