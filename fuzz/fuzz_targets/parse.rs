//! Arbitrary bytes → `#[mechanical_system]` expansion: it must never panic.
//!
//! The input is read as UTF-8 and lexed by `proc_macro2` (inputs that do not lex are skipped:
//! rustc never hands those to a macro). A NUL byte, if any, splits the attribute's arguments
//! (before) from the item (after). Besides not panicking, the expansion must never report an
//! internal error, and without a `compile_error!` it must be valid Rust items.

#![no_main]

use std::str::FromStr;

use libfuzzer_sys::fuzz_target;
use proc_macro2::TokenStream;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (attr, item) = text.split_once('\0').unwrap_or(("", text));
    let (Ok(attr), Ok(item)) = (TokenStream::from_str(attr), TokenStream::from_str(item)) else {
        return;
    };
    let out = zs_fuzz::expand(attr, item);
    let rendered = out.to_string();
    assert!(
        !rendered.contains("internal error"),
        "internal error:\n{rendered}"
    );
    if !rendered.contains("compile_error") {
        if let Err(e) = syn::parse2::<syn::File>(out) {
            panic!("expansion without error is not valid items: {e}\n{rendered}");
        }
    }
});
