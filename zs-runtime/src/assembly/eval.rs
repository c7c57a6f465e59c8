//! The evaluation engine of an assembled system: gather each term's bodies, evaluate its
//! kernel, keep its local outputs (phase A); then sum, for each free body (gradient, third
//! contraction) or each stored Hessian block, its contributions in the fixed order of the plan
//! (phase B). Both phases run over fixed chunks, on rayon's current pool when the system is
//! parallel: a term's output and an entry's sum do not depend on the chunking or on the thread
//! count, so the results are bit-identical on 1 thread or many. Nothing is allocated: the term
//! buffers are made at set-up.

use rayon::prelude::*;

use super::plan::{HessianGather, Plan, TermList, NOWHERE, PINNED};
use super::terms::{Local, LocalHessian, LocalThird, Terms, ThirdForm};
use crate::sparse::SparseMatrix;

/// Terms (phase A) or targets (phase B) per parallel chunk.
pub(crate) const CHUNK: usize = 512;

/// The term outputs, allocated at set-up (the Hessian ones when a matrix is first made).
#[derive(Debug)]
pub(crate) struct Scratch<const D: usize> {
    pub site_g: Vec<Local<D, 1>>,
    pub bond_g: Vec<Local<D, 2>>,
    pub pair_g: Vec<Local<D, 2>>,
    pub site_h: Vec<LocalHessian<D, 1>>,
    pub bond_h: Vec<LocalHessian<D, 2>>,
    pub pair_h: Vec<LocalHessian<D, 2>>,
    pub site_e: Vec<f64>,
    pub bond_e: Vec<f64>,
    pub pair_e: Vec<f64>,
    /// The third-derivative tensors of the [`ThirdForm::Tensor`] forms, kept by
    /// [`Want::GradientHessianThird`] at `kept_q` and `kept_omega` (when `kept`).
    pub site_t: Vec<LocalThird<D, 1>>,
    pub bond_t: Vec<LocalThird<D, 2>>,
    pub pair_t: Vec<LocalThird<D, 2>>,
    pub kept_q: Vec<f64>,
    pub kept_omega: f64,
    pub kept: bool,
}

impl<const D: usize> Scratch<D> {
    pub fn new(plan: &Plan) -> Self {
        Self {
            site_g: vec![[[0.0; D]; 1]; plan.sites.len()],
            bond_g: vec![[[0.0; D]; 2]; plan.bonds.len()],
            pair_g: vec![[[0.0; D]; 2]; plan.pairs.len()],
            site_h: Vec::new(),
            bond_h: Vec::new(),
            pair_h: Vec::new(),
            site_e: vec![0.0; plan.sites.len()],
            bond_e: vec![0.0; plan.bonds.len()],
            pair_e: vec![0.0; plan.pairs.len()],
            site_t: Vec::new(),
            bond_t: Vec::new(),
            pair_t: Vec::new(),
            kept_q: Vec::new(),
            kept_omega: 0.0,
            kept: false,
        }
    }

    /// True when the tensors were kept at exactly `q` and `omega` (bit for bit).
    pub fn tensors_kept_at(&self, q: &[f64], omega: f64) -> bool {
        self.kept
            && self.kept_omega.to_bits() == omega.to_bits()
            && self.kept_q.len() == q.len()
            && self
                .kept_q
                .iter()
                .zip(q)
                .fold(0u64, |m, (a, b)| m | (a.to_bits() ^ b.to_bits()))
                == 0
    }

