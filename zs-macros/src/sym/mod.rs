//! The symbolic engine: a hash-consed expression graph with constant folding and algebraic
//! simplification, symbolic differentiation, an interpreter, and scheduling of many outputs into
//! one straight-line [`Program`] with common-subexpression elimination.
//!
//! Independent of `syn`/`quote`: it is unit-tested on its own, and the macro front end
//! (`crate::lower`, `crate::expand`) only talks to it through this API.
//!
//! API CONTRACT (the front end codes against exactly these names):
//! - `Graph::new()`, constructors `constant(f64)`, `var(Var)`, `add/sub/mul/div(a, b)`, `neg(a)`,
//!   `powi(a, i32)`, `powf(a, b)`, `unary(Unary, a)`, `atan2(y, x)`; every constructor simplifies
//!   and hash-conses (building the same expression twice yields the same `NodeId`).
//! - `as_const(n) -> Option<f64>`, `depends_on(n, |v| bool) -> bool`, `depends_on_q(n) -> bool`.
//! - `derivative(n, Var) -> NodeId` (memoized), `gradient(f, n_q) -> Vec<NodeId>`,
//!   `hessian(&grad) -> Vec<Vec<NodeId>>` (upper triangle computed, mirrored),
//!   `third_contraction(&grad) -> Vec<NodeId>` (directional, in terms of `Var::Dir(j)`).
//! - `eval(n, &dyn Fn(Var) -> f64) -> f64` interpreter; `eval_many`.
//! - `schedule(&graph, &outputs) -> Program` with CSE across all outputs.

//!
//! Additions beyond the contract: `Graph::{nodes, is_empty, sum, depends_on_var, vars_of,
//! directional, eval_generic}`, the convenience constructors `sqrt/exp/ln/sin/cos/tan/tanh/
//! acos/asin/atan`, [`Scalar`] (number types the interpreter runs on), [`ConstBits`],
//! `Program::{uses, vars, eval_generic, is_empty}`, `Instr::{dst, operands}`.
//!
//! Pipeline: the front end builds expressions with the constructors (which fold constants and
//! apply identities, `simplify.rs`, then hash-cons, `graph.rs`), asks for derivatives
//! (`diff.rs`), and hands all the nodes one generated function needs to [`schedule`]
//! (`schedule.rs`), which emits each distinct node once.

// The engine's API is wider than what one front end uses (interpreter, queries for tests).
#![allow(dead_code, unused_imports)]

mod diff;
mod graph;
mod interp;
mod schedule;
mod simplify;
#[cfg(test)]
mod tests;

pub use graph::{ConstBits, Graph, Node, NodeId};
pub use interp::Scalar;
pub use schedule::{schedule, Instr, Operand, Program};

/// A leaf variable of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Var {
    /// Coordinate `q[i]`.
    Q(u32),
    /// Direction component `a[j]` of the third contraction `T(q; a)`.
    Dir(u32),
    /// A parameter of the system (`self.field`), numbered by the front end.
    Param(u32),
    /// The penalty frequency `ω` of `V + ½ω²|g|²`.
    Omega,
}

/// Unary functions supported by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unary {
    Neg,
    Sqrt,
    Exp,
    Ln,
    Sin,
    Cos,
    Tan,
    Tanh,
    Acos,
    Asin,
    Atan,
}

/// Binary functions supported by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Powf,
    Atan2,
}
