//! Tests of the lowering stage.

use super::*;
use crate::valid;
use syn::Ident;
use syn::{parse_quote, ItemImpl};
use zs_symbolic::Var;

/// The fields of the test systems `S` (read as parameters).
struct Fields {
    k: f64,
    l: f64,
    arr: [f64; 3],
}

const SYS: Fields = Fields {
    k: 1.7,
    l: 0.8,
    arr: [0.3, 1.1, 2.5],
};

fn param_value(tokens: &str) -> f64 {
    match tokens.replace(' ', "").as_str() {
        "self.k" => SYS.k,
        "self.l" => SYS.l,
        "self.arr[0]" => SYS.arr[0],
        "self.arr[1]" => SYS.arr[1],
        "self.arr[2]" => SYS.arr[2],
        "GLOBAL_K" => GLOBAL_K,
        other => panic!("unexpected parameter {other}"),
    }
}

const GLOBAL_K: f64 = 0.25;

/// Lowers `item` and returns (graph, V, g, param values), panicking on errors.
fn lower_ok(item: &ItemImpl) -> (Graph, NodeId, Vec<NodeId>, Vec<f64>) {
    let cx = Ctxt::new();
    let input = Input::from_syn(item);
    let shape = valid::check_signatures(&cx, &input);
    let lowered = lower(&cx, &input, &shape);
    if let Err(e) = cx.check() {
        let msgs: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        panic!("unexpected errors: {msgs:#?}");
    }
    let params = lowered
        .params
        .iter()
        .map(|p| param_value(&p.tokens.to_string()))
        .collect();
    (
        lowered.graph,
        lowered.potential.expect("potential"),
        lowered.constraints.unwrap_or_default(),
        params,
    )
}

fn errors(item: ItemImpl) -> Vec<String> {
    let cx = Ctxt::new();
    let input = Input::from_syn(&item);
    let shape = valid::check_signatures(&cx, &input);
    let _ = lower(&cx, &input, &shape);
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

fn eval(g: &Graph, n: NodeId, q: &[f64], params: &[f64]) -> f64 {
    g.eval(n, &|v| match v {
        Var::Q(i) => q[i as usize],
        Var::Param(k) => params[k as usize],
        Var::Dir(_) | Var::Omega | Var::Lambda(_) => panic!("unexpected {v:?}"),
    })
}

fn point(n: usize, seed: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.3 + 0.17 * ((i * 7 + seed * 13) % 11) as f64 - 0.05 * seed as f64)
        .collect()
}

