//! The pair engine: a pair form under a cutoff ([`CutoffPairs`]). Its terms are the
//! neighbour list's pairs (the half list: each pair once); at each build it chooses, in one
//! function ([`choose`]) from stated facts, how its energy and gradient go:
//!
//! | [`PairPass`] | what | when ([`PairStrategy::Auto`]) |
//! |---|---|---|
//! | `HalfRows` | rows of the half list ([`Rows::build_half`]): each pair once, the partners' gradients into partials | long rows (≥ [`LONG_ROWS`] pairs per body) of at most [`MOST_TYPES`] types |
//! | `FullRows` | rows of the full list ([`Rows::build_full`]): each pair from both ends, nothing scattered | otherwise, where most of the list is within the cutoff and the SIMD has 8 lanes |
//! | `PerTerm` | the term engine's SIMD pass over the half list: cutoff filter, compaction, scatter | otherwise |
//!
//! Rows need every body free and a point in three dimensions (a pair of them is 6
//! coordinates); the Hessian, third-contraction and Hessian-vector passes always go term by
//! term over the half list. Every pass gives the same bits on every instruction set and thread
//! count; the passes agree with each other to rounding. The choice reads the machine's widest
//! lanes, not the lanes a system runs: every instruction set of one machine gives the same bits.

mod counting;
mod pass;
mod rows;

use super::super::forms::{Form, FormInfo};
use super::super::jacobian::SparseJacobian;
use super::super::plan::Bodies;
use super::super::terms::Kernel;
use super::{FormOps, FormState, Inputs, NewList, Outputs, Want};
use crate::model::HessianPart;
use crate::sparse::BlockLayout;

pub(crate) use rows::Sites;
use rows::{BLOCK, MOST_TYPES, Rows};

/// How a pair form under a cutoff evaluates its energy and gradient (the Hessian passes always
/// go term by term). A public value, as faer's choices of algorithm are: `Auto` decides at each
/// neighbour-list build from the list and the machine; the others force a pass where it can run
/// (rows need every body free and a point in three dimensions; the half list's rows at most
/// eight types), the per-term pass otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PairStrategy {
    /// Rows of the half list where rows are long; else full rows where most of the list is
    /// within the cutoff and the machine has 8-lane SIMD; else the per-term pass.
    #[default]
    Auto,
    /// Rows of the full list: each pair evaluated from both ends, no scatter (LAMMPS's
    /// `newton off`).
    FullRows,
    /// Rows of the half list: each pair once, in its first body's row (LAMMPS's `newton on`).
    HalfRows,
    /// The half list term by term through the SIMD pass: cutoff filter, compaction, scatter.
    PerTerm,
}

/// The pass a build chose ([`choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum PairPass {
    FullRows,
    HalfRows,
    #[default]
    PerTerm,
}

/// Rows of the half list pay when they are long: at least this many pairs per body (four
/// blocks). Shorter rows would be mostly padding, and the rows' build at every neighbour-list
/// build (every few steps for a short skin) would cost more than they save.
pub(crate) const LONG_ROWS: usize = 4 * BLOCK;

/// What [`choose`] decides from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PairFacts {
    /// The machine's widest SIMD lanes.
    pub lanes: usize,
    /// Every body is free and a point in three dimensions (`D = 3`, pairs).
    pub free_points: bool,
    /// Pairs of the list per free body.
    pub pairs_per_body: f64,
    /// Body types the pair form reads (0: untyped).
    pub types: usize,
    /// `(rc / (rc + skin))³`: the share of a uniform liquid's list within the cutoff.
    pub within: f64,
}

