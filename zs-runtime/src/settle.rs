//! SETTLE (Miyamoto & Kollman 1992): the analytic solution of SHAKE's and RATTLE's constraint
//! equations for a rigid three-site water — one oxygen, two hydrogens of equal mass, the two
//! O–H distances and the H–H distance fixed — with no iteration.
//!
//! Positions (their eqs. A1–A17): given the molecule's positions before an unconstrained step
//! (`old`, which satisfy the constraints) and after it (`new`), find the positions that satisfy
//! the constraints and differ from `new` by constraint forces along the *old* bonds (SHAKE's
//! condition), with the centre of mass kept. The canonical triangle is placed in a frame built
//! from the old plane's normal and the new oxygen's position about the centre of mass; three
//! angles (φ, ψ, θ) turn it onto the new positions, θ from a quadratic whose root is the one
//! continuous with no rotation.
//!
//! Velocities (RATTLE's second half): the components of the relative velocities along the bonds
//! are removed by the constraint impulses along the bonds — a 3 × 3 linear system per molecule,
//! solved in closed form here (the paper's eqs. B1–B6 are the same solution).

/// The rigid geometry and the masses of a three-site water.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettleGeometry {
    /// Oxygen mass.
    pub m_o: f64,
    /// Hydrogen mass.
    pub m_h: f64,
    /// The O–H distance.
    pub d_oh: f64,
    /// The H–H distance.
    pub d_hh: f64,
}

/// Why SETTLE cannot place a molecule.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum SettleError {
    /// The unconstrained step moved the molecule so far that no rotation of the rigid triangle
    /// satisfies SHAKE's condition (a step far too large for the forces).
    #[error(
        "SETTLE has no solution: the unconstrained step turned the molecule too far ({what} = {value})"
    )]
    NoSolution {
        /// Which of the algorithm's quantities left its range.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// The two hydrogens of a molecule have different masses (SETTLE's closed form assumes
    /// equal ones).
    #[error("SETTLE needs the two hydrogens' masses equal, not {first} and {second}")]
    UnequalHydrogens {
        /// The first hydrogen's mass.
        first: f64,
        /// The second's.
        second: f64,
    },
}

impl SettleGeometry {
    /// SPC/E's (and LAMMPS's `data.spce`): O 15.9994, H 1.00794, O–H 1 Å, H–O–H 109.47°.
    pub fn spce() -> Self {
        Self {
            m_o: 15.9994,
            m_h: 1.00794,
            d_oh: 1.0,
            d_hh: 2.0 * (0.5 * 109.47_f64.to_radians()).sin(),
        }
    }

