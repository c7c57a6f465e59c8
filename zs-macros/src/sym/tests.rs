//! Cross-stage tests of the symbolic engine.

use std::time::Instant;

use super::{schedule, Graph, NodeId, Var};

/// `V = ½ω² Σ_ij ((RᵀR − I)_ij)²` with `R` the 3×3 matrix of `q[0..9]` (row major).
fn orthogonality_penalty(g: &mut Graph) -> NodeId {
    let q: Vec<_> = (0..9).map(|i| g.var(Var::Q(i))).collect();
    let mut terms = Vec::new();
    for i in 0..3 {
        for j in 0..3 {
            let prods: Vec<_> = (0..3).map(|k| g.mul(q[3 * k + i], q[3 * k + j])).collect();
            let mut m = g.sum(prods);
            if i == j {
                let one = g.constant(1.0);
                m = g.sub(m, one);
            }
            terms.push(g.powi(m, 2));
        }
    }
    let s = g.sum(terms);
    let w = g.var(Var::Omega);
    let w2 = g.powi(w, 2);
    let half = g.constant(0.5);
    let hw2 = g.mul(half, w2);
    g.mul(hw2, s)
}

/// Ways of building the third contraction `T_i = Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k` from `∇V`.
type Variant = fn(&mut Graph, &[NodeId], NodeId) -> Vec<NodeId>;

fn dirs(g: &mut Graph, n: usize) -> Vec<NodeId> {
    (0..n as u32).map(|j| g.var(Var::Dir(j))).collect()
}

const VARIANTS: [(&str, Variant); 5] = [
    // What `third_contraction` does: D = Σ_k a_k ∂/∂q_k applied twice to each gradient entry.
    ("D(D(grad_i))", |g, grad, _| g.third_contraction(grad)),
    ("grad of D(D(V))", |g, grad, v| {
        let d = g.directional(v);
        let dd = g.directional(d);
        g.gradient(dd, grad.len())
    }),
    ("d/dq_i of sum_k d(grad . a)/dq_k a_k", |g, grad, _| {
        let a = dirs(g, grad.len());
        let t: Vec<_> = grad.iter().zip(&a).map(|(&x, &y)| g.mul(x, y)).collect();
        let s1 = g.sum(t);
        let t: Vec<_> = (0..grad.len())
            .map(|k| {
                let d = g.derivative(s1, Var::Q(k as u32));
                g.mul(d, a[k])
            })
            .collect();
        let s2 = g.sum(t);
        g.gradient(s2, grad.len())
    }),
    ("D((H a)_i)", |g, grad, _| {
        let h = g.hessian(grad);
        let a = dirs(g, grad.len());
        h.iter()
            .map(|row| {
                let t: Vec<_> = row.iter().zip(&a).map(|(&x, &y)| g.mul(x, y)).collect();
                let s = g.sum(t);
                g.directional(s)
            })
            .collect()
    }),
    ("grad of a^T H a", |g, grad, _| {
        let h = g.hessian(grad);
        let a = dirs(g, grad.len());
        let mut t = Vec::new();
        for (i, row) in h.iter().enumerate() {
            for (j, &hij) in row.iter().enumerate() {
                let aa = g.mul(a[i], a[j]);
                t.push(g.mul(hij, aa));
            }
        }
        let s = g.sum(t);
        g.gradient(s, grad.len())
    }),
];

/// The third contraction of the 9-variable quartic: the chosen construction is the smallest of
/// the alternatives, and its size and build time stay bounded.
///
/// Measured (this commit): T alone 208 instructions, ∇V + H + T together 472 (∇V alone 94,
/// H alone 211), graph 858 nodes, built in well under a millisecond; the alternatives need
/// 241 (∇ of D(D(V))) to 625 instructions. The bounds (300 and 700) leave room for changes in
/// the simplifier while catching a regression to any of the O(n) × Hessian-sized constructions.
#[test]
fn third_contraction_size() {
    let n = 9;
    let mut sizes = Vec::new();
    for (name, build) in VARIANTS {
        let t0 = Instant::now();
        let mut g = Graph::new();
        let v = orthogonality_penalty(&mut g);
        let grad = g.gradient(v, n);
        let t = build(&mut g, &grad, v);
        let hess = g.hessian(&grad);
        let mut all = grad.clone();
        all.extend(hess.iter().flatten());
        all.extend(&t);
        let together = schedule(&g, &all).len();
        let alone = schedule(&g, &t).len();
        let elapsed = t0.elapsed();
        println!(
            "{name:40} T alone {alone:4}  grad+H+T {together:4}  nodes {:5}  {elapsed:?}",
            g.len()
        );
        sizes.push((alone, together, elapsed));
    }
    let (alone, together, elapsed) = sizes[0];
    assert!(sizes[1..].iter().all(|&(a, _, _)| a >= alone), "{sizes:?}");
    assert!(alone < 300, "T alone: {alone} instructions");
    assert!(together < 700, "grad + H + T: {together} instructions");
    assert!(elapsed.as_secs_f64() < 0.5, "built in {elapsed:?}");
}

/// Scaling: 40 particles in 3D (n = 120) with bonds along the chain and a Lennard-Jones-like
/// term between all other pairs (780 pair terms, a dense Hessian of 7260 distinct entries).
/// Measured: ∇V ≈ 5 ms, + H ≈ 50 ms, + T ≈ 70 ms, + schedule ≈ 75 ms; 180k nodes, 120k
/// instructions. The bound is loose (a loaded 2-core machine) but catches quadratic blow-ups.
#[test]
fn large_dense_system_builds_fast() {
    let t0 = Instant::now();
    let mut g = Graph::new();
    let np = 40;
    let q: Vec<_> = (0..3 * np as u32).map(|i| g.var(Var::Q(i))).collect();
    let mut terms = Vec::new();
    for i in 0..np {
        for j in i + 1..np {
            let d2: Vec<_> = (0..3)
                .map(|k| {
                    let d = g.sub(q[3 * i + k], q[3 * j + k]);
                    g.powi(d, 2)
                })
                .collect();
            let r2 = g.sum(d2);
            if j == i + 1 {
                let r = g.sqrt(r2);
                let one = g.constant(1.0);
                let e = g.sub(r, one);
                terms.push(g.powi(e, 2));
            } else {
                let inv = g.powi(r2, -3);
                let inv2 = g.powi(inv, 2);
                terms.push(g.sub(inv2, inv));
            }
        }
    }
    let v = g.sum(terms);
    let grad = g.gradient(v, 3 * np);
    let t_grad = t0.elapsed();
    let hess = g.hessian(&grad);
    let t_hess = t0.elapsed();
    let third = g.third_contraction(&grad);
    let t_third = t0.elapsed();
    let mut all = grad.clone();
    for (i, row) in hess.iter().enumerate() {
        all.extend(&row[i..]);
    }
    all.extend(&third);
    let p = schedule(&g, &all);
    let total = t0.elapsed();
    println!(
        "n = {}: {} nodes, {} instructions; grad {t_grad:?}, H {t_hess:?}, T {t_third:?}, \
         schedule {total:?}",
        3 * np,
        g.len(),
        p.len()
    );
    assert!(total.as_secs_f64() < 3.0, "{total:?}");
    assert!(p.len() < 200_000, "{}", p.len());
    // Spot check against the forward-mode gradient at one point.
    let env = |v: Var| match v {
        Var::Q(i) => f64::from(i) * 0.37 + (f64::from(i) * 1.3).sin(),
        _ => 0.5,
    };
    let fwd = g.gradient_forward(v, 3 * np);
    let (a, b) = (g.eval_many(&grad, &env), g.eval_many(&fwd, &env));
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0),
            "{x} vs {y}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Property tests: random expression DAGs, engine against num-dual on the raw expression.
// ---------------------------------------------------------------------------------------------

