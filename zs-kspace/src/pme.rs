//! Smooth particle-mesh Ewald (Essmann et al. 1995): the reciprocal-space sum of
//! [`crate::ewald`] with the structure factor interpolated on a mesh by cardinal B-splines and
//! summed by a 3-D FFT, in `O(N + K log K)` for `K` mesh points instead of `O(N K)`; with the
//! self and background terms, the gradient, and the exact product of the Hessian with a vector.
//!
//! Each charge is spread onto the mesh by a product of three B-splines of order `n` in its
//! scaled fractional coordinates `u_a = K_a x_a / L_a` (eq. 4.6):
//! `Q(k) = Σ_i q_i Π_a M_n(u_ia − k_a)`, periodic in `k`. With `Ŝ = FFT(Q)` and the influence
//! function (eqs. 4.7–4.8, in units where the Coulomb constant is 1)
//!
//! ```text
//! C(m) = e^{−π²|m̃|²/α²} / (π V |m̃|²) · B₁(m₁) B₂(m₂) B₃(m₃),   m̃ = (m₁/L₁, m₂/L₂, m₃/L₃),
//! B_a(m) = |Σ_{k=0}^{n−2} M_n(k+1) e^{2πi m k/K_a}|⁻²,          C(0) = 0,
//! ```
//!
//! the energy is `E = ½ Σ_m C(m) |Ŝ(m)|² = ½ Σ_k Q(k) φ(k)` with the mesh potential
//! `φ = FFT⁻¹(C · Ŝ)` (unnormalised). `Q` is linear in the charges, so
//!
//! ```text
//! ∇_i E     = q_i Σ_k ∇W_i(k) φ(k),                    W_i(k) = Π_a M_n(u_ia − k_a)
//! (H v)_i   = q_i Σ_k ∇W_i(k) ψ(k) + q_i Σ_k φ(k) ∇∇W_i(k) v_i,
//!             ψ = FFT⁻¹(C · FFT(D)),  D(k) = Σ_j q_j ∇W_j(k) · v_j
//! ```
//!
//! — the Hessian of the interpolated energy itself (so that it is the derivative of the
//! gradient a step uses), through the B-splines' first and second derivatives
//! (`M_n' (u) = M_{n−1}(u) − M_{n−1}(u−1)`, eq. 4.2's recursion once more): two FFTs more than
//! the gradient.
//!
//! The splines, the spreading and the gathering run on rayon's pool, the FFTs in one thread:
//! the same bits at every pool size. The splines and the gathering are per charge; the mesh is
//! spread in eight slabs of planes along its first axis, each slab summing every charge's
//! share of its own planes in the charges' order — so each mesh point is the same sum, in the
//! same order, however the slabs are shared among threads (no atomic adds, no partial meshes).
//! The mesh, its spectrum and the FFTs' scratch are made at set-up; an evaluation allocates
//! nothing.

use core::f64::consts::PI;
use std::sync::Arc;

use rayon::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use crate::ewald::{check_box, constant_terms, splitting, EwaldError};

/// The largest B-spline order.
pub const MAX_ORDER: usize = 8;

/// `$body` with `$N` a constant equal to the spline order `$n` (4 ..= [`MAX_ORDER`]), so that
/// the loops over a charge's `n` (or `n³`) points are unrolled for each order.
macro_rules! with_order {
    ($n:expr, $N:ident => $body:expr) => {
        match $n {
            4 => {
                const $N: usize = 4;
                $body
            }
            5 => {
                const $N: usize = 5;
                $body
            }
            6 => {
                const $N: usize = 6;
                $body
            }
            7 => {
                const $N: usize = 7;
                $body
            }
            _ => {
                const $N: usize = MAX_ORDER;
                $body
            }
        }
    };
}

/// The most mesh points a [`Pme`] accepts: 2²⁷, about 3 GiB of meshes and spectrum.
pub const MAX_POINTS: usize = 1 << 27;

/// The splitting parameter, the mesh and the spline order of one accuracy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PmeParameters {
    /// The splitting parameter α (1/length).
    pub alpha: f64,
    /// Mesh points per axis.
    pub grid: [usize; 3],
    /// The order `n` of the cardinal B-splines (4 ..= 8; cubic is 4).
    pub order: usize,
}

