//! Bodies of several types: a term function that takes its bodies' types (`ka: usize,
//! kb: usize`) reads per-type tables of the definition (`self.epsilon[ka]`), without being
//! differentiated in them — here a Lennard-Jones mixture with Lorentz–Berthelot mixing, checked
//! against the same energy written out pair by pair, in the open (every pair) and in a periodic
//! box under a cutoff (the SIMD lane passes, each lane reading its own pair's types).

use zs_runtime::assembly::{Assembled, Topology, TopologyError};
use zs_runtime::{mechanical_system, HessianPart, Model};
use zs_systems::testing::{fd_jacobian, rel_err, Rng};

/// Two or more kinds of Lennard-Jones sites; mixed by Lorentz–Berthelot (`ε_ij = √(ε_i ε_j)`,
/// `σ_ij = (σ_i + σ_j)/2`), cut at `rc` and shifted.
struct Mixture {
    epsilon: Vec<f64>,
    sigma: Vec<f64>,
    mass: Vec<f64>,
    rc: f64,
}

#[mechanical_system]
impl Mixture {
    fn body_masses(&self, kind: usize) -> [f64; 3] {
        [self.mass[kind]; 3]
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        let eps = (self.epsilon[ka] * self.epsilon[kb]).sqrt();
        let sigma = 0.5 * (self.sigma[ka] + self.sigma[kb]);
        if r2 < self.rc * self.rc {
            let sr6 = (sigma * sigma / r2).powi(3);
            let sc6 = (sigma / self.rc).powi(6);
            4.0 * eps * (sr6 * sr6 - sr6) - 4.0 * eps * (sc6 * sc6 - sc6)
        } else {
            0.0
        }
    }
}

impl Mixture {
    fn two() -> Self {
        Self {
            epsilon: vec![0.195, 0.091],
            sigma: vec![3.75, 3.95],
            mass: vec![15.035, 14.027],
            rc: 9.0,
        }
    }

    /// The pair energy written out, pair by pair, nearest images in a cube of side `side`
    /// (`None`: open).
    fn by_hand(&self, q: &[f64], kinds: &[u32], side: Option<f64>) -> f64 {
        let n = kinds.len();
        let mut e = 0.0;
        for i in 0..n {
            for j in i + 1..n {
                let d: Vec<f64> = (0..3)
                    .map(|a| {
                        let d = q[3 * j + a] - q[3 * i + a];
                        side.map_or(d, |l| d - (d / l).round() * l)
                    })
                    .collect();
                let r2: f64 = d.iter().map(|x| x * x).sum();
                let (ki, kj) = (kinds[i] as usize, kinds[j] as usize);
                let eps = (self.epsilon[ki] * self.epsilon[kj]).sqrt();
                let sigma = 0.5 * (self.sigma[ki] + self.sigma[kj]);
                if r2 < self.rc * self.rc {
                    let lj = |r2: f64| {
                        let s6 = (sigma * sigma / r2).powi(3);
                        4.0 * eps * (s6 * s6 - s6)
                    };
                    e += lj(r2) - lj(self.rc * self.rc);
                }
            }
        }
        e
    }
}

/// `n` sites on a jittered cubic lattice of spacing `a` (no two closer than `a/2`).
fn lattice(rng: &mut Rng, n: usize, a: f64) -> Vec<f64> {
    let m = (n as f64).cbrt().ceil() as usize;
    (0..n)
        .flat_map(|k| [k % m, (k / m) % m, k / (m * m)])
        .map(|c| a * (c as f64 + 0.5 + 0.2 * rng.next()))
        .collect()
}

