//! The traits the `#[mechanical_system]` macro implements and the integrators consume.
//!
//! Notation follows `docs/INTEGRATORS.md`: configuration `q ∈ Rⁿ`, constant diagonal
//! mass matrix `M`, potential `V(q)`, gradient `∇V`, Hessian `H = Hess V`, third-derivative
//! contraction `T(q; a)_i = Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k` (a directional derivative, never the
//! n³ tensor), holonomic constraints `g(q) = 0` with Jacobian `G = Dg`, and the penalized
//! potential `V_ω = V + ½ω² gᵀg` (Tao & Owhadi, eq. 7).

/// A potential energy on `Rᴺ` with a constant diagonal mass matrix: everything an
/// unconstrained (or penalized) integrator needs.
///
/// Every `#[mechanical_system]` type implements it (for its unpenalized potential `V`), and so
/// does the value returned by [`MechanicalSystem::penalized`] (for `V_ω`).
pub trait Potential<const N: usize> {
    /// Diagonal of the constant mass matrix `M`.
    fn masses(&self) -> [f64; N];
    /// `V(q)`.
    fn potential(&self, q: &[f64; N]) -> f64;
    /// `∇V(q)`.
    fn gradient(&self, q: &[f64; N]) -> [f64; N];
    /// `Hess V(q)`, symmetric, row-major (`h[i][j] = ∂²V/∂q_i∂q_j`).
    fn hessian(&self, q: &[f64; N]) -> [[f64; N]; N];
    /// `T(q; a)_i = Σ_jk ∂³V/∂q_i∂q_j∂q_k a_j a_k`, the vector `a·V'''(q)·a` of Z&S eq. 3.
    fn third_contraction(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N];
    /// `∇V(q)` and `Hess V(q)` in one evaluation. Generated code overrides this so that the
    /// two share their common subexpressions; the default calls the two methods.
    #[inline]
    fn gradient_hessian(&self, q: &[f64; N]) -> ([f64; N], [[f64; N]; N]) {
        (self.gradient(q), self.hessian(q))
    }
    /// `V(q)` and `∇V(q)` in one evaluation (generated code shares their subexpressions: the
    /// energy comes almost free with the force). The default calls the two methods.
    #[inline]
    fn value_gradient(&self, q: &[f64; N]) -> (f64, [f64; N]) {
        (self.potential(q), self.gradient(q))
    }
    /// The Hessian-vector product `Hess V(q) · a`, without forming the Hessian:
    /// `#[mechanical_system]` generates it as one directional derivative of the gradient
    /// (`n` outputs instead of `n²`); the default multiplies [`Potential::hessian`].
    fn hessian_vector(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        let h = self.hessian(q);
        core::array::from_fn(|i| (0..N).map(|j| h[i][j] * a[j]).sum())
    }
}

/// A mechanical system with `N` coordinates and `M` holonomic constraints `g(q) = 0`
/// (`M = 0` when the definition has no `constraints`).
///
/// `#[mechanical_system]` implements it; the methods are straight-line code derived
/// symbolically at compile time.
pub trait MechanicalSystem<const N: usize, const M: usize>: Potential<N> {
    /// `g(q)`.
    fn constraints(&self, q: &[f64; N]) -> [f64; M];
    /// `G(q) = Dg(q)`, row `c` is `∇g_c`.
    fn constraint_jacobian(&self, q: &[f64; N]) -> [[f64; N]; M];
    /// `V_ω(q) = V(q) + ½ω² Σ_c g_c(q)²` (eq. 7).
    fn penalized_potential(&self, omega: f64, q: &[f64; N]) -> f64;
    /// `∇V_ω(q)`.
    fn penalized_gradient(&self, omega: f64, q: &[f64; N]) -> [f64; N];
    /// `Hess V_ω(q)`.
    fn penalized_hessian(&self, omega: f64, q: &[f64; N]) -> [[f64; N]; N];
    /// `T_ω(q; a)`, the third contraction of `V_ω`.
    fn penalized_third_contraction(&self, omega: f64, q: &[f64; N], a: &[f64; N]) -> [f64; N];
    /// `∇V_ω` and `Hess V_ω` in one evaluation (shared subexpressions in generated code).
    #[inline]
    fn penalized_gradient_hessian(&self, omega: f64, q: &[f64; N]) -> ([f64; N], [[f64; N]; N]) {
        (
            self.penalized_gradient(omega, q),
            self.penalized_hessian(omega, q),
        )
    }
    /// `V_ω` and `∇V_ω` in one evaluation (shared subexpressions in generated code).
    #[inline]
    fn penalized_value_gradient(&self, omega: f64, q: &[f64; N]) -> (f64, [f64; N]) {
        (
            self.penalized_potential(omega, q),
            self.penalized_gradient(omega, q),
        )
    }
    /// `Hess V_ω(q) · a` ([`Potential::hessian_vector`] of the penalized potential).
    fn penalized_hessian_vector(&self, omega: f64, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        let h = self.penalized_hessian(omega, q);
        core::array::from_fn(|i| (0..N).map(|j| h[i][j] * a[j]).sum())
    }
    /// `Hess V1` of the stiff part of `V_ω`: the penalty `½ω²|g|²` plus the user's
    /// `stiff_potential`, if any (see [`StiffSplit`]). Generated code computes it directly; this
    /// default, `Hess V_ω − Hess V`, is right for systems without a `stiff_potential`.
    #[inline]
    fn penalized_stiff_hessian(&self, omega: f64, q: &[f64; N]) -> [[f64; N]; N] {
        let mut h = self.penalized_hessian(omega, q);
        let h0 = self.hessian(q);
        for i in 0..N {
            for j in 0..N {
                h[i][j] -= h0[i][j];
            }
        }
        h
    }
    /// `∇V_ω` and the stiff Hessian of [`MechanicalSystem::penalized_stiff_hessian`] together.
    #[inline]
    fn penalized_gradient_stiff_hessian(
        &self,
        omega: f64,
        q: &[f64; N],
    ) -> ([f64; N], [[f64; N]; N]) {
        (
            self.penalized_gradient(omega, q),
            self.penalized_stiff_hessian(omega, q),
        )
    }
    /// The penalized system `V_ω` as a [`Potential`], for the unconstrained integrators.
    #[inline]
    fn penalized(&self, omega: f64) -> Penalized<'_, Self, N, M>
    where
        Self: Sized,
    {
        Penalized {
            system: self,
            omega,
        }
    }
}

