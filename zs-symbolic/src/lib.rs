//! The symbolic engine: a hash-consed expression graph with constant folding and algebraic
//! simplification, symbolic differentiation, an interpreter, and scheduling of many outputs into
//! one straight-line [`Program`] with common-subexpression elimination.
//!
//! Independent of `syn`/`quote`, a crate of its own, unit-tested on its own; the macro front end
//! (zs-macros' `lower` and `expand`) only talks to it through this API.
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
//! - Piecewise functions: `lt(a, b)` / `le(a, b)` (indicators, `1.0` or `0.0`, derivative 0)
//!   and `select(c, a, b)` (`a` where `c ≠ 0`, else `b`), whose derivative is
//!   `select(c, a', b')`: each branch differentiated on its own, the branch chosen at run time.
//!
//! Additions beyond the contract: `Graph::{len, is_empty, node, nodes, sum, depends_on_var,
//! vars_of, directional, gradient_forward, eval_generic}`, the convenience constructors
//! `sqrt/exp/ln/sin/cos/tan/tanh/acos/asin/atan`, [`Scalar`] (number types the interpreter runs
//! on), [`ConstBits`], `Program::{uses, vars, eval_generic, is_empty}`, `Instr::{dst, operands}`.
//!
//! # Stages, and why
//! 1. **Construction** (`graph.rs`, `simplify.rs`). Every constructor first simplifies (constant
//!    folding to finite values only, algebraic identities, canonical operand order of `+`/`*`)
//!    and then hash-conses: a node is stored once, so equal subexpressions, wherever and
//!    however often the front end builds them, are one `NodeId`. This is what makes CSE free.
//! 2. **Differentiation** (`diff.rs`). The gradient is a reverse-mode (adjoint) pass, O(|V|);
//!    Hessian entries are memoized forward-mode derivatives of the gradient, upper triangle
//!    only (the Hessian is symmetric, so the mirror is the same node); the third contraction
//!    `T(q; a)` is the directional derivative `D = Σ_k a_k ∂/∂q_k` applied twice to each
//!    gradient entry (the n³ tensor is never formed). All derivative rules go through the
//!    simplifying constructors, so derivative graphs share nodes with the function and each
//!    other.
//! 3. **Scheduling** (`schedule.rs`). All outputs of one generated function are scheduled
//!    together: each reachable node becomes exactly one instruction (`let tK = ...;`), in
//!    topological order, constants and variables inline.
//! 4. **Interpretation** (`interp.rs`, `Program::eval`) for tests: the graph and the scheduled
//!    program evaluate identically, and are checked against num-dual on random expressions.
//!
//! # Notes for the front end
//! - `Var::Param(k)`: the numbering is the front end's; the engine only needs it consistent
//!   within a graph. `Var::Dir(j)` are the components of `a` in `third_contraction(q, a)`;
//!   `Var::Omega` the penalty frequency; `Var::Lambda(c)` the multipliers `λ_c` of
//!   `weighted_constraint_hessian(q, λ) = Σ_c λ_c Hess g_c(q)`. All but `Var::Q` are constants
//!   for differentiation.
//! - `Sub` and `Div` stay binary operations; `x - c` becomes `(-c) + x` and `x / 2ᵏ` becomes
//!   `2⁻ᵏ · x` (both exact). Expect `Unary::Neg` instructions.
//! - Folding never produces NaN/∞: `1.0 / 0.0`, `(-1.0).sqrt()`, ... stay as instructions.
//!   `Operand::Const` can still be non-finite if the user wrote such a literal.
//! - Use one `Graph` per generated impl so that all functions share derivative work, and one
//!   `schedule` call per generated function (CSE across everything that function returns).

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
    /// Multiplier `λ_c` of constraint `c` in `Σ_c λ_c Hess g_c(q)` (`ConstraintCurvature`).
    Lambda(u32),
}

/// What a derivative is taken with respect to (the key of the graph's derivative memo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wrt {
    /// The partial derivative `∂/∂v`.
    Var(Var),
    /// The directional derivative `Σ_k a_k ∂/∂q_k`, with `a_k = Var::Dir(k)` (treated as
    /// constants).
    QDir,
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
    /// The error function `erf(a) = 2/√π ∫₀ᵃ e^{−t²} dt`.
    Erf,
    /// `erfc(a) = 1 − erf(a)`, evaluated directly (no cancellation for large `a`: the
    /// real-space Ewald term `erfc(αr)/r`).
    Erfc,
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
    /// The indicator `1` if `a < b`, else `0` (piecewise terms: the condition of a
    /// [`Node::Select`]); its derivative is zero.
    Lt,
    /// The indicator `1` if `a ≤ b`, else `0`.
    Le,
}
