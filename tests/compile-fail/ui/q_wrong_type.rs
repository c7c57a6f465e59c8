// The coordinates must be `&[f64; N]`, not a slice.
use zs_runtime::mechanical_system;

pub struct Spring;

#[mechanical_system]
impl Spring {
    fn potential(&self, q: &[f64]) -> f64 {
        0.5 * q[0] * q[0]
    }
}

fn main() {}
