//! The storage of coordinates, and the linear algebra that goes with it.
//!
//! Every integrator is written once, generically over a [`Vector`]: `[f64; N]` for the
//! fixed-size systems `#[mechanical_system]` unrolls completely (stack arrays, loops with
//! `const` bounds that LLVM unrolls, a dense unrolled solve), `Vec<f64>` for systems assembled
//! over a topology at run time ([`crate::assembly`]: sizes read at run time, a sparse Hessian in
//! a pattern fixed at set-up, an O(N) solve). The vector type also fixes how a Hessian is
//! stored ([`Vector::Matrix`]) and how the shifted system `(M + sH) x = b` of the
//! linearly-implicit methods is solved ([`Vector::Solver`], see [`crate::linalg`]), so a stepper
//! is generic over one parameter only (`ZhangSkeel<V>`).

use core::fmt::Debug;
use core::ops::{Index, IndexMut};

use crate::linalg::{DenseSolver, ShiftedSolve};
use crate::sparse::{SparseMatrix, SparseSolver};

/// Coordinates (and velocities, gradients, ...) of a mechanical system.
///
/// Implemented by `[f64; N]` (fixed-size systems) and `Vec<f64>` (assembled systems). Steppers
/// keep their buffers of this type; for `Vec<f64>` they are allocated once, at the first step
/// (set-up), and reused: no step allocates.
pub trait Vector:
    Clone + Debug + PartialEq + Send + Sync + 'static + Index<usize, Output = f64> + IndexMut<usize>
{
    /// Storage of a symmetric matrix over these coordinates (a Hessian): `[[f64; N]; N]`, or a
    /// [`SparseMatrix`] in the pattern of an assembled system.
    type Matrix: Debug + Send + Sync;
    /// The two-phase solver of `(M + sH) x = b` for [`Vector::Matrix`] (pattern once, factor and
    /// solve each step).
    type Solver: ShiftedSolve<Self, Matrix = Self::Matrix> + Debug + Send + Sync;

    /// `len` zeros. For `[f64; N]`, `len` must be `N`.
    fn zeros(len: usize) -> Self;
    /// A vector holding `x`, or `None` if this type cannot hold `x.len()` entries.
    fn try_from_slice(x: &[f64]) -> Option<Self>;
    /// The zeros a vector of this type holds before its size is known: `[0.0; N]`, or an
    /// empty `Vec`.
    fn default_zeros() -> Self;
    /// True when every entry of `m` is finite.
    fn matrix_is_finite(m: &Self::Matrix) -> bool;
    /// `m` as a dense row-major `n × n` array (`n = out.len()`'s square root; normal modes).
    fn matrix_dense_into(m: &Self::Matrix, out: &mut [f64]);
    /// The entries.
    fn as_slice(&self) -> &[f64];
    /// The entries, mutably.
    fn as_mut_slice(&mut self) -> &mut [f64];
    /// Number of entries.
    #[inline]
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    /// True when there are no entries.
    #[inline]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Overwrite with `other` (same length), reusing the storage.
    #[inline]
    fn copy_from(&mut self, other: &Self) {
        self.as_mut_slice().copy_from_slice(other.as_slice());
    }
}

impl<const N: usize> Vector for [f64; N] {
    type Matrix = [[f64; N]; N];
    type Solver = DenseSolver<N>;

    #[inline]
    fn zeros(len: usize) -> Self {
        assert_eq!(len, N, "[f64; {N}]: cannot hold {len} coordinates");
        [0.0; N]
    }
    #[inline]
    fn try_from_slice(x: &[f64]) -> Option<Self> {
        <[f64; N]>::try_from(x).ok()
    }
    #[inline]
    fn default_zeros() -> Self {
        [0.0; N]
    }
    #[inline]
    fn matrix_is_finite(m: &[[f64; N]; N]) -> bool {
        m.iter().all(|row| row.iter().all(|v| v.is_finite()))
    }
    fn matrix_dense_into(m: &[[f64; N]; N], out: &mut [f64]) {
        out.copy_from_slice(m.as_flattened());
    }
    #[inline]
    fn as_slice(&self) -> &[f64] {
        self
    }
    #[inline]
    fn as_mut_slice(&mut self) -> &mut [f64] {
        self
    }
    #[inline]
    fn len(&self) -> usize {
        N
    }
    #[inline]
    fn copy_from(&mut self, other: &Self) {
        *self = *other;
    }
}

