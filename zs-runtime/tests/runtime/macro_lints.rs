//! The code `#[mechanical_system]` generates is lint-clean: this file denies every rustc
//! warning and clippy's `all`, `pedantic` and `nursery` groups (checked by `cargo clippy
//! --all-targets`), so a lint firing in an expansion fails CI. The user-written code below is
//! itself written to pass those lints.

#![deny(warnings, clippy::all, clippy::pedantic, clippy::nursery)]

use zs_runtime::{MechanicalSystem, Potential, mechanical_system};

/// A pendulum on a stiff rod in 3D, with parameters, helpers, loops and constants.
pub struct Rod {
    /// Rod length.
    pub length: f64,
    /// Gravity.
    pub gravity: f64,
    /// Per-axis anisotropic well stiffness.
    pub wells: [f64; 3],
}

#[mechanical_system]
impl Rod {
    const AXES: usize = 3;

    const fn masses(&self) -> [f64; 3] {
        [self.length, self.length, self.length]
    }

    fn norm2(q: &[f64; 3]) -> f64 {
        let mut s = 0.0;
        for x in q {
            s += x * x;
        }
        s
    }

    fn potential(&self, q: &[f64; 3]) -> f64 {
        let mut v = self.gravity * q[2];
        for (i, x) in q.iter().enumerate().take(Self::AXES) {
            v += 0.5 * self.wells[i] * (x * 1.0e-1).sin().powi(2);
        }
        (1.0e-3 * Self::norm2(q).sqrt()).mul_add(std::f64::consts::PI, v)
    }

    fn constraints(&self, q: &[f64; 3]) -> [f64; 1] {
        [self.length.mul_add(-self.length, Self::norm2(q))]
    }
}

#[test]
fn lint_clean_expansion_works() {
    let rod = Rod {
        length: 2.0,
        gravity: 9.81,
        wells: [0.5, 1.0, 1.5],
    };
    let q = [1.0, 0.5, -1.2];
    let g = rod.constraint_jacobian(&q);
    assert!((g[0][0] - 2.0).abs() < 1e-15);
    assert!(rod.gradient(&q)[2] > 9.0);
    assert!(
        Potential::masses(&rod)
            .iter()
            .all(|m| (m - 2.0).abs() < 1e-15)
    );
    let h = rod.penalized_hessian(10.0, &q);
    assert!((h[0][1] - h[1][0]).abs() < 1e-12);
}
