//! [`Assembled`]: a system of bodies whose size and connectivity are read at run time, built
//! from per-term kernels ([`Terms`]) and a [`Topology`]; a [`Model`] over `Vec<f64>` for every
//! stepper.

use std::sync::{Arc, Mutex, MutexGuard};

use super::eval::{self, FormList, FormOps, FormState, Inputs, Want};
use super::forms::{Angle, Bond, Dihedral, Form, Forms, Pair, Pair14, Site};
use super::neighbors::{Cell, Neighbors};
use super::plan::{Bodies, PINNED};
use super::terms::{Kernel, Terms};
use super::topology::{Topology, TopologyError};
use crate::model::HessianPart;
use crate::simd::{self, Isa};
use crate::sparse::{Backend, BlockLayout, SparseMatrix, SparseSolver};
use crate::{DynState, Model, StiffModel};

/// Systems with at least this many terms evaluate them on rayon's pool by default
/// ([`Assembled::with_parallel`]).
pub const PARALLEL_BY_DEFAULT_ABOVE: usize = 4 * eval::CHUNK;

/// The forms of a definition `T`, in table order ([`super::forms`]): the one place that lists
/// them for the engine. Every form's terms are summed in this order.
fn forms_of<T: Terms<D>, const D: usize>(
    topology: &Topology,
    bodies: &Bodies,
) -> Result<Vec<Box<dyn FormOps<T, D>>>, TopologyError> {
    Ok(vec![
        form::<T, Site, D, 1>(topology, bodies)?,
        form::<T, Bond, D, 2>(topology, bodies)?,
        form::<T, Pair, D, 2>(topology, bodies)?,
        form::<T, Angle, D, 3>(topology, bodies)?,
        form::<T, Dihedral, D, 4>(topology, bodies)?,
        form::<T, Pair14, D, 2>(topology, bodies)?,
    ])
}

fn form<T, F, const D: usize, const K: usize>(
    topology: &Topology,
    bodies: &Bodies,
) -> Result<Box<dyn FormOps<T, D>>, TopologyError>
where
    T: Terms<D> + Kernel<D, K, F>,
    F: Form,
{
    Ok(Box::new(FormState::<F, D, K>::new(
        F::info(&T::FORMS),
        topology,
        bodies,
    )?))
}

/// The forms with their buffers, and the third-derivative tensors' key: the engine's mutable
/// half, behind the system's lock.
struct Engine<T, const D: usize> {
    forms: Vec<Box<dyn FormOps<T, D>>>,
    /// The tensors of the [`super::ThirdForm::Tensor`] forms were kept by
    /// [`Want::GradientHessianThird`] at `kept_q` and `kept_omega` (when `kept`).
    kept_q: Vec<f64>,
    kept_omega: f64,
    kept: bool,
    /// Every form's term energies are those at `valued_q` and `valued_omega` (when `valued`):
    /// the last energy, gradient or Hessian pass computed them (the energy comes with the
    /// gradient from the same kernel pass), so `V` there is their sum, without a pass.
    valued_q: Vec<f64>,
    valued_omega: f64,
    valued: bool,
    /// The pair cutoff's neighbour list, the reference sites it is built from, its pairs.
    neighbors: Option<Neighbors>,
    sites: Vec<[f64; 3]>,
    pairs: Vec<[u32; 2]>,
    /// The block patterns of `Hess V` and of the stiff Hessian (indexed by [`part_index`]).
    layouts: [Arc<BlockLayout>; 2],
    /// Per part: its pattern follows the neighbour list (a cutoff pair form enters it), and
    /// whether the list has changed since the pattern was made.
    follows: [bool; 2],
    stale: [bool; 2],
    /// Pair forms go by full rows ([`Assembled::with_full_rows`]): `None` chooses.
    full_rows: Option<bool>,
}

/// The block pattern of `part` over the current terms of `forms` (the pairs of a form's
/// terms that enter it), with every form's Hessian gathers attached to it.
fn attached_layout<T, const D: usize>(
    forms: &mut FormList<T, D>,
    part: HessianPart,
    free: usize,
) -> Arc<BlockLayout> {
    let mut coupled = Vec::new();
    for f in forms.iter().filter(|f| f.enters(part)) {
        f.couplings(&mut coupled);
    }
    let layout = BlockLayout::new(D, free, coupled);
    for f in forms.iter_mut() {
        f.attach(part, &layout);
    }
    layout
}

