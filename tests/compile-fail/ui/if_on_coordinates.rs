// A branch on `q[0] == 0.0`: equality of run-time values holds on a set of measure zero, so it
// is refused (a piecewise term compares with `<`, `<=`, `>` or `>=`).
use zs_runtime::mechanical_system;

pub struct Wall {
    pub k: f64,
}

#[mechanical_system]
impl Wall {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        if q[0] == 0.0 {
            0.5 * self.k * q[0] * q[0]
        } else {
            0.0
        }
    }
}

fn main() {}
