//! The per-term kernels of a system defined over bodies: what `#[mechanical_system]` generates
//! from `site_potential`, `bond_potential`, `pair_potential`, `body_constraints`,
//! `bond_constraints` (and the stiff variants), each differentiated symbolically in the term's
//! own `K·D` coordinates.

/// A body's coordinates (`D` of them).
pub type Body<const D: usize> = [f64; D];
/// The gradient (or a direction, or a third contraction) of a term acting on `K` bodies.
pub type Local<const D: usize, const K: usize> = [[f64; D]; K];
/// The Hessian of a term acting on `K` bodies, as `K × K` blocks of `D × D`: block `[a][b]` holds
/// `∂²E/∂x_a∂x_b` (row: a coordinate of body `a`, column: of body `b`).
pub type LocalHessian<const D: usize, const K: usize> = [[[[f64; D]; D]; K]; K];
/// The third-derivative tensor of a term acting on `K` bodies: `[a][i][b][j][c][k]` holds
/// `∂³E/∂x_ai∂x_bj∂x_ck` (symmetric in the three index pairs).
pub type LocalThird<const D: usize, const K: usize> = [[[[[[f64; D]; K]; D]; K]; D]; K];

/// How the assembly obtains a form's third contraction `T(x; a)` (Z&S, eq. 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThirdForm {
    /// From the `*_third_contraction` kernel at each call.
    #[default]
    Direct,
    /// The form's third derivative is identically zero (a harmonic bond, say): its
    /// contribution is skipped.
    Zero,
    /// The form is small (`K·D ≤ 4` coordinates): `*_gradient_hessian_third` also returns its
    /// third-derivative tensor, which the assembly keeps after a Hessian evaluation made for a
    /// Z&S step and contracts with the step's direction, instead of evaluating the form's
    /// transcendental functions a second time.
    Tensor,
}

/// Which term forms a definition has, and how many constraints per body and per bond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Forms {
    /// `site_potential`: one term per body.
    pub site: bool,
    /// `stiff_site_potential`: the stiff part of the site term (Z&Ss-stiff, eq. 19).
    pub stiff_site: bool,
    /// `bond_potential`: one term per bond.
    pub bond: bool,
    /// `stiff_bond_potential`: the stiff part of the bond term.
    pub stiff_bond: bool,
    /// `pair_potential`: one term per unordered, non-excluded pair of bodies.
    pub pair: bool,
    /// Components of `body_constraints` (0 without).
    pub body_constraints: usize,
    /// Components of `bond_constraints` (0 without).
    pub bond_constraints: usize,
    /// How the site form's third contraction is obtained.
    pub site_third: ThirdForm,
    /// How the bond form's.
    pub bond_third: ThirdForm,
    /// How the pair form's.
    pub pair_third: ThirdForm,
}

impl Forms {
    /// True when some term acts on one body (a site potential or body constraints).
    pub fn has_site(&self) -> bool {
        self.site || self.stiff_site || self.body_constraints > 0
    }
    /// True when some term acts on each bond.
    pub fn has_bond(&self) -> bool {
        self.bond || self.stiff_bond || self.bond_constraints > 0
    }
    /// True when bond terms contribute to the stiff Hessian `Hess V1` (stiff bond potential,
    /// or the penalty of bond constraints).
    pub fn bond_is_stiff(&self) -> bool {
        self.stiff_bond || self.bond_constraints > 0
    }
}

/// The kernels of a system of bodies with `D` coordinates each (implemented by
/// `#[mechanical_system]` for definitions written with term functions; see
/// [`super::Assembled`] for how they are applied).
///
/// Every energy kernel takes `omega`: it evaluates the term's part of
/// `V + V1 + ½ω² Σ g_c²` — the site term with the penalty of the body constraints, the bond
/// term with the penalty of the bond constraints — and, for `omega = 0`, the unpenalized
/// `V + V1` without evaluating the constraints. `*_gradient_stiff_hessian` returns the gradient
/// of that total and the Hessian of the stiff part only (`stiff_*_potential` + penalty).
///
/// The defaults are the kernels of an absent form (zero): [`Terms::FORMS`] tells the assembly
/// which forms to apply.
#[allow(unused_variables)]
pub trait Terms<const D: usize>: Sync {
    /// The forms the definition has.
    const FORMS: Forms;

    /// The masses of a body's coordinates (the diagonal of its block of `M`).
    fn body_masses(&self) -> Body<D> {
        [1.0; D]
    }