/// Index of `part` in [`Engine::layouts`].
fn part_index(part: HessianPart) -> usize {
    match part {
        HessianPart::Full => 0,
        HessianPart::Stiff => 1,
    }
}

/// True when `stored` is exactly `q` (bit for bit).
fn same_bits(stored: &[f64], q: &[f64]) -> bool {
    crate::vector::same_bits_slices(stored, q)
}

impl<T, const D: usize> Engine<T, D> {
    /// True when the tensors were kept at exactly `q` and `omega` (bit for bit).
    fn tensors_kept_at(&self, q: &[f64], omega: f64) -> bool {
        self.kept && self.kept_omega.to_bits() == omega.to_bits() && same_bits(&self.kept_q, q)
    }

    /// True when the term energies are those at exactly `q` and `omega`.
    fn valued_at(&self, q: &[f64], omega: f64) -> bool {
        self.valued
            && self.valued_omega.to_bits() == omega.to_bits()
            && same_bits(&self.valued_q, q)
    }

    /// The term energies were just computed at `q` and `omega`.
    fn mark_valued(&mut self, q: &[f64], omega: f64) {
        crate::vector::copy_long(&mut self.valued_q, q);
        self.valued_omega = omega;
        self.valued = true;
    }

    /// `V`: the sum of every form's term energies, forms in table order (each form's in
    /// fixed chunks, see `eval`).
    fn value(&self) -> f64 {
        let mut e = 0.0;
        for f in &self.forms {
            f.add_energy(&mut e);
        }
        e
    }

    /// Under a pair cutoff: rebuild the pair list when a body moved more than half the skin
    /// since the last build (the reference sites of every body at `q`), and give it to the
    /// pair forms (each body's pairs grouped by the bodies' types `kinds`, when typed).
    fn refresh(&mut self, q: &[f64], pins: &[[f64; D]], bodies: &Bodies, kinds: &[u32]) {
        let Some(nb) = self.neighbors.as_mut() else {
            return;
        };
        let site = |b: usize| -> [f64; 3] {
            let f = bodies.free_of[b];
            let x = if f == PINNED {
                &pins[b][..3]
            } else {
                &q[f as usize * D..f as usize * D + 3]
            };
            [x[0], x[1], x[2]]
        };
        if !nb.stale_at(bodies.free_of.len(), site) {
            return;
        }
        self.sites.clear();
        self.sites.extend((0..bodies.free_of.len()).map(site));
        nb.build(&self.sites, kinds, &mut self.pairs);
        self.give_pairs(bodies, kinds);
    }

    /// The current pair list to the pair forms, by full rows or not.
    fn give_pairs(&mut self, bodies: &Bodies, kinds: &[u32]) {
        let Some(nb) = self.neighbors.as_ref() else {
            return;
        };
        // Full rows evaluate every pair twice: they pay where 8 lanes make the kernel cheap
        // against the half list's bookkeeping (AVX-512), not on 4 (the alkane's gradient on
        // AVX2: 34 ms by full rows against 21 by the half list's rows). Chosen by the machine, not by the lanes a
        // system runs, so that every instruction set gives the same bits on one machine.
        let full_rows = self
            .full_rows
            .unwrap_or_else(|| nb.full_rows() && simd::detected().width() >= 8);
        let cell = nb.cell();
        for f in &mut self.forms {
            f.set_pairs(
                &self.pairs,
                bodies,
                kinds,
                full_rows,
                (&self.sites, cell.as_ref()),
            );
        }
        self.valued = false;
        self.kept = false;
        self.stale = self.follows;
    }

    /// The pattern of `part`, remade from the current pair list when it follows the list and
    /// the list has changed: every pair of the list (within cutoff + skin) has its block, so the
    /// pattern holds until the next rebuild, and every form's gathers are attached to it anew.
    fn layout(&mut self, part: HessianPart, free: usize) -> Arc<BlockLayout> {
        let p = part_index(part);
        if self.stale[p] {
            self.layouts[p] = attached_layout(&mut self.forms, part, free);
            self.stale[p] = false;
        }
        self.layouts[p].clone()
    }

    /// Make room for the local Hessians of `part` (set-up, when a matrix is made).
    fn reserve_hessians(&mut self, free: usize, part: HessianPart) {
        for f in &mut self.forms {
            f.reserve_hessians(part);
        }
        self.kept_q.resize(free * D, 0.0);
        self.kept = false;
    }
}

