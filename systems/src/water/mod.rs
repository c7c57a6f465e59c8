//! Clusters of rigid TIP3P waters (Tao & Owhadi §4.3, Figs. 4–7), as an assembled system: one
//! body per molecule with 9 coordinates (O, H1, H2; x, y, z each; Å), one pair term per pair of
//! molecules — Coulomb between the 9 intermolecular site pairs and Lennard-Jones between the
//! oxygens — and three constraints per molecule holding its geometry,
//!
//! ```text
//! V = Σ_{a<b} [ Σ_{i∈a, j∈b} K_c Q_i Q_j / r_ij + A / r_OO¹² − C / r_OO⁶ ],
//! g_a = ( |O−H1|² − r_OH², |O−H2|² − r_OH², |H1−H2|² − r_HH² ),
//! ```
//!
//! in AKMA units (Å, kcal/mol, amu; time unit 48.888 fs). An open cluster: every pair, no cutoff,
//! no periodic box. Parameters: Jorgensen et al. 1983 (TIP3P), `docs/systems/water.md` (water),
//! where the paper's gaps are listed: it prints none of these values. The paper orders a molecule's
//! atoms (H, O, H); `docs/CLI.md` orders them (O, H, H), as here.
//!
//! The penalty `½ω² Σ_a |g_a|²` (eq. 26) is the stiff part that Z&Ss-stiff (Integrator 5,
//! eq. 19) puts in its solve: its Hessian is block diagonal, one 9 × 9 block per molecule.

pub mod reference;
#[cfg(feature = "experiments")]
pub mod rigid_modes;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use zs_runtime::assembly::{Assembled, Topology};
use zs_runtime::linalg::dense::solve_general;
use zs_runtime::mechanical_system;

/// Molecules of the paper's small cluster (Figs. 4–6).
pub const N: usize = 7;
/// Penalty frequency ω (eq. 26).
pub const OMEGA: f64 = 20.0;
/// Step `h` (AKMA time units).
pub const H: f64 = 0.05;
/// Z&S β: not printed in the paper; 0.4, as for the other systems.
pub const BETA: f64 = 0.4;
/// Grid spacing of the built clusters (Å), as in `docs/systems/water.md`'s measurement.
pub const SPACING: f64 = 3.1;

/// Coulomb constant `K_c` (kcal Å mol⁻¹ e⁻²) as `docs/systems/water.md` gives it (OpenMM uses
/// 332.0637).
pub const COULOMB: f64 = 332.06;
/// O–H bond length (Å).
pub const R_OH: f64 = 0.9572;
/// H–O–H angle (degrees).
pub const ANGLE_HOH: f64 = 104.52;
/// Charge of O (e).
pub const Q_O: f64 = -0.834;
/// Charge of H (e).
pub const Q_H: f64 = 0.417;
/// Lennard-Jones `A` (kcal Å¹² mol⁻¹).
pub const LJ_A: f64 = 582_000.0;
/// Lennard-Jones `C` (kcal Å⁶ mol⁻¹).
pub const LJ_C: f64 = 595.0;
/// Mass of O (amu).
pub const M_O: f64 = 15.9994;
/// Mass of H (amu).
pub const M_H: f64 = 1.008;
/// The AKMA time unit in femtoseconds.
pub const AKMA_FS: f64 = 48.888;

/// `r_HH = 2 r_OH sin(α/2)` (Å).
pub fn r_hh() -> f64 {
    2.0 * R_OH * (0.5 * ANGLE_HOH.to_radians()).sin()
}

/// TIP3P water: the pair energy of two molecules and the geometry of one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Water {
    /// `K_c`.
    pub coulomb: f64,
    /// Charge of O.
    pub q_o: f64,
    /// Charge of H.
    pub q_h: f64,
    /// Lennard-Jones `A`.
    pub lj_a: f64,
    /// Lennard-Jones `C`.
    pub lj_c: f64,
    /// O–H length.
    pub r_oh: f64,
    /// H–H distance.
    pub r_hh: f64,
    /// Mass of O.
    pub m_o: f64,
    /// Mass of H.
    pub m_h: f64,
}

