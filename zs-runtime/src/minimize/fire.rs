//! Energy minimisation by FIRE (Bitzek, Bitzek, Gumbsch, Moseler & Koskinen, "Structural
//! relaxation made simple", PRL 97, 170201, 2006): damped molecular dynamics that mixes the
//! velocity towards the force while the power `F·v` stays positive and stops dead when it turns
//! negative. It needs only gradients, tolerates the stiff penalty terms of a penalized system
//! (its step adapts between `dt_max` and the stiff time scale) and allocates only at set-up.
//!
//! Used to relax a starting configuration before dynamics: a cluster built on a grid at rest
//! boils off molecules (`docs/systems/water.md`, water); after a minimisation it stays bound.

use super::{MinimizeError, Minimized, rms};
use crate::Model;
use crate::vector::Vector;

/// FIRE's parameters (the paper's defaults except the time steps, which are the system's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fire {
    /// Initial time step.
    pub dt: f64,
    /// Largest time step.
    pub dt_max: f64,
    /// Stop when `max_i |∂V/∂q_i| ≤ force_tolerance`.
    pub force_tolerance: f64,
    /// Give up after this many steps.
    pub max_steps: u64,
}

impl Fire {
    /// FIRE with initial step `dt`, largest step `10·dt`, the given force tolerance and at most
    /// `max_steps` steps.
    pub fn new(dt: f64, force_tolerance: f64, max_steps: u64) -> Self {
        Self {
            dt,
            dt_max: 10.0 * dt,
            force_tolerance,
            max_steps,
        }
    }

    /// Minimise `V` of `model` from `q` (overwritten by the minimiser).
    ///
    /// # Errors
    /// [`MinimizeError`]: not converged (the last point is kept), or non-finite values (the last
    /// finite point is kept).
    pub fn minimize<P: Model<V> + ?Sized, V: Vector>(
        &self,
        model: &P,
        q: &mut V,
    ) -> Result<Minimized, MinimizeError> {
        // The paper's constants.
        const N_MIN: u32 = 5;
        const F_INC: f64 = 1.1;
        const F_DEC: f64 = 0.5;
        const ALPHA_START: f64 = 0.1;
        const F_ALPHA: f64 = 0.99;
        let n = model.dimension();
        let (mut g, mut v, mut m, mut last) = (V::zeros(n), V::zeros(n), V::zeros(n), V::zeros(n));
        model.masses_into(&mut m);
        last.copy_from(q);
        let (mut dt, mut alpha, mut positive) = (self.dt, ALPHA_START, 0u32);
        for step in 0..=self.max_steps {
            model.gradient_into(q, &mut g);
            // `inf_norm` skips NaN (f64::max does): test finiteness on its own.
            let max_force = crate::vector::inf_norm(&g);
            if !crate::vector::all_finite(&g) {
                q.copy_from(&last);
                return Err(MinimizeError::NonFinite { step });
            }
            if max_force <= self.force_tolerance || step == self.max_steps {
                let done = Minimized {
                    energy: model.potential_at(q),
                    max_force,
                    rms_force: rms(&g),
                    steps: step,
                };
                if !done.energy.is_finite() {
                    q.copy_from(&last);
                    return Err(MinimizeError::NonFinite { step });
                }
                return if max_force <= self.force_tolerance {
                    Ok(done)
                } else {
                    Err(MinimizeError::NotConverged(done))
                };
            }
            last.copy_from(q);
            let (g, v, m) = (g.as_slice(), v.as_mut_slice(), m.as_slice());
            // Power F·v with F = −∇V.
            let power: f64 = -g.iter().zip(v.iter()).map(|(a, b)| a * b).sum::<f64>();
            if power > 0.0 {
                let v_norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                let f_norm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
                for (vi, gi) in v.iter_mut().zip(g) {
                    *vi = (1.0 - alpha) * *vi - alpha * v_norm * gi / f_norm;
                }
                positive += 1;
                if positive > N_MIN {
                    dt = (dt * F_INC).min(self.dt_max);
                    alpha *= F_ALPHA;
                }
            } else {
                v.iter_mut().for_each(|x| *x = 0.0);
                dt *= F_DEC;
                alpha = ALPHA_START;
                positive = 0;
            }
            // Semi-implicit Euler: v += dt·F/m, q += dt·v.
            for ((qi, vi), (gi, mi)) in q
                .as_mut_slice()
                .iter_mut()
                .zip(v.iter_mut())
                .zip(g.iter().zip(m))
            {
                *vi -= dt * gi / mi;
                *qi += dt * *vi;
            }
        }
        unreachable!("the loop returns at step == max_steps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanical_system;

    /// Rosenbrock's valley, `(1 − x)² + 100 (y − x²)²`: minimum 0 at (1, 1), a curved, badly
    /// conditioned valley.
    struct Rosenbrock;

    #[mechanical_system]
    impl Rosenbrock {
        fn potential(&self, q: &[f64; 2]) -> f64 {
            (1.0 - q[0]).powi(2) + 100.0 * (q[1] - q[0] * q[0]).powi(2)
        }
    }

    /// `√x`: the force pushes `x` down through 0, where the gradient stops being a number.
    struct Edge;

    #[mechanical_system]
    impl Edge {
        fn potential(&self, q: &[f64; 1]) -> f64 {
            q[0].sqrt()
        }
    }

    #[test]
    fn fire_finds_the_rosenbrock_minimum() {
        let mut q = [-1.2, 1.0];
        let done = Fire::new(1e-3, 1e-8, 200_000)
            .minimize(&Rosenbrock, &mut q)
            .unwrap();
        assert!(
            (q[0] - 1.0).abs() < 1e-7 && (q[1] - 1.0).abs() < 1e-7,
            "{q:?}"
        );
        assert!(done.energy < 1e-14 && done.max_force <= 1e-8);
    }

    #[test]
    fn fire_reports_no_convergence_and_non_finite_values() {
        let mut q = [-1.2, 1.0];
        match Fire::new(1e-3, 1e-8, 10).minimize(&Rosenbrock, &mut q) {
            Err(MinimizeError::NotConverged(m)) => assert_eq!(m.steps, 10),
            other => panic!("{other:?}"),
        }
        let mut q = [0.5];
        match Fire::new(0.1, 1e-8, 1000).minimize(&Edge, &mut q) {
            Err(MinimizeError::NonFinite { step }) => {
                assert!(step > 0);
                assert!(q[0].is_finite(), "the last finite point is kept: {q:?}");
            }
            other => panic!("{other:?}"),
        }
    }
}
