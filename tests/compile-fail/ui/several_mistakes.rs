// Several independent mistakes: all are reported in one compile.
use zs_runtime::mechanical_system;

pub struct Messy {
    pub k: f64,
}

#[mechanical_system]
impl Messy {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 3]) -> f64 {
        let r = q[0].hypot(q[1]);
        self.k * r.abs() + q[3] + 2 * q[2]
    }
    fn constraints(&self, q: &[f64; 3]) -> Vec<f64> {
        vec![q[0] - 1.0]
    }
}

fn main() {
    use zs_runtime::Potential;
    let _ = Messy { k: 1.0 }.hessian(&[0.0; 3]);
}
