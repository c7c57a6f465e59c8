//! `exp`, `erf` and `erfc` on lanes: what a lane kernel calls for `f64::exp` and the error
//! functions, all lanes at once instead of the scalar function lane by lane.
//!
//! The real-space Ewald pair `q_i q_j erfc(αr)/r` and its derivative `−2α/√π e^{−α²r²}` spent
//! two thirds of a water box's force evaluation in the scalar `erfc` and `exp`, one lane at a
//! time. Here the same algorithms are written once over [`Lanes`] with nothing but IEEE
//! additions, multiplications and divisions (no fused products), selects and exact scalings
//! by powers of two — so each lane's result is the same bits on the scalar, AVX2 and AVX-512
//! paths, whatever its neighbours in the block (the module's contract, [`super`]).
//!
//! The algorithms and their coefficients are fdlibm's (Sun Microsystems, 1993: `e_exp.c` and
//! `s_erf.c`, as musl and the `libm` crate carry them), so the results agree with the scalar
//! functions to a few ulp (measured by the tests) — not to the bit: every branch is taken by a
//! select instead of a jump, the reduction rounds ties to even, and `erfc`'s large-argument
//! branch takes one exponential of a two-part argument where fdlibm multiplies two.
//! Arguments where the fast path would leave the normal range (`exp` under `−708` or over
//! `709`, an infinity or a NaN) are handed lane by lane to the scalar functions, so every lane
//! still gets an answer that depends on its own argument alone.

use super::Lanes;

/// `ln 2` in two parts: `k·LN2_HI` is exact for `|k| < 2²⁰` (fdlibm `e_exp.c`).
const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
const INV_LN2: f64 = 1.442_695_040_888_963_387;
/// The remez coefficients of `R(r²) ≈ r (e^r + 1)/(e^r − 1)` on `|r| ≤ ln2/2` (fdlibm).
const EXP_P: [f64; 5] = [
    1.666_666_666_666_660_190_37e-1,
    -2.777_777_777_701_559_338_42e-3,
    6.613_756_321_437_934_361_17e-5,
    -1.653_390_220_546_525_153_9e-6,
    4.138_136_797_057_238_460_39e-8,
];
/// Arguments whose `2^k` and result are normal numbers: `k` in `[−1021, 1023]`.
const EXP_LOW: f64 = -708.0;
const EXP_HIGH: f64 = 709.0;

/// `e^x` lane by lane, within about an ulp of the correctly rounded value (fdlibm `e_exp.c`:
/// `x = k ln2 + r`, `e^r = 1 + 2r/(R(r²) − r)`, scaled by `2^k`).
#[inline(always)]
pub fn exp<L: Lanes>(x: L) -> L {
    exp_sum(x, L::splat(0.0))
}

/// `e^{hi + tail}` with `tail` kept apart from `hi` through the reduction, so that an
/// argument known to more than a double's precision (`erfc`'s `−z² − 0.5625` plus a small
/// correction) is not rounded to one double first.
#[inline(always)]
fn exp_sum<L: Lanes>(hi: L, tail: L) -> L {
    let s = hi + tail;
    let k = (s * L::splat(INV_LN2)).round_even();
    // `hi − k·LN2_HI` is exact where it cancels (Sterbenz) and otherwise rounds at the
    // size of `r`, not of `hi`.
    let r_hi = hi - k * L::splat(LN2_HI);
    let r_lo = k * L::splat(LN2_LO) - tail;
    let r = r_hi - r_lo;
    let t = r * r;
    let [p1, p2, p3, p4, p5] = EXP_P.map(L::splat);
    let c = r - t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))));
    let one = L::splat(1.0);
    let y = one - ((r_lo - (r * c) / (L::splat(2.0) - c)) - r_hi);
    let e = y * k.pow2i();
    let full = (1u32 << L::WIDTH) - 1;
    let normal = L::splat(EXP_LOW).lt_mask(s) & s.lt_mask(L::splat(EXP_HIGH));
    if normal == full {
        e
    } else {
        exp_outside(e, hi, tail, full & !normal)
    }
}

