//! Criterion benchmark of one penalized double-pendulum Zhang–Skeel step (placeholder).
fn main() {}
