//! The evaluation engine of an assembled system, written once for every form: gather each term's
//! bodies, evaluate its kernel, keep its local outputs (phase A); then sum, for each free body
//! (gradient, third contraction) or each stored Hessian block, its contributions in the fixed
//! order of the plan (phase B). Both phases run over fixed chunks, on rayon's current pool when
//! the system is parallel: a term's output and an entry's sum do not depend on the chunking or
//! on the thread count, so the results are bit-identical on 1 thread or many. Nothing is
//! allocated: the term buffers are made at set-up.
//!
//! [`FormState`] is one form's plan and buffers, generic in the form and its arity;
//! [`FormOps`] is what the system sees of it (one object per form, in table order).

use core::marker::PhantomData;

use rayon::prelude::*;

use super::forms::{Form, FormInfo, Over, ThirdForm};
use super::jacobian::SparseJacobian;
use super::neighbors::Cell;
use super::plan::{
    Bodies, Csr, HessianGather, PartialPlan, PlanScratch, TermList, NOWHERE, NO_SLOT, PIECE, PINNED,
};
use super::terms::{Kernel, Kinds, Local, LocalHessian, LocalThird};
use super::topology::{Topology, TopologyError};
use crate::model::HessianPart;
use crate::simd::{self, Isa, Lanes, WithLanes};
use crate::sparse::BlockLayout;

// The row passes of pair forms: parts of this engine, in their own files.
mod half_rows;
mod rows;
use half_rows::HalfRows;
use rows::PairRows;

/// Terms (phase A) or targets (phase B) per parallel chunk.
pub(crate) const CHUNK: usize = 512;

/// Terms per chunk of the SIMD passes of a pair form ([`Over::Pairs`]). A chunk sums its
/// terms' gradients into one partial per distinct body it touches ([`PartialPlan`]); a row of
/// a neighbour list has hundreds of terms whose second bodies are mostly distinct, so with 512
/// terms a chunk's partials were nearly as many as its terms — zeroed, written and summed again
/// each pass. Chunks of 16 384 consecutive pairs share most second bodies (spatially close rows
/// see the same neighbours): measured about 18 % less time per step on 10 000 alkane sites, 6 % on
/// the Kremer–Grest melt (BENCHMARKS.md). Other forms' terms share few bodies: [`CHUNK`].
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
    /// [`ThirdForm::Tensor`] forms (for a Z&S step's third contraction at the same point).
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

/// What phase A reads: the positions, the direction (third contraction), the pinned positions.
pub(crate) struct Inputs<'a, const D: usize> {
    pub q: &'a [f64],
    pub a: &'a [f64],
    pub pins: &'a [[f64; D]],
    pub omega: f64,
    pub parallel: bool,
    /// The SIMD instruction set of the lane passes.
    pub isa: Isa,
    /// The periodic box: terms see their bodies' nearest images ([`minimum_image`]).
    pub cell: Option<Cell>,
    /// The square of the pair cutoff: the energy and gradient passes skip the pair terms whose
    /// reference sites are this far apart or farther (the term vanishes there).
    pub cut2: Option<f64>,
    /// Every body's type ([`super::Topology::types`]); empty when the bodies have none (all
    /// of type 0).
    pub kinds: &'a [u32],
    /// No body is pinned: every term's bodies are free (the lane passes need not look).
    pub all_free: bool,
}

/// Shift bodies `1..K` of a term by whole box vectors to the nearest image of body 0, by their
/// reference sites (coordinates `0..3`); every site `s` of a body (coordinates `3s..3s + 3`)
/// moves with it. The same operations for every `L`: the same bits on every path.
#[inline(always)]
pub(crate) fn minimum_image<L: Lanes, const D: usize, const K: usize>(
    x: &mut [[L; D]; K],
    cell: &Cell,
) {
    Image::new(cell).apply(x);
}

/// A periodic box's sides and their reciprocals as lanes: [`minimum_image`] with the
/// broadcasts made once per pass, not once per block.
pub(crate) struct Image<L> {
    inv: [L; 3],
    len: [L; 3],
}

impl<L: Lanes> Image<L> {
    #[inline(always)]
    pub fn new(cell: &Cell) -> Self {
        Self {
            inv: cell.inv.map(L::splat),
            len: cell.len.map(L::splat),
        }
    }

