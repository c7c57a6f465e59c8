// Closures are not inlined: helper methods are.
use zs_runtime::mechanical_system;

pub struct Pair;

#[mechanical_system]
impl Pair {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        let lj = |r: f64| r.powi(-12) - r.powi(-6);
        lj(q[1] - q[0])
    }
}

fn main() {}
