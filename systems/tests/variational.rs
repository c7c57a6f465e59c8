//! Seed 004 (`VARIATIONAL.md` §4): every testable property of `Variational` on systems defined
//! with `#[mechanical_system]`.

use zs_runtime::{mechanical_system, PhaseBSolver, State, Tableau, Variational};

/// Pendulum in Cartesian coordinates: N = 2, d = 1, M = I, V = y, g = x² + y² − 1.
struct Pendulum;

#[mechanical_system]
impl Pendulum {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[1]
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
}

fn pendulum_start() -> State<2> {
    let (s, c) = 1f64.sin_cos();
    State::new([s, -c], [0.5 * c, 0.5 * s])
}

/// The exact pendulum, φ'' = −sin φ (φ from the downward vertical), by RK4 at a tiny step.
fn pendulum_exact(t_end: f64) -> ([f64; 2], [f64; 2]) {
    let n = 200_000;
    let h = t_end / n as f64;
    let f = |y: [f64; 2]| [y[1], -y[0].sin()];
    let mut y = [1.0, 0.5];
    for _ in 0..n {
        let k1 = f(y);
        let k2 = f([y[0] + 0.5 * h * k1[0], y[1] + 0.5 * h * k1[1]]);
        let k3 = f([y[0] + 0.5 * h * k2[0], y[1] + 0.5 * h * k2[1]]);
        let k4 = f([y[0] + h * k3[0], y[1] + h * k3[1]]);
        for i in 0..2 {
            y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    let (s, c) = y[0].sin_cos();
    ([s, -c], [y[1] * c, y[1] * s])
}

fn pendulum_error(tableau: Tableau, alpha: f64, n: usize, solver: PhaseBSolver) -> f64 {
    let t_end = 2.0;
    let mut m = Variational::new(tableau, alpha, t_end / n as f64).with_solver(solver);
    let mut s = pendulum_start();
    for _ in 0..n {
        m.step(&Pendulum, &mut s).unwrap();
    }
    let (q, v) = pendulum_exact(t_end);
    let e = (0..2).fold(0.0_f64, |e, i| {
        e.max((s.q[i] - q[i]).abs()).max((s.v[i] - v[i]).abs())
    });
    e
}

#[test]
fn smoke_orders() {
    for (tab, alpha) in [
        (Tableau::euler(), 0.0),
        (Tableau::heun(), 0.0),
        (Tableau::kutta3(), 0.0),
        (Tableau::rk4(), 0.0),
        (Tableau::euler(), -0.5),
        (Tableau::kutta3(), -0.5),
    ] {
        let name = tab.name();
        let e: Vec<f64> = [10, 20, 40, 80]
            .iter()
            .map(|&n| pendulum_error(tab.clone(), alpha, n, PhaseBSolver::Newton))
            .collect();
        let p: Vec<f64> = e.windows(2).map(|w| (w[0] / w[1]).log2()).collect();
        println!("{name} α⁻ = {alpha}: errors {e:?} orders {p:?}");
    }
}
