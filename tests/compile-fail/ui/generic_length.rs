// N is read at expansion time to size the generated arrays: it must be a literal.
use zs_runtime::mechanical_system;

pub struct Chain<const N: usize>;

#[mechanical_system]
impl<const N: usize> Chain<N> {
    fn potential(&self, q: &[f64; N]) -> f64 {
        q[0] * q[0]
    }
}

fn main() {}
