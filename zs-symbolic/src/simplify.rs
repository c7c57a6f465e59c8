//! Simplification applied by every [`Graph`] constructor, before hash-consing.
//!
//! Two kinds of rewrites, both value-preserving up to floating-point rounding on the domain of
//! the original expression (values are treated as finite: `x * 0 → 0`, `x / x → 1`):
//!
//! - **Constant folding** of every operation whose operands are all constants, but only when
//!   the result is finite: `1.0 / 0.0`, `(-1.0).sqrt()`, `0.0.ln()` stay nodes, so a bad
//!   constant expression in the user's code shows up at run time exactly as written instead of
//!   being baked into a NaN here.
//! - **Algebraic identities**: neutral and absorbing elements (`x + 0`, `x * 1`, `x * 0`,
//!   `x / 1`, `0 / x`, `powi(x, 0)`, ...), cancellation (`x - x`, `x / x`), negations pushed
//!   outwards and merged (`-(-x) → x`, `x + (-y) → x - y`, `(-x) * y → -(x * y)`,
//!   `-(c * x) → (-c) * x`), like terms (`c1·x + c2·x → (c1 + c2)·x`, `x * x → x²`,
//!   `xᵃ · xᵇ → xᵃ⁺ᵇ`, `(xᵃ)ᵇ → xᵃᵇ`), constants merged through one level of `+`/`*`, odd/even
//!   symmetry of `sin`, `cos`, `tan`, ..., and `cos(n·acos u) → T_n(u)` (Chebyshev, `n ≤ 8`:
//!   a torsion written through `φ = acos(cos φ)` becomes a polynomial in `cos φ`, its
//!   derivatives finite at planar torsions). Derivative graphs are full of these patterns (a
//!   product rule against a constant factor, a chain rule through a linear map), so removing
//!   them keeps the emitted code small.
//!
//! The constructor then puts the operands of `Add`/`Mul` in canonical order (constants first,
//! then by id) so `a + b` and `b + a` hash-cons to the same node. `Sub` and `Div` stay binary
//! operations (no `a + (-1)·b` encoding).

use super::graph::{Graph, Node, NodeId};
use super::{Binary, Unary};

/// The largest `n` for which `cos(n·acos u)` is rewritten as the Chebyshev polynomial `T_n(u)`
/// (torsion potentials use `n ≤ 6`).
const CHEBYSHEV_MAX: u32 = 8;

/// `Some(x)` if `x` is finite: the only constants folding may produce.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// `1 / c` when it is exact (both `c` and `1 / c` are normal powers of two).
fn exact_recip(c: f64) -> Option<f64> {
    const MANTISSA: u64 = (1 << 52) - 1;
    let r = 1.0 / c;
    let pow2 = |x: f64| x.is_normal() && x.to_bits() & MANTISSA == 0;
    (pow2(c) && pow2(r)).then_some(r)
}

/// Evaluate a unary function on a constant.
pub(super) fn apply_unary(op: Unary, a: f64) -> f64 {
    match op {
        Unary::Neg => -a,
        Unary::Sqrt => a.sqrt(),
        Unary::Exp => a.exp(),
        Unary::Ln => a.ln(),
        Unary::Sin => a.sin(),
        Unary::Cos => a.cos(),
        Unary::Tan => a.tan(),
        Unary::Tanh => a.tanh(),
        Unary::Acos => a.acos(),
        Unary::Asin => a.asin(),
        Unary::Atan => a.atan(),
        Unary::Erf => libm::erf(a),
        Unary::Erfc => libm::erfc(a),
    }
}

/// Evaluate a binary operation on constants.
pub(super) fn apply_binary(op: Binary, a: f64, b: f64) -> f64 {
    match op {
        Binary::Add => a + b,
        Binary::Sub => a - b,
        Binary::Mul => a * b,
        Binary::Div => a / b,
        Binary::Powf => a.powf(b),
        Binary::Atan2 => a.atan2(b),
        Binary::Lt => f64::from(u8::from(a < b)),
        Binary::Le => f64::from(u8::from(a <= b)),
    }
}

