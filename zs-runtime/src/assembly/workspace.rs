//! The mutable half of an assembled system: one evaluation state ([`Workspace`]) — every
//! form's buffers, the neighbour list, the Hessian patterns that follow it, and the caches of
//! the last evaluation. The immutable half, the model ([`super::system::Assembly`]: terms,
//! topology, masses, and through the forms the plans, shared), is read by as many states at
//! once as there are trajectories evaluating it (faer's symbolic/numeric split; JAX-MD threads
//! its neighbour list through the caller the same way). A state follows one trajectory: its
//! neighbour list is rebuilt when that trajectory's bodies moved more than half the skin.

use std::sync::Arc;

use super::eval::pairs::PairStrategy;
use super::eval::{FormList, FormOps, Interleave, NewList};
use super::neighbors::Neighbors;
use super::plan::{Bodies, PINNED};
use crate::model::HessianPart;
use crate::sparse::BlockLayout;
use crate::state::{PointMove, PositionsKey};
use crate::vector::fingerprint;

/// One evaluation state of an assembled model (see the [module docs](self)).
pub(crate) struct Workspace<T, const D: usize> {
    pub forms: Vec<Box<dyn FormOps<T, D>>>,
    /// The tensors of the [`super::ThirdForm::Tensor`] forms were kept by a
    /// `GradientHessianThird` pass at the positions of fingerprint `kept_q`
    /// ([`crate::vector::fingerprint`]: a key, not a copy of a long vector) and `kept_omega`
    /// (when `kept`).
    kept_q: u64,
    kept_omega: f64,
    kept: bool,
    /// Every form's term energies are those at the positions of fingerprint `valued_q` and at
    /// `valued_omega` (when `valued`): the last energy, gradient or Hessian pass computed them
    /// (the energy comes with the gradient from the same kernel pass), so `V` there is their
    /// sum, without a pass.
    valued_q: u64,
    valued_omega: f64,
    valued: bool,
    /// The caller's key of the positions the term energies were computed at, when the caller
    /// gave one ([`super::Assembled::gradient_keyed`]): it is not `valued_q` when the bodies
    /// are held in a spatial order (that one is of the inner order's positions).
    valued_outside: Option<PositionsKey>,
    /// The number of free bodies.
    free: usize,
    /// The pair cutoff's neighbour list (which keeps the reference sites it is built from),
    /// and where it writes its pairs when no pair form takes them (the pair form under the
    /// cutoff holds them as its terms: [`FormOps::pair_buffer`]).
    pub neighbors: Option<Neighbors>,
    pairs: Vec<[u32; 2]>,
    /// The block patterns of `Hess V` and of the stiff Hessian (indexed by [`HessianPart::index`]),
    /// made when first asked for: a run without Hessians never holds them (they are as large
    /// as the terms), and a replica shares those made before it.
    layouts: [Option<Arc<BlockLayout>>; 2],
    /// Per part: its pattern follows the neighbour list (a cutoff pair form enters it), and
    /// whether the list has changed since the pattern was made.
    pub follows: [bool; 2],
    stale: [bool; 2],
    /// The number of neighbour-list builds when the bodies' arrangement was made (a spatial
    /// order re-sorts [`super::Assembled::with_resort_period`] builds later).
    pub sorted_at: usize,
    /// How many times the bodies were re-sorted.
    pub resorts: usize,
    /// The order of the forms' chunks of the gradient on one thread, kept until they change.
    pub interleave: Interleave,
}

/// The block pattern of `part` over the current terms of `forms` (the pairs of a form's
/// terms that enter it), with every form's Hessian gathers attached to it.
fn attached_layout<T, const D: usize>(
    forms: &mut FormList<T, D>,
    part: HessianPart,
    free: usize,
    to_user: Option<&[u32]>,
) -> Arc<BlockLayout> {
    let mut coupled = Vec::new();
    for f in forms.iter().filter(|f| f.enters(part)) {
        f.couplings(&mut coupled);
    }
    if let Some(to) = to_user {
        // A system in spatial order: its matrices are in the user's order.
        for c in &mut coupled {
            *c = (to[c.0] as usize, to[c.1] as usize);
        }
    }
    let layout = BlockLayout::new(D, free, coupled);
    for f in forms.iter_mut() {
        f.attach(part, &layout, to_user);
    }
    layout
}

