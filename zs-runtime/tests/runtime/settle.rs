//! SETTLE against SHAKE: at random orientations and steps, the analytic positions equal the
//! solution of SHAKE's equations found by Newton's method (constraint forces along the old
//! bonds, the rigid distances met), the centre of mass is kept; the velocity step leaves no
//! relative velocity along a bond and keeps the momentum; a step no rotation can undo is a
//! typed error, not a NaN.

use crate::support::fixtures::Rng;
use zs_runtime::settle::{SettleError, SettleGeometry};

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

/// A rigid water of `g` at a random orientation about `at`.
fn molecule(g: &SettleGeometry, rng: &mut Rng, at: [f64; 3]) -> [[f64; 3]; 3] {
    let half = (0.5 * g.d_hh / g.d_oh).asin();
    let local = [
        [0.0, 0.0, 0.0],
        [g.d_oh * half.sin(), g.d_oh * half.cos(), 0.0],
        [-g.d_oh * half.sin(), g.d_oh * half.cos(), 0.0],
    ];
    // A random rotation from a random unit quaternion.
    let mut w = [rng.next(), rng.next(), rng.next(), rng.next()];
    let n = w.iter().map(|x| x * x).sum::<f64>().sqrt();
    w.iter_mut().for_each(|x| *x /= n);
    let [a, b, c, d] = w;
    let r = [
        [
            a * a + b * b - c * c - d * d,
            2.0 * (b * c - a * d),
            2.0 * (b * d + a * c),
        ],
        [
            2.0 * (b * c + a * d),
            a * a - b * b + c * c - d * d,
            2.0 * (c * d - a * b),
        ],
        [
            2.0 * (b * d - a * c),
            2.0 * (c * d + a * b),
            a * a - b * b - c * c + d * d,
        ],
    ];
    local.map(|p| core::array::from_fn(|i| at[i] + (0..3).map(|j| r[i][j] * p[j]).sum::<f64>()))
}

/// SHAKE's solution by Newton's method: `q_i = new_i + Σ_b λ_b (±s_b)/m_i` with `s_b` the old
/// bond vectors, the three distances met.
fn shake(g: &SettleGeometry, old: &[[f64; 3]; 3], new: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let pairs = [(0, 1), (0, 2), (1, 2)];
    let want = [g.d_oh, g.d_oh, g.d_hh];
    let m = [g.m_o, g.m_h, g.m_h];
    let s: [[f64; 3]; 3] = core::array::from_fn(|b| sub(old[pairs[b].1], old[pairs[b].0]));
    let place = |l: [f64; 3]| -> [[f64; 3]; 3] {
        let mut q = *new;
        for (b, &(i, j)) in pairs.iter().enumerate() {
            for k in 0..3 {
                q[i][k] -= l[b] * s[b][k] / m[i];
                q[j][k] += l[b] * s[b][k] / m[j];
            }
        }
        q
    };
    let residual = |l: [f64; 3]| -> [f64; 3] {
        let q = place(l);
        core::array::from_fn(|b| norm(sub(q[pairs[b].1], q[pairs[b].0])).powi(2) - want[b].powi(2))
    };
    let mut l = [0.0; 3];
    for _ in 0..50 {
        let r = residual(l);
        if r.iter().all(|x| x.abs() < 1e-15) {
            break;
        }
        let h = 1e-7;
        let jac: [[f64; 3]; 3] = core::array::from_fn(|b| {
            core::array::from_fn(|c| {
                let (mut up, mut down) = (l, l);
                up[c] += h;
                down[c] -= h;
                (residual(up)[b] - residual(down)[b]) / (2.0 * h)
            })
        });
        // Gaussian elimination of the 3 × 3 Newton step.
        let mut a = [[0.0; 4]; 3];
        for b in 0..3 {
            a[b][..3].copy_from_slice(&jac[b]);
            a[b][3] = -r[b];
        }
        for p in 0..3 {
            let pivot = (p..3)
                .max_by(|&x, &y| a[x][p].abs().total_cmp(&a[y][p].abs()))
                .unwrap();
            a.swap(p, pivot);
            let top = a[p];
            for row in a.iter_mut().skip(p + 1) {
                let f = row[p] / top[p];
                for (x, t) in row.iter_mut().zip(&top).skip(p) {
                    *x -= f * t;
                }
            }
        }
        let mut dl = [0.0; 3];
        for p in (0..3).rev() {
            dl[p] = (a[p][3] - (p + 1..3).map(|c| a[p][c] * dl[c]).sum::<f64>()) / a[p][p];
        }
        for c in 0..3 {
            l[c] += dl[c];
        }
    }
    place(l)
}

