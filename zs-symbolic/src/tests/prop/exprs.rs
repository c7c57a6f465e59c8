//! Random expression DAGs: primitive operations on earlier entries, shallow and deep.

use super::*;

/// One primitive operation of a random expression; operands are indices of earlier ops.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    Q(u32),
    C(f64),
    Un(Unary, usize),
    Bin(Binary, usize, usize),
    Powi(usize, i32),
}

/// Raw random choices of the shallow generator: (kind, operand, operand, real, small int).
pub(super) type Raw = (u8, u32, u32, f64, u8);

pub(super) const SPECIAL: [f64; 8] = [0.0, 1.0, -1.0, 2.0, 0.5, -0.5, 3.0, 1.0 / 3.0];

/// Shallow generator: append to `ops` random operations (at most a few dozen) whose every
/// function argument stays in its domain for any real coordinates. Operands are mostly
/// recent nodes, sometimes any node (sharing); special constants exercise the
/// simplifier's identities.
pub(super) fn extend_ops(ops: &mut Vec<Op>, raw: &[Raw]) {
    let push = |ops: &mut Vec<Op>, op: Op| {
        ops.push(op);
        ops.len() - 1
    };
    let pick = |ops: &Vec<Op>, r: u32| {
        let len = ops.len();
        if r & 1 == 0 {
            len - 1 - (r as usize >> 1) % len.min(3)
        } else {
            (r as usize >> 1) % len
        }
    };
    // c + x², c ≥ 0.5: a positive argument.
    let pos = |ops: &mut Vec<Op>, x: usize, c: f64| {
        let s = push(ops, Op::Powi(x, 2));
        let c = push(ops, Op::C(0.5 + c.abs()));
        push(ops, Op::Bin(Binary::Add, c, s))
    };
    // c · tanh(x), |c| < 1.3
    let squash = |ops: &mut Vec<Op>, x: usize, c: f64| {
        let t = push(ops, Op::Un(Unary::Tanh, x));
        let c = push(ops, Op::C(c));
        push(ops, Op::Bin(Binary::Mul, c, t))
    };
    for &(kind, ra, rb, c, k) in raw {
        let a = pick(ops, ra);
        let b = pick(ops, rb);
        let special = SPECIAL[k as usize % SPECIAL.len()];
        match kind % 22 {
            0 => push(ops, Op::Bin(Binary::Add, a, b)),
            1 => push(ops, Op::Bin(Binary::Sub, a, b)),
            2 => push(ops, Op::Bin(Binary::Mul, a, b)),
            3 => {
                let d = pos(ops, b, c);
                push(ops, Op::Bin(Binary::Div, a, d))
            }
            4 => push(ops, Op::Un(Unary::Neg, a)),
            5 => {
                let p = pos(ops, a, c);
                push(ops, Op::Un(Unary::Sqrt, p))
            }
            6 => push(ops, Op::Un(Unary::Exp, a)),
            7 => {
                let p = pos(ops, a, c);
                push(ops, Op::Un(Unary::Ln, p))
            }
            8 => push(ops, Op::Un(Unary::Sin, a)),
            9 => push(ops, Op::Un(Unary::Cos, a)),
            10 => {
                let s = squash(ops, a, 1.2);
                push(ops, Op::Un(Unary::Tan, s))
            }
            11 => push(ops, Op::Un(Unary::Tanh, a)),
            12 => {
                let s = squash(ops, a, 0.9);
                let op = if k % 2 == 0 { Unary::Acos } else { Unary::Asin };
                push(ops, Op::Un(op, s))
            }
            13 => push(ops, Op::Un(Unary::Atan, a)),
            14 => {
                if k % 2 == 0 {
                    let x = pos(ops, b, c);
                    push(ops, Op::Bin(Binary::Atan2, a, x))
                } else {
                    let y = pos(ops, a, c);
                    push(ops, Op::Bin(Binary::Atan2, y, b))
                }
            }
            15 => {
                let n = [2, 3, 4, -1, -2, -3, 0, 1][k as usize % 8];
                let base = if n < 0 { pos(ops, a, c) } else { a };
                push(ops, Op::Powi(base, n))
            }
            16 => {
                let p = pos(ops, a, c);
                push(ops, Op::Bin(Binary::Powf, p, b))
            }
            17 => {
                let p = pos(ops, a, c);
                let e = push(ops, Op::C(special));
                push(ops, Op::Bin(Binary::Powf, p, e))
            }
            18 => {
                let base = push(ops, Op::C(0.5 + c.abs()));
                push(ops, Op::Bin(Binary::Powf, base, a))
            }
            19 => push(ops, Op::C(if k % 2 == 0 { special } else { c })),
            20 => {
                let s = push(ops, Op::C(special));
                let op = [Binary::Mul, Binary::Add, Binary::Sub][k as usize % 3];
                if k % 2 == 0 {
                    push(ops, Op::Bin(op, a, s))
                } else {
                    push(ops, Op::Bin(op, s, a))
                }
            }
            _ => {
                // Cancellations: a - a, a / a (a ≠ 0 ensured), a + (-a)·1.
                let p = pos(ops, a, c);
                match k % 3 {
                    0 => push(ops, Op::Bin(Binary::Sub, a, a)),
                    1 => push(ops, Op::Bin(Binary::Div, p, p)),
                    _ => {
                        let n = push(ops, Op::Un(Unary::Neg, a));
                        push(ops, Op::Bin(Binary::Add, a, n))
                    }
                }
            }
        };
    }
}

