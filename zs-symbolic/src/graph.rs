//! The hash-consed expression DAG.
//!
//! Every node lives once in [`Graph::nodes`]; a `HashMap<Node, NodeId>` maps a node to its id,
//! so building the same expression twice returns the same [`NodeId`] ("hash-consing"). Together
//! with the canonical operand order of commutative operations imposed by `simplify.rs`, this
//! gives common-subexpression elimination for free: the scheduler only has to compute each
//! reachable node once.
//!
//! Invariant: the operands of a node always have smaller ids than the node itself (a node is
//! interned only after its operands exist), so increasing id order is a topological order.
//!
//! Each node also records the set of leaf variables it depends on, as a bitset over the graph's
//! dense variable numbering (shared via `Rc` between a node and its operand when they are equal),
//! so `depends_on` and the "derivative of a constant is zero" short-cut in `diff.rs` are cheap
//! even for large graphs.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use super::{Binary, Unary, Var, Wrt};

/// A fast non-cryptographic hasher (the multiply-rotate scheme of rustc's `FxHasher`): the
/// engine's maps are keyed by small fixed-size values it creates itself, and SipHash dominated
/// the profile of large derivative graphs.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.add(i as u32 as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn write_isize(&mut self, i: isize) {
        self.add(i as u64);
    }
    /// The state through MurmurHash3's 64-bit finaliser: a product's low bits depend only on
    /// the words' low bits, and the map picks a bucket by the low bits, so without it constants
    /// whose bits end in zeros (1.0, 2.0, 3.0, … : a loop's running count) all collided and
    /// interning them was quadratic.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// `HashMap` with [`FxHasher`].
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Index of a node in a [`Graph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The id as a `usize` index into the graph's node list.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The bits of an `f64` constant, so that constants can be hashed and compared exactly.
///
/// `-0.0` is canonicalised to `0.0` and every NaN to one quiet NaN, so equal-valued constants are
/// one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConstBits(u64);

impl ConstBits {
    /// Canonical bits of `x`.
    pub fn new(x: f64) -> Self {
        let x = if x == 0.0 {
            0.0
        } else if x.is_nan() {
            f64::NAN
        } else {
            x
        };
        ConstBits(x.to_bits())
    }

    /// The value.
    #[inline]
    pub fn value(self) -> f64 {
        f64::from_bits(self.0)
    }
}

/// One node of the expression DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    /// A constant.
    Const(ConstBits),
    /// A leaf variable.
    Var(Var),
    /// A unary function (including negation) of one node.
    Unary(Unary, NodeId),
    /// A binary operation; for `Atan2` the operands are `(y, x)`, for `Powf` `(base, exponent)`.
    Binary(Binary, NodeId, NodeId),
    /// Integer power `a.powi(n)`.
    Powi(NodeId, i32),
    /// `Select(c, a, b)`: `a` where `c ≠ 0`, else `b` (a piecewise term; `c` is an indicator).
    Select(NodeId, NodeId, NodeId),
}

impl Node {
    /// The operands of this node (zero to three).
    pub fn operands(&self) -> impl Iterator<Item = NodeId> {
        let (a, b, c) = match *self {
            Node::Const(_) | Node::Var(_) => (None, None, None),
            Node::Unary(_, a) | Node::Powi(a, _) => (Some(a), None, None),
            Node::Binary(_, a, b) => (Some(a), Some(b), None),
            Node::Select(c, a, b) => (Some(c), Some(a), Some(b)),
        };
        a.into_iter().chain(b).chain(c)
    }
}

/// A hash-consed expression DAG whose constructors simplify (see `simplify.rs`).
#[derive(Debug, Clone)]
pub struct Graph {
    nodes: Vec<Node>,
    index: FxHashMap<Node, NodeId>,
    /// Per node: bitset of the dense indices (into `vars`) of the variables it depends on.
    deps: Vec<Rc<[u64]>>,
    /// Per node: whether it depends on some `Var::Q(_)`.
    dep_q: Vec<bool>,
    /// Dense numbering of the variables seen so far.
    vars: Vec<Var>,
    var_index: FxHashMap<Var, u32>,
    /// The empty bitset, shared by all constants.
    no_deps: Rc<[u64]>,
    /// Memo of `derivative` (see `diff.rs`).
    pub(super) deriv_memo: FxHashMap<(NodeId, Wrt), NodeId>,
    /// Reciprocal mode ([`Graph::with_reciprocals`]): `a / b` is built as `a · (1/b)`.
    pub(super) reciprocals: bool,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Graph {
            nodes: Vec::new(),
            index: FxHashMap::default(),
            deps: Vec::new(),
            dep_q: Vec::new(),
            vars: Vec::new(),
            var_index: FxHashMap::default(),
            no_deps: Rc::from(Vec::new()),
            deriv_memo: FxHashMap::default(),
            reciprocals: false,
        }
    }

    /// Runs `f` in reciprocal mode: every division by a non-constant `b` is built as a product
    /// with the one (hash-consed) node `1/b`, so that an expression and its derivatives —
    /// `d(1/b) = −(1/b)² b'` — divide by each denominator once. Derivatives taken inside `f`
    /// have their own memo (those taken outside were built with divisions).
    pub fn with_reciprocals<R>(&mut self, f: impl FnOnce(&mut Graph) -> R) -> R {
        let outer = std::mem::take(&mut self.deriv_memo);
        let was = std::mem::replace(&mut self.reciprocals, true);
        let r = f(self);
        self.reciprocals = was;
        self.deriv_memo = outer;
        r
    }

    /// `root` built again through the constructors (so under the current mode: in reciprocal
    /// mode, with its divisions rewritten).
    pub fn rebuild(&mut self, root: NodeId) -> NodeId {
        let mut reachable = vec![false; root.index() + 1];
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if !std::mem::replace(&mut reachable[n.index()], true) {
                stack.extend(self.node(n).operands());
            }
        }
        // Ids are topological: operands before the nodes that use them.
        let mut new = vec![NodeId(0); root.index() + 1];
        for i in (0..=root.index()).filter(|&i| reachable[i]) {
            let m = |k: NodeId| new[k.index()];
            new[i] = match self.nodes[i] {
                Node::Const(_) | Node::Var(_) => NodeId(i as u32),
                Node::Unary(op, a) => self.unary(op, m(a)),
                Node::Binary(op, a, b) => self.binary(op, m(a), m(b)),
                Node::Powi(a, k) => self.powi(m(a), k),
                Node::Select(c, a, b) => self.select(m(c), m(a), m(b)),
            };
        }
        new[root.index()]
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node with id `id`.
    ///
    /// # Panics
    /// If `id` does not belong to this graph.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// All nodes, in id (= topological) order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Intern `node` without simplification: return the existing id or append it.
    pub(super) fn intern(&mut self, node: Node) -> NodeId {
        if let Some(&id) = self.index.get(&node) {
            return id;
        }
        let deps = self.deps_of(&node);
        let dep_q = match node {
            Node::Const(_) => false,
            Node::Var(v) => matches!(v, Var::Q(_)),
            _ => node.operands().any(|o| self.dep_q[o.index()]),
        };
        self.dep_q.push(dep_q);
        let id = NodeId(u32::try_from(self.nodes.len()).expect("more than 2^32 graph nodes"));
        self.nodes.push(node);
        self.deps.push(deps);
        self.index.insert(node, id);
        id
    }

    fn deps_of(&mut self, node: &Node) -> Rc<[u64]> {
        match *node {
            Node::Const(_) => self.no_deps.clone(),
            Node::Var(v) => {
                let k = self.var_slot(v) as usize;
                let mut bits = vec![0u64; k / 64 + 1];
                bits[k / 64] |= 1 << (k % 64);
                bits.into()
            }
            Node::Unary(_, a) | Node::Powi(a, _) => self.deps[a.index()].clone(),
            Node::Binary(_, a, b) => self.union(a, b),
            Node::Select(c, a, b) => {
                let ab = self.union(a, b);
                let dc = &self.deps[c.index()];
                if is_subset(dc, &ab) {
                    ab
                } else {
                    let n = dc.len().max(ab.len());
                    let get = |d: &[u64], i: usize| d.get(i).copied().unwrap_or(0);
                    (0..n).map(|i| get(dc, i) | get(&ab, i)).collect()
                }
            }
        }
    }

    /// The variables `a` or `b` depends on (shared with one of them when it is the union).
    fn union(&self, a: NodeId, b: NodeId) -> Rc<[u64]> {
        let (da, db) = (&self.deps[a.index()], &self.deps[b.index()]);
        if is_subset(db, da) {
            da.clone()
        } else if is_subset(da, db) {
            db.clone()
        } else {
            let n = da.len().max(db.len());
            let get = |d: &[u64], i: usize| d.get(i).copied().unwrap_or(0);
            (0..n).map(|i| get(da, i) | get(db, i)).collect()
        }
    }

    fn var_slot(&mut self, v: Var) -> u32 {
        if let Some(&k) = self.var_index.get(&v) {
            return k;
        }
        let k = self.vars.len() as u32;
        self.vars.push(v);
        self.var_index.insert(v, k);
        k
    }

    // ----- constructors (all simplify and hash-cons) -----

    /// The constant `x`.
    pub fn constant(&mut self, x: f64) -> NodeId {
        self.intern(Node::Const(ConstBits::new(x)))
    }

    /// The leaf variable `v`.
    pub fn var(&mut self, v: Var) -> NodeId {
        self.intern(Node::Var(v))
    }

    /// `op(a)`, simplified.
    pub fn unary(&mut self, op: Unary, a: NodeId) -> NodeId {
        match self.simplify_unary(op, a) {
            Some(id) => id,
            None => self.intern(Node::Unary(op, a)),
        }
    }

    /// `op(a, b)`, simplified (operands of `Add`/`Mul` put in canonical order).
    pub fn binary(&mut self, op: Binary, a: NodeId, b: NodeId) -> NodeId {
        if self.reciprocals
            && op == Binary::Div
            && self.as_const(b).is_none()
            && self.as_const(a) != Some(1.0)
        {
            let one = self.constant(1.0);
            let r = self.binary(Binary::Div, one, b);
            return self.mul(a, r);
        }
        match self.simplify_binary(op, a, b) {
            Some(id) => id,
            None => {
                let (a, b) = if matches!(op, Binary::Add | Binary::Mul) {
                    self.canonical_pair(a, b)
                } else {
                    (a, b)
                };
                self.intern(Node::Binary(op, a, b))
            }
        }
    }

    /// `a.powi(n)`, simplified.
    pub fn powi(&mut self, a: NodeId, n: i32) -> NodeId {
        match self.simplify_powi(a, n) {
            Some(id) => id,
            None => self.intern(Node::Powi(a, n)),
        }
    }

    /// `a + b`.
    pub fn add(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Add, a, b)
    }
    /// `a - b`.
    pub fn sub(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Sub, a, b)
    }
    /// `a * b`.
    pub fn mul(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Mul, a, b)
    }
    /// `a / b`.
    pub fn div(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Div, a, b)
    }
    /// `a.powf(b)`.
    pub fn powf(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Powf, a, b)
    }
    /// The indicator of `a < b` (`1.0` or `0.0`).
    pub fn lt(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Lt, a, b)
    }
    /// The indicator of `a ≤ b` (`1.0` or `0.0`).
    pub fn le(&mut self, a: NodeId, b: NodeId) -> NodeId {
        self.binary(Binary::Le, a, b)
    }
    /// `a` where the indicator `c` is nonzero, else `b`; simplified (a constant condition picks
    /// its branch, equal branches are the branch).
    pub fn select(&mut self, c: NodeId, a: NodeId, b: NodeId) -> NodeId {
        if a == b {
            return a;
        }
        if let Some(k) = self.as_const(c) {
            if !k.is_nan() {
                return if k != 0.0 { a } else { b };
            }
        }
        self.intern(Node::Select(c, a, b))
    }
    /// `y.atan2(x)` (the angle of the point `(x, y)`).
    pub fn atan2(&mut self, y: NodeId, x: NodeId) -> NodeId {
        self.binary(Binary::Atan2, y, x)
    }
    /// `-a`.
    pub fn neg(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Neg, a)
    }
    /// `a.sqrt()`.
    pub fn sqrt(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Sqrt, a)
    }
    /// `a.exp()`.
    pub fn exp(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Exp, a)
    }
    /// `a.ln()`.
    pub fn ln(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Ln, a)
    }
    /// `a.sin()`.
    pub fn sin(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Sin, a)
    }
    /// `a.cos()`.
    pub fn cos(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Cos, a)
    }
    /// `a.tan()`.
    pub fn tan(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Tan, a)
    }
    /// `a.tanh()`.
    pub fn tanh(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Tanh, a)
    }
    /// `a.acos()`.
    pub fn acos(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Acos, a)
    }
    /// `a.asin()`.
    pub fn asin(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Asin, a)
    }
    /// `a.atan()`.
    pub fn atan(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Atan, a)
    }
    /// `erf(a)`.
    pub fn erf(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Erf, a)
    }
    /// `erfc(a)`.
    pub fn erfc(&mut self, a: NodeId) -> NodeId {
        self.unary(Unary::Erfc, a)
    }

    /// Sum of `terms` (the constant 0 when empty).
    pub fn sum(&mut self, terms: impl IntoIterator<Item = NodeId>) -> NodeId {
        let mut it = terms.into_iter();
        let Some(mut acc) = it.next() else {
            return self.constant(0.0);
        };
        for t in it {
            acc = self.add(acc, t);
        }
        acc
    }

    // ----- queries -----

    /// The value of `n` if it is a constant.
    pub fn as_const(&self, n: NodeId) -> Option<f64> {
        match self.nodes[n.index()] {
            Node::Const(c) => Some(c.value()),
            _ => None,
        }
    }

    /// Whether `n` is the constant `x` (exactly).
    pub(super) fn is_const(&self, n: NodeId, x: f64) -> bool {
        self.as_const(n) == Some(x)
    }

    /// Whether `n` depends on some variable `v` with `pred(v)`.
    pub fn depends_on(&self, n: NodeId, pred: impl Fn(Var) -> bool) -> bool {
        self.vars_of(n).any(pred)
    }

    /// Whether `n` depends on some coordinate `Var::Q(_)` (O(1)).
    pub fn depends_on_q(&self, n: NodeId) -> bool {
        self.dep_q[n.index()]
    }

    /// Whether `n` depends on the variable `v` (O(1)).
    pub fn depends_on_var(&self, n: NodeId, v: Var) -> bool {
        let Some(&k) = self.var_index.get(&v) else {
            return false;
        };
        let k = k as usize;
        self.deps[n.index()]
            .get(k / 64)
            .is_some_and(|w| w & (1 << (k % 64)) != 0)
    }

    /// The variables `n` depends on, in the graph's (creation) order.
    pub fn vars_of(&self, n: NodeId) -> impl Iterator<Item = Var> + '_ {
        let bits = &self.deps[n.index()];
        bits.iter().enumerate().flat_map(move |(w, &word)| {
            (0..64)
                .filter(move |b| word & (1u64 << b) != 0)
                .map(move |b| self.vars[w * 64 + b])
        })
    }

    /// Canonical operand order for commutative operations: constants first, then by id.
    fn canonical_pair(&self, a: NodeId, b: NodeId) -> (NodeId, NodeId) {
        let key = |n: NodeId| (self.as_const(n).is_none(), n);
        if key(b) < key(a) {
            (b, a)
        } else {
            (a, b)
        }
    }
}

impl Default for Graph {
    fn default() -> Self {
        Self::new()
    }
}

fn is_subset(small: &[u64], big: &[u64]) -> bool {
    small
        .iter()
        .enumerate()
        .all(|(i, &w)| w & !big.get(i).copied().unwrap_or(0) == 0)
}
