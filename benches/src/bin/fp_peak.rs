//! The machine's floating-point throughput, scalar and SIMD, to set the generated pair kernel's
//! cost beside (BENCHMARKS.md, "The generated pair kernel"):
//!
//! ```text
//! cargo run --release -p zs-bench --bin fp_peak
//! ```
//!
//! Each kernel runs 16 independent chains (more than latency × issue width, so the loop is bound
//! by throughput, not latency) for a fixed number of iterations and reports double-precision
//! flops per nanosecond, best of 5: multiply + add (2 flops per lane), fused multiply-add (2),
//! division and square root (1 each, the operations a Coulomb pair needs). Widths: scalar SSE2
//! (`_sd`), 2-lane SSE2 (`_pd`, what the default x86-64 target may use) and 4-lane AVX2/FMA (only
//! when the CPU has it; zs is built for the default target and does not use it). AVX-512
//! intrinsics need Rust 1.89, above the workspace's minimum version, and are left out.
//! x86-64 only.

#[cfg(target_arch = "x86_64")]
mod kernels {
    use std::arch::x86_64::*;
    use std::hint::black_box;

    pub const CHAINS: usize = 16;

    /// `x ← x·a + b` on every chain, scalar: 2 flops per chain and iteration.
    #[target_feature(enable = "sse2")]
    pub fn mul_add_scalar(iters: usize) -> f64 {
        let (a, b) = (
            _mm_set_sd(black_box(0.999_999)),
            _mm_set_sd(black_box(1e-7)),
        );
        let mut x = [_mm_set_sd(1.0); CHAINS];
        for _ in 0..iters {
            for xi in &mut x {
                *xi = _mm_add_sd(_mm_mul_sd(*xi, a), b);
            }
        }
        black_box(x.iter().map(|v| _mm_cvtsd_f64(*v)).sum())
    }

    /// The same on 2 lanes (SSE2 `_pd`): 4 flops per chain and iteration.
    #[target_feature(enable = "sse2")]
    pub fn mul_add_sse2(iters: usize) -> f64 {
        let (a, b) = (
            _mm_set1_pd(black_box(0.999_999)),
            _mm_set1_pd(black_box(1e-7)),
        );
        let mut x = [_mm_set1_pd(1.0); CHAINS];
        for _ in 0..iters {
            for xi in &mut x {
                *xi = _mm_add_pd(_mm_mul_pd(*xi, a), b);
            }
        }
        black_box(x.iter().map(|v| _mm_cvtsd_f64(*v)).sum())
    }

    /// `s ← s + c / x`, `x ← x + d` on every chain, scalar: the divisions are independent.
    #[target_feature(enable = "sse2")]
    pub fn div_scalar(iters: usize) -> f64 {
        let (c, d) = (_mm_set_sd(black_box(1.5)), _mm_set_sd(black_box(1e-9)));
        let mut x = [_mm_set_sd(1.0); CHAINS];
        let mut s = [_mm_setzero_pd(); CHAINS];
        for _ in 0..iters {
            for (xi, si) in x.iter_mut().zip(&mut s) {
                *si = _mm_add_sd(*si, _mm_div_sd(c, *xi));
                *xi = _mm_add_sd(*xi, d);
            }
        }
        black_box(s.iter().map(|v| _mm_cvtsd_f64(*v)).sum())
    }

    /// The same on 2 lanes.
    #[target_feature(enable = "sse2")]
    pub fn div_sse2(iters: usize) -> f64 {
        let (c, d) = (_mm_set1_pd(black_box(1.5)), _mm_set1_pd(black_box(1e-9)));
        let mut x = [_mm_set1_pd(1.0); CHAINS];
        let mut s = [_mm_setzero_pd(); CHAINS];
        for _ in 0..iters {
            for (xi, si) in x.iter_mut().zip(&mut s) {
                *si = _mm_add_pd(*si, _mm_div_pd(c, *xi));
                *xi = _mm_add_pd(*xi, d);
            }
        }
        black_box(s.iter().map(|v| _mm_cvtsd_f64(*v)).sum())
    }

    /// `s ← s + √x`, `x ← x + d`, scalar.
    #[target_feature(enable = "sse2")]
    pub fn sqrt_scalar(iters: usize) -> f64 {
        let d = _mm_set_sd(black_box(1e-9));
        let mut x = [_mm_set_sd(1.0); CHAINS];
        let mut s = [_mm_setzero_pd(); CHAINS];
        for _ in 0..iters {
            for (xi, si) in x.iter_mut().zip(&mut s) {
                *si = _mm_add_sd(*si, _mm_sqrt_sd(*xi, *xi));
                *xi = _mm_add_sd(*xi, d);
            }
        }
        black_box(s.iter().map(|v| _mm_cvtsd_f64(*v)).sum())
    }

