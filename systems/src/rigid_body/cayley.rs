//! The Lie-group method the paper compares against (Tao & Owhadi §4.5, eq. 34): the
//! Hamilton–Pontryagin variational Euler on `SO(3)` with the Cayley map, for the magnetized rigid
//! body with identity inertia (`docs/systems/rigid-body.md`, SO(3)). It is both the paper's
//! benchmark (at `h = 1e-4`) and the "Lie-group variational Euler" of Fig. 10b (at `h = 0.1`).
//!
//! One step from `(R_k, Ω_k)`, as `docs/systems/rigid-body.md` writes eq. 34 (using `Ω̂ᵀΩ̂Ω̂ᵀ =
//! −|Ω|²Ω̂`):
//!
//! ```text
//! τ       = Bμ (R_kᵀ e₃) × e₃                      (torque of V = Bμ e₃ᵀ R e₃)
//! c       = (1 + h²|Ω_k|²/4) Ω_k + h τ
//! s ≥ 0   : s + (h²/4) s³ = |c|                    (a scalar cubic; exactly one root ≥ 0)
//! Ω_k+1   = (s/|c|) c
//! R_k+1   = R_k cay(h Ω̂_k+1),   cay(X) = I + 4/(4 + |x|²) (X + X²/2)
//! ```
//!
//! `cay` of a skew matrix is a rotation, so `R` stays in `SO(3)` up to rounding whatever `h`;
//! the one nonlinear equation per step is the scalar cubic, solved by Newton to rounding.
//!
//! [`CayleyEuler`] steps the 9-coordinate [`State`] the penalized methods use (`q = R`
//! row-major, `v = Ṙ = R Ω̂`), so it runs under the same driver, observers and CSV output: it
//! reads `Ω = vee(RᵀṘ)` from the state and writes `Ṙ_k+1 = R_k+1 Ω̂_k+1` back. It keeps no
//! other state, so a checkpoint (step count and `h`) restarts it bit for bit.

use zs_runtime::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use zs_runtime::{Clock, Clocked, Quantity, State, StepError, StepErrorKind, Stepper};

use super::{from_q, hat, mat_mul, to_q, transpose, vee, MagnetizedRigidBody};

/// Iterations allowed to Newton on the scalar cubic (it needs ≤ 6 from the start used).
const CUBIC_ITERATIONS: usize = 60;

/// The Hamilton–Pontryagin / Cayley variational Euler of eq. 34 on `(R, Ω)` (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CayleyEuler {
    clock: Clock,
}

/// Why one step of eq. 34 could not be taken (see [`CayleyEuler::advance`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AdvanceError {
    /// A non-finite value appeared in the named quantity.
    NonFinite(&'static str),
    /// Newton on the cubic did not reach rounding (residual given).
    CubicNotConverged(f64),
}

impl CayleyEuler {
    /// Eq. 34 with step `h` (nonzero and finite; checked at each step).
    pub fn new(h: f64) -> Self {
        Self {
            clock: Clock::new(h),
        }
    }

    /// One step of eq. 34 from `(r, omega)` for `V = b_mu R33`: `(R_k+1, Ω_k+1)`.
    ///
    /// # Errors
    /// A non-finite input or result, or a cubic that Newton does not solve (it always does for
    /// finite input: the cubic is increasing and convex on `s ≥ 0`).
    pub fn advance(
        b_mu: f64,
        h: f64,
        r: &[[f64; 3]; 3],
        omega: [f64; 3],
    ) -> Result<([[f64; 3]; 3], [f64; 3]), AdvanceError> {
        // Rᵀe₃ is the third row of R; (Rᵀe₃) × e₃ = (u₂, −u₁, 0).
        let u = r[2];
        let tau = [b_mu * u[1], -b_mu * u[0], 0.0];
        let w2 = dot(omega, omega);
        let grow = 1.0 + 0.25 * h * h * w2;
        let c: [f64; 3] = core::array::from_fn(|i| grow * omega[i] + h * tau[i]);
        let c_norm = dot(c, c).sqrt();
        if !c_norm.is_finite() {
            return Err(AdvanceError::NonFinite("angular momentum c of eq. 34"));
        }
        let s = solve_cubic(0.25 * h * h, c_norm).map_err(AdvanceError::CubicNotConverged)?;
        let omega_next = if c_norm > 0.0 {
            let k = s / c_norm;
            [k * c[0], k * c[1], k * c[2]]
        } else {
            [0.0; 3]
        };
        let r_next = mat_mul(
            r,
            &cayley([h * omega_next[0], h * omega_next[1], h * omega_next[2]]),
        );
        if !r_next.iter().flatten().all(|x| x.is_finite()) {
            return Err(AdvanceError::NonFinite("new rotation"));
        }
        Ok((r_next, omega_next))
    }
}

