// Rebinding `q` would hide the coordinates.
use zs_runtime::mechanical_system;

pub struct Scaled {
    pub s: f64,
}

#[mechanical_system]
impl Scaled {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        let q = [self.s * q[0], self.s * q[1]];
        q[0] * q[1]
    }
}

fn main() {}
