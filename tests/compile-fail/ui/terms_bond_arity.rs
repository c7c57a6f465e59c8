// A bond term takes the two bodies it joins, not one.
use zs_runtime::mechanical_system;

pub struct Chain;

#[mechanical_system]
impl Chain {
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        x[1]
    }
    fn bond_potential(&self, a: &[f64; 2]) -> f64 {
        a[0] * a[0]
    }
}

fn main() {}
