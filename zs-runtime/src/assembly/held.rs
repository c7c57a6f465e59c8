//! An assembled system whose caller holds the state in the system's own inner order
//! ([`HeldInside`]): the steppers' vectors, not only the evaluation's, are in spatial order, and
//! nothing is permuted per step.
//!
//! In spatial order ([`super::BodyOrder::Cells`]) an [`Assembled`] system's interface is the
//! user's order: every evaluation gathers `q` into the inner order and its gradient back, two
//! passes over the state per step which, at a million beads, cost more than the order saves
//! (BENCHMARKS.md). [`Assembled::held_inside`] is the same system as a [`crate::Model`] over
//! vectors in the inner order: the evaluation reads the caller's vectors as they are, the
//! masses are lent in that order, and between steps the driver asks it to re-sort
//! ([`crate::Model::reorder`]: the state permuted from the old order to the new, when the
//! neighbour list was built [`Assembled::with_resort_period`] times since the order was made).
//! Whatever shows the state outside — the CSV and XYZ recorders, checkpoints, a resumed run —
//! asks it for the user's order, a vector at a time ([`crate::Model::in_user_order`],
//! [`crate::Model::in_own_order`]), so files and checkpoints are the same as the system's
//! own. The inner evaluations are those of the system in spatial order, so a trajectory held
//! inside is, permuted back, the system's trajectory bit for bit while neither re-sorts.
//!
//! A stepper that assembles the Hessian (Z&S, Newmark) takes the system itself: its matrices'
//! patterns are made over the user's indices.

use super::order;
use super::system::Assembled;
use super::terms::Terms;
use crate::masses::Masses;
use crate::state::DynState;

/// An [`Assembled`] system as a [`crate::Model`] over vectors in its inner order
/// ([`Assembled::held_inside`]). In the topology's order it is
/// the system itself.
#[derive(Debug)]
pub struct HeldInside<'a, T, const D: usize> {
    pub(crate) system: &'a Assembled<T, D>,
}

impl<T, const D: usize> Clone for HeldInside<'_, T, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const D: usize> Copy for HeldInside<'_, T, D> {}

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// This system as a [`crate::Model`] over vectors in its inner order: a state is taken in
    /// by [`HeldInside::state`] and shown in the user's order by [`HeldInside::user_state`]
    /// (or [`crate::Model::in_user_order`]); the driver re-sorts it between steps
    /// ([`crate::Model::reorder`]). For explicit steppers (velocity Verlet, Langevin around
    /// it): the methods that make a matrix panic in spatial order.
    pub fn held_inside(&self) -> HeldInside<'_, T, D> {
        HeldInside { system: self }
    }
}

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// Holds the bodies in cells ([`super::BodyOrder::Cells`]) made from the user's
    /// coordinates `start`, whatever order the system was made in ([`Assembled::ordered`]'s
    /// `Auto` keeps a local order, because there every evaluation pays the permutation): for a
    /// caller that holds its state inside ([`Assembled::held_inside`]), which pays none.
    /// Returns false, changing nothing, when the spatial order does not apply (no pair cutoff,
    /// or constraints, whose rows follow the terms); true when the bodies are held in cells
    /// (already, or now). Allocates (set-up).
    ///
    /// # Errors
    /// A `start` of the wrong length.
    pub fn hold_in_cells(&self, start: &[f64]) -> Result<bool, super::TopologyError> {
        let topology = &self.model.topology;
        let Some((rc, skin)) = topology.pair_cutoff() else {
            return Ok(false);
        };
        if self.model.counts.iter().any(|c| c.2 > 0) {
            return Ok(false);
        }
        if start.len() != self.model.free * D {
            return Err(super::TopologyError::OrderDoesNotApply(format!(
                "the start has {} coordinates, the system {}",
                start.len(),
                self.model.free * D
            )));
        }
        if self.arranged().order.is_some() {
            return Ok(true);
        }
        let rank = {
            let arranged = self.arranged();
            let site = order::user_site::<D>(topology, &arranged.bodies.free_of, start);
            order::cell_rank(topology.bodies(), site, self.model.cell.as_ref(), rc + skin)
        };
        // Made as at set-up: no re-sort counted.
        let resorts = self.resorts();
        self.rearrange(rank);
        self.work().resorts = resorts;
        *self.inside.borrow_mut() = order::Inside::new(self.model.free * D);
        Ok(true)
    }
}

