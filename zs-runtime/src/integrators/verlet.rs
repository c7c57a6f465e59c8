//! Velocity Verlet (Störmer–Verlet), `docs/INTEGRATORS.md` §1 — the paper's "variational Euler" on
//! the penalized system (Tao & Owhadi, Fig. 1 row 3).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use super::{BODY_CHUNK, Buffers, StepStats, check_finite, check_h, check_state, par_triples};
use crate::checkpoint::{CheckpointError, Resumable, Scope, ScopeMut};
use crate::error::Quantity;
use crate::simd::widest;
use crate::state::{PointMove, PositionsKey};
use crate::stepper::{Clock, Clocked};
use crate::vector::{
    PARALLEL_FROM, VECTOR_CHUNK, Vector, fingerprint_of_sum, fingerprint_term, point_moves2,
    tree_sum,
};
use crate::{Masses, Measured, Model, StateOf, StepError, Stepper};

/// Velocity Verlet:
///
/// ```text
/// v½    = v_k + (h/2) a(x_k),        a(x) = -M⁻¹ ∇V(x)
/// x_k+1 = x_k + h v½
/// v_k+1 = v½ + (h/2) a(x_k+1)
/// ```
///
/// Explicit, symplectic, symmetric (time-reversible), order 2; linearly stable only for
/// `h·ω_max < 2` (`ω_max` the highest frequency of `M⁻¹H`).
///
/// `∇V(x_k+1)` is cached (`a` is made from it) and reused by the next step (one `∇V` per
/// step), keyed by the bit pattern of `q`: a state whose positions were changed is
/// re-evaluated. Call [`VelocityVerlet::reset`] before stepping a *different potential* with
/// the same integrator.
///
/// ```
/// use zs_runtime::{Potential, State, VelocityVerlet};
/// struct Harmonic;
/// impl Potential<1> for Harmonic {
///     fn masses(&self) -> [f64; 1] { [1.0] }
///     fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * q[0] * q[0] }
///     fn gradient(&self, q: &[f64; 1]) -> [f64; 1] { [q[0]] }
///     fn hessian(&self, _: &[f64; 1]) -> [[f64; 1]; 1] { [[1.0]] }
///     fn third_contraction(&self, _: &[f64; 1], _: &[f64; 1]) -> [f64; 1] { [0.0] }
/// }
/// let mut vv = VelocityVerlet::new(0.01);
/// let mut s = State::new([1.0], [0.0]);
/// for _ in 0..100 { vv.step(&Harmonic, &mut s).unwrap(); }
/// assert!((s.q[0] - 1f64.cos()).abs() < 1e-4);
/// assert!((s.t - 1.0).abs() < 1e-12);
/// ```
#[derive(Debug, Clone)]
pub struct VelocityVerlet<V: Vector> {
    clock: Clock,
    stats: StepStats,
    work: Buffers<Work<V>>,
    /// What the last successful step measured of its state ([`Stepper::measured`]).
    measured: Measured,
}

/// The step's vectors, as few as the step needs (a million bodies' vector is 24 MB): the new
/// positions go to `prev.q` and the half-step velocities to `prev.v`, which then become the
/// new velocities in place; the gradient at the new positions is written into `g` and kept
/// there — the acceleration `-M⁻¹g` is made from it where a kick needs it, not stored (one
/// vector fewer written per step). Committing exchanges `prev` with the state, so that `prev`
/// holds the state the step replaced. The cached gradient is keyed by a fingerprint of the
/// positions it belongs to ([`crate::vector::fingerprint`]), not a copy of them.
#[derive(Debug)]
struct Work<V> {
    m: V,
    g: V,
    prev: StateOf<V>,
    cache_key: u64,
    cached: bool,
    /// `prev` is the state the last step replaced and can be taken back ([`Stepper::undo`]).
    undoable: bool,
    /// A long state's twice kinetic energy per leaf of [`crate::vector::tree_sum`] (chunks of
    /// [`VECTOR_CHUNK`]), as the second kick's chunks find them (bits of an `f64`).
    leaves: Vec<AtomicU64>,
}

