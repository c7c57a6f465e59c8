//! Assembled test systems shared by the parallel and allocation tests.

use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::mechanical_system;

/// The DNA base-pair chain of Tao & Owhadi §4.4 (`docs/systems/dna.md`).
pub struct Dna {
    pub epsilon: f64,
    pub a: f64,
    pub x0: f64,
}

#[mechanical_system]
impl Dna {
    fn site_potential(&self, theta: &[f64; 1]) -> f64 {
        let u = (-self.a * (1.0 - theta[0].cos() - self.x0)).exp() - 1.0;
        self.epsilon * u * u
    }
    fn bond_potential(&self, left: &[f64; 1], right: &[f64; 1]) -> f64 {
        0.5 * (right[0] - left[0]).powi(2)
    }
}

/// A periodic DNA ring of `n` base pairs at a deterministic, non-uniform start
/// (`θ_k = 0.8 + 0.1 sin(1.7 k)`, `θ̇_k = cos(4πk/n)/√n`).
pub fn dna(n: usize) -> (Assembled<Dna, 1>, Vec<f64>, Vec<f64>) {
    let sys = Assembled::new(
        Dna {
            epsilon: 1.0 / 1400.0,
            a: 7.0,
            x0: 0.3,
        },
        Topology::ring(n),
    )
    .unwrap();
    let q = (0..n).map(|k| 0.8 + 0.1 * (1.7 * k as f64).sin()).collect();
    let v = (0..n)
        .map(|k| (4.0 * std::f64::consts::PI * k as f64 / n as f64).cos() / (n as f64).sqrt())
        .collect();
    (sys, q, v)
}

/// Points in the plane, each held near an ellipse by a body constraint (a stiff penalty: the
/// stiff Hessian is block diagonal), every pair interacting through a soft repulsion.
pub struct Beads {
    pub strength: f64,
}

#[mechanical_system]
impl Beads {
    fn site_potential(&self, x: &[f64; 2]) -> f64 {
        0.05 * (x[0] * x[0] + x[1] * x[1])
    }
    fn pair_potential(&self, a: &[f64; 2], b: &[f64; 2]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2);
        self.strength / (0.5 + r2)
    }
    fn body_constraints(&self, x: &[f64; 2]) -> [f64; 1] {
        [(x[0] - 0.1 * x[1]).powi(2) + x[1] * x[1] - 1.0]
    }
}

/// `n` beads at deterministic positions on their constraint ellipses, scattered around them,
/// with small velocities.
pub fn beads(n: usize) -> (Assembled<Beads, 2>, Vec<f64>, Vec<f64>) {
    let sys = Assembled::new(Beads { strength: 0.01 }, Topology::new(n)).unwrap();
    let mut q = Vec::with_capacity(2 * n);
    let mut v = Vec::with_capacity(2 * n);
    for k in 0..n {
        let phi = 2.399_963 * k as f64;
        // (x − 0.1y)² + y² = 1 with x − 0.1y = cos φ, y = sin φ.
        q.extend([phi.cos() + 0.1 * phi.sin(), phi.sin()]);
        v.extend([0.1 * (1.3 * k as f64).sin(), 0.1 * (0.7 * k as f64).cos()]);
    }
    (sys, q, v)
}

/// A Lennard-Jones liquid cut at 2.5 and shifted, in a periodic box, under a neighbour list:
/// [`Melt`] without bonds (one system type for the liquids and the melts of these tests, each
/// type's passes being compiled once per instruction set). `k³` particles on a cubic lattice of
/// spacing 1.1 (density 0.75), each displaced by up to ±0.05, still; cutoff 2.5, skin 0.3.
pub fn cut_liquid(k: usize) -> (Assembled<Melt, 3>, Vec<f64>, Vec<f64>) {
    let side = 1.1 * k as f64;
    let sys = Assembled::new(
        Melt { rc: 2.5 },
        Topology::new(k * k * k)
            .periodic([side; 3])
            .cutoff(2.5, 0.3),
    )
    .unwrap();
    let mut q = Vec::with_capacity(3 * k * k * k);
    for i in 0..k * k * k {
        let cell = [i % k, (i / k) % k, i / (k * k)];
        for (a, c) in cell.into_iter().enumerate() {
            q.push(1.1 * c as f64 + 0.05 * (1.7 * (3 * i + a) as f64).sin());
        }
    }
    let n = q.len();
    (sys, q, vec![0.0; n])
}

/// Harmonic bonds (k = 20, r0 = 1) and LJ cut at `rc` and shifted (σ = ε = 1): the bonds'
/// gradient comes first in the sums, the pairs' is added into it.
pub struct Melt {
    pub rc: f64,
}

#[mechanical_system]
impl Melt {
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2)).sqrt();
        10.0 * (r - 1.0).powi(2)
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < self.rc * self.rc {
            let s6 = 1.0 / (r2 * r2 * r2);
            let c6 = 1.0 / self.rc.powi(6);
            4.0 * (s6 * s6 - s6) - 4.0 * (c6 * c6 - c6)
        } else {
            0.0
        }
    }
}

/// A [`Melt`] cut at 2.5 of [`cut_liquid`]'s particles as chains of `k` along x (each lattice
/// row a chain), the bonded pairs excluded from the pair potential.
pub fn cut_melt(k: usize) -> (Assembled<Melt, 3>, Vec<f64>, Vec<f64>) {
    let (_, q, v) = cut_liquid(k);
    let side = 1.1 * k as f64;
    let bonds = (0..k * k * k).filter(|i| i % k + 1 < k).map(|i| (i, i + 1));
    let topology = Topology::new(k * k * k)
        .bonds_from(bonds)
        .exclude_bonded()
        .periodic([side; 3])
        .cutoff(2.5, 0.3);
    (Assembled::new(Melt { rc: 2.5 }, topology).unwrap(), q, v)
}

/// [`cut_liquid`]'s Lennard-Jones liquid of two types of sites, `ε` chosen by the pair's types
/// (the alkane's way), of masses 1 and 3.
pub struct TypedLiquid {
    pub eps4: [[f64; 2]; 2],
}

#[mechanical_system]
impl TypedLiquid {
    fn body_masses(&self, kind: usize) -> [f64; 3] {
        [1.0 + 2.0 * kind as f64; 3]
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3], ka: usize, kb: usize) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < 6.25 {
            let s6 = 1.0 / (r2 * r2 * r2);
            self.eps4[ka][kb] * (s6 * s6 - s6 + 0.004_079_222_784)
        } else {
            0.0
        }
    }
}

/// [`cut_liquid`]'s lattice as a [`TypedLiquid`], the types mixed along it.
pub fn typed_liquid(k: usize) -> (Assembled<TypedLiquid, 3>, Vec<f64>, Vec<f64>) {
    let (_, q, v) = cut_liquid(k);
    let side = 1.1 * k as f64;
    let sys = Assembled::new(
        TypedLiquid {
            eps4: [[4.0, 3.0], [3.0, 2.0]],
        },
        Topology::new(k * k * k)
            .periodic([side; 3])
            .cutoff(2.5, 0.3)
            .types((0..k * k * k).map(|i| u32::from((i * 7 + i / 5) % 3 == 0))),
    )
    .unwrap();
    (sys, q, v)
}