impl Graph {
    fn fold(&mut self, x: f64) -> Option<NodeId> {
        finite(x).map(|x| self.constant(x))
    }

    /// `Some((c, x))` if `n` is `c * x` with constant `c`, else `(1, n)`.
    fn coef_term(&self, n: NodeId) -> (f64, NodeId) {
        if let Node::Binary(Binary::Mul, c, x) = *self.node(n) {
            if let Some(c) = self.as_const(c) {
                return (c, x);
            }
        }
        (1.0, n)
    }

    /// `Some((x, k))` if `n` is `x.powi(k)`, else `(n, 1)`.
    fn pow_term(&self, n: NodeId) -> (NodeId, i32) {
        match *self.node(n) {
            Node::Powi(x, k) => (x, k),
            _ => (n, 1),
        }
    }

    fn neg_operand(&self, n: NodeId) -> Option<NodeId> {
        match *self.node(n) {
            Node::Unary(Unary::Neg, x) => Some(x),
            _ => None,
        }
    }

    /// Simplify `op(a)`; `None` means "intern it as is".
    pub(super) fn simplify_unary(&mut self, op: Unary, a: NodeId) -> Option<NodeId> {
        if let Some(x) = self.as_const(a) {
            return self.fold(apply_unary(op, x));
        }
        let node = *self.node(a);
        match op {
            Unary::Neg => match node {
                // -(-x) → x
                Node::Unary(Unary::Neg, x) => Some(x),
                // -(x - y) → y - x
                Node::Binary(Binary::Sub, x, y) => Some(self.sub(y, x)),
                // -(c * x) → (-c) * x ; -(c / x) → (-c) / x, except in reciprocal mode, where
                // `(-c) / x` is built as `(-c) · (1/x)`, which is `-(1/x)` again for c = 1.
                Node::Binary(Binary::Div, ..) if self.reciprocals => None,
                Node::Binary(op2 @ (Binary::Mul | Binary::Div), c, x) => {
                    let c = self.as_const(c)?;
                    let mc = self.constant(-c);
                    Some(self.binary(op2, mc, x))
                }
                _ => None,
            },
            Unary::Cos => {
                // cos(n·acos(u)) → T_n(u): a torsion written through its angle.
                if let Some((n, u)) = self.multiple_of_acos(a) {
                    return Some(self.chebyshev(n, u));
                }
                // An even function: cos(-x) → cos(x).
                let x = self.neg_operand(a)?;
                Some(self.unary(op, x))
            }
            // Odd functions: f(-x) → -f(x).
            Unary::Sin | Unary::Tan | Unary::Tanh | Unary::Asin | Unary::Atan | Unary::Erf => {
                let x = self.neg_operand(a)?;
                let fx = self.unary(op, x);
                Some(self.neg(fx))
            }
            Unary::Sqrt | Unary::Exp | Unary::Ln | Unary::Acos | Unary::Erfc => None,
        }
    }

    /// `(n, u)` when `a` is `acos(u)` or `n·acos(u)` for a whole `n` with `|n| ≤ CHEBYSHEV_MAX`
    /// (`cos` is even: the sign of `n` does not matter).
    fn multiple_of_acos(&self, a: NodeId) -> Option<(u32, NodeId)> {
        match *self.node(a) {
            Node::Unary(Unary::Acos, u) => Some((1, u)),
            Node::Unary(Unary::Neg, x) => self.multiple_of_acos(x),
            // Constants come first in a product (canonical order).
            Node::Binary(Binary::Mul, c, x) => {
                let n = self.as_const(c)?;
                let (k, u) = self.multiple_of_acos(x)?;
                let n = n.abs() * f64::from(k);
                (n.fract() == 0.0 && n <= f64::from(CHEBYSHEV_MAX)).then_some((n as u32, u))
            }
            _ => None,
        }
    }

