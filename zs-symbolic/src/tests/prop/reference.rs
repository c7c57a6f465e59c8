//! The reference: the raw expression evaluated in num-dual's hyper-dual numbers.

use super::*;

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
                    // num-dual has no error function: its Taylor expansion, as for tanh.
                    Unary::Erf | Unary::Erfc => {
                        let f = taylor(op, self.re);
                        let d = *self - self.re;
                        let d2 = d * d;
                        d2 * d * (f[3] / 6.0) + d2 * (f[2] / 2.0) + d * f[1] + f[0]
                    }
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