/// The coordinates `q_0 .. q_{n-1}` as the first ops.
pub(super) fn coords(n_q: usize) -> Vec<Op> {
    (0..n_q as u32).map(Op::Q).collect()
}

/// An op list under construction together with its values at every check point, so that
/// the generator can keep arguments in range where it matters (at the points).
pub(super) struct Dag<'a> {
    pub(super) ops: Vec<Op>,
    /// `vals[i][k]`: value of op `i` at point `k`.
    pub(super) vals: Vec<Vec<f64>>,
    pub(super) pts: &'a [Vec<f64>],
}

impl<'a> Dag<'a> {
    pub(super) fn new(n_q: usize, pts: &'a [Vec<f64>]) -> Self {
        let mut d = Dag {
            ops: Vec::new(),
            vals: Vec::new(),
            pts,
        };
        for op in coords(n_q) {
            d.push(op);
        }
        d
    }

    pub(super) fn push(&mut self, op: Op) -> usize {
        let vals = &self.vals;
        let v = self
            .pts
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let at = |i: usize| vals[i][k];
                match op {
                    Op::Q(i) => p[i as usize],
                    Op::C(c) => c,
                    Op::Un(u, a) => at(a).unary(u),
                    Op::Bin(b, x, y) => at(x).binary(b, &at(y)),
                    Op::Powi(a, n) => at(a).powi(n),
                }
            })
            .collect();
        self.ops.push(op);
        self.vals.push(v);
        self.ops.len() - 1
    }

    pub(super) fn max_abs(&self, i: usize) -> f64 {
        self.vals[i].iter().fold(0.0, |m, x| m.max(x.abs()))
    }

    pub(super) fn min_abs(&self, i: usize) -> f64 {
        self.vals[i]
            .iter()
            .fold(f64::INFINITY, |m, x| m.min(x.abs()))
    }

    pub(super) fn c(&mut self, x: f64) -> usize {
        self.push(Op::C(x))
    }

    pub(super) fn un(&mut self, op: Unary, a: usize) -> usize {
        self.push(Op::Un(op, a))
    }

    pub(super) fn bin(&mut self, op: Binary, a: usize, b: usize) -> usize {
        self.push(Op::Bin(op, a, b))
    }

    /// `c·x`.
    pub(super) fn scaled(&mut self, c: f64, x: usize) -> usize {
        let c = self.c(c);
        self.bin(Binary::Mul, c, x)
    }

    /// `c + x²` (`c ≥ 0.5`): a positive argument, for ln, sqrt, divisions, bases of powers.
    pub(super) fn pos(&mut self, x: usize, c: f64) -> usize {
        let s = self.push(Op::Powi(x, 2));
        let c = self.c(c);
        self.bin(Binary::Add, c, s)
    }

    /// `x` if `|x| ≤ lim` at every point, else `0.6·lim·atan(x)` (`|·| < 0.95 lim`).
    pub(super) fn bound(&mut self, x: usize, lim: f64) -> usize {
        if self.max_abs(x) <= lim {
            return x;
        }
        let t = self.un(Unary::Atan, x);
        self.scaled(0.6 * lim, t)
    }

    /// A saturating map to a moderate range: `x/√(1+x²)`, `atan x`, `ln(1+x²)`,
    /// `1/(1+x²)` or `tanh x` (argument bounded).
    pub(super) fn damp(&mut self, x: usize, k: u8) -> usize {
        match k % 5 {
            0 => {
                let p = self.pos(x, 1.0);
                let r = self.un(Unary::Sqrt, p);
                self.bin(Binary::Div, x, r)
            }
            1 => self.un(Unary::Atan, x),
            2 => {
                let p = self.pos(x, 1.0);
                self.un(Unary::Ln, p)
            }
            3 => {
                let one = self.c(1.0);
                let p = self.pos(x, 1.0);
                self.bin(Binary::Div, one, p)
            }
            _ => {
                let b = self.bound(x, TANH_MAX);
                self.un(Unary::Tanh, b)
            }
        }
    }

    /// Keep the chain well scaled: damp values above 10 (`atan` first above 1e6, which
    /// squares nothing; repeatedly: `ln(1 + x²)` of 1e6 is 28), revive values below 1e-3
    /// (at every point) by adding a coordinate.
    pub(super) fn tame(&mut self, mut x: usize, k: u8, n_q: usize) -> usize {
        if self.max_abs(x) > 1e6 {
            x = self.un(Unary::Atan, x);
        }
        let mut j = k;
        while self.max_abs(x) > 10.0 {
            x = self.damp(x, j);
            j = j.wrapping_add(1);
        }
        if self.max_abs(x) < 1e-3 {
            x = self.bin(Binary::Add, x, k as usize % n_q);
        }
        x
    }

    /// `x`, or `atan x` if `|x| > 100` at some point: an operand drawn from anywhere
    /// (intermediate values inside a step can reach ~1e18 before the step's damping).
    pub(super) fn moderate(&mut self, x: usize) -> usize {
        if self.max_abs(x) > 100.0 {
            self.un(Unary::Atan, x)
        } else {
            x
        }
    }

    /// A squashed copy of `x` in `(-1, 1)`: `sin x`, `tanh x` or `x/√(1+x²)`.
    pub(super) fn unit(&mut self, x: usize, k: usize) -> usize {
        match k % 3 {
            0 => self.un(Unary::Sin, x),
            1 => {
                let b = self.bound(x, TANH_MAX);
                self.un(Unary::Tanh, b)
            }
            _ => self.damp(x, 0),
        }
    }
}