impl<T, const D: usize> Workspace<T, D> {
    /// The state of freshly set-up `forms` (`follows`: the Hessian patterns made anew from each
    /// neighbour list), the list `neighbors`, for `free` free bodies.
    pub fn new(
        forms: Vec<Box<dyn FormOps<T, D>>>,
        follows: [bool; 2],
        neighbors: Option<Neighbors>,
        free: usize,
    ) -> Self {
        Self {
            forms,
            kept_q: 0,
            kept_omega: 0.0,
            kept: false,
            valued_q: 0,
            valued_omega: 0.0,
            valued: false,
            valued_outside: None,
            free,
            neighbors,
            pairs: Vec::new(),
            layouts: [None, None],
            follows,
            stale: [false; 2],
            sorted_at: 0,
            resorts: 0,
            interleave: Interleave::default(),
        }
    }

    /// A state for another trajectory of the same model: the forms' plans shared, the rest
    /// its own, nothing cached and no neighbour list yet (the patterns that follow one are
    /// made from its own first list).
    pub fn replica(&self) -> Self {
        let forms = self.forms.iter().map(|f| f.replica()).collect();
        let mut r = Self::new(
            forms,
            self.follows,
            self.neighbors.as_ref().map(Neighbors::fresh),
            self.free,
        );
        r.layouts.clone_from(&self.layouts);
        r
    }

    /// True when the tensors were kept at exactly the positions of fingerprint `key`
    /// ([`Workspace::refresh_keyed`]) and `omega` (bit for bit).
    pub fn tensors_kept_at(&self, key: u64, omega: f64) -> bool {
        self.kept && self.kept_omega.to_bits() == omega.to_bits() && self.kept_q == key
    }

    /// The tensors were just kept at the positions of fingerprint `key` and `omega`.
    pub fn mark_kept(&mut self, key: u64, omega: f64) {
        self.kept_q = key;
        self.kept_omega = omega;
        self.kept = true;
    }

    /// True when the term energies are those at exactly the positions of fingerprint `key`
    /// ([`Workspace::refresh_keyed`]) and `omega`.
    pub fn valued_at(&self, key: u64, omega: f64) -> bool {
        self.valued && self.valued_omega.to_bits() == omega.to_bits() && self.valued_q == key
    }

    /// The term energies were just computed at the positions of fingerprint `key` and `omega`.
    pub fn mark_valued(&mut self, key: u64, omega: f64) {
        self.valued_q = key;
        self.valued_omega = omega;
        self.valued = true;
        self.valued_outside = None;
    }

    /// The term energies just computed ([`Workspace::mark_valued`]) are those at the caller's
    /// positions of key `key`.
    pub fn mark_valued_outside(&mut self, key: PositionsKey) {
        if self.valued {
            self.valued_outside = Some(key);
        }
    }

    /// True when the term energies are those at the caller's positions of key `key` and at
    /// `omega`.
    pub fn valued_outside(&self, key: PositionsKey, omega: f64) -> bool {
        self.valued
            && self.valued_omega.to_bits() == omega.to_bits()
            && self.valued_outside == Some(key)
    }

    /// `V`: the sum of every form's term energies, forms in table order (each form's in
    /// fixed chunks, see `eval`).
    pub fn value(&self) -> f64 {
        let mut e = 0.0;
        for f in &self.forms {
            f.add_energy(&mut e);
        }
        e
    }

    /// Under a pair cutoff: rebuild the pair list when a body moved more than half the skin
    /// since the last build (the reference sites of every body at `q`), and give it to the
    /// pair forms.
    pub fn refresh(&mut self, q: &[f64], at: &Refresh<'_, D>) {
        if self.stale(q, at) {
            self.build(at.bodies.free_of.len(), site_at(q, at), at);
        }
    }