    /// [`minimum_image`].
    #[inline(always)]
    pub fn apply<const D: usize, const K: usize>(&self, x: &mut [[L; D]; K]) {
        for k in 1..K {
            for a in 0..3 {
                let d = x[k][a] - x[0][a];
                let shift = (d * self.inv[a]).round_even() * self.len[a];
                let mut c = a;
                while c < D {
                    x[k][c] = x[k][c] - shift;
                    c += 3;
                }
            }
        }
    }
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
                let o = f as usize * D;
                core::array::from_fn(|d| self.q[o + d])
            }
        });
        if let Some(cell) = &self.cell {
            minimum_image::<f64, D, K>(&mut x, cell);
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

/// One form of an assembled system as the system uses it: its terms, its part of every
/// evaluation, its constraints. Implemented once, by [`FormState`], for every form; the system
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
    /// Set-up: the gather lists into `layout`, the pattern of the Hessian `part`.
    fn attach(&mut self, part: HessianPart, layout: &BlockLayout);
    /// Set-up: room for the local Hessians (and kept tensors) of the Hessian `part`, when a
    /// matrix of that part is first made (nothing when the form does not enter it: the pairs of
    /// a cluster do not enter the stiff Hessian, and their local Hessians would be gigabytes).
    fn reserve_hessians(&mut self, part: HessianPart);
    /// True when room for the local Hessians of `part` was made (or none is needed).
    fn has_hessians(&self, part: HessianPart) -> bool;
    /// A neighbour-list rebuild: a pair form's terms become `pairs` (its gather lists and
    /// buffers follow; its Hessian gathers are dropped until the engine attaches them to the
    /// pattern it makes from the new list); other forms ignore it. Its energy and gradient
    /// passes go by rows when every body is a free point: of the full list with `full_rows`
    /// ([`PairRows`]), else of the half list ([`HalfRows`], its partners ordered by their
    /// distance at the build, `at`). `kinds` are the bodies' types (empty: untyped).
    fn set_pairs(
        &mut self,
        pairs: &[[u32; 2]],
        bodies: &Bodies,
        kinds: &[u32],
        full_rows: bool,
        at: Sites<'_>,
    );
    /// Phase A: every term's local outputs for `want`.
    fn evaluate(&mut self, terms: &T, input: &Inputs<'_, D>, want: Want);
    /// `acc += Σ_t e_t`, in term order (after [`Want::Energy`]).
    fn add_energy(&self, acc: &mut f64);
    /// Its terms' parameter derivatives added into `dv` (`P`) and `dg` (`P` rows of the free
    /// coordinates, flat), term by term ([`Kernel::parameter_derivatives`]).
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

/// One form's plan and buffers: its terms, gather lists, and each term's local outputs.
pub(crate) struct FormState<F, const D: usize, const K: usize> {
    info: FormInfo,
    list: TermList<K>,
    /// Gradient gather (per free body) of the per-term passes; `None` after a neighbour-list
    /// rebuild until such a pass needs it (the SIMD passes gather partials instead): the
    /// free body count to build it for.
    grad: Csr,
    grad_for: Option<usize>,
    /// Hessian gathers of the full and the stiff Hessian, when the form enters them.
    full: Option<HessianGather<K>>,
    stiff: Option<HessianGather<K>>,
    g: Vec<Local<D, K>>,
    /// The gradient partials of the SIMD pass and where they go ([`PartialPlan`]).
    partials: PartialPlan<K>,
    part: Vec<f64>,
    /// Where the last vector pass left its outputs: per-term local vectors `g` or `part`.
    in_partials: bool,
    /// `partials` is out of date (a neighbour-list rebuild that made `rows`): rebuild it for
    /// this many free bodies before a pass that needs it.
    partials_for: Option<usize>,
    /// A pair form's neighbour list by rows, when every body is free and a body is a point
    /// ([`RowsPass`]): its energy and gradient passes.
    rows: RowsPass,
    /// The last gradient pass left its gradient in `rows`.
    in_rows: bool,
    /// The last energy-writing pass left its energies in `rows`.
    rows_valued: bool,
    h: Vec<LocalHessian<D, K>>,
    e: Vec<f64>,
    /// Third-derivative tensors kept by [`Want::GradientHessianThird`] ([`ThirdForm::Tensor`]).
    t: Vec<LocalThird<D, K>>,
    /// Scratch of the plans' rebuilds (neighbour lists), kept between them.
    scratch: PlanScratch,
    /// Per chunk of [`lane_chunk`] terms, its energy (`chunk_sum`), when `summed`: a SIMD pass sums
    /// them on the pool; [`FormOps::add_energy`] then adds them in chunk order, the same bits
    /// as summing the chunks there.
    sums: Vec<f64>,
    summed: bool,
    form: PhantomData<fn() -> F>,
}

impl<F: Form, const D: usize, const K: usize> FormState<F, D, K> {
    /// The form's terms over `topology` (none when the definition lacks the form).
    ///
    /// # Errors
    /// [`TopologyError::TooLarge`] when its term list cannot be allocated.
    pub fn new(
        info: FormInfo,
        topology: &Topology,
        bodies: &Bodies,
    ) -> Result<Self, TopologyError> {
        debug_assert_eq!(F::ARITY, K, "form {} has arity {}", F::NAME, F::ARITY);
        let list = TermList::<K>::new(F::OVER, info.present, topology, bodies)?;
        let n = list.len();
        let partials = PartialPlan::new(&list, bodies.free, lane_chunk::<F>());
        Ok(Self {
            info,
            grad: list.gradient_gather(bodies.free),
            grad_for: None,
            part: vec![0.0; partials.len() * D],
            partials,
            in_partials: false,
            partials_for: None,
            rows: RowsPass::default(),
            in_rows: false,
            rows_valued: false,
            list,
            full: None,
            stiff: None,
            g: vec![[[0.0; D]; K]; n],
            h: Vec::new(),
            e: vec![0.0; n],
            t: Vec::new(),
            scratch: PlanScratch::default(),
            sums: Vec::new(),
            summed: false,
            form: PhantomData,
        })
    }

    fn enters_part(&self, part: HessianPart) -> bool {
        match part {
            HessianPart::Full => self.info.present,
            HessianPart::Stiff => self.info.stiff,
        }
    }

    fn gather_of(&self, part: HessianPart) -> Option<&HessianGather<K>> {
        match part {
            HessianPart::Full => self.full.as_ref(),
            HessianPart::Stiff => self.stiff.as_ref(),
        }
    }
}

impl<T, F, const D: usize, const K: usize> FormOps<T, D> for FormState<F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    fn info(&self) -> FormInfo {
        self.info
    }
    fn name(&self) -> &'static str {
        F::NAME
    }
    fn arity(&self) -> usize {
        K
    }
    fn len(&self) -> usize {
        self.list.len()
    }
    fn enters(&self, part: HessianPart) -> bool {
        self.enters_part(part)
    }
    fn couplings(&self, out: &mut Vec<(usize, usize)>) {
        self.list.couplings(out);
    }
    fn attach(&mut self, part: HessianPart, layout: &BlockLayout) {
        let gather = self
            .enters_part(part)
            .then(|| HessianGather::new(&self.list, layout));
        match part {
            HessianPart::Full => self.full = gather,
            HessianPart::Stiff => self.stiff = gather,
        }
    }
    fn reserve_hessians(&mut self, part: HessianPart) {
        if !self.enters_part(part) {
            return;
        }
        let n = self.list.len();
        self.h.resize(n, [[[[0.0; D]; D]; K]; K]);
        if part == HessianPart::Full && self.info.third == ThirdForm::Tensor {
            self.t.resize(n, [[[[[[0.0; D]; K]; D]; K]; D]; K]);
        }
    }
    fn has_hessians(&self, part: HessianPart) -> bool {
        let n = self.list.len();
        !self.enters_part(part)
            || (self.h.len() == n
                && (part == HessianPart::Stiff
                    || self.info.third != ThirdForm::Tensor
                    || self.t.len() == n))
    }

    fn set_pairs(
        &mut self,
        pairs: &[[u32; 2]],
        bodies: &Bodies,
        kinds: &[u32],
        full_rows: bool,
        at: Sites<'_>,
    ) {
        if F::OVER != Over::Pairs || !self.info.present {
            return;
        }
        self.list.set_pairs(pairs, bodies);
        self.list
            .set_codes(if self.info.typed { kinds } else { &[] });
        let n = self.list.len();
        self.grad_for = Some(bodies.free);
        let all_free = bodies.free == bodies.free_of.len();
        let kinds = if self.info.typed { kinds } else { &[] };
        let by_rows = if D == 3 && K == 2 && all_free {
            self.rows.rebuild(full_rows, pairs, bodies.free, kinds, at)
        } else {
            self.rows.by = None;
            false
        };
        if by_rows {
            // The energy and gradient passes go by rows; the partial plan waits for a pass
            // that needs it.
            self.partials_for = Some(bodies.free);
        } else {
            self.partials_for = None;
            self.partials.rebuild(
                &self.list,
                bodies.free,
                lane_chunk::<F>(),
                &mut self.scratch,
            );
            self.part.resize(self.partials.len() * D, 0.0);
        }
        self.g.resize(n, [[0.0; D]; K]);
        self.e.resize(n, 0.0);
        if !self.h.is_empty() {
            self.h.resize(n, [[[[0.0; D]; D]; K]; K]);
        }
        if !self.t.is_empty() {
            self.t.resize(n, [[[[[[0.0; D]; K]; D]; K]; D]; K]);
        }
        self.full = None;
        self.stiff = None;
        self.in_partials = false;
        self.in_rows = false;
        self.rows_valued = false;
        self.summed = false;
    }

    fn evaluate(&mut self, terms: &T, input: &Inputs<'_, D>, want: Want) {
        let by_rows = match want {
            Want::Energy | Want::Gradient => true,
            Want::GradientStiffHessian => !self.info.stiff,
            _ => false,
        };
        if let (true, Some(cut2), true) = (self.rows.by.is_some(), input.cut2, by_rows) {
            self.rows
                .evaluate::<T, F, D, K>(terms, input, cut2, want != Want::Energy);
            self.in_rows = want != Want::Energy;
            self.in_partials = false;
            self.rows_valued = true;
            return;
        }
        self.in_rows = false;
        if !matches!(want, Want::Third { .. } | Want::HessianVector) {
            self.rows_valued = false;
        }
        if let Some(free) = self.partials_for.take() {
            self.partials
                .rebuild(&self.list, free, lane_chunk::<F>(), &mut self.scratch);
            self.part.resize(self.partials.len() * D, 0.0);
        }
        let (w, par, list) = (input.omega, input.parallel, &self.list);
        let x = |fr: &[u32; K], bo: &[u32; K]| input.x(fr, bo);
        let lanes = Lanes_ {
            list,
            plan: &self.partials,
            input,
            terms,
        };
        self.in_partials = matches!(want, Want::Gradient)
            || (want == Want::GradientStiffHessian && !self.info.stiff);
        if let Some(free) = self.grad_for.filter(|_| !self.in_partials) {
            self.list
                .gradient_gather_into(free, &mut self.grad, &mut self.scratch.gather);
            self.grad_for = None;
        }
        if !matches!(want, Want::Third { .. } | Want::HessianVector) {
            // The passes that leave energies: summed per chunk by the SIMD passes only.
            self.summed = matches!(want, Want::Energy) || self.in_partials;
        }
        match want {
            Want::Energy => {
                lane_pass::<T, F, D, K>(par, &lanes, (&mut self.e, &mut self.sums), None)
            }
            Want::Gradient => lane_pass::<T, F, D, K>(
                par,
                &lanes,
                (&mut self.e, &mut self.sums),
                Some(&mut self.part),
            ),
            Want::GradientHessian => map3(
                par,
                list,
                &mut self.e,
                &mut self.g,
                &mut self.h,
                |fr, bo| terms.value_gradient_hessian(w, &x(fr, bo), &input.kinds(bo)),
            ),
            Want::GradientStiffHessian if self.info.stiff => {
                map3(
                    par,
                    list,
                    &mut self.e,
                    &mut self.g,
                    &mut self.h,
                    |fr, bo| terms.value_gradient_stiff_hessian(w, &x(fr, bo), &input.kinds(bo)),
                );
            }
            Want::GradientStiffHessian => {
                lane_pass::<T, F, D, K>(
                    par,
                    &lanes,
                    (&mut self.e, &mut self.sums),
                    Some(&mut self.part),
                );
            }
            Want::GradientHessianThird if self.info.third == ThirdForm::Tensor => {
                map4(
                    par,
                    list,
                    (&mut self.e, &mut self.g, &mut self.h, &mut self.t),
                    |fr, bo| terms.value_gradient_hessian_third(w, &x(fr, bo), &input.kinds(bo)),
                );
            }
            Want::GradientHessianThird => {
                map3(
                    par,
                    list,
                    &mut self.e,
                    &mut self.g,
                    &mut self.h,
                    |fr, bo| terms.value_gradient_hessian(w, &x(fr, bo), &input.kinds(bo)),
                );
            }
            Want::Third { kept } => match self.info.third {
                ThirdForm::Zero => {}
                ThirdForm::Tensor if kept => {
                    map_kept(par, list, &mut self.g, &self.t, |fr, t| {
                        contract(t, &input.dir(fr))
                    });
                }
                _ => map1(par, list, &mut self.g, |fr, bo| {
                    terms.third_contraction(w, &x(fr, bo), &input.dir(fr), &input.kinds(bo))
                }),
            },
            Want::HessianVector => map1(par, list, &mut self.g, |fr, bo| {
                terms.hessian_vector(w, &x(fr, bo), &input.dir(fr), &input.kinds(bo))
            }),
        }
    }

    fn add_parameter_derivatives(
        &self,
        terms: &T,
        input: &Inputs<'_, D>,
        dv: &mut [f64],
        dg: &mut [f64],
    ) {
        let p = dv.len();
        if p == 0 || !self.info.present {
            return;
        }
        let n = dg.len() / p;
        let (mut v, mut g) = (vec![0.0; p], vec![[[0.0; D]; K]; p]);
        for (fr, bo) in self.list.free.iter().zip(&self.list.bodies) {
            v.fill(0.0);
            g.fill([[0.0; D]; K]);
            terms.parameter_derivatives(&input.x(fr, bo), &input.kinds(bo), &mut v, &mut g);
            for (k, gk) in g.iter().enumerate() {
                dv[k] += v[k];
                for (b, &f) in fr.iter().enumerate() {
                    if f != PINNED {
                        let o = k * n + f as usize * D;
                        for d in 0..D {
                            dg[o + d] += gk[b][d];
                        }
                    }
                }
            }
        }
    }

    fn add_energy(&self, acc: &mut f64) {
        if self.rows_valued {
            for &s in self.rows.sums() {
                *acc += s;
            }
            return;
        }
        if self.summed {
            for &s in &self.sums {
                *acc += s;
            }
            return;
        }
        for chunk in self.e.chunks(lane_chunk::<F>()) {
            *acc += chunk_sum(chunk);
        }
    }

    fn gather_vector(&self, first_body: usize, out: &mut [f64], first: bool) {
        if self.in_rows {
            let from = &self.rows.grad()[first_body * D..first_body * D + out.len()];
            if first {
                out.copy_from_slice(from);
            } else {
                for (o, g) in out.iter_mut().zip(from) {
                    *o += g;
                }
            }
            return;
        }
        if self.in_partials {
            // The partials landing in the range's pieces, in storage (chunk) order, each into
            // its body: a stream through `part`, not a cache miss per partial.
            debug_assert_eq!(first_body % PIECE, 0, "ranges start at a piece");
            if first {
                out.fill(0.0);
            }
            let pieces = first_body / PIECE..(first_body + out.len() / D).div_ceil(PIECE);
            for piece in pieces {
                for &p in self.partials.by_piece.row(piece) {
                    let (p, b) = (p as usize, self.partials.body[p as usize] as usize);
                    let o = (b - first_body) * D;
                    let v = &self.part[p * D..p * D + D];
                    for d in 0..D {
                        out[o + d] += v[d];
                    }
                }
            }
            return;
        }
        for (i, o) in out.chunks_exact_mut(D).enumerate() {
            let b = first_body + i;
            if F::OVER == Over::Bodies && K == 1 {
                // One term per free body, in free order: term `b` is body `b`'s.
                let v = &self.g[b][0];
                for d in 0..D {
                    o[d] = if first { v[d] } else { o[d] + v[d] };
                }
                continue;
            }
            let mut acc: [f64; D] = if first {
                [0.0; D]
            } else {
                core::array::from_fn(|d| o[d])
            };
            for &src in self.grad.row(b) {
                let v = &self.g[src as usize / K][src as usize % K];
                for d in 0..D {
                    acc[d] += v[d];
                }
            }
            o.copy_from_slice(&acc);
        }
    }

    fn scatter_vector(&self, out: &mut [f64], first: bool) {
        if self.in_partials || self.in_rows {
            // The gather visits each body's partials in chunk order: the scatter's order.
            FormOps::<T, D>::gather_vector(self, 0, out, first);
            return;
        }
        if first && F::OVER == Over::Bodies && K == 1 {
            for (o, g) in out.chunks_exact_mut(D).zip(&self.g) {
                o.copy_from_slice(&g[0]);
            }
            return;
        }
        if first {
            out.fill(0.0);
        }
        for (fr, g) in self.list.free.iter().zip(&self.g) {
            for k in 0..K {
                if fr[k] != PINNED {
                    let o = fr[k] as usize * D;
                    for d in 0..D {
                        out[o + d] += g[k][d];
                    }
                }
            }
        }
    }

    fn gather_hessian(&self, part: HessianPart, first_block: usize, values: &mut [f64]) {
        let Some(gather) = self.gather_of(part) else {
            return;
        };
        for (i, o) in values.chunks_exact_mut(D * D).enumerate() {
            for &src in gather.blocks.row(first_block + i) {
                let src = src as usize;
                let (t, a, b) = (src / (K * K), (src % (K * K)) / K, src % K);
                add_block(o, &self.h[t][a][b]);
            }
        }
    }

    fn scatter_hessian(&self, part: HessianPart, values: &mut [f64]) {
        let Some(gather) = self.gather_of(part) else {
            return;
        };
        for (dest, h) in gather.dest.iter().zip(&self.h) {
            for a in 0..K {
                for b in 0..K {
                    if dest[a][b] != NOWHERE {
                        let o = dest[a][b] as usize * D * D;
                        add_block(&mut values[o..o + D * D], &h[a][b]);
                    }
                }
            }
        }
    }

    fn constraint_pattern(&self, width: usize, cols: &mut Vec<u32>) {
        for fr in &self.list.free {
            for _ in 0..self.info.constraints {
                cols.extend((0..width).map(|s| if s < K { fr[s] } else { PINNED }));
            }
        }
    }

    fn term_constraints(
        &self,
        terms: &T,
        input: &Inputs<'_, D>,
        t: usize,
        g: &mut [f64],
        jac: Option<(&mut SparseJacobian, usize)>,
    ) {
        let x = input.x(&self.list.free[t], &self.list.bodies[t]);
        let m = g.len();
        let mut rows = [[[0.0; D]; K]; STACK_ROWS];
        let mut big = Vec::new();
        let rows: &mut [Local<D, K>] = if m <= STACK_ROWS {
            &mut rows[..m]
        } else {
            big.resize(m, [[0.0; D]; K]);
            &mut big
        };
        terms.constraints(&x, &input.kinds(&self.list.bodies[t]), g, rows);
        if let Some((jac, first)) = jac {
            for (c, row) in rows.iter().enumerate() {
                for (s, body) in row.iter().enumerate() {
                    jac.block_mut(first + c, s).copy_from_slice(body);
                }
            }
        }
    }
}

