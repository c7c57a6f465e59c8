// `q` has 4 components: q[4] does not exist.
use zs_runtime::mechanical_system;

pub struct Chain;

#[mechanical_system]
impl Chain {
    fn potential(&self, q: &[f64; 4]) -> f64 {
        let mut v = 0.0;
        for i in 0..4 {
            v += (q[i + 1] - q[i]).powi(2);
        }
        v
    }
}

fn main() {
    // After the error the macro still implements the traits (with dummy bodies), so using the
    // system adds no second error.
    use zs_runtime::{Potential, State, ZhangSkeel};
    let mut state = State::new([0.0, 1.0, 2.0, 3.0], [0.0; 4]);
    ZhangSkeel::new(0.4, 0.1).step(&Chain, &mut state).unwrap();
    let _ = Chain.gradient(&state.q);
}
