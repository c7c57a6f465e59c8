// `2` is an integer: Rust does not mix it with f64 coordinates.
use zs_runtime::mechanical_system;

pub struct Spring;

#[mechanical_system]
impl Spring {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        q[0] * q[0] / 2
    }
}

fn main() {}
