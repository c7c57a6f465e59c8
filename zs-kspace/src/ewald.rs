//! The Ewald sum of point charges in an orthorhombic periodic box: the reciprocal-space sum,
//! the self term and the neutralising background, with their gradient and the exact product
//! of their Hessian with a vector. The real-space part, `q_i q_j erfc(α r) / r` under a cutoff,
//! is an ordinary pair term a model writes itself (`zs_runtime::special::erfc`); the
//! excluded pairs' correction `−q_i q_j erf(α r) / r` is a bonded term.
//!
//! With `S(k) = Σ_j q_j e^{i k·r_j}` over the box's reciprocal vectors `k = 2π (n_x/L_x,
//! n_y/L_y, n_z/L_z)`, `k ≠ 0` (Essmann et al. 1995, eqs. 2.1–2.4, in units where the Coulomb
//! constant is 1: multiply by it, e.g. 332.0637 kcal·Å/(mol·e²)):
//!
//! ```text
//! E_recip = (2π/V) Σ_{k≠0} e^{−k²/4α²} / k² · |S(k)|²
//! E_self  = −α/√π Σ_j q_j²
//! E_bg    = −π Q² / (2 V α²)          (Q = Σ q_j: a neutralising background, as LAMMPS
//!                                      and OpenMM; zero for a neutral box)
//! ```
//!
//! The sum runs over half of k-space (k and −k give the same term), `A_k = (4π/V)
//! e^{−k²/4α²}/k²` each; with `C = Re S`, `D = Im S`, `c_j = cos k·r_j`, `s_j = sin k·r_j`:
//!
//! ```text
//! ∇_j E   = Σ_k 2 A_k q_j k (D c_j − C s_j)
//! (H v)_j = Σ_k 2 A_k q_j k [c_j P + s_j R − (C c_j + D s_j) k·v_j],
//!           P = Σ_l q_l c_l k·v_l,  R = Σ_l q_l s_l k·v_l
//! ```
//!
//! — the Hessian's product in one pass over the charges per k, as the gradient: what no
//! engine that differences its forces has. Each `e^{i k·r_j}` is a product of per-axis
//! powers of `e^{2πi x/L}` made once per evaluation (no sine or cosine per k).

use core::f64::consts::PI;

/// Why an [`Ewald`] sum cannot be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EwaldError {
    /// The relative accuracy is not in `(0, 1)`.
    #[error("the Ewald tolerance must be in (0, 1), not {0}")]
    Tolerance(f64),
    /// A side of the box is not finite and positive.
    #[error("the box sides must be finite and positive, not {0:?}")]
    Box([f64; 3]),
    /// The real-space cutoff is not finite and positive, or exceeds half the shortest side
    /// (then a pair would meet more than one image within it).
    #[error("the real-space cutoff {rc} must be positive and at most half the shortest box side ({half})")]
    Cutoff {
        /// The cutoff.
        rc: f64,
        /// Half the shortest side.
        half: f64,
    },
    /// A charge is not finite.
    #[error("the charge of site {site} is {charge}")]
    Charge {
        /// The site, numbered from 0.
        site: usize,
        /// Its charge.
        charge: f64,
    },
    /// More reciprocal vectors than memory allows (a tolerance too small for the box).
    #[error(
        "{0} reciprocal vectors per axis are too many for plain Ewald; use a larger tolerance"
    )]
    TooManyVectors(usize),
    /// A particle-mesh grid larger than memory allows (a tolerance too small for the box).
    #[error("a {}×{}×{} mesh is too large (at most {} points); use a larger tolerance", .0[0], .0[1], .0[2], crate::pme::MAX_POINTS)]
    GridTooLarge([usize; 3]),
    /// A particle-mesh grid side smaller than the spline order, or an order outside 4 ..= 8.
    #[error("a {grid:?} mesh with B-splines of order {order}: the order must be in 4 ..= 8 and each side at least the order")]
    Mesh {
        /// Points per axis.
        grid: [usize; 3],
        /// The spline order.
        order: usize,
    },
}

/// The splitting parameter and the reciprocal vectors of one accuracy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EwaldParameters {
    /// The splitting parameter α (1/length).
    pub alpha: f64,
    /// The largest `|n|` per axis of the reciprocal vectors summed.
    pub kmax: [usize; 3],
}

impl EwaldParameters {
    /// The parameters of relative accuracy `tolerance` (as OpenMM's `ewaldErrorTolerance`,
    /// LAMMPS's `kspace_style ewald δ`): `α = √(−ln δ) / rc`, so that the pairs' terms left out
    /// beyond the cutoff fall as `e^{−α² rc²} = δ` (OpenMM takes `2δ` there, and its forces'
    /// RMS relative error on water is then above `δ`); and per axis the smallest `kmax` whose
    /// first left-out term, `e^{−(π kmax / (α L))²}`, is below `δ`.
    ///
    /// # Errors
    /// A tolerance outside `(0, 1)`, a box side not finite and positive, a cutoff beyond half
    /// the shortest side, more than 512 vectors per axis.
    pub fn from_tolerance(rc: f64, sides: [f64; 3], tolerance: f64) -> Result<Self, EwaldError> {
        let alpha = splitting(rc, sides, tolerance)?;
        let reach = (-tolerance.ln()).sqrt() / PI;
        let mut kmax = [0; 3];
        for (k, &l) in kmax.iter_mut().zip(&sides) {
            let n = (alpha * l * reach).ceil();
            if n > 512.0 {
                return Err(EwaldError::TooManyVectors(n as usize));
            }
            *k = (n as usize).max(1);
        }
        Ok(Self { alpha, kmax })
    }
}