#[test]
fn per_type_parameters_equal_the_mixture_written_out() {
    let mut rng = Rng(61);
    let n = 40;
    let kinds: Vec<u32> = (0..n).map(|k| u32::from(k % 3 == 0)).collect();
    let q = lattice(&mut rng, n, 4.2);
    let sys =
        Assembled::new(Mixture::two(), Topology::new(n).types(kinds.clone())).expect("a mixture");
    let want = Mixture::two().by_hand(&q, &kinds, None);
    assert!(rel_err(&[sys.potential_at(&q)], &[want]) < 1e-13);
    // Types matter: the same positions with every site of type 0 have another energy.
    let same = Mixture::two().by_hand(&q, &vec![0; n], None);
    assert!(rel_err(&[same], &[want]) > 1e-3);
    // The masses follow the types.
    let mut m = vec![0.0; 3 * n];
    sys.masses_into(&mut m);
    for (k, &kind) in kinds.iter().enumerate() {
        assert_eq!(m[3 * k..3 * k + 3], [Mixture::two().mass[kind as usize]; 3]);
    }
    // Gradient and Hessian against differences of the energy and gradient.
    let q120: [f64; 120] = q.clone().try_into().expect("120");
    let grad = |y: &[f64; 120]| {
        let mut g = vec![0.0; 120];
        sys.gradient_into(&y.to_vec(), &mut g);
        <[f64; 120]>::try_from(g).expect("120")
    };
    let mut g = vec![0.0; 120];
    let mut h = sys.new_matrix(HessianPart::Full);
    sys.gradient_hessian_into(&q, &mut g, &mut h);
    let fd_g: Vec<f64> = (0..120)
        .map(|i| {
            let (mut p, mut m) = (q.clone(), q.clone());
            p[i] += 1e-6;
            m[i] -= 1e-6;
            (Mixture::two().by_hand(&p, &kinds, None) - Mixture::two().by_hand(&m, &kinds, None))
                / 2e-6
        })
        .collect();
    assert!(rel_err(&g, &fd_g) < 1e-7, "{}", rel_err(&g, &fd_g));
    let fd_h = fd_jacobian(grad, &q120, 1e-6);
    let err = rel_err(&h.to_dense().concat(), fd_h.as_flattened());
    assert!(err < 1e-6, "Hessian vs differences: {err:e}");
}

/// Under a cutoff in a periodic box the energy and gradient passes run in SIMD lanes: each
/// lane's term reads the tables at its own pair's types. 500 sites of three types, compared
/// with the sum written out (every pair, nearest images).
#[test]
fn lane_passes_read_each_lanes_own_types() {
    let mut rng = Rng(67);
    let n = 500;
    let (a, side) = (3.9, 3.9 * 8.0);
    let kinds: Vec<u32> = (0..n).map(|_| ((rng.next() + 1.0) * 1.5) as u32).collect();
    assert!(kinds.contains(&2) && kinds.contains(&0));
    let mix = || Mixture {
        epsilon: vec![0.195, 0.091, 0.3],
        sigma: vec![3.75, 3.95, 3.3],
        mass: vec![15.035, 14.027, 12.0],
        rc: 9.0,
    };
    let q = lattice(&mut rng, n, a);
    let sys = Assembled::new(
        mix(),
        Topology::new(n)
            .types(kinds.clone())
            .periodic([side; 3])
            .cutoff(9.0, 1.0),
    )
    .expect("a periodic mixture");
    let want = mix().by_hand(&q, &kinds, Some(side));
    let got = sys.potential_at(&q);
    assert!(rel_err(&[got], &[want]) < 1e-12, "{got} vs {want}");
    // Without `types`, every body is of type 0 (the lanes still read their rows).
    let untyped = Assembled::new(mix(), Topology::new(n).periodic([side; 3]).cutoff(9.0, 1.0))
        .expect("a periodic one-type liquid");
    let want0 = mix().by_hand(&q, &vec![0; n], Some(side));
    assert!(rel_err(&[untyped.potential_at(&q)], &[want0]) < 1e-12);
    // The gradient pass (lanes) against the Hessian pass's gradient (one term at a time).
    let mut g = vec![0.0; 3 * n];
    sys.gradient_into(&q, &mut g);
    let mut g1 = vec![0.0; 3 * n];
    let mut h = sys.new_matrix(HessianPart::Full);
    sys.gradient_hessian_into(&q, &mut g1, &mut h);
    assert!(rel_err(&g, &g1) < 1e-13, "{}", rel_err(&g, &g1));
}

