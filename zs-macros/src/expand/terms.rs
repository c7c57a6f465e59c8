//! The expansion of an assembled system's term functions: for every form of the table
//! ([`crate::forms::FORMS`]) an `impl zs_runtime::assembly::Kernel<D, K, Form>` — the form's
//! kernels, or the defaults of an absent form — and `impl Terms<D>` with the `Forms` table.
//!
//! Each form is differentiated in its own `K·D` coordinates. The energy kernels carry the
//! penalty of the form's constraints, `½ω² Σ_c g_c²` (Tao & Owhadi eq. 7), and branch on
//! `omega == 0.0` to the unpenalized expressions (which do not evaluate the constraints):
//! `V + V1` of the fixed-size expansion, term by term.

use proc_macro2::TokenStream;
use quote::quote;

use super::emit::{usize_lit, Coords, Derived, Emitter};
use super::{allow_lints, header, user_impl};
use crate::ast::Input;
use crate::forms::{FormSpec, RoleKind, FORMS};
use crate::lower::LoweredTerms;
use crate::valid::TermShape;
use zs_symbolic::{Graph, NodeId, Var};

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

/// Kernel bodies per form: energy, value + gradient, value + gradient + Hessian, value +
/// gradient + stiff Hessian, third contraction, value + gradient + Hessian + third tensor, and the
/// SIMD lane versions of the energy and of value + gradient, and the Hessian-vector product.
const BODIES: usize = 9;

/// Forms with at most this many local coordinates (`K·D`) get a third-tensor kernel
/// (`ThirdForm::Tensor`): `n³ ≤ 64` entries, cheaper to keep and contract than to re-evaluate.
const TENSOR_MAX_COORDS: usize = 4;

