//! The expansion of a fixed-size definition (`potential`): `Potential<N>`, `StiffSplit<N>`,
//! `MechanicalSystem<N, M>`, `ConstraintCurvature<N, M>`, `FastPotential<N>`.

use proc_macro2::TokenStream;
use quote::quote;

use super::emit::{matrix, vector, Coords, Derived, Emitter};
use super::{allow_lints, fallback, header, masses_body, user_impl, usize_lit};
use crate::ast::Input;
use crate::lower::Lowered;
use crate::valid::Shape;
use zs_symbolic::{NodeId, Var};

/// The successful expansion.
/// `marked`: the fields of `parameters(...)` and their `Var::Param` indices.
pub(super) fn generate(
    input: &Input<'_>,
    shape: &Shape,
    mut lowered: Lowered,
    marked: &[(String, u32)],
) -> TokenStream {
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
        // Σ_c λ_c ∇³g_c[a, a, ·] (Patrick et al.'s variational equations): the directional
        // derivative applied twice to ∇(Σ_c λ_c g_c), as for V's third contraction.
        (graph.hessian(&grad), graph.third_contraction(&grad))
    };
    // W of the impulse paper (ε⁻² folded in).
    let fast = lowered.fast.map(|w| {
        let grad = graph.gradient(w, n);
        let hess = graph.hessian(&grad);
        (w, grad, hess)
    });

    let em = Emitter {
        params: &lowered.params,
        uses: &lowered.uses,
        coords: Coords::Flat,
        lanes: false,
    };
    let (impl_generics, self_ty, where_clause) = header(input);
    let allow = allow_lints();
    let n_lit = usize_lit(n);
    let m_lit = usize_lit(m);
    let masses = masses_body(input, shape, n);
    let [value, gradient, hessian, third, gradient_hessian, value_gradient, hessian_vector] =
        plain.bodies(&em, &graph, n);
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
    let (curvature, curvature_third) = curvature;
    let curvature_body = em.body(&graph, &flat(&curvature), mat);
    let curvature_third_body = em.body(&graph, &curvature_third, vector);

    let pot = quote!(::zs_runtime::Potential<#n_lit>);
    let [p_value, p_gradient, p_hessian, p_third, p_gradient_hessian, p_value_gradient, p_hessian_vector] =
        match &penalized {
            Some(d) => d.bodies(&em, &graph, n),
            // M = 0: V_ω = V.
            None => [
                quote!(<Self as #pot>::potential(self, q)),
                quote!(<Self as #pot>::gradient(self, q)),
                quote!(<Self as #pot>::hessian(self, q)),
                quote!(<Self as #pot>::third_contraction(self, q, a)),
                quote!(<Self as #pot>::gradient_hessian(self, q)),
                quote!(<Self as #pot>::value_gradient(self, q)),
                quote!(<Self as #pot>::hessian_vector(self, q, a)),
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

    // ∂V/∂θ_p and ∂∇V/∂θ_p for the marked fields (the parameters held fixed elsewhere).
    let parameters_impl = (!marked.is_empty()).then(|| {
        let p_lit = usize_lit(marked.len());
        let names = marked.iter().map(|(name, _)| name.as_str());
        let dv: Vec<NodeId> = marked
            .iter()
            .map(|&(_, k)| graph.derivative(plain.value, Var::Param(k)))
            .collect();
        let dg: Vec<NodeId> = marked
            .iter()
            .flat_map(|&(_, k)| {
                plain
                    .gradient
                    .iter()
                    .map(|&g| graph.derivative(g, Var::Param(k)))
                    .collect::<Vec<_>>()
            })
            .collect();
        let dv_body = em.body(&graph, &dv, vector);
        let dg_body = em.body(&graph, &dg, |o| {
            let rows = o.chunks(n).map(vector);
            quote!([#(#rows),*])
        });
        quote! {
            #allow
            impl #impl_generics ::zs_runtime::ParameterDerivatives<#n_lit, #p_lit> for #self_ty #where_clause {
                const PARAMETERS: [&'static str; #p_lit] = [#(#names),*];
                #[inline]
                fn potential_parameter_gradient(&self, q: &[f64; #n_lit]) -> [f64; #p_lit] {
                    #dv_body
                }
                #[inline]
                fn gradient_parameter_jacobian(&self, q: &[f64; #n_lit]) -> [[f64; #n_lit]; #p_lit] {
                    #dg_body
                }
            }
        }
    });

    quote! {
        #user

        #parameters_impl

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
            #[inline]
            fn value_gradient(&self, q: &[f64; #n_lit]) -> (f64, [f64; #n_lit]) {
                #value_gradient
            }
            #[inline]
            fn hessian_vector(&self, q: &[f64; #n_lit], a: &[f64; #n_lit]) -> [f64; #n_lit] {
                #hessian_vector
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
            fn penalized_value_gradient(
                &self,
                omega: f64,
                q: &[f64; #n_lit],
            ) -> (f64, [f64; #n_lit]) {
                #p_value_gradient
            }
            #[inline]
            fn penalized_hessian_vector(
                &self,
                omega: f64,
                q: &[f64; #n_lit],
                a: &[f64; #n_lit],
            ) -> [f64; #n_lit] {
                #p_hessian_vector
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

        #allow
        impl #impl_generics ::zs_runtime::ConstraintThirdContraction<#n_lit, #m_lit> for #self_ty #where_clause {
            #[inline]
            fn weighted_constraint_third_contraction(
                &self,
                q: &[f64; #n_lit],
                a: &[f64; #n_lit],
                lambda: &[f64; #m_lit],
            ) -> [f64; #n_lit] {
                #curvature_third_body
            }
        }

        #fast_impl
    }
}
