//! The AVX2 and AVX-512 lane types: one macro gives both their [`Lanes`] and [`Loads`]
//! impls from each instruction set's helpers (`avx2.rs`, `avx512.rs`).
//!
//! Soundness: the types are private to this module and a value of them is only ever made
//! inside [`avx2::run_avx2`] / [`avx512::run_avx512`] (through `WithLanes::run::<F64x4>` and
//! `::<F64x8>`), which [`super::dispatch_with`] calls only after run-time detection of the
//! instructions. So every intrinsic below runs on a CPU that has it; that is the proof the
//! `unsafe` blocks rely on.

mod avx2;
mod avx512;

use core::arch::x86_64::*;
use core::ops::{Add, Div, Mul, Neg, Sub};

pub(super) use avx2::run_avx2;
use avx2::*;
pub(super) use avx512::run_avx512;
use avx512::*;

use super::{Lanes, Loads};

/// 4 f64 lanes in a 256-bit register.
#[derive(Clone, Copy)]
pub(super) struct F64x4(__m256d);

/// 8 f64 lanes in a 512-bit register.
#[derive(Clone, Copy)]
pub(super) struct F64x8(__m512d);

// SAFETY (Send, Sync): plain numbers in a register type.
unsafe impl Send for F64x4 {}
unsafe impl Sync for F64x4 {}
unsafe impl Send for F64x8 {}
unsafe impl Sync for F64x8 {}

