//! Numerical faults: every kind of failed step stops the driver cleanly with a typed error that
//! carries the failing step's index, leaves the caller's state bit-for-bit equal to the last
//! good state, and leaves the observers (the CSV file included) with exactly the states up to
//! it. No fault panics.

use std::path::{Path, PathBuf};

use crate::support::fixtures::NanBeyondOne;
use crate::support::fixtures::Spring;
use zs_runtime::driver::{RunFailure, run};
use zs_runtime::guards::{CONSTRAINT_RESIDUAL, ConstraintGuard, ENERGY_DRIFT, EnergyGuard};
use zs_runtime::observers::{FnObserver, Observer, total_energy};
use zs_runtime::output::incomplete_marker_of;
use zs_runtime::{
    Clock, Clocked, CsvRecorder, Langevin, MechanicalSystem, Newmark, Potential, Quantity, Shake,
    ShakeSolver, SolveFailure, State, StepError, StepErrorKind, Stepper, VelocityVerlet, Yoshida4,
    ZhangSkeel, ZhangSkeelSimplified,
};

mod guards;
mod solves;
mod values;

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zs-runtime-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn bits<const N: usize>(s: &State<N>) -> Vec<u64> {
    s.q.iter()
        .chain(&s.v)
        .chain([&s.t])
        .map(|x| x.to_bits())
        .collect()
}

/// `k` steps of `stepper` by hand: the reference for "the last good state".
fn by_hand<P: ?Sized, S: Stepper<P, [f64; N]>, const N: usize>(
    mut stepper: S,
    target: &P,
    mut s: State<N>,
    k: u64,
) -> State<N> {
    for _ in 0..k {
        stepper.step(target, &mut s).unwrap();
    }
    s
}

/// Rows of a CSV file (header excluded), parsed.
fn rows(path: &Path) -> Vec<Vec<f64>> {
    csv::Reader::from_path(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// Free flight in `q0` (v0 = 1) and an oscillator in `q1` whose stiffness jumps from 1 to
/// `k_after` once `q0 ≥ 5`. With `M = 1`, β = ¼ and h = 2, `M + βh²H = diag(1, 1 + k)`: the
/// linear system of Z&S is singular for `k_after = -1` and has condition `1/(1 + k_after)` in
/// general. Positions `q0 = 0, 2, 4, 6`: step 2 (from `t = 4`) evaluates `f` at `q0 = 6`.
struct Switch {
    k_after: f64,
}

impl Switch {
    fn k(&self, q: &[f64; 2]) -> f64 {
        if q[0] < 5.0 { 1.0 } else { self.k_after }
    }
}

impl Potential<2> for Switch {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 2]) -> f64 {
        0.5 * self.k(q) * q[1] * q[1]
    }
    fn gradient(&self, q: &[f64; 2]) -> [f64; 2] {
        [0.0, self.k(q) * q[1]]
    }
    fn hessian(&self, q: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0, 0.0], [0.0, self.k(q)]]
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        [0.0, 0.0]
    }
}

const S0: State<2> = State {
    q: [0.0, 0.5],
    v: [1.0, 0.0],
    t: 0.0,
};

/// A stub stepper that moves `q` by `h`, and either breaks the contract in the way the driver
/// must catch (returns `Ok` with a NaN velocity at step `nan_at`) or stands for an iterative
/// solver that fails to converge at step `not_converged_at` (state untouched, as Newton and
/// SHAKE steppers do).
struct Faulty {
    clock: Clock,
    nan_at: Option<u64>,
    not_converged_at: Option<u64>,
}

impl Faulty {
    fn new(nan_at: Option<u64>, not_converged_at: Option<u64>) -> Self {
        Self {
            clock: Clock::new(0.5),
            nan_at,
            not_converged_at,
        }
    }
}

impl Clocked for Faulty {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "faulty"
    }
}

impl<P: ?Sized> Stepper<P, [f64; 1]> for Faulty {
    fn step(&mut self, _: &P, s: &mut State<1>) -> Result<(), StepError> {
        if Some(self.clock.steps) == self.not_converged_at {
            return Err(StepError::new(
                self.clock.steps,
                s.t,
                StepErrorKind::NotConverged {
                    solver: "stub Newton",
                    iterations: 50,
                    residual: 3.5e-3,
                },
            ));
        }
        s.q[0] += self.clock.h;
        s.v[0] = if Some(self.clock.steps) == self.nan_at {
            f64::NAN
        } else {
            1.0
        };
        s.t += self.clock.h;
        self.clock.steps += 1;
        Ok(())
    }
}

/// A planar pendulum of length 1 in Cartesian coordinates, `g(q) = |q|² - 1`, no gravity.
struct Ring;

impl Potential<2> for Ring {
    fn masses(&self) -> [f64; 2] {
        [1.0, 1.0]
    }
    fn potential(&self, _: &[f64; 2]) -> f64 {
        0.0
    }
    fn gradient(&self, _: &[f64; 2]) -> [f64; 2] {
        [0.0; 2]
    }
    fn hessian(&self, _: &[f64; 2]) -> [[f64; 2]; 2] {
        [[0.0; 2]; 2]
    }
    fn third_contraction(&self, _: &[f64; 2], _: &[f64; 2]) -> [f64; 2] {
        [0.0; 2]
    }
}

impl MechanicalSystem<2, 1> for Ring {
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
    fn constraint_jacobian(&self, q: &[f64; 2]) -> [[f64; 2]; 1] {
        [[2.0 * q[0], 2.0 * q[1]]]
    }
    fn penalized_potential(&self, omega: f64, q: &[f64; 2]) -> f64 {
        let g = self.constraints(q)[0];
        0.5 * omega * omega * g * g
    }
    fn penalized_gradient(&self, omega: f64, q: &[f64; 2]) -> [f64; 2] {
        let g = self.constraints(q)[0];
        [
            2.0 * omega * omega * g * q[0],
            2.0 * omega * omega * g * q[1],
        ]
    }
    fn penalized_hessian(&self, omega: f64, q: &[f64; 2]) -> [[f64; 2]; 2] {
        // ω² (∇g∇gᵀ + g·2I)
        let g = self.constraints(q)[0];
        let w2 = omega * omega;
        core::array::from_fn(|i| {
            core::array::from_fn(|j| w2 * (4.0 * q[i] * q[j] + if i == j { 2.0 * g } else { 0.0 }))
        })
    }
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; 2], a: &[f64; 2]) -> [f64; 2] {
        // d²/dε² of ω² g ∇g along a: ω² (2(∇g·a)(2a) + (2|a|²)∇g)
        let ga = 2.0 * (q[0] * a[0] + q[1] * a[1]);
        let aa = 2.0 * (a[0] * a[0] + a[1] * a[1]);
        let w2 = omega * omega;
        core::array::from_fn(|i| w2 * (2.0 * ga * 2.0 * a[i] + aa * 2.0 * q[i]))
    }
}
