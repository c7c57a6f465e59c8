//! Symbolic differentiation on the graph.
//!
//! - [`Graph::gradient`] is reverse mode (symbolic adjoints): one backward pass over the nodes
//!   of `V` that depend on `q`, O(|V|) work however many coordinates there are (forward mode,
//!   [`Graph::gradient_forward`], walks every sum chain once per coordinate: over 10× slower on
//!   the 120-coordinate test system, and slightly larger graphs).
//! - [`Graph::derivative`]`(n, v)` = ∂n/∂v, forward mode, node by node, memoized per
//!   `(node, direction)`. Every rule is written with the simplifying
//!   constructors and reuses the node being differentiated where the textbook formula allows
//!   it (`exp' = exp`, `sqrt' = 1/(2 sqrt)`, `tan' = 1 + tan²`, `tanh' = 1 - tanh²`,
//!   `(a/b)' = (a' - (a/b)·b')/b`, `(aᵇ)' = aᵇ·(...)`), so derivative graphs share most nodes with
//!   the original expression.
//! - Anything that does not depend on the direction has derivative 0 without being visited: the
//!   graph keeps, per node, the bitset of variables it depends on (see `graph.rs`).
//! - The traversal is iterative (operands before users, in id order) so deep expressions, e.g.
//!   sums of thousands of terms from unrolled loops, cannot overflow the stack.
//! - [`Graph::hessian`] computes the upper triangle `∂g_i/∂q_j`, `j ≥ i`, and mirrors it.
//! - [`Graph::third_contraction`] never builds the n³ tensor: with the directional derivative
//!   `D = Σ_k a_k ∂/∂q_k` (`a_k = Var::Dir(k)`), `T_i = D(D(∂V/∂q_i))`. `D` is a single pass over
//!   the gradient's graph (memoized across all `i`), so the cost is a small multiple of the
//!   gradient instead of n times the Hessian (see the `third_contraction_size` test, which
//!   measures the alternatives).

use super::graph::{FxHashMap, Graph, Node, NodeId};
use super::{Binary, Unary, Var, Wrt};

impl Graph {
    fn depends(&self, n: NodeId, wrt: Wrt) -> bool {
        match wrt {
            Wrt::Var(v) => self.depends_on_var(n, v),
            Wrt::QDir => self.depends_on_q(n),
        }
    }

    /// `∂n/∂wrt` (memoized; variables other than `wrt` are independent of it).
    pub fn derivative(&mut self, n: NodeId, wrt: Var) -> NodeId {
        self.diff(n, Wrt::Var(wrt))
    }

    /// The directional derivative `Σ_k a_k ∂n/∂q_k` with `a_k = Var::Dir(k)` (memoized).
    pub fn directional(&mut self, n: NodeId) -> NodeId {
        self.diff(n, Wrt::QDir)
    }

    fn diff(&mut self, n: NodeId, wrt: Wrt) -> NodeId {
        if !self.depends(n, wrt) {
            return self.constant(0.0);
        }
        if let Some(&d) = self.deriv_memo.get(&(n, wrt)) {
            return d;
        }
        // Collect the nodes below `n` that depend on `wrt` and are not memoized yet.
        let mut todo = Vec::new();
        let mut seen = FxHashMap::default();
        let mut stack = vec![n];
        seen.insert(n, ());
        while let Some(m) = stack.pop() {
            todo.push(m);
            for o in self.node(m).operands() {
                if self.depends(o, wrt)
                    && !self.deriv_memo.contains_key(&(o, wrt))
                    && seen.insert(o, ()).is_none()
                {
                    stack.push(o);
                }
            }
        }
        // Operands have smaller ids: increasing id order is a topological order.
        todo.sort_unstable();
        for m in todo {
            let d = self.diff_node(m, wrt);
            self.deriv_memo.insert((m, wrt), d);
        }
        self.deriv_memo[&(n, wrt)]
    }

    /// The derivative of an operand, which `diff` has already computed (or is 0).
    fn d_of(&mut self, o: NodeId, wrt: Wrt) -> NodeId {
        match self.deriv_memo.get(&(o, wrt)) {
            Some(&d) => d,
            None => self.constant(0.0),
        }
    }