/// `V_ω = V + ½ω² gᵀg` of a [`MechanicalSystem`] (eq. 7), returned by
/// [`MechanicalSystem::penalized`].
#[derive(Debug)]
pub struct Penalized<'a, S, const N: usize, const M: usize> {
    /// The constrained system.
    pub system: &'a S,
    /// Penalty frequency ω (stiffness ω²).
    pub omega: f64,
}

impl<S, const N: usize, const M: usize> Clone for Penalized<'_, S, N, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, const N: usize, const M: usize> Copy for Penalized<'_, S, N, M> {}

impl<S: MechanicalSystem<N, M>, const N: usize, const M: usize> Potential<N>
    for Penalized<'_, S, N, M>
{
    #[inline]
    fn masses(&self) -> [f64; N] {
        self.system.masses()
    }
    #[inline]
    fn potential(&self, q: &[f64; N]) -> f64 {
        self.system.penalized_potential(self.omega, q)
    }
    #[inline]
    fn gradient(&self, q: &[f64; N]) -> [f64; N] {
        self.system.penalized_gradient(self.omega, q)
    }
    #[inline]
    fn hessian(&self, q: &[f64; N]) -> [[f64; N]; N] {
        self.system.penalized_hessian(self.omega, q)
    }
    #[inline]
    fn third_contraction(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        self.system.penalized_third_contraction(self.omega, q, a)
    }
    #[inline]
    fn gradient_hessian(&self, q: &[f64; N]) -> ([f64; N], [[f64; N]; N]) {
        self.system.penalized_gradient_hessian(self.omega, q)
    }
    #[inline]
    fn value_gradient(&self, q: &[f64; N]) -> (f64, [f64; N]) {
        self.system.penalized_value_gradient(self.omega, q)
    }
    #[inline]
    fn hessian_vector(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        self.system.penalized_hessian_vector(self.omega, q, a)
    }
}

impl<P: Potential<N> + ?Sized, const N: usize> Potential<N> for &P {
    #[inline]
    fn masses(&self) -> [f64; N] {
        (**self).masses()
    }
    #[inline]
    fn potential(&self, q: &[f64; N]) -> f64 {
        (**self).potential(q)
    }
    #[inline]
    fn gradient(&self, q: &[f64; N]) -> [f64; N] {
        (**self).gradient(q)
    }
    #[inline]
    fn hessian(&self, q: &[f64; N]) -> [[f64; N]; N] {
        (**self).hessian(q)
    }
    #[inline]
    fn third_contraction(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        (**self).third_contraction(q, a)
    }
    #[inline]
    fn gradient_hessian(&self, q: &[f64; N]) -> ([f64; N], [[f64; N]; N]) {
        (**self).gradient_hessian(q)
    }
    #[inline]
    fn value_gradient(&self, q: &[f64; N]) -> (f64, [f64; N]) {
        (**self).value_gradient(q)
    }
    #[inline]
    fn hessian_vector(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        (**self).hessian_vector(q, a)
    }
}

