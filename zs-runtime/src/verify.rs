//! Measure an integrator's numerical properties: convergence order, symplecticity of the
//! one-step map, time-reversibility.
//!
//! These are the measurements the crate's own tests make, exposed so that users can check a
//! [`Stepper`] on their own [`Potential`]:
//!
//! - **order**: the global error at a fixed time against a fine [`rk4_reference`] for a
//!   sequence of step sizes, and the least-squares [`slope`] of `log err` against `log h`;
//! - **symplecticity**: [`symplecticity_defect`], `max |JᵀΩJ − Ω|` of the one-step map in the
//!   canonical coordinates `(q, p = Mv)`, with `J` by central differences;
//! - **time-reversibility**: [`reversibility_error`], the distance to the start after `n` steps
//!   of `h` followed by `n` steps of `−h`.
//!
//! ```
//! use zs_runtime::verify::{advance, max_diff, rk4_reference, slope};
//! use zs_runtime::{Potential, State, VelocityVerlet};
//!
//! /// `V = ½ q²`, unit mass.
//! struct Harmonic;
//! impl Potential<1> for Harmonic {
//!     fn masses(&self) -> [f64; 1] { [1.0] }
//!     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
//!     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
//!     fn hessian(&self, _q: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
//!     fn third_contraction(&self, _q: &[f64; 1], _a: &[f64; 1]) -> [f64; 1] { [0.0] }
//! }
//!
//! let s0 = State::new([1.0], [0.0]);
//! let reference = rk4_reference(&Harmonic, s0, 1.0, 10_000);
//! let hs = [0.1f64, 0.05, 0.025];
//! let errs: Vec<f64> = hs
//!     .iter()
//!     .map(|&h| {
//!         let n = (1.0 / h).round() as usize;
//!         max_diff(&advance(&mut VelocityVerlet::new(h), &Harmonic, s0, n), &reference)
//!     })
//!     .collect();
//! assert!((slope(&hs, &errs) - 2.0).abs() < 0.1);
//! ```

use crate::{Potential, State, Stepper};

/// `n` steps of `stepper` from `s`; returns the final state.
///
/// # Panics
///
/// If a step fails.
pub fn advance<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    stepper: &mut S,
    p: &P,
    mut s: State<N>,
    n: usize,
) -> State<N> {
    for _ in 0..n {
        stepper.step(p, &mut s).expect("step failed");
    }
    s
}

/// Classical fourth-order Runge–Kutta on `q' = v, v' = −M⁻¹∇V(q)` with `n` equal steps over
/// `t_end`: a reference solution for measuring the error of a lower-order method (its own error
/// is `O((t_end/n)⁴)`).
pub fn rk4_reference<P: Potential<N>, const N: usize>(
    p: &P,
    s: State<N>,
    t_end: f64,
    n: usize,
) -> State<N> {
    let m = p.masses();
    let acc = |q: &[f64; N]| -> [f64; N] {
        let g = p.gradient(q);
        core::array::from_fn(|i| -g[i] / m[i])
    };
    let axpy = |x: &[f64; N], a: f64, y: &[f64; N]| -> [f64; N] {
        core::array::from_fn(|i| x[i] + a * y[i])
    };
    let h = t_end / n as f64;
    let (mut q, mut v) = (s.q, s.v);
    for _ in 0..n {
        let (k1q, k1v) = (v, acc(&q));
        let (q2, v2) = (axpy(&q, 0.5 * h, &k1q), axpy(&v, 0.5 * h, &k1v));
        let (k2q, k2v) = (v2, acc(&q2));
        let (q3, v3) = (axpy(&q, 0.5 * h, &k2q), axpy(&v, 0.5 * h, &k2v));
        let (k3q, k3v) = (v3, acc(&q3));
        let (q4, v4) = (axpy(&q, h, &k3q), axpy(&v, h, &k3v));
        let (k4q, k4v) = (v4, acc(&q4));
        for i in 0..N {
            q[i] += h / 6.0 * (k1q[i] + 2.0 * k2q[i] + 2.0 * k3q[i] + k4q[i]);
            v[i] += h / 6.0 * (k1v[i] + 2.0 * k2v[i] + 2.0 * k3v[i] + k4v[i]);
        }
    }
    State::at(q, v, s.t + t_end)
}

/// `max_i max(|a.q_i − b.q_i|, |a.v_i − b.v_i|)`: the max-norm distance of two states (time not
/// included).
pub fn max_diff<const N: usize>(a: &State<N>, b: &State<N>) -> f64 {
    (0..N)
        .map(|i| (a.q[i] - b.q[i]).abs().max((a.v[i] - b.v[i]).abs()))
        .fold(0.0, f64::max)
}