/// Raw random choices of one step of the deep generator: (kind, operand, operand, small int,
/// real).
pub(super) type DeepRaw = (u8, u32, u32, u8, f64);

/// Deep generator: a chain of `steps.len()` steps, each applying one random operation (and
/// the wrappers that keep its arguments in their domains) to the current head and, for
/// binary operations, to an operand drawn from *any* earlier node (a coordinate a quarter
/// of the time); half of the steps then combine the result with a second earlier node. A
/// DAG with heavy sharing whose longest path has at least one node per step (measured over
/// 20000 cases of 100–160 steps: 338–825 nodes, depth 247–559, 54–152 nodes used more than
/// once, operands reaching back over 254–772 nodes). Every function of the engine appears,
/// with the simplifier's identities (`x+0`, `x·1`, `x·0`, `x−x`, `x/x`, `−(−x)`, `(xᵃ)ᵇ`,
/// like terms, constant folding, `a+b − (b+a)`) spliced into the chain. Values stay in
/// range at every point: domains by construction (`ln`/`sqrt`/divisions of `c + x²`,
/// `acos`/`asin` of `0.9·(sin | tanh | x/√(1+x²))`, `tan` of `1.2·(sin | tanh)`, `powf` of
/// positive bases, bounded `exp` and `tanh` arguments), magnitudes by damping (every 8
/// steps, and whenever the head exceeds 10) and reviving (below 1e-3). Returns the ops and
/// the output's index.
pub(super) fn build_deep(n_q: usize, pts: &[Vec<f64>], steps: &[DeepRaw]) -> (Vec<Op>, usize) {
    use Binary::{Add as BAdd, Atan2, Div, Mul as BMul, Powf, Sub as BSub};
    let mut d = Dag::new(n_q, pts);
    let mut head = 0;
    for (s, &(kind, rb, rb2, k, c)) in steps.iter().enumerate() {
        let a = head;
        let b = if rb % 4 == 0 {
            (rb as usize >> 2) % n_q
        } else {
            let b = (rb as usize >> 2) % d.ops.len();
            d.moderate(b)
        };
        let ks = k as usize;
        let cp = 0.5 + c.abs();
        let new = match kind % 24 {
            0 => d.bin(BAdd, a, b),
            1 if ks.is_multiple_of(2) => d.bin(BSub, a, b),
            1 => d.bin(BSub, b, a),
            2 => d.bin(BMul, a, b),
            3 => match ks % 3 {
                0 => {
                    let p = d.pos(b, cp);
                    d.bin(Div, a, p)
                }
                1 => {
                    let p = d.pos(a, cp);
                    d.bin(Div, b, p)
                }
                _ if d.min_abs(b) > 0.25 => d.bin(Div, a, b),
                _ => {
                    let p = d.pos(b, 1.0);
                    d.bin(Div, a, p)
                }
            },
            4 => {
                let m = d.scaled(c, a);
                d.un(Unary::Neg, m)
            }
            5 => {
                let p = d.pos(a, cp);
                d.un(Unary::Sqrt, p)
            }
            6 => {
                let x = d.bound(a, 3.0);
                d.un(Unary::Exp, x)
            }
            7 => {
                let p = d.pos(a, cp);
                d.un(Unary::Ln, p)
            }
            8 => {
                let x = d.scaled(c, a);
                d.un(Unary::Sin, x)
            }
            9 => d.un(Unary::Cos, a),
            10 => {
                let s = d.unit(a, ks % 2);
                let x = d.scaled(1.2, s);
                d.un(Unary::Tan, x)
            }
            11 => {
                let x = d.bound(a, TANH_MAX);
                d.un(Unary::Tanh, x)
            }
            12 => {
                let s = d.unit(a, ks);
                let x = d.scaled(0.9, s);
                d.un(
                    if ks & 8 == 0 {
                        Unary::Acos
                    } else {
                        Unary::Asin
                    },
                    x,
                )
            }
            13 => {
                let x = d.scaled(c, a);
                d.un(Unary::Atan, x)
            }
            14 => match ks % 4 {
                0 => {
                    let p = d.pos(b, cp);
                    d.bin(Atan2, a, p)
                }
                1 => {
                    let p = d.pos(b, cp);
                    d.bin(Atan2, p, a)
                }
                _ => {
                    // Any quadrant, away from the origin.
                    let far = (0..pts.len()).all(|k| d.vals[a][k].hypot(d.vals[b][k]) > 0.25);
                    let (y, x) = if ks % 4 == 2 { (a, b) } else { (b, a) };
                    if far {
                        d.bin(Atan2, y, x)
                    } else {
                        let p = d.pos(x, 1.0);
                        d.bin(Atan2, y, p)
                    }
                }
            },
            15 => {
                let n = [2, 3, 4, 5, -1, -2, -3, -4][ks % 8];
                let base = if n < 0 { d.pos(a, cp) } else { a };
                d.push(Op::Powi(base, n))
            }
            16 => {
                let p = d.pos(a, cp);
                let e = d.bound(b, 3.0);
                d.bin(Powf, p, e)
            }
            17 => {
                let x = d.bound(b, 2.0);
                let base = d.un(Unary::Exp, x);
                let e = d.bound(a, 3.0);
                d.bin(Powf, base, e)
            }
            18 => {
                let p = d.pos(a, cp);
                let e = [1.0 / 3.0, 2.5, -0.5, 0.5, 1.5, -1.5, 2.0, 3.0, 0.0, 1.0][ks % 10];
                let e = d.c(e);
                d.bin(Powf, p, e)
            }
            // Neutral elements: a + 0, 0 + a, a − 0, a·1, 1·a, a/1.
            19 => {
                let (op, z) = [
                    (BAdd, 0.0),
                    (BAdd, 0.0),
                    (BSub, 0.0),
                    (BMul, 1.0),
                    (BMul, 1.0),
                    (Div, 1.0),
                ][ks % 6];
                let z = d.c(z);
                if ks % 6 == 1 || ks % 6 == 4 {
                    d.bin(op, z, a)
                } else {
                    d.bin(op, a, z)
                }
            }
            // Cancellations and ordering spliced into the chain.
            20 => match ks % 6 {
                0 => {
                    let z = d.bin(BSub, b, b);
                    d.bin(BAdd, a, z)
                }
                1 => {
                    let zero = d.c(0.0);
                    let z = d.bin(BMul, b, zero);
                    d.bin(BAdd, a, z)
                }
                2 => {
                    let p = d.pos(b, cp);
                    let one = d.bin(Div, p, p);
                    d.bin(BMul, a, one)
                }
                3 => {
                    let m = d.un(Unary::Neg, a);
                    d.un(Unary::Neg, m)
                }
                4 => {
                    let ab = d.bin(BAdd, a, b);
                    let ba = d.bin(BAdd, b, a);
                    let z = d.bin(BSub, ab, ba);
                    d.bin(BAdd, a, z)
                }
                _ => {
                    let (p, r) = (d.pos(b, cp), d.pos(a, 1.0));
                    let pr = d.bin(BMul, p, r);
                    let rp = d.bin(BMul, r, p);
                    let one = d.bin(Div, pr, rp);
                    d.bin(BMul, a, one)
                }
            },
            // Powers: (pᵐ)ⁿ, (√p)², pᵐ·pⁿ, a·a.
            21 => {
                let m1 = [-2, -1, 0, 1, 2, 3][ks % 6];
                let m2 = [-2, -1, 0, 1, 2, 3][(ks / 6) % 6];
                match (ks / 36) % 4 {
                    0 => {
                        let p = d.pos(a, cp);
                        let x = d.push(Op::Powi(p, m1));
                        d.push(Op::Powi(x, m2))
                    }
                    1 => {
                        let p = d.pos(a, cp);
                        let r = d.un(Unary::Sqrt, p);
                        d.push(Op::Powi(r, 2))
                    }
                    2 => {
                        let p = d.pos(a, cp);
                        let x = d.push(Op::Powi(p, m1));
                        let y = d.push(Op::Powi(p, m2));
                        d.bin(BMul, x, y)
                    }
                    _ => d.bin(BMul, a, a),
                }
            }
            // Like terms and negations.
            22 => {
                let c2 = SPECIAL[(ks / 6) % SPECIAL.len()];
                match ks % 6 {
                    0 | 1 => {
                        let x = d.scaled(c, a);
                        let y = d.scaled(c2, a);
                        d.bin(if ks.is_multiple_of(6) { BAdd } else { BSub }, x, y)
                    }
                    2 => {
                        let x = d.c(c);
                        d.bin(BSub, a, x)
                    }
                    3 => {
                        let x = d.c([4.0, 0.5, 3.0][ks % 3]);
                        d.bin(Div, a, x)
                    }
                    4 => {
                        let m = d.un(Unary::Neg, a);
                        let f = [Unary::Sin, Unary::Cos, Unary::Atan, Unary::Neg][(ks / 6) % 4];
                        d.un(f, m)
                    }
                    _ => {
                        let x = d.bin(BSub, a, b);
                        d.un(Unary::Neg, x)
                    }
                }
            }
            // Constant folding inside the chain.
            _ => {
                let c2 = SPECIAL[(ks / 3) % SPECIAL.len()];
                match ks % 3 {
                    0 => {
                        let (op, x, y) = [
                            (BAdd, c, c2),
                            (BSub, c, c2),
                            (BMul, c, c2),
                            (Div, c, 1.5 + c2),
                            (Powf, cp, c2),
                            (Atan2, c, 1.5 + c2),
                        ][(ks / 3) % 6];
                        let (x, y) = (d.c(x), d.c(y));
                        let f = d.bin(op, x, y);
                        d.bin(BAdd, a, f)
                    }
                    1 => {
                        let f = [
                            Unary::Neg,
                            Unary::Sqrt,
                            Unary::Exp,
                            Unary::Ln,
                            Unary::Sin,
                            Unary::Cos,
                            Unary::Tan,
                            Unary::Tanh,
                            Unary::Acos,
                            Unary::Asin,
                            Unary::Atan,
                        ][(ks / 3) % 11];
                        let x = match f {
                            Unary::Sqrt | Unary::Ln => cp,
                            Unary::Acos | Unary::Asin | Unary::Tan => 0.45 * c,
                            _ => c,
                        };
                        let x = d.c(x);
                        let f = d.un(f, x);
                        d.bin(BMul, a, f)
                    }
                    _ => {
                        let x = d.c(cp);
                        let f = d.push(Op::Powi(x, [2, 3, -1, -2][(ks / 3) % 4]));
                        d.bin(BAdd, f, a)
                    }
                }
            }
        };
        // Half of the steps also mix in a second earlier node (sharing).
        let new = if rb2 & 1 == 0 {
            new
        } else {
            let b2 = (rb2 as usize >> 3) % d.ops.len();
            let b2 = d.moderate(b2);
            let op = [BAdd, BSub, BMul, BAdd][(rb2 as usize >> 1) % 4];
            d.bin(op, new, b2)
        };
        head = d.tame(new, k, n_q);
        if s % 8 == 7 {
            head = d.damp(head, k.wrapping_add(kind));
        }
    }
    (d.ops, head)
}

