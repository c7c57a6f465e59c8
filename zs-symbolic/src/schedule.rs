//! Scheduling: turn the nodes needed by many outputs into one straight-line [`Program`].
//!
//! Because the graph is hash-consed, equal subexpressions are already one node; scheduling the
//! union of everything reachable from *all* outputs, each node once, is therefore common-
//! subexpression elimination across the outputs (e.g. the gradient, the Hessian and the third
//! contraction share most of their intermediate values). Constants and variables are not
//! instructions: they appear inline as [`Operand`]s.
//!
//! The front end emits one `let tK: f64 = ...;` per instruction, in order (`K` is the
//! instruction's `dst`), then builds the outputs from [`Program::outputs`].

use std::collections::BTreeSet;

use super::graph::{Graph, Node, NodeId};
use super::interp::Scalar;
use super::{Binary, Unary, Var};

/// An operand of an instruction or an output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operand {
    /// A literal constant (finite unless the user wrote a non-finite one).
    Const(f64),
    /// A leaf variable (`q[i]`, `a[j]`, a parameter, `omega`).
    Var(Var),
    /// The result of instruction `dst == K`: the temporary `tK`.
    Temp(u32),
}

/// One instruction: `t{dst} = op(operands)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Instr {
    /// `t{dst} = op(a)`; `Unary::Neg` is `-a`.
    Unary { dst: u32, op: Unary, a: Operand },
    /// `t{dst} = a op b`; `Atan2` is `a.atan2(b)`, `Powf` is `a.powf(b)`.
    Binary {
        dst: u32,
        op: Binary,
        a: Operand,
        b: Operand,
    },
    /// `t{dst} = a.powi(n)`.
    Powi { dst: u32, a: Operand, n: i32 },
    /// `t{dst} = if c != 0 { a } else { b }` (both computed: a select, not a jump).
    Select {
        dst: u32,
        c: Operand,
        a: Operand,
        b: Operand,
    },
}

impl Instr {
    /// The temporary this instruction defines.
    pub fn dst(&self) -> u32 {
        match *self {
            Instr::Unary { dst, .. }
            | Instr::Binary { dst, .. }
            | Instr::Powi { dst, .. }
            | Instr::Select { dst, .. } => dst,
        }
    }

    /// The operands this instruction reads.
    pub fn operands(&self) -> impl Iterator<Item = Operand> {
        let (a, b, c) = match *self {
            Instr::Unary { a, .. } | Instr::Powi { a, .. } => (a, None, None),
            Instr::Binary { a, b, .. } => (a, Some(b), None),
            Instr::Select { c, a, b, .. } => (c, Some(a), Some(b)),
        };
        std::iter::once(a).chain(b).chain(c)
    }
}

/// A straight-line program computing several outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The instructions, in execution order; instruction `k` defines temporary `k`
    /// (`instrs[k].dst() == k`).
    pub instrs: Vec<Instr>,
    /// One operand per requested output, in the order of the `outputs` given to [`schedule`].
    pub outputs: Vec<Operand>,
    /// `uses[k]` = how many times temporary `k` is read, by instructions and by outputs (an
    /// output listed twice counts twice). A front end may inline temporaries used once.
    pub uses: Vec<u32>,
}

impl Program {
    /// Number of instructions.
    pub fn len(&self) -> usize {
        self.instrs.len()
    }

