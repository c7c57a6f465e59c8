//! Replica exchange (`zs_runtime::tempering`) samples the canonical distribution at every
//! temperature of its ladder: on a 1-D double well, whose distributions are known by
//! quadrature, and whose lowest temperature cannot cross its barrier without the exchanges.
//! The same test with a wrong acceptance rule fails (the test can fail), and replicas stepped in
//! parallel give the same bits for every thread count.

use zs_runtime::tempering::{Exchanges, Tempering, metropolis};
use zs_runtime::{Langevin, Potential, State, VelocityVerlet};

/// `V(x) = B (x² − 1)²`, unit mass: wells at ±1 separated by a barrier `B`.
struct DoubleWell;

const BARRIER: f64 = 1.0;

impl Potential<1> for DoubleWell {
    fn masses(&self) -> [f64; 1] {
        [1.0]
    }
    fn potential(&self, q: &[f64; 1]) -> f64 {
        BARRIER * (q[0] * q[0] - 1.0).powi(2)
    }
    fn gradient(&self, q: &[f64; 1]) -> [f64; 1] {
        [4.0 * BARRIER * q[0] * (q[0] * q[0] - 1.0)]
    }
    fn hessian(&self, q: &[f64; 1]) -> [[f64; 1]; 1] {
        [[BARRIER * (12.0 * q[0] * q[0] - 4.0)]]
    }
    fn third_contraction(&self, q: &[f64; 1], a: &[f64; 1]) -> [f64; 1] {
        [BARRIER * 24.0 * q[0] * a[0] * a[0]]
    }
}

/// `(⟨x²⟩, P(x > 0), ⟨V⟩)` at `kt` by quadrature of `exp(−V/kT)` on [−3, 3].
fn exact(kt: f64) -> [f64; 3] {
    let n = 200_000;
    let dx = 6.0 / n as f64;
    let (mut z, mut x2, mut pos, mut v) = (0.0, 0.0, 0.0, 0.0);
    for i in 0..=n {
        let x = -3.0 + i as f64 * dx;
        let u = BARRIER * (x * x - 1.0).powi(2);
        let w = (-u / kt).exp() * if i == 0 || i == n { 0.5 } else { 1.0 };
        z += w;
        x2 += w * x * x;
        v += w * u;
        if x > 0.0 {
            pos += w;
        }
    }
    [x2 / z, pos / z, v / z]
}

const KT: [f64; 4] = [0.1, 0.18, 0.32, 0.56];
const H: f64 = 0.02;
const EVERY: u64 = 50;

/// Langevin around Verlet for replicas `range` of the ladder, noise seeds `100 + k`.
fn steppers(range: core::ops::Range<usize>) -> Vec<Langevin<VelocityVerlet<[f64; 1]>>> {
    range
        .map(|k| Langevin::new(VelocityVerlet::new(H), 1.0, KT[k], 100 + k as u64))
        .collect()
}

/// `n` replicas at rest in the left well.
fn left_well(n: usize) -> Vec<State<1>> {
    vec![State::new([-1.0], [0.0]); n]
}

/// Replica exchange on the double well, all replicas starting in the left well; per temperature
/// the block means of `x²`, `x > 0`, `V` and their z-scores against quadrature (20 blocks).
fn z_scores(exchanges: Exchanges, rounds: u64) -> Vec<[f64; 3]> {
    let mut t =
        Tempering::new(exchanges, left_well(KT.len()), steppers(0..KT.len())).expect("a ladder");
    let blocks = 20;
    let per_block = rounds / blocks;
    let mut sums = vec![vec![[0.0_f64; 4]; blocks as usize]; KT.len()];
    for round in 0..blocks * per_block {
        let slots: Vec<usize> = (0..KT.len()).map(|r| t.exchanges.slot_of(r)).collect();
        let b = (round / per_block) as usize;
        t.advance(&DoubleWell, EVERY, |replica, s| {
            let x = s.q[0];
            let acc = &mut sums[slots[replica]][b];
            acc[0] += x * x;
            acc[1] += f64::from(u8::from(x > 0.0));
            acc[2] += BARRIER * (x * x - 1.0).powi(2);
            acc[3] += 1.0;
        });
        t.exchange(&DoubleWell);
    }
    assert_eq!(t.failures().count(), 0);
    (0..KT.len())
        .map(|slot| {
            let want = exact(KT[slot]);
            core::array::from_fn(|o| {
                let means: Vec<f64> = sums[slot].iter().map(|a| a[o] / a[3]).collect();
                let m = means.iter().sum::<f64>() / means.len() as f64;
                let var = means.iter().map(|x| (x - m).powi(2)).sum::<f64>()
                    / (means.len() * (means.len() - 1)) as f64;
                (m - want[o]) / var.sqrt()
            })
        })
        .collect()
}