impl Vector for Vec<f64> {
    type Matrix = SparseMatrix;
    type Solver = SparseSolver;

    fn zeros(len: usize) -> Self {
        vec![0.0; len]
    }
    fn try_from_slice(x: &[f64]) -> Option<Self> {
        Some(x.to_vec())
    }
    fn default_zeros() -> Self {
        Vec::new()
    }
    fn matrix_is_finite(m: &SparseMatrix) -> bool {
        m.is_finite()
    }
    fn matrix_dense_into(m: &SparseMatrix, out: &mut [f64]) {
        m.dense_into(out);
    }
    #[inline]
    fn as_slice(&self) -> &[f64] {
        self
    }
    #[inline]
    fn as_mut_slice(&mut self) -> &mut [f64] {
        self
    }
}

/// True when every entry is finite. Branch-free: `Σ 0·x_i` is `±0` when every `x_i` is finite
/// and NaN otherwise (`0·∞` is NaN, and a NaN survives the sum), so the test is one comparison
/// however long `x` is (it vectorizes, and costs the hot path of a step almost nothing).
#[inline]
pub fn all_finite<V: Vector>(x: &V) -> bool {
    let x = x.as_slice();
    if x.len() < PARALLEL_FROM {
        slice_finite(x)
    } else {
        // A long vector is read from main memory, once per step by the driver: on the widest
        // lanes the test issues few enough instructions to keep more of its loads in flight.
        use rayon::prelude::*;
        x.par_chunks(VECTOR_CHUNK).all(|x| {
            crate::simd::widest(
                #[inline(always)]
                || slice_finite(x),
            )
        })
    }
}

pub use crate::linalg::slice_finite;

/// Entries per task of the long vector loops on rayon's current pool.
pub(crate) const VECTOR_CHUNK: usize = 8192;

/// Vectors shorter than this are handled on the calling thread (a task costs more).
pub(crate) const PARALLEL_FROM: usize = 4 * VECTOR_CHUNK;

/// `Σ part(r)` over `0..n` cut into ranges of [`VECTOR_CHUNK`]: halves split at a chunk
/// boundary fixed by `n` alone and summed as `left + right`, the halves on rayon's current pool
/// (`rayon::join`, no allocation) when long — one summation tree, so the same bits on any
/// number of threads. `part` sums its range in order (a trait object: rayon's machinery is
/// compiled once for every caller).
pub(crate) fn tree_sum(
    range: core::ops::Range<usize>,
    part: &(dyn Fn(core::ops::Range<usize>) -> f64 + Sync),
) -> f64 {
    let len = range.end - range.start;
    if len <= VECTOR_CHUNK {
        return part(range);
    }
    let mid = range.start + len.div_ceil(2 * VECTOR_CHUNK) * VECTOR_CHUNK;
    let (left, right) = if len < PARALLEL_FROM {
        (
            tree_sum(range.start..mid, part),
            tree_sum(mid..range.end, part),
        )
    } else {
        rayon::join(
            || tree_sum(range.start..mid, part),
            || tree_sum(mid..range.end, part),
        )
    };
    left + right
}

