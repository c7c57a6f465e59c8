// The attribute goes on the inherent impl, not on an impl of a trait.
use zs_runtime::{mechanical_system, Potential};

pub struct Spring;

#[mechanical_system]
impl Potential<1> for Spring {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        0.5 * q[0] * q[0]
    }
}

fn main() {}
