//! `#[mechanical_system]`: derive, symbolically and at compile time, the gradient, Hessian,
//! third-derivative contraction, constraint Jacobian and penalty terms of a potential written
//! as plain Rust. See `docs/ARCHITECTURE.md`.
//!
//! The front end follows thiserror's `impl/src` layout, one file per stage:
//! `ast` (typed view of the `impl` block) → `valid` (signatures, `N`, `M`) → `lower`
//! (bodies → expression graph) → `expand` (derivatives, scheduling, tokens), with every error
//! collected in a `ctxt::Ctxt` as in serde_derive. The symbolic engine is the `zs-symbolic` crate.

mod ast;
mod attr;
mod ctxt;
mod expand;
mod forms;
mod lower;
#[cfg(test)]
mod robustness;
mod valid;

use proc_macro::TokenStream;

/// Derive `Potential<N>`, `MechanicalSystem<N, M>`, `StiffSplit<N>`,
/// `ConstraintCurvature<N, M>` (and `FastPotential<N>` when there is a `fast_potential`) for
/// the annotated `impl` block.
///
/// (Not compiled here: a proc-macro crate cannot use its own macro. The same definition is
/// compiled and run as the README's doctest in `zs-runtime`:
/// `cargo test -p zs-runtime --doc`.)
///
/// ```ignore
/// #[mechanical_system]
/// impl DoublePendulum {
///     fn masses(&self) -> [f64; 4] { [1.0, 1.0, 1.0, 1.0] }
///     fn potential(&self, q: &[f64; 4]) -> f64 { -self.gravity * (q[1] + q[3]) }
///     fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
///         let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
///         [x1 * x1 + y1 * y1 - self.l1 * self.l1,
///          (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2]
///     }
/// }
/// ```
///
/// # The block
/// - `fn potential(&self, q: &[f64; N]) -> f64` (required; `N` an integer literal);
/// - `fn constraints(&self, q: &[f64; N]) -> [f64; M]` (optional, `M = 0` without it; every
///   component must depend on `q`);
/// - `fn masses(&self) -> [f64; N]` (optional, all ones without it), called as written;
/// - `fn stiff_potential(&self, q: &[f64; N]) -> f64` (optional): the stiff part `V1` of a
///   split `V = V0 + V1` (Tao & Owhadi eq. 19, with `ε⁻¹` folded into `V1`), for Z&Ss-stiff.
///   **The system's `Potential<N>` is then the total `potential + stiff_potential`**
///   (`potential` is `V0`), and so are the `penalized_*` methods (`V0 + V1 + ½ω²|g|²`);
///   `StiffSplit::stiff_hessian` is `Hess V1` alone;
/// - `fn fast_potential(&self, q: &[f64; N]) -> f64` (optional): the fast potential `W` of `H =
///   ½pᵀM⁻¹p + U + ε⁻²W` (the impulse paper, with `ε⁻²` folded into `W`), for the impulse methods.
///   **It is not part of `Potential<N>`**, which stays the slow `U` (`potential`, plus
///   `stiff_potential` if any); it is exposed through `FastPotential<N>` only;
/// - any other methods: they stay in the block; those called from `potential`/`constraints`
///   (`self.helper(x)` or `Self::helper(x)`) are inlined.
///
/// The block is kept as written (with `#[allow(dead_code)]`), so its methods stay callable.
///
/// # What the bodies may contain
/// The bodies are evaluated at expansion time, with `f64` values kept symbolic:
/// - `f64` literals, `std`/`core` `f64::consts` (`PI`, `E`, ...), `f64::EPSILON`, `const`
///   items in the body or the impl (`Self::K`), `self.field` (and `self.a.b`, `self.arr[2]`),
///   read at run time as parameters, as are other upper-case constants (`MY_CONST`); the
///   generated code reads each one `as f64`, so numeric fields of other types (`f32`,
///   integers) work where the Rust code converts them (`f64::from(self.k)`, `self.n as f64`);
/// - `q[i]` with `i` a constant at expansion time: literals, loop variables, integer
///   arithmetic on them (`q[3 * i + 1]`), `i as f64`;
/// - `let` (names, tuples, arrays, type ascriptions, `let mut` with `=`, `+=`, `-=`, `*=`,
///   `/=`), local arrays (`[a, b]`, `[0.0; 3]`, nested) with element assignment;
/// - `+ - * /`, unary minus, parentheses, blocks, `return`;
/// - `powi` (constant exponent), `powf`, `sqrt`, `exp`, `ln`, `sin`, `cos`, `tan`, `atan2`,
///   `tanh`, `acos`, `asin`, `atan`, and via identities `recip`, `log`, `log10`, `log2`,
///   `exp2`, `exp_m1`, `ln_1p`, `sinh`, `cosh`, `asinh`, `acosh`, `atanh`, `hypot`, `mul_add`,
///   `sin_cos`, `to_radians`, `to_degrees`; method (`x.sin()`) or path (`f64::sin(x)`) form;
/// - `for` loops over constant ranges (`0..K`, `0..=K`, `.rev()`, `.step_by(k)`,
///   `.enumerate()`, `.zip(..)`) or arrays, unrolled (at most 100 000 iterations in all),
///   with `break`/`continue`;
/// - `if`/`else` and `match` whose conditions are constants at expansion time.
///
/// Anything else is a compile error at the offending tokens: non-smooth functions (`abs`, `min`,
/// `max`, `floor`, ...), branching on coordinates, non-constant indices or loop bounds, integer
/// arithmetic mixed with `f64`s, recursion between helpers, macros, closures, ... After an error
/// the block (with the bodies the macro interpreted replaced by `unreachable!()`, so that rustc
/// does not repeat the macro's messages) and dummy trait impls are still emitted, so no cascade
/// follows. `tests/compile-fail/ui/` holds one compile-fail test per mistake, with the exact
/// message.
///
/// # Generated code
/// Straight-line, allocation-free code with common subexpressions shared within each function:
/// - `impl Potential<N>` (`masses`, `potential`, `gradient`, `hessian`, `third_contraction`,
///   `gradient_hessian`) for `V = potential + stiff_potential`;
/// - `impl StiffSplit<N>`: `stiff_hessian` = `Hess stiff_potential` (a structural zero without
///   one) and the fused `gradient_stiff_hessian` (`∇V`, `Hess V1`);
/// - `impl MechanicalSystem<N, M>` (`constraints`, `constraint_jacobian`, `penalized_*` for
///   `V_ω = V + ½ω² Σ g_c²`, and `penalized_stiff_hessian` / `penalized_gradient_stiff_hessian`
///   computing `Hess(V1 + ½ω² Σ g_c²)` directly, which `Penalized`'s `StiffSplit` uses);
/// - `impl ConstraintCurvature<N, M>`: `weighted_constraint_hessian(q, λ)` =
///   `Σ_c λ_c Hess g_c(q)` (zero when `M = 0`);
/// - `impl ConstraintThirdContraction<N, M>`: `weighted_constraint_third_contraction(q, a, λ)` =
///   `Σ_c λ_c ∇³g_c(q)[a, a, ·]`, what Patrick et al.'s variational equations need (`Variational`);
/// - `impl FastPotential<N>` (`fast_potential`, `fast_gradient`, `fast_hessian`) when the block
///   has a `fast_potential`.
#[proc_macro_attribute]
pub fn mechanical_system(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr.into(), item.into()).into()
}