    /// Site term at body `x`.
    fn site_energy(&self, omega: f64, x: &Local<D, 1>) -> f64 {
        0.0
    }
    /// Its gradient.
    fn site_gradient(&self, omega: f64, x: &Local<D, 1>) -> Local<D, 1> {
        [[0.0; D]; 1]
    }
    /// Its gradient and Hessian.
    fn site_gradient_hessian(
        &self,
        omega: f64,
        x: &Local<D, 1>,
    ) -> (Local<D, 1>, LocalHessian<D, 1>) {
        ([[0.0; D]; 1], [[[[0.0; D]; D]; 1]; 1])
    }
    /// Its gradient and the Hessian of its stiff part.
    fn site_gradient_stiff_hessian(
        &self,
        omega: f64,
        x: &Local<D, 1>,
    ) -> (Local<D, 1>, LocalHessian<D, 1>) {
        ([[0.0; D]; 1], [[[[0.0; D]; D]; 1]; 1])
    }
    /// Its gradient, Hessian and third-derivative tensor (when `FORMS.site_third` is
    /// [`ThirdForm::Tensor`]).
    fn site_gradient_hessian_third(
        &self,
        omega: f64,
        x: &Local<D, 1>,
    ) -> (Local<D, 1>, LocalHessian<D, 1>, LocalThird<D, 1>) {
        let (g, h) = self.site_gradient_hessian(omega, x);
        (g, h, [[[[[[0.0; D]; 1]; D]; 1]; D]; 1])
    }
    /// Its third contraction `T(x; a)`.
    fn site_third_contraction(&self, omega: f64, x: &Local<D, 1>, a: &Local<D, 1>) -> Local<D, 1> {
        [[0.0; D]; 1]
    }

    /// Bond term at bodies `x = [x_i, x_j]` of bond `(i, j)`.
    fn bond_energy(&self, omega: f64, x: &Local<D, 2>) -> f64 {
        0.0
    }
    /// Its gradient.
    fn bond_gradient(&self, omega: f64, x: &Local<D, 2>) -> Local<D, 2> {
        [[0.0; D]; 2]
    }
    /// Its gradient and Hessian.
    fn bond_gradient_hessian(
        &self,
        omega: f64,
        x: &Local<D, 2>,
    ) -> (Local<D, 2>, LocalHessian<D, 2>) {
        ([[0.0; D]; 2], [[[[0.0; D]; D]; 2]; 2])
    }
    /// Its gradient and the Hessian of its stiff part.
    fn bond_gradient_stiff_hessian(
        &self,
        omega: f64,
        x: &Local<D, 2>,
    ) -> (Local<D, 2>, LocalHessian<D, 2>) {
        ([[0.0; D]; 2], [[[[0.0; D]; D]; 2]; 2])
    }
    /// Its gradient, Hessian and third-derivative tensor (when `FORMS.bond_third` is
    /// [`ThirdForm::Tensor`]).
    fn bond_gradient_hessian_third(
        &self,
        omega: f64,
        x: &Local<D, 2>,
    ) -> (Local<D, 2>, LocalHessian<D, 2>, LocalThird<D, 2>) {
        let (g, h) = self.bond_gradient_hessian(omega, x);
        (g, h, [[[[[[0.0; D]; 2]; D]; 2]; D]; 2])
    }
    /// Its third contraction.
    fn bond_third_contraction(&self, omega: f64, x: &Local<D, 2>, a: &Local<D, 2>) -> Local<D, 2> {
        [[0.0; D]; 2]
    }

    /// Pair term at bodies `x = [x_i, x_j]`, `i < j` (no constraints: `omega` is unused).
    fn pair_energy(&self, x: &Local<D, 2>) -> f64 {
        0.0
    }
    /// Its gradient.
    fn pair_gradient(&self, x: &Local<D, 2>) -> Local<D, 2> {
        [[0.0; D]; 2]
    }
    /// Its gradient and Hessian.
    fn pair_gradient_hessian(&self, x: &Local<D, 2>) -> (Local<D, 2>, LocalHessian<D, 2>) {
        ([[0.0; D]; 2], [[[[0.0; D]; D]; 2]; 2])
    }
    /// Its gradient, Hessian and third-derivative tensor (when `FORMS.pair_third` is
    /// [`ThirdForm::Tensor`]).
    fn pair_gradient_hessian_third(
        &self,
        x: &Local<D, 2>,
    ) -> (Local<D, 2>, LocalHessian<D, 2>, LocalThird<D, 2>) {
        let (g, h) = self.pair_gradient_hessian(x);
        (g, h, [[[[[[0.0; D]; 2]; D]; 2]; D]; 2])
    }
    /// Its third contraction.
    fn pair_third_contraction(&self, x: &Local<D, 2>, a: &Local<D, 2>) -> Local<D, 2> {
        [[0.0; D]; 2]
    }

    /// The body constraints `g_c(x)` (`FORMS.body_constraints` of them) into `g`, their
    /// gradients into `jac` (row `c`).
    fn body_constraints(&self, x: &Local<D, 1>, g: &mut [f64], jac: &mut [Local<D, 1>]) {}
    /// The bond constraints of bond `x = [x_i, x_j]` into `g`, their gradients into `jac`.
    fn bond_constraints(&self, x: &Local<D, 2>, g: &mut [f64], jac: &mut [Local<D, 2>]) {}
}
