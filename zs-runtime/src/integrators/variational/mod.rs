//! Any explicit Runge–Kutta method made variational (Patrick, Cuell, Spiteri, Zhang,
//! *On converting any one-step method to a variational integrator of the same order*), as
//! `docs/VARIATIONAL.md` states the algorithm — the paper's printed chord rows and projection are
//! garbled; the corrections are that page's §5.
//!
//! The standard layer ([`layer`]) is the tableau applied to `y = (q, v, S)` with `S' = L`; two
//! of its steps, of sizes `hα⁻` and `hα⁺ = h(α⁻ + 1)`, give the segment ends
//! `∂̂±(w) = Rᵠ_{hα±}(w)`, projected onto the constraints, `∂± = P ∘ ∂̂±`, and the discrete
//! Lagrangian `L_h(w) = Rˢ_{hα⁺}(w) − Rˢ_{hα⁻}(w)`. A step `w1 = (q1, v1) ↦ w2` solves the
//! discrete Euler–Lagrange equations in two phases (Stage 4, Fig. 2):
//!
//! - **Phase A** (linear, data at `w1`): the multipliers `λ⁻`, `ν₁⁻`, `ν₂⁻` and the discrete
//!   momentum `μ` at `q̄ = ∂⁺(w1)` (S4.3)–(S4.4);
//! - **Phase B** (nonlinear in `q2, v2, θ⁺, λ⁺, ν₁⁺, ν₂⁺`): (S4.5)–(S4.8), by Newton with a
//!   finite-difference Jacobian of the residual ([`PhaseBSolver::Newton`]; the residual itself
//!   uses the *exact* derivatives of the numerical maps, which is what makes the method
//!   symplectic; the Jacobian's accuracy only affects the speed) or by the chord iteration of
//!   §4.4 with the corrected linear part `J₀` ([`PhaseBSolver::Chord`]).
//!
//! The result is symplectic for the form `−dθ⁻` — the map `(q̄_k, μ_k) ↦ (q̄_k+1, μ_k+1)` is
//! canonical on `T*Q` — of the order of the layer (and, with `α⁻ = −½`, of the next even order),
//! with a discrete Noether momentum `μ · ξ(q̄)` for every symmetry of `L` and `g`.

// Index loops read best for the matrices and blocks of the equations written out here.
#![allow(clippy::needless_range_loop)]

pub mod layer;
pub mod tableau;

pub use tableau::{Tableau, TableauError};

use crate::linalg::dense::lu::LuMatrix;
use layer::{Flow, Layer, LayerError};

use super::{check_finite, check_h};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::error::{Quantity, StepErrorKind};
use crate::stepper::{Clock, Clocked};
use crate::{ConstraintThirdContraction, MechanicalSystem, State, StepError, Stepper};

/// How Phase B's nonlinear system is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseBSolver {
    /// Newton with a forward-difference Jacobian of the (exact) residual, formed at the first
    /// iteration and again only when an iteration contracts by less than 10× (simplified
    /// Newton), with one polishing iteration so that the solution is at rounding.
    Newton,
    /// The chord iteration `z ← z − J₀⁻¹F(z)` of §4.4, `J₀` the corrected linear part
    /// (`docs/VARIATIONAL.md` §1, §5), factored once per step.
    Chord,
}

/// Iterations allowed to Phase B.
const NEWTON_ITERATIONS: usize = 30;
const CHORD_ITERATIONS: usize = 200;

