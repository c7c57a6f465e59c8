// Helper methods are inlined: mutual recursion would never end.
use zs_runtime::mechanical_system;

pub struct Ping;

#[mechanical_system]
impl Ping {
    fn ping(&self, x: f64) -> f64 {
        self.pong(x) + 1.0
    }
    fn pong(&self, x: f64) -> f64 {
        self.ping(x * 0.5)
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        self.ping(q[0])
    }
}

fn main() {}
