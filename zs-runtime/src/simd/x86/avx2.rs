//! AVX2 (4 lanes): the helpers of [`F64x4`](super::F64x4)'s lane operations and loads, and the
//! `#[target_feature]` entry [`run_avx2`]. Soundness: [`super`].

#![allow(clippy::missing_safety_doc)]

use core::arch::x86_64::*;

use super::F64x4;
use crate::simd::{Lanes, WithLanes};

/// [`Lanes::gather_bodies`] on 4 lanes: bodies of three coordinates by rows
/// ([`rows3_256`]), others through [`Lanes::gather`].
#[inline(always)]
pub(super) fn gather_bodies256<const D: usize, const K: usize>(
    src: &[f64],
    terms: &[[u32; K]],
    k: usize,
) -> [F64x4; D] {
    let terms: &[[u32; K]; 4] = terms[..4].try_into().expect("4 terms");
    let max = terms.iter().map(|t| t[k] as usize).max().unwrap_or(0);
    if D == 3 && max < src.len() / 3 {
        // SAFETY: every body read is `src[t[k]·3 .. t[k]·3 + 3]`, in `src` since
        // `t[k] ≤ max < src.len() / 3` (checked above). Instructions: module docs (AVX).
        let [x, y, z] = unsafe { rows3_256(src, terms, k) };
        let mut out = [F64x4::splat(0.0); D];
        out[0] = x;
        out[1] = y;
        out[2] = z;
        return out;
    }
    crate::simd::loads::gather_bodies_by_rows::<F64x4, D, K>(src, terms, k)
}

/// The coordinates `x, y, z` of body `k` of 4 terms whose bodies are three coordinates
/// each: two 128-bit loads per body, `(x, y)` and `(y, z)`, paired across the register's
/// halves and unpacked — 8 loads (4 folded into inserts) and 3 in-lane shuffles, where three
/// 4-lane gathers cost 12 loads and a slow gather each (AMD Zen).
///
/// # Safety
/// `src[t[k]·3 .. t[k]·3 + 3]` must be in `src` for every term `t`; AVX.
#[inline(always)]
pub(super) unsafe fn rows3_256<const K: usize>(
    src: &[f64],
    terms: &[[u32; K]; 4],
    k: usize,
) -> [F64x4; 3] {
    let p = src.as_ptr();
    // SAFETY: the caller's contract: `at(l)` and `at(l) + 1` start two f64s inside body
    // `terms[l][k]`'s three.
    unsafe {
        let at = |l: usize| p.add(terms[l][k] as usize * 3);
        let halves = |a: *const f64, b: *const f64| {
            _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(_mm_loadu_pd(a)), _mm_loadu_pd(b))
        };
        let xy02 = halves(at(0), at(2)); // x0 y0 | x2 y2
        let xy13 = halves(at(1), at(3)); // x1 y1 | x3 y3
        let yz02 = halves(at(0).add(1), at(2).add(1)); // y0 z0 | y2 z2
        let yz13 = halves(at(1).add(1), at(3).add(1)); // y1 z1 | y3 z3
        [
            F64x4(_mm256_unpacklo_pd(xy02, xy13)),
            F64x4(_mm256_unpackhi_pd(xy02, xy13)),
            F64x4(_mm256_unpackhi_pd(yz02, yz13)),
        ]
    }
}

/// For each 4-bit mask, the 32-bit lane indices that pack the 4 doubles whose bits are set
/// to the low lanes in order (the others pick the low half of lane 0: never read).
const COMPRESS4: [[i32; 8]; 16] = {
    let mut table = [[0; 8]; 16];
    let mut mask = 0;
    while mask < 16 {
        let mut out = 0;
        let mut lane: i32 = 0;
        while lane < 4 {
            if (mask >> lane) & 1 == 1 {
                table[mask][2 * out] = 2 * lane;
                table[mask][2 * out + 1] = 2 * lane + 1;
                out += 1;
            }
            lane += 1;
        }
        mask += 1;
    }
    table
};

