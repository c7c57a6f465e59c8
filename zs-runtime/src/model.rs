//! What an integrator needs of a system, whatever its storage: the traits every stepper is
//! written against, once.
//!
//! A fixed-size system (`#[mechanical_system]` with `potential`) implements the public traits
//! [`Potential<N>`] / [`StiffSplit<N>`] / [`MechanicalSystem<N, M>`], which return arrays by
//! value; the blanket impls here make every such type a [`Model<[f64; N]>`](Model) (and
//! [`StiffModel`], [`ConstrainedModel`]) with no cost: after inlining, `gradient_into(q, g)` is
//! `*g = gradient(q)`. An assembled system ([`crate::assembly::Assembled`]) implements the same
//! traits over `Vec<f64>`, scattering per-term kernels into preallocated storage.
//!
//! Methods write into buffers the caller owns (`*_into`), so that a step on an assembled
//! system allocates nothing; their names differ from the fixed-size traits' so that both traits can be
//! imported together without ambiguity.

use crate::checkpoint::{CheckpointError, Scope, ScopeMut};
use crate::linalg::{SolveFailure, SolveOptions};
use crate::masses::Masses;
use crate::state::{Measured, PointMove, PositionsKey, StateOf};
use crate::vector::Vector;
use crate::{MechanicalSystem, Potential, StiffSplit};

/// Which Hessian a matrix holds, hence which sparsity pattern it has: the whole `Hess V`
/// (Z&S, Newmark), or only the stiff part `Hess V1` that Z&Ss-stiff (eq. 19) puts in its solve
/// (block diagonal for rigid water: one block per molecule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HessianPart {
    /// `Hess V`.
    Full,
    /// `Hess V1` of the split `V = V0 + V1` ([`StiffModel`]).
    Stiff,
}

impl HessianPart {
    /// `0` for [`HessianPart::Full`], `1` for [`HessianPart::Stiff`]: an index of per-part
    /// arrays.
    pub(crate) fn index(self) -> usize {
        match self {
            HessianPart::Full => 0,
            HessianPart::Stiff => 1,
        }
    }
}

