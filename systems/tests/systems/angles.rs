//! Terms of three and four bodies (bond angles and torsions), checked three ways at random
//! points: the assembled TraPPE alkane (`zs_systems::alkane`) against the same molecule written
//! unrolled as one fixed-size `potential` (V, ∇V, Hessian, third contraction), its kernels
//! against the hand-written closed forms (`alkane::reference`), and both against central finite
//! differences; then planar and collinear torsions, nearest images, and the topology's
//! generated angles, dihedrals and exclusions.
//!
//! `cargo test -p zs-systems --test systems angles:: -- --nocapture` prints the worst errors.

use zs_runtime::assembly::{Angle, Assembled, Dihedral, Kernel, Topology, TopologyError};
use zs_runtime::{mechanical_system, HessianPart, Model, Potential, StepErrorKind, VelocityVerlet};
use zs_systems::alkane::{Alkane, CH2, CH3};
use zs_systems::testing::{fd_gradient, fd_jacobian, fd_third_contraction, rel_err, Rng};

/// Hexane written out as one fixed-size system: five bonds, four angles, three torsions and
/// the three Lennard-Jones pairs more than three bonds apart (CH3 at both ends). The torsion is
/// written differently from the assembled one (the signed angle by `atan2`, Blondel &
/// Karplus), so the two agree only if both are right.
struct HexaneUnrolled(Alkane);

#[mechanical_system]
impl HexaneUnrolled {
    /// The pair `(i, j)` of site types `(ki, kj)`, mixed and shifted by hand.
    fn lj(&self, q: &[f64; 18], i: usize, j: usize, ki: usize, kj: usize) -> f64 {
        let r2 = (q[3 * j] - q[3 * i]).powi(2)
            + (q[3 * j + 1] - q[3 * i + 1]).powi(2)
            + (q[3 * j + 2] - q[3 * i + 2]).powi(2);
        let eps = (self.0.epsilon[ki] * self.0.epsilon[kj]).sqrt();
        let sigma = 0.5 * (self.0.sigma[ki] + self.0.sigma[kj]);
        let lj_r = 4.0 * eps * ((sigma * sigma / r2).powi(6) - (sigma * sigma / r2).powi(3));
        let lj_c = 4.0 * eps * ((sigma / self.0.rc).powi(12) - (sigma / self.0.rc).powi(6));
        lj_r - lj_c
    }