/// Compiles the impl items natively (as `impl S`) *and* lowers them, then compares
/// `potential` (and `constraints`, if any) at a few points.
macro_rules! same_as_rust {
    ($n:literal; $($items:tt)*) => {{
        #[allow(dead_code)]
        struct S {
            k: f64,
            l: f64,
            arr: [f64; 3],
        }
        #[allow(dead_code, unused_mut, unused_variables, clippy::all)]
        impl S { $($items)* }
        let sys = S { k: SYS.k, l: SYS.l, arr: SYS.arr };
        let item: ItemImpl = parse_quote!(impl S { $($items)* });
        let (g, v, _, params) = lower_ok(&item);
        for seed in 0..4 {
            let q: [f64; $n] = point($n, seed).try_into().unwrap();
            let want = sys.potential(&q);
            let got = eval(&g, v, &q, &params);
            assert!(
                (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "at {q:?}: graph {got} vs rust {want}"
            );
        }
    }};
}

#[test]
fn double_pendulum_constraints() {
    let item: ItemImpl = parse_quote! {
        impl S {
            fn potential(&self, q: &[f64; 4]) -> f64 { -self.k * (q[1] + q[3]) }
            fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
                let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
                [x1 * x1 + y1 * y1 - self.l * self.l,
                 (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l * self.l]
            }
        }
    };
    let (g, v, c, params) = lower_ok(&item);
    assert_eq!(c.len(), 2);
    let q = [0.3, -0.9, 1.2, -1.7];
    assert!((eval(&g, v, &q, &params) - (-SYS.k * (q[1] + q[3]))).abs() < 1e-15);
    let g0 = q[0] * q[0] + q[1] * q[1] - SYS.l * SYS.l;
    let g1 = (q[2] - q[0]).powi(2) + (q[3] - q[1]).powi(2) - SYS.l * SYS.l;
    assert!((eval(&g, c[0], &q, &params) - g0).abs() < 1e-15);
    assert!((eval(&g, c[1], &q, &params) - g1).abs() < 1e-15);
}

#[test]
fn loops_arrays_and_accumulation() {
    same_as_rust! { 9;
        fn potential(&self, q: &[f64; 9]) -> f64 {
            let mut v = 0.0;
            for i in 0..3 {
                for j in (i + 1)..3 {
                    let r = [q[3 * i] - q[3 * j], q[3 * i + 1] - q[3 * j + 1],
                             q[3 * i + 2] - q[3 * j + 2]];
                    let mut d2 = 0.0;
                    for c in 0..3 {
                        d2 += r[c] * r[c];
                    }
                    v += self.k * (d2.sqrt() - self.l).powi(2);
                }
            }
            v
        }
    }
}

#[test]
fn mutation_of_nested_arrays_and_compound_ops() {
    same_as_rust! { 3;
        fn potential(&self, q: &[f64; 3]) -> f64 {
            let mut s = [[0.0; 3]; 3];
            for i in 0..3 {
                for j in 0..=2 {
                    if i == j {
                        s[i][j] += q[i] * q[i];
                    } else if i < j && (j - i == 1 || i + j == 2) {
                        s[i][j] -= q[i] * q[j];
                    } else {
                        s[i][j] = 0.5 * q[j];
                    }
                    s[i][j] *= 1.5;
                    s[i][j] /= 2.0;
                }
            }
            let mut x: f64;
            x = s[0][0] + s[1][1];
            x -= s[0][1] * s[2][1];
            let (a, b): (f64, f64) = (s[2][2], s[1][2]);
            let [c, _, d] = s[1];
            x + a * b + c - d
        }
    }
}

#[test]
fn functions_consts_and_casts() {
    same_as_rust! { 3;
        fn potential(&self, q: &[f64; 3]) -> f64 {
            const W: f64 = 2.0 * std::f64::consts::PI;
            const K: usize = 3;
            use std::f64::consts::E;
            let (x, y, z) = (q[0], q[1], q[2]);
            let mut v = x.sin() * f64::cos(y) + (x * y).exp() - (1.0 + z * z).ln()
                + x.tan() + y.tanh() + (0.5 * x).acos() + (0.5 * y).asin() + z.atan()
                + y.atan2(x) + f64::atan2(z, 2.0) + (z * z + 1.0).powf(0.5 * x)
                + (x + 2.0).sqrt() * core::f64::consts::FRAC_PI_4 + std::f64::consts::LN_2
                + W * E + x.powi(K as i32) + y.powi(-2) + GLOBAL_K * z;
            for i in 0..K {
                v += (i as f64) * q[i] / (1.0 + i as f64);
            }
            v += x.recip() + (x * x + 1.0).log10() + (y * y + 2.0).log2()
                + (z * z + 1.0).log(3.0) + x.exp2() + y.exp_m1() + (z * z).ln_1p()
                + x.sinh() + y.cosh() + z.asinh() + (2.0 + x * x).acosh()
                + (0.5 * y).atanh() + x.hypot(y) + x.mul_add(y, z) + z.to_radians()
                + y.to_degrees();
            let (s, c) = z.sin_cos();
            v + s * c + 1e-3 * 2f64 + 3_f64
        }
    }
}

#[test]
fn helpers_params_blocks_and_returns() {
    same_as_rust! { 4;
        const SPRINGS: usize = 2;
        fn morse(&self, r: f64) -> f64 {
            let e = (-self.arr[1] * (r - self.l)).exp();
            self.k * (1.0 - e).powi(2)
        }
        fn dist(&self, q: &[f64; 4], i: usize, j: usize) -> f64 {
            ((q[2 * i] - q[2 * j]).powi(2) + (q[2 * i + 1] - q[2 * j + 1]).powi(2)).sqrt()
        }
        fn pair(x: f64) -> (f64, f64) {
            (x, x * x)
        }
        fn potential(&self, q: &[f64; 4]) -> f64 {
            let r = self.dist(q, 0, 1);
            let (a, b) = Self::pair(q[0]);
            let mut v = {
                let t = self.morse(r);
                t + a * b
            };
            for i in 0..Self::SPRINGS {
                if i == 1 {
                    continue;
                }
                v += self.arr[i] * q[i] * q[i];
            }
            for (i, x) in q.iter().enumerate().skip(1).step_by(2) {
                v += (i as f64) * x;
            }
            for x in [q[0], q[3]] {
                v += x * x * x;
            }
            for i in (0..4).rev() {
                if i < 2 {
                    break;
                }
                v -= q[i];
            }
            let c = match Self::SPRINGS {
                0 | 1 => 1.0,
                2..=5 => 2.0,
                _ => 3.0,
            };
            return v * c;
        }
    }
}

#[test]
fn early_return_in_constant_branch() {
    same_as_rust! { 2;
        fn potential(&self, q: &[f64; 2]) -> f64 {
            for i in 0..10 {
                if i == 3 {
                    return q[0] * (i as f64);
                }
            }
            q[1]
        }
    }
}

fn assert_error(item: ItemImpl, needle: &str) {
    let errs = errors(item);
    assert!(
        errs.iter().any(|e| e.contains(needle)),
        "expected an error containing {needle:?}, got {errs:#?}"
    );
}

#[test]
fn non_smooth_functions() {
    for f in ["abs", "floor", "ceil", "round", "signum"] {
        let f = Ident::new(f, proc_macro2::Span::call_site());
        assert_error(
            parse_quote!(impl S { fn potential(&self, q: &[f64; 1]) -> f64 { q[0].#f() } }),
            &format!("`{f}` is non-smooth: not differentiable everywhere"),
        );
    }
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 2]) -> f64 { q[0].max(q[1]) } }),
        "`max` is non-smooth",
    );
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 2]) -> f64 { f64::min(q[0], q[1]) } }),
        "`min` is non-smooth",
    );
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 1]) -> f64 { q[0].cbrt2() } }),
        "unsupported method `cbrt2` on f64",
    );
}

