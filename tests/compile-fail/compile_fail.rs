//! Compile-fail tests of `#[mechanical_system]`: every file in `ui/` is a definition with one
//! mistake (or, in `several_mistakes.rs`, several), and its `.stderr` is the exact compiler output, checked by [trybuild]. Each message names the problem
//! and points at the user's tokens; none is followed by a cascade of unrelated errors (the macro
//! emits dummy trait impls after an error).
//!
//! rustc's rendering of diagnostics changes between versions, so the `.stderr` files are tied
//! to the toolchain pinned in `rust-toolchain.toml` (the one they were generated with). With
//! any other `rustc` this test prints a note and passes without comparing (it cannot tell a
//! regression from a format change). To regenerate after a deliberate change of wording or of
//! the pinned toolchain, then read every diff:
//!
//! ```sh
//! TRYBUILD=overwrite cargo test --workspace --features zs-compile-fail/diagnostics \
//!     --test compile_fail -- --ignored
//! ```
//!
//! It is built only with the feature `diagnostics` and `#[ignore]`d (a build of the macro
//! crate in a second profile and 43 compilations, too long for `cargo test --workspace`'s five
//! minutes on a 2-core machine); `.ci/run` runs it right after that command, as
//!
//! ```sh
//! cargo test --workspace --features zs-compile-fail/diagnostics --test compile_fail -- --ignored
//! ```

use std::io::Write;
use std::path::Path;
use std::process::Command;

/// The `channel = "..."` of the workspace's `rust-toolchain.toml`.
fn pinned_channel() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../rust-toolchain.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("channel")?
                .trim()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
        .unwrap_or_else(|| panic!("no `channel = \"...\"` in {}", path.display()))
}

/// `rustc --version` of the compiler trybuild will use (`$RUSTC`, else `rustc` on the `PATH`,
/// which rustup resolves through the same `rust-toolchain.toml`).
fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{rustc} --version`: {e}"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
#[ignore = "43 compilations; CI runs it with --features zs-compile-fail/diagnostics"]
fn ui() {
    let pinned = pinned_channel();
    let version = rustc_version();
    // "rustc 1.95.0 (59807616e 2026-04-14)": the version is the second word.
    if version.split_whitespace().nth(1) != Some(pinned.as_str()) {
        // Straight to the process's stderr: the test harness captures `println!`/`eprintln!`
        // of passing tests, and this note must be seen.
        let _ = writeln!(
            std::io::stderr(),
            "note: skipping the compile-fail tests: they were generated with rustc {pinned} \
             (rust-toolchain.toml) and rustc's message format differs between versions, but \
             this is `{version}`"
        );
        return;
    }
    // trybuild checks the cases in a project of its own, in the dev profile, whose proc macros
    // (syn, zs-macros) it builds first: without debug information that build is shorter, and
    // the diagnostics are the same. The one test of this binary: no other thread reads the
    // environment.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
