//! Assembled systems against the same systems written as one unrolled `potential`: energy,
//! gradient, Hessian, stiff Hessian, third contraction, constraints and their Jacobian agree to
//! 1e-12 relative at random points, unpenalized and penalized; and a Z&S trajectory of an
//! assembled system follows the fixed-size one.
//!
//! `cargo test -p zs-runtime --test runtime assembly:: -- --nocapture` prints the worst
//! differences.

// The unrolled definitions index `q` in loops, the style the macro unrolls.
#![allow(clippy::needless_range_loop)]

use crate::support::assembled::Dna;
use crate::support::fixtures::Rng;
use zs_runtime::assembly::{Assembled, ThirdForm, Topology};
use zs_runtime::{
    ConstrainedModel, HessianPart, MechanicalSystem, Model, Potential, Shake, State, StiffModel,
    StiffSplit, ZhangSkeel, mechanical_system,
};

// ------------------------------------------------------------------ the DNA ring, N = 6

/// Tao & Owhadi §4.4 with N = 6, periodic, unrolled: the ring of [`Dna`]'s terms written out.
struct DnaUnrolled {
    epsilon: f64,
    a: f64,
    x0: f64,
}

#[mechanical_system]
impl DnaUnrolled {
    fn potential(&self, q: &[f64; 6]) -> f64 {
        let mut v = 0.0;
        for k in 0..6 {
            let u = (-self.a * (1.0 - q[k].cos() - self.x0)).exp() - 1.0;
            v += self.epsilon * u * u;
        }
        for k in 0..6 {
            let j = (k + 1) % 6;
            v += 0.5 * (q[j] - q[k]).powi(2);
        }
        v
    }
}

// ------------------------------------------------------ every form, with a pinned body

/// Four bodies in the plane; body 3 is pinned at `P3`. Bonds (0, 1), (1, 2); pairs skip the
/// bonded ones.
struct Mixed {
    k: f64,
    l: f64,
}

const P3: [f64; 2] = [0.7, -1.3];

#[mechanical_system]
impl Mixed {
    fn body_masses(&self) -> [f64; 2] {
        [1.5, 1.5]
    }
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        0.5 * self.k * (x[0] * x[0] + x[1] * x[1]) + 0.1 * x[0] * x[1].powi(3)
    }
    fn stiff_site_potential(&self, x: &[f64; 2]) -> f64 {
        3.0 * (x[0] * x[0] - x[1]).powi(2)
    }
    fn bond_potential(&self, a: &[f64; 2], b: &[f64; 2]) -> f64 {
        let r = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt();
        0.5 * (r - self.l).powi(2)
    }
    fn stiff_bond_potential(&self, a: &[f64; 2], b: &[f64; 2]) -> f64 {
        2.0 * ((b[0] - a[0]) * (b[1] - a[1])).powi(2)
    }
    fn pair_potential(&self, a: &[f64; 2], b: &[f64; 2]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2);
        0.8 / (1.0 + r2) + 0.05 * r2.sin()
    }
    fn body_constraints(&self, x: &[f64; 2]) -> [f64; 1] {
        [x[0] * x[0] + 2.0 * x[1] * x[1] - 1.0]
    }
    fn bond_constraints(&self, a: &[f64; 2], b: &[f64; 2]) -> [f64; 2] {
        [
            (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) - self.l * self.l,
            (b[0] - a[0]) * (b[1] + a[1]),
        ]
    }
}

/// The same three free bodies, unrolled: `q = (x0, y0, x1, y1, x2, y2)`.
struct MixedUnrolled {
    k: f64,
    l: f64,
}

#[mechanical_system]
impl MixedUnrolled {
    fn masses(&self) -> [f64; 6] {
        [1.5; 6]
    }
    fn site(&self, x: f64, y: f64) -> f64 {
        0.5 * self.k * (x * x + y * y) + 0.1 * x * y.powi(3)
    }
    fn bond(&self, ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
        let r = ((bx - ax).powi(2) + (by - ay).powi(2)).sqrt();
        0.5 * (r - self.l).powi(2)
    }
    fn pair(&self, ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
        let r2 = (bx - ax).powi(2) + (by - ay).powi(2);
        0.8 / (1.0 + r2) + 0.05 * r2.sin()
    }
    fn potential(&self, q: &[f64; 6]) -> f64 {
        let mut v = 0.0;
        for b in 0..3 {
            v += self.site(q[2 * b], q[2 * b + 1]);
        }
        v += self.bond(q[0], q[1], q[2], q[3]);
        v += self.bond(q[2], q[3], q[4], q[5]);
        // Pairs (i < j), bonded ones excluded: (0, 2), (0, 3), (1, 3), (2, 3).
        v += self.pair(q[0], q[1], q[4], q[5]);
        for b in 0..3 {
            v += self.pair(q[2 * b], q[2 * b + 1], 0.7, -1.3);
        }
        v
    }
    fn stiff_potential(&self, q: &[f64; 6]) -> f64 {
        let mut v = 0.0;
        for b in 0..3 {
            v += 3.0 * (q[2 * b] * q[2 * b] - q[2 * b + 1]).powi(2);
        }
        for b in 0..2 {
            let (dx, dy) = (q[2 * b + 2] - q[2 * b], q[2 * b + 3] - q[2 * b + 1]);
            v += 2.0 * (dx * dy).powi(2);
        }
        v
    }
    fn constraints(&self, q: &[f64; 6]) -> [f64; 7] {
        let mut g = [0.0; 7];
        for b in 0..3 {
            g[b] = q[2 * b] * q[2 * b] + 2.0 * q[2 * b + 1] * q[2 * b + 1] - 1.0;
        }
        for b in 0..2 {
            let (ax, ay, bx, by) = (q[2 * b], q[2 * b + 1], q[2 * b + 2], q[2 * b + 3]);
            g[3 + 2 * b] = (bx - ax).powi(2) + (by - ay).powi(2) - self.l * self.l;
            g[4 + 2 * b] = (bx - ax) * (by + ay);
        }
        g
    }
}

