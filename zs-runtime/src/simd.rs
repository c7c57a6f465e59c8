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
//! | [`Isa::Avx512`] | 8 × f64 | AVX-512F |
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
//! contracted. The only fused multiply-adds are those [`rsqrt`] writes out (`f64::mul_add` on
//! one lane, the FMA instruction on many: one correctly rounded operation either way). `powi` is
//! the same chain of multiplications for every `L`, and transcendental functions are evaluated
//! lane by lane by the scalar `f64` function. So a term's outputs are the same bits on the
//! scalar, AVX2 and AVX-512 paths, and so are the sums the assembly makes of them on one
//! machine (a pair form under a cutoff is summed by full rows or by the half list as the
//! machine's widest lanes make faster: `Assembled::with_full_rows`).
//!
//! **Not the scalar kernel's bits.** The lane kernels are derived in reciprocal mode (one
//! division per denominator) and take `1/√x` by [`rsqrt`]: they agree with the plain
//! `value_gradient` (used by the Hessian passes and the fixed-size path) to rounding, not to
//! the bit (the TIP3P cluster: 1e-13 relative, tested).

use core::ops::{Add, Div, Mul, Neg, Sub};
use std::sync::OnceLock;

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
    /// `D` lane vectors of body `k` of `WIDTH` terms: value `d`, lane `l` is
    /// `src[terms[l][k] · D + d]` (the coordinates of one body of each of a block's terms,
    /// their indices read straight from the term list).
    ///
    /// # Panics
    /// If `terms` is shorter than [`Lanes::WIDTH`] or a row is not in `src`.
    #[inline(always)]
    fn gather_bodies<const D: usize, const K: usize>(
        src: &[f64],
        terms: &[[u32; K]],
        k: usize,
    ) -> [Self; D] {
        gather_bodies_by_rows::<Self, D, K>(src, terms, k)
    }
    /// Bodies 0 and 1 of `WIDTH` pair terms (`K = 2`) whose bodies are three coordinates each:
    /// value `d`, lane `l` of body `k` is `src[terms[l][k]·3 + d]` (body 0 broadcast when it
    /// is one body in every lane: a neighbour-list row).
    ///
    /// # Panics
    /// If `K ≠ 2`, `terms` is shorter than [`Lanes::WIDTH`] or a row is not in `src`.
    #[inline(always)]
    fn load_pairs3<const K: usize>(src: &[f64], terms: &[[u32; K]]) -> [[Self; 3]; 2] {
        load_pairs3_by_bodies(src, terms)
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
        if n < 0 {
            Self::splat(1.0) / p
        } else {
            p
        }
    }
}

/// [`Lanes::gather_bodies`] through [`Lanes::gather`]: the rows' offsets computed lane by lane.
#[inline(always)]
fn gather_bodies_by_rows<L: Lanes, const D: usize, const K: usize>(
    src: &[f64],
    terms: &[[u32; K]],
    k: usize,
) -> [L; D] {
    let mut rows = [0usize; 8];
    for (r, t) in rows.iter_mut().zip(&terms[..L::WIDTH]) {
        *r = t[k] as usize * D;
    }
    L::gather::<D>(src, &rows[..L::WIDTH])
}

