//! A larger `#[mechanical_system]` (a 5-atom Lennard-Jones cluster, N = 15): its Hessians have
//! well over a thousand instructions, which takes the expansion's chunked-declaration path
//! (thousands of nested `let`s crash rustc when it emits debuginfo, as the test profile does).
//! The derivatives must still match finite differences of the user's own code.

use zs_runtime::{MechanicalSystem, Potential, mechanical_system};

pub struct Cluster {
    pub eps: f64,
    pub sigma: f64,
    pub radius: f64,
}

const ATOMS: usize = 5;

#[mechanical_system]
impl Cluster {
    fn potential(&self, q: &[f64; 15]) -> f64 {
        let mut v = 0.0;
        for i in 0..5 {
            for j in (i + 1)..5 {
                let mut r2 = 0.0;
                for c in 0..3 {
                    let d = q[3 * i + c] - q[3 * j + c];
                    r2 += d * d;
                }
                let s6 = (self.sigma * self.sigma / r2).powi(3);
                v += 4.0 * self.eps * (s6 * s6 - s6);
            }
        }
        v
    }

    /// The centre of mass stays at the origin along x, and atom 0 on a sphere.
    fn constraints(&self, q: &[f64; 15]) -> [f64; 2] {
        let mut cx = 0.0;
        for i in 0..5 {
            cx += q[3 * i];
        }
        let r2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
        [cx, r2 - self.radius * self.radius]
    }
}

const STEP: f64 = 1e-5;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn configuration() -> [f64; 15] {
    // A distorted bipyramid, all pair distances near the LJ minimum.
    let base = [
        [0.0, 0.0, 0.0],
        [1.1, 0.05, 0.0],
        [0.55, 0.97, 0.02],
        [0.52, 0.33, 0.91],
        [0.57, 0.31, -0.93],
    ];
    std::array::from_fn(|k| base[k / 3][k % 3] + 0.01 * ((k * 7 % 5) as f64 - 2.0))
}

#[test]
fn large_system_matches_finite_differences() {
    let sys = Cluster {
        eps: 1.0,
        sigma: 1.0,
        radius: 0.2,
    };
    let q = configuration();
    assert_eq!(ATOMS * 3, 15);
    for omega in [0.0, 3.0] {
        let reference = |x: &[f64; 15]| {
            let g = sys.constraints(x);
            sys.potential(x) + 0.5 * omega * omega * (g[0] * g[0] + g[1] * g[1])
        };
        let p = sys.penalized(omega);
        assert!(close(p.potential(&q), reference(&q), 1e-12));
        let grad = p.gradient(&q);
        let hess = p.hessian(&q);
        let a: [f64; 15] = std::array::from_fn(|i| 0.2 - 0.03 * i as f64);
        let third = p.third_contraction(&q, &a);
        for i in 0..15 {
            let (mut qp, mut qm) = (q, q);
            qp[i] += STEP;
            qm[i] -= STEP;
            let fd = (reference(&qp) - reference(&qm)) / (2.0 * STEP);
            assert!(close(grad[i], fd, 1e-6), "∇[{i}]: {} vs {fd}", grad[i]);
            let (gp, gm) = (p.gradient(&qp), p.gradient(&qm));
            for j in 0..15 {
                let fd = (gp[j] - gm[j]) / (2.0 * STEP);
                assert!(
                    close(hess[j][i], fd, 1e-6),
                    "H[{j}][{i}]: {} vs {fd}",
                    hess[j][i]
                );
            }
        }
        let qp: [f64; 15] = std::array::from_fn(|i| q[i] + STEP * a[i]);
        let qm: [f64; 15] = std::array::from_fn(|i| q[i] - STEP * a[i]);
        let (hp, hm) = (p.hessian(&qp), p.hessian(&qm));
        for i in 0..15 {
            let fd: f64 = (0..15)
                .map(|j| (hp[i][j] - hm[i][j]) / (2.0 * STEP) * a[j])
                .sum();
            assert!(close(third[i], fd, 1e-6), "T[{i}]: {} vs {fd}", third[i]);
        }
        let (g2, h2) = p.gradient_hessian(&q);
        assert_eq!(g2, grad);
        assert_eq!(h2, hess);
    }
    let jac = sys.constraint_jacobian(&q);
    for i in 0..5 {
        assert_eq!(jac[0][3 * i], 1.0);
    }
    assert_eq!(jac[1][..3], [2.0 * q[0], 2.0 * q[1], 2.0 * q[2]]);
}