/// Derivatives of the potential in parameters of the system — the fields named in
/// `#[mechanical_system(parameters(epsilon, sigma))]` — for fitting force fields: the macro
/// differentiates in `self.field` as it does in `q` (exactly, no finite differences).
pub trait ParameterDerivatives<const N: usize, const P: usize>: Potential<N> {
    /// The parameters' names, in the attribute's order.
    const PARAMETERS: [&'static str; P];
    /// `∂V/∂θ_p` at `q`.
    fn potential_parameter_gradient(&self, q: &[f64; N]) -> [f64; P];
    /// `∂(∇V)/∂θ_p` at `q`: row `p` is the gradient's derivative in parameter `p`.
    fn gradient_parameter_jacobian(&self, q: &[f64; N]) -> [[f64; N]; P];
}

/// A potential split `V = V0 + V1` into a soft part `V0` and a stiff part `V1` (the `ε⁻¹V1` of
/// Tao & Owhadi eq. 19, with `ε⁻¹` folded into `V1`), for Z&Ss-stiff (Integrator 5):
/// `(M + βh² Hess V1(x_k)) a_k = −∇V(x_k)`. Only the stiff Hessian enters the solve.
///
/// [`Potential`] is the *total* `V = V0 + V1`. `#[mechanical_system]` implements this trait
/// for every system: `V1` is the user's `stiff_potential` (zero when absent); for
/// [`Penalized`] values `V1` also contains the penalty `½ω²|g|²`.
pub trait StiffSplit<const N: usize>: Potential<N> {
    /// `Hess V1(q)`, the Hessian of the stiff part only.
    fn stiff_hessian(&self, q: &[f64; N]) -> [[f64; N]; N];
    /// `∇V(q)` of the total potential and `Hess V1(q)` of the stiff part, in one evaluation.
    #[inline]
    fn gradient_stiff_hessian(&self, q: &[f64; N]) -> ([f64; N], [[f64; N]; N]) {
        (self.gradient(q), self.stiff_hessian(q))
    }
}

/// A fast potential `W` beside the slow potential `U` (the system's [`Potential`]), for the
/// impulse family of the impulse paper: `H = ½pᵀM⁻¹p + U(q) + ε⁻²W(q)` with `ε⁻²` folded into `W`.
/// `W` is minimal on the constraint manifold `g(q) = 0` of the [`MechanicalSystem`].
///
/// `#[mechanical_system]` implements it when the definition has a `fast_potential`.
pub trait FastPotential<const N: usize>: Potential<N> {
    /// `W(q)`.
    fn fast_potential(&self, q: &[f64; N]) -> f64;
    /// `∇W(q)`.
    fn fast_gradient(&self, q: &[f64; N]) -> [f64; N];
    /// `Hess W(q)`.
    fn fast_hessian(&self, q: &[f64; N]) -> [[f64; N]; N];
}

/// Second derivatives of the constraints, contracted with multipliers: `Σ_c λ_c Hess g_c(q)`
/// (needed by the derivative of the projection onto `g = 0`, e.g. the mollified impulse method of
/// the impulse paper). `#[mechanical_system]` implements it for every system.
pub trait ConstraintCurvature<const N: usize, const M: usize>: MechanicalSystem<N, M> {
    /// `Σ_c λ_c Hess g_c(q)`.
    fn weighted_constraint_hessian(&self, q: &[f64; N], lambda: &[f64; M]) -> [[f64; N]; N];
}

/// The constraints' third derivatives, contracted: what Patrick et al.'s variational equations need
/// (`docs/VARIATIONAL.md` §1: the derivative of `c_a = vᵀ Hess g_a v` along `δq`). Generated by
/// `#[mechanical_system]` for fixed-size systems.
pub trait ConstraintThirdContraction<const N: usize, const M: usize>:
    ConstraintCurvature<N, M>
{
    /// `Σ_c λ_c ∇³g_c(q)[a, a, ·]`, i.e. `∇_q (Σ_c λ_c aᵀ Hess g_c(q) a)` at fixed `a`.
    fn weighted_constraint_third_contraction(
        &self,
        q: &[f64; N],
        a: &[f64; N],
        lambda: &[f64; M],
    ) -> [f64; N];
}

impl<S: MechanicalSystem<N, M>, const N: usize, const M: usize> StiffSplit<N>
    for Penalized<'_, S, N, M>
{
    #[inline]
    fn stiff_hessian(&self, q: &[f64; N]) -> [[f64; N]; N] {
        self.system.penalized_stiff_hessian(self.omega, q)
    }
    #[inline]
    fn gradient_stiff_hessian(&self, q: &[f64; N]) -> ([f64; N], [[f64; N]; N]) {
        self.system.penalized_gradient_stiff_hessian(self.omega, q)
    }
}