/// The lanes of `e` in `lanes` replaced by the scalar `e^{hi} e^{tail}` (subnormal, infinite
/// or NaN results, where the fast path's `2^k` would not be a normal number).
#[cold]
#[inline(never)]
fn exp_outside<L: Lanes>(e: L, hi: L, tail: L, lanes: u32) -> L {
    let (mut out, mut h, mut t) = ([0.0; 8], [0.0; 8], [0.0; 8]);
    e.store(&mut out);
    hi.store(&mut h);
    tail.store(&mut t);
    for l in (0..L::WIDTH).filter(|l| lanes >> l & 1 == 1) {
        out[l] = f64::exp(h[l]) * f64::exp(t[l]);
    }
    L::load(&out)
}

// fdlibm `s_erf.c`: erf(x) = x + x·PP(x²)/QQ(x²) for |x| < 0.84375.
const PP: [f64; 5] = [
    1.283_791_670_955_125_585_61e-1,
    -3.250_421_072_470_014_993_7e-1,
    -2.848_174_957_559_851_047_66e-2,
    -5.770_270_296_489_441_591_57e-3,
    -2.376_301_665_665_016_260_84e-5,
];
const QQ: [f64; 5] = [
    3.979_172_239_591_553_528_19e-1,
    6.502_224_998_876_729_444_85e-2,
    5.081_306_281_875_765_627_76e-3,
    1.324_947_380_043_216_445_26e-4,
    -3.960_228_278_775_368_123_2e-6,
];
// erf(x) = erx + PA(s)/QA(s), s = |x| − 1, for 0.84375 ≤ |x| < 1.25.
const ERX: f64 = 8.450_629_115_104_675_292_97e-1;
const PA: [f64; 7] = [
    -2.362_118_560_752_659_440_77e-3,
    4.148_561_186_837_483_316_66e-1,
    -3.722_078_760_357_013_238_47e-1,
    3.183_466_199_011_617_536_74e-1,
    -1.108_946_942_823_966_774_76e-1,
    3.547_830_432_561_823_593_71e-2,
    -2.166_375_594_868_790_843e-3,
];
const QA: [f64; 6] = [
    1.064_208_804_008_442_282_86e-1,
    5.403_979_177_021_710_489_37e-1,
    7.182_865_441_419_626_628_68e-2,
    1.261_712_198_087_616_421_12e-1,
    1.363_708_391_202_905_073_62e-2,
    1.198_449_984_679_910_741_7e-2,
];
// erfc(x) = e^{−x² − 0.5625 + R(s)/S(s)} / x, s = 1/x², for 1.25 ≤ x < 1/0.35 (RA, SA)…
const RA: [f64; 8] = [
    -9.864_944_034_847_148_227_05e-3,
    -6.938_585_727_071_817_643_72e-1,
    -1.055_862_622_532_329_098_14e1,
    -6.237_533_245_032_600_603_96e1,
    -1.623_966_694_625_734_703_55e2,
    -1.846_050_929_067_110_359_94e2,
    -8.128_743_550_630_659_342_46e1,
    -9.814_329_344_169_145_485_92,
];
const SA: [f64; 8] = [
    1.965_127_166_743_925_712_92e1,
    1.376_577_541_435_190_426e2,
    4.345_658_774_752_292_288_21e2,
    6.453_872_717_332_678_803_36e2,
    4.290_081_400_275_678_333_86e2,
    1.086_350_055_417_794_351_34e2,
    6.570_249_770_319_281_701_35,
    -6.042_441_521_485_809_874_38e-2,
];
// …and for 1/0.35 ≤ x < 28 (RB, SB).
const RB: [f64; 7] = [
    -9.864_942_924_700_099_285_97e-3,
    -7.992_832_376_805_230_065_74e-1,
    -1.775_795_491_775_475_198_89e1,
    -1.606_363_848_558_219_160_62e2,
    -6.375_664_433_683_896_277_22e2,
    -1.025_095_131_611_077_249_54e3,
    -4.835_191_916_086_513_970_19e2,
];
const SB: [f64; 7] = [
    3.033_806_074_348_245_829_24e1,
    3.257_925_129_965_739_188_26e2,
    1.536_729_586_084_436_959_94e3,
    3.199_858_219_508_595_539_08e3,
    2.553_050_406_433_164_425_83e3,
    4.745_285_412_069_553_672_15e2,
    -2.244_095_244_658_581_833_62e1,
];
/// fdlibm's split between the two sets: the high word `0x4006db6d` (1/0.35 to 7 digits).
const NEAR_FAR: f64 = 2.857_142_448_425_293;

