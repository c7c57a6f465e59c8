// The attribute on the struct instead of its impl block.
use zs_runtime::mechanical_system;

#[mechanical_system]
pub struct Spring {
    pub k: f64,
}

fn main() {}
