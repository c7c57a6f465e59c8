//! `zs temper`'s checkpoint files (`zs_systems::cli::temper::TemperCheckpoint`).

use zs_runtime::Checkpoint;
use zs_systems::cli::temper::TemperCheckpoint;

/// Killed after a replica wrote a later round than `DIR/NAME` names, the resume takes its
/// `.previous`; without a file of the round, a one-line error naming the round.
#[test]
fn a_replica_checkpoint_is_read_from_the_round_the_exchanges_name() {
    let dir = std::env::temp_dir().join(format!("zs-temper-ck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = TemperCheckpoint {
        path: dir.join("ck"),
        every: 10,
        resume: true,
    };
    let at = |round: u64| {
        let mut cp = Checkpoint::new();
        cp.set_u64("temper.round", round);
        cp
    };
    c.clear(0..1, true).unwrap();
    c.write_replica(0, &at(4)).unwrap();
    c.write_replica(0, &at(5)).unwrap();
    assert_eq!(
        c.read_replica(0, 5).unwrap().u64("temper.round").unwrap(),
        5
    );
    assert_eq!(
        c.read_replica(0, 4).unwrap().u64("temper.round").unwrap(),
        4
    );
    let err = c.read_replica(0, 3).unwrap_err().to_string();
    assert!(err.contains("no checkpoint of round 3"), "{err}");
    assert!(
        err.contains("is of round 5") && err.contains("is of round 4"),
        "{err}"
    );
    c.clear(0..1, true).unwrap();
    assert!(!c.replica_path(0, false).exists() && !c.replica_path(0, true).exists());
    assert!(c.due(990, 1000, 2000) && c.due(995, 1005, 2000));
    assert!(!c.due(1000, 1005, 2000) && !c.due(1990, 2000, 2000));
    let _ = std::fs::remove_dir_all(&dir);
}
