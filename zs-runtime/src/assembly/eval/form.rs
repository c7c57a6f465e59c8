//! The term engine: one form's terms from a list ([`TermPlan`]), its buffers, and its part of
//! every evaluation ([`FormState`], a [`FormOps`]).

use core::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use super::lanes::{Lanes_, lane_chunk_pass, lane_pass};
use super::maps::{add_block, contract, map_kept, map1, map3, map4};
use super::sums::{add_partials_by_piece, add_partials_first, chunk_sum};
use super::{FormOps, Inputs, Outputs, STACK_ROWS, Want, lane_chunk};
use crate::assembly::forms::{Form, FormInfo, Over, ThirdForm};
use crate::assembly::jacobian::SparseJacobian;
use crate::assembly::plan::{
    Bodies, Csr, HessianGather, NOWHERE, PINNED, PartialPlan, PlanScratch, TermList,
};
use crate::assembly::terms::{Kernel, Local, LocalHessian, LocalThird};
use crate::assembly::topology::{Topology, TopologyError};
use crate::model::HessianPart;
use crate::sparse::BlockLayout;

/// What a form's passes read of its terms: the term list, the gradient gather of the
/// per-term passes, the partial plan of the SIMD pass. Fixed at set-up for a form over a fixed
/// list, and then shared by every evaluation state of the model; a pair form under a cutoff
/// has its own, remade from each neighbour list — its partial plan lazily, before the first
/// SIMD pass (`partials_for`: for that many free bodies). The gradient gather is made once, by
/// the first per-term pass that reads it (a run of the SIMD passes alone never holds it: it is
/// as large as the list), and then shared like the rest.
#[derive(Debug, Clone)]
pub(crate) struct TermPlan<const K: usize> {
    pub list: TermList<K>,
    /// Free bodies the gathers are for.
    free: usize,
    grad: OnceLock<Csr>,
    partials: PartialPlan<K>,
    partials_for: Option<usize>,
}

