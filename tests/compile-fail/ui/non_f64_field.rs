// Fields are parameters of type `f64` (numeric fields of other types are converted with
// `as f64`, as in plain Rust): passing an `f32` field where an `f64` is expected is the
// user's type error, reported by rustc once, at the field.
use zs_runtime::mechanical_system;

pub struct Spring {
    pub k: f32,
    pub rest: u32,
}

#[mechanical_system]
impl Spring {
    fn energy(&self, k: f64, x: f64) -> f64 {
        0.5 * k * x * x
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        self.energy(self.k, q[0] - self.rest as f64)
    }
}

fn main() {}