    /// Make room for the local Hessians (set-up, when a matrix is made).
    pub fn reserve_hessians(&mut self, plan: &Plan) {
        self.site_h
            .resize(plan.sites.len(), [[[[0.0; D]; D]; 1]; 1]);
        self.bond_h
            .resize(plan.bonds.len(), [[[[0.0; D]; D]; 2]; 2]);
        self.pair_h
            .resize(plan.pairs.len(), [[[[0.0; D]; D]; 2]; 2]);
        let f = plan.forms;
        let tensor = |t: ThirdForm, n: usize| if t == ThirdForm::Tensor { n } else { 0 };
        self.site_t.resize(
            tensor(f.site_third, plan.sites.len()),
            [[[[[[0.0; D]; 1]; D]; 1]; D]; 1],
        );
        self.bond_t.resize(
            tensor(f.bond_third, plan.bonds.len()),
            [[[[[[0.0; D]; 2]; D]; 2]; D]; 2],
        );
        self.pair_t.resize(
            tensor(f.pair_third, plan.pairs.len()),
            [[[[[[0.0; D]; 2]; D]; 2]; D]; 2],
        );
        self.kept_q.resize(plan.free * D, 0.0);
        self.kept = false;
    }
}

/// Which quantity phase A computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    Energy,
    Gradient,
    GradientHessian,
    /// The gradient and Hessian, and the third-derivative tensors of the
    /// [`ThirdForm::Tensor`] forms (for a Z&S step's third contraction at the same point).
    GradientHessianThird,
    /// The gradient, and the stiff Hessian of the terms that have a stiff part.
    GradientStiffHessian,
    Third,
}

/// What phase A reads: the positions, the direction (third contraction), the pinned positions.
pub(crate) struct Inputs<'a, const D: usize> {
    pub q: &'a [f64],
    pub a: &'a [f64],
    pub pins: &'a [[f64; D]],
    pub omega: f64,
    pub parallel: bool,
}

impl<const D: usize> Inputs<'_, D> {
    /// The term's bodies' positions.
    #[inline]
    fn x<const K: usize>(&self, free: &[u32; K], bodies: &[u32; K]) -> Local<D, K> {
        core::array::from_fn(|k| {
            let f = free[k];
            if f == PINNED {
                self.pins[bodies[k] as usize]
            } else {
                let o = f as usize * D;
                core::array::from_fn(|d| self.q[o + d])
            }
        })
    }

    /// The direction on the term's bodies (zero on pinned ones: they do not move).
    #[inline]
    fn dir<const K: usize>(&self, free: &[u32; K]) -> Local<D, K> {
        core::array::from_fn(|k| {
            let f = free[k];
            if f == PINNED {
                [0.0; D]
            } else {
                let o = f as usize * D;
                core::array::from_fn(|d| self.a[o + d])
            }
        })
    }
}

/// `out[t] = f(free[t], bodies[t])` for every term, in parallel chunks when asked.
#[inline]
fn map_terms<O: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    f: impl Fn(&[u32; K], &[u32; K]) -> O + Sync,
) {
    debug_assert_eq!(out.len(), list.len());
    if parallel && list.len() > CHUNK {
        out.par_chunks_mut(CHUNK)
            .zip(list.free.par_chunks(CHUNK))
            .zip(list.bodies.par_chunks(CHUNK))
            .for_each(|((o, fr), bo)| {
                for ((o, fr), bo) in o.iter_mut().zip(fr).zip(bo) {
                    *o = f(fr, bo);
                }
            });
    } else {
        for ((o, fr), bo) in out.iter_mut().zip(&list.free).zip(&list.bodies) {
            *o = f(fr, bo);
        }
    }
}

