//! Straight-line code from graph outputs: one `let tK: f64` per scheduled instruction, shared
//! subexpressions computed once per generated function.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};

use crate::lower::ParamExpr;
use zs_symbolic::{schedule, Binary, Graph, Instr, NodeId, Operand, Unary, Var};

/// Above this many instructions, a function declares its temporaries in chunks instead of one
/// `let` each (rustc overflows its stack on thousands of nested `let` scopes with debuginfo).
pub const MAX_LETS: usize = 1000;
/// Temporaries declared per `let` in chunked functions.
const DECL_CHUNK: usize = 64;

/// How generated code reads coordinate `i` (`Var::Q(i)`) and direction entry `j` (`Var::Dir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coords {
    /// `q[i]`, `a[j]`: a fixed-size system's `&[f64; N]`.
    Flat,
    /// `q[i / D][i % D]`: a term's bodies, `&[[f64; D]; K]`.
    Blocks(usize),
}

/// Emits straight-line function bodies from graph outputs.
pub struct Emitter<'l> {
    /// The run-time parameters (`self.field`, ...) the graph's `Var::Param`s stand for.
    pub params: &'l [ParamExpr],
    /// `use` items re-emitted in bodies that read parameters.
    pub uses: &'l [syn::ItemUse],
    /// How coordinates are read.
    pub coords: Coords,
    /// Emit SIMD lane code: every value of type `L: zs_runtime::simd::Lanes` instead of `f64`
    /// (constants and parameters splatted, `powi` the lanes' own, `√x` as `x · (1/√x)`
    /// (`zs_runtime::simd::root`), `1 / √x` the lanes' `rsqrt`, `1 / xⁿ` as `rsqrt(x)^{2n}`
    /// where `√x` or `1/√x` is taken anyway, `exp`, `ln`, `erf` and `erfc` the lanes' own —
    /// `zs_runtime::simd::exp`; `erfc(x)` beside `e^{−x²}` one `simd::erfc_exp` call — other
    /// functions lane by lane). The operations and their order are those of the scalar code,
    /// except those reciprocals (within an ulp per `rsqrt`, no divider), square roots (within
    /// 1.5 ulp) and those four functions (within a few ulp of the scalar ones).
    pub lanes: bool,
}

