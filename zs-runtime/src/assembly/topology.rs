//! Which bodies a system has and how they are connected: the run-time half of an assembled
//! system's definition (the per-term kernels are the compile-time half).

use std::collections::{BTreeMap, BTreeSet};

mod error;
pub use error::TopologyError;

/// The bodies of an assembled system and how its terms apply to them
/// ([`super::Assembled`]): `bodies` bodies (numbered from 0), a bond list (each bond term and
/// bond constraint applies to each bond), exclusions (unordered pairs the pair term skips) and
/// pinned bodies (held in place at a given position: they are not coordinates of the system,
/// but the terms that involve them see that position — the pivot of the pendulum chain).
///
/// ```
/// use zs_runtime::assembly::Topology;
/// // The chain of 10 pendula: body 0 is the pivot at the origin, bonds 0-1, 1-2, ..., 9-10.
/// let chain = Topology::chain(11).pin(0, [0.0, 0.0]);
/// assert_eq!(chain.bonds().len(), 10);
/// // A DNA ring of 200 base pairs: bonds k-(k+1) and 199-0.
/// let ring = Topology::ring(200);
/// assert_eq!(ring.bonds().last(), Some((199, 0)));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topology {
    bodies: usize,
    /// The bonds' bodies as 32-bit numbers (a million bonds are 8 MB, not 16: the bodies
    /// are fewer than `u32::MAX`, [`Topology::validate`]); a number too large to hold is kept
    /// in `bond_beyond` and reported.
    bonds: Vec<[u32; 2]>,
    bond_beyond: Option<usize>,
    angles: Vec<[usize; 3]>,
    dihedrals: Vec<[usize; 4]>,
    /// Pairs joined by at most this many bonds are excluded (0: none).
    exclude_within: usize,
    exclusions: BTreeSet<(usize, usize)>,
    exclude_bonded: bool,
    pinned: BTreeMap<usize, Vec<f64>>,
    /// A body pinned twice at different positions (reported by `validate`).
    pinned_twice: Option<usize>,
    /// A bond list too large to allocate (reported by `validate`).
    unallocated: bool,
    /// A ring of fewer than 3 bodies was asked for (reported by `validate`).
    small_ring: Option<usize>,
    periodic: Option<[f64; 3]>,
    cutoff: Option<(f64, f64)>,
    types: Option<Vec<u32>>,
}

impl Topology {
    /// `bodies` unconnected bodies (site and pair terms apply; no bonds).
    pub fn new(bodies: usize) -> Self {
        Self {
            bodies,
            ..Self::default()
        }
    }

    /// `bodies` bodies bonded in a line: `(0, 1), (1, 2), …, (n−2, n−1)`.
    pub fn chain(bodies: usize) -> Self {
        Self::new(bodies).bonds_from((1..bodies).map(|k| (k - 1, k)))
    }

    /// `bodies` bodies bonded in a ring: the chain plus `(n−1, 0)` (periodic boundaries). A
    /// ring needs at least 3 bodies to have distinct bonds: fewer is an error of
    /// [`Topology::validate`] ([`TopologyError::RingTooSmall`]).
    pub fn ring(bodies: usize) -> Self {
        let mut t = Self::chain(bodies);
        if bodies >= 3 {
            t = t.bond(bodies - 1, 0);
        } else {
            t.small_ring = Some(bodies);
        }
        t
    }

    /// Add the bond `(i, j)` (order kept: a bond term sees body `i` first).
    pub fn bond(mut self, i: usize, j: usize) -> Self {
        let beyond = &mut self.bond_beyond;
        self.bonds.push([i, j].map(|b| narrow(b, beyond)));
        self
    }

    /// Add several bonds. A list that cannot be allocated is reported by
    /// [`Topology::validate`] ([`TopologyError::TooLarge`]), not an abort: `Topology::chain(n)`
    /// of an absurd `n`.
    pub fn bonds_from(mut self, bonds: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let beyond = &mut self.bond_beyond;
        let narrowed = (bonds.into_iter()).map(|(i, j)| [i, j].map(|b| narrow(b, beyond)));
        self.unallocated |= !extend_checked(&mut self.bonds, narrowed);
        self
    }