/// The sum of a chunk of term energies, in a fixed pattern: term `t` into accumulator `t mod 8`,
/// the eight accumulators added pairwise. Independent sums keep the adder busy, and the pattern
/// does not depend on the SIMD width or the thread count that produced the terms.
#[inline]
fn chunk_sum(e: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let mut blocks = e.chunks_exact(8);
    for b in &mut blocks {
        for (a, x) in acc.iter_mut().zip(b) {
            *a += x;
        }
    }
    for (a, x) in acc.iter_mut().zip(blocks.remainder()) {
        *a += x;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Every body's reference site at a neighbour-list build, and the periodic box.
pub(crate) type Sites<'a> = (&'a [[f64; 3]], Option<&'a Cell>);

/// A pair form's energy and gradient passes by rows: of the full list ([`PairRows`], each
/// pair from both ends, no scatter) or of the half list ([`HalfRows`], each pair once), or
/// neither (`by` is `None`: the per-term passes). Both keep their memory between rebuilds,
/// whichever is in use: a rebuild allocates nothing once they are large enough.
#[derive(Default)]
struct RowsPass {
    full: PairRows,
    half: HalfRows,
    by: Option<RowKind>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RowKind {
    Full,
    Half,
}

impl RowsPass {
    /// Rows of the pairs `pairs` of `free` free bodies, full or half; `false` (no rows) when
    /// the pairs cannot be held so.
    fn rebuild(
        &mut self,
        full: bool,
        pairs: &[[u32; 2]],
        free: usize,
        kinds: &[u32],
        at: Sites<'_>,
    ) -> bool {
        self.by = if full {
            self.full
                .rebuild(pairs, free, kinds)
                .then_some(RowKind::Full)
        } else {
            self.half
                .rebuild(pairs, free, kinds, at, half_rows::LONG_ROWS)
                .then_some(RowKind::Half)
        };
        self.by.is_some()
    }

    /// The energy (per chunk: [`RowsPass::sums`]) and, with `gradient`, the gradient
    /// ([`RowsPass::grad`]) at `input`, when there are rows.
    fn evaluate<T, F, const D: usize, const K: usize>(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        cut2: f64,
        gradient: bool,
    ) where
        T: Kernel<D, K, F>,
        F: Form,
    {
        match self.by {
            Some(RowKind::Full) => {
                self.full
                    .evaluate::<T, F, D, K>(terms, input, cut2, gradient);
            }
            Some(RowKind::Half) => {
                self.half
                    .evaluate::<T, F, D, K>(terms, input, cut2, gradient);
            }
            None => {}
        }
    }

    /// Per free body, its gradient; the last gradient pass's.
    fn grad(&self) -> &[f64] {
        match self.by {
            Some(RowKind::Full) => &self.full.grad,
            _ => &self.half.grad,
        }
    }

    /// Per chunk, the energy of its pairs; the last pass's (added in chunk order).
    fn sums(&self) -> &[f64] {
        match self.by {
            Some(RowKind::Full) => &self.full.sums,
            _ => &self.half.sums,
        }
    }
}

/// What a SIMD pass reads (named with a trailing underscore: `Lanes` is the lane trait).
struct Lanes_<'a, T, const D: usize, const K: usize> {
    list: &'a TermList<K>,
    plan: &'a PartialPlan<K>,
    input: &'a Inputs<'a, D>,
    terms: &'a T,
}

/// Phase A through the SIMD lane kernels ([`crate::simd`]): every term's energy into `e` and,
/// when asked, each chunk's gradient partials into `part` ([`PartialPlan`]), `Lanes::WIDTH`
/// terms at a time (the remainder one by one, by the same code on `f64`). Each lane computes
/// the bits the scalar kernel would, and each chunk sums its terms in term order: the same
/// bits whatever the SIMD width and the thread count.
fn lane_pass<T, F, const D: usize, const K: usize>(
    parallel: bool,
    at: &Lanes_<'_, T, D, K>,
    (e, sums): (&mut [f64], &mut Vec<f64>),
    part: Option<&mut [f64]>,
) where
    T: Kernel<D, K, F>,
    F: Form,
{
    let chunks = at.list.len().div_ceil(lane_chunk::<F>());
    sums.resize(chunks, 0.0);
    split_chunks::<T, F, D, K>(parallel, at, 0..chunks, (e, sums), part);
}

/// Chunks `range` of a SIMD pass: halves on rayon's pool when `parallel` (a split allocates
/// nothing, unlike collecting the variable-length partial slices), one chunk at a time at the
/// leaves.
fn split_chunks<T, F, const D: usize, const K: usize>(
    parallel: bool,
    at: &Lanes_<'_, T, D, K>,
    range: core::ops::Range<usize>,
    (e, sums): (&mut [f64], &mut [f64]),
    part: Option<&mut [f64]>,
) where
    T: Kernel<D, K, F>,
    F: Form,
{
    if range.len() > 1 && parallel {
        let mid = range.start + range.len() / 2;
        let (e0, e1) = e.split_at_mut((mid - range.start) * lane_chunk::<F>());
        let (s0, s1) = sums.split_at_mut(mid - range.start);
        let (p0, p1) = match part {
            Some(p) => {
                let cut = (at.plan.offsets[mid] - at.plan.offsets[range.start]) as usize * D;
                let (a, b) = p.split_at_mut(cut);
                (Some(a), Some(b))
            }
            None => (None, None),
        };
        rayon::join(
            || split_chunks::<T, F, D, K>(true, at, range.start..mid, (e0, s0), p0),
            || split_chunks::<T, F, D, K>(true, at, mid..range.end, (e1, s1), p1),
        );
        return;
    }
    let (mut e, mut part) = (e, part);
    let first = range.start;
    for c in range {
        let chunk = lane_chunk::<F>();
        let terms = c * chunk..((c + 1) * chunk).min(at.list.len());
        let (ec, rest) = e.split_at_mut(terms.len());
        e = rest;
        let pc = match part {
            Some(p) => {
                let len = (at.plan.offsets[c + 1] - at.plan.offsets[c]) as usize * D;
                let (pc, rest) = p.split_at_mut(len);
                part = Some(rest);
                Some(pc)
            }
            None => None,
        };
        let written = simd::dispatch_with(
            at.input.isa,
            LanePass::<T, F, D, K> {
                terms: at.terms,
                input: at.input,
                free: &at.list.free[terms.clone()],
                bodies: &at.list.bodies[terms.clone()],
                codes: at.list.codes.get(terms.clone()).unwrap_or(&[]),
                decoded: &at.list.decoded,
                slots: &at.plan.slot[terms],
                e: ec,
                part: pc,
                form: PhantomData,
            },
        );
        // The chunk's energy, summed here on the pool (`add_energy` then adds the sums).
        sums[c - first] = chunk_sum(&ec[..written]);
    }
}

/// One chunk of [`lane_pass`].
struct LanePass<'a, T, F, const D: usize, const K: usize> {
    terms: &'a T,
    input: &'a Inputs<'a, D>,
    free: &'a [[u32; K]],
    bodies: &'a [[u32; K]],
    codes: &'a [u8],
    decoded: &'a [Kinds<K>],
    slots: &'a [[u16; K]],
    e: &'a mut [f64],
    part: Option<&'a mut [f64]>,
    form: PhantomData<fn() -> F>,
}

impl<T, F, const D: usize, const K: usize> WithLanes for LanePass<'_, T, F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    /// How many terms' energies were written (the first of `e`).
    type Output = usize;

    #[inline(always)]
    fn run<L: Lanes>(self) -> usize {
        let LanePass {
            terms,
            input,
            free,
            bodies,
            codes,
            decoded,
            slots,
            e,
            mut part,
            ..
        } = self;
        if let Some(p) = part.as_deref_mut() {
            p.fill(0.0);
        }
        let block = LaneBlock {
            terms,
            omega: input.omega,
            input,
            bodies,
            codes,
            decoded,
            slots,
        };
        match input.cut2 {
            Some(cut2) if F::OVER == Over::Pairs => {
                windowed_pairs::<L, T, F, D, K>(&block, free, cut2, e, part)
            }
            _ => {
                let n = free.len();
                let w = L::WIDTH;
                let mut soa = [[[0.0; 8]; D]; K];
                let mut order = [0u16; 8];
                let mut j = 0;
                while j + w <= n {
                    for (l, o) in order[..w].iter_mut().enumerate() {
                        *o = (j + l) as u16;
                    }
                    let x = load_lanes::<L, D, K>(input, free, bodies, &order[..w], &mut soa);
                    block.evaluate_run(x, j, &mut e[j..], part.as_deref_mut(), &mut soa);
                    j += w;
                }
                for (t, e) in e[..n].iter_mut().enumerate().skip(j) {
                    block.evaluate_one(free, t as u16, e, part.as_deref_mut(), &mut soa);
                }
                n
            }
        }
    }
}