#[test]
fn settle_places_the_molecule_where_shake_does() {
    let g = SettleGeometry::spce();
    let mut rng = Rng(0x5E77_1E00_0000_0001);
    let total = g.m_o + 2.0 * g.m_h;
    for case in 0..500 {
        let at = [10.0 * rng.next(), 10.0 * rng.next(), 10.0 * rng.next()];
        let old = molecule(&g, &mut rng, at);
        // An unconstrained step: each atom moved by up to 0.05 Å (a 2 fs step at ~20 Å/ps).
        let scale = if case % 5 == 0 { 0.15 } else { 0.05 };
        let mut new = old;
        for atom in &mut new {
            for x in atom.iter_mut() {
                *x += scale * rng.next();
            }
        }
        let com = |q: &[[f64; 3]; 3]| -> [f64; 3] {
            core::array::from_fn(|k| (g.m_o * q[0][k] + g.m_h * (q[1][k] + q[2][k])) / total)
        };
        let before = com(&new);
        let mut settled = new;
        g.positions(&old, &mut settled)
            .expect("a step of this size settles");
        for (d, want) in [
            (norm(sub(settled[1], settled[0])), g.d_oh),
            (norm(sub(settled[2], settled[0])), g.d_oh),
            (norm(sub(settled[2], settled[1])), g.d_hh),
        ] {
            assert!((d - want).abs() < 1e-12, "case {case}: {d} vs {want}");
        }
        let after = com(&settled);
        assert!(
            (0..3).all(|k| (after[k] - before[k]).abs() < 1e-12),
            "case {case}"
        );
        let shaken = shake(&g, &old, &new);
        for (a, b) in settled.iter().zip(&shaken) {
            for k in 0..3 {
                assert!(
                    (a[k] - b[k]).abs() < 1e-10,
                    "case {case}: SETTLE {a:?}, SHAKE {b:?}"
                );
            }
        }
    }
}

#[test]
fn the_velocity_step_leaves_no_motion_along_a_bond_and_keeps_the_momentum() {
    let g = SettleGeometry::spce();
    let mut rng = Rng(0x5E77_1E00_0000_0002);
    let m = [g.m_o, g.m_h, g.m_h];
    for _ in 0..200 {
        let at = [rng.next(), rng.next(), rng.next()];
        let q = molecule(&g, &mut rng, at);
        let mut v: [[f64; 3]; 3] = core::array::from_fn(|_| [rng.next(), rng.next(), rng.next()]);
        let p0: [f64; 3] = core::array::from_fn(|k| (0..3).map(|i| m[i] * v[i][k]).sum());
        g.velocities(&q, &mut v);
        for (i, j) in [(0, 1), (0, 2), (1, 2)] {
            let e = sub(q[j], q[i]);
            let along: f64 = (0..3).map(|k| e[k] * (v[j][k] - v[i][k])).sum();
            assert!(along.abs() < 1e-13, "bond ({i}, {j}): {along}");
        }
        let p1: [f64; 3] = core::array::from_fn(|k| (0..3).map(|i| m[i] * v[i][k]).sum());
        assert!((0..3).all(|k| (p1[k] - p0[k]).abs() < 1e-13));
    }
}

#[test]
fn a_step_no_rotation_can_undo_is_a_typed_error() {
    let g = SettleGeometry::spce();
    let mut rng = Rng(0x5E77_1E00_0000_0003);
    let old = molecule(&g, &mut rng, [0.0; 3]);
    // The oxygen thrown 5 Å out of the old plane: sin φ beyond 1.
    let mut new = old;
    let n = {
        let (b, c) = (sub(old[1], old[0]), sub(old[2], old[0]));
        let z = [
            b[1] * c[2] - b[2] * c[1],
            b[2] * c[0] - b[0] * c[2],
            b[0] * c[1] - b[1] * c[0],
        ];
        let l = norm(z);
        z.map(|x| x / l)
    };
    for k in 0..3 {
        new[0][k] += 5.0 * n[k];
    }
    let mut moved = new;
    let err = g.positions(&old, &mut moved).expect_err("no solution");
    assert!(matches!(err, SettleError::NoSolution { .. }), "{err}");
    assert!(err.to_string().contains("too far"));
    assert!(moved.iter().flatten().all(|x| x.is_finite()));
}
