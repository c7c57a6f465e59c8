//! L-BFGS (Nocedal, "Updating quasi-Newton matrices with limited storage", Math. Comp. 35, 1980;
//! Nocedal & Wright, *Numerical Optimization*, 2nd ed., Algorithms 7.4 and 7.5) with a
//! backtracking Armijo line search (quadratic interpolation, Nocedal & Wright §3.5).
//!
//! Each iteration costs one evaluation of `V` and `∇V` together ([`Model::value_gradient_into`]:
//! for generated systems the energy comes out of the gradient's pass) plus one per rejected
//! trial step; the `m` pairs `(s, y)` are kept in buffers made at set-up. Written here rather
//! than taken from `argmin`: its solvers return a new parameter vector every iteration (an
//! allocation of `n` numbers per step) and would bring its math back ends as dependencies, for
//! an algorithm of a hundred lines.
//!
//! The stopping test is OpenMM's: the root-mean-square of the gradient's components
//! ([`super::rms`]) at most `rms_tolerance`.

use super::{MinimizeError, Minimized, rms};
use crate::Model;
use crate::vector::{Vector, inf_norm};

/// L-BFGS's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lbfgs {
    /// Correction pairs kept (`m`; 10 is customary).
    pub memory: usize,
    /// Stop when `√(Σ (∂V/∂q_i)² / n) ≤ rms_tolerance`.
    pub rms_tolerance: f64,
    /// Give up after this many iterations.
    pub max_steps: u64,
    /// Largest change of one coordinate in one trial step (a trust bound: the first steps, and
    /// any step through a region where the quadratic model is poor, are scaled down to it).
    pub max_displacement: f64,
}

/// Armijo's sufficient-decrease constant.
const C1: f64 = 1e-4;
/// Trial steps per line search before the memory is dropped.
const MAX_TRIALS: u32 = 40;

impl Lbfgs {
    /// `m = 10`, the given RMS tolerance and iteration limit, trial steps of at most 0.1 in any
    /// coordinate.
    pub fn new(rms_tolerance: f64, max_steps: u64) -> Self {
        Self {
            memory: 10,
            rms_tolerance,
            max_steps,
            max_displacement: 0.1,
        }
    }

    /// Minimise `model`'s `V` from `q` (updated in place).
    ///
    /// # Errors
    /// [`MinimizeError::NotConverged`] after `max_steps` iterations, or when no step along
    /// the steepest descent lowers `V` any more (`q` holds the best point);
    /// [`MinimizeError::NonFinite`] when `V` or `∇V` is not finite at the start.
    pub fn minimize<P: Model<V> + ?Sized, V: Vector>(
        &self,
        model: &P,
        q: &mut V,
    ) -> Result<Minimized, MinimizeError> {
        self.minimize_with(model, q, |_, _, _| {})
    }