/// A potential with a constant diagonal mass matrix, as the integrators see it.
pub trait Model<V: Vector> {
    /// Number of coordinates `n`.
    fn dimension(&self) -> usize;
    /// An identifier of the layout of the matrices and solvers this model makes for `part`
    /// (their pattern): a stepper that sees it change rebuilds its workspace. Fixed-size
    /// systems have one layout per `N` (0).
    #[inline]
    fn matrix_layout(&self, part: HessianPart) -> u64 {
        let _ = part;
        0
    }
    /// A zero matrix in the pattern of `part` (set-up).
    fn new_matrix(&self, part: HessianPart) -> V::Matrix;
    /// The solver of `(M + sH) x = b` for that pattern, after its symbolic phase (set-up).
    fn new_solver(&self, part: HessianPart) -> V::Solver;
    /// The diagonal of `M`.
    fn masses_into(&self, m: &mut V);
    /// The diagonal of `M` into a slice of length `n` (for steppers that keep type-independent
    /// buffers, such as [`crate::Langevin`]).
    fn masses_into_slice(&self, m: &mut [f64]);
    /// The diagonal of `M` where the model stores it (assembled systems: a table of the
    /// distinct bodies' masses, [`Masses::Rows`]): steppers read it there instead of copying
    /// it every step. `None` (the default): use [`Model::masses_into`].
    fn masses_lent(&self) -> Option<Masses<'_>> {
        None
    }
    /// `½ vᵀ M v`.
    fn kinetic_energy(&self, v: &V) -> f64;
    /// [`Model::kinetic_energy`] of the velocities a step produced, given what the stepper
    /// measured of them ([`Measured`]): an assembled system takes the stepper's sum, which is
    /// its own to the bit (the same summation, taken in the stepper's pass over the
    /// velocities). The default ignores it.
    fn kinetic_energy_measured(&self, v: &V, measured: &Measured) -> f64 {
        let _ = measured;
        self.kinetic_energy(v)
    }
    /// `V(q)`.
    fn potential_at(&self, q: &V) -> f64;
    /// `∇V(q)`.
    fn gradient_into(&self, q: &V, g: &mut V);
    /// [`Model::gradient_into`] at positions whose key the caller found in its own pass over
    /// them: a model that keeps the energy of its last evaluation keys it by `key` too, for
    /// [`Model::potential_at_keyed`]. The default ignores the key.
    fn gradient_into_keyed(&self, q: &V, g: &mut V, key: PositionsKey) {
        let _ = key;
        self.gradient_into(q, g);
    }
    /// [`Model::gradient_into_keyed`] at positions the caller moved there from positions of
    /// key `moved.from`, no point body by more than `moved.largest` ([`PointMove`]). An
    /// assembled system under a pair cutoff whose list was built at those earlier positions,
    /// or at positions they were moved from in turn, adds the moves up: while their sum stays
    /// below half the skin no body can have moved that far, and the list is not stale without
    /// a pass over the positions to test it — the test's answer, not a guess, so the list is
    /// built at the same steps. The default ignores the move.
    fn gradient_into_moved(&self, q: &V, g: &mut V, key: PositionsKey, moved: PointMove) {
        let _ = moved;
        self.gradient_into_keyed(q, g, key);
    }
    /// [`Model::potential_at`] at positions whose key is `key`: an assembled system whose last
    /// evaluation was [`Model::gradient_into_keyed`] at that key returns the energy it found
    /// there without reading `q` (an observer after a step; in spatial order, without gathering
    /// `q` into the inner order). The default ignores the key.
    fn potential_at_keyed(&self, q: &V, key: PositionsKey) -> f64 {
        let _ = key;
        self.potential_at(q)
    }
    /// `V(q)` and `∇V(q)` from one evaluation: `∇V(q)` into `g`, `V(q)` returned. Generated
    /// systems compute the value in the gradient's pass (what the minimisers and observers
    /// use); the default evaluates the two.
    fn value_gradient_into(&self, q: &V, g: &mut V) -> f64 {
        self.gradient_into(q, g);
        self.potential_at(q)
    }
    /// `Hess V(q)`.
    fn hessian_into(&self, q: &V, h: &mut V::Matrix);
    /// `∇V(q)` and `Hess V(q)` in one evaluation.
    fn gradient_hessian_into(&self, q: &V, g: &mut V, h: &mut V::Matrix);
    /// `T(q; a)_i = Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k`.
    fn third_contraction_into(&self, q: &V, a: &V, out: &mut V);
    /// The Hessian-vector product `Hess V(q) · a` without forming the Hessian (generated as a
    /// directional derivative of the gradient, term by term for assembled systems; the
    /// penalty included for a penalized view).
    fn hessian_vector_into(&self, q: &V, a: &V, out: &mut V);
    /// [`Model::gradient_hessian_into`] for a step that next asks for
    /// [`Model::third_contraction_into`] at the same `q` (Z&S, eq. 3): the model may keep what
    /// makes that contraction cheaper. Assembled systems keep the third-derivative tensors of
    /// their small terms, so the contraction does not evaluate the terms' transcendental
    /// functions a second time (`assembly::ThirdForm::Tensor`). The default is
    /// [`Model::gradient_hessian_into`].
    fn gradient_hessian_keeping_third_into(&self, q: &V, g: &mut V, h: &mut V::Matrix) {
        self.gradient_hessian_into(q, g, h);
    }
    /// Save what this model's later results depend on besides the points it is asked at: its
    /// evaluation history. An assembled system under a pair cutoff saves where its neighbour
    /// list was last built — the list, and with it the order of the pair sums (their last
    /// bits), is a function of those positions, not of the point evaluated. The driver writes
    /// it into every checkpoint ([`crate::driver::run_checkpointed`]) and restores it before a
    /// resumed run's first step ([`Model::restore_history`]), so that the resumed run
    /// evaluates exactly as the uninterrupted one. The default saves nothing: a model whose
    /// results are a function of the point alone.
    fn save_history(&self, out: &mut ScopeMut<'_>) {
        let _ = out;
    }
    /// Restore what [`Model::save_history`] saved (a checkpoint without it — the default's —
    /// restores nothing: the model starts afresh).
    ///
    /// # Errors
    /// A saved history that does not fit this model (another size).
    fn restore_history(&self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let _ = from;
        Ok(())
    }
    /// Between two steps (the driver asks before each): a model that holds the state's
    /// coordinates in an order of its own ([`crate::assembly::HeldInside`]: an assembled system
    /// in spatial order) makes that order again from the positions when it is due, permuting
    /// `state`'s positions and velocities alike, and returns true. A stepper's evaluations
    /// kept across steps are keyed by the positions' fingerprint, so they miss after it. The
    /// default holds the user's order and returns false.
    fn reorder(&self, state: &mut StateOf<V>) -> bool {
        let _ = state;
        false
    }
    /// `x`, a vector of the state (positions or velocities), in the user's order, into `user`
    /// (resized when its length differs), when this model holds the state in an order of its
    /// own — then true; false, writing nothing, when its order is the user's (the default).
    /// Whoever shows the state outside asks, a vector at a time: the CSV and XYZ recorders,
    /// checkpoints.
    fn in_user_order(&self, x: &V, user: &mut V) -> bool {
        let _ = (x, user);
        false
    }
    /// Where the user's coordinates are in the vectors of a state this model holds in an order
    /// of its own: `index` (resized) gets, for each of the user's bodies `u`, the body it is
    /// held as, so that the user's coordinate `d·u + c` is held at `d·index[u] + c`; returns
    /// `d`, the coordinates per body. `None` (the default), writing nothing: the user's order.
    /// For writers that read a state in the user's order without a copy of it (the CSV and
    /// XYZ recorders: a million bodies' row is one vector fewer).
    fn user_order_index(&self, index: &mut Vec<u32>) -> Option<usize> {
        let _ = index;
        None
    }
    /// [`Model::in_user_order`] the other way: `user` (in the user's order) into this model's
    /// own order, into `x`; false, writing nothing, when its order is the user's (a resumed
    /// run's state, read from its checkpoint).
    fn in_own_order(&self, user: &V, x: &mut V) -> bool {
        let _ = (user, x);
        false
    }
}