impl PmeParameters {
    /// The parameters for relative force accuracy `tolerance` (as OpenMM's
    /// `ewaldErrorTolerance`): `α = √(−ln δ) / rc` ([`crate::ewald`]'s splitting, where OpenMM
    /// takes `2δ`), and OpenMM's mesh and order at that α (the "Ewald summation" section of
    /// its user guide): splines of order 5, and per axis the smallest size with prime factors
    /// 2, 3, 5 and 7 that is at least `max(6, 2αL / (3 δ^{1/5}))`.
    ///
    /// # Errors
    /// A tolerance outside `(0, 1)`, a box side not finite and positive, a cutoff beyond half
    /// the shortest side, more than [`MAX_POINTS`] mesh points.
    pub fn from_tolerance(rc: f64, sides: [f64; 3], tolerance: f64) -> Result<Self, EwaldError> {
        let alpha = splitting(rc, sides, tolerance)?;
        let mut grid = [0; 3];
        for (k, &l) in grid.iter_mut().zip(&sides) {
            let want = (2.0 * alpha * l / (3.0 * tolerance.powf(0.2))).ceil();
            if want > MAX_POINTS as f64 {
                return Err(EwaldError::GridTooLarge([usize::MAX; 3]));
            }
            *k = fft_size((want as usize).max(6));
        }
        let params = Self {
            alpha,
            grid,
            order: 5,
        };
        params.check()?;
        Ok(params)
    }

    fn check(&self) -> Result<(), EwaldError> {
        let [a, b, c] = self.grid;
        let points = a.checked_mul(b).and_then(|ab| ab.checked_mul(c));
        if points.is_none_or(|p| p > MAX_POINTS) {
            return Err(EwaldError::GridTooLarge(self.grid));
        }
        if !(4..=MAX_ORDER).contains(&self.order) || self.grid.iter().any(|&k| k < self.order) {
            return Err(EwaldError::Mesh {
                grid: self.grid,
                order: self.order,
            });
        }
        Ok(())
    }
}

/// The smallest `k ≥ n` whose prime factors are 2, 3, 5 and 7 (sizes the FFT does fastest).
fn fft_size(n: usize) -> usize {
    (n..)
        .find(|&k| {
            let mut r = k;
            for p in [2, 3, 5, 7] {
                while r % p == 0 {
                    r /= p;
                }
            }
            r == 1
        })
        .expect("a 7-smooth number follows every n")
}

/// `M_p(w + j)` for `j < p` at `p = n − 2, n − 1, n` (rows 0, 1, 2), `0 ≤ w < 1`, by the
/// recursion `M_p(x) = (x M_{p−1}(x) + (p − x) M_{p−1}(x − 1)) / (p − 1)` from `M_1 = 1` on
/// `[0, 1)` (Essmann et al., eq. 4.1).
fn cardinal(w: f64, n: usize) -> [[f64; MAX_ORDER]; 3] {
    with_order!(n, N => cardinal_n::<N>(w))
}

/// [`cardinal`] for order `N`: the recursion on all [`MAX_ORDER`] points at once (`M_p(w + j)`
/// for `j ≥ p` is 0 by the same formula), so that each order is a few operations on whole
/// vectors rather than a loop of scalar ones; the same arithmetic, point by point, as the
/// recursion written per point.
#[inline(always)]
fn cardinal_n<const N: usize>(w: f64) -> [[f64; MAX_ORDER]; 3] {
    let x: [f64; MAX_ORDER] = core::array::from_fn(|j| w + j as f64);
    let mut v = [0.0; MAX_ORDER];
    v[0] = 1.0;
    let mut rows = [[0.0; MAX_ORDER]; 3];
    for p in 2..=N {
        let inv = 1.0 / (p - 1) as f64;
        let below = shifted(&v, 1);
        v = core::array::from_fn(|j| (x[j] * v[j] + (p as f64 - x[j]) * below[j]) * inv);
        if p + 2 >= N {
            rows[p + 2 - N] = v;
        }
    }
    rows
}

