//! A long-range term added to a model: the reciprocal-space part of an Ewald sum
//! ([`crate::ewald::Ewald`], [`crate::pme::Pme`]) beside the short-range terms a
//! `#[mechanical_system]` assembles (the real-space `erfc` pair term and the exclusions' `erf`
//! corrections are ordinary terms of that system). Written once: any assembled system with
//! charges gets it by [`WithLongRange`], whatever its force field.
//!
//! `V = V_short + c · V_long` (`c`, the Coulomb constant of the units). The long-range term's
//! Hessian couples every pair of charges: it has no place in the short-range terms' sparse
//! pattern, so [`WithLongRange`] adds it where it is exact and cheap — the value, the gradient
//! and the Hessian's product with a vector ([`Model::hessian_vector_into`]: normal modes by a
//! matrix-free eigensolver) — and, in a split `V = V0 + V1` ([`StiffModel`], Z&Ss-stiff,
//! Tao & Owhadi eq. 19), to the soft part `V0`, whose Hessian the step never forms. Its
//! matrices ([`Model::hessian_into`] and the methods that fill one) and the third contraction
//! are the short-range part's alone: a stepper that solves with the whole `Hess V` (Z&S,
//! Newmark) is not for such a model, and the `zs` program refuses it.
//!
//! The two parts of a gradient (and of a Hessian-vector product) are evaluated side by side on
//! rayon's pool and added after both (so the short-range model is `Sync`): the long-range
//! term's serial stretches, PME's FFTs, then overlap the short range's passes instead of
//! leaving the pool's other threads idle.

use std::sync::{Mutex, MutexGuard};

use crate::assembly::jacobian::{SparseConstraintSolver, SparseJacobian};
use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::ewald::Ewald;
use crate::masses::Masses;
use crate::model::{ConstrainedModel, HessianPart, Model, StiffModel};
use crate::pme::Pme;
use crate::vector::Vector;

/// A reciprocal-space method over positions in the model's order, 3 coordinates per charge.
pub trait LongRange: Send {
    /// Number of coordinates.
    fn dimension(&self) -> usize;
    /// The energy at `q`.
    fn energy(&mut self, q: &[f64]) -> f64;
    /// The energy at `q`, its gradient into `g` (overwritten).
    fn energy_gradient(&mut self, q: &[f64], g: &mut [f64]) -> f64;
    /// `H(q) v` into `out` (overwritten).
    fn hessian_times(&mut self, q: &[f64], v: &[f64], out: &mut [f64]);
}

macro_rules! long_range {
    ($t:ty) => {
        impl LongRange for $t {
            fn dimension(&self) -> usize {
                <$t>::dimension(self)
            }
            fn energy(&mut self, q: &[f64]) -> f64 {
                <$t>::energy(self, q)
            }
            fn energy_gradient(&mut self, q: &[f64], g: &mut [f64]) -> f64 {
                <$t>::energy_gradient(self, q, g)
            }
            fn hessian_times(&mut self, q: &[f64], v: &[f64], out: &mut [f64]) {
                <$t>::hessian_times(self, q, v, out)
            }
        }
    };
}
long_range!(Ewald);
long_range!(Pme);

/// The long-range term and the scratch its gradient and products are added from.
struct Long<L> {
    term: L,
    scratch: Vec<f64>,
}

/// `short + c · long` (see the [module docs](self)): a model over `Vec<f64>` whose value,
/// gradient and Hessian products include the long-range term.
pub struct WithLongRange<'a, M: ?Sized, L> {
    short: &'a M,
    long: Mutex<Long<L>>,
    c: f64,
}

impl<'a, M: Model<Vec<f64>> + ?Sized, L: LongRange> WithLongRange<'a, M, L> {
    /// `short + c · long`.
    ///
    /// # Panics
    /// When the two have different dimensions (a set-up error).
    pub fn new(short: &'a M, long: L, c: f64) -> Self {
        let n = short.dimension();
        assert_eq!(
            n,
            long.dimension(),
            "the long-range term and the model have different dimensions"
        );
        Self {
            short,
            long: Mutex::new(Long {
                term: long,
                scratch: vec![0.0; n],
            }),
            c,
        }
    }

    /// The short-range model.
    pub fn short(&self) -> &'a M {
        self.short
    }

    fn long(&self) -> MutexGuard<'_, Long<L>> {
        // A panic in another evaluation left the term as it was between two evaluations: every
        // evaluation overwrites what it reads.
        self.long.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<M: Model<Vec<f64>> + Sync + ?Sized, L: LongRange> WithLongRange<'_, M, L> {
    /// `short(g)` — the short-range part's evaluation, its gradient into `g` — and the
    /// long-range term's gradient side by side on rayon's pool (`join`: a term's serial
    /// stretches, PME's FFTs, run while the other thread works on the short range); then
    /// `g += c ∇V_long(q)`, and `short`'s value plus `c V_long(q)` returned. Each part's
    /// arithmetic is its own and the sum is made after both, so the bits do not depend on the
    /// threads.
    fn beside(
        &self,
        q: &[f64],
        g: &mut Vec<f64>,
        short: impl FnOnce(&mut Vec<f64>) -> f64 + Send,
    ) -> f64 {
        let mut long = self.long();
        let Long { term, scratch } = &mut *long;
        let (v, e) = rayon::join(|| short(g), || term.energy_gradient(q, scratch));
        for (g, s) in g.iter_mut().zip(scratch.iter()) {
            *g += self.c * s;
        }
        v + self.c * e
    }
}

