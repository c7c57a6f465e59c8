//! `#[mechanical_system]` support for split potentials and constraint curvature:
//! `stiff_potential` (the `ε⁻¹V1` of Tao & Owhadi eq. 19, for Z&Ss-stiff), `fast_potential`
//! (the `ε⁻²W` of the impulse paper, for the impulse family) and `Σ_c λ_c Hess g_c`
//! ([`ConstraintCurvature`]). Every generated method is checked against a closed form written
//! by hand and against central finite differences of the user's own (natively compiled)
//! functions, so a wrong derivative rule or a wrong role assignment fails here.

use zs_runtime::{
    ConstraintCurvature, FastPotential, MechanicalSystem, Potential, StiffSplit, mechanical_system,
};

// ---------------------------------------------------------------- helpers

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_vec<const N: usize>(got: &[f64; N], want: &[f64; N], tol: f64, what: &str) {
    for i in 0..N {
        assert!(
            close(got[i], want[i], tol),
            "{what}[{i}]: got {}, want {} (got {got:?}, want {want:?})",
            got[i],
            want[i]
        );
    }
}

fn assert_mat<const N: usize>(got: &[[f64; N]; N], want: &[[f64; N]; N], tol: f64, what: &str) {
    for r in 0..N {
        assert_vec(&got[r], &want[r], tol, &format!("{what}[{r}]"));
    }
}

fn shifted<const N: usize>(q: &[f64; N], moves: &[(usize, f64)]) -> [f64; N] {
    let mut x = *q;
    for &(i, d) in moves {
        x[i] += d;
    }
    x
}

/// Central differences `(f(q + h e_i) − f(q − h e_i)) / 2h`, error O(h²).
fn fd_gradient<const N: usize>(f: impl Fn(&[f64; N]) -> f64, q: &[f64; N]) -> [f64; N] {
    const H: f64 = 1e-5;
    std::array::from_fn(|i| (f(&shifted(q, &[(i, H)])) - f(&shifted(q, &[(i, -H)]))) / (2.0 * H))
}

/// Central second differences
/// `(f(q+he_i+he_j) − f(q+he_i−he_j) − f(q−he_i+he_j) + f(q−he_i−he_j)) / 4h²`, error O(h²)
/// plus rounding O(ε/h²) ≈ 1e-8 for h = 1e-4.
fn fd_hessian<const N: usize>(f: impl Fn(&[f64; N]) -> f64, q: &[f64; N]) -> [[f64; N]; N] {
    const H: f64 = 1e-4;
    std::array::from_fn(|i| {
        std::array::from_fn(|j| {
            (f(&shifted(q, &[(i, H), (j, H)]))
                - f(&shifted(q, &[(i, H), (j, -H)]))
                - f(&shifted(q, &[(i, -H), (j, H)]))
                + f(&shifted(q, &[(i, -H), (j, -H)])))
                / (4.0 * H * H)
        })
    })
}

/// Tolerance of the finite-difference gradients (relative to 1 + |value|).
const FD_TOL: f64 = 1e-6;
/// Tolerance of the finite-difference Hessians, relative to `1 + max_ij |H_ij|`: the rounding
/// error of [`fd_hessian`] is about `ε|f|/h²` for every entry, zeros included, so it scales
/// with the size of the matrix (here ≈ 3e-6 at `|H| ≈ 250`), not of each entry.
const FD_HESS_TOL: f64 = 1e-7;

fn assert_mat_fd<const N: usize>(got: &[[f64; N]; N], fd: &[[f64; N]; N], what: &str) {
    let scale = 1.0 + fd.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    for i in 0..N {
        for j in 0..N {
            assert!(
                (got[i][j] - fd[i][j]).abs() <= FD_HESS_TOL * scale,
                "{what}[{i}][{j}]: got {}, finite differences {} (scale {scale})",
                got[i][j],
                fd[i][j]
            );
        }
    }
}
/// Tolerance of the closed-form comparisons (same function, different rounding).
const EXACT_TOL: f64 = 1e-12;

