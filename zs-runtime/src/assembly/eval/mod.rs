//! The evaluation engine of an assembled system, written once for every form: gather each term's
//! bodies, evaluate its kernel, keep its local outputs (phase A); then sum, for each free body
//! (gradient, third contraction) or each stored Hessian block, its contributions in the fixed
//! order of the plan (phase B). Both phases run over fixed chunks, on rayon's current pool when
//! the system is parallel: a term's output and an entry's sum do not depend on the chunking or
//! on the thread count, so the results are bit-identical on 1 thread or many. Nothing is
//! allocated: the term buffers are made at set-up.
//!
//! Two engines implement [`FormOps`], what the system sees of a form:
//! - the term engine, [`FormState`] (`form.rs`): a form's terms from a list fixed at set-up
//!   (sites, bonds, angles, dihedrals, 1-4 pairs, every pair of a small cluster), its SIMD
//!   pass (`lanes.rs`) and scalar passes (`maps.rs`);
//! - the pair engine, [`pairs::CutoffPairs`] (`pairs/`): a pair form under a cutoff, its terms
//!   the neighbour list's, its energy and gradient by the [`pairs::PairStrategy`] chosen at
//!   each build — rows of the full or the half list, or the term engine's pass.
//!
//! Every sum either makes is in `sums.rs`.

mod form;
mod interleave;
mod lanes;
mod maps;
pub(crate) mod pairs;
pub(crate) mod sums;

use super::cell::Cell;
use super::forms::{Form, FormInfo, Over};
use super::jacobian::SparseJacobian;
use super::plan::{Bodies, PINNED};
use super::terms::{Kinds, Local};
use crate::model::HessianPart;
use crate::simd::Isa;
use crate::sparse::BlockLayout;

pub(crate) use form::FormState;
pub(crate) use interleave::Interleave;
pub(crate) use sums::{gradient_form_by_form, sum_hessian, sum_vector};

/// Terms (phase A) or targets (phase B) per parallel chunk.
pub(crate) const CHUNK: usize = 512;

/// Terms per chunk of the SIMD passes of a pair form ([`Over::Pairs`]). A chunk sums its
/// terms' gradients into one partial per distinct body it touches
/// ([`super::plan::PartialPlan`]); a row of a neighbour list has hundreds of terms whose
/// second bodies are mostly distinct, so with [`CHUNK`] terms a chunk's partials were nearly
/// as many as its terms — zeroed, written and summed again each pass. Long chunks of
/// consecutive pairs share most second bodies (spatially close rows see the same neighbours).
/// Other forms' terms share few bodies: [`CHUNK`].
pub(crate) const PAIR_CHUNK: usize = 16_384;

/// The chunk of form `F`'s SIMD passes, partial plan and energy sums.
fn lane_chunk<F: Form>() -> usize {
    if F::OVER == Over::Pairs {
        PAIR_CHUNK
    } else {
        CHUNK
    }
}

/// Constraint components per term evaluated on the stack; a term with more allocates a buffer
/// at each evaluation.
pub(crate) const STACK_ROWS: usize = 16;

/// Which quantity phase A computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    Energy,
    Gradient,
    GradientHessian,
    /// The gradient and Hessian, and the third-derivative tensors of the
    /// [`super::ThirdForm::Tensor`] forms (for a Z&S step's third contraction at the same point).
    GradientHessianThird,
    /// The gradient, and the stiff Hessian of the forms that have a stiff part.
    GradientStiffHessian,
    /// The third contraction; `kept`: the tensors kept by the last
    /// [`Want::GradientHessianThird`] are at the same point and may be contracted.
    Third {
        kept: bool,
    },
    /// The Hessian-vector product along the direction.
    HessianVector,
}

impl Want {
    /// The pass writes every term's energy (the others leave the last ones in place).
    fn writes_energy(self) -> bool {
        !matches!(self, Want::Third { .. } | Want::HessianVector)
    }
}

/// Where a form's last pass left its outputs: each term's own (the scalar passes; energies
/// summed over chunks of terms when asked), each chunk's (the SIMD pass: energies summed per
/// chunk, gradients in per-body partials), the pair engine's rows, or — the gradient on one
/// thread, [`FormOps::gradient_into`] — already added into the caller's gradient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Outputs {
    #[default]
    Terms,
    Chunks,
    Rows,
    Added,
}

