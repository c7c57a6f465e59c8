//! # zs-bench
//!
//! What the figures of `BENCHMARKS.md` are measured with: criterion benches (`benches/`),
//! harnesses for instruction counts and timings (`src/bin/`), scripts that fit slopes or run a
//! peer engine side by side (`*.py`, `peers/`), and the baselines they compare against
//! ([`hand_step`]).

pub mod hand_step;

use zs_runtime::assembly::PairStrategy;

/// The pair pass a harness's `PASS` argument forces (`Assembled::with_pair_strategy`): `rows`
/// full rows, `half` the half list's rows, `terms` the per-term pass; none or `auto` the
/// machine's choice.
pub fn pair_strategy(arg: Option<&str>) -> PairStrategy {
    match arg {
        None | Some("auto") => PairStrategy::Auto,
        Some("rows") => PairStrategy::FullRows,
        Some("half") => PairStrategy::HalfRows,
        Some("terms") => PairStrategy::PerTerm,
        Some(other) => panic!("PASS: auto, rows, half or terms, not {other}"),
    }
}

/// `n` charges of SPC/E's (−0.8476 on every third, 0.4238 on the others) at random in a cube
/// of `data.spce`'s density (4 500 atoms in 35.5 Å cubed), from a fixed xorshift stream: the
/// same box in every run and every harness that asks (`pme_cost`, `pme_scan`). Returns the
/// side, the positions (3 per charge) and the charges.
pub fn random_water_charges(n: usize) -> (f64, Vec<f64>, Vec<f64>) {
    let side = 35.5 * (n as f64 / 4500.0).cbrt();
    let mut s = 12345u64;
    let mut uniform = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let q: Vec<f64> = (0..3 * n).map(|_| uniform() * side).collect();
    let charges: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { -0.8476 } else { 0.4238 })
        .collect();
    (side, q, charges)
}