    fn potential(&self, q: &[f64; 18]) -> f64 {
        let mut e = self.lj(q, 0, 4, 0, 1) + self.lj(q, 0, 5, 0, 0) + self.lj(q, 1, 5, 1, 0);
        for i in 0..5 {
            let d = [
                q[3 * i + 3] - q[3 * i],
                q[3 * i + 4] - q[3 * i + 1],
                q[3 * i + 5] - q[3 * i + 2],
            ];
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            e += self.0.k_bond * (r - self.0.r0).powi(2);
        }
        for i in 0..4 {
            let u = [
                q[3 * i] - q[3 * i + 3],
                q[3 * i + 1] - q[3 * i + 4],
                q[3 * i + 2] - q[3 * i + 5],
            ];
            let v = [
                q[3 * i + 6] - q[3 * i + 3],
                q[3 * i + 7] - q[3 * i + 4],
                q[3 * i + 8] - q[3 * i + 5],
            ];
            let c = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
                / ((u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
                    * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
                    .sqrt();
            e += 0.5 * self.0.k_theta * (c.acos() - self.0.theta0).powi(2);
        }
        for i in 0..3 {
            let b1 = [
                q[3 * i + 3] - q[3 * i],
                q[3 * i + 4] - q[3 * i + 1],
                q[3 * i + 5] - q[3 * i + 2],
            ];
            let b2 = [
                q[3 * i + 6] - q[3 * i + 3],
                q[3 * i + 7] - q[3 * i + 4],
                q[3 * i + 8] - q[3 * i + 5],
            ];
            let b3 = [
                q[3 * i + 9] - q[3 * i + 6],
                q[3 * i + 10] - q[3 * i + 7],
                q[3 * i + 11] - q[3 * i + 8],
            ];
            let m = [
                b1[1] * b2[2] - b1[2] * b2[1],
                b1[2] * b2[0] - b1[0] * b2[2],
                b1[0] * b2[1] - b1[1] * b2[0],
            ];
            let n = [
                b2[1] * b3[2] - b2[2] * b3[1],
                b2[2] * b3[0] - b2[0] * b3[2],
                b2[0] * b3[1] - b2[1] * b3[0],
            ];
            let nb2 = (b2[0] * b2[0] + b2[1] * b2[1] + b2[2] * b2[2]).sqrt();
            let phi = (nb2 * (b1[0] * n[0] + b1[1] * n[1] + b1[2] * n[2]))
                .atan2(m[0] * n[0] + m[1] * n[1] + m[2] * n[2]);
            e += self.0.c[0] * (1.0 + phi.cos())
                + self.0.c[1] * (1.0 - (2.0 * phi).cos())
                + self.0.c[2] * (1.0 + (3.0 * phi).cos());
        }
        e
    }
}

/// A chain of `n` sites by bond lengths, angles and torsions drawn around TraPPE's values
/// (torsions anywhere in (−π, π]), built site after site (natural extension reference frame).
fn random_chain(rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut x: Vec<[f64; 3]> = vec![[0.0; 3], [1.54, 0.0, 0.0]];
    let theta0 = 114f64.to_radians();
    for k in 2..n {
        let r = 1.54 + 0.1 * rng.next();
        let theta = theta0 + 0.2 * rng.next();
        let phi = std::f64::consts::PI * rng.next();
        let (a, b, c) = (
            if k >= 3 { x[k - 3] } else { [0.3, 1.0, 0.2] },
            x[k - 2],
            x[k - 1],
        );
        let sub = |p: [f64; 3], q: [f64; 3]| [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
        let cross = |p: [f64; 3], q: [f64; 3]| {
            [
                p[1] * q[2] - p[2] * q[1],
                p[2] * q[0] - p[0] * q[2],
                p[0] * q[1] - p[1] * q[0],
            ]
        };
        let unit = |p: [f64; 3]| {
            let l = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            p.map(|v| v / l)
        };
        let bc = unit(sub(c, b));
        let nn = unit(cross(sub(b, a), bc));
        let m = cross(nn, bc);
        let d = [
            -r * theta.cos(),
            r * theta.sin() * phi.cos(),
            r * theta.sin() * phi.sin(),
        ];
        x.push(core::array::from_fn(|i| {
            c[i] + d[0] * bc[i] + d[1] * m[i] + d[2] * nn[i]
        }));
    }
    x.concat()
}

/// Hexane: CH3–(CH2)4–CH3, its angles and dihedrals from the bonds, pairs within three bonds
/// excluded (`special_bonds lj 0 0 0`).
fn hexane_topology() -> Topology {
    Topology::chain(6)
        .angles_and_dihedrals_from_bonds()
        .exclude_within(3)
        .types([CH3, CH2, CH2, CH2, CH2, CH3])
}

fn hexane() -> Assembled<Alkane, 3> {
    Assembled::new(Alkane::trappe(), hexane_topology()).expect("a valid topology")
}

#[test]
fn assembled_hexane_equals_the_unrolled_molecule() {
    let (assembled, unrolled) = (hexane(), HexaneUnrolled(Alkane::trappe()));
    let mut rng = Rng(41);
    let mut worst = [0.0f64; 4];
    for _ in 0..100 {
        let q = random_chain(&mut rng, 6);
        let a = rng.vec(18);
        let q18: [f64; 18] = q.clone().try_into().expect("18 coordinates");
        let a18: [f64; 18] = a.clone().try_into().expect("18 coordinates");
        let mut g = vec![0.0; 18];
        let mut h = assembled.new_matrix(HessianPart::Full);
        assembled.gradient_hessian_into(&q, &mut g, &mut h);
        let mut t = vec![0.0; 18];
        assembled.third_contraction_into(&q, &a, &mut t);
        let v = assembled.potential_at(&q);
        let v0 = unrolled.potential(&q18);
        worst[0] = worst[0].max(rel_err(&[v], &[v0]));
        worst[1] = worst[1].max(rel_err(&g, &unrolled.gradient(&q18)));
        let h0 = unrolled.hessian(&q18);
        worst[2] = worst[2].max(rel_err(&h.to_dense().concat(), h0.as_flattened()));
        worst[3] = worst[3].max(rel_err(&t, &unrolled.third_contraction(&q18, &a18)));
    }
    eprintln!("hexane, 100 random chains: assembled vs unrolled (V, ∇V, H, T) {worst:?}");
    assert!(worst.iter().all(|&e| e <= 1e-12), "{worst:?}");
}

#[test]
fn angle_and_torsion_kernels_equal_hand_written_forms_and_finite_differences() {
    let m = Alkane::trappe();
    let mut rng = Rng(43);
    let mut worst = [0.0f64; 6];
    for _ in 0..200 {
        let q = random_chain(&mut rng, 4);
        let x: [[f64; 3]; 4] = core::array::from_fn(|k| [q[3 * k], q[3 * k + 1], q[3 * k + 2]]);
        let ang: [[f64; 3]; 3] = [x[0], x[1], x[2]];
        let (va, ga) = Kernel::<3, 3, Angle>::value_gradient(&m, 0.0, &ang, &[0; 3]);
        let (ra, rga) = m.angle_reference(x[0], x[1], x[2]);
        worst[0] = worst[0].max(rel_err(&[va], &[ra]));
        worst[1] = worst[1].max(rel_err(ga.as_flattened(), rga.as_flattened()));
        let (vd, gd) = Kernel::<3, 4, Dihedral>::value_gradient(&m, 0.0, &x, &[0; 4]);
        let (rd, rgd) = m.dihedral_reference(x[0], x[1], x[2], x[3]);
        worst[2] = worst[2].max(rel_err(&[vd], &[rd]));
        worst[3] = worst[3].max(rel_err(gd.as_flattened(), rgd.as_flattened()));
        // Finite differences of the energies.
        let q12: [f64; 12] = q.clone().try_into().expect("12");
        let e = |y: &[f64; 12]| {
            let y: [[f64; 3]; 4] = core::array::from_fn(|k| [y[3 * k], y[3 * k + 1], y[3 * k + 2]]);
            Kernel::<3, 4, Dihedral>::energy(&m, 0.0, &y, &[0; 4])
        };
        worst[4] = worst[4].max(rel_err(&fd_gradient(e, &q12, 1e-6), gd.as_flattened()));
        let q9: [f64; 9] = q[..9].try_into().expect("9");
        let e = |y: &[f64; 9]| {
            let y: [[f64; 3]; 3] = core::array::from_fn(|k| [y[3 * k], y[3 * k + 1], y[3 * k + 2]]);
            Kernel::<3, 3, Angle>::energy(&m, 0.0, &y, &[0; 3])
        };
        worst[5] = worst[5].max(rel_err(&fd_gradient(e, &q9, 1e-6), ga.as_flattened()));
    }
    eprintln!(
        "200 random angles and torsions: generated vs hand-written (angle V, ∇V, torsion V, \
         ∇V), vs finite differences (torsion ∇V, angle ∇V) {worst:?}"
    );
    assert!(worst[..4].iter().all(|&e| e <= 1e-12), "{worst:?}");
    assert!(worst[4..].iter().all(|&e| e <= 1e-7), "{worst:?}");
}

/// The generated Hessian and third contraction of the assembled hexane against central
/// differences of its gradient (the unrolled test checks them against another generated
/// code; this one against the gradient alone).
#[test]
fn hexane_hessian_and_third_contraction_equal_finite_differences() {
    let sys = hexane();
    let mut rng = Rng(47);
    let (mut wh, mut wt) = (0.0f64, 0.0f64);
    for _ in 0..20 {
        let q: [f64; 18] = random_chain(&mut rng, 6).try_into().expect("18");
        let a: [f64; 18] = rng.vec(18).try_into().expect("18");
        let grad = |y: &[f64; 18]| {
            let mut g = vec![0.0; 18];
            sys.gradient_into(&y.to_vec(), &mut g);
            <[f64; 18]>::try_from(g).expect("18")
        };
        let mut g = vec![0.0; 18];
        let mut h = sys.new_matrix(HessianPart::Full);
        sys.gradient_hessian_into(&q.to_vec(), &mut g, &mut h);
        let fd_h = fd_jacobian(grad, &q, 1e-6);
        wh = wh.max(rel_err(&h.to_dense().concat(), fd_h.as_flattened()));
        let mut t = vec![0.0; 18];
        sys.third_contraction_into(&q.to_vec(), &a.to_vec(), &mut t);
        wt = wt.max(rel_err(&t, &fd_third_contraction(grad, &q, &a, 1e-4)));
    }
    eprintln!("hexane vs finite differences: Hessian {wh:.1e}, third contraction {wt:.1e}");
    assert!(wh <= 1e-6 && wt <= 1e-5, "{wh:e} {wt:e}");
}

/// An all-trans chain is planar: every torsion has cos φ = −1 up to rounding, where `acos`'s
/// derivative is infinite and `acos` of a rounded value just below −1 is NaN. Written through
/// `φ = acos(cos φ)`, the torsion's `cos nφ` is generated as a polynomial in `cos φ`: finite
/// energy, gradient and Hessian, equal to finite differences.
#[test]
fn planar_torsions_have_finite_exact_derivatives() {
    // The bonded terms alone (every pair excluded), so that all-trans is their minimum.
    let bonded = Topology::chain(6)
        .angles_and_dihedrals_from_bonds()
        .exclude_within(5);
    let sys = Assembled::new(Alkane::trappe(), bonded).expect("hexane");
    let theta = 114f64.to_radians();
    let (dx, dy) = (1.54 * (theta / 2.0).sin(), 1.54 * (theta / 2.0).cos());
    let q: Vec<f64> = (0..6)
        .flat_map(|k| [k as f64 * dx, if k % 2 == 0 { 0.0 } else { dy }, 0.0])
        .collect();
    let mut g = vec![0.0; 18];
    let mut h = sys.new_matrix(HessianPart::Full);
    sys.gradient_hessian_into(&q, &mut g, &mut h);
    let dense = h.to_dense().concat();
    assert!(sys.potential_at(&q).is_finite());
    assert!(g.iter().chain(&dense).all(|x| x.is_finite()), "{g:?}");
    // All-trans at θ0 with bonds at r0 is a minimum of every term: the gradient vanishes.
    assert!(g.iter().all(|x| x.abs() < 1e-10), "{g:?}");
    // The torsion's curvature at trans (out of the plane): the Hessian equals differences of
    // the gradient.
    let q18: [f64; 18] = q.clone().try_into().expect("18");
    let grad = |y: &[f64; 18]| {
        let mut g = vec![0.0; 18];
        sys.gradient_into(&y.to_vec(), &mut g);
        <[f64; 18]>::try_from(g).expect("18")
    };
    let fd = fd_jacobian(grad, &q18, 1e-6);
    let err = rel_err(&dense, fd.as_flattened());
    assert!(err <= 1e-6, "planar Hessian vs finite differences: {err:e}");
    let z = |k: usize| 3 * k + 2;
    assert!(
        dense[z(0) * 18 + z(0)] > 0.0,
        "out-of-plane stiffness at trans"
    );
}

/// Three collinear sites leave a torsion undefined: its energy is NaN there, and a step of any
/// integrator reports a typed error with the step, not a NaN trajectory.
#[test]
fn collinear_sites_are_a_typed_error_not_a_trajectory() {
    let butane = Topology::chain(4)
        .angles_and_dihedrals_from_bonds()
        .exclude_within(3);
    let sys = Assembled::new(Alkane::trappe(), butane).expect("butane");
    // Sites 0, 1, 2 on a line.
    let q = vec![0.0, 0.0, 0.0, 1.54, 0.0, 0.0, 3.08, 0.0, 0.0, 3.7, 1.4, 0.0];
    assert!(sys.potential_at(&q).is_nan());
    let mut state = sys.state(q, vec![0.0; 12]);
    let before = state.clone();
    let err = VelocityVerlet::new(1.0)
        .step(&sys, &mut state)
        .expect_err("a NaN force is an error");
    assert!(matches!(err.kind, StepErrorKind::NonFinite(_)), "{err}");
    assert_eq!(state, before, "the state before the step is kept");
}

/// A molecule across the periodic box's boundary: with its sites wrapped into the box, each
/// angle and torsion term sees the nearest images and the energy and forces are those of the
/// unwrapped molecule.
#[test]
fn angle_and_torsion_terms_see_nearest_images() {
    let side = 12.0;
    let open = hexane();
    let boxed = Assembled::new(Alkane::trappe(), hexane_topology().periodic([side; 3]))
        .expect("hexane in a box");
    let mut rng = Rng(53);
    for _ in 0..10 {
        // Centred on a corner of the box, then every site wrapped into [0, side).
        let q = random_chain(&mut rng, 6);
        let wrapped: Vec<f64> = q.iter().map(|x| (x - 2.0).rem_euclid(side)).collect();
        assert!(wrapped
            .iter()
            .zip(&q)
            .any(|(w, x)| (w - (x - 2.0)).abs() > 1.0));
        let (mut g0, mut g1) = (vec![0.0; 18], vec![0.0; 18]);
        open.gradient_into(&q, &mut g0);
        boxed.gradient_into(&wrapped, &mut g1);
        assert!(rel_err(&[boxed.potential_at(&wrapped)], &[open.potential_at(&q)]) < 1e-12);
        assert!(rel_err(&g1, &g0) < 1e-11);
    }
}

#[test]
fn angles_dihedrals_and_exclusions_follow_the_bond_graph() {
    // Isopentane: 0-1, 1-2, 2-3, 1-4 (site 1 is a branch point).
    let t = Topology::new(5)
        .bond(0, 1)
        .bond(1, 2)
        .bond(2, 3)
        .bond(1, 4)
        .angles_and_dihedrals_from_bonds();
    assert_eq!(t.angles(), &[[0, 1, 2], [0, 1, 4], [1, 2, 3], [2, 1, 4]]);
    assert_eq!(t.dihedrals(), &[[0, 1, 2, 3], [3, 2, 1, 4]]);
    // special_bonds lj 0 0 0: 1-2, 1-3, 1-4 excluded; in isopentane every pair is within 3.
    let ex = t.clone().exclude_within(3).exclusion_lists();
    assert!(ex
        .iter()
        .enumerate()
        .all(|(i, l)| l.len() == 4 && !l.contains(&(i as u32))));
    // Within 2: 3-4 and 0-3 are three bonds apart.
    let ex = t.clone().exclude_within(2).exclusion_lists();
    assert_eq!(ex[3], vec![1, 2]);
    assert_eq!(ex[0], vec![1, 2, 4]);
    assert!(t.clone().exclude_within(2).is_excluded(4, 2));
    assert!(!t.clone().exclude_within(2).is_excluded(4, 3));
    // A chain of 8: pairs up to 3 bonds apart excluded, 4 and more kept.
    let chain = Topology::chain(8).exclude_within(3);
    assert_eq!(chain.exclusion_lists()[4], vec![1, 2, 3, 5, 6, 7]);
    assert!(!chain.is_excluded(0, 4) && chain.is_excluded(0, 3));
    // A ring of 3 has angles and no proper dihedral.
    let ring = Topology::ring(3).angles_and_dihedrals_from_bonds();
    assert_eq!(ring.angles().len(), 3);
    assert!(ring.dihedrals().is_empty());
    // Bad tuples.
    assert_eq!(
        Topology::new(4).angle(0, 1, 0).validate(3),
        Err(TopologyError::RepeatedBody {
            what: "angle",
            bodies: vec![0, 1, 0],
            body: 0
        })
    );
    assert_eq!(
        Topology::new(4).dihedral(0, 1, 2, 4).validate(3),
        Err(TopologyError::BodyOutOfRange {
            what: "dihedral",
            body: 4,
            bodies: 4
        })
    );
}

/// Pair terms skip pairs within three bonds (`exclude_within(3)`), generated from the bonds:
/// the assembled system's pair energy over a chain of 8 equals the sum over the pairs four or
/// more bonds apart, written out; with `pair14_potential`, the 1-4 pairs get their own term
/// (here half the pair energy).
#[test]
fn exclusions_by_bond_distance_remove_exactly_those_pair_terms() {
    struct Soft;
    #[mechanical_system]
    impl Soft {
        fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
            let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
            1.0 / (1.0 + r2)
        }
    }
    /// The same, with 1-4 pairs at half weight (OPLS's `special_bonds lj 0 0 0.5`).
    struct Soft14;
    #[mechanical_system]
    impl Soft14 {
        fn soft(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
            let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
            1.0 / (1.0 + r2)
        }
        fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
            self.soft(a, b)
        }
        fn pair14_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
            0.5 * self.soft(a, b)
        }
    }
    let mut rng = Rng(59);
    let q = rng.vec(24).iter().map(|x| 3.0 * x).collect::<Vec<_>>();
    let sys = Assembled::new(Soft, Topology::chain(8).exclude_within(3)).expect("chain");
    let sys14 = Assembled::new(Soft14, Topology::chain(8).exclude_within(3)).expect("chain");
    let site = |k: usize| &q[3 * k..3 * k + 3];
    let soft = |i: usize, j: usize| {
        let r2: f64 = site(i)
            .iter()
            .zip(site(j))
            .map(|(a, b)| (b - a).powi(2))
            .sum();
        1.0 / (1.0 + r2)
    };
    let beyond: f64 = (0..8)
        .flat_map(|i| (i + 4..8).map(move |j| (i, j)))
        .map(|(i, j)| soft(i, j))
        .sum();
    let one_four: f64 = (0..5).map(|i| soft(i, i + 3)).sum();
    assert!(rel_err(&[sys.potential_at(&q)], &[beyond]) < 1e-14);
    assert!(rel_err(&[sys14.potential_at(&q)], &[beyond + 0.5 * one_four]) < 1e-14);
    // Gradients: the 1-4 terms' forces too.
    let (mut g, mut g14) = (vec![0.0; 24], vec![0.0; 24]);
    sys.gradient_into(&q, &mut g);
    sys14.gradient_into(&q, &mut g14);
    let fd: Vec<f64> = (0..24)
        .map(|i| {
            let (mut p, mut m) = (q.clone(), q.clone());
            p[i] += 1e-6;
            m[i] -= 1e-6;
            (sys14.potential_at(&p) - sys14.potential_at(&m)) / 2e-6
        })
        .collect();
    assert!(rel_err(&g14, &fd) < 1e-8);
    assert!(rel_err(&g14, &g) > 1e-3, "the 1-4 terms add forces");
    // 1-4 pairs: three bonds apart by the shortest path (a ring of 5 has none, of 6 three).
    assert_eq!(Topology::chain(5).pairs_at(3), vec![(0, 3), (1, 4)]);
    assert!(Topology::ring(5).pairs_at(3).is_empty());
    assert_eq!(Topology::ring(6).pairs_at(3), vec![(0, 3), (1, 4), (2, 5)]);
}