    /// The same on 2 lanes.
    #[target_feature(enable = "sse2")]
    pub fn sqrt_sse2(iters: usize) -> f64 {
        let d = _mm_set1_pd(black_box(1e-9));
        let mut x = [_mm_set1_pd(1.0); CHAINS];
        let mut s = [_mm_setzero_pd(); CHAINS];
        for _ in 0..iters {
            for (xi, si) in x.iter_mut().zip(&mut s) {
                *si = _mm_add_pd(*si, _mm_sqrt_pd(*xi));
                *xi = _mm_add_pd(*xi, d);
            }
        }
        black_box(s.iter().map(|v| _mm_cvtsd_f64(*v)).sum())
    }

    /// Fused multiply-add on 4 lanes (AVX2 + FMA): 8 flops per chain and iteration.
    #[target_feature(enable = "avx2,fma")]
    pub fn fma_avx2(iters: usize) -> f64 {
        let (a, b) = (
            _mm256_set1_pd(black_box(0.999_999)),
            _mm256_set1_pd(black_box(1e-7)),
        );
        let mut x = [_mm256_set1_pd(1.0); CHAINS];
        for _ in 0..iters {
            for xi in &mut x {
                *xi = _mm256_fmadd_pd(*xi, a, b);
            }
        }
        black_box(x.iter().map(|v| _mm256_cvtsd_f64(*v)).sum())
    }

    /// Division on 4 lanes (AVX).
    #[target_feature(enable = "avx2,fma")]
    pub fn div_avx2(iters: usize) -> f64 {
        let (c, d) = (
            _mm256_set1_pd(black_box(1.5)),
            _mm256_set1_pd(black_box(1e-9)),
        );
        let mut x = [_mm256_set1_pd(1.0); CHAINS];
        let mut s = [_mm256_setzero_pd(); CHAINS];
        for _ in 0..iters {
            for (xi, si) in x.iter_mut().zip(&mut s) {
                *si = _mm256_add_pd(*si, _mm256_div_pd(c, *xi));
                *xi = _mm256_add_pd(*xi, d);
            }
        }
        black_box(s.iter().map(|v| _mm256_cvtsd_f64(*v)).sum())
    }

    /// Square root on 4 lanes (AVX).
    #[target_feature(enable = "avx2,fma")]
    pub fn sqrt_avx2(iters: usize) -> f64 {
        let d = _mm256_set1_pd(black_box(1e-9));
        let mut x = [_mm256_set1_pd(1.0); CHAINS];
        let mut s = [_mm256_setzero_pd(); CHAINS];
        for _ in 0..iters {
            for (xi, si) in x.iter_mut().zip(&mut s) {
                *si = _mm256_add_pd(*si, _mm256_sqrt_pd(*xi));
                *xi = _mm256_add_pd(*xi, d);
            }
        }
        black_box(s.iter().map(|v| _mm256_cvtsd_f64(*v)).sum())
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    use kernels::*;
    use std::time::Instant;

    let iters: usize = std::env::args()
        .nth(1)
        .map_or(20_000_000, |s| s.parse().expect("iterations"));
    let report = |name: &str, flops_per_chain_iter: f64, f: &dyn Fn(usize) -> f64| {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            std::hint::black_box(f(iters));
            best = best.min(t.elapsed().as_secs_f64());
        }
        let flops = flops_per_chain_iter * (CHAINS * iters) as f64;
        println!("{name:34} {:8.2} flop/ns", flops / best / 1e9);
    };
    println!("double precision, one thread, {CHAINS} independent chains, best of 5:");
    // SAFETY (the six calls below): they need only SSE2, which is part of the x86-64 baseline
    // (every x86-64 CPU has it); they take and return plain values and touch no memory through
    // pointers.
    report("multiply + add, scalar", 2.0, &|n| unsafe {
        mul_add_scalar(n)
    });
    report("multiply + add, SSE2 2 lanes", 4.0, &|n| unsafe {
        mul_add_sse2(n)
    });
    report("division, scalar", 1.0, &|n| unsafe { div_scalar(n) });
    report("division, SSE2 2 lanes", 2.0, &|n| unsafe { div_sse2(n) });
    report("square root, scalar", 1.0, &|n| unsafe { sqrt_scalar(n) });
    report("square root, SSE2 2 lanes", 2.0, &|n| unsafe {
        sqrt_sse2(n)
    });
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the three functions only need AVX2 and FMA, and the CPU was just checked to
        // have both; they take and return plain values and touch no memory through pointers.
        report("fused multiply-add, AVX2 4 lanes", 8.0, &|n| unsafe {
            fma_avx2(n)
        });
        // SAFETY: as above.
        report("division, AVX 4 lanes", 4.0, &|n| unsafe { div_avx2(n) });
        // SAFETY: as above.
        report("square root, AVX 4 lanes", 4.0, &|n| unsafe {
            sqrt_avx2(n)
        });
    } else {
        println!("(no AVX2/FMA on this CPU)");
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("fp_peak measures x86-64 instruction sets only");
}
