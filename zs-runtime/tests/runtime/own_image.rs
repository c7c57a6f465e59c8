//! A start that overlaps its own periodic images — two bodies of one molecule meeting through
//! the box closer than half the shortest bond — is a typed error at set-up naming the pair
//! (`Assembled::check_start`, and `Assembled::ordered` on its start); a molecule just clear of
//! its image, and an infinite periodic chain bonded through the box, are not.

use crate::support::assembled::Melt;
use zs_runtime::assembly::{Assembled, BodyOrder, Topology, TopologyError};

/// `2^(1/6)`: [`Melt`] cut there is the WCA repulsion.
const CUTOFF: f64 = 1.122_462_048_309_373;

/// A regular `n`-gon of side 1 in the plane z = 1.5, centred at (2.6, 2.6): bodies 0 and n/2
/// are a diameter apart along x.
fn ring(n: usize) -> (Topology, Vec<f64>) {
    let radius = 0.5 / (core::f64::consts::PI / n as f64).sin();
    let q = (0..n)
        .flat_map(|k| {
            let phi = 2.0 * core::f64::consts::PI * k as f64 / n as f64;
            [2.6 + radius * phi.cos(), 2.6 + radius * phi.sin(), 1.5]
        })
        .collect();
    (Topology::ring(n), q)
}

fn system(topology: Topology, side: f64) -> Assembled<Melt, 3> {
    Assembled::new(
        Melt { rc: CUTOFF },
        topology
            .exclude_bonded()
            .periodic([side; 3])
            .cutoff(CUTOFF, 0.3),
    )
    .expect("a valid topology")
}

#[test]
fn a_ring_wider_than_its_box_is_refused_naming_the_pair_that_meets_through_the_box() {
    // Diameter 2 · 2.5629 = 5.1258: in a box of 5.2 its opposite beads are 0.074 apart through
    // the box.
    let (topology, q) = ring(16);
    let diameter = 1.0 / (core::f64::consts::PI / 16.0).sin();
    let s = system(topology.clone(), 5.2);
    match s.check_start(&q) {
        Err(TopologyError::OverlapsOwnImage {
            i,
            j,
            distance,
            shortest_bond,
            shift,
        }) => {
            assert_eq!((i, j), (0, 8));
            assert!((distance - (5.2 - diameter)).abs() < 1e-12, "{distance}");
            assert!((shortest_bond - 1.0).abs() < 1e-12);
            assert_eq!(shift, [-1, 0, 0]);
        }
        other => panic!("not refused: {other:?}"),
    }
    let message = s.check_start(&q).unwrap_err().to_string();
    // Four significant digits of 5.2 − 5.1258.
    let apart = format!(
        "bodies 0 and 8 (numbered from 0) of one molecule are {:.5} apart through the periodic box",
        5.2 - diameter
    );
    assert!(message.starts_with(&apart), "{message}");
    // The same start through `ordered` (any order) is refused at set-up.
    let t = topology
        .clone()
        .exclude_bonded()
        .periodic([5.2; 3])
        .cutoff(CUTOFF, 0.3);
    for order in [BodyOrder::Given, BodyOrder::Auto, BodyOrder::Cells] {
        let refused = Assembled::ordered(Melt { rc: CUTOFF }, t.clone(), order, &q);
        assert!(
            matches!(
                refused,
                Err(TopologyError::OverlapsOwnImage { i: 0, j: 8, .. })
            ),
            "{order:?}"
        );
    }
    // In a box twice its width it is a ring like any other.
    assert!(system(topology, 10.5).check_start(&q).is_ok());
}

#[test]
fn a_chain_is_refused_only_when_its_ends_meet_closer_than_half_a_bond() {
    // Ten beads 0.97 apart along x: the ends are 8.73 apart along the bonds.
    let chain = |side: f64| {
        let q: Vec<f64> = (0..10)
            .flat_map(|k| [0.2 + 0.97 * k as f64, 1.0, 1.0])
            .collect();
        system(Topology::chain(10), side).check_start(&q)
    };
    // Box 9.5: the ends are 0.77 apart through it, more than half a bond (0.485): a contact the
    // pair term sees, not an overlap.
    assert!(chain(9.5).is_ok());
    // Box 9.0: 0.27 apart.
    assert!(matches!(
        chain(9.0),
        Err(TopologyError::OverlapsOwnImage { i: 0, j: 9, .. })
    ));
}

#[test]
fn an_infinite_chain_bonded_through_the_box_is_not_checked() {
    // Five beads 1 apart along x in a box of 5, the last bonded to the first through the box:
    // a periodic polymer, which has no unwrapped copy to overlap.
    let q: Vec<f64> = (0..5).flat_map(|k| [0.5 + k as f64, 1.0, 1.0]).collect();
    let s = system(Topology::ring(5), 5.0);
    assert!(s.check_start(&q).is_ok());
}

#[test]
fn a_system_set_up_on_a_clear_start_still_refuses_another_start_that_overlaps() {
    // The ring of the first test, laid out with diameter 5.1258 in a box of 5.2: set up from a
    // start shrunk to fit (the start `ordered` checks, and passes again without a search), then
    // asked about the full-size start and about a copy of the clear one.
    let (topology, wide) = ring(16);
    let clear: Vec<f64> = wide
        .chunks(3)
        .flat_map(|p| [2.6 + 0.5 * (p[0] - 2.6), 2.6 + 0.5 * (p[1] - 2.6), p[2]])
        .collect();
    let t = topology
        .exclude_bonded()
        .periodic([5.2; 3])
        .cutoff(CUTOFF, 0.3);
    for order in [BodyOrder::Given, BodyOrder::Auto, BodyOrder::Cells] {
        let s = Assembled::ordered(Melt { rc: CUTOFF }, t.clone(), order, &clear)
            .expect("the shrunk ring is clear of its images");
        assert!(s.check_start(&clear.clone()).is_ok(), "{order:?}");
        assert!(
            matches!(
                s.check_start(&wide),
                Err(TopologyError::OverlapsOwnImage { i: 0, j: 8, .. })
            ),
            "{order:?}"
        );
        assert!(
            matches!(
                s.replica().check_start(&wide),
                Err(TopologyError::OverlapsOwnImage { i: 0, j: 8, .. })
            ),
            "{order:?}"
        );
    }
}