/// `r[j − d]`, 0 below `j = d`.
#[inline(always)]
fn shifted(r: &[f64; MAX_ORDER], d: usize) -> [f64; MAX_ORDER] {
    core::array::from_fn(|j| if j >= d { r[j - d] } else { 0.0 })
}

/// `u`'s mesh cell on an axis of `k` points: `(u − ⌊u⌋, ⌊u⌋ mod k)`. `⌊u⌋` without a call
/// to libm's `floor` (the baseline x86-64 has no rounding instruction), and the residue
/// without a division when `u` is in the box.
#[inline(always)]
fn cell(u: f64, k: usize) -> (f64, usize) {
    let t = u as i64;
    let fi = if (t as f64) > u { t - 1 } else { t };
    let base = if (0..k as i64).contains(&fi) {
        fi as usize
    } else {
        fi.rem_euclid(k as i64) as usize
    };
    (u - fi as f64, base)
}

/// One charge's B-spline weights along one axis: values and first derivatives in `u` at
/// `w + j` for mesh point `at[j] = base − j` (mod `K`), `j < n` (the wrapped indices made
/// once here, not at each of the `n³` mesh points a charge touches). The second derivatives,
/// which only the Hessian's product reads, are [`curvature`]'s: a charge's three axes are
/// 504 bytes, read twice per evaluation, so that the weights of a few thousand charges stay
/// in a core's L2 cache.
#[derive(Debug, Clone, Copy, Default)]
struct Axis {
    w: [f64; MAX_ORDER],
    dw: [f64; MAX_ORDER],
    at: [u32; MAX_ORDER],
    /// `at[n − 1]` when the points `at[n − 1] ..= at[0]` are one run (no wrap: the mesh
    /// points of `w[n − 1 − m]` are `low + m`), else [`NO_RUN`].
    low: u32,
}

impl Axis {
    /// The weights of order `N` at scaled coordinate `u` on an axis of `k` points, written in
    /// place (not built on the stack and copied).
    #[inline(always)]
    fn set<const N: usize>(&mut self, u: f64, k: usize) {
        let (w, base) = cell(u, k);
        let [_, r1, r2] = cardinal_n::<N>(w);
        self.w = r2;
        self.low = if base + 1 >= N {
            (base + 1 - N) as u32
        } else {
            NO_RUN
        };
        for j in 0..N {
            self.at[j] = (if j <= base { base - j } else { base + k - j }) as u32;
        }
        let r1_1 = shifted(&r1, 1);
        self.dw = core::array::from_fn(|j| r1[j] - r1_1[j]);
    }
}

/// The second derivatives in `u` of the weights [`Axis::set`] makes at `u`.
#[inline(always)]
fn curvature<const N: usize>(u: f64, k: usize) -> [f64; MAX_ORDER] {
    let [r0, ..] = cardinal_n::<N>(cell(u, k).0);
    let (r0_1, r0_2) = (shifted(&r0, 1), shifted(&r0, 2));
    core::array::from_fn(|j| r0[j] - 2.0 * r0_1[j] + r0_2[j])
}

/// [`Axis::low`] of a charge whose points wrap around the mesh's end.
const NO_RUN: u32 = u32::MAX;

/// Which factor of a charge's weights along an axis a [`Share`] takes.
#[derive(Clone, Copy)]
enum Factor {
    /// The values `M_n`.
    Value,
    /// The first derivatives.
    Slope,
}

impl Factor {
    #[inline(always)]
    fn of(self, a: &Axis) -> &[f64; MAX_ORDER] {
        match self {
            Factor::Value => &a.w,
            Factor::Slope => &a.dw,
        }
    }
}

/// One charge's share of a mesh: up to three products of per-axis factors (values or
/// derivatives of its splines), each with a coefficient (named, not copied: the weights stay
/// where [`Pme::make_splines`] put them).
type Share = [([Factor; 3], f64); 3];

/// Slabs of the mesh's first axis spread in parallel ([module docs](self)).
const SLABS: usize = 8;
/// Charges per task of the per-charge loops (splines, gathering).
const CHARGES_PER_TASK: usize = 256;

