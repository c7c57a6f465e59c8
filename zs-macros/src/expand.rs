//! Expansion: parse → validate → lower → differentiate → schedule → tokens.
//!
//! [`expand`] is the whole macro on `proc_macro2` token streams (unit-testable without the
//! compiler). On success it emits the user's block (with `#[allow(dead_code)]`) and the
//! `Potential<N>` / `StiffSplit<N>` / `MechanicalSystem<N, M>` / `ConstraintCurvature<N, M>`
//! (and `FastPotential<N>`) impls as straight-line code, one `let tK: f64` per scheduled
//! instruction. On error it emits the user's block, every error, and dummy
//! impls (when `N` is known) so that no cascade of "trait not implemented" errors follows.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ItemImpl;

use crate::ast::Input;
use crate::ctxt::Ctxt;
use crate::lower::{self, Lowered};
use crate::sym::{schedule, Binary, Graph, Instr, NodeId, Operand, Unary, Var};
use crate::valid::{self, Shape};

/// The whole macro: `#[mechanical_system(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_impl: ItemImpl = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(_) => {
            let err = not_an_impl(&item).to_compile_error();
            return quote!(#item #err);
        }
    };
    let cx = Ctxt::new();
    if !attr.is_empty() {
        cx.error_spanned_by(&attr, "#[mechanical_system] takes no arguments");
    }
    let input = Input::from_syn(&item_impl);
    let shape = valid::check_signatures(&cx, &input);
    let lowered = lower::lower(&cx, &input, &shape);
    match cx.check() {
        Ok(()) => generate(&input, &shape, lowered),
        Err(err) => fallback(&input, &shape, &err, &lowered.visited),
    }
}

