// `match` on a coordinate-dependent value.
use zs_runtime::mechanical_system;

pub struct Steps;

#[mechanical_system]
impl Steps {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        match q[0] > 1.0 {
            true => q[0],
            false => 1.0,
        }
    }
}

fn main() {}
