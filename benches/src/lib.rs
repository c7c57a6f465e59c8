//! # zs-bench
//!
//! What the figures of `BENCHMARKS.md` are measured with: criterion benches (`benches/`),
//! harnesses for instruction counts and timings (`src/bin/`), scripts that fit slopes or run a
//! peer engine side by side (`*.py`, `peers/`), and the baselines they compare against
//! ([`hand_step`]).

pub mod hand_step;