/// `c[0] + t c[1] + … ` by Horner's rule (`ONE`: a leading `1 + t(…)`, as fdlibm's
/// denominators).
#[inline(always)]
fn horner<L: Lanes, const N: usize>(t: L, c: &[f64; N], one: bool) -> L {
    let mut acc = L::splat(c[N - 1]);
    for &ci in c[..N - 1].iter().rev() {
        acc = L::splat(ci) + t * acc;
    }
    if one { L::splat(1.0) + t * acc } else { acc }
}

/// The three ranges of `|x|` (below 0.84375, below 1.25, below `limit`): as lane masks, to
/// skip a branch no lane takes, and as lanes (`1.0` or `0.0`), to select it in those that do.
struct Ranges<L> {
    abs: L,
    small: (u32, L),
    middle: (u32, L),
    large: (u32, L),
}

impl<L: Lanes> Ranges<L> {
    #[inline(always)]
    fn of(x: L, limit: f64) -> Self {
        let abs = L::select(x.lt(L::splat(0.0)), -x, x);
        let (small, below, within) = (L::splat(0.843_75), L::splat(1.25), L::splat(limit));
        let range = |lower: L, upper: L| {
            let mask = abs.lt_mask(upper) & !abs.lt_mask(lower);
            (mask, abs.lt(upper) - abs.lt(lower))
        };
        Ranges {
            abs,
            small: (abs.lt_mask(small), abs.lt(small)),
            middle: range(small, below),
            large: range(below, within),
        }
    }
}

/// `PP(x²)/QQ(x²)` (|x| < 0.84375).
#[inline(always)]
fn small_ratio<L: Lanes>(x: L) -> L {
    let z = x * x;
    horner(z, &PP, false) / horner(z, &QQ, true)
}

/// `PA(s)/QA(s)`, `s = |x| − 1` (0.84375 ≤ |x| < 1.25).
#[inline(always)]
fn middle_ratio<L: Lanes>(abs: L) -> L {
    let s = abs - L::splat(1.0);
    horner(s, &PA, false) / horner(s, &QA, true)
}

/// `erfc(a)` for `1.25 ≤ a < 28` (lanes outside: anything finite or not, never used):
/// `e^{−z² − 0.5625} e^{(z − a)(z + a) + R/S} / a` with `z` the leading 21 bits of `a` —
/// `−z² − 0.5625` exact — taken as one exponential of a two-part argument.
#[inline(always)]
fn large_erfc<L: Lanes>(abs: L) -> L {
    let a = L::select(abs.lt(L::splat(28.0)), abs, L::splat(28.0));
    let s = L::splat(1.0) / (a * a);
    let near = a.lt_mask(L::splat(NEAR_FAR));
    let full = (1u32 << L::WIDTH) - 1;
    let ratio_near = || horner(s, &RA, false) / horner(s, &SA, true);
    let ratio_far = || horner(s, &RB, false) / horner(s, &SB, true);
    let ratio = match near {
        0 => ratio_far(),
        n if n == full => ratio_near(),
        _ => L::select(a.lt(L::splat(NEAR_FAR)), ratio_near(), ratio_far()),
    };
    // Veltkamp's split: `z` keeps the top 53 − 32 bits of `a`, so `z²` is exact.
    let c = a * L::splat(4_294_967_297.0);
    let z = c - (c - a);
    exp_sum(-(z * z) - L::splat(0.5625), (z - a) * (z + a) + ratio) / a
}