/// One form's plan and buffers: its terms, gather lists, and each term's local outputs.
pub(crate) struct FormState<F, const D: usize, const K: usize> {
    info: FormInfo,
    plan: Arc<TermPlan<K>>,
    /// Hessian gathers of the full and the stiff Hessian (indexed by [`HessianPart::index`]), when the
    /// form enters them: shared like the plan, made anew when a pattern follows a neighbour
    /// list.
    gathers: [Option<Arc<HessianGather<K>>>; 2],
    /// Each term's gradient (or a Hessian-vector or third-derivative contraction) and energy,
    /// of the per-term passes: sized by the first (or by [`FormOps::reserve_hessians`] at
    /// set-up), and empty while only the SIMD passes run, which leave their outputs in `part`
    /// and `sums` instead.
    g: Vec<Local<D, K>>,
    h: Vec<LocalHessian<D, K>>,
    e: Vec<f64>,
    /// Third-derivative tensors kept by [`Want::GradientHessianThird`] ([`ThirdForm::Tensor`]).
    t: Vec<LocalThird<D, K>>,
    /// The gradient partials of the SIMD pass ([`PartialPlan`]): every chunk's when phase B
    /// follows phase A, one chunk's room when each chunk's partials are added right after it
    /// (the gradient on one thread), sized by the first pass that needs them and never shrunk.
    part: Vec<f64>,
    /// Per chunk of [`lane_chunk`] terms, its energy ([`chunk_sum`]) when a SIMD pass left the
    /// energies ([`Outputs::Chunks`]): [`FormOps::add_energy`] then adds them in chunk order,
    /// the same bits as summing the chunks there.
    sums: Vec<f64>,
    /// Scratch of the plans' rebuilds (neighbour lists), kept between them, and the last
    /// list's gradient gather, whose memory the next one reuses.
    scratch: PlanScratch,
    spare_grad: Csr,
    /// Where the last vector pass left its vector, and the last energy pass its energies.
    vector: Outputs,
    energy: Outputs,
    /// How many times the terms changed ([`FormState::terms_changed`]): the stamp of the
    /// chunks [`super::Interleave`] ordered.
    generation: u64,
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
        assert_eq!(F::ARITY, K, "form {} has arity {}", F::NAME, F::ARITY);
        let list = TermList::<K>::new(F::OVER, info.present, topology, bodies)?;
        let plan = TermPlan {
            free: bodies.free,
            grad: OnceLock::new(),
            partials: PartialPlan::new(&list, bodies.free, lane_chunk::<F>()),
            partials_for: None,
            list,
        };
        Ok(Self::with_plan(info, Arc::new(plan)))
    }

    /// A state over `plan` with fresh buffers (the per-term ones empty until a pass needs them).
    fn with_plan(info: FormInfo, plan: Arc<TermPlan<K>>) -> Self {
        Self {
            info,
            part: Vec::new(),
            plan,
            gathers: [None, None],
            g: Vec::new(),
            h: Vec::new(),
            e: Vec::new(),
            t: Vec::new(),
            sums: Vec::new(),
            scratch: PlanScratch::default(),
            spare_grad: Csr::default(),
            vector: Outputs::Terms,
            energy: Outputs::Terms,
            generation: 0,
            form: PhantomData,
        }
    }

    /// Its plan, shared, and its Hessian gathers; buffers of its own, as large as this one's.
    pub fn replica(&self) -> Self {
        let mut r = Self::with_plan(self.info, self.plan.clone());
        r.gathers.clone_from(&self.gathers);
        r.g.resize(self.g.len(), [[0.0; D]; K]);
        r.e.resize(self.e.len(), 0.0);
        r.h.resize(self.h.len(), [[[[0.0; D]; D]; K]; K]);
        r.t.resize(self.t.len(), [[[[[[0.0; D]; K]; D]; K]; D]; K]);
        r
    }

    /// An empty state with the same description (a pair form's before its first list).
    pub fn empty(&self) -> Self {
        let plan = TermPlan {
            list: TermList::empty(),
            free: 0,
            grad: OnceLock::new(),
            partials: PartialPlan::new(&TermList::empty(), 0, lane_chunk::<F>()),
            partials_for: None,
        };
        Self::with_plan(self.info, Arc::new(plan))
    }

    /// The terms.
    pub fn list(&self) -> &TermList<K> {
        &self.plan.list
    }

    /// Its term list was just changed (a neighbour list's pairs, over `free` free bodies): the
    /// list's gathers follow before the first pass that reads them, its buffers now; its
    /// Hessian gathers are dropped until the system attaches them to the pattern it makes from
    /// the new list.
    fn terms_changed(&mut self, free: usize) {
        self.generation += 1;
        let plan = Arc::make_mut(&mut self.plan);
        plan.free = free;
        if let Some(grad) = plan.grad.take() {
            self.spare_grad = grad;
        }
        plan.partials_for = Some(free);
        let n = plan.list.len();
        if !self.g.is_empty() {
            self.g.resize(n, [[0.0; D]; K]);
        }
        if !self.e.is_empty() {
            self.e.resize(n, 0.0);
        }
        if !self.h.is_empty() {
            self.h.resize(n, [[[[0.0; D]; D]; K]; K]);
        }
        if !self.t.is_empty() {
            self.t.resize(n, [[[[[[0.0; D]; K]; D]; K]; D]; K]);
        }
        self.gathers = [None, None];
        self.vector = Outputs::Terms;
        self.energy = Outputs::Terms;
    }

    /// Phase A for `want` ([`FormOps::evaluate`]); `WINDOWED`: the terms are a neighbour list's
    /// pairs under a cutoff, which the SIMD pass filters by the cutoff first (the pair
    /// engine's per-term pass; made only there). With `into` (the gradient on one thread,
    /// [`FormOps::gradient_into`]), phase B goes with it: each chunk's partials are added into
    /// `into` as the chunk is done.
    pub fn evaluate_with<T, const WINDOWED: bool>(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        want: Want,
        into: Option<&mut [f64]>,
    ) where
        T: Kernel<D, K, F>,
    {
        // The SIMD pass takes the energy and the gradient (also beside the stiff Hessian of a
        // form that has no stiff part); the scalar passes everything else.
        let lanes = match want {
            Want::Energy | Want::Gradient => true,
            Want::GradientStiffHessian => !self.info.stiff,
            _ => false,
        };
        self.ready(lanes, !lanes);
        assert!(
            into.is_none() || (want == Want::Gradient && !input.parallel),
            "phase B with phase A: the gradient on one thread"
        );
        if lanes {
            self.vector = match (want, &into) {
                (Want::Energy, _) => Outputs::Terms,
                (_, Some(_)) => Outputs::Added,
                _ => Outputs::Chunks,
            };
        } else {
            self.vector = Outputs::Terms;
        }
        if want.writes_energy() {
            self.energy = if lanes {
                Outputs::Chunks
            } else {
                Outputs::Terms
            };
        }
        if !lanes {
            self.size_per_term();
        }
        let (w, par, list) = (input.omega, input.parallel, &self.plan.list);
        let x = |fr: &[u32; K], bo: &[u32; K]| input.x(fr, bo);
        if lanes {
            let at = Lanes_ {
                list,
                plan: &self.plan.partials,
                input,
                terms,
            };
            let part = (want != Want::Energy).then(|| {
                // With `into`, one chunk's partials at a time: a long list's every chunk's
                // would be tens of MB (24 bytes a partial) written and never read again.
                let partials = &self.plan.partials;
                let room = D * if into.is_some() {
                    partials.widest_chunk()
                } else {
                    partials.len()
                };
                if self.part.len() < room {
                    crate::assembly::plan::resize_with_room(&mut self.part, room, 0.0);
                }
                &mut self.part[..]
            });
            lane_pass::<T, F, D, K, WINDOWED>(par, &at, &mut self.sums, part, into);
            return;
        }
        match want {
            Want::Energy | Want::Gradient => unreachable!("the SIMD pass"),
            // Only a form with a stiff part comes here (see `lanes`).
            Want::GradientStiffHessian => map3(
                par,
                list,
                &mut self.e,
                &mut self.g,
                &mut self.h,
                |fr, bo| terms.value_gradient_stiff_hessian(w, &x(fr, bo), &input.kinds(bo)),
            ),
            Want::GradientHessian => map3(
                par,
                list,
                &mut self.e,
                &mut self.g,
                &mut self.h,
                |fr, bo| terms.value_gradient_hessian(w, &x(fr, bo), &input.kinds(bo)),
            ),
            Want::GradientHessianThird if self.info.third == ThirdForm::Tensor => map4(
                par,
                list,
                (&mut self.e, &mut self.g, &mut self.h, &mut self.t),
                |fr, bo| terms.value_gradient_hessian_third(w, &x(fr, bo), &input.kinds(bo)),
            ),
            Want::GradientHessianThird => map3(
                par,
                list,
                &mut self.e,
                &mut self.g,
                &mut self.h,
                |fr, bo| terms.value_gradient_hessian(w, &x(fr, bo), &input.kinds(bo)),
            ),
            Want::Third { kept } => match self.info.third {
                ThirdForm::Zero => {}
                ThirdForm::Tensor if kept => map_kept(par, list, &mut self.g, &self.t, |fr, t| {
                    contract(t, &input.dir(fr))
                }),
                _ => map1(par, list, &mut self.g, |fr, bo| {
                    terms.third_contraction(w, &x(fr, bo), &input.dir(fr), &input.kinds(bo))
                }),
            },
            Want::HessianVector => map1(par, list, &mut self.g, |fr, bo| {
                terms.hessian_vector(w, &x(fr, bo), &input.dir(fr), &input.kinds(bo))
            }),
        }
    }

    /// Ready for the gradient on one thread chunk by chunk ([`FormOps::gradient_chunks`]):
    /// the plan made, one chunk's room for the partials; the number of chunks and the terms of
    /// the longest.
    pub fn gradient_chunks_with(&mut self) -> (usize, usize) {
        self.ready(true, false);
        self.vector = Outputs::Added;
        self.energy = Outputs::Chunks;
        let partials = &self.plan.partials;
        let room = D * partials.widest_chunk();
        if self.part.len() < room {
            crate::assembly::plan::resize_with_room(&mut self.part, room, 0.0);
        }
        let (terms, chunk) = (self.plan.list.len(), lane_chunk::<F>());
        self.sums.resize(terms.div_ceil(chunk), 0.0);
        (self.sums.len(), chunk.min(terms))
    }

    /// The free bodies chunk `c`'s partials land on ([`FormOps::chunk_bodies`]).
    pub fn chunk_bodies(&self, c: usize) -> &[u32] {
        self.plan.partials.chunk_bodies(c)
    }

    /// Chunk `c` of the gradient on one thread ([`FormOps::gradient_chunk`]): the chunk's
    /// SIMD pass into one chunk's room, its partials added into `out` (set, for the bodies at
    /// the positions `fresh`) — what [`FormState::evaluate_with`] does for the chunk with
    /// `into`, so the same bits.
    pub fn gradient_chunk_with<T, const WINDOWED: bool>(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        (c, out, fresh, scratch): (usize, &mut [f64], &[u32], &mut [f64]),
    ) where
        T: Kernel<D, K, F>,
    {
        let plan = &self.plan.partials;
        let bodies = plan.chunk_bodies(c);
        let part = &mut self.part[..bodies.len() * D];
        let at = Lanes_ {
            list: &self.plan.list,
            plan,
            input,
            terms,
        };
        let per = lane_chunk::<F>();
        let len = per.min(self.plan.list.len() - c * per);
        self.sums[c] =
            lane_chunk_pass::<T, F, D, K, WINDOWED>(&at, c, Some(&mut *part), &mut scratch[..len]);
        add_partials_first::<D>(bodies, part, out, fresh);
    }

    /// The stamp of its chunks ([`FormOps::chunk_stamp`]).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn enters_part(&self, part: HessianPart) -> bool {
        match part {
            HessianPart::Full => self.info.present,
            HessianPart::Stiff => self.info.stiff,
        }
    }

    fn gather_of(&self, part: HessianPart) -> Option<&HessianGather<K>> {
        self.gathers[part.index()].as_deref()
    }

    /// The per-term buffers sized for the list (a no-op but the first time after set-up or
    /// after a list grew; [`FormOps::reserve_hessians`] does it at set-up).
    fn size_per_term(&mut self) {
        let n = self.plan.list.len();
        self.g.resize(n, [[0.0; D]; K]);
        self.e.resize(n, 0.0);
    }

    /// The plans a pass of `want` reads, brought up to date.
    fn ready(&mut self, lanes: bool, per_term_vector: bool) {
        if let Some(free) = self.plan.partials_for.filter(|_| lanes) {
            let plan = Arc::make_mut(&mut self.plan);
            plan.partials
                .rebuild(&plan.list, free, lane_chunk::<F>(), &mut self.scratch);
            plan.partials_for = None;
        }
        if per_term_vector {
            let plan = &*self.plan;
            let (spare, gather) = (&mut self.spare_grad, &mut self.scratch.gather);
            plan.grad.get_or_init(|| {
                let mut csr = core::mem::take(spare);
                plan.list.gradient_gather_into(plan.free, &mut csr, gather);
                csr
            });
        }
    }
}