/// The pass of `strategy` given `facts` (see the [module docs](self)).
pub(crate) fn choose(strategy: PairStrategy, facts: PairFacts) -> PairPass {
    // Full rows evaluate every pair twice, to save the half list's scatter: on an AVX-512
    // machine (AMD EPYC, 2026-11-29) the half list's rows were faster even for a kernel of
    // Lennard-Jones terms (the TraPPE butane), and twice as fast for the Ewald sum's (SPC/E
    // water: `erfc` and `exp` per pair). Full rows remain where rows are short or of many
    // types, most of the list is within the cutoff and 8 lanes make the kernel cheap.
    let full = facts.lanes >= 8 && facts.within >= 0.5;
    let half = facts.types <= MOST_TYPES;
    let long = facts.pairs_per_body >= LONG_ROWS as f64;
    match strategy {
        _ if !facts.free_points => PairPass::PerTerm,
        PairStrategy::Auto if half && long => PairPass::HalfRows,
        PairStrategy::Auto if full => PairPass::FullRows,
        PairStrategy::FullRows => PairPass::FullRows,
        PairStrategy::HalfRows if half => PairPass::HalfRows,
        _ => PairPass::PerTerm,
    }
}

/// A pair form under a cutoff: its half list as terms of the term engine (the Hessian passes,
/// and the energy and gradient when they go term by term), its rows, and the pass of the last
/// build.
pub(crate) struct CutoffPairs<F, const D: usize> {
    terms: FormState<F, D, 2>,
    rows: Rows,
    pass: PairPass,
    /// Where the last vector and energy passes left their outputs: [`Outputs::Rows`], or with
    /// the terms.
    vector: Outputs,
    energy: Outputs,
}

impl<F: Form, const D: usize> CutoffPairs<F, D> {
    /// The pair form over `terms` (empty until the first neighbour list).
    pub fn new(terms: FormState<F, D, 2>) -> Self {
        Self {
            terms,
            rows: Rows::default(),
            pass: PairPass::PerTerm,
            vector: Outputs::Terms,
            energy: Outputs::Terms,
        }
    }

    /// The energy and gradient go by rows for `want` (the build chose rows, and `want` is
    /// their pass's).
    fn by_rows<T: Kernel<D, 2, F>>(&self, want: Want) -> bool {
        self.pass != PairPass::PerTerm
            && match want {
                Want::Energy | Want::Gradient => true,
                Want::GradientStiffHessian => !FormOps::<T, D>::info(&self.terms).stiff,
                _ => false,
            }
    }

    /// Phase A for `want` ([`FormOps::evaluate`]); with `into`, the gradient on one thread
    /// with its phase B ([`FormOps::gradient_into`]: `into` from zero or the forms before).
    fn evaluate_into<T: Kernel<D, 2, F>>(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        want: Want,
        into: Option<&mut [f64]>,
    ) {
        match input.cut2 {
            // Rows are of point bodies (a constant: no row pass is made for other bodies).
            Some(cut2) if const { D == 3 } && self.by_rows::<T>(want) => {
                let gradient = want != Want::Energy;
                self.vector = match (gradient, &into) {
                    (false, _) => Outputs::Terms,
                    (true, None) => Outputs::Rows,
                    (true, Some(_)) => Outputs::Added,
                };
                self.rows
                    .evaluate::<T, F, D, 2>(terms, input, cut2, gradient, into);
                self.energy = Outputs::Rows;
            }
            _ => {
                self.terms
                    .evaluate_with::<T, true>(terms, input, want, into);
                self.vector = Outputs::Terms;
                if want.writes_energy() {
                    self.energy = Outputs::Terms;
                }
            }
        }
    }
}