    /// Whether there are no instructions (every output is a constant or a variable).
    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }

    /// The leaf variables the program reads, sorted.
    pub fn vars(&self) -> BTreeSet<Var> {
        self.instrs
            .iter()
            .flat_map(Instr::operands)
            .chain(self.outputs.iter().copied())
            .filter_map(|o| match o {
                Operand::Var(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    /// Run the program (the instruction list, not the graph) with the leaf variables from `env`.
    pub fn eval(&self, env: &dyn Fn(Var) -> f64) -> Vec<f64> {
        self.eval_generic(env)
    }

    /// [`Program::eval`] in any [`Scalar`] type.
    pub fn eval_generic<T: Scalar>(&self, env: &dyn Fn(Var) -> T) -> Vec<T> {
        let mut temps: Vec<T> = Vec::with_capacity(self.instrs.len());
        let val = |temps: &[T], o: Operand| -> T {
            match o {
                Operand::Const(c) => T::from_f64(c),
                Operand::Var(v) => env(v),
                Operand::Temp(k) => temps[k as usize].clone(),
            }
        };
        for ins in &self.instrs {
            let v = match *ins {
                Instr::Unary { op, a, .. } => val(&temps, a).unary(op),
                Instr::Binary { op, a, b, .. } => val(&temps, a).binary(op, &val(&temps, b)),
                Instr::Powi { a, n, .. } => val(&temps, a).powi(n),
                Instr::Select { c, a, b, .. } => {
                    if val(&temps, c).is_true() {
                        val(&temps, a)
                    } else {
                        val(&temps, b)
                    }
                }
            };
            temps.push(v);
        }
        self.outputs.iter().map(|&o| val(&temps, o)).collect()
    }
}

/// Schedule every node reachable from `outputs` exactly once, operands before users
/// (increasing node id, which is a topological order), with dense temporaries `0..len`.
pub fn schedule(graph: &Graph, outputs: &[NodeId]) -> Program {
    let Some(max) = outputs.iter().max() else {
        return Program {
            instrs: Vec::new(),
            outputs: Vec::new(),
            uses: Vec::new(),
        };
    };
    let mut needed = vec![false; max.index() + 1];
    for &n in outputs {
        needed[n.index()] = true;
    }
    for i in (0..needed.len()).rev() {
        if needed[i] {
            for o in graph.node(NodeId(i as u32)).operands() {
                needed[o.index()] = true;
            }
        }
    }
    // operand[i] = how node i is referred to once scheduled.
    let mut operand: Vec<Option<Operand>> = vec![None; needed.len()];
    let mut instrs = Vec::new();
    let mut uses: Vec<u32> = Vec::new();
    let read = |operand: &[Option<Operand>], uses: &mut Vec<u32>, n: NodeId| -> Operand {
        let o = operand[n.index()].expect("operands are scheduled before their users");
        if let Operand::Temp(k) = o {
            uses[k as usize] += 1;
        }
        o
    };
    for (i, _) in needed.iter().enumerate().filter(|(_, &b)| b) {
        let dst = instrs.len() as u32;
        let ins = match *graph.node(NodeId(i as u32)) {
            Node::Const(c) => {
                operand[i] = Some(Operand::Const(c.value()));
                continue;
            }
            Node::Var(v) => {
                operand[i] = Some(Operand::Var(v));
                continue;
            }
            Node::Unary(op, a) => Instr::Unary {
                dst,
                op,
                a: read(&operand, &mut uses, a),
            },
            Node::Powi(a, n) => Instr::Powi {
                dst,
                a: read(&operand, &mut uses, a),
                n,
            },
            Node::Binary(op, a, b) => Instr::Binary {
                dst,
                op,
                a: read(&operand, &mut uses, a),
                b: read(&operand, &mut uses, b),
            },
            Node::Select(c, a, b) => Instr::Select {
                dst,
                c: read(&operand, &mut uses, c),
                a: read(&operand, &mut uses, a),
                b: read(&operand, &mut uses, b),
            },
        };
        instrs.push(ins);
        uses.push(0);
        operand[i] = Some(Operand::Temp(dst));
    }
    let outputs = outputs
        .iter()
        .map(|&n| read(&operand, &mut uses, n))
        .collect();
    Program {
        instrs,
        outputs,
        uses,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::super::{Graph, Var};
    use super::*;

    fn env(v: Var) -> f64 {
        match v {
            Var::Q(i) => 0.3 + 0.2 * i as f64,
            Var::Dir(j) => 1.0 - 0.5 * j as f64,
            Var::Param(k) => 2.0 + k as f64,
            Var::Omega => 5.0,
            Var::Lambda(c) => -1.5 + f64::from(c),
        }
    }

    #[test]
    fn each_node_once_dense_temps_and_same_values() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let y = g.var(Var::Q(1));
        let k = g.var(Var::Param(0));
        let xy = g.mul(x, y);
        let s = g.sin(xy);
        let c = g.cos(xy);
        let f = g.add(s, c);
        let kf = g.mul(k, f);
        let two = g.constant(2.0);
        let e = g.powi(s, 3);
        let outputs = [f, kf, xy, s, e, two, y, f];
        let p = schedule(&g, &outputs);
        // xy, sin, cos, add, k·f, powi: 6 distinct non-leaf nodes.
        assert_eq!(p.len(), 6);
        let keys: HashSet<String> = p
            .instrs
            .iter()
            .map(|i| match *i {
                Instr::Unary { op, a, .. } => format!("{op:?}{a:?}"),
                Instr::Binary { op, a, b, .. } => format!("{op:?}{a:?}{b:?}"),
                Instr::Powi { a, n, .. } => format!("powi{a:?}{n}"),
                Instr::Select { c, a, b, .. } => format!("select{c:?}{a:?}{b:?}"),
            })
            .collect();
        assert_eq!(keys.len(), p.len(), "no instruction is computed twice");
        for (k, ins) in p.instrs.iter().enumerate() {
            assert_eq!(ins.dst() as usize, k);
            for o in ins.operands() {
                if let Operand::Temp(t) = o {
                    assert!((t as usize) < k, "operands defined before use");
                }
            }
        }
        assert_eq!(p.outputs[5], Operand::Const(2.0));
        assert_eq!(p.outputs[6], Operand::Var(Var::Q(1)));
        assert_eq!(p.outputs[0], p.outputs[7]);
        // uses: reads by instructions + outputs.
        let mut uses = vec![0u32; p.len()];
        for o in p
            .instrs
            .iter()
            .flat_map(Instr::operands)
            .chain(p.outputs.iter().copied())
        {
            if let Operand::Temp(t) = o {
                uses[t as usize] += 1;
            }
        }
        assert_eq!(p.uses, uses);
        let want = g.eval_many(&outputs, &env);
        assert_eq!(p.eval(&env), want);
        let vars: Vec<_> = p.vars().into_iter().collect();
        assert_eq!(vars, vec![Var::Q(0), Var::Q(1), Var::Param(0)]);
    }

    #[test]
    fn unreachable_nodes_are_not_scheduled_and_empty_outputs() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let unused = g.exp(x);
        let _ = g.sin(unused);
        let f = g.cos(x);
        let p = schedule(&g, &[f]);
        assert_eq!(p.len(), 1);
        assert_eq!(p.eval(&env), vec![0.3f64.cos()]);
        let p = schedule(&g, &[]);
        assert!(p.is_empty() && p.outputs.is_empty());
        let p = schedule(&g, &[x]);
        assert!(p.is_empty());
        assert_eq!(p.outputs, vec![Operand::Var(Var::Q(0))]);
    }

    #[test]
    fn derivatives_share_with_the_function() {
        let mut g = Graph::new();
        let q: Vec<_> = (0..3).map(|i| g.var(Var::Q(i))).collect();
        let r2 = {
            let sq: Vec<_> = q.iter().map(|&x| g.powi(x, 2)).collect();
            g.sum(sq)
        };
        let r = g.sqrt(r2);
        let v = g.exp(r);
        let grad = g.gradient(v, 3);
        let alone = schedule(&g, &[v]).len() + schedule(&g, &grad).len();
        let mut all = vec![v];
        all.extend(&grad);
        let together = schedule(&g, &all).len();
        assert!(together < alone, "{together} vs {alone}");
    }
}