impl Emitter<'_> {
    /// A body computing `outputs` (scheduled together, so they share common subexpressions),
    /// assembled into the return value by `assemble` from one token stream per output.
    pub fn body(
        &self,
        graph: &Graph,
        outputs: &[NodeId],
        assemble: impl FnOnce(&[TokenStream]) -> TokenStream,
    ) -> TokenStream {
        let (lets, outs) = self.statements(graph, outputs);
        let result = assemble(&outs);
        quote! {
            #(#lets)*
            #result
        }
    }

    /// [`Emitter::body`]'s statements and its outputs' operands: not generic over `assemble`,
    /// so compiled once rather than once per caller's closure.
    fn statements(
        &self,
        graph: &Graph,
        outputs: &[NodeId],
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let prog = schedule(graph, outputs);
        let ty = self.ty();
        let mut lets = Vec::new();
        let vars = prog.vars();
        if vars.iter().any(|v| matches!(v, Var::Param(_))) {
            for u in self.uses {
                lets.push(u.to_token_stream());
            }
        }
        for v in vars {
            match v {
                Var::Q(i) => {
                    let name = var_ident(v);
                    let at = self.index(i as usize);
                    lets.push(quote!(let #name: #ty = q #at;));
                }
                Var::Dir(j) => {
                    let name = var_ident(v);
                    let at = self.index(j as usize);
                    lets.push(quote!(let #name: #ty = a #at;));
                }
                Var::Param(k) => {
                    let name = var_ident(v);
                    let expr = &self.params[k as usize].tokens;
                    // The user's span: a wrong field name or type is reported at their tokens.
                    // `as f64`: numeric fields and constants of other types (`f32`, integers)
                    // are converted as `self.k as f64` or `f64::from(self.k)` in the user's
                    // code would; other types are a cast error at the user's tokens.
                    let span = first_span(expr);
                    if self.lanes && self.params[k as usize].per_body {
                        // A table at the bodies' types: each lane's term reads its own row,
                        // or one row for all when the caller passes one (every lane's bodies
                        // of the same types: one read and a broadcast).
                        lets.push(quote_spanned!(span=>
                            let #name: L = if let [kinds] = kinds {
                                L::splat(#expr as f64)
                            } else {
                                L::from_fn(|lane| {
                                    let kinds = &kinds[lane];
                                    #expr as f64
                                })
                            };
                        ));
                    } else if self.lanes {
                        lets.push(quote_spanned!(span=> let #name: L = L::splat(#expr as f64);));
                    } else {
                        lets.push(quote_spanned!(span=> let #name: f64 = #expr as f64;));
                    }
                }
                Var::Lambda(c) => {
                    let name = var_ident(v);
                    let c = usize_lit(c as usize);
                    if self.lanes {
                        lets.push(quote!(let #name: L = L::splat(lambda[#c]);));
                    } else {
                        lets.push(quote!(let #name: f64 = lambda[#c];));
                    }
                }
                Var::Omega if self.lanes => lets.push(quote!(let omega: L = L::splat(omega);)),
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
                let tys = chunk.iter().map(|_| ty.clone());
                lets.push(quote!(let (#(#chunk,)*): (#(#tys,)*);));
            }
        }
        let (roots, erfc) = if self.lanes {
            (
                SquareRoots::of(&prog.instrs, &prog.outputs),
                ErfcExp::of(&prog.instrs),
            )
        } else {
            Default::default()
        };
        for ins in &prog.instrs {
            if roots.only_inverted(ins.dst()) {
                continue;
            }
            match erfc.at(ins.dst()) {
                Some(Fused::Second) => continue,
                Some(Fused::First { erfc, exp, x }) => {
                    let (e, x2) = (format_ident!("t{}", erfc), format_ident!("t{}", exp));
                    let x = lane_operand(x);
                    let rhs = quote!(::zs_runtime::simd::erfc_exp(#x));
                    lets.push(if chunked {
                        quote!((#e, #x2) = #rhs;)
                    } else {
                        quote!(let (#e, #x2): (L, L) = #rhs;)
                    });
                    continue;
                }
                None => {}
            }
            let dst = format_ident!("t{}", ins.dst());
            let lanes = quote!(::zs_runtime::simd::Lanes);
            let rhs = if let Some(r) = roots.reciprocal(ins) {
                match r {
                    Reciprocal::Rsqrt(x) => {
                        let x = lane_operand(x);
                        quote!(#lanes::rsqrt(#x))
                    }
                    Reciprocal::RsqrtPow(x, k) => {
                        // LLVM merges this `rsqrt(x)` with the program's own (the same pure
                        // operations on the same value).
                        let (x, k) = (lane_operand(x), Literal::i32_unsuffixed(k));
                        quote!(#lanes::powi(#lanes::rsqrt(#x), #k))
                    }
                }
            } else if self.lanes {
                lane_rhs(ins)
            } else {
                scalar_rhs(ins)
            };
            lets.push(if chunked {
                quote!(#dst = #rhs;)
            } else {
                quote!(let #dst: #ty = #rhs;)
            });
        }
        let outs: Vec<TokenStream> = prog.outputs.iter().map(|&o| self.operand(o)).collect();
        (lets, outs)
    }
}

impl Emitter<'_> {
    /// The type of every value: `f64`, or `L` for lanes.
    fn ty(&self) -> TokenStream {
        if self.lanes {
            quote!(L)
        } else {
            quote!(f64)
        }
    }

    /// An output operand (a constant is splatted in lane code).
    fn operand(&self, o: Operand) -> TokenStream {
        if self.lanes {
            lane_operand(o)
        } else {
            operand(o)
        }
    }

    /// `[i]` or `[i / D][i % D]`.
    fn index(&self, i: usize) -> TokenStream {
        match self.coords {
            Coords::Flat => {
                let i = usize_lit(i);
                quote!([#i])
            }
            Coords::Blocks(d) => {
                let (b, k) = (usize_lit(i / d), usize_lit(i % d));
                quote!([#b][#k])
            }
        }
    }
}

pub fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
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

/// The square roots of lane code and the reciprocals that need no divider: `1 / √x`, computed
/// with `Lanes::rsqrt` (Newton's iteration: `zs_runtime::simd::rsqrt`) — the Coulomb `1/r` of a
/// pair and the `½ r′/r` of its gradient in reciprocal mode — and `1 / xⁿ` (`n ≥ 1`) where
/// `1/√x` or `√x` is taken anyway, as `(1/√x)^{2n}` (a Lennard-Jones `σ²/r²` or `1/r⁶` from
/// the same pair's `1/r`).
#[derive(Default)]
struct SquareRoots {
    /// Per temporary: `Some(x)` when it is `√x`.
    root_of: Vec<Option<Operand>>,
    /// Per temporary: `Some((x, n))` when it is `xⁿ`, `n > 0`.
    powi_of: Vec<Option<(Operand, i32)>>,
    /// The `x` whose `1/√x` the program takes.
    rooted: Vec<Operand>,
    /// Per temporary: whether it is used only as the denominator of such reciprocals (then it
    /// is not computed at all).
    only_inverted: Vec<bool>,
}

/// A reciprocal lane code computes without a division.
enum Reciprocal {
    /// `1 / √x`.
    Rsqrt(Operand),
    /// `1 / xⁿ = (1/√x)^{2n}`.
    RsqrtPow(Operand, i32),
}

impl SquareRoots {
    fn of(instrs: &[Instr], outputs: &[Operand]) -> Self {
        let n = instrs
            .iter()
            .map(|i| i.dst() as usize + 1)
            .max()
            .unwrap_or(0);
        let mut this = SquareRoots {
            root_of: vec![None; n],
            powi_of: vec![None; n],
            ..Self::default()
        };
        for ins in instrs {
            match *ins {
                Instr::Unary {
                    dst,
                    op: Unary::Sqrt,
                    a,
                } => this.root_of[dst as usize] = Some(a),
                Instr::Powi { dst, a, n } if n > 0 => this.powi_of[dst as usize] = Some((a, n)),
                _ => {}
            }
        }
        // `x` is rooted where the program takes `1/√x`, or `√x` (`simd::root`: `x · (1/√x)`).
        for ins in instrs {
            let x = match (*ins, this.reciprocal(ins)) {
                (_, Some(Reciprocal::Rsqrt(x)))
                | (
                    Instr::Unary {
                        op: Unary::Sqrt,
                        a: x,
                        ..
                    },
                    _,
                ) => x,
                _ => continue,
            };
            if !this.rooted.contains(&x) {
                this.rooted.push(x);
            }
        }
        let mut only_inverted: Vec<bool> = (0..n)
            .map(|k| this.root_of[k].is_some() || this.powi_of[k].is_some())
            .collect();
        let mut used = |o: &Operand| {
            if let Operand::Temp(k) = *o {
                only_inverted[k as usize] = false;
            }
        };
        for ins in instrs {
            if this.reciprocal(ins).is_some() {
                continue;
            }
            ins.operands().for_each(|o| used(&o));
        }
        outputs.iter().for_each(&mut used);
        this.only_inverted = only_inverted;
        this
    }

    /// The division-free form of `ins`, when it is `1 / √x`, or `1 / xⁿ` (`n ≥ 1`) with `x`
    /// rooted.
    fn reciprocal(&self, ins: &Instr) -> Option<Reciprocal> {
        let Instr::Binary {
            op: Binary::Div,
            a: Operand::Const(1.0),
            b: Operand::Temp(k),
            ..
        } = *ins
        else {
            return None;
        };
        let k = k as usize;
        if let Some(x) = self.root_of.get(k).copied().flatten() {
            return Some(Reciprocal::Rsqrt(x));
        }
        match self.powi_of.get(k).copied().flatten() {
            Some((x, n)) if self.rooted.contains(&x) => Some(Reciprocal::RsqrtPow(x, 2 * n)),
            // `1 / x` itself: `(1/√x)²` (a Lennard-Jones `σ²/r²` beside the Coulomb `1/r`).
            _ if self.rooted.contains(&Operand::Temp(k as u32)) => {
                Some(Reciprocal::RsqrtPow(Operand::Temp(k as u32), 2))
            }
            _ => None,
        }
    }

    fn only_inverted(&self, dst: u32) -> bool {
        self.only_inverted
            .get(dst as usize)
            .copied()
            .unwrap_or(false)
    }
}

/// Lane code's `erfc(x)` and `e^{−x²}` of the same `x` — a real-space Ewald pair's value and
/// the factor of its derivative (zs-symbolic's `diff`: `−2/√π e^{−x²} x′`) — bound together by one call
/// of `zs_runtime::simd::erfc_exp`, which takes one exponential for both (erfc is `e^{−x²}`
/// times a table there). The call stands where the first of the two did; the second is not
/// emitted.
#[derive(Default)]
struct ErfcExp {
    /// Per temporary: its part in a fused pair.
    fused: Vec<Option<Fused>>,
}

/// A temporary's part in an `erfc_exp` call.
#[derive(Clone, Copy)]
enum Fused {
    /// The first of the pair in program order: the call, binding `t{erfc}` and `t{exp}`.
    First { erfc: u32, exp: u32, x: Operand },
    /// The second: bound already.
    Second,
}

impl ErfcExp {
    fn of(instrs: &[Instr]) -> Self {
        let n = instrs
            .iter()
            .map(|i| i.dst() as usize + 1)
            .max()
            .unwrap_or(0);
        let mut def: Vec<Option<&Instr>> = vec![None; n];
        let mut order = vec![0; n];
        for (k, ins) in instrs.iter().enumerate() {
            def[ins.dst() as usize] = Some(ins);
            order[ins.dst() as usize] = k;
        }
        let temp = |o: Operand| match o {
            Operand::Temp(t) => def.get(t as usize).copied().flatten(),
            _ => None,
        };
        // `x` when `ins` is `exp(-(x²))`, the square as `powi(x, 2)` or `x * x`.
        let square_of = |ins: &Instr| {
            let Instr::Unary {
                op: Unary::Exp, a, ..
            } = *ins
            else {
                return None;
            };
            let Some(&Instr::Unary {
                op: Unary::Neg, a, ..
            }) = temp(a)
            else {
                return None;
            };
            match *temp(a)? {
                Instr::Powi { a: x, n: 2, .. } => Some(x),
                Instr::Binary {
                    op: Binary::Mul,
                    a: x,
                    b: y,
                    ..
                } if x == y => Some(x),
                _ => None,
            }
        };
        let mut fused = vec![None; n];
        for e in instrs {
            let Instr::Unary {
                dst: erfc,
                op: Unary::Erfc,
                a: x,
            } = *e
            else {
                continue;
            };
            let Some(exp) = instrs
                .iter()
                .find(|i| square_of(i) == Some(x))
                .map(Instr::dst)
            else {
                continue;
            };
            let (first, second) = if order[erfc as usize] < order[exp as usize] {
                (erfc, exp)
            } else {
                (exp, erfc)
            };
            fused[first as usize] = Some(Fused::First { erfc, exp, x });
            fused[second as usize] = Some(Fused::Second);
        }
        ErfcExp { fused }
    }

    fn at(&self, dst: u32) -> Option<Fused> {
        self.fused.get(dst as usize).copied().flatten()
    }
}

/// The right-hand side of a scalar instruction.
fn scalar_rhs(ins: &Instr) -> TokenStream {
    match *ins {
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
                Unary::Erf => quote!(::zs_runtime::special::erf(#a)),
                Unary::Erfc => quote!(::zs_runtime::special::erfc(#a)),
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
                Binary::Lt => quote!(if #a < #b { 1.0 } else { 0.0 }),
                Binary::Le => quote!(if #a <= #b { 1.0 } else { 0.0 }),
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
        Instr::Select { c, a, b, .. } => {
            let (c, a, b) = (operand(c), operand(a), operand(b));
            quote!(if #c != 0.0 { #a } else { #b })
        }
    }
}

/// The right-hand side of a lane instruction: the scalar one's operations on `L`. `f64::powi`
/// with a constant exponent is the same chain of multiplications as `Lanes::powi` (LLVM's
/// expansion and compiler-rt's `__powidf2` both square and multiply from the low bit up).
fn lane_rhs(ins: &Instr) -> TokenStream {
    let lanes = quote!(::zs_runtime::simd::Lanes);
    match *ins {
        Instr::Unary { op, a, .. } => {
            let a = lane_operand(a);
            let lanewise = |f: TokenStream| quote!(#lanes::map(#a, #f));
            match op {
                Unary::Neg => quote!(-#a),
                // `x · (1/√x)`: no square-root instruction, as slow as a divider.
                Unary::Sqrt => quote!(::zs_runtime::simd::root(#a)),
                Unary::Exp => quote!(::zs_runtime::simd::exp(#a)),
                Unary::Ln => quote!(::zs_runtime::simd::ln(#a)),
                Unary::Sin => lanewise(quote!(f64::sin)),
                Unary::Cos => lanewise(quote!(f64::cos)),
                Unary::Tan => lanewise(quote!(f64::tan)),
                Unary::Tanh => lanewise(quote!(f64::tanh)),
                Unary::Acos => lanewise(quote!(f64::acos)),
                Unary::Asin => lanewise(quote!(f64::asin)),
                Unary::Atan => lanewise(quote!(f64::atan)),
                Unary::Erf => quote!(::zs_runtime::simd::erf(#a)),
                Unary::Erfc => quote!(::zs_runtime::simd::erfc(#a)),
            }
        }
        Instr::Binary { op, a, b, .. } => {
            let (a, b) = (lane_operand(a), lane_operand(b));
            match op {
                Binary::Add => quote!(#a + #b),
                Binary::Sub => quote!(#a - #b),
                Binary::Mul => quote!(#a * #b),
                Binary::Div => quote!(#a / #b),
                Binary::Powf => quote!(#lanes::zip_map(#a, #b, f64::powf)),
                Binary::Atan2 => quote!(#lanes::zip_map(#a, #b, f64::atan2)),
                Binary::Lt => quote!(#lanes::lt(#a, #b)),
                Binary::Le => quote!(#lanes::le(#a, #b)),
            }
        }
        Instr::Powi { a, n, .. } => {
            let a = lane_operand(a);
            let k = Literal::i32_unsuffixed(n.unsigned_abs() as i32);
            if n < 0 {
                quote!(#lanes::powi(#a, -#k))
            } else {
                quote!(#lanes::powi(#a, #k))
            }
        }
        Instr::Select { c, a, b, .. } => {
            let (c, a, b) = (lane_operand(c), lane_operand(a), lane_operand(b));
            quote!(#lanes::select(#c, #a, #b))
        }
    }
}

/// An operand of lane code: constants splatted.
fn lane_operand(o: Operand) -> TokenStream {
    match o {
        Operand::Const(c) => {
            let c = f64_tokens(c);
            quote!(<L as ::zs_runtime::simd::Lanes>::splat(#c))
        }
        _ => operand(o),
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

pub fn vector(outs: &[TokenStream]) -> TokenStream {
    quote!([#(#outs),*])
}

pub fn matrix(outs: &[TokenStream], cols: usize) -> TokenStream {
    let rows = outs.chunks(cols.max(1)).map(vector);
    if cols == 0 {
        return quote!([]);
    }
    quote!([#(#rows),*])
}

/// Graph outputs of one differentiated scalar function.
pub struct Derived {
    pub value: NodeId,
    pub gradient: Vec<NodeId>,
    pub hessian: Vec<Vec<NodeId>>,
    pub third: Vec<NodeId>,
    /// `H a`, one directional derivative of the gradient.
    pub hessian_vector: Vec<NodeId>,
}

impl Derived {
    pub fn new(graph: &mut Graph, f: NodeId, n: usize) -> Self {
        let gradient = graph.gradient(f, n);
        let hessian = graph.hessian(&gradient);
        let third = graph.third_contraction(&gradient);
        let hessian_vector = graph.hessian_vector(&gradient);
        Derived {
            value: f,
            gradient,
            hessian,
            third,
            hessian_vector,
        }
    }

    pub fn hessian_flat(&self) -> Vec<NodeId> {
        self.hessian.iter().flatten().copied().collect()
    }

    /// `(value, gradient, hessian, third contraction, gradient + hessian, value + gradient,
    /// Hessian-vector product)` bodies.
    pub fn bodies(&self, em: &Emitter<'_>, graph: &Graph, n: usize) -> [TokenStream; 7] {
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
        let mut value_gradient_outs = vec![self.value];
        value_gradient_outs.extend(self.gradient.iter().copied());
        let value_gradient = em.body(graph, &value_gradient_outs, |o| {
            let (v, g) = (&o[0], vector(&o[1..]));
            quote!((#v, #g))
        });
        let hessian_vector = em.body(graph, &self.hessian_vector, vector);
        [
            value,
            gradient,
            hessian,
            third,
            gradient_hessian,
            value_gradient,
            hessian_vector,
        ]
    }
}