/// The lanes of `a` whose bit is set in `mask` packed to the low lanes in order (the others
/// unspecified): one AVX2 permute by a table of the 16 masks, where storing lane by lane is
/// four dependent scalar stores per coordinate.
#[inline(always)]
pub(super) unsafe fn compress256(mask: u32, a: __m256d) -> __m256d {
    let idx = &COMPRESS4[(mask & 15) as usize];
    // SAFETY: `idx` is 8 readable i32s (32 bytes; the unaligned load needs no alignment).
    // The caller is in `F64x4` code, which only runs with AVX2 (module docs).
    unsafe {
        let idx = _mm256_loadu_si256(idx.as_ptr().cast::<__m256i>());
        _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(a), idx))
    }
}

/// Lane `l` = `*base.add(at[l])`.
///
/// # Safety
/// Every `base.add(at[l])` must be readable; AVX2 (module docs).
#[inline(always)]
pub(super) unsafe fn gather256(at: &[usize; 4], base: *const f64) -> __m256d {
    // SAFETY: by the caller's contract; `usize` is `u64` on x86_64 (an unaligned load of
    // four of them as one 256-bit integer vector).
    unsafe {
        let idx = _mm256_loadu_si256(at.as_ptr().cast());
        _mm256_i64gather_pd::<8>(base, idx)
    }
}

/// Lane `l` is `base[round(row_l) · D]`: the rows converted to 32-bit indices in registers.
///
/// # Safety
/// Every `base.add(round(row_l) · D)` must be readable; AVX2 (module docs).
#[inline(always)]
pub(super) unsafe fn gather_rows256<const D: usize>(row: __m256d, base: *const f64) -> __m256d {
    // SAFETY: by the caller's contract (small non-negative rows: no wrapping products).
    unsafe {
        let idx = _mm_mullo_epi32(_mm256_cvtpd_epi32(row), _mm_set1_epi32(D as i32));
        _mm256_i32gather_pd::<8>(base, idx)
    }
}

/// `table[k]` per lane for integer-valued lanes `k` in `0..16`: `k + 2⁵²`'s low mantissa
/// bits are `k`, masked to four bits (so that every lane reads inside `table`) and gathered.
#[inline(always)]
pub(super) unsafe fn pick16_256(table: &[f64; 16], k: __m256d) -> __m256d {
    // SAFETY: every index is masked to 0..16, inside the sixteen f64s of `table`; AVX2
    // (module docs).
    unsafe {
        let bits = _mm256_castpd_si256(_mm256_add_pd(k, _mm256_set1_pd(4_503_599_627_370_496.0)));
        let index = _mm256_and_si256(bits, _mm256_set1_epi64x(15));
        _mm256_i64gather_pd::<8>(table.as_ptr(), index)
    }
}

/// `1.0` where `a < b` (ordered), else `0.0`.
#[inline(always)]
pub(super) unsafe fn lt256(a: __m256d, b: __m256d) -> __m256d {
    // SAFETY: AVX (module docs).
    unsafe { _mm256_and_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(a, b), _mm256_set1_pd(1.0)) }
}

/// Bit `l` set where lane `l` of `a` < that of `b` (ordered).
#[inline(always)]
pub(super) unsafe fn lt_mask256(a: __m256d, b: __m256d) -> u32 {
    // SAFETY: AVX (module docs).
    unsafe { _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(a, b)) as u32 }
}

/// `1.0` where `a ≤ b` (ordered), else `0.0`.
#[inline(always)]
pub(super) unsafe fn le256(a: __m256d, b: __m256d) -> __m256d {
    // SAFETY: AVX (module docs).
    unsafe { _mm256_and_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(a, b), _mm256_set1_pd(1.0)) }
}

/// `a` where `c ≠ 0` (unordered: NaN counts as nonzero, as `c != 0.0` does), else `b`.
#[inline(always)]
pub(super) unsafe fn select256(c: __m256d, a: __m256d, b: __m256d) -> __m256d {
    // SAFETY: AVX (module docs).
    unsafe {
        let m = _mm256_cmp_pd::<_CMP_NEQ_UQ>(c, _mm256_setzero_pd());
        _mm256_blendv_pd(b, a, m)
    }
}

