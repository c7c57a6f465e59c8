//! A checkpointed run of a liquid under a neighbour list resumes bit for bit: the checkpoint
//! keeps where the list was last built (`Model::save_history`), and the resumed run builds the
//! same list there, so its pair sums go in the uninterrupted run's order — on every pair pass
//! (the half list's rows order each body's partners nearest first at the build, so a list
//! built afresh at the checkpoint's positions sums in another order, which the test also
//! shows: resumed without the history, the run ends elsewhere).

use crate::support::assembled::cut_liquid;
use crate::support::fixtures::Rng;
use zs_runtime::assembly::PairStrategy;
use zs_runtime::driver::{Checkpointing, resume, run, run_checkpointed};
use zs_runtime::{Checkpoint, Clocked, DynState, VelocityVerlet};

const H: f64 = 0.005;
const STEPS: u64 = 400;
const EVERY: u64 = 150;

fn bits(s: &DynState) -> Vec<u64> {
    s.q.iter().chain(&s.v).map(|x| x.to_bits()).collect()
}

/// 216 Lennard-Jones particles (cutoff 2.5, skin 0.3) at a temperature of about 1.
fn start() -> DynState {
    let (_, q, _) = cut_liquid(6);
    let mut rng = Rng(0x5eed_1157);
    let v = q.iter().map(|_| 1.7 * rng.next()).collect();
    DynState { q, v, t: 0.0 }
}

#[test]
fn a_liquid_resumes_bit_for_bit_on_every_pair_pass() {
    let t_end = STEPS as f64 * H;
    for strategy in [
        PairStrategy::HalfRows,
        PairStrategy::FullRows,
        PairStrategy::PerTerm,
    ] {
        let make = || cut_liquid(6).0.with_pair_strategy(strategy);
        let path = std::env::temp_dir().join(format!(
            "zs-neighbors-{}-{strategy:?}.ck",
            std::process::id()
        ));
        // Uninterrupted, checkpointed at steps 150 and 300.
        let straight = make();
        let mut s = start();
        let summary = run_checkpointed(
            &mut VelocityVerlet::new(H),
            &straight,
            &mut s,
            t_end,
            &mut [],
            &Checkpointing::new(&path, EVERY),
        );
        assert!(summary.is_ok(), "{summary:?}");
        let builds = straight.neighbor_builds();
        assert!(
            builds >= 10,
            "{strategy:?}: {builds} builds: the list must be rebuilt"
        );
        // Resumed from step 300 by a system and a stepper set up afresh.
        let cp = Checkpoint::read(&path).expect("the checkpoint");
        assert_eq!(cp.u64("run.done").expect("run.done"), 2 * EVERY);
        let resumed = make();
        let mut stepper = VelocityVerlet::new(H);
        let mut r = DynState {
            q: vec![0.0; s.q.len()],
            v: vec![0.0; s.q.len()],
            t: 0.0,
        };
        let summary = resume(&mut stepper, &resumed, &mut r, &cp, &mut [], None).expect("resumes");
        assert!(summary.is_ok(), "{summary:?}");
        assert_eq!(stepper.steps_taken(), STEPS);
        assert!(
            bits(&r) == bits(&s),
            "{strategy:?}: the resumed run ends elsewhere"
        );
        assert_eq!(resumed.neighbor_builds(), builds, "{strategy:?}");
        // The same state continued without the list's history (a list built afresh at the
        // checkpoint's positions): the half list's rows sum in another order.
        if strategy == PairStrategy::HalfRows {
            let mut fresh: DynState = cp.state().expect("the state");
            let summary = run(
                &mut VelocityVerlet::new(H),
                &make(),
                &mut fresh,
                t_end,
                &mut [],
            );
            assert!(summary.is_ok(), "{summary:?}");
            assert!(
                bits(&fresh) != bits(&s),
                "without the history the resumed run should sum in another order"
            );
        }
        std::fs::remove_file(&path).expect("remove the checkpoint");
    }
}
