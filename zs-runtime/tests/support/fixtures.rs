//! Small systems and helpers several test modules use: one definition each.

use zs_runtime::Potential;

/// Free motion whose gradient is NaN beyond `q = 1` (a barrier evaluated outside its domain),
/// unit mass: a step that lands there must fail with a typed non-finite error.
pub struct NanBeyondOne;

impl Potential<1> for NanBeyondOne {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, _: &[f64; 1]) -> f64 {
        0.0
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [if q[0] > 1.0 { f64::NAN } else { 0.0 }]
    }
    fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[0.0]]
    }
    fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
}

/// No force, unit mass: free flight, `q` growing by `h·v` a step.
pub struct Free;

impl Potential<1> for Free {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, _: &[f64; 1]) -> f64 {
        0.0
    }
    fn gradient(&self, _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
    fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[0.0]]
    }
    fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
}

/// The unit harmonic oscillator `V = ½q²`, unit mass (ω = 1).
pub struct Spring;

impl Potential<1> for Spring {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        0.5 * q[0] * q[0]
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [q[0]]
    }
    fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] {
        [[1.0]]
    }
    fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] {
        [0.0]
    }
}

/// A xorshift generator for reproducible random test data (no dependency, same numbers on every
/// platform).
pub struct Rng(pub u64);

impl Rng {
    /// Uniform in [-1, 1).
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next() + 1.0) * 0.5 * n as f64) as usize % n
    }
}
