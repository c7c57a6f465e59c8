//! Lagrange multipliers from a penalized run (Tao & Owhadi Thm 1.2, eq. 8; `docs/INTEGRATORS.md`
//! §12).
//!
//! Theorem 1.2 of the paper: along the solution `q^ω` of the penalized system (eq. 7,
//! `V_ω = V + ½ω²gᵀg`) started on the constraint manifold with a tangent velocity,
//!
//! ```text
//! λ(t) = -lim_{T→0} lim_{ω→∞} (1/T) ∫_t^{t+T} ω² g(q^ω(s)) ds             (eq. 8)
//! ```
//!
//! is the multiplier of the constrained dynamics `M q̈ = -∇V(q) + λᵀ∇g(q)` (eq. 9).
//!
//! # Sign convention
//! Eq. 9 writes the constraint force as `+λᵀ∇g`. This crate (like Fernández-Pendás and
//! [`crate::Shake`]) writes it as `-G(q)ᵀλ`, `G = Dg`, so its λ is the **negative** of the
//! paper's, and the estimate recorded here is
//!
//! ```text
//! λ(t) ≈ +ω² · (1/T) ∫_t^{t+T} g(q^ω(s)) ds
//! ```
//!
//! — the same physical force either way: the penalty force `-ω²G(q)ᵀg(q)` averages to
//! `-G(q)ᵀλ`. [`PenalizedMultipliers::lambda`] is directly comparable with
//! [`crate::Shake::multipliers`] / [`crate::Rattle::multipliers`]. (For the distance constraints
//! `g = |r|² - ℓ²` of the double pendulum, a rod under tension is stretched, `g > 0`, so `λ > 0`
//! here and `< 0` in the paper's Fig. 2b sign.)
//!
//! # Accuracy
//! For finite ω and a finite window `T` the estimate differs from the constrained λ by
//! - the fast oscillation left in the window: `ω²g` oscillates about `λ` with an amplitude of the
//!   order of `|λ|` (the run starts at `g = 0`, not at the shifted equilibrium `g ≈ λ/ω²`) and
//!   a frequency `Ω_c ≈ ω·|∇g_c|_{M⁻¹}` (`|∇g_c|²_{M⁻¹} = ∇g_c M⁻¹ ∇g_cᵀ`); the window mean of
//!   a sinusoid of amplitude `A` is at most `2A/(Ω T)`: an `O(1/(ωT))` error;
//! - the modelling error of the penalized trajectory, `O(1/ω²)` on the slow motion
//!   (paper Remark 6.1);
//! - the window itself: the mean of λ over `[t, t+T]` is not `λ(t)` (`O(T)`; compare with a
//!   window mean of the reference λ, e.g. by [`TimeSeries::mean`], to remove it).
//!
//! The paper's Fig. 2b uses `T = 0.2` and ω = 20.
//!
//! # Allocation
//! [`PenalizedMultipliers`] stores the constraint values of every observed state (and their
//! running integral) in vectors preallocated for the run length given at construction: observing
//! a step allocates nothing as long as that capacity is not exceeded (past it the vectors grow).
//! Window means are computed on demand from the running integral, in `O(log n)` each.

use std::io;

use crate::observers::Observer;
use crate::{MechanicalSystem, Penalized, State};

/// A sampled time series `x(t) ∈ Rᴹ` with the running integral of its piecewise-linear
/// interpolant (trapezoid rule), for window means.
///
/// Times must increase strictly: a sample whose time is not larger than the last one (or not
/// finite) is rejected and counted ([`TimeSeries::rejected`]).
///
/// ```
/// use zs_runtime::TimeSeries;
/// let mut s = TimeSeries::<1>::with_capacity(11);
/// for k in 0..=10 {
///     let t = 0.1 * k as f64;
///     s.push(t, [2.0 * t]); // x(t) = 2t, linear: the trapezoid rule is exact
/// }
/// let m = s.mean(0.25, 0.75).unwrap();
/// assert!((m[0] - 1.0).abs() < 1e-15);
/// assert!(s.mean(0.5, 1.5).is_none()); // beyond the samples
/// ```
#[derive(Debug, Clone, Default)]
pub struct TimeSeries<const M: usize> {
    times: Vec<f64>,
    values: Vec<[f64; M]>,
    /// `∫_{t_0}^{t_k} x dt` of the piecewise-linear interpolant.
    integrals: Vec<[f64; M]>,
    rejected: u64,
}

