//! Cross-crate integration tests of zs (the tests live in `tests/`).