fn mixed_pair() -> (Assembled<Mixed, 2>, MixedUnrolled) {
    let topology = Topology::new(4)
        .bond(0, 1)
        .bond(1, 2)
        .exclude_bonded()
        .pin(3, P3.to_vec());
    let asm = Assembled::new(Mixed { k: 1.3, l: 0.9 }, topology).unwrap();
    (asm, MixedUnrolled { k: 1.3, l: 0.9 })
}

// ------------------------------------------------------------------------ helpers

fn rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

fn flat<const N: usize>(h: &[[f64; N]; N]) -> Vec<f64> {
    h.iter().flatten().copied().collect()
}

/// Worst relative differences of every quantity between `asm` (as a `Model<Vec<f64>>`) and
/// `fixed` (a `Potential<N>`), over `points` random points scaled by `scale`: energy,
/// gradient, Hessian, third contraction evaluated directly, the gradient and Hessian of the
/// evaluation that keeps the third-derivative tensors (Z&S's), the third contraction from the
/// kept tensors, and the third contraction at another point after tensors were kept (which
/// must not use them).
fn compare<A, F, const N: usize>(
    asm: &A,
    fixed: &F,
    points: usize,
    scale: f64,
    seed: u64,
) -> [f64; 8]
where
    A: Model<Vec<f64>>,
    F: Potential<N>,
{
    let mut rng = Rng(seed);
    let mut worst = [0.0f64; 8];
    let mut g = vec![0.0; N];
    let mut t = vec![0.0; N];
    let mut h = asm.new_matrix(HessianPart::Full);
    for _ in 0..points {
        let q: [f64; N] = core::array::from_fn(|_| scale * rng.next());
        let a: [f64; N] = core::array::from_fn(|_| rng.next());
        let qv = q.to_vec();
        let e = asm.potential_at(&qv);
        let e0 = fixed.potential(&q);
        worst[0] = worst[0].max((e - e0).abs() / e0.abs().max(1.0));
        asm.gradient_hessian_into(&qv, &mut g, &mut h);
        let (g0, h0) = fixed.gradient_hessian(&q);
        worst[1] = worst[1].max(rel(&g, &g0));
        let dense: Vec<f64> = h.to_dense().into_iter().flatten().collect();
        worst[2] = worst[2].max(rel(&dense, &flat(&h0)));
        asm.third_contraction_into(&qv, &a.to_vec(), &mut t);
        let t0 = fixed.third_contraction(&q, &a);
        worst[3] = worst[3].max(rel(&t, &t0));
        asm.gradient_hessian_keeping_third_into(&qv, &mut g, &mut h);
        let dense: Vec<f64> = h.to_dense().into_iter().flatten().collect();
        worst[4] = worst[4].max(rel(&g, &g0));
        worst[5] = worst[5].max(rel(&dense, &flat(&h0)));
        asm.third_contraction_into(&qv, &a.to_vec(), &mut t);
        worst[6] = worst[6].max(rel(&t, &t0));
        // Another point: the kept tensors are stale there (using them would be off by O(1)).
        let q1: [f64; N] = core::array::from_fn(|i| q[i] + 0.3 * rng.next());
        let q1v = q1.to_vec();
        asm.third_contraction_into(&q1v, &a.to_vec(), &mut t);
        worst[7] = worst[7].max(rel(&t, &fixed.third_contraction(&q1, &a)));
    }
    worst
}

// -------------------------------------------------------------------------- tests