macro_rules! lanes {
    ($ty:ident, $w:literal, $add:ident, $sub:ident, $mul:ident, $div:ident, $sqrt:ident,
     $rsqrt:ident, $fma:ident, $gather:ident, $gather_rows:ident, $lt:ident, $le:ident,
     $select:ident, $round:ident,
     $lt_mask:ident, $pow2i:ident, $split:ident, $set1:ident,
     $loadu:ident, $storeu:ident, $xor:ident, $gather_bodies:ident
     $(, compress = $compress:ident)? $(, load_pairs3 = $load_pairs3:ident)?
     $(, pick16 = $pick16:ident)?) => {
        impl Add for $ty {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                // SAFETY: see the module docs (only reached on a CPU with the instructions).
                unsafe { $ty($add(self.0, o.0)) }
            }
        }
        impl Sub for $ty {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($sub(self.0, o.0)) }
            }
        }
        impl Mul for $ty {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($mul(self.0, o.0)) }
            }
        }
        impl Div for $ty {
            type Output = Self;
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($div(self.0, o.0)) }
            }
        }
        impl Neg for $ty {
            type Output = Self;
            #[inline(always)]
            fn neg(self) -> Self {
                // Flips the sign bit, as scalar negation does (also of zeros and NaNs).
                // SAFETY: see the module docs.
                unsafe { $ty($xor(self.0, $set1(-0.0))) }
            }
        }
        impl Lanes for $ty {
            const WIDTH: usize = $w;
            #[inline(always)]
            fn splat(x: f64) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($set1(x)) }
            }
            #[inline(always)]
            fn load(x: &[f64]) -> Self {
                let x = &x[..$w];
                // SAFETY: `x` has `$w` readable f64s (checked by the slice above); the
                // unaligned load has no alignment requirement. Instructions: module docs.
                unsafe { $ty($loadu(x.as_ptr())) }
            }
            #[inline(always)]
            fn store(self, out: &mut [f64]) {
                let out = &mut out[..$w];
                // SAFETY: `out` has `$w` writable f64s (checked above); unaligned store.
                unsafe { $storeu(out.as_mut_ptr(), self.0) }
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($sqrt(self.0)) }
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($rsqrt(self.0)) }
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                // SAFETY: see the module docs (FMA is detected with either set).
                unsafe { $ty($fma(self.0, a.0, b.0)) }
            }
            #[inline(always)]
            fn gather<const D: usize>(src: &[f64], at: &[usize]) -> [Self; D] {
                let at: &[usize; $w] = at[..$w].try_into().expect("WIDTH rows");
                let fits = at.iter().all(|&o| o <= src.len() && src.len() - o >= D);
                assert!(fits, "a gathered row is outside the source");
                let mut out = [Self::splat(0.0); D];
                for (d, o) in out.iter_mut().enumerate() {
                    // SAFETY: every address read, `src[at[l] + d]` with `d < D`, is inside
                    // `src` (checked just above); instructions: module docs.
                    *o = unsafe { $ty($gather(at, src.as_ptr().add(d))) };
                }
                out
            }
            #[inline(always)]
            fn gather_rows<const D: usize>(src: &[f64], row: Self) -> [Self; D] {
                let last = (src.len() / D).checked_sub(1).expect("a table of rows") as f64;
                let inside = row.lt_mask(Self::splat(last + 0.5))
                    & !row.lt_mask(Self::splat(-0.5));
                assert!(inside == (1u32 << $w) - 1, "a row outside the table");
                let mut out = [Self::splat(0.0); D];
                for (d, o) in out.iter_mut().enumerate() {
                    // SAFETY: every lane rounds to a row `r` in `0 ..= last` (checked just
                    // above: within half a row of that range, NaN excluded), so every
                    // address read, `src[r·D + d]` with `d < D`, is inside `src`;
                    // instructions: module docs.
                    *o = unsafe { $ty($gather_rows::<D>(row.0, src.as_ptr().add(d))) };
                }
                out
            }
            #[inline(always)]
            fn lt(self, other: Self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($lt(self.0, other.0)) }
            }
            #[inline(always)]
            fn le(self, other: Self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($le(self.0, other.0)) }
            }
            #[inline(always)]
            fn lt_mask(self, other: Self) -> u32 {
                // SAFETY: see the module docs.
                unsafe { $lt_mask(self.0, other.0) }
            }
            #[inline(always)]
            fn select(c: Self, a: Self, b: Self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($select(c.0, a.0, b.0)) }
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($round(self.0)) }
            }
            #[inline(always)]
            fn pow2i(self) -> Self {
                // SAFETY: see the module docs.
                unsafe { $ty($pow2i(self.0)) }
            }
            #[inline(always)]
            fn split_sqrt2(self) -> (Self, Self) {
                // SAFETY: see the module docs.
                let (m, k) = unsafe { $split(self.0) };
                ($ty(m), $ty(k))
            }
            $(
            #[inline(always)]
            fn pick16(table: &[f64; 16], k: Self) -> Self {
                // SAFETY: `table` is sixteen readable f64s; the permute reads no memory per
                // lane. Instructions: module docs.
                unsafe { $ty($pick16(table, k.0)) }
            }
            )?
            $(
            #[inline(always)]
            fn compress_store(self, mask: u32, out: &mut [f64]) {
                let out = &mut out[..$w];
                // SAFETY: `out` has `$w` writable f64s (checked above); unaligned store.
                // Instructions: module docs.
                unsafe { $storeu(out.as_mut_ptr(), $compress(mask, self.0)) }
            }
            )?
        }
        impl Loads for $ty {
            #[inline(always)]
            fn gather_bodies<const D: usize, const K: usize>(
                src: &[f64],
                terms: &[[u32; K]],
                k: usize,
            ) -> [Self; D] {
                $gather_bodies::<D, K>(src, terms, k)
            }
            $(
            #[inline(always)]
            fn load_pairs3<const K: usize>(
                src: &[f64],
                terms: &[[u32; K]],
            ) -> [[Self; 3]; 2] {
                $load_pairs3::<K>(src, terms)
            }
            )?
        }
    };
}

lanes!(
    F64x4,
    4,
    _mm256_add_pd,
    _mm256_sub_pd,
    _mm256_mul_pd,
    _mm256_div_pd,
    _mm256_sqrt_pd,
    rsqrt256,
    _mm256_fmadd_pd,
    gather256,
    gather_rows256,
    lt256,
    le256,
    select256,
    round256,
    lt_mask256,
    pow2i256,
    split_sqrt2_256,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_xor_pd,
    gather_bodies256,
    compress = compress256,
    pick16 = pick16_256
);

lanes!(
    F64x8,
    8,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_mul_pd,
    _mm512_div_pd,
    _mm512_sqrt_pd,
    rsqrt512,
    _mm512_fmadd_pd,
    gather512,
    gather_rows512,
    lt512,
    le512,
    select512,
    round512,
    lt_mask512,
    pow2i512,
    split_sqrt2_512,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    xor512,
    gather_bodies512,
    compress = compress512,
    load_pairs3 = load_pairs3_512,
    pick16 = pick16_512
);