    /// Move `new` (O, H, H) onto the rigid geometry by constraint forces along the bonds of
    /// `old`, keeping its centre of mass (SHAKE's solution, exactly).
    ///
    /// # Errors
    /// [`SettleError::NoSolution`] when the unconstrained step moved the molecule beyond what
    /// a rotation can undo.
    pub fn positions(
        &self,
        old: &[[f64; 3]; 3],
        new: &mut [[f64; 3]; 3],
    ) -> Result<(), SettleError> {
        let total = self.m_o + 2.0 * self.m_h;
        let (wo, wh) = (self.m_o / total, self.m_h / total);
        // The canonical triangle about its centre of mass: O at distance `ra` along the
        // bisector, the H–H midpoint at `rb` on the other side, the hydrogens `rc` from it.
        let rc = 0.5 * self.d_hh;
        let height = (self.d_oh * self.d_oh - rc * rc).sqrt();
        let ra = 2.0 * self.m_h * height / total;
        let rb = height - ra;
        let com: [f64; 3] = core::array::from_fn(|k| wo * new[0][k] + wh * (new[1][k] + new[2][k]));
        let a1 = sub(new[0], com);
        let b1 = sub(new[1], com);
        let c1 = sub(new[2], com);
        let b0 = sub(old[1], old[0]);
        let c0 = sub(old[2], old[0]);
        // The frame: Z normal to the old plane, X normal to Z and to the new oxygen's offset.
        let z = unit(cross(b0, c0));
        let x = unit(cross(a1, z));
        let y = cross(z, x);
        let local = |v: [f64; 3]| [dot(v, x), dot(v, y), dot(v, z)];
        let (b0d, c0d) = (local(b0), local(c0));
        let (a1d, b1d, c1d) = (local(a1), local(b1), local(c1));
        // φ and ψ: the tilts out of the old plane of the O and of the H–H line.
        let sin_phi = a1d[2] / ra;
        let cos_phi2 = 1.0 - sin_phi * sin_phi;
        if cos_phi2.is_nan() || cos_phi2 <= 0.0 {
            return Err(SettleError::NoSolution {
                what: "sin φ",
                value: sin_phi,
            });
        }
        let cos_phi = cos_phi2.sqrt();
        let sin_psi = (b1d[2] - c1d[2]) / (2.0 * rc * cos_phi);
        let cos_psi2 = 1.0 - sin_psi * sin_psi;
        if cos_psi2.is_nan() || cos_psi2 <= 0.0 {
            return Err(SettleError::NoSolution {
                what: "sin ψ",
                value: sin_psi,
            });
        }
        let cos_psi = cos_psi2.sqrt();
        // The triangle tilted by φ and ψ, not yet turned by θ about Z.
        let ya2 = ra * cos_phi;
        let xb2 = -rc * cos_psi;
        let t1 = -rb * cos_phi;
        let t2 = rc * sin_psi * sin_phi;
        let (yb2, yc2) = (t1 - t2, t1 + t2);
        // θ: the turn about Z that makes the displacements of SHAKE's form (α sin θ + β cos θ = γ).
        let alpha = xb2 * (b0d[0] - c0d[0]) + b0d[1] * yb2 + c0d[1] * yc2;
        let beta = xb2 * (c0d[1] - b0d[1]) + b0d[0] * yb2 + c0d[0] * yc2;
        let gamma = b0d[0] * b1d[1] - b1d[0] * b0d[1] + c0d[0] * c1d[1] - c1d[0] * c0d[1];
        let ab2 = alpha * alpha + beta * beta;
        let disc = ab2 - gamma * gamma;
        if disc.is_nan() || disc < 0.0 {
            return Err(SettleError::NoSolution {
                what: "α² + β² − γ²",
                value: disc,
            });
        }
        let sin_theta = (alpha * gamma - beta * disc.sqrt()) / ab2;
        let cos_theta = (1.0 - sin_theta * sin_theta).sqrt();
        let a3 = [-ya2 * sin_theta, ya2 * cos_theta, a1d[2]];
        let b3 = [
            xb2 * cos_theta - yb2 * sin_theta,
            xb2 * sin_theta + yb2 * cos_theta,
            b1d[2],
        ];
        let c3 = [
            -xb2 * cos_theta - yc2 * sin_theta,
            -xb2 * sin_theta + yc2 * cos_theta,
            c1d[2],
        ];
        for (atom, l) in new.iter_mut().zip([a3, b3, c3]) {
            for k in 0..3 {
                atom[k] = com[k] + l[0] * x[k] + l[1] * y[k] + l[2] * z[k];
            }
        }
        Ok(())
    }

    /// Remove from `v` (O, H, H) the relative velocities along the bonds of the molecule at `q`
    /// (which satisfies the constraints), by impulses along those bonds: RATTLE's velocity step.
    pub fn velocities(&self, q: &[[f64; 3]; 3], v: &mut [[f64; 3]; 3]) {
        // Bonds (i, j) = (O, H1), (O, H2), (H1, H2); impulse λ_b along e_b = unit(q_j − q_i):
        // v_i −= λ_b e_b / m_i, v_j += λ_b e_b / m_j, with e_b·(v_j − v_i) = 0 after.
        let pairs = [(0, 1), (0, 2), (1, 2)];
        let inv = [1.0 / self.m_o, 1.0 / self.m_h, 1.0 / self.m_h];
        let e: [[f64; 3]; 3] = core::array::from_fn(|b| {
            let (i, j) = pairs[b];
            unit(sub(q[j], q[i]))
        });
        // A λ = −r: A_bc = e_b·(∂(v_j − v_i)/∂λ_c), r_b = e_b·(v_j − v_i).
        let mut a = [[0.0; 3]; 3];
        let mut r = [0.0; 3];
        for (b, &(i, j)) in pairs.iter().enumerate() {
            r[b] = dot(e[b], sub(v[j], v[i]));
            for (c, &(k, l)) in pairs.iter().enumerate() {
                // λ_c moves k by −e_c/m_k and l by +e_c/m_l.
                let coefficient = |atom: usize| -> f64 {
                    let mut s = 0.0;
                    if atom == l {
                        s += inv[l];
                    }
                    if atom == k {
                        s -= inv[k];
                    }
                    s
                };
                a[b][c] = (coefficient(j) - coefficient(i)) * dot(e[b], e[c]);
            }
        }
        let lambda = solve3(a, r.map(|x| -x));
        for (c, &(k, l)) in pairs.iter().enumerate() {
            for d in 0..3 {
                v[k][d] -= lambda[c] * e[c][d] * inv[k];
                v[l][d] += lambda[c] * e[c][d] * inv[l];
            }
        }
    }
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn unit(a: [f64; 3]) -> [f64; 3] {
    let n = dot(a, a).sqrt();
    a.map(|x| x / n)
}

/// `A x = b` for a 3 × 3 `A` by Cramer's rule (the velocity system is symmetric positive
/// definite and well conditioned for any water geometry).
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    core::array::from_fn(|c| {
        let mut m = a;
        for (row, &bi) in m.iter_mut().zip(&b) {
            row[c] = bi;
        }
        det(m) / d
    })
}
