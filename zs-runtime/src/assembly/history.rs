//! An assembled system's evaluation history in a checkpoint ([`crate::Model::save_history`]):
//! what its later results depend on besides the point evaluated. Under a pair cutoff that is
//! the neighbour list: it is rebuilt only when a body moved more than half the skin, and the
//! order of its pairs — and so of the pair sums, to their last bits — follows the positions it
//! was built at (the half list's rows put each body's partners nearest first at the build). A
//! run resumed from a checkpoint builds its list again at the saved positions, so it sums in
//! the uninterrupted run's order and continues bit for bit.
//!
//! A state in spatial order re-sorts its bodies as the run goes on
//! ([`super::Assembled::with_resort_period`]), so its order is part of the history too.
//!
//! Entries, under the model's scope of the checkpoint: in spatial order, `order.rank` (every
//! body's place inside, in the user's body order), `order.sorted-at` (the build count when
//! that order was made) and `order.resorts`; under a cutoff, `neighbors.builds` (how many
//! lists the run built so far) and `neighbors.sites` (every body's reference site at the last
//! build, three coordinates each, in the order inside). A checkpoint without them (written
//! before they were kept) resumes with the start's order and a list built afresh.

use super::system::Assembled;
use super::terms::Terms;
use crate::checkpoint::{CheckpointError, Scope, ScopeMut};

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// [`crate::Model::save_history`]: the spatial order and the neighbour list's builds and
    /// reference sites.
    pub(crate) fn save_history_into(&self, out: &mut ScopeMut<'_>) {
        if let Some(order) = &self.arranged().order {
            let rank: Vec<f64> = order.rank.iter().map(|&r| f64::from(r)).collect();
            out.set_f64s("order.rank", &rank);
            let work = self.work();
            out.set_u64("order.sorted-at", work.sorted_at as u64);
            out.set_u64("order.resorts", work.resorts as u64);
        }
        let work = self.work();
        let Some((builds, sites)) = work.list_history() else {
            return;
        };
        let flat: Vec<f64> = sites.iter().flatten().copied().collect();
        out.set_u64("neighbors.builds", builds as u64);
        out.set_f64s("neighbors.sites", &flat);
    }

    /// [`crate::Model::restore_history`]: the saved order made again, then the list built again
    /// at the saved sites. No list saved (a system without a cutoff, or a checkpoint written
    /// before the first evaluation): the list is built at the first evaluation, as in a fresh
    /// run.
    ///
    /// # Errors
    /// See [`Assembled::restore_order`]; saved sites of another number of bodies, or not
    /// finite.
    pub(crate) fn restore_history_from(&self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.restore_order(from)?;
        if !from.contains("neighbors.sites") {
            return Ok(());
        }
        let flat = from.f64s("neighbors.sites")?;
        let builds = from.u64("neighbors.builds")?;
        let bodies = self.model.topology.bodies();
        let mut work = self.work();
        if work.neighbors.is_none() || flat.len() != 3 * bodies {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint's neighbour list has {} sites, the system {} bodies{}",
                flat.len() / 3,
                bodies,
                if work.neighbors.is_none() {
                    " and no pair cutoff"
                } else {
                    ""
                }
            )));
        }
        if !flat.iter().all(|x| x.is_finite()) {
            return Err(CheckpointError::Mismatch(
                "the checkpoint's neighbour list has a site that is not finite".into(),
            ));
        }
        let sites: Vec<[f64; 3]> = flat.chunks_exact(3).map(|s| [s[0], s[1], s[2]]).collect();
        let arranged = self.arranged();
        work.restore_list(&sites, builds as usize, &self.refresh_inputs(&arranged));
        Ok(())
    }

    /// The saved order made again (when it is not this state's already) and its build count.
    ///
    /// # Errors
    /// A saved order for a system held in the topology's order, or one that is not a
    /// permutation of the bodies.
    fn restore_order(&self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        if !from.contains("order.rank") {
            // The topology's order, or a checkpoint of a spatial order from before orders
            // were kept: the start's order, made at set-up.
            return Ok(());
        }
        if self.arranged().order.is_none() {
            return Err(CheckpointError::Mismatch(
                "the checkpoint holds the bodies in a spatial order, this system in the \
                 topology's (ZS_BODY_ORDER?)"
                    .into(),
            ));
        }
        let n = self.model.topology.bodies();
        let mut seen = vec![false; n];
        let mut rank = Vec::with_capacity(n);
        for r in from.f64s("order.rank")? {
            let fits = r >= 0.0 && r < n as f64 && r.fract() == 0.0;
            if !fits || std::mem::replace(&mut seen[r as usize], true) {
                return Err(CheckpointError::Mismatch(format!(
                    "the checkpoint's order is not a permutation of the {n} bodies"
                )));
            }
            rank.push(r as u32);
        }
        if rank.len() != n {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint's order has {} bodies, the system {n}",
                rank.len()
            )));
        }
        let same = self
            .arranged()
            .order
            .as_ref()
            .is_some_and(|o| o.rank == rank);
        if !same {
            self.rearrange(rank);
        }
        let mut work = self.work();
        work.sorted_at = from.u64("order.sorted-at")? as usize;
        work.resorts = from.u64("order.resorts")? as usize;
        Ok(())
    }
}
