//! An interpreter for the graph: evaluates nodes given the values of the leaf variables.
//!
//! Used by the tests of the engine and of the front end (and available to the front end for
//! checks such as "is this constant expression finite"). Evaluation visits each reachable node
//! once, in id (= topological) order, without recursion. It is generic over [`Scalar`] so tests
//! can evaluate the same graph with dual numbers.

use super::graph::{Graph, Node, NodeId};
use super::simplify::{apply_binary, apply_unary};
use super::{Binary, Unary, Var};

/// The arithmetic the interpreter needs from a number type.
pub trait Scalar: Clone {
    /// The constant `x`.
    fn from_f64(x: f64) -> Self;
    /// `op(self)`.
    fn unary(&self, op: Unary) -> Self;
    /// `op(self, b)` (for `Atan2`, `self` is `y` and `b` is `x`).
    fn binary(&self, op: Binary, b: &Self) -> Self;
    /// `self.powi(n)`.
    fn powi(&self, n: i32) -> Self;
    /// Whether `self`, an indicator, is nonzero (the value, not a derivative part).
    fn is_true(&self) -> bool;
}

impl Scalar for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn unary(&self, op: Unary) -> Self {
        apply_unary(op, *self)
    }
    fn binary(&self, op: Binary, b: &Self) -> Self {
        apply_binary(op, *self, *b)
    }
    fn powi(&self, n: i32) -> Self {
        f64::powi(*self, n)
    }
    fn is_true(&self) -> bool {
        *self != 0.0
    }
}

impl Graph {
    /// The value of `n` with the leaf variables given by `env`.
    pub fn eval(&self, n: NodeId, env: &dyn Fn(Var) -> f64) -> f64 {
        self.eval_generic(&[n], env)[0]
    }

    /// The values of `ns` (shared subexpressions are evaluated once).
    pub fn eval_many(&self, ns: &[NodeId], env: &dyn Fn(Var) -> f64) -> Vec<f64> {
        self.eval_generic(ns, env)
    }

    /// The values of `ns` in any [`Scalar`] type.
    pub fn eval_generic<T: Scalar>(&self, ns: &[NodeId], env: &dyn Fn(Var) -> T) -> Vec<T> {
        let Some(max) = ns.iter().max() else {
            return Vec::new();
        };
        // Mark the reachable nodes; operands have smaller ids than their users.
        let mut needed = vec![false; max.index() + 1];
        for &n in ns {
            needed[n.index()] = true;
        }
        for i in (0..needed.len()).rev() {
            if needed[i] {
                for o in self.node(NodeId(i as u32)).operands() {
                    needed[o.index()] = true;
                }
            }
        }
        let mut vals: Vec<Option<T>> = vec![None; needed.len()];
        let get = |vals: &[Option<T>], o: NodeId| -> T {
            vals[o.index()]
                .clone()
                .expect("operand evaluated before its user")
        };
        for (i, _) in needed.iter().enumerate().filter(|(_, &b)| b) {
            let v = match *self.node(NodeId(i as u32)) {
                Node::Const(c) => T::from_f64(c.value()),
                Node::Var(v) => env(v),
                Node::Unary(op, a) => get(&vals, a).unary(op),
                Node::Powi(a, k) => get(&vals, a).powi(k),
                Node::Binary(op, a, b) => get(&vals, a).binary(op, &get(&vals, b)),
                Node::Select(c, a, b) => {
                    if get(&vals, c).is_true() {
                        get(&vals, a)
                    } else {
                        get(&vals, b)
                    }
                }
            };
            vals[i] = Some(v);
        }
        ns.iter().map(|&n| get(&vals, n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Graph, Var};

    fn env(v: Var) -> f64 {
        match v {
            Var::Q(i) => 0.5 + i as f64,
            Var::Dir(j) => -1.0 - j as f64,
            Var::Param(k) => 10.0 * (k + 1) as f64,
            Var::Omega => 3.0,
            Var::Lambda(c) => 4.0 + f64::from(c),
        }
    }

    #[test]
    fn evaluates_every_kind_of_node() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0)); // 0.5
        let y = g.var(Var::Q(1)); // 1.5
        let p = g.var(Var::Param(0)); // 10
        let w = g.var(Var::Omega); // 3
        let a = g.var(Var::Dir(0)); // -1
        let xy = g.mul(x, y);
        let s = g.sin(xy);
        let c = g.cos(xy);
        let f = g.add(s, c);
        let h = g.powi(p, 3);
        let r = g.atan2(a, w);
        let pw = g.powf(y, x);
        let dv = g.div(w, y);
        let v = g.eval_many(&[f, h, r, pw, dv, xy, a], &env);
        let want = [
            0.75f64.sin() + 0.75f64.cos(),
            1000.0,
            (-1f64).atan2(3.0),
            1.5f64.powf(0.5),
            2.0,
            0.75,
            -1.0,
        ];
        assert_eq!(v, want);
        assert_eq!(g.eval(f, &env), want[0]);
        assert!(g.eval_many(&[], &env).is_empty());
    }

    #[test]
    fn counts_each_shared_node_once() {
        use std::cell::Cell;
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let mut acc = x;
        // A chain where each level uses the previous one twice: 2^60 paths, 120 nodes.
        for _ in 0..60 {
            let s = g.sin(acc);
            let c = g.cos(acc);
            acc = g.add(s, c);
        }
        let calls = Cell::new(0);
        let v = g.eval(acc, &|v| {
            calls.set(calls.get() + 1);
            env(v)
        });
        assert!(v.is_finite());
        assert_eq!(calls.get(), 1);
    }
}
