//! A start that overlaps its own periodic images: two bodies of one molecule (bodies joined by
//! bonds) that meet through the periodic box — the nearest image of one is the other's, not
//! the copy the bonds lead to — closer than half the shortest bond. A molecule wider than the
//! box (a ring laid flat with a radius beyond half the box) does this; its pair terms see the
//! beads almost on top of each other (V ≈ 1e20, a non-finite first step). Found at set-up and
//! named ([`TopologyError::OverlapsOwnImage`]).
//!
//! The molecule is unwrapped along its bonds (each bond by its nearest image). A molecule
//! narrower than the box minus the overlap distance along every axis cannot meet its own image:
//! it is passed over in O(size); only a molecule that wide is searched pair by pair. A molecule
//! whose bonds close a loop around the box (an infinite periodic polymer) has no unwrapped
//! copy and is not checked.

use super::topology::{Topology, TopologyError};

/// `Err(OverlapsOwnImage)` for the closest pair of bodies of one molecule that meet through the
/// periodic box closer than half the shortest bond, the position of body `b` being `site(b)`.
/// What it holds is a few words per body (a million beads: 12 MB), freed on return.
pub(crate) fn check(
    topology: &Topology,
    site: impl Fn(usize) -> [f64; 3],
) -> Result<(), TopologyError> {
    let (Some(sides), bonds) = (topology.box_lengths(), topology.bonds()) else {
        return Ok(());
    };
    if bonds.len() == 0 {
        return Ok(());
    }
    let nearest = |d: [f64; 3]| -> [f64; 3] {
        core::array::from_fn(|a| d[a] - (d[a] / sides[a]).round() * sides[a])
    };
    let norm = |d: [f64; 3]| (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let between = |i: usize, j: usize| -> [f64; 3] {
        let (p, q) = (site(i), site(j));
        core::array::from_fn(|a| q[a] - p[a])
    };
    let shortest = (bonds.clone())
        .map(|(i, j)| norm(nearest(between(i, j))))
        .fold(f64::INFINITY, f64::min);
    let reach = 0.5 * shortest;
    let n = topology.bodies();
    // The bonds of each body, compressed: `next[start[b]..start[b + 1]]`.
    let mut start = vec![0_u32; n + 1];
    for (i, j) in bonds.clone() {
        start[i + 1] += 1;
        start[j + 1] += 1;
    }
    for b in 0..n {
        start[b + 1] += start[b];
    }
    let mut next = vec![0_u32; 2 * bonds.len()];
    let mut fill = start.clone();
    for (i, j) in bonds {
        for (from, to) in [(i, j), (j, i)] {
            next[fill[from] as usize] = to as u32;
            fill[from] += 1;
        }
    }
    drop(fill);
    // Each molecule unwrapped along its bonds, breadth first: `slot[b]` is b's place in
    // `members` (its molecule's bodies) and `unwrapped` (their positions).
    const NONE: u32 = u32::MAX;
    let mut slot = vec![NONE; n];
    let (mut members, mut unwrapped): (Vec<usize>, Vec<[f64; 3]>) = (Vec::new(), Vec::new());
    let mut worst: Option<(usize, usize, f64, [i64; 3])> = None;
    for root in 0..n {
        if slot[root] != NONE || start[root] == start[root + 1] {
            continue;
        }
        members.clear();
        unwrapped.clear();
        slot[root] = 0;
        members.push(root);
        unwrapped.push(site(root));
        let (mut k, mut periodic) = (0, false);
        while k < members.len() {
            let (i, ui) = (members[k], unwrapped[k]);
            for &j in &next[start[i] as usize..start[i + 1] as usize] {
                let j = j as usize;
                let d = nearest(between(i, j));
                let uj: [f64; 3] = core::array::from_fn(|a| ui[a] + d[a]);
                if slot[j] == NONE {
                    slot[j] = members.len() as u32;
                    members.push(j);
                    unwrapped.push(uj);
                } else {
                    // A loop of bonds that comes back a box length away: no unwrapped copy.
                    let seen = unwrapped[slot[j] as usize];
                    periodic |= (0..3).any(|a| (seen[a] - uj[a]).abs() > 0.5 * sides[a]);
                }
            }
            k += 1;
        }
        if periodic {
            continue;
        }
        let wide = (0..3).any(|a| {
            let (lo, hi) = unwrapped
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), u| {
                    (lo.min(u[a]), hi.max(u[a]))
                });
            hi - lo > sides[a] - reach
        });
        if !wide {
            continue;
        }
        for k in 0..members.len() {
            for l in k + 1..members.len() {
                let (i, j) = (members[k], members[l]);
                if topology.is_excluded(i, j) {
                    continue;
                }
                let along: [f64; 3] = core::array::from_fn(|a| unwrapped[l][a] - unwrapped[k][a]);
                let shift: [i64; 3] =
                    core::array::from_fn(|a| (along[a] / sides[a]).round() as i64);
                if shift == [0; 3] {
                    continue;
                }
                let r = norm(nearest(along));
                if r < reach && worst.is_none_or(|(_, _, w, _)| r < w) {
                    let (i, j, shift) = if i < j {
                        (i, j, shift)
                    } else {
                        (j, i, shift.map(|s| -s))
                    };
                    worst = Some((i, j, r, shift));
                }
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((i, j, distance, shift)) => Err(TopologyError::OverlapsOwnImage {
            i,
            j,
            distance,
            shortest_bond: shortest,
            shift,
        }),
    }
}