#[mechanical_system]
impl Water {
    fn body_masses(&self) -> [f64; 9] {
        let (o, h) = (self.m_o, self.m_h);
        [o, o, o, h, h, h, h, h, h]
    }
    fn pair_potential(&self, a: &[f64; 9], b: &[f64; 9]) -> f64 {
        let mut e = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                let qi = if i == 0 { self.q_o } else { self.q_h };
                let qj = if j == 0 { self.q_o } else { self.q_h };
                let r2 = (b[3 * j] - a[3 * i]).powi(2)
                    + (b[3 * j + 1] - a[3 * i + 1]).powi(2)
                    + (b[3 * j + 2] - a[3 * i + 2]).powi(2);
                e += self.coulomb * qi * qj / r2.sqrt();
            }
        }
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        let r6 = r2 * r2 * r2;
        e + self.lj_a / (r6 * r6) - self.lj_c / r6
    }
    pub fn body_constraints(&self, x: &[f64; 9]) -> [f64; 3] {
        let oh1 = (x[3] - x[0]).powi(2) + (x[4] - x[1]).powi(2) + (x[5] - x[2]).powi(2);
        let oh2 = (x[6] - x[0]).powi(2) + (x[7] - x[1]).powi(2) + (x[8] - x[2]).powi(2);
        let hh = (x[6] - x[3]).powi(2) + (x[7] - x[4]).powi(2) + (x[8] - x[5]).powi(2);
        let (roh2, rhh2) = (self.r_oh * self.r_oh, self.r_hh * self.r_hh);
        [oh1 - roh2, oh2 - roh2, hh - rhh2]
    }
}

impl Water {
    /// TIP3P with `docs/systems/water.md`'s constants.
    pub fn tip3p() -> Self {
        Self {
            coulomb: COULOMB,
            q_o: Q_O,
            q_h: Q_H,
            lj_a: LJ_A,
            lj_c: LJ_C,
            r_oh: R_OH,
            r_hh: r_hh(),
            m_o: M_O,
            m_h: M_H,
        }
    }

    /// The open cluster of `n` molecules: every pair interacts.
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn assemble(self, n: usize) -> Assembled<Self, 9> {
        assert!(n > 0, "a water cluster needs at least one molecule");
        Assembled::new(self, Topology::new(n)).expect("an unbonded topology is valid")
    }

    /// Element symbols of the `3n` atoms (O, H, H per molecule), for XYZ files.
    pub fn atom_symbols(n: usize) -> Vec<String> {
        (0..3 * n)
            .map(|k| if k % 3 == 0 { "O" } else { "H" }.to_string())
            .collect()
    }

    /// Coordinate names `O1x, O1y, O1z, H1ax, …` (molecule by molecule, atoms O, H, H).
    pub fn coordinate_names(n: usize) -> Vec<String> {
        (1..=n)
            .flat_map(|m| {
                ["O", "Ha", "Hb"]
                    .into_iter()
                    .flat_map(move |a| ["x", "y", "z"].map(|c| format!("{a}{m}{c}")))
            })
            .collect()
    }

    /// One molecule with its oxygen at `o`, rotated by the unit quaternion `rotation`
    /// `(w, x, y, z)` from the reference pose (H–O–H in the xz plane, bisector along +z): the
    /// exact TIP3P geometry, `g = 0`.
    pub fn molecule(&self, o: [f64; 3], rotation: [f64; 4]) -> [f64; 9] {
        let half = (0.5 * self.r_hh / self.r_oh).asin();
        let (s, c) = (self.r_oh * half.sin(), self.r_oh * half.cos());
        let ha = rotate(rotation, [s, 0.0, c]);
        let hb = rotate(rotation, [-s, 0.0, c]);
        [
            o[0],
            o[1],
            o[2],
            o[0] + ha[0],
            o[1] + ha[1],
            o[2] + ha[2],
            o[0] + hb[0],
            o[1] + hb[1],
            o[2] + hb[2],
        ]
    }

