//! Tests of the expansion.

use super::emit::{f64_tokens, MAX_LETS};
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
    // Potential (8, with hessian_vector), StiffSplit (2), MechanicalSystem (11, with
    // penalized_hessian_vector), ConstraintCurvature (1), ConstraintThirdContraction (1).
    assert_eq!(fns.len(), 8 + 2 + 11 + 1 + 1);
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

/// The TIP3P pair term (9 Coulomb site pairs, O–O Lennard-Jones), as `systems/src/water`
/// defines it.
fn tip3p_pair() -> TokenStream {
    quote! {
        impl Water {
            fn pair_potential(&self, a: &[f64; 9], b: &[f64; 9]) -> f64 {
                let mut e = 0.0;
                for i in 0..3 {
                    for j in 0..3 {
                        let qi = if i == 0 { self.q_o } else { self.q_h };
                        let qj = if j == 0 { self.q_o } else { self.q_h };
                        let r2 = (b[3 * j] - a[3 * i]).powi(2)
                            + (b[3 * j + 1] - a[3 * i + 1]).powi(2)
                            + (b[3 * j + 2] - a[3 * i + 2]).powi(2);
                        e += self.coulomb * qi * qj / r2.sqrt();
                    }
                }
                let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
                let r6 = r2 * r2 * r2;
                e + self.lj_a / (r6 * r6) - self.lj_c / r6
            }
        }
    }
}

/// Occurrences of the punctuation `op` in the body of the generated function `name`.
fn count_punct(out: &TokenStream, name: &str, op: char) -> usize {
    fn count(ts: TokenStream, op: char) -> usize {
        ts.into_iter()
            .map(|t| match t {
                proc_macro2::TokenTree::Group(g) => count(g.stream(), op),
                proc_macro2::TokenTree::Punct(p) if p.as_char() == op => 1,
                _ => 0,
            })
            .sum()
    }
    count(fn_body(out, name), op)
}

/// The body of the generated function `name`.
fn fn_body(out: &TokenStream, name: &str) -> TokenStream {
    let file: syn::File = syn::parse2(out.clone()).expect("the expansion parses");
    for item in file.items {
        if let syn::Item::Impl(imp) = item {
            for it in imp.items {
                if let syn::ImplItem::Fn(f) = it {
                    if f.sig.ident == name {
                        return f.block.to_token_stream();
                    }
                }
            }
        }
    }
    panic!("no fn {name} in the expansion")
}

/// The SIMD kernels take no square root and divide by nothing: a TIP3P pair's value and
/// gradient need nine `1/r` (one per Coulomb site pair, `Lanes::rsqrt`: Newton's iteration, no
/// divider), and the Lennard-Jones `A / (r⁶ r⁶)` and `C / r⁶` as written become powers of the
/// O–O pair's `1/r` (two more `rsqrt` calls on the same value, which LLVM merges), against 31
/// divisions and 9 square roots in the scalar kernel, which keeps the quotients whose latency it
/// is bound by.
#[test]
fn lane_kernels_divide_once_per_denominator() {
    let out = expand(TokenStream::new(), tip3p_pair());
    let text = out.to_string();
    assert!(!text.contains("compile_error"), "{text}");
    let scalar = count_punct(&out, "value_gradient", '/');
    let lanes = count_punct(&out, "value_gradient_lanes", '/');
    let body = fn_body(&out, "value_gradient_lanes").to_string();
    let sqrt = body.matches("Lanes :: sqrt").count();
    let rsqrt = body.matches("Lanes :: rsqrt").count();
    println!(
        "TIP3P pair: {scalar} divisions in value_gradient, {lanes} in the lanes ({sqrt} sqrt, {rsqrt} rsqrt)"
    );
    assert_eq!(lanes, 0, "divisions in value_gradient_lanes");
    assert_eq!(
        (sqrt, rsqrt),
        (0, 11),
        "square roots in value_gradient_lanes"
    );
    assert!(scalar > lanes);
}