impl<T, F, const D: usize> FormOps<T, D> for CutoffPairs<F, D>
where
    T: Kernel<D, 2, F>,
    F: Form,
{
    fn info(&self) -> FormInfo {
        FormOps::<T, D>::info(&self.terms)
    }
    fn name(&self) -> &'static str {
        F::NAME
    }
    fn arity(&self) -> usize {
        2
    }
    fn len(&self) -> usize {
        self.terms.list().len()
    }
    fn enters(&self, part: HessianPart) -> bool {
        FormOps::<T, D>::enters(&self.terms, part)
    }
    fn couplings(&self, out: &mut Vec<(usize, usize)>) {
        FormOps::<T, D>::couplings(&self.terms, out);
    }
    fn attach(&mut self, part: HessianPart, layout: &BlockLayout, to_user: Option<&[u32]>) {
        FormOps::<T, D>::attach(&mut self.terms, part, layout, to_user);
    }
    fn reserve_hessians(&mut self, part: HessianPart) {
        FormOps::<T, D>::reserve_hessians(&mut self.terms, part);
    }
    fn has_hessians(&self, part: HessianPart) -> bool {
        FormOps::<T, D>::has_hessians(&self.terms, part)
    }

    fn pair_buffer(&mut self, bodies: &Bodies) -> Option<&mut Vec<[u32; 2]>> {
        Some(self.terms.pair_buffer(bodies))
    }

    fn set_pairs(&mut self, list: &NewList<'_>) {
        let NewList { bodies, kinds, .. } = *list;
        let info = FormOps::<T, D>::info(&self.terms);
        let kinds = if info.typed { kinds } else { &[] };
        self.terms.set_terms(bodies, kinds);
        let pairs = self.terms.list().bodies();
        let facts = PairFacts {
            lanes: crate::simd::detected().width(),
            free_points: D == 3 && bodies.free == bodies.free_of.len(),
            pairs_per_body: pairs.len() as f64 / bodies.free.max(1) as f64,
            types: kinds.iter().max().map_or(0, |&k| k as usize + 1),
            within: list.within,
        };
        self.pass = choose(list.strategy, facts);
        let built = match self.pass {
            _ if const { D != 3 } => false,
            PairPass::FullRows => self.rows.build_full(pairs, bodies.free, kinds),
            PairPass::HalfRows => self.rows.build_half(pairs, bodies.free, kinds, list.sites),
            PairPass::PerTerm => false,
        };
        if !built {
            self.pass = PairPass::PerTerm;
        }
        self.vector = Outputs::Terms;
        self.energy = Outputs::Terms;
    }

    fn replica(&self) -> Box<dyn FormOps<T, D>> {
        Box::new(CutoffPairs::new(self.terms.empty()))
    }

    fn evaluate(&mut self, terms: &T, input: &Inputs<'_, D>, want: Want) {
        self.evaluate_into(terms, input, want, None);
    }

    fn gradient_into(&mut self, terms: &T, input: &Inputs<'_, D>, out: &mut [f64], first: bool) {
        if self.by_rows::<T>(Want::Gradient) && !self.rows.newton {
            // Full rows hold each body's whole gradient: no partials to add while in cache.
            self.evaluate_into(terms, input, Want::Gradient, None);
            FormOps::<T, D>::scatter_vector(self, out, first);
            return;
        }
        if first {
            out.fill(0.0);
        }
        self.evaluate_into(terms, input, Want::Gradient, Some(out));
    }

    /// The per-term pass goes by chunks; rows do not.
    fn gradient_chunks(&mut self, input: &Inputs<'_, D>) -> Option<(usize, usize)> {
        if input.cut2.is_some() && D == 3 && self.by_rows::<T>(Want::Gradient) {
            return None;
        }
        self.vector = Outputs::Terms;
        self.energy = Outputs::Terms;
        Some(self.terms.gradient_chunks_with())
    }
    fn chunk_stamp(&self) -> u64 {
        self.terms.generation()
    }
    fn chunk_bodies(&self, c: usize) -> &[u32] {
        self.terms.chunk_bodies(c)
    }
    fn gradient_chunk(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        c: usize,
        (out, fresh, scratch): (&mut [f64], &[u32], &mut [f64]),
    ) {
        self.terms
            .gradient_chunk_with::<T, true>(terms, input, (c, out, fresh, scratch));
    }

    fn add_energy(&self, acc: &mut f64) {
        if self.energy == Outputs::Rows {
            for &s in &self.rows.sums {
                *acc += s;
            }
        } else {
            FormOps::<T, D>::add_energy(&self.terms, acc);
        }
    }

    fn add_parameter_derivatives(
        &self,
        terms: &T,
        input: &Inputs<'_, D>,
        dv: &mut [f64],
        dg: &mut [f64],
    ) {
        self.terms.add_parameter_derivatives(terms, input, dv, dg);
    }

    fn gather_vector(&self, first_body: usize, out: &mut [f64], first: bool) {
        match self.vector {
            Outputs::Rows => self.rows.add_gradient(first_body, out, first),
            _ => FormOps::<T, D>::gather_vector(&self.terms, first_body, out, first),
        }
    }

    fn gathers_by_piece(&self) -> bool {
        self.vector == Outputs::Rows || FormOps::<T, D>::gathers_by_piece(&self.terms)
    }

    fn scatter_vector(&self, out: &mut [f64], first: bool) {
        if self.vector == Outputs::Rows {
            FormOps::<T, D>::gather_vector(self, 0, out, first);
        } else {
            FormOps::<T, D>::scatter_vector(&self.terms, out, first);
        }
    }

    fn gather_hessian(&self, part: HessianPart, first_block: usize, values: &mut [f64]) {
        FormOps::<T, D>::gather_hessian(&self.terms, part, first_block, values);
    }
    fn scatter_hessian(&self, part: HessianPart, values: &mut [f64]) {
        FormOps::<T, D>::scatter_hessian(&self.terms, part, values);
    }
    fn constraint_pattern(&self, width: usize, cols: &mut Vec<u32>) {
        FormOps::<T, D>::constraint_pattern(&self.terms, width, cols);
    }
    fn term_constraints(
        &self,
        terms: &T,
        input: &Inputs<'_, D>,
        t: usize,
        g: &mut [f64],
        jac: Option<(&mut SparseJacobian, usize)>,
    ) {
        self.terms.term_constraints(terms, input, t, g, jac);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PairFacts {
        PairFacts {
            lanes: 8,
            free_points: true,
            pairs_per_body: 200.0,
            types: 2,
            within: 0.67,
        }
    }

    /// The choice, fact by fact: full rows need 8 lanes and most of the list within; the half
    /// list's rows long rows of few types; rows of any kind free points; a forced pass is taken
    /// where it can run.
    #[test]
    fn the_pass_follows_the_stated_facts() {
        use PairPass::*;
        use PairStrategy as S;
        let f = facts();
        assert_eq!(choose(S::Auto, f), HalfRows);
        assert_eq!(choose(S::Auto, PairFacts { lanes: 4, ..f }), HalfRows);
        assert_eq!(choose(S::Auto, PairFacts { within: 0.4, ..f }), HalfRows);
        let short_within = PairFacts {
            pairs_per_body: 6.0,
            ..f
        };
        assert_eq!(choose(S::Auto, short_within), FullRows);
        assert_eq!(choose(S::Auto, PairFacts { types: 9, ..f }), FullRows);
        let short = PairFacts {
            within: 0.4,
            pairs_per_body: 6.0,
            ..f
        };
        assert_eq!(choose(S::Auto, short), PerTerm);
        assert_eq!(choose(S::HalfRows, short), HalfRows);
        assert_eq!(choose(S::FullRows, short), FullRows);
        let many = PairFacts {
            lanes: 4,
            types: 9,
            ..f
        };
        assert_eq!(choose(S::Auto, many), PerTerm);
        assert_eq!(choose(S::HalfRows, many), PerTerm);
        assert_eq!(choose(S::FullRows, many), FullRows);
        let pinned = PairFacts {
            free_points: false,
            ..f
        };
        for s in [S::Auto, S::FullRows, S::HalfRows, S::PerTerm] {
            assert_eq!(choose(s, pinned), PerTerm, "{s:?}");
        }
        assert_eq!(choose(S::PerTerm, f), PerTerm);
    }
}
