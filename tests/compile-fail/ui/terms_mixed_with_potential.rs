// Term functions (an assembled system) mixed with the fixed-size `potential` and `masses`.
use zs_runtime::mechanical_system;

pub struct Chain;

#[mechanical_system]
impl Chain {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        x[1]
    }
}

fn main() {}