#[test]
fn parameters_must_be_fields_the_definition_reads() {
    let system = quote!(impl S {
        fn potential(&self, q: &[f64; 1]) -> f64 { 0.5 * self.k * q[0] * q[0] }
    });
    // A marked field: a ParameterDerivatives impl with its name.
    let out = expand(quote!(parameters(k)), system.clone()).to_string();
    assert!(
        out.contains("ParameterDerivatives") && out.contains("\"k\""),
        "{out}"
    );
    assert!(!out.contains("compile_error"), "{out}");
    // A field the potential does not read, a name given twice: errors at the names.
    let out = expand(quote!(parameters(k, c)), system.clone()).to_string();
    assert!(out.contains("`c` is not read as `self.c`"), "{out}");
    let out = expand(quote!(parameters(k, k)), system.clone()).to_string();
    assert!(out.contains("named twice"), "{out}");
    // Anything else is rejected with what is accepted.
    let out = expand(quote!(params = 1), system).to_string();
    assert!(out.contains("other than `parameters(field, ...)`"), "{out}");
    // Term-by-term systems: each kernel's derivatives, and the names on `Terms`.
    let out = expand(
        quote!(parameters(k)),
        quote!(impl S {
            fn body_masses(&self) -> [f64; 3] { [1.0; 3] }
            fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 { self.k * (a[0] - b[0]).powi(2) }
        }),
    )
    .to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(
        out.contains("fn parameter_derivatives") && out.contains("PARAMETERS"),
        "{out}"
    );
}

/// A real-space Ewald pair, `erfc(αr)/r` under a cutoff: its lane kernel binds `erfc(αr)` and
/// the derivative's `e^{−(αr)²}` with one `erfc_exp` call (one exponential), calls neither
/// `erfc` nor `exp` besides, takes `r` as `r² · (1/√r²)` (`simd::root`) and divides by
/// nothing (a Lennard-Jones `σ²/r²` beside it is `σ² (1/√r²)²`); the scalar kernel keeps both
/// functions.
#[test]
fn an_ewald_pair_takes_erfc_and_its_exponential_in_one_call() {
    let out = expand(
        TokenStream::new(),
        quote!(impl S {
            fn body_masses(&self) -> [f64; 3] { [1.0; 3] }
            fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
                let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
                if r2 < 81.0 {
                    let r = r2.sqrt();
                    let s6 = (self.s2 / r2).powi(3);
                    self.qq * erfc(self.alpha * r) / r + self.e4 * (s6 * s6 - s6)
                } else {
                    0.0
                }
            }
        }),
    );
    let text = out.to_string();
    assert!(!text.contains("compile_error"), "{text}");
    let lanes = fn_body(&out, "value_gradient_lanes").to_string();
    assert_eq!(lanes.matches("simd :: erfc_exp").count(), 1, "{lanes}");
    assert_eq!(lanes.matches("simd :: exp (").count(), 0, "{lanes}");
    assert_eq!(lanes.matches("simd :: erfc (").count(), 0, "{lanes}");
    // `r = √(r²)`: `r² · (1/√r²)` (`simd::root`), no square-root instruction.
    assert_eq!(lanes.matches("Lanes :: sqrt").count(), 0, "{lanes}");
    assert_eq!(lanes.matches("simd :: root").count(), 1, "{lanes}");
    // The Lennard-Jones `σ²/r²` beside the Coulomb `1/r`: `(1/√r²)²`, no division.
    assert_eq!(count_punct(&out, "value_gradient_lanes", '/'), 0, "{lanes}");
    // The value alone has no exponential to share: `erfc` on its own.
    let value = fn_body(&out, "value_lanes").to_string();
    assert_eq!(value.matches("simd :: erfc (").count(), 1, "{value}");
    let scalar = fn_body(&out, "value_gradient").to_string();
    assert_eq!(scalar.matches("special :: erfc (").count(), 1, "{scalar}");
    assert_eq!(scalar.matches("f64 :: exp (").count(), 1, "{scalar}");
}