/// The unique root `s ≥ 0` of `s + a s³ = b` (`a, b ≥ 0`), by Newton from
/// `min(b, (b/a)^{1/3})`, an upper bound of the root: the function is increasing and convex on
/// `s ≥ 0`, so the iterates decrease monotonically to the root. `Err(residual)` if rounding is
/// not reached in 60 iterations.
pub fn solve_cubic(a: f64, b: f64) -> Result<f64, f64> {
    if b == 0.0 {
        return Ok(0.0);
    }
    let mut s = if a > 0.0 { b.min((b / a).cbrt()) } else { b };
    for _ in 0..CUBIC_ITERATIONS {
        let f = s + a * s * s * s - b;
        let step = f / (1.0 + 3.0 * a * s * s);
        let next = s - step;
        // Monotone from above: a non-decrease (or a NaN) means rounding is reached.
        if next >= s || next.is_nan() || step <= 4.0 * f64::EPSILON * s {
            return Ok(next.min(s).max(0.0));
        }
        s = next;
    }
    Err((s + a * s * s * s - b).abs())
}

/// `cay(x̂) = I + 4/(4 + |x|²) (x̂ + x̂²/2)`, a rotation by `2 atan(|x|/2)` about `x`.
pub fn cayley(x: [f64; 3]) -> [[f64; 3]; 3] {
    let k = 4.0 / (4.0 + dot(x, x));
    let xh = hat(x);
    let xh2 = mat_mul(&xh, &xh);
    core::array::from_fn(|i| {
        core::array::from_fn(|j| f64::from(u8::from(i == j)) + k * (xh[i][j] + 0.5 * xh2[i][j]))
    })
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Body angular velocity `vee(RᵀṘ)` of a 9-coordinate state.
fn omega_of(state: &State<9>) -> [f64; 3] {
    let r = from_q(&state.q);
    vee(&mat_mul(&transpose(&r), &from_q(&state.v)))
}

impl Stepper<MagnetizedRigidBody, [f64; 9]> for CayleyEuler {
    /// One step of eq. 34 for `body.b_mu` (the penalty `ω` plays no part: `R` stays on
    /// `SO(3)`). A failed step leaves `state` untouched.
    fn step(&mut self, body: &MagnetizedRigidBody, state: &mut State<9>) -> Result<(), StepError> {
        let (step, t, h) = (self.clock.steps, state.t, self.clock.h);
        if !(h.is_finite() && h != 0.0) {
            return Err(StepError::new(
                step,
                t,
                StepErrorKind::InvalidStepSize { h },
            ));
        }
        if !state.q.iter().chain(&state.v).all(|x| x.is_finite()) {
            return Err(StepError::non_finite(step, t, Quantity::State));
        }
        let r = from_q(&state.q);
        let (r1, w1) = Self::advance(body.b_mu, h, &r, omega_of(state)).map_err(|e| match e {
            AdvanceError::NonFinite(what) => StepError::non_finite(step, t, Quantity::Other(what)),
            AdvanceError::CubicNotConverged(residual) => StepError::new(
                step,
                t,
                StepErrorKind::NotConverged {
                    solver: "Newton on the cubic of eq. 34",
                    iterations: CUBIC_ITERATIONS,
                    residual,
                },
            ),
        })?;
        state.q = to_q(&r1);
        state.v = to_q(&mat_mul(&r1, &hat(w1)));
        state.t = t + h;
        self.clock.steps += 1;
        Ok(())
    }
}

impl Clocked for CayleyEuler {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "cayley-variational-euler"
    }
}

/// Saves `h` and the step count (exact bits); the rest is a function of the state.
impl Resumable for CayleyEuler {
    fn save(&self, out: &mut ScopeMut<'_>) {
        self.clock.save(out);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.clock.restore(from)
    }
}
