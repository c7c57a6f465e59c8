// Bodies of 0 coordinates and of more than the macro generates: one error each, at the sizes.
use zs_runtime::mechanical_system;

pub struct Empty;

#[mechanical_system]
impl Empty {
    fn site_potential(&self, _x: &[f64; 0]) -> f64 {
        1.0
    }
}

pub struct Whole;

#[mechanical_system]
impl Whole {
    fn site_potential(&self, x: &[f64; 3000]) -> f64 {
        x[0] * x[1]
    }
}

pub struct Fixed;

#[mechanical_system]
impl Fixed {
    fn potential(&self, q: &[f64; 5000]) -> f64 {
        q[0] * q[0]
    }
}

fn main() {}
