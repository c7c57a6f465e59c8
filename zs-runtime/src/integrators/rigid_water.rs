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
    /// Per molecule, its three bodies' new coordinates (positions, then velocities), made on
    /// rayon's pool and written into `q` or `v` after.
    placed: Vec<[[f64; 3]; 3]>,
    /// Per task of [`MOLECULES_PER_TASK`] molecules, its first failure.
    failed: Vec<Option<SettleError>>,
}

/// Molecules per task of SETTLE's passes on rayon's pool (fixed: which molecule's error is
/// reported, the first, does not depend on the threads; each molecule's bits never do).
const MOLECULES_PER_TASK: usize = 128;

/// Each molecule's new coordinates `solve(molecule)` into `placed`, on rayon's pool when there
/// are many molecules; the first molecule's error (in their order) if any fails. A trait object:
/// rayon's machinery compiled once, not per model.
fn each_molecule(
    molecules: &[[u32; 3]],
    placed: &mut [[[f64; 3]; 3]],
    failed: &mut [Option<SettleError>],
    solve: &(dyn Fn([u32; 3]) -> Result<[[f64; 3]; 3], SettleError> + Sync),
) -> Result<(), SettleError> {
    use rayon::prelude::*;
    let task = |mols: &[[u32; 3]], out: &mut [[[f64; 3]; 3]]| -> Option<SettleError> {
        for (&mol, o) in mols.iter().zip(out) {
            match solve(mol) {
                Ok(x) => *o = x,
                Err(e) => return Some(e),
            }
        }
        None
    };
    if molecules.len() < 2 * MOLECULES_PER_TASK {
        return task(molecules, placed).map_or(Ok(()), Err);
    }
    molecules
        .par_chunks(MOLECULES_PER_TASK)
        .zip(placed.par_chunks_mut(MOLECULES_PER_TASK))
        .zip(failed.par_iter_mut())
        .for_each(|((mols, out), fail)| *fail = task(mols, out));
    failed.iter().find_map(|f| *f).map_or(Ok(()), Err)
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
                placed: vec![[[0.0; 3]; 3]; self.molecules.len()],
                failed: vec![None; self.molecules.len().div_ceil(MOLECULES_PER_TASK)],
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
        let (d_oh, d_hh) = (self.d_oh, self.d_hh);
        {
            let (m, q0, q) = (w.m.as_slice(), state.q.as_slice(), w.q.as_slice());
            each_molecule(&self.molecules, &mut w.placed, &mut w.failed, &|mol| {
                let mut new = rows(q, mol);
                geometry_of(m, mol, d_oh, d_hh)?.positions(&rows(q0, mol), &mut new)?;
                Ok(new)
            })
            .map_err(fail)?;
        }
        let (q, v) = (w.q.as_mut_slice(), w.v.as_mut_slice());
        for (&mol, new) in self.molecules.iter().zip(&w.placed) {
            for (&body, new) in mol.iter().zip(new) {
                let at = 3 * body as usize;
                for ((q, v), &x) in q[at..at + 3].iter_mut().zip(&mut v[at..at + 3]).zip(new) {
                    *v += (x - *q) / h;
                    *q = x;
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
        {
            let (m, q, v) = (w.m.as_slice(), w.q.as_slice(), w.v.as_slice());
            each_molecule(&self.molecules, &mut w.placed, &mut w.failed, &|mol| {
                let mut vel = rows(v, mol);
                geometry_of(m, mol, d_oh, d_hh)?.velocities(&rows(q, mol), &mut vel);
                Ok(vel)
            })
            .map_err(fail)?;
        }
        let v = w.v.as_mut_slice();
        for (&mol, vel) in self.molecules.iter().zip(&w.placed) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// On any pool, each molecule's result is its own and the error reported is that of the
    /// first failing molecule in their order, not of whichever task failed first.
    #[test]
    fn each_molecule_reports_the_first_failure_in_order_on_any_pool() {
        let molecules: Vec<[u32; 3]> = (0..1000).map(|m| [m, m + 1, m + 2]).collect();
        let solve = |fail: &'static [u32]| {
            move |mol: [u32; 3]| -> Result<[[f64; 3]; 3], SettleError> {
                if fail.contains(&mol[0]) {
                    return Err(SettleError::NoSolution {
                        what: "the test's",
                        value: f64::from(mol[0]),
                    });
                }
                Ok(mol.map(|b| [f64::from(b), 0.5 * f64::from(b), -f64::from(b)]))
            }
        };
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            let mut placed = vec![[[0.0; 3]; 3]; molecules.len()];
            let mut failed = vec![None; molecules.len().div_ceil(MOLECULES_PER_TASK)];
            pool.install(|| {
                each_molecule(&molecules, &mut placed, &mut failed, &solve(&[]))
                    .expect("no molecule fails");
                for (mol, p) in molecules.iter().zip(&placed) {
                    assert_eq!(*p, solve(&[])(*mol).unwrap());
                }
                let err = each_molecule(&molecules, &mut placed, &mut failed, &solve(&[907, 300]))
                    .expect_err("two molecules fail");
                assert!(
                    matches!(err, SettleError::NoSolution { value, .. } if value == 300.0),
                    "{threads} threads: {err:?}"
                );
            });
        }
    }
}
