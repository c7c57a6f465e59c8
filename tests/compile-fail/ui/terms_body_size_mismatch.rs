// The bodies have 2 coordinates in `site_potential` but 3 in `bond_potential`.
use zs_runtime::mechanical_system;

pub struct Chain;

#[mechanical_system]
impl Chain {
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        x[1]
    }
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        (b[0] - a[0]).powi(2)
    }
}

fn main() {}
