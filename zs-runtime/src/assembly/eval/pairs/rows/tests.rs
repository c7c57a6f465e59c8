//! The rows' unit tests: full and half rows, their groups, order, bands and chunks.

use super::*;

/// Uniform numbers in `[0, 1)` from `seed` (xorshift): the tests' random sites, the same
/// on every run.
fn uniform_from(mut state: u64) -> impl FnMut() -> f64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Each row's partners as listed, without padding, with the group's type and `below`.
fn partners(rows: &Rows, r: usize) -> Vec<(u32, Vec<u32>, u32)> {
    let g = &rows.groups[rows.group_at[r] as usize..rows.group_at[r + 1] as usize];
    g.iter()
        .map(|g| {
            let at = g.start as usize..(g.start + g.len) as usize;
            (
                g.kind,
                rows.partner[at].iter().map(|j| j[0]).collect(),
                g.below,
            )
        })
        .collect()
}

/// Every group's padding repeats its last partner, up to whole blocks.
fn padded_with_the_last(rows: &Rows) {
    for g in &rows.groups {
        assert_eq!(g.padded().len() % BLOCK, 0);
        if g.len > 0 {
            let last = rows.partner[(g.start + g.len - 1) as usize];
            assert!(
                rows.partner[g.padded()][g.len as usize..]
                    .iter()
                    .all(|&j| j == last)
            );
        }
    }
}

/// Full rows: each pair lands in both its bodies' rows — the partners below a body first,
/// then those above, each in the list's order — padded to whole blocks with the last
/// partner; a list that is not a half list (`i < j`, bodies in range) makes no rows.
#[test]
fn full_rows_hold_every_pair_from_both_ends_lower_partners_first() {
    let pairs = [[3, 5], [0, 3], [1, 3], [0, 5], [3, 4]];
    let mut rows = Rows::default();
    assert!(rows.build_full(&pairs, 6, &[]));
    assert!(!rows.newton);
    assert_eq!(partners(&rows, 0), vec![(MIXED, vec![3, 5], 0)]);
    assert_eq!(partners(&rows, 2), vec![(MIXED, vec![], 0)]);
    assert_eq!(partners(&rows, 3), vec![(MIXED, vec![0, 1, 5, 4], 2)]);
    assert_eq!(partners(&rows, 5), vec![(MIXED, vec![3, 0], 2)]);
    padded_with_the_last(&rows);
    assert_eq!(rows.out.len(), 18, "a gradient per body");
    assert_eq!(rows.chunk_rows, vec![0, 6]);
    assert_eq!(rows.slot, vec![0, 1, 2, 3, 4, 5]);
    assert!(!rows.build_full(&[[2, 1]], 6, &[]), "i > j");
    assert!(!rows.build_full(&[[1, 1]], 6, &[]), "i = j");
    assert!(!rows.build_full(&[[1, 6]], 6, &[]), "a body out of range");
}

/// Full rows with types: each part of a row (below, above) holds the same partners
/// grouped by type, in the order found within a type; the padding repeats the row's new
/// last partner. Untyped: as found.
#[test]
fn full_rows_group_each_part_by_the_partners_types() {
    let pairs = [
        [3, 5],
        [0, 3],
        [1, 3],
        [0, 5],
        [3, 4],
        [2, 3],
        [3, 6],
        [3, 7],
    ];
    let kinds = [1, 0, 1, 0, 0, 1, 0, 1];
    let mut rows = Rows::default();
    assert!(rows.build_full(&pairs, 8, &kinds));
    // Below 3: 0, 1, 2 found, types 1, 0, 1; above: 5, 4, 6, 7, types 1, 0, 0, 1.
    assert_eq!(
        partners(&rows, 3),
        vec![(MIXED, vec![1, 0, 2, 4, 6, 5, 7], 3)]
    );
    padded_with_the_last(&rows);
    assert!(rows.build_full(&pairs, 8, &[]));
    assert_eq!(
        partners(&rows, 3),
        vec![(MIXED, vec![0, 1, 2, 5, 4, 6, 7], 3)]
    );
}

/// Full rows come in chunks of [`FULL_CHUNK`] rows, each row's output its place in its
/// chunk.
#[test]
fn full_rows_are_chunked_by_a_fixed_number_of_rows() {
    let n = 2 * FULL_CHUNK + 5;
    let pairs: Vec<[u32; 2]> = (1..n as u32).map(|j| [j - 1, j]).collect();
    let mut rows = Rows::default();
    assert!(rows.build_full(&pairs, n, &[]));
    let c = FULL_CHUNK as u32;
    assert_eq!(rows.chunk_rows, vec![0, c, 2 * c, n as u32]);
    assert_eq!(rows.chunk_out, rows.chunk_rows);
    assert_eq!(rows.slot[FULL_CHUNK + 3], 3);
    assert_eq!(rows.sums.len(), 3);
}