#[test]
fn replica_exchange_samples_every_temperature_of_a_double_well() {
    let rounds = 20_000;
    let z = z_scores(Exchanges::new(KT.to_vec(), 5).unwrap(), rounds);
    for (slot, zs) in z.iter().enumerate() {
        for (o, zo) in zs.iter().enumerate() {
            assert!(
                zo.abs() < 4.5,
                "kT = {}: observable {o}, z = {zo:.2} ({z:?})",
                KT[slot]
            );
        }
    }
    // Without exchanges the coldest replica stays in the left well: P(x > 0) ≈ 0, 0.5 wanted.
    let x = Exchanges::new(KT.to_vec(), 5)
        .unwrap()
        .with_rule(|_, _, _, _| 0.0);
    let z = z_scores(x, rounds / 4);
    assert!(z[0][1].abs() > 10.0, "no exchange: {z:?}");
    // A wrong rule — every swap accepted — carries hot configurations into the cold slot.
    let x = Exchanges::new(KT.to_vec(), 5)
        .unwrap()
        .with_rule(|_, _, _, _| 1.0);
    let z = z_scores(x, rounds / 4);
    assert!(z[0][2] > 10.0, "always accepted: {z:?}");
    // The rule with its sign reversed (1/kT_hi − 1/kT_lo) as well.
    let x = Exchanges::new(KT.to_vec(), 5)
        .unwrap()
        .with_rule(|lo, hi, ul, uh| metropolis(hi, lo, ul, uh));
    let z = z_scores(x, rounds / 4);
    assert!(
        z.iter().any(|zs| zs.iter().any(|v| v.abs() > 10.0)),
        "reversed: {z:?}"
    );
}

/// Replicas stepped in parallel (pools of 1 and 3 threads) end in the same bits, and their
/// acceptance counts agree.
#[test]
fn parallel_replicas_give_the_same_bits_for_every_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let x = Exchanges::new(KT.to_vec(), 5).unwrap();
            let mut t = Tempering::new(x, left_well(KT.len()), steppers(0..KT.len())).unwrap();
            for _ in 0..300 {
                t.advance_parallel(&DoubleWell, EVERY);
                t.exchange(&DoubleWell);
            }
            let states: Vec<(u64, u64)> = t
                .replicas
                .iter()
                .map(|r| (r.state.q[0].to_bits(), r.state.v[0].to_bits()))
                .collect();
            (states, t.exchanges.counts().collect::<Vec<_>>())
        })
    };
    let one = run(1);
    assert!(one.1.iter().all(|&(a, ok)| a > 0 && ok > 0), "{:?}", one.1);
    assert_eq!(one, run(3));
}

/// Two blocks of the ladder (as two processes would hold them), combining their energies
/// before each round, end in the same bits as one holder of every replica.
#[test]
fn blocks_that_share_energies_reach_the_same_states_as_one_holder() {
    let start = left_well;
    let x = || Exchanges::new(KT.to_vec(), 5).unwrap();
    let mut whole = Tempering::new(x(), start(4), steppers(0..4)).unwrap();
    let mut a = Tempering::block(x(), 0, start(1), steppers(0..1)).unwrap();
    let mut b = Tempering::block(x(), 1, start(3), steppers(1..4)).unwrap();
    let mut energy = vec![0.0; 4];
    for _ in 0..400 {
        whole.advance(&DoubleWell, EVERY, |_, _| {});
        let expected = whole.exchange(&DoubleWell).to_vec();
        a.advance(&DoubleWell, EVERY, |_, _| {});
        b.advance(&DoubleWell, EVERY, |_, _| {});
        a.energies_into(&DoubleWell, &mut energy);
        b.energies_into(&DoubleWell, &mut energy);
        assert_eq!(a.exchange_with(&energy), &expected[..]);
        assert_eq!(b.exchange_with(&energy), &expected[..]);
    }
    let bits = |t: &Tempering<_, [f64; 1]>| -> Vec<(u64, u64)> {
        t.replicas
            .iter()
            .map(|r| (r.state.q[0].to_bits(), r.state.v[0].to_bits()))
            .collect()
    };
    assert_eq!(bits(&whole), [bits(&a), bits(&b)].concat());
    assert!(whole.exchanges.counts().all(|(_, ok)| ok > 0));
    assert!(Tempering::block(x(), 3, start(2), steppers(0..2)).is_err());
}

