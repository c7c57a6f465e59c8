//! Tests of the dense backend: its Cholesky against `nalgebra`'s, its LU against elimination
//! written out, the condition estimate against exact condition numbers, every failure path.

// nalgebra's side in run-time-sized matrices: its algorithms are then compiled once, not once
// per fixed size `N` of the tests (BENCHMARKS.md, "The test command's time on the Intel VM").
use nalgebra::{DMatrix, DVector};

use super::cholesky::Cholesky;
use super::lu::{Lu, LuMatrix};
use super::{
    NON_FINITE_MATRIX, NON_FINITE_RHS, condition_estimate, solve, solve_general, solve_shifted,
};
use crate::linalg::{Factorization, Operand, SolveFailure, SolveOptions, singular_threshold};

/// The out-of-place form of [`solve_shifted`] the tests read best with.
fn shifted_solve<const N: usize>(
    m: &[f64; N],
    s: f64,
    h: &[[f64; N]; N],
    b: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    shifted_solve_with(m, s, h, b, &SolveOptions::default())
}

fn shifted_solve_with<const N: usize>(
    m: &[f64; N],
    s: f64,
    h: &[[f64; N]; N],
    b: &[f64; N],
    options: &SolveOptions,
) -> Result<([f64; N], Factorization), SolveFailure> {
    let mut x = *b;
    let how = solve_shifted(m, s, h, &mut x, options)?;
    Ok((x, how))
}

fn solve_array<const N: usize>(
    a: &[[f64; N]; N],
    b: &[f64; N],
) -> Result<([f64; N], Factorization), SolveFailure> {
    solve_array_with(a, b, &SolveOptions::default())
}

fn solve_array_with<const N: usize>(
    a: &[[f64; N]; N],
    b: &[f64; N],
    options: &SolveOptions,
) -> Result<([f64; N], Factorization), SolveFailure> {
    let mut x = *b;
    let how = solve(a, &mut x, options)?;
    Ok((x, how))
}

/// The row-major array of an `N × N` `nalgebra` matrix.
fn to_rows<const N: usize>(a: &DMatrix<f64>) -> [[f64; N]; N] {
    assert_eq!(a.shape(), (N, N));
    core::array::from_fn(|i| core::array::from_fn(|j| a[(i, j)]))
}

/// The Cholesky of a row-major symmetric array.
fn factor<const N: usize>(a: &[[f64; N]; N]) -> Option<Cholesky<N>> {
    let mut upper = 0.0;
    for (i, row) in a.iter().enumerate() {
        for v in &row[i + 1..] {
            upper += 0.0 * v;
        }
    }
    Cholesky::factor_with(|i, j| a[i][j], upper)
}

fn residual<const N: usize>(
    m: &[f64; N],
    s: f64,
    h: &[[f64; N]; N],
    x: &[f64; N],
    b: &[f64; N],
) -> f64 {
    (0..N)
        .map(|i| {
            let ax: f64 = m[i] * x[i] + (0..N).map(|j| s * h[i][j] * x[j]).sum::<f64>();
            (ax - b[i]).abs()
        })
        .fold(0.0, f64::max)
}

#[test]
fn spd_uses_cholesky() {
    let m = [1.0, 2.0, 3.0];
    let h = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
    let b = [1.0, -2.0, 0.5];
    let (x, how) = shifted_solve(&m, 0.1, &h, &b).unwrap();
    assert_eq!(how, Factorization::Cholesky);
    assert!(residual(&m, 0.1, &h, &x, &b) < 1e-14, "{x:?}");
}

#[test]
fn indefinite_falls_back_to_lu() {
    // M + H has eigenvalues of both signs: Cholesky must fail, LU must solve it.
    let m = [1.0, 1.0];
    let h = [[0.0, 3.0], [3.0, 0.0]];
    let b = [1.0, 2.0];
    let (x, how) = shifted_solve(&m, 1.0, &h, &b).unwrap();
    assert_eq!(how, Factorization::Lu);
    assert!(residual(&m, 1.0, &h, &x, &b) < 1e-14, "{x:?}");
    // Negative-definite also goes to LU.
    let h = [[-5.0, 0.0], [0.0, -7.0]];
    let (x, how) = shifted_solve(&m, 1.0, &h, &b).unwrap();
    assert_eq!(how, Factorization::Lu);
    assert!((x[0] + 0.25).abs() < 1e-15 && (x[1] + 2.0 / 6.0).abs() < 1e-15);
}

