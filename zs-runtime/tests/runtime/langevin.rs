//! The Geometric Langevin Algorithm [`Langevin`] (Tao & Owhadi §4.3, eq. 27; `docs/INTEGRATORS.md`
//! §11): long runs on harmonic oscillators sample `⟨p²/m⟩ = kT` (within 3 batch-means standard
//! errors), per component and with unequal masses; the position variance carries Verlet's
//! known `1/(1 − h²ω²/4)` factor, which shows the composition is exactly Verlet ∘ OU; the noise is
//! reproducible bit for bit and can be checkpointed; errors leave state and noise untouched.
//!
//! The binary also holds the allocation check of the Newmark family, Z&Ss-stiff, the triple jump
//! and Langevin (a counting global allocator that counts the current thread's allocations only, so
//! parallel tests do not interfere).
//!
//! Measured values are printed: `cargo test -p zs-runtime --test runtime langevin:: --
//! --nocapture`.

use zs_runtime::{Clocked, Langevin, StepErrorKind, StiffSplit};
use zs_runtime::{
    LinearlyImplicitNewmark, Newmark, Potential, PushForwardNewmark, RngState, State, StepError,
    Stepper, VelocityVerlet, Yoshida4, ZhangSkeel, ZhangSkeelStiff,
};

// ---------------------------------------------------------------------------------------------
// Counting allocator (this thread's allocations only).

use crate::support::counting_alloc;
use crate::support::fixtures::NanBeyondOne;
use counting_alloc::allocations_during;

// ---------------------------------------------------------------------------------------------
// Potentials.

/// `V = ½ Σ k_i q_i²` with masses `m_i`: independent oscillators, `ω_i² = k_i / m_i`.
struct Oscillators<const N: usize> {
    k: [f64; N],
    m: [f64; N],
}

impl<const N: usize> Potential<N> for Oscillators<N> {
    fn masses(&self) -> [f64; N] {
        self.m
    }
    fn potential(&self, q: &[f64; N]) -> f64 {
        (0..N).map(|i| 0.5 * self.k[i] * q[i] * q[i]).sum()
    }
    fn gradient(&self, q: &[f64; N]) -> [f64; N] {
        core::array::from_fn(|i| self.k[i] * q[i])
    }
    fn hessian(&self, _: &[f64; N]) -> [[f64; N]; N] {
        core::array::from_fn(|i| core::array::from_fn(|j| if i == j { self.k[i] } else { 0.0 }))
    }
    fn third_contraction(&self, _: &[f64; N], _: &[f64; N]) -> [f64; N] {
        [0.0; N]
    }
}