/// `mesh = Σ_i share_i`: `Q` (one product of values, coefficient `q_i`) or `D` (three, one
/// derivative each), in the charges' order, by slabs of planes along axis 0.
fn spread(
    splines: &[[Axis; 3]],
    bases: &[u32],
    mesh: &mut [f64],
    grid: [usize; 3],
    n: usize,
    share: impl Fn(usize) -> Share + Sync,
) {
    with_order!(n, N => spread_n::<N>(splines, bases, mesh, grid, share))
}

/// [`spread`] for splines of order `N`.
fn spread_n<const N: usize>(
    splines: &[[Axis; 3]],
    bases: &[u32],
    mesh: &mut [f64],
    [k0, k1, k2]: [usize; 3],
    share: impl Fn(usize) -> Share + Sync,
) {
    let plane = k1 * k2;
    let planes = k0.div_ceil(SLABS);
    mesh.par_chunks_mut(planes * plane)
        .enumerate()
        .for_each(|(slab, mesh)| {
            mesh.fill(0.0);
            let first = slab * planes;
            let owned = first..first + mesh.len() / plane;
            for (i, (s, &base)) in splines.iter().zip(bases).enumerate() {
                // Planes `base − j`, `j < N` (mod K₀), meet the slab's `len` planes from
                // `first` when `base − first` (mod K₀) is below `len + N − 1` — read from the
                // compact `bases`, not from each charge's weights (a cache line apiece).
                let base = base as usize;
                let d = if base >= first {
                    base - first
                } else {
                    base + k0 - first
                };
                if d >= owned.len() + N - 1 {
                    continue;
                }
                for ([fx, fy, fz], c) in share(i) {
                    if c == 0.0 {
                        continue;
                    }
                    let (x, y, z) = (fx.of(&s[0]), fy.of(&s[1]), fz.of(&s[2]));
                    for (&i0, x) in s[0].at[..N].iter().zip(&x[..N]) {
                        let i0 = i0 as usize;
                        if !owned.contains(&i0) {
                            continue;
                        }
                        let w0 = c * x;
                        for (&i1, y) in s[1].at[..N].iter().zip(&y[..N]) {
                            let row = &mut mesh[((i0 - first) * k1 + i1 as usize) * k2..][..k2];
                            let w01 = w0 * y;
                            let low = s[2].low as usize;
                            if let Some(run) = row.get_mut(low..low.wrapping_add(N)) {
                                // One run of points: no index per point.
                                for (m, z) in run.iter_mut().zip(z[..N].iter().rev()) {
                                    *m += w01 * z;
                                }
                            } else {
                                for (&i2, z) in s[2].at[..N].iter().zip(&z[..N]) {
                                    row[i2 as usize] += w01 * z;
                                }
                            }
                        }
                    }
                }
            }
        });
}

/// Charges' weights of order `N` at positions `q` (3 coordinates each), and their first mesh
/// indices along axis 0.
fn splines_n<const N: usize>(
    splines: &mut [[Axis; 3]],
    bases: &mut [u32],
    q: &[f64],
    grid: [usize; 3],
    sides: [f64; 3],
) {
    for ((s, b), x) in splines.iter_mut().zip(bases).zip(q.chunks_exact(3)) {
        for (a, axis) in s.iter_mut().enumerate() {
            axis.set::<N>(grid[a] as f64 * x[a] / sides[a], grid[a]);
        }
        *b = s[0].at[0];
    }
}