/// What evaluating a block of a chunk's terms needs beside their positions.
struct LaneBlock<'a, T, const D: usize, const K: usize> {
    terms: &'a T,
    omega: f64,
    input: &'a Inputs<'a, D>,
    bodies: &'a [[u32; K]],
    /// The terms' types as codes ([`TermList::set_codes`]; empty: none) and their types.
    codes: &'a [u8],
    decoded: &'a [Kinds<K>],
    slots: &'a [[u16; K]],
}

impl<T, const D: usize, const K: usize> LaneBlock<'_, T, D, K> {
    /// The terms `block` (`L::WIDTH` of them, indices into the chunk) at positions `x`: their
    /// energies into `e[0..WIDTH]` and, with `part`, their gradients added into the chunk's
    /// partials in lane order (`soa` is scratch).
    #[inline(always)]
    fn evaluate<L: Lanes, F: Form>(
        &self,
        x: [[L; D]; K],
        block: &[u16],
        e: &mut [f64],
        part: Option<&mut [f64]>,
        soa: &mut [[[f64; 8]; D]; K],
    ) where
        T: Kernel<D, K, F>,
    {
        let w = L::WIDTH;
        // The types of each lane's bodies, when the form reads them: one row when every lane's
        // are the same (the neighbour list groups pairs by types), read once by the kernel.
        let mut kinds = [[0u32; K]; 8];
        let kinds: &[Kinds<K>] = if self.input.kinds.is_empty() {
            &[]
        } else if let Some(&c0) = self.codes.get(block[0] as usize) {
            if block[1..w].iter().all(|&t| self.codes[t as usize] == c0) {
                kinds[0] = self.decoded[c0 as usize];
                &kinds[..1]
            } else {
                for (row, &t) in kinds.iter_mut().zip(block) {
                    *row = self.decoded[self.codes[t as usize] as usize];
                }
                &kinds[..w]
            }
        } else {
            for (row, &t) in kinds.iter_mut().zip(block) {
                *row = self.input.kinds(&self.bodies[t as usize]);
            }
            one_row_if_shared(&kinds[..w])
        };
        let mut slot = [[NO_SLOT; K]; 8];
        for (s, &t) in slot.iter_mut().zip(block) {
            *s = self.slots[t as usize];
        }
        self.evaluate_at(x, kinds, &slot[..w], e, part, soa);
    }

    /// [`LaneBlock::evaluate`] of the `L::WIDTH` consecutive terms from `t`: their types' codes
    /// and their slots read as runs.
    #[inline(always)]
    fn evaluate_run<L: Lanes, F: Form>(
        &self,
        x: [[L; D]; K],
        t: usize,
        e: &mut [f64],
        part: Option<&mut [f64]>,
        soa: &mut [[[f64; 8]; D]; K],
    ) where
        T: Kernel<D, K, F>,
    {
        let w = L::WIDTH;
        let mut kinds = [[0u32; K]; 8];
        let kinds: &[Kinds<K>] = if self.input.kinds.is_empty() {
            &[]
        } else if let Some(codes) = self.codes.get(t..t + w) {
            if codes[1..].iter().all(|&c| c == codes[0]) {
                kinds[0] = self.decoded[codes[0] as usize];
                &kinds[..1]
            } else {
                for (row, &c) in kinds.iter_mut().zip(codes) {
                    *row = self.decoded[c as usize];
                }
                &kinds[..w]
            }
        } else {
            for (row, b) in kinds.iter_mut().zip(&self.bodies[t..t + w]) {
                *row = self.input.kinds(b);
            }
            one_row_if_shared(&kinds[..w])
        };
        self.evaluate_at(x, kinds, &self.slots[t..t + w], e, part, soa);
    }

    /// The kernel on one block (`kinds`: one row, or one per lane; `slot`: each lane's
    /// partials).
    #[inline(always)]
    fn evaluate_at<L: Lanes, F: Form>(
        &self,
        x: [[L; D]; K],
        kinds: &[Kinds<K>],
        slot: &[[u16; K]],
        e: &mut [f64],
        part: Option<&mut [f64]>,
        soa: &mut [[[f64; 8]; D]; K],
    ) where
        T: Kernel<D, K, F>,
    {
        let w = L::WIDTH;
        let Some(p) = part else {
            self.terms.value_lanes(self.omega, &x, kinds).store(e);
            return;
        };
        let (v, grad) = self.terms.value_gradient_lanes(self.omega, &x, kinds);
        v.store(e);
        for k in 0..K {
            for d in 0..D {
                grad[k][d].store(&mut soa[k][d]);
            }
        }
        let rows = p.as_chunks_mut::<D>().0;
        let slot = &slot[..w];
        let free = self.input.all_free;
        if let Some(s0) = shared_first_body(slot) {
            // The block's first bodies are one body (a row of a pair tile): its w partials
            // are summed in registers, in lane order as below.
            let dst = &mut rows[s0 as usize];
            for (x, lanes) in dst.iter_mut().zip(&soa[0]) {
                *x = lanes[..w].iter().fold(*x, |acc, g| acc + g);
            }
            scatter(rows, slot, soa, 1, free);
        } else {
            scatter(rows, slot, soa, 0, free);
        }
    }

    /// Term `t` of the chunk alone (a chunk's last terms, fewer than a block): its energy into
    /// `e` and its gradient into the partials, as [`LaneBlock::evaluate`] would in one lane.
    #[inline(always)]
    fn evaluate_one<F: Form>(
        &self,
        free: &[[u32; K]],
        t: u16,
        e: &mut f64,
        part: Option<&mut [f64]>,
        soa: &mut [[[f64; 8]; D]; K],
    ) where
        T: Kernel<D, K, F>,
    {
        let t = t as usize;
        let x = self.input.x(&free[t], &self.bodies[t]);
        let kinds = [self.input.kinds(&self.bodies[t])];
        match part {
            Some(p) => {
                let (v, grad) = self
                    .terms
                    .value_gradient_lanes::<f64>(self.omega, &x, &kinds);
                *e = v;
                for k in 0..K {
                    for d in 0..D {
                        soa[k][d][0] = grad[k][d];
                    }
                }
                accumulate(p.as_chunks_mut::<D>().0, &self.slots[t], soa, 0, 0);
            }
            None => *e = self.terms.value_lanes::<f64>(self.omega, &x, &kinds),
        }
    }
}

