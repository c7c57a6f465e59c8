//! Replica exchange (parallel tempering; Swendsen & Wang 1986, Hukushima & Nemoto 1996): one
//! replica per temperature of a ladder `kT_0 < kT_1 < … < kT_{n−1}`, each under GLA Langevin
//! ([`crate::Langevin`]) at its temperature, and every `K` steps an attempt to swap the
//! temperatures of neighbours on the ladder, accepted with the Metropolis probability
//!
//! ```text
//! min(1, exp[(1/kT_k − 1/kT_{k+1}) (U_k − U_{k+1})])
//! ```
//!
//! where `U_k` is the potential energy of the replica at temperature `k`. The product of the
//! canonical densities is invariant under the swap, so each temperature keeps sampling its own
//! Boltzmann distribution while configurations travel up and down the ladder (LAMMPS `temper`,
//! GROMACS `-replex`). Rounds alternate between the even pairs `(0,1), (2,3), …` and the odd
//! pairs `(1,2), (3,4), …`, which touch disjoint replicas, so every pair of a round is decided
//! independently.
//!
//! **Determinism.** The uniform number that decides pair `k` in round `r` is drawn from a
//! ChaCha8 stream owned by the pair (seed `seed`, stream `2⁶³ + k`, position `2r` words): it does not
//! depend on how many threads or processes step the replicas, nor on the decisions of other
//! pairs. Each replica owns its Langevin noise stream. A swap exchanges temperatures, not
//! configurations (the replicas' trajectories stay continuous), and rescales the two replicas'
//! velocities by `√(kT_new / kT_old)` so that each keeps a Maxwell distribution at its new
//! temperature. Given the potential energies, [`Exchanges::round`] is a pure function of the
//! ladder, the seed and the round: processes that hold different replicas and share only the
//! energies (8 bytes per replica per round) reach the same decisions.
//!
//! A replica whose step fails (a typed [`StepError`]) stops where it failed; the pairs it
//! belongs to are no longer attempted, and the others run to the end ([`Tempering::failures`]).
//!
//! **Side by side.** A model that keeps evaluation state (an assembled system: its buffers and
//! neighbour list) gives each replica its own state of the one model (`Assembled::replica`);
//! [`Tempering::advance_side_by_side`] then steps the replicas at once on rayon's pool, each
//! with its own, to the bits of stepping them in turn ([`Tempering::advance_each`]).
//!
//! Several processes (MPI ranks) share a ladder by each holding a block of replicas
//! ([`Tempering::block`]); before a round they combine their replicas' energies
//! ([`Tempering::energies_into`]) into the whole vector and each calls
//! [`Tempering::exchange_with`] on it.
//!
//! **Checkpoints.** Between two rounds, [`Exchanges`] (the assignment, the round, the counts)
//! is [`Resumable`], and each replica saves its state and stepper apart
//! ([`Tempering::save_replica`], [`Tempering::restore_replica`]): a process saves only the
//! replicas it holds, and a run resumed from them — by any number of processes — continues bit
//! for bit.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use crate::checkpoint::{Checkpoint, CheckpointError, Resumable, Scope, ScopeMut};
use crate::integrators::Langevin;
use crate::{Clocked, Model, Quantity, StateOf, StepError, Stepper, Vector};

/// Why a ladder or a set of replicas is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemperingError {
    /// Fewer than two temperatures, or one not finite and positive, or not increasing.
    #[error(
        "temperatures {0:?}: replica exchange needs at least two, finite, positive and increasing"
    )]
    Ladder(Vec<f64>),
    /// Not one replica per temperature.
    #[error("{replicas} replicas for {temperatures} temperatures: one replica per temperature")]
    Count {
        /// Replicas given.
        replicas: usize,
        /// Temperatures of the ladder.
        temperatures: usize,
    },
}

/// The acceptance probability of a swap: `rule(kT_lo, kT_hi, U_lo, U_hi)` for the replicas at
/// the lower and the higher temperature of a pair. [`metropolis`] is the one that samples the
/// canonical distributions; another rule is for tests that must be able to fail.
pub type SwapRule = fn(f64, f64, f64, f64) -> f64;