// ---------------------------------------------------------------- a stiff split with constraints

/// `U = k q0² q1 + cos q2`, `V1 = ½s(q0 − q1)² + s q2⁴`,
/// `g = (|q|² − l², q0 q2 − sin q1)`.
pub struct Split {
    pub k: f64,
    pub s: f64,
    pub l: f64,
}

#[mechanical_system]
impl Split {
    fn masses(&self) -> [f64; 3] {
        [1.0, 2.0, 0.5]
    }
    fn potential(&self, q: &[f64; 3]) -> f64 {
        self.k * q[0] * q[0] * q[1] + q[2].cos()
    }
    fn stiff_potential(&self, q: &[f64; 3]) -> f64 {
        0.5 * self.s * (q[0] - q[1]).powi(2) + self.s * q[2].powi(4)
    }
    fn constraints(&self, q: &[f64; 3]) -> [f64; 2] {
        [
            q[0] * q[0] + q[1] * q[1] + q[2] * q[2] - self.l * self.l,
            q[0] * q[2] - q[1].sin(),
        ]
    }
}

const SPLIT: Split = Split {
    k: 0.7,
    s: 250.0,
    l: 1.2,
};

const POINTS3: [[f64; 3]; 3] = [[0.3, -0.8, 0.5], [1.1, 0.4, -0.6], [-0.2, 0.9, 1.3]];

impl Split {
    fn u_grad_hess(&self, q: &[f64; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
        let k = self.k;
        (
            [2.0 * k * q[0] * q[1], k * q[0] * q[0], -q[2].sin()],
            [
                [2.0 * k * q[1], 2.0 * k * q[0], 0.0],
                [2.0 * k * q[0], 0.0, 0.0],
                [0.0, 0.0, -q[2].cos()],
            ],
        )
    }
    fn v1_grad_hess(&self, q: &[f64; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
        let s = self.s;
        let d = q[0] - q[1];
        (
            [s * d, -s * d, 4.0 * s * q[2].powi(3)],
            [
                [s, -s, 0.0],
                [-s, s, 0.0],
                [0.0, 0.0, 12.0 * s * q[2] * q[2]],
            ],
        )
    }
    /// `(g, ∇g_c, Hess g_c)` by hand.
    #[allow(clippy::type_complexity)]
    fn g_derivatives(&self, q: &[f64; 3]) -> ([f64; 2], [[f64; 3]; 2], [[[f64; 3]; 3]; 2]) {
        let g = [
            q[0] * q[0] + q[1] * q[1] + q[2] * q[2] - self.l * self.l,
            q[0] * q[2] - q[1].sin(),
        ];
        let dg = [
            [2.0 * q[0], 2.0 * q[1], 2.0 * q[2]],
            [q[2], -q[1].cos(), q[0]],
        ];
        let hg = [
            [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]],
            [[0.0, 0.0, 1.0], [0.0, q[1].sin(), 0.0], [1.0, 0.0, 0.0]],
        ];
        (g, dg, hg)
    }
    /// `Hess ½ω²|g|² = ω² Σ_c (∇g_c ∇g_cᵀ + g_c Hess g_c)`.
    fn penalty_hessian(&self, omega: f64, q: &[f64; 3]) -> [[f64; 3]; 3] {
        let (g, dg, hg) = self.g_derivatives(q);
        let w2 = omega * omega;
        std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                (0..2)
                    .map(|c| w2 * (dg[c][i] * dg[c][j] + g[c] * hg[c][i][j]))
                    .sum()
            })
        })
    }
}

fn add<const N: usize>(a: &[[f64; N]; N], b: &[[f64; N]; N]) -> [[f64; N]; N] {
    std::array::from_fn(|i| std::array::from_fn(|j| a[i][j] + b[i][j]))
}