    /// One differentiation rule, given the derivatives of the operands.
    fn diff_node(&mut self, n: NodeId, wrt: Wrt) -> NodeId {
        match *self.node(n) {
            Node::Const(_) => self.constant(0.0),
            Node::Var(v) => match wrt {
                Wrt::Var(w) if w == v => self.constant(1.0),
                Wrt::QDir => match v {
                    Var::Q(k) => self.var(Var::Dir(k)),
                    _ => self.constant(0.0),
                },
                Wrt::Var(_) => self.constant(0.0),
            },
            Node::Unary(op, a) => {
                let da = self.d_of(a, wrt);
                self.diff_unary(n, op, a, da)
            }
            Node::Powi(a, k) => {
                let da = self.d_of(a, wrt);
                self.diff_powi(n, a, k, da)
            }
            Node::Binary(op, a, b) => {
                let da = self.d_of(a, wrt);
                let db = self.d_of(b, wrt);
                self.diff_binary(n, op, a, b, da, db)
            }
            // Each branch differentiated on its own; the condition's indicator is piecewise
            // constant (its derivative, zero, is ignored at the boundary, where V may kink).
            Node::Select(c, a, b) => {
                let da = self.d_of(a, wrt);
                let db = self.d_of(b, wrt);
                self.select(c, da, db)
            }
        }
    }

    /// `k·a^(k-1)·a'` for `n = a.powi(k)`.
    fn diff_powi(&mut self, n: NodeId, a: NodeId, k: i32, da: NodeId) -> NodeId {
        let dp = match k.checked_sub(1) {
            Some(k1) => {
                let p = self.powi(a, k1);
                let kc = self.constant(f64::from(k));
                self.mul(kc, p)
            }
            None => {
                let kc = self.constant(f64::from(k));
                let kn = self.mul(kc, n);
                self.div(kn, a)
            }
        };
        self.mul(dp, da)
    }

    fn diff_unary(&mut self, n: NodeId, op: Unary, a: NodeId, da: NodeId) -> NodeId {
        match op {
            Unary::Neg => self.neg(da),
            // a' / (2 √a); in reciprocal mode ½ a' · (1/√a), sharing the 1/√a of the
            // expression (a Coulomb 1/r and its gradient: one division).
            Unary::Sqrt if self.reciprocals => {
                let half = self.constant(0.5);
                let h = self.mul(half, da);
                self.div(h, n)
            }
            Unary::Sqrt => {
                let two = self.constant(2.0);
                let den = self.mul(two, n);
                self.div(da, den)
            }
            Unary::Exp => self.mul(da, n),
            Unary::Ln => self.div(da, a),
            Unary::Sin => {
                let c = self.cos(a);
                self.mul(da, c)
            }
            Unary::Cos => {
                let s = self.sin(a);
                let p = self.mul(da, s);
                self.neg(p)
            }
            // a' (1 + tan²a)
            Unary::Tan => {
                let one = self.constant(1.0);
                let t2 = self.powi(n, 2);
                let f = self.add(one, t2);
                self.mul(da, f)
            }
            // a' (1 - tanh²a)
            Unary::Tanh => {
                let one = self.constant(1.0);
                let t2 = self.powi(n, 2);
                let f = self.sub(one, t2);
                self.mul(da, f)
            }
            // ∓a' / √(1 - a²)
            Unary::Acos | Unary::Asin => {
                let one = self.constant(1.0);
                let a2 = self.powi(a, 2);
                let r = self.sub(one, a2);
                let s = self.sqrt(r);
                let q = self.div(da, s);
                if op == Unary::Acos {
                    self.neg(q)
                } else {
                    q
                }
            }
            // a' / (1 + a²)
            Unary::Atan => {
                let one = self.constant(1.0);
                let a2 = self.powi(a, 2);
                let den = self.add(one, a2);
                self.div(da, den)
            }
            // ±a' · 2/√π · e^{−a²} (erfc = 1 − erf); the higher derivatives follow from
            // differentiating this expression again (−2a times it, …).
            Unary::Erf | Unary::Erfc => {
                let a2 = self.powi(a, 2);
                let m = self.neg(a2);
                let e = self.exp(m);
                let sign = if op == Unary::Erf { 1.0 } else { -1.0 };
                let c = self.constant(sign * core::f64::consts::FRAC_2_SQRT_PI);
                let ce = self.mul(c, e);
                self.mul(da, ce)
            }
        }
    }

