//! `exp`, `ln`, `erf` and `erfc` on lanes: what a lane kernel calls for `f64::exp`, `f64::ln`
//! and the error functions, all lanes at once instead of the scalar function lane by lane.
//!
//! The real-space Ewald pair `q_i q_j erfc(αr)/r` and its derivative `−2α/√π e^{−α²r²}` spent
//! two thirds of a water box's force evaluation in the scalar `erfc` and `exp`, one lane at a
//! time, and a FENE bond's `ln(1 − r²/R₀²)` went to the C library's `log` lane by lane (the
//! lanes stored, the registers spilled around each call: BENCHMARKS.md). Here the algorithms
//! are written once over [`Lanes`] with nothing but IEEE additions, multiplications, divisions
//! and fused multiply-adds (each correctly rounded), selects, exact scalings by powers of two,
//! exact splits of the exponent and table reads — so each lane's result is the same bits on
//! the scalar, AVX2 and AVX-512 paths, whatever its neighbours in the block (the module's
//! contract, [`super`]).
//!
//! `ln` is musl's `log.c` (fdlibm's algorithm) operation for operation, so the `libm` crate's
//! `log` to the bit (tested). `exp` and `erf` are fdlibm's algorithms and coefficients (Sun
//! Microsystems, 1993: `e_exp.c` and `s_erf.c`, as musl and the `libm` crate carry them);
//! `erfc` is `e^{−x²}` times a table of the scaled function erfcx ([`erfc_exp`]). These three
//! agree with the scalar functions to a few ulp (measured by the tests) — not to the bit: every
//! branch is taken by a select instead of a jump and the reduction rounds ties to even.
//! Arguments where the fast path would leave the normal range (`exp` under `−708` or over
//! `709`, `ln` of zero, a subnormal or a negative number, an infinity or a NaN, `erfc` beyond
//! 8) are handed lane by lane to the scalar functions, so every lane still gets an answer that
//! depends on its own argument alone.

use super::Lanes;