/// Phase A: every term's local outputs for `want` into `s`.
pub(crate) fn evaluate_terms<T: Terms<D>, const D: usize>(
    terms: &T,
    plan: &Plan,
    input: &Inputs<'_, D>,
    want: Want,
    s: &mut Scratch<D>,
) {
    let forms = plan.forms;
    let (w, par) = (input.omega, input.parallel);
    let bond_stiff = forms.bond_is_stiff();
    match want {
        Want::Energy => {
            map_terms(par, &plan.sites, &mut s.site_e, |fr, bo| {
                terms.site_energy(w, &input.x(fr, bo))
            });
            map_terms(par, &plan.bonds, &mut s.bond_e, |fr, bo| {
                terms.bond_energy(w, &input.x(fr, bo))
            });
            map_terms(par, &plan.pairs, &mut s.pair_e, |fr, bo| {
                terms.pair_energy(&input.x(fr, bo))
            });
        }
        Want::Gradient => {
            map_terms(par, &plan.sites, &mut s.site_g, |fr, bo| {
                terms.site_gradient(w, &input.x(fr, bo))
            });
            map_terms(par, &plan.bonds, &mut s.bond_g, |fr, bo| {
                terms.bond_gradient(w, &input.x(fr, bo))
            });
            map_terms(par, &plan.pairs, &mut s.pair_g, |fr, bo| {
                terms.pair_gradient(&input.x(fr, bo))
            });
        }
        Want::GradientHessian | Want::GradientStiffHessian => {
            let stiff = want == Want::GradientStiffHessian;
            let Scratch {
                site_g,
                bond_g,
                pair_g,
                site_h,
                bond_h,
                pair_h,
                ..
            } = s;
            map_pairs(par, &plan.sites, site_g, site_h, |fr, bo| {
                let x = input.x(fr, bo);
                if stiff {
                    terms.site_gradient_stiff_hessian(w, &x)
                } else {
                    terms.site_gradient_hessian(w, &x)
                }
            });
            if stiff && !bond_stiff {
                map_terms(par, &plan.bonds, bond_g, |fr, bo| {
                    terms.bond_gradient(w, &input.x(fr, bo))
                });
            } else {
                map_pairs(par, &plan.bonds, bond_g, bond_h, |fr, bo| {
                    let x = input.x(fr, bo);
                    if stiff {
                        terms.bond_gradient_stiff_hessian(w, &x)
                    } else {
                        terms.bond_gradient_hessian(w, &x)
                    }
                });
            }
            if stiff {
                map_terms(par, &plan.pairs, pair_g, |fr, bo| {
                    terms.pair_gradient(&input.x(fr, bo))
                });
            } else {
                map_pairs(par, &plan.pairs, pair_g, pair_h, |fr, bo| {
                    terms.pair_gradient_hessian(&input.x(fr, bo))
                });
            }
        }
        Want::GradientHessianThird => {
            let Scratch {
                site_g,
                bond_g,
                pair_g,
                site_h,
                bond_h,
                pair_h,
                site_t,
                bond_t,
                pair_t,
                ..
            } = s;
            if forms.site_third == ThirdForm::Tensor {
                map_triples(par, &plan.sites, site_g, site_h, site_t, |fr, bo| {
                    terms.site_gradient_hessian_third(w, &input.x(fr, bo))
                });
            } else {
                map_pairs(par, &plan.sites, site_g, site_h, |fr, bo| {
                    terms.site_gradient_hessian(w, &input.x(fr, bo))
                });
            }
            if forms.bond_third == ThirdForm::Tensor {
                map_triples(par, &plan.bonds, bond_g, bond_h, bond_t, |fr, bo| {
                    terms.bond_gradient_hessian_third(w, &input.x(fr, bo))
                });
            } else {
                map_pairs(par, &plan.bonds, bond_g, bond_h, |fr, bo| {
                    terms.bond_gradient_hessian(w, &input.x(fr, bo))
                });
            }
            if forms.pair_third == ThirdForm::Tensor {
                map_triples(par, &plan.pairs, pair_g, pair_h, pair_t, |fr, bo| {
                    terms.pair_gradient_hessian_third(&input.x(fr, bo))
                });
            } else {
                map_pairs(par, &plan.pairs, pair_g, pair_h, |fr, bo| {
                    terms.pair_gradient_hessian(&input.x(fr, bo))
                });
            }
            s.kept_q.copy_from_slice(input.q);
            s.kept_omega = w;
            s.kept = true;
        }
        Want::Third => {
            let kept = s.tensors_kept_at(input.q, w);
            let Scratch {
                site_g,
                bond_g,
                pair_g,
                site_t,
                bond_t,
                pair_t,
                ..
            } = s;
            match forms.site_third {
                ThirdForm::Zero => {}
                ThirdForm::Tensor if kept => {
                    map_kept(par, &plan.sites, site_g, site_t, |fr, t| {
                        contract(t, &input.dir(fr))
                    });
                }
                _ => map_terms(par, &plan.sites, site_g, |fr, bo| {
                    terms.site_third_contraction(w, &input.x(fr, bo), &input.dir(fr))
                }),
            }
            match forms.bond_third {
                ThirdForm::Zero => {}
                ThirdForm::Tensor if kept => {
                    map_kept(par, &plan.bonds, bond_g, bond_t, |fr, t| {
                        contract(t, &input.dir(fr))
                    });
                }
                _ => map_terms(par, &plan.bonds, bond_g, |fr, bo| {
                    terms.bond_third_contraction(w, &input.x(fr, bo), &input.dir(fr))
                }),
            }
            match forms.pair_third {
                ThirdForm::Zero => {}
                ThirdForm::Tensor if kept => {
                    map_kept(par, &plan.pairs, pair_g, pair_t, |fr, t| {
                        contract(t, &input.dir(fr))
                    });
                }
                _ => map_terms(par, &plan.pairs, pair_g, |fr, bo| {
                    terms.pair_third_contraction(&input.x(fr, bo), &input.dir(fr))
                }),
            }
        }
    }
}

