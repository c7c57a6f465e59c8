//! The gradient on one thread with the forms' chunks interleaved: one sweep through the
//! gradient instead of one per form.
//!
//! Form by form ([`super::gradient_form_by_form`]), each form's chunks add their partials into
//! the gradient while they are in cache, but each form sweeps the whole gradient in turn: a
//! million bodies' gradient is 24 MB, beyond the caches, so a melt of bonds and pairs reads and
//! writes it from memory once per form. Here the chunks of all forms run in one order in which
//! each stretch of bodies is finished by every form while it is in cache.
//!
//! The bits are those of form by form: a body's gradient is its partials added form after form
//! (table order), each form's in chunk order. So a chunk of form `k` runs only after every
//! chunk of an earlier form `j` that touches one of its bodies (the last such, `need(k, c, j)`,
//! found from each body's last chunk of `j`), and chunks of one form run in their order. The
//! order is made greedily — before chunk `c` of form `k`, the chunks of earlier forms it needs,
//! each after those it needs in turn — and kept until a form's chunks change (a neighbour-list
//! build: [`super::FormOps::chunk_stamp`]).

use super::FormList;

/// No chunk of a form touches the body (or a chunk needs none of a form).
const NONE: u32 = u32::MAX;

/// The order in which the chunks of the forms with terms run, kept between evaluations with
/// its scratch (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Interleave {
    /// Per form with terms: its index in the form list, its [`super::FormOps::chunk_stamp`],
    /// its number of chunks — of the forms the order was made for.
    made_for: Vec<(usize, u64, usize)>,
    /// Of the forms this evaluation found.
    now: Vec<(usize, u64, usize)>,
    /// (form with terms, chunk) in the order they run.
    order: Vec<(u32, u32)>,
    /// Per free body, the last chunk of one form that touches it.
    last: Vec<u32>,
    /// `need(k, c, j)` for `j < k`: at `first[k] + c·k + j`.
    need: Vec<u32>,
    first: Vec<usize>,
    done: Vec<u32>,
    /// Where the bodies each chunk of `order` touches first are among its bodies
    /// (`fresh[fresh_at[i] .. fresh_at[i + 1]]`, positions in [`super::FormOps::chunk_bodies`]):
    /// the chunk sets their gradient instead of adding to it — no sweep, and no store, of its
    /// own to zero them.
    fresh: Vec<u32>,
    fresh_at: Vec<u32>,
    /// The bodies no chunk touches (zeroed after the chunks).
    untouched: Vec<u32>,
}

impl Interleave {
    /// The forms' chunks made ready and, when every form with terms goes by chunks and there
    /// are two or more, the order made (or kept): the number of terms of the longest chunk.
    /// `None`: go form by form.
    pub fn ready<T, const D: usize>(
        &mut self,
        forms: &mut FormList<T, D>,
        input: &super::Inputs<'_, D>,
        free: usize,
    ) -> Option<usize> {
        self.now.clear();
        let mut widest = 0;
        for (i, f) in forms.iter_mut().enumerate() {
            if f.len() > 0 {
                let (chunks, terms) = f.gradient_chunks(input)?;
                self.now.push((i, f.chunk_stamp(), chunks));
                widest = widest.max(terms);
            }
        }
        if self.now.len() < 2 {
            return None;
        }
        if self.now != self.made_for {
            self.made_for.clone_from(&self.now);
            let now = core::mem::take(&mut self.now);
            self.make(&|k, c| forms[now[k].0].chunk_bodies(c), free);
            self.now = now;
        }
        Some(widest)
    }

