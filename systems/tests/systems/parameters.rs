//! Parameter derivatives (`#[mechanical_system(parameters(...))]`, `ParameterDerivatives`):
//! `∂V/∂θ` and `∂∇V/∂θ` in the marked fields, against hand-written closed forms and central
//! differences in the field, at random points and parameter values.

use zs_runtime::{mechanical_system, ParameterDerivatives, Potential};
use zs_systems::testing::{rel_err, Rng};

/// A Lennard-Jones pair with one atom tethered: `4ε(s¹² − s⁶) + ½k|x₀|²`, `s = σ/r`; `k` is
/// not marked, so it is not differentiated.
#[derive(Clone, Copy)]
struct Tethered {
    epsilon: f64,
    sigma: f64,
    k: f64,
}

#[mechanical_system(parameters(epsilon, sigma))]
impl Tethered {
    fn potential(&self, q: &[f64; 6]) -> f64 {
        let r2 = (q[3] - q[0]).powi(2) + (q[4] - q[1]).powi(2) + (q[5] - q[2]).powi(2);
        let s6 = (self.sigma * self.sigma / r2).powi(3);
        4.0 * self.epsilon * (s6 * s6 - s6)
            + 0.5 * self.k * (q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
    }
}

#[test]
fn parameter_derivatives_equal_closed_forms_and_central_differences() {
    assert_eq!(
        <Tethered as ParameterDerivatives<6, 2>>::PARAMETERS,
        ["epsilon", "sigma"]
    );
    let mut rng = Rng(51);
    let mut worst = [0.0f64; 3];
    for _ in 0..200 {
        let s = Tethered {
            epsilon: 0.5 + (0.5 * (rng.next() + 1.0)),
            sigma: 0.8 + 0.5 * (0.5 * (rng.next() + 1.0)),
            k: 2.0,
        };
        let q: [f64; 6] = core::array::from_fn(|i| {
            0.3 * (0.5 * (rng.next() + 1.0)) + if i == 3 { 1.2 } else { 0.0 }
        });
        let r2 = (q[3] - q[0]).powi(2) + (q[4] - q[1]).powi(2) + (q[5] - q[2]).powi(2);
        let s6 = (s.sigma * s.sigma / r2).powi(3);
        let exact = [
            4.0 * (s6 * s6 - s6),
            4.0 * s.epsilon * (12.0 * s6 * s6 - 6.0 * s6) / s.sigma,
        ];
        let dv = s.potential_parameter_gradient(&q);
        worst[0] = worst[0].max(rel_err(&dv, &exact));
        // Central differences in each field, of V and of ∇V.
        let h = 1e-6;
        let jac = s.gradient_parameter_jacobian(&q);
        for p in 0..2 {
            let shifted = |d: f64| {
                let mut t = s;
                if p == 0 {
                    t.epsilon += d;
                } else {
                    t.sigma += d;
                }
                t
            };
            let (plus, minus) = (shifted(h), shifted(-h));
            let fd_v = (plus.potential(&q) - minus.potential(&q)) / (2.0 * h);
            worst[1] = worst[1].max((fd_v - dv[p]).abs() / dv[p].abs().max(1.0));
            let (gp, gm) = (plus.gradient(&q), minus.gradient(&q));
            let fd_g: Vec<f64> = gp
                .iter()
                .zip(&gm)
                .map(|(a, b)| (a - b) / (2.0 * h))
                .collect();
            worst[2] = worst[2].max(rel_err(&jac[p], &fd_g));
        }
        // The tether's constant is not a parameter: the jacobian has no k-row, and the
        // tethered atom's row is the pair force's alone.
        assert_eq!(jac.len(), 2);
    }
    eprintln!(
        "closed forms {:.1e}, FD of V {:.1e}, FD of ∇V {:.1e}",
        worst[0], worst[1], worst[2]
    );
    assert!(worst[0] <= 1e-13, "{worst:?}");
    assert!(worst[1] <= 1e-7 && worst[2] <= 1e-7, "{worst:?}");
}

/// The same physics term by term: harmonic bonds (`k`, marked) and an LJ pair term (`epsilon`,
/// marked; `sigma` not), in an open cluster.
#[derive(Clone, Copy)]
struct Beads {
    k: f64,
    epsilon: f64,
    sigma: f64,
}

#[mechanical_system(parameters(k, epsilon))]
impl Beads {
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        0.5 * self.k * (r2.sqrt() - 1.0).powi(2)
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        let s6 = (self.sigma * self.sigma / r2).powi(3);
        4.0 * self.epsilon * (s6 * s6 - s6)
    }
}

#[test]
fn assembled_parameter_derivatives_equal_central_differences_in_the_fields() {
    use zs_runtime::assembly::{Assembled, Terms, Topology};
    use zs_runtime::Model;
    assert_eq!(<Beads as Terms<3>>::PARAMETERS, ["k", "epsilon"]);
    let n = 8;
    let topology = || {
        let mut t = Topology::new(n);
        for i in 1..n {
            t = t.bond(i - 1, i);
        }
        t.exclude_bonded()
    };
    let mut rng = Rng(52);
    let q: Vec<f64> = (0..3 * n)
        .map(|i| if i % 3 == 0 { (i / 3) as f64 * 1.05 } else { 0.0 } + 0.2 * (0.5 * (rng.next() + 1.0)))
        .collect();
    let base = Beads {
        k: 30.0,
        epsilon: 0.7,
        sigma: 0.9,
    };
    let sys = Assembled::new(base, topology()).expect("valid");
    let (dv, dg) = sys.parameter_derivatives(&q);
    assert_eq!((dv.len(), dg.len(), dg[0].len()), (2, 2, 3 * n));
    let h = 1e-6;
    let mut worst = [0.0f64; 2];
    for p in 0..2 {
        let at = |d: f64| {
            let mut b = base;
            if p == 0 {
                b.k += d;
            } else {
                b.epsilon += d;
            }
            let s = Assembled::new(b, topology()).expect("valid");
            let mut g = vec![0.0; 3 * n];
            let v = s.value_gradient_into(&q, &mut g);
            (v, g)
        };
        let ((vp, gp), (vm, gm)) = (at(h), at(-h));
        worst[0] = worst[0].max(((vp - vm) / (2.0 * h) - dv[p]).abs() / dv[p].abs().max(1.0));
        let fd: Vec<f64> = gp
            .iter()
            .zip(&gm)
            .map(|(a, b)| (a - b) / (2.0 * h))
            .collect();
        worst[1] = worst[1].max(rel_err(&dg[p], &fd));
    }
    // The bonds' energy is linear in k: ∂V/∂k is the bonds' energy over k, exactly.
    let bonds_only: f64 = (1..n)
        .map(|i| {
            let r: f64 = (0..3)
                .map(|a| (q[3 * i + a] - q[3 * (i - 1) + a]).powi(2))
                .sum::<f64>()
                .sqrt();
            0.5 * (r - 1.0).powi(2)
        })
        .sum();
    assert!(
        (dv[0] - bonds_only).abs() <= 1e-13 * bonds_only.abs().max(1.0),
        "{} {bonds_only}",
        dv[0]
    );
    eprintln!(
        "assembled: FD of V {:.1e}, FD of ∇V {:.1e}",
        worst[0], worst[1]
    );
    assert!(worst[0] <= 1e-7 && worst[1] <= 1e-7, "{worst:?}");
}