/// Round to nearest, ties to even (the default rounding mode's rule), no exceptions.
#[inline(always)]
pub(super) unsafe fn round256(a: __m256d) -> __m256d {
    // SAFETY: AVX (module docs).
    unsafe { _mm256_round_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
}

/// [`Lanes::pow2i`] on 4 lanes: `k` to 32-bit integers (exact for integer-valued lanes),
/// widened, biased and shifted into the exponent field.
#[inline(always)]
pub(super) unsafe fn pow2i256(k: __m256d) -> __m256d {
    // SAFETY: AVX2 (module docs). Out-of-range lanes convert to `i32::MIN`: garbage, no UB.
    unsafe {
        let k = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k));
        let biased = _mm256_add_epi64(k, _mm256_set1_epi64x(1023));
        _mm256_castsi256_pd(_mm256_slli_epi64::<52>(biased))
    }
}

/// [`Lanes::split_sqrt2`] on 4 lanes: the scalar `split_sqrt2`'s integer operations on the
/// bits, the biased exponent made a double by the `2^52` trick (exact for `[0, 2^52)`).
#[inline(always)]
pub(super) unsafe fn split_sqrt2_256(x: __m256d) -> (__m256d, __m256d) {
    use crate::simd::scalar::{FRACTION, SQRT2_CARRY};
    // SAFETY: AVX2 (module docs); integer operations on the bits, defined for every value.
    unsafe {
        let bits = _mm256_castpd_si256(x);
        let fraction = _mm256_and_si256(bits, _mm256_set1_epi64x(FRACTION as i64));
        let carried = _mm256_add_epi64(fraction, _mm256_set1_epi64x(SQRT2_CARRY as i64));
        let up = _mm256_and_si256(_mm256_srli_epi64::<52>(carried), _mm256_set1_epi64x(1));
        let exponent = _mm256_sub_epi64(_mm256_set1_epi64x(0x3ff), up);
        let m = _mm256_or_si256(fraction, _mm256_slli_epi64::<52>(exponent));
        let biased = _mm256_add_epi64(
            _mm256_and_si256(_mm256_srli_epi64::<52>(bits), _mm256_set1_epi64x(0x7ff)),
            up,
        );
        let two52 = _mm256_set1_pd(4_503_599_627_370_496.0);
        let k = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(biased, _mm256_castpd_si256(two52))),
            two52,
        );
        (
            _mm256_castsi256_pd(m),
            _mm256_sub_pd(k, _mm256_set1_pd(1023.0)),
        )
    }
}

/// [`crate::simd::rsqrt`] on 4 lanes: the same operations, lane by lane.
#[inline(always)]
pub(super) unsafe fn rsqrt256(x: __m256d) -> __m256d {
    // SAFETY: `F64x4` code, which only runs with AVX2 (module docs).
    unsafe {
        let h = _mm256_mul_pd(_mm256_set1_pd(0.5), x);
        let guess = _mm256_sub_epi64(
            _mm256_set1_epi64x(crate::simd::scalar::RSQRT_MAGIC as i64),
            _mm256_srli_epi64::<1>(_mm256_castpd_si256(x)),
        );
        let mut y = _mm256_castsi256_pd(guess);
        for _ in 0..4 {
            let r = _mm256_fnmadd_pd(_mm256_mul_pd(h, y), y, _mm256_set1_pd(0.5));
            y = _mm256_fmadd_pd(y, r, y);
        }
        let normal = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(x, _mm256_set1_pd(f64::MIN_POSITIVE)),
            _mm256_cmp_pd::<_CMP_LT_OQ>(x, _mm256_set1_pd(f64::INFINITY)),
        );
        if _mm256_movemask_pd(normal) == 0b1111 {
            y
        } else {
            let exact = _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_sqrt_pd(x));
            _mm256_blendv_pd(exact, y, normal)
        }
    }
}

/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(in crate::simd) unsafe fn run_avx2<W: WithLanes>(code: W) -> W::Output {
    code.run::<F64x4>()
}