impl<V: Vector> VelocityVerlet<V> {
    /// Velocity Verlet with step `h` (negative: integrate backwards). An invalid `h` (zero,
    /// non-finite) is reported by [`VelocityVerlet::step`] as
    /// [`crate::StepErrorKind::InvalidStepSize`].
    pub fn new(h: f64) -> Self {
        Self {
            clock: Clock::new(h),
            stats: StepStats::default(),
            work: Buffers::default(),
            measured: Measured::default(),
        }
    }

    /// Forget the cached gradient (required before stepping a different potential).
    pub fn reset(&mut self) {
        if let Some(w) = self.work.as_mut() {
            w.cached = false;
        }
    }

    /// Work counters: `gradient_evaluations` (one per step after the first, plus one per cache
    /// miss).
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Advance `state` by one step of size `h`; on error `state` is unchanged.
    pub fn step<P: Model<V> + ?Sized>(
        &mut self,
        potential: &P,
        state: &mut StateOf<V>,
    ) -> Result<(), StepError> {
        let (h, k, t) = (self.clock.h, self.clock.steps, state.t);
        self.measured = Measured::default();
        check_h(h, k, t)?;
        check_state(potential.dimension(), state, k, t)?;
        let n = potential.dimension();
        // A long state: the second kick's pass also sums the kinetic energy, and of point
        // bodies the kick-drift pass measures the largest move of a body (three coordinates),
        // for the observers that would read the state again for them.
        let long = n >= PARALLEL_FROM;
        let points = long && n % 3 == 0;
        let Work {
            m: copied,
            g,
            prev,
            cache_key,
            cached,
            undoable,
            leaves,
        } = self.work.get(
            |w| w.g.len() == n,
            || Work {
                // Sized on first use: a model that lends its masses needs no copy.
                m: V::default_zeros(),
                g: V::zeros(n),
                prev: StateOf {
                    q: V::zeros(n),
                    v: V::zeros(n),
                    t: 0.0,
                },
                cache_key: 0,
                cached: false,
                undoable: false,
                leaves: (0..n.div_ceil(VECTOR_CHUNK))
                    .map(|_| AtomicU64::new(0))
                    .collect(),
            },
        );
        *undoable = false;
        let (x1, v_half) = (&mut prev.q, &mut prev.v);
        // The masses where the model keeps them, else copied (a pass saved per step).
        let lent = potential.masses_lent();
        if lent.is_none() {
            if copied.len() != n {
                *copied = V::zeros(n);
            }
            potential.masses_into(copied);
        }
        let m = lent.unwrap_or(Masses::PerCoordinate(copied.as_slice()));
        let half = 0.5 * h;
        // Kick and drift in one pass (the positions' finiteness checked on the way), with the
        // acceleration `-g/m` made from the kept gradient, which also takes the fingerprints of
        // `q` (is the kept gradient `q`'s?) and of the new positions (the key of the gradient
        // this step leaves), and for `points` the largest square move of a body, from the
        // chunk just written (in the caches): no pass of their own.
        let kick_drift = |g: &V, x1: &mut V, v_half: &mut V| -> (bool, u64, u64, f64) {
            let (v, q, g) = (state.v.as_slice(), state.q.as_slice(), g.as_slice());
            let (finite, key_q, key_x1, moved) = par_triples(
                v_half.as_mut_slice(),
                x1.as_mut_slice(),
                BODY_CHUNK,
                &|at, vh, x1| {
                    widest(
                        #[inline(always)]
                        || {
                            let (mut finite, mut key_q, mut key_x1) = (true, 0u64, 0u64);
                            m.in_blocks(
                                at,
                                vh.len(),
                                #[inline(always)]
                                |o, m| {
                                    // The block's entries as slices of one length: no bounds
                                    // check in the loop, which then runs on the lanes.
                                    let r = o..o + m.len();
                                    let (vh, x1) = (&mut vh[r.clone()], &mut x1[r.clone()]);
                                    let r = at + o..at + o + m.len();
                                    let (v, q, g) = (&v[r.clone()], &q[r.clone()], &g[r]);
                                    let terms = vh
                                        .iter_mut()
                                        .zip(x1.iter_mut())
                                        .zip(v.iter().zip(q).zip(g).zip(m));
                                    for (j, ((vh, x1), (((&v, &q), &g), &m))) in
                                        (at + o..).zip(terms)
                                    {
                                        let a = -g / m;
                                        *vh = v + half * a;
                                        *x1 = q + h * *vh;
                                        finite &= x1.is_finite();
                                        key_q = key_q.wrapping_add(fingerprint_term(j, q));
                                        key_x1 = key_x1.wrapping_add(fingerprint_term(j, *x1));
                                    }
                                },
                            );
                            // A NaN move comes only with a position not finite: the step
                            // is then refused, and the move not used.
                            let moved = if points {
                                point_moves2(x1, &q[at..at + x1.len()]).0
                            } else {
                                0.0
                            };
                            (finite, key_q, key_x1, moved)
                        },
                    )
                },
            );
            let n = q.len();
            (
                finite,
                fingerprint_of_sum(key_q, n),
                fingerprint_of_sum(key_x1, n),
                moved,
            )
        };
        let mut pass = (false, 0, 0, 0.0);
        if *cached {
            pass = kick_drift(g, x1, v_half);
        }
        if !(*cached && pass.1 == *cache_key) {
            // No gradient of `q` kept (the first step, or `q` changed since): made, and the
            // pass made again with it.
            *cached = false;
            self.stats.gradient_evaluations += 1;
            gradient(potential, &state.q, m, g, k, t)?;
            pass = kick_drift(g, x1, v_half);
        }
        let (finite, key_q, key_x1, moved) = pass;
        if !finite {
            *cached = false;
            return Err(StepError::non_finite(k, t, Quantity::NewPosition));
        }
        self.stats.gradient_evaluations += 1;
        // The gradient into `g` (the old one is not read again), then the second kick with
        // the acceleration made from it, in one pass that reads `g` and writes the velocities
        // alone; on a non-finite entry, the first quantity that is not finite is named
        // (gradient, acceleration, velocity), and the gradient is no longer `q`'s.
        // Of point bodies, with how far they moved from `q` (of key `key_q`): a model whose
        // neighbour list adds the moves up skips its staleness test while they are short.
        if points {
            let moved = PointMove {
                from: PositionsKey(key_q),
                largest: moved.sqrt(),
            };
            potential.gradient_into_moved(x1, g, PositionsKey(key_x1), moved);
        } else {
            potential.gradient_into_keyed(x1, g, PositionsKey(key_x1));
        }
        *cached = false;
        // The gradient's and the acceleration's entries that are not finite counted in the
        // same pass, so that an error names the first without a pass of its own.
        let (finite, not_finite_gradient, not_finite_acceleration, _) = par_triples(
            v_half.as_mut_slice(),
            g.as_mut_slice(),
            VECTOR_CHUNK,
            &|at, v1, g1| {
                widest(
                    #[inline(always)]
                    || {
                        let (mut finite, mut not_finite_gradient, mut not_finite_acceleration) =
                            (true, 0u64, 0u64);
                        m.in_blocks(
                            at,
                            v1.len(),
                            #[inline(always)]
                            |o, m| {
                                for ((v1, &g1), m) in v1[o..].iter_mut().zip(&g1[o..]).zip(m) {
                                    not_finite_gradient += u64::from(!g1.is_finite());
                                    let a1 = -g1 / m;
                                    not_finite_acceleration += u64::from(!a1.is_finite());
                                    *v1 += half * a1;
                                    finite &= v1.is_finite() & a1.is_finite();
                                }
                            },
                        );
                        if long {
                            // The kinetic energy's leaves from the velocities just written
                            // (in the caches), each the sum the model's own would take.
                            for (i, v1) in v1.chunks(VECTOR_CHUNK).enumerate() {
                                let from = at + i * VECTOR_CHUNK;
                                let twice = m.twice_kinetic(from, v1);
                                leaves[from / VECTOR_CHUNK].store(twice.to_bits(), Relaxed);
                            }
                        }
                        (finite, not_finite_gradient, not_finite_acceleration, 0.0)
                    },
                )
            },
        );
        if !finite {
            if not_finite_gradient > 0 {
                return Err(StepError::non_finite(k, t, Quantity::Gradient));
            }
            if not_finite_acceleration > 0 {
                return Err(StepError::non_finite(k, t, Quantity::Acceleration));
            }
            return Err(StepError::non_finite(k, t, Quantity::NewVelocity));
        }
        // Commit by exchanging buffers (no copy); the old state lands in `prev`.
        core::mem::swap(&mut state.q, x1);
        core::mem::swap(&mut state.v, v_half);
        prev.t = t;
        state.t = t + h;
        *undoable = true;
        *cache_key = key_x1;
        *cached = true;
        self.clock.steps += 1;
        self.measured = Measured {
            positions_key: Some(PositionsKey(key_x1)),
            largest_point_move: points.then(|| moved.sqrt()),
            kinetic: long.then(|| {
                let leaf = |r: core::ops::Range<usize>| {
                    f64::from_bits(leaves[r.start / VECTOR_CHUNK].load(Relaxed))
                };
                0.5 * tree_sum(0..n, &leaf)
            }),
        };
        Ok(())
    }
}

