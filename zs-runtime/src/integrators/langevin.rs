//! Langevin dynamics by the Geometric Langevin Algorithm (GLA; `docs/INTEGRATORS.md` §11;
//! Tao & Owhadi §4.3, eq. 27, after Bou-Rabee & Owhadi).

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

use super::composition::{restamp, restore, save};
use crate::error::{Quantity, StepErrorKind};
use crate::stepper::{Clock, Clocked};
use crate::vector::Vector;
use crate::{Masses, Measured, Model, StateOf, StepError, Stepper};

/// Where a [`Langevin`] integrator's noise stream stands: enough to restart it bit for bit.
///
/// The stream is ChaCha8 (`rand_chacha::ChaCha8Rng`) seeded with `ChaCha8Rng::seed_from_u64(seed)`,
/// and `word_pos` is its position in 32-bit words. ChaCha is counter-based, so the position can
/// be saved and set exactly, whatever number of words the normal sampler consumed; a checkpoint
/// that stores the [`crate::State`] and this value resumes the identical trajectory (see
/// [`Langevin::set_rng_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RngState {
    /// The seed given to [`Langevin::new`] (or [`Langevin::reseed`]).
    pub seed: u64,
    /// Position in the ChaCha8 stream, in 32-bit words.
    pub word_pos: u128,
}

/// Coordinates per block of the noise (see [`Langevin`]).
pub const NOISE_BLOCK: usize = 4096;

/// Stream words reserved per block per step.
const BLOCK_WORDS: u128 = 4 * NOISE_BLOCK as u128;

/// Geometric Langevin Algorithm (Tao & Owhadi §4.3, eq. 27): one step of the deterministic
/// stepper `S` followed by the exact Ornstein–Uhlenbeck flow of the momenta over the same `h`,
///
/// ```text
/// (q, p) ← Φ_h^S(q, p)
/// p      ← e^{−γM⁻¹h} p + sqrt(kT (1 − e^{−2γM⁻¹h}) M) ξ,      ξ ~ N(0, I)
/// ```
///
/// which for the diagonal `M` of every system here is, per component and in velocities `v = p/m`,
/// `v ← c v + sqrt(kT (1 − c²) / m) ξ` with `c = e^{−γh/m}`. This discretizes
/// `dq = M⁻¹p dt`, `dp = −∇V dt − γM⁻¹p dt + sqrt(2γ kT) dW`, whose invariant measure is the
/// Boltzmann–Gibbs density `∝ exp(−H/kT)` (eq. 28). If `S` is symplectic the GLA samples it
/// accurately (Bou-Rabee & Owhadi); the paper pairs it with Z&Ss-stiff
/// ([`crate::ZhangSkeelStiff`]) for the water cluster.
///
/// Parameters: friction `γ ≥ 0` and temperature `kT ≥ 0`. **Note:** the paper writes the
/// *inverse* temperature as β (eq. 27–28: `kT = β⁻¹`); it has nothing to do with the β of Z&S
/// and Newmark, which is a parameter of the inner stepper. The paper's water run (γ = 0.01,
/// "β = 50") is `Langevin::new(stepper, 0.01, 1.0 / 50.0, seed)`.
///
/// The noise is reproducible bit for bit: a counter-based ChaCha8 stream seeded with `seed`
/// (same seed, same trajectory), whose position can be saved and restored
/// ([`Langevin::rng_state`], [`Langevin::set_rng_state`], [`Langevin::rng_word_pos`]) for
/// checkpoint/restart. Normal deviates come from `rand_distr::StandardNormal` (ziggurat), on the
/// stack: a step allocates nothing.
///
/// The coordinates are drawn in blocks of [`NOISE_BLOCK`]: block `b` of a step reads the stream
/// from `start + b · 4·NOISE_BLOCK` words on (`start` the position at the step's beginning;
/// the stream then moves past every block's share), so the blocks are drawn in parallel on
/// rayon's current pool, with the same bits whatever the thread count. A block's share, two
/// words per normal twice over, is more than the ziggurat can use: it draws one 64-bit word
/// per attempt and accepts about 99 % of them (a block would need fewer than half its attempts
/// accepted to reach the next block's words).
///
/// The step size is this stepper's clock ([`Clocked::h`], started at the inner stepper's; each
/// step runs the inner stepper at it); it must be positive (the Ornstein–Uhlenbeck flow cannot
/// be run backwards), otherwise the step fails with
/// [`crate::StepErrorKind::InvalidStepSize`]. A failed step leaves the state *and the noise stream*
/// untouched; an error of the inner step is re-stamped with this stepper's step index.
///
/// ```
/// use zs_runtime::{Langevin, Potential, State, VelocityVerlet};
/// struct Harmonic;
/// impl Potential<1> for Harmonic {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
///     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
///     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
/// }
/// let mut gla = Langevin::new(VelocityVerlet::new(0.1), 1.0, 0.5, 42);
/// let mut s = State::new([1.0], [0.0]);
/// for _ in 0..100 { gla.step(&Harmonic, &mut s).unwrap(); }
/// // Checkpoint, run on, restart from the checkpoint: the same bits.
/// let (saved, rng) = (s, gla.rng_state());
/// for _ in 0..10 { gla.step(&Harmonic, &mut s).unwrap(); }
/// let mut again = Langevin::new(VelocityVerlet::new(0.1), 1.0, 0.5, 0);
/// again.set_rng_state(rng);
/// let mut r = saved;
/// for _ in 0..10 { again.step(&Harmonic, &mut r).unwrap(); }
/// assert_eq!(r, s);
/// ```
#[derive(Debug, Clone)]
pub struct Langevin<S> {
    inner: S,
    gamma: f64,
    kt: f64,
    seed: u64,
    rng: ChaCha8Rng,
    clock: Clock,
    /// The state before the step (restored when the Ornstein–Uhlenbeck update fails), and the
    /// masses of a model that does not lend them ([`Model::masses_lent`]): sized at the first
    /// step.
    saved: (Vec<f64>, Vec<f64>),
    masses: Vec<f64>,
    /// The noise stream's position before the last step's draws, while the inner stepper can
    /// take that step back ([`Stepper::undo`]).
    undo_word_pos: Option<u128>,
    /// `langevin(<inner>)`.
    name: &'static str,
}