/// The Metropolis criterion of replica exchange: `min(1, exp[(1/kT_lo − 1/kT_hi)(U_lo − U_hi)])`.
pub fn metropolis(kt_lo: f64, kt_hi: f64, u_lo: f64, u_hi: f64) -> f64 {
    let x = (1.0 / kt_lo - 1.0 / kt_hi) * (u_lo - u_hi);
    if x >= 0.0 { 1.0 } else { x.exp() }
}

/// One attempted swap of a round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attempt {
    /// The pair: temperatures `pair` and `pair + 1` of the ladder.
    pub pair: usize,
    /// The replica at the lower temperature before the attempt.
    pub lower: usize,
    /// The replica at the higher temperature before the attempt.
    pub upper: usize,
    /// The acceptance probability the rule gave.
    pub probability: f64,
    /// Whether the swap was made.
    pub accepted: bool,
}

/// The ladder, the assignment of replicas to temperatures and the swap decisions (see the
/// [module docs](self)): everything of replica exchange except the dynamics.
#[derive(Debug, Clone)]
pub struct Exchanges {
    kt: Vec<f64>,
    seed: u64,
    rule: SwapRule,
    /// Replica → temperature index.
    slot_of: Vec<usize>,
    /// Temperature index → replica.
    replica_at: Vec<usize>,
    rounds: u64,
    attempted: Vec<u64>,
    accepted: Vec<u64>,
}

impl Exchanges {
    /// Replica `k` starts at temperature `kt[k]`; decisions drawn from streams seeded by `seed`.
    ///
    /// # Errors
    /// [`TemperingError::Ladder`] unless there are two or more finite, positive, increasing
    /// temperatures.
    pub fn new(kt: Vec<f64>, seed: u64) -> Result<Self, TemperingError> {
        let ok = kt.len() >= 2
            && kt.iter().all(|t| t.is_finite() && *t > 0.0)
            && kt.windows(2).all(|w| w[0] < w[1]);
        if !ok {
            return Err(TemperingError::Ladder(kt));
        }
        let n = kt.len();
        Ok(Self {
            kt,
            seed,
            rule: metropolis,
            slot_of: (0..n).collect(),
            replica_at: (0..n).collect(),
            rounds: 0,
            attempted: vec![0; n - 1],
            accepted: vec![0; n - 1],
        })
    }

    /// Decide with `rule` instead of [`metropolis`] (tests of the sampling use a wrong one).
    pub fn with_rule(mut self, rule: SwapRule) -> Self {
        self.rule = rule;
        self
    }

    /// The ladder.
    pub fn temperatures(&self) -> &[f64] {
        &self.kt
    }

    /// Number of replicas (and temperatures).
    pub fn len(&self) -> usize {
        self.kt.len()
    }

    /// Never: a ladder has at least two temperatures.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The temperature index of `replica` now.
    pub fn slot_of(&self, replica: usize) -> usize {
        self.slot_of[replica]
    }

    /// The replica at temperature index `slot` now.
    pub fn replica_at(&self, slot: usize) -> usize {
        self.replica_at[slot]
    }

    /// `kT` of `replica` now.
    pub fn kt_of(&self, replica: usize) -> f64 {
        self.kt[self.slot_of[replica]]
    }