impl<const M: usize> TimeSeries<M> {
    /// An empty series.
    pub fn new() -> Self {
        Self {
            times: Vec::new(),
            values: Vec::new(),
            integrals: Vec::new(),
            rejected: 0,
        }
    }

    /// An empty series with room for `samples` samples (pushing up to that many allocates
    /// nothing).
    pub fn with_capacity(samples: usize) -> Self {
        Self {
            times: Vec::with_capacity(samples),
            values: Vec::with_capacity(samples),
            integrals: Vec::with_capacity(samples),
            rejected: 0,
        }
    }

    /// Append the sample `x` at time `t`. Returns `false` (and counts it in
    /// [`TimeSeries::rejected`]) if `t` is not finite or not larger than the last time.
    pub fn push(&mut self, t: f64, x: [f64; M]) -> bool {
        let integral = match (self.times.last(), self.values.last(), self.integrals.last()) {
            (None, _, _) if t.is_finite() => [0.0; M],
            (Some(&t0), Some(x0), Some(i0)) if t.is_finite() && t > t0 => {
                let dt = t - t0;
                core::array::from_fn(|c| i0[c] + 0.5 * dt * (x0[c] + x[c]))
            }
            _ => {
                self.rejected += 1;
                return false;
            }
        };
        self.times.push(t);
        self.values.push(x);
        self.integrals.push(integral);
        true
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// True when there is no sample.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Samples that fit without reallocating.
    pub fn capacity(&self) -> usize {
        self.times
            .capacity()
            .min(self.values.capacity())
            .min(self.integrals.capacity())
    }

    /// Samples rejected by [`TimeSeries::push`] (time not increasing or not finite).
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// The sample times.
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    /// The sample values.
    pub fn values(&self) -> &[[f64; M]] {
        &self.values
    }

    /// Remove every sample (keeps the capacity).
    pub fn clear(&mut self) {
        self.times.clear();
        self.values.clear();
        self.integrals.clear();
        self.rejected = 0;
    }

    /// `∫_{t_0}^{t} x ds` of the piecewise-linear interpolant, for `t` within the samples
    /// (`None` outside; a `t` beyond the last sample by no more than `1e-12` of the covered span,
    /// the rounding of a window end such as `t_k + 20h`, counts as the last sample).
    pub fn integral_to(&self, t: f64) -> Option<[f64; M]> {
        let (&first, &last) = (self.times.first()?, self.times.last()?);
        let slack = 1e-12 * (last - first).max(last.abs()).max(first.abs());
        if !(t >= first - slack && t <= last + slack) {
            return None;
        }
        // k: the last sample with t_k ≤ t.
        let k = self.times.partition_point(|&s| s <= t);
        if k == 0 {
            return Some([0.0; M]);
        }
        let k = k - 1;
        if k + 1 == self.times.len() {
            return Some(self.integrals[k]);
        }
        let (t0, t1) = (self.times[k], self.times[k + 1]);
        let (x0, x1, i0) = (&self.values[k], &self.values[k + 1], &self.integrals[k]);
        let tau = t - t0;
        let dt = t1 - t0;
        // Exact integral of the linear interpolant from t_k to t.
        Some(core::array::from_fn(|c| {
            i0[c] + tau * x0[c] + 0.5 * tau * tau / dt * (x1[c] - x0[c])
        }))
    }

    /// `∫_a^b x dt` of the piecewise-linear interpolant (`None` unless `[a, b]` is covered).
    pub fn integral(&self, a: f64, b: f64) -> Option<[f64; M]> {
        let (ia, ib) = (self.integral_to(a)?, self.integral_to(b)?);
        Some(core::array::from_fn(|c| ib[c] - ia[c]))
    }

    /// The window mean `(1/(b - a)) ∫_a^b x dt` (`None` unless `a < b` and `[a, b]` is
    /// covered).
    pub fn mean(&self, a: f64, b: f64) -> Option<[f64; M]> {
        if b.partial_cmp(&a) != Some(std::cmp::Ordering::Greater) {
            return None;
        }
        let i = self.integral(a, b)?;
        let w = b - a;
        Some(core::array::from_fn(|c| i[c] / w))
    }
}

/// The multiplier estimate of Tao & Owhadi Thm 1.2 (eq. 8) along a penalized run, as an
/// [`Observer`]: it records `g(q)` of every observed state and gives
/// `λ(t) ≈ ω² · (1/T) ∫_t^{t+T} g(q^ω(s)) ds` in **this crate's sign** (constraint force
/// `-Gᵀλ`, the sign of [`crate::Shake::multipliers`]; the paper's eq. 8 is the negative — see the
/// [module docs](self)).
///
/// ```
/// use zs_runtime::driver::run;
/// use zs_runtime::{mechanical_system, MechanicalSystem, PenalizedMultipliers, State, ZhangSkeel};
///
/// /// A pendulum of length 1, V = y, g = x² + y² - 1.
/// pub struct Pendulum;
/// #[mechanical_system]
/// impl Pendulum {
///     fn potential(&self, q: &[f64; 2]) -> f64 { q[1] }
///     fn constraints(&self, q: &[f64; 2]) -> [f64; 1] { [q[0] * q[0] + q[1] * q[1] - 1.0] }
/// }
///
/// let (omega, h, t_end) = (50.0, 0.002, 1.0);
/// let target = Pendulum.penalized(omega);
/// let mut lambda = PenalizedMultipliers::from_penalized(&target, 0.2, 501);
/// let mut state = State::new([0.0, -1.0], [1.0, 0.0]); // at the bottom, speed 1
/// let summary = run(&mut ZhangSkeel::new(0.4, h), &target, &mut state, t_end, &mut [&mut lambda]);
/// assert!(summary.is_ok());
/// // Exact at t = 0: λ = (m|v|² - q·∇V)/(2ℓ²) = (1 + 1)/2 = 1 (tension m v²/ℓ + m g = 2 = 2ℓλ).
/// let l0 = lambda.lambda(0.0).unwrap()[0];
/// assert!((l0 - 1.0).abs() < 0.2, "{l0}");
/// ```
#[derive(Debug, Clone)]
pub struct PenalizedMultipliers<'a, S: ?Sized, const N: usize, const M: usize> {
    system: &'a S,
    omega: f64,
    window: f64,
    g: TimeSeries<M>,
}

