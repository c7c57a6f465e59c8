//! Cross-stage tests of the symbolic engine.