/// `erfc(x) = 1 − erf(x)` lane by lane, computed directly (no cancellation for large `x`),
/// within a few ulp of the scalar [`crate::special::erfc`] (fdlibm `s_erf.c`).
#[inline(always)]
pub fn erfc<L: Lanes>(x: L) -> L {
    let r = Ranges::of(x, 28.0);
    let negative = x.lt(L::splat(0.0));
    let (one, two, half) = (L::splat(1.0), L::splat(2.0), L::splat(0.5));
    // |x| ≥ 28 (and ±∞): 0 or 2; NaN lanes are put back at the end.
    let mut out = L::select(negative, two, L::splat(0.0));
    if r.small.0 != 0 {
        let y = small_ratio(x);
        let below_quarter = one - (x + x * y);
        let above = half - ((x - half) + x * y);
        let v = L::select(x.lt(L::splat(0.25)), below_quarter, above);
        out = L::select(r.small.1, v, out);
    }
    if r.middle.0 != 0 {
        let v = L::splat(1.0 - ERX) - middle_ratio(r.abs);
        out = L::select(r.middle.1, L::select(negative, two - v, v), out);
    }
    if r.large.0 != 0 {
        let v = large_erfc(r.abs);
        out = L::select(r.large.1, L::select(negative, two - v, v), out);
    }
    L::select(x.le(x), out, x)
}

/// `erf(x)` lane by lane, within a few ulp of the scalar [`crate::special::erf`] (fdlibm
/// `s_erf.c`).
#[inline(always)]
pub fn erf<L: Lanes>(x: L) -> L {
    // fdlibm's erf is ±1 from |x| = 6 on (1 − erfc rounds to 1 there).
    let r = Ranges::of(x, 6.0);
    let negative = x.lt(L::splat(0.0));
    let one = L::splat(1.0);
    let mut out = L::select(negative, -one, one);
    if r.small.0 != 0 {
        let v = x + x * small_ratio(x);
        out = L::select(r.small.1, v, out);
    }
    if r.middle.0 != 0 {
        let v = L::splat(ERX) + middle_ratio(r.abs);
        out = L::select(r.middle.1, L::select(negative, -v, v), out);
    }
    if r.large.0 != 0 {
        let v = one - large_erfc(r.abs);
        out = L::select(r.large.1, L::select(negative, -v, v), out);
    }
    L::select(x.le(x), out, x)
}

#[cfg(test)]
mod tests {
    use super::super::{Isa, Loads, WithLanes, dispatch_with};
    use super::*;

    /// Function `.1` (0 `exp`, 1 `erf`, 2 `erfc`) over `.0` in blocks of the lanes (the tail
    /// one lane at a time).
    struct Apply<'a>(&'a [f64], usize, &'a mut Vec<f64>);

