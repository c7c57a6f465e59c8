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

/// Forms with at most this many local coordinates (`K·D`) get a third-tensor kernel
/// (`ThirdForm::Tensor`): `n³ ≤ 64` entries, cheaper to keep and contract than to re-evaluate.
const TENSOR_MAX_COORDS: usize = 4;

/// One potential of a form (plain or penalized) and what is derived from it.
struct Variant {
    dv: Derived,
    /// The Hessian of the stiff part, flat.
    stiff_hessian: Vec<NodeId>,
    /// The third-derivative tensor, flat `n³` (empty when the form is too large).
    tensor: Vec<NodeId>,
}

impl Variant {
    fn new(graph: &mut Graph, n: usize, energy: NodeId, stiff: NodeId) -> Self {
        let dv = Derived::new(graph, energy, n);
        let grad = graph.gradient(stiff, n);
        let stiff_hessian = graph.hessian(&grad).into_iter().flatten().collect();
        let tensor = if n <= TENSOR_MAX_COORDS {
            graph.third_tensor(&dv.hessian)
        } else {
            Vec::new()
        };
        Self {
            dv,
            stiff_hessian,
            tensor,
        }
    }

    /// `[energy, gradient, gradient_hessian, gradient_stiff_hessian, third,
    /// gradient_hessian_third]` (the last empty without a tensor).
    fn bodies(&self, em: &Emitter<'_>, graph: &Graph, d: usize, k: usize) -> [TokenStream; 6] {
        let (dv, n) = (&self.dv, d * k);
        let energy = em.body(graph, &[dv.value], |o| o[0].clone());
        let gradient = em.body(graph, &dv.gradient, |o| local(o, d));
        let with_matrix = |extra: &[NodeId]| {
            let mut outs = dv.gradient.clone();
            outs.extend(extra.iter().copied());
            em.body(graph, &outs, |o| {
                let g = local(&o[..n], d);
                let h = local_hessian(&o[n..], d, k);
                quote!((#g, #h))
            })
        };
        let gradient_hessian = with_matrix(&dv.hessian_flat());
        let gradient_stiff = with_matrix(&self.stiff_hessian);
        let third = em.body(graph, &dv.third, |o| local(o, d));
        let gradient_hessian_third = if self.tensor.is_empty() {
            TokenStream::new()
        } else {
            let mut outs = dv.gradient.clone();
            outs.extend(dv.hessian_flat());
            outs.extend(self.tensor.iter().copied());
            em.body(graph, &outs, |o| {
                let g = local(&o[..n], d);
                let h = local_hessian(&o[n..n + n * n], d, k);
                let t = local_third(&o[n + n * n..], d, k);
                quote!((#g, #h, #t))
            })
        };
        [
            energy,
            gradient,
            gradient_hessian,
            gradient_stiff,
            third,
            gradient_hessian_third,
        ]
    }

    fn third_is_zero(&self, graph: &Graph) -> bool {
        self.dv
            .third
            .iter()
            .all(|&t| graph.as_const(t) == Some(0.0))
    }
}

/// The nested `[a][i][b][j][c][k]` tensor of a flat row-major `(K·D)³` one: three
/// (body, coordinate) index pairs, outermost first.
fn local_third(outs: &[TokenStream], d: usize, k: usize) -> TokenStream {
    fn level(outs: &[TokenStream], d: usize, k: usize, depth: usize, at: usize) -> TokenStream {
        if depth == 3 {
            return outs[at].clone();
        }
        let bodies = (0..k).map(|b| {
            let coords = (0..d).map(|i| level(outs, d, k, depth + 1, at * k * d + b * d + i));
            quote!([#(#coords),*])
        });
        quote!([#(#bodies),*])
    }
    level(outs, d, k, 0, 0)
}

/// One form's kernels: energy, gradient, gradient + Hessian, gradient + stiff Hessian, third
/// contraction, gradient + Hessian + third tensor (small forms), for the plain and (when the
/// form has constraints) the penalized potential.
struct Form {
    plain: Variant,
    penalized: Option<Variant>,
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
        let plain = Variant::new(graph, n, energy, stiff);
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
            Variant::new(graph, n, total, stiff_total)
        });
        Self { plain, penalized }
    }

    /// The six kernel bodies of [`Variant::bodies`], each
    /// `if omega == 0.0 { plain } else { penalized }` when penalized.
    fn bodies(&self, em: &Emitter<'_>, graph: &Graph, d: usize, k: usize) -> [TokenStream; 6] {
        let plain = self.plain.bodies(em, graph, d, k);
        match &self.penalized {
            None => plain,
            Some(pen) => {
                let pen = pen.bodies(em, graph, d, k);
                let mut out: [TokenStream; 6] = Default::default();
                for (o, (p, q)) in out.iter_mut().zip(plain.into_iter().zip(pen)) {
                    *o = if p.is_empty() {
                        p
                    } else {
                        quote!(if omega == 0.0 { #p } else { #q })
                    };
                }
                out
            }
        }
    }

    /// The form's `ThirdForm`: zero when the third contraction simplified to zero (plain and
    /// penalized), a tensor for small forms.
    fn third_form(&self, graph: &Graph) -> TokenStream {
        let zero = self.plain.third_is_zero(graph)
            && self
                .penalized
                .as_ref()
                .is_none_or(|p| p.third_is_zero(graph));
        if zero {
            quote!(::zs_runtime::assembly::ThirdForm::Zero)
        } else if !self.plain.tensor.is_empty() {
            quote!(::zs_runtime::assembly::ThirdForm::Tensor)
        } else {
            quote!(::zs_runtime::assembly::ThirdForm::Direct)
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
    let direct = quote!(::zs_runtime::assembly::ThirdForm::Direct);
    let mut third_forms = [direct.clone(), direct.clone(), direct];

    // Sites: site + stiff_site (+ penalty of the body constraints).
    if has(SITE) || has(STIFF_SITE) || body_cons.is_some() {
        let (v0, v1) = (role(SITE).unwrap_or(zero), role(STIFF_SITE).unwrap_or(zero));
        let total = graph.add(v0, v1);
        let form = Form::new(&mut graph, d, total, v1, body_cons.as_deref());
        let [e, g, gh, gs, t, ght] = form.bodies(&em, &graph, d, 1);
        third_forms[0] = form.third_form(&graph);
        if !ght.is_empty() {
            kernels.push(quote! {
                #[inline]
                fn site_gradient_hessian_third(
                    &self,
                    omega: f64,
                    q: &[[f64; #d_lit]; 1],
                ) -> (
                    [[f64; #d_lit]; 1],
                    [[[[f64; #d_lit]; #d_lit]; 1]; 1],
                    ::zs_runtime::assembly::LocalThird<#d_lit, 1>,
                ) { #ght }
            });
        }
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
        let [e, g, gh, gs, t, ght] = form.bodies(&em, &graph, d, 2);
        third_forms[1] = form.third_form(&graph);
        if !ght.is_empty() {
            kernels.push(quote! {
                #[inline]
                fn bond_gradient_hessian_third(
                    &self,
                    omega: f64,
                    q: &[[f64; #d_lit]; 2],
                ) -> (
                    [[f64; #d_lit]; 2],
                    [[[[f64; #d_lit]; #d_lit]; 2]; 2],
                    ::zs_runtime::assembly::LocalThird<#d_lit, 2>,
                ) { #ght }
            });
        }
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
        let [e, g, gh, _, t, ght] = form.bodies(&em, &graph, d, 2);
        third_forms[2] = form.third_form(&graph);
        if !ght.is_empty() {
            kernels.push(quote! {
                #[inline]
                fn pair_gradient_hessian_third(
                    &self,
                    q: &[[f64; #d_lit]; 2],
                ) -> (
                    [[f64; #d_lit]; 2],
                    [[[[f64; #d_lit]; #d_lit]; 2]; 2],
                    ::zs_runtime::assembly::LocalThird<#d_lit, 2>,
                ) { #ght }
            });
        }
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
    let forms = forms_tokens(shape, &lowered, &third_forms);
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
fn forms_tokens(
    shape: &TermShape,
    lowered: &LoweredTerms,
    third: &[TokenStream; 3],
) -> TokenStream {
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
    let [site_third, bond_third, pair_third] = third;
    quote! {
        ::zs_runtime::assembly::Forms {
            site: #site,
            stiff_site: #stiff_site,
            bond: #bond,
            stiff_bond: #stiff_bond,
            pair: #pair,
            body_constraints: #kb,
            bond_constraints: #kp,
            site_third: #site_third,
            bond_third: #bond_third,
            pair_third: #pair_third,
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
                site_third: ::zs_runtime::assembly::ThirdForm::Direct,
                bond_third: ::zs_runtime::assembly::ThirdForm::Direct,
                pair_third: ::zs_runtime::assembly::ThirdForm::Direct,
            };
        }
    }
}
