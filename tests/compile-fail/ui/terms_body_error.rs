// A non-smooth function and an index out of range in term bodies: both reported, no cascade
// where the system is used.
use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::mechanical_system;

pub struct Beads;

#[mechanical_system]
impl Beads {
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        x[0].abs() + x[1]
    }
    fn pair_potential(&self, a: &[f64; 2], b: &[f64; 2]) -> f64 {
        1.0 / (1.0 + (b[2] - a[0]).powi(2))
    }
}

fn main() {
    let _ = Assembled::new(Beads, Topology::new(3));
}