    /// Put every molecule of `q` back on its exact geometry, keeping its oxygen, the direction
    /// of its H–O–H bisector and its plane: the nearest rigid configuration in the sense that
    /// matters for a start (a relaxed penalized cluster, whose bonds the intermolecular forces
    /// stretch by ~0.02 Å at ω = 20, becomes a rigid one with the same orientations).
    ///
    /// # Panics
    /// If `q.len()` is not a multiple of 9.
    pub fn make_rigid(&self, q: &mut [f64]) {
        assert_eq!(q.len() % 9, 0, "9 coordinates per molecule");
        let half = (0.5 * self.r_hh / self.r_oh).asin();
        let (c, s) = (self.r_oh * half.cos(), self.r_oh * half.sin());
        let unit = |x: [f64; 3]| {
            let n = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
            x.map(|c| c / n)
        };
        for m in q.chunks_exact_mut(9) {
            let a: [f64; 3] = std::array::from_fn(|k| m[3 + k] - m[k]);
            let b: [f64; 3] = std::array::from_fn(|k| m[6 + k] - m[k]);
            let bis = unit(std::array::from_fn(|k| unit(a)[k] + unit(b)[k]));
            let along = a[0] * bis[0] + a[1] * bis[1] + a[2] * bis[2];
            let u = unit(std::array::from_fn(|k| a[k] - along * bis[k]));
            for k in 0..3 {
                m[3 + k] = m[k] + c * bis[k] + s * u[k];
                m[6 + k] = m[k] + c * bis[k] - s * u[k];
            }
        }
    }

    /// `n` molecules on the sites of a cubic grid of side `spacing` (Å) nearest its centre,
    /// each turned by a uniformly random rotation drawn from `seed` (ChaCha8: normal
    /// quaternions, normalised), exact geometry, at rest. Relax it before dynamics
    /// ([`zs_runtime::minimize::Fire`]): a grid start at rest releases energy and boils off
    /// molecules (`docs/systems/water.md`).
    pub fn cluster(&self, n: usize, spacing: f64, seed: u64) -> Vec<f64> {
        let side = (n as f64).cbrt().ceil() as i64 + 1;
        let mut sites: Vec<[i64; 3]> = (0..side.pow(3))
            .map(|k| [k % side, (k / side) % side, k / (side * side)])
            .collect();
        let mid = (side - 1) as f64 / 2.0;
        let d2 = |p: &[i64; 3]| p.iter().map(|&x| (x as f64 - mid).powi(2)).sum::<f64>();
        sites.sort_by(|a, b| d2(a).total_cmp(&d2(b)).then(a.cmp(b)));
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        sites[..n]
            .iter()
            .flat_map(|p| {
                let mut r: [f64; 4] = std::array::from_fn(|_| StandardNormal.sample(&mut rng));
                let norm = r.iter().map(|x| x * x).sum::<f64>().sqrt();
                r.iter_mut().for_each(|x| *x /= norm);
                let o = p.map(|x| (x as f64 - mid) * spacing);
                self.molecule(o, r)
            })
            .collect()
    }
}

/// `v` rotated by the unit quaternion `(w, x, y, z)`.
fn rotate(r: [f64; 4], v: [f64; 3]) -> [f64; 3] {
    let [w, x, y, z] = r;
    [
        (1.0 - 2.0 * (y * y + z * z)) * v[0]
            + 2.0 * (x * y - w * z) * v[1]
            + 2.0 * (x * z + w * y) * v[2],
        2.0 * (x * y + w * z) * v[0]
            + (1.0 - 2.0 * (x * x + z * z)) * v[1]
            + 2.0 * (y * z - w * x) * v[2],
        2.0 * (x * z - w * y) * v[0]
            + 2.0 * (y * z + w * x) * v[1]
            + (1.0 - 2.0 * (x * x + y * y)) * v[2],
    ]
}

