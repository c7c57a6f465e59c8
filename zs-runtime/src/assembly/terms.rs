//! The per-term kernels of a system defined over bodies: what `#[mechanical_system]` generates
//! from the term functions (`site_potential`, `bond_potential`, `pair_potential`,
//! `angle_potential`, `dihedral_potential`, `body_constraints`, `bond_constraints`, the stiff variants), each differentiated
//! symbolically in the term's own `K·D` coordinates. One kernel trait, [`Kernel`], generic in the
//! body dimension `D`, the arity `K` and the [`Form`].

use super::forms::{Angle, Bond, Dihedral, Form, Forms, Pair, Pair14, Site};
use crate::simd::Lanes;

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
/// The types of a term's `K` bodies ([`super::Topology::types`]; all 0 without types).
pub type Kinds<const K: usize> = [u32; K];

/// The kernels of one form `F` of a definition whose bodies have `D` coordinates, acting on
/// `K = F::ARITY` bodies (implemented by `#[mechanical_system]`; see [`super::Assembled`] for
/// how they are applied).
///
/// Every energy kernel takes `omega`: it evaluates the term's part of `V + V1 + ½ω² Σ g_c²` —
/// the term's energy, its stiff energy, and the penalty of its constraints — and for
/// `omega = 0` the unpenalized `V + V1` without evaluating the constraints.
/// [`Kernel::value_gradient_stiff_hessian`] returns the value and gradient of that total and the
/// Hessian of its stiff part only (stiff energy + penalty).
///
/// Every kernel also takes its bodies' types `kinds` ([`super::Topology::types`]), which a
/// definition's term functions may read as `ka: usize, kb: usize, ...` to pick parameters from
/// tables (`self.epsilon[ka]`); lane kernels take one row per lane, one row for every lane
/// (a block whose terms' bodies have the same types: each parameter is then read once and
/// broadcast), or none when the form does not read them ([`super::FormInfo::typed`]).
///
/// The defaults are the kernels of an absent form (zero): [`Terms::FORMS`] tells the assembly
/// which forms to apply.
#[allow(unused_variables)]
pub trait Kernel<const D: usize, const K: usize, F: Form>: Sync {
    /// The term's energy at bodies `x`.
    fn energy(&self, omega: f64, x: &Local<D, K>, kinds: &Kinds<K>) -> f64 {
        0.0
    }
    /// Its energy and gradient, from one pass (their common subexpressions computed once).
    fn value_gradient(&self, omega: f64, x: &Local<D, K>, kinds: &Kinds<K>) -> (f64, Local<D, K>) {
        (0.0, [[0.0; D]; K])
    }
    /// [`Kernel::energy`] of `L::WIDTH` terms at once, one per lane: `x[k][d]` holds
    /// coordinate `d` of body `k` of every lane's term (see [`crate::simd`]). The generated
    /// kernels perform each lane's operations exactly as the scalar kernel does: the same bits.
    #[inline(always)]
    fn value_lanes<L: Lanes>(&self, omega: f64, x: &[[L; D]; K], kinds: &[Kinds<K>]) -> L {
        L::splat(0.0)
    }
    /// [`Kernel::value_gradient`] of `L::WIDTH` terms at once (as [`Kernel::value_lanes`]).
    #[inline(always)]
    fn value_gradient_lanes<L: Lanes>(
        &self,
        omega: f64,
        x: &[[L; D]; K],
        kinds: &[Kinds<K>],
    ) -> (L, [[L; D]; K]) {
        (L::splat(0.0), [[L::splat(0.0); D]; K])
    }
    /// Its energy, gradient and Hessian.
    fn value_gradient_hessian(
        &self,
        omega: f64,
        x: &Local<D, K>,
        kinds: &Kinds<K>,
    ) -> (f64, Local<D, K>, LocalHessian<D, K>) {
        (0.0, [[0.0; D]; K], [[[[0.0; D]; D]; K]; K])
    }
    /// Its energy, gradient and the Hessian of its stiff part.
    fn value_gradient_stiff_hessian(
        &self,
        omega: f64,
        x: &Local<D, K>,
        kinds: &Kinds<K>,
    ) -> (f64, Local<D, K>, LocalHessian<D, K>) {
        (0.0, [[0.0; D]; K], [[[[0.0; D]; D]; K]; K])
    }
    /// Its energy, gradient, Hessian and third-derivative tensor (when the form's third is
    /// [`super::ThirdForm::Tensor`]).
    fn value_gradient_hessian_third(
        &self,
        omega: f64,
        x: &Local<D, K>,
        kinds: &Kinds<K>,
    ) -> (f64, Local<D, K>, LocalHessian<D, K>, LocalThird<D, K>) {
        let (v, g, h) = self.value_gradient_hessian(omega, x, kinds);
        (v, g, h, [[[[[[0.0; D]; K]; D]; K]; D]; K])
    }
    /// Its third contraction `T(x; a)`.
    fn third_contraction(
        &self,
        omega: f64,
        x: &Local<D, K>,
        a: &Local<D, K>,
        kinds: &Kinds<K>,
    ) -> Local<D, K> {
        [[0.0; D]; K]
    }
    /// Its Hessian-vector product `H(x) a` (generated: a directional derivative of the
    /// gradient; this default multiplies the local Hessian).
    fn hessian_vector(
        &self,
        omega: f64,
        x: &Local<D, K>,
        a: &Local<D, K>,
        kinds: &Kinds<K>,
    ) -> Local<D, K> {
        let (_, _, h) = self.value_gradient_hessian(omega, x, kinds);
        core::array::from_fn(|i| {
            core::array::from_fn(|r| {
                (0..K)
                    .map(|j| (0..D).map(|c| h[i][j][r][c] * a[j][c]).sum::<f64>())
                    .sum()
            })
        })
    }
    /// `∂E/∂θ_p` into `dv[p]` and `∂∇E/∂θ_p` into `dg[p]` for the system's parameters
    /// ([`Terms::PARAMETERS`]); the default (no parameters, or a form that does not read them)
    /// leaves them as they are (zero).
    fn parameter_derivatives(
        &self,
        x: &Local<D, K>,
        kinds: &Kinds<K>,
        dv: &mut [f64],
        dg: &mut [Local<D, K>],
    ) {
    }
    /// Its constraints `g_c(x)` (the form's `FormInfo::constraints` of them) into `g`, their
    /// gradients into `jac` (row `c`).
    fn constraints(
        &self,
        x: &Local<D, K>,
        kinds: &Kinds<K>,
        g: &mut [f64],
        jac: &mut [Local<D, K>],
    ) {
    }
}

/// A system of bodies with `D` coordinates each, defined term by term: the kernels of every
/// form ([`Site`], [`Bond`], [`Pair`], [`Angle`], [`Dihedral`], [`Pair14`]), which of them the definition has ([`Terms::FORMS`]),
/// and the masses of a body. Implemented by `#[mechanical_system]`.
#[allow(unused_variables)]
pub trait Terms<const D: usize>:
    Kernel<D, 1, Site>
    + Kernel<D, 2, Bond>
    + Kernel<D, 2, Pair>
    + Kernel<D, 3, Angle>
    + Kernel<D, 4, Dihedral>
    + Kernel<D, 2, Pair14>
{
    /// The forms the definition has.
    const FORMS: Forms;
    /// The fields of `#[mechanical_system(parameters(...))]`, in order.
    const PARAMETERS: &'static [&'static str] = &[];

    /// The masses of the coordinates of a body of type `kind` (the diagonal of its block of
    /// `M`).
    fn body_masses(&self, kind: u32) -> Body<D> {
        [1.0; D]
    }

    /// True when every table of the definition indexed by a body's type has an entry `kind`
    /// (checked for every body before the first step: [`super::TopologyError::UnknownType`]).
    fn has_type(&self, kind: u32) -> bool {
        true
    }
}
