// Three masses for four coordinates.
use zs_runtime::mechanical_system;

pub struct TwoBodies;

#[mechanical_system]
impl TwoBodies {
    fn masses(&self) -> [f64; 3] {
        [1.0, 1.0, 2.0]
    }
    fn potential(&self, q: &[f64; 4]) -> f64 {
        (q[2] - q[0]).powi(2) + (q[3] - q[1]).powi(2)
    }
}

fn main() {}
