// Loops are unrolled at expansion time: the bound must be a constant.
use zs_runtime::mechanical_system;

pub struct Chain {
    pub links: usize,
}

#[mechanical_system]
impl Chain {
    fn potential(&self, q: &[f64; 8]) -> f64 {
        let mut v = 0.0;
        for i in 0..self.links {
            v += q[i] * q[i];
        }
        v
    }
}

fn main() {}