#[test]
fn lu_pivots_when_leading_entry_is_zero() {
    // a_00 = 0 exactly: LU without pivoting would divide by zero.
    let m = [1.0, 1.0, 1.0];
    let h = [[-1.0, 2.0, 0.0], [2.0, 1.0, 1.0], [0.0, 1.0, -3.0]];
    let b = [1.0, 0.0, -1.0];
    let (x, how) = shifted_solve(&m, 1.0, &h, &b).unwrap();
    assert_eq!(how, Factorization::Lu);
    assert!(residual(&m, 1.0, &h, &x, &b) < 1e-14, "{x:?}");
}

#[test]
fn singular_is_reported() {
    // 1 + 1·(-1) = 0 exactly in the first coordinate.
    let m = [1.0, 1.0];
    let h = [[-1.0, 0.0], [0.0, 1.0]];
    match shifted_solve(&m, 1.0, &h, &[1.0, 1.0]) {
        Err(SolveFailure::Singular {
            n,
            pivot,
            max_pivot,
        }) => {
            assert_eq!(n, 2);
            assert_eq!(pivot, 0.0);
            assert_eq!(max_pivot, 2.0);
        }
        other => panic!("expected Singular, got {other:?}"),
    }
    // Rank-deficient but no zero entry on the diagonal: [[2, 1], [4, 2]] after the shift.
    let h = [[1.0, 1.0], [4.0, 1.0]];
    assert!(matches!(
        shifted_solve(&m, 1.0, &h, &[1.0, 1.0]),
        Err(SolveFailure::Singular { .. })
    ));
    // SPD but singular to working precision: pivots ε and 1001, ratio ≈ 2e-19 < 2ε. Cholesky
    // succeeds, its pivot check rejects it, and the LU reports it.
    let h = [[-1.0 + f64::EPSILON, 0.0], [0.0, 1e3]];
    assert!(matches!(
        shifted_solve(&m, 1.0, &h, &[1.0, 1.0]),
        Err(SolveFailure::Singular { .. })
    ));
}

#[test]
fn non_finite_inputs_are_reported() {
    let m = [1.0, 1.0];
    let h = [[f64::NAN, 0.0], [0.0, 1.0]];
    assert_eq!(
        shifted_solve(&m, 1.0, &h, &[1.0, 1.0]),
        Err(SolveFailure::NonFinite(Operand::Matrix))
    );
    let h = [[1.0, 0.0], [0.0, 1.0]];
    assert_eq!(
        shifted_solve(&m, 1.0, &h, &[f64::INFINITY, 1.0]),
        Err(SolveFailure::NonFinite(Operand::RightHandSide))
    );
    // Finite inputs, overflowing solution.
    let r = shifted_solve(&[0.5, 0.5], 0.0, &h, &[f64::MAX, 1.0]);
    assert_eq!(r, Err(SolveFailure::NonFinite(Operand::Solution)));
}

/// Exact `κ₁ = ‖A‖₁‖A⁻¹‖₁` through nalgebra's inverse.
fn exact_condition(a: &DMatrix<f64>) -> f64 {
    let n = a.ncols();
    let norm1 = |m: &DMatrix<f64>| {
        (0..n)
            .map(|j| (0..n).map(|i| m[(i, j)].abs()).sum::<f64>())
            .fold(0.0, f64::max)
    };
    let inv = a.clone().try_inverse().expect("invertible");
    norm1(a) * norm1(&inv)
}

/// xorshift64*: a deterministic stream of uniform numbers in [-1, 1).
struct Xs(u64);
impl Xs {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let u = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        2.0 * (u as f64 / (1u64 << 53) as f64) - 1.0
    }
}

fn random_symmetric<const N: usize>(rng: &mut Xs, shift: f64) -> DMatrix<f64> {
    let mut a = DMatrix::<f64>::zeros(N, N);
    for i in 0..N {
        for j in 0..=i {
            let x = rng.next();
            a[(i, j)] = x;
            a[(j, i)] = x;
        }
        a[(i, i)] += shift;
    }
    a
}

