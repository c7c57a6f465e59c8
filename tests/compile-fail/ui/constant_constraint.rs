// The second constraint does not involve `q`.
use zs_runtime::mechanical_system;

pub struct Pendulum {
    pub l: f64,
}

#[mechanical_system]
impl Pendulum {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 2] {
        [q[0] * q[0] + q[1] * q[1] - self.l * self.l, self.l - 1.0]
    }
}

fn main() {}
