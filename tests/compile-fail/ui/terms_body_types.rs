// A body's type picks parameters from a table of `self` and nothing else: arithmetic on it is
// reported at the user's tokens, as is a type parameter that is not `usize`.
use zs_runtime::mechanical_system;

pub struct Mixture {
    pub epsilon: Vec<f64>,
}

#[mechanical_system]
impl Mixture {
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        self.epsilon[ka + kb] / r2
    }
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: f64, kb: usize) -> f64 {
        (b[0] - a[0]).powi(2) * self.epsilon[kb]
    }
}

fn main() {}
