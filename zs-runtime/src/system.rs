//! The traits the `#[mechanical_system]` macro implements and the integrators consume.
//!
//! Notation follows `shared/spec/INTEGRATORS.md`: configuration `q ∈ Rⁿ`, constant diagonal
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
}