    fn diff_binary(
        &mut self,
        n: NodeId,
        op: Binary,
        a: NodeId,
        b: NodeId,
        da: NodeId,
        db: NodeId,
    ) -> NodeId {
        match op {
            Binary::Add => self.add(da, db),
            Binary::Sub => self.sub(da, db),
            Binary::Mul => {
                let l = self.mul(da, b);
                let r = self.mul(a, db);
                self.add(l, r)
            }
            // (a' - (a/b) b') / b
            Binary::Div => {
                let t = self.mul(n, db);
                let num = self.sub(da, t);
                self.div(num, b)
            }
            Binary::Powf => {
                if !self.is_const(db, 0.0) {
                    // General rule: aᵇ (b' ln a + b a'/a).
                    let la = self.ln(a);
                    let t1 = self.mul(db, la);
                    let ba = self.mul(b, da);
                    let t2 = self.div(ba, a);
                    let s = self.add(t1, t2);
                    self.mul(n, s)
                } else {
                    // Exponent independent of the direction: b a^(b-1) a'.
                    let one = self.constant(1.0);
                    let b1 = self.sub(b, one);
                    let p = self.powf(a, b1);
                    let f = self.mul(b, p);
                    self.mul(f, da)
                }
            }
            Binary::Lt | Binary::Le => self.constant(0.0),
            // (x y' - y x') / (x² + y²) with (y, x) = (a, b)
            Binary::Atan2 => {
                let xdy = self.mul(b, da);
                let ydx = self.mul(a, db);
                let num = self.sub(xdy, ydx);
                let x2 = self.powi(b, 2);
                let y2 = self.powi(a, 2);
                let den = self.add(x2, y2);
                self.div(num, den)
            }
        }
    }

    /// `∂f/∂q_i` for `i` in `0..n_q`, forward mode: one [`Graph::derivative`] per coordinate.
    pub fn gradient_forward(&mut self, f: NodeId, n_q: usize) -> Vec<NodeId> {
        (0..n_q)
            .map(|i| self.derivative(f, Var::Q(i as u32)))
            .collect()
    }

    /// `∂f/∂q_i` for `i` in `0..n_q`, reverse mode (symbolic adjoints): one backward pass over
    /// the nodes of `f` that depend on `q`, so the cost is O(|f|) instead of O(n_q·|f|).
    ///
    /// Each node's adjoint `n̄ = ∂f/∂n` is the sum over its users `u` of `ū · ∂u/∂n`; the
    /// coordinates' adjoints are the gradient. Coordinates `Var::Q(k)` with `k ≥ n_q` are
    /// treated as constants.
    pub fn gradient(&mut self, f: NodeId, n_q: usize) -> Vec<NodeId> {
        let zero = self.constant(0.0);
        let mut grad = vec![zero; n_q];
        if !self.depends_on_q(f) {
            return grad;
        }
        // The nodes below f that depend on q, users before operands (decreasing id).
        let mut order = vec![f];
        let mut seen = FxHashMap::default();
        seen.insert(f, ());
        let mut i = 0;
        while i < order.len() {
            let m = order[i];
            i += 1;
            for o in self.node(m).operands() {
                if self.depends_on_q(o) && seen.insert(o, ()).is_none() {
                    order.push(o);
                }
            }
        }
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut adj: FxHashMap<NodeId, NodeId> = FxHashMap::default();
        adj.insert(f, self.constant(1.0));
        for m in order {
            let Some(&bar) = adj.get(&m) else { continue };
            if self.is_const(bar, 0.0) {
                continue;
            }
            let node = *self.node(m);
            if let Node::Var(Var::Q(k)) = node {
                if let Some(g) = grad.get_mut(k as usize) {
                    *g = bar;
                }
                continue;
            }
            let ops: Vec<NodeId> = node.operands().collect();
            for (slot, &o) in ops.iter().enumerate() {
                if !self.depends_on_q(o) {
                    continue;
                }
                let c = self.adjoint_contribution(m, node, slot, bar);
                let acc = match adj.get(&o) {
                    Some(&prev) => self.add(prev, c),
                    None => c,
                };
                adj.insert(o, acc);
            }
        }
        grad
    }

