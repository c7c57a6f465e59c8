//! Placeholder for the `zs` command-line program (written elsewhere).
fn main() {}
