//! SETTLE as a stepper (Miyamoto & Kollman 1992): RATTLE (Andersen 1983) for rigid three-site
//! molecules, each molecule's constraint equations solved in closed form by
//! [`crate::settle::SettleGeometry`] instead of iterated — what every molecular-dynamics engine
//! uses for rigid water. The model has no constraint functions: the molecules are given.
//!
//! ```text
//! v̄     = v_n − (h/2) M⁻¹ ∇V(q_n),      q̄ = q_n + h v̄
//! q_n+1 = SETTLE(q_n, q̄)                (constraint forces along q_n's bonds, SHAKE's condition)
//! v½    = v̄ + (q_n+1 − q̄) / h           (the constraint impulse of the first half)
//! v_n+1 = RATTLE_v(q_n+1, v½ − (h/2) M⁻¹ ∇V(q_n+1))   (the velocity along the bonds removed)
//! ```
//!
//! The same map as [`crate::Rattle`] on the same constraints (each molecule's O–H, O–H and
//! H–H distances), with SHAKE's solution exact instead of converged to a tolerance: symplectic,
//! time-reversible, order 2, one gradient per step.

use super::{Buffers, check_finite, check_h, check_state};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::error::{Quantity, StepErrorKind};
use crate::settle::{SettleError, SettleGeometry};
use crate::stepper::{Clock, Clocked};
use crate::vector::{Vector, same_bits};
use crate::{Model, StateOf, StepError, Stepper};

/// SETTLE over rigid three-site molecules (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Settle<V: Vector> {
    clock: Clock,
    /// Per molecule, its bodies (3 coordinates each): the oxygen, then the two hydrogens.
    molecules: Vec<[u32; 3]>,
    /// The O–H and H–H distances.
    d_oh: f64,
    d_hh: f64,
    work: Buffers<Work<V>>,
}

#[derive(Debug)]
struct Work<V> {
    m: V,
    grad: V,
    q: V,
    v: V,
    /// The positions `grad` belongs to.
    at: V,
    cached: bool,
}

impl<V: Vector> Settle<V> {
    /// SETTLE with step `h` over `molecules` (bodies O, H, H) of O–H distance `d_oh` and H–H
    /// distance `d_hh`; the masses are the model's (the two hydrogens' equal). Bodies in no
    /// molecule move by velocity Verlet.
    pub fn new(h: f64, molecules: Vec<[u32; 3]>, d_oh: f64, d_hh: f64) -> Self {
        Self {
            clock: Clock::new(h),
            molecules,
            d_oh,
            d_hh,
            work: Buffers::default(),
        }
    }

    /// Forget the cached gradient (required before stepping a different potential).
    pub fn reset(&mut self) {
        if let Some(w) = self.work.as_mut() {
            w.cached = false;
        }
    }

    /// Advance `state` by one step of size `h`; on error `state` is unchanged.
    ///
    /// # Errors
    /// An invalid `h`, a state of another size, a non-finite gradient or state, a molecule
    /// whose hydrogens' masses differ, or one that no rotation can place
    /// ([`SettleError::NoSolution`]: a step far too large for the forces).
    pub fn step<P: Model<V> + ?Sized>(
        &mut self,
        model: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        check_h(h, k, t)?;
        let n = model.dimension();
        check_state(n, state, k, t)?;
        let w = self.work.get(
            |w| w.grad.len() == n,
            || Work {
                m: V::zeros(n),
                grad: V::zeros(n),
                q: V::zeros(n),
                v: V::zeros(n),
                at: V::zeros(n),
                cached: false,
            },
        );
        model.masses_into(&mut w.m);
        if !(w.cached && same_bits(&w.at, &state.q)) {
            model.gradient_into(&state.q, &mut w.grad);
            check_finite(&w.grad, Quantity::Gradient, k, t)?;
            w.at.copy_from(&state.q);
        }
        w.cached = false;
        let half = 0.5 * h;
        {
            let (m, g) = (w.m.as_slice(), w.grad.as_slice());
            let (q0, v0) = (state.q.as_slice(), state.v.as_slice());
            let (q, v) = (w.q.as_mut_slice(), w.v.as_mut_slice());
            for i in 0..n {
                v[i] = v0[i] - half * g[i] / m[i];
                q[i] = q0[i] + h * v[i];
            }
        }
        check_finite(&w.q, Quantity::NewPosition, k, t)?;
        let fail = |e: SettleError| StepError::new(k, t, StepErrorKind::Settle(e));
        for &mol in &self.molecules {
            let geometry = geometry_of(w.m.as_slice(), mol, self.d_oh, self.d_hh).map_err(fail)?;
            let old = rows(state.q.as_slice(), mol);
            let mut new = rows(w.q.as_slice(), mol);
            let unconstrained = new;
            geometry.positions(&old, &mut new).map_err(fail)?;
            let (q, v) = (w.q.as_mut_slice(), w.v.as_mut_slice());
            for (a, &body) in mol.iter().enumerate() {
                for d in 0..3 {
                    let i = 3 * body as usize + d;
                    q[i] = new[a][d];
                    v[i] += (new[a][d] - unconstrained[a][d]) / h;
                }
            }
        }
        model.gradient_into(&w.q, &mut w.grad);
        check_finite(&w.grad, Quantity::Gradient, k, t)?;
        {
            let (m, g, v) = (w.m.as_slice(), w.grad.as_slice(), w.v.as_mut_slice());
            for i in 0..n {
                v[i] -= half * g[i] / m[i];
            }
        }
        for &mol in &self.molecules {
            let geometry = geometry_of(w.m.as_slice(), mol, self.d_oh, self.d_hh).map_err(fail)?;
            let at = rows(w.q.as_slice(), mol);
            let mut vel = rows(w.v.as_slice(), mol);
            geometry.velocities(&at, &mut vel);
            let v = w.v.as_mut_slice();
            for (a, &body) in mol.iter().enumerate() {
                v[3 * body as usize..3 * body as usize + 3].copy_from_slice(&vel[a]);
            }
        }
        check_finite(&w.v, Quantity::NewVelocity, k, t)?;
        state.q.copy_from(&w.q);
        state.v.copy_from(&w.v);
        state.t = t + h;
        w.at.copy_from(&w.q);
        w.cached = true;
        self.clock.steps += 1;
        Ok(())
    }
}

/// The molecule's three bodies' coordinates.
fn rows(x: &[f64], mol: [u32; 3]) -> [[f64; 3]; 3] {
    mol.map(|b| {
        let i = 3 * b as usize;
        [x[i], x[i + 1], x[i + 2]]
    })
}

/// The geometry of one molecule with the model's masses.
fn geometry_of(
    m: &[f64],
    mol: [u32; 3],
    d_oh: f64,
    d_hh: f64,
) -> Result<SettleGeometry, SettleError> {
    let mass = |b: u32| m[3 * b as usize];
    let (m_o, m_h, m_h2) = (mass(mol[0]), mass(mol[1]), mass(mol[2]));
    if m_h != m_h2 {
        return Err(SettleError::UnequalHydrogens {
            first: m_h,
            second: m_h2,
        });
    }
    Ok(SettleGeometry {
        m_o,
        m_h,
        d_oh,
        d_hh,
    })
}

impl<V: Vector> Clocked for Settle<V> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "SETTLE"
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Stepper<P, V> for Settle<V> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        Settle::step(self, target, state)
    }
}

/// Saves `h` and the step counter; the cached gradient is recomputed from the restored state,
/// giving the same bits.
impl<V: Vector> Resumable for Settle<V> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        self.clock.save(out);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.clock.restore(from)?;
        self.reset();
        Ok(())
    }
}