    /// Rounds done.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Per pair `(k, k+1)`: `(attempted, accepted)`.
    pub fn counts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.attempted
            .iter()
            .copied()
            .zip(self.accepted.iter().copied())
    }

    /// The uniform number in `[0, 1)` that decides `pair` in `round`: the pair's own ChaCha8
    /// stream at a position fixed by the round.
    pub fn uniform(seed: u64, pair: usize, round: u64) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Streams from 2⁶³ on: a Langevin integrator seeded with the same `seed` reads stream 0.
        rng.set_stream((1 << 63) | pair as u64);
        rng.set_word_pos(2 * u128::from(round));
        (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// One round: the pairs of its parity whose replicas are both `alive`, decided on the
    /// replicas' potential energies `energy[replica]`; swaps the assignment of the accepted
    /// ones and appends every attempt to `attempts` (which the caller clears and reuses).
    ///
    /// # Panics
    /// If `energy` or `alive` does not have one entry per replica.
    pub fn round(&mut self, energy: &[f64], alive: &[bool], attempts: &mut Vec<Attempt>) {
        let n = self.len();
        assert!(
            energy.len() == n && alive.len() == n,
            "one energy per replica"
        );
        let parity = (self.rounds % 2) as usize;
        for pair in (parity..n - 1).step_by(2) {
            let (lower, upper) = (self.replica_at[pair], self.replica_at[pair + 1]);
            if !(alive[lower] && alive[upper]) {
                continue;
            }
            let probability = (self.rule)(
                self.kt[pair],
                self.kt[pair + 1],
                energy[lower],
                energy[upper],
            );
            let accepted = Self::uniform(self.seed, pair, self.rounds) < probability;
            self.attempted[pair] += 1;
            if accepted {
                self.accepted[pair] += 1;
                self.replica_at.swap(pair, pair + 1);
                self.slot_of[lower] = pair + 1;
                self.slot_of[upper] = pair;
            }
            attempts.push(Attempt {
                pair,
                lower,
                upper,
                probability,
                accepted,
            });
        }
        self.rounds += 1;
    }
}

/// The assignment, the round and the counts, under the ladder and seed they belong to (a
/// checkpoint of another ladder or seed is refused; the swap rule is not saved).
impl Resumable for Exchanges {
    fn save(&self, out: &mut ScopeMut<'_>) {
        out.set_f64s("kt", &self.kt);
        out.set_u64("seed", self.seed);
        out.set_u64("rounds", self.rounds);
        for (r, slot) in self.slot_of.iter().enumerate() {
            out.set_u64(&format!("slot.{r}"), *slot as u64);
        }
        for (pair, (tried, ok)) in self.counts().enumerate() {
            out.set_u64(&format!("attempted.{pair}"), tried);
            out.set_u64(&format!("accepted.{pair}"), ok);
        }
    }

    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        let mismatch =
            |what: String| CheckpointError::Mismatch(format!("replica exchange: {what}"));
        let kt = from.f64s("kt")?;
        if kt != self.kt {
            return Err(mismatch(format!(
                "temperatures {kt:?} at the checkpoint, {:?} now",
                self.kt
            )));
        }
        let seed = from.u64("seed")?;
        if seed != self.seed {
            return Err(mismatch(format!(
                "seed {seed} at the checkpoint, {} now",
                self.seed
            )));
        }
        let n = self.len();
        let mut slot_of = Vec::with_capacity(n);
        for r in 0..n {
            slot_of.push(from.u64(&format!("slot.{r}"))? as usize);
        }
        let mut replica_at = vec![usize::MAX; n];
        for (r, &slot) in slot_of.iter().enumerate() {
            match replica_at.get_mut(slot) {
                Some(at) if *at == usize::MAX => *at = r,
                _ => {
                    return Err(mismatch(format!(
                        "the assignment {slot_of:?} is not a permutation of 0..{n}"
                    )));
                }
            }
        }
        for pair in 0..n - 1 {
            let (tried, ok) = (
                from.u64(&format!("attempted.{pair}"))?,
                from.u64(&format!("accepted.{pair}"))?,
            );
            if ok > tried {
                return Err(mismatch(format!(
                    "pair {pair}: {ok} accepted of {tried} attempted"
                )));
            }
            self.attempted[pair] = tried;
            self.accepted[pair] = ok;
        }
        self.rounds = from.u64("rounds")?;
        self.slot_of = slot_of;
        self.replica_at = replica_at;
        Ok(())
    }
}

/// One replica: its state and its Langevin stepper (at the temperature it holds).
#[derive(Debug, Clone)]
pub struct Replica<S, V: Vector> {
    /// The replica's state.
    pub state: StateOf<V>,
    /// GLA Langevin around the deterministic stepper `S`; its `kT` is the replica's temperature.
    pub stepper: Langevin<S>,
    /// The step that failed, if one did (the replica stops there).
    pub failure: Option<StepError>,
}

