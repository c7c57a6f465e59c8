//! `#[mechanical_system]` end to end: the README's example compiles, its derivatives match
//! closed forms, and a system exercising the whole supported language matches finite
//! differences of its own (user-written, natively compiled) `potential` and `constraints`.

// The systems below deliberately use index loops and a final `return` (supported forms).
#![allow(clippy::needless_range_loop, clippy::needless_return)]

use zs_runtime::{MechanicalSystem, Potential, State, ZhangSkeel, mechanical_system};

// ---------------------------------------------------------------- the README's example

pub struct DoublePendulum {
    pub l1: f64,
    pub l2: f64,
    pub gravity: f64,
}

#[mechanical_system]
impl DoublePendulum {
    fn masses(&self) -> [f64; 4] {
        [1.0, 1.0, 1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 4]) -> f64 {
        -self.gravity * (q[1] + q[3])
    }
    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
        [
            x1 * x1 + y1 * y1 - self.l1 * self.l1,
            (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2,
        ]
    }
}

const PENDULUM: DoublePendulum = DoublePendulum {
    l1: 1.0,
    l2: 1.3,
    gravity: -9.81,
};

const POINTS: [[f64; 4]; 3] = [
    [0.0, -1.0, 1.0, -2.0],
    [0.3, -0.9, 1.4, -1.7],
    [-0.8, 0.2, -0.1, 1.1],
];

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

fn assert_mat<const N: usize, const M: usize>(
    got: &[[f64; N]; M],
    want: &[[f64; N]; M],
    tol: f64,
    what: &str,
) {
    for r in 0..M {
        assert_vec(&got[r], &want[r], tol, &format!("{what}[{r}]"));
    }
}

