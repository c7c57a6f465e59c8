//! Constraints of an assembled system, for SHAKE and RATTLE: [`Assembled`] as a
//! [`ConstrainedModel`] over the sparse Jacobian and solvers of [`super::jacobian`]. Constraint
//! order:
//! the forms in table order, each form's terms in term order, each term's components together
//! (the body constraints of every free body in body order, then the bond constraints of every
//! bond). In spatial order ([`super::BodyOrder::Cells`]) the terms are the relabeled topology's, so the
//! rows follow it (a function of the input, like the order itself); the constraints read the
//! caller's `q` through the order and the Jacobian's columns are the user's free indices.

use std::sync::Arc;

use super::arrange::Arrangement;
use super::eval::{FormList, STACK_ROWS};
use super::jacobian::{SparseConstraintSolver, SparseJacobian};
use super::plan::PINNED;
use super::system::Assembled;
use super::terms::Terms;
use crate::model::ConstrainedModel;
use crate::sparse::Backend;

impl<T: Terms<D>, const D: usize> Assembled<T, D> {
    /// Blocks per Jacobian row: the arity of the widest form with constraints.
    fn jacobian_width(&self) -> usize {
        self.with_forms(|forms| {
            forms
                .iter()
                .filter(|f| f.info().constraints > 0)
                .map(|f| f.arity())
                .max()
                .unwrap_or(1)
        })
    }

    /// The free-body pattern of every constraint row, `width` per row.
    fn constraint_pattern(&self, width: usize) -> Vec<u32> {
        let rows: usize = self.constraint_rows().sum();
        let mut cols = Vec::with_capacity(rows * width);
        self.with_forms(|forms| {
            for f in forms {
                f.constraint_pattern(width, &mut cols);
            }
        });
        // The solvers' vectors are the user's: in spatial order, each block's column is the
        // user's free index of its inner body.
        if let Some(to_user) = self.arranged().to_user() {
            for c in cols.iter_mut().filter(|c| **c != PINNED) {
                *c = to_user[*c as usize];
            }
        }
        cols
    }

    /// The inputs of the constraints at the caller's `q`, read through the spatial order when
    /// there is one (no gather of `q`: a SHAKE sweep asks for one row at a time).
    fn constraint_inputs<'a>(
        &'a self,
        arranged: &'a Arrangement<D>,
        q: &'a [f64],
    ) -> super::eval::Inputs<'a, D> {
        let mut input = self.inputs(arranged, 0.0, q, &[]);
        input.to_user = arranged.to_user();
        input
    }

    /// The constraints of the terms `first_term..` (of the forms, in order) into `g` (and their
    /// rows into the Jacobian from row `first_row`, when given): every constraint with
    /// `only = None`, the term holding row `c` with `only = Some(c)`.
    fn constraints(
        &self,
        q: &[f64],
        g: &mut [f64],
        mut jac: Option<&mut SparseJacobian>,
        only: Option<usize>,
    ) {
        let arranged = self.arranged();
        let input = self.constraint_inputs(&arranged, q);
        self.with_forms(|forms: &FormList<T, D>| {
            let mut first = 0;
            for f in forms {
                let k = f.info().constraints;
                let rows = k * f.len();
                if k == 0 || only.is_some_and(|c| c < first || c >= first + rows) {
                    first += rows;
                    continue;
                }
                let terms = match only {
                    Some(c) => (c - first) / k..(c - first) / k + 1,
                    None => 0..f.len(),
                };
                for t in terms {
                    let row = first + t * k;
                    f.term_constraints(
                        self.terms(),
                        &input,
                        t,
                        &mut g[row..row + k],
                        jac.as_deref_mut().map(|j| (j, row)),
                    );
                }
                first += rows;
            }
        });
    }
}

impl<T: Terms<D>, const D: usize> ConstrainedModel<Vec<f64>, Vec<f64>> for Assembled<T, D> {
    fn constraint_count(&self) -> usize {
        self.constraint_rows().sum()
    }

    fn new_jacobian(&self) -> SparseJacobian {
        let width = self.jacobian_width();
        SparseJacobian::new(D, width, Arc::new(self.constraint_pattern(width)))
    }

    fn new_constraint_solver(&self) -> SparseConstraintSolver {
        SparseConstraintSolver::new(&self.new_jacobian(), self.free_bodies(), Backend::Auto)
    }

    fn constraints_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
        self.constraints(q, g, None, None);
    }

    fn constraints_jacobian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, jac: &mut SparseJacobian) {
        self.constraints(q, g, Some(jac), None);
    }

    fn constraint_row_into(
        &self,
        q: &Vec<f64>,
        c: usize,
        g: &mut Vec<f64>,
        jac: &mut SparseJacobian,
    ) -> f64 {
        self.constraints(q, g, Some(jac), Some(c));
        g[c]
    }

    fn constraint_norm(&self, q: &Vec<f64>) -> f64 {
        let arranged = self.arranged();
        let input = self.constraint_inputs(&arranged, q);
        let mut buf = [0.0; STACK_ROWS];
        let mut sum = 0.0;
        let fits = self.with_forms(|forms: &FormList<T, D>| {
            for f in forms {
                let k = f.info().constraints;
                if k == 0 {
                    continue;
                }
                if k > STACK_ROWS {
                    return false;
                }
                for t in 0..f.len() {
                    f.term_constraints(self.terms(), &input, t, &mut buf[..k], None);
                    sum += buf[..k].iter().map(|x| x * x).sum::<f64>();
                }
            }
            true
        });
        if !fits {
            let mut g = vec![0.0; self.constraint_count()];
            self.constraints(q, &mut g, None, None);
            return g.iter().map(|x| x * x).sum::<f64>().sqrt();
        }
        sum.sqrt()
    }
}