impl<F: Form, const D: usize> FormState<F, D, 2> {
    /// Where a neighbour-list build writes its pairs ([`TermList::pair_buffer`]).
    pub fn pair_buffer(&mut self, bodies: &Bodies) -> &mut Vec<[u32; 2]> {
        Arc::make_mut(&mut self.plan).list.pair_buffer(bodies)
    }

    /// The pairs of a neighbour list, written into [`FormState::pair_buffer`], become the
    /// terms ([`FormState::terms_changed`]). `kinds` are the bodies' types (empty: untyped).
    pub fn set_terms(&mut self, bodies: &Bodies, kinds: &[u32]) {
        let typed = self.info.typed;
        let plan = Arc::make_mut(&mut self.plan);
        plan.list.pairs_written(bodies);
        plan.list.set_codes(if typed { kinds } else { &[] });
        self.terms_changed(bodies.free);
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
        self.plan.list.len()
    }
    fn enters(&self, part: HessianPart) -> bool {
        self.enters_part(part)
    }
    fn couplings(&self, out: &mut Vec<(usize, usize)>) {
        self.plan.list.couplings(out);
    }
    fn attach(&mut self, part: HessianPart, layout: &BlockLayout, to_user: Option<&[u32]>) {
        let gather = self
            .enters_part(part)
            .then(|| Arc::new(HessianGather::new(&self.plan.list, layout, to_user)));
        self.gathers[part.index()] = gather;
    }
    fn reserve_hessians(&mut self, part: HessianPart) {
        if !self.enters_part(part) {
            return;
        }
        let n = self.plan.list.len();
        self.size_per_term();
        self.h.resize(n, [[[[0.0; D]; D]; K]; K]);
        if part == HessianPart::Full && self.info.third == ThirdForm::Tensor {
            self.t.resize(n, [[[[[[0.0; D]; K]; D]; K]; D]; K]);
        }
    }
    fn has_hessians(&self, part: HessianPart) -> bool {
        let n = self.plan.list.len();
        !self.enters_part(part)
            || (self.h.len() == n
                && (part == HessianPart::Stiff
                    || self.info.third != ThirdForm::Tensor
                    || self.t.len() == n))
    }
    fn replica(&self) -> Box<dyn FormOps<T, D>> {
        Box::new(FormState::replica(self))
    }

