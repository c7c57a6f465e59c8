//! Evaluating an [`Assembled`] system: every pass over its forms (phase A, then the sums of
//! phase B in table order), and its [`Model`] and [`StiffModel`] impls — those of the plain
//! system (ω = 0) and of its penalized view [`PenalizedAssembly`] (Tao & Owhadi eq. 7).

use std::sync::Arc;

use super::arrange::{Arrangement, arrange};
use super::eval::{FormOps, Want, gradient_form_by_form, sum_hessian, sum_vector};
use super::forms::ThirdForm;
use super::held::HeldInside;
use super::order::{self, Inside};
use super::system::Assembled;
use super::terms::Terms;
use super::workspace::Workspace;
use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::model::HessianPart;
use crate::sparse::{SparseMatrix, SparseSolver};
use crate::state::{DynState, Measured, PointMove, PositionsKey};
use crate::{Model, StiffModel};

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// `V + ½ω² Σ_c g_c²` as a [`Model`] (eq. 7): what Z&S and the other penalty methods
    /// integrate.
    pub fn penalized(&self, omega: f64) -> PenalizedAssembly<'_, T, D> {
        PenalizedAssembly {
            system: self,
            omega,
        }
    }

    /// `pass(q, a, out)` in the system's inner order ([`super::order`]): on the caller's
    /// vectors when the bodies are held in the topology's order or the caller `held` them in
    /// the inner order ([`super::HeldInside`]), else on this state's inner vectors — `q` and
    /// `a` (when not empty) gathered in, `out` (when given) gathered back. In spatial order,
    /// the bodies are re-sorted first when it is due ([`Assembled::with_resort_period`]),
    /// unless the caller holds them (it re-sorts between steps: [`crate::Model::reorder`]).
    pub(crate) fn inside<R>(
        &self,
        held: bool,
        q: &[f64],
        a: &[f64],
        out: Option<&mut [f64]>,
        pass: impl FnOnce(&[f64], &[f64], Option<&mut [f64]>) -> R,
    ) -> R {
        let mut arranged = self.arranged();
        if held || arranged.order.is_none() {
            drop(arranged);
            return pass(q, a, out);
        }
        self.check_len(q, "q");
        let parallel = self.on_pool();
        let mut inside = self.inside.try_borrow_mut().unwrap_or_else(|_| {
            panic!(
                "an assembled system's evaluation state is evaluated by two threads at once: \
                 give each thread (each trajectory) its own Assembled::replica()"
            )
        });
        let Inside {
            q: iq,
            a: ia,
            out: io,
        } = &mut *inside;
        let gather = |arranged: &Arrangement<D>, from: &[f64], to: &mut [f64]| {
            let order = arranged.order.as_ref().expect("a spatial order");
            order.gather::<D>(from, to, parallel);
        };
        gather(&arranged, q, iq);
        if self.resort_due(&arranged, iq) {
            drop(arranged);
            self.resort(q);
            arranged = self.arranged();
            gather(&arranged, q, iq);
        }
        if !a.is_empty() {
            self.check_len(a, "the direction");
            // Made on first use (a Z&S step makes it at set-up, with its matrix).
            ia.resize(iq.len(), 0.0);
            gather(&arranged, a, ia);
        }
        let ia: &[f64] = if a.is_empty() { &[] } else { ia };
        match out {
            None => pass(iq, ia, None),
            Some(out) => {
                self.check_len(out, "the output");
                let r = pass(iq, ia, Some(&mut io[..]));
                let order = arranged.order.as_ref().expect("a spatial order");
                order.scatter::<D>(io, out, parallel);
                r
            }
        }
    }

    /// True when the bodies are due to be re-sorted before evaluating at `iq` (in the current
    /// inner order): a spatial order without constraints, whose list must be built at `iq`
    /// for the [`Assembled::with_resort_period`]-th time since the order was made.
    fn resort_due(&self, arranged: &Arrangement<D>, iq: &[f64]) -> bool {
        self.resort_every > 0
            && self.model.counts.iter().all(|c| c.2 == 0)
            && self
                .work()
                .resort_due(iq, &self.refresh_inputs(arranged), self.resort_every)
    }

    /// The bodies re-sorted in cells at the user's coordinates `q`, as at set-up
    /// ([`Assembled::ordered`]).
    fn resort(&self, q: &[f64]) {
        let topology = &self.model.topology;
        let (rc, skin) = topology
            .pair_cutoff()
            .expect("a spatial order has a pair cutoff");
        let rank = {
            let arranged = self.arranged();
            let order = arranged.order.as_ref().expect("a spatial order");
            let site = order::user_site::<D>(topology, &order.user_free_of, q);
            order::cell_rank(topology.bodies(), site, self.model.cell.as_ref(), rc + skin)
        };
        self.rearrange(rank);
    }

    /// The state made anew over the arrangement `rank` (user body → inner body): the
    /// relabeled topology's term lists and neighbour list (built at the next evaluation), the
    /// count of builds continued and the fixed Hessian patterns kept. The old state is dropped
    /// first, so that the two are never held at once.
    pub(crate) fn rearrange(&self, rank: Vec<u32>) {
        let mut arranged = self.arranged.borrow_mut();
        let mut work = self.work();
        let counts = (
            work.neighbors.as_ref().map_or(0, |nb| nb.builds),
            work.resorts + 1,
        );
        let kept = work.layouts();
        let follows = work.follows;
        let free = self.model.free;
        *work = Workspace::new(Vec::new(), follows, None, free);
        *arranged = Arc::new(Arrangement::empty());
        let (fresh, forms, neighbors) = arrange::<T, D>(&self.model.topology, Some(rank))
            .expect("the topology was valid at set-up, and so is every relabeling of it");
        let mut w = Workspace::new(forms, follows, neighbors, free);
        w.continue_from(counts, kept, fresh.to_user());
        *work = w;
        *arranged = Arc::new(fresh);
    }

    /// `V` at `q`: without a pass over the terms when the last energy, gradient or Hessian
    /// evaluation was at this `q` and `omega` (an observer after a step that ended with a
    /// gradient there), else by an energy pass.
    pub(crate) fn energy(&self, held: bool, omega: f64, q: &[f64]) -> f64 {
        self.inside(held, q, &[], None, |q, _, _| {
            let arranged = self.arranged();
            let input = self.inputs(&arranged, omega, q, &[]);
            let mut s = self.work();
            // The key alone first: an observer after a step asks at the positions the step
            // ended its evaluation at, where the list was refreshed then, so the staleness
            // test (a second stream, of the build's positions) is needed only on a miss.
            let key = crate::vector::fingerprint(q);
            if s.valued_at(key, omega) {
                return s.value();
            }
            s.refresh(q, &self.refresh_inputs(&arranged));
            for f in &mut s.forms {
                f.evaluate(&self.model.terms, &input, Want::Energy);
            }
            s.mark_valued(key, omega);
            s.value()
        })
    }

    /// `∇V` into `g` and `V` returned, from one pass over the terms.
    pub(crate) fn value_gradient(&self, held: bool, omega: f64, q: &[f64], g: &mut [f64]) -> f64 {
        self.value_gradient_moved(held, omega, q, g, None)
    }

    /// [`Assembled::value_gradient`] at the caller's positions of key `moved.1`, moved there as
    /// `moved.0` says ([`Workspace::refresh_keyed`]; in spatial order too: a largest move is
    /// the same in any order of the bodies).
    fn value_gradient_moved(
        &self,
        held: bool,
        omega: f64,
        q: &[f64],
        g: &mut [f64],
        moved: Option<(PointMove, PositionsKey)>,
    ) -> f64 {
        self.check_len(g, "the gradient");
        self.inside(held, q, &[], Some(g), |q, _, g| {
            let g = g.expect("an output");
            let arranged = self.arranged();
            let input = self.inputs(&arranged, omega, q, &[]);
            let mut s = self.work();
            let key = s.refresh_keyed(q, &self.refresh_inputs(&arranged), moved);
            if input.parallel {
                for f in &mut s.forms {
                    f.evaluate(&self.model.terms, &input, Want::Gradient);
                }
                sum_vector(&s.forms, &|_| true, self.model.free, true, g);
            } else {
                let s = &mut *s;
                let (forms, interleave) = (&mut s.forms, &mut s.interleave);
                gradient_form_by_form(forms, &self.model.terms, &input, (g, interleave));
            }
            s.mark_valued(key, omega);
            s.value()
        })
    }

    pub(crate) fn gradient(&self, held: bool, omega: f64, q: &[f64], g: &mut [f64]) {
        self.value_gradient(held, omega, q, g);
    }

    /// [`Assembled::gradient`] at positions of key `key` (the caller's, in its own order),
    /// which then also keys the energy found: [`Assembled::energy_keyed`].
    pub(crate) fn gradient_keyed(
        &self,
        held: bool,
        omega: f64,
        q: &[f64],
        g: &mut [f64],
        key: PositionsKey,
    ) {
        self.value_gradient(held, omega, q, g);
        self.work().mark_valued_outside(key);
    }

    /// [`Assembled::gradient_keyed`] at positions moved there as `moved` says
    /// ([`crate::Model::gradient_into_moved`]).
    pub(crate) fn gradient_moved(
        &self,
        held: bool,
        omega: f64,
        q: &[f64],
        g: &mut [f64],
        key: PositionsKey,
        moved: PointMove,
    ) {
        self.value_gradient_moved(held, omega, q, g, Some((moved, key)));
        self.work().mark_valued_outside(key);
    }

    /// `V` at `q` of key `key`: the energy of the last evaluation when it was
    /// [`Assembled::gradient_keyed`] at that key and `omega` — without reading `q`, nor
    /// gathering it into a spatial order — else [`Assembled::energy`].
    pub(crate) fn energy_keyed(&self, held: bool, omega: f64, q: &[f64], key: PositionsKey) -> f64 {
        {
            let s = self.work();
            if s.valued_outside(key, omega) {
                return s.value();
            }
        }
        self.energy(held, omega, q)
    }

    /// The gradient (if asked) and the Hessian of `want` into `h`.
    pub(crate) fn gradient_hessian(
        &self,
        held: bool,
        omega: f64,
        q: &[f64],
        g: Option<&mut [f64]>,
        h: &mut SparseMatrix,
        want: Want,
    ) {
        self.matrices_in(held);
        if let Some(g) = &g {
            self.check_len(g, "the gradient");
        }
        self.inside(held, q, &[], g, |q, _, g| {
            let arranged = self.arranged();
            let input = self.inputs(&arranged, omega, q, &[]);
            let part = if want == Want::GradientStiffHessian {
                HessianPart::Stiff
            } else {
                HessianPart::Full
            };
            let mut s = self.work();
            let key = s.refresh_keyed(q, &self.refresh_inputs(&arranged), None);
            let layout = s.layout(part, self.model.free, arranged.to_user());
            if h.layout().id() != layout.id() {
                assert!(
                    s.follows[part.index()],
                    "the matrix was not made for this Hessian (Model::new_matrix with the matching part)"
                );
                // The neighbour list was rebuilt: the matrix takes the new pattern (the caller
                // sees the new `matrix_layout` and remakes its solver).
                *h = SparseMatrix::zeros(layout.clone());
            }
            if !s.forms.iter().all(|f| f.has_hessians(part)) {
                // A matrix made elsewhere: the buffers were not reserved at set-up.
                s.reserve_hessians(part);
            }
            for f in &mut s.forms {
                f.evaluate(&self.model.terms, &input, want);
            }
            s.mark_valued(key, omega);
            if want == Want::GradientHessianThird {
                s.mark_kept(key, omega);
            }
            if let Some(g) = g {
                sum_vector(
                    &s.forms,
                    &|_| true,
                    self.model.free,
                    self.on_pool(),
                    g,
                );
            }
            sum_hessian(
                &s.forms,
                part,
                layout.blocks(),
                self.on_pool(),
                h.values_mut(),
            );
        });
    }

    pub(crate) fn third(&self, held: bool, omega: f64, q: &[f64], a: &[f64], out: &mut [f64]) {
        self.check_len(a, "the direction");
        self.check_len(out, "the third contraction");
        self.inside(held, q, a, Some(out), |q, a, out| {
            let arranged = self.arranged();
            let input = self.inputs(&arranged, omega, q, a);
            let mut s = self.work();
            let key = s.refresh_keyed(q, &self.refresh_inputs(&arranged), None);
            let kept = s.tensors_kept_at(key, omega);
            for f in &mut s.forms {
                f.evaluate(&self.model.terms, &input, Want::Third { kept });
            }
            let nonzero = |f: &dyn FormOps<T, D>| f.info().third != ThirdForm::Zero;
            sum_vector(
                &s.forms,
                &nonzero,
                self.model.free,
                self.on_pool(),
                out.expect("an output"),
            );
        });
    }

    /// `Hess V_ω(q) · a` into `out`, term by term (no matrix).
    pub(crate) fn hessian_vector(
        &self,
        held: bool,
        omega: f64,
        q: &[f64],
        a: &[f64],
        out: &mut [f64],
    ) {
        self.check_len(a, "the direction");
        self.check_len(out, "the Hessian-vector product");
        self.inside(held, q, a, Some(out), |q, a, out| {
            let arranged = self.arranged();
            let input = self.inputs(&arranged, omega, q, a);
            let mut s = self.work();
            s.refresh(q, &self.refresh_inputs(&arranged));
            for f in &mut s.forms {
                f.evaluate(&self.model.terms, &input, Want::HessianVector);
            }
            sum_vector(
                &s.forms,
                &|_| true,
                self.model.free,
                self.on_pool(),
                out.expect("an output"),
            );
        });
    }

    fn make_matrix(&self, part: HessianPart) -> SparseMatrix {
        self.work().reserve_hessians(part);
        {
            // A step that makes a matrix may take third contractions: their direction's
            // inner vector is made now, at set-up.
            let mut inside = self.inside.borrow_mut();
            let n = inside.len();
            inside.a.resize(n, 0.0);
        }
        SparseMatrix::zeros(self.hessian_layout(part))
    }

    fn make_solver(&self, part: HessianPart) -> SparseSolver {
        SparseSolver::new(self.hessian_layout(part), self.backend())
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
                self.as_system().model.free * D
            }
            fn matrix_layout(&self, part: HessianPart) -> u64 {
                self.as_system().hessian_layout(part).id()
            }
            fn new_matrix(&self, part: HessianPart) -> SparseMatrix {
                self.as_system().matrices_in(self.held());
                self.as_system().make_matrix(part)
            }
            fn new_solver(&self, part: HessianPart) -> SparseSolver {
                self.as_system().matrices_in(self.held());
                self.as_system().make_solver(part)
            }
            fn masses_into(&self, m: &mut Vec<f64>) {
                self.as_system().copy_masses(self.held(), m);
            }
            fn masses_into_slice(&self, m: &mut [f64]) {
                self.as_system().copy_masses(self.held(), m);
            }
            fn masses_lent(&self) -> Option<crate::Masses<'_>> {
                self.as_system().lent_masses(self.held())
            }
            fn kinetic_energy(&self, v: &Vec<f64>) -> f64 {
                self.as_system().kinetic(self.held(), v)
            }
            fn kinetic_energy_measured(&self, v: &Vec<f64>, measured: &Measured) -> f64 {
                match measured.kinetic_energy() {
                    Some(k) => k,
                    None => self.as_system().kinetic(self.held(), v),
                }
            }
            fn potential_at(&self, q: &Vec<f64>) -> f64 {
                self.as_system().energy(self.held(), self.penalty(), q)
            }
            fn gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
                self.as_system().gradient(self.held(), self.penalty(), q, g);
            }
            fn gradient_into_keyed(&self, q: &Vec<f64>, g: &mut Vec<f64>, key: PositionsKey) {
                self.as_system()
                    .gradient_keyed(self.held(), self.penalty(), q, g, key);
            }
            fn gradient_into_moved(
                &self,
                q: &Vec<f64>,
                g: &mut Vec<f64>,
                key: PositionsKey,
                moved: PointMove,
            ) {
                self.as_system()
                    .gradient_moved(self.held(), self.penalty(), q, g, key, moved);
            }
            fn potential_at_keyed(&self, q: &Vec<f64>, key: PositionsKey) -> f64 {
                self.as_system()
                    .energy_keyed(self.held(), self.penalty(), q, key)
            }
            fn value_gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) -> f64 {
                self.as_system()
                    .value_gradient(self.held(), self.penalty(), q, g)
            }
            fn hessian_into(&self, q: &Vec<f64>, h: &mut SparseMatrix) {
                self.as_system().gradient_hessian(
                    self.held(),
                    self.penalty(),
                    q,
                    None,
                    h,
                    Want::GradientHessian,
                );
            }
            fn gradient_hessian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, h: &mut SparseMatrix) {
                self.as_system().gradient_hessian(
                    self.held(),
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
                    self.held(),
                    self.penalty(),
                    q,
                    Some(g),
                    h,
                    Want::GradientHessianThird,
                );
            }
            fn third_contraction_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
                self.as_system()
                    .third(self.held(), self.penalty(), q, a, out);
            }
            fn hessian_vector_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
                self.as_system()
                    .hessian_vector(self.held(), self.penalty(), q, a, out);
            }
            fn save_history(&self, out: &mut ScopeMut<'_>) {
                self.as_system().save_history_into(out);
            }
            fn restore_history(&self, from: &Scope<'_>) -> Result<(), CheckpointError> {
                self.as_system().restore_history_from(from)
            }
            fn reorder(&self, state: &mut DynState) -> bool {
                self.held() && self.as_system().reorder_held(state)
            }
            fn in_user_order(&self, x: &Vec<f64>, user: &mut Vec<f64>) -> bool {
                self.held() && self.as_system().held_to_user(x, user)
            }
            fn in_own_order(&self, user: &Vec<f64>, x: &mut Vec<f64>) -> bool {
                self.held() && self.as_system().user_to_held(user, x)
            }
            fn user_order_index(&self, index: &mut Vec<u32>) -> Option<usize> {
                if self.held() {
                    self.as_system().held_index(index)
                } else {
                    None
                }
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
                    self.held(),
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
    #[inline]
    fn held(&self) -> bool {
        false
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
    #[inline]
    fn held(&self) -> bool {
        false
    }
}

impl<T, const D: usize> HeldInside<'_, T, D> {
    #[inline]
    fn as_system(&self) -> &Assembled<T, D> {
        self.system
    }
    #[inline]
    fn penalty(&self) -> f64 {
        0.0
    }
    #[inline]
    fn held(&self) -> bool {
        true
    }
}

assembled_model!(Assembled<T, D>);
assembled_model!(PenalizedAssembly<'_, T, D>);
assembled_model!(HeldInside<'_, T, D>);
