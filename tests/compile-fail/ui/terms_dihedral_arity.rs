// A torsion term takes the four bodies of its dihedral, and an angle term the three of its
// angle: both mistakes are reported, each at its own parameters.
use zs_runtime::mechanical_system;

pub struct Alkane;

#[mechanical_system]
impl Alkane {
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        a[0] * b[0]
    }
    fn dihedral_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        a[0] * b[1] * c[2]
    }
}

fn main() {}
