//! What several test modules share: test systems, fixtures, the counting allocator.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod assembled;
pub mod counting_alloc;
pub mod coupled2;
pub mod fixtures;
