//! AVX-512 (8 lanes): the helpers of [`F64x8`](super::F64x8)'s lane operations and loads, and
//! the `#[target_feature]` entry [`run_avx512`]. Soundness: [`super`].

use core::arch::x86_64::*;

use super::F64x8;
use crate::simd::{Lanes, WithLanes};

/// [`Lanes::gather_bodies`] on 8 lanes. Bodies of three coordinates (any `K`: a pair's
/// list, a row of partners) are loaded by rows ([`rows3_512`]). Otherwise a pair's list
/// (`K = 2`: 16 indices, 64 bytes) is one load; the `k`-th index of each term is picked by a
/// permutation, scaled by `D` and used as a 32-bit gather index — no index built lane by
/// lane. Other `K` go through [`Lanes::gather`].
#[inline(always)]
pub(super) fn gather_bodies512<const D: usize, const K: usize>(
    src: &[f64],
    terms: &[[u32; K]],
    k: usize,
) -> [F64x8; D] {
    let terms: &[[u32; K]; 8] = terms[..8].try_into().expect("8 terms");
    let Some(max) = terms.iter().map(|t| t[k]).max() else {
        unreachable!("8 terms")
    };
    // 32-bit signed gather indices: every offset `t[k]·D + d` must fit, and be in `src`.
    let fits = (max as usize) < src.len() / D.max(1) && src.len() <= i32::MAX as usize;
    if D == 3 && (max as usize) * 3 + 4 <= src.len() {
        // SAFETY: every row read is `src[t[k]·3 .. t[k]·3 + 4]`, in `src` since
        // `t[k] ≤ max` and `max·3 + 4 ≤ src.len()` (checked above). Instructions: module
        // docs (AVX-512F; the 256-bit load is AVX).
        let [x, y, z] = unsafe { rows3_512(src, terms, k) };
        let mut out = [F64x8::splat(0.0); D];
        out[0] = x;
        out[1] = y;
        out[2] = z;
        return out;
    }
    if K != 2 || !fits || D == 0 {
        return crate::simd::loads::gather_bodies_by_rows::<F64x8, D, K>(src, terms, k);
    }
    let mut out = [F64x8::splat(0.0); D];
    // SAFETY: `terms` is 8 × 2 u32 = 64 readable bytes (K = 2, checked above); every index
    // `t[k]` is at most `max`, with `max·D + d < src.len()` for `d < D` (checked above), so
    // every address gathered is inside `src`, and each offset fits an i32. Instructions:
    // module docs (AVX-512F only).
    unsafe {
        let pairs = _mm512_loadu_si512(terms.as_ptr().cast());
        let k = k as i32;
        let pick = _mm512_setr_epi32(
            k,
            2 + k,
            4 + k,
            6 + k,
            8 + k,
            10 + k,
            12 + k,
            14 + k,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        );
        let idx = _mm512_castsi512_si256(_mm512_permutexvar_epi32(pick, pairs));
        let idx = _mm256_mullo_epi32(idx, _mm256_set1_epi32(D as i32));
        for (d, o) in out.iter_mut().enumerate() {
            *o = F64x8(_mm512_i32gather_pd::<8>(idx, src.as_ptr().add(d)));
        }
    }
    out
}

