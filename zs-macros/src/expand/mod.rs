//! Expansion: parse → validate → lower → differentiate → schedule → tokens.
//!
//! [`expand`] is the whole macro on `proc_macro2` token streams (unit-testable without the
//! compiler). On success it emits the user's block (with `#[allow(dead_code)]`) and the
//! `Potential<N>` / `StiffSplit<N>` / `MechanicalSystem<N, M>` / `ConstraintCurvature<N, M>`
//! (and `FastPotential<N>`) impls as straight-line code, one `let tK: f64` per scheduled
//! instruction. On error it emits the user's block, every error, and dummy
//! impls (when `N` is known) so that no cascade of "trait not implemented" errors follows.

mod emit;
mod fixed;
mod terms;
#[cfg(test)]
mod tests;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::ItemImpl;

use crate::ast::Input;
use crate::ctxt::Ctxt;
use crate::lower;
use crate::valid::{self, Shape};

/// The whole macro: `#[mechanical_system(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_impl: ItemImpl = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(_) => {
            let err = not_an_impl(&item).to_compile_error();
            return quote!(#item #err);
        }
    };
    let cx = Ctxt::new();
    let attr = crate::attr::parse(&cx, attr);
    let input = Input::from_syn(&item_impl);
    let shape = valid::check_signatures(&cx, &input);
    if let Some(t) = &shape.terms {
        let lowered = lower::lower_terms(&cx, &input, t);
        let marked = marked_parameters(&cx, &attr.parameters, &lowered.params);
        return match cx.check() {
            Ok(()) => terms::generate(&input, t, lowered, &marked),
            Err(err) => terms::fallback(&input, t, &err, &lowered.visited),
        };
    }
    let lowered = lower::lower(&cx, &input, &shape);
    let marked = marked_parameters(&cx, &attr.parameters, &lowered.params);
    match cx.check() {
        Ok(()) => fixed::generate(&input, &shape, lowered, &marked),
        Err(err) => fallback(&input, &shape, &err, &lowered.visited),
    }
}

/// The fields of `parameters(...)` with their `Var::Param` indices: each must be read as
/// `self.field` somewhere in the definition (an error at the name otherwise).
fn marked_parameters(
    cx: &Ctxt,
    names: &[Ident],
    params: &[lower::ParamExpr],
) -> Vec<(String, u32)> {
    names
        .iter()
        .filter_map(|p| {
            let place = format!("self.{p}");
            let k = params.iter().position(|e| {
                e.tokens.to_string().split_whitespace().collect::<String>() == place
            });
            if k.is_none() {
                cx.error_spanned_by(
                    p,
                    format!(
                        "`{p}` is not read as `self.{p}` in the definition: nothing to differentiate"
                    ),
                );
            }
            k.map(|k| (p.to_string(), k as u32))
        })
        .collect()
}