impl<const N: usize> StiffSplit<N> for Oscillators<N> {
    fn stiff_hessian(&self, q: &[f64; N]) -> [[f64; N]; N] {
        self.hessian(q)
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics.

/// Mean and batch-means standard error of a correlated series: the series is cut into
/// `batches` consecutive batches whose means are (nearly) independent when a batch is much
/// longer than the correlation time; SE = sd(batch means) / sqrt(batches). Also returns the lag-1
/// autocorrelation of the batch means, which should be near 0 (±2/sqrt(batches)) if the batches
/// are long enough.
fn batch_means(xs: &[f64], batches: usize) -> (f64, f64, f64) {
    let len = xs.len() / batches;
    let means: Vec<f64> = (0..batches)
        .map(|b| xs[b * len..(b + 1) * len].iter().sum::<f64>() / len as f64)
        .collect();
    let mean = means.iter().sum::<f64>() / batches as f64;
    let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
    let lag1 = means
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / (var * (batches - 1) as f64);
    (mean, (var / batches as f64).sqrt(), lag1)
}

/// Run `steps` GLA steps after `burn_in`, recording `p_i²/m_i` and `k_i q_i²` per component.
fn sample<S: Stepper<Oscillators<N>, [f64; N]>, const N: usize>(
    gla: &mut Langevin<S>,
    p: &Oscillators<N>,
    burn_in: usize,
    steps: usize,
) -> (Vec<[f64; N]>, Vec<[f64; N]>) {
    let mut s = State::new([0.0; N], [0.0; N]);
    for _ in 0..burn_in {
        gla.step(p, &mut s).unwrap();
    }
    let mut kinetic = Vec::with_capacity(steps);
    let mut potential = Vec::with_capacity(steps);
    for _ in 0..steps {
        gla.step(p, &mut s).unwrap();
        kinetic.push(core::array::from_fn(|i| p.m[i] * s.v[i] * s.v[i]));
        potential.push(core::array::from_fn(|i| p.k[i] * s.q[i] * s.q[i]));
    }
    (kinetic, potential)
}

const BATCHES: usize = 100;

/// `|mean − expected| ≤ 3 SE`, with a small enough SE for the check to mean something.
fn check_mean(name: &str, xs: &[f64], expected: f64) -> (f64, f64) {
    let (mean, se, lag1) = batch_means(xs, BATCHES);
    let (_, se_coarse, _) = batch_means(xs, BATCHES / 4);
    eprintln!(
        "{name}: {mean:.5} ± {se:.5} (batch-means SE, {BATCHES} batches; {} batches: ± \
         {se_coarse:.5}; lag-1 autocorrelation of batch means {lag1:+.3}), expected {expected:.5}, \
         deviation {:+.2} SE",
        BATCHES / 4,
        (mean - expected) / se
    );
    // The batches are long enough: the coarser batching gives a comparable SE and the batch
    // means are nearly uncorrelated (|lag1| ≤ 3/sqrt(100)).
    assert!(lag1.abs() < 0.3, "{name}: batch means correlated ({lag1})");
    assert!(
        se_coarse < 2.0 * se,
        "{name}: SE underestimated ({se} vs {se_coarse})"
    );
    assert!(
        se < 0.02 * expected,
        "{name}: SE {se} too large to test anything"
    );
    assert!(
        (mean - expected).abs() <= 3.0 * se,
        "{name}: {mean} vs {expected} (SE {se})"
    );
    (mean, se)
}

// ---------------------------------------------------------------------------------------------
// Sampling.

/// Unit oscillator (ω = 1), γ = 1, kT = 0.7, h = 0.5 (hω = 0.5), 4·10⁵ steps (2·10⁵ time units,
/// correlation time ~1/γ = 1): `⟨p²/m⟩ = kT`. For Verlet ∘ OU the Gibbs density of Verlet's
/// invariant `p²/2m + (1 − h²ω²/4) k q²/2` is stationary (it is preserved by Verlet and by the
/// OU flow), so the momenta are exact and `⟨k q²⟩ = kT / (1 − h²ω²/4) = 1.0667 kT`: a check
/// that separates this composition from, e.g., an OU with the wrong variance.
#[test]
fn harmonic_oscillator_samples_kt() {
    let (kt, gamma, h) = (0.7, 1.0, 0.5);
    let p = Oscillators { k: [1.0], m: [1.0] };
    let mut gla = Langevin::new(VelocityVerlet::new(h), gamma, kt, 2024);
    let (kin, pot) = sample(&mut gla, &p, 1000, 400_000);
    let kin: Vec<f64> = kin.iter().map(|x| x[0]).collect();
    let pot: Vec<f64> = pot.iter().map(|x| x[0]).collect();
    check_mean("Verlet+OU <p²/m>", &kin, kt);
    let shadow = kt / (1.0 - h * h / 4.0);
    let (mean_pot, se_pot) = check_mean("Verlet+OU <k q²>", &pot, shadow);
    // The factor is resolved: kT itself is many standard errors away.
    assert!((mean_pot - kt).abs() > 5.0 * se_pot);

    // Z&S inner stepper (paper: Z&Ss / Z&S + GLA): on a quadratic potential Z&S is Verlet with
    // k/(1 + βh²k/m), so the momenta are again exact.
    let mut gla = Langevin::new(ZhangSkeel::new(0.4, h), gamma, kt, 7);
    let (kin, _) = sample(&mut gla, &p, 1000, 400_000);
    let kin: Vec<f64> = kin.iter().map(|x| x[0]).collect();
    check_mean("Z&S+OU <p²/m>", &kin, kt);
}

/// Unequal masses and stiffnesses, Z&Ss-stiff inner (the paper's water combination), the
/// OU flow per component: `⟨p_i²/m_i⟩ = kT` for each.
#[test]
fn unequal_masses_per_component() {
    let kt = 0.3;
    let p = Oscillators {
        k: [1.0, 9.0],
        m: [1.0, 4.0],
    };
    let mut gla = Langevin::new(ZhangSkeelStiff::new(0.4, 0.3), 2.0, kt, 99);
    let (kin, _) = sample(&mut gla, &p, 1000, 300_000);
    for i in 0..2 {
        let xs: Vec<f64> = kin.iter().map(|x| x[i]).collect();
        check_mean(&format!("Z&Ss-stiff+OU <p_{i}²/m_{i}>"), &xs, kt);
    }
}

// ---------------------------------------------------------------------------------------------
// Reproducibility and checkpointing.

fn trajectory(seed: u64, n: usize) -> Vec<State<2>> {
    let p = Oscillators {
        k: [1.0, 2.0],
        m: [1.0, 3.0],
    };
    let mut gla = Langevin::new(Yoshida4::new(ZhangSkeel::new(0.4, 0.2)), 0.5, 1.0, seed);
    let mut s = State::new([0.1, 0.2], [0.0, 0.0]);
    (0..n)
        .map(|_| {
            gla.step(&p, &mut s).unwrap();
            s
        })
        .collect()
}

fn bits(s: &State<2>) -> Vec<u64> {
    s.q.iter()
        .chain(&s.v)
        .chain([&s.t])
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn same_seed_same_bits_different_seed_different_path() {
    let (a, b, c) = (trajectory(5, 500), trajectory(5, 500), trajectory(6, 500));
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(bits(x), bits(y));
    }
    let differ = a.iter().zip(&c).filter(|(x, y)| bits(x) != bits(y)).count();
    assert_eq!(differ, 500, "another seed differs from the first step on");
    let gap = (a[499].v[0] - c[499].v[0]).abs();
    assert!(gap > 1e-3, "{gap}");
}

#[test]
fn checkpoint_and_restart_are_bit_exact() {
    let p = Oscillators {
        k: [1.0, 2.0],
        m: [1.0, 3.0],
    };
    let mut gla = Langevin::new(VelocityVerlet::new(0.1), 0.5, 1.0, 31);
    let mut s = State::new([0.1, 0.2], [0.0, 0.0]);
    for _ in 0..137 {
        gla.step(&p, &mut s).unwrap();
    }
    let (saved, rng) = (s, gla.rng_state());
    assert_eq!(rng.seed, 31);
    assert_eq!(rng.word_pos, gla.rng_word_pos());
    assert!(rng.word_pos > 0);
    let continued: Vec<State<2>> = (0..200)
        .map(|_| {
            gla.step(&p, &mut s).unwrap();
            s
        })
        .collect();

    // A fresh integrator with another seed, restored from the checkpoint.
    let mut again = Langevin::new(VelocityVerlet::new(0.1), 0.5, 1.0, 0);
    again.set_rng_state(rng);
    assert_eq!(again.rng_seed(), 31);
    let mut r = saved;
    for x in &continued {
        again.step(&p, &mut r).unwrap();
        assert_eq!(bits(&r), bits(x));
    }
    // Rewinding the word position on the same integrator replays the noise too.
    let mut once_more = Langevin::new(VelocityVerlet::new(0.1), 0.5, 1.0, 31);
    once_more.set_rng_word_pos(rng.word_pos);
    let mut r = saved;
    for x in &continued {
        once_more.step(&p, &mut r).unwrap();
        assert_eq!(bits(&r), bits(x));
    }
    // The serialized form is plain data.
    let copy = RngState {
        seed: rng.seed,
        word_pos: rng.word_pos,
    };
    assert_eq!(copy, rng);
}

#[test]
fn zero_friction_is_the_inner_stepper() {
    // γ = 0: c = 1 and the noise amplitude is 0, so GLA is the deterministic stepper exactly.
    let p = Oscillators {
        k: [1.0, 2.0],
        m: [1.0, 3.0],
    };
    let mut gla = Langevin::new(ZhangSkeel::new(0.4, 0.1), 0.0, 1.0, 1);
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    let (mut a, mut b) = (
        State::new([0.3, -0.2], [0.1, 0.0]),
        State::new([0.3, -0.2], [0.1, 0.0]),
    );
    for _ in 0..100 {
        gla.step(&p, &mut a).unwrap();
        zs.step(&p, &mut b).unwrap();
        assert_eq!(a, b);
    }
    assert_eq!(gla.steps_taken(), 100);
    assert_eq!(gla.inner().steps_taken(), 100);
    assert_eq!((gla.gamma(), gla.kt()), (0.0, 1.0));
    assert_eq!(Clocked::name(&gla), "langevin(zhang-skeel)");
    assert_eq!(Clocked::h(&gla), 0.1);
}

#[test]
fn errors_leave_state_and_noise_untouched() {
    let p = Oscillators { k: [1.0], m: [1.0] };
    for h in [0.0, -0.1, f64::NAN] {
        let mut gla = Langevin::new(VelocityVerlet::new(h), 1.0, 1.0, 3);
        let s0 = State::at([0.2], [0.1], 4.0);
        let mut s = s0;
        let pos = gla.rng_word_pos();
        let e = gla.step(&p, &mut s).unwrap_err();
        assert!(
            matches!(
                e,
                StepError {
                    step: 0,
                    kind: StepErrorKind::InvalidStepSize { .. },
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!((s, gla.rng_word_pos()), (s0, pos));
    }
    // The inner step fails on the third step (q: 0.4 → 0.8 → 1.2 > 1, no friction to slow it).
    let mut gla = Langevin::new(VelocityVerlet::new(0.4), 0.0, 0.0, 3);
    let mut s = State::new([0.0], [1.0]);
    gla.step(&NanBeyondOne, &mut s).unwrap();
    gla.step(&NanBeyondOne, &mut s).unwrap();
    let (before, pos) = (s, gla.rng_word_pos());
    let e = gla.step(&NanBeyondOne, &mut s).unwrap_err();
    assert!(
        matches!(e, StepError { step: 2, t, kind: StepErrorKind::NonFinite(_), .. } if t == before.t),
        "{e:?}"
    );
    assert_eq!((s, gla.rng_word_pos()), (before, pos));
    assert_eq!(gla.steps_taken(), 2);
    // The OU update fails after a good inner step (σ² = kT/m overflows for m = 1e-300): Verlet
    // takes its step back (no copy in the GLA) and a Z&S inner step is restored from the GLA's
    // copy — both leave the state and the noise as they were, and the next good step is the
    // one an uninterrupted run takes.
    let free = Oscillators {
        k: [0.0, 0.0],
        m: [1e-300, 1.0],
    };
    let s0 = State::at([0.3, -0.2], [0.0, 0.5], 1.0);
    let mut gla = Langevin::new(VelocityVerlet::new(0.1), 1.0, 1e10, 3);
    let mut s = s0;
    let pos = gla.rng_word_pos();
    let e = gla.step(&free, &mut s).unwrap_err();
    assert!(matches!(e.kind, StepErrorKind::NonFinite(_)), "{e:?}");
    assert_eq!((s, gla.rng_word_pos(), gla.steps_taken()), (s0, pos, 0));
    let mut zs = Langevin::new(ZhangSkeel::new(0.4, 0.1), 1.0, 1e10, 3);
    let mut s = s0;
    assert!(zs.step(&free, &mut s).is_err());
    assert_eq!((s, zs.rng_word_pos()), (s0, pos));
    // After the undo, Verlet steps on from the restored state exactly as a fresh one.
    let fine = Oscillators {
        k: [1.0, 2.0],
        m: [1.0, 3.0],
    };
    let mut undone = Langevin::new(VelocityVerlet::new(0.1), 1.0, 0.5, 8);
    let mut s = s0;
    undone.step(&fine, &mut s).unwrap();
    assert!(Stepper::<Oscillators<2>, [f64; 2]>::undo(
        undone.inner_mut(),
        &mut s
    ));
    assert_eq!(s, s0);
    undone.set_rng_word_pos(0);
    undone.step(&fine, &mut s).unwrap();
    let mut fresh = Langevin::new(VelocityVerlet::new(0.1), 1.0, 0.5, 8);
    let mut f = s0;
    fresh.step(&fine, &mut f).unwrap();
    assert_eq!(s, f);
}

/// A stepper that can undo names the state its last step replaced (what the driver's guards
/// read instead of a copy), and the GLA around Verlet takes its own step back, noise included:
/// the step taken again is the same bits.
#[test]
fn the_gla_around_verlet_names_the_replaced_state_and_takes_its_step_back() {
    let fine = Oscillators {
        k: [1.0, 2.0],
        m: [1.0, 3.0],
    };
    let s0 = State::at([0.3, -0.2], [0.0, 0.5], 1.0);
    let mut gla = Langevin::new(VelocityVerlet::new(0.1), 1.0, 0.5, 8);
    assert!(Stepper::<Oscillators<2>, [f64; 2]>::can_undo(&gla));
    assert!(Stepper::<Oscillators<2>, [f64; 2]>::keeps_replaced(&gla));
    assert!(
        Stepper::<Oscillators<2>, [f64; 2]>::replaced(&gla).is_none(),
        "no step yet"
    );
    let mut s = s0;
    gla.step(&fine, &mut s).unwrap();
    let once = s;
    assert_eq!(
        Stepper::<Oscillators<2>, [f64; 2]>::replaced(&gla),
        Some(&s0)
    );
    assert!(Stepper::<Oscillators<2>, [f64; 2]>::undo(&mut gla, &mut s));
    assert_eq!((s, gla.steps_taken()), (s0, 0));
    assert!(
        Stepper::<Oscillators<2>, [f64; 2]>::replaced(&gla).is_none(),
        "taken back"
    );
    assert!(
        !Stepper::<Oscillators<2>, [f64; 2]>::undo(&mut gla, &mut s),
        "one step back at most"
    );
    gla.step(&fine, &mut s).unwrap();
    assert_eq!(s, once, "the same noise again");
    // Reseeding forgets the step: nothing to take back into another stream.
    gla.reseed(9);
    assert!(!Stepper::<Oscillators<2>, [f64; 2]>::undo(&mut gla, &mut s));
}

#[test]
#[should_panic(expected = "kT")]
fn negative_temperature_is_rejected() {
    let _ = Langevin::new(VelocityVerlet::<[f64; 1]>::new(0.1), 1.0, -1.0, 0);
}

// ---------------------------------------------------------------------------------------------
// No allocation per step.

#[test]
fn newmark_stiff_composition_and_langevin_steps_allocate_nothing() {
    let p = Oscillators {
        k: [1.0, 2.0, 0.5],
        m: [1.0, 3.0, 2.0],
    };
    let s0 = State::new([0.3, -0.2, 0.1], [0.1, 0.0, -0.2]);
    fn count<S: Stepper<Oscillators<3>, [f64; 3]>>(
        name: &str,
        mut st: S,
        p: &Oscillators<3>,
        s0: State<3>,
    ) {
        let mut s = s0;
        st.step(p, &mut s).unwrap(); // set-up (first evaluation)
        let n = allocations_during(|| {
            for _ in 0..1000 {
                st.step(p, &mut s).unwrap();
            }
        });
        eprintln!("{name}: {n} allocations in 1000 steps");
        assert_eq!(n, 0, "{name}");
    }
    count("Newmark", Newmark::new(0.25, 0.1), &p, s0);
    count(
        "one-step Newmark",
        LinearlyImplicitNewmark::new(0.25, 0.1),
        &p,
        s0,
    );
    count(
        "push-forward Newmark",
        PushForwardNewmark::new(0.25, 0.1),
        &p,
        s0,
    );
    count("Z&Ss-stiff", ZhangSkeelStiff::new(0.4, 0.1), &p, s0);
    count(
        "Yoshida4(Z&S)",
        Yoshida4::new(ZhangSkeel::new(0.4, 0.1)),
        &p,
        s0,
    );
    count(
        "Langevin(Z&S)",
        Langevin::new(ZhangSkeel::new(0.4, 0.1), 1.0, 1.0, 0),
        &p,
        s0,
    );
    count(
        "Langevin(Yoshida4(Verlet))",
        Langevin::new(Yoshida4::new(VelocityVerlet::new(0.1)), 1.0, 1.0, 0),
        &p,
        s0,
    );
    // The counter does count: a Vec allocates.
    assert_eq!(allocations_during(|| drop(vec![1u8; 16])), 1);
}