#[test]
fn total_potential_is_potential_plus_stiff_potential() {
    let sys = &SPLIT;
    for q in &POINTS3 {
        // `sys.potential(q)` is the user's inherent U; the trait's is U + V1.
        let total = sys.potential(q) + sys.stiff_potential(q);
        assert!(close(Potential::potential(sys, q), total, EXACT_TOL));
        assert!(
            (Potential::potential(sys, q) - sys.potential(q)).abs() > 1e-3,
            "the stiff part is not negligible at {q:?}, so the test can tell them apart"
        );
        let (gu, hu) = sys.u_grad_hess(q);
        let (g1, h1) = sys.v1_grad_hess(q);
        let grad: [f64; 3] = std::array::from_fn(|i| gu[i] + g1[i]);
        assert_vec(&sys.gradient(q), &grad, EXACT_TOL, "∇V");
        assert_mat(&sys.hessian(q), &add(&hu, &h1), EXACT_TOL, "Hess V");
        // And by finite differences of the user's functions.
        let f = |x: &[f64; 3]| sys.potential(x) + sys.stiff_potential(x);
        assert_vec(&sys.gradient(q), &fd_gradient(f, q), FD_TOL, "∇V (FD)");
        assert_mat_fd(&sys.hessian(q), &fd_hessian(f, q), "Hess V (FD)");
        // The penalized potential is the total plus the penalty.
        let g = sys.constraints(q);
        let omega = 3.0;
        let want = total + 0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1]);
        assert!(close(sys.penalized_potential(omega, q), want, EXACT_TOL));
    }
}

#[test]
fn stiff_hessian_closed_form_and_finite_differences() {
    let sys = &SPLIT;
    for q in &POINTS3 {
        let (_, h1) = sys.v1_grad_hess(q);
        assert_mat(&sys.stiff_hessian(q), &h1, EXACT_TOL, "Hess V1");
        let fd = fd_hessian(|x| sys.stiff_potential(x), q);
        assert_mat_fd(&sys.stiff_hessian(q), &fd, "Hess V1 (FD)");
        // Fused: total gradient and stiff Hessian (the same instructions, shared CSE).
        let (g, h) = sys.gradient_stiff_hessian(q);
        assert_eq!(g, sys.gradient(q));
        assert_eq!(h, sys.stiff_hessian(q));
    }
}

#[test]
fn penalized_stiff_hessian_is_stiff_plus_penalty() {
    let sys = &SPLIT;
    for omega in [0.5, 4.0, 60.0] {
        for q in &POINTS3 {
            let (_, h1) = sys.v1_grad_hess(q);
            let want = add(&h1, &sys.penalty_hessian(omega, q));
            let got = sys.penalized_stiff_hessian(omega, q);
            assert_mat(&got, &want, EXACT_TOL, "Hess(V1 + ½ω²|g|²)");
            let f = |x: &[f64; 3]| {
                let g = sys.constraints(x);
                sys.stiff_potential(x) + 0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1])
            };
            assert_mat_fd(&got, &fd_hessian(f, q), "Hess(V1 + ½ω²|g|²) (FD)");
            // It is Hess V_ω minus Hess V0 (V0 = the user's `potential`).
            let (_, hu) = sys.u_grad_hess(q);
            let ph = sys.penalized_hessian(omega, q);
            let diff: [[f64; 3]; 3] =
                std::array::from_fn(|i| std::array::from_fn(|j| ph[i][j] - hu[i][j]));
            assert_mat(&got, &diff, 1e-11, "Hess V_ω − Hess V0");
            // Fused with ∇V_ω.
            let (pg, psh) = sys.penalized_gradient_stiff_hessian(omega, q);
            assert_eq!(pg, sys.penalized_gradient(omega, q));
            assert_eq!(psh, got);
            // The `Penalized` view's StiffSplit is the same.
            let p = sys.penalized(omega);
            assert_eq!(p.stiff_hessian(q), got);
            assert_eq!(p.gradient_stiff_hessian(q), (pg, psh));
        }
    }
}