    /// Add the angle `(i, j, k)`: an angle term sees bodies `i`, `j`, `k` in this order, `j`
    /// being the apex by convention (LAMMPS's `Angles` section).
    pub fn angle(mut self, i: usize, j: usize, k: usize) -> Self {
        self.angles.push([i, j, k]);
        self
    }

    /// Add several angles (a list that cannot be allocated is reported by
    /// [`Topology::validate`], as for [`Topology::bonds_from`]).
    pub fn angles_from(mut self, angles: impl IntoIterator<Item = [usize; 3]>) -> Self {
        self.unallocated |= !extend_checked(&mut self.angles, angles);
        self
    }

    /// Add the dihedral `(i, j, k, l)`: a dihedral term sees the four bodies in this order, the
    /// torsion being about the axis `j`–`k` (LAMMPS's `Dihedrals` section).
    pub fn dihedral(mut self, i: usize, j: usize, k: usize, l: usize) -> Self {
        self.dihedrals.push([i, j, k, l]);
        self
    }

    /// Add several dihedrals (as [`Topology::angles_from`]).
    pub fn dihedrals_from(mut self, dihedrals: impl IntoIterator<Item = [usize; 4]>) -> Self {
        self.unallocated |= !extend_checked(&mut self.dihedrals, dihedrals);
        self
    }

    /// The angles `(i, j, k)` and the proper dihedrals `(i, j, k, l)` of the bond graph: every
    /// path of two bonds and of three bonds through distinct bodies, each once (ordered so
    /// that `i < k`, resp. `i < l`, and sorted) — what a builder of a linear or branched
    /// molecule lists when every angle and torsion has a term. Replaces any angles and
    /// dihedrals given before.
    pub fn angles_and_dihedrals_from_bonds(mut self) -> Self {
        let adjacency = self.adjacency();
        let mut angles = Vec::new();
        let mut dihedrals = Vec::new();
        for (j, nj) in adjacency.iter().enumerate() {
            for (a, &i) in nj.iter().enumerate() {
                for &k in &nj[a + 1..] {
                    angles.push([i, j, k]);
                }
            }
            // Each central bond j–k once (j < k).
            for &k in nj.iter().filter(|&&k| k > j) {
                for &i in nj.iter().filter(|&&i| i != k) {
                    for &l in adjacency[k].iter().filter(|&&l| l != j && l != i) {
                        dihedrals.push(if i < l { [i, j, k, l] } else { [l, k, j, i] });
                    }
                }
            }
        }
        angles.sort_unstable();
        dihedrals.sort_unstable();
        self.angles = angles;
        self.dihedrals = dihedrals;
        self
    }

    /// Skip the pair term for every pair of bodies joined by a path of at most `bonds` bonds:
    /// LAMMPS's `special_bonds lj 0 0 0` is `exclude_within(3)` (1-2, 1-3 and 1-4 pairs),
    /// `special_bonds fene` is `exclude_within(1)` (as [`Topology::exclude_bonded`]).
    pub fn exclude_within(mut self, bonds: usize) -> Self {
        self.exclude_within = bonds;
        self
    }

    /// The pairs `(i, j)`, `i < j`, whose shortest path of bonds has exactly `bonds` bonds, in
    /// lexicographic order: `pairs_at(3)` are the 1-4 pairs of a force field (a pair that is
    /// also 1-3 through a ring is 1-3, as in LAMMPS's special lists).
    pub fn pairs_at(&self, bonds: usize) -> Vec<(usize, usize)> {
        let mut graph = BondGraph::new(self);
        let mut out = Vec::new();
        for i in 0..self.bodies {
            let mut at: Vec<usize> = (graph.within(i, bonds).iter())
                .filter(|&&(j, d)| d == bonds && j > i)
                .map(|&(j, _)| j)
                .collect();
            at.sort_unstable();
            out.extend(at.into_iter().map(|j| (i, j)));
        }
        out
    }

