//! SIMD lanes for the generated kernels, chosen at run time.
//!
//! `#[mechanical_system]` emits each term form's `value_gradient` a second time generic in a
//! [`Lanes`] type (`Kernel::value_gradient_lanes`): the same straight-line code, every `f64`
//! replaced by `L` — one lane per term. The assembly ([`crate::assembly`]) evaluates blocks of
//! [`Lanes::WIDTH`] terms at once through [`dispatch`], which picks the widest lanes the machine
//! has when the program starts:
//!
//! | [`Isa`] | lanes | instructions |
//! |---|---|---|
//! | [`Isa::Avx512`] | 8 × f64 | AVX-512F + DQ (DQ's 64-bit multiply in the fingerprints) + FMA |
//! | [`Isa::Avx2`] | 4 × f64 | AVX2 + FMA (FMA only in [`rsqrt`]: see below) |
//! | [`Isa::Scalar`] | 1 (`f64`) | the target's baseline, and every remainder |
//!
//! No `-C target-cpu` is needed: the lane code is compiled once per instruction set inside a
//! `#[target_feature]` function and entered only after `is_x86_feature_detected!` said yes.
//! `ZS_SIMD=scalar|avx2|avx512` in the environment caps the choice (benchmarks, tests).
//!
//! **Same bits on every path.** Each lane performs exactly the operations of the scalar code in
//! the same order — additions, multiplications, divisions and square roots are correctly rounded
//! in IEEE 754 whether done one at a time or eight at a time, and nothing is reassociated or
//! contracted. The only fused multiply-adds are those [`rsqrt`] and [`erfc`] write out
//! ([`Lanes::mul_add`]: `f64::mul_add` on one lane, the FMA instruction on many — one correctly
//! rounded operation either way). `powi` is
//! the same chain of multiplications for every `L`; [`exp`], [`ln`], [`erf`] and [`erfc`] are
//! written once over `L` from those operations (`functions.rs`), and other transcendental
//! functions are evaluated lane by lane by the scalar `f64` function. So a term's outputs are the same
//! bits on the scalar, AVX2 and AVX-512 paths, and so are the sums the assembly makes of them
//! on one machine (a pair form under a cutoff goes by the pass the machine's widest lanes make
//! fastest, whatever lanes a system runs: `Assembled::with_pair_strategy`).
//!
//! **Not the scalar kernel's bits.** The lane kernels are derived in reciprocal mode (one
//! division per denominator), take `1/√x` by [`rsqrt`] and call the lanes' [`exp`], [`ln`],
//! [`erf`] and [`erfc`] (a few ulp from the scalar functions): they agree with the plain
//! `value_gradient` (used by the Hessian passes and the fixed-size path) to rounding, not to
//! the bit (the TIP3P cluster: 1e-13 relative, tested).
//!
//! The module by concern, as OpenMM's CPU platform keeps one file per instruction set behind one
//! dispatch function: this file the [`Lanes`] trait the generated kernels are written over;
//! `loads.rs` the engine's loads of a block of terms' bodies ([`Loads`], not for kernels);
//! `scalar.rs` the one-lane `f64` and [`rsqrt`]; `functions.rs` [`exp`], [`ln`], [`erf`] and
//! [`erfc`] on lanes; `dispatch.rs` [`Isa`] and [`dispatch`]; `x86/` the AVX2 (`avx2.rs`) and AVX-512 (`avx512.rs`) types and their `#[target_feature]`
//! entries.

use core::ops::{Add, Div, Mul, Neg, Sub};

mod dispatch;
mod erfcx_table;
mod functions;
mod loads;
mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use dispatch::{Isa, detected, dispatch, dispatch_with, selected, widest};
pub use functions::{erf, erfc, erfc_exp, exp, ln, root};
pub use loads::Loads;
pub(crate) use scalar::round_ties_even;
pub use scalar::rsqrt;