/// The error for an item that is not an `impl` block, at the item's name when it has one.
fn not_an_impl(item: &TokenStream) -> syn::Error {
    let usage = |name: &dyn std::fmt::Display| {
        format!("`impl {name} {{ fn potential(&self, q: &[f64; N]) -> f64 {{ ... }} }}`")
    };
    let on = |what: &str, name: &Ident, at: TokenStream| {
        syn::Error::new_spanned(
            at,
            format!(
                "#[mechanical_system] goes on the impl block that defines the potential, {}, \
                 not on the {what} itself",
                usage(name)
            ),
        )
    };
    match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Struct(s)) => {
            let (kw, name) = (&s.struct_token, &s.ident);
            on("struct", name, quote!(#kw #name))
        }
        Ok(syn::Item::Enum(e)) => {
            let (kw, name) = (&e.enum_token, &e.ident);
            on("enum", name, quote!(#kw #name))
        }
        Ok(syn::Item::Union(u)) => {
            let (kw, name) = (&u.union_token, &u.ident);
            on("union", name, quote!(#kw #name))
        }
        _ => {
            let at = item
                .clone()
                .into_iter()
                .next()
                .map_or_else(Span::call_site, |t| t.span());
            syn::Error::new(
                at,
                format!(
                    "#[mechanical_system] goes on an inherent impl block: {}",
                    usage(&"MySystem")
                ),
            )
        }
    }
}

/// The user's block, re-emitted with `#[allow(dead_code)]` (helpers and the role methods may
/// be unused once the trait impls exist).
///
/// After an error (`stub` is `Some`), it is adjusted so that rustc does not repeat the macro's
/// messages: the bodies the macro interpreted (`stub`'s methods), whose problems were just
/// reported, are replaced by `unreachable!()`, and a trait impl (itself an error) becomes an
/// inherent impl, which the fallback trait impls cannot conflict with. Signatures are kept, so
/// code calling the methods still type-checks.
fn user_impl(item: &ItemImpl, stub: Option<&[String]>) -> TokenStream {
    let mut item = item.clone();
    item.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    // Keeps the trait's `use` used once the impl is made inherent (no "unused import" warning
    // on top of the error).
    let mut trait_use = TokenStream::new();
    if let Some(stub) = stub {
        if let Some((_, path, _)) = item.trait_.take() {
            if item.generics.params.is_empty() {
                trait_use = quote! {
                    const _: () = {
                        #[allow(dead_code)]
                        fn __zs_trait_path<T: ?Sized + #path>() {}
                    };
                };
            }
        }
        for it in &mut item.items {
            if let syn::ImplItem::Fn(f) = it {
                if stub.iter().any(|n| f.sig.ident == n) {
                    f.attrs
                        .push(syn::parse_quote!(#[allow(unused_variables, unused_mut)]));
                    f.block = syn::parse_quote!({
                        ::core::unreachable!("#[mechanical_system] reported an error here")
                    });
                }
            }
        }
    }
    quote!(#item #trait_use)
}

/// Lints silenced in generated code, so that users' `clippy -D warnings` stays clean.
fn allow_lints() -> TokenStream {
    quote! {
        #[allow(
            unused,
            non_snake_case,
            trivial_numeric_casts,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
        )]
    }
}

fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// The `impl<...> Trait for Ty where ...` header pieces.
fn header(input: &Input<'_>) -> (TokenStream, TokenStream, TokenStream) {
    let (impl_generics, _, where_clause) = input.original.generics.split_for_impl();
    (
        impl_generics.into_token_stream(),
        input.original.self_ty.to_token_stream(),
        where_clause.into_token_stream(),
    )
}

fn masses_body(input: &Input<'_>, shape: &Shape, n: usize) -> TokenStream {
    let self_ty = &input.original.self_ty;
    let n = usize_lit(n);
    match shape.masses_self {
        Some(true) => quote!(<#self_ty>::masses(self)),
        Some(false) => quote!(<#self_ty>::masses()),
        None => quote!([1.0; #n]),
    }
}

/// Above this many instructions, a function declares its temporaries in chunks instead of one
/// `let` each (rustc overflows its stack on thousands of nested `let` scopes with debuginfo).
const MAX_LETS: usize = 1000;
/// Temporaries declared per `let` in chunked functions.
const DECL_CHUNK: usize = 64;

/// Emits straight-line function bodies from graph outputs.
struct Emitter<'l> {
    lowered: &'l Lowered,
}

impl Emitter<'_> {
    /// A body computing `outputs` (scheduled together, so they share common subexpressions),
    /// assembled into the return value by `assemble` from one token stream per output.
    fn body(
        &self,
        graph: &Graph,
        outputs: &[NodeId],
        assemble: impl FnOnce(&[TokenStream]) -> TokenStream,
    ) -> TokenStream {
        let prog = schedule(graph, outputs);
        let mut lets = Vec::new();
        let vars = prog.vars();
        if vars.iter().any(|v| matches!(v, Var::Param(_))) {
            for u in &self.lowered.uses {
                lets.push(u.to_token_stream());
            }
        }
        for v in vars {
            match v {
                Var::Q(i) => {
                    let name = var_ident(v);
                    let i = usize_lit(i as usize);
                    lets.push(quote!(let #name: f64 = q[#i];));
                }
                Var::Dir(j) => {
                    let name = var_ident(v);
                    let j = usize_lit(j as usize);
                    lets.push(quote!(let #name: f64 = a[#j];));
                }
                Var::Param(k) => {
                    let name = var_ident(v);
                    let expr = &self.lowered.params[k as usize].tokens;
                    // The user's span: a wrong field name or type is reported at their tokens.
                    // `as f64`: numeric fields and constants of other types (`f32`, integers)
                    // are converted as `self.k as f64` or `f64::from(self.k)` in the user's
                    // code would; other types are a cast error at the user's tokens.
                    let span = first_span(expr);
                    lets.push(quote_spanned!(span=> let #name: f64 = #expr as f64;));
                }
                Var::Lambda(c) => {
                    let name = var_ident(v);
                    let c = usize_lit(c as usize);
                    lets.push(quote!(let #name: f64 = lambda[#c];));
                }
                Var::Omega => {}
            }
        }
        // rustc nests one scope per `let`; with debuginfo, a few thousand nested scopes in one
        // function overflow the compiler's stack. Large functions therefore declare their
        // temporaries in chunks (`let (t0, ..., t63): (f64, ..., f64);`) and assign them:
        // the same SSA values once optimized, with ~64 times fewer scopes.
        let chunked = prog.instrs.len() > MAX_LETS;
        if chunked {
            let ids: Vec<Ident> = (0..prog.instrs.len())
                .map(|k| format_ident!("t{}", k))
                .collect();
            for chunk in ids.chunks(DECL_CHUNK) {
                let tys = chunk.iter().map(|_| quote!(f64));
                lets.push(quote!(let (#(#chunk,)*): (#(#tys,)*);));
            }
        }
        for ins in &prog.instrs {
            let dst = format_ident!("t{}", ins.dst());
            let rhs = match *ins {
                Instr::Unary { op, a, .. } => {
                    let a = operand(a);
                    match op {
                        Unary::Neg => quote!(-#a),
                        Unary::Sqrt => quote!(f64::sqrt(#a)),
                        Unary::Exp => quote!(f64::exp(#a)),
                        Unary::Ln => quote!(f64::ln(#a)),
                        Unary::Sin => quote!(f64::sin(#a)),
                        Unary::Cos => quote!(f64::cos(#a)),
                        Unary::Tan => quote!(f64::tan(#a)),
                        Unary::Tanh => quote!(f64::tanh(#a)),
                        Unary::Acos => quote!(f64::acos(#a)),
                        Unary::Asin => quote!(f64::asin(#a)),
                        Unary::Atan => quote!(f64::atan(#a)),
                    }
                }
                Instr::Binary { op, a, b, .. } => {
                    let (a, b) = (operand(a), operand(b));
                    match op {
                        Binary::Add => quote!(#a + #b),
                        Binary::Sub => quote!(#a - #b),
                        Binary::Mul => quote!(#a * #b),
                        Binary::Div => quote!(#a / #b),
                        Binary::Powf => quote!(f64::powf(#a, #b)),
                        Binary::Atan2 => quote!(f64::atan2(#a, #b)),
                    }
                }
                Instr::Powi { a, n, .. } => {
                    let a = operand(a);
                    let k = Literal::i32_unsuffixed(n.unsigned_abs() as i32);
                    if n < 0 {
                        quote!(f64::powi(#a, -#k))
                    } else {
                        quote!(f64::powi(#a, #k))
                    }
                }
            };
            lets.push(if chunked {
                quote!(#dst = #rhs;)
            } else {
                quote!(let #dst: f64 = #rhs;)
            });
        }
        let outs: Vec<TokenStream> = prog.outputs.iter().map(|&o| operand(o)).collect();
        let result = assemble(&outs);
        quote! {
            #(#lets)*
            #result
        }
    }
}

fn first_span(ts: &TokenStream) -> Span {
    ts.clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

fn var_ident(v: Var) -> Ident {
    match v {
        Var::Q(i) => format_ident!("q{}", i),
        Var::Dir(j) => format_ident!("a{}", j),
        Var::Param(k) => format_ident!("p{}", k),
        Var::Omega => format_ident!("omega"),
        Var::Lambda(c) => format_ident!("lambda{}", c),
    }
}

fn operand(o: Operand) -> TokenStream {
    match o {
        Operand::Const(c) => f64_tokens(c),
        Operand::Var(v) => var_ident(v).into_token_stream(),
        Operand::Temp(k) => format_ident!("t{}", k).into_token_stream(),
    }
}

/// An `f64` constant as tokens (parenthesized when negative, named when not finite).
pub fn f64_tokens(c: f64) -> TokenStream {
    if c.is_nan() {
        quote!(f64::NAN)
    } else if c == f64::INFINITY {
        quote!(f64::INFINITY)
    } else if c == f64::NEG_INFINITY {
        quote!(f64::NEG_INFINITY)
    } else if c.is_sign_negative() {
        let lit = Literal::f64_unsuffixed(-c);
        quote!((-#lit))
    } else {
        Literal::f64_unsuffixed(c).into_token_stream()
    }
}

fn vector(outs: &[TokenStream]) -> TokenStream {
    quote!([#(#outs),*])
}

fn matrix(outs: &[TokenStream], cols: usize) -> TokenStream {
    let rows = outs.chunks(cols.max(1)).map(vector);
    if cols == 0 {
        return quote!([]);
    }
    quote!([#(#rows),*])
}

/// Graph outputs of one differentiated scalar function.
struct Derived {
    value: NodeId,
    gradient: Vec<NodeId>,
    hessian: Vec<Vec<NodeId>>,
    third: Vec<NodeId>,
}

impl Derived {
    fn new(graph: &mut Graph, f: NodeId, n: usize) -> Self {
        let gradient = graph.gradient(f, n);
        let hessian = graph.hessian(&gradient);
        let third = graph.third_contraction(&gradient);
        Derived {
            value: f,
            gradient,
            hessian,
            third,
        }
    }

    fn hessian_flat(&self) -> Vec<NodeId> {
        self.hessian.iter().flatten().copied().collect()
    }

    /// `(value, gradient, hessian, third contraction, gradient + hessian)` bodies.
    fn bodies(&self, em: &Emitter<'_>, graph: &Graph, n: usize) -> [TokenStream; 5] {
        let value = em.body(graph, &[self.value], |o| o[0].clone());
        let gradient = em.body(graph, &self.gradient, vector);
        let hessian = em.body(graph, &self.hessian_flat(), |o| matrix(o, n));
        let third = em.body(graph, &self.third, vector);
        let mut both = self.gradient.clone();
        both.extend(self.hessian_flat());
        let gradient_hessian = em.body(graph, &both, |o| {
            let g = vector(&o[..n]);
            let h = matrix(&o[n..], n);
            quote!((#g, #h))
        });
        [value, gradient, hessian, third, gradient_hessian]
    }
}

/// The successful expansion.
fn generate(input: &Input<'_>, shape: &Shape, mut lowered: Lowered) -> TokenStream {
    let user = user_impl(input.original, None);
    let constraints = lowered.constraints.clone().unwrap_or_default();
    let (Some(n), Some(m), Some(u)) = (shape.n, shape.m, lowered.potential) else {
        // Unreachable: an error was reported whenever one of these is missing.
        let err = syn::Error::new_spanned(
            &input.original.self_ty,
            "internal error: incomplete lowering",
        );
        return fallback(input, shape, &err, &lowered.visited);
    };
    let role_missing = (input.method("stiff_potential").is_some() && lowered.stiff.is_none())
        || (input.method("fast_potential").is_some() && lowered.fast.is_none());
    if constraints.len() != m || role_missing {
        let err = syn::Error::new_spanned(&input.original.self_ty, "internal error: lowering");
        return fallback(input, shape, &err, &lowered.visited);
    }

    let mut graph = std::mem::take(&mut lowered.graph);
    // The stiff part V1 of Tao & Owhadi eq. 19 (structural zero without `stiff_potential`);
    // the system's `Potential` is the total V = V0 + V1 (`potential` + `stiff_potential`).
    let zero = graph.constant(0.0);
    let stiff = lowered.stiff.unwrap_or(zero);
    let f = graph.add(u, stiff);
    let plain = Derived::new(&mut graph, f, n);
    let stiff_grad = graph.gradient(stiff, n);
    let stiff_hess = graph.hessian(&stiff_grad);
    let jacobian: Vec<Vec<NodeId>> = constraints.iter().map(|&c| graph.gradient(c, n)).collect();
    // ½ω² Σ_c g_c² (Tao & Owhadi eq. 7), absent when M = 0.
    let penalty = (m > 0).then(|| {
        let squares: Vec<NodeId> = constraints.iter().map(|&c| graph.mul(c, c)).collect();
        let sum = graph.sum(squares);
        let omega = graph.var(Var::Omega);
        let w2 = graph.mul(omega, omega);
        let half = graph.constant(0.5);
        let k = graph.mul(half, w2);
        graph.mul(k, sum)
    });
    // V_ω = V + ½ω²|g|².
    let penalized = penalty.map(|pen| {
        let fp = graph.add(f, pen);
        Derived::new(&mut graph, fp, n)
    });
    // Hess of the stiff part of V_ω: V1 + ½ω²|g|².
    let pen_stiff_hess = match penalty {
        Some(pen) => {
            let s = graph.add(stiff, pen);
            let grad = graph.gradient(s, n);
            graph.hessian(&grad)
        }
        None => stiff_hess.clone(),
    };
    // Σ_c λ_c Hess g_c = Hess_q (Σ_c λ_c g_c), the λ_c constant for differentiation.
    let curvature = {
        let terms: Vec<NodeId> = constraints
            .iter()
            .enumerate()
            .map(|(c, &g)| {
                let lambda = graph.var(Var::Lambda(c as u32));
                graph.mul(lambda, g)
            })
            .collect();
        let l = graph.sum(terms);
        let grad = graph.gradient(l, n);
        graph.hessian(&grad)
    };
    // W of seed 003 (ε⁻² folded in).
    let fast = lowered.fast.map(|w| {
        let grad = graph.gradient(w, n);
        let hess = graph.hessian(&grad);
        (w, grad, hess)
    });

    let em = Emitter { lowered: &lowered };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let n_lit = usize_lit(n);
    let m_lit = usize_lit(m);
    let masses = masses_body(input, shape, n);
    let [value, gradient, hessian, third, gradient_hessian] = plain.bodies(&em, &graph, n);
    let mat = |o: &[TokenStream]| matrix(o, n);
    let grad_mat = |o: &[TokenStream]| {
        let g = vector(&o[..n]);
        let h = matrix(&o[n..], n);
        quote!((#g, #h))
    };
    let flat = |h: &[Vec<NodeId>]| -> Vec<NodeId> { h.iter().flatten().copied().collect() };

    let g_body = em.body(&graph, &constraints, vector);
    let jac_body = em.body(&graph, &flat(&jacobian), mat);
    let stiff_hess_body = em.body(&graph, &flat(&stiff_hess), mat);
    let gradient_stiff_hess_body = {
        let mut outs = plain.gradient.clone();
        outs.extend(flat(&stiff_hess));
        em.body(&graph, &outs, grad_mat)
    };
    let pen_stiff_hess_body = em.body(&graph, &flat(&pen_stiff_hess), mat);
    let pen_gradient_stiff_hess_body = {
        let mut outs = penalized.as_ref().map_or(&plain, |d| d).gradient.clone();
        outs.extend(flat(&pen_stiff_hess));
        em.body(&graph, &outs, grad_mat)
    };
    let curvature_body = em.body(&graph, &flat(&curvature), mat);

    let pot = quote!(::zs_runtime::Potential<#n_lit>);
    let [p_value, p_gradient, p_hessian, p_third, p_gradient_hessian] = match &penalized {
        Some(d) => d.bodies(&em, &graph, n),
        // M = 0: V_ω = V.
        None => [
            quote!(<Self as #pot>::potential(self, q)),
            quote!(<Self as #pot>::gradient(self, q)),
            quote!(<Self as #pot>::hessian(self, q)),
            quote!(<Self as #pot>::third_contraction(self, q, a)),
            quote!(<Self as #pot>::gradient_hessian(self, q)),
        ],
    };

    let fast_impl = fast.map(|(w, grad, hess)| {
        let w_body = em.body(&graph, &[w], |o| o[0].clone());
        let grad_body = em.body(&graph, &grad, vector);
        let hess_body = em.body(&graph, &flat(&hess), mat);
        quote! {
            #allow
            impl #impl_generics ::zs_runtime::FastPotential<#n_lit> for #self_ty #where_clause {
                #[inline]
                fn fast_potential(&self, q: &[f64; #n_lit]) -> f64 {
                    #w_body
                }
                #[inline]
                fn fast_gradient(&self, q: &[f64; #n_lit]) -> [f64; #n_lit] {
                    #grad_body
                }
                #[inline]
                fn fast_hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                    #hess_body
                }
            }
        }
    });

    quote! {
        #user

        #allow
        impl #impl_generics ::zs_runtime::Potential<#n_lit> for #self_ty #where_clause {
            #[inline]
            fn masses(&self) -> [f64; #n_lit] {
                #masses
            }
            #[inline]
            fn potential(&self, q: &[f64; #n_lit]) -> f64 {
                #value
            }
            #[inline]
            fn gradient(&self, q: &[f64; #n_lit]) -> [f64; #n_lit] {
                #gradient
            }
            #[inline]
            fn hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                #hessian
            }
            #[inline]
            fn third_contraction(&self, q: &[f64; #n_lit], a: &[f64; #n_lit]) -> [f64; #n_lit] {
                #third
            }
            #[inline]
            fn gradient_hessian(&self, q: &[f64; #n_lit]) -> ([f64; #n_lit], [[f64; #n_lit]; #n_lit]) {
                #gradient_hessian
            }
        }

        #allow
        impl #impl_generics ::zs_runtime::StiffSplit<#n_lit> for #self_ty #where_clause {
            #[inline]
            fn stiff_hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                #stiff_hess_body
            }
            #[inline]
            fn gradient_stiff_hessian(
                &self,
                q: &[f64; #n_lit],
            ) -> ([f64; #n_lit], [[f64; #n_lit]; #n_lit]) {
                #gradient_stiff_hess_body
            }
        }

        #allow
        impl #impl_generics ::zs_runtime::MechanicalSystem<#n_lit, #m_lit> for #self_ty #where_clause {
            #[inline]
            fn constraints(&self, q: &[f64; #n_lit]) -> [f64; #m_lit] {
                #g_body
            }
            #[inline]
            fn constraint_jacobian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #m_lit] {
                #jac_body
            }
            #[inline]
            fn penalized_potential(&self, omega: f64, q: &[f64; #n_lit]) -> f64 {
                #p_value
            }
            #[inline]
            fn penalized_gradient(&self, omega: f64, q: &[f64; #n_lit]) -> [f64; #n_lit] {
                #p_gradient
            }
            #[inline]
            fn penalized_hessian(&self, omega: f64, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                #p_hessian
            }
            #[inline]
            fn penalized_third_contraction(
                &self,
                omega: f64,
                q: &[f64; #n_lit],
                a: &[f64; #n_lit],
            ) -> [f64; #n_lit] {
                #p_third
            }
            #[inline]
            fn penalized_gradient_hessian(
                &self,
                omega: f64,
                q: &[f64; #n_lit],
            ) -> ([f64; #n_lit], [[f64; #n_lit]; #n_lit]) {
                #p_gradient_hessian
            }
            #[inline]
            fn penalized_stiff_hessian(
                &self,
                omega: f64,
                q: &[f64; #n_lit],
            ) -> [[f64; #n_lit]; #n_lit] {
                #pen_stiff_hess_body
            }
            #[inline]
            fn penalized_gradient_stiff_hessian(
                &self,
                omega: f64,
                q: &[f64; #n_lit],
            ) -> ([f64; #n_lit], [[f64; #n_lit]; #n_lit]) {
                #pen_gradient_stiff_hess_body
            }
        }

        #allow
        impl #impl_generics ::zs_runtime::ConstraintCurvature<#n_lit, #m_lit> for #self_ty #where_clause {
            #[inline]
            fn weighted_constraint_hessian(
                &self,
                q: &[f64; #n_lit],
                lambda: &[f64; #m_lit],
            ) -> [[f64; #n_lit]; #n_lit] {
                #curvature_body
            }
        }

        #fast_impl
    }
}

/// The expansion after errors: the user's block, the errors, and (when `N` is known) dummy
/// impls returning zeros, so that uses of the traits elsewhere do not add errors.
///
/// `visited` are the methods whose bodies were interpreted (see [`user_impl`]).
fn fallback(input: &Input<'_>, shape: &Shape, err: &syn::Error, visited: &[String]) -> TokenStream {
    let user = user_impl(input.original, Some(visited));
    let errors = err.to_compile_error();
    let Some(n) = shape.n else {
        return quote!(#user #errors);
    };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let n_lit = usize_lit(n);
    let potential = quote! {
        #allow
        impl #impl_generics ::zs_runtime::Potential<#n_lit> for #self_ty #where_clause {
            fn masses(&self) -> [f64; #n_lit] { [1.0; #n_lit] }
            fn potential(&self, q: &[f64; #n_lit]) -> f64 { 0.0 }
            fn gradient(&self, q: &[f64; #n_lit]) -> [f64; #n_lit] { [0.0; #n_lit] }
            fn hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                [[0.0; #n_lit]; #n_lit]
            }
            fn third_contraction(&self, q: &[f64; #n_lit], a: &[f64; #n_lit]) -> [f64; #n_lit] {
                [0.0; #n_lit]
            }
        }

        #allow
        impl #impl_generics ::zs_runtime::StiffSplit<#n_lit> for #self_ty #where_clause {
            fn stiff_hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                [[0.0; #n_lit]; #n_lit]
            }
        }
    };
    let fast = input.method("fast_potential").map(|_| {
        quote! {
            #allow
            impl #impl_generics ::zs_runtime::FastPotential<#n_lit> for #self_ty #where_clause {
                fn fast_potential(&self, q: &[f64; #n_lit]) -> f64 { 0.0 }
                fn fast_gradient(&self, q: &[f64; #n_lit]) -> [f64; #n_lit] { [0.0; #n_lit] }
                fn fast_hessian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                    [[0.0; #n_lit]; #n_lit]
                }
            }
        }
    });
    let system = shape.m.map(|m| {
        let m_lit = usize_lit(m);
        quote! {
            #allow
            impl #impl_generics ::zs_runtime::MechanicalSystem<#n_lit, #m_lit> for #self_ty #where_clause {
                fn constraints(&self, q: &[f64; #n_lit]) -> [f64; #m_lit] { [0.0; #m_lit] }
                fn constraint_jacobian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #m_lit] {
                    [[0.0; #n_lit]; #m_lit]
                }
                fn penalized_potential(&self, omega: f64, q: &[f64; #n_lit]) -> f64 { 0.0 }
                fn penalized_gradient(&self, omega: f64, q: &[f64; #n_lit]) -> [f64; #n_lit] {
                    [0.0; #n_lit]
                }
                fn penalized_hessian(&self, omega: f64, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #n_lit] {
                    [[0.0; #n_lit]; #n_lit]
                }
                fn penalized_third_contraction(
                    &self,
                    omega: f64,
                    q: &[f64; #n_lit],
                    a: &[f64; #n_lit],
                ) -> [f64; #n_lit] {
                    [0.0; #n_lit]
                }
            }

            #allow
            impl #impl_generics ::zs_runtime::ConstraintCurvature<#n_lit, #m_lit> for #self_ty #where_clause {
                fn weighted_constraint_hessian(
                    &self,
                    q: &[f64; #n_lit],
                    lambda: &[f64; #m_lit],
                ) -> [[f64; #n_lit]; #n_lit] {
                    [[0.0; #n_lit]; #n_lit]
                }
            }
        }
    });
    quote! {
        #user
        #errors
        #potential
        #fast
        #system
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double_pendulum() -> TokenStream {
        quote! {
            impl DoublePendulum {
                fn masses(&self) -> [f64; 4] { [1.0, 1.0, 1.0, 1.0] }
                fn potential(&self, q: &[f64; 4]) -> f64 { -self.gravity * (q[1] + q[3]) }
                fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
                    let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
                    [x1 * x1 + y1 * y1 - self.l1 * self.l1,
                     (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2]
                }
            }
        }
    }

    fn count_tokens(ts: TokenStream) -> usize {
        ts.into_iter()
            .map(|t| match t {
                proc_macro2::TokenTree::Group(g) => 2 + count_tokens(g.stream()),
                _ => 1,
            })
            .sum()
    }

    /// The generated items, one `fn` per entry: `(name, number of statements)`.
    fn functions(out: &TokenStream) -> Vec<(String, usize)> {
        let file: syn::File = syn::parse2(out.clone()).expect("expansion parses as items");
        let mut fns = Vec::new();
        for item in file.items {
            let syn::Item::Impl(imp) = item else { continue };
            if imp.trait_.is_none() {
                continue;
            }
            for it in imp.items {
                if let syn::ImplItem::Fn(f) = it {
                    fns.push((f.sig.ident.to_string(), f.block.stmts.len()));
                }
            }
        }
        fns
    }

    #[test]
    fn double_pendulum_expansion_size() {
        let user_tokens = count_tokens(double_pendulum());
        let out = expand(TokenStream::new(), double_pendulum());
        let text = out.to_string();
        assert!(!text.contains("compile_error"), "{text}");
        let total = count_tokens(out.clone());
        let fns = functions(&out);
        let lets: usize = fns.iter().map(|(_, k)| k).sum();
        println!(
            "double pendulum: user block {user_tokens} tokens, expansion {total} tokens \
             ({} generated tokens), {} bytes as text",
            total - user_tokens,
            text.len()
        );
        for (name, k) in &fns {
            println!("  {name}: {k} statements");
        }
        println!("  total statements: {lets}");
        if std::env::var_os("ZS_PRINT_EXPANSION").is_some() {
            println!("{text}");
        }
        // Potential (6), StiffSplit (2), MechanicalSystem (9), ConstraintCurvature (1).
        assert_eq!(fns.len(), 6 + 2 + 9 + 1);
        // Straight-line and small: the penalized Hessian of 2 quadratic constraints in 4
        // coordinates needs a few dozen instructions, not hundreds.
        let (_, ph) = fns.iter().find(|(n, _)| n == "penalized_hessian").unwrap();
        assert!(*ph < 80, "penalized_hessian has {ph} statements");
        // The potential is linear: its Hessian and third contraction are structural zeros.
        let (_, h) = fns.iter().find(|(n, _)| n == "hessian").unwrap();
        assert_eq!(*h, 1);
        // No `stiff_potential`: the stiff Hessian is a structural zero, and the stiff part of
        // V_ω is the penalty alone, whose Hessian is the penalized one (V is linear).
        let (_, sh) = fns.iter().find(|(n, _)| n == "stiff_hessian").unwrap();
        assert_eq!(*sh, 1);
        let (_, psh) = fns
            .iter()
            .find(|(n, _)| n == "penalized_stiff_hessian")
            .unwrap();
        assert_eq!(psh, ph);
        assert!(
            !text.contains("FastPotential"),
            "no fast_potential, no impl"
        );
        assert!(text.contains("self . gravity"));
    }

    #[test]
    fn large_functions_declare_temporaries_in_chunks() {
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Lj {
                    fn potential(&self, q: &[f64; 15]) -> f64 {
                        let mut v = 0.0;
                        for i in 0..5 {
                            for j in (i + 1)..5 {
                                let mut r2 = 0.0;
                                for c in 0..3 {
                                    let d = q[3 * i + c] - q[3 * j + c];
                                    r2 += d * d;
                                }
                                let s6 = (1.0 / r2).powi(3);
                                v += 4.0 * (s6 * s6 - s6);
                            }
                        }
                        v
                    }
                }
            },
        );
        let fns = functions(&out);
        let (_, hessian_stmts) = fns.iter().find(|(n, _)| n == "hessian").unwrap();
        // More than MAX_LETS instructions (one assignment statement each), declared by a few
        // chunked `let`s.
        let text = out.to_string();
        let hessian = text
            .split("fn hessian")
            .nth(1)
            .unwrap()
            .split("fn third_contraction")
            .next()
            .unwrap();
        let lets = hessian.matches("let ").count();
        assert!(*hessian_stmts > MAX_LETS, "{hessian_stmts}");
        assert!(lets < 100, "{lets} lets in hessian");
        assert!(hessian.contains("let (t0 , t1 ,"), "{}", &hessian[..200]);
        // Small functions keep one `let` per instruction.
        let potential = text.split("fn potential").nth(2).unwrap();
        assert!(potential.contains("let t0 : f64 ="));
    }

    #[test]
    fn masses_default_and_no_constraints() {
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Spring {
                    fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * self.k * q[0] * q[0] }
                }
            },
        );
        let text = out.to_string();
        assert!(!text.contains("compile_error"), "{text}");
        assert!(text.contains("MechanicalSystem < 1 , 0 >"), "{text}");
        assert!(text.contains("[1.0 ; 1]"), "{text}");
        // Penalized methods delegate to the plain ones.
        assert!(text.contains("< Self as :: zs_runtime :: Potential < 1 > > :: hessian (self , q)"));
    }

    #[test]
    fn errors_give_fallback_impls() {
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Bad {
                    fn potential(&self, q: &[f64; 2]) -> f64 { q[0].abs() + q[5] }
                }
            },
        );
        let text = out.to_string();
        assert!(text.contains("compile_error"), "{text}");
        assert!(text.contains("non-smooth"), "{text}");
        assert!(text.contains("out of range"), "{text}");
        assert!(text.contains("Potential < 2 >"), "{text}");
        assert!(text.contains("MechanicalSystem < 2 , 0 >"), "{text}");
        assert!(text.contains("StiffSplit < 2 >"), "{text}");
        assert!(text.contains("ConstraintCurvature < 2 , 0 >"), "{text}");
        assert!(!text.contains("FastPotential"), "{text}");
        // Still valid item syntax.
        syn::parse2::<syn::File>(out).unwrap();
        // A `fast_potential` (even a broken one) gets a dummy `FastPotential` impl.
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Bad {
                    fn potential(&self, q: &[f64; 2]) -> f64 { q[0] }
                    fn fast_potential(&self, q: &[f64; 2]) -> f64 { q[0].floor() }
                }
            },
        );
        let text = out.to_string();
        assert!(text.contains("non-smooth"), "{text}");
        assert!(text.contains("FastPotential < 2 >"), "{text}");
        syn::parse2::<syn::File>(out).unwrap();
    }

    #[test]
    fn fallback_keeps_signatures_and_stubs_interpreted_bodies() {
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Bad {
                    fn helper(&self, x: f64) -> f64 { x / 2 }
                    fn unrelated(&self) -> u8 { 7 }
                    fn potential(&self, q: &[f64; 1]) -> f64 { self.helper(q[0]) }
                }
            },
        );
        let file: syn::File = syn::parse2(out).unwrap();
        let user = file
            .items
            .iter()
            .find_map(|it| match it {
                syn::Item::Impl(i) if i.trait_.is_none() => Some(i),
                _ => None,
            })
            .expect("the user's block");
        let body = |name: &str| {
            user.items
                .iter()
                .find_map(|it| match it {
                    syn::ImplItem::Fn(f) if f.sig.ident == name => {
                        Some(f.block.to_token_stream().to_string())
                    }
                    _ => None,
                })
                .unwrap()
        };
        // The interpreted bodies (where the error is) are stubbed, so rustc does not repeat the
        // macro's message; the others are kept.
        assert!(body("helper").contains("unreachable"), "{}", body("helper"));
        assert!(body("potential").contains("unreachable"));
        assert_eq!(body("unrelated"), "{ 7 }");
        // A trait impl becomes inherent, so the fallback impls cannot conflict with it.
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Potential<1> for Bad {
                    fn potential(&self, q: &[f64; 1]) -> f64 { q[0] }
                }
            },
        );
        let text = out.to_string();
        assert!(text.contains("not on a trait impl"), "{text}");
        assert!(text.contains("impl Bad"), "{text}");
        assert!(!text.contains("impl Potential < 1 > for Bad"), "{text}");
    }

    #[test]
    fn parameters_are_read_as_f64() {
        let out = expand(
            TokenStream::new(),
            quote! {
                impl S { fn potential(&self, q: &[f64; 1]) -> f64 { self.k * q[0] } }
            },
        );
        assert!(out.to_string().contains("self . k as f64"), "{out}");
    }

    #[test]
    fn unknown_n_gives_no_impls() {
        let out = expand(
            TokenStream::new(),
            quote! {
                impl Bad { fn potential(&self, q: &[f64; N]) -> f64 { q[0] } }
            },
        );
        let text = out.to_string();
        assert!(text.contains("compile_error"));
        assert!(!text.contains("Potential <"), "{text}");
    }

    #[test]
    fn not_an_impl_and_arguments() {
        let out = expand(
            TokenStream::new(),
            quote!(
                struct S;
            ),
        );
        let text = out.to_string();
        assert!(text.contains("struct S"), "{text}");
        assert!(text.contains("not on the struct itself"), "{text}");
        let out = expand(
            TokenStream::new(),
            quote!(
                fn f() {}
            ),
        );
        assert!(out.to_string().contains("inherent impl block"), "{out}");
        let out = expand(
            quote!(fast),
            quote!(impl S { fn potential(&self, q: &[f64; 1]) -> f64 { q[0] } }),
        );
        assert!(out.to_string().contains("takes no arguments"));
    }

    #[test]
    fn constants_render() {
        assert_eq!(f64_tokens(2.0).to_string(), "2.0");
        assert_eq!(f64_tokens(-0.5).to_string(), "(- 0.5)");
        assert_eq!(f64_tokens(f64::INFINITY).to_string(), "f64 :: INFINITY");
        let x = 0.1 + 0.2;
        let back: f64 = f64_tokens(x).to_string().parse().unwrap();
        assert_eq!(back, x);
    }
}