#[test]
fn dna_ring_equals_the_unrolled_potential() {
    let (eps, a, x0) = (1.0 / 1400.0, 7.0, 0.3);
    let asm = Assembled::new(
        Dna {
            epsilon: eps,
            a,
            x0,
        },
        Topology::ring(6),
    )
    .unwrap();
    let fixed = DnaUnrolled {
        epsilon: eps,
        a,
        x0,
    };
    let w = compare(&asm, &fixed, 200, 3.0, 1);
    eprintln!(
        "DNA ring N = 6, worst relative (energy, gradient, Hessian, T, kept-tensor evaluation: \
         gradient, Hessian, T, T elsewhere): {w:?}"
    );
    assert!(w.iter().all(|&x| x <= 1e-12), "{w:?}");
    // The Hessian pattern is the cyclic tridiagonal one: 6 diagonal + 6 coupling blocks.
    assert_eq!(asm.hessian_layout(HessianPart::Full).blocks(), 12);
    // The site term's third derivative is kept as a tensor; the harmonic bond has none.
    assert_eq!(asm.forms().site.third, ThirdForm::Tensor);
    assert_eq!(asm.forms().bond.third, ThirdForm::Zero);
}

#[test]
fn every_form_with_a_pinned_body_equals_the_unrolled_system() {
    let (asm, fixed) = mixed_pair();
    assert_eq!(Model::dimension(&asm), 6);
    assert_eq!(asm.term_counts(), [("site", 3), ("bond", 2), ("pair", 4)]);
    // Two and four local coordinates: every form keeps its tensor.
    let f = asm.forms();
    assert_eq!(
        (f.site.third, f.bond.third, f.pair.third),
        (ThirdForm::Tensor, ThirdForm::Tensor, ThirdForm::Tensor)
    );
    // Unpenalized: V + V1.
    let w = compare(&asm, &fixed, 200, 1.2, 2);
    eprintln!("mixed, V + V1: {w:?}");
    assert!(w.iter().all(|&x| x <= 1e-12), "{w:?}");
    // Penalized at random ω.
    let mut rng = Rng(3);
    for case in 0..5 {
        let omega = 10.0 * (1.0 + rng.next().abs());
        let w = compare(
            &asm.penalized(omega),
            &fixed.penalized(omega),
            40,
            1.2,
            10 + case,
        );
        eprintln!("mixed, penalized ω = {omega:.2}: {w:?}");
        assert!(w.iter().all(|&x| x <= 1e-12), "ω = {omega}: {w:?}");
    }
    // Masses.
    let mut m = vec![0.0; 6];
    asm.masses_into(&mut m);
    assert_eq!(m, vec![1.5; 6]);
}

#[test]
fn stiff_hessians_constraints_and_jacobians_agree() {
    let (asm, fixed) = mixed_pair();
    let mut rng = Rng(5);
    let (mut w_stiff, mut w_g, mut w_jac, mut w_norm) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut h = asm.new_matrix(HessianPart::Stiff);
    // The stiff pattern: every term with a stiff part (sites, and bonds: stiff bond terms and
    // bond constraints) — no pair blocks.
    assert_eq!(asm.hessian_layout(HessianPart::Stiff).blocks(), 3 + 2);
    assert_eq!(asm.hessian_layout(HessianPart::Full).blocks(), 3 + 2 + 1);
    let mut g = vec![0.0; 6];
    let mut gc = vec![0.0; 7];
    let mut jac = asm.new_jacobian();
    for case in 0..100 {
        let q: [f64; 6] = core::array::from_fn(|_| 1.2 * rng.next());
        let qv = q.to_vec();
        let omega = if case % 2 == 0 { 0.0 } else { 15.0 };
        let (g0, h0) = if omega == 0.0 {
            fixed.gradient_stiff_hessian(&q)
        } else {
            fixed.penalized(omega).gradient_stiff_hessian(&q)
        };
        if omega == 0.0 {
            asm.gradient_stiff_hessian_into(&qv, &mut g, &mut h);
        } else {
            asm.penalized(omega)
                .gradient_stiff_hessian_into(&qv, &mut g, &mut h);
        }
        let dense: Vec<f64> = h.to_dense().into_iter().flatten().collect();
        w_stiff = w_stiff.max(rel(&dense, &flat(&h0))).max(rel(&g, &g0));
        asm.constraints_jacobian_into(&qv, &mut gc, &mut jac);
        w_g = w_g.max(rel(&gc, &fixed.constraints(&q)));
        let j0: Vec<f64> = fixed
            .constraint_jacobian(&q)
            .iter()
            .flatten()
            .copied()
            .collect();
        let j: Vec<f64> = jac.to_dense(6).into_iter().flatten().collect();
        w_jac = w_jac.max(rel(&j, &j0));
        let n0 = fixed
            .constraints(&q)
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        w_norm = w_norm.max((asm.constraint_norm(&qv) - n0).abs() / n0);
        // One row at a time, as the SHAKE iteration evaluates them.
        let c = case % 7;
        let mut row_jac = asm.new_jacobian();
        let gc_c = asm.constraint_row_into(&qv, c, &mut gc, &mut row_jac);
        assert!((gc_c - fixed.constraints(&q)[c]).abs() <= 1e-12 * n0.max(1.0));
        let row: Vec<f64> = row_jac.to_dense(6)[c].clone();
        assert!(rel(&row, &fixed.constraint_jacobian(&q)[c]) <= 1e-12);
    }
    eprintln!(
        "mixed: stiff (gradient, Hessian) {w_stiff:e}, constraints {w_g:e}, Jacobian {w_jac:e}, \
         |g| {w_norm:e}"
    );
    assert!(w_stiff <= 1e-12 && w_g <= 1e-12 && w_jac <= 1e-12 && w_norm <= 1e-12);
    assert_eq!(asm.constraint_count(), 7);
}