/// `T(x; a)_ai = Σ_bj,ck t[a][i][b][j][c][k] a_bj a_ck` from a kept tensor.
#[inline]
fn contract<const D: usize, const K: usize>(t: &LocalThird<D, K>, a: &Local<D, K>) -> Local<D, K> {
    core::array::from_fn(|ka| {
        core::array::from_fn(|i| {
            let mut s = 0.0;
            for (kb, ab) in a.iter().enumerate() {
                for (j, &abj) in ab.iter().enumerate() {
                    let row = &t[ka][i][kb][j];
                    let mut r = 0.0;
                    for (kc, ac) in a.iter().enumerate() {
                        for (k, &ack) in ac.iter().enumerate() {
                            r += row[kc][k] * ack;
                        }
                    }
                    s += r * abj;
                }
            }
            s
        })
    })
}

/// `out[t] = f(free[t], kept[t])` for every term (the third contraction from kept tensors).
#[inline]
fn map_kept<O: Send, X: Sync, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    out: &mut [O],
    kept: &[X],
    f: impl Fn(&[u32; K], &X) -> O + Sync,
) {
    debug_assert!(out.len() == list.len() && kept.len() == list.len());
    if parallel && list.len() > CHUNK {
        out.par_chunks_mut(CHUNK)
            .zip(list.free.par_chunks(CHUNK))
            .zip(kept.par_chunks(CHUNK))
            .for_each(|((o, fr), x)| {
                for ((o, fr), x) in o.iter_mut().zip(fr).zip(x) {
                    *o = f(fr, x);
                }
            });
    } else {
        for ((o, fr), x) in out.iter_mut().zip(&list.free).zip(kept) {
            *o = f(fr, x);
        }
    }
}