impl<S, V: Vector> Replica<S, V> {
    /// `steps` steps on `target` unless it failed, `observe` after each.
    fn advance<P>(&mut self, target: &P, steps: u64, mut observe: impl FnMut(&P, &StateOf<V>))
    where
        P: Model<V> + ?Sized,
        S: Stepper<P, V>,
    {
        for _ in 0..steps {
            if self.failure.is_some() {
                break;
            }
            match self.stepper.step(target, &mut self.state) {
                Ok(()) => observe(target, &self.state),
                Err(e) => self.failure = Some(e),
            }
        }
    }

    /// Its potential energy on `target` (NaN once failed). A replica whose energy is not
    /// finite (a state that overflowed without a step noticing) fails here, with a
    /// [`StepError`] of its last step: its swaps could not be decided.
    fn energy<P: Model<V> + ?Sized>(&mut self, target: &P) -> f64 {
        if self.failure.is_some() {
            return f64::NAN;
        }
        let e = target.potential_at(&self.state.q);
        if !e.is_finite() {
            self.failure = Some(StepError::non_finite(
                self.stepper.steps_taken(),
                self.state.t,
                Quantity::Other("potential energy at a replica exchange"),
            ));
            return f64::NAN;
        }
        e
    }
}

/// Replicas of one model under replica exchange (see the [module docs](self)): all of them, or
/// the block `first .. first + len` one process owns when several share the work (each process
/// holds the whole [`Exchanges`] and reaches the same decisions from the same energies).
#[derive(Debug)]
pub struct Tempering<S, V: Vector> {
    /// The replicas held here, `first` on, in order of their starting temperature.
    pub replicas: Vec<Replica<S, V>>,
    /// The ladder and the decisions.
    pub exchanges: Exchanges,
    first: usize,
    energy: Vec<f64>,
    alive: Vec<bool>,
    attempts: Vec<Attempt>,
}

impl<S, V: Vector> Tempering<S, V> {
    /// All replicas: replica `k` starts in `states[k]` with stepper `steppers[k]`, whose
    /// temperature is set to `kT_k` of `exchanges` (friction unchanged).
    ///
    /// # Errors
    /// [`TemperingError::Count`] unless there is one state and one stepper per temperature.
    pub fn new(
        exchanges: Exchanges,
        states: Vec<StateOf<V>>,
        steppers: Vec<Langevin<S>>,
    ) -> Result<Self, TemperingError> {
        if states.len() != exchanges.len() {
            return Err(TemperingError::Count {
                replicas: states.len(),
                temperatures: exchanges.len(),
            });
        }
        Self::block(exchanges, 0, states, steppers)
    }

    /// The replicas `first .. first + states.len()` of the ladder (one process's share).
    ///
    /// # Errors
    /// [`TemperingError::Count`] if the block does not fit the ladder or the states and
    /// steppers differ in number.
    pub fn block(
        exchanges: Exchanges,
        first: usize,
        states: Vec<StateOf<V>>,
        steppers: Vec<Langevin<S>>,
    ) -> Result<Self, TemperingError> {
        let n = exchanges.len();
        if states.len() != steppers.len() || first + states.len() > n {
            return Err(TemperingError::Count {
                replicas: first + states.len().max(steppers.len()),
                temperatures: n,
            });
        }
        let replicas = states
            .into_iter()
            .zip(steppers)
            .enumerate()
            .map(|(k, (state, mut stepper))| {
                stepper.set_parameters(stepper.gamma(), exchanges.kt_of(first + k));
                Replica {
                    state,
                    stepper,
                    failure: None,
                }
            })
            .collect();
        Ok(Self {
            replicas,
            exchanges,
            first,
            energy: vec![0.0; n],
            alive: vec![true; n],
            attempts: Vec::with_capacity(n),
        })
    }

    /// The index on the ladder of the first replica held here.
    pub fn first(&self) -> usize {
        self.first
    }

    /// The replicas held here whose step failed, with their index and the error.
    pub fn failures(&self) -> impl Iterator<Item = (usize, &StepError)> {
        self.replicas
            .iter()
            .enumerate()
            .filter_map(|(k, r)| r.failure.as_ref().map(|e| (self.first + k, e)))
    }

