//! The strategies of the properties, and the properties themselves.

use super::*;

/// `n` coordinates, a few dozen shallow ops, `n_pts` points in `[-1, 1]ⁿ`, a direction.
pub(super) fn shallow_case(
    n_pts: usize,
) -> impl Strategy<Value = (usize, Vec<Raw>, Vec<Vec<f64>>, Vec<f64>)> {
    (1usize..=4).prop_flat_map(move |n| {
        (
            Just(n),
            prop::collection::vec(
                (
                    any::<u8>(),
                    any::<u32>(),
                    any::<u32>(),
                    -2.0..2.0f64,
                    any::<u8>(),
                ),
                1..24,
            ),
            prop::collection::vec(prop::collection::vec(-1.0..1.0f64, n), n_pts),
            prop::collection::vec(-1.0..1.0f64, n),
        )
    })
}

/// Steps of the deep generator.
pub(super) const DEEP_STEPS: std::ops::Range<usize> = 100..160;
/// Points per deep case: values at all, derivatives at the first `DEEP_DERIV_PTS`.
pub(super) const DEEP_PTS: usize = 4;
pub(super) const DEEP_DERIV_PTS: usize = 2;

pub(super) fn deep_case() -> impl Strategy<Value = (usize, Vec<DeepRaw>, Vec<Vec<f64>>, Vec<f64>)> {
    (1usize..=4).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec(
                (
                    any::<u8>(),
                    any::<u32>(),
                    any::<u32>(),
                    any::<u8>(),
                    -2.0..2.0f64,
                ),
                DEEP_STEPS,
            ),
            prop::collection::vec(prop::collection::vec(-1.5..1.5f64, n), DEEP_PTS),
            prop::collection::vec(-1.0..1.0f64, n),
        )
    })
}

/// The shallow property's case: rejects overflowing cases and derivative checks at points
/// with a tanh argument beyond `TANH_MAX` (module docs).
pub(super) fn run_shallow(
    n: usize,
    raw: &[Raw],
    pts: &[Vec<f64>],
    dir: &[f64],
) -> Result<Worst, TestCaseError> {
    let mut ops = coords(n);
    extend_ops(&mut ops, raw);
    let out = ops.len() - 1;
    // Well-scaled values only (module docs: range, not rounding).
    for p in pts {
        let v = eval_ops::<f64>(&ops, p);
        prop_assume!(v.iter().all(|x| x.abs() <= 1e6), "value beyond 1e6");
    }
    check_case(n, &ops, out, pts, dir, 2, false)
}

/// The deep property's case, with the generator's guarantees asserted.
pub(super) fn run_deep(
    n: usize,
    raw: &[DeepRaw],
    pts: &[Vec<f64>],
    dir: &[f64],
) -> Result<(Worst, DeepShape), TestCaseError> {
    let (ops, out) = build_deep(n, pts, raw);
    let mut shape = DeepShape::of(&ops, out);
    prop_assert!(
        shape.depth >= raw.len() && shape.nodes >= 2 * raw.len(),
        "generator: depth {} / nodes {} for {} steps",
        shape.depth,
        shape.nodes,
        raw.len()
    );
    for p in pts {
        prop_assert!(
            tanh_in_range(&ops, p),
            "generator: tanh argument out of range"
        );
        let vals = eval_ops::<f64>(&ops, p);
        let (i, big) = vals.iter().enumerate().fold((0, 0.0f64), |(i, m), (j, x)| {
            if x.abs() > m {
                (j, x.abs())
            } else {
                (i, m)
            }
        });
        // Inside a step: (p³)³ ≤ 102.5⁹ (p = c + x², |x| ≤ 10) times an operand ≤ 100.
        prop_assert!(
            big <= 2e20,
            "generator: a value of {big:e} at op {i}: {:?}",
            &ops[i.saturating_sub(12)..=i]
        );
    }
    let w = check_case(n, &ops, out, pts, dir, DEEP_DERIV_PTS, true)?;
    shape.skipped = w.skipped;
    Ok((w, shape))
}

/// Size and shape of a deep case.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct DeepShape {
    /// Ops of the raw list.
    pub(super) nodes: usize,
    /// Longest path from a leaf to the output, in operations.
    pub(super) depth: usize,
    /// Ops used by two or more later ops.
    pub(super) shared: usize,
    /// Longest operand of a binary op, counted back from its user (how far sharing reaches).
    pub(super) reach: usize,
    /// Points skipped (an atan2 of an exact zero, module docs).
    pub(super) skipped: usize,
}

impl DeepShape {
    pub(super) fn of(ops: &[Op], out: usize) -> DeepShape {
        let mut uses = vec![0usize; ops.len()];
        let mut reach = 0;
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Un(_, a) | Op::Powi(a, _) => uses[a] += 1,
                Op::Bin(_, x, y) => {
                    uses[x] += 1;
                    uses[y] += 1;
                    reach = reach.max(i - x.min(y));
                }
                _ => {}
            }
        }
        DeepShape {
            nodes: ops.len(),
            depth: depths(ops)[out],
            shared: uses.iter().filter(|&&u| u >= 2).count(),
            reach,
            skipped: 0,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(1024),
        max_global_rejects: 1 << 16,
        ..ProptestConfig::default()
    })]

    /// Shallow random DAGs (≤ 24 random operations with dense use of special constants):
    /// values at 6 points, derivatives at 2, against the raw expression. About 4000
    /// cases/s.
    #[test]
    fn shallow_dags_match_num_dual((n, raw, pts, dir) in shallow_case(6)) {
        run_shallow(n, &raw, &pts, &dir)?;
    }
}

// Deep random DAGs (100–160 chained steps: 340–830 nodes, depth 250–560, every function,
// heavy sharing; see `build_deep`): values at 4 points, derivatives at 2, against the raw
// expression. 256 cases in two tests of 128 (each its own random cases), which the harness
// runs on two threads: one test of 256 was the last of this binary to finish, alone.
proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(128),
        max_global_rejects: 0,
        ..ProptestConfig::default()
    })]

    /// Deep random DAGs against num-dual: the first half of the cases.
    #[test]
    fn deep_dags_match_num_dual((n, raw, pts, dir) in deep_case()) {
        run_deep(n, &raw, &pts, &dir)?;
    }

    /// Deep random DAGs against num-dual: the second half of the cases.
    #[test]
    fn more_deep_dags_match_num_dual((n, raw, pts, dir) in deep_case()) {
        run_deep(n, &raw, &pts, &dir)?;
    }
}
