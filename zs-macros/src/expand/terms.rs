//! The expansion of an assembled system's term functions: `Terms<D>`, the per-term kernels
//! (`zs_runtime::assembly::Terms`).
//!
//! Each form is differentiated in its own `K·D` coordinates (`K` = 1 for sites and body
//! constraints, 2 for bonds, pairs and bond constraints). For the site and bond forms the
//! energy kernels carry the penalty of their constraints, `½ω² Σ_c g_c²` (Tao & Owhadi eq. 7),
//! and branch on `omega == 0.0` to the unpenalized expressions (which do not evaluate the
//! constraints): `V + V1` of the fixed-size expansion, term by term.

use proc_macro2::TokenStream;
use quote::quote;

use super::emit::{usize_lit, Coords, Derived, Emitter};
use super::{allow_lints, header, user_impl};
use crate::ast::Input;
use crate::lower::LoweredTerms;
use crate::sym::{Graph, NodeId, Var};
use crate::valid::TermShape;

/// Indices into [`crate::valid::TERM_ROLES`].
const SITE: usize = 0;
const STIFF_SITE: usize = 1;
const BOND: usize = 2;
const STIFF_BOND: usize = 3;
const PAIR: usize = 4;
const BODY_CONS: usize = 5;
const BOND_CONS: usize = 6;