/// Over 200 random symmetric matrices (half SPD, half indefinite): the worst `κ̂₁/κ₁` and
/// the fraction of exact estimates.
fn estimate_quality<const N: usize>(rng: &mut Xs) -> (f64, f64) {
    let (mut worst, mut exact_count) = (f64::INFINITY, 0);
    for case in 0..200 {
        // Alternate SPD (Cholesky path) and indefinite (LU path) matrices.
        let shift = if case % 2 == 0 { N as f64 + 0.5 } else { 0.0 };
        let a = random_symmetric::<N>(rng, shift);
        let exact = exact_condition(&a);
        let est = condition_estimate(&to_rows::<N>(&a));
        // A lower bound, up to rounding.
        assert!(est <= exact * (1.0 + 1e-9), "N = {N}: {est} > {exact}");
        worst = worst.min(est / exact);
        if est >= exact * (1.0 - 1e-9) {
            exact_count += 1;
        }
    }
    (worst, exact_count as f64 / 200.0)
}

#[test]
fn condition_estimate_is_a_tight_lower_bound() {
    let mut rng = Xs(0x9e37_79b9_7f4a_7c15);
    let q = [
        estimate_quality::<2>(&mut rng),
        estimate_quality::<3>(&mut rng),
        estimate_quality::<4>(&mut rng),
        estimate_quality::<6>(&mut rng),
        estimate_quality::<9>(&mut rng),
    ];
    eprintln!("(worst κ̂₁/κ₁, fraction exact), N = 2, 3, 4, 6, 9: {q:?}");
    // Higham (1988): rarely off by more than a factor 3. Measured: worst 0.44-0.64, exact
    // in 91% (N = 2) down to 48% (N = 9) of the cases.
    for (worst, exact) in q {
        assert!(worst >= 1.0 / 3.0 && exact >= 0.4, "{q:?}");
    }
    // Diagonal: exact, κ₁ = max|d| / min|d|.
    let d = DMatrix::from_diagonal(&DVector::from_vec(vec![2.0, -1e-6, 5.0]));
    assert_eq!(condition_estimate(&to_rows::<3>(&d)), 5.0 / 1e-6);
    // Singular: infinite.
    let s = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 4.0]);
    assert_eq!(condition_estimate(&to_rows::<2>(&s)), f64::INFINITY);
}

#[test]
fn condition_limit_rejects_near_singular_systems() {
    // M + s·H = diag(1, 1 - (1 - 1e-10)) = diag(1, 1e-10): κ₁ = 1e10, far from singular to
    // working precision (pivot ratio 1e-10 ≫ 2ε), so the default accepts it.
    let m = [1.0, 1.0];
    let h = [[0.0, 0.0], [0.0, -(1.0 - 1e-10)]];
    let b = [1.0, 1.0];
    let (x, how) = shifted_solve(&m, 1.0, &h, &b).unwrap();
    assert_eq!(how, Factorization::Cholesky);
    assert!((x[1] - 1e10).abs() < 1e-3 * 1e10);
    let kappa = 1.0 / (1.0 + -(1.0 - 1e-10));
    match shifted_solve_with(&m, 1.0, &h, &b, &SolveOptions::with_max_condition(1e8)) {
        Err(SolveFailure::IllConditioned {
            n,
            condition,
            limit,
        }) => {
            assert_eq!((n, limit), (2, 1e8));
            assert_eq!(condition, kappa);
        }
        other => panic!("expected IllConditioned, got {other:?}"),
    }
    // A limit above κ accepts it, with the same solution bits as without options.
    let (y, _) =
        shifted_solve_with(&m, 1.0, &h, &b, &SolveOptions::with_max_condition(1e11)).unwrap();
    assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits));
    // The LU path too: an indefinite near-singular matrix [[1, 0], [0, -1e-10]].
    let h = [[0.0, 0.0], [0.0, -(1.0 + 1e-10)]];
    match shifted_solve_with(&m, 1.0, &h, &b, &SolveOptions::with_max_condition(1e8)) {
        Err(SolveFailure::IllConditioned { condition, .. }) => {
            assert_eq!(condition, 1.0 / (1.0 + 1e-10 - 1.0));
        }
        other => panic!("expected IllConditioned, got {other:?}"),
    }
    // The error it becomes.
    let e = SolveFailure::IllConditioned {
        n: 2,
        condition: 1e10,
        limit: 1e8,
    }
    .at(7, 0.7);
    assert_eq!(e.step(), 7);
    assert_eq!(e.code(), "ill-conditioned");
}