    /// [`Lbfgs::minimize`], calling `progress(iteration, V, rms force)` at every iteration.
    ///
    /// # Errors
    /// As [`Lbfgs::minimize`].
    pub fn minimize_with<P: Model<V> + ?Sized, V: Vector>(
        &self,
        model: &P,
        q: &mut V,
        mut progress: impl FnMut(u64, f64, f64),
    ) -> Result<Minimized, MinimizeError> {
        let n = model.dimension();
        let m = self.memory.max(1);
        let (mut g, mut g_new, mut d, mut q_new) =
            (V::zeros(n), V::zeros(n), V::zeros(n), V::zeros(n));
        let mut s: Vec<V> = (0..m).map(|_| V::zeros(n)).collect();
        let mut y: Vec<V> = (0..m).map(|_| V::zeros(n)).collect();
        let (mut rho, mut alpha) = (vec![0.0; m], vec![0.0; m]);
        // Pairs held, and the slot of the newest.
        let (mut held, mut newest) = (0usize, m - 1);

        let mut f = model.value_gradient_into(q, &mut g);
        if !f.is_finite() || !crate::vector::all_finite(&g) {
            return Err(MinimizeError::NonFinite { step: 0 });
        }
        for step in 0..=self.max_steps {
            let r = rms(&g);
            progress(step, f, r);
            let done = Minimized {
                energy: f,
                max_force: inf_norm(&g),
                rms_force: r,
                steps: step,
            };
            if r <= self.rms_tolerance {
                return Ok(done);
            }
            if step == self.max_steps {
                return Err(MinimizeError::NotConverged(done));
            }
            // d = −H g by the two-loop recursion (Nocedal & Wright, Algorithm 7.4).
            let dd = d.as_mut_slice();
            dd.copy_from_slice(g.as_slice());
            for k in 0..held {
                let i = (newest + m - k) % m;
                alpha[i] = rho[i] * dot(s[i].as_slice(), dd);
                axpy(-alpha[i], y[i].as_slice(), dd);
            }
            if held > 0 {
                // H₀ = γ I with γ = sᵀy / yᵀy of the newest pair (eq. 7.20).
                let (sn, yn) = (s[newest].as_slice(), y[newest].as_slice());
                let gamma = dot(sn, yn) / dot(yn, yn);
                dd.iter_mut().for_each(|x| *x *= gamma);
            }
            for k in (0..held).rev() {
                let i = (newest + m - k) % m;
                let beta = rho[i] * dot(y[i].as_slice(), dd);
                axpy(alpha[i] - beta, s[i].as_slice(), dd);
            }
            dd.iter_mut().for_each(|x| *x = -*x);
            let mut slope = dot(g.as_slice(), dd);
            if slope.is_nan() || slope >= 0.0 {
                // Not a descent direction (curvature lost): steepest descent, memory dropped.
                held = 0;
                dd.iter_mut().zip(g.as_slice()).for_each(|(x, gi)| *x = -gi);
                slope = dot(g.as_slice(), dd);
            }
            let biggest = dd.iter().fold(0.0_f64, |a, x| a.max(x.abs()));
            if biggest > self.max_displacement {
                let c = self.max_displacement / biggest;
                dd.iter_mut().for_each(|x| *x *= c);
                slope *= c;
            }
            // Backtracking line search on q + t d (Armijo), quadratic interpolation.
            let mut t = 1.0;
            let mut accepted = None;
            for _ in 0..MAX_TRIALS {
                for ((qn, qi), di) in q_new
                    .as_mut_slice()
                    .iter_mut()
                    .zip(q.as_slice())
                    .zip(d.as_slice())
                {
                    *qn = qi + t * di;
                }
                let f_new = model.value_gradient_into(&q_new, &mut g_new);
                if f_new.is_finite()
                    && crate::vector::all_finite(&g_new)
                    && f_new <= f + C1 * t * slope
                {
                    accepted = Some(f_new);
                    break;
                }
                let quadratic = if f_new.is_finite() {
                    -slope * t * t / (2.0 * (f_new - f - slope * t))
                } else {
                    0.1 * t
                };
                t = quadratic.clamp(0.1 * t, 0.5 * t);
            }
            let Some(f_new) = accepted else {
                if held == 0 {
                    // Not even steepest descent lowers V: as far as double precision goes.
                    return Err(MinimizeError::NotConverged(done));
                }
                held = 0;
                continue;
            };
            // The new pair (s, y), kept when its curvature sᵀy is positive (eq. 6.7).
            let slot = (newest + 1) % m;
            let (sv, yv) = (s[slot].as_mut_slice(), y[slot].as_mut_slice());
            for i in 0..n {
                sv[i] = q_new.as_slice()[i] - q.as_slice()[i];
                yv[i] = g_new.as_slice()[i] - g.as_slice()[i];
            }
            let sy = dot(sv, yv);
            if sy > 1e-12 * dot(sv, sv).sqrt() * dot(yv, yv).sqrt() {
                rho[slot] = 1.0 / sy;
                newest = slot;
                held = (held + 1).min(m);
            }
            q.copy_from(&q_new);
            core::mem::swap(&mut g, &mut g_new);
            f = f_new;
        }
        unreachable!("the loop returns at step == max_steps")
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `y += a x`.
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

#[cfg(test)]
// The macro reads indexed loops over the coordinates (`for i in 0..6 { q[i] … }`).
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::mechanical_system;

    /// Rosenbrock's valley, `(1 − x)² + 100 (y − x²)²`.
    struct Rosenbrock;

    #[mechanical_system]
    impl Rosenbrock {
        fn potential(&self, q: &[f64; 2]) -> f64 {
            (1.0 - q[0]).powi(2) + 100.0 * (q[1] - q[0] * q[0]).powi(2)
        }
    }

    /// An ill-conditioned quadratic in 6 dimensions, `Σ kᵢ (qᵢ − i)²` with k from 1 to 10⁴.
    struct Stiff;

    #[mechanical_system]
    impl Stiff {
        fn potential(&self, q: &[f64; 6]) -> f64 {
            let mut e = 0.0;
            for i in 0..6 {
                let k = 10f64.powf(0.8 * i as f64);
                e += k * (q[i] - i as f64).powi(2);
            }
            e
        }
    }

    #[test]
    fn lbfgs_finds_the_rosenbrock_minimum_in_few_iterations() {
        let mut q = [-1.2, 1.0];
        let mut seen = 0;
        let done = Lbfgs::new(1e-9, 500)
            .minimize_with(&Rosenbrock, &mut q, |_, _, _| seen += 1)
            .unwrap();
        assert!(
            (q[0] - 1.0).abs() < 1e-7 && (q[1] - 1.0).abs() < 1e-7,
            "{q:?}"
        );
        assert!(done.rms_force <= 1e-9 && done.energy < 1e-14, "{done:?}");
        // FIRE needs thousands of steps here; a quasi-Newton method tens.
        assert!(done.steps < 200, "{} iterations", done.steps);
        assert_eq!(seen, done.steps + 1);
    }

    #[test]
    fn lbfgs_converges_on_an_ill_conditioned_quadratic() {
        let mut q = [0.0; 6];
        let done = Lbfgs::new(1e-8, 1000).minimize(&Stiff, &mut q).unwrap();
        for (i, x) in q.iter().enumerate() {
            assert!((x - i as f64).abs() < 1e-8, "{q:?}");
        }
        assert!(done.rms_force <= 1e-8);
    }

    #[test]
    fn lbfgs_reports_no_convergence_and_a_non_finite_start() {
        let mut q = [-1.2, 1.0];
        match Lbfgs::new(1e-12, 3).minimize(&Rosenbrock, &mut q) {
            Err(MinimizeError::NotConverged(m)) => {
                assert_eq!(m.steps, 3);
                assert!(m.energy < 24.2, "V decreased from 24.2: {}", m.energy);
            }
            other => panic!("{other:?}"),
        }
        let mut q = [f64::NAN, 1.0];
        assert_eq!(
            Lbfgs::new(1e-8, 10).minimize(&Rosenbrock, &mut q),
            Err(MinimizeError::NonFinite { step: 0 })
        );
    }
}
