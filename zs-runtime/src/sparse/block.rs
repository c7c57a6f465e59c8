//! The block-diagonal backend: `M + sH` with one `d × d` block per body, solved body by body by
//! the dense unrolled solve of [`crate::linalg::dense`] (Cholesky, falling back to pivoted LU),
//! monomorphized for each block size up to [`MAX_BLOCK`]. O(B) for `B` bodies, no allocation;
//! on rayon's pool from a few hundred bodies.

use super::{BlockLayout, SparseMatrix};
use crate::linalg::{Factorization, SolveFailure, SolveOptions, solve_shifted};

/// The largest block (coordinates per body) the block-diagonal backend handles: rigid water
/// has 9, a rigid body in `R^{3×3}` 9, point masses 2 or 3.
pub const MAX_BLOCK: usize = 12;

#[derive(Debug)]
pub(super) struct BlockDiagonal {
    block: usize,
    /// Index of each body's diagonal block.
    diagonal: Vec<u32>,
}

impl BlockDiagonal {
    pub(super) fn new(layout: &BlockLayout) -> Self {
        assert!(layout.is_block_diagonal() && layout.block() <= MAX_BLOCK);
        Self {
            block: layout.block(),
            diagonal: (0..layout.bodies())
                .map(|i| layout.diagonal(i) as u32)
                .collect(),
        }
    }

    pub(super) fn solve(
        &self,
        masses: &[f64],
        scale: f64,
        h: &SparseMatrix,
        x: &mut [f64],
        options: &SolveOptions,
    ) -> Result<Factorization, SolveFailure> {
        macro_rules! dispatch {
            ($($d:literal)*) => {
                match self.block {
                    $($d => solve_blocks::<$d>(&self.diagonal, masses, scale, h.values(), x, options),)*
                    d => unreachable!("block size {d} > MAX_BLOCK"),
                }
            };
        }
        dispatch!(1 2 3 4 5 6 7 8 9 10 11 12)
    }
}

/// Bodies per parallel task of [`solve_blocks`]; fewer bodies than two tasks are solved on the
/// calling thread.
const BLOCKS_PER_TASK: usize = 128;

/// Every block's solve; the result is [`Factorization::Cholesky`] when every block was, else
/// [`Factorization::Lu`]. A failing block's error is returned as the dense solve reports it
/// (its `n` is the block size): the first in body order. Many blocks are solved on rayon's
/// pool, in tasks of [`BLOCKS_PER_TASK`] bodies (each block's solve is independent: the same
/// bits on any number of threads, nothing allocated).
fn solve_blocks<const D: usize>(
    diagonal: &[u32],
    masses: &[f64],
    scale: f64,
    values: &[f64],
    x: &mut [f64],
    options: &SolveOptions,
) -> Result<Factorization, SolveFailure> {
    use rayon::prelude::*;
    let task = |(c, (dc, xc)): (usize, (&[u32], &mut [f64]))| {
        let first = c * BLOCKS_PER_TASK;
        let mut how = Factorization::Cholesky;
        for (i, &k) in dc.iter().enumerate() {
            let b = first + i;
            let blk = &values[k as usize * D * D..][..D * D];
            let h: [[f64; D]; D] =
                core::array::from_fn(|i| core::array::from_fn(|j| blk[i * D + j]));
            let m: [f64; D] = core::array::from_fn(|i| masses[b * D + i]);
            let xb = &mut xc[i * D..(i + 1) * D];
            let mut sol: [f64; D] = core::array::from_fn(|i| xb[i]);
            let f = solve_shifted(&m, scale, &h, &mut sol, options)?;
            xb.copy_from_slice(&sol);
            if !f.is_cholesky() {
                how = Factorization::Lu;
            }
        }
        Ok(how)
    };
    // The first error in body order wins; else LU if any block needed it.
    let combine = |a: Result<Factorization, SolveFailure>,
                   b: Result<Factorization, SolveFailure>| {
        match (a, b) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(a), Ok(b)) if a.is_cholesky() && b.is_cholesky() => Ok(Factorization::Cholesky),
            _ => Ok(Factorization::Lu),
        }
    };
    let chunks = diagonal
        .chunks(BLOCKS_PER_TASK)
        .zip(x.chunks_mut(BLOCKS_PER_TASK * D));
    if diagonal.len() < 2 * BLOCKS_PER_TASK {
        return chunks
            .enumerate()
            .map(task)
            .fold(Ok(Factorization::Cholesky), combine);
    }
    diagonal
        .par_chunks(BLOCKS_PER_TASK)
        .zip(x.par_chunks_mut(BLOCKS_PER_TASK * D))
        .enumerate()
        .map(task)
        .reduce(|| Ok(Factorization::Cholesky), combine)
}