/// A Runge–Kutta method made variational (module docs): `Variational::new(tableau, α⁻, h)`.
///
/// `N` coordinates and `M` constraints of a generated `MechanicalSystem<N, M>` (inferred from
/// [`Variational::step`]). The state must lie on `TQ` (`g(q) = 0`, `G(q) v = 0`); steps keep it
/// there to the solver's tolerance. Everything a step needs is allocated by `new`.
#[derive(Debug, Clone)]
pub struct Variational<const N: usize, const M: usize> {
    layer: Layer<N, M>,
    alpha_minus: f64,
    clock: Clock,
    solver: PhaseBSolver,
    /// Phase A's `2N + 2M` system, Phase B's Jacobian `3N + 3M`.
    phase_a: LuMatrix,
    phase_b: LuMatrix,
    rhs_a: Vec<f64>,
    z: Vec<f64>,
    f: Vec<f64>,
    f_probe: Vec<f64>,
    /// `q̄ = ∂⁺(w1)` and `μ` of Phase A of the last step.
    qbar: [f64; N],
    mu: [f64; N],
    momentum: Option<([f64; N], [f64; N])>,
    iterations: usize,
    jacobians: usize,
}

/// `Aᵀ Π` for `N × N` arrays.
fn at_pi<const N: usize>(a: &[[f64; N]; N], pi: &[[f64; N]; N]) -> [[f64; N]; N] {
    core::array::from_fn(|i| core::array::from_fn(|k| (0..N).map(|j| a[j][i] * pi[j][k]).sum()))
}

impl<const N: usize, const M: usize> Variational<N, M> {
    /// The variational integrator of `tableau` with bias `α⁻ ∈ [−1, 0]` and step `h`.
    ///
    /// # Panics
    /// If `alpha_minus` is outside `[−1, 0]`.
    pub fn new(tableau: Tableau, alpha_minus: f64, h: f64) -> Self {
        assert!(
            (-1.0..=0.0).contains(&alpha_minus),
            "Variational: the bias α⁻ must lie in [−1, 0], got {alpha_minus}"
        );
        let nb = 3 * N + 3 * M;
        Self {
            layer: Layer::new(tableau),
            alpha_minus,
            clock: Clock::new(h),
            solver: PhaseBSolver::Newton,
            phase_a: LuMatrix::zeros(2 * N + 2 * M),
            phase_b: LuMatrix::zeros(nb),
            rhs_a: vec![0.0; 2 * N + 2 * M],
            z: vec![0.0; nb],
            f: vec![0.0; nb],
            f_probe: vec![0.0; nb],
            qbar: [0.0; N],
            mu: [0.0; N],
            momentum: None,
            iterations: 0,
            jacobians: 0,
        }
    }

    /// Solve Phase B with `solver` (default [`PhaseBSolver::Newton`]).
    pub fn with_solver(mut self, solver: PhaseBSolver) -> Self {
        self.solver = solver;
        self
    }

    /// The tableau of the standard layer.
    pub fn tableau(&self) -> &Tableau {
        self.layer.tableau()
    }

    /// The bias `α⁻`.
    pub fn alpha_minus(&self) -> f64 {
        self.alpha_minus
    }

    /// `(q̄, μ)` of the last step: the point `∂⁺(w_k)` on `Q` and the discrete momentum there,
    /// `μ ∈ T*_q̄ Q` (`G(q̄) μ = 0`). `None` before the first step.
    pub fn discrete_momentum(&self) -> Option<([f64; N], [f64; N])> {
        self.momentum
    }

    /// Phase B iterations of the last step.
    pub fn last_iterations(&self) -> usize {
        self.iterations
    }

    /// Finite-difference Jacobians Newton formed in the last step (0 for the chord).
    pub fn last_jacobians(&self) -> usize {
        self.jacobians
    }