/// A [`Model`] whose potential is split `V = V0 + V1` into a soft and a stiff part
/// (Tao & Owhadi eq. 19, `ε⁻¹` folded into `V1`): the view of [`StiffSplit`] Z&Ss-stiff uses.
pub trait StiffModel<V: Vector>: Model<V> {
    /// `∇V(q)` of the total potential and `Hess V1(q)` of the stiff part, into a matrix made by
    /// [`Model::new_matrix`]`(HessianPart::Stiff)`.
    fn gradient_stiff_hessian_into(&self, q: &V, g: &mut V, h: &mut V::Matrix);
}

impl<P: Potential<N> + ?Sized, const N: usize> Model<[f64; N]> for P {
    #[inline]
    fn dimension(&self) -> usize {
        N
    }
    #[inline]
    fn new_matrix(&self, _part: HessianPart) -> [[f64; N]; N] {
        [[0.0; N]; N]
    }
    #[inline]
    fn new_solver(&self, _part: HessianPart) -> crate::linalg::DenseSolver<N> {
        crate::linalg::DenseSolver
    }
    #[inline]
    fn masses_into(&self, m: &mut [f64; N]) {
        *m = self.masses();
    }
    #[inline]
    fn masses_into_slice(&self, m: &mut [f64]) {
        m.copy_from_slice(&self.masses());
    }
    #[inline]
    fn kinetic_energy(&self, v: &[f64; N]) -> f64 {
        let m = self.masses();
        0.5 * (0..N).map(|i| m[i] * v[i] * v[i]).sum::<f64>()
    }
    #[inline]
    fn potential_at(&self, q: &[f64; N]) -> f64 {
        self.potential(q)
    }
    #[inline]
    fn gradient_into(&self, q: &[f64; N], g: &mut [f64; N]) {
        *g = self.gradient(q);
    }
    #[inline]
    fn value_gradient_into(&self, q: &[f64; N], g: &mut [f64; N]) -> f64 {
        let v;
        (v, *g) = self.value_gradient(q);
        v
    }
    #[inline]
    fn hessian_into(&self, q: &[f64; N], h: &mut [[f64; N]; N]) {
        *h = self.hessian(q);
    }
    #[inline]
    fn gradient_hessian_into(&self, q: &[f64; N], g: &mut [f64; N], h: &mut [[f64; N]; N]) {
        (*g, *h) = self.gradient_hessian(q);
    }
    #[inline]
    fn hessian_vector_into(&self, q: &[f64; N], a: &[f64; N], out: &mut [f64; N]) {
        *out = self.hessian_vector(q, a);
    }
    #[inline]
    fn third_contraction_into(&self, q: &[f64; N], a: &[f64; N], out: &mut [f64; N]) {
        *out = self.third_contraction(q, a);
    }
}

