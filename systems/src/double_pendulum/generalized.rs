//! The double pendulum in the generalized coordinates (θ, φ) of Z&S §4.1, the source of the
//! reference ("benchmark") solution of Fig. 1.
//!
//! `x1 = L1 sin θ`, `y1 = -L1 cos θ`, `x2 = x1 + L2 sin φ`, `y2 = y1 - L2 cos φ`. The Lagrangian
//! `L = ½ (θ̇, φ̇) M̃(θ, φ) (θ̇, φ̇)ᵀ - V(θ, φ)` has the position-dependent mass matrix (eq. 23,
//! written there for `m1 = m2 = 1`)
//!
//! ```text
//! M̃(θ, φ) = [ (m1 + m2) L1²          m2 L1 L2 cos(θ - φ) ]
//!           [ m2 L1 L2 cos(θ - φ)    m2 L2²              ]
//! ```
//!
//! (`cos θ cos φ + sin θ sin φ = cos(θ - φ)`), and the potential is the Cartesian one,
//! `V = -gravity · (y1 + y2) = gravity · (2 L1 cos θ + L2 cos φ)`. The Euler–Lagrange equations
//! are, with `c = cos(θ - φ)`, `s = sin(θ - φ)`, `B = m2 L1 L2`,
//!
//! ```text
//! (m1 + m2) L1² θ̈ + B c φ̈ = -B s φ̇² - ∂V/∂θ
//! B c θ̈ + m2 L2² φ̈        =  B s θ̇² - ∂V/∂φ
//! ```
//!
//! The paper integrates them with small-step variational Euler; here the classical fourth-order
//! Runge–Kutta method at a small step is used ([`GeneralizedPendulum::reference_trajectory`]):
//! it is not symplectic, but at `h = 1e-3` its energy error is below `1e-10` over tens of time
//! units (tested), far below the errors of the methods compared against it.

use super::DoublePendulum;
use zs_runtime::State;

/// A state in generalized coordinates: angles of the two rods from the downward vertical
/// (`θ` for the first, `φ` for the second, both measured from `-y`) and their rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeneralizedState {
    /// Time.
    pub t: f64,
    /// Angle θ of the first rod.
    pub theta: f64,
    /// Angle φ of the second rod.
    pub phi: f64,
    /// `θ̇`.
    pub theta_dot: f64,
    /// `φ̇`.
    pub phi_dot: f64,
}

/// One recorded point of a reference trajectory: the generalized state and the same state in
/// the Cartesian coordinates of [`DoublePendulum`] (`q = (x1, y1, x2, y2)`, `v = q̇`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReferenceSample {
    /// Time.
    pub t: f64,
    /// Angle θ of the first rod.
    pub theta: f64,
    /// Angle φ of the second rod.
    pub phi: f64,
    /// `θ̇`.
    pub theta_dot: f64,
    /// `φ̇`.
    pub phi_dot: f64,
    /// Cartesian positions `(x1, y1, x2, y2)`.
    pub q: [f64; 4],
    /// Cartesian velocities `(ẋ1, ẏ1, ẋ2, ẏ2)`.
    pub v: [f64; 4],
}

/// The double pendulum in generalized coordinates (θ, φ), same parameters as
/// [`DoublePendulum`] (whose `gravity` sign convention it keeps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeneralizedPendulum {
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

impl From<&DoublePendulum> for GeneralizedPendulum {
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

impl GeneralizedPendulum {
    /// The paper's pendulum with the physical sign of gravity ([`DoublePendulum::paper`]).
    pub fn paper() -> Self {
        Self::from(&DoublePendulum::paper())
    }

    /// The position-dependent mass matrix `M̃(θ, φ)` (Z&S eq. 23).
    pub fn mass_matrix(&self, theta: f64, phi: f64) -> [[f64; 2]; 2] {
        let b = self.m2 * self.l1 * self.l2 * (theta - phi).cos();
        [
            [(self.m1 + self.m2) * self.l1 * self.l1, b],
            [b, self.m2 * self.l2 * self.l2],
        ]
    }

    /// `V(θ, φ) = gravity · (2 L1 cos θ + L2 cos φ)` (the Cartesian `-gravity · (y1 + y2)`).
    pub fn potential(&self, theta: f64, phi: f64) -> f64 {
        self.gravity * (2.0 * self.l1 * theta.cos() + self.l2 * phi.cos())
    }

    /// Total energy `½ θ̇ᵀ M̃ θ̇ + V`.
    pub fn energy(&self, s: &GeneralizedState) -> f64 {
        let m = self.mass_matrix(s.theta, s.phi);
        let (a, b) = (s.theta_dot, s.phi_dot);
        0.5 * (m[0][0] * a * a + 2.0 * m[0][1] * a * b + m[1][1] * b * b)
            + self.potential(s.theta, s.phi)
    }

    /// `(θ̈, φ̈)` from the Euler–Lagrange equations (module docs), by Cramer's rule on `M̃`.
    pub fn acceleration(&self, theta: f64, phi: f64, theta_dot: f64, phi_dot: f64) -> [f64; 2] {
        let (s, c) = (theta - phi).sin_cos();
        let a = (self.m1 + self.m2) * self.l1 * self.l1;
        let b = self.m2 * self.l1 * self.l2;
        let d = self.m2 * self.l2 * self.l2;
        // ∂V/∂θ, ∂V/∂φ
        let v_theta = -2.0 * self.gravity * self.l1 * theta.sin();
        let v_phi = -self.gravity * self.l2 * phi.sin();
        let r1 = -b * s * phi_dot * phi_dot - v_theta;
        let r2 = b * s * theta_dot * theta_dot - v_phi;
        let det = a * d - b * b * c * c;
        [(d * r1 - b * c * r2) / det, (a * r2 - b * c * r1) / det]
    }