/// Half list: a row per first body, in the order the bodies first lead a pair; its
/// partners grouped by type (in increasing type, the order found within one), each group
/// padded to whole blocks with its last partner; the pairs' second bodies below or above
/// the first alike.
#[test]
fn half_rows_hold_each_pair_once_by_its_first_body_grouped_by_type() {
    let pairs = [
        [3, 5],
        [0, 3],
        [3, 1],
        [0, 5],
        [3, 4],
        [5, 2],
        [3, 6],
        [3, 7],
    ];
    let kinds = [1, 0, 1, 0, 0, 1, 0, 1];
    let mut rows = Rows::default();
    assert!(rows.build_half(&pairs, 8, &kinds, (&[], None)));
    assert!(rows.newton);
    assert_eq!(rows.body, vec![3, 0, 5]);
    assert_eq!(
        partners(&rows, 0),
        vec![(0, vec![1, 4, 6], 0), (1, vec![5, 7], 0)]
    );
    assert_eq!(partners(&rows, 1), vec![(0, vec![3], 0), (1, vec![5], 0)]);
    assert_eq!(partners(&rows, 2), vec![(1, vec![2], 0)]);
    padded_with_the_last(&rows);
    // Untyped: one group per row, in the order found.
    assert!(rows.build_half(&pairs, 8, &[], (&[], None)));
    assert_eq!(partners(&rows, 0), vec![(0, vec![5, 1, 4, 6, 7], 0)]);
    assert!(!rows.build_half(&[[1, 1]], 6, &[], (&[], None)), "i = j");
    assert!(
        !rows.build_half(&[[1, 6]], 6, &[], (&[], None)),
        "a body out of range"
    );
    let many: Vec<u32> = (0..10).collect();
    assert!(
        !rows.build_half(&[[0, 1]], 10, &many, (&[], None)),
        "more than eight types"
    );
}

/// Given the sites at the build, each group's partners come nearest first (nearest images
/// in a box) to a shell, still grouped by type.
#[test]
fn half_rows_come_nearest_first_by_their_distance_at_the_build() {
    let sites = [
        [0.0, 0.0, 0.0],
        [3.0, 0.0, 0.0],
        [9.5, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 2.0, 0.0],
        [0.0, 0.0, 1.5],
    ];
    let pairs = [[0, 1], [0, 2], [0, 3], [0, 4], [0, 5]];
    let cell = Cell::new([10.0; 3]);
    let mut rows = Rows::default();
    assert!(rows.build_half(&pairs, 6, &[], (&sites, Some(&cell))));
    assert_eq!(partners(&rows, 0), vec![(0, vec![2, 3, 5, 4, 1], 0)]);
    assert!(rows.build_half(&pairs, 6, &[], (&sites, None)));
    assert_eq!(partners(&rows, 0), vec![(0, vec![3, 5, 4, 1, 2], 0)]);
    let kinds = [0, 1, 0, 1, 0, 1];
    assert!(rows.build_half(&pairs, 6, &kinds, (&sites, Some(&cell))));
    assert_eq!(
        partners(&rows, 0),
        vec![(0, vec![2, 4], 0), (1, vec![3, 5, 1], 0)]
    );
    // Within a shell (a 63rd of the farthest square distance), the order found.
    let close = [
        [0.0, 0.0, 0.0],
        [3.0, 0.0, 0.0],
        [1.01, 0.0, 0.0],
        [1.0, 0.0, 0.0],
    ];
    let pairs = [[0, 1], [0, 2], [0, 3]];
    assert!(rows.build_half(&pairs, 4, &[], (&close, None)));
    assert_eq!(partners(&rows, 0), vec![(0, vec![2, 3, 1], 0)]);
}

/// Groups of many partners (their distances on the lanes, eight at a time, and the rest
/// one by one) in the order of the rule written out plainly: shells of the group's farthest
/// nearest image, the order found within one. In a box and open.
#[test]
fn long_groups_come_in_the_order_of_their_distances_written_out() {
    let n = 40u32;
    let mut uniform = uniform_from(0x2545_f491_4f6c_dd1du64);
    let sites: Vec<[f64; 3]> = (0..n)
        .map(|_| [7.0 * uniform(), 7.0 * uniform(), 7.0 * uniform()])
        .collect();
    // Each body led by the bodies after it, found in a scrambled order: 39 partners for
    // the first row, down to one.
    let mut pairs: Vec<[u32; 2]> = Vec::new();
    for i in 0..n {
        for k in 0..n - 1 - i {
            pairs.push([i, i + 1 + (k * 17) % (n - 1 - i)]);
        }
    }
    let cell = Cell::new([7.0; 3]);
    for c in [Some(&cell), None] {
        let mut rows = Rows::default();
        assert!(rows.build_half(&pairs, n as usize, &[], (&sites, c)));
        for (r, &i) in rows.body.iter().enumerate() {
            let xi = sites[i as usize];
            let found: Vec<u32> = pairs.iter().filter(|p| p[0] == i).map(|p| p[1]).collect();
            let r2: Vec<f64> = found
                .iter()
                .map(|&j| {
                    let xj = sites[j as usize];
                    let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
                    let d = c.map_or(d, |c| c.nearest(d));
                    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
                })
                .collect();
            let farthest = r2.iter().fold(0.0_f64, |m, &x| m.max(x));
            let shell = |x: f64| {
                let high = f64::from_bits(x.to_bits() & !0xffff_ffff);
                ((high * (SHELLS - 1) as f64 / farthest) as usize).min(SHELLS - 1)
            };
            let mut order: Vec<usize> = (0..found.len()).collect();
            order.sort_by_key(|&k| shell(r2[k]));
            let expected: Vec<u32> = order.iter().map(|&k| found[k]).collect();
            assert_eq!(partners(&rows, r), vec![(0, expected, 0)], "row of {i}");
        }
    }
}