/// The error for an item that is not an `impl` block, at the item's name when it has one.
fn not_an_impl(item: &TokenStream) -> syn::Error {
    let usage = |name: &dyn std::fmt::Display| {
        format!("`impl {name} {{ fn potential(&self, q: &[f64; N]) -> f64 {{ ... }} }}`")
    };
    let on = |what: &str, name: &Ident, at: TokenStream| {
        syn::Error::new_spanned(
            at,
            format!(
                "#[mechanical_system] goes on the impl block that defines the potential, {}, \
                 not on the {what} itself",
                usage(name)
            ),
        )
    };
    match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Struct(s)) => {
            let (kw, name) = (&s.struct_token, &s.ident);
            on("struct", name, quote!(#kw #name))
        }
        Ok(syn::Item::Enum(e)) => {
            let (kw, name) = (&e.enum_token, &e.ident);
            on("enum", name, quote!(#kw #name))
        }
        Ok(syn::Item::Union(u)) => {
            let (kw, name) = (&u.union_token, &u.ident);
            on("union", name, quote!(#kw #name))
        }
        _ => {
            let at = item
                .clone()
                .into_iter()
                .next()
                .map_or_else(Span::call_site, |t| t.span());
            syn::Error::new(
                at,
                format!(
                    "#[mechanical_system] goes on an inherent impl block: {}",
                    usage(&"MySystem")
                ),
            )
        }
    }
}

/// The user's block, re-emitted with `#[allow(dead_code)]` (helpers and the role methods may
/// be unused once the trait impls exist).
///
/// After an error (`stub` is `Some`), it is adjusted so that rustc does not repeat the macro's
/// messages: the bodies the macro interpreted (`stub`'s methods), whose problems were just
/// reported, are replaced by `unreachable!()`, and a trait impl (itself an error) becomes an
/// inherent impl, which the fallback trait impls cannot conflict with. Signatures are kept, so
/// code calling the methods still type-checks.
pub(crate) fn user_impl(item: &ItemImpl, stub: Option<&[String]>) -> TokenStream {
    let mut item = item.clone();
    item.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    // Keeps the trait's `use` used once the impl is made inherent (no "unused import" warning
    // on top of the error).
    let mut trait_use = TokenStream::new();
    if let Some(stub) = stub {
        if let Some((path, _)) = item.trait_.take() {
            if item.generics.params.is_empty() {
                trait_use = quote! {
                    const _: () = {
                        #[allow(dead_code)]
                        fn __zs_trait_path<T: ?Sized + #path>() {}
                    };
                };
            }
        }
        for it in &mut item.items {
            if let syn::ImplItem::Fn(f) = it {
                if stub.iter().any(|n| f.sig.ident == n) {
                    f.attrs
                        .push(syn::parse_quote!(#[allow(unused_variables, unused_mut)]));
                    f.block = syn::parse_quote!({
                        ::core::unreachable!("#[mechanical_system] reported an error here")
                    });
                }
            }
        }
    }
    quote!(#item #trait_use)
}

/// Lints silenced in generated code, so that users' `clippy -D warnings` stays clean.
pub(crate) fn allow_lints() -> TokenStream {
    quote! {
        #[allow(
            unused,
            non_snake_case,
            trivial_numeric_casts,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
        )]
    }
}

use emit::usize_lit;

/// The `impl<...> Trait for Ty where ...` header pieces.
pub(crate) fn header(input: &Input<'_>) -> (TokenStream, TokenStream, TokenStream) {
    let (impl_generics, _, where_clause) = input.original.generics.split_for_impl();
    (
        impl_generics.into_token_stream(),
        input.original.self_ty.to_token_stream(),
        where_clause.into_token_stream(),
    )
}

pub(crate) fn masses_body(input: &Input<'_>, shape: &Shape, n: usize) -> TokenStream {
    let self_ty = &input.original.self_ty;
    let n = usize_lit(n);
    match shape.masses_self {
        Some(true) => quote!(<#self_ty>::masses(self)),
        Some(false) => quote!(<#self_ty>::masses()),
        None => quote!([1.0; #n]),
    }
}

/// The expansion after errors: the user's block, the errors, and (when `N` is known) dummy
/// impls returning zeros, so that uses of the traits elsewhere do not add errors.
///
/// `visited` are the methods whose bodies were interpreted (see [`user_impl`]).
pub(crate) fn fallback(
    input: &Input<'_>,
    shape: &Shape,
    err: &syn::Error,
    visited: &[String],
) -> TokenStream {
    let user = user_impl(input.original, Some(visited));
    let errors = err.to_compile_error();
    let Some(n) = shape.n else {
        return quote!(#user #errors);
    };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let n_lit = usize_lit(n);
    let potential = quote! {
        #allow
        impl #impl_generics ::zs_runtime::Potential<#n_lit> for #self_ty #where_clause {
            fn masses(&self) -> [f64; #n_lit] { [1.0; #n_lit] }
            fn potential(&self, q: &[f64; #n_lit]) -> f64 { 0.0 }
            fn gradient(&self, q: &[f64; #n_lit]) -> [f64; #n_lit] { [0.0; #n_lit] }
            fn hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                [[0.0; #n_lit]; #n_lit]
            }
            fn third_contraction(&self, q: &[f64; #n_lit], a: &[f64; #n_lit]) -> [f64; #n_lit] {
                [0.0; #n_lit]
            }
        }

        #allow
        impl #impl_generics ::zs_runtime::StiffSplit<#n_lit> for #self_ty #where_clause {
            fn stiff_hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                [[0.0; #n_lit]; #n_lit]
            }
        }
    };
    let fast = input.method("fast_potential").map(|_| {
        quote! {
            #allow
            impl #impl_generics ::zs_runtime::FastPotential<#n_lit> for #self_ty #where_clause {
                fn fast_potential(&self, q: &[f64; #n_lit]) -> f64 { 0.0 }
                fn fast_gradient(&self, q: &[f64; #n_lit]) -> [f64; #n_lit] { [0.0; #n_lit] }
                fn fast_hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                    [[0.0; #n_lit]; #n_lit]
                }
            }
        }
    });
    let system = shape.m.map(|m| {
        let m_lit = usize_lit(m);
        quote! {
            #allow
            impl #impl_generics ::zs_runtime::MechanicalSystem<#n_lit, #m_lit> for #self_ty #where_clause {
                fn constraints(&self, q: &[f64; #n_lit]) -> [f64; #m_lit] { [0.0; #m_lit] }
                fn constraint_jacobian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #m_lit] {
                    [[0.0; #n_lit]; #m_lit]
                }
                fn penalized_potential(&self, omega: f64, q: &[f64; #n_lit]) -> f64 { 0.0 }
                fn penalized_gradient(&self, omega: f64, q: &[f64; #n_lit]) -> [f64; #n_lit] {
                    [0.0; #n_lit]
                }
                fn penalized_hessian(&self, omega: f64, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                    [[0.0; #n_lit]; #n_lit]
                }
                fn penalized_third_contraction(
                    &self,
                    omega: f64,
                    q: &[f64; #n_lit],
                    a: &[f64; #n_lit],
                ) -> [f64; #n_lit] {
                    [0.0; #n_lit]
                }
            }

            #allow
            impl #impl_generics ::zs_runtime::ConstraintCurvature<#n_lit, #m_lit> for #self_ty #where_clause {
                fn weighted_constraint_hessian(
                    &self,
                    q: &[f64; #n_lit],
                    lambda: &[f64; #m_lit],
                ) -> [[f64; #n_lit]; #n_lit] {
                    [[0.0; #n_lit]; #n_lit]
                }
            }

            #allow
            impl #impl_generics ::zs_runtime::ConstraintThirdContraction<#n_lit, #m_lit> for #self_ty #where_clause {
                fn weighted_constraint_third_contraction(
                    &self,
                    q: &[f64; #n_lit],
                    a: &[f64; #n_lit],
                    lambda: &[f64; #m_lit],
                ) -> [f64; #n_lit] {
                    [0.0; #n_lit]
                }
            }
        }
    });
    quote! {
        #user
        #errors
        #potential
        #fast
        #system
    }
}