#[test]
fn lu_factor_then_solve_matches_elimination_bit_for_bit() {
    // The LU path is bitwise what eliminating the right-hand side alongside gives, checked
    // against a direct transcription of that algorithm (on nalgebra matrices).
    let mut rng = Xs(42);
    for _ in 0..100 {
        let a = random_symmetric::<5>(&mut rng, 0.0);
        let rhs: [f64; 5] = core::array::from_fn(|_| rng.next());
        let mut b = rhs;
        Lu::factor(&to_rows::<5>(&a)).unwrap().solve(&mut b);
        let mut m = a;
        let mut c = DVector::from_column_slice(&rhs);
        for k in 0..5 {
            let p = (k..5)
                .max_by(|&i, &j| m[(i, k)].abs().total_cmp(&m[(j, k)].abs()).then(j.cmp(&i)))
                .unwrap();
            m.swap_rows(k, p);
            c.swap_rows(k, p);
            for i in k + 1..5 {
                let f = m[(i, k)] / m[(k, k)];
                m[(i, k)] = f;
                if f != 0.0 {
                    for j in k + 1..5 {
                        m[(i, j)] -= f * m[(k, j)];
                    }
                    c[i] -= f * c[k];
                }
            }
        }
        for i in (0..5).rev() {
            let mut s = c[i];
            for j in i + 1..5 {
                s -= m[(i, j)] * c[j];
            }
            c[i] = s / m[(i, i)];
        }
        let c: [f64; 5] = core::array::from_fn(|i| c[i]);
        assert_eq!(b.map(f64::to_bits), c.map(f64::to_bits));
    }
}

#[test]
fn run_time_lu_is_the_fixed_size_lu_and_rejects_singular_matrices() {
    // The variational step's `N + d`, `2N + 2d` systems use the run-time-sized matrix: the same
    // generic elimination, so the same bits as the stack LU on the same matrix.
    let mut rng = Xs(7);
    for _ in 0..20 {
        let a = to_rows::<4>(&random_symmetric::<4>(&mut rng, 0.0));
        let rhs: [f64; 4] = core::array::from_fn(|_| rng.next());
        let mut fixed = rhs;
        Lu::factor(&a).unwrap().solve(&mut fixed);
        let mut m = LuMatrix::zeros(4);
        for (i, row) in a.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                m.set(i, j, *v);
            }
        }
        m.factor().unwrap();
        let mut run_time = rhs;
        m.solve(&mut run_time);
        assert_eq!(fixed.map(f64::to_bits), run_time.map(f64::to_bits));
    }
    // [[0, 2, 1], [1, 1, 0], [3, 0, 1]] x = b with x = (1, −2, 3): needs a row exchange.
    let rows = [[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]];
    let x = [1.0, -2.0, 3.0];
    let mut m = LuMatrix::zeros(3);
    for (i, r) in rows.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            m.set(i, j, *v);
        }
    }
    let mut b: [f64; 3] =
        core::array::from_fn(|i| rows[i].iter().zip(&x).map(|(a, b)| a * b).sum());
    m.factor().unwrap();
    m.solve(&mut b);
    for (got, want) in b.iter().zip(&x) {
        assert!((got - want).abs() < 1e-14, "{got} vs {want}");
    }
    let mut singular = LuMatrix::zeros(2);
    singular.set(0, 0, 1.0);
    singular.set(0, 1, 2.0);
    singular.set(1, 0, 2.0);
    singular.set(1, 1, 4.0);
    assert!(matches!(
        singular.factor(),
        Err(SolveFailure::Singular { n: 2, .. })
    ));
    let mut nan = LuMatrix::zeros(2);
    nan.set(0, 0, f64::NAN);
    nan.set(1, 1, 1.0);
    assert!(nan.factor().is_err(), "a NaN pivot column is reported");
}

/// `B Bᵀ + δ I` with `B` uniform in [-1, 1) and `δ = 10^(-8u)`, `u` uniform in [0, 1): SPD,
/// with condition numbers up to ~1e9.
fn random_spd<const N: usize>(rng: &mut Xs) -> DMatrix<f64> {
    let b = DMatrix::from_fn(N, N, |_, _| rng.next());
    let delta = 10f64.powf(-4.0 * (rng.next() + 1.0));
    &b * b.transpose() + DMatrix::<f64>::identity(N, N) * delta
}