/// `dst ← src` (equal lengths), in chunks on rayon's current pool when long.
pub(crate) fn copy_long(dst: &mut [f64], src: &[f64]) {
    use rayon::prelude::*;
    if dst.len() < PARALLEL_FROM {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(VECTOR_CHUNK)
            .zip(src.par_chunks(VECTOR_CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// True when the slices hold the same bit patterns, in chunks on rayon's current pool when
/// long.
pub(crate) fn same_bits_slices(a: &[f64], b: &[f64]) -> bool {
    use rayon::prelude::*;
    // An OR of XORs: no early exit, so it vectorizes (keys are equal in the steady state).
    let differ = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .fold(0u64, |m, (x, y)| m | (x.to_bits() ^ y.to_bits()))
    };
    a.len() == b.len()
        && if a.len() < PARALLEL_FROM {
            differ(a, b) == 0
        } else {
            a.par_chunks(VECTOR_CHUNK)
                .zip(b.par_chunks(VECTOR_CHUNK))
                .all(|(a, b)| differ(a, b) == 0)
        }
}

/// A 64-bit fingerprint of the bit patterns of `x`, position by position: the key of a cache
/// that must not hold a copy of a long vector (a million bodies' positions are 24 MB).
///
/// It is `Σ_i mix(bits(x_i), i)` (wrapping), `mix` the SplitMix64 finalizer of the bits
/// offset by the position — a bijection of the bits for each position, so a vector that differs
/// from another in one entry always has another fingerprint, and two that differ in several
/// (entries changed or moved) have the same one with probability 2⁻⁶⁴. A sum: the same value
/// whatever the chunks it is summed in (rayon's pool when long).
pub(crate) fn fingerprint(x: &[f64]) -> u64 {
    use rayon::prelude::*;
    let part = |at: usize, x: &[f64]| -> u64 {
        crate::simd::widest(
            #[inline(always)]
            || {
                x.iter().enumerate().fold(0u64, |h, (i, v)| {
                    h.wrapping_add(fingerprint_term(at + i, *v))
                })
            },
        )
    };
    let sum = if x.len() < PARALLEL_FROM {
        part(0, x)
    } else {
        x.par_chunks(VECTOR_CHUNK)
            .enumerate()
            .map(|(c, x)| part(c * VECTOR_CHUNK, x))
            .reduce(|| 0, u64::wrapping_add)
    };
    fingerprint_of_sum(sum, x.len())
}

/// The term of entry `x` at position `i` in [`fingerprint`]'s sum (for a pass that computes
/// the fingerprint of a vector while it writes it: sum the terms with `wrapping_add`, in any
/// order, then [`fingerprint_of_sum`]).
#[inline(always)]
pub(crate) fn fingerprint_term(i: usize, x: f64) -> u64 {
    let mut z = x.to_bits() ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// [`fingerprint`] from the sum of its terms over a vector of `len` entries (the length enters
/// too: a prefix of zeros is not the empty vector).
#[inline]
pub(crate) fn fingerprint_of_sum(sum: u64, len: usize) -> u64 {
    sum ^ (len as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// True when `a` and `b` hold the same bit patterns (so `-0.0 ≠ 0.0`, and NaNs of equal bits
/// are equal): the key of the steppers' caches.
#[inline]
pub fn same_bits<V: Vector>(a: &V, b: &V) -> bool {
    same_bits_slices(a.as_slice(), b.as_slice())
}

/// `max_i |x_i|` (0 for an empty vector; a NaN entry is skipped by `f64::max`).
#[inline]
pub fn inf_norm<V: Vector>(x: &V) -> f64 {
    x.as_slice().iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// The largest square distance a point body (three consecutive coordinates) moved from `last`
/// to `q`, and whether one was NaN: [`body_moves2`] for bodies of three coordinates, eight
/// bodies at a time, each lane its own maximum, so that the compiler knows the stride and
/// vectorizes the loads (inlined into a [`crate::simd::widest`] caller).
#[inline(always)]
pub(crate) fn point_moves2(q: &[f64], last: &[f64]) -> (f64, bool) {
    let (blocks, rest) = (q.chunks_exact(24), last.chunks_exact(24));
    let tail = body_moves2(blocks.remainder(), rest.remainder(), 3);
    let (mut most, mut nan) = ([0.0_f64; 8], [false; 8]);
    for (a, b) in blocks.zip(rest) {
        for j in 0..8 {
            let r2 = body_move2(&a[3 * j..], &b[3 * j..]);
            nan[j] |= r2.is_nan();
            most[j] = most[j].max(r2);
        }
    }
    (0..8).fold(tail, |(m, n), j| (m.max(most[j]), n | nan[j]))
}

/// The square of the distance from `b`'s first three coordinates to `a`'s.
#[inline(always)]
fn body_move2(a: &[f64], b: &[f64]) -> f64 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// The largest [`body_move2`] over bodies of `stride` coordinates from `last` to `q`, and
/// whether one was NaN. No early exit and no branch: the loop vectorizes; a NaN is carried by
/// the flag.
#[inline(always)]
pub(crate) fn body_moves2(q: &[f64], last: &[f64], stride: usize) -> (f64, bool) {
    let (mut most, mut nan) = (0.0_f64, false);
    for (a, b) in q.chunks_exact(stride).zip(last.chunks_exact(stride)) {
        let r2 = body_move2(a, b);
        nan |= r2.is_nan();
        most = most.max(r2);
    }
    (most, nan)
}
