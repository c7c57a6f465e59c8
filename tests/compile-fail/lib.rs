//! Compile-fail tests of `#[mechanical_system]` (`compile_fail.rs`, the definitions in `ui/`).