/// [`map_terms`] for kernels returning three outputs (gradient, Hessian, third tensor).
#[inline]
fn map_triples<A: Send, B: Send, C: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    a: &mut [A],
    b: &mut [B],
    c: &mut [C],
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B, C) + Sync,
) {
    debug_assert!(a.len() == list.len() && b.len() == list.len() && c.len() == list.len());
    if parallel && list.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(c.par_chunks_mut(CHUNK))
            .zip(list.free.par_chunks(CHUNK))
            .zip(list.bodies.par_chunks(CHUNK))
            .for_each(|((((a, b), c), fr), bo)| {
                for ((((a, b), c), fr), bo) in a.iter_mut().zip(b).zip(c).zip(fr).zip(bo) {
                    (*a, *b, *c) = f(fr, bo);
                }
            });
    } else {
        for ((((a, b), c), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(c.iter_mut())
            .zip(&list.free)
            .zip(&list.bodies)
        {
            (*a, *b, *c) = f(fr, bo);
        }
    }
}

/// [`map_terms`] for kernels returning two outputs (gradient, Hessian).
#[inline]
fn map_pairs<A: Send, B: Send, const K: usize>(
    parallel: bool,
    list: &TermList<K>,
    a: &mut [A],
    b: &mut [B],
    f: impl Fn(&[u32; K], &[u32; K]) -> (A, B) + Sync,
) {
    debug_assert!(a.len() == list.len() && b.len() == list.len());
    if parallel && list.len() > CHUNK {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .zip(list.free.par_chunks(CHUNK))
            .zip(list.bodies.par_chunks(CHUNK))
            .for_each(|(((a, b), fr), bo)| {
                for (((a, b), fr), bo) in a.iter_mut().zip(b).zip(fr).zip(bo) {
                    (*a, *b) = f(fr, bo);
                }
            });
    } else {
        for (((a, b), fr), bo) in a
            .iter_mut()
            .zip(b.iter_mut())
            .zip(&list.free)
            .zip(&list.bodies)
        {
            (*a, *b) = f(fr, bo);
        }
    }
}

/// The energy: the terms' energies summed in the plan's order (serially: one pass over a
/// buffer, rarely evaluated).
pub(crate) fn energy_sum<const D: usize>(s: &Scratch<D>) -> f64 {
    let mut e = 0.0;
    for x in s.site_e.iter().chain(&s.bond_e).chain(&s.pair_e) {
        e += x;
    }
    e
}

/// Which forms' outputs phase B sums: all of them, or (for the third contraction) those whose
/// third derivative is not identically zero.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Include {
    pub site: bool,
    pub bond: bool,
    pub pair: bool,
}

impl Include {
    pub const ALL: Self = Self {
        site: true,
        bond: true,
        pair: true,
    };

    /// The forms with a third derivative.
    pub fn third(plan: &Plan) -> Self {
        let f = plan.forms;
        Self {
            site: f.site_third != ThirdForm::Zero,
            bond: f.bond_third != ThirdForm::Zero,
            pair: f.pair_third != ThirdForm::Zero,
        }
    }
}

/// Phase B for a vector (gradient or third contraction): `out` (free coordinates) receives, per
/// free body, its site contribution, then its bonds', then its pairs' (those of `include`).
pub(crate) fn gather_vector<const D: usize>(
    plan: &Plan,
    s: &Scratch<D>,
    include: Include,
    parallel: bool,
    out: &mut [f64],
) {
    let has_site = include.site && !plan.sites.free.is_empty();
    let (bonds, pairs) = (
        include.bond && !plan.bonds.free.is_empty(),
        include.pair && !plan.pairs.free.is_empty(),
    );
    let body = |b: usize, o: &mut [f64]| {
        let mut acc = if has_site { s.site_g[b][0] } else { [0.0; D] };
        if bonds {
            for &src in plan.grad_bonds.row(b) {
                let v = &s.bond_g[src as usize / 2][src as usize % 2];
                for d in 0..D {
                    acc[d] += v[d];
                }
            }
        }
        if pairs {
            for &src in plan.grad_pairs.row(b) {
                let v = &s.pair_g[src as usize / 2][src as usize % 2];
                for d in 0..D {
                    acc[d] += v[d];
                }
            }
        }
        o.copy_from_slice(&acc);
    };
    if !(parallel && plan.free > CHUNK) {
        return scatter_vector(plan, s, has_site, bonds, pairs, out);
    }
    {
        out.par_chunks_mut(CHUNK * D)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (i, o) in chunk.chunks_exact_mut(D).enumerate() {
                    body(c * CHUNK + i, o);
                }
            });
    }
}