/// Terms a window of [`windowed_pairs`] holds before it evaluates them.
const WINDOW: usize = 256;

/// The pair terms of a chunk under a cutoff: each block of `WIDTH` terms is loaded once (its
/// partners gathered, nearest images taken), its terms within the cutoff (`|Δ|² < cut2` on the
/// reference sites; about 40 % of a Verlet list with LAMMPS's skin) are compacted, positions
/// and all, into a window, and every `WIDTH` survivors are evaluated from the window — not
/// gathered again. Survivors keep term order and form the same blocks as filtering the whole
/// chunk first would: the same bits. Writes the survivors' energies to `e` in order; returns
/// their number.
#[inline(always)]
fn windowed_pairs<L: Lanes, T, F: Form, const D: usize, const K: usize>(
    block: &LaneBlock<'_, T, D, K>,
    free: &[[u32; K]],
    cut2: f64,
    e: &mut [f64],
    mut part: Option<&mut [f64]>,
) -> usize
where
    T: Kernel<D, K, F>,
{
    let (w, n, input) = (L::WIDTH, free.len(), block.input);
    let mut soa = [[[0.0; 8]; D]; K];
    // The window: survivors' term indices and coordinates, `WINDOW` + a block of slack for
    // the whole-vector stores of the compaction.
    let image = input.cell.as_ref().map(Image::<L>::new);
    let mut near = [0u16; WINDOW + 8];
    let mut xs = [[[0.0; WINDOW + 8]; D]; K];
    let (mut filled, mut done) = (0, 0);
    let r2_of = |x: &[[L; D]; K]| {
        let mut r2 = L::splat(0.0);
        for (&b, &a) in x[K - 1].iter().zip(&x[0]).take(3) {
            let d = b - a;
            r2 = r2 + d * d;
        }
        r2
    };
    let mut t = 0;
    while t < n {
        if t + w <= n {
            let x = load_consecutive::<L, D, K>(
                input,
                image.as_ref(),
                &free[t..t + w],
                &block.bodies[t..t + w],
                &mut soa,
            );
            let within = r2_of(&x).lt_mask(L::splat(cut2));
            for k in 0..K {
                for d in 0..D {
                    x[k][d].compress_store(within, &mut xs[k][d][filled..]);
                }
            }
            // Branch-free, in lane order (term order): every index is written and kept when
            // within (a coin toss the branch predictor would lose).
            for l in 0..w {
                near[filled] = (t + l) as u16;
                filled += ((within >> l) & 1) as usize;
            }
            t += w;
        } else {
            // The chunk's last terms, one lane at a time.
            let x = input.x(&free[t], &block.bodies[t]);
            let r2: f64 = (0..3).map(|a| (x[K - 1][a] - x[0][a]).powi(2)).sum();
            for k in 0..K {
                for d in 0..D {
                    xs[k][d][filled] = x[k][d];
                }
            }
            near[filled] = t as u16;
            filled += usize::from(r2 < cut2);
            t += 1;
        }
        if filled >= WINDOW || t == n {
            let mut j = 0;
            while j + w <= filled {
                let mut x = [[L::splat(0.0); D]; K];
                for k in 0..K {
                    for d in 0..D {
                        x[k][d] = L::load(&xs[k][d][j..]);
                    }
                }
                block.evaluate(
                    x,
                    &near[j..j + w],
                    &mut e[done + j..],
                    part.as_deref_mut(),
                    &mut soa,
                );
                j += w;
            }
            if t == n {
                for (i, &tt) in near[j..filled].iter().enumerate() {
                    block.evaluate_one(
                        free,
                        tt,
                        &mut e[done + j + i],
                        part.as_deref_mut(),
                        &mut soa,
                    );
                }
                j = filled;
            }
            // Carry the survivors short of a block to the window's start.
            near.copy_within(j..filled, 0);
            for xk in &mut xs {
                for xd in xk.iter_mut() {
                    xd.copy_within(j..filled, 0);
                }
            }
            done += j;
            filled -= j;
        }
    }
    done
}

