// A misspelled field: rustc reports it once, at the user's token.
use zs_runtime::mechanical_system;

pub struct Pendulum {
    pub gravity: f64,
}

#[mechanical_system]
impl Pendulum {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        self.gravty * q[1]
    }
}

fn main() {}
