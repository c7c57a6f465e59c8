// The potential is a scalar `f64`.
use zs_runtime::mechanical_system;

pub struct Spring;

#[mechanical_system]
impl Spring {
    fn potential(&self, q: &[f64; 2]) -> [f64; 2] {
        [0.5 * q[0] * q[0], 0.5 * q[1] * q[1]]
    }
}

fn main() {}
