//! The implementation of `#[mechanical_system]` compiled as an ordinary library, so that a
//! fuzzer can call its expansion function directly.
//!
//! A proc-macro crate can only export macros, so `zs_macros::expand::expand` cannot be called
//! from outside. Rather than splitting zs-macros into a proc-macro shim and an implementation
//! crate (a new workspace member and a moved source tree, for the fuzzer's sake only), this
//! crate compiles the very same source files with `#[path]`: every module of zs-macros except
//! its `lib.rs` (the only file that touches `proc_macro`), at the crate root, where their
//! `crate::...` paths resolve as they do in zs-macros; the symbolic engine is the `zs-symbolic`
//! crate, a dependency here as there. The modules only use `proc_macro2`,
//! which outside a compiler falls back to its own lexer and spans.
//!
//! Keep the list below in step with the `mod` lines of `zs-macros/src/lib.rs`: a module added
//! there and missing here is a compile error here (an unresolved `crate::...` path).

// The fuzz target uses only `expand`; the rest of the front end's API is unused here.
#![allow(dead_code, unused_imports)]

#[path = "../../zs-macros/src/ast.rs"]
mod ast;
#[path = "../../zs-macros/src/ctxt.rs"]
mod ctxt;
#[path = "../../zs-macros/src/expand.rs"]
mod expand;
#[path = "../../zs-macros/src/lower.rs"]
mod lower;
#[path = "../../zs-macros/src/valid.rs"]
mod valid;

/// `#[mechanical_system(attr)] item`, exactly as the macro expands it.
pub use expand::expand;
