//! Set-up of an assembled system: which terms apply to which bodies, where each term's local
//! outputs go (gather lists), and the block patterns of the Hessians. Everything here runs once,
//! in [`super::Assembled::new`]; the evaluation engine ([`super::eval`]) only reads it.
//!
//! The gather lists make the assembly deterministic: every entry of a global vector or matrix
//! is the sum of its terms' contributions in one fixed order (sites, then bonds in bond order,
//! then pairs in pair order), whatever the number of threads that computed the contributions.

use std::sync::Arc;

use super::terms::Forms;
use super::topology::Topology;
use crate::sparse::BlockLayout;

/// Marks a pinned body in a term's list of free-body indices.
pub(crate) const PINNED: u32 = u32::MAX;

/// The terms of one form acting on `K` bodies each.
#[derive(Debug, Default)]
pub(crate) struct TermList<const K: usize> {
    /// The bodies of each term (topology numbering).
    pub bodies: Vec<[u32; K]>,
    /// Their free indices (coordinate blocks of the state), or [`PINNED`].
    pub free: Vec<[u32; K]>,
}

impl<const K: usize> TermList<K> {
    pub fn len(&self) -> usize {
        self.bodies.len()
    }
}

/// Compressed rows: `src[offsets[i]..offsets[i + 1]]` are the sources of target `i`, in order.
#[derive(Debug, Default)]
pub(crate) struct Csr {
    pub offsets: Vec<u32>,
    pub src: Vec<u32>,
}