/// A mechanical system of `B` bodies with `D` coordinates each, assembled from the per-term
/// kernels of `T` (generated by `#[mechanical_system]` from `site_potential`, `bond_potential`,
/// `pair_potential`, `body_constraints`, `bond_constraints`) over a [`Topology`] given at run
/// time.
///
/// Its coordinates are those of the free (not pinned) bodies, body after body, in body order:
/// `q = (x_{b_0}, x_{b_1}, …)`, `D` each. The potential is
/// `V(q) = Σ_bodies site(x_b) + Σ_bonds bond(x_i, x_j) + Σ_{pairs i<j, not excluded} pair(x_i, x_j)`
/// (terms whose bodies are all pinned are constant and left out), the constraints are the body
/// constraints of every free body followed by the bond constraints of every bond, and
/// [`Assembled::penalized`] adds `½ω² Σ_c g_c²` (Tao & Owhadi eq. 7).
///
/// It implements [`Model`], [`StiffModel`] and [`crate::ConstrainedModel`] over `Vec<f64>`: every
/// stepper integrates it (`ZhangSkeel<Vec<f64>>`, `Shake<Vec<f64>, Vec<f64>>`, …), with the
/// Hessian in a sparse pattern fixed here and solved by [`SparseSolver`] (block diagonal when
/// the pattern is, e.g. the stiff Hessian of rigid water; banded for chains and rings; faer's
/// sparse Cholesky otherwise). Evaluation is parallel on rayon's current pool for large systems
/// ([`Assembled::with_parallel`]) and bit-identical whatever the thread count; steps allocate
/// nothing (run the loop inside `ThreadPool::install` to keep rayon's own injector from
/// allocating).
///
/// Memory: `O(B + bonds + pairs + stored Hessian blocks)`; pair systems store one term per
/// non-excluded pair.
pub struct Assembled<T, const D: usize> {
    terms: T,
    topology: Topology,
    pub(crate) bodies: Bodies,
    pub(crate) pins: Vec<[f64; D]>,
    masses: Vec<f64>,
    /// Every body's type, when a form reads them (else empty: all 0).
    kinds: Vec<u32>,
    parallel: bool,
    /// The SIMD instruction set of the energy and gradient passes.
    isa: Isa,
    backend: Backend,
    /// Per form, in table order: name, number of terms, constraint rows.
    counts: Vec<(&'static str, usize, usize)>,
    /// The periodic box, when the topology has one.
    cell: Option<Cell>,
    engine: Mutex<Engine<T, D>>,
}

impl<T, const D: usize> core::fmt::Debug for Assembled<T, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Assembled")
            .field("bodies", &self.topology.bodies())
            .field("free", &self.bodies.free)
            .field("dim", &D)
            .field("terms", &self.counts)
            .field("parallel", &self.parallel)
            .finish_non_exhaustive()
    }
}

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// Assemble `terms` over `topology` (set-up: term lists, gather lists, Hessian patterns,
    /// all buffers).
    ///
    /// # Errors
    /// A [`TopologyError`] when the topology is invalid for bodies of `D` coordinates.
    pub fn new(terms: T, topology: Topology) -> Result<Self, TopologyError> {
        topology.validate(D)?;
        // The per-body arrays (free indices, pinned positions, masses, the energy cache) are
        // reserved first: a topology too large for memory is an error, not an abort.
        let n = topology.bodies();
        let mut probe: Vec<f64> = Vec::new();
        probe
            .try_reserve_exact(n.saturating_mul(3 * D + 1))
            .map_err(|_| TopologyError::TooLarge("the number of bodies"))?;
        drop(probe);
        let bodies = Bodies::new(&topology);
        let mut forms = forms_of::<T, D>(&topology, &bodies)?;
        for f in &forms {
            // Local slots `t·K²` of the gather lists are 32-bit.
            if f.len() >= u32::MAX as usize / (f.arity() * f.arity()).max(4) {
                return Err(TopologyError::TooLarge("the number of terms of a form"));
            }
        }
        let (full, stiff) = (
            attached_layout(&mut forms, HessianPart::Full, bodies.free),
            attached_layout(&mut forms, HessianPart::Stiff, bodies.free),
        );
        let mut pins = vec![[0.0; D]; topology.bodies()];
        for (&b, p) in topology.pinned() {
            pins[b].copy_from_slice(p);
        }
        // Masses by type, each type's checked once (and its tables: `has_type`).
        let mut by_kind: std::collections::BTreeMap<u32, [f64; D]> = Default::default();
        let mut masses = Vec::with_capacity(bodies.free * D);
        for b in 0..n {
            let kind = topology.kind_of(b);
            let m = match by_kind.get(&kind) {
                Some(m) => *m,
                None => {
                    if !terms.has_type(kind) {
                        return Err(TopologyError::UnknownType { body: b, kind });
                    }
                    let m = terms.body_masses(kind);
                    if let Some((coordinate, &mass)) = m
                        .iter()
                        .enumerate()
                        .find(|(_, m)| !(m.is_finite() && **m > 0.0))
                    {
                        return Err(TopologyError::BadMass { coordinate, mass });
                    }
                    by_kind.insert(kind, m);
                    m
                }
            };
            if bodies.free_of[b] != PINNED {
                masses.extend(m);
            }
        }
        // Every body's type when a form reads them (type 0 for all without `types`): the lane
        // kernels of a typed form index one row per lane.
        let kinds = if T::FORMS.any_typed() {
            (0..n).map(|b| topology.kind_of(b)).collect()
        } else {
            Vec::new()
        };
        let counts: Vec<_> = forms
            .iter()
            .map(|f| (f.name(), f.len(), f.info().constraints * f.len()))
            .collect();
        let terms_count: usize = counts.iter().map(|c| c.1).sum();
        let valued_q = vec![0.0; bodies.free * D];
        let (cell, neighbors) = (
            topology.box_lengths().map(Cell::new),
            Neighbors::new(&topology),
        );
        let cutoff = topology.pair_cutoff().is_some();
        let follows = [HessianPart::Full, HessianPart::Stiff].map(|part| {
            cutoff
                && forms
                    .iter()
                    .any(|f| f.name() == <Pair as Form>::NAME && f.enters(part))
        });
        Ok(Self {
            terms,
            topology,
            bodies,
            pins,
            masses,
            kinds,
            parallel: terms_count >= PARALLEL_BY_DEFAULT_ABOVE,
            isa: simd::selected(),
            backend: Backend::Auto,
            counts,
            cell,
            engine: Mutex::new(Engine {
                forms,
                kept_q: Vec::new(),
                kept_omega: 0.0,
                kept: false,
                valued_q,
                valued_omega: 0.0,
                valued: false,
                neighbors,
                sites: Vec::new(),
                pairs: Vec::new(),
                layouts: [full, stiff],
                follows,
                stale: [false; 2],
                full_rows: None,
            }),
        })
    }

    /// Evaluate the terms on rayon's current pool (`true`) or on the calling thread. The
    /// results are the same bits either way. Default: parallel from
    /// [`PARALLEL_BY_DEFAULT_ABOVE`] terms.
    pub fn with_parallel(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self
    }

    /// The SIMD lanes of the energy and gradient passes: [`simd::selected`] by default (the
    /// widest this machine has, capped by `ZS_SIMD`); a wider one than the machine has falls
    /// back to the widest available. The results are the same bits on every instruction set
    /// (on one machine: see [`Assembled::with_full_rows`]).
    pub fn with_simd(mut self, isa: Isa) -> Self {
        self.isa = isa;
        self
    }

    /// How a pair form under a cutoff evaluates its energy and gradient: by full neighbour rows
    /// (`Some(true)`: each pair from both ends, no scatter), by the half list (`Some(false)`), or
    /// (`None`, the default) by full rows when most of the list is within the cutoff and the
    /// machine has 8-lane SIMD (AVX-512). Both give the same bits on every instruction set and
    /// thread count, and agree with each other to rounding. Full rows need every body free and
    /// a point in three dimensions; otherwise the half list is used whatever `rows` says.
    pub fn with_full_rows(self, rows: Option<bool>) -> Self {
        {
            let mut e = self.engine();
            e.full_rows = rows;
            if !e.sites.is_empty() {
                // A list already built: its forms take it again, the new way.
                e.give_pairs(&self.bodies, &self.kinds);
            }
        }
        self
    }

    /// The instruction set of the energy and gradient passes (see [`Assembled::with_simd`]).
    pub fn simd(&self) -> Isa {
        self.isa.min(simd::detected())
    }

    /// The backend of the shifted solves (default [`Backend::Auto`]).
    ///
    /// # Errors
    /// [`TopologyError::BackendDoesNotFit`] when `backend` is [`Backend::BlockDiagonal`] and a
    /// Hessian pattern of the system (the full one, or the stiff one when it has a stiff part)
    /// couples bodies or has blocks larger than the dense solve's: checked here, at set-up,
    /// not in the first step.
    pub fn with_backend(mut self, backend: Backend) -> Result<Self, TopologyError> {
        if backend == Backend::BlockDiagonal {
            let fits =
                |l: &BlockLayout| l.is_block_diagonal() && l.block() <= crate::sparse::MAX_BLOCK;
            let follows = self.engine().follows;
            for (part, p) in [("full", HessianPart::Full), ("stiff", HessianPart::Stiff)] {
                let layout = self.hessian_layout(p);
                if follows[part_index(p)] || !fits(&layout) {
                    return Err(TopologyError::BackendDoesNotFit(format!(
                        "Backend::BlockDiagonal does not fit the {part} Hessian: it couples bodies \
                         (bonds or pairs) or has blocks of more than {} coordinates; use \
                         Backend::Auto, Banded or Sparse",
                        crate::sparse::MAX_BLOCK
                    )));
                }
            }
        }
        self.backend = backend;
        Ok(self)
    }

    /// The kernels.
    pub fn terms(&self) -> &T {
        &self.terms
    }
    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }
    /// The forms of the definition.
    pub fn forms(&self) -> Forms {
        T::FORMS
    }
    /// Number of free bodies.
    pub fn free_bodies(&self) -> usize {
        self.bodies.free
    }
    /// The coordinate block of `body` (its coordinates are `D·k .. D·k + D`), or `None` for a
    /// pinned body.
    pub fn free_index(&self, body: usize) -> Option<usize> {
        match self.bodies.free_of.get(body) {
            Some(&f) if f != PINNED => Some(f as usize),
            _ => None,
        }
    }
    /// Number of terms evaluated of each form the definition has, in table order:
    /// `[("site", n), ("bond", n), ("pair", n)]` for a definition with those three (under a
    /// cutoff, the pairs of the current neighbour list).
    pub fn term_counts(&self) -> Vec<(&'static str, usize)> {
        self.with_forms(|forms| {
            forms
                .iter()
                .filter(|f| f.info().present)
                .map(|f| (f.name(), f.len()))
                .collect()
        })
    }
    /// Number of terms evaluated of the form named `form` (`"site"`, `"bond"`, `"pair"`; 0 for
    /// another name).
    pub fn term_count(&self, form: &str) -> usize {
        self.counts.iter().find(|c| c.0 == form).map_or(0, |c| c.1)
    }
    /// True when the terms are evaluated on rayon's pool.
    pub fn is_parallel(&self) -> bool {
        self.parallel
    }
    /// Whether the block pattern of the Hessian `part` follows the neighbour list: a pair
    /// cutoff's list gives the terms of a pair form that enters it. The pattern is then every
    /// pair of the list (within cutoff + skin), fixed between rebuilds; at a rebuild it is
    /// made anew, with the form's gathers, and [`Model::matrix_layout`] changes, so that the
    /// integrators make their matrix and solver (the solver's symbolic analysis) again —
    /// allocating at rebuilds only. Otherwise the pattern is fixed at set-up.
    pub fn hessian_follows_neighbors(&self, part: HessianPart) -> bool {
        self.engine().follows[part_index(part)]
    }

    /// The number of neighbour-list builds so far (0 without a cutoff).
    pub fn neighbor_builds(&self) -> usize {
        self.engine().neighbors.as_ref().map_or(0, |n| n.builds)
    }

    /// The block pattern of `Hess V` (`HessianPart::Full`) or of the stiff Hessian, as of the
    /// last neighbour list (see [`Assembled::hessian_follows_neighbors`]).
    pub fn hessian_layout(&self, part: HessianPart) -> Arc<BlockLayout> {
        self.engine().layout(part, self.bodies.free)
    }

    /// Every body's position, pinned ones included, from the coordinates `q`.
    ///
    /// # Panics
    /// If `q` does not have [`Model::dimension`] entries.
    pub fn body_positions(&self, q: &[f64]) -> Vec<[f64; D]> {
        self.check_len(q, "q");
        (0..self.topology.bodies())
            .map(|b| match self.free_index(b) {
                Some(f) => core::array::from_fn(|d| q[f * D + d]),
                None => self.pins[b],
            })
            .collect()
    }

    /// The coordinates `q` of the free bodies from every body's position (the inverse of
    /// [`Assembled::body_positions`]; pinned bodies' entries are ignored).
    ///
    /// # Panics
    /// If `positions` does not have one entry per body.
    pub fn coordinates(&self, positions: &[[f64; D]]) -> Vec<f64> {
        assert_eq!(
            positions.len(),
            self.topology.bodies(),
            "one position per body"
        );
        let mut q = vec![0.0; self.bodies.free * D];
        for (b, p) in positions.iter().enumerate() {
            if let Some(f) = self.free_index(b) {
                q[f * D..(f + 1) * D].copy_from_slice(p);
            }
        }
        q
    }

    /// A state at `t = 0`.
    ///
    /// # Panics
    /// If `q` or `v` does not have [`Model::dimension`] entries.
    pub fn state(&self, q: Vec<f64>, v: Vec<f64>) -> DynState {
        self.check_len(&q, "q");
        self.check_len(&v, "v");
        DynState::new(q, v)
    }

    /// `V + ½ω² Σ_c g_c²` as a [`Model`] (eq. 7): what Z&S and the other penalty methods
    /// integrate.
    pub fn penalized(&self, omega: f64) -> PenalizedAssembly<'_, T, D> {
        PenalizedAssembly {
            system: self,
            omega,
        }
    }

    pub(crate) fn check_len(&self, x: &[f64], what: &str) {
        let n = self.bodies.free * D;
        assert!(
            x.len() == n,
            "assembled system: {what} has {} entries, the system {n} coordinates",
            x.len()
        );
    }

    fn engine(&self) -> MutexGuard<'_, Engine<T, D>> {
        // A panic while evaluating leaves buffers that the next evaluation overwrites.
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn inputs<'a>(&'a self, omega: f64, q: &'a [f64], a: &'a [f64]) -> Inputs<'a, D> {
        self.check_len(q, "q");
        Inputs {
            q,
            a,
            pins: &self.pins,
            omega,
            parallel: self.parallel,
            isa: self.isa,
            cell: self.cell,
            cut2: self.topology.pair_cutoff().map(|(rc, _)| rc * rc),
            kinds: &self.kinds,
            all_free: self.bodies.free == self.bodies.free_of.len(),
        }
    }

    /// `f` of the forms, in table order (under the engine's lock).
    pub(crate) fn with_forms<R>(&self, f: impl FnOnce(&FormList<T, D>) -> R) -> R {
        f(&self.engine().forms)
    }

    /// Constraint rows per form, in table order.
    pub(crate) fn constraint_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.counts.iter().map(|c| c.2)
    }

    /// `V` at `q`: without a pass over the terms when the last energy, gradient or Hessian
    /// evaluation was at this `q` and `omega` (an observer after a step that ended with a
    /// gradient there), else by an energy pass.
    pub(crate) fn energy(&self, omega: f64, q: &[f64]) -> f64 {
        let input = self.inputs(omega, q, &[]);
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        if !s.valued_at(q, omega) {
            for f in &mut s.forms {
                f.evaluate(&self.terms, &input, Want::Energy);
            }
            s.mark_valued(q, omega);
        }
        s.value()
    }

    /// `∇V` into `g` and `V` returned, from one pass over the terms.
    pub(crate) fn value_gradient(&self, omega: f64, q: &[f64], g: &mut [f64]) -> f64 {
        self.check_len(g, "the gradient");
        let input = self.inputs(omega, q, &[]);
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        for f in &mut s.forms {
            f.evaluate(&self.terms, &input, Want::Gradient);
        }
        s.mark_valued(q, omega);
        eval::sum_vector(&s.forms, |_| true, self.bodies.free, self.parallel, g);
        s.value()
    }

    pub(crate) fn gradient(&self, omega: f64, q: &[f64], g: &mut [f64]) {
        self.check_len(g, "the gradient");
        let input = self.inputs(omega, q, &[]);
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        for f in &mut s.forms {
            f.evaluate(&self.terms, &input, Want::Gradient);
        }
        s.mark_valued(q, omega);
        eval::sum_vector(&s.forms, |_| true, self.bodies.free, self.parallel, g);
    }

    /// The gradient (if asked) and the Hessian of `want` into `h`.
    pub(crate) fn gradient_hessian(
        &self,
        omega: f64,
        q: &[f64],
        g: Option<&mut [f64]>,
        h: &mut SparseMatrix,
        want: Want,
    ) {
        let input = self.inputs(omega, q, &[]);
        let part = if want == Want::GradientStiffHessian {
            HessianPart::Stiff
        } else {
            HessianPart::Full
        };
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        let layout = s.layout(part, self.bodies.free);
        if h.layout().id() != layout.id() {
            assert!(
                s.follows[part_index(part)],
                "the matrix was not made for this Hessian (Model::new_matrix with the matching part)"
            );
            // The neighbour list was rebuilt: the matrix takes the new pattern (the caller
            // sees the new `matrix_layout` and remakes its solver).
            *h = SparseMatrix::zeros(layout.clone());
        }
        if !s.forms.iter().all(|f| f.has_hessians(part)) {
            // A matrix made elsewhere: the buffers were not reserved at set-up.
            s.reserve_hessians(self.bodies.free, part);
        }
        for f in &mut s.forms {
            f.evaluate(&self.terms, &input, want);
        }
        s.mark_valued(q, omega);
        if want == Want::GradientHessianThird {
            s.kept_q.copy_from_slice(q);
            s.kept_omega = omega;
            s.kept = true;
        }
        if let Some(g) = g {
            self.check_len(g, "the gradient");
            eval::sum_vector(&s.forms, |_| true, self.bodies.free, self.parallel, g);
        }
        eval::sum_hessian(
            &s.forms,
            part,
            layout.blocks(),
            self.parallel,
            h.values_mut(),
        );
    }

    pub(crate) fn third(&self, omega: f64, q: &[f64], a: &[f64], out: &mut [f64]) {
        self.check_len(a, "the direction");
        self.check_len(out, "the third contraction");
        let input = self.inputs(omega, q, a);
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        let kept = s.tensors_kept_at(q, omega);
        for f in &mut s.forms {
            f.evaluate(&self.terms, &input, Want::Third { kept });
        }
        let nonzero = |f: &dyn FormOps<T, D>| f.info().third != super::ThirdForm::Zero;
        eval::sum_vector(&s.forms, nonzero, self.bodies.free, self.parallel, out);
    }

    /// Derivatives of `V` in the system's parameters (`#[mechanical_system(parameters(...))]`,
    /// names in [`Terms::PARAMETERS`]): `∂V/∂θ_p` and, row `p`, `∂∇V/∂θ_p` over the free
    /// coordinates — exact, term by term, for fitting force fields. Allocates (not a step).
    pub fn parameter_derivatives(&self, q: &[f64]) -> (Vec<f64>, Vec<Vec<f64>>) {
        let p = T::PARAMETERS.len();
        let n = self.bodies.free * D;
        let (mut dv, mut dg) = (vec![0.0; p], vec![0.0; p * n]);
        let input = self.inputs(0.0, q, q);
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        for f in &s.forms {
            f.add_parameter_derivatives(&self.terms, &input, &mut dv, &mut dg);
        }
        (
            dv,
            dg.chunks(n.max(1)).take(p).map(<[f64]>::to_vec).collect(),
        )
    }

    /// `Hess V_ω(q) · a` into `out`, term by term (no matrix).
    pub(crate) fn hessian_vector(&self, omega: f64, q: &[f64], a: &[f64], out: &mut [f64]) {
        self.check_len(a, "the direction");
        self.check_len(out, "the Hessian-vector product");
        let input = self.inputs(omega, q, a);
        let mut s = self.engine();
        s.refresh(q, &self.pins, &self.bodies, &self.kinds);
        for f in &mut s.forms {
            f.evaluate(&self.terms, &input, Want::HessianVector);
        }
        eval::sum_vector(&s.forms, |_| true, self.bodies.free, self.parallel, out);
    }

    fn make_matrix(&self, part: HessianPart) -> SparseMatrix {
        self.engine().reserve_hessians(self.bodies.free, part);
        SparseMatrix::zeros(self.hessian_layout(part))
    }

    fn make_solver(&self, part: HessianPart) -> SparseSolver {
        SparseSolver::new(self.hessian_layout(part), self.backend)
    }

    fn kinetic(&self, v: &[f64]) -> f64 {
        self.check_len(v, "v");
        let masses = &self.masses;
        0.5 * crate::vector::tree_sum(0..v.len(), &|r| {
            v[r.clone()]
                .iter()
                .zip(&masses[r])
                .map(|(v, m)| m * v * v)
                .sum::<f64>()
        })
    }
}