    /// The Chebyshev polynomial `T_n(u) = cos(n·acos u)` by its recurrence
    /// `T_{k+1} = 2u·T_k − T_{k−1}`: a torsion's `cos(nφ)` as a polynomial in `cos φ`, whose
    /// derivatives stay finite at planar torsions (φ = 0, π), where those of `acos` are
    /// infinite (and where `acos` of a rounded `cos φ` just beyond ±1 is NaN).
    fn chebyshev(&mut self, n: u32, u: NodeId) -> NodeId {
        let (mut prev, mut cur) = (self.constant(1.0), u);
        if n == 0 {
            return prev;
        }
        let two_u = {
            let two = self.constant(2.0);
            self.mul(two, u)
        };
        for _ in 1..n {
            let t = self.mul(two_u, cur);
            let next = self.sub(t, prev);
            (prev, cur) = (cur, next);
        }
        cur
    }

    /// Simplify `a.powi(n)`; `None` means "intern it as is".
    pub(super) fn simplify_powi(&mut self, a: NodeId, n: i32) -> Option<NodeId> {
        if n == 0 {
            return Some(self.constant(1.0));
        }
        if n == 1 {
            return Some(a);
        }
        if let Some(x) = self.as_const(a) {
            return self.fold(x.powi(n));
        }
        match *self.node(a) {
            // (xᵏ)ⁿ → x^(kn)
            Node::Powi(x, k) => {
                let kn = k.checked_mul(n)?;
                Some(self.powi(x, kn))
            }
            // (-x)ⁿ → ±xⁿ
            Node::Unary(Unary::Neg, x) => {
                let p = self.powi(x, n);
                Some(if n % 2 == 0 { p } else { self.neg(p) })
            }
            // (√x)^(2k) → xᵏ
            Node::Unary(Unary::Sqrt, x) if n % 2 == 0 => Some(self.powi(x, n / 2)),
            // (c·x)ⁿ → cⁿ·xⁿ
            Node::Binary(Binary::Mul, c, x) => {
                let cn = finite(self.as_const(c)?.powi(n)).filter(|&cn| cn != 0.0)?;
                let cn = self.constant(cn);
                let p = self.powi(x, n);
                Some(self.mul(cn, p))
            }
            _ => None,
        }
    }

    /// Simplify `op(a, b)`; `None` means "intern it as is" (after canonical ordering).
    pub(super) fn simplify_binary(&mut self, op: Binary, a: NodeId, b: NodeId) -> Option<NodeId> {
        let (ca, cb) = (self.as_const(a), self.as_const(b));
        if let (Some(x), Some(y)) = (ca, cb) {
            // Not folded (non-finite result): keep the node exactly as written.
            return self.fold(apply_binary(op, x, y));
        }
        // Identities with non-finite constants (x * inf, ...) are not value-preserving.
        if ca.is_some_and(|c| !c.is_finite()) || cb.is_some_and(|c| !c.is_finite()) {
            return None;
        }
        match op {
            Binary::Add => self.simplify_add(a, b),
            Binary::Sub => self.simplify_sub(a, b),
            Binary::Mul => self.simplify_mul(a, b),
            Binary::Div => self.simplify_div(a, b),
            Binary::Powf => self.simplify_powf(a, b),
            Binary::Atan2 | Binary::Lt | Binary::Le => None,
        }
    }

    fn simplify_add(&mut self, a: NodeId, b: NodeId) -> Option<NodeId> {
        if self.is_const(a, 0.0) {
            return Some(b);
        }
        if self.is_const(b, 0.0) {
            return Some(a);
        }
        // x + (-y) → x - y ; (-x) + y → y - x
        if let Some(y) = self.neg_operand(b) {
            return Some(self.sub(a, y));
        }
        if let Some(x) = self.neg_operand(a) {
            return Some(self.sub(b, x));
        }
        // c1 + (c2 + x) → (c1 + c2) + x
        let (c, x) = match (self.as_const(a), self.as_const(b)) {
            (Some(c), None) => (Some(c), b),
            (None, Some(c)) => (Some(c), a),
            _ => (None, a),
        };
        if let Some(c1) = c {
            if let Node::Binary(Binary::Add, c2, y) = *self.node(x) {
                if let Some(c2) = self.as_const(c2) {
                    let s = self.fold(c1 + c2)?;
                    return Some(self.add(s, y));
                }
            }
            return None;
        }
        // c1·x + c2·x → (c1 + c2)·x
        let ((c1, x1), (c2, x2)) = (self.coef_term(a), self.coef_term(b));
        if x1 == x2 {
            let c = self.fold(c1 + c2)?;
            return Some(self.mul(c, x1));
        }
        // c·x + c·y → c·(x + y)
        if c1 == c2 && c1 != 1.0 {
            let s = self.add(x1, x2);
            let c = self.constant(c1);
            return Some(self.mul(c, s));
        }
        // c1·x + (... + c2·x + ...) → (c1 + c2)·x + (...): like terms a few levels down a sum.
        for (u, w) in [(a, b), (b, a)] {
            let (cu, xu) = self.coef_term(u);
            if let Some((cw, rest)) = self.extract_like(w, xu, 3) {
                let c = self.fold(cu + cw)?;
                let t = self.mul(c, xu);
                return Some(self.add(t, rest));
            }
        }
        None
    }