/// A vector of `WIDTH` `f64` lanes with IEEE arithmetic lane by lane.
///
/// Implemented by `f64` (one lane) and by the crate's AVX2 and AVX-512 types, which only
/// [`dispatch`] instantiates (after detecting the instructions): generic code written over
/// `L: Lanes` runs on any of them.
pub trait Lanes:
    Copy
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// Lanes per value.
    const WIDTH: usize;
    /// Every lane `x`.
    fn splat(x: f64) -> Self;
    /// Lanes `x[0..WIDTH]`.
    ///
    /// # Panics
    /// If `x` is shorter than [`Lanes::WIDTH`].
    fn load(x: &[f64]) -> Self;
    /// Lane `l` is `f(l)`, for `l` in `0..WIDTH` (a per-term value of a lane kernel: a table
    /// read at each lane's body types).
    #[inline(always)]
    fn from_fn(mut f: impl FnMut(usize) -> f64) -> Self {
        const { assert!(Self::WIDTH <= 8, "lanes of at most 8 f64") };
        let mut lanes = [0.0; 8];
        for (l, x) in lanes.iter_mut().enumerate().take(Self::WIDTH) {
            *x = f(l);
        }
        Self::load(&lanes)
    }
    /// Writes the lanes to `out[0..WIDTH]`.
    ///
    /// # Panics
    /// If `out` is shorter than [`Lanes::WIDTH`].
    fn store(self, out: &mut [f64]);
    /// `self · a + b` lane by lane with one rounding (a fused multiply-add: `f64::mul_add` on
    /// one lane, the FMA instruction on many — the same bits either way).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Correctly rounded square root, lane by lane.
    fn sqrt(self) -> Self;
    /// `1 / √x` lane by lane, within 1 ulp (not correctly rounded): see [`rsqrt`]. The same
    /// operations in every lane, so the same bits on every path.
    fn rsqrt(self) -> Self;
    /// `D` lane vectors from `WIDTH` rows of `src`: value `d`, lane `l` is `src[at[l] + d]`
    /// (a hardware gather: coordinates of `WIDTH` bodies into structure of arrays, with no
    /// round trip through memory).
    ///
    /// # Panics
    /// If `at` is shorter than [`Lanes::WIDTH`] or a row `at[l]..at[l] + D` is not in `src`.
    fn gather<const D: usize>(src: &[f64], at: &[usize]) -> [Self; D];
    /// `D` lane vectors from rows of `D` values of `src`: value `d`, lane `l` is
    /// `src[row_l · D + d]`, `row_l` lane `l` of `row` (integer-valued) — a table read at each
    /// lane's row with the indices kept in registers (no round trip through memory).
    ///
    /// # Panics
    /// If a lane of `row` is not in `[0, src.len() / D − 1]` (or is NaN).
    #[inline(always)]
    fn gather_rows<const D: usize>(src: &[f64], row: Self) -> [Self; D] {
        let mut rows = [0.0; 8];
        row.store(&mut rows);
        let last = (src.len() / D).checked_sub(1).expect("a table of rows") as f64;
        let at: [usize; 8] = core::array::from_fn(|l| {
            let r = rows[l.min(Self::WIDTH - 1)];
            assert!((0.0..=last).contains(&r), "row {r} outside the table");
            r as usize * D
        });
        Self::gather::<D>(src, &at[..Self::WIDTH])
    }
    /// `table[k]` in each lane whose `k` is an integer in `0..16` (a coefficient of one of
    /// sixteen polynomials, picked per lane; on AVX-512 from two registers, no memory read
    /// per lane). Other lanes (fractions, NaN, out of range) give an unspecified value, never
    /// a panic.
    #[inline(always)]
    fn pick16(table: &[f64; 16], k: Self) -> Self {
        let mut at = [0.0; 8];
        k.store(&mut at);
        Self::from_fn(|l| table[at[l] as usize & 15])
    }
    /// The indicator of `self < other`, lane by lane: `1.0` or `0.0` (`0.0` when either is NaN).
    fn lt(self, other: Self) -> Self;
    /// The indicator of `self ≤ other`, lane by lane.
    fn le(self, other: Self) -> Self;
    /// The lanes where `self < other` (ordered: not where either is NaN) as the bits of an
    /// integer, lane `l` at bit `l`: a filter's survivors, visited in lane order by their set
    /// bits (one compare and one move from the mask register, instead of a store and a scalar
    /// test per lane).
    fn lt_mask(self, other: Self) -> u32;
    /// The lanes whose bit is set in `mask` (lane `l` at bit `l`), in lane order, to
    /// `out[0..]`: a filter's survivors, packed. `out[count..WIDTH]` may be overwritten.
    ///
    /// # Panics
    /// If `out` is shorter than [`Lanes::WIDTH`].
    #[inline(always)]
    fn compress_store(self, mask: u32, out: &mut [f64]) {
        let out = &mut out[..Self::WIDTH];
        let mut lanes = [0.0; 8];
        self.store(&mut lanes);
        // Branch-free: every lane is written, and the next one lands on it unless kept.
        let mut m = 0;
        for (l, &x) in lanes[..Self::WIDTH].iter().enumerate() {
            out[m.min(Self::WIDTH - 1)] = x;
            m += ((mask >> l) & 1) as usize;
        }
    }
    /// `a` in the lanes where `c ≠ 0` (NaN included), else `b`: a piecewise term's branch,
    /// chosen lane by lane.
    fn select(c: Self, a: Self, b: Self) -> Self;
    /// The nearest integer, ties to even, lane by lane (`f64::round_ties_even`): the number of
    /// box lengths between a body and the nearest image of another.
    fn round_even(self) -> Self;
    /// `2^k` for integer-valued lanes `k` in `[−1022, 1023]`, exactly: a normal number made from
    /// its exponent bits (the scaling of [`exp`]'s reduced argument). Other lanes (fractions,
    /// NaN, out of range) give an unspecified value, never a panic.
    fn pow2i(self) -> Self;
    /// `(m, k)` with `self = m · 2^k` exactly, `m` in `[√2/2, √2)` and `k` an integer, for
    /// positive normal lanes (the reduction of [`ln`], musl's `log.c`: the fraction's leading
    /// 20 bits against `0x6a09e`). Bit operations, exact, so the same bits on every
    /// path. Other lanes (zero, subnormal, negative, infinite, NaN) give unspecified values,
    /// never a panic.
    #[inline(always)]
    fn split_sqrt2(self) -> (Self, Self) {
        let (mut m, mut k) = ([0.0; 8], [0.0; 8]);
        self.store(&mut m);
        for (m, k) in m[..Self::WIDTH].iter_mut().zip(&mut k) {
            (*m, *k) = scalar::split_sqrt2(*m);
        }
        (Self::load(&m), Self::load(&k))
    }
    /// `f` lane by lane (transcendental functions: the scalar `f64` function on each lane).
    #[inline(always)]
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        let mut buf = [0.0; 8];
        self.store(&mut buf);
        for x in &mut buf[..Self::WIDTH] {
            *x = f(*x);
        }
        Self::load(&buf)
    }
    /// `f(self, other)` lane by lane.
    #[inline(always)]
    fn zip_map(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        let (mut a, mut b) = ([0.0; 8], [0.0; 8]);
        self.store(&mut a);
        other.store(&mut b);
        for (x, y) in a[..Self::WIDTH].iter_mut().zip(&b) {
            *x = f(*x, *y);
        }
        Self::load(&a)
    }
    /// `self^n` by repeated squaring (the same multiplications for every `L`; `1 / x^|n|` for
    /// negative `n`).
    #[inline(always)]
    fn powi(self, n: i32) -> Self {
        let mut k = n.unsigned_abs();
        let mut base = self;
        let mut acc: Option<Self> = None;
        while k > 0 {
            if k & 1 == 1 {
                acc = Some(match acc {
                    None => base,
                    Some(a) => a * base,
                });
            }
            k >>= 1;
            if k > 0 {
                base = base * base;
            }
        }
        let p = acc.unwrap_or(Self::splat(1.0));
        if n < 0 { Self::splat(1.0) / p } else { p }
    }
}

