//! Error collection for the whole expansion, after serde_derive's `internals/ctxt.rs`.
//!
//! Every stage (parsing, validation, lowering) reports into one [`Ctxt`] and carries on, so the
//! user sees all problems of a definition at once instead of fixing them one compile at a time.
//! The context must be consumed with [`Ctxt::check`], which combines the errors into one
//! [`syn::Error`] (one `compile_error!` per message, each at its own span).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt::Display;
use std::thread;

use quote::ToTokens;

/// Collects errors from every stage of the expansion.
///
/// Identical errors at the same place (e.g. from an unrolled loop body or from a helper method
/// inlined several times) are reported once. Dropping an unchecked context panics (a bug in the
/// macro, never a user error), as in serde_derive.
pub struct Ctxt {
    /// `None` once checked.
    errors: RefCell<Option<Vec<syn::Error>>>,
    /// `(message, span)` keys of the errors already recorded.
    seen: RefCell<HashSet<String>>,
}

impl Ctxt {
    /// An empty context.
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
            seen: RefCell::new(HashSet::new()),
        }
    }

    /// Records an error spanning the tokens of `obj` (first to last token).
    pub fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        self.push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error produced by `syn` (e.g. a parse error).
    pub fn syn_error(&self, err: syn::Error) {
        for e in err {
            self.push(e);
        }
    }

    fn push(&self, err: syn::Error) {
        // `Span`'s Debug output carries the source position when the compiler provides one.
        let key = format!("{}@{:?}", err, err.span());
        if !self.seen.borrow_mut().insert(key) {
            return;
        }
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check")
            .push(err);
    }

    /// Number of errors recorded so far.
    pub fn error_count(&self) -> usize {
        self.errors.borrow().as_ref().map_or(0, Vec::len)
    }

    /// Consumes the context: `Ok` when no error was recorded, otherwise all errors combined.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("Ctxt checked twice")
            .into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}

impl Default for Ctxt {
    fn default() -> Self {
        Ctxt::new()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("zs-macros: forgot to check for errors");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_context_is_ok() {
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    fn errors_are_combined_and_deduplicated() {
        let cx = Ctxt::new();
        let at = quote::quote!(x);
        cx.error_spanned_by(&at, "first");
        cx.error_spanned_by(&at, "second");
        cx.error_spanned_by(&at, "first");
        assert_eq!(cx.error_count(), 2);
        let err = cx.check().unwrap_err();
        let messages: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages, ["first", "second"]);
    }
}