/// `V + ½ω² Σ_c g_c²` of an [`Assembled`] system, returned by [`Assembled::penalized`].
#[derive(Debug)]
pub struct PenalizedAssembly<'a, T, const D: usize> {
    /// The constrained system.
    pub system: &'a Assembled<T, D>,
    /// Penalty frequency ω.
    pub omega: f64,
}

impl<T, const D: usize> Clone for PenalizedAssembly<'_, T, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const D: usize> Copy for PenalizedAssembly<'_, T, D> {}

/// The [`Model`] and [`StiffModel`] impls of [`Assembled`] (ω = 0) and
/// [`PenalizedAssembly`] (its ω): one body, two types, through `as_system()` and `penalty()`.
macro_rules! assembled_model {
    ($ty:ty) => {
        impl<T: Terms<D>, const D: usize> Model<Vec<f64>> for $ty {
            fn dimension(&self) -> usize {
                self.as_system().bodies.free * D
            }
            fn matrix_layout(&self, part: HessianPart) -> u64 {
                self.as_system().hessian_layout(part).id()
            }
            fn new_matrix(&self, part: HessianPart) -> SparseMatrix {
                self.as_system().make_matrix(part)
            }
            fn new_solver(&self, part: HessianPart) -> SparseSolver {
                self.as_system().make_solver(part)
            }
            fn masses_into(&self, m: &mut Vec<f64>) {
                crate::vector::copy_long(m, &self.as_system().masses);
            }
            fn masses_into_slice(&self, m: &mut [f64]) {
                crate::vector::copy_long(m, &self.as_system().masses);
            }
            fn masses_slice(&self) -> Option<&[f64]> {
                Some(&self.as_system().masses)
            }
            fn kinetic_energy(&self, v: &Vec<f64>) -> f64 {
                self.as_system().kinetic(v)
            }
            fn potential_at(&self, q: &Vec<f64>) -> f64 {
                self.as_system().energy(self.penalty(), q)
            }
            fn gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
                self.as_system().gradient(self.penalty(), q, g);
            }
            fn value_gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) -> f64 {
                self.as_system().value_gradient(self.penalty(), q, g)
            }
            fn hessian_into(&self, q: &Vec<f64>, h: &mut SparseMatrix) {
                self.as_system().gradient_hessian(
                    self.penalty(),
                    q,
                    None,
                    h,
                    Want::GradientHessian,
                );
            }
            fn gradient_hessian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, h: &mut SparseMatrix) {
                self.as_system().gradient_hessian(
                    self.penalty(),
                    q,
                    Some(g),
                    h,
                    Want::GradientHessian,
                );
            }
            fn gradient_hessian_keeping_third_into(
                &self,
                q: &Vec<f64>,
                g: &mut Vec<f64>,
                h: &mut SparseMatrix,
            ) {
                self.as_system().gradient_hessian(
                    self.penalty(),
                    q,
                    Some(g),
                    h,
                    Want::GradientHessianThird,
                );
            }
            fn third_contraction_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
                self.as_system().third(self.penalty(), q, a, out);
            }
            fn hessian_vector_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
                self.as_system().hessian_vector(self.penalty(), q, a, out);
            }
        }

        impl<T: Terms<D>, const D: usize> StiffModel<Vec<f64>> for $ty {
            fn gradient_stiff_hessian_into(
                &self,
                q: &Vec<f64>,
                g: &mut Vec<f64>,
                h: &mut SparseMatrix,
            ) {
                self.as_system().gradient_hessian(
                    self.penalty(),
                    q,
                    Some(g),
                    h,
                    Want::GradientStiffHessian,
                );
            }
        }
    };
}

impl<T, const D: usize> Assembled<T, D> {
    #[inline]
    fn as_system(&self) -> &Self {
        self
    }
    #[inline]
    fn penalty(&self) -> f64 {
        0.0
    }
}

impl<T, const D: usize> PenalizedAssembly<'_, T, D> {
    #[inline]
    fn as_system(&self) -> &Assembled<T, D> {
        self.system
    }
    #[inline]
    fn penalty(&self) -> f64 {
        self.omega
    }
}

assembled_model!(Assembled<T, D>);
assembled_model!(PenalizedAssembly<'_, T, D>);