impl<P: StiffSplit<N> + ?Sized, const N: usize> StiffModel<[f64; N]> for P {
    #[inline]
    fn gradient_stiff_hessian_into(&self, q: &[f64; N], g: &mut [f64; N], h: &mut [[f64; N]; N]) {
        (*g, *h) = self.gradient_stiff_hessian(q);
    }
}

/// Storage of a constraint Jacobian `G = Dg` (row `c` is `∇g_c`) and the operations SHAKE and
/// RATTLE perform with it: `[[f64; N]; M]` for fixed-size systems, a sparse row list for
/// assembled ones (each constraint touches one or two bodies).
pub trait Jacobian<V: Vector, C: Vector>: Clone + core::fmt::Debug + Send + Sync {
    /// `∇g_c · x`.
    fn row_dot(&self, c: usize, x: &V) -> f64;
    /// `∇g_c · d_c` with `d_c` row `c` of `other` (a Jacobian of the same system).
    fn rows_dot(&self, other: &Self, c: usize) -> f64;
    /// `|∇g_c|`.
    fn row_norm(&self, c: usize) -> f64;
    /// `x -= alpha · row_c`.
    fn sub_row(&self, c: usize, alpha: f64, x: &mut V);
    /// `self = source · diag(w)` (row `c` becomes `w ∘ ∇g_c`): `M⁻¹∇g_c` for `w = M⁻¹`.
    fn scale_columns(&mut self, source: &Self, w: &V);
    /// `x -= Gᵀ y / divisor`, entry by entry as `x_i -= (Σ_c G_ci y_c) / divisor`.
    fn sub_transpose_mul(&self, y: &C, divisor: f64, x: &mut V);
    /// `Σ_i G_ci w_i x_i`.
    fn weighted_row_dot(&self, c: usize, w: &V, x: &V) -> f64;
    /// True when every entry of row `c` is finite.
    fn row_is_finite(&self, c: usize) -> bool;
    /// True when every entry is finite.
    fn is_finite(&self) -> bool;
}