/// Evaluate the op list directly (no graph, no simplification) in any scalar type; returns
/// every intermediate value.
pub(super) fn eval_ops<T: Scalar>(ops: &[Op], q: &[T]) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(ops.len());
    for op in ops {
        let x = match *op {
            Op::Q(i) => q[i as usize].clone(),
            Op::C(c) => T::from_f64(c),
            Op::Un(u, a) => v[a].unary(u),
            Op::Bin(b, x, y) => v[x].binary(b, &v[y]),
            Op::Powi(a, n) => v[a].powi(n),
        };
        v.push(x);
    }
    v
}

/// The same expression in a graph (with simplification and hash-consing): the node of
/// every op.
pub(super) fn build_graph(g: &mut Graph, ops: &[Op]) -> Vec<NodeId> {
    let mut ids: Vec<NodeId> = Vec::with_capacity(ops.len());
    for op in ops {
        let id = match *op {
            Op::Q(i) => g.var(Var::Q(i)),
            Op::C(c) => g.constant(c),
            Op::Un(u, a) => g.unary(u, ids[a]),
            Op::Bin(b, x, y) => g.binary(b, ids[x], ids[y]),
            Op::Powi(a, n) => g.powi(ids[a], n),
        };
        ids.push(id);
    }
    ids
}

/// Longest path (in operations) from a leaf to each op.
pub(super) fn depths(ops: &[Op]) -> Vec<usize> {
    let mut d: Vec<usize> = Vec::with_capacity(ops.len());
    for op in ops {
        let x = match *op {
            Op::Q(_) | Op::C(_) => 0,
            Op::Un(_, a) | Op::Powi(a, _) => d[a] + 1,
            Op::Bin(_, x, y) => d[x].max(d[y]) + 1,
        };
        d.push(x);
    }
    d
}

