// A helper called with the wrong number of arguments.
use zs_runtime::mechanical_system;

pub struct Morse {
    pub a: f64,
}

#[mechanical_system]
impl Morse {
    fn morse(&self, r: f64, r0: f64) -> f64 {
        (1.0 - (-self.a * (r - r0)).exp()).powi(2)
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        self.morse(q[1] - q[0])
    }
}

fn main() {}