/// The linear systems of SHAKE and RATTLE with an `m × m` matrix built from Jacobians: the
/// symmetric `G M⁻¹ Gᵀ` of the velocity projection and the nonsymmetric Newton matrix
/// `G(Q) M⁻¹ G(q_n)ᵀ` of the constraint solve. Two-phase like [`crate::linalg::ShiftedSolve`]:
/// the pattern (which constraints share a coordinate) is fixed at set-up.
pub trait ConstraintSolve<V: Vector, C: Vector, J: Jacobian<V, C>>:
    core::fmt::Debug + Send + Sync
{
    /// Solve `(G W Gᵀ) x = b` (`W = diag(w)`, here `M⁻¹`), `b` given in `x`; symmetric positive
    /// semi-definite, singular when the constraints are dependent.
    fn solve_gram(&mut self, jac: &J, w: &V, x: &mut C) -> Result<(), SolveFailure>;
    /// Solve `A x = b` with `A_rc = ∇g_r(Q) · d_c` (`a` holds `G(Q)`, `d` holds the rows
    /// `d_c`), `b` given in `x`; general (not symmetric).
    fn solve_newton(&mut self, a: &J, d: &J, x: &mut C) -> Result<(), SolveFailure>;
}

/// Coordinates `Self` with constraint values stored as `C`: fixes how a constraint Jacobian is
/// stored and how the `m × m` systems of SHAKE/RATTLE are solved, as [`Vector`] does for the
/// Hessian (`[f64; N]` with `[f64; M]`: dense on the stack; `Vec<f64>` with `Vec<f64>`: sparse).
pub trait ConstraintSpace<C: Vector>: Vector {
    /// Storage of `G`.
    type Jacobian: Jacobian<Self, C>;
    /// The solver of the `m × m` systems.
    type ConstraintSolver: ConstraintSolve<Self, C, Self::Jacobian>;
}

impl<const N: usize, const M: usize> ConstraintSpace<[f64; M]> for [f64; N] {
    type Jacobian = [[f64; N]; M];
    type ConstraintSolver = DenseConstraintSolver;
}

/// A system with holonomic constraints `g(q) = 0` (`m` of them, stored as `C`), as SHAKE and
/// RATTLE see it: the view of [`MechanicalSystem`] over any storage.
pub trait ConstrainedModel<V: ConstraintSpace<C>, C: Vector>: Model<V> {
    /// Number of constraints `m`.
    fn constraint_count(&self) -> usize;
    /// A zero Jacobian (set-up).
    fn new_jacobian(&self) -> V::Jacobian;
    /// The `m × m` solver (set-up).
    fn new_constraint_solver(&self) -> V::ConstraintSolver;
    /// `g(q)`.
    fn constraints_into(&self, q: &V, g: &mut C);
    /// `g(q)` and `G(q)`.
    fn constraints_jacobian_into(&self, q: &V, g: &mut C, jac: &mut V::Jacobian);
    /// `g_c(q)` and `∇g_c(q)` (into row `c` of `jac`; other rows may be left as they were, and
    /// `g` may receive other constraints' values too). Fixed-size systems evaluate every
    /// constraint; assembled systems only the one term.
    fn constraint_row_into(&self, q: &V, c: usize, g: &mut C, jac: &mut V::Jacobian) -> f64;
    /// `|g(q)|` (Euclidean), without keeping `g`.
    fn constraint_norm(&self, q: &V) -> f64;
}