    /// If the sum `w` (searched `depth` levels of `+` down) has a term `c·x`, return `c` and
    /// the sum of the other terms.
    fn extract_like(&mut self, w: NodeId, x: NodeId, depth: u32) -> Option<(f64, NodeId)> {
        let Node::Binary(Binary::Add, p, r) = *self.node(w) else {
            return None;
        };
        for (p, r) in [(p, r), (r, p)] {
            let (c, xp) = self.coef_term(p);
            if xp == x {
                return Some((c, r));
            }
        }
        if depth == 0 {
            return None;
        }
        for (p, r) in [(p, r), (r, p)] {
            if let Some((c, rest)) = self.extract_like(p, x, depth - 1) {
                return Some((c, self.add(rest, r)));
            }
        }
        None
    }

    fn simplify_sub(&mut self, a: NodeId, b: NodeId) -> Option<NodeId> {
        if a == b {
            return Some(self.constant(0.0));
        }
        if self.is_const(b, 0.0) {
            return Some(a);
        }
        if self.is_const(a, 0.0) {
            return Some(self.neg(b));
        }
        // x - c → (-c) + x (exact), so constants merge with additions.
        if let Some(c) = self.as_const(b) {
            let mc = self.constant(-c);
            return Some(self.add(mc, a));
        }
        // x - (-y) → x + y
        if let Some(y) = self.neg_operand(b) {
            return Some(self.add(a, y));
        }
        // (-x) - y → -(x + y)
        if let Some(x) = self.neg_operand(a) {
            let s = self.add(x, b);
            return Some(self.neg(s));
        }
        // c1·x - c2·x → (c1 - c2)·x
        let ((c1, x1), (c2, x2)) = (self.coef_term(a), self.coef_term(b));
        if x1 == x2 {
            let c = self.fold(c1 - c2)?;
            return Some(self.mul(c, x1));
        }
        // c·x - c·y → c·(x - y)
        if c1 == c2 && c1 != 1.0 {
            let s = self.sub(x1, x2);
            let c = self.constant(c1);
            return Some(self.mul(c, s));
        }
        None
    }