/// Random expression DAGs: the engine's values, gradient, Hessian and third contraction against
/// the raw expression evaluated directly.
///
/// # What is compared
/// A case is a list of primitive operations (`Op`) whose operands are earlier entries, so
/// subexpressions are shared (a DAG, not a tree). The *reference* is that raw list evaluated
/// directly — no graph, no simplification, no symbolic differentiation — in `f64` (values) and
/// in num-dual's `HyperDual64` / `HyperHyperDual64` (gradient and Hessian entries, third
/// contraction `T_i = Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k`). The engine builds the same list through
/// its simplifying, hash-consing constructors, differentiates symbolically (reverse-mode
/// gradient, forward-mode gradient, Hessian and `T`) and evaluates with its interpreter.
///
/// # Error criterion: `|engine − reference| ≤ 1e-10 · S`
/// `S = A + E` is the *condition scale* of the compared quantity, computed per case, point and
/// output by evaluating the raw list once more in `Cond`, alongside the jet `v` (the truncated
/// Taylor polynomial in ε1, ε2, ε3 that the hyper-dual numbers compute):
///
/// - `A`, the *absolute chain rule*: the same derivative with every term in absolute value
///   (`Σ_k |f⁽ᵏ⁾|/k! |dx|ᵏ` for a unary `f`, `|x|+|y|` for `x ± y`, `|x|·|y|` for products, ...).
///   Every method that evaluates the chain rule as sums of products of partials — num-dual's
///   forward jets, the engine's reverse-then-forward symbolic graph, which groups the same
///   products differently (regrouping leaves the sum of their absolute values unchanged) — has
///   a rounding error of at most `γ_L·A`, `L` the longest chain of roundings (a small multiple
///   of the depth, ≲ 2000 here: `γ_L ≈ L·u ≲ 3e-13`).
/// - `E`, the first-order effect of rounding the *values*: the partials are evaluated at
///   rounded intermediate values, and a value error `δ` at a node moves every derivative built
///   from it through the higher derivatives of later operations (a value off by `u·|x|` moves
///   `cos x`, `1/x`, `x²`, ...). `Cond` rounds each value `w₀` by `u·|w₀|` and propagates with
///   the jet partials `∂op/∂x` (whose ε-components are the second to fourth derivatives of
///   `op`) in absolute value: `e_w = |∂op/∂x| ⊛ (e_x + |x₀|) + |∂op/∂y| ⊛ (e_y + |y₀|) + |w₀|`.
///   The `|x₀|` is the rounding of the argument inside the formulas for `op`'s derivatives
///   (`6x² − 2` in `atan'''`): near a root of such a derivative it dominates (measured before
///   it was included: 540 `u·S` for `tanh'''` at 0.66, 410 for `atan'''` at 0.58).
///
/// So `u·S`, up to the factor `L`, bounds both the reference's and the engine's rounding error.
/// Measured over 20000 cases of each property (`prop::measure_accuracy_and_generators`), the
/// worst `|engine − reference|` is 40 `u·S` (shallow), 18 `u·S` (deep), 0.6 `u·S` (identities).
/// `1e-10·S ≈ 1e6 u·S` leaves room for constant factors, not for a wrong rule: a wrong sign,
/// factor or missing term of magnitude `t` is caught unless `t < 1e-10·S`. Deliberately broken
/// engines were each caught by these properties at the default case counts: a sign in the
/// atan2 rule, a missing factor in the powf rule, `tanh' = 1 + tanh²`, `sin'` off by 1e-9
/// relative, `exp'` off by 1e-10, the division rule off by 1e-8, an adjoint overwritten instead
/// of accumulated at a shared node, the Hessian's mirrored half, the direction of `T`, like
/// terms off by 1e-9, `(xᵃ)ᵇ → x^(a+b)`, no canonical order of products.
/// `prop::condition_scale_cases` shows both parts of `S` at work.
///
/// Why not relative to `|reference|`: a quantity that is a difference of large terms cannot be
/// computed with relative accuracy to its own magnitude by any floating-point method. num-dual's
/// quotient rule leaves rounding noise in the second derivative of `p/p` (terms of order
/// `|p'|²/p²` that cancel) where the engine, which folds `x/x → 1`, returns exactly 0: `A`
/// accounts for it. `(c + q) − c`, which the engine folds to `q`, has lost its relative
/// accuracy in the raw reference, and so has every derivative of a function of it although the
/// derivative itself has no cancellation: `E` accounts for it. Deep compositions sum many
/// chain-rule paths of either sign. Relative to `S` both answers are accurate, and no second
/// ("either reference agrees") escape is needed. `S = 0` (all terms exactly zero, e.g.
/// `∂V/∂q_1` of a `V` without `q_1`) demands exact equality.
///
/// # Exclusions (measured, as narrow as possible)
/// - Derivatives are compared only where every `tanh` argument has `|x| ≤ 5`: the engine
///   differentiates `tanh` as `1 − tanh²x`, which has absolute, not relative, accuracy (the
///   rounding of `tanh x ≈ ±1` is `u`, the result is `sech²x ≈ 4e^{-2|x|}`); measured relative
///   error in `prop::tanh_derivative_accuracy`: 3e-13 at 5, 3e-10 at 8, 3e-7 at 12. The deep
///   generator bounds tanh arguments by construction; the shallow one skips those points.
/// - Shallow cases whose values leave `[-1e6, 1e6]` (`exp(exp(exp x))`) are rejected: powers of
///   such values in the derivative rules (`(1 + y²)⁻³` of `atan'''`) underflow into subnormals,
///   which have no relative precision (measured: a value of 2e78 gave an error of 4e-5·S in
///   `T`) — range, not rounding. The deep generator keeps values in range by construction and
///   *asserts* finiteness instead.
/// - Points where an operand of some `atan2` is zero with a different sign in the raw
///   evaluation and in the engine are skipped. **Engine issue**: the simplifier drops the sign
///   of zero (`x·0 → +0`, and `ConstBits` turns `-0.0` into `+0.0`), and `atan2(±0, x < 0) =
///   ±π`: at `q < 0`, `atan2(q·0, −1)` is `−π` in plain Rust and `+π` in the engine
///   (`prop::signed_zero_at_atan2_branch_cut`, ignored until the engine is fixed). Found by
///   the deep property's soak in one case of 20000. No other supported function has a finite
///   value that depends on the sign of zero.
#[allow(clippy::needless_range_loop)] // index loops over coordinates read best
mod prop {
    use std::cell::RefCell;
    use std::ops::{Add, Mul, Neg, Sub};
    use std::time::Instant;