type Matrix = <Vec<f64> as Vector>::Matrix;

impl<M: Model<Vec<f64>> + Sync + ?Sized, L: LongRange> Model<Vec<f64>> for WithLongRange<'_, M, L> {
    fn dimension(&self) -> usize {
        self.short.dimension()
    }
    fn matrix_layout(&self, part: HessianPart) -> u64 {
        self.short.matrix_layout(part)
    }
    fn new_matrix(&self, part: HessianPart) -> Matrix {
        self.short.new_matrix(part)
    }
    fn new_solver(&self, part: HessianPart) -> <Vec<f64> as Vector>::Solver {
        self.short.new_solver(part)
    }
    fn masses_into(&self, m: &mut Vec<f64>) {
        self.short.masses_into(m);
    }
    fn masses_into_slice(&self, m: &mut [f64]) {
        self.short.masses_into_slice(m);
    }
    fn masses_lent(&self) -> Option<Masses<'_>> {
        self.short.masses_lent()
    }
    fn kinetic_energy(&self, v: &Vec<f64>) -> f64 {
        self.short.kinetic_energy(v)
    }
    fn potential_at(&self, q: &Vec<f64>) -> f64 {
        self.short.potential_at(q) + self.c * self.long().term.energy(q)
    }
    fn gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
        self.beside(q, g, |g| {
            self.short.gradient_into(q, g);
            0.0
        });
    }
    fn value_gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) -> f64 {
        self.beside(q, g, |g| self.short.value_gradient_into(q, g))
    }
    /// The short-range part's Hessian (see the [module docs](self)).
    fn hessian_into(&self, q: &Vec<f64>, h: &mut Matrix) {
        self.short.hessian_into(q, h);
    }
    /// The whole gradient; the short-range part's Hessian.
    fn gradient_hessian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, h: &mut Matrix) {
        self.beside(q, g, |g| {
            self.short.gradient_hessian_into(q, g, h);
            0.0
        });
    }
    /// The short-range part's (see the [module docs](self)).
    fn third_contraction_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
        self.short.third_contraction_into(q, a, out);
    }
    /// The two parts' products side by side on rayon's pool, added after both, as the
    /// gradient's (see the [module docs](self)).
    fn hessian_vector_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
        let mut long = self.long();
        let Long { term, scratch } = &mut *long;
        rayon::join(
            || self.short.hessian_vector_into(q, a, out),
            || term.hessian_times(q, a, scratch),
        );
        for (o, s) in out.iter_mut().zip(scratch.iter()) {
            *o += self.c * s;
        }
    }
    fn gradient_hessian_keeping_third_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, h: &mut Matrix) {
        self.beside(q, g, |g| {
            self.short.gradient_hessian_keeping_third_into(q, g, h);
            0.0
        });
    }
    /// The short-range model's (the long-range term is a function of the point alone).
    fn save_history(&self, out: &mut ScopeMut<'_>) {
        self.short.save_history(out);
    }
    fn restore_history(&self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.short.restore_history(from)
    }
}

/// The long-range term in the soft part `V0`: the whole gradient, the stiff part's Hessian.
impl<M: StiffModel<Vec<f64>> + Sync + ?Sized, L: LongRange> StiffModel<Vec<f64>>
    for WithLongRange<'_, M, L>
{
    fn gradient_stiff_hessian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, h: &mut Matrix) {
        self.beside(q, g, |g| {
            self.short.gradient_stiff_hessian_into(q, g, h);
            0.0
        });
    }
}

/// The short-range model's constraints.
impl<M, L> ConstrainedModel<Vec<f64>, Vec<f64>> for WithLongRange<'_, M, L>
where
    M: ConstrainedModel<Vec<f64>, Vec<f64>> + Sync + ?Sized,
    L: LongRange,
{
    fn constraint_count(&self) -> usize {
        self.short.constraint_count()
    }
    fn new_jacobian(&self) -> SparseJacobian {
        self.short.new_jacobian()
    }
    fn new_constraint_solver(&self) -> SparseConstraintSolver {
        self.short.new_constraint_solver()
    }
    fn constraints_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
        self.short.constraints_into(q, g);
    }
    fn constraints_jacobian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, jac: &mut SparseJacobian) {
        self.short.constraints_jacobian_into(q, g, jac);
    }
    fn constraint_row_into(
        &self,
        q: &Vec<f64>,
        c: usize,
        g: &mut Vec<f64>,
        jac: &mut SparseJacobian,
    ) -> f64 {
        self.short.constraint_row_into(q, c, g, jac)
    }
    fn constraint_norm(&self, q: &Vec<f64>) -> f64 {
        self.short.constraint_norm(q)
    }
}