/// One potential of a form (plain or penalized) and what is derived from it.
struct Variant {
    dv: Derived,
    /// The value and gradient for the SIMD lane kernels, derived in reciprocal mode
    /// ([`Graph::with_reciprocals`]): one division per denominator. The lanes run many terms
    /// at once and are bound by the divider's throughput, which this cuts (31 → 10 divisions
    /// per TIP3P pair); the scalar kernels keep the divisions, whose latency they are bound by.
    lanes: Vec<NodeId>,
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
        let lanes = graph.with_reciprocals(|g| {
            let v = g.rebuild(energy);
            let mut outs = vec![v];
            outs.extend(g.gradient(v, n));
            outs
        });
        Self {
            dv,
            lanes,
            stiff_hessian,
            tensor,
        }
    }

    /// The kernel bodies, in [`BODIES`] order (`value_gradient_hessian_third` empty without a
    /// tensor). `lanes` emits the SIMD ones.
    fn bodies(
        &self,
        em: &Emitter<'_>,
        lanes: &Emitter<'_>,
        graph: &Graph,
        d: usize,
        k: usize,
    ) -> [TokenStream; BODIES] {
        let (dv, n) = (&self.dv, d * k);
        let energy = em.body(graph, &[dv.value], |o| o[0].clone());
        let mut value_gradient_outs = vec![dv.value];
        value_gradient_outs.extend(dv.gradient.iter().copied());
        let value_gradient = em.body(graph, &value_gradient_outs, |o| {
            let (v, g) = (&o[0], local(&o[1..], d));
            quote!((#v, #g))
        });
        let value_lanes = lanes.body(graph, &self.lanes[..1], |o| o[0].clone());
        let value_gradient_lanes = lanes.body(graph, &self.lanes, |o| {
            let (v, g) = (&o[0], local(&o[1..], d));
            quote!((#v, #g))
        });
        let with_matrix = |extra: &[NodeId]| {
            let mut outs = value_gradient_outs.clone();
            outs.extend(extra.iter().copied());
            em.body(graph, &outs, |o| {
                let (v, g) = (&o[0], local(&o[1..=n], d));
                let h = local_hessian(&o[n + 1..], d, k);
                quote!((#v, #g, #h))
            })
        };
        let value_gradient_hessian = with_matrix(&dv.hessian_flat());
        let value_gradient_stiff = with_matrix(&self.stiff_hessian);
        let third = em.body(graph, &dv.third, |o| local(o, d));
        let value_gradient_hessian_third = if self.tensor.is_empty() {
            TokenStream::new()
        } else {
            let mut outs = value_gradient_outs.clone();
            outs.extend(dv.hessian_flat());
            outs.extend(self.tensor.iter().copied());
            em.body(graph, &outs, |o| {
                let (v, g) = (&o[0], local(&o[1..=n], d));
                let h = local_hessian(&o[n + 1..n + 1 + n * n], d, k);
                let t = local_third(&o[n + 1 + n * n..], d, k);
                quote!((#v, #g, #h, #t))
            })
        };
        [
            energy,
            value_gradient,
            value_gradient_hessian,
            value_gradient_stiff,
            third,
            value_gradient_hessian_third,
            value_lanes,
            value_gradient_lanes,
            em.body(graph, &dv.hessian_vector, |o| local(o, d)),
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
struct Kernels {
    plain: Variant,
    penalized: Option<Variant>,
}

impl Kernels {
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

    /// The kernel bodies of [`Variant::bodies`], each
    /// `if omega == 0.0 { plain } else { penalized }` when penalized.
    fn bodies(
        &self,
        em: &Emitter<'_>,
        lanes: &Emitter<'_>,
        graph: &Graph,
        d: usize,
        k: usize,
    ) -> [TokenStream; BODIES] {
        let plain = self.plain.bodies(em, lanes, graph, d, k);
        match &self.penalized {
            None => plain,
            Some(pen) => {
                let pen = pen.bodies(em, lanes, graph, d, k);
                let mut out: [TokenStream; BODIES] = Default::default();
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

/// `::zs_runtime::assembly::Kernel<D, K, ::zs_runtime::assembly::Marker>`.
fn kernel_trait(spec: &FormSpec, d: usize) -> TokenStream {
    let (d, k) = (usize_lit(d), usize_lit(spec.arity));
    let marker = syn::Ident::new(spec.marker, proc_macro2::Span::call_site());
    quote!(::zs_runtime::assembly::Kernel<#d, #k, ::zs_runtime::assembly::#marker>)
}

/// `::zs_runtime::assembly::FormInfo { .. }`.
fn form_info(
    present: bool,
    stiff: bool,
    constraints: usize,
    third: &TokenStream,
    typed: bool,
) -> TokenStream {
    let constraints = usize_lit(constraints);
    quote! {
        ::zs_runtime::assembly::FormInfo {
            present: #present,
            stiff: #stiff,
            constraints: #constraints,
            third: #third,
            typed: #typed,
        }
    }
}

/// The successful expansion of a term definition.
/// `marked`: the fields of `parameters(...)` and their `Var::Param` indices.
pub fn generate(
    input: &Input<'_>,
    shape: &TermShape,
    mut lowered: LoweredTerms,
    marked: &[(String, u32)],
) -> TokenStream {
    let user = user_impl(input.original, None);
    let Some(d) = shape.d else {
        let err = syn::Error::new_spanned(&input.original.self_ty, "internal error: no D");
        return fallback(input, shape, &err, &lowered.visited);
    };
    let mut graph = std::mem::take(&mut lowered.graph);
    let zero = graph.constant(0.0);
    let em = Emitter {
        params: &lowered.params,
        uses: &lowered.uses,
        coords: Coords::Blocks(d),
        lanes: false,
    };
    let lanes = Emitter { lanes: true, ..em };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let d_lit = usize_lit(d);

    let names = marked.iter().map(|(name, _)| name.as_str());
    let mut impls = Vec::new();
    let mut infos = Vec::new();
    for (f, spec) in FORMS.iter().enumerate() {
        let energy = lowered.role(f, RoleKind::Energy).map(|v| v[0]);
        let stiff = lowered.role(f, RoleKind::Stiff).map(|v| v[0]);
        let cons = lowered
            .role(f, RoleKind::Constraints)
            .map(<[NodeId]>::to_vec);
        let kernel = kernel_trait(spec, d);
        let field = syn::Ident::new(spec.field, proc_macro2::Span::call_site());
        if energy.is_none() && stiff.is_none() && cons.is_none() {
            impls.push(quote! {
                #allow
                impl #impl_generics #kernel for #self_ty #where_clause {}
            });
            infos.push(quote!(#field: ::zs_runtime::assembly::FormInfo::ABSENT));
            continue;
        }
        let (k, n) = (spec.arity, spec.arity * d);
        let v0 = energy.unwrap_or(zero);
        let (total, v1) = match spec.stiff {
            Some(_) => {
                let v1 = stiff.unwrap_or(zero);
                (graph.add(v0, v1), v1)
            }
            None => (v0, zero),
        };
        let kernels = Kernels::new(&mut graph, n, total, v1, cons.as_deref());
        // ∂V/∂θ_p and ∂∇V/∂θ_p of the term (the unpenalized energy) for the marked fields.
        let parameters = (!marked.is_empty()).then(|| {
            let mut outs: Vec<NodeId> = marked
                .iter()
                .map(|&(_, p)| graph.derivative(total, Var::Param(p)))
                .collect();
            for &(_, p) in marked {
                for i in 0..n {
                    let g = kernels.plain.dv.gradient[i];
                    outs.push(graph.derivative(g, Var::Param(p)));
                }
            }
            let count = marked.len();
            em.body(&graph, &outs, |o| {
                let v = &o[..count];
                let g = o[count..].chunks(n).map(|c| local(c, d));
                quote!(([#(#v),*], [#(#g),*]))
            })
        });
        let [e, g, gh, gs, t, ght, el, gl, hv] = kernels.bodies(&em, &lanes, &graph, d, k);
        let is_stiff = stiff.is_some() || cons.is_some();
        let k_lit = usize_lit(k);
        let local = quote!([[f64; #d_lit]; #k_lit]);
        let kinds = quote!(&::zs_runtime::assembly::Kinds<#k_lit>);
        let lane_kinds = quote!(&[::zs_runtime::assembly::Kinds<#k_lit>]);
        let local_h = quote!([[[[f64; #d_lit]; #d_lit]; #k_lit]; #k_lit]);
        let lanes_local = quote!([[L; #d_lit]; #k_lit]);
        let mut methods = vec![quote! {
            #[inline]
            fn energy(&self, omega: f64, q: &#local, kinds: #kinds) -> f64 { #e }
            #[inline]
            fn value_gradient(&self, omega: f64, q: &#local, kinds: #kinds) -> (f64, #local) {
                #g
            }
            #[inline(always)]
            fn value_lanes<L: ::zs_runtime::simd::Lanes>(
                &self,
                omega: f64,
                q: &#lanes_local,
                kinds: #lane_kinds,
            ) -> L {
                #el
            }
            #[inline(always)]
            fn value_gradient_lanes<L: ::zs_runtime::simd::Lanes>(
                &self,
                omega: f64,
                q: &#lanes_local,
                kinds: #lane_kinds,
            ) -> (L, #lanes_local) {
                #gl
            }
            #[inline]
            fn value_gradient_hessian(
                &self,
                omega: f64,
                q: &#local,
                kinds: #kinds,
            ) -> (f64, #local, #local_h) {
                #gh
            }
            #[inline]
            fn third_contraction(
                &self,
                omega: f64,
                q: &#local,
                a: &#local,
                kinds: #kinds,
            ) -> #local {
                #t
            }
            #[inline]
            fn hessian_vector(
                &self,
                omega: f64,
                q: &#local,
                a: &#local,
                kinds: #kinds,
            ) -> #local {
                #hv
            }
        }];
        if is_stiff {
            methods.push(quote! {
                #[inline]
                fn value_gradient_stiff_hessian(
                    &self,
                    omega: f64,
                    q: &#local,
                    kinds: #kinds,
                ) -> (f64, #local, #local_h) {
                    #gs
                }
            });
        }
        if let Some(body) = parameters {
            methods.push(quote! {
                #[inline]
                fn parameter_derivatives(
                    &self,
                    q: &#local,
                    kinds: #kinds,
                    dv: &mut [f64],
                    dg: &mut [#local],
                ) {
                    let (v, g) = { #body };
                    dv.copy_from_slice(&v);
                    dg.copy_from_slice(&g);
                }
            });
        }
        if !ght.is_empty() {
            methods.push(quote! {
                #[inline]
                fn value_gradient_hessian_third(
                    &self,
                    omega: f64,
                    q: &#local,
                    kinds: #kinds,
                ) -> (
                    f64,
                    #local,
                    #local_h,
                    ::zs_runtime::assembly::LocalThird<#d_lit, #k_lit>,
                ) {
                    #ght
                }
            });
        }
        if let Some(g) = &cons {
            let body = constraint_body(&em, &mut graph, g, d, k);
            methods.push(quote! {
                #[inline]
                fn constraints(
                    &self,
                    q: &#local,
                    kinds: #kinds,
                    g: &mut [f64],
                    jac: &mut [#local],
                ) {
                    #body
                }
            });
        }
        impls.push(quote! {
            #allow
            impl #impl_generics #kernel for #self_ty #where_clause {
                #(#methods)*
            }
        });
        let info = form_info(
            true,
            is_stiff,
            cons.as_ref().map_or(0, Vec::len),
            &kernels.third_form(&graph),
            shape.form_typed(f),
        );
        infos.push(quote!(#field: #info));
    }
    let kind_arg = shape.masses_kind.then(|| quote!(kind as usize));
    let masses = match shape.masses_self {
        Some(true) => quote!(<#self_ty>::body_masses(self, #kind_arg)),
        Some(false) => quote!(<#self_ty>::body_masses(#kind_arg)),
        None => quote!([1.0; #d_lit]),
    };
    // Every table read at a body's type has an entry for `kind`.
    let tables = lowered.kind_tables.iter();
    let has_type = quote!(true #(&& #tables)*);
    quote! {
        #user

        #(#impls)*

        #allow
        impl #impl_generics ::zs_runtime::assembly::Terms<#d_lit> for #self_ty #where_clause {
            const FORMS: ::zs_runtime::assembly::Forms =
                ::zs_runtime::assembly::Forms { #(#infos,)* };
            const PARAMETERS: &'static [&'static str] = &[#(#names),*];
            #[inline]
            fn body_masses(&self, kind: u32) -> [f64; #d_lit] {
                #masses
            }
            fn has_type(&self, kind: u32) -> bool {
                #has_type
            }
        }
    }
}

/// The body of a constraint kernel: the values `g_c` into `g`, their gradients into `jac`.
fn constraint_body(
    em: &Emitter<'_>,
    graph: &mut Graph,
    g: &[NodeId],
    d: usize,
    k: usize,
) -> TokenStream {
    let n = k * d;
    let mut outs = g.to_vec();
    for &c in g {
        outs.extend(graph.gradient(c, n));
    }
    let m = g.len();
    em.body(graph, &outs, |o| {
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
    })
}

/// The expansion after errors: the user's block (interpreted bodies stubbed), the errors, and,
/// when `D` is known, the traits with no forms, so that uses of the system elsewhere do not add
/// errors.
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
    let kernels = FORMS.iter().map(|spec| {
        let kernel = kernel_trait(spec, d);
        quote! {
            #allow
            impl #impl_generics #kernel for #self_ty #where_clause {}
        }
    });
    quote! {
        #user
        #errors
        #(#kernels)*
        #allow
        impl #impl_generics ::zs_runtime::assembly::Terms<#d_lit> for #self_ty #where_clause {
            const FORMS: ::zs_runtime::assembly::Forms = ::zs_runtime::assembly::Forms::NONE;
        }
    }
}
