// Nothing to derive from.
use zs_runtime::mechanical_system;

pub struct Nothing;

#[mechanical_system]
impl Nothing {}

fn main() {}