fn norm_inf<const N: usize>(x: &[f64; N]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// The decision of the former `solve_matrix`: `nalgebra`'s Cholesky succeeds and its pivots
/// `L_ii²` pass the ratio test; with the ratio `min/(N·ε·max)` (1 at the threshold).
fn nalgebra_cholesky_accepted<const N: usize>(
    a: &DMatrix<f64>,
) -> (Option<nalgebra::Cholesky<f64, nalgebra::Dyn>>, f64) {
    let Some(chol) = a.clone().cholesky() else {
        return (None, f64::NAN);
    };
    let l = chol.l_dirty();
    let p = (0..N).map(|i| l[(i, i)] * l[(i, i)]);
    let lo = p.clone().fold(f64::INFINITY, f64::min);
    let hi = p.fold(0.0, f64::max);
    let ratio = lo / (singular_threshold(N) * hi);
    let ok = N == 0 || (lo > 0.0 && lo >= singular_threshold(N) * hi);
    (ok.then_some(chol), ratio)
}

/// On random SPD matrices: the same accept decision as `nalgebra`'s `LLᵀ`; the factor is
/// `nalgebra`'s (`L_nalgebra = L D^½`) to rounding; the solution has a backward error of a
/// few ε and agrees with `nalgebra`'s and with the LU's within `κ₁·1e-13`.
fn cholesky_against_nalgebra_and_lu<const N: usize>(rng: &mut Xs) -> (usize, f64) {
    let mut worst = 0.0f64;
    let mut accepted = 0;
    for _ in 0..200 {
        let a = random_spd::<N>(rng);
        let rows = to_rows::<N>(&a);
        let b: [f64; N] = core::array::from_fn(|_| rng.next());
        let ours = factor(&rows);
        let (theirs, _) = nalgebra_cholesky_accepted::<N>(&a);
        assert_eq!(ours.is_some(), theirs.is_some(), "N = {N}: {a}");
        let (Some(ours), Some(theirs)) = (ours, theirs) else {
            continue;
        };
        accepted += 1;
        let kappa = exact_condition(&a);
        let l = theirs.l_dirty();
        for j in 0..N {
            let dj = 1.0 / ours.dinv[j];
            let ljj = l[(j, j)];
            assert!(
                (dj - ljj * ljj).abs() <= 1e-13 * kappa * ljj * ljj,
                "N = {N}"
            );
            for i in j + 1..N {
                let ours_ij = ours.l[i][j] * dj.sqrt();
                let scale = l[(j, j)].abs().max(l[(i, j)].abs());
                assert!(
                    (ours_ij - l[(i, j)]).abs() <= 1e-13 * kappa * scale,
                    "N = {N}: L[{i}][{j}] {ours_ij} vs {}",
                    l[(i, j)]
                );
            }
        }
        let mut expected = DVector::from_column_slice(&b);
        theirs.solve_mut(&mut expected);
        let (x, how) = solve_array(&rows, &b).unwrap();
        assert_eq!(how, Factorization::Cholesky);
        let diff: [f64; N] = core::array::from_fn(|i| x[i] - expected[i]);
        assert!(norm_inf(&diff) <= 1e-13 * kappa * norm_inf(&x), "N = {N}");
        // Backward error ‖b - Ax‖ / (‖A‖‖x‖), ∞-norms.
        let a_norm = (0..N)
            .map(|i| (0..N).map(|j| a[(i, j)].abs()).sum::<f64>())
            .fold(0.0, f64::max);
        let r: [f64; N] =
            core::array::from_fn(|i| b[i] - (0..N).map(|j| a[(i, j)] * x[j]).sum::<f64>());
        let backward = norm_inf(&r) / (a_norm * norm_inf(&x));
        assert!(backward <= 1e-13, "N = {N}: backward error {backward:e}");
        // Against the LU: the forward errors of both are bounded by κ times a few ε.
        let mut y = b;
        Lu::factor(&rows).unwrap().solve(&mut y);
        let diff: [f64; N] = core::array::from_fn(|i| x[i] - y[i]);
        let rel = norm_inf(&diff) / norm_inf(&y);
        assert!(
            rel <= 1e-13 * kappa,
            "N = {N}: {rel:e} > 1e-13·κ, κ = {kappa:e}"
        );
        worst = worst.max(rel / kappa);
    }
    (accepted, worst)
}

#[test]
fn ldlt_is_nalgebras_cholesky_to_rounding_and_agrees_with_lu() {
    let mut rng = Xs(0x2545_f491_4f6c_dd1d);
    let r = [
        cholesky_against_nalgebra_and_lu::<1>(&mut rng),
        cholesky_against_nalgebra_and_lu::<2>(&mut rng),
        cholesky_against_nalgebra_and_lu::<3>(&mut rng),
        cholesky_against_nalgebra_and_lu::<4>(&mut rng),
        cholesky_against_nalgebra_and_lu::<5>(&mut rng),
        cholesky_against_nalgebra_and_lu::<6>(&mut rng),
        cholesky_against_nalgebra_and_lu::<7>(&mut rng),
        cholesky_against_nalgebra_and_lu::<8>(&mut rng),
        cholesky_against_nalgebra_and_lu::<9>(&mut rng),
    ];
    eprintln!("(accepted of 200, worst |x_ldlt - x_lu| / |x_lu| / κ₁), N = 1..9: {r:?}");
    // Nearly all are accepted (δ ≥ 1e-8 keeps the pivot ratio above N·ε).
    assert!(r.iter().all(|&(n, _)| n >= 190), "{r:?}");
}

/// On random symmetric matrices — indefinite, SPD, and SPD with one pivot near `N·ε` of
/// the largest — the `LDLᵀ` is accepted exactly when `nalgebra`'s Cholesky was, except for
/// matrices whose pivot ratio is within a factor 100 of the threshold: there the smallest
/// pivot is itself at the rounding level (`~N·ε` relative, computed by cancellation), both
/// algorithms' values of it are mostly rounding error, and either decision is right; such
/// a matrix, when accepted, must still be solved with a backward error of a few ε. When not
/// accepted the solve is the LU's, bit for bit. Returns (LU fallbacks, borderline cases).
fn fallback_as_before<const N: usize>(rng: &mut Xs) -> (usize, usize) {
    let (mut lu_count, mut borderline) = (0, 0);
    for case in 0..300 {
        let a = match case % 3 {
            0 => random_symmetric::<N>(rng, 0.0),
            1 => random_symmetric::<N>(rng, N as f64 + 0.5),
            _ => {
                // A v vᵀ + ε-ish: one pivot of relative size around N·ε.
                let v = DVector::from_fn(N, |_, _| rng.next());
                let tiny = singular_threshold(N) * 10f64.powf(rng.next()) * v.norm_squared();
                &v * v.transpose()
                    + DMatrix::from_diagonal_element(N, N, tiny.max(f64::MIN_POSITIVE))
            }
        };
        let rows = to_rows::<N>(&a);
        let b: [f64; N] = core::array::from_fn(|_| rng.next());
        let (before, ratio) = nalgebra_cholesky_accepted::<N>(&a);
        let ours = factor(&rows).is_some();
        if (1e-2..=1e2).contains(&ratio) {
            borderline += 1;
        } else {
            assert_eq!(ours, before.is_some(), "N = {N}: ratio {ratio}, {a}");
        }
        if ours {
            let (x, how) = solve_array(&rows, &b).unwrap();
            assert_eq!(how, Factorization::Cholesky);
            let a_norm = (0..N)
                .map(|i| (0..N).map(|j| a[(i, j)].abs()).sum::<f64>())
                .fold(0.0, f64::max);
            let r: [f64; N] =
                core::array::from_fn(|i| b[i] - (0..N).map(|j| a[(i, j)] * x[j]).sum::<f64>());
            let backward = norm_inf(&r) / (a_norm * norm_inf(&x));
            assert!(backward <= 1e-13, "N = {N}: backward error {backward:e}");
            continue;
        }
        lu_count += 1;
        let lu = Lu::factor(&rows);
        match (solve_array(&rows, &b), lu) {
            (Ok((x, how)), Ok(lu)) => {
                assert_eq!(how, Factorization::Lu);
                let mut y = b;
                lu.solve(&mut y);
                assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits));
            }
            (Err(e), Err(f)) => assert_eq!(e, f),
            (r, lu) => panic!("N = {N}: {r:?} but LU {:?}", lu.err()),
        }
    }
    (lu_count, borderline)
}