#[test]
fn index_errors() {
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 2]) -> f64 { q[2] } }),
        "index 2 is out of range for `q` of length 2 (valid indices are 0..=1)",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 {
                let mut v = 0.0;
                for i in 0..2 { v += q[i + 1]; }
                v
            }
        }),
        "index `i + 1` = 2 is out of range for `q` of length 2",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { let lj = |r: f64| r; lj(q[0]) }
        }),
        "closures are not supported",
    );
    // ... and only that: the call of the closure adds no second error.
    let errs = errors(parse_quote!(impl S {
        fn potential(&self, q: &[f64; 2]) -> f64 { let lj = |r: f64| r; lj(q[0]) }
    }));
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 2]) -> f64 { q[self.n] } }),
        "index must be an integer constant known at expansion time (a literal, a loop \
         variable, a `const` of the fn or impl, or arithmetic on them), not a run-time value \
         such as `self.field`",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { let i = 0; q[i - 1] }
        }),
        "index -1 is negative",
    );
}

#[test]
fn integer_arithmetic_and_branches_on_coordinates() {
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 1]) -> f64 { 2 * q[0] } }),
        "integer arithmetic on coordinates",
    );
    assert_error(
        parse_quote!(impl S { fn potential(&self, q: &[f64; 1]) -> f64 { (q[0] as usize) as f64 } }),
        "casting an f64 to an integer",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 { if q[0] == 0.0 { q[0] } else { 0.0 } }
        }),
        "hold on a set of measure zero",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 { match q[0] { _ => 1.0 } }
        }),
        "`match` on coordinates is non-smooth",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 {
                for i in 0..3 { if q[0] > 1.0 { return q[0]; } }
                0.0
            }
        }),
        "`return`, `break` and `continue` are not supported inside a branch decided at run time",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 {
                let mut n = 0;
                if q[0] > 1.0 { n += 1; }
                q[0] * (n as f64)
            }
        }),
        "may change only f64 values: `n` is an integer in one branch and an integer",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 { if q[0] > 1.0 { q[0] } else { [0.0] } }
        }),
        "may change only f64 values: the value of the `if` is an `f64`",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 { let c = q[0] < 1.0; c + q[0] }
        }),
        "unsupported operands: a condition on coordinates or parameters and an `f64`",
    );
}