/// [`load_lanes`] of `L::WIDTH` consecutive terms (`free` and `bodies` their rows): when
/// every body is free, each body's coordinates come from one [`Lanes::gather_bodies`] (the
/// indices read straight from the list) or one broadcast when the block shares it — for pairs
/// of point bodies both at once, by [`Lanes::load_pairs3`].
#[inline(always)]
fn load_consecutive<L: Lanes, const D: usize, const K: usize>(
    input: &Inputs<'_, D>,
    image: Option<&Image<L>>,
    free: &[[u32; K]],
    bodies: &[[u32; K]],
    soa: &mut [[[f64; 8]; D]; K],
) -> [[L; D]; K] {
    let mut x = [[L::splat(0.0); D]; K];
    let all_free = input.all_free || free.iter().all(|f| f.iter().all(|&b| b != PINNED));
    if all_free && K == 2 && D == 3 {
        // Pairs of point bodies (every pair form of the condensed phase): both loaded at once.
        let xy = L::load_pairs3::<K>(input.q, free);
        for (xk, yk) in x.iter_mut().zip(&xy) {
            for (xd, &yd) in xk.iter_mut().zip(yk) {
                *xd = yd;
            }
        }
    } else if all_free {
        for (k, xk) in x.iter_mut().enumerate() {
            let first = free[0][k];
            if free.iter().all(|f| f[k] == first) {
                let o = first as usize * D;
                for (xd, &v) in xk.iter_mut().zip(&input.q[o..o + D]) {
                    *xd = L::splat(v);
                }
            } else {
                *xk = L::gather_bodies::<D, K>(input.q, free, k);
            }
        }
    } else {
        for (l, (f, b)) in free.iter().zip(bodies).enumerate() {
            input.x_into(f, b, l, soa);
        }
        for k in 0..K {
            for d in 0..D {
                x[k][d] = L::load(&soa[k][d]);
            }
        }
    }
    if let Some(image) = image {
        image.apply(&mut x);
    }
    x
}

