//! The engine's loads of a block of terms' bodies into lanes ([`Loads`]): the term list's
//! layout (`[[u32; K]]` of body indices) is the engine's, not the kernels' — the generated
//! kernels see only [`Lanes`]. The portable paths here; the x86 lane types load bodies of three
//! coordinates by rows and transposes instead of gathers (`x86/`).

use super::Lanes;

/// Lanes that load a block of terms' bodies: what the assembly's passes read their positions
/// with ([`super::WithLanes::run`] is generic over it; every [`Lanes`] of the crate has it).
pub trait Loads: Lanes {
    /// `D` lane vectors of body `k` of `WIDTH` terms: value `d`, lane `l` is
    /// `src[terms[l][k] · D + d]` (the coordinates of one body of each of a block's terms,
    /// their indices read straight from the term list).
    ///
    /// # Panics
    /// If `terms` is shorter than [`Lanes::WIDTH`] or a row is not in `src`.
    #[inline(always)]
    fn gather_bodies<const D: usize, const K: usize>(
        src: &[f64],
        terms: &[[u32; K]],
        k: usize,
    ) -> [Self; D] {
        gather_bodies_by_rows::<Self, D, K>(src, terms, k)
    }
    /// Bodies 0 and 1 of `WIDTH` pair terms (`K = 2`) whose bodies are three coordinates each:
    /// value `d`, lane `l` of body `k` is `src[terms[l][k]·3 + d]` (body 0 broadcast when it
    /// is one body in every lane: a neighbour-list row).
    ///
    /// # Panics
    /// If `K ≠ 2`, `terms` is shorter than [`Lanes::WIDTH`] or a row is not in `src`.
    #[inline(always)]
    fn load_pairs3<const K: usize>(src: &[f64], terms: &[[u32; K]]) -> [[Self; 3]; 2] {
        load_pairs3_by_bodies(src, terms)
    }
}

impl Loads for f64 {}

/// [`Loads::gather_bodies`] through [`Lanes::gather`]: the rows' offsets computed lane by lane.
#[inline(always)]
pub(crate) fn gather_bodies_by_rows<L: Lanes, const D: usize, const K: usize>(
    src: &[f64],
    terms: &[[u32; K]],
    k: usize,
) -> [L; D] {
    let mut rows = [0usize; 8];
    for (r, t) in rows.iter_mut().zip(&terms[..L::WIDTH]) {
        *r = t[k] as usize * D;
    }
    L::gather::<D>(src, &rows[..L::WIDTH])
}

/// [`Loads::load_pairs3`] body by body: a broadcast where every lane has the same body, else
/// [`Loads::gather_bodies`].
#[inline(always)]
pub(crate) fn load_pairs3_by_bodies<L: Loads, const K: usize>(
    src: &[f64],
    terms: &[[u32; K]],
) -> [[L; 3]; 2] {
    assert_eq!(K, 2, "pair terms");
    let mut x = [[L::splat(0.0); 3]; 2];
    for (k, xk) in x.iter_mut().enumerate() {
        let first = terms[0][k];
        if terms[..L::WIDTH].iter().all(|t| t[k] == first) {
            let o = first as usize * 3;
            for (xd, &v) in xk.iter_mut().zip(&src[o..o + 3]) {
                *xd = L::splat(v);
            }
        } else {
            *xk = L::gather_bodies::<3, K>(src, terms, k);
        }
    }
    x
}