    /// [`Workspace::refresh`], returning the fingerprint of `q` ([`fingerprint`]: the key of
    /// the caches of the last evaluation). When every body is free the staleness test takes it
    /// on its way through `q`, so that an evaluation reads the positions once for both, not
    /// twice (a long `q` is read from main memory); otherwise it is a pass of its own.
    ///
    /// With `moved`, `q` is the caller's positions of key `moved.1` (in this state's order of
    /// the bodies, which may not be the caller's), moved from positions of key `moved.0.from`
    /// by at most `moved.0.largest` a body: while such moves since the build add up to less
    /// than half the skin ([`Neighbors::moved_within`]; the chain of keys is the caller's, and
    /// so is the key a build under a move starts it with) the list is fresh without the test,
    /// and the key returned is the caller's — `q` is not read. In spatial order that key is not
    /// `q`'s fingerprint: the caches it keys then miss at the next evaluation at `q` not keyed
    /// by the caller (a second evaluation, never a wrong value), and find its energy by the
    /// caller's key ([`Workspace::valued_outside`]).
    pub fn refresh_keyed(
        &mut self,
        q: &[f64],
        at: &Refresh<'_, D>,
        moved: Option<(PointMove, PositionsKey)>,
    ) -> u64 {
        let points = D == 3 && all_free(q, at);
        let (stale, key) = match self.neighbors.as_mut() {
            Some(nb) if points => match moved {
                Some((m, PositionsKey(to))) if nb.moved_within(m.from.0, to, m.largest) => {
                    (false, to)
                }
                _ => nb.stale_free_keyed(q, D),
            },
            Some(nb) if all_free(q, at) => nb.stale_free_keyed(q, D),
            _ => (self.stale(q, at), fingerprint(q)),
        };
        if stale {
            self.build(at.bodies.free_of.len(), site_at(q, at), at);
            if let Some(nb) = self.neighbors.as_mut().filter(|_| points) {
                nb.built_at_key(moved.map_or(key, |(_, PositionsKey(to))| to));
            }
        }
        key
    }

    /// Under a pair cutoff: true when the pair list must be built at `q` (never built, or a
    /// body moved more than half the skin since).
    fn stale(&self, q: &[f64], at: &Refresh<'_, D>) -> bool {
        self.neighbors.as_ref().is_some_and(|nb| {
            if all_free(q, at) {
                nb.stale_free(q, D)
            } else {
                nb.stale_at(at.bodies.free_of.len(), site_at(q, at))
            }
        })
    }

    /// True when the bodies' arrangement is due to be made again before evaluating at `q`: the
    /// list must be built there, and `every` lists were built since the arrangement was made.
    pub fn resort_due(&self, q: &[f64], at: &Refresh<'_, D>, every: usize) -> bool {
        self.sorted_builds_reached(every) && self.stale(q, at)
    }

    /// True when `every` lists were built since the arrangement was made (a state held in
    /// the inner order re-sorts then, between steps: [`crate::Model::reorder`]).
    pub fn sorted_builds_reached(&self, every: usize) -> bool {
        self.neighbors
            .as_ref()
            .is_some_and(|nb| nb.builds >= self.sorted_at + every)
    }

    /// A state made anew for a new arrangement of the bodies continues this one's counts of
    /// builds (`builds`, now the arrangement's) and of re-sorts, and keeps the patterns of the
    /// Hessian parts that do not follow the list, `kept`: made over the user's indices, they
    /// are the same in any arrangement (a stepper keeps its matrix and solver), and the new
    /// forms' gathers are attached to them (`to_user`: the new order).
    pub fn continue_from(
        &mut self,
        (builds, resorts): (usize, usize),
        kept: [Option<Arc<BlockLayout>>; 2],
        to_user: Option<&[u32]>,
    ) {
        if let Some(nb) = self.neighbors.as_mut() {
            nb.builds = builds;
        }
        self.sorted_at = builds;
        self.resorts = resorts;
        for (p, layout) in kept.into_iter().enumerate() {
            let Some(layout) = layout.filter(|_| !self.follows[p]) else {
                continue;
            };
            let part = [HessianPart::Full, HessianPart::Stiff][p];
            for f in self.forms.iter_mut() {
                f.attach(part, &layout, to_user);
            }
            self.layouts[p] = Some(layout);
        }
    }

    /// The patterns made so far (see [`Workspace::continue_from`]).
    pub fn layouts(&self) -> [Option<Arc<BlockLayout>>; 2] {
        self.layouts.clone()
    }

    /// Build the pair list at the reference sites `site(b)` of the `n` bodies and give it to
    /// the pair forms.
    fn build(&mut self, n: usize, site: impl Fn(usize) -> [f64; 3], at: &Refresh<'_, D>) {
        let Some(nb) = self.neighbors.as_mut() else {
            return;
        };
        // Into the pair form's own term list (held once); else (no pair form) our own.
        let out = match self.forms.iter_mut().find_map(|f| f.pair_buffer(at.bodies)) {
            Some(buffer) => buffer,
            None => &mut self.pairs,
        };
        nb.build_from(n, site, at.kinds, at.isa, out);
        self.give_pairs(at);
    }