/// What phase A reads: the positions, the direction (third contraction), the pinned positions.
pub(crate) struct Inputs<'a, const D: usize> {
    pub q: &'a [f64],
    pub a: &'a [f64],
    pub pins: &'a [[f64; D]],
    pub omega: f64,
    pub parallel: bool,
    /// The SIMD instruction set of the lane passes.
    pub isa: Isa,
    /// The periodic box: terms see their bodies' nearest images ([`super::cell::Image`]).
    pub cell: Option<Cell>,
    /// The square of the pair cutoff: the energy and gradient passes skip the pair terms whose
    /// reference sites are this far apart or farther (the term vanishes there).
    pub cut2: Option<f64>,
    /// Every body's type ([`super::Topology::types`]); empty when the bodies have none (all
    /// of type 0).
    pub kinds: &'a [u32],
    /// No body is pinned: every term's bodies are free (the lane passes need not look).
    pub all_free: bool,
    /// For a system in spatial order read on the caller's `q` (its constraints,
    /// [`super::constraints`]): the user's free index of each inner one, through which
    /// [`Inputs::x`] reads `q`. `None`: `q` is in the terms' own order.
    pub to_user: Option<&'a [u32]>,
}

impl<const D: usize> Inputs<'_, D> {
    /// The types of a term's bodies.
    #[inline(always)]
    pub fn kinds<const K: usize>(&self, bodies: &[u32; K]) -> Kinds<K> {
        if self.kinds.is_empty() {
            [0; K]
        } else {
            bodies.map(|b| self.kinds[b as usize])
        }
    }

    /// The term's bodies' positions (nearest images in a periodic box).
    #[inline]
    pub fn x<const K: usize>(&self, free: &[u32; K], bodies: &[u32; K]) -> Local<D, K> {
        let mut x = core::array::from_fn(|k| {
            let f = free[k];
            if f == PINNED {
                self.pins[bodies[k] as usize]
            } else {
                let f = self.to_user.map_or(f, |u| u[f as usize]);
                let o = f as usize * D;
                core::array::from_fn(|d| self.q[o + d])
            }
        });
        if let Some(cell) = &self.cell {
            super::cell::Image::<f64>::new(cell).apply(&mut x);
        }
        x
    }

    /// The term's bodies' positions into lane `lane` of `soa` (`soa[k][d][lane]`).
    #[inline(always)]
    pub fn x_into<const K: usize>(
        &self,
        free: &[u32; K],
        bodies: &[u32; K],
        lane: usize,
        soa: &mut [[[f64; 8]; D]; K],
    ) {
        for k in 0..K {
            let f = free[k];
            let src: &[f64] = if f == PINNED {
                &self.pins[bodies[k] as usize]
            } else {
                let o = f as usize * D;
                &self.q[o..o + D]
            };
            for d in 0..D {
                soa[k][d][lane] = src[d];
            }
        }
    }

    /// The direction on the term's bodies (zero on pinned ones: they do not move).
    #[inline]
    fn dir<const K: usize>(&self, free: &[u32; K]) -> Local<D, K> {
        core::array::from_fn(|k| {
            let f = free[k];
            if f == PINNED {
                [0.0; D]
            } else {
                let o = f as usize * D;
                core::array::from_fn(|d| self.a[o + d])
            }
        })
    }
}

/// A neighbour-list build, as the pair forms take it (the pairs themselves, `i < j` within
/// cutoff + skin in the cell list's order, were written into the form's own buffer,
/// [`FormOps::pair_buffer`]).
pub(crate) struct NewList<'a> {
    pub bodies: &'a Bodies,
    /// The bodies' types (empty: untyped).
    pub kinds: &'a [u32],
    /// Every body's reference site at the build, and the periodic box.
    pub sites: pairs::Sites<'a>,
    /// `(rc / (rc + skin))³`: the share of a uniform liquid's list within the cutoff.
    pub within: f64,
    /// How the pair forms' energy and gradient are asked to go.
    pub strategy: pairs::PairStrategy,
}