#[test]
fn non_positive_definite_falls_back_to_lu_as_before() {
    let mut rng = Xs(7);
    let counts = [
        fallback_as_before::<1>(&mut rng),
        fallback_as_before::<2>(&mut rng),
        fallback_as_before::<3>(&mut rng),
        fallback_as_before::<4>(&mut rng),
        fallback_as_before::<5>(&mut rng),
        fallback_as_before::<6>(&mut rng),
        fallback_as_before::<7>(&mut rng),
        fallback_as_before::<8>(&mut rng),
        fallback_as_before::<9>(&mut rng),
    ];
    eprintln!("(LU fallbacks, borderline pivot ratios) of 300, N = 1..9: {counts:?}");
    // The indefinite third, at least, for N ≥ 2 (random symmetric, no shift); borderline
    // decisions are rare.
    assert!(counts[1..].iter().all(|&(c, _)| c >= 60), "{counts:?}");
    assert!(counts.iter().all(|&(_, b)| b <= 100), "{counts:?}");
}

#[test]
fn non_finite_entries_are_reported_on_every_path() {
    // SPD (Cholesky) and indefinite (LU) 3×3 matrices, each entry in turn non-finite: the
    // matrix is reported, with or without a condition limit, whatever the right-hand side.
    let spd = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
    let indefinite = [[0.0, 3.0, 0.0], [3.0, 0.0, 1.0], [0.0, 1.0, 1.0]];
    let b = [1.0, -2.0, 0.5];
    let limit = SolveOptions::with_max_condition(1e12);
    for base in [spd, indefinite] {
        for opts in [SolveOptions::default(), limit] {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                for i in 0..3 {
                    for j in 0..3 {
                        let mut a = base;
                        a[i][j] = bad;
                        assert_eq!(solve_array_with(&a, &b, &opts), Err(NON_FINITE_MATRIX));
                        let mut c = b;
                        c[j] = bad;
                        // Both: the matrix first.
                        assert_eq!(solve_array_with(&a, &c, &opts), Err(NON_FINITE_MATRIX));
                        assert_eq!(solve_array_with(&base, &c, &opts), Err(NON_FINITE_RHS));
                    }
                }
            }
        }
    }
    // The right-hand side before an ill-conditioned matrix (Cholesky path).
    let near = [[1.0, 0.0], [0.0, 1e-10]];
    assert_eq!(
        solve_array_with(
            &near,
            &[f64::NAN, 1.0],
            &SolveOptions::with_max_condition(1e8)
        ),
        Err(NON_FINITE_RHS)
    );
    // All-infinite diagonal: every Cholesky pivot is +∞ (formerly rejected up front).
    assert_eq!(
        solve_array(&[[f64::INFINITY]], &[1.0]),
        Err(NON_FINITE_MATRIX)
    );
}