/// Thermal velocities of `n` rigid molecules at positions `q` and temperature `kt` (kcal/mol):
/// atomic velocities drawn from the Maxwell–Boltzmann distribution `N(0, kT/m)` (ChaCha8 from
/// `seed`), projected molecule by molecule onto rigid motions (translation and rotation, the
/// mass-weighted orthogonal projection, which keeps a Gaussian at `kT` on the 6 rigid degrees of
/// freedom and leaves `d/dt g = 0`), then the cluster's centre-of-mass velocity removed.
///
/// # Panics
/// If `q.len() != 9 n`.
pub fn thermal_velocities(w: &Water, q: &[f64], kt: f64, seed: u64) -> Vec<f64> {
    type V3 = [f64; 3];
    let cross = |a: V3, b: V3| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let add = |a: V3, b: V3| -> V3 { core::array::from_fn(|c| a[c] + b[c]) };
    let sub = |a: V3, b: V3| -> V3 { core::array::from_fn(|c| a[c] - b[c]) };
    let scale = |s: f64, a: V3| a.map(|x| s * x);
    assert_eq!(q.len() % 9, 0, "9 coordinates per molecule");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7e4d_5eed_0000_0001);
    let masses = [w.m_o, w.m_h, w.m_h];
    let total = masses.iter().sum::<f64>();
    let at = |x: &[f64], k: usize| -> V3 { [x[3 * k], x[3 * k + 1], x[3 * k + 2]] };
    // `Σ_k m_k x_k` for the three atoms' vectors `x_k`, and that over `Σ m`.
    let mass_sum = |x: [V3; 3]| (0..3).fold([0.0; 3], |s, k| add(s, scale(masses[k], x[k])));
    let mass_mean = |x: [V3; 3]| scale(1.0 / total, mass_sum(x));
    let mut v = vec![0.0; q.len()];
    for (qm, vm) in q.chunks_exact(9).zip(v.chunks_exact_mut(9)) {
        let u: [V3; 3] = core::array::from_fn(|k| {
            core::array::from_fn(|_| {
                (kt / masses[k]).sqrt() * Distribution::<f64>::sample(&StandardNormal, &mut rng)
            })
        });
        let com = mass_mean(core::array::from_fn(|k| at(qm, k)));
        let vcom = mass_mean(u);
        // Angular momentum `L = Σ m d × (u − v_com)` and inertia `I = Σ m (|d|² 1 − d dᵀ)`
        // about the centre of mass; the rigid rotation is `ω = I⁻¹L`.
        let (mut l, mut inertia) = ([0.0; 3], [[0.0; 3]; 3]);
        for k in 0..3 {
            let d = sub(at(qm, k), com);
            l = add(l, scale(masses[k], cross(d, sub(u[k], vcom))));
            let d2 = d.iter().map(|x| x * x).sum::<f64>();
            for (i, row) in inertia.iter_mut().enumerate() {
                for (j, e) in row.iter_mut().enumerate() {
                    let delta = if i == j { d2 } else { 0.0 };
                    *e += masses[k] * (delta - d[i] * d[j]);
                }
            }
        }
        let mut omega = l;
        if solve_general(&inertia, &mut omega).is_err() {
            omega = [0.0; 3];
        }
        for k in 0..3 {
            let vk = add(vcom, cross(omega, sub(at(qm, k), com)));
            vm[3 * k..3 * k + 3].copy_from_slice(&vk);
        }
    }
    let n = q.len() / 9;
    let mut p = [0.0; 3];
    for vm in v.chunks_exact(9) {
        p = add(p, mass_sum(core::array::from_fn(|k| at(vm, k))));
    }
    let drift = scale(1.0 / (total * n as f64), p);
    for x in v.chunks_exact_mut(3) {
        for c in 0..3 {
            x[c] -= drift[c];
        }
    }
    v
}

/// A guard ([`zs_runtime::guards`]) against a molecule leaving the cluster: rejects a state in
/// which an oxygen is farther than `limit` (Å) from the oxygens' centroid. The run then stops
/// with [`zs_runtime::StepErrorKind::GuardViolated`] at the last state inside the limit. Checking
/// allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterGuard {
    /// Largest distance of an oxygen from the centroid (Å).
    pub limit: f64,
}

impl ClusterGuard {
    /// Name of the guarded quantity.
    pub const WHAT: &'static str = "largest oxygen distance from the cluster's centroid (Å)";

    /// The largest distance of an oxygen of `q` from the oxygens' centroid.
    pub fn radius(q: &[f64]) -> f64 {
        let n = q.len() / 9;
        let mut c = [0.0; 3];
        for m in q.chunks_exact(9) {
            for k in 0..3 {
                c[k] += m[k] / n as f64;
            }
        }
        q.chunks_exact(9)
            .map(|m| ((m[0] - c[0]).powi(2) + (m[1] - c[1]).powi(2) + (m[2] - c[2]).powi(2)).sqrt())
            .fold(0.0, f64::max)
    }
}

impl<P: ?Sized, V: zs_runtime::Vector> zs_runtime::Observer<P, V> for ClusterGuard {
    fn check(
        &mut self,
        _: &P,
        state: &zs_runtime::StateOf<V>,
    ) -> Result<(), zs_runtime::GuardViolation> {
        let r = Self::radius(state.q.as_slice());
        if r <= self.limit {
            Ok(())
        } else {
            Err(zs_runtime::GuardViolation {
                what: Self::WHAT,
                value: r,
                limit: self.limit,
            })
        }
    }
    fn observe(&mut self, _: &P, _: &zs_runtime::StateOf<V>) {}
}