/// [`Lanes::load_pairs3`] on 8 lanes: the 16 indices checked against `src` by one compare
/// and body 0's sharing by another (not index by index), then body 0 broadcast or loaded
/// by rows and body 1 loaded by rows ([`rows3_512`]).
#[inline(always)]
pub(super) fn load_pairs3_512<const K: usize>(src: &[f64], terms: &[[u32; K]]) -> [[F64x8; 3]; 2] {
    assert_eq!(K, 2, "pair terms");
    let terms: &[[u32; K]; 8] = terms[..8].try_into().expect("8 terms");
    // The last body whose row of four, `src[t·3 .. t·3 + 4]`, is in `src`.
    let Some(last) = src.len().checked_sub(4).map(|n| n / 3) else {
        return crate::simd::loads::load_pairs3_by_bodies(src, terms);
    };
    let last = u32::try_from(last).unwrap_or(u32::MAX);
    // SAFETY: `terms` is 8 × 2 u32 = 64 readable bytes (K = 2, checked above).
    // Instructions: module docs (AVX-512F).
    let (outside, shared) = unsafe {
        let at = _mm512_loadu_si512(terms.as_ptr().cast());
        let first = _mm512_permutexvar_epi32(_mm512_setzero_si512(), at);
        (
            _mm512_cmpgt_epu32_mask(at, _mm512_set1_epi32(last as i32)),
            _mm512_cmpeq_epi32_mask(at, first) & 0x5555 == 0x5555,
        )
    };
    if outside != 0 {
        return crate::simd::loads::load_pairs3_by_bodies(src, terms);
    }
    // SAFETY: every index is at most `last` (checked above), so each row of four is in
    // `src` (`rows3_512`'s contract); AVX-512F.
    let body1 = unsafe { rows3_512(src, terms, 1) };
    let body0 = if shared {
        let o = terms[0][0] as usize * 3;
        let r = &src[o..o + 3];
        [F64x8::splat(r[0]), F64x8::splat(r[1]), F64x8::splat(r[2])]
    } else {
        // SAFETY: as for body 1.
        unsafe { rows3_512(src, terms, 0) }
    };
    [body0, body1]
}

/// The coordinates `x, y, z` of body `k` of 8 terms whose bodies are three coordinates
/// each: each body's row loaded whole (four coordinates, the fourth unused) and the 8 × 4
/// block transposed in registers — 8 loads and 11 shuffles where three 8-lane gathers wait
/// on 24 loads.
///
/// # Safety
/// `src[t[k]·3 .. t[k]·3 + 4]` must be in `src` for every term `t`; AVX-512F.
#[inline(always)]
pub(super) unsafe fn rows3_512<const K: usize>(
    src: &[f64],
    terms: &[[u32; K]; 8],
    k: usize,
) -> [F64x8; 3] {
    let p = src.as_ptr();
    // SAFETY: the caller's contract.
    unsafe {
        let row = |l: usize| _mm256_loadu_pd(p.add(terms[l][k] as usize * 3));
        let pair =
            |a: usize, b: usize| _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(row(a)), row(b));
        // t_l = [x_l y_l | z_l · | x_{l+4} y_{l+4} | z_{l+4} ·] (128-bit lanes).
        let (t0, t1, t2, t3) = (pair(0, 4), pair(1, 5), pair(2, 6), pair(3, 7));
        let xz01 = _mm512_unpacklo_pd(t0, t1); // x0 x1 | z0 z1 | x4 x5 | z4 z5
        let y01 = _mm512_unpackhi_pd(t0, t1); // y0 y1 | · · | y4 y5 | · ·
        let xz23 = _mm512_unpacklo_pd(t2, t3);
        let y23 = _mm512_unpackhi_pd(t2, t3);
        let lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
        let hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
        [
            F64x8(_mm512_permutex2var_pd(xz01, lo, xz23)),
            F64x8(_mm512_permutex2var_pd(y01, lo, y23)),
            F64x8(_mm512_permutex2var_pd(xz01, hi, xz23)),
        ]
    }
}

/// The lanes of `a` whose bit is set in `mask`, packed to the low lanes in order (the
/// others zero): AVX-512F's register-to-register compress, which is fast where the store
/// form is not.
#[inline(always)]
pub(super) unsafe fn compress512(mask: u32, a: __m512d) -> __m512d {
    // SAFETY: the caller is in `F64x8` code, which only runs with AVX-512F (module docs).
    unsafe { _mm512_maskz_compress_pd(mask as __mmask8, a) }
}

