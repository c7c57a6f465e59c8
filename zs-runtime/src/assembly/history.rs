//! An assembled system's evaluation history in a checkpoint ([`crate::Model::save_history`]):
//! what its later results depend on besides the point evaluated. Under a pair cutoff that is
//! the neighbour list: it is rebuilt only when a body moved more than half the skin, and the
//! order of its pairs — and so of the pair sums, to their last bits — follows the positions it
//! was built at (the half list's rows put each body's partners nearest first at the build). A
//! run resumed from a checkpoint builds its list again at the saved positions, so it sums in
//! the uninterrupted run's order and continues bit for bit.
//!
//! Entries, under the model's scope of the checkpoint: `neighbors.builds` (how many lists the
//! run built so far) and `neighbors.sites` (every body's reference site at the last build,
//! three coordinates each, in the order the bodies are held in inside — a function of the
//! run's input, [`super::BodyOrder`]).

use super::system::Assembled;
use super::terms::Terms;
use crate::checkpoint::{CheckpointError, Scope, ScopeMut};

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// [`crate::Model::save_history`]: the neighbour list's builds and reference sites.
    pub(crate) fn save_list(&self, out: &mut ScopeMut<'_>) {
        let work = self.work();
        let Some((builds, sites)) = work.list_history() else {
            return;
        };
        let flat: Vec<f64> = sites.iter().flatten().copied().collect();
        out.set_u64("neighbors.builds", builds as u64);
        out.set_f64s("neighbors.sites", &flat);
    }

    /// [`crate::Model::restore_history`]: the list built again at the saved sites. Nothing
    /// saved (a system without a cutoff, or a checkpoint written before the first
    /// evaluation): the list is built at the first evaluation, as in a fresh run.
    ///
    /// # Errors
    /// Saved sites of another number of bodies, or not finite.
    pub(crate) fn restore_list(&self, from: &Scope<'_>) -> Result<(), CheckpointError> {
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
        work.restore_list(&sites, builds as usize, &self.refresh_inputs());
        Ok(())
    }
}