/// The reciprocal-space, self and background terms of the Ewald sum of fixed charges in an
/// orthorhombic box by smooth PME, over positions `q` (3 coordinates per charge, in order).
#[derive(Clone)]
pub struct Pme {
    params: PmeParameters,
    sides: [f64; 3],
    charges: Vec<f64>,
    constant: f64,
    /// `C(m)` over the half spectrum `[K₀][K₁][K₂/2 + 1]`.
    influence: Vec<f64>,
    /// Per charge and axis, its spline weights at the last positions.
    splines: Vec<[Axis; 3]>,
    /// Per charge and axis, its weights' second derivatives (made for the Hessian's product
    /// only).
    curvatures: Vec<[[f64; MAX_ORDER]; 3]>,
    /// Per charge, its first mesh index along axis 0 (`splines[i][0].at[0]`).
    bases: Vec<u32>,
    /// The charge mesh `Q` (or `D`), `[K₀][K₁][K₂]`, the last axis contiguous.
    mesh: Vec<f64>,
    /// The mesh potential `φ`.
    phi: Vec<f64>,
    /// `ψ`, for the Hessian's product.
    psi: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    /// A slab of lines along axis 0 or 1, gathered contiguous.
    lines: Vec<Complex<f64>>,
    row: Vec<f64>,
    scratch: Vec<Complex<f64>>,
    r2c: Arc<dyn RealToComplex<f64>>,
    c2r: Arc<dyn ComplexToReal<f64>>,
    forward: [Arc<dyn Fft<f64>>; 2],
    inverse: [Arc<dyn Fft<f64>>; 2],
}

impl core::fmt::Debug for Pme {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pme")
            .field("params", &self.params)
            .field("sides", &self.sides)
            .field("charges", &self.charges.len())
            .finish_non_exhaustive()
    }
}

impl Pme {
    /// The sum over `charges` in a box of `sides` with `params`: the FFT plans, the influence
    /// function and every mesh made here.
    ///
    /// # Errors
    /// A side not finite and positive, a charge not finite, a mesh too large, an order outside
    /// 4 ..= 8 or above a mesh side.
    pub fn new(
        charges: Vec<f64>,
        sides: [f64; 3],
        params: PmeParameters,
    ) -> Result<Self, EwaldError> {
        check_box(sides)?;
        params.check()?;
        let constant = constant_terms(&charges, sides, params.alpha)?;
        let [k0, k1, k2] = params.grid;
        let half = k2 / 2 + 1;
        let mut real = RealFftPlanner::<f64>::new();
        let (r2c, c2r) = (real.plan_fft_forward(k2), real.plan_fft_inverse(k2));
        let mut planner = FftPlanner::<f64>::new();
        let forward = [planner.plan_fft_forward(k0), planner.plan_fft_forward(k1)];
        let inverse = [planner.plan_fft_inverse(k0), planner.plan_fft_inverse(k1)];
        let scratch_len = [r2c.get_scratch_len(), c2r.get_scratch_len()]
            .into_iter()
            .chain(
                forward
                    .iter()
                    .chain(&inverse)
                    .map(|f| f.get_inplace_scratch_len()),
            )
            .max()
            .unwrap_or(0);
        let points = k0 * k1 * k2;
        let mut pme = Self {
            params,
            sides,
            splines: vec![[Axis::default(); 3]; charges.len()],
            curvatures: vec![[[0.0; MAX_ORDER]; 3]; charges.len()],
            bases: vec![0; charges.len()],
            charges,
            constant,
            influence: vec![0.0; k0 * k1 * half],
            mesh: vec![0.0; points],
            phi: vec![0.0; points],
            psi: vec![0.0; points],
            spectrum: vec![Complex::default(); k0 * k1 * half],
            lines: vec![Complex::default(); k0.max(k1) * half],
            row: vec![0.0; k2],
            scratch: vec![Complex::default(); scratch_len],
            r2c,
            c2r,
            forward,
            inverse,
        };
        pme.make_influence();
        Ok(pme)
    }

    /// The parameters.
    pub fn parameters(&self) -> PmeParameters {
        self.params
    }

    /// Number of coordinates (3 per charge).
    pub fn dimension(&self) -> usize {
        3 * self.charges.len()
    }