/// `a XOR b` bitwise (AVX-512F has no `f64` XOR; the integer one does the same bits).
#[inline(always)]
pub(super) unsafe fn xor512(a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: the caller is in `F64x8` code, which only runs with AVX-512F (module docs).
    unsafe {
        _mm512_castsi512_pd(_mm512_xor_si512(
            _mm512_castpd_si512(a),
            _mm512_castpd_si512(b),
        ))
    }
}

/// Lane `l` = `*base.add(at[l])`.
///
/// # Safety
/// Every `base.add(at[l])` must be readable; AVX-512F (module docs).
#[inline(always)]
pub(super) unsafe fn gather512(at: &[usize; 8], base: *const f64) -> __m512d {
    // SAFETY: as in `gather256`.
    unsafe {
        let idx = _mm512_loadu_si512(at.as_ptr().cast());
        _mm512_i64gather_pd::<8>(idx, base)
    }
}

/// Lane `l` is `base[round(row_l) · D]`: the rows converted to 32-bit indices in registers.
///
/// # Safety
/// Every `base.add(round(row_l) · D)` must be readable; AVX-512F (module docs).
#[inline(always)]
pub(super) unsafe fn gather_rows512<const D: usize>(row: __m512d, base: *const f64) -> __m512d {
    // SAFETY: by the caller's contract (the rows are small non-negative integers: the 32-bit
    // products do not wrap); AVX-512F implies AVX2.
    unsafe {
        let idx = _mm256_mullo_epi32(_mm512_cvtpd_epi32(row), _mm256_set1_epi32(D as i32));
        _mm512_i32gather_pd::<8>(idx, base)
    }
}

/// `table[k]` per lane for integer-valued lanes `k` in `0..16`: `k + 2⁵²`'s low mantissa
/// bits are `k`, and the two-register permute reads the low four bits of each 64-bit index
/// (other lanes: some entry of `table`).
#[inline(always)]
pub(super) unsafe fn pick16_512(table: &[f64; 16], k: __m512d) -> __m512d {
    // SAFETY: `table` is sixteen readable f64s, read as two unaligned vectors of eight;
    // AVX-512F (module docs).
    unsafe {
        let index = _mm512_castpd_si512(_mm512_add_pd(k, _mm512_set1_pd(4_503_599_627_370_496.0)));
        let low = _mm512_loadu_pd(table.as_ptr());
        let high = _mm512_loadu_pd(table.as_ptr().add(8));
        _mm512_permutex2var_pd(low, index, high)
    }
}

/// Bit `l` set where lane `l` of `a` < that of `b` (ordered).
#[inline(always)]
pub(super) unsafe fn lt_mask512(a: __m512d, b: __m512d) -> u32 {
    // SAFETY: AVX-512F (module docs).
    unsafe { u32::from(_mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b)) }
}

/// `1.0` where `a < b` (ordered), else `0.0`.
#[inline(always)]
pub(super) unsafe fn lt512(a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: AVX-512F (module docs).
    unsafe {
        let m = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b);
        _mm512_maskz_mov_pd(m, _mm512_set1_pd(1.0))
    }
}

/// `1.0` where `a ≤ b` (ordered), else `0.0`.
#[inline(always)]
pub(super) unsafe fn le512(a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: AVX-512F (module docs).
    unsafe {
        let m = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, b);
        _mm512_maskz_mov_pd(m, _mm512_set1_pd(1.0))
    }
}

/// `a` where `c ≠ 0` (unordered), else `b`.
#[inline(always)]
pub(super) unsafe fn select512(c: __m512d, a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: AVX-512F (module docs).
    unsafe {
        let m = _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(c, _mm512_setzero_pd());
        _mm512_mask_blend_pd(m, b, a)
    }
}

