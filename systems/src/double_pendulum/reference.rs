//! Hand-written closed-form derivatives of the double pendulum, written independently of the
//! `#[mechanical_system]` macro, to test the generated code against (and for other engineers'
//! property tests).
//!
//! With `n_c = ∇g_c` and the constant Hessians `H_1 = Hess g_1 = diag(2, 2, 0, 0)`,
//! `H_2 = Hess g_2 = 2 [[I, -I], [-I, I]]` (2 × 2 blocks), and `V` linear (so `Hess V = 0`,
//! `T_V = 0`), the penalized potential `V_ω = V + ½ω² Σ_c g_c²` has
//! - `∇V_ω = ∇V + ω² Σ_c g_c n_c`,
//! - `Hess V_ω = ω² Σ_c (n_c n_cᵀ + g_c H_c)`,
//! - `T_ω(a) = ω² Σ_c [2 (n_c·a) H_c a + (aᵀ H_c a) n_c]` (the third derivatives of `g_c` vanish).

use super::DoublePendulum;
use zs_runtime::{MechanicalSystem, Potential};

/// The double pendulum with hand-written derivatives (same parameters and meaning as
/// [`DoublePendulum`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoublePendulumReference {
    /// Length of the first rod.
    pub l1: f64,
    /// Length of the second rod.
    pub l2: f64,
    /// Coefficient of `V = -gravity · (y1 + y2)` (`-1` physical, `+1` as printed).
    pub gravity: f64,
    /// Mass of the first bob.
    pub m1: f64,
    /// Mass of the second bob.
    pub m2: f64,
}

impl From<&DoublePendulum> for DoublePendulumReference {
    fn from(s: &DoublePendulum) -> Self {
        Self {
            l1: s.l1,
            l2: s.l2,
            gravity: s.gravity,
            m1: 1.0,
            m2: 1.0,
        }
    }
}

impl From<DoublePendulum> for DoublePendulumReference {
    fn from(s: DoublePendulum) -> Self {
        Self::from(&s)
    }
}

impl DoublePendulumReference {
    /// Same as [`DoublePendulum::paper`] (physical sign, `gravity = -1`).
    pub fn paper() -> Self {
        Self::from(DoublePendulum::paper())
    }

    /// Same as [`DoublePendulum::paper_printed_sign`] (`gravity = +1`).
    pub fn paper_printed_sign() -> Self {
        Self::from(DoublePendulum::paper_printed_sign())
    }

    /// `g(q)` and the rows `n_c = ∇g_c` of the constraint Jacobian.
    #[inline]
    fn constraint_parts(&self, q: &[f64; 4]) -> ([f64; 2], [[f64; 4]; 2]) {
        let [x1, y1, x2, y2] = *q;
        let (dx, dy) = (x2 - x1, y2 - y1);
        let g = [
            x1 * x1 + y1 * y1 - self.l1 * self.l1,
            dx * dx + dy * dy - self.l2 * self.l2,
        ];
        let n = [
            [2.0 * x1, 2.0 * y1, 0.0, 0.0],
            [-2.0 * dx, -2.0 * dy, 2.0 * dx, 2.0 * dy],
        ];
        (g, n)
    }

    /// `Hess g_c · a` for both constraints (the Hessians are constant).
    #[inline]
    fn constraint_hessians_times(a: &[f64; 4]) -> [[f64; 4]; 2] {
        let (da0, da1) = (a[2] - a[0], a[3] - a[1]);
        [
            [2.0 * a[0], 2.0 * a[1], 0.0, 0.0],
            [-2.0 * da0, -2.0 * da1, 2.0 * da0, 2.0 * da1],
        ]
    }

    /// `Hess g_c`, constant.
    const CONSTRAINT_HESSIANS: [[[f64; 4]; 4]; 2] = [
        [
            [2.0, 0.0, 0.0, 0.0],
            [0.0, 2.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
        ],
        [
            [2.0, 0.0, -2.0, 0.0],
            [0.0, 2.0, 0.0, -2.0],
            [-2.0, 0.0, 2.0, 0.0],
            [0.0, -2.0, 0.0, 2.0],
        ],
    ];

    #[inline]
    fn penalty_hessian(w2: f64, g: &[f64; 2], n: &[[f64; 4]; 2]) -> [[f64; 4]; 4] {
        let mut h = [[0.0; 4]; 4];
        for c in 0..2 {
            for i in 0..4 {
                for j in 0..4 {
                    h[i][j] += w2 * (n[c][i] * n[c][j] + g[c] * Self::CONSTRAINT_HESSIANS[c][i][j]);
                }
            }
        }
        h
    }
}

impl Potential<4> for DoublePendulumReference {
    fn masses(&self) -> [f64; 4] {
        [self.m1, self.m1, self.m2, self.m2]
    }

    fn potential(&self, q: &[f64; 4]) -> f64 {
        -self.gravity * (q[1] + q[3])
    }

    fn gradient(&self, _q: &[f64; 4]) -> [f64; 4] {
        [0.0, -self.gravity, 0.0, -self.gravity]
    }

    fn hessian(&self, _q: &[f64; 4]) -> [[f64; 4]; 4] {
        [[0.0; 4]; 4]
    }

    fn third_contraction(&self, _q: &[f64; 4], _a: &[f64; 4]) -> [f64; 4] {
        [0.0; 4]
    }
}

impl MechanicalSystem<4, 2> for DoublePendulumReference {
    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        self.constraint_parts(q).0
    }

    fn constraint_jacobian(&self, q: &[f64; 4]) -> [[f64; 4]; 2] {
        self.constraint_parts(q).1
    }

    fn penalized_potential(&self, omega: f64, q: &[f64; 4]) -> f64 {
        let g = self.constraints(q);
        self.potential(q) + 0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1])
    }

    fn penalized_gradient(&self, omega: f64, q: &[f64; 4]) -> [f64; 4] {
        let (g, n) = self.constraint_parts(q);
        let w2 = omega * omega;
        let mut grad = self.gradient(q);
        for (i, gi) in grad.iter_mut().enumerate() {
            *gi += w2 * (g[0] * n[0][i] + g[1] * n[1][i]);
        }
        grad
    }

    fn penalized_hessian(&self, omega: f64, q: &[f64; 4]) -> [[f64; 4]; 4] {
        let (g, n) = self.constraint_parts(q);
        Self::penalty_hessian(omega * omega, &g, &n)
    }

    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 4], a: &[f64; 4]) -> [f64; 4] {
        let (_, n) = self.constraint_parts(q);
        let ha = Self::constraint_hessians_times(a);
        let w2 = omega * omega;
        let mut t = [0.0; 4];
        for c in 0..2 {
            let na: f64 = (0..4).map(|j| n[c][j] * a[j]).sum();
            let aha: f64 = (0..4).map(|j| a[j] * ha[c][j]).sum();
            for i in 0..4 {
                t[i] += w2 * (2.0 * na * ha[c][i] + aha * n[c][i]);
            }
        }
        t
    }

    fn penalized_gradient_hessian(&self, omega: f64, q: &[f64; 4]) -> ([f64; 4], [[f64; 4]; 4]) {
        let (g, n) = self.constraint_parts(q);
        let w2 = omega * omega;
        let mut grad = self.gradient(q);
        for (i, gi) in grad.iter_mut().enumerate() {
            *gi += w2 * (g[0] * n[0][i] + g[1] * n[1][i]);
        }
        (grad, Self::penalty_hessian(w2, &g, &n))
    }
}