    fn evaluate(&mut self, terms: &T, input: &Inputs<'_, D>, want: Want) {
        self.evaluate_with::<T, false>(terms, input, want, None);
    }

    fn gradient_into(&mut self, terms: &T, input: &Inputs<'_, D>, out: &mut [f64], first: bool) {
        if first {
            out.fill(0.0);
        }
        self.evaluate_with::<T, false>(terms, input, Want::Gradient, Some(out));
    }

    fn gradient_chunks(&mut self, _: &Inputs<'_, D>) -> Option<(usize, usize)> {
        Some(self.gradient_chunks_with())
    }
    fn chunk_stamp(&self) -> u64 {
        self.generation
    }
    fn chunk_bodies(&self, c: usize) -> &[u32] {
        FormState::chunk_bodies(self, c)
    }
    fn gradient_chunk(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        c: usize,
        (out, fresh, scratch): (&mut [f64], &[u32], &mut [f64]),
    ) {
        self.gradient_chunk_with::<T, false>(terms, input, (c, out, fresh, scratch));
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
        let list = &self.plan.list;
        for (fr, bo) in list.free.iter().zip(list.bodies()) {
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
        if self.energy == Outputs::Chunks {
            for &s in &self.sums {
                *acc += s;
            }
        } else {
            for chunk in self.e.chunks(lane_chunk::<F>()) {
                *acc += chunk_sum(chunk);
            }
        }
    }

    fn gather_vector(&self, first_body: usize, out: &mut [f64], first: bool) {
        assert!(
            self.vector != Outputs::Added,
            "phase B was made with phase A"
        );
        if self.vector == Outputs::Chunks {
            add_partials_by_piece::<D, K>(&self.plan.partials, &self.part, first_body, out, first);
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
            let grad = self
                .plan
                .grad
                .get()
                .expect("a per-term pass made the gather");
            for &src in grad.row(b) {
                let v = &self.g[src as usize / K][src as usize % K];
                for d in 0..D {
                    acc[d] += v[d];
                }
            }
            o.copy_from_slice(&acc);
        }
    }

    fn gathers_by_piece(&self) -> bool {
        self.vector != Outputs::Chunks || self.plan.partials.pieces
    }

    fn scatter_vector(&self, out: &mut [f64], first: bool) {
        if self.vector == Outputs::Chunks {
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
        for (fr, g) in self.plan.list.free.iter().zip(&self.g) {
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
        for fr in &self.plan.list.free {
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
        let list = &self.plan.list;
        let x = input.x(&list.free[t], &list.bodies()[t]);
        let m = g.len();
        let mut rows = [[[0.0; D]; K]; STACK_ROWS];
        let mut big = Vec::new();
        let rows: &mut [Local<D, K>] = if m <= STACK_ROWS {
            &mut rows[..m]
        } else {
            big.resize(m, [[0.0; D]; K]);
            &mut big
        };
        terms.constraints(&x, &input.kinds(&list.bodies()[t]), g, rows);
        if let Some((jac, first)) = jac {
            for (c, row) in rows.iter().enumerate() {
                for (s, body) in row.iter().enumerate() {
                    jac.block_mut(first + c, s).copy_from_slice(body);
                }
            }
        }
    }
}
