// `while` cannot be unrolled at expansion time.
use zs_runtime::mechanical_system;

pub struct Series;

#[mechanical_system]
impl Series {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        let mut v = 0.0;
        let mut k = 1.0;
        while k < 5.0 {
            v += q[0].powf(k) / k;
            k += 1.0;
        }
        v
    }
}

fn main() {}