/// The Ornstein–Uhlenbeck part of a step, exact, in place on `v` (masses `masses`): block `b` of
/// [`NOISE_BLOCK`] coordinates draws from `rng`'s stream at `start + b · BLOCK_WORDS` (`start` its
/// position on entry), the blocks on rayon's current pool, and the stream is left after the last
/// block. True when every new velocity is finite. Not generic: compiled once for every inner
/// stepper and system, rayon's machinery with it.
fn ornstein_uhlenbeck(
    v: &mut [f64],
    masses: Masses<'_>,
    rng: &mut ChaCha8Rng,
    (gamma, h, kt): (f64, f64, f64),
) -> bool {
    let word_pos = rng.get_word_pos();
    // In place, finiteness checked on the way (the saved state restores a failure).
    let ou = |b: usize, v: &mut [f64], rng: &mut ChaCha8Rng| {
        rng.set_word_pos(word_pos + b as u128 * BLOCK_WORDS);
        let mut coefficients = Coefficients::new(gamma, h, kt);
        let mut finite = true;
        masses.in_blocks(b * NOISE_BLOCK, v.len(), |o, m| {
            for (v, &m) in v[o..].iter_mut().zip(m) {
                let (c, sigma) = coefficients.of(m);
                let xi: f64 = StandardNormal.sample(rng);
                *v = c * *v + sigma * xi;
                finite &= v.is_finite();
            }
        });
        finite
    };
    let blocks = v.len().div_ceil(NOISE_BLOCK);
    let finite = if blocks <= 1 {
        ou(0, v, rng)
    } else {
        use rayon::prelude::*;
        let stream = &*rng;
        v.par_chunks_mut(NOISE_BLOCK)
            .enumerate()
            .map(|(b, v)| ou(b, v, &mut stream.clone()))
            .reduce(|| true, |a, b| a & b)
    };
    rng.set_word_pos(word_pos + blocks.max(1) as u128 * BLOCK_WORDS);
    finite
}

/// The OU flow's coefficients per mass, `c = e^{−γh/m}` and `σ = sqrt(kT (1 − c²) / m)`, for the
/// few distinct masses of a system: the last four kept, so two exponentials and a square root
/// are computed per new mass, not per coordinate and step, and no per-coordinate table is read.
struct Coefficients {
    gamma_h: (f64, f64),
    kt: f64,
    keys: [u64; 4],
    values: [(f64, f64); 4],
    next: usize,
}

impl Coefficients {
    fn new(gamma: f64, h: f64, kt: f64) -> Self {
        Self {
            gamma_h: (gamma, h),
            kt,
            // No mass has these bits (a NaN with a payload no arithmetic makes).
            keys: [0x7FF8_DEAD_BEEF_0001; 4],
            values: [(0.0, 0.0); 4],
            next: 0,
        }
    }

    #[inline]
    fn of(&mut self, m: f64) -> (f64, f64) {
        let key = m.to_bits();
        for (k, v) in self.keys.iter().zip(&self.values) {
            if *k == key {
                return *v;
            }
        }
        // c = e^{−γh/m}, 1 − c² = −expm1(−2γh/m) (accurate for small γh/m).
        let (gamma, h) = self.gamma_h;
        let x = gamma * h / m;
        let c = (-x).exp();
        let sigma = (self.kt * -(-2.0 * x).exp_m1() / m).sqrt();
        let slot = self.next;
        self.keys[slot] = key;
        self.values[slot] = (c, sigma);
        self.next = (slot + 1) % 4;
        (c, sigma)
    }
}

