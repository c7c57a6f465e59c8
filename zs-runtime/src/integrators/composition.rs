//! Composition to higher order (`docs/INTEGRATORS.md` §10; Tao & Owhadi Remark 2.1): the
//! triple jump of Yoshida (1990) / Suzuki, applied to any symmetric second-order stepper.

use crate::stepper::{Clock, Clocked};
use crate::vector::Vector;
use crate::{StateOf, StepError, Stepper};

/// `w1 = 1 / (2 − 2^{1/3})`, the outer weight of the triple jump.
pub const YOSHIDA4_W1: f64 = 1.351_207_191_959_657_6;
/// `w0 = 1 − 2 w1 = −2^{1/3} / (2 − 2^{1/3})`, the (negative) middle weight.
pub const YOSHIDA4_W0: f64 = -1.702_414_383_919_315_3;

/// The same error reported as step `step` of the composite method, started at time `t`.
pub(crate) fn restamp(e: StepError, step: u64, t: f64) -> StepError {
    e.with_step(step, t)
}

/// Fourth-order triple-jump composition `Φ_{w1 h} ∘ Φ_{w0 h} ∘ Φ_{w1 h}` of a symmetric
/// second-order stepper `Φ = S` (Tao & Owhadi Remark 2.1: "arbitrary high order Z&S can be
/// obtained using standard splitting schemes"),
///
/// ```text
/// w1 = 1 / (2 − 2^{1/3}) ≈ 1.3512,     w0 = 1 − 2 w1 ≈ −1.7024
/// ```
///
/// (Yoshida 1990). If `S` is symmetric and of order 2 the composition is symmetric and of
/// order 4; it is symplectic if `S` is. Composing a non-symmetric stepper (e.g.
/// [`crate::LinearlyImplicitNewmark`]) does not raise its order.
///
/// The macro step `h` is the composition's own clock, started at the inner stepper's step size:
/// `Yoshida4::new(ZhangSkeel::new(0.4, 0.1))` steps by 0.1, [`Clocked::h`] / [`Clocked::set_h`]
/// read and change it, and between macro steps `y.inner().h()` is `h`. Each step sets the inner
/// step size to `w1 h`, `w0 h`, `w1 h` in turn with [`Clocked::set_h`], takes one inner step with
/// each, and restores `h`. A failed substep restores the state to the start of the macro step and
/// returns the inner error re-stamped with the macro step's index and start time (the inner
/// stepper's own counters have still moved).
///
/// Cost: three inner steps. Steppers whose cached quantity does not depend on `h` reuse it
/// across substeps: [`crate::VelocityVerlet`] costs 3 gradients per macro step, as the
/// Newmark family costs its Newton solves. Steppers whose cached quantity depends on `h²` —
/// [`crate::ZhangSkeel`]'s `f(x; h²)`, [`crate::ZhangSkeelSimplified`], [`crate::ZhangSkeelStiff`],
/// [`crate::PushForwardNewmark`] — must re-evaluate it at the start of the middle and last
/// substeps (`w0² ≠ w1²`): 5 evaluations per macro step instead of 3. This is inherent to the
/// composition, not to the cache: `f(x; w0²h²) ≠ f(x; w1²h²)`, so holding one inner stepper per
/// weight would not save any (measured in `zs-runtime/tests/runtime/composition.rs`).
///
/// ```
/// use zs_runtime::{Clocked, Potential, State, VelocityVerlet, Yoshida4};
/// struct Harmonic;
/// impl Potential<1> for Harmonic {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
///     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
///     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
/// }
/// // 100 macro steps of h = 0.01 to t = 1: fourth order against Verlet's second.
/// let (mut y4, mut vv) = (Yoshida4::new(VelocityVerlet::new(0.01)), VelocityVerlet::new(0.01));
/// let (mut a, mut b) = (State::new([1.0], [0.0]), State::new([1.0], [0.0]));
/// for _ in 0..100 {
///     y4.step(&Harmonic, &mut a).unwrap();
///     vv.step(&Harmonic, &mut b).unwrap();
/// }
/// let (e4, e2) = ((a.q[0] - 1f64.cos()).abs(), (b.q[0] - 1f64.cos()).abs());
/// assert!(e4 < 1e-8 && e2 > 1e-6, "{e4:e} {e2:e}");
/// assert_eq!(y4.inner().steps_taken(), 300);
/// ```
#[derive(Debug, Clone)]
pub struct Yoshida4<S> {
    inner: S,
    /// The macro step `h` and the macro steps completed.
    clock: Clock,
    /// `q`, `v` at the start of the macro step (restored on failure); sized at the first step.
    saved: (Vec<f64>, Vec<f64>),
}