/// Code generic in its lanes, run by [`dispatch`] with the lanes of the chosen instruction set.
pub trait WithLanes {
    /// What the code returns.
    type Output;
    /// The code, for lanes `L`. Mark it `#[inline(always)]`: it is compiled for the instruction
    /// set of `L` only when inlined into the `#[target_feature]` function that calls it.
    fn run<L: Loads>(self) -> Self::Output;
}

/// Vectors of at least this many `f64` (1 MiB) are read out of order with prefetches
/// ([`prefetch`]): a pair pass's partners and a sum's bodies, when the bodies are not in
/// spatial order, are anywhere in them, and a vector this long has left a core's L2 cache
/// (1–2 MB on the machines measured). Shorter ones stay in it, and the prefetches only cost.
pub(crate) const PREFETCH_FROM: usize = 1 << 17;

/// How far ahead of the item in hand a pass that reads out of order asks for memory
/// ([`prefetch`]), in items (terms of a pass, partials of a sum): far enough that the line
/// arrives from main memory before it is read (BENCHMARKS.md: 16 and 32 were slower).
pub(crate) const PREFETCH_AHEAD: usize = 64;

/// True when a vector of `len` `f64` is read out of order with prefetches ([`PREFETCH_FROM`]);
/// at every length in the crate's own tests, so that their small systems take that path too
/// (a prefetch changes no value).
#[inline(always)]
pub(crate) fn prefetches(len: usize) -> bool {
    cfg!(test) || len >= PREFETCH_FROM
}

/// Ask for the cache line at `p` to be brought into the caches (`prefetcht0`): a hint, with no
/// effect on any value. A no-op on other architectures.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` (SSE, in the x86-64 baseline) reads nothing into a register and
    // never faults, whatever the address: `p` need not point at valid memory.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