/// Whether every `tanh` argument has `|x| ≤ TANH_MAX` at `p` (the exclusion of the module
/// docs).
pub(super) fn tanh_in_range(ops: &[Op], p: &[f64]) -> bool {
    let v = eval_ops::<f64>(ops, p);
    ops.iter().all(|op| match *op {
        Op::Un(Unary::Tanh, x) => v[x].abs() <= TANH_MAX,
        _ => true,
    })
}

/// Whether some `atan2` has a zero operand at `p` whose sign differs between the raw
/// evaluation and the engine's graph (`ids`: the node of every op): `atan2(±0, x < 0) = ±π`,
/// and the simplifier does not keep the sign of zero (`x·0 → +0`, constant `-0.0 → +0.0`;
/// see `signed_zero_at_atan2_branch_cut`).
pub(super) fn zero_sign_differs(ops: &[Op], g: &Graph, ids: &[NodeId], p: &[f64]) -> bool {
    let raw = eval_ops::<f64>(ops, p);
    let env = |v: Var| match v {
        Var::Q(i) => p[i as usize],
        _ => f64::NAN,
    };
    let eng = g.eval_many(ids, &env);
    ops.iter().any(|op| match *op {
        Op::Bin(Binary::Atan2, y, x) => [y, x].iter().any(|&k| {
            (raw[k] == 0.0 || eng[k] == 0.0)
                && raw[k].is_sign_negative() != eng[k].is_sign_negative()
        }),
        _ => false,
    })
}