/// `[[o_0 … o_{D-1}], [o_D …], …]`: `K` bodies of `D` outputs.
fn local(outs: &[TokenStream], d: usize) -> TokenStream {
    let rows = outs.chunks(d).map(|r| quote!([#(#r),*]));
    quote!([#(#rows),*])
}

/// The `K × K` blocks of `D × D` of a flat row-major `(K·D)²` Hessian:
/// `[ka][kb][i][j] = H[ka·D + i][kb·D + j]`.
fn local_hessian(outs: &[TokenStream], d: usize, k: usize) -> TokenStream {
    let n = k * d;
    let ka = (0..k).map(|a| {
        let kb = (0..k).map(|b| {
            let rows = (0..d).map(|i| {
                let row = (0..d).map(|j| &outs[(a * d + i) * n + b * d + j]);
                quote!([#(#row),*])
            });
            quote!([#(#rows),*])
        });
        quote!([#(#kb),*])
    });
    quote!([#(#ka),*])
}

/// One form's kernels: energy, gradient, gradient + Hessian, gradient + stiff Hessian, third
/// contraction, for the plain and (when the form has constraints) the penalized potential.
struct Form {
    plain: Derived,
    plain_stiff_hessian: Vec<NodeId>,
    penalized: Option<(Derived, Vec<NodeId>)>,
}

impl Form {
    /// `energy` (the total of the form, `V0 + V1`), `stiff` (`V1` alone), `constraints`.
    fn new(
        graph: &mut Graph,
        n: usize,
        energy: NodeId,
        stiff: NodeId,
        constraints: Option<&[NodeId]>,
    ) -> Self {
        let plain = Derived::new(graph, energy, n);
        let flat_hessian = |graph: &mut Graph, f: NodeId| -> Vec<NodeId> {
            let grad = graph.gradient(f, n);
            graph.hessian(&grad).into_iter().flatten().collect()
        };
        let plain_stiff_hessian = flat_hessian(graph, stiff);
        let penalized = constraints.map(|g| {
            let squares: Vec<NodeId> = g.iter().map(|&c| graph.mul(c, c)).collect();
            let sum = graph.sum(squares);
            let omega = graph.var(Var::Omega);
            let w2 = graph.mul(omega, omega);
            let half = graph.constant(0.5);
            let k = graph.mul(half, w2);
            let penalty = graph.mul(k, sum);
            let total = graph.add(energy, penalty);
            let stiff_total = graph.add(stiff, penalty);
            (
                Derived::new(graph, total, n),
                flat_hessian(graph, stiff_total),
            )
        });
        Self {
            plain,
            plain_stiff_hessian,
            penalized,
        }
    }

    /// The five kernel bodies `[energy, gradient, gradient_hessian, gradient_stiff_hessian,
    /// third]`, each `if omega == 0.0 { plain } else { penalized }` when penalized.
    fn bodies(&self, em: &Emitter<'_>, graph: &Graph, d: usize, k: usize) -> [TokenStream; 5] {
        let one = |dv: &Derived, stiff: &[NodeId]| -> [TokenStream; 5] {
            let energy = em.body(graph, &[dv.value], |o| o[0].clone());
            let gradient = em.body(graph, &dv.gradient, |o| local(o, d));
            let mut gh = dv.gradient.clone();
            gh.extend(dv.hessian_flat());
            let n = d * k;
            let gradient_hessian = em.body(graph, &gh, |o| {
                let g = local(&o[..n], d);
                let h = local_hessian(&o[n..], d, k);
                quote!((#g, #h))
            });
            let mut gs = dv.gradient.clone();
            gs.extend(stiff.iter().copied());
            let gradient_stiff = em.body(graph, &gs, |o| {
                let g = local(&o[..n], d);
                let h = local_hessian(&o[n..], d, k);
                quote!((#g, #h))
            });
            let third = em.body(graph, &dv.third, |o| local(o, d));
            [energy, gradient, gradient_hessian, gradient_stiff, third]
        };
        let plain = one(&self.plain, &self.plain_stiff_hessian);
        match &self.penalized {
            None => plain,
            Some((dv, stiff)) => {
                let pen = one(dv, stiff);
                let mut out: [TokenStream; 5] = Default::default();
                for (o, (p, q)) in out.iter_mut().zip(plain.into_iter().zip(pen)) {
                    *o = quote!(if omega == 0.0 { #p } else { #q });
                }
                out
            }
        }
    }
}

/// The successful expansion of a term definition.
pub fn generate(input: &Input<'_>, shape: &TermShape, mut lowered: LoweredTerms) -> TokenStream {
    let user = user_impl(input.original, None);
    let Some(d) = shape.d else {
        let err = syn::Error::new_spanned(&input.original.self_ty, "internal error: no D");
        return fallback(input, shape, &err, &lowered.visited);
    };
    let mut graph = std::mem::take(&mut lowered.graph);
    let zero = graph.constant(0.0);
    let role = |r: usize| lowered.roles[r].as_ref().map(|v| v[0]);
    let cons = |r: usize| lowered.roles[r].clone();
    let em = Emitter {
        params: &lowered.params,
        uses: &lowered.uses,
        coords: Coords::Blocks(d),
    };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let d_lit = usize_lit(d);

    let body_cons = cons(BODY_CONS);
    let bond_cons = cons(BOND_CONS);
    let has = |r: usize| lowered.roles[r].is_some();
    let mut kernels = Vec::new();

    // Sites: site + stiff_site (+ penalty of the body constraints).
    if has(SITE) || has(STIFF_SITE) || body_cons.is_some() {
        let (v0, v1) = (role(SITE).unwrap_or(zero), role(STIFF_SITE).unwrap_or(zero));
        let total = graph.add(v0, v1);
        let form = Form::new(&mut graph, d, total, v1, body_cons.as_deref());
        let [e, g, gh, gs, t] = form.bodies(&em, &graph, d, 1);
        kernels.push(quote! {
            #[inline]
            fn site_energy(&self, omega: f64, q: &[[f64; #d_lit]; 1]) -> f64 { #e }
            #[inline]
            fn site_gradient(&self, omega: f64, q: &[[f64; #d_lit]; 1]) -> [[f64; #d_lit]; 1] { #g }
            #[inline]
            fn site_gradient_hessian(
                &self,
                omega: f64,
                q: &[[f64; #d_lit]; 1],
            ) -> ([[f64; #d_lit]; 1], [[[[f64; #d_lit]; #d_lit]; 1]; 1]) { #gh }
            #[inline]
            fn site_gradient_stiff_hessian(
                &self,
                omega: f64,
                q: &[[f64; #d_lit]; 1],
            ) -> ([[f64; #d_lit]; 1], [[[[f64; #d_lit]; #d_lit]; 1]; 1]) { #gs }
            #[inline]
            fn site_third_contraction(
                &self,
                omega: f64,
                q: &[[f64; #d_lit]; 1],
                a: &[[f64; #d_lit]; 1],
            ) -> [[f64; #d_lit]; 1] { #t }
        });
    }
    // Bonds: bond + stiff_bond (+ penalty of the bond constraints).
    if has(BOND) || has(STIFF_BOND) || bond_cons.is_some() {
        let (v0, v1) = (role(BOND).unwrap_or(zero), role(STIFF_BOND).unwrap_or(zero));
        let total = graph.add(v0, v1);
        let form = Form::new(&mut graph, 2 * d, total, v1, bond_cons.as_deref());
        let [e, g, gh, gs, t] = form.bodies(&em, &graph, d, 2);
        kernels.push(quote! {
            #[inline]
            fn bond_energy(&self, omega: f64, q: &[[f64; #d_lit]; 2]) -> f64 { #e }
            #[inline]
            fn bond_gradient(&self, omega: f64, q: &[[f64; #d_lit]; 2]) -> [[f64; #d_lit]; 2] { #g }
            #[inline]
            fn bond_gradient_hessian(
                &self,
                omega: f64,
                q: &[[f64; #d_lit]; 2],
            ) -> ([[f64; #d_lit]; 2], [[[[f64; #d_lit]; #d_lit]; 2]; 2]) { #gh }
            #[inline]
            fn bond_gradient_stiff_hessian(
                &self,
                omega: f64,
                q: &[[f64; #d_lit]; 2],
            ) -> ([[f64; #d_lit]; 2], [[[[f64; #d_lit]; #d_lit]; 2]; 2]) { #gs }
            #[inline]
            fn bond_third_contraction(
                &self,
                omega: f64,
                q: &[[f64; #d_lit]; 2],
                a: &[[f64; #d_lit]; 2],
            ) -> [[f64; #d_lit]; 2] { #t }
        });
    }
    // Pairs: no constraints, no stiff part.
    if let Some(p) = role(PAIR) {
        let form = Form::new(&mut graph, 2 * d, p, zero, None);
        let [e, g, gh, _, t] = form.bodies(&em, &graph, d, 2);
        kernels.push(quote! {
            #[inline]
            fn pair_energy(&self, q: &[[f64; #d_lit]; 2]) -> f64 { #e }
            #[inline]
            fn pair_gradient(&self, q: &[[f64; #d_lit]; 2]) -> [[f64; #d_lit]; 2] { #g }
            #[inline]
            fn pair_gradient_hessian(
                &self,
                q: &[[f64; #d_lit]; 2],
            ) -> ([[f64; #d_lit]; 2], [[[[f64; #d_lit]; #d_lit]; 2]; 2]) { #gh }
            #[inline]
            fn pair_third_contraction(
                &self,
                q: &[[f64; #d_lit]; 2],
                a: &[[f64; #d_lit]; 2],
            ) -> [[f64; #d_lit]; 2] { #t }
        });
    }
    // Constraint values and Jacobian rows.
    for (nodes, k, name) in [
        (&body_cons, 1usize, quote!(body_constraints)),
        (&bond_cons, 2usize, quote!(bond_constraints)),
    ] {
        let Some(g) = nodes else { continue };
        let n = k * d;
        let mut outs = g.clone();
        for &c in g {
            outs.extend(graph.gradient(c, n));
        }
        let m = g.len();
        let body = em.body(&graph, &outs, |o| {
            let values = (0..m).map(|c| {
                let (ci, v) = (usize_lit(c), &o[c]);
                quote!(g[#ci] = #v;)
            });
            let rows = (0..m).flat_map(|c| {
                (0..n).map(move |i| {
                    let (ci, b, j) = (usize_lit(c), usize_lit(i / d), usize_lit(i % d));
                    let v = &o[m + c * n + i];
                    quote!(jac[#ci][#b][#j] = #v;)
                })
            });
            quote!({ #(#values)* #(#rows)* })
        });
        let k_lit = usize_lit(k);
        kernels.push(quote! {
            #[inline]
            fn #name(
                &self,
                q: &[[f64; #d_lit]; #k_lit],
                g: &mut [f64],
                jac: &mut [[[f64; #d_lit]; #k_lit]],
            ) { #body }
        });
    }
    let masses = match shape.masses_self {
        Some(true) => quote!(<#self_ty>::body_masses(self)),
        Some(false) => quote!(<#self_ty>::body_masses()),
        None => quote!([1.0; #d_lit]),
    };
    let forms = forms_tokens(shape, &lowered);
    quote! {
        #user

        #allow
        impl #impl_generics ::zs_runtime::assembly::Terms<#d_lit> for #self_ty #where_clause {
            const FORMS: ::zs_runtime::assembly::Forms = #forms;
            #[inline]
            fn body_masses(&self) -> [f64; #d_lit] {
                #masses
            }
            #(#kernels)*
        }
    }
}

/// The `Forms` constant: which roles were lowered, constraint counts.
fn forms_tokens(shape: &TermShape, lowered: &LoweredTerms) -> TokenStream {
    let has = |r: usize| lowered.roles[r].is_some();
    let (site, stiff_site, bond, stiff_bond, pair) = (
        has(SITE),
        has(STIFF_SITE),
        has(BOND),
        has(STIFF_BOND),
        has(PAIR),
    );
    let kb = usize_lit(if has(BODY_CONS) {
        shape.body_constraints.unwrap_or(0)
    } else {
        0
    });
    let kp = usize_lit(if has(BOND_CONS) {
        shape.bond_constraints.unwrap_or(0)
    } else {
        0
    });
    quote! {
        ::zs_runtime::assembly::Forms {
            site: #site,
            stiff_site: #stiff_site,
            bond: #bond,
            stiff_bond: #stiff_bond,
            pair: #pair,
            body_constraints: #kb,
            bond_constraints: #kp,
        }
    }
}

/// The expansion after errors: the user's block (interpreted bodies stubbed), the errors, and,
/// when `D` is known, a `Terms<D>` impl with no forms, so that uses of the system elsewhere do
/// not add errors.
pub fn fallback(
    input: &Input<'_>,
    shape: &TermShape,
    err: &syn::Error,
    visited: &[String],
) -> TokenStream {
    let user = user_impl(input.original, Some(visited));
    let errors = err.to_compile_error();
    let Some(d) = shape.d else {
        return quote!(#user #errors);
    };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let d_lit = usize_lit(d);
    quote! {
        #user
        #errors
        #allow
        impl #impl_generics ::zs_runtime::assembly::Terms<#d_lit> for #self_ty #where_clause {
            const FORMS: ::zs_runtime::assembly::Forms = ::zs_runtime::assembly::Forms {
                site: false,
                stiff_site: false,
                bond: false,
                stiff_bond: false,
                pair: false,
                body_constraints: 0,
                bond_constraints: 0,
            };
        }
    }
}