impl Csr {
    /// From `(target, source)` pairs listed in the order the sums must take.
    fn build(targets: usize, pairs: &[(u32, u32)]) -> Self {
        let mut offsets = vec![0u32; targets + 1];
        for &(t, _) in pairs {
            offsets[t as usize + 1] += 1;
        }
        for i in 0..targets {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut src = vec![0u32; pairs.len()];
        for &(t, s) in pairs {
            src[fill[t as usize] as usize] = s;
            fill[t as usize] += 1;
        }
        Self { offsets, src }
    }

    #[inline]
    pub fn row(&self, i: usize) -> &[u32] {
        &self.src[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// Where the local Hessian blocks of the terms go in one block layout: for each stored block,
/// its contributions in order (site local blocks by site index; bond and pair local blocks as
/// `t·4 + a·2 + b` for block `[a][b]` of term `t`) — the parallel gather; and, for each term,
/// the stored block each of its local blocks goes to ([`NOWHERE`] when none) — the serial
/// scatter, which visits the terms in the same order and so sums every entry in the same order.
#[derive(Debug)]
pub(crate) struct HessianGather {
    pub layout: Arc<BlockLayout>,
    pub sites: Csr,
    pub bonds: Csr,
    pub pairs: Csr,
    /// The diagonal block of each site term (empty when sites do not enter this Hessian).
    pub site_dest: Vec<u32>,
    /// The block of local block `[a][b]` of each bond / pair term.
    pub bond_dest: Vec<[[u32; 2]; 2]>,
    pub pair_dest: Vec<[[u32; 2]; 2]>,
}

/// A local block that is not stored (a pinned body's, or the transposed twin of a stored one).
pub(crate) const NOWHERE: u32 = u32::MAX;

/// Everything the evaluation engine needs, fixed at set-up.
#[derive(Debug)]
pub(crate) struct Plan {
    pub forms: Forms,
    /// Free index of each body, or [`PINNED`].
    pub free_of: Vec<u32>,
    /// Number of free bodies.
    pub free: usize,
    /// One site term per free body, in free order (present when the forms have a site part).
    pub sites: TermList<1>,
    /// One bond term per bond with at least one free body.
    pub bonds: TermList<2>,
    /// One pair term per unordered non-excluded pair with at least one free body.
    pub pairs: TermList<2>,
    /// Gradient gather per free body: bond local slots `t·2 + k`, pair local slots.
    pub grad_bonds: Csr,
    pub grad_pairs: Csr,
    /// The Hessian of the whole potential and of its stiff part.
    pub full: HessianGather,
    pub stiff: HessianGather,
}

impl Plan {
    pub fn new(forms: Forms, topology: &Topology, block: usize) -> Self {
        let n = topology.bodies();
        let mut free_of = vec![PINNED; n];
        let mut free = 0u32;
        for (b, f) in free_of.iter_mut().enumerate() {
            if !topology.pinned().contains_key(&b) {
                *f = free;
                free += 1;
            }
        }
        let free = free as usize;
        let mut sites = TermList::<1>::default();
        if forms.has_site() {
            for (b, &f) in free_of.iter().enumerate() {
                if f != PINNED {
                    sites.bodies.push([b as u32]);
                    sites.free.push([f]);
                }
            }
        }
        let mut bonds = TermList::<2>::default();
        if forms.has_bond() {
            for &(i, j) in topology.bonds() {
                let fr = [free_of[i], free_of[j]];
                if fr != [PINNED, PINNED] {
                    bonds.bodies.push([i as u32, j as u32]);
                    bonds.free.push(fr);
                }
            }
        }
        let mut pairs = TermList::<2>::default();
        if forms.pair {
            for i in 0..n {
                for j in i + 1..n {
                    let fr = [free_of[i], free_of[j]];
                    if fr != [PINNED, PINNED] && !topology.is_excluded(i, j) {
                        pairs.bodies.push([i as u32, j as u32]);
                        pairs.free.push(fr);
                    }
                }
            }
        }
        let slots = |list: &TermList<2>| -> Vec<(u32, u32)> {
            let mut v = Vec::with_capacity(2 * list.len());
            for (t, fr) in list.free.iter().enumerate() {
                for (k, &f) in fr.iter().enumerate() {
                    if f != PINNED {
                        v.push((f, (2 * t + k) as u32));
                    }
                }
            }
            v
        };
        let grad_bonds = Csr::build(free, &slots(&bonds));
        let grad_pairs = Csr::build(free, &slots(&pairs));
        let full = HessianGather::new(block, free, &sites, Some(&bonds), Some(&pairs));
        let stiff_bonds = forms.bond_is_stiff().then_some(&bonds);
        let stiff = HessianGather::new(block, free, &sites, stiff_bonds, None);
        Self {
            forms,
            free_of,
            free,
            sites,
            bonds,
            pairs,
            grad_bonds,
            grad_pairs,
            full,
            stiff,
        }
    }
}

impl HessianGather {
    fn new(
        block: usize,
        free: usize,
        sites: &TermList<1>,
        bonds: Option<&TermList<2>>,
        pairs: Option<&TermList<2>>,
    ) -> Self {
        let coupled = |list: Option<&TermList<2>>| {
            list.into_iter()
                .flat_map(|l| l.free.iter())
                .filter(|fr| fr[0] != PINNED && fr[1] != PINNED)
                .map(|fr| (fr[0] as usize, fr[1] as usize))
                .collect::<Vec<_>>()
        };
        let mut all = coupled(bonds);
        all.extend(coupled(pairs));
        let layout = BlockLayout::new(block, free, all);
        let site_pairs: Vec<(u32, u32)> = sites
            .free
            .iter()
            .enumerate()
            .map(|(t, fr)| (layout.diagonal(fr[0] as usize) as u32, t as u32))
            .collect();
        let two = |list: Option<&TermList<2>>| -> Vec<(u32, u32)> {
            let mut v = Vec::new();
            for (t, fr) in list.into_iter().flat_map(|l| l.free.iter()).enumerate() {
                for a in 0..2 {
                    for b in 0..2 {
                        let (i, j) = (fr[a], fr[b]);
                        // Each stored block (i ≤ j) once: the diagonal blocks [a][a], and the
                        // off-diagonal one from the local block whose rows are the smaller body.
                        if i == PINNED || j == PINNED || i > j || (a != b && i == j) {
                            continue;
                        }
                        let k = layout
                            .find(i as usize, j as usize)
                            .expect("the layout holds every coupled pair");
                        v.push((k as u32, (4 * t + 2 * a + b) as u32));
                    }
                }
            }
            v
        };
        let blocks = layout.blocks();
        let dest = |list: Option<&TermList<2>>, pairs: &[(u32, u32)]| {
            let mut d = vec![[[NOWHERE; 2]; 2]; list.map_or(0, |l| l.len())];
            for &(k, src) in pairs {
                let (t, a, b) = (src as usize / 4, (src as usize % 4) / 2, src as usize % 2);
                d[t][a][b] = k;
            }
            d
        };
        let (bond_pairs, pair_pairs) = (two(bonds), two(pairs));
        Self {
            sites: Csr::build(blocks, &site_pairs),
            bonds: Csr::build(blocks, &bond_pairs),
            pairs: Csr::build(blocks, &pair_pairs),
            site_dest: site_pairs.iter().map(|&(k, _)| k).collect(),
            bond_dest: dest(bonds, &bond_pairs),
            pair_dest: dest(pairs, &pair_pairs),
            layout,
        }
    }
}