impl<S> Yoshida4<S> {
    /// The triple jump of `inner`; the macro step is `inner`'s step size.
    pub fn new(inner: S) -> Self
    where
        S: Clocked,
    {
        Self {
            clock: Clock::new(inner.h()),
            inner,
            saved: (Vec::new(), Vec::new()),
        }
    }

    /// The composed stepper (its counters and statistics count substeps).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The composed stepper, mutably (e.g. to `reset()` its cache).
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The composed stepper, consuming the composition.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The weights `(w1, w0, w1)` of the three substeps.
    pub fn weights() -> [f64; 3] {
        [YOSHIDA4_W1, YOSHIDA4_W0, YOSHIDA4_W1]
    }

    /// Advance `state` by one macro step `h` (three substeps of `S`).
    ///
    /// On error `state` is restored to its value at the start of the macro step, and the inner
    /// error is returned with this macro step's index and start time.
    pub fn step<P: ?Sized, V: Vector>(
        &mut self,
        target: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError>
    where
        S: Stepper<P, V>,
    {
        let (h, k, t0) = (self.clock.h, self.clock.steps, state.t);
        save(&mut self.saved, state);
        for w in Self::weights() {
            self.inner.set_h(w * h);
            if let Err(e) = self.inner.step(target, state) {
                self.inner.set_h(h);
                restore(&self.saved, state, t0);
                return Err(restamp(e, k, t0));
            }
        }
        self.inner.set_h(h);
        // Three substeps sum to h up to rounding: keep time exact to the macro grid.
        state.t = t0 + h;
        self.clock.steps += 1;
        Ok(())
    }
}

/// Copy `q`, `v` into `saved` (resized at the first call only).
pub(crate) fn save<V: Vector>(saved: &mut (Vec<f64>, Vec<f64>), state: &StateOf<V>) {
    for (buf, x) in [(&mut saved.0, &state.q), (&mut saved.1, &state.v)] {
        if buf.len() != x.len() {
            buf.resize(x.len(), 0.0);
        }
        crate::vector::copy_long(buf, x.as_slice());
    }
}

/// Put back what [`save`] kept, and the time `t`.
pub(crate) fn restore<V: Vector>(saved: &(Vec<f64>, Vec<f64>), state: &mut StateOf<V>, t: f64) {
    state.q.as_mut_slice().copy_from_slice(&saved.0);
    state.v.as_mut_slice().copy_from_slice(&saved.1);
    state.t = t;
}

/// The macro step: each step runs the inner stepper at `w·h` for the three weights and leaves
/// it at `h`.
impl<S> Clocked for Yoshida4<S> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "yoshida4"
    }
}

impl<P: ?Sized, S: Stepper<P, V>, V: Vector> Stepper<P, V> for Yoshida4<S> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        Yoshida4::step(self, target, state)
    }
}

/// Saves the macro-step counter and the composed stepper (under `inner`).
/// Saves the macro step count and the inner stepper (whose step size is the macro `h`).
impl<S: crate::checkpoint::Resumable + Clocked> crate::checkpoint::Resumable for Yoshida4<S> {
    fn save(&self, out: &mut crate::checkpoint::ScopeMut<'_>) {
        out.set_u64("steps", self.clock.steps);
        self.inner.save(&mut out.scope_mut("inner"));
    }
    fn restore(
        &mut self,
        from: &crate::checkpoint::Scope<'_>,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        self.inner.restore(&from.scope("inner"))?;
        self.clock = Clock {
            h: self.inner.h(),
            steps: from.u64("steps")?,
        };
        Ok(())
    }
}