/// Piecewise terms: `if`/`else` on comparisons decided at run time, with `&&`, `||`, `!`,
/// branches that assign (scalars, array elements) or yield values, nested in loops, on
/// parameters too. The lowered graph equals the Rust function on both sides of every boundary,
/// and its gradient equals central differences of the Rust function away from them.
#[test]
// `!(a >= b)` on purpose: the negation of a run-time condition is lowered too.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn piecewise_terms_take_the_branch_of_the_run_time_condition() {
    #[allow(dead_code)]
    struct S {
        k: f64,
        l: f64,
        arr: [f64; 3],
    }
    impl S {
        fn potential(&self, q: &[f64; 3]) -> f64 {
            // A FENE bond with the WCA repulsion below 2^(1/6) (LAMMPS bond_style fene).
            let r2 = q[0] * q[0] + q[1] * q[1];
            let mut e = -0.5 * 30.0 * 2.25 * (1.0 - r2 / 2.25).ln();
            if r2 < 1.259_921_049_894_873 {
                let s6 = 1.0 / (r2 * r2 * r2);
                e += 4.0 * (s6 * s6 - s6) + 1.0;
            }
            // A one-sided harmonic wall as an `if` expression, on a parameter.
            let w = if q[2] > self.l { q[2] - self.l } else { 0.0 };
            let mut acc = [0.0; 2];
            for i in 0..2 {
                if q[i] < 0.9 && !(q[2] >= 1.2) || q[i] > 1.3 {
                    acc[i] = q[i] * q[2];
                } else if self.k > 2.0 {
                    acc[i] = 5.0;
                } else {
                    acc[i] = q[i].sin();
                }
            }
            e + self.k * w * w + acc[0] + 2.0 * acc[1]
        }
    }
    let item: ItemImpl = parse_quote! {
        impl S {
            fn potential(&self, q: &[f64; 3]) -> f64 {
                let r2 = q[0] * q[0] + q[1] * q[1];
                let mut e = -0.5 * 30.0 * 2.25 * (1.0 - r2 / 2.25).ln();
                if r2 < 1.259_921_049_894_873 {
                    let s6 = 1.0 / (r2 * r2 * r2);
                    e += 4.0 * (s6 * s6 - s6) + 1.0;
                }
                let w = if q[2] > self.l { q[2] - self.l } else { 0.0 };
                let mut acc = [0.0; 2];
                for i in 0..2 {
                    if q[i] < 0.9 && !(q[2] >= 1.2) || q[i] > 1.3 {
                        acc[i] = q[i] * q[2];
                    } else if self.k > 2.0 {
                        acc[i] = 5.0;
                    } else {
                        acc[i] = q[i].sin();
                    }
                }
                e + self.k * w * w + acc[0] + 2.0 * acc[1]
            }
        }
    };
    let sys = S {
        k: SYS.k,
        l: SYS.l,
        arr: SYS.arr,
    };
    let (mut g, v, _, params) = lower_ok(&item);
    let grad = g.gradient(v, 3);
    let mut sides = std::collections::BTreeSet::new();
    for a in 0..9 {
        for b in 0..5 {
            for c in 0..7 {
                let q = [
                    0.55 + 0.11 * a as f64,
                    0.4 + 0.13 * b as f64,
                    0.5 + 0.17 * c as f64,
                ];
                let r2 = q[0] * q[0] + q[1] * q[1];
                if r2 >= 2.2 {
                    continue;
                }
                sides.insert((r2 < 1.26, q[2] > SYS.l, q[0] < 0.9, q[0] > 1.3, q[2] >= 1.2));
                let want = sys.potential(&q);
                let got = eval(&g, v, &q, &params);
                assert!(
                    (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                    "at {q:?}: graph {got} vs rust {want}"
                );
                for i in 0..3 {
                    let h = 1e-6;
                    let (mut qp, mut qm) = (q, q);
                    qp[i] += h;
                    qm[i] -= h;
                    let fd = (sys.potential(&qp) - sys.potential(&qm)) / (2.0 * h);
                    let d = eval(&g, grad[i], &q, &params);
                    // Central differences across a boundary are meaningless: skip those.
                    let jump = (sys.potential(&qp) - 2.0 * want + sys.potential(&qm)).abs() > 1e-6;
                    if !jump {
                        assert!(
                            (d - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                            "∂{i} at {q:?}: {d} vs {fd}"
                        );
                    }
                }
            }
        }
    }
    assert!(
        sides.len() >= 8,
        "both sides of each boundary visited: {sides:?}"
    );
}

#[test]
fn recursion_loops_shadowing_and_budget() {
    assert_error(
        parse_quote!(impl S {
            fn a(&self, x: f64) -> f64 { self.b(x) }
            fn b(&self, x: f64) -> f64 { self.a(x) + 1.0 }
            fn potential(&self, q: &[f64; 1]) -> f64 { self.a(q[0]) }
        }),
        "recursion between helper methods cannot be inlined: `a` → `b` → `a`",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 {
                let mut v = 0.0; for i in 0..self.n { v += q[0]; } v
            }
        }),
        "loop bounds must be integer constants",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 { let q = 2.0; q }
        }),
        "shadowing the coordinates `q` is not supported",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 {
                let mut v = 0.0;
                for i in 0..1000 { for j in 0..1000 { v += q[0]; } }
                v
            }
        }),
        "more than 100000 iterations",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 1]) -> f64 { let mut v = q[0]; while true {} v }
        }),
        "`while` and `loop` are not supported",
    );
}