    /// The chunks in their order: (form index in the list, chunk, the positions among its
    /// bodies of those it touches first).
    pub fn order(&self) -> impl Iterator<Item = (usize, usize, &[u32])> + '_ {
        self.order.iter().enumerate().map(|(i, &(k, c))| {
            let fresh = &self.fresh[self.fresh_at[i] as usize..self.fresh_at[i + 1] as usize];
            (self.made_for[k as usize].0, c as usize, fresh)
        })
    }

    /// The bodies no chunk touches.
    pub fn untouched(&self) -> &[u32] {
        &self.untouched
    }

    /// The order for the forms of `made_for`, chunk `c` of form `k` touching `bodies(k, c)`.
    fn make<'b>(&mut self, bodies: &dyn Fn(usize, usize) -> &'b [u32], free: usize) {
        let counts: &[(usize, u64, usize)] = &self.made_for;
        let m = counts.len();
        let chunks = |k: usize| counts[k].2;
        self.first.clear();
        let mut at = 0;
        for k in 0..m {
            self.first.push(at);
            at += chunks(k) * k;
        }
        crate::assembly::plan::resize_with_room(&mut self.need, at, NONE);
        self.need[..at].fill(NONE);
        crate::assembly::plan::resize_with_room(&mut self.last, free, NONE);
        for j in 0..m - 1 {
            self.last[..free].fill(NONE);
            for c in 0..chunks(j) {
                for &b in bodies(j, c) {
                    self.last[b as usize] = c as u32;
                }
            }
            for k in j + 1..m {
                for c in 0..chunks(k) {
                    let need = bodies(k, c)
                        .iter()
                        .map(|&b| self.last[b as usize])
                        .filter(|&l| l != NONE)
                        .max()
                        .unwrap_or(NONE);
                    self.need[self.first[k] + c * k + j] = need;
                }
            }
        }
        self.done.clear();
        self.done.resize(m, 0);
        self.order.clear();
        let total: usize = (0..m).map(chunks).sum();
        if self.order.capacity() < total {
            self.order.reserve_exact(total + total / 8);
        }
        let mut plan = Greedy {
            need: &self.need,
            first: &self.first,
            done: &mut self.done,
            order: &mut self.order,
        };
        plan.advance(m - 1, chunks(m - 1));
        for k in 0..m - 1 {
            plan.advance(k, chunks(k));
        }
        // Each body to the first chunk that touches it.
        self.last[..free].fill(NONE);
        self.fresh.clear();
        if self.fresh.capacity() < free {
            self.fresh.reserve_exact(free);
        }
        self.fresh_at.clear();
        self.fresh_at.reserve_exact(total + total / 8 + 1);
        for &(k, c) in &self.order {
            self.fresh_at.push(self.fresh.len() as u32);
            for (p, &b) in (0u32..).zip(bodies(k as usize, c as usize)) {
                if self.last[b as usize] == NONE {
                    self.last[b as usize] = 0;
                    self.fresh.push(p);
                }
            }
        }
        self.fresh_at.push(self.fresh.len() as u32);
        self.untouched.clear();
        let never = (0..free as u32).filter(|&b| self.last[b as usize] == NONE);
        self.untouched.extend(never);
    }
}

/// The greedy order being made.
struct Greedy<'a> {
    need: &'a [u32],
    first: &'a [usize],
    done: &'a mut [u32],
    order: &'a mut Vec<(u32, u32)>,
}

impl Greedy<'_> {
    /// Form `k`'s chunks up to (not including) `upto` into the order, each after the earlier
    /// forms' chunks it needs.
    fn advance(&mut self, k: usize, upto: usize) {
        while (self.done[k] as usize) < upto {
            let c = self.done[k] as usize;
            for j in 0..k {
                let need = self.need[self.first[k] + c * k + j];
                if need != NONE {
                    self.advance(j, need as usize + 1);
                }
            }
            self.order.push((k as u32, c as u32));
            self.done[k] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order runs every chunk once, each form's in its order, and per body every earlier
    /// form's chunks before any later form's: the additions of form by form, in their order;
    /// each body is set by the first chunk that touches it and added into by the others.
    #[test]
    fn the_order_keeps_each_body_form_after_form_and_chunk_after_chunk() {
        let free = 500;
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as usize
        };
        // Three forms of chunks over a sweep of the bodies, the first form's first chunk also
        // touching a body far off (a periodic box's wrap-around).
        let forms: Vec<Vec<Vec<u32>>> = [40, 13, 7]
            .iter()
            .enumerate()
            .map(|(k, &chunks)| {
                (0..chunks)
                    .map(|c| {
                        let from = c * free / chunks;
                        let mut b: Vec<u32> = (0..30)
                            .map(|_| (from + next(2 * free / chunks + 20)).min(free - 1) as u32)
                            .collect();
                        if k == 0 && c == 0 {
                            b.push(next(free) as u32);
                        }
                        b.sort_unstable();
                        b.dedup();
                        b
                    })
                    .collect()
            })
            .collect();
        let mut il = Interleave {
            made_for: forms
                .iter()
                .enumerate()
                .map(|(k, f)| (k, 0, f.len()))
                .collect(),
            ..Interleave::default()
        };
        il.make(&|k, c| &forms[k][c][..], free);
        let mut seen: Vec<Vec<(usize, usize)>> = vec![Vec::new(); free];
        let mut next_chunk = [0; 3];
        let mut set = vec![false; free];
        for (k, c, fresh) in il.order() {
            assert_eq!(c, next_chunk[k], "form {k}'s chunks in order");
            next_chunk[k] += 1;
            assert!(fresh.is_sorted(), "positions ascending");
            for (p, &b) in (0u32..).zip(&forms[k][c]) {
                // A body's first chunk sets it; every later one adds into it.
                let first = fresh.contains(&p);
                assert_eq!(first, !set[b as usize], "body {b} in form {k}'s chunk {c}");
                set[b as usize] = true;
                seen[b as usize].push((k, c));
            }
        }
        assert_eq!(next_chunk, [40, 13, 7], "every chunk once");
        for (b, s) in seen.iter().enumerate() {
            assert!(s.is_sorted(), "body {b}: {s:?}");
            assert_eq!(
                s.is_empty(),
                il.untouched().contains(&(b as u32)),
                "body {b}"
            );
        }
        assert!(
            !il.untouched().is_empty(),
            "some bodies untouched, for the test's sake"
        );
        // The order interleaves: form 2's first chunk runs before form 0's last.
        let at = |k: usize, c: usize| il.order().position(|(f, d, _)| (f, d) == (k, c)).unwrap();
        assert!(at(2, 0) < at(0, 39));
    }
}