/// The liquid builder: the requested density and composition, sites of the right types, no
/// two sites of different molecules closer than 3 Å, every bond, angle and dihedral listed,
/// finite energy and forces, the data file it writes read back to the same system, and the
/// same seed giving the same liquid.
#[test]
fn the_liquid_builder_makes_the_liquid_it_is_asked_for() {
    use zs_runtime::lammps::DataFile;
    let (sys, q, v, data) = Alkane::trappe()
        .liquid(250, 4, 0.58, 272.0, 7)
        .expect("liquid butane");
    assert_eq!(
        (
            data.len(),
            data.bonds.len(),
            data.angles.len(),
            data.dihedrals.len()
        ),
        (1000, 750, 500, 250)
    );
    // Masses in kcal/mol·fs²/Å², so that time is in fs: g/mol × 4.184e-4.
    let mut m = vec![0.0; 3000];
    sys.masses_into(&mut m);
    let mass: f64 = m.iter().sum::<f64>() / 3.0 * 4.184e-4;
    let volume: f64 = data.box_lengths().iter().product();
    let density = mass / volume / 0.602_214_076;
    assert!((density - 0.58).abs() < 1e-12, "{density}");
    assert_eq!(data.types.iter().filter(|&&t| t == 1).count(), 500);
    let side = data.box_lengths()[0];
    let mut closest = f64::INFINITY;
    for i in 0..1000 {
        for j in i + 1..1000 {
            if i / 4 != j / 4 {
                let r2: f64 = (0..3)
                    .map(|a| {
                        let d = q[3 * j + a] - q[3 * i + a];
                        (d - (d / side).round() * side).powi(2)
                    })
                    .sum();
                closest = closest.min(r2.sqrt());
            }
        }
    }
    assert!(
        closest > 3.0,
        "closest sites of two molecules {closest} Å apart"
    );
    let mut g = vec![0.0; 3000];
    sys.gradient_into(&q, &mut g);
    assert!(sys.potential_at(&q).is_finite() && g.iter().all(|x| x.is_finite()));
    // Zero total momentum (to rounding of a sum of 1000 momenta).
    let mut m = vec![0.0; 3000];
    sys.masses_into(&mut m);
    for a in 0..3 {
        let p: f64 = (0..1000).map(|i| m[3 * i + a] * v[3 * i + a]).sum();
        let scale: f64 = (0..1000).map(|i| (m[3 * i + a] * v[3 * i + a]).abs()).sum();
        assert!(p.abs() < 1e-14 * scale, "momentum {p} of {scale}");
    }
    // The velocities' temperature, with the masses in kcal/mol·fs²/Å² and v in Å/fs: 272 K
    // within the sampling error of 3000 degrees of freedom (σ ≈ 2.6 %).
    let ke: f64 = (0..3000).map(|i| 0.5 * m[i] * v[i] * v[i]).sum();
    let t = 2.0 * ke / (3000.0 * zs_systems::alkane::KB);
    assert!((t / 272.0 - 1.0).abs() < 0.08, "{t} K");
    // The data file read back: the same energy, bit for bit.
    let back = DataFile::parse(&data.to_text()).expect("its own data file");
    let (sys2, q2, _, _) = Alkane::trappe().from_data(&back).expect("read back");
    assert_eq!(
        sys2.potential_at(&q2).to_bits(),
        sys.potential_at(&q).to_bits()
    );
    let (_, q3, _, _) = Alkane::trappe()
        .liquid(250, 4, 0.58, 272.0, 7)
        .expect("again");
    assert_eq!(q3, q);
    assert!(Alkane::trappe().liquid(250, 4, 3.0, 272.0, 7).is_err());
    assert!(
        Alkane::trappe().liquid(10, 4, 0.58, 272.0, 7).is_err(),
        "box smaller than the cutoff"
    );
}

