//! Special functions a `#[mechanical_system]` body may call besides `f64`'s methods, which the
//! macro differentiates to any order: the error function and its complement, for the
//! real-space part of an Ewald sum (`q_i q_j erfc(α r) / r`, Essmann et al. 1995, eq. 2.2).
//!
//! ```
//! use zs_runtime::special::{erf, erfc};
//! assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 1e-16);
//! // erfc keeps its relative accuracy where 1 − erf(x) has none left.
//! assert!((erfc(6.0) / 2.151_973_671_249_891_3e-17 - 1.0).abs() < 1e-14);
//! ```

/// The error function `erf(x) = 2/√π ∫₀ˣ e^{−t²} dt` (musl's, within about an ulp). Its
/// derivative is `2/√π e^{−x²}`.
#[inline]
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

/// The complementary error function `erfc(x) = 1 − erf(x)`, computed directly (no cancellation
/// for large `x`). Its derivative is `−2/√π e^{−x²}`.
#[inline]
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}