    fn simplify_mul(&mut self, a: NodeId, b: NodeId) -> Option<NodeId> {
        // Constant operand (at most one: both constants were folded above).
        let (c, x) = match (self.as_const(a), self.as_const(b)) {
            (Some(c), None) => (Some(c), b),
            (None, Some(c)) => (Some(c), a),
            _ => (None, a),
        };
        if let Some(c) = c {
            if c == 0.0 {
                return Some(self.constant(0.0));
            }
            if c == 1.0 {
                return Some(x);
            }
            if c == -1.0 {
                return Some(self.neg(x));
            }
            match *self.node(x) {
                // c1·(c2·y) → (c1 c2)·y ; c1·(c2/y) → (c1 c2)/y (not in reciprocal mode,
                // where c/y is built as c·(1/y))
                Node::Binary(op @ (Binary::Mul | Binary::Div), c2, y)
                    if !(self.reciprocals && op == Binary::Div) =>
                {
                    if let Some(c2) = self.as_const(c2) {
                        let p = self.fold(c * c2)?;
                        return Some(self.binary(op, p, y));
                    }
                }
                // c·(-y) → (-c)·y
                Node::Unary(Unary::Neg, y) => {
                    let mc = self.constant(-c);
                    return Some(self.mul(mc, y));
                }
                _ => {}
            }
            return None;
        }
        // (-x)·y → -(x·y) ; x·(-y) → -(x·y)
        if let Some(x) = self.neg_operand(a) {
            let p = self.mul(x, b);
            return Some(self.neg(p));
        }
        if let Some(y) = self.neg_operand(b) {
            let p = self.mul(a, y);
            return Some(self.neg(p));
        }
        // (c·x)·y → c·(x·y): constants float to the top of products.
        for (u, v) in [(a, b), (b, a)] {
            let (c, x) = self.coef_term(u);
            if c != 1.0 || x != u {
                let p = self.mul(x, v);
                let c = self.constant(c);
                return Some(self.mul(c, p));
            }
        }
        // xᵃ · xᵇ → x^(a+b) (covers x·x → x²)
        let ((x1, k1), (x2, k2)) = (self.pow_term(a), self.pow_term(b));
        if x1 == x2 {
            let k = k1.checked_add(k2)?;
            return Some(self.powi(x1, k));
        }
        None
    }

    fn simplify_div(&mut self, a: NodeId, b: NodeId) -> Option<NodeId> {
        if let Some(c) = self.as_const(b) {
            if c == 0.0 {
                // Division by a constant zero: keep the node as written.
                return None;
            }
            if c == 1.0 {
                return Some(a);
            }
            if c == -1.0 {
                return Some(self.neg(a));
            }
            // x / 2ᵏ → 2⁻ᵏ · x (exact)
            if let Some(r) = exact_recip(c) {
                let r = self.constant(r);
                return Some(self.mul(r, a));
            }
        }
        if self.is_const(a, 0.0) {
            return Some(self.constant(0.0));
        }
        if a == b {
            return Some(self.constant(1.0));
        }
        // (-x)/y → -(x/y) ; x/(-y) → -(x/y)
        if let Some(x) = self.neg_operand(a) {
            let q = self.div(x, b);
            return Some(self.neg(q));
        }
        if let Some(y) = self.neg_operand(b) {
            let q = self.div(a, y);
            return Some(self.neg(q));
        }
        // (c·x)/y → c·(x/y) for non-constant y
        if self.as_const(b).is_none() {
            let (c, x) = self.coef_term(a);
            if x != a {
                let q = self.div(x, b);
                let c = self.constant(c);
                return Some(self.mul(c, q));
            }
        }
        None
    }