/// One form of an assembled system as the system uses it: its terms, its part of every
/// evaluation, its constraints. Implemented by the term engine ([`FormState`]) for every form
/// and by the pair engine ([`pairs::CutoffPairs`]) for a pair form under a cutoff; the system
/// holds one per form of the table ([`super::forms`]), in table order, so adding a form adds an
/// object here and nothing to the engine.
pub(crate) trait FormOps<T, const D: usize>: Send + Sync {
    /// The definition's entry for this form.
    fn info(&self) -> FormInfo;
    /// The form's name (`"site"`, ...).
    fn name(&self) -> &'static str;
    /// Bodies per term.
    fn arity(&self) -> usize;
    /// Number of terms.
    fn len(&self) -> usize;
    /// True when its terms enter the Hessian `part`.
    fn enters(&self, part: HessianPart) -> bool;
    /// The pairs of free bodies its terms couple.
    fn couplings(&self, out: &mut Vec<(usize, usize)>);
    /// Set-up: the gather lists into `layout`, the pattern of the Hessian `part` (over the
    /// free indices `to_user[f]` of the terms' free indices `f`, when given: a system in
    /// spatial order, [`super::order`]).
    fn attach(&mut self, part: HessianPart, layout: &BlockLayout, to_user: Option<&[u32]>);
    /// Set-up: room for the local Hessians (and kept tensors) of the Hessian `part`, when a
    /// matrix of that part is first made (nothing when the form does not enter it: the pairs of
    /// a cluster do not enter the stiff Hessian, and their local Hessians would be gigabytes).
    fn reserve_hessians(&mut self, part: HessianPart);
    /// True when room for the local Hessians of `part` was made (or none is needed).
    fn has_hessians(&self, part: HessianPart) -> bool;
    /// A neighbour-list build: a pair form under a cutoff takes its pairs as its terms (its
    /// Hessian gathers dropped until the system attaches them to the pattern it makes from the
    /// new list) and chooses how its energy and gradient go; other forms ignore it.
    fn set_pairs(&mut self, list: &NewList<'_>) {
        let _ = list;
    }
    /// Where a neighbour-list build writes its pairs (bodies, `i < j`): a pair form under a
    /// cutoff's own term list, so that the list is held once (a million beads' is 34 MB);
    /// `None` for other forms.
    fn pair_buffer(&mut self, bodies: &Bodies) -> Option<&mut Vec<[u32; 2]>> {
        let _ = bodies;
        None
    }
    /// A form like this one for another evaluation state of the same model: the same plans
    /// (shared, or for a pair form under a cutoff its own, empty until its first list), its own
    /// buffers.
    fn replica(&self) -> Box<dyn FormOps<T, D>>;
    /// Phase A: every term's local outputs for `want`.
    fn evaluate(&mut self, terms: &T, input: &Inputs<'_, D>, want: Want);
    /// `acc += Σ_t e_t`, in term order (after [`Want::Energy`]).
    fn add_energy(&self, acc: &mut f64);
    /// Its terms' parameter derivatives added into `dv` (`P`) and `dg` (`P` rows of the free
    /// coordinates, flat), term by term ([`super::Kernel::parameter_derivatives`]).
    fn add_parameter_derivatives(
        &self,
        terms: &T,
        input: &Inputs<'_, D>,
        dv: &mut [f64],
        dg: &mut [f64],
    );
    /// Phase B, one chunk of free bodies from `first_body`: add each body's contributions to
    /// `out` in term order; the first form of a sum instead writes them (`first`).
    fn gather_vector(&self, first_body: usize, out: &mut [f64], first: bool);
    /// Phase B on one thread: the same sums, term by term (scatter).
    fn scatter_vector(&self, out: &mut [f64], first: bool);
    /// On one thread ([`Inputs::parallel`] false), phase A of the gradient with its phase B:
    /// [`FormOps::evaluate`] for [`Want::Gradient`] then [`FormOps::scatter_vector`]`(out,
    /// first)` — the same additions in the same order, so the same bits. The term engine's
    /// SIMD pass adds each chunk's partials while they are in cache instead of keeping every
    /// chunk's for phase B (phase B is then not to be asked for this gradient again).
    fn gradient_into(&mut self, terms: &T, input: &Inputs<'_, D>, out: &mut [f64], first: bool) {
        self.evaluate(terms, input, Want::Gradient);
        self.scatter_vector(out, first);
    }
    /// The gradient on one thread chunk by chunk, interleaved with the other forms' chunks
    /// ([`Interleave`]): the form made ready for [`FormOps::gradient_chunk`], its number of
    /// chunks and the terms of the longest (its energies' scratch); `None` (nothing changed)
    /// when its gradient does not go by chunks of partials.
    fn gradient_chunks(&mut self, _input: &Inputs<'_, D>) -> Option<(usize, usize)> {
        None
    }
    /// A stamp of its chunks: changed whenever they may have (its terms changed).
    fn chunk_stamp(&self) -> u64 {
        0
    }
    /// The free bodies chunk `c`'s partials land on (after [`FormOps::gradient_chunks`]).
    fn chunk_bodies(&self, _c: usize) -> &[u32] {
        &[]
    }
    /// Chunk `c` of the gradient (after [`FormOps::gradient_chunks`]): its phase A, its
    /// partials added into `out`, the additions [`FormOps::gradient_into`] makes for the chunk;
    /// the bodies at the positions `fresh` of [`FormOps::chunk_bodies`] (ascending) have their
    /// gradient set instead, to `0 + partial`: the bits of zeroing it first, without a store
    /// of its own to a line not yet in cache. `scratch` holds its terms' energies.
    fn gradient_chunk(
        &mut self,
        _terms: &T,
        _input: &Inputs<'_, D>,
        _c: usize,
        _out_fresh_scratch: (&mut [f64], &[u32], &mut [f64]),
    ) {
        unreachable!("a form that goes by chunks says so: FormOps::gradient_chunks")
    }
    /// True when [`FormOps::gather_vector`] can take any chunk of bodies (false: only all of
    /// them at once, [`crate::assembly::plan::PartialPlan::pieces`]).
    fn gathers_by_piece(&self) -> bool {
        true
    }
    /// Phase B for the Hessian `part`, one chunk of stored blocks from `first_block`: add each
    /// block's contributions (local blocks) in term order.
    fn gather_hessian(&self, part: HessianPart, first_block: usize, values: &mut [f64]);
    /// Phase B for the Hessian `part` on one thread (scatter).
    fn scatter_hessian(&self, part: HessianPart, values: &mut [f64]);
    /// The free bodies of its constraint rows, `width` entries per row ([`PINNED`] pads).
    fn constraint_pattern(&self, width: usize, cols: &mut Vec<u32>);
    /// The constraints of term `t` into `g` (the form's components per term), and their rows
    /// into `jac` from row `first_row`.
    fn term_constraints(
        &self,
        terms: &T,
        input: &Inputs<'_, D>,
        t: usize,
        g: &mut [f64],
        jac: Option<(&mut SparseJacobian, usize)>,
    );
}

/// The forms of a system, in table order.
pub(crate) type FormList<T, const D: usize> = [Box<dyn FormOps<T, D>>];

/// A form the definition does not have: no terms, nothing evaluated, and none of the engine's
/// code made for it (the system picks it by a constant, [`super::system`]).
pub(crate) struct Absent<F>(core::marker::PhantomData<fn() -> F>);

impl<F> Absent<F> {
    pub fn new() -> Self {
        Self(core::marker::PhantomData)
    }
}

impl<T, F: Form, const D: usize> FormOps<T, D> for Absent<F> {
    fn info(&self) -> FormInfo {
        FormInfo::ABSENT
    }
    fn name(&self) -> &'static str {
        F::NAME
    }
    fn arity(&self) -> usize {
        F::ARITY
    }
    fn len(&self) -> usize {
        0
    }
    fn enters(&self, _: HessianPart) -> bool {
        false
    }
    fn couplings(&self, _: &mut Vec<(usize, usize)>) {}
    fn attach(&mut self, _: HessianPart, _: &BlockLayout, _: Option<&[u32]>) {}
    fn reserve_hessians(&mut self, _: HessianPart) {}
    fn has_hessians(&self, _: HessianPart) -> bool {
        true
    }
    fn replica(&self) -> Box<dyn FormOps<T, D>> {
        Box::new(Absent::<F>::new())
    }
    fn evaluate(&mut self, _: &T, _: &Inputs<'_, D>, _: Want) {}
    fn add_energy(&self, _: &mut f64) {}
    fn add_parameter_derivatives(&self, _: &T, _: &Inputs<'_, D>, _: &mut [f64], _: &mut [f64]) {}
    fn gather_vector(&self, _: usize, out: &mut [f64], first: bool) {
        if first {
            out.fill(0.0);
        }
    }
    fn scatter_vector(&self, out: &mut [f64], first: bool) {
        if first {
            out.fill(0.0);
        }
    }
    fn gather_hessian(&self, _: HessianPart, _: usize, _: &mut [f64]) {}
    fn scatter_hessian(&self, _: HessianPart, _: &mut [f64]) {}
    fn constraint_pattern(&self, _: usize, _: &mut Vec<u32>) {}
    fn term_constraints(
        &self,
        _: &T,
        _: &Inputs<'_, D>,
        _: usize,
        _: &mut [f64],
        _: Option<(&mut SparseJacobian, usize)>,
    ) {
        unreachable!("an absent form has no terms");
    }
}