    /// Every body's bonded partners (bonds naming a missing body are left out: `validate`
    /// reports them), each list sorted.
    fn adjacency(&self) -> Vec<Vec<usize>> {
        let mut adjacency = vec![Vec::new(); self.bodies];
        for (i, j) in self.bonds() {
            if i < self.bodies && j < self.bodies && i != j {
                adjacency[i].push(j);
                adjacency[j].push(i);
            }
        }
        for a in &mut adjacency {
            a.sort_unstable();
            a.dedup();
        }
        adjacency
    }

    /// Skip the pair term for the unordered pair `{i, j}`.
    pub fn exclude(mut self, i: usize, j: usize) -> Self {
        self.exclusions.insert((i.min(j), i.max(j)));
        self
    }

    /// Skip the pair term for every bonded pair.
    pub fn exclude_bonded(mut self) -> Self {
        self.exclude_bonded = true;
        self
    }

    /// Hold body `i` at `position` (one value per coordinate of a body).
    ///
    /// Pinning a body twice at different positions is an error of [`Topology::validate`] (the
    /// same position twice is allowed).
    pub fn pin(mut self, i: usize, position: impl Into<Vec<f64>>) -> Self {
        let position = position.into();
        if let Some(old) = self.pinned.insert(i, position.clone()) {
            let same = old.len() == position.len()
                && old
                    .iter()
                    .zip(&position)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            if !same && self.pinned_twice.is_none() {
                self.pinned_twice = Some(i);
            }
        }
        self
    }

    /// An orthorhombic periodic box with sides `lengths` (x, y, z), its corner anywhere:
    /// every bond and pair term sees the nearest image of each of its bodies relative to its
    /// first body, by shifting whole bodies by box vectors before the generated kernel runs (so
    /// its derivatives are unchanged). A body of several sites (`D = 3s` coordinates, site
    /// after site) is shifted by its first site, its reference site. Positions may leave the
    /// box: coordinates stay unwrapped; wrap them for output only. Site terms see the unwrapped
    /// position.
    pub fn periodic(mut self, lengths: [f64; 3]) -> Self {
        self.periodic = Some(lengths);
        self
    }

    /// The pair terms apply only to pairs whose reference sites are closer than `rc` (the
    /// pair term must vanish beyond it: write it with `if`/`else`, e.g. shifted — the energy
    /// and gradient passes skip the farther pairs of the list, the Hessian and third passes
    /// evaluate every listed pair, so only a vanishing term gives one function); they are
    /// found by a cell list and kept in a Verlet list of the pairs within `rc + skin`, rebuilt
    /// when a body has moved more than `skin / 2` since the last build (checked at every
    /// evaluation at a new point, as LAMMPS's `neigh_modify every 1 delay 1 check yes`).
    pub fn cutoff(mut self, rc: f64, skin: f64) -> Self {
        self.cutoff = Some((rc, skin));
        self
    }

    /// Every body's type, in body order (a LAMMPS data file's atom types, from 0 here): a
    /// term function that takes its bodies' types (`ka: usize, kb: usize` after their
    /// coordinates) picks its parameters from tables of the definition with them
    /// (`self.epsilon[ka]`), and `body_masses(&self, kind: usize)` the masses. Without types,
    /// every body has type 0.
    pub fn types(mut self, types: impl IntoIterator<Item = u32>) -> Self {
        self.types = Some(types.into_iter().collect());
        self
    }

    /// Body `i`'s type (0 without [`Topology::types`]).
    pub fn kind_of(&self, i: usize) -> u32 {
        self.types.as_ref().map_or(0, |t| t[i])
    }

    /// The bodies' types, when given.
    pub fn body_types(&self) -> Option<&[u32]> {
        self.types.as_deref()
    }

    /// The periodic box's sides, when periodic.
    pub fn box_lengths(&self) -> Option<[f64; 3]> {
        self.periodic
    }

    /// The pair cutoff and the neighbour-list skin, when set.
    pub fn pair_cutoff(&self) -> Option<(f64, f64)> {
        self.cutoff
    }