    /// The neighbour list's history: how many times it was built and the reference sites of
    /// the last build, every body's in the inner order (`None`: no pair cutoff, or no list
    /// built yet).
    pub fn list_history(&self) -> Option<(usize, &[[f64; 3]])> {
        self.neighbors
            .as_ref()
            .filter(|nb| !nb.sites().is_empty())
            .map(|nb| (nb.builds, nb.sites()))
    }

    /// The list built again at `sites` (a checkpoint's [`Workspace::list_history`]): the
    /// same list, given to the pair forms, counted as the `builds`-th build.
    pub fn restore_list(&mut self, sites: &[[f64; 3]], builds: usize, at: &Refresh<'_, D>) {
        self.build(sites.len(), |b| sites[b], at);
        if let Some(nb) = self.neighbors.as_mut() {
            nb.builds = builds;
        }
    }

    /// The current pair list to the pair forms (again, after a change of strategy).
    pub fn give_pairs(&mut self, at: &Refresh<'_, D>) {
        let Some(nb) = self.neighbors.as_ref() else {
            return;
        };
        let cell = nb.cell();
        let list = NewList {
            bodies: at.bodies,
            kinds: at.kinds,
            sites: (nb.sites(), cell.as_ref()),
            within: nb.within(),
            strategy: at.strategy,
        };
        for f in &mut self.forms {
            f.set_pairs(&list);
        }
        self.valued = false;
        self.kept = false;
        self.stale = self.follows;
    }

    /// True once a neighbour list was built.
    pub fn has_pairs(&self) -> bool {
        self.neighbors
            .as_ref()
            .is_some_and(|nb| !nb.sites().is_empty())
    }

    /// The pattern of `part`, made the first time, and remade from the current pair list when
    /// it follows the list and the list has changed: every pair of the list (within cutoff +
    /// skin) has its block, so the pattern holds until the next rebuild, and every form's
    /// gathers are attached to it anew. Over the free indices `to_user[f]` of the inner ones
    /// `f` when given (a system in spatial order).
    pub fn layout(
        &mut self,
        part: HessianPart,
        free: usize,
        to_user: Option<&[u32]>,
    ) -> Arc<BlockLayout> {
        let p = part.index();
        match &self.layouts[p] {
            Some(layout) if !self.stale[p] => layout.clone(),
            _ => {
                let layout = attached_layout(&mut self.forms, part, free, to_user);
                self.layouts[p] = Some(layout.clone());
                self.stale[p] = false;
                layout
            }
        }
    }

    /// Make room for the local Hessians of `part` (set-up, when a matrix is made).
    pub fn reserve_hessians(&mut self, part: HessianPart) {
        for f in &mut self.forms {
            f.reserve_hessians(part);
        }
        self.kept = false;
    }
}

/// True when every body is free and a point of at least three coordinates: body `b` is then
/// free index `b` (`Bodies::new`), its reference site the first three of its `D` in `q`.
fn all_free<const D: usize>(q: &[f64], at: &Refresh<'_, D>) -> bool {
    let n = at.bodies.free_of.len();
    at.bodies.free == n && n * D == q.len() && D >= 3
}

/// Body `b`'s reference site at `q` (its pin when pinned). The slices are taken out of `at`
/// first: the stale check calls this for every body at every evaluation.
fn site_at<'a, const D: usize>(
    q: &'a [f64],
    at: &Refresh<'a, D>,
) -> impl Fn(usize) -> [f64; 3] + Sync + 'a {
    let (free_of, pins) = (&at.bodies.free_of[..], at.pins);
    #[inline(always)]
    move |b| {
        let f = free_of[b];
        let x = if f == PINNED {
            &pins[b][..3]
        } else {
            &q[f as usize * D..f as usize * D + 3]
        };
        [x[0], x[1], x[2]]
    }
}

/// What a neighbour-list build reads of the model and the evaluator.
pub(crate) struct Refresh<'a, const D: usize> {
    pub bodies: &'a Bodies,
    pub pins: &'a [[f64; D]],
    /// Every body's type (empty: untyped).
    pub kinds: &'a [u32],
    pub strategy: PairStrategy,
    /// The instruction set the list is built with (the system's, [`super::Assembled::with_simd`]).
    pub isa: crate::simd::Isa,
}