#[test]
fn weighted_constraint_hessian_closed_form_and_finite_differences() {
    let sys = &SPLIT;
    for lambda in [[1.0, 0.0], [0.0, 1.0], [0.37, -2.4]] {
        for q in &POINTS3 {
            let (_, _, hg) = sys.g_derivatives(q);
            let want: [[f64; 3]; 3] = std::array::from_fn(|i| {
                std::array::from_fn(|j| lambda[0] * hg[0][i][j] + lambda[1] * hg[1][i][j])
            });
            let got = sys.weighted_constraint_hessian(q, &lambda);
            assert_mat(&got, &want, EXACT_TOL, "Σ λ_c Hess g_c");
            let f = |x: &[f64; 3]| {
                let g = sys.constraints(x);
                lambda[0] * g[0] + lambda[1] * g[1]
            };
            assert_mat_fd(&got, &fd_hessian(f, q), "Σ λ_c Hess g_c (FD)");
        }
    }
}

// ---------------------------------------------------------------- no stiff_potential

/// A pendulum-like system with a nonlinear `potential` and no `stiff_potential`.
pub struct Plain {
    pub c: f64,
    pub l: f64,
}

#[mechanical_system]
impl Plain {
    fn potential(&self, q: &[f64; 4]) -> f64 {
        q[1] + q[3] + self.c * (q[0] * q[3]).powi(2) + (q[2] - q[1]).exp()
    }
    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        [
            q[0] * q[0] + q[1] * q[1] - self.l * self.l,
            (q[2] - q[0]).powi(2) + (q[3] - q[1]).powi(2) - self.l * self.l,
        ]
    }
}

const PLAIN: Plain = Plain { c: 0.8, l: 1.1 };
const POINTS4: [[f64; 4]; 3] = [
    [0.0, -1.0, 1.0, -2.0],
    [0.3, -0.9, 1.4, -1.7],
    [-0.8, 0.2, -0.1, 1.1],
];

/// The trait's provided default, `Hess V_ω − Hess V`, written out.
fn default_penalized_stiff_hessian<S: MechanicalSystem<4, M>, const M: usize>(
    sys: &S,
    omega: f64,
    q: &[f64; 4],
) -> [[f64; 4]; 4] {
    let (ph, h) = (sys.penalized_hessian(omega, q), sys.hessian(q));
    std::array::from_fn(|i| std::array::from_fn(|j| ph[i][j] - h[i][j]))
}

#[test]
fn without_stiff_potential_the_stiff_part_is_the_penalty() {
    let sys = &PLAIN;
    for q in &POINTS4 {
        assert_eq!(sys.stiff_hessian(q), [[0.0; 4]; 4]);
        let (g, h) = sys.gradient_stiff_hessian(q);
        assert_eq!(g, sys.gradient(q));
        assert_eq!(h, [[0.0; 4]; 4]);
        assert!(close(Potential::potential(sys, q), sys.potential(q), 0.0));
        for omega in [1.0, 20.0] {
            let got = sys.penalized_stiff_hessian(omega, q);
            let want = default_penalized_stiff_hessian(sys, omega, q);
            // Generated directly, the default by a subtraction of large numbers: rounding of
            // order ε·|Hess V_ω|.
            let scale = omega * omega * 10.0;
            for i in 0..4 {
                for j in 0..4 {
                    assert!(
                        (got[i][j] - want[i][j]).abs() <= 1e-13 * scale,
                        "[{i}][{j}] at ω = {omega}: {} vs {}",
                        got[i][j],
                        want[i][j]
                    );
                }
            }
            let f = |x: &[f64; 4]| {
                let g = sys.constraints(x);
                0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1])
            };
            assert_mat_fd(&got, &fd_hessian(f, q), "Hess ½ω²|g|² (FD)");
            let (pg, psh) = sys.penalized_gradient_stiff_hessian(omega, q);
            assert_eq!(pg, sys.penalized_gradient(omega, q));
            assert_eq!(psh, got);
        }
    }
}

/// Without constraints: M = 0, `Σ_c λ_c Hess g_c` is empty, the stiff part is V1 alone.
pub struct Unconstrained {
    pub s: f64,
}