    /// The excluded partners of every body (explicit exclusions, bonded partners with
    /// [`Topology::exclude_bonded`], partners within [`Topology::exclude_within`] bonds), each
    /// list sorted: a neighbour list's quick check.
    pub fn exclusion_lists(&self) -> Vec<Vec<u32>> {
        let mut ex = vec![Vec::new(); self.bodies];
        if self.exclude_within > 0 {
            let mut graph = BondGraph::new(self);
            for (i, within) in ex.iter_mut().enumerate() {
                let reached = graph.within(i, self.exclude_within);
                within.extend(reached.iter().map(|&(c, _)| c as u32));
            }
        }
        let mut add = |i: usize, j: usize| {
            if i < self.bodies && j < self.bodies {
                ex[i].push(j as u32);
                ex[j].push(i as u32);
            }
        };
        for &(i, j) in &self.exclusions {
            add(i, j);
        }
        if self.exclude_bonded {
            for (i, j) in self.bonds() {
                add(i, j);
            }
        }
        for l in &mut ex {
            l.sort_unstable();
            l.dedup();
        }
        ex
    }

    /// Number of bodies (pinned ones included).
    pub fn bodies(&self) -> usize {
        self.bodies
    }

    /// The bonds, in the order given.
    pub fn bonds(
        &self,
    ) -> impl DoubleEndedIterator<Item = (usize, usize)> + ExactSizeIterator + Clone + '_ {
        self.bonds.iter().map(|&[i, j]| (i as usize, j as usize))
    }

    /// The angles, in the order given.
    pub fn angles(&self) -> &[[usize; 3]] {
        &self.angles
    }

    /// The dihedrals, in the order given.
    pub fn dihedrals(&self) -> &[[usize; 4]] {
        &self.dihedrals
    }

    /// The pinned bodies and their positions.
    pub fn pinned(&self) -> &BTreeMap<usize, Vec<f64>> {
        &self.pinned
    }

    /// True when the pair term skips `{i, j}`.
    pub fn is_excluded(&self, i: usize, j: usize) -> bool {
        let key = (i.min(j), i.max(j));
        self.exclusions.contains(&key)
            || (self.exclude_bonded && self.bonds().any(|(a, b)| (a.min(b), a.max(b)) == key))
            || (self.exclude_within > 0 && self.bond_distance(i, j, self.exclude_within))
    }

    /// True when `i` and `j` are joined by a path of at most `limit` bonds.
    fn bond_distance(&self, i: usize, j: usize, limit: usize) -> bool {
        i < self.bodies
            && BondGraph::new(self)
                .within(i, limit)
                .iter()
                .any(|&(c, _)| c == j)
    }

    /// The same topology with body `b` renumbered `rank[b]` (a permutation of the bodies, of a
    /// topology that [`Topology::validate`] accepted): every bonded list, exclusion, pin and
    /// type follows its bodies; each bonded list is sorted by its terms' least new number (a
    /// stable sort: terms of one body keep their order), so that terms near in the new order
    /// are near in the list. A term keeps the order of its bodies (a bond still sees its first
    /// body first). What an [`super::Assembled`] in spatial order is built from
    /// ([`super::BodyOrder`]).
    pub(crate) fn relabeled(&self, rank: &[u32]) -> Topology {
        assert_eq!(rank.len(), self.bodies);
        let r = |b: usize| rank[b] as usize;
        fn sorted<T: Copy, const K: usize>(
            terms: impl Iterator<Item = [usize; K]>,
            make: impl Fn([usize; K]) -> T,
        ) -> Vec<T> {
            let mut v: Vec<[usize; K]> = terms.collect();
            v.sort_by_key(|t| t.iter().copied().min());
            v.into_iter().map(make).collect()
        }
        let bonds = sorted(self.bonds().map(|(i, j)| [r(i), r(j)]), |b| {
            b.map(|b| b as u32)
        });
        let angles = sorted(self.angles.iter().map(|a| a.map(r)), |a| a);
        let dihedrals = sorted(self.dihedrals.iter().map(|a| a.map(r)), |a| a);
        Topology {
            bodies: self.bodies,
            bonds,
            bond_beyond: self.bond_beyond,
            angles,
            dihedrals,
            exclude_within: self.exclude_within,
            exclusions: (self.exclusions.iter())
                .map(|&(i, j)| (r(i).min(r(j)), r(i).max(r(j))))
                .collect(),
            exclude_bonded: self.exclude_bonded,
            pinned: (self.pinned.iter())
                .map(|(&b, p)| (r(b), p.clone()))
                .collect(),
            pinned_twice: self.pinned_twice.map(r),
            unallocated: self.unallocated,
            small_ring: self.small_ring,
            periodic: self.periodic,
            cutoff: self.cutoff,
            types: self.types.as_ref().map(|t| {
                let mut by_rank = vec![0; t.len()];
                for (b, &k) in t.iter().enumerate() {
                    by_rank[r(b)] = k;
                }
                by_rank
            }),
        }
    }

    /// Check the topology for a system whose bodies have `dim` coordinates.
    ///
    /// # Errors
    /// The first problem found, in the order of [`TopologyError`]'s variants.
    pub fn validate(&self, dim: usize) -> Result<(), TopologyError> {
        let n = self.bodies;
        if n == 0 {
            return Err(TopologyError::Empty);
        }
        if self.unallocated {
            return Err(TopologyError::TooLarge("the number of bonds"));
        }
        if let Some(n) = self.small_ring {
            return Err(TopologyError::RingTooSmall(n));
        }
        if n >= u32::MAX as usize {
            return Err(TopologyError::TooLarge("the number of bodies"));
        }
        if self.bonds.len() >= u32::MAX as usize {
            return Err(TopologyError::TooLarge("the number of bonds"));
        }
        if self.angles.len().max(self.dihedrals.len()) >= u32::MAX as usize {
            return Err(TopologyError::TooLarge("the number of angles or dihedrals"));
        }
        let range = |what, body: usize| {
            if body < n {
                Ok(())
            } else {
                Err(TopologyError::BodyOutOfRange {
                    what,
                    body,
                    bodies: n,
                })
            }
        };
        if let Some(body) = self.bond_beyond {
            range("bond", body)?;
        }
        let duplicate = first_repeated_pair(&self.bonds);
        for (k, (i, j)) in self.bonds().enumerate() {
            range("bond", i)?;
            range("bond", j)?;
            if i == j {
                return Err(TopologyError::SelfPair {
                    what: "bond",
                    body: i,
                });
            }
            if duplicate == Some(k) {
                return Err(TopologyError::DuplicateBond(i, j));
            }
        }
        let tuples = (self.angles.iter().map(|a| ("angle", &a[..])))
            .chain(self.dihedrals.iter().map(|d| ("dihedral", &d[..])));
        for (what, bodies) in tuples {
            for (k, &b) in bodies.iter().enumerate() {
                range(what, b)?;
                if bodies[..k].contains(&b) {
                    return Err(TopologyError::RepeatedBody {
                        what,
                        bodies: bodies.to_vec(),
                        body: b,
                    });
                }
            }
        }
        for &(i, j) in &self.exclusions {
            range("exclusion", i)?;
            range("exclusion", j)?;
            if i == j {
                return Err(TopologyError::SelfPair {
                    what: "exclusion",
                    body: i,
                });
            }
        }
        if let Some(body) = self.pinned_twice {
            return Err(TopologyError::PinnedTwice { body });
        }
        for (&i, p) in &self.pinned {
            range("pin", i)?;
            if p.len() != dim {
                return Err(TopologyError::PinLength {
                    body: i,
                    given: p.len(),
                    expected: dim,
                });
            }
            if !p.iter().all(|x| x.is_finite()) {
                return Err(TopologyError::PinNotFinite { body: i });
            }
        }
        if self.pinned.len() == n {
            return Err(TopologyError::NothingFree(n));
        }
        if let Some(t) = &self.types
            && t.len() != n
        {
            return Err(TopologyError::TypesLength {
                given: t.len(),
                bodies: n,
            });
        }
        if let Some(l) = self.periodic {
            if !l.iter().all(|x| x.is_finite() && *x > 0.0) {
                return Err(TopologyError::BadBox(l));
            }
            if !dim.is_multiple_of(3) {
                return Err(TopologyError::PeriodicDimension(dim));
            }
        }
        if let Some((rc, skin)) = self.cutoff {
            if !(rc.is_finite() && rc > 0.0 && skin.is_finite() && skin >= 0.0) {
                return Err(TopologyError::BadCutoff { rc, skin });
            }
            if !dim.is_multiple_of(3) {
                return Err(TopologyError::PeriodicDimension(dim));
            }
            if let Some(l) = self.periodic {
                let side = l.iter().copied().fold(f64::INFINITY, f64::min);
                if 2.0 * (rc + skin) > side {
                    return Err(TopologyError::CutoffTooLarge {
                        reach: rc + skin,
                        side,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Extend `list` with `items`, reserving first; `false` (nothing added) when the reservation
/// fails: a list too large to allocate is reported by [`Topology::validate`], not an abort.
/// `b` as a bond's 32-bit body number, or `u32::MAX` (out of range of any valid topology)
/// with the first such number kept in `beyond`.
fn narrow(b: usize, beyond: &mut Option<usize>) -> u32 {
    u32::try_from(b).unwrap_or_else(|_| {
        beyond.get_or_insert(b);
        u32::MAX
    })
}

fn extend_checked<T>(list: &mut Vec<T>, items: impl IntoIterator<Item = T>) -> bool {
    let items = items.into_iter();
    if list.try_reserve(items.size_hint().0).is_err() {
        return false;
    }
    list.extend(items);
    true
}

/// The index of the first of `pairs` whose unordered pair is an earlier one's, if any: found by
/// a sort of the pairs, not by a set built one insertion (and one allocation) at a time, which a
/// million-bead melt's set-up would wait on.
fn first_repeated_pair(pairs: &[[u32; 2]]) -> Option<usize> {
    let mut keyed: Vec<(u64, u32)> = (pairs.iter().enumerate())
        .map(|(k, &[i, j])| ((u64::from(i.min(j)) << 32) | u64::from(i.max(j)), k as u32))
        .collect();
    keyed.sort_unstable();
    // Within a run of one pair the indices ascend: every one after the run's first repeats it.
    (keyed.windows(2))
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1].1 as usize)
        .min()
}

/// The bond graph, for breadth-first walks (exclusions and 1-4 pairs by bond distance).
struct BondGraph {
    adjacency: Vec<Vec<usize>>,
    /// Scratch: the depth of every body reached by the current walk (`usize::MAX`: not).
    depth: Vec<usize>,
}

impl BondGraph {
    fn new(topology: &Topology) -> Self {
        Self {
            adjacency: topology.adjacency(),
            depth: vec![usize::MAX; topology.bodies],
        }
    }

    /// The bodies joined to `i` by a path of at most `limit` bonds, each with its shortest
    /// path's length, in breadth-first order (`i` itself left out).
    fn within(&mut self, i: usize, limit: usize) -> Vec<(usize, usize)> {
        let mut reached = Vec::new();
        let mut frontier = vec![i];
        self.depth[i] = 0;
        for d in 1..=limit {
            let mut next = Vec::new();
            for &b in &frontier {
                for &c in &self.adjacency[b] {
                    if self.depth[c] == usize::MAX {
                        self.depth[c] = d;
                        next.push(c);
                        reached.push((c, d));
                    }
                }
            }
            frontier = next;
        }
        self.depth[i] = usize::MAX;
        for &(c, _) in &reached {
            self.depth[c] = usize::MAX;
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sort finds the bond that a set built bond by bond would refuse first, on random
    /// lists over few bodies (many repeats, in both orientations) and on lists with none.
    #[test]
    fn the_first_repeated_pair_is_the_one_a_set_would_refuse_first() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut below = |n: u32| rng.next_u32() % n;
        for case in 0..400 {
            let (bodies, len) = (2 + below(38), below(60) as usize);
            let pairs: Vec<[u32; 2]> = if case % 4 == 0 {
                // A path: no pair twice.
                (0..len.min(bodies as usize - 1) as u32)
                    .map(|i| [i + 1, i])
                    .collect()
            } else {
                (0..len).map(|_| [below(bodies), below(bodies)]).collect()
            };
            let mut seen = BTreeSet::new();
            let by_set = (pairs.iter()).position(|&[i, j]| !seen.insert((i.min(j), i.max(j))));
            assert_eq!(first_repeated_pair(&pairs), by_set, "{pairs:?}");
            if case % 4 == 0 {
                assert_eq!(by_set, None);
            }
        }
    }

    #[test]
    fn builders_and_validation() {
        let t = Topology::ring(4);
        assert!(t.bonds().eq([(0, 1), (1, 2), (2, 3), (3, 0)]));
        assert!(t.validate(1).is_ok());
        for n in [0, 1, 2] {
            assert_eq!(
                Topology::ring(n).validate(1),
                Err(if n == 0 {
                    TopologyError::Empty
                } else {
                    TopologyError::RingTooSmall(n)
                })
            );
        }
        assert!(Topology::ring(3).validate(1).is_ok());
        assert_eq!(
            Topology::new(3).bond(0, 3).validate(1),
            Err(TopologyError::BodyOutOfRange {
                what: "bond",
                body: 3,
                bodies: 3
            })
        );
        // A body number beyond 32 bits (the bonds hold 32-bit numbers) is reported as given.
        let far = u32::MAX as usize + 7;
        assert_eq!(
            Topology::new(3).bond(0, 1).bond(2, far).validate(1),
            Err(TopologyError::BodyOutOfRange {
                what: "bond",
                body: far,
                bodies: 3
            })
        );
        assert_eq!(
            Topology::new(3).bond(1, 1).validate(1),
            Err(TopologyError::SelfPair {
                what: "bond",
                body: 1
            })
        );
        assert_eq!(
            Topology::new(3).bond(0, 1).bond(1, 0).validate(1),
            Err(TopologyError::DuplicateBond(1, 0))
        );
        assert_eq!(
            Topology::new(2).pin(0, [0.0]).validate(2),
            Err(TopologyError::PinLength {
                body: 0,
                given: 1,
                expected: 2
            })
        );
        assert_eq!(
            Topology::new(1).pin(0, [0.0]).validate(1),
            Err(TopologyError::NothingFree(1))
        );
        assert_eq!(Topology::new(0).validate(1), Err(TopologyError::Empty));
        assert_eq!(
            Topology::new(2).pin(1, [f64::NAN]).validate(1),
            Err(TopologyError::PinNotFinite { body: 1 })
        );
        let t = Topology::chain(3).exclude(2, 0).exclude_bonded();
        assert!(t.is_excluded(0, 2) && t.is_excluded(1, 0) && t.is_excluded(2, 1));
        assert!(!Topology::chain(3).is_excluded(0, 1));
        assert_eq!(
            Topology::new(2).periodic([1.0, 0.0, 1.0]).validate(3),
            Err(TopologyError::BadBox([1.0, 0.0, 1.0]))
        );
        assert_eq!(
            Topology::new(2).periodic([1.0; 3]).validate(2),
            Err(TopologyError::PeriodicDimension(2))
        );
        assert_eq!(
            Topology::new(2).cutoff(-1.0, 0.1).validate(3),
            Err(TopologyError::BadCutoff {
                rc: -1.0,
                skin: 0.1
            })
        );
        assert_eq!(
            Topology::new(2)
                .periodic([4.0, 3.0, 5.0])
                .cutoff(1.2, 0.4)
                .validate(3),
            Err(TopologyError::CutoffTooLarge {
                reach: 1.6,
                side: 3.0
            })
        );
        assert!(
            Topology::new(2)
                .periodic([4.0, 3.5, 5.0])
                .cutoff(1.2, 0.4)
                .validate(9)
                .is_ok()
        );
        let t = Topology::chain(4).exclude(0, 3).exclude_bonded();
        assert_eq!(
            t.exclusion_lists(),
            vec![vec![1, 3], vec![0, 2], vec![1, 3], vec![0, 2]]
        );
        assert_eq!(
            Topology::new(3).pin(1, [0.0]).pin(1, [0.5]).validate(1),
            Err(TopologyError::PinnedTwice { body: 1 })
        );
        assert!(
            Topology::new(3)
                .pin(1, [0.5])
                .pin(1, [0.5])
                .validate(1)
                .is_ok()
        );
        // Absurd sizes: a typed error, no abort in the allocator.
        assert_eq!(
            Topology::chain(usize::MAX / 2).validate(1),
            Err(TopologyError::TooLarge("the number of bonds"))
        );
        assert!(
            TopologyError::NothingFree(3)
                .to_string()
                .contains("all 3 bodies")
        );
    }
}