/// `α = √(−ln δ) / rc` after checking the tolerance, the box and the cutoff: the splitting of
/// every reciprocal-space method, where the pairs' terms left out beyond the cutoff fall as
/// `e^{−α² rc²} = δ`. OpenMM takes `2δ` there (`√(−ln 2δ)`); on SPC/E water its forces' RMS
/// relative error is then above `δ` (the cut-off pairs being most of it), at `δ` it is below:
/// the tolerance holds as the relative force error it is stated to be (BENCHMARKS.md,
/// "Charged liquids"), for an α a few per cent larger and a mesh as much finer.
pub(crate) fn splitting(rc: f64, sides: [f64; 3], tolerance: f64) -> Result<f64, EwaldError> {
    if !(tolerance > 0.0 && tolerance < 1.0) {
        return Err(EwaldError::Tolerance(tolerance));
    }
    check_box(sides)?;
    let half = 0.5 * sides.iter().fold(f64::INFINITY, |m, &s| m.min(s));
    if !(rc > 0.0 && rc <= half) {
        return Err(EwaldError::Cutoff { rc, half });
    }
    Ok((-tolerance.ln()).max(f64::MIN_POSITIVE).sqrt() / rc)
}

pub(crate) fn check_box(sides: [f64; 3]) -> Result<(), EwaldError> {
    if sides.iter().all(|s| s.is_finite() && *s > 0.0) {
        Ok(())
    } else {
        Err(EwaldError::Box(sides))
    }
}

/// The self and background terms, `−α/√π Σ q² − π Q² / (2 V α²)`, after checking that every
/// charge is finite.
pub(crate) fn constant_terms(
    charges: &[f64],
    sides: [f64; 3],
    alpha: f64,
) -> Result<f64, EwaldError> {
    if let Some((site, &charge)) = charges.iter().enumerate().find(|(_, q)| !q.is_finite()) {
        return Err(EwaldError::Charge { site, charge });
    }
    let volume = sides[0] * sides[1] * sides[2];
    let total: f64 = charges.iter().sum();
    let squares: f64 = charges.iter().map(|q| q * q).sum();
    Ok(-alpha / PI.sqrt() * squares - PI * total * total / (2.0 * volume * alpha * alpha))
}

/// The reciprocal-space, self and background terms of the Ewald sum of fixed charges in an
/// orthorhombic box, over positions `q` (3 coordinates per charge, in order). Set-up makes the
/// reciprocal vectors and their weights; evaluations reuse its scratch (no allocation).
#[derive(Debug, Clone)]
pub struct Ewald {
    params: EwaldParameters,
    sides: [f64; 3],
    charges: Vec<f64>,
    /// Half of k-space: per vector, `(n_x, n_y, n_z)`, `k` and `A_k`.
    vectors: Vec<([i32; 3], [f64; 3], f64)>,
    /// The constant terms: self and background.
    constant: f64,
    /// Per charge and axis, `e^{i n 2π x/L}` for `n = 0 ..= kmax` (real, imaginary).
    powers: [Vec<(f64, f64)>; 3],
}

impl Ewald {
    /// The sum over `charges` in a box of `sides` with `params`.
    ///
    /// # Errors
    /// A side not finite and positive, a charge not finite.
    pub fn new(
        charges: Vec<f64>,
        sides: [f64; 3],
        params: EwaldParameters,
    ) -> Result<Self, EwaldError> {
        check_box(sides)?;
        let constant = constant_terms(&charges, sides, params.alpha)?;
        let alpha = params.alpha;
        let volume = sides[0] * sides[1] * sides[2];
        let [kx, ky, kz] = params.kmax.map(|k| k as i32);
        let mut vectors = Vec::new();
        // Half of k-space: n_x > 0, or n_x = 0 and n_y > 0, or n_x = n_y = 0 and n_z > 0.
        for nx in 0..=kx {
            for ny in -ky..=ky {
                for nz in -kz..=kz {
                    let half = nx > 0 || (nx == 0 && (ny > 0 || (ny == 0 && nz > 0)));
                    if !half {
                        continue;
                    }
                    let n = [nx, ny, nz];
                    let k: [f64; 3] =
                        core::array::from_fn(|a| 2.0 * PI * f64::from(n[a]) / sides[a]);
                    let k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
                    let weight = 4.0 * PI / volume * (-k2 / (4.0 * alpha * alpha)).exp() / k2;
                    vectors.push((n, k, weight));
                }
            }
        }
        let n = charges.len();
        let powers = core::array::from_fn(|a| vec![(0.0, 0.0); n * (params.kmax[a] + 1)]);
        Ok(Self {
            params,
            sides,
            charges,
            vectors,
            constant,
            powers,
        })
    }