/// `∇V(q)` into `g`, which must be finite, as must the acceleration `-M⁻¹∇V(q)` made from it.
fn gradient<V: Vector, P: Model<V> + ?Sized>(
    potential: &P,
    q: &V,
    m: Masses<'_>,
    g: &mut V,
    step: u64,
    t: f64,
) -> Result<(), StepError> {
    potential.gradient_into(q, g);
    check_finite(g, Quantity::Gradient, step, t)?;
    let slice = g.as_slice();
    let mut finite = true;
    m.in_blocks(0, slice.len(), |o, m| {
        for (g, m) in slice[o..].iter().zip(m) {
            finite &= (-g / m).is_finite();
        }
    });
    if finite {
        Ok(())
    } else {
        Err(StepError::non_finite(step, t, Quantity::Acceleration))
    }
}

/// The cached gradient does not depend on `h`: changing it keeps the cache.
impl<V: Vector> Clocked for VelocityVerlet<V> {
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn clock_mut(&mut self) -> &mut Clock {
        &mut self.clock
    }
    fn name(&self) -> &'static str {
        "velocity-verlet"
    }
}

impl<P: Model<V> + ?Sized, V: Vector> Stepper<P, V> for VelocityVerlet<V> {
    fn step(&mut self, target: &P, state: &mut StateOf<V>) -> Result<(), StepError> {
        VelocityVerlet::step(self, target, state)
    }
    fn can_undo(&self) -> bool {
        true
    }
    /// The last step committed by exchanging buffers: exchanging them back restores the state
    /// it replaced, bit for bit.
    fn undo(&mut self, state: &mut StateOf<V>) -> bool {
        let Some(w) = self.work.as_mut() else {
            return false;
        };
        if !w.undoable || state.q.len() != w.prev.q.len() || state.v.len() != w.prev.v.len() {
            return false;
        }
        w.undoable = false;
        self.measured = Measured::default();
        core::mem::swap(&mut state.q, &mut w.prev.q);
        core::mem::swap(&mut state.v, &mut w.prev.v);
        state.t = w.prev.t;
        // `g` holds the gradient at the new `q`: recompute it at the next step.
        w.cached = false;
        self.clock.steps -= 1;
        true
    }
    fn keeps_replaced(&self) -> bool {
        true
    }
    /// The kick–drift pass tests the new positions, and the second kick's pass the new
    /// velocities.
    fn checks_finite(&self) -> bool {
        true
    }
    fn replaced(&self) -> Option<&StateOf<V>> {
        self.work.as_ref().filter(|w| w.undoable).map(|w| &w.prev)
    }
    /// The new positions' key, and on a long state of point bodies the largest move of one,
    /// both from the kick-drift pass.
    fn measured(&self) -> Measured {
        self.measured
    }
}

/// Saves `h` and the step counter (exact bits); the cached gradient is recomputed from the
/// restored state by the same code, giving the same bits.
impl<V: Vector> Resumable for VelocityVerlet<V> {
    fn save(&self, out: &mut ScopeMut<'_>) {
        self.clock.save(out);
    }
    fn restore(&mut self, from: &Scope<'_>) -> Result<(), CheckpointError> {
        self.clock.restore(from)?;
        self.reset();
        Ok(())
    }
}