    /// `C(m)` over the half spectrum (eqs. 4.7–4.8; `B_a` at a zero of its denominator, which
    /// odd orders have at `m = K/2`, is the mean of its neighbours, as OpenMM does).
    fn make_influence(&mut self) {
        let PmeParameters { alpha, grid, order } = self.params;
        let moduli: [Vec<f64>; 3] = core::array::from_fn(|a| {
            let k = grid[a];
            let m_int = cardinal(0.0, order)[2];
            let mut b: Vec<f64> = (0..k)
                .map(|m| {
                    let (mut re, mut im) = (0.0, 0.0);
                    for (j, &mj) in m_int[1..order].iter().enumerate() {
                        let (s, c) = (2.0 * PI * (m * j) as f64 / k as f64).sin_cos();
                        re += mj * c;
                        im += mj * s;
                    }
                    re * re + im * im
                })
                .collect();
            for m in 0..k {
                if b[m] < 1e-7 {
                    b[m] = 0.5 * (b[(m + k - 1) % k] + b[(m + 1) % k]);
                }
            }
            b.into_iter().map(|d| 1.0 / d).collect()
        });
        let [k0, k1, k2] = grid;
        let half = k2 / 2 + 1;
        let volume = self.sides.iter().product::<f64>();
        let fold = |m: usize, k: usize| {
            if m <= k / 2 {
                m as f64
            } else {
                m as f64 - k as f64
            }
        };
        for m0 in 0..k0 {
            for m1 in 0..k1 {
                for m2 in 0..half {
                    let mt = [fold(m0, k0), fold(m1, k1), m2 as f64];
                    let m2sq: f64 = (0..3).map(|a| (mt[a] / self.sides[a]).powi(2)).sum();
                    let c = if m2sq == 0.0 {
                        0.0
                    } else {
                        (-PI * PI * m2sq / (alpha * alpha)).exp() / (PI * volume * m2sq)
                            * moduli[0][m0]
                            * moduli[1][m1]
                            * moduli[2][m2]
                    };
                    self.influence[(m0 * k1 + m1) * half + m2] = c;
                }
            }
        }
    }

    /// Every charge's spline weights at `q`.
    fn make_splines(&mut self, q: &[f64]) {
        assert_eq!(q.len(), self.dimension(), "PME: positions of another size");
        let (grid, n, sides) = (self.params.grid, self.params.order, self.sides);
        self.splines
            .par_chunks_mut(CHARGES_PER_TASK)
            .zip(self.bases.par_chunks_mut(CHARGES_PER_TASK))
            .zip(q.par_chunks(3 * CHARGES_PER_TASK))
            .for_each(|((splines, bases), q)| {
                with_order!(n, N => splines_n::<N>(splines, bases, q, grid, sides))
            });
    }

    /// Every charge's [`curvature`]s at `q`.
    fn make_curvatures(&mut self, q: &[f64]) {
        let (grid, n, sides) = (self.params.grid, self.params.order, self.sides);
        self.curvatures
            .par_chunks_mut(CHARGES_PER_TASK)
            .zip(q.par_chunks(3 * CHARGES_PER_TASK))
            .for_each(|(curvatures, q)| {
                for (c, x) in curvatures.iter_mut().zip(q.chunks_exact(3)) {
                    for (a, c) in c.iter_mut().enumerate() {
                        let u = grid[a] as f64 * x[a] / sides[a];
                        *c = with_order!(n, N => curvature::<N>(u, grid[a]));
                    }
                }
            });
    }

    /// `φ` (or `ψ`) `= FFT⁻¹(C · FFT(mesh))`, unnormalised (the mesh is kept).
    fn convolve(&mut self, into_psi: bool) {
        let k2 = self.params.grid[2];
        let half = k2 / 2 + 1;
        for (row, spec) in self
            .mesh
            .chunks_exact(k2)
            .zip(self.spectrum.chunks_exact_mut(half))
        {
            self.row.copy_from_slice(row);
            self.r2c
                .process_with_scratch(&mut self.row, spec, &mut self.scratch)
                .expect("PME: the planned lengths");
        }
        self.along(1, true);
        self.along(0, true);
        for (s, c) in self.spectrum.iter_mut().zip(&self.influence) {
            *s *= *c;
        }
        self.along(0, false);
        self.along(1, false);
        let out = if into_psi {
            &mut self.psi
        } else {
            &mut self.phi
        };
        for (spec, row) in self
            .spectrum
            .chunks_exact_mut(half)
            .zip(out.chunks_exact_mut(k2))
        {
            // The result is real: the imaginary parts the inverse transform of a real mesh's
            // spectrum leaves at m₂ = 0 and K₂/2 are rounding.
            spec[0].im = 0.0;
            if k2.is_multiple_of(2) {
                spec[half - 1].im = 0.0;
            }
            self.c2r
                .process_with_scratch(spec, row, &mut self.scratch)
                .expect("PME: the planned lengths, real ends");
        }
    }

