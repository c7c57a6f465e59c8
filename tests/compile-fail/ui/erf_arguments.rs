// The error functions take one f64: two arguments, and an integer, are errors at the user's
// tokens (both reported at once).
use zs_runtime::mechanical_system;

pub struct Screened {
    pub alpha: f64,
}

fn erfc(x: f64, _y: f64) -> f64 {
    x
}

#[mechanical_system]
impl Screened {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        erfc(self.alpha * q[0], 1.0) + zs_runtime::special::erf(3)
    }
}

fn main() {}
