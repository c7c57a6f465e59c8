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
//! | [`Isa::Avx2`] | 4 × f64 | AVX2 + FMA (FMA is not used: see below) |
//! | [`Isa::Scalar`] | 1 (`f64`) | the target's baseline, and every remainder |
//!
//! No `-C target-cpu` is needed: the lane code is compiled once per instruction set inside a
//! `#[target_feature]` function and entered only after `is_x86_feature_detected!` said yes.
//! `ZS_SIMD=scalar|avx2|avx512` in the environment caps the choice (benchmarks, tests).
//!
//! **Same bits on every path.** Each lane performs exactly the operations of the scalar code in
//! the same order — additions, multiplications, divisions and square roots are correctly rounded
//! in IEEE 754 whether done one at a time or eight at a time, and no operation is fused (no FMA,
//! no reassociation). `powi` is the same chain of multiplications for every `L`, and transcendental
//! functions are evaluated lane by lane by the scalar `f64` function. So a term's outputs are the
//! same bits on the scalar, AVX2 and AVX-512 paths, and so are the sums the assembly makes of them.

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
    /// Writes the lanes to `out[0..WIDTH]`.
    ///
    /// # Panics
    /// If `out` is shorter than [`Lanes::WIDTH`].
    fn store(self, out: &mut [f64]);
    /// Correctly rounded square root, lane by lane.
    fn sqrt(self) -> Self;
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

impl Lanes for f64 {
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
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        f(self)
    }
    #[inline(always)]
    fn zip_map(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        f(self, other)
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
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
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
            // confirmed AVX-512F on this CPU: the target-feature function's instructions exist.
            Isa::Avx512 => return unsafe { x86::run_avx512(code) },
            // SAFETY: as above, with AVX2 and FMA confirmed (`detected()` ≥ `Avx2`).
            Isa::Avx2 => return unsafe { x86::run_avx2(code) },
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
         $set1:ident, $loadu:ident, $storeu:ident, $xor:ident) => {
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
        _mm256_set1_pd,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_xor_pd
    );
    lanes!(
        F64x8,
        8,
        _mm512_add_pd,
        _mm512_sub_pd,
        _mm512_mul_pd,
        _mm512_div_pd,
        _mm512_sqrt_pd,
        _mm512_set1_pd,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        xor512
    );

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

    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run_avx2<W: WithLanes>(code: W) -> W::Output {
        code.run::<F64x4>()
    }

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
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
                s.store(&mut buf);
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