/// Least-squares slope of `log err` against `log h`: the measured convergence order when
/// `errs[k]` is the global error with step `hs[k]`. The one log-log fit of the workspace (tests,
/// experiments, benchmarks).
///
/// NaN when a point is not positive and finite (a zero or NaN error is a finding, not a point
/// to drop), when there are fewer than two points, or when all `h` are equal.
///
/// # Panics
/// If `hs` and `errs` differ in length.
pub fn slope(hs: &[f64], errs: &[f64]) -> f64 {
    assert_eq!(hs.len(), errs.len(), "slope: one error per step size");
    let usable = |x: &f64| x.is_finite() && *x > 0.0;
    if hs.len() < 2 || !hs.iter().chain(errs).all(usable) {
        return f64::NAN;
    }
    let xs: Vec<f64> = hs.iter().map(|h| h.ln()).collect();
    let ys: Vec<f64> = errs.iter().map(|e| e.ln()).collect();
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

/// The finite-difference step δ of [`symplecticity_defect`].
pub const SYMPLECTICITY_DELTA: f64 = 1e-6;

/// `max_ab |(JᵀΩJ − Ω)_ab|` of the one-step map `(q, p = Mv) → (q', p')` at `s0`, where `J` is
/// the Jacobian by central differences with step [`SYMPLECTICITY_DELTA`] and
/// `Ω = [[0, I], [−I, 0]]`. Zero (to the finite-difference and solver error) exactly when the
/// map is symplectic at `s0`.
///
/// `make` builds the stepper; a fresh one is used for every evaluation of the map, so no state
/// cached by the stepper is carried from one perturbed point to the next.
///
/// # Panics
///
/// If a step fails.
pub fn symplecticity_defect<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    make: impl Fn() -> S,
    p: &P,
    s0: State<N>,
) -> f64 {
    symplecticity_defect_with_delta(make, p, s0, SYMPLECTICITY_DELTA)
}

/// [`symplecticity_defect`] with the finite-difference step `delta` chosen by the caller.
///
/// # Panics
///
/// If a step fails.
pub fn symplecticity_defect_with_delta<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    make: impl Fn() -> S,
    p: &P,
    s0: State<N>,
    delta: f64,
) -> f64 {
    let m = p.masses();
    let map = |z: &[f64]| -> Vec<f64> {
        let mut s = State::new(
            core::array::from_fn(|i| z[i]),
            core::array::from_fn(|i| z[N + i] / m[i]),
        );
        make().step(p, &mut s).expect("step failed");
        (0..N)
            .map(|i| s.q[i])
            .chain((0..N).map(|i| m[i] * s.v[i]))
            .collect()
    };
    let z0: Vec<f64> = (0..N)
        .map(|i| s0.q[i])
        .chain((0..N).map(|i| m[i] * s0.v[i]))
        .collect();
    let n2 = 2 * N;
    // j[r][c] = ∂z'_r / ∂z_c
    let mut j = vec![vec![0.0; n2]; n2];
    for c in 0..n2 {
        let (mut zp, mut zm) = (z0.clone(), z0.clone());
        zp[c] += delta;
        zm[c] -= delta;
        let (fp, fm) = (map(&zp), map(&zm));
        for r in 0..n2 {
            j[r][c] = (fp[r] - fm[r]) / (2.0 * delta);
        }
    }
    let omega = |r: usize, c: usize| -> f64 {
        if c == r + N {
            1.0
        } else if r == c + N {
            -1.0
        } else {
            0.0
        }
    };
    let mut worst = 0.0f64;
    for a in 0..n2 {
        for b in 0..n2 {
            // (JᵀΩJ)_ab = Σ_rc J_ra Ω_rc J_cb
            let mut s = 0.0;
            for r in 0..n2 {
                for c in 0..n2 {
                    let w = omega(r, c);
                    if w != 0.0 {
                        s += j[r][a] * w * j[c][b];
                    }
                }
            }
            worst = worst.max((s - omega(a, b)).abs());
        }
    }
    worst
}

/// Time-reversibility: `n` steps of `stepper` with its step `h` from `s0`, then `n` steps with
/// `−h` on the same stepper; returns `max(max_diff(back, s0), |t_back − t0|)`. Zero (to
/// rounding or solver tolerance) for a symmetric method.
///
/// # Panics
///
/// If a step fails, or if the forward leg moves the state by no more than `min_motion` (in
/// [`max_diff`]): the measurement would then say nothing.
pub fn reversibility_error<P: Potential<N>, S: Stepper<P, [f64; N]>, const N: usize>(
    mut stepper: S,
    p: &P,
    s0: State<N>,
    n: usize,
    min_motion: f64,
) -> f64 {
    let h = stepper.h();
    let s1 = advance(&mut stepper, p, s0, n);
    assert!(
        max_diff(&s1, &s0) > min_motion,
        "the test must move the state"
    );
    stepper.set_h(-h);
    let back = advance(&mut stepper, p, s1, n);
    max_diff(&back, &s0).max((back.t - s0.t).abs())
}