impl<'a, S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize>
    PenalizedMultipliers<'a, S, N, M>
{
    /// Estimate the multipliers of `system` from its run penalized with frequency `omega`,
    /// averaging over windows of length `window` (the paper: 0.2), with room for `samples`
    /// observed states (the initial one included: `steps + 1` for a run of `steps` steps).
    ///
    /// # Panics
    /// If `omega` is not finite, or `window` is not positive and finite.
    pub fn new(system: &'a S, omega: f64, window: f64, samples: usize) -> Self {
        assert!(
            omega.is_finite(),
            "PenalizedMultipliers: omega must be finite, got {omega}"
        );
        assert!(
            window.is_finite() && window > 0.0,
            "PenalizedMultipliers: the window must be positive and finite, got {window}"
        );
        Self {
            system,
            omega,
            window,
            g: TimeSeries::with_capacity(samples),
        }
    }

    /// [`PenalizedMultipliers::new`] for the system and ω of a [`Penalized`] target (the value
    /// a penalized run steps).
    ///
    /// # Panics
    /// As [`PenalizedMultipliers::new`].
    pub fn from_penalized(target: &Penalized<'a, S, N, M>, window: f64, samples: usize) -> Self
    where
        S: Sized,
    {
        Self::new(target.system, target.omega, window, samples)
    }

    /// ω.
    pub fn omega(&self) -> f64 {
        self.omega
    }

    /// The window length `T`.
    pub fn window(&self) -> f64 {
        self.window
    }

    /// The recorded constraint values `g(q(t_k))`.
    pub fn constraint_series(&self) -> &TimeSeries<M> {
        &self.g
    }

    /// Record the state `q` at time `t` (what [`Observer::observe`] does). Returns `false` if
    /// `t` does not increase (the sample is then ignored and counted as rejected).
    pub fn record(&mut self, t: f64, q: &[f64; N]) -> bool {
        self.g.push(t, self.system.constraints(q))
    }

    /// `λ(t) ≈ ω² (1/T) ∫_t^{t+T} g ds`: eq. 8 with the forward window of the paper, in this
    /// crate's sign. `None` unless `[t, t + T]` is covered by the samples.
    pub fn lambda(&self, t: f64) -> Option<[f64; M]> {
        self.scaled(self.g.mean(t, t + self.window)?)
    }

    /// The centred variant `ω² (1/T) ∫_{t-T/2}^{t+T/2} g ds`: compared with `λ(t)` itself its
    /// window error is `O(T²)` instead of `O(T)`. `None` unless the window is covered.
    pub fn lambda_centered(&self, t: f64) -> Option<[f64; M]> {
        let half = 0.5 * self.window;
        self.scaled(self.g.mean(t - half, t + half)?)
    }

    fn scaled(&self, mean: [f64; M]) -> Option<[f64; M]> {
        let w2 = self.omega * self.omega;
        Some(core::array::from_fn(|c| w2 * mean[c]))
    }

    /// `(t_k, λ(t_k))` ([`PenalizedMultipliers::lambda`]) at every sample time whose forward
    /// window is covered.
    pub fn estimates(&self) -> impl Iterator<Item = (f64, [f64; M])> + '_ {
        self.g
            .times()
            .iter()
            .map_while(move |&t| self.lambda(t).map(|l| (t, l)))
    }

    /// Write `t,lambda_0,…,lambda_{M-1}` (this crate's sign; forward window) for every `every`-th
    /// sample time whose window is covered, under a header row.
    ///
    /// # Panics
    /// If `every` is 0.
    pub fn write_csv<W: io::Write>(&self, mut w: W, every: usize) -> io::Result<()> {
        assert!(
            every > 0,
            "PenalizedMultipliers::write_csv: every must be >= 1"
        );
        write!(w, "t")?;
        for c in 0..M {
            write!(w, ",lambda_{c}")?;
        }
        writeln!(w)?;
        for (t, l) in self.estimates().step_by(every) {
            write!(w, "{t}")?;
            for x in l {
                write!(w, ",{x}")?;
            }
            writeln!(w)?;
        }
        w.flush()
    }
}

