//! `#[mechanical_system]`: derive, symbolically and at compile time, the gradient, Hessian,
//! third-derivative contraction, constraint Jacobian and penalty terms of a potential written
//! as plain Rust. See `docs/ARCHITECTURE.md`.

pub(crate) mod sym;

use proc_macro::TokenStream;

/// Derive `Potential<N>` and `MechanicalSystem<N, M>` for the annotated `impl` block.
#[proc_macro_attribute]
pub fn mechanical_system(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