    impl WithLanes for Apply<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let which = self.1;
            let f = |x: L| match which {
                0 => exp(x),
                1 => erf(x),
                _ => erfc(x),
            };
            let mut buf = [0.0; 8];
            let blocks = self.0.chunks_exact(L::WIDTH);
            let tail = blocks.remainder();
            for block in blocks {
                f(L::load(block)).store(&mut buf);
                self.2.extend_from_slice(&buf[..L::WIDTH]);
            }
            self.2.extend(tail.iter().map(|&x| f(L::splat(x)).first()));
        }
    }

    /// Lane 0.
    trait First {
        fn first(self) -> f64;
    }
    impl<L: Lanes> First for L {
        fn first(self) -> f64 {
            let mut buf = [0.0; 8];
            self.store(&mut buf);
            buf[0]
        }
    }

    const FUNCTIONS: [(&str, fn(f64) -> f64); 3] =
        [("exp", f64::exp), ("erf", libm::erf), ("erfc", libm::erfc)];

    /// Function `which` on `x` through the lanes of `isa`.
    fn on(isa: Isa, which: usize, x: &[f64]) -> Vec<f64> {
        let mut out = Vec::with_capacity(x.len());
        dispatch_with(isa, Apply(x, which, &mut out));
        out
    }

    /// Distance in units in the last place (floats ordered as integers; 0 for two NaNs).
    fn ulps(a: f64, b: f64) -> u64 {
        if a.is_nan() && b.is_nan() {
            return 0;
        }
        let key = |x: f64| {
            let bits = x.to_bits() as i64;
            if bits < 0 { i64::MIN - bits } else { bits }
        };
        key(a).abs_diff(key(b))
    }

    /// Arguments over every branch: a fine grid on `[−range, range]`, points on and next to
    /// the branches' boundaries, the special values, and a seeded spread.
    fn arguments(range: f64) -> Vec<f64> {
        let mut x: Vec<f64> = (-40_000..=40_000)
            .map(|k| range * k as f64 / 40_000.0)
            .collect();
        for b in [
            0.25, 0.843_75, 1.25, NEAR_FAR, 6.0, 26.5, 28.0, -EXP_LOW, EXP_HIGH, 1.0,
        ] {
            for b in [-b, b] {
                x.extend([
                    b,
                    f64::from_bits(b.to_bits() + 1),
                    f64::from_bits(b.to_bits() - 1),
                ]);
            }
        }
        x.extend([
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            0.0,
            -0.0,
            1e-300,
            -1e-310,
        ]);
        x.extend([740.0, -740.0, 746.0, -746.0, 1e-9, 3.0e-5]);
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            x.push(range * ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0));
        }
        x
    }

    #[test]
    fn the_lanes_agree_with_the_scalar_functions_to_a_few_ulp() {
        // The bound each function meets over its arguments (fdlibm's own: < 1 ulp from the
        // correctly rounded value for exp and erf; erfc's tail adds the exponential's and
        // the division's rounding).
        for (which, (name, scalar), range, bound) in [
            (0, FUNCTIONS[0], 750.0, 1),
            (1, FUNCTIONS[1], 8.0, 1),
            (2, FUNCTIONS[2], 30.0, 3),
        ] {
            let x = arguments(range);
            let y = on(Isa::Scalar, which, &x);
            let (mut worst, mut at) = (0, 0.0);
            for (&x, &y) in x.iter().zip(&y) {
                let d = ulps(y, scalar(x));
                if d > worst {
                    (worst, at) = (d, x);
                }
            }
            assert!(worst <= bound, "{name}: {worst} ulp at x = {at:e}");
        }
    }

    #[test]
    fn every_instruction_set_gives_the_same_bits_whatever_the_neighbours() {
        for (which, (name, _)) in FUNCTIONS.iter().enumerate() {
            let x = arguments(if which == 0 { 750.0 } else { 30.0 });
            let scalar = on(Isa::Scalar, which, &x);
            // The special values spread through the blocks (one NaN or infinity sends its
            // block's odd lanes through the scalar fallback; the others must not move).
            let mut mixed: Vec<f64> = x.iter().rev().step_by(7).copied().collect();
            mixed.rotate_left(3);
            let mixed_scalar = on(Isa::Scalar, which, &mixed);
            for isa in Isa::available() {
                let bits = |v: &[f64]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&on(isa, which, &x)) == bits(&scalar),
                    "{name} on {isa:?}"
                );
                let got = on(isa, which, &mixed);
                assert!(
                    bits(&got) == bits(&mixed_scalar),
                    "{name}, mixed, on {isa:?}"
                );
            }
        }
    }

    #[test]
    fn special_values_are_the_scalar_functions_own() {
        let one = |which: usize, x: f64| on(Isa::Scalar, which, &[x])[0];
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        assert_eq!(one(0, -inf), 0.0);
        assert_eq!(one(0, inf), inf);
        assert_eq!(one(0, 710.0), inf);
        assert_eq!(one(0, -746.0), 0.0);
        // Subnormal results: the scalar function's, not flushed to zero.
        assert_eq!(one(0, -740.0), f64::exp(-740.0));
        assert!(one(0, -740.0) > 0.0);
        assert_eq!(one(0, 0.0), 1.0);
        assert_eq!((one(1, inf), one(1, -inf)), (1.0, -1.0));
        assert_eq!((one(2, inf), one(2, -inf)), (0.0, 2.0));
        assert_eq!(one(1, -0.0).to_bits(), (-0.0_f64).to_bits());
        assert_eq!(one(2, 0.0), 1.0);
        assert!(one(2, 27.0) > 0.0 && one(2, 27.0) == libm::erfc(27.0));
        for which in 0..3 {
            assert!(one(which, nan).is_nan(), "function {which}");
        }
    }
}
