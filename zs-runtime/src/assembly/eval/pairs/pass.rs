//! The energy and gradient of a pair form by rows ([`Rows`]): one pass for both layouts, as
//! LAMMPS's `npair_bin.cpp` folds its list variants into one template. A row holds its body's
//! position, type and gradient across its partners: the body's coordinates are broadcast once,
//! its gradient summed in registers. With Newton's third law (the half list) each entry is the
//! pair `(i, j)` and the partner's gradient goes out into its partial; without (full rows) an
//! entry below the row's body is the pair `(j, i)`, the row takes that pair's second gradient,
//! counts only the pairs above it, and scatters nothing.
//!
//! Every entry of a block is evaluated and those beyond the cutoff (or in the padding) are
//! masked to zero; a block with no lane within the cutoff is skipped whole — adding `+0`
//! changes no bit, no sum here being `−0` (every sum starts at `+0`). So the bits do not depend
//! on the lanes, and the fixed chunks and per-body sums of [`super::super::sums`] make
//! them independent of the threads.

use super::super::Inputs;
use super::super::sums::{
    Spans, add_partials, add_partials_by_body, block_positions, chunk_by_chunk, over_chunks,
    virtual_sum,
};
use super::rows::{BLOCK, Group, MIXED, Rows};
use crate::assembly::cell::{Image, r2};
use crate::assembly::forms::Form;
use crate::assembly::terms::{Kernel, Kinds};
use crate::simd::{self, Loads, WithLanes};

impl Rows {
    /// The energy of every pair within the cutoff (per chunk, into [`Rows::sums`]) and the
    /// outputs [`Rows::add_gradient`] sums (each chunk's, [`Rows::out`]), at `input`; without
    /// `gradient` only the energy is wanted, and on one thread the outputs go into one chunk's
    /// room, reused. With `into` (the half list's gradient on one thread): each chunk's partials
    /// are added into that gradient right after the chunk, while they are in cache (one
    /// chunk's buffer, reused) — the additions [`Rows::add_gradient`] would make, in the same
    /// order, so the same bits.
    pub fn evaluate<T, F, const D: usize, const K: usize>(
        &mut self,
        terms: &T,
        input: &Inputs<'_, D>,
        cut2: f64,
        gradient: bool,
        into: Option<&mut [f64]>,
    ) where
        T: Kernel<D, K, F>,
        F: Form,
    {
        assert!(D == 3 && K == 2, "rows of pairs of point bodies");
        let Rows {
            newton,
            body,
            slot,
            group_at,
            groups,
            partner,
            partner_slot,
            chunk_rows,
            chunk_out,
            out,
            sums,
            scratch,
            ..
        } = self;
        let rows = View {
            body,
            slot,
            group_at,
            groups,
            partner,
            partner_slot,
        };
        let newton = *newton;
        let chunk = |c: usize, out: Option<&mut [f64]>, _: &mut [f64]| -> f64 {
            simd::dispatch_with(
                input.isa,
                RowPass::<T, F, D, K> {
                    terms,
                    input,
                    rows: &rows,
                    range: chunk_rows[c] as usize..chunk_rows[c + 1] as usize,
                    out,
                    cut2,
                    newton,
                    form: core::marker::PhantomData,
                },
            )
        };
        // The energy alone goes through the gradient's pass, its outputs dropped: the energy is
        // the same, and the pass is compiled once per layout and instruction set instead of
        // twice (passes for the energy alone are rare: an observer's first value, an
        // exchange's).
        let spans = Spans {
            buf: out,
            at: chunk_out,
            stride: 3,
        };
        match into {
            Some(grad) => {
                assert!(
                    gradient && newton && !input.parallel,
                    "the half list on one thread"
                );
                chunk_by_chunk(spans, (0, 0), sums, &chunk, &mut |c, part| {
                    let bodies =
                        &scratch.slot_body[chunk_out[c] as usize..chunk_out[c + 1] as usize];
                    add_partials::<3>(bodies, part, grad);
                });
            }
            // On one thread, the energy's outputs in one chunk's room, reused.
            None if !gradient && !input.parallel => {
                chunk_by_chunk(spans, (0, 0), sums, &chunk, &mut |_, _| {});
            }
            None => over_chunks(input.parallel, Some(spans), (0, 0), sums, &chunk),
        }
    }

    /// Phase B of the last gradient pass, free bodies `first_body ..` of `out` (three values
    /// each): the half list's partials of each body added into it in chunk order, or the full
    /// rows' gradients; from zero when `first`.
    pub fn add_gradient(&self, first_body: usize, out: &mut [f64], first: bool) {
        if self.newton {
            add_partials_by_body::<3>(
                first_body,
                (&self.body_at, &self.of_body),
                &self.out,
                out,
                first,
            );
            return;
        }
        let from = &self.out[first_body * 3..first_body * 3 + out.len()];
        if first {
            out.copy_from_slice(from);
        } else {
            for (o, g) in out.iter_mut().zip(from) {
                *o += g;
            }
        }
    }
}

/// The rows a pass reads.
struct View<'a> {
    body: &'a [u32],
    slot: &'a [u32],
    group_at: &'a [u32],
    groups: &'a [Group],
    partner: &'a [[u32; 1]],
    partner_slot: &'a [u32],
}

/// One chunk of rows: its outputs into `out` (when given), its energy returned.
struct RowPass<'a, T, F, const D: usize, const K: usize> {
    terms: &'a T,
    input: &'a Inputs<'a, D>,
    rows: &'a View<'a>,
    range: core::ops::Range<usize>,
    out: Option<&'a mut [f64]>,
    cut2: f64,
    newton: bool,
    form: core::marker::PhantomData<fn() -> F>,
}