/// The dense `[[f64; N]; M]` Jacobian of a fixed-size system.
impl<const N: usize, const M: usize> Jacobian<[f64; N], [f64; M]> for [[f64; N]; M] {
    #[inline]
    fn row_dot(&self, c: usize, x: &[f64; N]) -> f64 {
        self[c].iter().zip(x).map(|(a, b)| a * b).sum()
    }
    #[inline]
    fn rows_dot(&self, other: &Self, c: usize) -> f64 {
        self[c].iter().zip(&other[c]).map(|(a, b)| a * b).sum()
    }
    #[inline]
    fn row_norm(&self, c: usize) -> f64 {
        self.rows_dot(self, c).sqrt()
    }
    #[inline]
    fn sub_row(&self, c: usize, alpha: f64, x: &mut [f64; N]) {
        for i in 0..N {
            x[i] -= self[c][i] * alpha;
        }
    }
    #[inline]
    fn scale_columns(&mut self, source: &Self, w: &[f64; N]) {
        for c in 0..M {
            for i in 0..N {
                self[c][i] = w[i] * source[c][i];
            }
        }
    }
    #[inline]
    fn sub_transpose_mul(&self, y: &[f64; M], divisor: f64, x: &mut [f64; N]) {
        for i in 0..N {
            x[i] -= (0..M).map(|c| self[c][i] * y[c]).sum::<f64>() / divisor;
        }
    }
    #[inline]
    fn weighted_row_dot(&self, c: usize, w: &[f64; N], x: &[f64; N]) -> f64 {
        (0..N).map(|i| self[c][i] * w[i] * x[i]).sum()
    }
    #[inline]
    fn row_is_finite(&self, c: usize) -> bool {
        self[c].iter().all(|x| x.is_finite())
    }
    #[inline]
    fn is_finite(&self) -> bool {
        self.iter().all(|row| row.iter().all(|x| x.is_finite()))
    }
}

/// The `m × m` solves of a fixed-size system, on the stack: `G M⁻¹ Gᵀ` by the symmetric solve of
/// [`crate::linalg`] (Cholesky, falling back to LU), the Newton matrix by LU with partial
/// pivoting (it is not symmetric).
#[derive(Debug, Clone, Copy, Default)]
pub struct DenseConstraintSolver;

impl<const N: usize, const M: usize> ConstraintSolve<[f64; N], [f64; M], [[f64; N]; M]>
    for DenseConstraintSolver
{
    fn solve_gram(
        &mut self,
        jac: &[[f64; N]; M],
        w: &[f64; N],
        x: &mut [f64; M],
    ) -> Result<(), SolveFailure> {
        let a: [[f64; M]; M] = core::array::from_fn(|r| {
            core::array::from_fn(|c| (0..N).map(|i| jac[r][i] * w[i] * jac[c][i]).sum())
        });
        crate::linalg::dense::solve(&a, x, &SolveOptions::default())?;
        Ok(())
    }

    fn solve_newton(
        &mut self,
        a: &[[f64; N]; M],
        d: &[[f64; N]; M],
        x: &mut [f64; M],
    ) -> Result<(), SolveFailure> {
        let m: [[f64; M]; M] = core::array::from_fn(|r| {
            core::array::from_fn(|c| a[r].iter().zip(&d[c]).map(|(p, q)| p * q).sum())
        });
        crate::linalg::dense::solve_general(&m, x)
    }
}

impl<S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize>
    ConstrainedModel<[f64; N], [f64; M]> for S
{
    #[inline]
    fn constraint_count(&self) -> usize {
        M
    }
    #[inline]
    fn new_jacobian(&self) -> [[f64; N]; M] {
        [[0.0; N]; M]
    }
    #[inline]
    fn new_constraint_solver(&self) -> DenseConstraintSolver {
        DenseConstraintSolver
    }
    #[inline]
    fn constraints_into(&self, q: &[f64; N], g: &mut [f64; M]) {
        *g = self.constraints(q);
    }
    #[inline]
    fn constraints_jacobian_into(&self, q: &[f64; N], g: &mut [f64; M], jac: &mut [[f64; N]; M]) {
        *g = self.constraints(q);
        *jac = self.constraint_jacobian(q);
    }
    #[inline]
    fn constraint_row_into(
        &self,
        q: &[f64; N],
        c: usize,
        g: &mut [f64; M],
        jac: &mut [[f64; N]; M],
    ) -> f64 {
        *g = self.constraints(q);
        jac[c] = self.constraint_jacobian(q)[c];
        g[c]
    }
    #[inline]
    fn constraint_norm(&self, q: &[f64; N]) -> f64 {
        self.constraints(q)
            .iter()
            .map(|g| g * g)
            .sum::<f64>()
            .sqrt()
    }
}