    /// The complex FFT along `axis` (0 or 1) of the spectrum, a slab of lines at a time.
    fn along(&mut self, axis: usize, forward: bool) {
        let [k0, k1, k2] = self.params.grid;
        let half = k2 / 2 + 1;
        let (len, stride, outer, outer_stride) = if axis == 0 {
            (k0, k1 * half, k1, half)
        } else {
            (k1, half, k0, k1 * half)
        };
        let fft = if forward {
            &self.forward[axis]
        } else {
            &self.inverse[axis]
        };
        let lines = &mut self.lines[..len * half];
        for o in 0..outer {
            let base = o * outer_stride;
            for t in 0..len {
                for m2 in 0..half {
                    lines[m2 * len + t] = self.spectrum[base + t * stride + m2];
                }
            }
            fft.process_with_scratch(lines, &mut self.scratch);
            for t in 0..len {
                for m2 in 0..half {
                    self.spectrum[base + t * stride + m2] = lines[m2 * len + t];
                }
            }
        }
    }

    /// `Σ_k ∂_a W_i(k) f(k)` per axis `a` (derivatives in `u`) for charge `i`.
    fn gather(&self, i: usize, f: &[f64]) -> [f64; 3] {
        with_order!(self.params.order, N => self.moments::<N, false>(i, f).0)
    }

    /// `Σ_k Σ_b ∂_a∂_b W_i(k) f(k) dv_b` per axis `a` for charge `i` (its [`curvature`]s
    /// made).
    fn gather_curvature(&self, i: usize, f: &[f64], dv: [f64; 3]) -> [f64; 3] {
        let [xx, xy, xz, yy, yz, zz] =
            with_order!(self.params.order, N => self.moments::<N, true>(i, f).1);
        [
            xx * dv[0] + xy * dv[1] + xz * dv[2],
            xy * dv[0] + yy * dv[1] + yz * dv[2],
            xz * dv[0] + yz * dv[1] + zz * dv[2],
        ]
    }

    /// Charge `i`'s moments of `f` on its `N³` points: `Σ_k ∂_a W_i(k) f(k)` (a = x, y, z)
    /// and, with `SECOND`, `Σ_k ∂_a∂_b W_i(k) f(k)` (xx, xy, xz, yy, yz, zz). Contracted one
    /// axis at a time — each line of `N` points along the last axis summed against that
    /// axis's factors, those sums against the middle axis's, then the first's — so that a
    /// charge costs `O(N²)` products rather than a product of three factors at each of its
    /// `N³` points, with no chain of `N³` dependent additions.
    #[inline(always)]
    fn moments<const N: usize, const SECOND: bool>(
        &self,
        i: usize,
        f: &[f64],
    ) -> ([f64; 3], [f64; 6]) {
        let [_, k1, k2] = self.params.grid;
        let [sx, sy, sz] = &self.splines[i];
        let curvature = &self.curvatures[i];
        let (mut first, mut second) = ([0.0; 3], [0.0; 6]);
        for j0 in 0..N {
            let plane = sx.at[j0] as usize * k1;
            // `y[d][e]`: this plane's sum with `d` derivatives along y and `e` along z.
            let mut y = [[0.0; 3]; 3];
            for j1 in 0..N {
                let row = &f[(plane + sy.at[j1] as usize) * k2..][..k2];
                // `z[e]`: the line's sum with `e` derivatives along z.
                let mut z = [0.0; 3];
                for j2 in 0..N {
                    let p = row[sz.at[j2] as usize];
                    z[0] += sz.w[j2] * p;
                    z[1] += sz.dw[j2] * p;
                    if SECOND {
                        z[2] += curvature[2][j2] * p;
                    }
                }
                let (w, dw) = (sy.w[j1], sy.dw[j1]);
                y[0][0] += w * z[0];
                y[1][0] += dw * z[0];
                y[0][1] += w * z[1];
                if SECOND {
                    y[2][0] += curvature[1][j1] * z[0];
                    y[1][1] += dw * z[1];
                    y[0][2] += w * z[2];
                }
            }
            let (w, dw) = (sx.w[j0], sx.dw[j0]);
            first[0] += dw * y[0][0];
            first[1] += w * y[1][0];
            first[2] += w * y[0][1];
            if SECOND {
                second[0] += curvature[0][j0] * y[0][0];
                second[1] += dw * y[1][0];
                second[2] += dw * y[0][1];
                second[3] += w * y[2][0];
                second[4] += w * y[1][1];
                second[5] += w * y[0][2];
            }
        }
        (first, second)
    }