#[test]
fn zhang_skeel_trajectory_follows_the_fixed_size_one() {
    // The penalized mixed system: Z&S on both, same start, 400 steps.
    let (asm, fixed) = mixed_pair();
    let omega = 12.0;
    let q0 = [0.8, 0.3, 0.1, -0.6, -0.7, 0.2];
    let v0 = [0.1, -0.2, 0.3, 0.0, -0.1, 0.2];
    let mut a = asm.state(q0.to_vec(), v0.to_vec());
    let mut b = State::new(q0, v0);
    let mut za = ZhangSkeel::new(0.4, 0.01);
    let mut zb = ZhangSkeel::new(0.4, 0.01);
    let mut worst = 0.0f64;
    for _ in 0..400 {
        za.step(&asm.penalized(omega), &mut a).unwrap();
        zb.step(&fixed.penalized(omega), &mut b).unwrap();
        worst = worst.max(rel(&a.q, &b.q)).max(rel(&a.v, &b.v));
    }
    eprintln!("Z&S, assembled vs fixed-size, 400 steps: worst relative {worst:e}");
    assert!(worst <= 1e-10, "{worst:e}");
    assert_eq!(a.t, b.t);
    assert_eq!(za.stats().evaluations, zb.stats().evaluations);
}

#[test]
fn shake_on_an_assembled_chain_follows_the_fixed_size_one() {
    /// A chain of 3 pendula, pivot pinned at the origin, gravity down.
    struct Links {
        l: f64,
    }
    #[mechanical_system]
    impl Links {
        fn site_potential(&self, x: &[f64; 2]) -> f64 {
            x[1]
        }
        fn bond_constraints(&self, a: &[f64; 2], b: &[f64; 2]) -> [f64; 1] {
            [(b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) - self.l * self.l]
        }
    }
    struct Chain3 {
        l: f64,
    }
    #[mechanical_system]
    impl Chain3 {
        fn potential(&self, q: &[f64; 6]) -> f64 {
            q[1] + q[3] + q[5]
        }
        fn constraints(&self, q: &[f64; 6]) -> [f64; 3] {
            let mut g = [q[0] * q[0] + q[1] * q[1] - self.l * self.l, 0.0, 0.0];
            for i in 1..3 {
                g[i] = (q[2 * i] - q[2 * i - 2]).powi(2) + (q[2 * i + 1] - q[2 * i - 1]).powi(2)
                    - self.l * self.l;
            }
            g
        }
    }
    let l = 5f64.sqrt();
    let asm = Assembled::new(Links { l }, Topology::chain(4).pin(0, [0.0, 0.0])).unwrap();
    let fixed = Chain3 { l };
    let q0 = [1.0, -2.0, 2.0, -4.0, 3.0, -6.0];
    for solver in [
        zs_runtime::ShakeSolver::GaussSeidel,
        zs_runtime::ShakeSolver::Newton,
    ] {
        let mut a = asm.state(q0.to_vec(), vec![0.0; 6]);
        let mut b = State::new(q0, [0.0; 6]);
        let mut sa = Shake::new(0.05).with_solver(solver).with_tolerance(1e-12);
        let mut sb = Shake::new(0.05).with_solver(solver).with_tolerance(1e-12);
        let mut worst = 0.0f64;
        for _ in 0..200 {
            sa.step(&asm, &mut a).unwrap();
            sb.step(&fixed, &mut b).unwrap();
            worst = worst.max(rel(&a.q, &b.q));
            assert!(asm.constraint_norm(&a.q) <= 1e-11);
        }
        let (la, lb) = (sa.multipliers(), sb.multipliers());
        eprintln!("SHAKE {solver:?}, assembled vs fixed, 200 steps: {worst:e}; λ {la:?} vs {lb:?}");
        assert!(worst <= 1e-9, "{solver:?}: {worst:e}");
        assert!(rel(&la, &lb) <= 1e-7, "{la:?} vs {lb:?}");
    }
}