/// The positions of the terms `block` (`L::WIDTH` of them) of a chunk as lanes, nearest
/// images in a periodic box: gathered when every body is free, else lane by lane through `soa`.
#[inline(always)]
fn load_lanes<L: Lanes, const D: usize, const K: usize>(
    input: &Inputs<'_, D>,
    free: &[[u32; K]],
    bodies: &[[u32; K]],
    block: &[u16],
    soa: &mut [[[f64; 8]; D]; K],
) -> [[L; D]; K] {
    // Loops, not `array::from_fn`: a closure may stay out of line, and the intrinsics inside
    // it would then be calls compiled without the instruction set.
    let mut x = [[L::splat(0.0); D]; K];
    if input.all_free
        || block
            .iter()
            .all(|&t| free[t as usize].iter().all(|&f| f != PINNED))
    {
        let mut rows = [[0usize; 8]; K];
        for (l, &t) in block.iter().enumerate() {
            for k in 0..K {
                rows[k][l] = free[t as usize][k] as usize * D;
            }
        }
        for (xk, rows) in x.iter_mut().zip(&rows) {
            let rows = &rows[..block.len()];
            if rows.iter().all(|&o| o == rows[0]) {
                // One body in every lane (a row of a neighbour list or of a pair tile): a
                // broadcast, not a gather — the same values.
                for (xd, &v) in xk.iter_mut().zip(&input.q[rows[0]..rows[0] + D]) {
                    *xd = L::splat(v);
                }
            } else {
                *xk = L::gather::<D>(input.q, rows);
            }
        }
    } else {
        for (l, &t) in block.iter().enumerate() {
            input.x_into(&free[t as usize], &bodies[t as usize], l, soa);
        }
        for k in 0..K {
            for d in 0..D {
                x[k][d] = L::load(&soa[k][d]);
            }
        }
    }
    if let Some(cell) = &input.cell {
        minimum_image::<L, D, K>(&mut x, cell);
    }
    x
}

/// The slot of a block's first bodies when it is one body for every term and no other body
/// of the block has it. Then adding its partials first, lane by lane, and the other bodies'
/// after adds into every slot in the order of [`accumulate`] term after term: the same bits.
#[inline(always)]
fn shared_first_body<const K: usize>(block: &[[u16; K]]) -> Option<u16> {
    let s0 = block.first()?[0];
    let shared = s0 != NO_SLOT
        && block
            .iter()
            .all(|s| s[0] == s0 && s[1..].iter().all(|&x| x != s0));
    shared.then_some(s0)
}

/// `kinds` as one row when every lane's is the same (a kernel then reads each parameter once).
#[inline(always)]
fn one_row_if_shared<const K: usize>(kinds: &[Kinds<K>]) -> &[Kinds<K>] {
    if kinds[1..].iter().all(|k| *k == kinds[0]) {
        &kinds[..1]
    } else {
        kinds
    }
}

/// [`accumulate`] for every lane of a block (`slot`: each lane's slots), in lane order;
/// `all_free`: no slot is [`NO_SLOT`] (only pinned bodies have none), none is looked at.
#[inline(always)]
fn scatter<const D: usize, const K: usize>(
    rows: &mut [[f64; D]],
    slot: &[[u16; K]],
    soa: &[[[f64; 8]; D]; K],
    from: usize,
    all_free: bool,
) {
    if all_free {
        for (l, slot) in slot.iter().enumerate() {
            for k in from..K {
                let dst = &mut rows[slot[k] as usize];
                for d in 0..D {
                    dst[d] += soa[k][d][l];
                }
            }
        }
    } else {
        for (l, slot) in slot.iter().enumerate() {
            accumulate(rows, slot, soa, l, from);
        }
    }
}

/// `part[slot[k]] += soa[k][·][lane]` for each free body `k ≥ from` of a term.
#[inline(always)]
fn accumulate<const D: usize, const K: usize>(
    rows: &mut [[f64; D]],
    slot: &[u16; K],
    soa: &[[[f64; 8]; D]; K],
    lane: usize,
    from: usize,
) {
    for k in from..K {
        if slot[k] != NO_SLOT {
            let dst = &mut rows[slot[k] as usize];
            for d in 0..D {
                dst[d] += soa[k][d][lane];
            }
        }
    }
}