    /// `K_a / L_a`: `du/dx` per axis.
    fn scale(&self) -> [f64; 3] {
        core::array::from_fn(|a| self.params.grid[a] as f64 / self.sides[a])
    }

    /// The charge mesh `Q` and its potential `φ` at `q`.
    fn potential(&mut self, q: &[f64]) {
        self.make_splines(q);
        let charges = &self.charges;
        let (grid, n) = (self.params.grid, self.params.order);
        spread(&self.splines, &self.bases, &mut self.mesh, grid, n, |i| {
            let none = ([Factor::Value; 3], 0.0);
            [([Factor::Value; 3], charges[i]), none, none]
        });
        self.convolve(false);
    }

    /// `½ Σ_k Q(k) φ(k)` of the last [`Pme::potential`], plus the self and background terms.
    fn mesh_energy(&self) -> f64 {
        let dot: f64 = self.mesh.iter().zip(&self.phi).map(|(a, b)| a * b).sum();
        0.5 * dot + self.constant
    }

    /// `E_recip + E_self + E_bg` at `q`.
    pub fn energy(&mut self, q: &[f64]) -> f64 {
        self.potential(q);
        self.mesh_energy()
    }

    /// The energy at `q`, and its gradient into `g` (overwritten).
    pub fn energy_gradient(&mut self, q: &[f64], g: &mut [f64]) -> f64 {
        assert_eq!(g.len(), self.dimension(), "PME: gradient of another size");
        self.potential(q);
        let scale = self.scale();
        let this = &*self;
        g.par_chunks_mut(3 * CHARGES_PER_TASK)
            .enumerate()
            .for_each(|(task, g)| {
                for (k, g) in g.chunks_exact_mut(3).enumerate() {
                    let i = task * CHARGES_PER_TASK + k;
                    let d = this.gather(i, &this.phi);
                    for a in 0..3 {
                        g[a] = this.charges[i] * scale[a] * d[a];
                    }
                }
            });
        self.mesh_energy()
    }

    /// `H(q) v` into `out` (overwritten): the exact Hessian of the interpolated energy applied
    /// to `v`.
    pub fn hessian_times(&mut self, q: &[f64], v: &[f64], out: &mut [f64]) {
        let n3 = self.dimension();
        assert!(
            v.len() == n3 && out.len() == n3,
            "PME: vectors of another size"
        );
        self.potential(q);
        self.make_curvatures(q);
        let scale = self.scale();
        let charges = &self.charges;
        let (grid, n) = (self.params.grid, self.params.order);
        spread(&self.splines, &self.bases, &mut self.mesh, grid, n, |i| {
            let c = |a: usize| charges[i] * scale[a] * v[3 * i + a];
            let (w, d) = (Factor::Value, Factor::Slope);
            [([d, w, w], c(0)), ([w, d, w], c(1)), ([w, w, d], c(2))]
        });
        self.convolve(true);
        let this = &*self;
        out.par_chunks_mut(3 * CHARGES_PER_TASK)
            .enumerate()
            .for_each(|(task, out)| {
                for (k, out) in out.chunks_exact_mut(3).enumerate() {
                    let i = task * CHARGES_PER_TASK + k;
                    let first = this.gather(i, &this.psi);
                    let dv = core::array::from_fn(|b| scale[b] * v[3 * i + b]);
                    let second = this.gather_curvature(i, &this.phi, dv);
                    for a in 0..3 {
                        out[a] = this.charges[i] * scale[a] * (first[a] + second[a]);
                    }
                }
            });
    }
}