/// Round to nearest, ties to even, no exceptions.
#[inline(always)]
pub(super) unsafe fn round512(a: __m512d) -> __m512d {
    // SAFETY: AVX-512F (module docs).
    unsafe { _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
}

/// [`Lanes::pow2i`] on 8 lanes: `k` to 32-bit integers (exact for integer-valued lanes),
/// widened, biased and shifted into the exponent field.
#[inline(always)]
pub(super) unsafe fn pow2i512(k: __m512d) -> __m512d {
    // SAFETY: AVX-512F (module docs). Out-of-range lanes convert to `i32::MIN`: garbage, no UB.
    unsafe {
        let k = _mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(k));
        let biased = _mm512_add_epi64(k, _mm512_set1_epi64(1023));
        _mm512_castsi512_pd(_mm512_slli_epi64::<52>(biased))
    }
}

/// [`Lanes::split_sqrt2`] on 8 lanes: the scalar `split_sqrt2`'s integer operations on the
/// bits, the biased exponent made a double by the `2^52` trick (exact for `[0, 2^52)`).
#[inline(always)]
pub(super) unsafe fn split_sqrt2_512(x: __m512d) -> (__m512d, __m512d) {
    use crate::simd::scalar::{FRACTION, SQRT2_CARRY};
    // SAFETY: AVX-512F (module docs); integer operations on the bits, defined for every value.
    unsafe {
        let bits = _mm512_castpd_si512(x);
        let fraction = _mm512_and_si512(bits, _mm512_set1_epi64(FRACTION as i64));
        let carried = _mm512_add_epi64(fraction, _mm512_set1_epi64(SQRT2_CARRY as i64));
        let up = _mm512_and_si512(_mm512_srli_epi64::<52>(carried), _mm512_set1_epi64(1));
        let exponent = _mm512_sub_epi64(_mm512_set1_epi64(0x3ff), up);
        let m = _mm512_or_si512(fraction, _mm512_slli_epi64::<52>(exponent));
        let biased = _mm512_add_epi64(
            _mm512_and_si512(_mm512_srli_epi64::<52>(bits), _mm512_set1_epi64(0x7ff)),
            up,
        );
        let two52 = _mm512_set1_pd(4_503_599_627_370_496.0);
        let k = _mm512_sub_pd(
            _mm512_castsi512_pd(_mm512_or_si512(biased, _mm512_castpd_si512(two52))),
            two52,
        );
        (
            _mm512_castsi512_pd(m),
            _mm512_sub_pd(k, _mm512_set1_pd(1023.0)),
        )
    }
}

/// [`crate::simd::rsqrt`] on 8 lanes: the same operations, lane by lane.
#[inline(always)]
pub(super) unsafe fn rsqrt512(x: __m512d) -> __m512d {
    // SAFETY: `F64x8` code, which only runs with AVX-512F (module docs).
    unsafe {
        let h = _mm512_mul_pd(_mm512_set1_pd(0.5), x);
        let guess = _mm512_sub_epi64(
            _mm512_set1_epi64(crate::simd::scalar::RSQRT_MAGIC as i64),
            _mm512_srli_epi64::<1>(_mm512_castpd_si512(x)),
        );
        let mut y = _mm512_castsi512_pd(guess);
        for _ in 0..4 {
            let r = _mm512_fnmadd_pd(_mm512_mul_pd(h, y), y, _mm512_set1_pd(0.5));
            y = _mm512_fmadd_pd(y, r, y);
        }
        let normal = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, _mm512_set1_pd(f64::MIN_POSITIVE))
            & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, _mm512_set1_pd(f64::INFINITY));
        if normal == 0xFF {
            y
        } else {
            let exact = _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_sqrt_pd(x));
            _mm512_mask_blend_pd(normal, exact, y)
        }
    }
}

/// # Safety
/// The CPU must have AVX-512F, AVX-512DQ and FMA. DQ's 64-bit multiply (`vpmullq`) is what
/// the positions' fingerprints ([`crate::vector::fingerprint`]) are made of; without it each
/// is three 32-bit multiplies and their shifts. It changes no floating-point value.
#[target_feature(enable = "avx512f,avx512dq,fma")]
pub(in crate::simd) unsafe fn run_avx512<W: WithLanes>(code: W) -> W::Output {
    code.run::<F64x8>()
}