/// A ladder checkpointed between two rounds — the exchanges once, each replica apart, through
/// the checkpoint's text — and resumed by two blocks (as two processes would) reaches the
/// states, assignment and counts of the uninterrupted run bit for bit. A checkpoint of another
/// ladder, or of a replica at another temperature than the assignment, is refused.
#[test]
fn a_checkpointed_ladder_resumes_bit_for_bit_in_blocks() {
    use zs_runtime::{Checkpoint, Resumable};
    let start = left_well;
    let x = || Exchanges::new(KT.to_vec(), 5).unwrap();
    let mut whole = Tempering::new(x(), start(4), steppers(0..4)).unwrap();
    let round = |t: &mut Tempering<_, [f64; 1]>| {
        t.advance(&DoubleWell, EVERY, |_, _| {});
        t.exchange(&DoubleWell).to_vec()
    };
    for _ in 0..150 {
        round(&mut whole);
    }
    // Through text, as the files hold them.
    let through_text = |cp: Checkpoint| Checkpoint::from_text(&cp.to_text()).unwrap();
    let mut saved_x = Checkpoint::new();
    whole.exchanges.save(&mut saved_x.scope_mut("exchanges"));
    let saved_x = through_text(saved_x);
    let saved: Vec<Checkpoint> = (0..4)
        .map(|k| {
            let mut cp = Checkpoint::new();
            whole.save_replica(k, &mut cp).unwrap();
            through_text(cp)
        })
        .collect();
    assert!(
        (0..4).any(|r| whole.exchanges.slot_of(r) != r),
        "some replica has moved"
    );
    let mut expected = Vec::new();
    for _ in 0..150 {
        expected.push(round(&mut whole));
    }

    let mut exchanges = x();
    exchanges.restore(&saved_x.scope("exchanges")).unwrap();
    let mut a = Tempering::block(exchanges.clone(), 0, start(2), steppers(0..2)).unwrap();
    let mut b = Tempering::block(exchanges, 2, start(2), steppers(2..4)).unwrap();
    for k in 0..2 {
        a.restore_replica(k, &saved[k]).unwrap();
        b.restore_replica(k + 2, &saved[k + 2]).unwrap();
    }
    let mut energy = vec![0.0; 4];
    for attempts in &expected {
        a.advance(&DoubleWell, EVERY, |_, _| {});
        b.advance(&DoubleWell, EVERY, |_, _| {});
        a.energies_into(&DoubleWell, &mut energy);
        b.energies_into(&DoubleWell, &mut energy);
        assert_eq!(a.exchange_with(&energy), &attempts[..]);
        assert_eq!(b.exchange_with(&energy), &attempts[..]);
    }
    let bits = |t: &Tempering<_, [f64; 1]>| -> Vec<(u64, u64, u64)> {
        t.replicas
            .iter()
            .map(|r| {
                (
                    r.state.q[0].to_bits(),
                    r.state.v[0].to_bits(),
                    r.stepper.kt().to_bits(),
                )
            })
            .collect()
    };
    assert_eq!(bits(&whole), [bits(&a), bits(&b)].concat());
    assert_eq!(
        whole.exchanges.counts().collect::<Vec<_>>(),
        b.exchanges.counts().collect::<Vec<_>>()
    );

    // Refused: another ladder; a replica's checkpoint given for another; a replica whose
    // temperature is not the one the assignment gives it.
    let mut other = Exchanges::new(vec![0.1, 0.2, 0.3, 0.4], 5).unwrap();
    assert!(other.restore(&saved_x.scope("exchanges")).is_err());
    let mut fresh = Tempering::new(x(), start(4), steppers(0..4)).unwrap();
    assert!(fresh.restore_replica(1, &saved[0]).is_err());
    let moved = (0..4).find(|&r| whole_slot(&saved_x, r) != r).unwrap();
    assert!(fresh.restore_replica(moved, &saved[moved]).is_err());
}