/// [`solve_general`] out of place.
fn lu_solve<const N: usize>(a: [[f64; N]; N], b: [f64; N]) -> Result<[f64; N], SolveFailure> {
    let mut x = b;
    solve_general(&a, &mut x).map(|()| x)
}

#[test]
fn general_solve_reads_the_whole_nonsymmetric_matrix() {
    // SHAKE's Newton matrix: zero leading entry (needs the pivot) and nonsymmetric.
    let a = [[0.0, 2.0, 1.0], [3.0, 1.0, -1.0], [1.0, -4.0, 2.0]];
    let b = [1.0, 2.0, 3.0];
    let x = lu_solve(a, b).unwrap();
    for r in 0..3 {
        let ax: f64 = (0..3).map(|c| a[r][c] * x[c]).sum();
        assert!((ax - b[r]).abs() < 1e-14, "row {r}: {ax} vs {}", b[r]);
    }
    // The symmetric part alone would give a different answer: the solver must read the
    // upper triangle.
    let sym = [[0.0, 2.5, 1.0], [2.5, 1.0, -2.5], [1.0, -2.5, 2.0]];
    let y = lu_solve(sym, b).unwrap();
    assert!((0..3).any(|i| (x[i] - y[i]).abs() > 1e-3));
}

#[test]
fn general_solve_reports_singular() {
    assert!(matches!(
        lu_solve([[1.0, 2.0], [2.0, 4.0]], [1.0, 1.0]),
        Err(SolveFailure::Singular { n: 2, .. })
    ));
    assert!(matches!(
        lu_solve([[0.0, 0.0], [0.0, 1.0]], [1.0, 1.0]),
        Err(SolveFailure::Singular { pivot, .. }) if pivot == 0.0
    ));
    assert_eq!(lu_solve::<0>([], []), Ok([]));
}