    /// One step from `state` (on `TQ`). A failed step leaves `state` untouched.
    ///
    /// # Errors
    /// [`crate::StepErrorKind::InvalidStepSize`] for `h` zero or not finite;
    /// [`crate::StepErrorKind::NonFinite`]; [`crate::SolveFailure::Singular`] when a KKT,
    /// projection or Phase A/B matrix is singular; [`crate::StepErrorKind::NotConverged`] when the
    /// projection or Phase B does not converge.
    pub fn step<S>(&mut self, system: &S, state: &mut State<N>) -> Result<(), StepError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let (step, t, h) = (self.clock.steps, state.t, self.clock.h);
        check_h(h, step, t)?;
        check_finite(&state.q, Quantity::State, step, t)?;
        check_finite(&state.v, Quantity::State, step, t)?;
        let layer_error = |e: LayerError| e.at(step, t);
        self.phase_a(system, &state.q, &state.v)
            .map_err(layer_error)?;
        let (q2, v2) = self
            .phase_b(system, &state.q, &state.v)
            .map_err(|e| match e {
                PhaseBError::Layer(e) => layer_error(e),
                PhaseBError::NotConverged(residual, iterations) => StepError::new(
                    step,
                    t,
                    StepErrorKind::NotConverged {
                        solver: match self.solver {
                            PhaseBSolver::Newton => "Newton on Phase B (Patrick et al., Stage 4)",
                            PhaseBSolver::Chord => {
                                "chord iteration on Phase B (Patrick et al., §4.4)"
                            }
                        },
                        iterations,
                        residual,
                    },
                ),
            })?;
        self.momentum = Some((self.qbar, self.mu));
        state.q = q2;
        state.v = v2;
        state.t = t + h;
        self.clock.steps += 1;
        Ok(())
    }

    /// Phase A (S4.3)–(S4.4) at `w1`: stores `q̄` and `μ`.
    fn phase_a<S>(&mut self, sys: &S, q1: &[f64; N], v1: &[f64; N]) -> Result<(), LayerError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let (h, am) = (self.clock.h, self.alpha_minus);
        let fm = self.layer.flow(sys, h * am, q1, v1)?;
        let fp = self.layer.flow(sys, h * (am + 1.0), q1, v1)?;
        let pm = self.layer.project(sys, &fm.q)?;
        let pp = self.layer.project(sys, &fp.q)?;
        let g1 = sys.constraint_jacobian(q1);
        let h1 = velocity_curvature(sys, q1, v1);
        let g1m = sys.constraint_jacobian(&pm.q);
        let gbar = sys.constraint_jacobian(&pp.q);
        let (cm, cp) = (at_pi(&fm.c, &pm.pi), at_pi(&fp.c, &pp.pi));
        let (bm, bp) = (at_pi(&fm.b, &pm.pi), at_pi(&fp.b, &pp.pi));
        let lu = &mut self.phase_a;
        lu.clear();
        // Unknowns [λ⁻ (N), μ (N), ν₁⁻ (M), ν₂⁻ (M)].
        let (mu0, n1, n2) = (N, 2 * N, 2 * N + M);
        for i in 0..N {
            for k in 0..N {
                lu.set(i, k, cm[i][k]);
                lu.set(i, mu0 + k, cp[i][k]);
                lu.set(N + i, k, bm[i][k]);
                lu.set(N + i, mu0 + k, bp[i][k]);
            }
            for a in 0..M {
                lu.set(i, n1 + a, g1[a][i]);
                lu.set(i, n2 + a, h1[a][i]);
                lu.set(N + i, n2 + a, g1[a][i]);
                // G(q1⁻) λ⁻ = 0, G(q̄) μ = 0.
                lu.set(2 * N + a, i, g1m[a][i]);
                lu.set(2 * N + M + a, mu0 + i, gbar[a][i]);
            }
        }
        lu.factor()?;
        self.rhs_a.fill(0.0);
        for i in 0..N {
            self.rhs_a[i] = fp.lq[i] - fm.lq[i];
            self.rhs_a[N + i] = fp.lv[i] - fm.lv[i];
        }
        lu.solve(&mut self.rhs_a);
        self.qbar = pp.q;
        self.mu = core::array::from_fn(|i| self.rhs_a[mu0 + i]);
        if !self.mu.iter().all(|x| x.is_finite()) {
            return Err(LayerError::NonFinite(Quantity::DiscreteMomentum));
        }
        Ok(())
    }

    /// Phase B (S4.5)–(S4.8): `w2`.
    fn phase_b<S>(
        &mut self,
        sys: &S,
        q1: &[f64; N],
        v1: &[f64; N],
    ) -> Result<([f64; N], [f64; N]), PhaseBError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let nb = 3 * N + 3 * M;
        // Initial guess: one layer step, projected; θ⁺ = 0, λ⁺ = μ, ν = 0.
        let guess = self.layer.flow(sys, self.clock.h, q1, v1)?;
        let q_guess = self.layer.project(sys, &guess.q)?.q;
        let v_guess = tangent_part(sys, &q_guess, &guess.v).map_err(PhaseBError::Layer)?;
        self.z.fill(0.0);
        self.z[..N].copy_from_slice(&q_guess);
        self.z[N..2 * N].copy_from_slice(&v_guess);
        self.z[2 * N + M..3 * N + M].copy_from_slice(&self.mu);
        self.jacobians = 0;
        if self.solver == PhaseBSolver::Chord {
            self.chord_matrix(sys, q1)?;
        }
        let limit = match self.solver {
            PhaseBSolver::Newton => NEWTON_ITERATIONS,
            PhaseBSolver::Chord => CHORD_ITERATIONS,
        };
        let mut last = f64::NAN;
        let mut previous = f64::INFINITY;
        let mut refresh = false;
        let mut polish = true;
        for it in 1..=limit {
            let mut f = std::mem::take(&mut self.f);
            let r = self.residual(sys, &mut f);
            self.f = f;
            r?;
            // Newton's finite-difference Jacobian costs 3N + 3d residual evaluations: it is
            // formed at the first iteration and again only when an iteration contracted by
            // less than 10× (simplified Newton); its accuracy only affects the speed.
            if self.solver == PhaseBSolver::Newton && (it == 1 || refresh) {
                self.jacobian(sys)?;
                self.jacobians += 1;
            }
            let mut dz = std::mem::take(&mut self.f_probe);
            dz.copy_from_slice(&self.f);
            self.phase_b.solve(&mut dz);
            let (mut dq, mut dv, mut sq, mut sv) = (0.0_f64, 0.0_f64, 0.0_f64, 0.0_f64);
            for j in 0..nb {
                self.z[j] -= dz[j];
            }
            for n in 0..N {
                dq = dq.max(dz[n].abs());
                dv = dv.max(dz[N + n].abs());
                sq = sq.max(self.z[n].abs());
                sv = sv.max(self.z[N + n].abs());
            }
            self.f_probe = dz;
            last = dq.max(dv);
            if !last.is_finite() {
                return Err(PhaseBError::Layer(LayerError::NonFinite(
                    Quantity::PhaseBUpdate,
                )));
            }
            // The chord converges linearly, at a rate ρ estimated from the last two updates:
            // its distance to the solution is about ρ/(1 − ρ) times the last update, and that,
            // not the update itself, must meet the tolerance (Newton's is far below it).
            // Both converge linearly once the matrix is not refreshed. The chord also aims ten
            // times tighter, so that it lands within 1e-13 of Newton's solution
            // (`docs/VARIATIONAL.md` §4.7).
            let rho = last / previous;
            refresh = rho > 0.1;
            let tighter = match self.solver {
                PhaseBSolver::Newton => 1.0,
                PhaseBSolver::Chord => 10.0,
            };
            let factor = if rho < 1.0 {
                tighter * (rho / (1.0 - rho)).max(1.0)
            } else if it == 1 {
                tighter
            } else {
                f64::INFINITY
            };
            previous = last;
            // An update at the rounding floor ends the iteration whatever its rate.
            let floor = 8.0 * f64::EPSILON;
            let met = (factor * dq <= 1e-13 * (1.0 + sq) && factor * dv <= 1e-13 * (1.0 + sv))
                || (dq <= floor * (1.0 + sq) && dv <= floor * (1.0 + sv));
            // Met with a Jacobian that contracts only linearly: one more iteration brings the
            // solution to rounding, which the discrete Noether momenta and symplecticity see
            // (a quadratically converging step is already there).
            if met && polish && rho > 1e-3 && self.solver == PhaseBSolver::Newton {
                polish = false;
                continue;
            }
            if met {
                self.iterations = it;
                let q2 = core::array::from_fn(|n| self.z[n]);
                let v2 = core::array::from_fn(|n| self.z[N + n]);
                return Ok((q2, v2));
            }
        }
        self.iterations = limit;
        Err(PhaseBError::NotConverged(last, limit))
    }

    /// Phase B's residual at `self.z` into `out` (module docs for the ordering).
    fn residual<S>(&mut self, sys: &S, out: &mut [f64]) -> Result<(), LayerError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let (h, am) = (self.clock.h, self.alpha_minus);
        let z = &self.z;
        let q2: [f64; N] = core::array::from_fn(|n| z[n]);
        let v2: [f64; N] = core::array::from_fn(|n| z[N + n]);
        let theta: [f64; M] = core::array::from_fn(|a| z[2 * N + a]);
        let lam: [f64; N] = core::array::from_fn(|n| z[2 * N + M + n]);
        let nu1: [f64; M] = core::array::from_fn(|a| z[3 * N + M + a]);
        let nu2: [f64; M] = core::array::from_fn(|a| z[3 * N + 2 * M + a]);
        let fm: Flow<N> = self.layer.flow(sys, h * am, &q2, &v2)?;
        let fp: Flow<N> = self.layer.flow(sys, h * (am + 1.0), &q2, &v2)?;
        let pp = self.layer.project(sys, &fp.q)?;
        let pi_m = self.layer.dp_at(sys, &self.qbar, &theta)?;
        let gbar = sys.constraint_jacobian(&self.qbar);
        let g2 = sys.constraint_jacobian(&q2);
        let h2 = velocity_curvature(sys, &q2, &v2);
        let g2p = sys.constraint_jacobian(&pp.q);
        let gq2 = sys.constraints(&q2);
        let (cp, cm) = (at_pi(&fp.c, &pp.pi), at_pi(&fm.c, &pi_m));
        let (bp, bm) = (at_pi(&fp.b, &pp.pi), at_pi(&fm.b, &pi_m));
        let (r2, r3, r4, r5, r6) = (N, N + M, N + 2 * M, N + 3 * M, 2 * N + 3 * M);
        for n in 0..N {
            // (S4.7a) x2⁻ − q̄ − G(q̄)ᵀθ⁺.
            out[n] = fm.q[n] - self.qbar[n] - (0..M).map(|a| gbar[a][n] * theta[a]).sum::<f64>();
            // (S4.5a,c), (S4.6a,c).
            let mut a5 = -(fp.lq[n] - fm.lq[n]);
            let mut a6 = -(fp.lv[n] - fm.lv[n]);
            for k in 0..N {
                a5 += cp[n][k] * lam[k] - cm[n][k] * self.mu[k];
                a6 += bp[n][k] * lam[k] - bm[n][k] * self.mu[k];
            }
            for a in 0..M {
                a5 += g2[a][n] * nu1[a] + h2[a][n] * nu2[a];
                a6 += g2[a][n] * nu2[a];
            }
            out[r5 + n] = a5;
            out[r6 + n] = a6;
        }
        for a in 0..M {
            out[r2 + a] = gq2[a];
            out[r3 + a] = (0..N).map(|n| g2[a][n] * v2[n]).sum();
            out[r4 + a] = (0..N).map(|n| g2p[a][n] * lam[n]).sum();
        }
        if out.iter().all(|x| x.is_finite()) {
            Ok(())
        } else {
            Err(LayerError::NonFinite(Quantity::PhaseBResidual))
        }
    }

    /// Forward-difference Jacobian of the residual at `self.z` (with `self.f` the residual
    /// there), factored into `self.phase_b`.
    fn jacobian<S>(&mut self, sys: &S) -> Result<(), LayerError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let nb = 3 * N + 3 * M;
        let mut probe = std::mem::take(&mut self.f_probe);
        for j in 0..nb {
            let keep = self.z[j];
            let eps = 1e-7 * (1.0 + keep.abs());
            self.z[j] = keep + eps;
            let r = self.residual(sys, &mut probe);
            self.z[j] = keep;
            if let Err(e) = r {
                self.f_probe = probe;
                return Err(e);
            }
            for i in 0..nb {
                self.phase_b.set(i, j, (probe[i] - self.f[i]) / eps);
            }
        }
        self.f_probe = probe;
        self.phase_b.factor()?;
        Ok(())
    }

    /// The chord matrix `J₀` (the linear part of the residual, §4.4 with `docs/VARIATIONAL.md` §5's
    /// corrections), factored into `self.phase_b`.
    fn chord_matrix<S>(&mut self, sys: &S, q1: &[f64; N]) -> Result<(), LayerError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let (h, am) = (self.clock.h, self.alpha_minus);
        let ap = am + 1.0;
        let g0 = sys.constraint_jacobian(q1);
        let m0 = sys.masses();
        let lu = &mut self.phase_b;
        lu.clear();
        let (v, th, la, n1, n2) = (N, 2 * N, 2 * N + M, 3 * N + M, 3 * N + 2 * M);
        let (r2, r3, r4, r5, r6) = (N, N + M, N + 2 * M, N + 3 * M, 2 * N + 3 * M);
        for n in 0..N {
            // (S4.7a'): q2 + hα⁻v2 − G0ᵀθ⁺.
            lu.set(n, n, 1.0);
            lu.set(n, v + n, h * am);
            // (S4.5a'): λ⁺ + G0ᵀν₁⁺ (the ν₂⁺ term taken as known).
            lu.set(r5 + n, la + n, 1.0);
            // (S4.6a'), signed like the residual: hα⁺λ⁺ + G0ᵀν₂⁺ − hM0 v2.
            lu.set(r6 + n, la + n, h * ap);
            lu.set(r6 + n, v + n, -h * m0[n]);
            for a in 0..M {
                lu.set(n, th + a, -g0[a][n]);
                lu.set(r5 + n, n1 + a, g0[a][n]);
                lu.set(r6 + n, n2 + a, g0[a][n]);
                lu.set(r2 + a, n, g0[a][n]);
                lu.set(r3 + a, v + n, g0[a][n]);
                lu.set(r4 + a, la + n, g0[a][n]);
            }
        }
        lu.factor()?;
        Ok(())
    }
}

