// `bond_constraints` returns one `f64` instead of `[f64; K]`, and `body_masses` the wrong length.
use zs_runtime::mechanical_system;

pub struct Chain {
    pub l: f64,
}

#[mechanical_system]
impl Chain {
    fn body_masses(&self) -> [f64; 3] {
        [1.0, 1.0, 1.0]
    }
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        x[1]
    }
    fn bond_constraints(&self, a: &[f64; 2], b: &[f64; 2]) -> f64 {
        (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) - self.l * self.l
    }
}

fn main() {}
