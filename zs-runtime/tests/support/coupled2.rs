//! The 2-DOF anharmonic test potential shared by the integrator property tests
//! (include with `#[path = "support/coupled2.rs"] mod coupled2;`), hand-written derivatives.

use zs_runtime::Potential;

/// `V = ½(q0² + 2 q1²) + 0.3 q0² q1 + 0.1 q0⁴ + 0.05 q1⁴`, masses (1, 1.5).
pub struct Coupled2;

impl Potential<2> for Coupled2 {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.5]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        let (x, y) = (q[0], q[1]);
        0.5 * (x * x + 2.0 * y * y) + 0.3 * x * x * y + 0.1 * x.powi(4) + 0.05 * y.powi(4)
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        let (x, y) = (q[0], q[1]);
        [
            x + 0.6 * x * y + 0.4 * x.powi(3),
            2.0 * y + 0.3 * x * x + 0.2 * y.powi(3),
        ]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        let (x, y) = (q[0], q[1]);
        [
            [1.0 + 0.6 * y + 1.2 * x * x, 0.6 * x],
            [0.6 * x, 2.0 + 0.6 * y * y],
        ]
    }
    fn third_contraction(&self, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        // V_000 = 2.4 x, V_001 = 0.6, V_011 = 0, V_111 = 1.2 y.
        let (x, y) = (q[0], q[1]);
        [
            2.4 * x * a[0] * a[0] + 1.2 * a[0] * a[1],
            0.6 * a[0] * a[0] + 1.2 * y * a[1] * a[1],
        ]
    }
}
