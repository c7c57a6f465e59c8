// Constraints alone: there is nothing to differentiate.
use zs_runtime::mechanical_system;

pub struct Bead;

#[mechanical_system]
impl Bead {
    fn potental(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
}

fn main() {}
