//! A hand-written third-order *directional* jet: a scalar function's value, gradient, Hessian,
//! and third-derivative contraction `T(a)_i = Σ_jk ∂³f/∂q_i∂q_j∂q_k a_j a_k` for one fixed
//! direction `a`, propagated by the chain and product rules of ordinary calculus.
//!
//! This is deliberately independent of the macro's symbolic engine: it is the "by hand"
//! differentiation the reference implementations are built from. The rules are
//! - sum: all parts add;
//! - product `fg`: `∇ = f∇g + g∇f`, `H = fH_g + gH_f + ∇f∇gᵀ + ∇g∇fᵀ`,
//!   `T = fT_g + gT_f + 2(∇g·a)H_f a + (aᵀH_f a)∇g + 2(∇f·a)H_g a + (aᵀH_g a)∇f`;
//! - composition `φ(s)` (with `φ', φ'', φ'''` at `s`): `∇ = φ'∇s`,
//!   `H = φ''∇s∇sᵀ + φ'H_s`, `T = φ'''(∇s·a)²∇s + φ''[(aᵀH_s a)∇s + 2(∇s·a)H_s a] + φ'T_s`.

/// Value, gradient, Hessian and third contraction (for a direction fixed by the caller) of a
/// scalar function of `q ∈ Rᴺ`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Jet<const N: usize> {
    /// `f(q)`.
    pub v: f64,
    /// `∇f(q)`.
    pub g: [f64; N],
    /// `Hess f(q)`.
    pub h: [[f64; N]; N],
    /// `T(q; a)_i = Σ_jk ∂³f/∂q_i∂q_j∂q_k a_j a_k`.
    pub t: [f64; N],
}

fn dot<const N: usize>(x: &[f64; N], y: &[f64; N]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

fn mat_vec<const N: usize>(m: &[[f64; N]; N], x: &[f64; N]) -> [f64; N] {
    core::array::from_fn(|i| dot(&m[i], x))
}

impl<const N: usize> Jet<N> {
    /// The constant function `c`.
    pub fn constant(c: f64) -> Self {
        Self {
            v: c,
            g: [0.0; N],
            h: [[0.0; N]; N],
            t: [0.0; N],
        }
    }

    /// The coordinate function `q ↦ q_i`, evaluated at `q`.
    pub fn coordinate(q: &[f64; N], i: usize) -> Self {
        let mut j = Self::constant(q[i]);
        j.g[i] = 1.0;
        j
    }

    /// `self + other`.
    pub fn add(&self, other: &Self) -> Self {
        self.lin(1.0, other, 1.0)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Self) -> Self {
        self.lin(1.0, other, -1.0)
    }

    /// `self + c` for a constant `c`.
    pub fn add_const(&self, c: f64) -> Self {
        let mut r = *self;
        r.v += c;
        r
    }

    /// `c · self` for a constant `c`.
    pub fn scale(&self, c: f64) -> Self {
        self.lin(c, &Self::constant(0.0), 0.0)
    }

    /// `α·self + β·other`.
    fn lin(&self, alpha: f64, other: &Self, beta: f64) -> Self {
        Self {
            v: alpha * self.v + beta * other.v,
            g: core::array::from_fn(|i| alpha * self.g[i] + beta * other.g[i]),
            h: core::array::from_fn(|i| {
                core::array::from_fn(|j| alpha * self.h[i][j] + beta * other.h[i][j])
            }),
            t: core::array::from_fn(|i| alpha * self.t[i] + beta * other.t[i]),
        }
    }

    /// The product `self · other` (product rule up to third order along `a`).
    pub fn mul(&self, other: &Self, a: &[f64; N]) -> Self {
        let (f, g) = (self, other);
        let (fa, ga) = (dot(&f.g, a), dot(&g.g, a));
        let (hfa, hga) = (mat_vec(&f.h, a), mat_vec(&g.h, a));
        let (afa, aga) = (dot(a, &hfa), dot(a, &hga));
        Self {
            v: f.v * g.v,
            g: core::array::from_fn(|i| f.v * g.g[i] + g.v * f.g[i]),
            h: core::array::from_fn(|i| {
                core::array::from_fn(|j| {
                    f.v * g.h[i][j] + g.v * f.h[i][j] + f.g[i] * g.g[j] + g.g[i] * f.g[j]
                })
            }),
            t: core::array::from_fn(|i| {
                f.v * g.t[i]
                    + g.v * f.t[i]
                    + 2.0 * ga * hfa[i]
                    + afa * g.g[i]
                    + 2.0 * fa * hga[i]
                    + aga * f.g[i]
            }),
        }
    }

    /// `φ(self)` for a scalar function with value `d[0] = φ(s)` and derivatives
    /// `d[1] = φ'(s)`, `d[2] = φ''(s)`, `d[3] = φ'''(s)` at `s = self.v` (chain rule).
    pub fn compose(&self, d: [f64; 4], a: &[f64; N]) -> Self {
        let s = self;
        let sa = dot(&s.g, a);
        let hsa = mat_vec(&s.h, a);
        let asa = dot(a, &hsa);
        Self {
            v: d[0],
            g: core::array::from_fn(|i| d[1] * s.g[i]),
            h: core::array::from_fn(|i| {
                core::array::from_fn(|j| d[2] * s.g[i] * s.g[j] + d[1] * s.h[i][j])
            }),
            t: core::array::from_fn(|i| {
                d[3] * sa * sa * s.g[i] + d[2] * (asa * s.g[i] + 2.0 * sa * hsa[i]) + d[1] * s.t[i]
            }),
        }
    }

    /// `√self`: `φ' = ½s^{-1/2}`, `φ'' = -¼s^{-3/2}`, `φ''' = ⅜s^{-5/2}`.
    pub fn sqrt(&self, a: &[f64; N]) -> Self {
        let r = self.v.sqrt();
        let s = self.v;
        self.compose([r, 0.5 / r, -0.25 / (r * s), 0.375 / (r * s * s)], a)
    }

    /// `1/self`: `φ' = -s⁻²`, `φ'' = 2s⁻³`, `φ''' = -6s⁻⁴`.
    pub fn recip(&self, a: &[f64; N]) -> Self {
        let r = 1.0 / self.v;
        self.compose([r, -r * r, 2.0 * r * r * r, -6.0 * r * r * r * r], a)
    }

    /// `acos(self)`: `φ' = -(1-c²)^{-1/2}`, `φ'' = -c(1-c²)^{-3/2}`,
    /// `φ''' = -(1+2c²)(1-c²)^{-5/2}`.
    pub fn acos(&self, a: &[f64; N]) -> Self {
        let c = self.v;
        let w = 1.0 - c * c;
        let sw = w.sqrt();
        self.compose(
            [
                c.acos(),
                -1.0 / sw,
                -c / (w * sw),
                -(1.0 + 2.0 * c * c) / (w * w * sw),
            ],
            a,
        )
    }

    /// `exp(self)`.
    pub fn exp(&self, a: &[f64; N]) -> Self {
        let e = self.v.exp();
        self.compose([e, e, e, e], a)
    }
}
