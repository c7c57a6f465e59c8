// An index that is only known at run time.
use zs_runtime::mechanical_system;

pub struct Picker {
    pub which: usize,
}

#[mechanical_system]
impl Picker {
    fn potential(&self, q: &[f64; 3]) -> f64 {
        q[self.which].powi(2)
    }
}

fn main() {}