/// [`Lanes::load_pairs3`] body by body: a broadcast where every lane has the same body, else
/// [`Lanes::gather_bodies`].
#[inline(always)]
fn load_pairs3_by_bodies<L: Lanes, const K: usize>(src: &[f64], terms: &[[u32; K]]) -> [[L; 3]; 2] {
    assert_eq!(K, 2, "pair terms");
    let mut x = [[L::splat(0.0); 3]; 2];
    for (k, xk) in x.iter_mut().enumerate() {
        let first = terms[0][k];
        if terms[..L::WIDTH].iter().all(|t| t[k] == first) {
            let o = first as usize * 3;
            for (xd, &v) in xk.iter_mut().zip(&src[o..o + 3]) {
                *xd = L::splat(v);
            }
        } else {
            *xk = L::gather_bodies::<3, K>(src, terms, k);
        }
    }
    x
}

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
    fn gather<const D: usize>(src: &[f64], at: &[usize]) -> [Self; D] {
        let row = &src[at[0]..at[0] + D];
        core::array::from_fn(|d| row[d])
    }
    #[inline(always)]
    fn lt(self, other: Self) -> Self {
        if self < other {
            1.0
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn le(self, other: Self) -> Self {
        if self <= other {
            1.0
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn lt_mask(self, other: Self) -> u32 {
        u32::from(self < other)
    }
    #[inline(always)]
    fn select(c: Self, a: Self, b: Self) -> Self {
        if c != 0.0 {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn round_even(self) -> Self {
        round_ties_even(self)
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

/// The bits of the first guess of [`rsqrt`]: `MAGIC − bits(x)/2` is `1/√x` to within 3.5 %
/// for every normal `x` (the exponent halved and negated, the mantissa linearly interpolated;
/// Lomont's 64-bit constant).
const RSQRT_MAGIC: u64 = 0x5FE6_EB50_C7B5_37A9;

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
/// correctly rounded fused multiply-add, the instruction's bits: [`dispatch`] runs scalar code
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

/// An instruction set the lane code is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// One `f64` at a time.
    Scalar,
    /// 4 lanes (AVX2).
    Avx2,
    /// 8 lanes (AVX-512F).
    Avx512,
}

impl Isa {
    /// Lanes per value.
    pub fn width(self) -> usize {
        match self {
            Isa::Scalar => 1,
            Isa::Avx2 => 4,
            Isa::Avx512 => 8,
        }
    }

    /// The name `ZS_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// Every instruction set this machine runs, narrowest first.
    pub fn available() -> Vec<Isa> {
        [Isa::Scalar, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&i| i <= detected())
            .collect()
    }
}

/// The widest instruction set this machine runs (detected once).
pub fn detected() -> Isa {
    static DETECTED: OnceLock<Isa> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            // FMA: `rsqrt`'s fused steps (every AVX-512 and AVX2 CPU has it).
            let fma = std::arch::is_x86_feature_detected!("fma");
            if std::arch::is_x86_feature_detected!("avx512f") && fma {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") && fma {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    })
}

/// The instruction set [`dispatch`] uses: [`detected`], capped by `ZS_SIMD` when set (read once).
pub fn selected() -> Isa {
    static SELECTED: OnceLock<Isa> = OnceLock::new();
    *SELECTED.get_or_init(|| {
        let cap = match std::env::var("ZS_SIMD").as_deref() {
            Ok("scalar") => Isa::Scalar,
            Ok("avx2") => Isa::Avx2,
            _ => Isa::Avx512,
        };
        detected().min(cap)
    })
}

/// Code generic in its lanes, run by [`dispatch`] with the lanes of the chosen instruction set.
pub trait WithLanes {
    /// What the code returns.
    type Output;
    /// The code, for lanes `L`. Mark it `#[inline(always)]`: it is compiled for the instruction
    /// set of `L` only when inlined into the `#[target_feature]` function that calls it.
    fn run<L: Lanes>(self) -> Self::Output;
}

/// Runs `code` with the lanes of [`selected`].
#[inline]
pub fn dispatch<W: WithLanes>(code: W) -> W::Output {
    dispatch_with(selected(), code)
}

/// Runs `code` with the lanes of `isa`, or of the widest available one below it.
#[inline]
pub fn dispatch_with<W: WithLanes>(isa: Isa, code: W) -> W::Output {
    let isa = isa.min(detected());
    #[cfg(target_arch = "x86_64")]
    {
        match isa {
            // SAFETY: `detected()` returned at least `Avx512`, so `is_x86_feature_detected!`
            // confirmed AVX-512F and FMA on this CPU: the target-feature function's instructions exist.
            Isa::Avx512 => return unsafe { x86::run_avx512(code) },
            // SAFETY: as above, with AVX2 and FMA confirmed (`detected()` ≥ `Avx2`).
            Isa::Avx2 => return unsafe { x86::run_avx2(code) },
            // SAFETY: FMA confirmed just before the call.
            Isa::Scalar if std::arch::is_x86_feature_detected!("fma") => {
                return unsafe { x86::run_scalar_fma(code) };
            }
            Isa::Scalar => {}
        }
    }
    let _ = isa;
    code.run::<f64>()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The AVX2 and AVX-512 lane types.
    //!
    //! Soundness: the types are private to this module and a value of them is only ever made
    //! inside [`run_avx2`] / [`run_avx512`] (through `WithLanes::run::<F64x4>` and
    //! `::<F64x8>`), which [`super::dispatch_with`] calls only after run-time detection of the
    //! instructions. So every intrinsic below runs on a CPU that has it; that is the proof the
    //! `unsafe` blocks rely on.

    use super::{Lanes, WithLanes};
    use core::arch::x86_64::*;
    use core::ops::{Add, Div, Mul, Neg, Sub};

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
         $rsqrt:ident, $gather:ident, $lt:ident, $le:ident, $select:ident, $round:ident,
         $lt_mask:ident, $set1:ident,
         $loadu:ident, $storeu:ident, $xor:ident, $gather_bodies:ident
         $(, compress = $compress:ident)? $(, load_pairs3 = $load_pairs3:ident)?) => {
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
                fn gather_bodies<const D: usize, const K: usize>(
                    src: &[f64],
                    terms: &[[u32; K]],
                    k: usize,
                ) -> [Self; D] {
                    $gather_bodies::<D, K>(src, terms, k)
                }
                $(
                #[inline(always)]
                fn compress_store(self, mask: u32, out: &mut [f64]) {
                    let out = &mut out[..$w];
                    // SAFETY: `out` has `$w` writable f64s (checked above); unaligned store.
                    // Instructions: module docs.
                    unsafe { $storeu(out.as_mut_ptr(), $compress(mask, self.0)) }
                }
                )?
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
        gather256,
        lt256,
        le256,
        select256,
        round256,
        lt_mask256,
        _mm256_set1_pd,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_xor_pd,
        gather_bodies256,
        compress = compress256
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
        gather512,
        lt512,
        le512,
        select512,
        round512,
        lt_mask512,
        _mm512_set1_pd,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        xor512,
        gather_bodies512,
        compress = compress512,
        load_pairs3 = load_pairs3_512
    );

    /// [`Lanes::gather_bodies`] on 4 lanes: bodies of three coordinates by rows
    /// ([`rows3_256`]), others through [`Lanes::gather`].
    #[inline(always)]
    fn gather_bodies256<const D: usize, const K: usize>(
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
        super::gather_bodies_by_rows::<F64x4, D, K>(src, terms, k)
    }

    /// The coordinates `x, y, z` of body `k` of 4 terms whose bodies are three coordinates
    /// each: two 128-bit loads per body, `(x, y)` and `(y, z)`, paired across the register's
    /// halves and unpacked — 8 loads (4 folded into inserts) and 3 in-lane shuffles, where three
    /// 4-lane gathers cost 12 loads and a slow gather each (AMD Zen).
    ///
    /// # Safety
    /// `src[t[k]·3 .. t[k]·3 + 3]` must be in `src` for every term `t`; AVX.
    #[inline(always)]
    unsafe fn rows3_256<const K: usize>(
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

    /// [`Lanes::gather_bodies`] on 8 lanes. Bodies of three coordinates (any `K`: a pair's
    /// list, a row of partners) are loaded by rows ([`rows3_512`]). Otherwise a pair's list
    /// (`K = 2`: 16 indices, 64 bytes) is one load; the `k`-th index of each term is picked by a
    /// permutation, scaled by `D` and used as a 32-bit gather index — no index built lane by
    /// lane. Other `K` go through [`Lanes::gather`].
    #[inline(always)]
    fn gather_bodies512<const D: usize, const K: usize>(
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
            return super::gather_bodies_by_rows::<F64x8, D, K>(src, terms, k);
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
    fn load_pairs3_512<const K: usize>(src: &[f64], terms: &[[u32; K]]) -> [[F64x8; 3]; 2] {
        assert_eq!(K, 2, "pair terms");
        let terms: &[[u32; K]; 8] = terms[..8].try_into().expect("8 terms");
        // The last body whose row of four, `src[t·3 .. t·3 + 4]`, is in `src`.
        let Some(last) = src.len().checked_sub(4).map(|n| n / 3) else {
            return super::load_pairs3_by_bodies(src, terms);
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
            return super::load_pairs3_by_bodies(src, terms);
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
    unsafe fn rows3_512<const K: usize>(
        src: &[f64],
        terms: &[[u32; K]; 8],
        k: usize,
    ) -> [F64x8; 3] {
        let p = src.as_ptr();
        // SAFETY: the caller's contract.
        unsafe {
            let row = |l: usize| _mm256_loadu_pd(p.add(terms[l][k] as usize * 3));
            let pair = |a: usize, b: usize| {
                _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(row(a)), row(b))
            };
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
    /// unspecified): one AVX2 permute by a table of the 16 masks, where storing lane by lane
    /// cost 16 % of the alkane's gradient (4 dependent scalar stores per coordinate).
    #[inline(always)]
    unsafe fn compress256(mask: u32, a: __m256d) -> __m256d {
        let idx = &COMPRESS4[(mask & 15) as usize];
        // SAFETY: `idx` is 8 readable i32s (32 bytes; the unaligned load needs no alignment).
        // The caller is in `F64x4` code, which only runs with AVX2 (module docs).
        unsafe {
            let idx = _mm256_loadu_si256(idx.as_ptr().cast::<__m256i>());
            _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(a), idx))
        }
    }

    /// The lanes of `a` whose bit is set in `mask`, packed to the low lanes in order (the
    /// others zero): AVX-512F's register-to-register compress, which is fast where the store
    /// form is not.
    #[inline(always)]
    unsafe fn compress512(mask: u32, a: __m512d) -> __m512d {
        // SAFETY: the caller is in `F64x8` code, which only runs with AVX-512F (module docs).
        unsafe { _mm512_maskz_compress_pd(mask as __mmask8, a) }
    }

    /// `a XOR b` bitwise (AVX-512F has no `f64` XOR; the integer one does the same bits).
    #[inline(always)]
    unsafe fn xor512(a: __m512d, b: __m512d) -> __m512d {
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
    /// Every `base.add(at[l])` must be readable; AVX2 (module docs).
    #[inline(always)]
    unsafe fn gather256(at: &[usize; 4], base: *const f64) -> __m256d {
        // SAFETY: by the caller's contract; `usize` is `u64` on x86_64 (an unaligned load of
        // four of them as one 256-bit integer vector).
        unsafe {
            let idx = _mm256_loadu_si256(at.as_ptr().cast());
            _mm256_i64gather_pd::<8>(base, idx)
        }
    }

    /// Lane `l` = `*base.add(at[l])`.
    ///
    /// # Safety
    /// Every `base.add(at[l])` must be readable; AVX-512F (module docs).
    #[inline(always)]
    unsafe fn gather512(at: &[usize; 8], base: *const f64) -> __m512d {
        // SAFETY: as in `gather256`.
        unsafe {
            let idx = _mm512_loadu_si512(at.as_ptr().cast());
            _mm512_i64gather_pd::<8>(idx, base)
        }
    }

    /// `1.0` where `a < b` (ordered), else `0.0`.
    #[inline(always)]
    unsafe fn lt256(a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: AVX (module docs).
        unsafe { _mm256_and_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(a, b), _mm256_set1_pd(1.0)) }
    }

    /// Bit `l` set where lane `l` of `a` < that of `b` (ordered).
    #[inline(always)]
    unsafe fn lt_mask256(a: __m256d, b: __m256d) -> u32 {
        // SAFETY: AVX (module docs).
        unsafe { _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(a, b)) as u32 }
    }

    /// Bit `l` set where lane `l` of `a` < that of `b` (ordered).
    #[inline(always)]
    unsafe fn lt_mask512(a: __m512d, b: __m512d) -> u32 {
        // SAFETY: AVX-512F (module docs).
        unsafe { u32::from(_mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b)) }
    }

    /// `1.0` where `a ≤ b` (ordered), else `0.0`.
    #[inline(always)]
    unsafe fn le256(a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: AVX (module docs).
        unsafe { _mm256_and_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(a, b), _mm256_set1_pd(1.0)) }
    }

    /// `a` where `c ≠ 0` (unordered: NaN counts as nonzero, as `c != 0.0` does), else `b`.
    #[inline(always)]
    unsafe fn select256(c: __m256d, a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: AVX (module docs).
        unsafe {
            let m = _mm256_cmp_pd::<_CMP_NEQ_UQ>(c, _mm256_setzero_pd());
            _mm256_blendv_pd(b, a, m)
        }
    }

    /// Round to nearest, ties to even (the default rounding mode's rule), no exceptions.
    #[inline(always)]
    unsafe fn round256(a: __m256d) -> __m256d {
        // SAFETY: AVX (module docs).
        unsafe { _mm256_round_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }

    /// Round to nearest, ties to even, no exceptions.
    #[inline(always)]
    unsafe fn round512(a: __m512d) -> __m512d {
        // SAFETY: AVX-512F (module docs).
        unsafe { _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }

    /// `1.0` where `a < b` (ordered), else `0.0`.
    #[inline(always)]
    unsafe fn lt512(a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: AVX-512F (module docs).
        unsafe {
            let m = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b);
            _mm512_maskz_mov_pd(m, _mm512_set1_pd(1.0))
        }
    }

    /// `1.0` where `a ≤ b` (ordered), else `0.0`.
    #[inline(always)]
    unsafe fn le512(a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: AVX-512F (module docs).
        unsafe {
            let m = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, b);
            _mm512_maskz_mov_pd(m, _mm512_set1_pd(1.0))
        }
    }

    /// `a` where `c ≠ 0` (unordered), else `b`.
    #[inline(always)]
    unsafe fn select512(c: __m512d, a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: AVX-512F (module docs).
        unsafe {
            let m = _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(c, _mm512_setzero_pd());
            _mm512_mask_blend_pd(m, b, a)
        }
    }

    /// [`super::rsqrt`] on 4 lanes: the same operations, lane by lane.
    #[inline(always)]
    unsafe fn rsqrt256(x: __m256d) -> __m256d {
        // SAFETY: `F64x4` code, which only runs with AVX2 (module docs).
        unsafe {
            let h = _mm256_mul_pd(_mm256_set1_pd(0.5), x);
            let guess = _mm256_sub_epi64(
                _mm256_set1_epi64x(super::RSQRT_MAGIC as i64),
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

    /// [`super::rsqrt`] on 8 lanes: the same operations, lane by lane.
    #[inline(always)]
    unsafe fn rsqrt512(x: __m512d) -> __m512d {
        // SAFETY: `F64x8` code, which only runs with AVX-512F (module docs).
        unsafe {
            let h = _mm512_mul_pd(_mm512_set1_pd(0.5), x);
            let guess = _mm512_sub_epi64(
                _mm512_set1_epi64(super::RSQRT_MAGIC as i64),
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

    /// Scalar code with fused multiply-add in hardware (`f64::mul_add` in [`super::rsqrt`]).
    ///
    /// # Safety
    /// The CPU must have FMA.
    #[target_feature(enable = "fma")]
    pub(super) unsafe fn run_scalar_fma<W: WithLanes>(code: W) -> W::Output {
        code.run::<f64>()
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run_avx2<W: WithLanes>(code: W) -> W::Output {
        code.run::<F64x4>()
    }

    /// # Safety
    /// The CPU must have AVX-512F and FMA.
    #[target_feature(enable = "avx512f,fma")]
    pub(super) unsafe fn run_avx512<W: WithLanes>(code: W) -> W::Output {
        code.run::<F64x8>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little kernel with every kind of operation.
    struct Probe<'a> {
        x: &'a [f64],
        out: &'a mut Vec<f64>,
    }

    impl WithLanes for Probe<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Lanes>(self) {
            let w = L::WIDTH;
            let mut buf = vec![0.0; w];
            for block in self.x.chunks_exact(w) {
                let a = L::load(block);
                let b = a * a + L::splat(0.5);
                let r = (-(b.sqrt() / a) - L::splat(1.0 / 3.0)).powi(-3) + a.powi(5);
                let s = r.map(f64::exp).zip_map(a, f64::atan2);
                let s = L::select(a.lt(L::splat(0.3)), s, -s) + a.le(L::splat(0.1));
                let s = s + (a * L::splat(0.5)).round_even();
                s.store(&mut buf);
                // The compare's mask, lane by lane, added as 1000 (NaN lanes unset).
                let nan = L::select(a.lt(L::splat(-3.0)), L::splat(f64::NAN), a);
                let mask = nan.lt_mask(L::splat(0.2));
                for (l, x) in buf.iter_mut().enumerate() {
                    *x += 1000.0 * f64::from((mask >> l) & 1);
                }
                self.out.extend_from_slice(&buf);
            }
        }
    }

    #[test]
    fn every_instruction_set_gives_the_scalar_bits() {
        let x: Vec<f64> = (0..64).map(|k| 0.1 + 0.37 * k as f64 - 7.0).collect();
        let mut scalar = Vec::new();
        dispatch_with(
            Isa::Scalar,
            Probe {
                x: &x,
                out: &mut scalar,
            },
        );
        assert_eq!(scalar.len(), 64);
        let (set, unset) = (x.iter().zip(&scalar)).fold((0, 0), |(s, u), (&a, &v)| {
            let set = v > 500.0;
            // Set exactly where -3 ≤ a < 0.2 (below -3 the compared lane is NaN).
            assert_eq!(set, (-3.0..0.2).contains(&a), "a = {a}: {v}");
            (s + usize::from(set), u + usize::from(!set))
        });
        assert!(set > 0 && unset > 0, "{set} set, {unset} unset");
        for isa in Isa::available() {
            let mut out = Vec::new();
            dispatch_with(
                isa,
                Probe {
                    x: &x,
                    out: &mut out,
                },
            );
            let same = out
                .iter()
                .zip(&scalar)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{isa:?} differs from scalar: {out:?} vs {scalar:?}");
        }
    }

    /// Packs the values below 0.2 with [`Lanes::compress_store`], block by block.
    struct Pack<'a> {
        x: &'a [f64],
        out: &'a mut Vec<f64>,
    }

    impl WithLanes for Pack<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Lanes>(self) {
            let w = L::WIDTH;
            let mut packed = vec![f64::NAN; self.x.len() + 8];
            let mut m = 0;
            for block in self.x.chunks_exact(w) {
                let a = L::load(block);
                let mask = a.lt_mask(L::splat(0.2));
                a.compress_store(mask, &mut packed[m..]);
                m += mask.count_ones() as usize;
            }
            self.out.extend_from_slice(&packed[..m]);
        }
    }

    /// Every instruction set packs a filter's survivors in order, and nothing else.
    #[test]
    fn compress_store_packs_the_survivors_in_order_on_every_instruction_set() {
        let x: Vec<f64> = (0..64)
            .map(|k| ((k * 37) % 64) as f64 / 64.0 - 0.3)
            .collect();
        let expected: Vec<f64> = x.iter().copied().filter(|&a| a < 0.2).collect();
        assert!(expected.len() > 8 && expected.len() < 56);
        for isa in Isa::available() {
            let mut out = Vec::new();
            dispatch_with(
                isa,
                Pack {
                    x: &x,
                    out: &mut out,
                },
            );
            assert_eq!(out, expected, "{isa:?}");
        }
    }

    /// Gathers body `k` of each of a block's pair terms (`D = 3`) from a list.
    struct Bodies<'a> {
        q: &'a [f64],
        terms: &'a [[u32; 2]],
        out: &'a mut Vec<f64>,
        /// Through [`Lanes::load_pairs3`] rather than [`Lanes::gather_bodies`].
        pairs: bool,
    }

    impl WithLanes for Bodies<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Lanes>(self) {
            let mut buf = [0.0; 8];
            for block in self.terms.chunks_exact(L::WIDTH) {
                let both = if self.pairs {
                    L::load_pairs3::<2>(self.q, block)
                } else {
                    [0, 1].map(|k| L::gather_bodies::<3, 2>(self.q, block, k))
                };
                for lanes in both.into_iter().flatten() {
                    lanes.store(&mut buf);
                    self.out.extend_from_slice(&buf[..L::WIDTH]);
                }
            }
        }
    }

    /// Every instruction set reads `q[terms[l][k]·3 + d]` into lane `l` of value `d`, up to the
    /// last body of `q`, by [`Lanes::gather_bodies`] and by [`Lanes::load_pairs3`] (AVX-512:
    /// whole-row loads where a fourth coordinate is readable, the gathers in a block that holds
    /// the last body; a first body shared by a whole block broadcast).
    #[test]
    fn gather_bodies_reads_each_terms_body_on_every_instruction_set() {
        let q: Vec<f64> = (0..300).map(|i| i as f64 * 0.5 - 7.0).collect();
        let mut terms: Vec<[u32; 2]> = (0..64u32)
            .map(|t| [(t * 7) % 100, (t * 13 + 99) % 100])
            .collect();
        // Two neighbour-list rows, every first body the same: an inner body's, and the last
        // body's (its row of four is not in `q`).
        terms.extend((0..16u32).map(|t| [5, (t * 11 + 2) % 100]));
        terms.extend((0..16u32).map(|t| [99, t * 3]));
        assert!(terms.iter().any(|t| t[1] == 99));
        for (isa, pairs) in Isa::available()
            .into_iter()
            .flat_map(|i| [(i, false), (i, true)])
        {
            let mut out = Vec::new();
            dispatch_with(
                isa,
                Bodies {
                    q: &q,
                    terms: &terms,
                    out: &mut out,
                    pairs,
                },
            );
            let w = isa.width();
            let mut expected = Vec::new();
            for block in terms.chunks_exact(w) {
                for k in 0..2 {
                    for d in 0..3 {
                        expected.extend(block.iter().map(|t| q[t[k] as usize * 3 + d]));
                    }
                }
            }
            assert_eq!(out, expected, "{isa:?}, load_pairs3 {pairs}");
        }
    }

    /// [`rsqrt`] against 1/√x: within 1 ulp over 40 binades and at the edges (faithful); IEEE results where the guess is not used; the same bits on every path.
    #[test]
    fn rsqrt_is_within_one_ulp() {
        let mut worst = 0.0_f64;
        let mut x = 1e-20_f64;
        let mut xs = Vec::new();
        while x < 1e20 {
            xs.push(x);
            x *= 1.000_731;
        }
        xs.extend([f64::MIN_POSITIVE, f64::MAX, 1.0, 4.0, 0.25, 2.0]);
        for &x in &xs {
            let y = rsqrt(x);
            // The relative error of y is −r/2 to first order, r = 1 − x y² evaluated exactly
            // enough with fused products (y² = p + p' exactly, x p = t + t' exactly).
            let p = y * y;
            let p_lo = y.mul_add(y, -p);
            let t = x * p;
            let t_lo = x.mul_add(p, -t) + x * p_lo;
            let r = (1.0 - t) - t_lo;
            let ulp = f64::from_bits(y.to_bits() + 1) - y;
            worst = worst.max((0.5 * r * y).abs() / ulp);
        }
        assert!(worst < 1.0, "rsqrt off by {worst} ulp of 1/√x");
        assert_eq!(rsqrt(0.0), f64::INFINITY);
        assert_eq!(rsqrt(-0.0), f64::NEG_INFINITY);
        assert_eq!(rsqrt(f64::INFINITY), 0.0);
        assert!(rsqrt(-1.0).is_nan() && rsqrt(f64::NAN).is_nan());
        let sub = f64::MIN_POSITIVE / 4.0;
        assert_eq!(rsqrt(sub), 1.0 / sub.sqrt());

        struct Rsqrt<'a>(&'a [f64], &'a mut Vec<u64>);
        impl WithLanes for Rsqrt<'_> {
            type Output = ();
            #[inline(always)]
            fn run<L: Lanes>(self) {
                let mut buf = [0.0; 8];
                for block in self.0.chunks_exact(L::WIDTH) {
                    L::load(block).rsqrt().store(&mut buf);
                    self.1.extend(buf[..L::WIDTH].iter().map(|y| y.to_bits()));
                }
            }
        }
        // Mixed blocks: a special value among normal ones must not change its neighbours.
        let mut mixed: Vec<f64> = xs.iter().step_by(97).copied().take(56).collect();
        mixed.extend([0.0, -1.0, f64::INFINITY, f64::NAN, sub, 3.0, -0.0, 7.5]);
        mixed.truncate(64);
        let scalar: Vec<u64> = mixed.iter().map(|&x| rsqrt(x).to_bits()).collect();
        for isa in Isa::available() {
            let mut bits = Vec::new();
            dispatch_with(isa, Rsqrt(&mixed, &mut bits));
            assert_eq!(bits, scalar, "{isa:?}");
        }
    }

    #[test]
    fn powi_matches_repeated_multiplication() {
        for n in -7i32..=7 {
            let x = 1.1_f64;
            let direct = (0..n.unsigned_abs()).fold(1.0, |p, _| p * x);
            let expect = if n < 0 { 1.0 / direct } else { direct };
            assert!((Lanes::powi(x, n) - expect).abs() <= 4.0 * f64::EPSILON * expect.abs());
        }
        assert_eq!(Lanes::powi(3.0_f64, 0), 1.0);
    }

    #[test]
    fn negation_flips_the_sign_bit_on_every_path() {
        struct Neg0<'a>(&'a mut Vec<u64>);
        impl WithLanes for Neg0<'_> {
            type Output = ();
            #[inline(always)]
            fn run<L: Lanes>(self) {
                let mut buf = [0.0; 8];
                (-L::splat(0.0)).store(&mut buf);
                self.0.push(buf[0].to_bits());
            }
        }
        for isa in Isa::available() {
            let mut bits = Vec::new();
            dispatch_with(isa, Neg0(&mut bits));
            assert_eq!(bits, [(-0.0_f64).to_bits()], "{isa:?}");
        }
    }
}