fn check_parameters(gamma: f64, kt: f64) {
    assert!(
        gamma.is_finite() && gamma >= 0.0,
        "Langevin: friction gamma must be finite and >= 0, got {gamma}"
    );
    assert!(
        kt.is_finite() && kt >= 0.0,
        "Langevin: temperature kT must be finite and >= 0, got {kt}"
    );
}

impl<S> Langevin<S> {
    /// GLA over `inner` with friction `gamma` (γ), temperature `kt` (kT = 1/β of the paper's
    /// eq. 27) and noise seed `seed`. The step size is `inner`'s.
    ///
    /// # Panics
    /// If `gamma` or `kt` is negative or not finite.
    pub fn new(inner: S, gamma: f64, kt: f64, seed: u64) -> Self
    where
        S: Clocked,
    {
        check_parameters(gamma, kt);
        Self {
            clock: Clock::new(inner.h()),
            name: around(inner.name()),
            inner,
            gamma,
            kt,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            saved: (Vec::new(), Vec::new()),
            masses: Vec::new(),
            undo_word_pos: None,
        }
    }

    /// Friction γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// Temperature kT (the inverse of the paper's Langevin β).
    pub fn kt(&self) -> f64 {
        self.kt
    }

    /// Change friction and temperature (the noise stream goes on where it is).
    ///
    /// # Panics
    /// If `gamma` or `kt` is negative or not finite.
    pub fn set_parameters(&mut self, gamma: f64, kt: f64) {
        check_parameters(gamma, kt);
        self.gamma = gamma;
        self.kt = kt;
    }

    /// The deterministic stepper.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The deterministic stepper, mutably (e.g. to `reset()` its cache; its step size is set
    /// from this stepper's at each step).
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The deterministic stepper, consuming the Langevin integrator.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The noise seed.
    pub fn rng_seed(&self) -> u64 {
        self.seed
    }

    /// Position of the noise stream, in 32-bit words from its start.
    pub fn rng_word_pos(&self) -> u128 {
        self.rng.get_word_pos()
    }

    /// Move the noise stream to `word_pos` (a value returned by [`Langevin::rng_word_pos`]
    /// for the same seed).
    pub fn set_rng_word_pos(&mut self, word_pos: u128) {
        self.rng.set_word_pos(word_pos);
    }

    /// Seed and position of the noise stream: save it beside the [`crate::State`] to checkpoint.
    pub fn rng_state(&self) -> RngState {
        RngState {
            seed: self.seed,
            word_pos: self.rng.get_word_pos(),
        }
    }

    /// Restore a saved noise stream: with the state saved at the same moment, the run continues
    /// bit for bit as it would have.
    pub fn set_rng_state(&mut self, state: RngState) {
        if state.seed != self.seed {
            self.reseed(state.seed);
        }
        self.rng.set_word_pos(state.word_pos);
        self.undo_word_pos = None;
    }

    /// Restart the noise stream from the beginning with a new seed.
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed;
        self.rng = ChaCha8Rng::seed_from_u64(seed);
        self.undo_word_pos = None;
    }

    /// Advance `state` by one GLA step: the inner step, then the exact Ornstein–Uhlenbeck flow
    /// of the momenta (time advances by the inner step's `h`).
    ///
    /// On error `state` and the noise stream are unchanged:
    /// [`crate::StepErrorKind::InvalidStepSize`] for `h ≤ 0` or non-finite, the inner step's error
    /// re-stamped with this stepper's index, or [`crate::StepErrorKind::NonFinite`] if the new
    /// velocities are not finite.
    pub fn step<P: Model<V> + ?Sized, V: Vector>(
        &mut self,
        target: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError>
    where
        S: Stepper<P, V>,
    {
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        if !(h.is_finite() && h > 0.0) {
            return Err(StepError::new(k, t, StepErrorKind::InvalidStepSize { h }));
        }
        self.inner.set_h(h);
        self.undo_word_pos = None;
        // An inner stepper that can take its step back needs no copy here.
        let undo = self.inner.can_undo();
        if !undo {
            save(&mut self.saved, state);
        }
        self.inner
            .step(target, state)
            .map_err(|e| restamp(e, k, t))?;
        let n = state.v.len();
        let masses = match target.masses_lent() {
            Some(m) => m,
            None => {
                self.masses.resize(n, 0.0);
                target.masses_into_slice(&mut self.masses);
                Masses::PerCoordinate(&self.masses)
            }
        };
        let word_pos = self.rng.get_word_pos();
        let v = state.v.as_mut_slice();
        let finite = ornstein_uhlenbeck(v, masses, &mut self.rng, (self.gamma, h, self.kt));
        if !finite {
            if !undo {
                restore(&self.saved, state, t);
            } else if !self.inner.undo(state) {
                // A stepper that said it could take its step back and then could not breaks
                // `Stepper::undo`'s contract: nothing was saved here to restore instead.
                debug_assert!(false, "{} could not undo its step", self.inner.name());
            }
            self.rng.set_word_pos(word_pos);
            return Err(StepError::non_finite(
                k,
                t,
                Quantity::OrnsteinUhlenbeckVelocities,
            ));
        }
        if undo {
            self.undo_word_pos = Some(word_pos);
        }
        self.clock.steps += 1;
        Ok(())
    }
}