/// A list long enough for bands: the rows built on pools of 1, 2 and 3 threads are the
/// same, entry for entry.
#[test]
fn half_rows_are_the_same_in_any_number_of_bands() {
    let n = 3000u32;
    let mut uniform = uniform_from(0x9e37_79b9_7f4a_7c15u64);
    let sites: Vec<[f64; 3]> = (0..n)
        .map(|_| [10.0 * uniform(), 10.0 * uniform(), 10.0 * uniform()])
        .collect();
    let kinds: Vec<u32> = (0..n).map(|_| (3.0 * uniform()) as u32).collect();
    let pairs: Vec<[u32; 2]> = (0..4 * crate::vector::PARALLEL_FROM)
        .map(|_| {
            let i = (uniform() * f64::from(n)) as u32;
            let j = (i + 1 + (uniform() * f64::from(n - 1)) as u32) % n;
            [i, j]
        })
        .collect();
    let cell = Cell::new([10.0; 3]);
    let built = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut rows = Rows::default();
        assert!(pool.install(|| rows.build_half(
            &pairs,
            n as usize,
            &kinds,
            (&sites, Some(&cell))
        )));
        rows
    };
    let one = built(1);
    assert!(one.groups.len() > 2 * n as usize);
    for threads in [2, 3] {
        let more = built(threads);
        assert_eq!(more.body, one.body, "{threads} threads");
        assert_eq!(more.groups, one.groups);
        assert_eq!(more.partner, one.partner);
        assert_eq!(more.partner_slot, one.partner_slot);
    }
    padded_with_the_last(&one);
}

/// Every entry's partial is its partner's in its chunk, every row's its body's; a chunk's
/// partials are distinct bodies; each body's partials are listed in chunk order, and they
/// are all the partials there are.
#[test]
fn each_half_chunk_gives_its_bodies_one_partial_each_summed_in_chunk_order() {
    // Two rows of more than a chunk each, then two short ones: three chunks.
    let n = 3 * ROW_CHUNK / 2;
    let mut pairs = Vec::new();
    for i in [7u32, 2, 9, 4] {
        let m = if i == 7 || i == 2 { ROW_CHUNK + 3 } else { 5 };
        pairs.extend((0..m as u32).map(|k| [i, (i + 1 + k) % n as u32]));
    }
    let mut rows = Rows::default();
    assert!(rows.build_half(&pairs, n, &[], (&[], None)));
    assert_eq!(rows.chunk_rows, vec![0, 1, 2, 4]);
    let slot_body = &rows.scratch.slot_body;
    for c in 0..rows.chunk_rows.len() - 1 {
        let base = rows.chunk_out[c] as usize;
        let bodies = &slot_body[base..rows.chunk_out[c + 1] as usize];
        let mut seen = bodies.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), bodies.len(), "chunk {c}: one partial per body");
        for r in rows.chunk_rows[c] as usize..rows.chunk_rows[c + 1] as usize {
            assert_eq!(bodies[rows.slot[r] as usize], rows.body[r]);
            let g = &rows.groups[rows.group_at[r] as usize..rows.group_at[r + 1] as usize];
            for g in g {
                for e in g.padded() {
                    let s = rows.partner_slot[e] as usize;
                    assert_eq!(bodies[s], rows.partner[e][0], "entry {e}");
                }
            }
        }
    }
    let mut listed = 0;
    for b in 0..n {
        let of = &rows.of_body[rows.body_at[b] as usize..rows.body_at[b + 1] as usize];
        assert!(of.windows(2).all(|w| w[0] < w[1]), "body {b}: chunk order");
        assert!(of.iter().all(|&s| slot_body[s as usize] as usize == b));
        listed += of.len();
    }
    assert_eq!(listed, slot_body.len());
}
