// The attribute takes no arguments.
use zs_runtime::mechanical_system;

pub struct Spring;

#[mechanical_system(n = 1)]
impl Spring {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        0.5 * q[0] * q[0]
    }
}

fn main() {}
