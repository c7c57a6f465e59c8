//! One lane: `f64` as [`Lanes`] (every remainder, and machines without AVX2), and the scalar
//! functions the lanes share — [`rsqrt`], and the one rounding to an integer.

use super::Lanes;

impl Lanes for f64 {
    #[inline(always)]
    fn compress_store(self, _mask: u32, out: &mut [f64]) {
        out[0] = self;
    }
    const WIDTH: usize = 1;
    #[inline(always)]
    fn splat(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn load(x: &[f64]) -> Self {
        x[0]
    }
    #[inline(always)]
    fn store(self, out: &mut [f64]) {
        out[0] = self;
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        rsqrt(self)
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f64::mul_add(self, a, b)
    }
    #[inline(always)]
    fn gather<const D: usize>(src: &[f64], at: &[usize]) -> [Self; D] {
        let row = &src[at[0]..at[0] + D];
        core::array::from_fn(|d| row[d])
    }
    #[inline(always)]
    fn lt(self, other: Self) -> Self {
        if self < other { 1.0 } else { 0.0 }
    }
    #[inline(always)]
    fn le(self, other: Self) -> Self {
        if self <= other { 1.0 } else { 0.0 }
    }
    #[inline(always)]
    fn lt_mask(self, other: Self) -> u32 {
        u32::from(self < other)
    }
    #[inline(always)]
    fn select(c: Self, a: Self, b: Self) -> Self {
        if c != 0.0 { a } else { b }
    }
    #[inline(always)]
    fn round_even(self) -> Self {
        round_ties_even(self)
    }
    #[inline(always)]
    fn split_sqrt2(self) -> (Self, Self) {
        split_sqrt2(self)
    }
    #[inline(always)]
    fn pow2i(self) -> Self {
        // `as` saturates (NaN to 0): out-of-range lanes are garbage, not a panic.
        f64::from_bits(((self as i64).wrapping_add(1023) as u64) << 52)
    }
    #[inline(always)]
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        f(self)
    }
    #[inline(always)]
    fn zip_map(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        f(self, other)
    }
}

/// `x` rounded to an integer, ties to even, exactly as [`f64::round_ties_even`] (the sign of a
/// zero included): by adding and taking away 1.5·2⁵² below 2⁵¹ — arithmetic, where the
/// baseline x86-64 instruction set has no rounding instruction and `round_ties_even` is a call.
#[inline(always)]
pub(crate) fn round_ties_even(x: f64) -> f64 {
    const ROUND: f64 = 6_755_399_441_055_744.0;
    if x.abs() < 2_251_799_813_685_248.0 {
        ((x + ROUND) - ROUND).copysign(x)
    } else {
        x.round_ties_even()
    }
}

/// The bits of a double's 52-bit fraction.
pub(super) const FRACTION: u64 = (1 << 52) - 1;

/// Added to the fraction, carries into bit 52 exactly when its leading 20 bits are at least
/// `0x6a09e` (`1 + fraction` at least `√2` to 20 bits): musl's `log.c` (`hx + 0x3ff00000 −
/// 0x3fe6a09e`), as the `libm` crate carries it.
pub(super) const SQRT2_CARRY: u64 = 0x95f62 << 32;

/// [`Lanes::split_sqrt2`] of one lane: `x = m · 2^k`, `m` the fraction under the exponent of
/// `1` (or of `1/2` when [`SQRT2_CARRY`] carries), `k` the unbiased exponent (one more in that
/// case), made as a double by exact operations.
#[inline(always)]
pub(super) fn split_sqrt2(x: f64) -> (f64, f64) {
    let bits = x.to_bits();
    let fraction = bits & FRACTION;
    let up = ((fraction + SQRT2_CARRY) >> 52) & 1;
    let m = f64::from_bits(fraction | ((0x3ff - up) << 52));
    // The biased exponent plus `up`, an integer in `[0, 2048]`: exact as a double, and so is
    // taking the bias away.
    let k = (((bits >> 52) & 0x7ff) + up) as f64 - 1023.0;
    (m, k)
}

/// The bits of the first guess of [`rsqrt`]: `MAGIC − bits(x)/2` is `1/√x` to within 3.5 %
/// for every normal `x` (the exponent halved and negated, the mantissa linearly interpolated;
/// Lomont's 64-bit constant).
pub(super) const RSQRT_MAGIC: u64 = 0x5FE6_EB50_C7B5_37A9;

/// `1 / √x` without a division or a square root: four Newton steps from the bit-level guess,
/// `y ← y + y (1/2 − (x/2) y²)` with two fused multiply-adds, each squaring the relative error
/// (3.5 % → 2e-3 → 5e-6 → 3e-11 → rounding): within 1 ulp of 1/√x, as the IEEE
/// `1.0 / x.sqrt()` (two roundings) is (measured over 40 binades, worst 0.97 ulp:
/// `tests::rsqrt_is_within_one_ulp`).
///
/// Why: the divider and the square-root unit are the bottleneck of pair kernels (a Coulomb
/// `1/r` is a square root and a division, 30–60 cycles of an AVX-512 unit that runs one at a
/// time; these 15 operations pipeline). Zero, subnormal, infinite, negative and NaN `x`, where
/// the guess is meaningless, take `1.0 / x.sqrt()` (IEEE: `±∞`, `0`, NaN).
///
/// The lane types perform exactly these operations in this order, lane by lane, and select
/// the same fallback lane by lane: their results are these bits. `f64::mul_add` is the one
/// correctly rounded fused multiply-add, the instruction's bits: [`super::dispatch()`] runs scalar code
/// with FMA enabled where the CPU has it (every x86-64 CPU with AVX2 does); elsewhere on x86-64
/// it is the C library's exact software `fma`, slower but the same bits.
#[inline(always)]
pub fn rsqrt(x: f64) -> f64 {
    if (f64::MIN_POSITIVE..f64::INFINITY).contains(&x) {
        let h = 0.5 * x;
        let mut y = f64::from_bits(RSQRT_MAGIC - (x.to_bits() >> 1));
        for _ in 0..4 {
            let r = (-(h * y)).mul_add(y, 0.5);
            y = y.mul_add(r, y);
        }
        y
    } else {
        1.0 / x.sqrt()
    }
}
