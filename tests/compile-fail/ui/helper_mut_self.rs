// A helper that takes `&mut self` cannot be called from `&self` code, nor inlined.
use zs_runtime::mechanical_system;

pub struct Counter {
    pub k: f64,
}

#[mechanical_system]
impl Counter {
    fn scaled(&mut self, x: f64) -> f64 {
        self.k * x
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        self.scaled(q[0]).powi(2)
    }
}

fn main() {}
