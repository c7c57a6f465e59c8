//! The condition scale `S` of a compared quantity (see the module docs).

use super::*;

/// A truncated Taylor polynomial in three nilpotent infinitesimals (`ε_k² = 0`): `0[m]` is
/// the coefficient of `Π_{k ∈ m} ε_k`, `m` a bitmask (bit 0 = ε1, bit 1 = ε2, bit 2 = ε3).
/// The algebra of `HyperHyperDual64`; index 1 = ε1, 3 = ε1ε2, 7 = ε1ε2ε3.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Jet(pub(super) [f64; 8]);

impl Jet {
    const ZERO: Jet = Jet([0.0; 8]);

    pub(super) fn constant(x: f64) -> Jet {
        let mut c = [0.0; 8];
        c[0] = x;
        Jet(c)
    }

    pub(super) fn re(self) -> f64 {
        self.0[0]
    }

    pub(super) fn abs(self) -> Jet {
        Jet(self.0.map(f64::abs))
    }

    pub(super) fn scale(self, k: f64) -> Jet {
        Jet(self.0.map(|x| k * x))
    }

    /// `f(self)` from `f` and its first three derivatives at the real part:
    /// `Σ_k f_k/k! (self − re)ᵏ`, the chain rule of every order up to three.
    pub(super) fn compose(self, f: &[f64]) -> Jet {
        let mut d = self;
        d.0[0] = 0.0;
        let d2 = d * d;
        let d3 = d2 * d;
        Jet::constant(f[0]) + d.scale(f[1]) + d2.scale(f[2] / 2.0) + d3.scale(f[3] / 6.0)
    }

    /// Every term of [`Jet::compose`] in absolute value (sums before cancellation).
    pub(super) fn compose_abs(self, f: &[f64]) -> Jet {
        let f: Vec<f64> = f.iter().map(|x| x.abs()).collect();
        self.abs().compose(&f)
    }

    pub(super) fn unary(self, op: Unary) -> Jet {
        self.compose(&taylor(op, self.re())[..4])
    }

    pub(super) fn recip(self) -> Jet {
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
pub(super) fn taylor(op: Unary, x: f64) -> [f64; 5] {
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
        // erf' = 2/√π e^{−x²}, each further derivative −2x times the last plus its own
        // derivative; erfc's are the negatives.
        Unary::Erf | Unary::Erfc => {
            let (f0, s) = if op == Unary::Erf {
                (libm::erf(x), 1.0)
            } else {
                (libm::erfc(x), -1.0)
            };
            let g = s * core::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
            [
                f0,
                g,
                -2.0 * x * g,
                (4.0 * x * x - 2.0) * g,
                (12.0 * x - 8.0 * x.powi(3)) * g,
            ]
        }
    }
}

/// `f, ..., f''''` of `x.powi(n)` at `x`.
pub(super) fn powi_taylor(n: i32, x: f64) -> [f64; 5] {
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
pub(super) struct Cond {
    pub(super) v: Jet,
    /// The chain rule with every term in absolute value: `Σ |f_k|/k! |dx|ᵏ` through every
    /// operation (`A`).
    pub(super) a: Jet,
    /// First-order effect of rounding the *values* (`E`, in units of `u`): each value
    /// `w₀` is rounded by `|w₀|`, and errors propagate through the jet partials.
    pub(super) e: Jet,
}

impl Cond {
    /// An exact input `x + s₀ε1 + s₁ε2 + s₂ε3`.
    pub(super) fn var(x: f64, seeds: [f64; 3]) -> Cond {
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
    pub(super) fn scale(&self, m: usize) -> f64 {
        self.a.0[m] + self.e.0[m]
    }

    /// The result of an operation: value jet `v`, absolute jet `a`, jet partials `parts`
    /// w.r.t. the operands; `k` roundings of the value. Each operand carries its own error
    /// `e_x` plus one rounding `|x₀|`: the formulas for the operation's derivatives round
    /// their argument first (`6x² − 2` in `atan'''`, `4t²p − 2p²` in `tanh'''`; near a root
    /// of such a derivative, that rounding dominates).
    pub(super) fn result(v: Jet, a: Jet, parts: &[(Jet, &Cond)], k: f64) -> Cond {
        let mut e = Jet::constant(k * v.re().abs());
        for (p, x) in parts {
            e = e + p.abs() * (x.e + Jet::constant(x.v.re().abs()));
        }
        Cond { v, a, e }
    }

    /// A unary function given its derivatives `f[0..5]` at the real part, its value rounded
    /// `k` times (`powi` by repeated multiplication).
    pub(super) fn apply(&self, f: [f64; 5], k: f64) -> Cond {
        let v = self.v.compose(&f[..4]);
        let a = self.a.compose_abs(&f[..4]);
        let p = self.v.compose(&f[1..]);
        Cond::result(v, a, &[(p, self)], k)
    }

    /// `A` of `1/y`.
    pub(super) fn recip_abs(&self) -> Jet {
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
