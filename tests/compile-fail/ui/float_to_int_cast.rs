// Truncating a coordinate to an integer is a step function.
use zs_runtime::mechanical_system;

pub struct Lattice;

#[mechanical_system]
impl Lattice {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        let cell = q[0] as i64;
        (q[0] - cell as f64).powi(2)
    }
}

fn main() {}
