// A one-sided spring: branching on a coordinate is not differentiable.
use zs_runtime::mechanical_system;

pub struct Wall {
    pub k: f64,
}

#[mechanical_system]
impl Wall {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        if q[0] < 0.0 {
            0.5 * self.k * q[0] * q[0]
        } else {
            0.0
        }
    }
}

fn main() {}