/// `o += m` for a `D × D` block stored row-major in `o`.
#[inline]
fn add_block<const D: usize>(o: &mut [f64], m: &[[f64; D]; D]) {
    for r in 0..D {
        for c in 0..D {
            o[r * D + c] += m[r][c];
        }
    }
}

/// `T(x; a)_ai = Σ_bj,ck t[a][i][b][j][c][k] a_bj a_ck` from a kept tensor.
#[inline]
fn contract<const D: usize, const K: usize>(t: &LocalThird<D, K>, a: &Local<D, K>) -> Local<D, K> {
    core::array::from_fn(|ka| {
        core::array::from_fn(|i| {
            let mut s = 0.0;
            for (kb, ab) in a.iter().enumerate() {
                for (j, &abj) in ab.iter().enumerate() {
                    let row = &t[ka][i][kb][j];
                    let mut r = 0.0;
                    for (kc, ac) in a.iter().enumerate() {
                        for (k, &ack) in ac.iter().enumerate() {
                            r += row[kc][k] * ack;
                        }
                    }
                    s += r * abj;
                }
            }
            s
        })
    })
}

/// `f(first, chunk)` over the fixed chunks of `out` (`first`: the index of the chunk's first
/// element), on rayon's pool when `parallel`, else once over the whole. The callback is a trait
/// object: rayon's machinery is instantiated once per output type, not once per kernel and
/// system (it was a quarter of the code of a program using three systems).
fn chunked1<A: Send>(parallel: bool, a: &mut [A], f: &(dyn Fn(usize, &mut [A]) + Sync)) {
    if parallel && a.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, a)| f(c * CHUNK, a));
    } else {
        f(0, a);
    }
}

/// [`chunked1`] over three outputs of the same length.
#[allow(clippy::type_complexity)]
fn chunked3<A: Send, B: Send, C: Send>(
    parallel: bool,
    a: &mut [A],
    b: &mut [B],
    c: &mut [C],
    f: &(dyn Fn(usize, &mut [A], &mut [B], &mut [C]) + Sync),
) {
    if parallel && a.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(c.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(k, ((a, b), c))| f(k * CHUNK, a, b, c));
    } else {
        f(0, a, b, c);
    }
}

/// `out[t] = f(free[t], bodies[t])` for every term, in parallel chunks when asked.
#[inline]
fn map1<O: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    f: impl Fn(&[u32; K], &[u32; K]) -> O + Sync,
) {
    debug_assert_eq!(out.len(), list.len());
    chunked1(parallel, out, &|first, out| {
        let terms = first..first + out.len();
        for ((o, fr), bo) in out
            .iter_mut()
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies[terms])
        {
            *o = f(fr, bo);
        }
    });
}

/// [`map1`] for kernels returning three outputs (value, gradient, Hessian).
#[inline]
fn map3<A: Send, B: Send, C: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    a: &mut [A],
    b: &mut [B],
    c: &mut [C],
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C) + Sync,
) {
    debug_assert!(a.len() == list.len() && b.len() == list.len() && c.len() == list.len());
    chunked3(parallel, a, b, c, &|first, a, b, c| {
        let terms = first..first + a.len();
        for ((((a, b), c), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies[terms])
        {
            (*a, *b, *c) = f(fr, bo);
        }
    });
}

/// [`map1`] for kernels returning four outputs (value, gradient, Hessian, third tensor).
#[inline]
#[allow(clippy::type_complexity)]
fn map4<A: Send, B: Send, C: Send, E: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    (a, b, c, e): (&mut [A], &mut [B], &mut [C], &mut [E]),
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C, E) + Sync,
) {
    debug_assert!(a.len() == list.len() && e.len() == list.len());
    let g = |first: usize, a: &mut [A], b: &mut [B], c: &mut [C], e: &mut [E]| {
        let terms = first..first + a.len();
        for (((((a, b), c), e), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(e.iter_mut())
            .zip(&list.free[terms.clone()])
            .zip(&list.bodies[terms])
        {
            (*a, *b, *c, *e) = f(fr, bo);
        }
    };
    if parallel && a.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(c.par_chunks_mut(CHUNK))
            .zip(e.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(k, (((a, b), c), e))| g(k * CHUNK, a, b, c, e));
    } else {
        g(0, a, b, c, e);
    }
}

/// `out[t] = f(free[t], kept[t])` for every term (the third contraction from kept tensors).
#[inline]
fn map_kept<O: Send, X: Sync, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    kept: &[X],
    f: impl Fn(&[u32; K], &X) -> O + Sync,
) {
    debug_assert!(out.len() == list.len() && kept.len() == list.len());
    chunked1(parallel, out, &|first, out| {
        let terms = first..first + out.len();
        for ((o, fr), x) in out
            .iter_mut()
            .zip(&list.free[terms.clone()])
            .zip(&kept[terms])
        {
            *o = f(fr, x);
        }
    });
}

/// The forms of a system, in table order.
pub(crate) type FormList<T, const D: usize> = [Box<dyn FormOps<T, D>>];

/// Phase B for a vector (gradient or third contraction) over the forms that `include` selects,
/// each form's contributions in turn: per free body, the first form's, then the next one's, ...
/// (`out` has the free coordinates; zero when no form contributes).
pub(crate) fn sum_vector<T, const D: usize>(
    forms: &FormList<T, D>,
    include: impl Fn(&dyn FormOps<T, D>) -> bool + Sync,
    free: usize,
    parallel: bool,
    out: &mut [f64],
) {
    let included = || {
        forms
            .iter()
            .map(|f| &**f)
            .filter(|&f| f.len() > 0 && include(f))
    };
    if included().next().is_none() {
        out.fill(0.0);
    } else if parallel && free > PIECE {
        out.par_chunks_mut(PIECE * D)
            .enumerate()
            .for_each(|(c, piece)| {
                for (i, f) in included().enumerate() {
                    f.gather_vector(c * PIECE, piece, i == 0);
                }
            });
    } else {
        for (i, f) in included().enumerate() {
            f.scatter_vector(out, i == 0);
        }
    }
}

/// Phase B for the Hessian `part` into `values` (the stored blocks of its layout, `blocks` of
/// them), over the forms that enter it.
pub(crate) fn sum_hessian<T, const D: usize>(
    forms: &FormList<T, D>,
    part: HessianPart,
    blocks: usize,
    parallel: bool,
    values: &mut [f64],
) {
    let included = || {
        forms
            .iter()
            .map(|f| &**f)
            .filter(|&f| f.len() > 0 && f.enters(part))
    };
    if parallel && blocks > CHUNK {
        values
            .par_chunks_mut(CHUNK * D * D)
            .enumerate()
            .for_each(|(c, chunk)| {
                chunk.fill(0.0);
                for f in included() {
                    f.gather_hessian(part, c * CHUNK, chunk);
                }
            });
    } else {
        values.fill(0.0);
        for f in included() {
            f.scatter_hessian(part, values);
        }
    }
}