#[mechanical_system]
impl Unconstrained {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[0].sin() * q[1]
    }
    fn stiff_potential(&self, q: &[f64; 2]) -> f64 {
        self.s * (q[0] * q[0] + q[1] * q[1] - 1.0).powi(2)
    }
}

#[test]
fn unconstrained_split() {
    let sys = Unconstrained { s: 40.0 };
    for q in [[0.3, 0.7], [-1.2, 0.4]] {
        assert_eq!(sys.weighted_constraint_hessian(&q, &[]), [[0.0; 2]; 2]);
        // Hess s(r − 1)² with r = |q|²: s(8 q qᵀ + 4(r − 1) I).
        let r = q[0] * q[0] + q[1] * q[1];
        let want: [[f64; 2]; 2] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                sys.s * (8.0 * q[i] * q[j] + if i == j { 4.0 * (r - 1.0) } else { 0.0 })
            })
        });
        assert_mat(&sys.stiff_hessian(&q), &want, EXACT_TOL, "Hess V1");
        assert_eq!(sys.penalized_stiff_hessian(2.0, &q), sys.stiff_hessian(&q));
        assert_eq!(
            sys.penalized_gradient_stiff_hessian(2.0, &q),
            sys.gradient_stiff_hessian(&q)
        );
        let total = |x: &[f64; 2]| sys.potential(x) + sys.stiff_potential(x);
        assert_vec(
            &sys.gradient(&q),
            &fd_gradient(total, &q),
            FD_TOL,
            "∇V (FD)",
        );
    }
}

// ---------------------------------------------------------------- fast potential

/// A particle near the unit circle: slow `U = q0 + ½q1²`, fast `W = e(|q|² − 1)²` (ε⁻²
/// folded into `e`), constraint `g = |q|² − 1` (where `W` is minimal).
pub struct Fast {
    pub e: f64,
}

#[mechanical_system]
impl Fast {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[0] + 0.5 * q[1] * q[1]
    }
    fn fast_potential(&self, q: &[f64; 2]) -> f64 {
        self.e * (q[0] * q[0] + q[1] * q[1] - 1.0).powi(2)
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] * q[0] + q[1] * q[1] - 1.0]
    }
}

#[test]
fn fast_potential_closed_forms_and_finite_differences() {
    let sys = Fast { e: 1e4 };
    for q in [[0.6, 0.85], [1.1, -0.2], [-0.3, 0.4]] {
        let r = q[0] * q[0] + q[1] * q[1] - 1.0;
        assert!(close(sys.fast_potential(&q), sys.e * r * r, EXACT_TOL));
        assert!(close(
            FastPotential::fast_potential(&sys, &q),
            sys.e * r * r,
            EXACT_TOL
        ));
        let grad = [4.0 * sys.e * r * q[0], 4.0 * sys.e * r * q[1]];
        assert_vec(&sys.fast_gradient(&q), &grad, EXACT_TOL, "∇W");
        let hess: [[f64; 2]; 2] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                sys.e * (8.0 * q[i] * q[j] + if i == j { 4.0 * r } else { 0.0 })
            })
        });
        assert_mat(&sys.fast_hessian(&q), &hess, EXACT_TOL, "Hess W");
        let w = |x: &[f64; 2]| sys.fast_potential(x);
        assert_vec(
            &sys.fast_gradient(&q),
            &fd_gradient(w, &q),
            FD_TOL,
            "∇W (FD)",
        );
        assert_mat_fd(&sys.fast_hessian(&q), &fd_hessian(w, &q), "Hess W (FD)");

        // `Potential` is the slow U alone, and V_ω adds only the penalty.
        let u = q[0] + 0.5 * q[1] * q[1];
        assert!(close(Potential::potential(&sys, &q), u, EXACT_TOL));
        assert_vec(&sys.gradient(&q), &[1.0, q[1]], EXACT_TOL, "∇U");
        assert_mat(
            &sys.hessian(&q),
            &[[0.0, 0.0], [0.0, 1.0]],
            EXACT_TOL,
            "Hess U",
        );
        let omega = 5.0;
        let want = u + 0.5 * omega * omega * r * r;
        assert!(close(sys.penalized_potential(omega, &q), want, EXACT_TOL));
        // No stiff part.
        assert_eq!(sys.stiff_hessian(&q), [[0.0; 2]; 2]);
        // Constraint curvature: λ Hess g = 2λ I.
        assert_mat(
            &sys.weighted_constraint_hessian(&q, &[1.5]),
            &[[3.0, 0.0], [0.0, 3.0]],
            EXACT_TOL,
            "λ Hess g",
        );
    }
}