impl<T: Terms<D>, const D: usize> HeldInside<'_, T, D> {
    /// The system.
    pub fn system(&self) -> &Assembled<T, D> {
        self.system
    }

    /// A state in the user's order taken into the inner order (set-up: one vector allocated,
    /// the user's positions' storage reused for the velocities, so that a million bodies'
    /// start holds three vectors at once, not four).
    pub fn state(&self, user: DynState) -> DynState {
        let system = self.system;
        let arranged = system.arranged();
        let Some(order) = &arranged.order else {
            return user;
        };
        system.check_len(&user.q, "q");
        system.check_len(&user.v, "v");
        let parallel = system.on_pool();
        let DynState { q, v, t } = user;
        let mut inner_q = vec![0.0; q.len()];
        order.gather::<D>(&q, &mut inner_q, parallel);
        let mut inner_v = q;
        order.gather::<D>(&v, &mut inner_v, parallel);
        DynState {
            q: inner_q,
            v: inner_v,
            t,
        }
    }

    /// A state held inside, in the user's order (allocates).
    pub fn user_state(&self, state: &DynState) -> DynState {
        let mut user = DynState::new(Vec::new(), Vec::new());
        user.t = state.t;
        if self.system.held_to_user(&state.q, &mut user.q) {
            self.system.held_to_user(&state.v, &mut user.v);
            user
        } else {
            state.clone()
        }
    }
}

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// Refuses a matrix to a caller that holds the state in spatial order: the patterns are
    /// made over the user's indices.
    pub(crate) fn matrices_in(&self, held: bool) {
        assert!(
            !held || self.arranged().order.is_none(),
            "an assembled system held in its spatial order (HeldInside) evaluates energies, \
             gradients and matrix-free products: a stepper that makes the Hessian (Z&S, Newmark) \
             takes the system itself"
        );
    }

    /// The masses lent in the caller's order: the table's, unless the caller holds the state
    /// in spatial order and the bodies' masses differ (then copied: [`Assembled::copy_masses`]).
    pub(crate) fn lent_masses(&self, held: bool) -> Option<Masses<'_>> {
        let uniform = self.model.masses.is_uniform();
        (!held || uniform || self.arranged().order.is_none()).then(|| self.model.masses.lent())
    }

    /// The masses in the caller's order into `m`.
    pub(crate) fn copy_masses(&self, held: bool, m: &mut [f64]) {
        let lent = self.model.masses.lent();
        if self.lent_masses(held).is_some() {
            lent.copy_into(m);
            return;
        }
        let arranged = self.arranged();
        let order = arranged.order.as_ref().expect("a spatial order");
        for (m, &u) in m.chunks_exact_mut(D).zip(&order.to_user) {
            lent.fill(u as usize * D, m);
        }
    }

    /// `½ vᵀ M v` of velocities in the caller's order.
    pub(crate) fn kinetic(&self, held: bool, v: &[f64]) -> f64 {
        self.check_len(v, "v");
        if let Some(masses) = self.lent_masses(held) {
            return 0.5
                * crate::vector::tree_sum(0..v.len(), &|r| {
                    crate::simd::widest(
                        #[inline(always)]
                        || masses.twice_kinetic(r.start, &v[r]),
                    )
                });
        }
        let arranged = self.arranged();
        let order = arranged.order.as_ref().expect("a spatial order");
        let lent = self.model.masses.lent();
        let mut m = [0.0; D];
        let twice: f64 = v
            .chunks_exact(D)
            .zip(&order.to_user)
            .map(|(v, &u)| {
                lent.fill(u as usize * D, &mut m);
                v.iter().zip(&m).map(|(v, m)| m * v * v).sum::<f64>()
            })
            .sum();
        0.5 * twice
    }

    /// A held state re-sorted when due ([`crate::Model::reorder`]): `resort_every` lists built
    /// in this order, and no constraints (their rows follow the terms). The cells are made
    /// from the held positions themselves, as the system re-sorting itself makes them from the
    /// user's, and the state is permuted from the old inner order to the new through one
    /// vector. Allocates (a set-up of the evaluation state, every so many builds).
    pub(crate) fn reorder_held(&self, state: &mut DynState) -> bool {
        let due = self.resort_every > 0
            && self.model.counts.iter().all(|c| c.2 == 0)
            && self.arranged().order.is_some()
            && self.work().sorted_builds_reached(self.resort_every);
        if !due {
            return false;
        }
        self.check_len(&state.q, "q");
        self.check_len(&state.v, "v");
        let topology = &self.model.topology;
        let (rc, skin) = topology
            .pair_cutoff()
            .expect("a spatial order has a pair cutoff");
        let (rank, old_to_inner) = {
            let arranged = self.arranged();
            let order = arranged.order.as_ref().expect("a spatial order");
            // Each user body's free index in the held state: its site is read there.
            let held_free_of: Vec<u32> = order
                .rank
                .iter()
                .map(|&r| arranged.bodies.free_of[r as usize])
                .collect();
            let site = order::user_site::<D>(topology, &held_free_of, &state.q);
            let rank =
                order::cell_rank(topology.bodies(), site, self.model.cell.as_ref(), rc + skin);
            (rank, order.to_inner.clone())
        };
        self.rearrange(rank);
        // New inner free index `i` holds the user's `to_user[i]`, which the old order held at
        // `old_to_inner` of it.
        let from: Vec<u32> = {
            let arranged = self.arranged();
            let order = arranged.order.as_ref().expect("a spatial order");
            order
                .to_user
                .iter()
                .map(|&u| old_to_inner[u as usize])
                .collect()
        };
        let parallel = self.on_pool();
        let mut moved = vec![0.0; state.q.len()];
        for x in [&mut state.q, &mut state.v] {
            order::permute_blocks::<D>(x, &mut moved, &from, parallel);
            std::mem::swap(x, &mut moved);
        }
        true
    }

    /// `x` (inner order) into `user`, in the user's order; false in the topology's order.
    pub(crate) fn held_to_user(&self, x: &[f64], user: &mut Vec<f64>) -> bool {
        let arranged = self.arranged();
        let Some(order) = &arranged.order else {
            return false;
        };
        self.check_len(x, "the vector");
        user.resize(x.len(), 0.0);
        order.scatter::<D>(x, user, self.on_pool());
        true
    }

    /// Each user free index's inner one into `index` ([`crate::Model::user_order_index`]),
    /// and `D`; `None` in the topology's order.
    pub(crate) fn held_index(&self, index: &mut Vec<u32>) -> Option<usize> {
        let arranged = self.arranged();
        let order = arranged.order.as_ref()?;
        index.clear();
        index.extend_from_slice(&order.to_inner);
        Some(D)
    }

    /// `user` (the user's order) into the inner order, into `x`; false in the topology's order.
    pub(crate) fn user_to_held(&self, user: &[f64], x: &mut Vec<f64>) -> bool {
        let arranged = self.arranged();
        let Some(order) = &arranged.order else {
            return false;
        };
        self.check_len(user, "the vector");
        x.resize(user.len(), 0.0);
        order.gather::<D>(user, x, self.on_pool());
        true
    }
}
