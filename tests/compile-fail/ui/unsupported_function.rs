// A free function: the body may only call f64 methods and methods of its own impl block.
use zs_runtime::mechanical_system;

pub struct Spring {
    pub k: f64,
}

fn energy(x: f64) -> f64 {
    x * x
}

#[mechanical_system]
impl Spring {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        self.k * energy(q[0])
    }
}

fn main() {}
