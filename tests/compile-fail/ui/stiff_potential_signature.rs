// `stiff_potential` takes the same `q: &[f64; N]` as `potential` and returns `f64`.
use zs_runtime::mechanical_system;

pub struct Split {
    pub k: f64,
}

#[mechanical_system]
impl Split {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[0] * q[1]
    }
    fn stiff_potential(&self, q: &[f64; 3]) -> f64 {
        self.k * (q[0] - q[1]).powi(2)
    }
}

fn main() {}