/// `ln 2` in two parts: `k·LN2_HI` is exact for `|k| < 2²⁰` (fdlibm `e_exp.c`).
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const INV_LN2: f64 = core::f64::consts::LOG2_E;
/// The remez coefficients of `R(r²) ≈ r (e^r + 1)/(e^r − 1)` on `|r| ≤ ln2/2` (fdlibm).
const EXP_P: [f64; 5] = [
    f64::from_bits(0x3fc5_5555_5555_553e),
    -f64::from_bits(0x3f66_c16c_16be_bd93),
    f64::from_bits(0x3f11_566a_af25_de2c),
    -f64::from_bits(0x3ebb_bd41_c5d2_6bf1),
    f64::from_bits(0x3e66_3769_72be_a4d0),
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

/// The coefficients of `R(s²) ≈ (ln(1 + f) − 2s)/s − s·…`, `s = f/(2 + f)`, on
/// `√2/2 ≤ 1 + f < √2` (fdlibm `e_log.c`'s `Lg1`–`Lg7`).
const LG: [f64; 7] = [
    f64::from_bits(0x3fe5_5555_5555_5593),
    f64::from_bits(0x3fd9_9999_9997_fa04),
    f64::from_bits(0x3fd2_4924_9422_9359),
    f64::from_bits(0x3fcc_71c5_1d8e_78af),
    f64::from_bits(0x3fc7_4664_96cb_03de),
    f64::from_bits(0x3fc3_9a09_d078_c69f),
    f64::from_bits(0x3fc2_f112_df3e_5244),
];
/// The largest subnormal number: lanes above it and below infinity take the fast path of
/// [`ln`].
const LN_BELOW: f64 = f64::from_bits(0x000f_ffff_ffff_ffff);

/// `ln x` lane by lane: musl's `log.c` (fdlibm's algorithm, `x = 2^k (1 + f)` with `1 + f` in
/// `[√2/2, √2)` by [`Lanes::split_sqrt2`], `ln(1 + f) = f − hfsq + s (hfsq + R(s²))`, `s =
/// f/(2 + f)`, plus `k ln2` in two parts), the same operations in the same order: the `libm`
/// crate's `log` to the bit, within 1 ulp of the correctly rounded value (and of the scalar
/// kernel's `f64::ln`). Zero, subnormal, negative, infinite and NaN lanes are handed to that
/// scalar `log` (`−∞`, NaN, `+∞`).
#[inline(always)]
pub fn ln<L: Lanes>(x: L) -> L {
    let (m, k) = x.split_sqrt2();
    let f = m - L::splat(1.0);
    let hfsq = L::splat(0.5) * f * f;
    let s = f / (L::splat(2.0) + f);
    let z = s * s;
    let w = z * z;
    let [g1, g2, g3, g4, g5, g6, g7] = LG.map(L::splat);
    let t1 = w * (g2 + w * (g4 + w * g6));
    let t2 = z * (g1 + w * (g3 + w * (g5 + w * g7)));
    let r = t2 + t1;
    let y = s * (hfsq + r) + k * L::splat(LN2_LO) - hfsq + f + k * L::splat(LN2_HI);
    let full = (1u32 << L::WIDTH) - 1;
    let normal = L::splat(LN_BELOW).lt_mask(x) & x.lt_mask(L::splat(f64::INFINITY));
    if normal == full {
        y
    } else {
        ln_outside(y, x, full & !normal)
    }
}

/// The lanes of `y` in `lanes` replaced by the scalar `log` of `x` (zero, subnormal, negative,
/// infinite or NaN arguments).
#[cold]
#[inline(never)]
fn ln_outside<L: Lanes>(y: L, x: L, lanes: u32) -> L {
    let (mut out, mut at) = ([0.0; 8], [0.0; 8]);
    y.store(&mut out);
    x.store(&mut at);
    for l in (0..L::WIDTH).filter(|l| lanes >> l & 1 == 1) {
        out[l] = libm::log(at[l]);
    }
    L::load(&out)
}

// fdlibm `s_erf.c`: erf(x) = x + x·PP(x²)/QQ(x²) for |x| < 0.84375.
const PP: [f64; 5] = [
    f64::from_bits(0x3fc0_6eba_8214_db68),
    -f64::from_bits(0x3fd4_cd7d_691c_b913),
    -f64::from_bits(0x3f9d_2a51_dbd7_194f),
    -f64::from_bits(0x3f77_a291_2366_68e4),
    -f64::from_bits(0x3ef8_ead6_1200_16ac),
];
const QQ: [f64; 5] = [
    f64::from_bits(0x3fd9_7779_cdda_dc09),
    f64::from_bits(0x3fb0_a54c_5536_ceba),
    f64::from_bits(0x3f74_d022_c4d3_6b0f),
    f64::from_bits(0x3f21_5dc9_221c_1a10),
    -f64::from_bits(0x3ed0_9c43_42a2_6120),
];
// erf(x) = erx + PA(s)/QA(s), s = |x| − 1, for 0.84375 ≤ |x| < 1.25.
const ERX: f64 = f64::from_bits(0x3feb_0ac1_6000_0000);
const PA: [f64; 7] = [
    -f64::from_bits(0x3f63_59b8_bef7_7538),
    f64::from_bits(0x3fda_8d00_ad92_b34d),
    -f64::from_bits(0x3fd7_d240_fbb8_c3f1),
    f64::from_bits(0x3fd4_5fca_8051_20e4),
    -f64::from_bits(0x3fbc_6398_3d3e_28ec),
    f64::from_bits(0x3fa2_2a36_5997_95eb),
    -f64::from_bits(0x3f61_bf38_0a96_073f),
];
const QA: [f64; 6] = [
    f64::from_bits(0x3fbb_3e66_18ee_e323),
    f64::from_bits(0x3fe1_4af0_92eb_6f33),
    f64::from_bits(0x3fb2_635c_d99f_e9a7),
    f64::from_bits(0x3fc0_2660_e763_351f),
    f64::from_bits(0x3f8b_edc2_6b51_dd1c),
    f64::from_bits(0x3f88_8b54_5735_151d),
];
// erfc(x) = e^{−x² − 0.5625 + R(s)/S(s)} / x, s = 1/x², for 1.25 ≤ x < 1/0.35 (RA, SA)…
const RA: [f64; 8] = [
    -f64::from_bits(0x3f84_3412_600d_6435),
    -f64::from_bits(0x3fe6_3416_e4ba_7360),
    -f64::from_bits(0x4025_1e04_41b0_e726),
    -f64::from_bits(0x404f_300a_e4cb_a38d),
    -f64::from_bits(0x4064_4cb1_8428_2266),
    -f64::from_bits(0x4067_135c_ebcc_abb2),
    -f64::from_bits(0x4054_5265_57e4_d2f2),
    -f64::from_bits(0x4023_a0ef_c69a_c25c),
];
const SA: [f64; 8] = [
    f64::from_bits(0x4033_a6b9_bd70_7687),
    f64::from_bits(0x4061_350c_526a_e721),
    f64::from_bits(0x407b_290d_d58a_1a71),
    f64::from_bits(0x4084_2b19_21ec_2868),
    f64::from_bits(0x407a_d021_5770_0314),
    f64::from_bits(0x405b_28a3_ee48_ae2c),
    f64::from_bits(0x401a_47ef_8e48_4a93),
    -f64::from_bits(0x3fae_eff2_ee74_9a62),
];
// …and for 1/0.35 ≤ x < 28 (RB, SB).
const RB: [f64; 7] = [
    -f64::from_bits(0x3f84_3412_39e8_6f4a),
    -f64::from_bits(0x3fe9_93ba_70c2_85de),
    -f64::from_bits(0x4031_c209_555f_995a),
    -f64::from_bits(0x4064_145d_43c5_ed98),
    -f64::from_bits(0x4083_ec88_1375_f228),
    -f64::from_bits(0x4090_0461_6a2e_5992),
    -f64::from_bits(0x407e_384e_9bdc_383f),
];
const SB: [f64; 7] = [
    f64::from_bits(0x403e_568b_261d_5190),
    f64::from_bits(0x4074_5cae_221b_9f0a),
    f64::from_bits(0x4098_02eb_189d_5118),
    f64::from_bits(0x40a8_ffb7_688c_246a),
    f64::from_bits(0x40a3_f219_cedf_3be6),
    f64::from_bits(0x407d_a874_e79f_e763),
    -f64::from_bits(0x4036_70e2_4271_2d62),
];
/// fdlibm's split between the two sets: the high word `0x4006db6d`, just below 1/0.35.
const NEAR_FAR: f64 = f64::from_bits(0x4006_db6d_0000_0000);

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

/// `√x` lane by lane as `x · (1/√x)` ([`Lanes::rsqrt`]): within 1.5 ulp of the correctly
/// rounded root, where [`Lanes::sqrt`] is the square-root unit, as slow as the divider and
/// one at a time (a pair's `r` beside its `1/r`; the scalar `rsqrt`'s docs say why). The same
/// operations on every path: the same bits. Zero, subnormal, infinite, negative and NaN lanes
/// take [`Lanes::sqrt`] (IEEE: `±0`, `∞`, NaN).
#[inline(always)]
pub fn root<L: Lanes>(x: L) -> L {
    let (least, inf) = (L::splat(f64::MIN_POSITIVE), L::splat(f64::INFINITY));
    let normal = x.lt_mask(inf) & !x.lt_mask(least);
    let r = x * x.rsqrt();
    if normal == (1u32 << L::WIDTH) - 1 {
        r
    } else {
        L::select(least.le(x) * x.lt(inf), r, x.sqrt())
    }
}

/// `erfc(x) = 1 − erf(x)` lane by lane, computed directly (no cancellation for large `x`),
/// within a few ulp of the scalar [`crate::special::erfc`]: [`erfc_exp`]'s first value.
#[inline(always)]
pub fn erfc<L: Lanes>(x: L) -> L {
    erfc_exp(x).0
}

/// `(erfc(x), e^{−x²})` lane by lane: erfc and the factor of its derivative `−2/√π e^{−x²}`,
/// which a real-space Ewald pair takes with its value — one exponential for both
/// (`#[mechanical_system]` calls this where a lane kernel has both).
///
/// `erfc(|x|) = e^{−x²} erfcx(|x|)`, the scaled function `erfcx` from polynomials on
/// intervals (`erfcx_table.rs`, made and checked by `zs-runtime/tools/erfcx_table.py`:
/// S. G. Johnson's piecewise-Chebyshev approach to erfcx): no division, where fdlibm's
/// branches take two for their rational functions and select among three of them. Below
/// `|x| = 3.875` (every pair within a real-space cutoff of `αr ≲ 3.5`, the usual Ewald
/// split), one of sixteen polynomials of degree 11 on intervals of width 1/4, its
/// coefficients picked per lane from registers ([`Lanes::pick16`]); beyond, one of degree 7
/// on intervals of width 1/32 over `[0, 8]`, each lane's row gathered from memory. Each lane's
/// value depends on its own `x` only, whatever its block's other lanes. `x²` is `h = x·x` plus its rounding error (exact
/// by a fused multiply-add), and the exponential is of that two-part argument ([`exp`]'s
/// reduction with a tail): within an ulp of `e^{−x²}`, closer than `exp(-(x * x))`, whose
/// argument rounds. `erfc(−x) = 2 − erfc(x)`. Lanes with `|x| > 8` (`erfc < 1e-29`), infinite
/// or NaN take the scalar function, lane by lane.
#[inline(always)]
pub fn erfc_exp<L: Lanes>(x: L) -> (L, L) {
    use super::erfcx_table::{ERFCX, NEAR, NEAR_TAIL};
    let h = x * x;
    // Where `x²` overflows the remainder is ∓∞ (or NaN): none, and `e^{−∞} = 0`.
    let rest = L::select(
        h.lt(L::splat(f64::INFINITY)),
        x.mul_add(x, -h),
        L::splat(0.0),
    );
    let e = exp_sum(-h, -rest);
    let zero = L::splat(0.0);
    let negative = x.lt(zero);
    let abs = L::select(negative, -x, x);
    let full = (1u32 << L::WIDTH) - 1;
    // The nearest interval (ties to even: either polynomial holds at `t = ±½`); `t` exact.
    let near_scaled = abs * L::splat(4.0);
    let near_last = L::splat(NEAR[0].0.len() as f64 - 0.5);
    let near = near_scaled.lt_mask(near_last);
    let k = L::select(near_scaled.lt(near_last), near_scaled.round_even(), zero);
    let t = near_scaled - k;
    let mut p = L::pick16(&NEAR[NEAR.len() - 1].0, k);
    for c in NEAR[1..NEAR.len() - 1].iter().rev() {
        p = p.mul_add(t, L::pick16(&c.0, k));
    }
    // The constant term and its rounding error added last: within an ulp where the constant
    // rounded alone would cost up to one more.
    let mut f = L::pick16(&NEAR[0].0, k) + p.mul_add(t, L::pick16(&NEAR_TAIL.0, k));
    let mut tabled = full;
    if near != full {
        let scaled = abs * L::splat(32.0);
        let last = (ERFCX.0.len() - 1) as f64;
        tabled = scaled.lt_mask(L::splat(last + 0.5));
        let k = L::select(scaled.lt(L::splat(last + 0.5)), scaled.round_even(), zero);
        let t = scaled - k;
        let c = L::gather_rows::<8>(ERFCX.0.as_flattened(), k);
        let mut far = c[7];
        for &ci in c[..7].iter().rev() {
            far = far.mul_add(t, ci);
        }
        f = L::select(near_scaled.lt(near_last), f, far);
    }
    let v = e * f;
    let out = L::select(negative, L::splat(2.0) - v, v);
    if tabled == full {
        (out, e)
    } else {
        (erfc_outside(out, x, full & !tabled), e)
    }
}

/// The lanes of `out` in `lanes` replaced by the scalar `erfc(x)`.
#[cold]
#[inline(never)]
fn erfc_outside<L: Lanes>(out: L, x: L, lanes: u32) -> L {
    let (mut o, mut a) = ([0.0; 8], [0.0; 8]);
    out.store(&mut o);
    x.store(&mut a);
    for l in (0..L::WIDTH).filter(|l| lanes >> l & 1 == 1) {
        o[l] = crate::special::erfc(a[l]);
    }
    L::load(&o)
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

    /// Function `.1` (0 `exp`, 1 `erf`, 2 `erfc`, 3 `ln`) over `.0` in blocks of the lanes (the
    /// tail one lane at a time).
    struct Apply<'a>(&'a [f64], usize, &'a mut Vec<f64>);

    impl WithLanes for Apply<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let which = self.1;
            let f = |x: L| match which {
                0 => exp(x),
                1 => erf(x),
                2 => erfc(x),
                _ => ln(x),
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

    /// A scalar function the lanes are checked against.
    type Scalar = fn(f64) -> f64;

    const FUNCTIONS: [(&str, Scalar); 4] = [
        ("exp", f64::exp),
        ("erf", libm::erf),
        ("erfc", libm::erfc),
        ("ln", libm::log),
    ];

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

    /// Arguments of `ln`: every binade's spread (subnormals included), `1` and its neighbours
    /// (`f` near 0), both sides of the reduction's `√2` split, the edges of the fast path,
    /// and what goes to the scalar fallback (zeros, negatives, infinities, NaN).
    fn ln_arguments() -> Vec<f64> {
        let mut x = Vec::new();
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 12
        };
        for exponent in 0..2047_u64 {
            for _ in 0..24 {
                x.push(f64::from_bits((exponent << 52) | next()));
            }
        }
        for k in 0..20_000_u64 {
            x.extend([
                f64::from_bits(1.0_f64.to_bits() + k),
                f64::from_bits(1.0_f64.to_bits() - k),
            ]);
        }
        for split in [0x3ff6_a09e_0000_0000_u64, 0x3fe6_a09e_0000_0000] {
            for d in 0..64 {
                x.extend([f64::from_bits(split + d), f64::from_bits(split - 1 - d)]);
            }
        }
        x.extend([
            LN_BELOW,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::from_bits(1),
            0.0,
            -0.0,
            -1.0,
            -f64::MIN_POSITIVE,
            f64::INFINITY,
            -f64::INFINITY,
            f64::NAN,
        ]);
        x
    }

    /// The arguments function `which` is checked on.
    fn arguments_of(which: usize) -> Vec<f64> {
        match which {
            0 => arguments(750.0),
            3 => ln_arguments(),
            _ => arguments(30.0),
        }
    }

    #[test]
    fn ln_on_the_lanes_is_musls_log_and_within_an_ulp_of_the_c_librarys() {
        let x = ln_arguments();
        for isa in Isa::available() {
            let y = on(isa, 3, &x);
            for (&x, &y) in x.iter().zip(&y) {
                assert_eq!(ulps(y, libm::log(x)), 0, "{isa:?}: ln {x:e} = {y:e}");
                // The scalar kernel's `f64::ln` (the C library's): both within an ulp of
                // the exact value, at most one apart.
                assert!(ulps(y, x.ln()) <= 1, "ln {x:e}: {y:e} against {:e}", x.ln());
            }
        }
        let one = |x: f64| on(Isa::Scalar, 3, &[x])[0];
        assert_eq!(one(1.0).to_bits(), 0.0_f64.to_bits());
        assert_eq!((one(0.0), one(-0.0)), (-f64::INFINITY, -f64::INFINITY));
        assert_eq!(one(f64::INFINITY), f64::INFINITY);
        assert!(one(-1.0).is_nan() && one(f64::NAN).is_nan());
        assert_eq!(one(core::f64::consts::E), 1.0);
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
            (3, FUNCTIONS[3], 0.0, 0),
        ] {
            let x = if which == 3 {
                ln_arguments()
            } else {
                arguments(range)
            };
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
            let x = arguments_of(which);
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
        // `erfc_exp`'s `e^{−x²}`, where `x²` overflows: 0, not NaN.
        for x in [1e200, -1e200, inf, -inf] {
            assert_eq!(erfc_exp(x).1, 0.0, "e^(-x²) at {x:e}");
        }
        assert!(erfc_exp(nan).1.is_nan());
        assert_eq!(erfc_exp(3.0).1, (-9.0_f64).exp());
        for which in 0..4 {
            assert!(one(which, nan).is_nan(), "function {which}");
        }
    }
}