/// [`gather_vector`] on one thread: the terms' outputs added in term order (sites, bonds, pairs)
/// — for every entry the same sums in the same order as the gather, so the same bits, without
/// walking gather lists.
fn scatter_vector<const D: usize>(
    plan: &Plan,
    s: &Scratch<D>,
    site: bool,
    bonds: bool,
    pairs: bool,
    out: &mut [f64],
) {
    if site {
        for (o, g) in out.chunks_exact_mut(D).zip(&s.site_g) {
            o.copy_from_slice(&g[0]);
        }
    } else {
        out.fill(0.0);
    }
    let mut add = |free: &[[u32; 2]], g: &[Local<D, 2>]| {
        for (fr, g) in free.iter().zip(g) {
            for k in 0..2 {
                if fr[k] != PINNED {
                    let o = fr[k] as usize * D;
                    for d in 0..D {
                        out[o + d] += g[k][d];
                    }
                }
            }
        }
    };
    if bonds {
        add(&plan.bonds.free, &s.bond_g);
    }
    if pairs {
        add(&plan.pairs.free, &s.pair_g);
    }
}

/// Phase B for a Hessian: every stored block of `gather`'s layout receives its contributions.
pub(crate) fn gather_hessian<const D: usize>(
    gather: &HessianGather,
    s: &Scratch<D>,
    parallel: bool,
    h: &mut SparseMatrix,
) {
    assert_eq!(
        h.layout().id(),
        gather.layout.id(),
        "the matrix was not made for this Hessian (Model::new_matrix with the matching part)"
    );
    let block = |k: usize, o: &mut [f64]| {
        let mut acc = [[0.0; D]; D];
        let mut add = |m: &[[f64; D]; D]| {
            for r in 0..D {
                for c in 0..D {
                    acc[r][c] += m[r][c];
                }
            }
        };
        for &t in gather.sites.row(k) {
            add(&s.site_h[t as usize][0][0]);
        }
        for &src in gather.bonds.row(k) {
            let (t, a, b) = (src as usize / 4, (src as usize % 4) / 2, src as usize % 2);
            add(&s.bond_h[t][a][b]);
        }
        for &src in gather.pairs.row(k) {
            let (t, a, b) = (src as usize / 4, (src as usize % 4) / 2, src as usize % 2);
            add(&s.pair_h[t][a][b]);
        }
        for (r, row) in acc.iter().enumerate() {
            o[r * D..(r + 1) * D].copy_from_slice(row);
        }
    };
    let blocks = gather.layout.blocks();
    let values = h.values_mut();
    if !(parallel && blocks > CHUNK) {
        return scatter_hessian(gather, s, values);
    }
    {
        values
            .par_chunks_mut(CHUNK * D * D)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (i, o) in chunk.chunks_exact_mut(D * D).enumerate() {
                    block(c * CHUNK + i, o);
                }
            });
    }
}

/// [`gather_hessian`] on one thread: every term's local blocks added to their stored blocks in
/// term order — the gather's sums in the gather's order (each stored block's contributions are
/// listed by increasing term), so the same bits.
fn scatter_hessian<const D: usize>(gather: &HessianGather, s: &Scratch<D>, values: &mut [f64]) {
    values.fill(0.0);
    let mut add = |k: u32, m: &[[f64; D]; D]| {
        let o = k as usize * D * D;
        for r in 0..D {
            for c in 0..D {
                values[o + r * D + c] += m[r][c];
            }
        }
    };
    for (&k, h) in gather.site_dest.iter().zip(&s.site_h) {
        add(k, &h[0][0]);
    }
    for (dest, h) in gather.bond_dest.iter().zip(&s.bond_h) {
        for a in 0..2 {
            for b in 0..2 {
                if dest[a][b] != NOWHERE {
                    add(dest[a][b], &h[a][b]);
                }
            }
        }
    }
    for (dest, h) in gather.pair_dest.iter().zip(&s.pair_h) {
        for a in 0..2 {
            for b in 0..2 {
                if dest[a][b] != NOWHERE {
                    add(dest[a][b], &h[a][b]);
                }
            }
        }
    }
}