    /// `bar · ∂n/∂(operand number slot)` for `n` = `node`: the forward rules with the operand's
    /// derivative set to `bar` (and the other operand's to 0).
    fn adjoint_contribution(&mut self, n: NodeId, node: Node, slot: usize, bar: NodeId) -> NodeId {
        match node {
            Node::Const(_) | Node::Var(_) => self.constant(0.0),
            Node::Unary(op, a) => self.diff_unary(n, op, a, bar),
            Node::Powi(a, k) => self.diff_powi(n, a, k, bar),
            Node::Binary(op, a, b) => {
                let zero = self.constant(0.0);
                let (da, db) = if slot == 0 { (bar, zero) } else { (zero, bar) };
                self.diff_binary(n, op, a, b, da, db)
            }
            Node::Select(c, _, _) => {
                let zero = self.constant(0.0);
                match slot {
                    0 => zero,
                    1 => self.select(c, bar, zero),
                    _ => self.select(c, zero, bar),
                }
            }
        }
    }

    /// The Hessian of the function whose gradient is `grad` (w.r.t. `Var::Q(0..grad.len())`):
    /// `H[i][j] = ∂grad_i/∂q_j` computed for `j ≥ i` and mirrored, so `H[j][i] == H[i][j]` as
    /// node ids.
    pub fn hessian(&mut self, grad: &[NodeId]) -> Vec<Vec<NodeId>> {
        let n = grad.len();
        // upper[i][j - i] = ∂grad_i/∂q_j for j ≥ i.
        let upper: Vec<Vec<NodeId>> = (0..n)
            .map(|i| {
                (i..n)
                    .map(|j| self.derivative(grad[i], Var::Q(j as u32)))
                    .collect()
            })
            .collect();
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if j >= i {
                            upper[i][j - i]
                        } else {
                            upper[j][i - j]
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// The full third-derivative tensor `∂³V/∂q_i∂q_j∂q_k` from the Hessian `hess` of `V`, flat
    /// row-major (`n³` entries): `∂H_ij/∂q_k` computed for `i ≤ j ≤ k` and mirrored, so the six
    /// permutations of an index triple are the same node. For small terms only (`n³` nodes).
    #[allow(clippy::needless_range_loop)] // three indices into one flat tensor
    pub fn third_tensor(&mut self, hess: &[Vec<NodeId>]) -> Vec<NodeId> {
        let n = hess.len();
        let mut t = vec![self.constant(0.0); n * n * n];
        for i in 0..n {
            for j in i..n {
                for k in j..n {
                    let d = self.derivative(hess[i][j], Var::Q(k as u32));
                    for (a, b, c) in [
                        (i, j, k),
                        (i, k, j),
                        (j, i, k),
                        (j, k, i),
                        (k, i, j),
                        (k, j, i),
                    ] {
                        t[(a * n + b) * n + c] = d;
                    }
                }
            }
        }
        t
    }

    /// The Hessian-vector product `(H a)_i = Σ_j ∂²V/∂q_i∂q_j a_j` with `a_j = Var::Dir(j)`,
    /// from `grad = ∇V`: `D(grad_i)`, one directional derivative of the gradient (the Hessian
    /// is never formed: `n` outputs where it has `n²`).
    pub fn hessian_vector(&mut self, grad: &[NodeId]) -> Vec<NodeId> {
        grad.iter().map(|&g| self.directional(g)).collect()
    }

    /// `T_i = Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k` with `a_j = Var::Dir(j)`, from `grad = ∇V`:
    /// `T_i = D(D(grad_i))` with the directional derivative `D` (see the module docs).
    pub fn third_contraction(&mut self, grad: &[NodeId]) -> Vec<NodeId> {
        grad.iter()
            .map(|&g| {
                let d = self.directional(g);
                self.directional(d)
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops read best for matrices
mod tests {
    use super::super::{Graph, NodeId, Var};

    const P: [f64; 3] = [0.37, -0.61, 0.52];

    fn env_at(p: [f64; 3]) -> impl Fn(Var) -> f64 {
        move |v| match v {
            Var::Q(i) => p[i as usize],
            Var::Dir(j) => [0.3, -0.7, 0.45][j as usize],
            Var::Param(k) => 1.5 + k as f64,
            Var::Omega => 2.0,
            Var::Lambda(c) => 0.6 - 0.4 * f64::from(c),
        }
    }

    /// Central difference of the interpreter, `∂f/∂q_i` at `P`.
    fn fd(g: &Graph, f: NodeId, i: usize) -> f64 {
        let h = 1e-6;
        let (mut pp, mut pm) = (P, P);
        pp[i] += h;
        pm[i] -= h;
        (g.eval(f, &env_at(pp)) - g.eval(f, &env_at(pm))) / (2.0 * h)
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
    }

    /// Each rule, composed with non-trivial inner functions so the chain rule is exercised too.
    #[test]
    fn every_rule_matches_finite_differences() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let y = g.var(Var::Q(1));
        let z = g.var(Var::Q(2));
        let k = g.var(Var::Param(0));
        let xy = g.mul(x, y);
        let u = g.add(xy, z); // in (-1, 1) near P
        let x2 = g.powi(x, 2);
        let one = g.constant(1.0);
        let pos = g.add(one, x2); // > 0
        let ypos = g.exp(y); // > 0
        let third = g.constant(1.0 / 3.0);
        let c27 = g.constant(2.7);
        let cases: Vec<(&str, NodeId)> = vec![
            ("add", g.add(u, x2)),
            ("sub", g.sub(u, x2)),
            ("mul", g.mul(u, pos)),
            ("div", g.div(u, pos)),
            ("div const num", g.div(c27, pos)),
            ("powi 3", g.powi(u, 3)),
            ("powi -2", g.powi(pos, -2)),
            ("powf const exp", g.powf(pos, third)),
            ("powf var exp", g.powf(pos, u)),
            ("powf const base", g.powf(c27, u)),
            ("powf param exp", g.powf(pos, k)),
            ("neg", g.neg(u)),
            ("sqrt", g.sqrt(pos)),
            ("exp", g.exp(u)),
            ("ln", g.ln(pos)),
            ("sin", g.sin(u)),
            ("cos", g.cos(u)),
            ("tan", g.tan(u)),
            ("tanh", g.tanh(u)),
            ("acos", g.acos(u)),
            ("asin", g.asin(u)),
            ("atan", g.atan(u)),
            ("atan2", g.atan2(u, ypos)),
            ("atan2 swapped", g.atan2(ypos, u)),
        ];
        for (name, f) in cases {
            for i in 0..3 {
                let d = g.derivative(f, Var::Q(i as u32));
                let sym = g.eval(d, &env_at(P));
                let num = fd(&g, f, i);
                assert!(close(sym, num, 1e-7), "{name}, q{i}: {sym} vs {num}");
            }
        }
    }

    /// `select(x < 1 ∧ y ≤ x, x³, x·y)`: the value, the gradient (reverse and forward), the
    /// Hessian and the third contraction are those of the branch the point is in, on both
    /// sides; constant conditions and equal branches fold; indicators have zero derivative.
    #[test]
    fn select_is_differentiated_branch_by_branch() {
        let mut g = Graph::new();
        let (x, y) = (g.var(Var::Q(0)), g.var(Var::Q(1)));
        let one = g.constant(1.0);
        let lt = g.lt(x, one);
        let le = g.le(y, x);
        let c = g.mul(lt, le);
        let (a, b) = (g.powi(x, 3), g.mul(x, y));
        let f = g.select(c, a, b);
        assert_eq!(g.select(c, a, a), a);
        assert_eq!(g.select(one, a, b), a);
        let zero = g.constant(0.0);
        assert_eq!(g.select(zero, a, b), b);
        let two = g.constant(2.0);
        let (t, f2, dc) = (g.lt(one, two), g.le(two, one), g.derivative(c, Var::Q(0)));
        assert_eq!(g.as_const(t), Some(1.0));
        assert_eq!(g.as_const(f2), Some(0.0));
        assert_eq!(g.as_const(dc), Some(0.0));
        let grad = g.gradient(f, 2);
        let fwd = g.gradient_forward(f, 2);
        let hess = g.hessian(&grad);
        let third = g.third_contraction(&grad);
        for (p, inside) in [
            ([0.5, 0.2, 0.0], true),
            ([1.5, 0.2, 0.0], false),
            ([0.5, 0.9, 0.0], false),
        ] {
            let e = env_at(p);
            let (px, py) = (p[0], p[1]);
            let (da, dd) = ([0.3, -0.7], e(Var::Dir(0)));
            assert_eq!(dd, da[0]);
            let (v, gr, h, t) = if inside {
                let h = [[6.0 * px, 0.0], [0.0, 0.0]];
                (
                    px.powi(3),
                    [3.0 * px * px, 0.0],
                    h,
                    [6.0 * da[0] * da[0], 0.0],
                )
            } else {
                let h = [[0.0, 1.0], [1.0, 0.0]];
                (px * py, [py, px], h, [0.0, 0.0])
            };
            assert_eq!(g.eval(f, &e), v);
            for i in 0..2 {
                assert!(close(g.eval(grad[i], &e), gr[i], 1e-15), "∂{i} at {p:?}");
                assert!(close(g.eval(fwd[i], &e), gr[i], 1e-15));
                assert!(close(g.eval(third[i], &e), t[i], 1e-15), "T{i} at {p:?}");
                for j in 0..2 {
                    assert!(close(g.eval(hess[i][j], &e), h[i][j], 1e-15));
                }
            }
        }
    }

    #[test]
    fn independent_subgraphs_have_zero_derivative_and_memo_is_used() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let k = g.var(Var::Param(0));
        let s = g.sin(k);
        let e = g.exp(s);
        let f = g.mul(e, x);
        let zero = g.constant(0.0);
        assert_eq!(g.derivative(e, Var::Q(0)), zero);
        assert_eq!(g.derivative(f, Var::Q(1)), zero);
        assert_eq!(g.derivative(f, Var::Q(0)), e);
        let n = g.len();
        let d1 = g.derivative(f, Var::Param(0));
        let m = g.len();
        let d2 = g.derivative(f, Var::Param(0));
        assert_eq!(d1, d2);
        assert_eq!(g.len(), m);
        assert!(m > n);
        // The derivative w.r.t. a variable the graph has never seen.
        assert_eq!(g.derivative(f, Var::Omega), zero);
    }

    #[test]
    fn reuses_the_differentiated_node() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let e = g.exp(x);
        assert_eq!(g.derivative(e, Var::Q(0)), e);
        let s = g.sqrt(x);
        let n = g.len();
        let _ = g.derivative(s, Var::Q(0));
        // 2·sqrt(x) and 1/(2·sqrt(x)): no new sqrt node.
        assert!(g.nodes()[n..]
            .iter()
            .all(|node| !matches!(node, super::Node::Unary(super::Unary::Sqrt, _))));
    }

    #[test]
    fn gradient_hessian_third_contraction() {
        let mut g = Graph::new();
        let q: Vec<_> = (0..3).map(|i| g.var(Var::Q(i))).collect();
        // V = exp(q0 q1) sin(q2) + (q0² + q1² + q2²)² / 4 + atan2(q1, 1 + q0²)
        let p01 = g.mul(q[0], q[1]);
        let e = g.exp(p01);
        let s = g.sin(q[2]);
        let t1 = g.mul(e, s);
        let sq: Vec<_> = q.iter().map(|&x| g.powi(x, 2)).collect();
        let r2 = g.sum(sq.iter().copied());
        let r4 = g.powi(r2, 2);
        let quarter = g.constant(0.25);
        let t2 = g.mul(quarter, r4);
        let one = g.constant(1.0);
        let den = g.add(one, sq[0]);
        let t3 = g.atan2(q[1], den);
        let v = g.sum([t1, t2, t3]);

        let grad = g.gradient(v, 3);
        let hess = g.hessian(&grad);
        let third = g.third_contraction(&grad);
        let env = env_at(P);
        for i in 0..3 {
            assert!(close(g.eval(grad[i], &env), fd(&g, v, i), 1e-7));
            for j in 0..3 {
                assert_eq!(hess[i][j], hess[j][i]);
                assert!(close(g.eval(hess[i][j], &env), fd(&g, grad[i], j), 1e-7));
            }
        }
        // T_i = Σ_jk ∂H_ij/∂q_k a_j a_k, computed the naive way.
        let a: Vec<_> = (0..3).map(|j| g.var(Var::Dir(j))).collect();
        for i in 0..3 {
            let mut terms = Vec::new();
            for j in 0..3 {
                for k in 0..3 {
                    let d = g.derivative(hess[i][j], Var::Q(k as u32));
                    let aa = g.mul(a[j], a[k]);
                    terms.push(g.mul(d, aa));
                }
            }
            let naive = g.sum(terms);
            let (t, n) = (g.eval(third[i], &env), g.eval(naive, &env));
            assert!(close(t, n, 1e-12), "T_{i}: {t} vs {n}");
        }
        // Against finite differences of the gradient along a: d²/dε² ∇V(q + εa).
        let eps = 1e-4;
        let dir = [0.3, -0.7, 0.45];
        let shifted = |s: f64| {
            let p = [P[0] + s * dir[0], P[1] + s * dir[1], P[2] + s * dir[2]];
            g.eval_many(&grad, &env_at(p))
        };
        let (gp, g0, gm) = (shifted(eps), shifted(0.0), shifted(-eps));
        for i in 0..3 {
            let num = (gp[i] - 2.0 * g0[i] + gm[i]) / (eps * eps);
            assert!(close(g.eval(third[i], &env), num, 1e-5));
        }
        // The full tensor: symmetric as node ids, and contracting it twice with a gives T.
        let tensor = g.third_tensor(&hess);
        let tv = g.eval_many(&tensor, &env);
        let at = |i: usize, j: usize, k: usize| (i * 3 + j) * 3 + k;
        for i in 0..3 {
            for j in 0..3 {
                for k in 0..3 {
                    assert_eq!(tensor[at(i, j, k)], tensor[at(k, i, j)]);
                    assert_eq!(tensor[at(i, j, k)], tensor[at(j, i, k)]);
                    // Against finite differences of the Hessian.
                    let num = fd(&g, hess[i][j], k);
                    assert!(close(tv[at(i, j, k)], num, 1e-6), "{i}{j}{k}");
                }
            }
            let contracted: f64 = (0..3)
                .flat_map(|j| (0..3).map(move |k| (j, k)))
                .map(|(j, k)| tv[at(i, j, k)] * dir[j] * dir[k])
                .sum();
            assert!(close(contracted, g.eval(third[i], &env), 1e-12));
        }
    }

    #[test]
    fn reverse_and_forward_gradients_agree() {
        let mut g = Graph::new();
        let q: Vec<_> = (0..3).map(|i| g.var(Var::Q(i))).collect();
        let k = g.var(Var::Param(0));
        // Shared subexpressions used several times, every kind of node.
        let r2 = {
            let sq: Vec<_> = q.iter().map(|&x| g.powi(x, 2)).collect();
            g.sum(sq)
        };
        let r = g.sqrt(r2);
        let e = g.exp(r);
        let a = g.atan2(q[1], e);
        let d = g.div(q[0], e);
        let p = g.powf(e, q[2]);
        let kp = g.powf(r2, k);
        let s = g.sin(a);
        let t = g.tan(d);
        let l = g.ln(r2);
        let c = g.cos(p);
        let th = g.tanh(l);
        let at = g.atan(kp);
        let half = g.constant(0.5);
        let hd = g.mul(half, d);
        let asn = g.asin(hd);
        let acs = g.acos(hd);
        let ng = g.neg(acs);
        let pw = g.powi(r, -3);
        let v = g.sum([s, t, c, th, at, asn, ng, pw, e, a]);
        let rev = g.gradient(v, 3);
        let fwd = g.gradient_forward(v, 3);
        let env = env_at(P);
        for i in 0..3 {
            let (x, y) = (g.eval(rev[i], &env), g.eval(fwd[i], &env));
            assert!(close(x, y, 1e-13), "q{i}: {x} vs {y}");
            assert!(close(x, fd(&g, v, i), 1e-7));
        }
        // A function of parameters only; coordinates beyond n_q are constants.
        let zero = g.constant(0.0);
        assert_eq!(g.gradient(k, 3), vec![zero; 3]);
        let two = g.gradient(v, 2);
        assert_eq!(two, rev[..2].to_vec());
    }

    #[test]
    fn deep_graphs_do_not_overflow_the_stack() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let mut acc = x;
        for i in 0..50_000 {
            let c = g.constant(1.0 + (i % 7) as f64 * 1e-6);
            let t = g.mul(c, acc);
            acc = g.sin(t);
        }
        let d = g.derivative(acc, Var::Q(0));
        assert!(g.eval(d, &env_at(P)).is_finite());
        let grad = g.gradient(acc, 1);
        assert!(g.eval(grad[0], &env_at(P)).is_finite());
    }
}
