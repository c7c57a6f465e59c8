//! The attribute's arguments, as thiserror's `impl/src/attr.rs`: `#[mechanical_system]`, or
//! `#[mechanical_system(parameters(epsilon, sigma))]` to differentiate the potential in the
//! named fields too (`ParameterDerivatives`: ∂V/∂θ and ∂∇V/∂θ, for fitting force fields).

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Token};

use crate::ctxt::Ctxt;

/// What the attribute asks for.
#[derive(Default)]
pub struct Attr {
    /// The fields named in `parameters(...)`, in order (the user's tokens, for spans).
    pub parameters: Vec<Ident>,
}

struct Parameters(Vec<Ident>);

impl Parse for Parameters {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        if key != "parameters" {
            return Err(syn::Error::new(key.span(), "unknown argument"));
        }
        let inner;
        syn::parenthesized!(inner in input);
        let names = Punctuated::<Ident, Token![,]>::parse_terminated(&inner)?;
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after `parameters(...)`"));
        }
        Ok(Parameters(names.into_iter().collect()))
    }
}

/// `attr`, every problem reported to `cx` at the user's tokens.
pub fn parse(cx: &Ctxt, attr: TokenStream) -> Attr {
    if attr.is_empty() {
        return Attr::default();
    }
    match syn::parse2::<Parameters>(attr.clone()) {
        Ok(Parameters(parameters)) => {
            for (i, p) in parameters.iter().enumerate() {
                if parameters[..i].contains(p) {
                    cx.error_spanned_by(p, format!("parameter `{p}` is named twice"));
                }
            }
            Attr { parameters }
        }
        Err(_) => {
            cx.error_spanned_by(
                &attr,
                "#[mechanical_system] takes no arguments other than `parameters(field, ...)` \
                 (the fields to differentiate the potential in)",
            );
            Attr::default()
        }
    }
}
