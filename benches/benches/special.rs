//! The special functions of the lane kernels: `cargo bench -p zs-bench --bench special`
//! (BENCHMARKS.md, "The lanes' own exp, erf and erfc", and "ln on the lanes").
//!
//! - `erfc/lanes`, `erfc/scalar`: 4 096 values of `erfc` by `zs_runtime::simd::erfc` on the
//!   machine's widest lanes, and by the scalar function lane by lane (what the lane kernels
//!   called before), on `[0.3, 2.63]`: `αr` of a real-space Ewald pair of the SPC/E box (α =
//!   0.268 Å⁻¹, 1.1 Å ≤ r ≤ 9.8 Å), which takes all three of fdlibm's branches.
//! - `exp/lanes`, `exp/scalar`: `e^{−x²}` on the same values, the derivative's factor.
//! - `ln/lanes`, `ln/scalar`: `ln(1 − x²/8)`, in `[0.13, 0.99]`: a FENE bond's
//!   `ln(1 − r²/R₀²)` (R₀ = 1.5) over `r` from 0.16 to 1.39: the melt's bonds and more.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use zs_runtime::simd::{dispatch, Loads, WithLanes};

/// The sum of `f` over `x`, in blocks of the lanes.
struct Sum<'a> {
    x: &'a [f64],
    which: Which,
}

#[derive(Clone, Copy)]
enum Which {
    ErfcLanes,
    ErfcScalar,
    ExpLanes,
    ExpScalar,
    LnLanes,
    LnScalar,
}

impl WithLanes for Sum<'_> {
    type Output = f64;
    #[inline(always)]
    fn run<L: Loads>(self) -> f64 {
        let mut acc = L::splat(0.0);
        for block in self.x.chunks_exact(L::WIDTH) {
            let x = L::load(block);
            acc = acc
                + match self.which {
                    Which::ErfcLanes => zs_runtime::simd::erfc(x),
                    Which::ErfcScalar => x.map(zs_runtime::special::erfc),
                    Which::ExpLanes => zs_runtime::simd::exp(-(x * x)),
                    Which::ExpScalar => (-(x * x)).map(f64::exp),
                    Which::LnLanes => zs_runtime::simd::ln(L::splat(1.0) - x * x / L::splat(8.0)),
                    Which::LnScalar => (L::splat(1.0) - x * x / L::splat(8.0)).map(f64::ln),
                };
        }
        let mut out = [0.0; 8];
        acc.store(&mut out);
        out.iter().sum()
    }
}

fn special(c: &mut Criterion) {
    let mut state = 0x5EED_E4F0_u64;
    let x: Vec<f64> = (0..4096)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            0.3 + 2.33 * ((state >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    for (name, which) in [
        ("erfc/lanes", Which::ErfcLanes),
        ("erfc/scalar", Which::ErfcScalar),
        ("exp/lanes", Which::ExpLanes),
        ("exp/scalar", Which::ExpScalar),
        ("ln/lanes", Which::LnLanes),
        ("ln/scalar", Which::LnScalar),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                dispatch(Sum {
                    x: black_box(&x),
                    which,
                })
            })
        });
    }
}

criterion_group!(benches, special);
criterion_main!(benches);