    fn simplify_powf(&mut self, a: NodeId, b: NodeId) -> Option<NodeId> {
        if self.is_const(a, 1.0) {
            return Some(self.constant(1.0));
        }
        let e = self.as_const(b)?;
        // Integer exponent: powi (same value for every base, including negative ones).
        if e.fract() == 0.0 && e.abs() <= f64::from(i32::MAX) {
            return Some(self.powi(a, e as i32));
        }
        if e == 0.5 {
            return Some(self.sqrt(a));
        }
        if e == -0.5 {
            let s = self.sqrt(a);
            return Some(self.powi(s, -1));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Graph, Node, Unary, Var};

    fn q(g: &mut Graph, i: u32) -> super::NodeId {
        g.var(Var::Q(i))
    }

    #[test]
    fn folding_every_op() {
        let mut g = Graph::new();
        let two = g.constant(2.0);
        let three = g.constant(3.0);
        let cases = [
            (g.add(two, three), 5.0),
            (g.sub(two, three), -1.0),
            (g.mul(two, three), 6.0),
            (g.div(three, two), 1.5),
            (g.powf(two, three), 8.0),
            (g.powi(two, 10), 1024.0),
            (g.neg(two), -2.0),
            (g.atan2(two, three), 2f64.atan2(3.0)),
        ];
        for (n, v) in cases {
            assert_eq!(g.as_const(n), Some(v));
        }
        for op in [
            Unary::Sqrt,
            Unary::Exp,
            Unary::Ln,
            Unary::Sin,
            Unary::Cos,
            Unary::Tan,
            Unary::Tanh,
            Unary::Atan,
            Unary::Erf,
            Unary::Erfc,
        ] {
            let n = g.unary(op, two);
            assert_eq!(g.as_const(n), Some(super::apply_unary(op, 2.0)), "{op:?}");
        }
        let half = g.constant(0.5);
        for op in [Unary::Acos, Unary::Asin] {
            let n = g.unary(op, half);
            assert_eq!(g.as_const(n), Some(super::apply_unary(op, 0.5)), "{op:?}");
        }
    }

    #[test]
    fn never_folds_to_non_finite() {
        let mut g = Graph::new();
        let zero = g.constant(0.0);
        let one = g.constant(1.0);
        let m1 = g.constant(-1.0);
        let two = g.constant(2.0);
        let big = g.constant(1e300);
        let x = q(&mut g, 0);
        let half = g.constant(0.5);
        let non_folded = [
            g.div(one, zero),
            g.div(zero, zero),
            g.sqrt(m1),
            g.ln(zero),
            g.ln(m1),
            g.asin(two),
            g.acos(two),
            g.mul(big, big),
            g.powi(zero, -1),
            g.powf(m1, half),
            g.div(x, zero),
        ];
        for n in non_folded {
            assert_eq!(g.as_const(n), None, "{:?}", g.node(n));
        }
        // A non-finite constant written by the user is kept, and not simplified against.
        let inf = g.constant(f64::INFINITY);
        let p = g.mul(zero, inf);
        assert!(matches!(g.node(p), Node::Binary(..)));
        let p = g.mul(x, inf);
        assert!(matches!(g.node(p), Node::Binary(..)));
    }

    #[test]
    fn identities() {
        let mut g = Graph::new();
        let x = q(&mut g, 0);
        let y = q(&mut g, 1);
        let zero = g.constant(0.0);
        let one = g.constant(1.0);
        let m1 = g.constant(-1.0);
        let nx = g.neg(x);
        assert_eq!(g.add(x, zero), x);
        assert_eq!(g.add(zero, x), x);
        assert_eq!(g.sub(x, zero), x);
        assert_eq!(g.sub(zero, x), nx);
        assert_eq!(g.sub(x, x), zero);
        assert_eq!(g.mul(x, one), x);
        assert_eq!(g.mul(one, x), x);
        assert_eq!(g.mul(x, zero), zero);
        assert_eq!(g.mul(zero, x), zero);
        assert_eq!(g.mul(x, m1), nx);
        assert_eq!(g.div(x, one), x);
        assert_eq!(g.div(zero, x), zero);
        assert_eq!(g.div(x, x), one);
        assert_eq!(g.neg(nx), x);
        assert_eq!(g.powi(x, 0), one);
        assert_eq!(g.powi(x, 1), x);
        let x2 = g.powi(x, 2);
        let x6 = g.powi(x, 6);
        assert_eq!(g.powi(x2, 3), x6);
        assert_eq!(g.mul(x, x), x2);
        let x4 = g.powi(x, 4);
        assert_eq!(g.mul(x2, x2), x4);
        // x + x = 2x; 3x - x = 2x
        let two = g.constant(2.0);
        let three = g.constant(3.0);
        let twox = g.mul(two, x);
        assert_eq!(g.add(x, x), twox);
        let threex = g.mul(x, three);
        assert_eq!(g.sub(threex, x), twox);
        // x - (-y) = x + y; x + (-y) = x - y
        let ny = g.neg(y);
        let xpy = g.add(x, y);
        let xmy = g.sub(x, y);
        assert_eq!(g.sub(x, ny), xpy);
        assert_eq!(g.add(x, ny), xmy);
        // -(x - y) = y - x
        let ymx = g.sub(y, x);
        assert_eq!(g.neg(xmy), ymx);
        // (-x)(-y) = xy ; cos(-x) = cos x ; sin(-x) = -sin x
        let xy = g.mul(x, y);
        assert_eq!(g.mul(nx, ny), xy);
        let cx = g.cos(x);
        assert_eq!(g.cos(nx), cx);
        let sx = g.sin(x);
        let nsx = g.neg(sx);
        assert_eq!(g.sin(nx), nsx);
        // 2(3x) = 6x ; x/4 = 0.25 x ; powf(x, 2) = powi(x, 2)
        let six = g.constant(6.0);
        let sixx = g.mul(six, x);
        assert_eq!(g.mul(two, threex), sixx);
        let four = g.constant(4.0);
        let q_ = g.constant(0.25);
        let qx = g.mul(q_, x);
        assert_eq!(g.div(x, four), qx);
        assert_eq!(g.powf(x, two), x2);
        // (sqrt x)^2 = x
        let sx = g.sqrt(x);
        assert_eq!(g.powi(sx, 2), x);
        // 3x + 3y = 3(x + y); 3x - 3y = 3(x - y)
        let threey = g.mul(three, y);
        let s = g.add(threex, threey);
        let want = g.mul(three, xpy);
        assert_eq!(s, want);
        let d = g.sub(threex, threey);
        let want = g.mul(three, xmy);
        assert_eq!(d, want);
        // x + ((y + sin x) + 2x) = 3x + (y + sin x): like terms found down a sum
        let sinx = g.sin(x);
        let ys = g.add(y, sinx);
        let inner = g.add(ys, twox);
        let got = g.add(x, inner);
        let want = g.add(threex, ys);
        assert_eq!(got, want);
    }

    #[test]
    fn division_by_constant_zero_is_kept() {
        let mut g = Graph::new();
        let x = q(&mut g, 0);
        let zero = g.constant(0.0);
        let d = g.div(x, zero);
        assert!(
            matches!(g.node(d), Node::Binary(super::Binary::Div, a, b) if *a == x && *b == zero)
        );
        let d2 = g.div(zero, zero);
        assert!(matches!(g.node(d2), Node::Binary(..)));
    }

    #[test]
    fn hash_consing_and_commutativity() {
        let mut g = Graph::new();
        let x = q(&mut g, 0);
        let y = q(&mut g, 1);
        assert_eq!(g.var(Var::Q(0)), x);
        let a = g.add(x, y);
        let b = g.add(y, x);
        assert_eq!(a, b);
        let a = g.mul(x, y);
        let b = g.mul(y, x);
        assert_eq!(a, b);
        let s1 = g.sin(a);
        let s2 = g.sin(b);
        assert_eq!(s1, s2);
        let c = g.constant(2.5);
        let p = g.mul(x, c);
        // constants first
        assert!(matches!(g.node(p), Node::Binary(_, l, _) if *l == c));
        // -0.0 and 0.0 are one constant
        let z1 = g.constant(0.0);
        let z2 = g.constant(-0.0);
        assert_eq!(z1, z2);
        let n = g.len();
        let _ = g.mul(y, x);
        let _ = g.add(y, x);
        assert_eq!(g.len(), n, "rebuilding existing expressions adds no node");
    }

    #[test]
    fn dependencies() {
        let mut g = Graph::new();
        let x = q(&mut g, 0);
        let p = g.var(Var::Param(0));
        let e = g.mul(p, x);
        let s = g.sin(p);
        assert!(g.depends_on_q(e));
        assert!(!g.depends_on_q(s));
        assert!(g.depends_on(s, |v| v == Var::Param(0)));
        assert!(!g.depends_on(s, |v| v == Var::Omega));
        assert!(g.depends_on_var(e, Var::Q(0)));
        assert!(!g.depends_on_var(e, Var::Q(1)));
        let vs: Vec<_> = g.vars_of(e).collect();
        assert_eq!(vs, vec![Var::Q(0), Var::Param(0)]);
        // Many variables: bitsets spanning several words.
        let mut acc = g.constant(0.0);
        for i in 0..200 {
            let v = g.var(Var::Dir(i));
            acc = g.add(acc, v);
        }
        assert!(g.depends_on_var(acc, Var::Dir(199)));
        assert!(!g.depends_on_q(acc));
        assert_eq!(g.vars_of(acc).count(), 200);
    }
}