#[test]
fn a_type_missing_from_a_table_is_an_error_before_any_step() {
    let err = Assembled::new(Mixture::two(), Topology::new(4).types([0, 1, 2, 0]))
        .expect_err("type 2 has no ε");
    assert_eq!(err, TopologyError::UnknownType { body: 2, kind: 2 });
    assert!(err.to_string().contains("body 2 has type 2"), "{err}");
    let err = Assembled::new(Mixture::two(), Topology::new(4).types([0, 1])).expect_err("short");
    assert_eq!(
        err,
        TopologyError::TypesLength {
            given: 2,
            bodies: 4
        }
    );
}

/// The mixture with its pair coefficients mixed beforehand (LAMMPS's per-pair coefficients,
/// `init_one`), read from tables indexed by both bodies' types: `self.eps4[ka][kb]`.
struct Premixed {
    eps4: Vec<Vec<f64>>,
    sigma6: Vec<Vec<f64>>,
    shift: Vec<Vec<f64>>,
    mass: Vec<f64>,
    rc: f64,
}

#[mechanical_system]
impl Premixed {
    fn body_masses(&self, kind: usize) -> [f64; 3] {
        [self.mass[kind]; 3]
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < self.rc * self.rc {
            let ir2 = 1.0 / r2;
            let sr6 = self.sigma6[ka][kb] * (ir2 * ir2 * ir2);
            self.eps4[ka][kb] * (sr6 * sr6 - sr6) - self.shift[ka][kb]
        } else {
            0.0
        }
    }
}

impl Premixed {
    fn of(m: &Mixture) -> Self {
        let table = |f: &dyn Fn(f64, f64) -> f64| -> Vec<Vec<f64>> {
            (0..m.epsilon.len())
                .map(|a| {
                    (0..m.epsilon.len())
                        .map(|b| {
                            let eps = (m.epsilon[a] * m.epsilon[b]).sqrt();
                            f(eps, 0.5 * (m.sigma[a] + m.sigma[b]))
                        })
                        .collect()
                })
                .collect()
        };
        let rc = m.rc;
        Self {
            eps4: table(&|eps, _| 4.0 * eps),
            sigma6: table(&|_, s| s.powi(6)),
            shift: table(&|eps, s| 4.0 * eps * ((s / rc).powi(12) - (s / rc).powi(6))),
            mass: m.mass.clone(),
            rc,
        }
    }
}

/// Tables of two types' indices: the energy and gradient of the mixture written out, in a
/// periodic box under a cutoff; a type missing from one row of such a table is an error
/// before any step, as from a table of one type's.
#[test]
fn tables_indexed_by_both_types_equal_the_mixture_and_are_checked_row_by_row() {
    let mut rng = Rng(71);
    let n = 300;
    let (a, side) = (3.9, 3.9 * 7.0);
    let kinds: Vec<u32> = (0..n).map(|_| u32::from(rng.next() > 0.0)).collect();
    let q = lattice(&mut rng, n, a);
    let topology = || {
        Topology::new(n)
            .types(kinds.clone())
            .periodic([side; 3])
            .cutoff(9.0, 1.0)
    };
    let sys = Assembled::new(Premixed::of(&Mixture::two()), topology()).expect("premixed");
    let want = Mixture::two().by_hand(&q, &kinds, Some(side));
    let got = sys.potential_at(&q);
    assert!(rel_err(&[got], &[want]) < 1e-12, "{got} vs {want}");
    let mixed = Assembled::new(Mixture::two(), topology()).expect("mixed per pair");
    let (mut g, mut g1) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    sys.gradient_into(&q, &mut g);
    mixed.gradient_into(&q, &mut g1);
    assert!(rel_err(&g, &g1) < 1e-12, "{}", rel_err(&g, &g1));
    let mut ragged = Premixed::of(&Mixture::two());
    ragged.sigma6[1].pop();
    let first = kinds
        .iter()
        .position(|&k| k == 1)
        .expect("a site of type 1");
    let err = Assembled::new(ragged, topology()).expect_err("row 1 lacks type 1");
    assert_eq!(
        err,
        TopologyError::UnknownType {
            body: first,
            kind: 1
        }
    );
}