    /// The parameters.
    pub fn parameters(&self) -> EwaldParameters {
        self.params
    }

    /// Number of reciprocal vectors summed (half of k-space).
    pub fn vectors(&self) -> usize {
        self.vectors.len()
    }

    /// Number of coordinates (3 per charge).
    pub fn dimension(&self) -> usize {
        3 * self.charges.len()
    }

    /// `e^{i n 2π x_j/L}` for every charge, axis and `n ≤ kmax`, from `q`.
    fn make_powers(&mut self, q: &[f64]) {
        assert_eq!(
            q.len(),
            self.dimension(),
            "Ewald: positions of another size"
        );
        for a in 0..3 {
            let m = self.params.kmax[a] + 1;
            let l = self.sides[a];
            for (j, row) in self.powers[a].chunks_exact_mut(m).enumerate() {
                let (s, c) = (2.0 * PI * q[3 * j + a] / l).sin_cos();
                row[0] = (1.0, 0.0);
                for n in 1..m {
                    let (re, im) = row[n - 1];
                    row[n] = (re * c - im * s, re * s + im * c);
                }
            }
        }
    }

    /// `e^{i k·r_j}` of vector `n` for charge `j`, from the per-axis powers (a negative `n`
    /// is the conjugate).
    #[inline]
    fn phase(&self, n: [i32; 3], j: usize) -> (f64, f64) {
        let mut acc = (1.0, 0.0);
        for (a, &na) in n.iter().enumerate() {
            let m = self.params.kmax[a] + 1;
            let (re, im) = self.powers[a][j * m + na.unsigned_abs() as usize];
            let im = if na < 0 { -im } else { im };
            acc = (acc.0 * re - acc.1 * im, acc.0 * im + acc.1 * re);
        }
        acc
    }

    /// `E_recip + E_self + E_bg` at `q`.
    pub fn energy(&mut self, q: &[f64]) -> f64 {
        self.make_powers(q);
        let mut e = 0.0;
        for &(n, _, weight) in &self.vectors {
            let (c, d) = self.structure_factor(n);
            e += weight * (c * c + d * d);
        }
        e + self.constant
    }

    /// `S(k) = Σ_j q_j e^{i k·r_j}` as `(C, D)`.
    fn structure_factor(&self, n: [i32; 3]) -> (f64, f64) {
        let (mut c, mut d) = (0.0, 0.0);
        for (j, &qj) in self.charges.iter().enumerate() {
            let (re, im) = self.phase(n, j);
            c += qj * re;
            d += qj * im;
        }
        (c, d)
    }

    /// The energy at `q`, and its gradient into `g` (overwritten).
    pub fn energy_gradient(&mut self, q: &[f64], g: &mut [f64]) -> f64 {
        assert_eq!(g.len(), self.dimension(), "Ewald: gradient of another size");
        self.make_powers(q);
        g.fill(0.0);
        let mut e = 0.0;
        for &(n, k, weight) in &self.vectors {
            let (c, d) = self.structure_factor(n);
            e += weight * (c * c + d * d);
            for (j, &qj) in self.charges.iter().enumerate() {
                let (cj, sj) = self.phase(n, j);
                let f = 2.0 * weight * qj * (d * cj - c * sj);
                for a in 0..3 {
                    g[3 * j + a] += f * k[a];
                }
            }
        }
        e + self.constant
    }

    /// `H(q) v` into `out` (overwritten): the exact Hessian of the energy applied to `v`.
    pub fn hessian_times(&mut self, q: &[f64], v: &[f64], out: &mut [f64]) {
        let n3 = self.dimension();
        assert!(
            v.len() == n3 && out.len() == n3,
            "Ewald: vectors of another size"
        );
        self.make_powers(q);
        out.fill(0.0);
        for &(n, k, weight) in &self.vectors {
            let (mut c, mut d, mut p, mut r) = (0.0, 0.0, 0.0, 0.0);
            for (j, &qj) in self.charges.iter().enumerate() {
                let (cj, sj) = self.phase(n, j);
                let kv = k[0] * v[3 * j] + k[1] * v[3 * j + 1] + k[2] * v[3 * j + 2];
                c += qj * cj;
                d += qj * sj;
                p += qj * cj * kv;
                r += qj * sj * kv;
            }
            for (j, &qj) in self.charges.iter().enumerate() {
                let (cj, sj) = self.phase(n, j);
                let kv = k[0] * v[3 * j] + k[1] * v[3 * j + 1] + k[2] * v[3 * j + 2];
                let f = 2.0 * weight * qj * (cj * p + sj * r - (c * cj + d * sj) * kv);
                for a in 0..3 {
                    out[3 * j + a] += f * k[a];
                }
            }
        }
    }
}