    /// Save replica `replica` (an index on the ladder, held here) into `cp`: its state and,
    /// under `stepper`, its Langevin stepper (temperature, noise stream, inner stepper). With
    /// [`Exchanges`] saved at the same round, what [`Tempering::restore_replica`] needs.
    ///
    /// # Errors
    /// The replica's step failure, if it failed: a failed replica is not checkpointed (resuming
    /// from the checkpoint before reproduces the failure).
    ///
    /// # Panics
    /// If `replica` is not held here.
    pub fn save_replica(&self, replica: usize, cp: &mut Checkpoint) -> Result<(), StepError>
    where
        S: Resumable + Clocked,
    {
        let r = &self.replicas[self.held(replica)];
        if let Some(e) = &r.failure {
            return Err(e.clone());
        }
        cp.set_state(&r.state);
        cp.set_u64("replica", replica as u64);
        r.stepper.save(&mut cp.scope_mut("stepper"));
        Ok(())
    }

    /// Restore replica `replica` (held here) from what [`Tempering::save_replica`] wrote, after
    /// [`Exchanges`] was restored to the same round (the stepper's temperature must be the one
    /// the assignment gives it).
    ///
    /// # Errors
    /// The checkpoint is of another replica, dimension or stepper, lacks an entry, or holds
    /// the replica at another temperature than the assignment.
    ///
    /// # Panics
    /// If `replica` is not held here.
    pub fn restore_replica(
        &mut self,
        replica: usize,
        cp: &Checkpoint,
    ) -> Result<(), CheckpointError>
    where
        S: Resumable + Clocked,
    {
        let saved = cp.u64("replica")?;
        if saved != replica as u64 {
            return Err(CheckpointError::Mismatch(format!(
                "a checkpoint of replica {saved} given for replica {replica}"
            )));
        }
        let kt = self.exchanges.kt_of(replica);
        let k = self.held(replica);
        let state: StateOf<V> = cp.state()?;
        let r = &mut self.replicas[k];
        if state.q.len() != r.state.q.len() {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint has {} coordinates, the system {}",
                state.q.len(),
                r.state.q.len()
            )));
        }
        r.stepper.restore(&cp.scope("stepper"))?;
        if r.stepper.kt().to_bits() != kt.to_bits() {
            return Err(CheckpointError::Mismatch(format!(
                "replica {replica} at kT = {} in its checkpoint, {kt} in the exchanges' assignment",
                r.stepper.kt()
            )));
        }
        r.state = state;
        r.failure = None;
        Ok(())
    }

    fn held(&self, replica: usize) -> usize {
        assert!(
            (self.first..self.first + self.replicas.len()).contains(&replica),
            "replica {replica} is not held here"
        );
        replica - self.first
    }

    /// Advance every live replica held here by `steps` steps, calling
    /// `observe(replica, state)` after each step (`replica` its index on the ladder); the
    /// replicas run one after another (each may use a parallel model).
    pub fn advance<P>(
        &mut self,
        target: &P,
        steps: u64,
        mut observe: impl FnMut(usize, &StateOf<V>),
    ) where
        P: Model<V> + ?Sized,
        S: Stepper<P, V>,
    {
        let first = self.first;
        for (k, r) in self.replicas.iter_mut().enumerate() {
            r.advance(target, steps, |_, s| observe(first + k, s));
        }
    }

    /// Advance every live replica held here by `steps` steps, the replicas in parallel on
    /// rayon's current pool (each replica's trajectory is its own, so the bits do not depend
    /// on the thread count), all on the one `target`: for a model without evaluation state (a
    /// fixed-size system). An assembled system gives each replica its own state of the model
    /// instead ([`Tempering::advance_side_by_side`]): one state evaluated by two threads at once
    /// is a panic.
    pub fn advance_parallel<P>(&mut self, target: &P, steps: u64)
    where
        P: Model<V> + Sync + ?Sized,
        S: Stepper<P, V> + Send,
        V: Send,
    {
        self.replicas
            .par_iter_mut()
            .for_each(|r| r.advance(target, steps, |_, _| {}));
    }

    /// Advance every live replica held here by `steps` steps, one after another, each with its
    /// own evaluation state of the model — `targets[k]` for the `k`-th replica held (one model,
    /// a state per trajectory: `Assembled::replica`) — and its own observer `observers[k]`,
    /// called as `observe(observer, target, state)` after each step.
    ///
    /// # Panics
    /// Unless there is one target and one observer per replica held here.
    pub fn advance_each<P, O>(
        &mut self,
        targets: &[&P],
        observers: &mut [O],
        steps: u64,
        observe: impl Fn(&mut O, &P, &StateOf<V>),
    ) where
        P: Model<V> + ?Sized,
        S: Stepper<P, V>,
    {
        self.check_each(targets.len(), observers.len());
        for ((r, &target), o) in self.replicas.iter_mut().zip(targets).zip(observers) {
            r.advance(target, steps, |p, s| observe(o, p, s));
        }
    }

    /// [`Tempering::advance_each`] with the replicas side by side on rayon's current pool, as
    /// many at once as it has threads: each replica's trajectory is its own (its stepper, its
    /// state, its evaluation state of the model), so the bits are those of
    /// [`Tempering::advance_each`] whatever the thread count.
    ///
    /// # Panics
    /// Unless there is one target and one observer per replica held here.
    pub fn advance_side_by_side<P, O>(
        &mut self,
        targets: &[&P],
        observers: &mut [O],
        steps: u64,
        observe: impl Fn(&mut O, &P, &StateOf<V>) + Sync,
    ) where
        P: Model<V> + Sync + ?Sized,
        S: Stepper<P, V> + Send,
        V: Send,
        O: Send,
    {
        self.check_each(targets.len(), observers.len());
        self.replicas
            .par_iter_mut()
            .zip(targets)
            .zip(observers)
            .for_each(|((r, &target), o)| r.advance(target, steps, |p, s| observe(o, p, s)));
    }

    fn check_each(&self, targets: usize, observers: usize) {
        assert!(
            targets == self.replicas.len() && observers == self.replicas.len(),
            "one target and one observer per replica held ({}): {targets} and {observers}",
            self.replicas.len()
        );
    }

    /// [`Tempering::energies_into`] with each replica's own evaluation state `targets[k]`.
    ///
    /// # Panics
    /// Unless there is one target per replica held here.
    pub fn energies_each<P>(&mut self, targets: &[&P], energy: &mut [f64])
    where
        P: Model<V> + ?Sized,
    {
        self.check_each(targets.len(), targets.len());
        let first = self.first;
        for (k, (r, &target)) in self.replicas.iter_mut().zip(targets).enumerate() {
            energy[first + k] = r.energy(target);
        }
    }

    /// The potential energies of the replicas held here, into their places of `energy` (one
    /// entry per replica of the ladder; NaN for a failed replica). The other entries are left
    /// as they are: processes combine their shares into the whole vector. A replica whose
    /// energy is not finite (a state that overflowed without a step noticing) fails here, with
    /// a [`StepError`] of its last step: its swaps could not be decided.
    pub fn energies_into<P>(&mut self, target: &P, energy: &mut [f64])
    where
        P: Model<V> + ?Sized,
    {
        for (k, r) in self.replicas.iter_mut().enumerate() {
            energy[self.first + k] = r.energy(target);
        }
    }

    /// One exchange round with every replica held here (see [`Exchanges::round`]).
    ///
    /// # Panics
    /// If this holds only a block of the ladder: use [`Tempering::exchange_with`].
    pub fn exchange<P>(&mut self, target: &P) -> &[Attempt]
    where
        P: Model<V> + ?Sized,
    {
        assert_eq!(
            self.replicas.len(),
            self.exchanges.len(),
            "a block of replicas exchanges with the energies of all (exchange_with)"
        );
        let mut energy = core::mem::take(&mut self.energy);
        self.energies_into(target, &mut energy);
        self.energy = energy;
        self.decide()
    }

    /// One exchange round on the potential energies of every replica of the ladder (NaN for a
    /// failed one), as gathered from the processes that hold them: the accepted pairs swap
    /// temperatures, and the replicas held here among them get their new `kT` and velocities
    /// rescaled by `√(kT_new / kT_old)`. Returns the round's attempts.
    ///
    /// # Panics
    /// If `energy` does not have one entry per replica of the ladder.
    pub fn exchange_with(&mut self, energy: &[f64]) -> &[Attempt] {
        self.energy.copy_from_slice(energy);
        self.decide()
    }

    fn decide(&mut self) -> &[Attempt] {
        for (a, e) in self.alive.iter_mut().zip(&self.energy) {
            *a = !e.is_nan();
        }
        self.attempts.clear();
        self.exchanges
            .round(&self.energy, &self.alive, &mut self.attempts);
        let held = self.first..self.first + self.replicas.len();
        for a in &self.attempts {
            if !a.accepted {
                continue;
            }
            for replica in [a.lower, a.upper] {
                if !held.contains(&replica) {
                    continue;
                }
                let r = &mut self.replicas[replica - self.first];
                let (old, new) = (r.stepper.kt(), self.exchanges.kt_of(replica));
                let s = (new / old).sqrt();
                r.state.v.as_mut_slice().iter_mut().for_each(|v| *v *= s);
                r.stepper.set_parameters(r.stepper.gamma(), new);
            }
        }
        &self.attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_that_are_not_increasing_positive_pairs_are_refused() {
        for kt in [
            vec![1.0],
            vec![1.0, 1.0],
            vec![2.0, 1.0],
            vec![0.0, 1.0],
            vec![1.0, f64::NAN],
        ] {
            assert!(matches!(
                Exchanges::new(kt, 0),
                Err(TemperingError::Ladder(_))
            ));
        }
    }

    /// Rounds alternate parity; decisions follow the pair's own stream, whatever the other
    /// pairs did; the assignment stays a permutation.
    #[test]
    fn rounds_alternate_and_decide_from_the_pairs_own_stream() {
        let kt = vec![1.0, 1.5, 2.25, 3.4, 5.0];
        let mut x = Exchanges::new(kt.clone(), 7).unwrap();
        let alive = [true; 5];
        let mut attempts = Vec::new();
        for round in 0..200_u64 {
            let energy: Vec<f64> = (0..5)
                .map(|k| ((k as f64) * 1.7 + round as f64).sin())
                .collect();
            attempts.clear();
            x.round(&energy, &alive, &mut attempts);
            let pairs: Vec<usize> = attempts.iter().map(|a| a.pair).collect();
            let expected: Vec<usize> = (round as usize % 2..4).step_by(2).collect();
            assert_eq!(pairs, expected);
            for a in &attempts {
                let p = metropolis(kt[a.pair], kt[a.pair + 1], energy[a.lower], energy[a.upper]);
                assert_eq!(a.probability, p);
                assert_eq!(a.accepted, Exchanges::uniform(7, a.pair, round) < p);
            }
            let mut seen: Vec<usize> = (0..5).map(|s| x.replica_at(s)).collect();
            seen.sort_unstable();
            assert_eq!(seen, vec![0, 1, 2, 3, 4]);
            assert!((0..5).all(|r| x.replica_at(x.slot_of(r)) == r));
        }
        // A dead replica's pairs are not attempted.
        let mut attempts = Vec::new();
        let dead = x.replica_at(1);
        let mut alive = [true; 5];
        alive[dead] = false;
        for _ in 0..4 {
            attempts.clear();
            x.round(&[0.0; 5], &alive, &mut attempts);
            assert!(attempts.iter().all(|a| a.lower != dead && a.upper != dead));
        }
    }

    /// The uniforms are uniform (mean ½, variance 1/12) and differ between pairs and rounds.
    #[test]
    fn pair_streams_are_uniform_and_distinct() {
        let n = 20_000;
        let u: Vec<f64> = (0..n).map(|r| Exchanges::uniform(3, 2, r)).collect();
        let mean = u.iter().sum::<f64>() / n as f64;
        let var = u.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            (mean - 0.5).abs() < 4.0 * (1.0 / 12.0 / n as f64).sqrt(),
            "{mean}"
        );
        assert!((var - 1.0 / 12.0).abs() < 0.005, "{var}");
        assert_ne!(Exchanges::uniform(3, 2, 5), Exchanges::uniform(3, 3, 5));
        assert_ne!(Exchanges::uniform(3, 2, 5), Exchanges::uniform(3, 2, 6));
        assert_ne!(Exchanges::uniform(3, 2, 5), Exchanges::uniform(4, 2, 5));
    }
}
