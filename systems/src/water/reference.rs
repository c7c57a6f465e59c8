//! The TIP3P cluster written by hand, independently of the macro: a direct double loop over the
//! molecule pairs and their 9 site pairs, with closed-form forces (`F = −∇V`). What the generated,
//! assembled [`super::Water`] is checked against.

/// Site charges and the Lennard-Jones constants of a cluster, flat over atoms (O, H, H per
/// molecule).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaterReference {
    /// `K_c`.
    pub coulomb: f64,
    /// Charge of O.
    pub q_o: f64,
    /// Charge of H.
    pub q_h: f64,
    /// Lennard-Jones `A`.
    pub lj_a: f64,
    /// Lennard-Jones `C`.
    pub lj_c: f64,
}

impl WaterReference {
    /// The constants of [`super::Water::tip3p`].
    pub fn tip3p() -> Self {
        Self {
            coulomb: super::COULOMB,
            q_o: super::Q_O,
            q_h: super::Q_H,
            lj_a: super::LJ_A,
            lj_c: super::LJ_C,
        }
    }

    fn charge(&self, atom: usize) -> f64 {
        if atom.is_multiple_of(3) {
            self.q_o
        } else {
            self.q_h
        }
    }

    /// `(V, ∇V)` of the cluster at `q` (9 coordinates per molecule).
    ///
    /// # Panics
    /// If `q.len()` is not a multiple of 9.
    pub fn energy_gradient(&self, q: &[f64]) -> (f64, Vec<f64>) {
        assert_eq!(q.len() % 9, 0, "9 coordinates per molecule");
        let molecules = q.len() / 9;
        let mut e = 0.0;
        let mut g = vec![0.0; q.len()];
        let atom = |k: usize| [q[3 * k], q[3 * k + 1], q[3 * k + 2]];
        for a in 0..molecules {
            for b in a + 1..molecules {
                for i in 3 * a..3 * a + 3 {
                    for j in 3 * b..3 * b + 3 {
                        let (p, r) = (atom(i), atom(j));
                        let d = [r[0] - p[0], r[1] - p[1], r[2] - p[2]];
                        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                        let dist = r2.sqrt();
                        let k = self.coulomb * self.charge(i) * self.charge(j);
                        e += k / dist;
                        // dV/dr · r̂, with dV/dr = −k/r²; plus Lennard-Jones between oxygens.
                        let mut dv_dr2 = -0.5 * k / (r2 * dist);
                        if i % 3 == 0 && j % 3 == 0 {
                            let r6 = r2 * r2 * r2;
                            e += self.lj_a / (r6 * r6) - self.lj_c / r6;
                            dv_dr2 +=
                                -6.0 * self.lj_a / (r6 * r6 * r2) + 3.0 * self.lj_c / (r6 * r2);
                        }
                        // ∂V/∂r_j = 2 dV/d(r²) · d, ∂V/∂r_i = −that.
                        for c in 0..3 {
                            g[3 * j + c] += 2.0 * dv_dr2 * d[c];
                            g[3 * i + c] -= 2.0 * dv_dr2 * d[c];
                        }
                    }
                }
            }
        }
        (e, g)
    }
}