#[test]
fn constant_constraint_and_misc() {
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { q[0] }
            fn constraints(&self, q: &[f64; 2]) -> [f64; 2] { [q[0] - 1.0, self.l * 2.0] }
        }),
        "constraint 1 does not depend on `q`",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { self.nope(q[0]) }
        }),
        "no method `nope` in this impl block",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { println!("x"); q[0] }
        }),
        "macros (`println!`) are not supported",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { sqrt(q[0]) }
        }),
        "unsupported function `sqrt`",
    );
    assert_error(
        parse_quote!(impl S {
            fn potential(&self, q: &[f64; 2]) -> f64 { q[0].powi(self.n) }
        }),
        "exponent of `powi` must be an `i32` constant",
    );
}

#[test]
fn helper_call_forms() {
    assert_error(
        parse_quote!(impl S {
            fn h(x: f64) -> f64 { x }
            fn potential(&self, q: &[f64; 1]) -> f64 { self.h(q[0]) }
        }),
        "`h` has no `self` parameter: call it as `Self::h(...)`",
    );
    assert_error(
        parse_quote!(impl S {
            fn h(&self, x: f64) -> f64 { x }
            fn potential(&self, q: &[f64; 1]) -> f64 { Self::h(q[0]) }
        }),
        "`h` takes `&self`: call it as `self.h(...)`",
    );
    assert_error(
        parse_quote!(impl S {
            fn h(&self, x: f64) -> f64 { x }
            fn potential(&self, q: &[f64; 1]) -> f64 { self.h(1) }
        }),
        "argument `x` of `h` must be an `f64`, but an integer was passed",
    );
    assert_error(
        parse_quote!(impl S {
            fn h(&mut self, x: f64) -> f64 { x }
            fn potential(&self, q: &[f64; 1]) -> f64 { self.h(q[0]) }
        }),
        "helper method `h` must take `&self` to be inlined",
    );
    // `Self::h(self, ..)` is the same call as `self.h(..)`.
    same_as_rust! { 1;
        fn h(&self, x: f64) -> f64 { x * self.k }
        fn potential(&self, q: &[f64; 1]) -> f64 { Self::h(self, q[0]) + S::h(self, 1.0) }
    }
}

#[test]
fn errors_do_not_cascade_and_are_all_reported() {
    let errs = errors(parse_quote!(impl S {
        fn potential(&self, q: &[f64; 2]) -> f64 {
            let a = q[0].abs();
            let b = a * 2.0 + q[7];
            let mut v = 0.0;
            for i in 0..5 { v += q[0].floor(); }
            b + v
        }
    }));
    assert_eq!(errs.len(), 3, "{errs:#?}");
}
