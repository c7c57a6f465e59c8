// abs, min, max and floor have kinks or jumps: each is reported.
use zs_runtime::mechanical_system;

pub struct Kinks;

#[mechanical_system]
impl Kinks {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        let a = q[0].abs();
        let b = q[0].min(q[1]);
        let c = f64::max(q[1], 0.0);
        let d = q[1].floor();
        a + b + c + d
    }
}

fn main() {}
