// An f64 method the macro cannot differentiate.
use zs_runtime::mechanical_system;

pub struct Gamma;

#[mechanical_system]
impl Gamma {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        q[0].gamma()
    }
}

fn main() {}
