// Macros in the body are opaque to the differentiator.
use zs_runtime::mechanical_system;

pub struct Noisy;

#[mechanical_system]
impl Noisy {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        println!("q = {q:?}");
        q[0] * q[0]
    }
}

fn main() {}