impl<P: ?Sized, S: MechanicalSystem<N, M> + ?Sized, const N: usize, const M: usize>
    Observer<P, [f64; N]> for PenalizedMultipliers<'_, S, N, M>
{
    fn observe(&mut self, _target: &P, state: &State<N>) {
        self.record(state.t, &state.q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_is_exact_for_piecewise_linear_data_on_uneven_times() {
        let times = [0.0, 0.1, 0.35, 0.4, 1.0];
        let f = |t: f64| [3.0 * t - 1.0, -t];
        let mut s = TimeSeries::<2>::with_capacity(times.len());
        for &t in &times {
            assert!(s.push(t, f(t)));
        }
        // ∫_a^b (3t - 1) dt = 1.5(b² - a²) - (b - a); ∫ -t = -(b² - a²)/2.
        for (a, b) in [(0.0, 1.0), (0.05, 0.37), (0.35, 0.4), (0.2, 0.2 + 1e-3)] {
            let i = s.integral(a, b).unwrap();
            let exact = [1.5 * (b * b - a * a) - (b - a), -0.5 * (b * b - a * a)];
            for c in 0..2 {
                assert!((i[c] - exact[c]).abs() < 1e-15, "[{a}, {b}] c={c}: {i:?}");
            }
        }
        assert!(s.integral(-0.1, 0.5).is_none());
        assert!(s.integral(0.5, 1.1).is_none());
        assert!(s.mean(0.5, 0.5).is_none());
        assert!(s.mean(0.6, 0.5).is_none());
    }

    #[test]
    fn non_increasing_times_are_rejected() {
        let mut s = TimeSeries::<1>::new();
        assert!(s.push(0.0, [1.0]));
        assert!(!s.push(0.0, [2.0]));
        assert!(!s.push(-1.0, [2.0]));
        assert!(!s.push(f64::NAN, [2.0]));
        assert!(s.push(1.0, [3.0]));
        assert_eq!((s.len(), s.rejected()), (2, 3));
        assert_eq!(s.integral(0.0, 1.0), Some([2.0]));
        s.clear();
        assert!(s.is_empty() && s.rejected() == 0 && s.integral_to(0.0).is_none());
    }

    #[test]
    fn window_end_rounding_is_tolerated() {
        // 0.1 · 3 = 0.30000000000000004 > 0.3: the last sample time computed another way.
        let mut s = TimeSeries::<1>::new();
        for k in 0..=3 {
            s.push(0.1 * k as f64, [1.0]);
        }
        let last = *s.times().last().unwrap();
        assert!(s.integral_to(0.3).is_some());
        assert!(s.integral_to(last + 1e-14).is_some());
        assert!(s.integral_to(last + 1e-9).is_none());
    }
}