/// Why Phase B failed.
enum PhaseBError {
    Layer(LayerError),
    NotConverged(f64, usize),
}

impl From<LayerError> for PhaseBError {
    fn from(e: LayerError) -> Self {
        PhaseBError::Layer(e)
    }
}

/// `H(q, v)`: row `a` is `vᵀ Hess g_a(q)` (`d × N`).
fn velocity_curvature<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
    v: &[f64; N],
) -> [[f64; N]; M]
where
    S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
{
    core::array::from_fn(|a| {
        let unit: [f64; M] = core::array::from_fn(|b| f64::from(u8::from(a == b)));
        let h = sys.weighted_constraint_hessian(q, &unit);
        core::array::from_fn(|j| (0..N).map(|i| v[i] * h[i][j]).sum())
    })
}

/// `(I − Gᵀ(GGᵀ)⁻¹G) v` at `q`: the initial guess's velocity, tangent to `Q`.
fn tangent_part<S, const N: usize, const M: usize>(
    sys: &S,
    q: &[f64; N],
    v: &[f64; N],
) -> Result<[f64; N], LayerError>
where
    S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
{
    if M == 0 {
        return Ok(*v);
    }
    let g = sys.constraint_jacobian(q);
    let mut ggt = [[0.0; M]; M];
    for a in 0..M {
        for b in 0..M {
            ggt[a][b] = (0..N).map(|n| g[a][n] * g[b][n]).sum();
        }
    }
    let gv: [f64; M] = core::array::from_fn(|a| (0..N).map(|n| g[a][n] * v[n]).sum());
    let mut y = gv;
    crate::linalg::dense::solve_general(&ggt, &mut y)?;
    Ok(core::array::from_fn(|n| {
        v[n] - (0..M).map(|a| g[a][n] * y[a]).sum::<f64>()
    }))
}