impl<T, F, const D: usize, const K: usize> WithLanes for RowPass<'_, T, F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    type Output = f64;

    /// [`RowPass::pass`] made for each layout: the choice out of the loops (the compiler does
    /// not take it out itself). The box is no choice: without one the pass applies
    /// [`Image::none`], whose shifts are `±0`, so one copy serves both.
    #[inline(always)]
    fn run<L: Loads>(self) -> f64 {
        if self.newton {
            self.pass::<L, true>()
        } else {
            self.pass::<L, false>()
        }
    }
}

impl<T, F, const D: usize, const K: usize> RowPass<'_, T, F, D, K>
where
    T: Kernel<D, K, F>,
    F: Form,
{
    /// The chunk's rows, their energy and outputs: with `NEWTON`, a half list's; the nearest
    /// images when `input.cell` is given.
    #[inline(always)]
    fn pass<L: Loads, const NEWTON: bool>(self) -> f64 {
        let RowPass {
            terms,
            input,
            rows,
            range,
            out,
            cut2,
            ..
        } = self;
        let (w, q) = (L::WIDTH, input.q);
        let parts = BLOCK / w;
        let zero = L::splat(0.0);
        let cut2 = L::splat(cut2);
        let image = input.cell.as_ref().map_or(Image::<L>::none(), Image::new);
        let iota = block_positions::<L>();
        let out = out.expect("a pass's outputs");
        out.fill(0.0);
        let out: &mut [[f64; 3]] = out.as_chunks_mut::<3>().0;
        let typed = !input.kinds.is_empty();
        let mut soa = [[0.0; 8]; 3];
        let mut lane_kinds = [[0u32; K]; BLOCK];
        let mut energy = 0.0;
        for r in range {
            let i = rows.body[r] as usize;
            let xi: [L; 3] = core::array::from_fn(|d| L::splat(q[i * 3 + d]));
            let ki = input.kinds.get(i).copied().unwrap_or(0);
            let mut acc_g = [[zero; 3]; BLOCK];
            let mut acc_e = [zero; BLOCK];
            let groups = &rows.groups[rows.group_at[r] as usize..rows.group_at[r + 1] as usize];
            for g in groups {
                // A group of one type: one row of types for every lane, each parameter read
                // once.
                let mut one = [[ki; K]];
                one[0][K - 1] = g.kind;
                let (len, below) = (L::splat(g.len as f64), L::splat(g.below as f64));
                for b in 0..(g.len as usize).div_ceil(BLOCK) {
                    let offset = L::splat((b * BLOCK) as f64);
                    for v in 0..parts {
                        let at = g.start as usize + b * BLOCK + v * w;
                        let js = &rows.partner[at..at + w];
                        let pos = iota[v] + offset;
                        let xj = L::gather_bodies::<3, 1>(q, js, 0);
                        let mut x = [[zero; D]; K];
                        // Without Newton, a partner below `i` is the pair's first body.
                        let is_below = if NEWTON { zero } else { pos.lt(below) };
                        for d in 0..3 {
                            (x[0][d], x[K - 1][d]) = if NEWTON {
                                (xi[d], xj[d])
                            } else {
                                (
                                    L::select(is_below, xj[d], xi[d]),
                                    L::select(is_below, xi[d], xj[d]),
                                )
                            };
                        }
                        image.apply(&mut x);
                        let r2 = r2(&x);
                        if r2.lt_mask(cut2) == 0 {
                            // Every lane beyond the cutoff: nothing to add.
                            continue;
                        }
                        let keep = r2.lt(cut2) * pos.lt(len);
                        let kinds: &[Kinds<K>] = if !typed {
                            &[]
                        } else if g.kind != MIXED {
                            &one
                        } else {
                            let first = b * BLOCK + v * w;
                            for (l, (k, j)) in lane_kinds.iter_mut().zip(js).enumerate() {
                                *k = [ki; K];
                                let end = if first + l < g.below as usize {
                                    0
                                } else {
                                    K - 1
                                };
                                k[end] = input.kinds[j[0] as usize];
                            }
                            // One row for all lanes when they share their types.
                            if lane_kinds[1..w].iter().all(|k| *k == lane_kinds[0]) {
                                &lane_kinds[..1]
                            } else {
                                &lane_kinds[..w]
                            }
                        };
                        let (e, gr) = terms.value_gradient_lanes(input.omega, &x, kinds);
                        for d in 0..3 {
                            let own = if NEWTON {
                                gr[0][d]
                            } else {
                                L::select(is_below, gr[K - 1][d], gr[0][d])
                            };
                            acc_g[v][d] = acc_g[v][d] + L::select(keep, own, zero);
                            if NEWTON {
                                L::select(keep, gr[K - 1][d], zero).store(&mut soa[d]);
                            }
                        }
                        if NEWTON {
                            let slots = &rows.partner_slot[at..at + w];
                            for (l, &s) in slots.iter().enumerate() {
                                let dst = &mut out[s as usize];
                                for d in 0..3 {
                                    dst[d] += soa[d][l];
                                }
                            }
                        }
                        let counted = if NEWTON { keep } else { keep * below.le(pos) };
                        acc_e[v] = acc_e[v] + L::select(counted, e, zero);
                    }
                }
            }
            let dst = &mut out[rows.slot[r] as usize];
            for (d, gd) in dst.iter_mut().enumerate() {
                *gd += virtual_sum(|v| acc_g[v][d]);
            }
            energy += virtual_sum(|v| acc_e[v]);
        }
        energy
    }
}
