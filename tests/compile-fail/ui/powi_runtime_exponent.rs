// `powi` needs its exponent at expansion time.
use zs_runtime::mechanical_system;

pub struct Power {
    pub n: i32,
}

#[mechanical_system]
impl Power {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        q[0].powi(self.n)
    }
}

fn main() {}