/// The method Patrick et al. converts, on its own: one step of the tableau on the constrained
/// vector field (the standard layer), then `q ← P(q)` and `v ← (I − Gᵀ(GGᵀ)⁻¹G) v` back onto `TQ`
/// (`docs/VARIATIONAL.md` §4: "the standard layer with projection"). Not symplectic: what
/// [`Variational`] is compared against.
#[derive(Debug, Clone)]
pub struct ProjectedRungeKutta<const N: usize, const M: usize> {
    layer: Layer<N, M>,
    clock: Clock,
}

impl<const N: usize, const M: usize> ProjectedRungeKutta<N, M> {
    /// The projected method of `tableau` with step `h`.
    pub fn new(tableau: Tableau, h: f64) -> Self {
        Self {
            layer: Layer::new(tableau),
            clock: Clock::new(h),
        }
    }

    /// One step; a failed step leaves `state` untouched.
    ///
    /// # Errors
    /// As [`Variational::step`].
    pub fn step<S>(&mut self, system: &S, state: &mut State<N>) -> Result<(), StepError>
    where
        S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
    {
        let (step, t, h) = (self.clock.steps, state.t, self.clock.h);
        check_h(h, step, t)?;
        check_finite(&state.q, Quantity::State, step, t)?;
        check_finite(&state.v, Quantity::State, step, t)?;
        let fail = |e: LayerError| e.at(step, t);
        let f = self
            .layer
            .flow(system, h, &state.q, &state.v)
            .map_err(fail)?;
        let q = self.layer.project(system, &f.q).map_err(fail)?.q;
        let v = tangent_part(system, &q, &f.v).map_err(fail)?;
        state.q = q;
        state.v = v;
        state.t = t + h;
        self.clock.steps += 1;
        Ok(())
    }
}