/// `∇g_c` and `Hess g_c` of the double pendulum's constraints, by hand.
fn pendulum_constraint_derivatives(q: &[f64; 4]) -> ([[f64; 4]; 2], [[[f64; 4]; 4]; 2]) {
    let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
    let (dx, dy) = (x2 - x1, y2 - y1);
    let grads = [
        [2.0 * x1, 2.0 * y1, 0.0, 0.0],
        [-2.0 * dx, -2.0 * dy, 2.0 * dx, 2.0 * dy],
    ];
    let h0 = [
        [2.0, 0.0, 0.0, 0.0],
        [0.0, 2.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
    ];
    let h1 = [
        [2.0, 0.0, -2.0, 0.0],
        [0.0, 2.0, 0.0, -2.0],
        [-2.0, 0.0, 2.0, 0.0],
        [0.0, -2.0, 0.0, 2.0],
    ];
    (grads, [h0, h1])
}

#[test]
fn double_pendulum_plain_derivatives() {
    let sys = &PENDULUM;
    assert_eq!(Potential::masses(sys), [1.0; 4]);
    for q in &POINTS {
        let v = -sys.gravity * (q[1] + q[3]);
        assert!(close(Potential::potential(sys, q), v, 1e-15));
        let g = -sys.gravity;
        assert_eq!(sys.gradient(q), [0.0, g, 0.0, g]);
        assert_eq!(sys.hessian(q), [[0.0; 4]; 4]);
        assert_eq!(sys.third_contraction(q, &[0.3, 0.1, -0.2, 0.7]), [0.0; 4]);
        assert_eq!(sys.gradient_hessian(q), (sys.gradient(q), sys.hessian(q)));
    }
}

#[test]
fn double_pendulum_constraints_and_jacobian() {
    let sys = &PENDULUM;
    for q in &POINTS {
        let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
        let g = [
            x1 * x1 + y1 * y1 - sys.l1 * sys.l1,
            (x2 - x1).powi(2) + (y2 - y1).powi(2) - sys.l2 * sys.l2,
        ];
        // The trait's constraints equal the user's inherent ones.
        assert_vec(&MechanicalSystem::constraints(sys, q), &g, 1e-15, "g");
        assert_vec(&sys.constraints(q), &g, 1e-15, "inherent g");
        let (grads, _) = pendulum_constraint_derivatives(q);
        assert_mat(&sys.constraint_jacobian(q), &grads, 1e-15, "G");
    }
}

#[test]
fn double_pendulum_penalized_closed_forms() {
    let sys = &PENDULUM;
    let a = [0.4, -0.3, 0.9, 0.2];
    for omega in [1.0, 7.5, 300.0] {
        let w2 = omega * omega;
        for q in &POINTS {
            let g = sys.constraints(q);
            let (dg, hg) = pendulum_constraint_derivatives(q);
            let v = -sys.gravity * (q[1] + q[3]);

            let want_v = v + 0.5 * w2 * (g[0] * g[0] + g[1] * g[1]);
            assert!(close(sys.penalized_potential(omega, q), want_v, 1e-13));

            // ∇(½ω²g²) = ω² g ∇g.
            let mut want_grad = sys.gradient(q);
            for c in 0..2 {
                for i in 0..4 {
                    want_grad[i] += w2 * g[c] * dg[c][i];
                }
            }
            assert_vec(&sys.penalized_gradient(omega, q), &want_grad, 1e-13, "∇V_ω");

            // Hess(½ω²g²) = ω²(∇g∇gᵀ + g H_g).
            let mut want_h = [[0.0; 4]; 4];
            for c in 0..2 {
                for i in 0..4 {
                    for j in 0..4 {
                        want_h[i][j] += w2 * (dg[c][i] * dg[c][j] + g[c] * hg[c][i][j]);
                    }
                }
            }
            assert_mat(&sys.penalized_hessian(omega, q), &want_h, 1e-13, "H_ω");

            // g quadratic: ∂³(½g²) a a = ∇g (aᵀH_g a) + 2 (H_g a)(∇g·a).
            let mut want_t = [0.0; 4];
            for c in 0..2 {
                let ha: Vec<f64> = (0..4)
                    .map(|i| (0..4).map(|j| hg[c][i][j] * a[j]).sum())
                    .collect();
                let aha: f64 = (0..4).map(|i| a[i] * ha[i]).sum();
                let dga: f64 = (0..4).map(|i| dg[c][i] * a[i]).sum();
                for i in 0..4 {
                    want_t[i] += w2 * (dg[c][i] * aha + 2.0 * ha[i] * dga);
                }
            }
            assert_vec(
                &sys.penalized_third_contraction(omega, q, &a),
                &want_t,
                1e-13,
                "T_ω",
            );

            let (pg, ph) = sys.penalized_gradient_hessian(omega, q);
            assert_vec(&pg, &want_grad, 1e-13, "fused ∇V_ω");
            assert_mat(&ph, &want_h, 1e-13, "fused H_ω");

            // The `Penalized` view is the same potential.
            let p = sys.penalized(omega);
            assert_eq!(p.potential(q), sys.penalized_potential(omega, q));
            assert_eq!(p.gradient(q), sys.penalized_gradient(omega, q));
            assert_eq!(p.hessian(q), sys.penalized_hessian(omega, q));
        }
    }
}

#[test]
fn double_pendulum_integrates() {
    // The README's usage: a few Zhang–Skeel steps on the penalized system.
    let sys = DoublePendulum {
        l1: 1.0,
        l2: 2f64.sqrt(),
        gravity: -1.0,
    };
    let mut state = State::new([0.0, -1.0, 1.0, -2.0], [0.0; 4]);
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    for _ in 0..100 {
        zs.step(&sys.penalized(20.0), &mut state).unwrap();
    }
    assert!(sys.constraints(&state.q).iter().all(|g| g.abs() < 0.05));
}

// ---------------------------------------------------------------- no constraints: M = 0

pub struct Spring {
    pub k: f64,
}

#[mechanical_system]
impl Spring {
    fn potential(&self, q: &[f64; 2]) -> f64 {
        0.5 * self.k * (q[0] - q[1]).powi(2)
    }
}

fn m_of<S: MechanicalSystem<N, M>, const N: usize, const M: usize>(_: &S) -> usize {
    M
}

#[test]
fn no_constraints_means_m_zero() {
    let s = Spring { k: 3.0 };
    assert_eq!(m_of(&s), 0);
    let q = [0.7, -0.2];
    let a = [0.1, 0.5];
    assert_eq!(MechanicalSystem::constraints(&s, &q), [0.0; 0]);
    assert_eq!(s.constraint_jacobian(&q).len(), 0);
    assert_eq!(s.masses(), [1.0, 1.0]);
    assert_vec(&s.gradient(&q), &[3.0 * 0.9, -3.0 * 0.9], 1e-15, "∇V");
    assert_eq!(s.hessian(&q), [[3.0, -3.0], [-3.0, 3.0]]);
    for omega in [0.0, 5.0] {
        assert_eq!(
            s.penalized_potential(omega, &q),
            Potential::potential(&s, &q)
        );
        assert_eq!(s.penalized_gradient(omega, &q), s.gradient(&q));
        assert_eq!(s.penalized_hessian(omega, &q), s.hessian(&q));
        assert_eq!(
            s.penalized_third_contraction(omega, &q, &a),
            s.third_contraction(&q, &a)
        );
        assert_eq!(
            s.penalized_gradient_hessian(omega, &q),
            s.gradient_hessian(&q)
        );
    }
}

// ---------------------------------------------------------------- the whole language

const OUTSIDE_K: f64 = 0.125;

/// Three particles in the plane (N = 6): Morse bonds through a helper method, a bending
/// term, an external field using every supported function, loops, arrays, tuples, consts,
/// constant `if`s, blocks, `return`, and two constraints.
pub struct Molecule {
    pub d: f64,
    pub a: f64,
    pub r0: f64,
    pub stiff: [f64; 3],
    pub field: Field,
}

pub struct Field {
    pub strength: f64,
}

#[mechanical_system]
impl Molecule {
    const PARTICLES: usize = 3;

    fn masses(&self) -> [f64; 6] {
        [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    }

    /// Morse pair potential (a helper: inlined).
    fn morse(&self, r: f64) -> f64 {
        let e = (-self.a * (r - self.r0)).exp();
        self.d * (1.0 - e) * (1.0 - e)
    }

    fn distance(&self, q: &[f64; 6], i: usize, j: usize) -> f64 {
        let (dx, dy) = (q[2 * j] - q[2 * i], q[2 * j + 1] - q[2 * i + 1]);
        (dx * dx + dy * dy).sqrt()
    }

    fn field(x: f64, y: f64) -> f64 {
        x.sin() * f64::cos(y)
            + (0.3 * x).tanh()
            + (1.0 + y * y).ln()
            + (0.1 * x).tan()
            + (0.2 * y).asin()
            + f64::acos(0.1 * x)
            + x.atan()
            + (x * x + 1.0).powf(0.75)
            + f64::powf(2.0 + y * y, 0.5)
            + x.atan2(y + 5.0)
            + (x * y).exp() * 1e-2
    }

    fn potential(&self, q: &[f64; 6]) -> f64 {
        use std::f64::consts::PI;
        const BONDS: [(usize, usize); 2] = [(0, 1), (1, 2)];
        let mut v = 0.0;
        // Bonds.
        for b in 0..2 {
            let (i, j) = BONDS[b];
            v += self.morse(self.distance(q, i, j));
        }
        // Bending around particle 1, through the angle (acos of the cosine).
        let u = [q[0] - q[2], q[1] - q[3]];
        let w = [q[4] - q[2], q[5] - q[3]];
        let cos_theta =
            (u[0] * w[0] + u[1] * w[1]) / (self.distance(q, 0, 1) * self.distance(q, 1, 2));
        let theta = cos_theta.acos();
        v += 0.5 * self.stiff[1] * (theta - 2.0 * PI / 3.0).powi(2);
        // Per-particle wells (constant `if` on the loop variable).
        let mut s = [[0.0; 2]; 3];
        for p in 0..Self::PARTICLES {
            for c in 0..2 {
                s[p][c] = q[2 * p + c] - (p as f64) * 0.5;
                if c == 1 {
                    s[p][c] *= 2.0;
                }
            }
            let r2 = { s[p][0] * s[p][0] + s[p][1] * s[p][1] };
            v += self.stiff[p] * r2 / (p + 1) as f64;
        }
        // The external field on every particle.
        for p in 0..=2 {
            v += self.field.strength * Self::field(q[2 * p], q[2 * p + 1]);
        }
        // Pairwise soft repulsion, upper triangle.
        for i in 0..3 {
            for j in 0..3 {
                if i < j {
                    let r = self.distance(q, i, j);
                    v += OUTSIDE_K * (r * r + 1.0).powi(-3);
                }
            }
        }
        return v + core::f64::consts::E * 1e-3;
    }

    fn constraints(&self, q: &[f64; 6]) -> [f64; 2] {
        let r = self.distance(q, 0, 2);
        let mut g = [0.0; 2];
        g[0] = r * r - 4.0;
        g[1] = q[1].sin() + q[0] * q[5] - 0.2;
        g
    }
}

const MOLECULE: Molecule = Molecule {
    d: 1.5,
    a: 1.2,
    r0: 1.0,
    stiff: [0.4, 0.7, 0.2],
    field: Field { strength: 0.3 },
};

const MOL_POINTS: [[f64; 6]; 3] = [
    [0.1, 0.2, 1.05, 0.1, 1.9, 0.6],
    [-0.3, 0.4, 0.8, -0.2, 1.7, 0.9],
    [0.2, -0.5, 1.2, 0.3, 2.1, -0.4],
];

const STEP: f64 = 1e-5;

/// Central differences of a scalar function.
fn fd_gradient<const N: usize>(f: impl Fn(&[f64; N]) -> f64, q: &[f64; N]) -> [f64; N] {
    std::array::from_fn(|i| {
        let (mut p, mut m) = (*q, *q);
        p[i] += STEP;
        m[i] -= STEP;
        (f(&p) - f(&m)) / (2.0 * STEP)
    })
}

/// Central differences of a vector function along `dir`.
fn fd_directional<const N: usize, const K: usize>(
    f: impl Fn(&[f64; N]) -> [f64; K],
    q: &[f64; N],
    dir: &[f64; N],
) -> [f64; K] {
    let p: [f64; N] = std::array::from_fn(|i| q[i] + STEP * dir[i]);
    let m: [f64; N] = std::array::from_fn(|i| q[i] - STEP * dir[i]);
    let (fp, fm) = (f(&p), f(&m));
    std::array::from_fn(|k| (fp[k] - fm[k]) / (2.0 * STEP))
}

fn unit<const N: usize>(i: usize) -> [f64; N] {
    std::array::from_fn(|j| if i == j { 1.0 } else { 0.0 })
}

fn mat_vec<const N: usize>(h: &[[f64; N]; N], a: &[f64; N]) -> [f64; N] {
    std::array::from_fn(|i| (0..N).map(|j| h[i][j] * a[j]).sum())
}

/// Checks the generated derivatives of a `Potential` against finite differences of
/// `reference` (the user's own code), each derivative against differences of the previous one.
fn check_against_fd<P: Potential<N>, const N: usize>(
    p: &P,
    reference: impl Fn(&[f64; N]) -> f64,
    q: &[f64; N],
    what: &str,
) {
    let tol = 1e-6;
    assert!(
        close(p.potential(q), reference(q), 1e-12),
        "{what}: potential {} vs {}",
        p.potential(q),
        reference(q)
    );
    let grad = p.gradient(q);
    assert_vec(
        &grad,
        &fd_gradient(&reference, q),
        tol,
        &format!("{what} ∇"),
    );
    let hess = p.hessian(q);
    for i in 0..N {
        let col = fd_directional(|x| p.gradient(x), q, &unit(i));
        for j in 0..N {
            assert!(
                close(hess[j][i], col[j], tol),
                "{what} H[{j}][{i}]: {} vs fd {}",
                hess[j][i],
                col[j]
            );
            assert_eq!(hess[i][j], hess[j][i], "{what}: Hessian not symmetric");
        }
    }
    let a: [f64; N] = std::array::from_fn(|i| 0.3 - 0.11 * i as f64);
    let third = p.third_contraction(q, &a);
    let fd_third = fd_directional(|x| mat_vec(&p.hessian(x), &a), q, &a);
    assert_vec(&third, &fd_third, tol, &format!("{what} T"));
    let (g2, h2) = p.gradient_hessian(q);
    assert_eq!(g2, grad, "{what}: fused gradient");
    assert_eq!(h2, hess, "{what}: fused Hessian");
}

#[test]
fn whole_language_matches_finite_differences_of_the_users_code() {
    let sys = &MOLECULE;
    assert_eq!(Potential::masses(sys), [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    for q in &MOL_POINTS {
        // `sys.potential(q)` is the user's inherent method, compiled as written.
        check_against_fd(sys, |x| sys.potential(x), q, "V");
    }
}

#[test]
fn whole_language_constraints_and_penalty_match_finite_differences() {
    let sys = &MOLECULE;
    for q in &MOL_POINTS {
        let g = sys.constraints(q);
        assert_vec(&MechanicalSystem::constraints(sys, q), &g, 1e-14, "g");
        let jac = sys.constraint_jacobian(q);
        for c in 0..2 {
            let fd = fd_gradient(|x| sys.constraints(x)[c], q);
            assert_vec(&jac[c], &fd, 1e-6, &format!("G[{c}]"));
        }
        for omega in [2.0, 10.0] {
            let reference = |x: &[f64; 6]| {
                let g = sys.constraints(x);
                sys.potential(x) + 0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1])
            };
            check_against_fd(&sys.penalized(omega), reference, q, "V_ω");
        }
    }
}

// ---------------------------------------------------------------- more forms

pub struct Generic<T> {
    pub k: f64,
    pub tag: T,
}

/// Generic types, associated functions, associated consts, a `masses` without `self`.
#[mechanical_system]
impl<T: Copy> Generic<T> {
    const DIM: usize = 3;

    fn masses() -> [f64; 3] {
        [2.0; 3]
    }

    fn potential(&self, q: &[f64; 3]) -> f64 {
        let mut v = 0.0;
        for i in 0..Self::DIM {
            v += Self::sq(q[i]) * (i + 1) as f64;
        }
        v * self.k
    }

    fn sq(x: f64) -> f64 {
        x * x
    }

    /// Not used by the potential: stays in the block, ignored by the macro.
    pub fn tag(&self) -> T {
        self.tag
    }
}

#[test]
fn generics_assoc_items_and_masses_without_self() {
    let g = Generic { k: 2.0, tag: 'x' };
    assert_eq!(g.tag(), 'x');
    assert_eq!(Potential::masses(&g), [2.0; 3]);
    assert_eq!(g.gradient(&[1.0, 1.0, 1.0]), [4.0, 8.0, 12.0]);
    assert_eq!(
        g.hessian(&[0.0; 3]),
        [[4.0, 0.0, 0.0], [0.0, 8.0, 0.0], [0.0, 0.0, 12.0]]
    );
    assert_eq!(m_of(&g), 0);
}
