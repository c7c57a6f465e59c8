//! The pendula of Patrick et al.'s checks (`docs/VARIATIONAL.md` §4): the planar pendulum and the
//! spherical pendulum in Cartesian coordinates, unit mass and length, `V` the height, constrained
//! to the unit circle or sphere. The paper has no numerical examples; these are the project's.

use zs_runtime::{mechanical_system, State};

/// Planar pendulum: `q = (x, y)`, `V = y`, `g = x² + y² − 1` (N = 2, d = 1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pendulum;

#[mechanical_system]
impl Pendulum {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
}

impl Pendulum {
    /// The state at angle `phi` from the downward vertical with angular velocity `omega`.
    pub fn at(phi: f64, omega: f64) -> State<2> {
        let (s, c) = phi.sin_cos();
        State::new([s, -c], [omega * c, omega * s])
    }

    /// `docs/VARIATIONAL.md` §4: `q0 = (sin 1, −cos 1)`, `v0 = 0.5 (cos 1, sin 1)`.
    pub fn initial_state() -> State<2> {
        Self::at(1.0, 0.5)
    }

    /// `½|v|² + y`.
    pub fn energy(s: &State<2>) -> f64 {
        0.5 * (s.v[0] * s.v[0] + s.v[1] * s.v[1]) + s.q[1]
    }

    /// The exact motion from `at(phi0, omega0)` at time `t`: `φ'' = −sin φ` by classical RK4 in
    /// φ with `steps` steps (error ~1e-16 at 2·10⁵ steps over T = 2).
    pub fn exact(phi0: f64, omega0: f64, t: f64, steps: usize) -> State<2> {
        let h = t / steps as f64;
        let f = |y: [f64; 2]| [y[1], -y[0].sin()];
        let mut y = [phi0, omega0];
        for _ in 0..steps {
            let k1 = f(y);
            let k2 = f([y[0] + 0.5 * h * k1[0], y[1] + 0.5 * h * k1[1]]);
            let k3 = f([y[0] + 0.5 * h * k2[0], y[1] + 0.5 * h * k2[1]]);
            let k4 = f([y[0] + h * k3[0], y[1] + h * k3[1]]);
            for i in 0..2 {
                y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            }
        }
        let mut s = Self::at(y[0], y[1]);
        s.t = t;
        s
    }
}

/// Spherical pendulum: `q ∈ R³`, `V = z`, `g = |q|² − 1` (N = 3, d = 1); invariant under
/// rotations about the vertical, whose discrete Noether momentum is `(q̄ × μ)_z`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SphericalPendulum;

#[mechanical_system]
impl SphericalPendulum {
    fn potential(&self, q: &[f64; 3]) -> f64 {
        q[2]
    }
    fn constraints(&self, q: &[f64; 3]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] + q[2] * q[2] - 1.0]
    }
}

impl SphericalPendulum {
    /// `docs/VARIATIONAL.md` §4.5: `q0 = (sin 1, 0, −cos 1)`, `v0 = (0, 0.8, 0)`.
    pub fn initial_state() -> State<3> {
        let (s, c) = 1f64.sin_cos();
        State::new([s, 0.0, -c], [0.0, 0.8, 0.0])
    }

    /// `½|v|² + z`.
    pub fn energy(s: &State<3>) -> f64 {
        0.5 * s.v.iter().map(|x| x * x).sum::<f64>() + s.q[2]
    }
}