/// All roles at once: `Potential` = U + V1, `FastPotential` = W, independent of each other.
pub struct AllRoles {
    pub s: f64,
    pub e: f64,
}

#[mechanical_system]
impl AllRoles {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        q[0] * q[1]
    }
    fn stiff_potential(&self, q: &[f64; 2]) -> f64 {
        self.s * (q[0] - q[1]).powi(2)
    }
    fn fast_potential(&self, q: &[f64; 2]) -> f64 {
        self.e * (q[0] + q[1]).powi(4)
    }
    fn constraints(&self, q: &[f64; 2]) -> [f64; 1] {
        [q[0] - q[1].powi(3)]
    }
}

#[test]
fn all_roles_together() {
    let sys = AllRoles { s: 30.0, e: 7.0 };
    for q in [[0.2f64, 0.5], [-0.7, 0.3]] {
        let (u, v1, w) = (
            q[0] * q[1],
            sys.s * (q[0] - q[1]).powi(2),
            sys.e * (q[0] + q[1]).powi(4),
        );
        assert!(close(Potential::potential(&sys, &q), u + v1, EXACT_TOL));
        assert!(close(FastPotential::fast_potential(&sys, &q), w, EXACT_TOL));
        let s2 = 2.0 * sys.s;
        assert_mat(
            &sys.stiff_hessian(&q),
            &[[s2, -s2], [-s2, s2]],
            EXACT_TOL,
            "Hess V1",
        );
        let total = |x: &[f64; 2]| sys.potential(x) + sys.stiff_potential(x);
        assert_mat_fd(&sys.hessian(&q), &fd_hessian(total, &q), "Hess V (FD)");
        let fast = |x: &[f64; 2]| sys.fast_potential(x);
        assert_mat_fd(&sys.fast_hessian(&q), &fd_hessian(fast, &q), "Hess W (FD)");
        // g = q0 − q1³: λ Hess g = [[0, 0], [0, −6λ q1]].
        let lambda = 0.9;
        assert_mat(
            &sys.weighted_constraint_hessian(&q, &[lambda]),
            &[[0.0, 0.0], [0.0, -6.0 * lambda * q[1]]],
            EXACT_TOL,
            "λ Hess g",
        );
    }
}

// ---------------------------------------------------------------- parameters of other types

/// Numeric fields that are not `f64` are parameters too, converted as the user's code does
/// (`f64::from(self.k)`, `self.n as f64`): the generated code reads them `as f64`.
pub struct Mixed {
    pub k: f32,
    pub n: u32,
}

#[mechanical_system]
impl Mixed {
    fn potential(&self, q: &[f64; 1]) -> f64 {
        f64::from(self.k) * q[0].powi(3) + self.n as f64 * q[0]
    }
}

#[test]
fn non_f64_numeric_fields_are_converted() {
    let sys = Mixed { k: 0.1, n: 3 };
    let k = f64::from(sys.k);
    for x in [-0.4, 1.3] {
        let q = [x];
        assert_eq!(Potential::potential(&sys, &q), sys.potential(&q));
        assert!(close(sys.gradient(&q)[0], 3.0 * k * x * x + 3.0, EXACT_TOL));
        assert!(close(sys.hessian(&q)[0][0], 6.0 * k * x, EXACT_TOL));
    }
}
