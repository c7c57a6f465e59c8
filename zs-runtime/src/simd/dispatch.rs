//! Which instruction set runs: [`detected`] once per process, capped by `ZS_SIMD`
//! ([`selected`]), and [`dispatch`], which runs lane-generic code ([`WithLanes`]) inside the
//! `#[target_feature]` entry of the chosen set (`super::x86`).

use std::sync::OnceLock;

use super::WithLanes;
#[cfg(target_arch = "x86_64")]
use super::x86;

/// An instruction set the lane code is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// One `f64` at a time.
    Scalar,
    /// 4 lanes (AVX2).
    Avx2,
    /// 8 lanes (AVX-512F and DQ).
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
            // AVX-512DQ with F: every AVX-512 CPU but the Xeon Phi.
            let avx512 = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq");
            if avx512 && fma {
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

/// Runs `code` with the lanes of [`selected`].
#[inline]
pub fn dispatch<W: WithLanes>(code: W) -> W::Output {
    dispatch_with(selected(), code)
}

/// Runs `f` inside the `#[target_feature]` entry of the selected instruction set
/// ([`selected`]), so that its plain loops over long vectors — a step's kicks and drifts, a
/// fingerprint — are vectorized for that set rather than for the target's baseline (two
/// lanes, no 64-bit vector multiply). They keep their bits: elementwise IEEE operations are
/// correctly rounded on any width, the compiler contracts no multiply-add, and it reorders
/// only exact reductions (integer sums, `&`, `|`). `f` and what it calls are compiled for the
/// set only when inlined there: mark closures `#[inline(always)]`.
#[inline]
pub fn widest<R>(f: impl FnOnce() -> R) -> R {
    struct Plain<F>(F);
    impl<R, F: FnOnce() -> R> WithLanes for Plain<F> {
        type Output = R;
        #[inline(always)]
        fn run<L: super::Loads>(self) -> R {
            (self.0)()
        }
    }
    dispatch(Plain(f))
}

/// Runs `code` with the lanes of `isa`, or of the widest available one below it.
#[inline]
pub fn dispatch_with<W: WithLanes>(isa: Isa, code: W) -> W::Output {
    let isa = isa.min(detected());
    #[cfg(target_arch = "x86_64")]
    {
        match isa {
            // SAFETY: `detected()` returned at least `Avx512`, so `is_x86_feature_detected!`
            // confirmed AVX-512F, AVX-512DQ and FMA on this CPU: the target-feature function's
            // instructions exist.
            Isa::Avx512 => return unsafe { x86::run_avx512(code) },
            // SAFETY: as above, with AVX2 and FMA confirmed (`detected()` ≥ `Avx2`).
            Isa::Avx2 => return unsafe { x86::run_avx2(code) },
            // One `f64` at a time, compiled for the target's baseline: a CPU without AVX2.
            // No copy of its own for CPUs with FMA but not AVX2 (all the lane code compiled
            // once more, for few CPUs): there `f64::mul_add` is libm's `fma`, the same bits.
            Isa::Scalar => {}
        }
    }
    let _ = isa;
    code.run::<f64>()
}