/// A harmonic angle about θ0 = π written through `θ = acos(u)`: the chain rule meets
/// `acos′(−1) = ∞` at an exactly straight triple.
struct StraightByAcos;

#[mechanical_system]
impl StraightByAcos {
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        let (u, v) = (
            [a[0] - b[0], a[1] - b[1], a[2] - b[2]],
            [c[0] - b[0], c[1] - b[1], c[2] - b[2]],
        );
        let cos = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
            / ((u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
                * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
                .sqrt();
        let theta = cos.acos();
        50.0 * (theta - core::f64::consts::PI).powi(2)
    }
}

/// The recipe of the README ("Angles at θ0 = π"): the same stiffness as `2k(1 + cos θ)`, a
/// polynomial in `cos θ`, smooth at the straight triple.
struct StraightByCosine;

#[mechanical_system]
impl StraightByCosine {
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        let (u, v) = (
            [a[0] - b[0], a[1] - b[1], a[2] - b[2]],
            [c[0] - b[0], c[1] - b[1], c[2] - b[2]],
        );
        let cos = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
            / ((u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
                * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
                .sqrt();
        2.0 * 50.0 * (1.0 + cos)
    }
}

/// At an exactly straight triple the `acos` form's gradient is NaN (a step there is a typed
/// error), while the cosine recipe has a zero gradient and a finite Hessian equal to
/// central differences of its gradient; a little off straight the two forms' Hessians agree
/// to second order in the bend, as `k(θ − π)² = 2k(1 + cos θ) + O((θ − π)⁴)` says.
#[test]
fn a_straight_angle_is_smooth_written_in_its_cosine() {
    let topology = || Topology::new(3).angle(0, 1, 2);
    let by_acos = Assembled::new(StraightByAcos, topology()).expect("valid");
    let by_cos = Assembled::new(StraightByCosine, topology()).expect("valid");
    let straight = vec![-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.3, 0.0, 0.0];
    let mut g = vec![0.0; 9];
    by_acos.gradient_into(&straight, &mut g);
    assert!(g.iter().any(|x| x.is_nan()), "{g:?}");
    by_cos.gradient_into(&straight, &mut g);
    assert!(g.iter().all(|x| x.abs() < 1e-12), "{g:?}");
    let mut h = by_cos.new_matrix(HessianPart::Full);
    by_cos.hessian_into(&straight, &mut h);
    let dense = h.to_dense();
    let at: [f64; 9] = straight.clone().try_into().expect("9 coordinates");
    let fd = fd_jacobian(
        |x: &[f64; 9]| {
            let mut g = vec![0.0; 9];
            by_cos.gradient_into(&x.to_vec(), &mut g);
            <[f64; 9]>::try_from(g).expect("9 entries")
        },
        &at,
        1e-6,
    );
    let scale = dense.iter().flatten().fold(1.0_f64, |m, x| m.max(x.abs()));
    for (r, row) in dense.iter().enumerate() {
        for (c, x) in row.iter().enumerate() {
            assert!(
                x.is_finite() && (x - fd[r][c]).abs() <= 1e-6 * scale,
                "[{r}][{c}] {x} vs {}",
                fd[r][c]
            );
        }
    }
    // Bent by 1e-3 rad out of line: the two Hessians agree to about the square of the bend.
    let bent = vec![-1.0, 1e-3, 0.0, 0.0, 0.0, 0.0, 1.3, 0.0, 0.0];
    let (mut ha, mut hc) = (
        by_acos.new_matrix(HessianPart::Full),
        by_cos.new_matrix(HessianPart::Full),
    );
    by_acos.hessian_into(&bent, &mut ha);
    by_cos.hessian_into(&bent, &mut hc);
    let (da, dc) = (ha.to_dense(), hc.to_dense());
    for (ra, rc) in da.iter().zip(&dc) {
        for (x, y) in ra.iter().zip(rc) {
            assert!((x - y).abs() <= 1e-4 * scale, "{x} vs {y}");
        }
    }
}