impl<const N: usize, const M: usize> Clocked for Variational<N, M> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "variational-runge-kutta"
    }
}

impl<S, const N: usize, const M: usize> Stepper<S, [f64; N]> for Variational<N, M>
where
    S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
{
    fn step(&mut self, target: &S, state: &mut State<N>) -> Result<(), StepError> {
        Variational::step(self, target, state)
    }
}

impl<const N: usize, const M: usize> Clocked for ProjectedRungeKutta<N, M> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "projected-runge-kutta"
    }
}

impl<S, const N: usize, const M: usize> Stepper<S, [f64; N]> for ProjectedRungeKutta<N, M>
where
    S: MechanicalSystem<N, M> + ConstraintThirdContraction<N, M>,
{
    fn step(&mut self, target: &S, state: &mut State<N>) -> Result<(), StepError> {
        ProjectedRungeKutta::step(self, target, state)
    }
}

/// Saves `h`, `α⁻` and the step count (exact bits); everything else is recomputed from the
/// state.
impl<const N: usize, const M: usize> Resumable for Variational<N, M> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64("h", self.clock.h);
        out.set_f64("alpha_minus", self.alpha_minus);
        out.set_u64("steps", self.clock.steps);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.alpha_minus = from.f64("alpha_minus")?;
        self.clock.restore(from)?;
        self.momentum = None;
        Ok(())
    }
}