/// The slot of `replica` in a saved assignment.
fn whole_slot(cp: &zs_runtime::Checkpoint, replica: usize) -> usize {
    cp.u64(&format!("exchanges.slot.{replica}")).unwrap() as usize
}

/// Replicas of one assembled model (a cut Lennard-Jones liquid under a neighbour list), each
/// with its own evaluation state (`Assembled::replica`: the model shared, buffers and
/// neighbour list its own), stepped side by side on a pool of 2 or 3 threads, end in the bits
/// of stepping them in turn; every replica rebuilt its own list; and each state evaluates a
/// point to the bits of a system built alone.
#[test]
fn replicas_of_one_model_side_by_side_give_the_bits_of_stepping_them_in_turn() {
    use crate::support::assembled::cut_liquid;
    use zs_runtime::Model;
    const KTS: [f64; 3] = [0.6, 0.8, 1.1];
    let run = |threads: Option<usize>| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(1))
            .build()
            .unwrap();
        pool.install(|| {
            let (model, q, v) = cut_liquid(6);
            let states: Vec<_> = (0..KTS.len()).map(|_| model.replica()).collect();
            assert!(states.iter().all(|s| s.shares_model_with(&model)));
            let targets: Vec<&_> = states.iter().collect();
            let steppers = (0..KTS.len())
                .map(|k| Langevin::new(VelocityVerlet::new(0.002), 2.0, KTS[k], 40 + k as u64))
                .collect();
            let x = Exchanges::new(KTS.to_vec(), 9).unwrap();
            let start = zs_runtime::DynState::new(q, v);
            let mut t = Tempering::new(x, vec![start; KTS.len()], steppers).unwrap();
            let mut seen = vec![Vec::new(); KTS.len()];
            let mut energy = vec![0.0; KTS.len()];
            for _ in 0..6 {
                let observe = |e: &mut Vec<u64>, p: &_, s: &zs_runtime::DynState| {
                    e.push(Model::potential_at(p, &s.q).to_bits());
                };
                match threads {
                    Some(_) => t.advance_side_by_side(&targets, &mut seen, 25, observe),
                    None => t.advance_each(&targets, &mut seen, 25, observe),
                }
                t.energies_each(&targets, &mut energy);
                t.exchange_with(&energy.clone());
            }
            assert!(t.failures().next().is_none());
            let builds: Vec<usize> = states.iter().map(|s| s.neighbor_builds()).collect();
            let bits: Vec<Vec<u64>> = t
                .replicas
                .iter()
                .map(|r| {
                    r.state
                        .q
                        .iter()
                        .chain(&r.state.v)
                        .map(|x| x.to_bits())
                        .collect()
                })
                .collect();
            (bits, seen, builds, model.neighbor_builds())
        })
    };
    let in_turn = run(None);
    assert!(
        in_turn.2.iter().all(|&b| b > 0),
        "own lists: {:?}",
        in_turn.2
    );
    assert_eq!(in_turn.3, 0, "the model's own state was never evaluated");
    for threads in [2, 3] {
        assert!(run(Some(threads)) == in_turn, "{threads} threads");
    }
    // A replica, its model's first state busy elsewhere, evaluates like a system built alone.
    let (model, q, _) = cut_liquid(6);
    let moved: Vec<f64> = q.iter().map(|x| x + 0.37).collect();
    let mut g = vec![0.0; q.len()];
    model.value_gradient_into(&moved, &mut g);
    let replica = model.replica();
    let (alone, ..) = cut_liquid(6);
    let (mut ga, mut gb) = (vec![0.0; q.len()], vec![0.0; q.len()]);
    let (ea, eb) = (
        replica.value_gradient_into(&q, &mut ga),
        alone.value_gradient_into(&q, &mut gb),
    );
    assert_eq!(ea.to_bits(), eb.to_bits());
    assert!(ga.iter().zip(&gb).all(|(a, b)| a.to_bits() == b.to_bits()));
}