    use num_dual::{DualNum, HyperDual64, HyperHyperDual64};
    use proptest::prelude::*;
    use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRng, TestRunner};

    use super::super::{schedule, Binary, Graph, Node, NodeId, Scalar, Unary, Var};

    /// Tolerance of every comparison, relative to the condition scale `S` (see the module docs).
    const TOL: f64 = 1e-10;
    /// Unit roundoff, for reporting errors in units of `u·S`.
    const U: f64 = f64::EPSILON / 2.0;
    /// Largest `|x|` of a `tanh` argument at which derivatives are compared (module docs).
    const TANH_MAX: f64 = 5.0;

    /// Number of cases of a property: `PROPTEST_CASES` if set (soak runs), else `default`.
    fn cases(default: u32) -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    }

    // ----- the reference: num-dual -----

    macro_rules! dual_scalar {
        ($($t:ty),*) => {$(
            impl Scalar for $t {
                fn from_f64(x: f64) -> Self {
                    <$t>::from(x)
                }
                fn unary(&self, op: Unary) -> Self {
                    match op {
                        Unary::Neg => -*self,
                        Unary::Sqrt => DualNum::sqrt(self),
                        Unary::Exp => DualNum::exp(self),
                        Unary::Ln => DualNum::ln(self),
                        Unary::Sin => DualNum::sin(self),
                        Unary::Cos => DualNum::cos(self),
                        Unary::Tan => DualNum::tan(self),
                        // num-dual's tanh is sinh/cosh, whose derivative parts cancel
                        // catastrophically for large |x|. Instead, num-dual arithmetic on the
                        // Taylor expansion Σ_k f_k/k! (x − x₀)ᵏ with tanh's exact derivatives
                        // (`taylor`, checked against num-dual in `taylor_coefficients`): the
                        // chain rule, as num-dual applies it to its other functions.
                        Unary::Tanh => {
                            let f = taylor(Unary::Tanh, self.re);
                            let d = *self - self.re;
                            let d2 = d * d;
                            d2 * d * (f[3] / 6.0) + d2 * (f[2] / 2.0) + d * f[1] + f[0]
                        }
                        Unary::Acos => DualNum::acos(self),
                        Unary::Asin => DualNum::asin(self),
                        Unary::Atan => DualNum::atan(self),
                    }
                }
                fn binary(&self, op: Binary, b: &Self) -> Self {
                    match op {
                        Binary::Add => *self + *b,
                        Binary::Sub => *self - *b,
                        Binary::Mul => *self * *b,
                        Binary::Div => *self / *b,
                        Binary::Powf => DualNum::powd(self, *b),
                        // num-dual's atan2 differentiates atan(y/x), which loses all
                        // accuracy for small |x|; use atan(y/x) or -atan(x/y), whichever is
                        // well conditioned (same derivatives), with the exact real part.
                        Binary::Atan2 => {
                            let (y, x) = (*self, *b);
                            let mut r = if x.re.abs() >= y.re.abs() {
                                DualNum::atan(&(y / x))
                            } else {
                                -DualNum::atan(&(x / y))
                            };
                            r.re = y.re.atan2(x.re);
                            r
                        }
                        Binary::Lt => <$t>::from(f64::from(u8::from(self.re < b.re))),
                        Binary::Le => <$t>::from(f64::from(u8::from(self.re <= b.re))),
                    }
                }
                fn powi(&self, n: i32) -> Self {
                    DualNum::powi(self, n)
                }
                fn is_true(&self) -> bool {
                    self.re != 0.0
                }
            }
        )*};
    }
    dual_scalar!(HyperDual64, HyperHyperDual64);

    // ----- the condition scale -----

    /// A truncated Taylor polynomial in three nilpotent infinitesimals (`ε_k² = 0`): `0[m]` is
    /// the coefficient of `Π_{k ∈ m} ε_k`, `m` a bitmask (bit 0 = ε1, bit 1 = ε2, bit 2 = ε3).
    /// The algebra of `HyperHyperDual64`; index 1 = ε1, 3 = ε1ε2, 7 = ε1ε2ε3.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Jet([f64; 8]);

    impl Jet {
        const ZERO: Jet = Jet([0.0; 8]);

        fn constant(x: f64) -> Jet {
            let mut c = [0.0; 8];
            c[0] = x;
            Jet(c)
        }

        fn re(self) -> f64 {
            self.0[0]
        }

        fn abs(self) -> Jet {
            Jet(self.0.map(f64::abs))
        }

        fn scale(self, k: f64) -> Jet {
            Jet(self.0.map(|x| k * x))
        }

        /// `f(self)` from `f` and its first three derivatives at the real part:
        /// `Σ_k f_k/k! (self − re)ᵏ`, the chain rule of every order up to three.
        fn compose(self, f: &[f64]) -> Jet {
            let mut d = self;
            d.0[0] = 0.0;
            let d2 = d * d;
            let d3 = d2 * d;
            Jet::constant(f[0]) + d.scale(f[1]) + d2.scale(f[2] / 2.0) + d3.scale(f[3] / 6.0)
        }

        /// Every term of [`Jet::compose`] in absolute value (sums before cancellation).
        fn compose_abs(self, f: &[f64]) -> Jet {
            let f: Vec<f64> = f.iter().map(|x| x.abs()).collect();
            self.abs().compose(&f)
        }

        fn unary(self, op: Unary) -> Jet {
            self.compose(&taylor(op, self.re())[..4])
        }

        fn recip(self) -> Jet {
            let r = 1.0 / self.re();
            self.compose(&[r, -r * r, 2.0 * r * r * r, -6.0 * r.powi(4)])
        }
    }

    impl Add for Jet {
        type Output = Jet;
        fn add(mut self, o: Jet) -> Jet {
            for m in 0..8 {
                self.0[m] += o.0[m];
            }
            self
        }
    }

    impl Sub for Jet {
        type Output = Jet;
        fn sub(self, o: Jet) -> Jet {
            self + -o
        }
    }

    impl Neg for Jet {
        type Output = Jet;
        fn neg(self) -> Jet {
            self.scale(-1.0)
        }
    }

    impl Mul for Jet {
        type Output = Jet;
        fn mul(self, o: Jet) -> Jet {
            let mut c = [0.0; 8];
            for m in 0..8usize {
                // Every split of the monomial m into disjoint parts s and m ^ s.
                let mut s = m;
                loop {
                    c[m] += self.0[s] * o.0[m ^ s];
                    if s == 0 {
                        break;
                    }
                    s = (s - 1) & m;
                }
            }
            Jet(c)
        }
    }

    /// `f, f', f'', f''', f''''` of a unary function at `x`.
    fn taylor(op: Unary, x: f64) -> [f64; 5] {
        match op {
            Unary::Neg => [-x, -1.0, 0.0, 0.0, 0.0],
            Unary::Sqrt => {
                let s = x.sqrt();
                [
                    s,
                    0.5 / s,
                    -0.25 / (s * x),
                    0.375 / (s * x * x),
                    -0.9375 / (s * x * x * x),
                ]
            }
            Unary::Exp => [x.exp(); 5],
            Unary::Ln => {
                let r = 1.0 / x;
                [x.ln(), r, -r * r, 2.0 * r.powi(3), -6.0 * r.powi(4)]
            }
            Unary::Sin => {
                let (s, c) = x.sin_cos();
                [s, c, -s, -c, s]
            }
            Unary::Cos => {
                let (s, c) = x.sin_cos();
                [c, -s, -c, s, c]
            }
            Unary::Tan => {
                let t = x.tan();
                let p = 1.0 + t * t;
                [
                    t,
                    p,
                    2.0 * t * p,
                    p * (2.0 + 6.0 * t * t),
                    16.0 * t * p * p + 8.0 * t.powi(3) * p,
                ]
            }
            Unary::Tanh => {
                let t = x.tanh();
                let p = x.cosh().powi(-2);
                [
                    t,
                    p,
                    -2.0 * t * p,
                    -2.0 * p * p + 4.0 * t * t * p,
                    16.0 * t * p * p - 8.0 * t.powi(3) * p,
                ]
            }
            Unary::Asin | Unary::Acos => {
                let r = 1.0 / (1.0 - x * x).sqrt();
                let (f0, s) = if op == Unary::Asin {
                    (x.asin(), 1.0)
                } else {
                    (x.acos(), -1.0)
                };
                [
                    f0,
                    s * r,
                    s * x * r.powi(3),
                    s * (1.0 + 2.0 * x * x) * r.powi(5),
                    s * x * (9.0 + 6.0 * x * x) * r.powi(7),
                ]
            }
            Unary::Atan => {
                let w = 1.0 / (1.0 + x * x);
                [
                    x.atan(),
                    w,
                    -2.0 * x * w * w,
                    (6.0 * x * x - 2.0) * w.powi(3),
                    24.0 * x * (1.0 - x * x) * w.powi(4),
                ]
            }
        }
    }

    /// `f, ..., f''''` of `x.powi(n)` at `x`.
    fn powi_taylor(n: i32, x: f64) -> [f64; 5] {
        let mut f = [0.0; 5];
        let mut coef = 1.0;
        for (k, fk) in f.iter_mut().enumerate() {
            if coef != 0.0 {
                *fk = coef * x.powi(n - k as i32);
            }
            coef *= f64::from(n) - k as f64;
        }
        f
    }

    /// The jet `v` of a value (what the hyper-dual numbers compute) with the two parts of its
    /// condition scale `S = a + e` (module docs), all three computed by one evaluation of the
    /// raw op list.
    #[derive(Debug, Clone, Copy)]
    struct Cond {
        v: Jet,
        /// The chain rule with every term in absolute value: `Σ |f_k|/k! |dx|ᵏ` through every
        /// operation (`A`).
        a: Jet,
        /// First-order effect of rounding the *values* (`E`, in units of `u`): each value
        /// `w₀` is rounded by `|w₀|`, and errors propagate through the jet partials.
        e: Jet,
    }

    impl Cond {
        /// An exact input `x + s₀ε1 + s₁ε2 + s₂ε3`.
        fn var(x: f64, seeds: [f64; 3]) -> Cond {
            let mut v = Jet::constant(x);
            v.0[1] = seeds[0];
            v.0[2] = seeds[1];
            v.0[4] = seeds[2];
            Cond {
                v,
                a: v.abs(),
                e: Jet::ZERO,
            }
        }

        /// The condition scale `S` of jet component `m` (module docs).
        fn scale(&self, m: usize) -> f64 {
            self.a.0[m] + self.e.0[m]
        }

        /// The result of an operation: value jet `v`, absolute jet `a`, jet partials `parts`
        /// w.r.t. the operands; `k` roundings of the value. Each operand carries its own error
        /// `e_x` plus one rounding `|x₀|`: the formulas for the operation's derivatives round
        /// their argument first (`6x² − 2` in `atan'''`, `4t²p − 2p²` in `tanh'''`; near a root
        /// of such a derivative, that rounding dominates).
        fn result(v: Jet, a: Jet, parts: &[(Jet, &Cond)], k: f64) -> Cond {
            let mut e = Jet::constant(k * v.re().abs());
            for (p, x) in parts {
                e = e + p.abs() * (x.e + Jet::constant(x.v.re().abs()));
            }
            Cond { v, a, e }
        }

        /// A unary function given its derivatives `f[0..5]` at the real part, its value rounded
        /// `k` times (`powi` by repeated multiplication).
        fn apply(&self, f: [f64; 5], k: f64) -> Cond {
            let v = self.v.compose(&f[..4]);
            let a = self.a.compose_abs(&f[..4]);
            let p = self.v.compose(&f[1..]);
            Cond::result(v, a, &[(p, self)], k)
        }

        /// `A` of `1/y`.
        fn recip_abs(&self) -> Jet {
            let r = 1.0 / self.v.re();
            self.a
                .compose_abs(&[r, -r * r, 2.0 * r * r * r, -6.0 * r.powi(4)])
        }
    }

    impl Scalar for Cond {
        fn from_f64(x: f64) -> Self {
            Cond {
                v: Jet::constant(x),
                a: Jet::constant(x.abs()),
                e: Jet::ZERO,
            }
        }
        fn unary(&self, op: Unary) -> Self {
            self.apply(taylor(op, self.v.re()), 1.0)
        }
        fn binary(&self, op: Binary, b: &Self) -> Self {
            let (x, y) = (self.v, b.v);
            match op {
                Binary::Lt => return Cond::from_f64(f64::from(u8::from(x.re() < y.re()))),
                Binary::Le => return Cond::from_f64(f64::from(u8::from(x.re() <= y.re()))),
                _ => {}
            }
            let one = Jet::constant(1.0);
            // Value, absolute chain rule, partials.
            let (w, a, px, py) = match op {
                Binary::Add => (x + y, self.a + b.a, one, one),
                Binary::Sub => (x - y, self.a + b.a, one, -one),
                Binary::Mul => (x * y, self.a * b.a, y, x),
                Binary::Div => {
                    let r = y.recip();
                    let w = x * r;
                    (w, self.a * b.recip_abs(), r, -(w * r))
                }
                // exp(y ln x)
                Binary::Powf => {
                    let lx = x.unary(Unary::Ln);
                    let w = (y * lx).unary(Unary::Exp);
                    let la = self.a.compose_abs(&taylor(Unary::Ln, x.re())[..4]);
                    let m = b.a * la;
                    let a = m.compose_abs(&taylor(Unary::Exp, y.re() * x.re().ln())[..4]);
                    (w, a, y * w * x.recip(), w * lx)
                }
                // (self, b) = (y, x) of atan2: atan(self/b) or −atan(b/self), whichever is well
                // conditioned; ∂/∂self = b/(b² + self²), ∂/∂b = −self/(b² + self²).
                Binary::Atan2 => {
                    let d = (x * x + y * y).recip();
                    let (num, den, sign) = if y.re().abs() >= x.re().abs() {
                        (self, b, 1.0)
                    } else {
                        (b, self, -1.0)
                    };
                    let mut w = (num.v * den.v.recip()).unary(Unary::Atan).scale(sign);
                    w.0[0] = x.re().atan2(y.re());
                    let q = num.a * den.recip_abs();
                    let mut a = q.compose_abs(&taylor(Unary::Atan, num.v.re() / den.v.re())[..4]);
                    a.0[0] = w.0[0].abs();
                    (w, a, y * d, -(x * d))
                }
                Binary::Lt | Binary::Le => unreachable!("returned above"),
            };
            Cond::result(w, a, &[(px, self), (py, b)], 1.0)
        }
        fn powi(&self, n: i32) -> Self {
            // x^n by at most |n| multiplications (and one division if n < 0).
            let k = f64::from(n.unsigned_abs()).max(1.0);
            self.apply(powi_taylor(n, self.v.re()), k)
        }
        fn is_true(&self) -> bool {
            self.v.re() != 0.0
        }
    }

    // ----- random expressions -----

    /// One primitive operation of a random expression; operands are indices of earlier ops.
    #[derive(Debug, Clone, Copy)]
    enum Op {
        Q(u32),
        C(f64),
        Un(Unary, usize),
        Bin(Binary, usize, usize),
        Powi(usize, i32),
    }

    /// Raw random choices of the shallow generator: (kind, operand, operand, real, small int).
    type Raw = (u8, u32, u32, f64, u8);

    const SPECIAL: [f64; 8] = [0.0, 1.0, -1.0, 2.0, 0.5, -0.5, 3.0, 1.0 / 3.0];

    /// Shallow generator: append to `ops` random operations (at most a few dozen) whose every
    /// function argument stays in its domain for any real coordinates. Operands are mostly
    /// recent nodes, sometimes any node (sharing); special constants exercise the
    /// simplifier's identities.
    fn extend_ops(ops: &mut Vec<Op>, raw: &[Raw]) {
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
    fn coords(n_q: usize) -> Vec<Op> {
        (0..n_q as u32).map(Op::Q).collect()
    }

    /// An op list under construction together with its values at every check point, so that
    /// the generator can keep arguments in range where it matters (at the points).
    struct Dag<'a> {
        ops: Vec<Op>,
        /// `vals[i][k]`: value of op `i` at point `k`.
        vals: Vec<Vec<f64>>,
        pts: &'a [Vec<f64>],
    }

    impl<'a> Dag<'a> {
        fn new(n_q: usize, pts: &'a [Vec<f64>]) -> Self {
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

        fn push(&mut self, op: Op) -> usize {
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

        fn max_abs(&self, i: usize) -> f64 {
            self.vals[i].iter().fold(0.0, |m, x| m.max(x.abs()))
        }

        fn min_abs(&self, i: usize) -> f64 {
            self.vals[i]
                .iter()
                .fold(f64::INFINITY, |m, x| m.min(x.abs()))
        }

        fn c(&mut self, x: f64) -> usize {
            self.push(Op::C(x))
        }

        fn un(&mut self, op: Unary, a: usize) -> usize {
            self.push(Op::Un(op, a))
        }

        fn bin(&mut self, op: Binary, a: usize, b: usize) -> usize {
            self.push(Op::Bin(op, a, b))
        }

        /// `c·x`.
        fn scaled(&mut self, c: f64, x: usize) -> usize {
            let c = self.c(c);
            self.bin(Binary::Mul, c, x)
        }

        /// `c + x²` (`c ≥ 0.5`): a positive argument, for ln, sqrt, divisions, bases of powers.
        fn pos(&mut self, x: usize, c: f64) -> usize {
            let s = self.push(Op::Powi(x, 2));
            let c = self.c(c);
            self.bin(Binary::Add, c, s)
        }

        /// `x` if `|x| ≤ lim` at every point, else `0.6·lim·atan(x)` (`|·| < 0.95 lim`).
        fn bound(&mut self, x: usize, lim: f64) -> usize {
            if self.max_abs(x) <= lim {
                return x;
            }
            let t = self.un(Unary::Atan, x);
            self.scaled(0.6 * lim, t)
        }

        /// A saturating map to a moderate range: `x/√(1+x²)`, `atan x`, `ln(1+x²)`,
        /// `1/(1+x²)` or `tanh x` (argument bounded).
        fn damp(&mut self, x: usize, k: u8) -> usize {
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
        fn tame(&mut self, mut x: usize, k: u8, n_q: usize) -> usize {
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
        fn moderate(&mut self, x: usize) -> usize {
            if self.max_abs(x) > 100.0 {
                self.un(Unary::Atan, x)
            } else {
                x
            }
        }

        /// A squashed copy of `x` in `(-1, 1)`: `sin x`, `tanh x` or `x/√(1+x²)`.
        fn unit(&mut self, x: usize, k: usize) -> usize {
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
    type DeepRaw = (u8, u32, u32, u8, f64);

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
    fn build_deep(n_q: usize, pts: &[Vec<f64>], steps: &[DeepRaw]) -> (Vec<Op>, usize) {
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
    fn eval_ops<T: Scalar>(ops: &[Op], q: &[T]) -> Vec<T> {
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
    fn build_graph(g: &mut Graph, ops: &[Op]) -> Vec<NodeId> {
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
    fn depths(ops: &[Op]) -> Vec<usize> {
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
    fn tanh_in_range(ops: &[Op], p: &[f64]) -> bool {
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
    fn zero_sign_differs(ops: &[Op], g: &Graph, ids: &[NodeId], p: &[f64]) -> bool {
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

    // ----- the comparison -----

    /// Worst `|engine − reference| / S` seen, per kind of output (`scale_jet`: `Cond`'s own
    /// jet against num-dual, a check of the scale's arithmetic).
    #[derive(Debug, Default, Clone, Copy)]
    struct Worst {
        value: f64,
        grad: f64,
        hess: f64,
        third: f64,
        scale_jet: f64,
        /// Largest `S / |reference|` over outputs with a non-zero reference (how much the
        /// scale exceeds the magnitude; 1 means no cancellation at all).
        amplification: f64,
        /// Number of compared outputs with reference 0, and with `S/|reference|` in
        /// `[1, 10]`, `(10, 1e3]`, `(1e3, 1e6]`, `(1e6, 1e10]`, above.
        histogram: [u64; 6],
        /// Points skipped (the sign of a zero reaches an atan2 differently).
        skipped: usize,
    }

    impl Worst {
        fn merge(&mut self, o: &Worst) {
            self.value = self.value.max(o.value);
            self.grad = self.grad.max(o.grad);
            self.hess = self.hess.max(o.hess);
            self.third = self.third.max(o.third);
            self.scale_jet = self.scale_jet.max(o.scale_jet);
            self.amplification = self.amplification.max(o.amplification);
            for (h, o) in self.histogram.iter_mut().zip(o.histogram) {
                *h += o;
            }
            self.skipped += o.skipped;
        }
    }

    /// `|got − want| / s`, asserted `≤ TOL` (exact equality when `s = 0`).
    fn rel(got: f64, want: f64, s: f64, what: &dyn Fn() -> String) -> Result<f64, TestCaseError> {
        let r = if got == want {
            0.0
        } else {
            (got - want).abs() / s
        };
        prop_assert!(
            r <= TOL,
            "{}: engine {got:e} vs reference {want:e}, condition scale {s:e}: \
             |Δ|/S = {r:e} > {TOL:e}",
            what()
        );
        Ok(r)
    }

    /// Compare the engine with the references on one op list (output `out`) over `n`
    /// coordinates: values at every point of `pts`, derivatives (direction `dir` for the third
    /// contraction) at the first `n_deriv` points where every tanh argument is in range.
    /// Points where the sign of a zero reaches an atan2 differently (engine issue, module docs)
    /// are skipped. `strict`: non-finite references fail (deep generator) instead of rejecting
    /// the case (shallow generator, which also rejects a case without a point for the
    /// derivatives).
    fn check_case(
        n: usize,
        ops: &[Op],
        out: usize,
        pts: &[Vec<f64>],
        dir: &[f64],
        n_deriv: usize,
        strict: bool,
    ) -> Result<Worst, TestCaseError> {
        let n_pts = pts.len();
        let finite = |ok: bool, what: &str| -> Result<(), TestCaseError> {
            if ok {
                Ok(())
            } else if strict {
                Err(TestCaseError::fail(format!("non-finite {what}\n{ops:?}")))
            } else {
                Err(TestCaseError::reject(format!("non-finite {what}")))
            }
        };
        let mut worst = Worst::default();
        let mut amp = |want: f64, s: f64| {
            let bucket = if want == 0.0 {
                0
            } else {
                let a = s / want.abs();
                worst.amplification = worst.amplification.max(a);
                1 + [1e1, 1e3, 1e6, 1e10].iter().filter(|&&t| a > t).count()
            };
            worst.histogram[bucket] += 1;
        };
        let mut g = Graph::new();
        let ids = build_graph(&mut g, ops);
        let v = ids[out];
        let pts: Vec<&Vec<f64>> = pts
            .iter()
            .filter(|p| !zero_sign_differs(ops, &g, &ids, p))
            .collect();
        let deriv_pts: Vec<&Vec<f64>> = pts
            .iter()
            .copied()
            .filter(|p| tanh_in_range(ops, p))
            .take(n_deriv)
            .collect();
        if !strict {
            prop_assume!(!deriv_pts.is_empty(), "no point for the derivatives");
        }
        let env = |p: &[f64]| {
            let (p, dir) = (p.to_vec(), dir.to_vec());
            move |var: Var| match var {
                Var::Q(i) => p[i as usize],
                Var::Dir(j) => dir[j as usize],
                _ => f64::NAN,
            }
        };

        // Simplification never changes a value: at every point.
        let mut w_value = 0.0f64;
        for &p in &pts {
            let raw = eval_ops::<f64>(ops, p);
            finite(raw.iter().all(|x| x.is_finite()), "raw value")?;
            let q: Vec<Cond> = p.iter().map(|&x| Cond::var(x, [0.0; 3])).collect();
            let s = eval_ops(ops, &q)[out].scale(0);
            finite(s.is_finite(), "value scale")?;
            let got = g.eval(v, &env(p));
            let want = raw[out];
            amp(want, s);
            let r = rel(got, want, s, &|| format!("value at q = {p:?}\n{ops:?}"))?;
            w_value = w_value.max(r);
        }

        let grad = g.gradient(v, n);
        let hess = g.hessian(&grad);
        let third = g.third_contraction(&grad);
        let fwd = g.gradient_forward(v, n);
        // Gradient, the full Hessian (row major; the lower triangle is the engine's mirror of
        // the upper one), third contraction.
        let mut all = grad.clone();
        all.extend(hess.iter().flatten());
        all.extend(&third);
        let prog = schedule(&g, &all);
        worst.skipped = n_pts - pts.len();
        let (mut w_grad, mut w_hess, mut w_third, mut w_jet) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for p in deriv_pts {
            let env = env(p);
            let interp = g.eval_many(&all, &env);
            // The schedule evaluates the same operations in the same order: identical bits.
            let run = prog.eval(&env);
            prop_assert_eq!(
                interp.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                run.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
            let fwd = g.eval_many(&fwd, &env);
            let what = |kind: &str, idx: String| format!("{kind}{idx} at q = {p:?}\n{ops:?}");
            for i in 0..n {
                for j in i..n {
                    let seed = |k: usize, m: usize| f64::from(u8::from(k == m));
                    let q: Vec<HyperDual64> = (0..n)
                        .map(|k| HyperDual64::new(p[k], seed(k, i), seed(k, j), 0.0))
                        .collect();
                    let r = eval_ops(ops, &q)[out];
                    let q: Vec<Cond> = (0..n)
                        .map(|k| Cond::var(p[k], [seed(k, i), seed(k, j), 0.0]))
                        .collect();
                    let c = eval_ops(ops, &q)[out];
                    finite(
                        [r.eps1, r.eps1eps2, c.scale(1), c.scale(3)]
                            .iter()
                            .all(|x| x.is_finite()),
                        "derivative reference or scale",
                    )?;
                    if i == j {
                        let s = c.scale(1);
                        amp(r.eps1, s);
                        let w = what("∂V/∂q", format!("[{i}]"));
                        w_grad = w_grad.max(rel(interp[i], r.eps1, s, &|| w.clone())?);
                        let wf = what("forward-mode ∂V/∂q", format!("[{i}]"));
                        w_grad = w_grad.max(rel(fwd[i], r.eps1, s, &|| wf.clone())?);
                        let w = what("Cond jet of ∂V/∂q", format!("[{i}]"));
                        w_jet = w_jet.max(rel(c.v.0[1], r.eps1, s, &|| w.clone())?);
                    }
                    let s = c.scale(3);
                    amp(r.eps1eps2, s);
                    for (k, l) in [(i, j), (j, i)] {
                        let w = what("Hessian", format!("[{k}][{l}]"));
                        let got = interp[n + k * n + l];
                        w_hess = w_hess.max(rel(got, r.eps1eps2, s, &|| w.clone())?);
                    }
                    let w = what("Cond jet of the Hessian", format!("[{i}][{j}]"));
                    w_jet = w_jet.max(rel(c.v.0[3], r.eps1eps2, s, &|| w.clone())?);
                }
            }
            for i in 0..n {
                let q: Vec<HyperHyperDual64> = (0..n)
                    .map(|k| {
                        let e = f64::from(u8::from(k == i));
                        HyperHyperDual64::new(p[k], e, dir[k], dir[k], 0.0, 0.0, 0.0, 0.0)
                    })
                    .collect();
                let r = eval_ops(ops, &q)[out].eps1eps2eps3;
                let q: Vec<Cond> = (0..n)
                    .map(|k| Cond::var(p[k], [f64::from(u8::from(k == i)), dir[k], dir[k]]))
                    .collect();
                let c = eval_ops(ops, &q)[out];
                let s = c.scale(7);

                finite(
                    r.is_finite() && s.is_finite(),
                    "third-order reference or scale",
                )?;
                amp(r, s);
                let w = what("T", format!("[{i}]"));
                w_third = w_third.max(rel(interp[n + n * n + i], r, s, &|| w.clone())?);
                let w = what("Cond jet of T", format!("[{i}]"));
                w_jet = w_jet.max(rel(c.v.0[7], r, s, &|| w.clone())?);
            }
        }
        worst.value = w_value;
        worst.grad = w_grad;
        worst.hess = w_hess;
        worst.third = w_third;
        worst.scale_jet = w_jet;
        Ok(worst)
    }

    // ----- strategies -----

    /// `n` coordinates, a few dozen shallow ops, `n_pts` points in `[-1, 1]ⁿ`, a direction.
    fn shallow_case(
        n_pts: usize,
    ) -> impl Strategy<Value = (usize, Vec<Raw>, Vec<Vec<f64>>, Vec<f64>)> {
        (1usize..=4).prop_flat_map(move |n| {
            (
                Just(n),
                prop::collection::vec(
                    (
                        any::<u8>(),
                        any::<u32>(),
                        any::<u32>(),
                        -2.0..2.0f64,
                        any::<u8>(),
                    ),
                    1..24,
                ),
                prop::collection::vec(prop::collection::vec(-1.0..1.0f64, n), n_pts),
                prop::collection::vec(-1.0..1.0f64, n),
            )
        })
    }

    /// Steps of the deep generator.
    const DEEP_STEPS: std::ops::Range<usize> = 100..160;
    /// Points per deep case: values at all, derivatives at the first `DEEP_DERIV_PTS`.
    const DEEP_PTS: usize = 4;
    const DEEP_DERIV_PTS: usize = 2;

    fn deep_case() -> impl Strategy<Value = (usize, Vec<DeepRaw>, Vec<Vec<f64>>, Vec<f64>)> {
        (1usize..=4).prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(
                    (
                        any::<u8>(),
                        any::<u32>(),
                        any::<u32>(),
                        any::<u8>(),
                        -2.0..2.0f64,
                    ),
                    DEEP_STEPS,
                ),
                prop::collection::vec(prop::collection::vec(-1.5..1.5f64, n), DEEP_PTS),
                prop::collection::vec(-1.0..1.0f64, n),
            )
        })
    }

    /// The shallow property's case: rejects overflowing cases and derivative checks at points
    /// with a tanh argument beyond `TANH_MAX` (module docs).
    fn run_shallow(
        n: usize,
        raw: &[Raw],
        pts: &[Vec<f64>],
        dir: &[f64],
    ) -> Result<Worst, TestCaseError> {
        let mut ops = coords(n);
        extend_ops(&mut ops, raw);
        let out = ops.len() - 1;
        // Well-scaled values only (module docs: range, not rounding).
        for p in pts {
            let v = eval_ops::<f64>(&ops, p);
            prop_assume!(v.iter().all(|x| x.abs() <= 1e6), "value beyond 1e6");
        }
        check_case(n, &ops, out, pts, dir, 2, false)
    }

    /// The deep property's case, with the generator's guarantees asserted.
    fn run_deep(
        n: usize,
        raw: &[DeepRaw],
        pts: &[Vec<f64>],
        dir: &[f64],
    ) -> Result<(Worst, DeepShape), TestCaseError> {
        let (ops, out) = build_deep(n, pts, raw);
        let mut shape = DeepShape::of(&ops, out);
        prop_assert!(
            shape.depth >= raw.len() && shape.nodes >= 2 * raw.len(),
            "generator: depth {} / nodes {} for {} steps",
            shape.depth,
            shape.nodes,
            raw.len()
        );
        for p in pts {
            prop_assert!(
                tanh_in_range(&ops, p),
                "generator: tanh argument out of range"
            );
            let vals = eval_ops::<f64>(&ops, p);
            let (i, big) = vals.iter().enumerate().fold((0, 0.0f64), |(i, m), (j, x)| {
                if x.abs() > m {
                    (j, x.abs())
                } else {
                    (i, m)
                }
            });
            // Inside a step: (p³)³ ≤ 102.5⁹ (p = c + x², |x| ≤ 10) times an operand ≤ 100.
            prop_assert!(
                big <= 2e20,
                "generator: a value of {big:e} at op {i}: {:?}",
                &ops[i.saturating_sub(12)..=i]
            );
        }
        let w = check_case(n, &ops, out, pts, dir, DEEP_DERIV_PTS, true)?;
        shape.skipped = w.skipped;
        Ok((w, shape))
    }

    /// Size and shape of a deep case.
    #[derive(Debug, Default, Clone, Copy)]
    struct DeepShape {
        /// Ops of the raw list.
        nodes: usize,
        /// Longest path from a leaf to the output, in operations.
        depth: usize,
        /// Ops used by two or more later ops.
        shared: usize,
        /// Longest operand of a binary op, counted back from its user (how far sharing reaches).
        reach: usize,
        /// Points skipped (an atan2 of an exact zero, module docs).
        skipped: usize,
    }

    impl DeepShape {
        fn of(ops: &[Op], out: usize) -> DeepShape {
            let mut uses = vec![0usize; ops.len()];
            let mut reach = 0;
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Un(_, a) | Op::Powi(a, _) => uses[a] += 1,
                    Op::Bin(_, x, y) => {
                        uses[x] += 1;
                        uses[y] += 1;
                        reach = reach.max(i - x.min(y));
                    }
                    _ => {}
                }
            }
            DeepShape {
                nodes: ops.len(),
                depth: depths(ops)[out],
                shared: uses.iter().filter(|&&u| u >= 2).count(),
                reach,
                skipped: 0,
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: cases(1024),
            max_global_rejects: 1 << 16,
            ..ProptestConfig::default()
        })]

        /// Shallow random DAGs (≤ 24 random operations with dense use of special constants):
        /// values at 6 points, derivatives at 2, against the raw expression. About 4000
        /// cases/s.
        #[test]
        fn shallow_dags_match_num_dual((n, raw, pts, dir) in shallow_case(6)) {
            run_shallow(n, &raw, &pts, &dir)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: cases(256),
            max_global_rejects: 0,
            ..ProptestConfig::default()
        })]

        /// Deep random DAGs (100–160 chained steps: 340–830 nodes, depth 250–560, every
        /// function, heavy sharing; see `build_deep`): values at 4 points, derivatives at 2,
        /// against the raw expression. About 180 cases/s at opt-level 2.
        #[test]
        fn deep_dags_match_num_dual((n, raw, pts, dir) in deep_case()) {
            run_deep(n, &raw, &pts, &dir)?;
        }
    }

    // ----- targeted identities -----

    /// What the simplifier must make of an identity form built on random subexpressions.
    #[derive(Debug, Clone, Copy)]
    enum Expect {
        /// The node of this op (`x + 0 → x`).
        Node(usize),
        /// This constant (`x − x → 0`, constant folding).
        Const(f64),
        /// `powi(op, k)` (`(pᵃ)ᵇ → p^(ab)`).
        Powi(usize, i32),
        /// `−(−x) → x` for `x` = the first op, where `−x` is the node `Neg(x)` (the second op).
        /// Otherwise `−x` was itself rewritten (`−(c − (c + s)) → s`: the simplifier is not
        /// confluent, `c − (c + s)` stays as written) and `−(−x)` is only equal in value.
        NegNeg(usize, usize),
        /// The value only (rewrites whose resulting shape depends on the operands).
        Value,
    }

    /// Append to `ops` every identity form on the ops `x`, `y` (non-constant, `|·| ≥ 1e-30` at
    /// the points); integers `m`, reals `c` parametrise powers, coefficients and folded constants.
    fn identity_forms(
        ops: &mut Vec<Op>,
        x: usize,
        y: usize,
        m: (i32, i32),
        c: (f64, f64),
    ) -> Vec<(usize, Expect)> {
        use Binary::{Add as BAdd, Atan2, Div, Mul as BMul, Powf, Sub as BSub};
        let mut forms = Vec::new();
        let push = |ops: &mut Vec<Op>, op: Op| {
            ops.push(op);
            ops.len() - 1
        };
        let zero = push(ops, Op::C(0.0));
        let one = push(ops, Op::C(1.0));
        let (c1, c2) = c;
        let (m1, m2) = m;
        let mut form = |ops: &mut Vec<Op>, op: Op, e: Expect| {
            ops.push(op);
            forms.push((ops.len() - 1, e));
            ops.len() - 1
        };
        // Neutral and absorbing elements, cancellation, double negation.
        form(ops, Op::Bin(BAdd, x, zero), Expect::Node(x));
        form(ops, Op::Bin(BAdd, zero, x), Expect::Node(x));
        form(ops, Op::Bin(BSub, x, zero), Expect::Node(x));
        form(ops, Op::Bin(BMul, x, one), Expect::Node(x));
        form(ops, Op::Bin(BMul, one, x), Expect::Node(x));
        form(ops, Op::Bin(Div, x, one), Expect::Node(x));
        form(ops, Op::Powi(x, 1), Expect::Node(x));
        form(ops, Op::Bin(BMul, x, zero), Expect::Const(0.0));
        form(ops, Op::Bin(BMul, zero, x), Expect::Const(0.0));
        form(ops, Op::Bin(Div, zero, x), Expect::Const(0.0));
        form(ops, Op::Bin(BSub, x, x), Expect::Const(0.0));
        form(ops, Op::Bin(Div, x, x), Expect::Const(1.0));
        form(ops, Op::Powi(x, 0), Expect::Const(1.0));
        let nx = push(ops, Op::Un(Unary::Neg, x));
        form(ops, Op::Un(Unary::Neg, nx), Expect::NegNeg(x, nx));
        // Powers of powers, on a positive base (negative exponents).
        let s = push(ops, Op::Powi(x, 2));
        let h = push(ops, Op::C(0.5 + c1.abs()));
        let p = push(ops, Op::Bin(BAdd, h, s));
        let pm1 = push(ops, Op::Powi(p, m1));
        form(ops, Op::Powi(pm1, m2), Expect::Powi(p, m1 * m2));
        // Commutative canonical order.
        let xy = form(ops, Op::Bin(BAdd, x, y), Expect::Value);
        let yx = form(ops, Op::Bin(BAdd, y, x), Expect::Node(xy));
        form(ops, Op::Bin(BSub, xy, yx), Expect::Const(0.0));
        let xy = form(ops, Op::Bin(BMul, x, y), Expect::Value);
        let yx = form(ops, Op::Bin(BMul, y, x), Expect::Node(xy));
        form(ops, Op::Bin(Div, xy, yx), Expect::Const(1.0));
        // Constant folding of every operation (arguments in the domains).
        let (k1, k2) = (push(ops, Op::C(c1)), push(ops, Op::C(c2)));
        let kp = push(ops, Op::C(0.5 + c1.abs()));
        let kd = push(ops, Op::C(3.0 + c2));
        let kh = push(ops, Op::C(0.45 * c1));
        for op in [
            Op::Bin(BAdd, k1, k2),
            Op::Bin(BSub, k1, k2),
            Op::Bin(BMul, k1, k2),
            Op::Bin(Div, k1, kd),
            Op::Bin(Powf, kp, k2),
            // (away from the origin, where atan2 is not differentiable)
            Op::Bin(Atan2, k1, kd),
            Op::Powi(kp, m1),
            Op::Un(Unary::Neg, k1),
            Op::Un(Unary::Sqrt, kp),
            Op::Un(Unary::Exp, k1),
            Op::Un(Unary::Ln, kp),
            Op::Un(Unary::Sin, k1),
            Op::Un(Unary::Cos, k1),
            Op::Un(Unary::Tan, kh),
            Op::Un(Unary::Tanh, k1),
            Op::Un(Unary::Acos, kh),
            Op::Un(Unary::Asin, kh),
            Op::Un(Unary::Atan, k1),
        ] {
            // The folded value is what the raw op computes (filled in by the caller).
            let f = form(ops, op, Expect::Const(f64::NAN));
            form(ops, Op::Bin(BAdd, x, f), Expect::Value);
        }
        // Further rewrites, checked by value: like terms, x·x, pᵃ·pᵇ, x − c, x/2ᵏ, odd and even
        // functions, negations pushed outwards, (√p)², (c·x)ᵐ, powf with special exponents,
        // constants merged through products and sums.
        let cx = push(ops, Op::Bin(BMul, k1, x));
        let c2x = push(ops, Op::Bin(BMul, x, k2));
        form(ops, Op::Bin(BAdd, cx, c2x), Expect::Value);
        form(ops, Op::Bin(BSub, cx, c2x), Expect::Value);
        form(ops, Op::Bin(BAdd, x, x), Expect::Value);
        form(ops, Op::Bin(BMul, x, x), Expect::Value);
        let pm2 = push(ops, Op::Powi(p, m2));
        form(ops, Op::Bin(BMul, pm1, pm2), Expect::Value);
        form(ops, Op::Bin(BSub, x, k1), Expect::Value);
        let four = push(ops, Op::C(4.0));
        form(ops, Op::Bin(Div, x, four), Expect::Value);
        for f in [Unary::Sin, Unary::Cos, Unary::Tanh, Unary::Atan, Unary::Neg] {
            form(ops, Op::Un(f, nx), Expect::Value);
        }
        let ny = push(ops, Op::Un(Unary::Neg, y));
        let xmy = push(ops, Op::Bin(BSub, x, y));
        form(ops, Op::Un(Unary::Neg, xmy), Expect::Value);
        form(ops, Op::Bin(BAdd, x, ny), Expect::Value);
        form(ops, Op::Bin(BSub, x, ny), Expect::Value);
        form(ops, Op::Bin(BMul, nx, y), Expect::Value);
        form(ops, Op::Bin(BMul, nx, ny), Expect::Value);
        form(ops, Op::Bin(Div, nx, p), Expect::Value);
        form(ops, Op::Bin(Div, cx, p), Expect::Value);
        form(ops, Op::Un(Unary::Neg, cx), Expect::Value);
        let ccx = push(ops, Op::Bin(BMul, k2, cx));
        form(ops, Op::Bin(BMul, kd, ccx), Expect::Value);
        let cy = push(ops, Op::Bin(BAdd, k2, y));
        let ccy = push(ops, Op::Bin(BAdd, k1, cy));
        form(ops, Op::Bin(BAdd, ccy, cx), Expect::Value);
        let r = push(ops, Op::Un(Unary::Sqrt, p));
        form(ops, Op::Powi(r, 2), Expect::Value);
        form(ops, Op::Powi(r, 2 * m1), Expect::Value);
        form(ops, Op::Powi(cx, m1.abs()), Expect::Value);
        for e in [2.0, 3.0, 0.5, -0.5, -1.0] {
            let e = push(ops, Op::C(e));
            form(ops, Op::Bin(Powf, p, e), Expect::Value);
        }
        form(ops, Op::Bin(Powf, one, x), Expect::Const(1.0));
        forms
    }

    /// The last op, plus `q_i` if it does not depend on any coordinate.
    fn with_q(ops: &mut Vec<Op>, i: usize) -> usize {
        let mut dep: Vec<bool> = Vec::with_capacity(ops.len());
        for op in ops.iter() {
            let d = match *op {
                Op::Q(_) => true,
                Op::C(_) => false,
                Op::Un(_, a) | Op::Powi(a, _) => dep[a],
                Op::Bin(_, a, b) => dep[a] || dep[b],
            };
            dep.push(d);
        }
        let last = ops.len() - 1;
        if !dep[last] {
            ops.push(Op::Bin(Binary::Add, last, i));
        }
        ops.len() - 1
    }

    /// Coordinates, raw ops of `x` and `y`, points, powers, reals.
    type IdentityCase = (
        usize,
        Vec<Raw>,
        Vec<Raw>,
        Vec<Vec<f64>>,
        (i32, i32),
        (f64, f64),
    );

    fn identity_case() -> impl Strategy<Value = IdentityCase> {
        (1usize..=3).prop_flat_map(|n| {
            let raw = |len| {
                prop::collection::vec(
                    (
                        any::<u8>(),
                        any::<u32>(),
                        any::<u32>(),
                        -2.0..2.0f64,
                        any::<u8>(),
                    ),
                    len,
                )
            };
            (
                Just(n),
                raw(1..16),
                raw(1..8),
                prop::collection::vec(prop::collection::vec(-1.0..1.0f64, n), 6),
                (-3i32..=3, -3i32..=3),
                (-2.0..2.0f64, -2.0..2.0f64),
            )
        })
    }

    /// The identities property's case; returns the worst `|Δ|/S` of the values.
    fn run_identities(case: IdentityCase) -> Result<f64, TestCaseError> {
        let (n, raw_x, raw_y, pts, m, c) = case;
        let mut ops = coords(n);
        extend_ops(&mut ops, &raw_x);
        let x = with_q(&mut ops, 0);
        extend_ops(&mut ops, &raw_y);
        let y = with_q(&mut ops, n - 1);
        let forms = identity_forms(&mut ops, x, y, m, c);
        let mut g = Graph::new();
        let ids = build_graph(&mut g, &ops);
        prop_assume!(g.as_const(ids[x]).is_none() && g.as_const(ids[y]).is_none());
        // Points where the sign of a zero reaches an atan2 differently are skipped (engine
        // issue, module docs).
        let pts: Vec<&Vec<f64>> = pts
            .iter()
            .filter(|p| !zero_sign_differs(&ops, &g, &ids, p))
            .collect();
        prop_assume!(
            !pts.is_empty(),
            "zero of differing sign at an atan2 at every point"
        );
        let raw: Vec<Vec<f64>> = pts.iter().map(|p| eval_ops::<f64>(&ops, p)).collect();
        for v in &raw {
            // x, y, x·y are divisors; below 1e-30 the powers of their reciprocals in the
            // scale's jets (1/y⁴ of (1/y)''') overflow.
            prop_assume!(
                v[x].abs() >= 1e-30 && v[y].abs() >= 1e-30,
                "|x| or |y| below 1e-30 at a point"
            );
            prop_assume!(v.iter().all(|z| z.abs() <= 1e6), "value beyond 1e6");
        }
        for &(f, e) in &forms {
            let got = ids[f];
            match e {
                Expect::Node(i) => prop_assert_eq!(got, ids[i], "form {:?}", ops[f]),
                Expect::Const(k) => {
                    // NaN: a folded constant, whose value is what the raw op computes.
                    let k = if k.is_nan() { raw[0][f] } else { k };
                    prop_assert_eq!(g.as_const(got), Some(k), "form {:?}", ops[f]);
                }
                Expect::NegNeg(x, nx) => {
                    if *g.node(ids[nx]) == Node::Unary(Unary::Neg, ids[x]) {
                        prop_assert_eq!(got, ids[x], "form {:?}", ops[f]);
                    }
                }
                Expect::Powi(p, k) => {
                    let want = g.powi(ids[p], k);
                    prop_assert_eq!(got, want, "form {:?}", ops[f]);
                }
                Expect::Value => {}
            }
        }
        let fs: Vec<NodeId> = forms.iter().map(|&(f, _)| ids[f]).collect();
        let mut worst = 0.0f64;
        for (p, raw) in pts.iter().zip(&raw) {
            let env = |v: Var| match v {
                Var::Q(i) => p[i as usize],
                _ => f64::NAN,
            };
            let got = g.eval_many(&fs, &env);
            let q: Vec<Cond> = p.iter().map(|&z| Cond::var(z, [0.0; 3])).collect();
            let cond = eval_ops(&ops, &q);
            for (&(f, _), got) in forms.iter().zip(got) {
                let s = cond[f].scale(0);
                prop_assert!(
                    s.is_finite(),
                    "form {:?} = {} at {p:?}: {:?}; x = {}, y = {}\n{ops:?}",
                    ops[f],
                    raw[f],
                    cond[f],
                    raw[x],
                    raw[y]
                );
                let r = rel(got, raw[f], s, &|| {
                    format!("form {:?} at q = {p:?}\n{ops:?}", ops[f])
                })?;
                worst = worst.max(r);
            }
        }
        Ok(worst)
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: cases(512),
            max_global_rejects: 1 << 16,
            ..ProptestConfig::default()
        })]

        /// The simplifier's identities on random subexpressions `x`, `y` (shallow DAGs over
        /// shared coordinates): `x+0`, `x·1`, `x·0`, `x−x`, `x/x`, `−(−x)`, `(pᵃ)ᵇ`, constant
        /// folding of every operation and commutative canonical order produce the expected
        /// node; every form (and the further rewrites listed in `identity_forms`) keeps its
        /// value at 6 points, against the raw f64 evaluation with the condition-scaled
        /// criterion of the module docs.
        #[test]
        fn simplification_identities(case in identity_case()) {
            run_identities(case)?;
        }
    }

    /// Measurement (not a check): worst errors in units of `u·S`, generator shapes, cases per
    /// second. Run with
    /// `ZS_CASES=2000 cargo test -p zs-macros --lib sym::tests::prop::measure -- --ignored --nocapture`.
    #[test]
    #[ignore = "measurement; prints statistics (see the doc comment for the command)"]
    fn measure_accuracy_and_generators() {
        let n_cases: u32 = std::env::var("ZS_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(500);
        let rng = || TestRng::deterministic_rng(RngAlgorithm::ChaCha);
        let config = ProptestConfig {
            cases: n_cases,
            max_global_rejects: 1 << 20,
            ..ProptestConfig::default()
        };
        let report = |name: &str, w: &Worst, n: u32, secs: f64| {
            println!(
                "{name}: {n} cases in {secs:.1} s ({:.1} cases/s); worst |Δ|/(u·S): value {:.2}, \
                 grad {:.2}, Hessian {:.2}, T {:.2}, Cond jet {:.2}; max S/|ref| {:.1e}; \
                 outputs with ref = 0, S/|ref| ≤ 10, ≤ 1e3, ≤ 1e6, ≤ 1e10, > 1e10: {:?}",
                f64::from(n) / secs,
                w.value / U,
                w.grad / U,
                w.hess / U,
                w.third / U,
                w.scale_jet / U,
                w.amplification,
                w.histogram
            );
        };

        // Rejections by reason (a `Reject` is retried with a new case).
        let rejects = RefCell::new(std::collections::BTreeMap::<String, u32>::new());
        let note = |r: &TestCaseError| {
            if let TestCaseError::Reject(why) = r {
                *rejects.borrow_mut().entry(why.to_string()).or_default() += 1;
            }
        };

        let worst = RefCell::new(Worst::default());
        let t0 = Instant::now();
        let mut runner = TestRunner::new_with_rng(config.clone(), rng());
        runner
            .run(&shallow_case(6), |(n, raw, pts, dir)| {
                let w = run_shallow(n, &raw, &pts, &dir).inspect_err(note)?;
                worst.borrow_mut().merge(&w);
                Ok(())
            })
            .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        report("shallow", &worst.borrow(), n_cases, secs);
        println!("  shallow rejections: {:?}", rejects.take());

        let worst = RefCell::new(0.0f64);
        let t0 = Instant::now();
        let mut runner = TestRunner::new_with_rng(config.clone(), rng());
        runner
            .run(&identity_case(), |case| {
                let w = run_identities(case).inspect_err(note)?;
                worst.replace_with(|x| x.max(w));
                Ok(())
            })
            .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "identities: {n_cases} cases in {secs:.1} s ({:.1} cases/s); worst |Δ|/(u·S) {:.2}; \
             rejections: {:?}",
            f64::from(n_cases) / secs,
            worst.take() / U,
            rejects.take()
        );

        let worst = RefCell::new(Worst::default());
        let shapes = RefCell::new(Vec::new());
        let t0 = Instant::now();
        let mut runner = TestRunner::new_with_rng(config, rng());
        runner
            .run(&deep_case(), |(n, raw, pts, dir)| {
                let (w, s) = run_deep(n, &raw, &pts, &dir)?;
                worst.borrow_mut().merge(&w);
                shapes.borrow_mut().push(s);
                Ok(())
            })
            .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let shapes = shapes.into_inner();
        report("deep", &worst.borrow(), n_cases, secs);
        let stat = |f: &dyn Fn(&DeepShape) -> usize| {
            let mut v: Vec<usize> = shapes.iter().map(f).collect();
            v.sort_unstable();
            (v[0], v[v.len() / 2], v[v.len() - 1])
        };
        println!(
            "deep shapes (min, median, max): nodes {:?}, depth {:?}, shared nodes {:?}, \
             operand reach {:?}; points skipped (a zero of differing sign at an atan2): {}",
            stat(&|s| s.nodes),
            stat(&|s| s.depth),
            stat(&|s| s.shared),
            stat(&|s| s.reach),
            shapes.iter().map(|s| s.skipped).sum::<usize>()
        );
    }

    /// The two parts of the condition scale at work (module docs), on two small expressions
    /// the engine simplifies and the raw reference does not.
    ///
    /// 1. `V = ((c + q) − c)²` with `c = 2³⁰ + 0.3`. The engine folds it to `q²` (`∂V/∂q = 2q`
    ///    exactly); the raw reference rounds `c + q`, so its `(c + q) − c` is off by up to
    ///    `ulp(c)/2 ≈ 1.2e-7` and its `∂V/∂q` by twice that. `A ≈ 2|q|` (the derivative itself
    ///    does not cancel) would call that a failure at most points; `E` carries the rounding of
    ///    `c + q` into the derivative, and the difference is within `u·S`: the scale is tight,
    ///    not lenient.
    /// 2. `V = p/p`, `p = ½ + q²`. The engine folds `p/p → 1` (Hessian exactly 0); num-dual's
    ///    `∂²(p/p)/∂q²` is rounding noise, non-zero at some points: infinitely wrong relative
    ///    to its own magnitude, within a few `u·A` of the exact 0.
    /// 3. Without cancellation the scale is not inflated: for `V = exp(q₀q₁) + q₀³` at a point
    ///    with positive coordinates (every chain-rule term positive), `S ≤ 10·|reference|` for
    ///    the value, gradient, Hessian and third contraction (`A = |reference|`; `E` counts each
    ///    rounding once, so the excess over 1 is about the number of roundings along a path).
    #[test]
    fn condition_scale_cases() {
        use Binary::{Add as BAdd, Div, Sub as BSub};
        let c = 2f64.powi(30) + 0.3;
        let ops = [
            Op::Q(0),
            Op::C(c),
            Op::Bin(BAdd, 1, 0),
            Op::Bin(BSub, 2, 1),
            Op::Powi(3, 2),
        ];
        let mut g = Graph::new();
        let v = build_graph(&mut g, &ops)[4];
        let d = g.gradient(v, 1)[0];
        let (mut beyond_a, mut worst) = (0, 0.0f64);
        for k in 0..100 {
            let q = 0.0137 + 0.01 * f64::from(k);
            let got = g.eval(d, &|_| q);
            assert_eq!(got, 2.0 * q);
            let want = eval_ops(&ops, &[HyperDual64::new(q, 1.0, 0.0, 0.0)])[4].eps1;
            let c = eval_ops(&ops, &[Cond::var(q, [1.0, 0.0, 0.0])])[4];
            let diff = (got - want).abs();
            worst = worst.max(diff / (U * c.scale(1)));
            beyond_a += usize::from(diff > TOL * c.a.0[1]);
        }
        println!("((c + q) − c)²: worst |Δ|/(u·S) {worst:.2}; beyond 1e-10·A at {beyond_a}/100");
        assert!(worst <= 1.0, "{worst}");
        assert!(beyond_a >= 50, "{beyond_a}");

        let ops = [
            Op::Q(0),
            Op::C(0.5),
            Op::Powi(0, 2),
            Op::Bin(BAdd, 1, 2),
            Op::Bin(Div, 3, 3),
        ];
        let mut g = Graph::new();
        let v = build_graph(&mut g, &ops)[4];
        let grad = g.gradient(v, 1);
        let h = g.hessian(&grad)[0][0];
        assert_eq!(g.as_const(h), Some(0.0));
        let (mut noisy, mut worst) = (0, 0.0f64);
        for k in 0..100 {
            let q = 0.0137 + 0.1 * f64::from(k);
            let want = eval_ops(&ops, &[HyperDual64::new(q, 1.0, 1.0, 0.0)])[4].eps1eps2;
            let c = eval_ops(&ops, &[Cond::var(q, [1.0, 1.0, 0.0])])[4];
            noisy += usize::from(want != 0.0);
            worst = worst.max(want.abs() / (U * c.scale(3)));
        }
        println!("p/p: reference ≠ 0 at {noisy}/100, worst |Δ|/(u·S) {worst:.2}");
        assert!(noisy > 0 && worst <= 4.0, "{noisy} {worst}");

        let ops = [
            Op::Q(0),
            Op::Q(1),
            Op::Bin(Binary::Mul, 0, 1),
            Op::Un(Unary::Exp, 2),
            Op::Powi(0, 3),
            Op::Bin(BAdd, 3, 4),
        ];
        let (p, a) = ([0.7, 1.3], [0.4, 0.9]);
        let mut ratios = Vec::new();
        for (i, j) in [(0, 0), (0, 1), (1, 1)] {
            let seed = |k: usize, m: usize| f64::from(u8::from(k == m));
            let q: Vec<Cond> = (0..2)
                .map(|k| Cond::var(p[k], [seed(k, i), seed(k, j), 0.0]))
                .collect();
            let c = eval_ops(&ops, &q)[5];
            ratios.extend([0, 1, 3].map(|m| c.scale(m) / c.v.0[m].abs()));
        }
        for i in 0..2 {
            let q: Vec<Cond> = (0..2)
                .map(|k| Cond::var(p[k], [f64::from(u8::from(k == i)), a[k], a[k]]))
                .collect();
            let c = eval_ops(&ops, &q)[5];
            ratios.push(c.scale(7) / c.v.0[7].abs());
        }
        println!("no cancellation: S/|V| {ratios:.2?}");
        assert!(
            ratios.iter().all(|&r| (1.0..=10.0).contains(&r)),
            "{ratios:?}"
        );
    }

    /// Engine issue (module docs): the simplifier folds `q·0` to `+0`, but `q·0` is `-0` for
    /// `q < 0`, and `atan2` tells them apart on its branch cut. Minimal case, found by
    /// `deep_dags_match_num_dual`; the same with a literal `-0.0` (canonicalised to `+0.0`).
    /// Ignored until the engine keeps signed zeros (it fails today, by design of the record):
    /// `cargo test -p zs-macros --lib sym::tests -- --ignored signed_zero`.
    #[test]
    #[ignore = "engine bug: the simplifier drops the sign of zero (x*0 -> +0, -0.0 -> +0.0), so \
                atan2(q*0, -1) is +pi instead of -pi for q < 0"]
    fn signed_zero_at_atan2_branch_cut() {
        let mut g = Graph::new();
        let q = g.var(Var::Q(0));
        let zero = g.constant(0.0);
        let y = g.mul(q, zero);
        let m1 = g.constant(-1.0);
        let v = g.atan2(y, m1);
        let q0 = -1.0f64;
        assert_eq!(g.eval(v, &|_| q0), (q0 * 0.0).atan2(-1.0));
        let mz = g.constant(-0.0);
        let w = g.atan2(mz, m1);
        assert_eq!(g.eval(w, &|_| q0), (-0.0f64).atan2(-1.0));
    }

    /// The engine's `tanh' = 1 − tanh²` has absolute accuracy only: relative error of
    /// `d/dx tanh x` against `1/cosh²x`, measured over `|x| ≤ 12`. Within `TANH_MAX` it is
    /// below 1e-12 (the exclusion threshold of the property tests, with room to the 1e-10
    /// tolerance); beyond, it grows like `u·e^{2|x|}/4` (printed). Measured: 3e-13 at 5,
    /// 3e-10 at 8, 3e-7 at 12.
    #[test]
    fn tanh_derivative_accuracy() {
        let mut g = Graph::new();
        let x = g.var(Var::Q(0));
        let t = g.tanh(x);
        let d = g.derivative(t, Var::Q(0));
        let mut worst_in_range = 0.0f64;
        for k in 0..=240 {
            let xv = f64::from(k) * 0.05;
            let got = g.eval(d, &|_| xv);
            let want = xv.cosh().powi(-2);
            let r = (got - want).abs() / want;
            if xv <= TANH_MAX {
                worst_in_range = worst_in_range.max(r);
            }
            if k % 20 == 0 {
                println!("x = {xv:5.2}: relative error {r:.1e}");
            }
        }
        assert!(worst_in_range < 1e-12, "{worst_in_range:e}");
    }

    /// The scale's jet arithmetic: `taylor` against num-dual (f..f''') and central differences
    /// (f''''), for every unary function.
    #[test]
    fn taylor_coefficients() {
        let ops = [
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
        ];
        for op in ops {
            for x in [0.3, 0.7, -0.55] {
                let x = if matches!(op, Unary::Sqrt | Unary::Ln) {
                    x + 1.0
                } else {
                    x
                };
                let f = taylor(op, x);
                let h = HyperHyperDual64::new(x, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0).unary(op);
                let want = [h.re, h.eps1, h.eps1eps2, h.eps1eps2eps3];
                for k in 0..4 {
                    assert!(
                        (f[k] - want[k]).abs() <= 1e-13 * want[k].abs().max(1.0),
                        "{op:?}"
                    );
                }
                let e = 1e-4;
                let fd = (taylor(op, x + e)[3] - taylor(op, x - e)[3]) / (2.0 * e);
                assert!(
                    (f[4] - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                    "{op:?} {} {fd}",
                    f[4]
                );
            }
        }
        for n in [-3, -1, 0, 1, 2, 5] {
            let x = 0.8;
            let f = powi_taylor(n, x);
            let h = DualNum::powi(
                &HyperHyperDual64::new(x, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0),
                n,
            );
            let want = [h.re, h.eps1, h.eps1eps2, h.eps1eps2eps3];
            for k in 0..4 {
                assert!(
                    (f[k] - want[k]).abs() <= 1e-13 * want[k].abs().max(1.0),
                    "{n}"
                );
            }
        }
    }
}

/// `cos(n·acos u)` is rewritten as the Chebyshev polynomial `T_n(u)`: the same values inside
/// `[-1, 1]`, and first and second derivatives that stay finite
/// (and equal to `T_n'`, `T_n''`) at `u = ±1`, where those of `acos` are infinite: a torsion
/// written through `φ = acos(cos φ)` is safe at planar torsions.
#[test]
fn cosine_of_a_multiple_of_acos_is_a_chebyshev_polynomial() {
    use super::{Node, Unary};
    // T_n and its first two derivatives, by the recurrence, for checking.
    fn t(n: u32, u: f64) -> [f64; 3] {
        let (mut p, mut c) = ([1.0, 0.0, 0.0], [u, 1.0, 0.0]);
        if n == 0 {
            return p;
        }
        for _ in 1..n {
            let next = [
                2.0 * u * c[0] - p[0],
                2.0 * c[0] + 2.0 * u * c[1] - p[1],
                4.0 * c[1] + 2.0 * u * c[2] - p[2],
            ];
            (p, c) = (c, next);
        }
        c
    }
    for n in 1..=4u32 {
        for sign in [1.0, -1.0] {
            let mut g = Graph::new();
            let u = g.var(Var::Q(0));
            let phi = g.acos(u);
            let k = g.constant(sign * f64::from(n));
            let arg = g.mul(k, phi);
            let e = g.cos(arg);
            let d1 = g.derivative(e, Var::Q(0));
            let d2 = g.derivative(d1, Var::Q(0));
            for k in 0..=40 {
                let uv = -1.0 + f64::from(k) * 0.05;
                let want = t(n, uv);
                let got = [e, d1, d2].map(|id| g.eval(id, &|_| uv));
                for (w, gv) in want.iter().zip(got) {
                    assert!(
                        (w - gv).abs() <= 1e-13 * (1.0 + w.abs()),
                        "n = {n}, u = {uv}: {gv} vs {w}"
                    );
                }
                if k % 20 != 10 {
                    assert!((got[0] - (f64::from(n) * uv.acos()).cos()).abs() < 1e-14);
                }
            }
        }
    }
    // Not a whole multiple: kept as written.
    let mut g = Graph::new();
    let u = g.var(Var::Q(0));
    let phi = g.acos(u);
    let k = g.constant(1.5);
    let arg = g.mul(k, phi);
    let e = g.cos(arg);
    assert!(matches!(g.node(e), Node::Unary(Unary::Cos, _)));
}

/// In reciprocal mode (the lane kernels') `c / x` is built as `c · (1/x)`; negation pushes the
/// sign into a quotient's constant (`-(c / x) → (-c) / x`). The two used to call each other
/// forever on `-(1/x)`, so a term with `1.0 / (1.0 + r2)` overflowed the macro's stack. Both
/// orders now end, with the value of the quotient.
#[test]
fn negated_reciprocals_terminate_in_reciprocal_mode() {
    let mut g = Graph::new();
    let x = g.var(Var::Q(0));
    let (e, d, m) = g.with_reciprocals(|g| {
        let one = g.constant(1.0);
        let u = g.add(one, x);
        let e = g.div(one, u);
        let d = g.derivative(e, Var::Q(0));
        let m1 = g.constant(-1.0);
        let m = g.div(m1, x);
        (e, d, m)
    });
    let at = 0.75;
    assert_eq!(g.eval(e, &|_| at), 1.0 / (1.0 + at));
    assert!((g.eval(d, &|_| at) + 1.0 / (1.0 + at).powi(2)).abs() < 1e-15);
    assert_eq!(g.eval(m, &|_| at), -1.0 / at);
}