impl<S> Clocked for Langevin<S> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    /// `langevin(<inner>)`: the inner method named too (a summary's `stepper`, and a
    /// checkpoint's, which a resume with another inner method then refuses).
    fn name(&self) -> &'static str {
        self.name
    }
}

/// `langevin(<inner>)` as a `&'static str`: made once per inner method's name and kept (a
/// few bytes per kind of stepper a process wraps).
fn around(inner: &'static str) -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<Vec<(&'static str, &'static str)>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&(_, name)) = names.iter().find(|(i, _)| *i == inner) {
        return name;
    }
    let name: &'static str = Box::leak(format!("langevin({inner})").into_boxed_str());
    names.push((inner, name));
    name
}

/// A step is taken back through the inner stepper (which restores the state before it, its
/// velocities included) when that one can, with the noise stream rewound to where the step
/// drew: the state the step replaced is the inner step's.
impl<P: Model<V> + ?Sized, S: Stepper<P, V>, V: Vector> Stepper<P, V> for Langevin<S> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        Langevin::step(self, target, state)
    }
    fn can_undo(&self) -> bool {
        self.inner.can_undo()
    }
    fn undo(&mut self, state: &mut StateOf<V>) -> bool {
        let Some(word_pos) = self.undo_word_pos else {
            return false;
        };
        if !self.inner.undo(state) {
            return false;
        }
        self.undo_word_pos = None;
        self.rng.set_word_pos(word_pos);
        self.clock.steps -= 1;
        true
    }
    fn replaced(&self) -> Option<&StateOf<V>> {
        self.undo_word_pos.and(self.inner.replaced())
    }
    fn keeps_replaced(&self) -> bool {
        self.inner.keeps_replaced()
    }
    /// The Ornstein–Uhlenbeck pass tests the velocities it writes; the positions are the
    /// inner step's.
    fn checks_finite(&self) -> bool {
        self.inner.checks_finite()
    }
    /// The inner step's positions' key and moves (the Ornstein–Uhlenbeck flow moves no
    /// position); not its kinetic energy, of the velocities the flow replaced.
    fn measured(&self) -> Measured {
        Measured {
            kinetic: None,
            ..self.inner.measured()
        }
    }
}

/// Saves γ, kT, the noise stream ([`RngState`]: seed and word position), the step counter and
/// the inner stepper (under `inner`), all exact: a run resumed from a checkpoint draws the same
/// noise and gives the same bits (`zs-runtime/tests/runtime/checkpoint.rs`).
impl<S: crate::checkpoint::Resumable + Clocked> crate::checkpoint::Resumable for Langevin<S> {
    fn save(&self, out: &mut crate::checkpoint::ScopeMut<'_>) {
        out.set_f64("gamma", self.gamma);
        out.set_f64("kt", self.kt);
        out.set_u64("rng.seed", self.seed);
        let pos = self.rng.get_word_pos();
        out.set_u64("rng.word_pos.hi", (pos >> 64) as u64);
        out.set_u64("rng.word_pos.lo", pos as u64);
        out.set_u64("steps", self.clock.steps);
        self.inner.save(&mut out.scope_mut("inner"));
    }
    fn restore(
        &mut self,
        from: &crate::checkpoint::Scope<'_>,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        let (gamma, kt) = (from.f64("gamma")?, from.f64("kt")?);
        if !(gamma.is_finite() && gamma >= 0.0 && kt.is_finite() && kt >= 0.0) {
            return Err(crate::checkpoint::CheckpointError::Mismatch(format!(
                "Langevin: invalid gamma {gamma} or kT {kt}"
            )));
        }
        let word_pos = (u128::from(from.u64("rng.word_pos.hi")?) << 64)
            | u128::from(from.u64("rng.word_pos.lo")?);
        let seed = from.u64("rng.seed")?;
        let steps = from.u64("steps")?;
        self.inner.restore(&from.scope("inner"))?;
        self.set_parameters(gamma, kt);
        self.set_rng_state(RngState { seed, word_pos });
        self.clock = Clock {
            h: self.inner.h(),
            steps,
        };
        Ok(())
    }
}