    /// One classical fourth-order Runge–Kutta step of size `h` (advances `s.t`).
    pub fn rk4_step(&self, s: &mut GeneralizedState, h: f64) {
        let f = |y: [f64; 4]| -> [f64; 4] {
            let acc = self.acceleration(y[0], y[1], y[2], y[3]);
            [y[2], y[3], acc[0], acc[1]]
        };
        let y0 = [s.theta, s.phi, s.theta_dot, s.phi_dot];
        let add = |y: [f64; 4], k: [f64; 4], c: f64| -> [f64; 4] {
            core::array::from_fn(|i| y[i] + c * k[i])
        };
        let k1 = f(y0);
        let k2 = f(add(y0, k1, 0.5 * h));
        let k3 = f(add(y0, k2, 0.5 * h));
        let k4 = f(add(y0, k3, h));
        let y: [f64; 4] =
            core::array::from_fn(|i| y0[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]));
        s.theta = y[0];
        s.phi = y[1];
        s.theta_dot = y[2];
        s.phi_dot = y[3];
        s.t += h;
    }

    /// Cartesian state (`q = (x1, y1, x2, y2)`, `v = q̇`, same `t`) of a generalized state.
    pub fn to_cartesian(&self, s: &GeneralizedState) -> State<4> {
        let (st, ct) = s.theta.sin_cos();
        let (sp, cp) = s.phi.sin_cos();
        let (x1, y1) = (self.l1 * st, -self.l1 * ct);
        let (x2, y2) = (x1 + self.l2 * sp, y1 - self.l2 * cp);
        let (vx1, vy1) = (self.l1 * ct * s.theta_dot, self.l1 * st * s.theta_dot);
        let (vx2, vy2) = (
            vx1 + self.l2 * cp * s.phi_dot,
            vy1 + self.l2 * sp * s.phi_dot,
        );
        State::at([x1, y1, x2, y2], [vx1, vy1, vx2, vy2], s.t)
    }

    /// Generalized state of a Cartesian state: `θ = atan2(x1, -y1)`, `φ = atan2(x2 - x1,
    /// -(y2 - y1))`, and the rates from the velocity components tangent to the rods (exact
    /// when the state satisfies the constraints and their time derivatives; otherwise the
    /// projection onto them).
    pub fn from_cartesian(&self, state: &State<4>) -> GeneralizedState {
        let [x1, y1, x2, y2] = state.q;
        let [vx1, vy1, vx2, vy2] = state.v;
        let theta = x1.atan2(-y1);
        let phi = (x2 - x1).atan2(-(y2 - y1));
        let (st, ct) = theta.sin_cos();
        let (sp, cp) = phi.sin_cos();
        GeneralizedState {
            t: state.t,
            theta,
            phi,
            theta_dot: (vx1 * ct + vy1 * st) / self.l1,
            phi_dot: ((vx2 - vx1) * cp + (vy2 - vy1) * sp) / self.l2,
        }
    }

    /// The paper's initial state `q(0) = (0, -1, 1, -2)`, at rest: θ = 0, φ = π/4 (for
    /// `L1 = 1`, `L2 = √2`).
    pub fn paper_initial_state(&self) -> GeneralizedState {
        self.from_cartesian(&DoublePendulum::initial_state())
    }

    /// Reference trajectory from `initial` to `initial.t + t_end` by RK4 with `n = ⌈t_end/h⌉`
    /// equal steps of `t_end / n` (≤ `h`; equal to `h` when `h` divides `t_end`), recording the
    /// initial point, every `every`-th step, and the final step.
    ///
    /// To compare with an integrator run at step `Δ`, choose `h = Δ / m` and `every = m`: the
    /// samples then fall on the times `k Δ`. Times are computed as `t0 + k·(t_end/n)`, not
    /// accumulated.
    ///
    /// # Panics
    /// If `h` or `t_end` is not positive and finite, or `every` is zero.
    pub fn reference_trajectory(
        &self,
        initial: GeneralizedState,
        t_end: f64,
        h: f64,
        every: usize,
    ) -> Vec<ReferenceSample> {
        assert!(h > 0.0 && h.is_finite(), "step must be positive and finite");
        assert!(
            t_end > 0.0 && t_end.is_finite(),
            "t_end must be positive and finite"
        );
        assert!(every > 0, "`every` must be at least 1");
        // Tolerate t_end/h = 500.0000000001 from rounding.
        let n = ((t_end / h) * (1.0 - 1e-12)).ceil().max(1.0) as usize;
        let h_eff = t_end / n as f64;
        let t0 = initial.t;
        let mut s = initial;
        let mut out = Vec::with_capacity(n / every + 2);
        out.push(self.sample(&s));
        for k in 1..=n {
            self.rk4_step(&mut s, h_eff);
            s.t = t0 + k as f64 * h_eff;
            if k % every == 0 || k == n {
                out.push(self.sample(&s));
            }
        }
        out
    }

    /// [`GeneralizedPendulum::reference_trajectory`] from the paper's initial state
    /// ([`GeneralizedPendulum::paper_initial_state`]).
    pub fn paper_reference_trajectory(
        &self,
        t_end: f64,
        h: f64,
        every: usize,
    ) -> Vec<ReferenceSample> {
        self.reference_trajectory(self.paper_initial_state(), t_end, h, every)
    }

    fn sample(&self, s: &GeneralizedState) -> ReferenceSample {
        let c = self.to_cartesian(s);
        ReferenceSample {
            t: s.t,
            theta: s.theta,
            phi: s.phi,
            theta_dot: s.theta_dot,
            phi_dot: s.phi_dot,
            q: c.q,
            v: c.v,
        }
    }
}
