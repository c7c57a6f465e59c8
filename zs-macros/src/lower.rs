//! Lowering: the bodies of `potential`, `constraints`, `stiff_potential`, `fast_potential` and
//! the helper methods they call → nodes of the symbolic [`Graph`].
//!
//! The bodies are *evaluated* at expansion time by an abstract interpreter whose `f64` values
//! are graph nodes: `let` bindings, tuples and arrays are environments of [`Value`]s, integer
//! arithmetic (indices, loop counters, `const`s) is done on the spot, `for` loops are unrolled,
//! `if`/`match` pick the branch their compile-time condition selects, and helper methods are
//! inlined. What is left is one expression DAG per output, exactly the function the Rust code
//! computes (differentiable wherever the Rust code is).
//!
//! Errors are reported into the [`Ctxt`] with the user's tokens, and the faulty expression
//! evaluates to [`Value::Poison`], which silently absorbs every later use, so one mistake gives
//! one error and lowering goes on to find the next.

use std::collections::HashMap;
use std::f64::consts;

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{
    BinOp, Block, Expr, Ident, Item, Lit, Member, Pat, RangeLimits, ReturnType, Stmt, UnOp, UseTree,
};

use crate::ast::{self, Input, Method, SelfArg, Ty};
use crate::ctxt::Ctxt;
use crate::sym::{Graph, NodeId, Unary, Var};
use crate::valid::{self, Shape};

/// Total number of loop iterations (and array-repeat elements) the expansion may unroll.
pub const MAX_UNROLL: usize = 100_000;

/// A value of the interpreted program.
#[derive(Debug, Clone)]
pub enum Value {
    /// An `f64`: a node of the graph.
    Scalar(NodeId),
    /// An integer known at expansion time (index, loop counter, `const`).
    Int(i128),
    /// A `bool` known at expansion time.
    Bool(bool),
    /// `[T; K]`.
    Array(Vec<Value>),
    /// `(T, U, ...)`.
    Tuple(Vec<Value>),
    /// `()`.
    Unit,
    /// The result of an erroneous expression (already reported): absorbs every use.
    Poison,
}

impl Value {
    fn describe(&self) -> String {
        match self {
            Value::Scalar(_) => "an `f64`".into(),
            Value::Int(_) => "an integer".into(),
            Value::Bool(_) => "a `bool`".into(),
            Value::Array(v) => format!("an array of length {}", v.len()),
            Value::Tuple(v) => format!("a tuple of {} elements", v.len()),
            Value::Unit => "`()`".into(),
            Value::Poison => "an erroneous value".into(),
        }
    }
}

/// A run-time parameter of the generated code, `Var::Param(k)`: a `self.field` (or an outside
/// constant such as a module-level `const`) read once at the top of each generated function.
#[derive(Debug, Clone)]
pub struct ParamExpr {
    /// The expression, with the user's spans (a misspelled field is reported at the user's
    /// tokens by rustc).
    pub tokens: TokenStream,
}

/// The outputs of lowering.
pub struct Lowered {
    /// The expression graph of everything.
    pub graph: Graph,
    /// `V(q)`, when `potential` could be lowered.
    pub potential: Option<NodeId>,
    /// `V1(q)` (Tao & Owhadi eq. 19), when `stiff_potential` exists and could be lowered.
    pub stiff: Option<NodeId>,
    /// `W(q)` (seed 003), when `fast_potential` exists and could be lowered.
    pub fast: Option<NodeId>,
    /// `g(q)`, when `constraints` exists and could be lowered.
    pub constraints: Option<Vec<NodeId>>,
    /// `Var::Param(k)` ↦ `params[k]`.
    pub params: Vec<ParamExpr>,
    /// `use` items found in the bodies, re-emitted in the generated functions (they may be
    /// needed to resolve outside constants).
    pub uses: Vec<syn::ItemUse>,
    /// Names of the methods whose bodies were interpreted (roles and inlined helpers).
    pub visited: Vec<String>,
}

/// Non-local control flow while interpreting (errors are not control flow: they are
/// reported and yield [`Value::Poison`]).
enum Unwind {
    Return(Value),
    Break,
    Continue,
}

type Lr = Result<Value, Unwind>;

/// Lexical environment of one function activation.
#[derive(Default)]
struct Env {
    scopes: Vec<HashMap<String, Option<Value>>>,
    /// Names of the coordinate parameters (`q`), which may not be shadowed.
    protected: Vec<String>,
}

impl Env {
    fn push(&mut self) {
        self.scopes.push(HashMap::new());
    }
    fn pop(&mut self) {
        self.scopes.pop();
    }
    fn define(&mut self, name: String, v: Option<Value>) {
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .insert(name, v);
    }
    fn get(&self, name: &str) -> Option<&Option<Value>> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }
    fn get_mut(&mut self, name: &str) -> Option<&mut Option<Value>> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }
}

/// Lowers `potential`, `stiff_potential`, `fast_potential` and `constraints` (those whose
/// signatures passed [`valid`]), into one graph so that the generated functions share work.
pub fn lower(cx: &Ctxt, input: &Input<'_>, shape: &Shape) -> Lowered {
    let mut lw = Lowerer::new(cx, input);
    let n = shape.n.unwrap_or(0);
    let q: Vec<Value> = (0..n)
        .map(|i| Value::Scalar(lw.graph.var(Var::Q(i as u32))))
        .collect();

    let mut scalar_role = |name: &str, ok: bool| -> Option<NodeId> {
        if !ok {
            return None;
        }
        let m = input.method(name).expect("checked");
        match lw.lower_fn(m, vec![Value::Array(q.clone())], m.name) {
            Value::Scalar(v) => Some(v),
            Value::Poison => None,
            other => {
                cx.error_spanned_by(
                    result_span(m),
                    format!(
                        "`{name}` must return an `f64`, but this is {}",
                        other.describe()
                    ),
                );
                None
            }
        }
    };
    let potential = scalar_role("potential", shape.potential_ok);
    let stiff = scalar_role("stiff_potential", shape.stiff_ok);
    let fast = scalar_role("fast_potential", shape.fast_ok);

    let mut constraints = None;
    if shape.constraints_ok {
        let m = input.method("constraints").expect("checked");
        let want = shape.m.expect("checked");
        match lw.lower_fn(m, vec![Value::Array(q)], m.name) {
            Value::Array(items) if items.len() == want => {
                let mut nodes = Vec::with_capacity(want);
                for (c, item) in items.into_iter().enumerate() {
                    match item {
                        Value::Scalar(v) => nodes.push(v),
                        Value::Poison => {}
                        other => cx.error_spanned_by(
                            result_span(m),
                            format!(
                                "constraint {c} must be an `f64`, but it is {}",
                                other.describe()
                            ),
                        ),
                    }
                }
                if nodes.len() == want {
                    valid::check_constraints(cx, &lw.graph, &nodes, valid::result_expr(m.body), m);
                    constraints = Some(nodes);
                }
            }
            Value::Poison => {}
            other => cx.error_spanned_by(
                result_span(m),
                format!(
                    "`constraints` must return `[f64; {want}]`, but this is {}",
                    other.describe()
                ),
            ),
        }
    }

    Lowered {
        graph: lw.graph,
        potential,
        stiff,
        fast,
        constraints,
        params: lw.params,
        uses: lw.uses,
        visited: lw.visited,
    }
}

fn result_span(m: &Method<'_>) -> TokenStream {
    match valid::result_expr(m.body) {
        Some(e) => e.to_token_stream(),
        None => m.name.to_token_stream(),
    }
}

/// The interpreter state shared by all activations.
pub struct Lowerer<'c, 'a> {
    cx: &'c Ctxt,
    input: &'c Input<'a>,
    /// The graph being built.
    pub graph: Graph,
    params: Vec<ParamExpr>,
    param_keys: HashMap<String, u32>,
    call_stack: Vec<String>,
    unrolled: usize,
    budget_reported: bool,
    uses: Vec<syn::ItemUse>,
    use_keys: Vec<String>,
    impl_consts: HashMap<String, Value>,
    consts_in_progress: Vec<String>,
    /// Set while lowering the condition of an `if` / scrutinee of a `match`, for messages.
    branching: Option<&'static str>,
    /// Methods whose bodies were interpreted, in order.
    visited: Vec<String>,
}

const STD_CONSTS: &[(&str, f64)] = &[
    ("PI", consts::PI),
    ("TAU", consts::TAU),
    ("E", consts::E),
    ("SQRT_2", consts::SQRT_2),
    ("LN_2", consts::LN_2),
    ("LN_10", consts::LN_10),
    ("LOG2_E", consts::LOG2_E),
    ("LOG10_E", consts::LOG10_E),
    ("LOG2_10", consts::LOG2_10),
    ("LOG10_2", consts::LOG10_2),
    ("FRAC_PI_2", consts::FRAC_PI_2),
    ("FRAC_PI_3", consts::FRAC_PI_3),
    ("FRAC_PI_4", consts::FRAC_PI_4),
    ("FRAC_PI_6", consts::FRAC_PI_6),
    ("FRAC_PI_8", consts::FRAC_PI_8),
    ("FRAC_1_PI", consts::FRAC_1_PI),
    ("FRAC_2_PI", consts::FRAC_2_PI),
    ("FRAC_2_SQRT_PI", consts::FRAC_2_SQRT_PI),
    ("FRAC_1_SQRT_2", consts::FRAC_1_SQRT_2),
];

const F64_ASSOC_CONSTS: &[(&str, f64)] = &[
    ("EPSILON", f64::EPSILON),
    ("MAX", f64::MAX),
    ("MIN", f64::MIN),
    ("MIN_POSITIVE", f64::MIN_POSITIVE),
    ("INFINITY", f64::INFINITY),
    ("NEG_INFINITY", f64::NEG_INFINITY),
];

const NON_SMOOTH: &[&str] = &[
    "abs",
    "signum",
    "min",
    "max",
    "minimum",
    "maximum",
    "floor",
    "ceil",
    "round",
    "round_ties_even",
    "trunc",
    "fract",
    "clamp",
    "rem_euclid",
    "div_euclid",
    "copysign",
    "abs_sub",
];

const SUPPORTED_F64_METHODS: &str = "powi, powf, sqrt, exp, ln, sin, cos, tan, atan2, tanh, \
     acos, asin, atan, recip, log, log10, log2, exp2, exp_m1, ln_1p, sinh, cosh, asinh, acosh, \
     atanh, hypot, mul_add, sin_cos, to_radians, to_degrees";

fn std_const(name: &str) -> Option<f64> {
    STD_CONSTS.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
}

fn is_const_like(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

impl<'c, 'a> Lowerer<'c, 'a> {
    /// A fresh interpreter over the methods of `input`.
    pub fn new(cx: &'c Ctxt, input: &'c Input<'a>) -> Self {
        Lowerer {
            cx,
            input,
            graph: Graph::new(),
            params: Vec::new(),
            param_keys: HashMap::new(),
            call_stack: Vec::new(),
            unrolled: 0,
            budget_reported: false,
            uses: Vec::new(),
            use_keys: Vec::new(),
            impl_consts: HashMap::new(),
            consts_in_progress: Vec::new(),
            branching: None,
            visited: Vec::new(),
        }
    }

    fn err<A: ToTokens, T: std::fmt::Display>(&self, at: A, msg: T) -> Value {
        self.cx.error_spanned_by(at, msg);
        Value::Poison
    }

    fn constant(&mut self, v: f64) -> Value {
        Value::Scalar(self.graph.constant(v))
    }

    /// Charges `k` iterations to the unrolling budget; false (and one error) when exhausted.
    fn charge(&mut self, k: usize, at: &dyn ToTokens) -> bool {
        self.unrolled = self.unrolled.saturating_add(k);
        if self.unrolled <= MAX_UNROLL {
            return true;
        }
        if !self.budget_reported {
            self.budget_reported = true;
            self.cx.error_spanned_by(
                at,
                format!(
                    "#[mechanical_system] unrolls every loop at expansion time, and this \
                     definition needs more than {MAX_UNROLL} iterations in total: the generated \
                     code would be too large"
                ),
            );
        }
        false
    }

    // ----------------------------------------------------------------- functions

    /// Inlines `m` applied to `args` (already checked for count); `at` is the call site.
    fn lower_fn(&mut self, m: &Method<'a>, args: Vec<Value>, at: &dyn ToTokens) -> Value {
        let name = m.name.to_string();
        if let Some(pos) = self.call_stack.iter().position(|n| *n == name) {
            let mut cycle: Vec<String> = self.call_stack[pos..]
                .iter()
                .map(|n| format!("`{n}`"))
                .collect();
            cycle.push(format!("`{name}`"));
            return self.err(
                at,
                format!(
                    "recursion between helper methods cannot be inlined: {}",
                    cycle.join(" → ")
                ),
            );
        }
        if !m.original.sig.generics.params.is_empty() {
            return self.err(
                &m.original.sig.generics,
                format!("helper method `{name}` cannot be generic to be inlined"),
            );
        }
        let mut env = Env::default();
        env.push();
        let mut ok = true;
        for (p, a) in m.params.iter().zip(args) {
            if let Err(msg) = fits(&a, &p.kind) {
                ok = false;
                let pname = p.pat.to_token_stream();
                self.cx.error_spanned_by(
                    at,
                    format!(
                        "argument `{pname}` of `{name}` must be {msg}, but {} was passed",
                        a.describe()
                    ),
                );
            }
            if p.kind.coordinate_array().is_some() {
                if let Some(id) = ast::pat_ident(p.pat) {
                    env.protected.push(id.to_string());
                }
            }
            self.bind_pattern(p.pat, Some(a), &mut env, false);
        }
        if !ok {
            return Value::Poison;
        }
        if !self.visited.contains(&name) {
            self.visited.push(name.clone());
        }
        self.call_stack.push(name.clone());
        let v = match self.lower_block(m.body, &mut env) {
            Ok(v) | Err(Unwind::Return(v)) => v,
            Err(_) => self.err(m.name, "`break`/`continue` outside of a loop"),
        };
        self.call_stack.pop();
        let ret = m.return_ty();
        if let Err(msg) = fits(&v, &ret) {
            let at_ty = match m.output {
                ReturnType::Default => m.name.to_token_stream(),
                ReturnType::Type(_, ty) => ty.to_token_stream(),
            };
            return self.err(
                at_ty,
                format!(
                    "`{name}` must return {msg}, but its body yields {}",
                    v.describe()
                ),
            );
        }
        v
    }

    fn call_helper(
        &mut self,
        name: &Ident,
        via_self: bool,
        args: &'a syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        skip_first: bool,
        call: &'a Expr,
        env: &mut Env,
    ) -> Lr {
        let input = self.input;
        let Some(m) = input.method(&name.to_string()) else {
            return Ok(self.err(
                name,
                format!(
                    "no method `{name}` in this impl block: only methods of the \
                     #[mechanical_system] impl (taking `f64`s, integers and arrays) can be \
                     called, and they are inlined"
                ),
            ));
        };
        match (&m.receiver, via_self || skip_first) {
            (SelfArg::Ref, true) | (SelfArg::None, false) => {}
            (SelfArg::Other(r), _) => {
                return Ok(self.err(
                    r,
                    format!("helper method `{name}` must take `&self` to be inlined"),
                ))
            }
            (SelfArg::Ref, false) => {
                return Ok(self.err(
                    call,
                    format!("`{name}` takes `&self`: call it as `self.{name}(...)`"),
                ))
            }
            (SelfArg::None, true) => {
                return Ok(self.err(
                    call,
                    format!("`{name}` has no `self` parameter: call it as `Self::{name}(...)`"),
                ))
            }
        }
        let given: Vec<&'a Expr> = args.iter().skip(usize::from(skip_first)).collect();
        if given.len() != m.params.len() {
            let plural = |k: usize| if k == 1 { "argument" } else { "arguments" };
            let (want, got) = (m.params.len(), given.len());
            let besides = if matches!(m.receiver, SelfArg::Ref) {
                " besides `self`"
            } else {
                ""
            };
            return Ok(self.err(
                call,
                format!(
                    "`{name}` takes {want} {}{besides}, but {got} {} given",
                    plural(want),
                    if got == 1 { "was" } else { "were" }
                ),
            ));
        }
        let mut values = Vec::with_capacity(given.len());
        for a in given {
            values.push(self.lower_expr(a, env)?);
        }
        Ok(self.lower_fn(m, values, call))
    }

    // ----------------------------------------------------------------- statements

    fn lower_block(&mut self, b: &'a Block, env: &mut Env) -> Lr {
        env.push();
        let r = self.lower_stmts(&b.stmts, env);
        env.pop();
        r
    }

    fn lower_stmts(&mut self, stmts: &'a [Stmt], env: &mut Env) -> Lr {
        // Items are visible in the whole block: evaluate them first.
        for s in stmts {
            if let Stmt::Item(item) = s {
                self.lower_item(item, env);
            }
        }
        let mut last = Value::Unit;
        for (i, s) in stmts.iter().enumerate() {
            last = Value::Unit;
            match s {
                Stmt::Local(local) => self.lower_local(local, env)?,
                Stmt::Item(_) => {}
                Stmt::Expr(e, semi) => {
                    let v = self.lower_expr(e, env)?;
                    if semi.is_none() && i + 1 == stmts.len() {
                        last = v;
                    }
                }
                Stmt::Macro(m) => {
                    self.unsupported_macro(&m.mac);
                }
            }
        }
        Ok(last)
    }

    fn unsupported_macro(&self, mac: &syn::Macro) -> Value {
        let name = mac
            .path
            .segments
            .last()
            .map_or_else(String::new, |s| s.ident.to_string());
        self.err(
            mac,
            format!(
                "macros (`{name}!`) are not supported in #[mechanical_system] bodies: the body \
                 must be plain arithmetic that the macro can differentiate"
            ),
        )
    }

    fn lower_item(&mut self, item: &'a Item, env: &mut Env) {
        match item {
            Item::Const(c) => {
                let v = self.lower_const_expr(&c.expr, &c.ty);
                env.define(c.ident.to_string(), Some(v));
            }
            Item::Use(u) => {
                self.register_use(&u.tree, &mut Vec::new(), env);
                let key = u.to_token_stream().to_string();
                if !self.use_keys.contains(&key) {
                    self.use_keys.push(key);
                    self.uses.push(u.clone());
                }
            }
            Item::Fn(f) => {
                self.err(
                    &f.sig,
                    "nested `fn` items are not supported: make it a method of the \
                     #[mechanical_system] impl block, where it is inlined",
                );
            }
            other => {
                self.err(
                    other,
                    "only `const` and `use` items are supported inside #[mechanical_system] bodies",
                );
            }
        }
    }

    /// `use std::f64::consts::PI;` (and globs, groups, renames) inside a body makes `PI` a
    /// known constant.
    fn register_use(&mut self, tree: &UseTree, prefix: &mut Vec<String>, env: &mut Env) {
        let is_consts = |p: &[String]| {
            let p: Vec<&str> = p.iter().map(String::as_str).collect();
            matches!(p.as_slice(), ["std" | "core", "f64", "consts"])
        };
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.register_use(&p.tree, prefix, env);
                prefix.pop();
            }
            UseTree::Name(n) if is_consts(prefix) => {
                if let Some(v) = std_const(&n.ident.to_string()) {
                    let c = self.constant(v);
                    env.define(n.ident.to_string(), Some(c));
                }
            }
            UseTree::Rename(r) if is_consts(prefix) => {
                if let Some(v) = std_const(&r.ident.to_string()) {
                    let c = self.constant(v);
                    env.define(r.rename.to_string(), Some(c));
                }
            }
            UseTree::Glob(_) if is_consts(prefix) => {
                for &(name, v) in STD_CONSTS {
                    let c = self.constant(v);
                    env.define(name.to_string(), Some(c));
                }
            }
            UseTree::Group(g) => {
                for t in &g.items {
                    self.register_use(t, prefix, env);
                }
            }
            _ => {}
        }
    }

    /// Evaluates the initializer of a `const` (local or associated) in an empty environment.
    fn lower_const_expr(&mut self, e: &'a Expr, ty: &syn::Type) -> Value {
        let mut env = Env::default();
        env.push();
        let v = self.lower_expr(e, &mut env).unwrap_or(Value::Poison);
        if let Err(msg) = fits(&v, &Ty::from_syn(ty)) {
            return self.err(
                e,
                format!("this `const` must be {msg}, but it is {}", v.describe()),
            );
        }
        v
    }

    fn lower_local(&mut self, local: &'a syn::Local, env: &mut Env) -> Result<(), Unwind> {
        let v = match &local.init {
            Some(init) => {
                if let Some((_, diverge)) = &init.diverge {
                    self.err(diverge, "`let ... else` is not supported");
                }
                Some(self.lower_expr(&init.expr, env)?)
            }
            None => None,
        };
        self.bind_pattern(&local.pat, v, env, true);
        Ok(())
    }

    /// Binds the names of `pat` to the parts of `v` (`None`: declared, not yet assigned).
    fn bind_pattern(&mut self, pat: &Pat, v: Option<Value>, env: &mut Env, check_shadow: bool) {
        match pat {
            Pat::Ident(p) => {
                if let Some((_, sub)) = &p.subpat {
                    self.err(sub, "`name @ pattern` bindings are not supported");
                    return;
                }
                let name = p.ident.to_string();
                if check_shadow && env.protected.contains(&name) {
                    self.err(
                        &p.ident,
                        format!(
                            "shadowing the coordinates `{name}` is not supported: bind the new \
                             value to another name"
                        ),
                    );
                    env.define(name, Some(Value::Poison));
                    return;
                }
                env.define(name, v);
            }
            Pat::Wild(_) => {}
            Pat::Paren(p) => self.bind_pattern(&p.pat, v, env, check_shadow),
            Pat::Reference(r) => self.bind_pattern(&r.pat, v, env, check_shadow),
            Pat::Type(t) => {
                if let Some(val) = &v {
                    if let Err(msg) = fits(val, &Ty::from_syn(&t.ty)) {
                        self.err(
                            &t.ty,
                            format!("expected {msg}, but the value is {}", val.describe()),
                        );
                        self.bind_pattern(&t.pat, Some(Value::Poison), env, check_shadow);
                        return;
                    }
                }
                self.bind_pattern(&t.pat, v, env, check_shadow);
            }
            Pat::Tuple(t) => {
                let parts = t.elems.iter().collect::<Vec<_>>();
                self.bind_parts(pat, &parts, v, env, check_shadow, true);
            }
            Pat::Slice(s) => {
                let parts = s.elems.iter().collect::<Vec<_>>();
                self.bind_parts(pat, &parts, v, env, check_shadow, false);
            }
            other => {
                self.err(
                    other,
                    "unsupported pattern: use a name, `_`, a tuple `(a, b)` or an array `[a, b]`",
                );
            }
        }
    }

    fn bind_parts(
        &mut self,
        pat: &Pat,
        parts: &[&Pat],
        v: Option<Value>,
        env: &mut Env,
        check_shadow: bool,
        tuple: bool,
    ) {
        if parts.iter().any(|p| matches!(p, Pat::Rest(_))) {
            self.err(pat, "`..` in patterns is not supported: name every element");
            return;
        }
        let items = match v {
            None => vec![None; parts.len()],
            Some(Value::Tuple(items)) if tuple && items.len() == parts.len() => {
                items.into_iter().map(Some).collect()
            }
            Some(Value::Array(items)) if !tuple && items.len() == parts.len() => {
                items.into_iter().map(Some).collect()
            }
            Some(Value::Poison) => vec![Some(Value::Poison); parts.len()],
            Some(other) => {
                self.err(
                    pat,
                    format!(
                        "this pattern has {} elements but the value is {}",
                        parts.len(),
                        other.describe()
                    ),
                );
                vec![Some(Value::Poison); parts.len()]
            }
        };
        for (p, item) in parts.iter().zip(items) {
            self.bind_pattern(p, item, env, check_shadow);
        }
    }

    // ----------------------------------------------------------------- expressions

    fn lower_expr(&mut self, e: &'a Expr, env: &mut Env) -> Lr {
        Ok(match e {
            Expr::Lit(l) => self.lower_lit(&l.lit),
            Expr::Path(p) => self.lower_path(p, env),
            Expr::Paren(p) => return self.lower_expr(&p.expr, env),
            Expr::Group(g) => return self.lower_expr(&g.expr, env),
            Expr::Reference(r) => return self.lower_expr(&r.expr, env),
            Expr::Unary(u) => {
                let v = self.lower_expr(&u.expr, env)?;
                self.lower_unary(&u.op, v, e)
            }
            Expr::Binary(b) => return self.lower_binary(b, e, env),
            Expr::Assign(a) => {
                let v = self.lower_expr(&a.right, env)?;
                self.assign(&a.left, None, v, env)?;
                Value::Unit
            }
            Expr::Cast(c) => {
                let v = self.lower_expr(&c.expr, env)?;
                self.lower_cast(v, &c.ty, e)
            }
            Expr::Array(a) => {
                let mut items = Vec::with_capacity(a.elems.len());
                for x in &a.elems {
                    items.push(self.lower_expr(x, env)?);
                }
                Value::Array(items)
            }
            Expr::Repeat(r) => {
                let v = self.lower_expr(&r.expr, env)?;
                let len = self.lower_expr(&r.len, env)?;
                match self.as_index(&len, &r.len, "array length") {
                    Some(k) if self.charge(k, &r.len) => Value::Array(vec![v; k]),
                    _ => Value::Poison,
                }
            }
            Expr::Tuple(t) => {
                if t.elems.is_empty() {
                    Value::Unit
                } else {
                    let mut items = Vec::with_capacity(t.elems.len());
                    for x in &t.elems {
                        items.push(self.lower_expr(x, env)?);
                    }
                    Value::Tuple(items)
                }
            }
            Expr::Index(ix) => {
                if let Some(p) = self.self_place(e, env)? {
                    return Ok(p);
                }
                let base = self.lower_expr(&ix.expr, env)?;
                let idx = self.lower_expr(&ix.index, env)?;
                self.index(base, idx, &ix.expr, &ix.index)
            }
            Expr::Field(f) => {
                if let Some(p) = self.self_place(e, env)? {
                    return Ok(p);
                }
                let base = self.lower_expr(&f.base, env)?;
                match (&f.member, base) {
                    (_, Value::Poison) => Value::Poison,
                    (Member::Unnamed(i), Value::Tuple(items)) => {
                        match items.get(i.index as usize) {
                            Some(v) => v.clone(),
                            None => self.err(&f.member, "tuple index out of range"),
                        }
                    }
                    (_, other) => self.err(
                        e,
                        format!(
                            "field access on {} is not supported (fields can be read from \
                             `self` and tuples)",
                            other.describe()
                        ),
                    ),
                }
            }
            Expr::MethodCall(mc) => return self.lower_method_call(mc, e, env),
            Expr::Call(c) => return self.lower_call(c, e, env),
            Expr::Block(b) => return self.lower_block(&b.block, env),
            Expr::Const(c) => return self.lower_block(&c.block, env),
            Expr::If(i) => return self.lower_if(i, env),
            Expr::Match(m) => return self.lower_match(m, env),
            Expr::ForLoop(f) => return self.lower_for(f, env),
            Expr::Return(r) => {
                let v = match &r.expr {
                    Some(x) => self.lower_expr(x, env)?,
                    None => Value::Unit,
                };
                return Err(Unwind::Return(v));
            }
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return Ok(
                        self.err(e, "only a plain `break` (no label, no value) is supported")
                    );
                }
                return Err(Unwind::Break);
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    return Ok(self.err(e, "labelled `continue` is not supported"));
                }
                return Err(Unwind::Continue);
            }
            Expr::While(_) | Expr::Loop(_) => self.err(
                e,
                "`while` and `loop` are not supported: use `for i in 0..K` with constant bounds, \
                 which is unrolled at expansion time",
            ),
            Expr::Closure(_) => self.err(
                e,
                "closures are not supported: write a helper method in the impl block (it is \
                 inlined) or a `for` loop",
            ),
            Expr::Macro(m) => self.unsupported_macro(&m.mac),
            Expr::Range(_) => self.err(
                e,
                "ranges are only supported as the bounds of a `for` loop (`for i in 0..K`)",
            ),
            Expr::Unsafe(_) => self.err(e, "`unsafe` blocks are not supported"),
            _ => self.err(
                e,
                "unsupported expression in a #[mechanical_system] body: only f64 arithmetic, \
                 constant-index arrays/tuples, `let`, `for` with constant bounds, constant `if`, \
                 and calls to supported functions and to methods of the impl are allowed",
            ),
        })
    }

    fn lower_lit(&mut self, lit: &Lit) -> Value {
        match lit {
            Lit::Float(f) => {
                if f.suffix() == "f32" {
                    return self.err(f, "`f32` is not supported: use `f64`");
                }
                match f.base10_parse::<f64>() {
                    Ok(v) => self.constant(v),
                    Err(err) => {
                        self.cx.syn_error(err);
                        Value::Poison
                    }
                }
            }
            Lit::Int(i) => match i.suffix() {
                "f64" => match i.base10_parse::<f64>() {
                    Ok(v) => self.constant(v),
                    Err(err) => {
                        self.cx.syn_error(err);
                        Value::Poison
                    }
                },
                "f32" => self.err(i, "`f32` is not supported: use `f64`"),
                _ => match i.base10_parse::<i128>() {
                    Ok(v) => Value::Int(v),
                    Err(err) => {
                        self.cx.syn_error(err);
                        Value::Poison
                    }
                },
            },
            Lit::Bool(b) => Value::Bool(b.value),
            other => self.err(
                other,
                "unsupported literal: only numbers and `true`/`false`",
            ),
        }
    }

    fn lower_path(&mut self, p: &'a syn::ExprPath, env: &mut Env) -> Value {
        let e = p;
        if p.qself.is_some() {
            return self.err(e, "qualified paths (`<T as Trait>::X`) are not supported");
        }
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let segs_ref: Vec<&str> = segs.iter().map(String::as_str).collect();
        if let [name] = segs_ref.as_slice() {
            if p.path.leading_colon.is_none() {
                match env.get(name) {
                    Some(Some(v)) => return v.clone(),
                    Some(None) => {
                        return self.err(e, format!("`{name}` is used before being assigned"))
                    }
                    None => {}
                }
                if *name == "self" {
                    return self.err(
                        e,
                        "`self` can only be used as `self.field` (a parameter) or \
                         `self.method(...)` (an inlined helper)",
                    );
                }
            }
        }
        // std / core f64 constants.
        if let Some((last, prefix)) = segs_ref.split_last() {
            let consts_prefix = matches!(
                prefix,
                ["consts"] | ["f64", "consts"] | ["std" | "core", "f64", "consts"]
            );
            if consts_prefix {
                return match std_const(last) {
                    Some(v) => self.constant(v),
                    None => self.err(e, format!("unknown f64 constant `{last}`")),
                };
            }
            if matches!(prefix, ["f64"] | ["std" | "core", "f64"]) {
                if let Some(&(_, v)) = F64_ASSOC_CONSTS.iter().find(|(n, _)| n == last) {
                    return self.constant(v);
                }
            }
            // Associated constants of this impl block.
            if let [ty, name] = segs_ref.as_slice() {
                if *ty == "Self" || self.is_self_type(ty) {
                    if let Some(c) = self.input.constant(name) {
                        return self.impl_const(c, e);
                    }
                }
            }
            // Anything that looks like a constant is read at run time, with the user's tokens.
            if is_const_like(last) {
                return self.param(e.to_token_stream());
            }
        }
        self.err(
            e,
            format!(
                "cannot find `{}` here: a #[mechanical_system] body can use its parameters, local \
                 variables, `self.field`s, consts and f64 constants",
                segs.join("::")
            ),
        )
    }

    fn is_self_type(&self, name: &str) -> bool {
        match &*self.input.original.self_ty {
            syn::Type::Path(tp) => tp.path.segments.last().is_some_and(|s| s.ident == name),
            _ => false,
        }
    }

    fn impl_const(&mut self, c: &'a syn::ImplItemConst, at: &dyn ToTokens) -> Value {
        let name = c.ident.to_string();
        if let Some(v) = self.impl_consts.get(&name) {
            return v.clone();
        }
        if self.consts_in_progress.contains(&name) {
            return self.err(
                at,
                format!("constant `{name}` is defined in terms of itself"),
            );
        }
        self.consts_in_progress.push(name.clone());
        let v = self.lower_const_expr(&c.expr, &c.ty);
        self.consts_in_progress.pop();
        self.impl_consts.insert(name, v.clone());
        v
    }

    /// A run-time parameter (`Var::Param`), deduplicated by its tokens.
    fn param(&mut self, tokens: TokenStream) -> Value {
        let key = tokens.to_string();
        let k = match self.param_keys.get(&key) {
            Some(&k) => k,
            None => {
                let k = self.params.len() as u32;
                self.params.push(ParamExpr { tokens });
                self.param_keys.insert(key, k);
                k
            }
        };
        Value::Scalar(self.graph.var(Var::Param(k)))
    }

    /// `self.a`, `self.a.b`, `self.arr[2]`, `self.0` → a parameter; `None` when `e` is not a
    /// place rooted at `self`.
    fn self_place(&mut self, e: &'a Expr, env: &mut Env) -> Result<Option<Value>, Unwind> {
        match self.self_place_tokens(e, env)? {
            None => Ok(None),
            Some(None) => Ok(Some(Value::Poison)),
            Some(Some(tokens)) => Ok(Some(self.param(tokens))),
        }
    }

    /// `Some(Some(tokens))` for a valid place rooted at `self`, `Some(None)` after an error.
    #[allow(clippy::type_complexity)]
    fn self_place_tokens(
        &mut self,
        e: &'a Expr,
        env: &mut Env,
    ) -> Result<Option<Option<TokenStream>>, Unwind> {
        match e {
            Expr::Path(p) if p.path.is_ident("self") => Ok(Some(Some(p.to_token_stream()))),
            Expr::Paren(p) => self.self_place_tokens(&p.expr, env),
            Expr::Group(g) => self.self_place_tokens(&g.expr, env),
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => {
                self.self_place_tokens(&u.expr, env)
            }
            Expr::Field(f) => Ok(self.self_place_tokens(&f.base, env)?.map(|base| {
                base.map(|b| {
                    let dot = &f.dot_token;
                    let member = &f.member;
                    quote!(#b #dot #member)
                })
            })),
            Expr::Index(ix) => {
                let Some(base) = self.self_place_tokens(&ix.expr, env)? else {
                    return Ok(None);
                };
                let idx = self.lower_expr(&ix.index, env)?;
                let Some(base) = base else {
                    return Ok(Some(None));
                };
                Ok(Some(self.as_index(&idx, &ix.index, "index").map(|k| {
                    let lit = Literal::usize_unsuffixed(k);
                    let span = ix.index.span();
                    quote_spanned!(span=> #base[#lit])
                })))
            }
            _ => Ok(None),
        }
    }

    /// An integer value usable as an index / length, with errors at `at`.
    fn as_index(&self, v: &Value, at: &Expr, what: &str) -> Option<usize> {
        match v {
            Value::Int(i) => match usize::try_from(*i) {
                Ok(k) => Some(k),
                Err(_) => {
                    self.err(at, format!("{what} {i} is negative"));
                    None
                }
            },
            Value::Poison => None,
            Value::Scalar(s) => {
                let found = if self.graph.depends_on_q(*s) {
                    "not a value computed from the coordinates"
                } else if self.graph.depends_on(*s, |v| matches!(v, Var::Param(_))) {
                    "not a run-time value such as `self.field` or a module-level `const`, whose \
                     value the macro cannot see"
                } else {
                    "not an f64"
                };
                self.err(
                    at,
                    format!(
                        "{what} must be an integer constant known at expansion time (a literal, \
                         a loop variable, a `const` of the fn or impl, or arithmetic on them), \
                         {found}"
                    ),
                );
                None
            }
            other => {
                self.err(
                    at,
                    format!(
                        "{what} must be an integer constant, not {}",
                        other.describe()
                    ),
                );
                None
            }
        }
    }

    /// `base[idx]`; `base_expr` and `at` (the index expression) are for messages.
    fn index(&mut self, base: Value, idx: Value, base_expr: &Expr, at: &Expr) -> Value {
        let Some(k) = self.as_index(&idx, at, "index") else {
            return Value::Poison;
        };
        match base {
            Value::Array(items) => match items.get(k) {
                Some(v) => v.clone(),
                None => {
                    let len = items.len();
                    let what = match strip_parens(base_expr) {
                        Expr::Path(p) if p.path.get_ident().is_some() => {
                            format!("`{}`", p.to_token_stream())
                        }
                        _ => "this array".to_string(),
                    };
                    let index = match strip_parens(at) {
                        Expr::Lit(_) => format!("index {k}"),
                        other => format!("index `{}` = {k}", tokens_text(other)),
                    };
                    let valid = if len == 0 {
                        "it has no elements".to_string()
                    } else {
                        format!("valid indices are 0..={}", len - 1)
                    };
                    self.err(
                        at,
                        format!("{index} is out of range for {what} of length {len} ({valid})"),
                    )
                }
            },
            Value::Poison => Value::Poison,
            other => self.err(at, format!("cannot index into {}", other.describe())),
        }
    }

    fn lower_unary(&mut self, op: &UnOp, v: Value, e: &Expr) -> Value {
        match (op, v) {
            (_, Value::Poison) => Value::Poison,
            (UnOp::Deref(_), v) => v,
            (UnOp::Neg(_), Value::Scalar(a)) => Value::Scalar(self.graph.neg(a)),
            (UnOp::Neg(_), Value::Int(i)) => Value::Int(-i),
            (UnOp::Not(_), Value::Bool(b)) => Value::Bool(!b),
            (_, v) => self.err(
                e,
                format!("this operator cannot be applied to {}", v.describe()),
            ),
        }
    }

    fn lower_binary(&mut self, b: &'a syn::ExprBinary, e: &'a Expr, env: &mut Env) -> Lr {
        if let Some(op) = compound_base(&b.op) {
            let rhs = self.lower_expr(&b.right, env)?;
            self.assign(&b.left, Some((op, e)), rhs, env)?;
            return Ok(Value::Unit);
        }
        let l = self.lower_expr(&b.left, env)?;
        // Short-circuit `&&` / `||`, as Rust does (the right side may index out of range).
        match (&b.op, &l) {
            (BinOp::And(_), Value::Bool(false)) => return Ok(Value::Bool(false)),
            (BinOp::Or(_), Value::Bool(true)) => return Ok(Value::Bool(true)),
            _ => {}
        }
        let r = self.lower_expr(&b.right, env)?;
        Ok(self.binop(b.op, l, r, &b.left, &b.right, e))
    }

    /// `l op r`; `le`/`re`/`e` are the operand and whole expressions, for errors.
    fn binop(&mut self, op: BinOp, l: Value, r: Value, le: &Expr, re: &Expr, e: &Expr) -> Value {
        use Value::{Bool, Int, Poison, Scalar};
        match (l, r) {
            (Poison, _) | (_, Poison) => Poison,
            (Scalar(a), Scalar(b)) => self.scalar_binop(op, a, b, e),
            (Int(a), Int(b)) => match int_binop(op, a, b) {
                Ok(v) => v,
                Err(msg) => self.err(e, msg),
            },
            (Bool(a), Bool(b)) => match op {
                BinOp::And(_) | BinOp::BitAnd(_) => Bool(a && b),
                BinOp::Or(_) | BinOp::BitOr(_) => Bool(a || b),
                BinOp::BitXor(_) | BinOp::Ne(_) => Bool(a != b),
                BinOp::Eq(_) => Bool(a == b),
                _ => self.err(e, "unsupported operator on `bool`s"),
            },
            (Int(_), Scalar(_)) => self.int_on_f64(le),
            (Scalar(_), Int(_)) => self.int_on_f64(re),
            (l, r) => self.err(
                e,
                format!(
                    "unsupported operands: {} and {} (arithmetic works on f64 scalars; index \
                     arrays and tuples element by element)",
                    l.describe(),
                    r.describe()
                ),
            ),
        }
    }

    fn int_on_f64(&self, int_side: &Expr) -> Value {
        self.err(
            int_side,
            "integer arithmetic on coordinates: this operand is an integer but the other is an \
             f64; write a float literal such as `2.0`, or convert with `as f64`",
        )
    }

    fn scalar_binop(&mut self, op: BinOp, a: NodeId, b: NodeId, e: &Expr) -> Value {
        let g = &mut self.graph;
        let node = match op {
            BinOp::Add(_) => g.add(a, b),
            BinOp::Sub(_) => g.sub(a, b),
            BinOp::Mul(_) => g.mul(a, b),
            BinOp::Div(_) => g.div(a, b),
            BinOp::Rem(_) => {
                return self.err(
                    e,
                    "`%` on f64 is non-smooth: not differentiable everywhere, so \
                     #[mechanical_system] cannot differentiate it",
                )
            }
            BinOp::Eq(_)
            | BinOp::Ne(_)
            | BinOp::Lt(_)
            | BinOp::Le(_)
            | BinOp::Gt(_)
            | BinOp::Ge(_) => return self.compare_scalars(op, a, b, e),
            _ => return self.err(e, "unsupported operator on f64 values"),
        };
        Value::Scalar(node)
    }

    fn compare_scalars(&mut self, op: BinOp, a: NodeId, b: NodeId, e: &Expr) -> Value {
        if let (Some(x), Some(y)) = (self.graph.as_const(a), self.graph.as_const(b)) {
            return Value::Bool(match op {
                BinOp::Eq(_) => x == y,
                BinOp::Ne(_) => x != y,
                BinOp::Lt(_) => x < y,
                BinOp::Le(_) => x <= y,
                BinOp::Gt(_) => x > y,
                _ => x >= y,
            });
        }
        let what = self.branching.unwrap_or("a comparison");
        if self.graph.depends_on_q(a) || self.graph.depends_on_q(b) {
            self.err(
                e,
                format!(
                    "{what} on coordinates is non-smooth: branching on `q` is not \
                     differentiable everywhere, so #[mechanical_system] cannot differentiate it \
                     (conditions must be constants known at expansion time)"
                ),
            )
        } else {
            self.err(
                e,
                format!(
                    "{what} on a parameter (`self.field` or an outside constant) cannot be \
                     decided at expansion time: conditions must be constants known to the macro \
                     (literals, loop variables, `const`s of the fn or impl)"
                ),
            )
        }
    }

    fn lower_cast(&mut self, v: Value, ty: &syn::Type, e: &Expr) -> Value {
        match (Ty::from_syn(ty), v) {
            (_, Value::Poison) => Value::Poison,
            (Ty::F64, Value::Int(i)) => self.constant(i as f64),
            (Ty::F64, Value::Scalar(s)) => Value::Scalar(s),
            (Ty::Int, Value::Int(i)) => Value::Int(i),
            (Ty::Int, Value::Bool(b)) => Value::Int(i128::from(b)),
            (Ty::Int, Value::Scalar(s)) => {
                if let Some(c) = self.graph.as_const(s) {
                    if c.is_finite() && c.fract() == 0.0 {
                        return Value::Int(c as i128);
                    }
                }
                self.err(
                    e,
                    "casting an f64 to an integer is non-smooth: truncation is a step function, \
                     not differentiable, so #[mechanical_system] cannot differentiate it (keep \
                     computations on coordinates in f64)",
                )
            }
            (Ty::F32, _) => self.err(ty, "`f32` is not supported: use `f64`"),
            (_, v) => self.err(e, format!("unsupported cast of {}", v.describe())),
        }
    }

    /// `place = v` (`op: None`) or `place op= v`.
    fn assign(
        &mut self,
        place: &'a Expr,
        op: Option<(BinOp, &'a Expr)>,
        v: Value,
        env: &mut Env,
    ) -> Result<(), Unwind> {
        // Resolve the place into a root variable and a path of constant indices.
        let mut path = Vec::new();
        let mut cur = place;
        let root = loop {
            match cur {
                Expr::Paren(p) => cur = &p.expr,
                Expr::Group(g) => cur = &g.expr,
                Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => cur = &u.expr,
                Expr::Index(ix) => {
                    let idx = self.lower_expr(&ix.index, env)?;
                    match self.as_index(&idx, &ix.index, "index") {
                        Some(k) => path.push((k, &*ix.index)),
                        None => return Ok(()),
                    }
                    cur = &ix.expr;
                }
                Expr::Field(f) => match &f.member {
                    Member::Unnamed(i) => {
                        path.push((i.index as usize, cur));
                        cur = &f.base;
                    }
                    Member::Named(_) => {
                        self.err(
                            cur,
                            "only local variables (and their elements) can be assigned in a \
                             #[mechanical_system] body",
                        );
                        return Ok(());
                    }
                },
                Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                    break p.path.get_ident().expect("checked");
                }
                other => {
                    self.err(
                        other,
                        "unsupported assignment target: assign to a local variable",
                    );
                    return Ok(());
                }
            }
        };
        path.reverse();
        let name = root.to_string();
        if env.protected.contains(&name) {
            self.err(root, format!("the coordinates `{name}` cannot be assigned"));
            return Ok(());
        }
        // Read the old element (checking bounds), then compute, then store.
        let old = {
            let Some(slot) = env.get(&name) else {
                self.err(root, format!("cannot find local variable `{name}`"));
                return Ok(());
            };
            match slot {
                None if path.is_empty() && op.is_none() => None,
                None => {
                    self.err(root, format!("`{name}` is used before being assigned"));
                    return Ok(());
                }
                Some(root_value) => {
                    let mut cur = root_value;
                    for &(k, at) in &path {
                        match cur {
                            Value::Array(items) | Value::Tuple(items) => match items.get(k) {
                                Some(x) => cur = x,
                                None => {
                                    let len = items.len();
                                    self.err(
                                        at,
                                        format!(
                                            "index {k} is out of range for a value of length {len}"
                                        ),
                                    );
                                    return Ok(());
                                }
                            },
                            Value::Poison => return Ok(()),
                            other => {
                                let d = other.describe();
                                self.err(at, format!("cannot index into {d}"));
                                return Ok(());
                            }
                        }
                    }
                    Some(cur.clone())
                }
            }
        };
        let new = match (op, old) {
            (Some((op, whole)), Some(old)) => self.binop(op, old, v, place, whole, whole),
            _ => v,
        };
        store(env, &name, &path, new);
        Ok(())
    }

    // ----------------------------------------------------------------- calls

    fn lower_method_call(&mut self, mc: &'a syn::ExprMethodCall, e: &'a Expr, env: &mut Env) -> Lr {
        if is_self(&mc.receiver) {
            return self.call_helper(&mc.method, true, &mc.args, false, e, env);
        }
        let recv = self.lower_expr(&mc.receiver, env)?;
        let mut args = Vec::with_capacity(mc.args.len());
        for a in &mc.args {
            args.push(self.lower_expr(a, env)?);
        }
        let arg_exprs: Vec<&Expr> = mc.args.iter().collect();
        Ok(self.apply_method(&mc.method, recv, args, &arg_exprs, e))
    }

    fn lower_call(&mut self, c: &'a syn::ExprCall, e: &'a Expr, env: &mut Env) -> Lr {
        let func = strip_parens(&c.func);
        let Expr::Path(p) = func else {
            return Ok(self.err(&c.func, "only calls of named functions are supported"));
        };
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        match segs.as_slice() {
            [local] if p.path.leading_colon.is_none() && env.get(local).is_some() => {
                Ok(match env.get(local) {
                    // A closure (already reported) or an erroneous value.
                    Some(Some(Value::Poison)) => Value::Poison,
                    _ => self.err(
                        &c.func,
                        format!("`{local}` is a local variable, not a function"),
                    ),
                })
            }
            [ty, name] if *ty == "Self" || self.is_self_type(ty) => {
                let name = &p.path.segments[1].ident;
                let first_is_self = c.args.first().is_some_and(is_self);
                self.call_helper(name, false, &c.args, first_is_self, e, env)
            }
            ["f64", "from"] if c.args.len() == 1 => {
                let v = self.lower_expr(&c.args[0], env)?;
                Ok(match v {
                    Value::Int(i) => self.constant(i as f64),
                    Value::Scalar(s) => Value::Scalar(s),
                    Value::Bool(b) => self.constant(f64::from(u8::from(b))),
                    other => self.err(e, format!("`f64::from` of {}", other.describe())),
                })
            }
            [.., "f64", _] => {
                let name = &p.path.segments.last().expect("two segments").ident;
                if c.args.is_empty() {
                    return Ok(self.err(e, format!("`f64::{name}` needs an argument")));
                }
                let mut args = Vec::with_capacity(c.args.len());
                for a in &c.args {
                    args.push(self.lower_expr(a, env)?);
                }
                let recv = args.remove(0);
                let arg_exprs: Vec<&Expr> = c.args.iter().skip(1).collect();
                Ok(self.apply_method(name, recv, args, &arg_exprs, e))
            }
            _ => {
                let shown = segs.join("::");
                let last = segs.last().copied().unwrap_or("");
                let hint = if NON_SMOOTH.contains(&last) {
                    format!(
                        " (`{last}` is non-smooth: not differentiable everywhere, so \
                         #[mechanical_system] cannot differentiate it)"
                    )
                } else {
                    String::new()
                };
                let own = if segs.len() == 1 {
                    format!(" (make `{last}` one: it is then inlined and differentiated)")
                } else {
                    String::new()
                };
                Ok(self.err(
                    &c.func,
                    format!(
                        "unsupported function `{shown}`{hint}: a #[mechanical_system] body can \
                         only call methods of its own impl block{own} and the f64 methods \
                         {SUPPORTED_F64_METHODS} (as `x.sin()` or `f64::sin(x)`)"
                    ),
                ))
            }
        }
    }

    /// `recv.name(args)` on a value.
    fn apply_method(
        &mut self,
        name: &Ident,
        recv: Value,
        args: Vec<Value>,
        arg_exprs: &[&Expr],
        e: &Expr,
    ) -> Value {
        if args.iter().any(|a| matches!(a, Value::Poison)) {
            return Value::Poison;
        }
        match recv {
            Value::Poison => Value::Poison,
            Value::Scalar(x) => self.scalar_method(name, x, args, arg_exprs, e),
            Value::Int(i) => self.int_method(name, i, args, e),
            Value::Array(items) => match (name.to_string().as_str(), args.len()) {
                ("len", 0) => Value::Int(items.len() as i128),
                ("clone", 0) => Value::Array(items),
                (other, _) => self.err(
                    name,
                    format!(
                        "unsupported array method `{other}`: index arrays element by element, \
                         e.g. in a `for` loop (`.iter()` is only supported as a `for` loop's \
                         iterator)"
                    ),
                ),
            },
            other => self.err(
                name,
                format!("unsupported method `{name}` on {}", other.describe()),
            ),
        }
    }

    fn scalar_method(
        &mut self,
        name: &Ident,
        x: NodeId,
        args: Vec<Value>,
        arg_exprs: &[&Expr],
        e: &Expr,
    ) -> Value {
        let n = name.to_string();
        let n = n.as_str();
        let arity = match n {
            "powi" | "powf" | "atan2" | "log" | "hypot" => 1,
            "mul_add" => 2,
            _ if NON_SMOOTH.contains(&n) => usize::MAX,
            _ => 0,
        };
        if arity != usize::MAX && args.len() != arity {
            return self.err(
                e,
                format!("`{n}` takes {arity} argument(s), {} given", args.len()),
            );
        }
        // Scalar arguments (all but `powi`'s).
        let mut sargs = Vec::new();
        if n != "powi" {
            for (a, at) in args.iter().zip(arg_exprs) {
                match a {
                    Value::Scalar(s) => sargs.push(*s),
                    Value::Int(_) => return self.int_on_f64(at),
                    other => {
                        return self.err(at, format!("expected an f64, found {}", other.describe()))
                    }
                }
            }
        }
        let g = &mut self.graph;
        let v =
            match n {
                "sqrt" => g.sqrt(x),
                "exp" => g.exp(x),
                "ln" => g.ln(x),
                "sin" => g.sin(x),
                "cos" => g.cos(x),
                "tan" => g.tan(x),
                "tanh" => g.tanh(x),
                "acos" => g.acos(x),
                "asin" => g.asin(x),
                "atan" => g.unary(Unary::Atan, x),
                "powi" => {
                    let k = match &args[0] {
                        Value::Int(k) => i32::try_from(*k).ok(),
                        _ => None,
                    };
                    match k {
                        Some(k) => g.powi(x, k),
                        None => return self.err(
                            arg_exprs
                                .first()
                                .map_or_else(|| e.to_token_stream(), |a| a.to_token_stream()),
                            "the exponent of `powi` must be an `i32` constant known at expansion \
                             time (a literal, loop variable or `const`); use `powf` for an f64 \
                             exponent",
                        ),
                    }
                }
                "powf" => g.powf(x, sargs[0]),
                "atan2" => g.atan2(x, sargs[0]),
                "recip" => {
                    let one = g.constant(1.0);
                    g.div(one, x)
                }
                "log" => {
                    let lx = g.ln(x);
                    let lb = g.ln(sargs[0]);
                    g.div(lx, lb)
                }
                "log10" | "log2" => {
                    let lx = g.ln(x);
                    let c = g.constant(if n == "log10" {
                        consts::LN_10
                    } else {
                        consts::LN_2
                    });
                    g.div(lx, c)
                }
                "exp2" => {
                    let c = g.constant(consts::LN_2);
                    let y = g.mul(x, c);
                    g.exp(y)
                }
                "exp_m1" => {
                    let ex = g.exp(x);
                    let one = g.constant(1.0);
                    g.sub(ex, one)
                }
                "ln_1p" => {
                    let one = g.constant(1.0);
                    let y = g.add(one, x);
                    g.ln(y)
                }
                "sinh" | "cosh" => {
                    let ex = g.exp(x);
                    let mx = g.neg(x);
                    let emx = g.exp(mx);
                    let s = if n == "sinh" {
                        g.sub(ex, emx)
                    } else {
                        g.add(ex, emx)
                    };
                    let half = g.constant(0.5);
                    g.mul(half, s)
                }
                "asinh" | "acosh" => {
                    let xx = g.mul(x, x);
                    let one = g.constant(1.0);
                    let r = if n == "asinh" {
                        g.add(xx, one)
                    } else {
                        g.sub(xx, one)
                    };
                    let s = g.sqrt(r);
                    let y = g.add(x, s);
                    g.ln(y)
                }
                "atanh" => {
                    let one = g.constant(1.0);
                    let a = g.add(one, x);
                    let b = g.sub(one, x);
                    let r = g.div(a, b);
                    let l = g.ln(r);
                    let half = g.constant(0.5);
                    g.mul(half, l)
                }
                "hypot" => {
                    let xx = g.mul(x, x);
                    let yy = g.mul(sargs[0], sargs[0]);
                    let s = g.add(xx, yy);
                    g.sqrt(s)
                }
                "mul_add" => {
                    let p = g.mul(x, sargs[0]);
                    g.add(p, sargs[1])
                }
                "to_radians" | "to_degrees" => {
                    let c = g.constant(if n == "to_radians" {
                        consts::PI / 180.0
                    } else {
                        180.0 / consts::PI
                    });
                    g.mul(x, c)
                }
                "sin_cos" => {
                    let s = g.sin(x);
                    let c = g.cos(x);
                    return Value::Tuple(vec![Value::Scalar(s), Value::Scalar(c)]);
                }
                "clone" => x,
                _ if NON_SMOOTH.contains(&n) => {
                    // Constant operands (no coordinate, no parameter) can still be folded.
                    if let Some(v) = self.fold_non_smooth(n, x, &sargs) {
                        return self.constant(v);
                    }
                    return self.err(
                        name,
                        format!(
                            "`{n}` is non-smooth: not differentiable everywhere, so \
                         #[mechanical_system] cannot differentiate it"
                        ),
                    );
                }
                "cbrt" => {
                    return self.err(
                        name,
                        "`cbrt` is not supported (`powf(1.0 / 3.0)` differs from it for negative \
                     arguments; use it if the argument is positive)",
                    )
                }
                _ => {
                    return self.err(
                        name,
                        format!(
                            "unsupported method `{n}` on f64: #[mechanical_system] can only \
                         differentiate the f64 methods {SUPPORTED_F64_METHODS}"
                        ),
                    )
                }
            };
        Value::Scalar(v)
    }

    fn fold_non_smooth(&self, n: &str, x: NodeId, args: &[NodeId]) -> Option<f64> {
        let x = self.graph.as_const(x)?;
        let a: Option<Vec<f64>> = args.iter().map(|&a| self.graph.as_const(a)).collect();
        let a = a?;
        Some(match (n, a.as_slice()) {
            ("abs", []) => x.abs(),
            ("signum", []) => x.signum(),
            ("floor", []) => x.floor(),
            ("ceil", []) => x.ceil(),
            ("round", []) => x.round(),
            ("trunc", []) => x.trunc(),
            ("fract", []) => x.fract(),
            ("min", [y]) => x.min(*y),
            ("max", [y]) => x.max(*y),
            ("clamp", [lo, hi]) if lo <= hi => x.clamp(*lo, *hi),
            ("copysign", [y]) => x.copysign(*y),
            _ => return None,
        })
    }

    fn int_method(&mut self, name: &Ident, i: i128, args: Vec<Value>, e: &Expr) -> Value {
        let ints: Option<Vec<i128>> = args
            .iter()
            .map(|a| match a {
                Value::Int(k) => Some(*k),
                _ => None,
            })
            .collect();
        let Some(ints) = ints else {
            return self.err(
                e,
                format!("integer method `{name}` takes integer arguments"),
            );
        };
        let n = name.to_string();
        let r = match (n.as_str(), ints.as_slice()) {
            ("pow", [k]) => u32::try_from(*k).ok().and_then(|k| i.checked_pow(k)),
            ("abs", []) => Some(i.abs()),
            ("signum", []) => Some(i.signum()),
            ("min", [k]) => Some(i.min(*k)),
            ("max", [k]) => Some(i.max(*k)),
            ("rem_euclid", [k]) if *k != 0 => Some(i.rem_euclid(*k)),
            ("clone", []) => Some(i),
            _ => {
                let hint = if SUPPORTED_F64_METHODS.contains(n.as_str()) {
                    " (it is an f64 method: this value is an integer; write a float literal \
                     such as `2.0` or convert with `as f64`)"
                } else {
                    ""
                };
                return self.err(name, format!("unsupported integer method `{n}`{hint}"));
            }
        };
        match r {
            Some(v) => Value::Int(v),
            None => self.err(e, "integer overflow at expansion time"),
        }
    }

    // ----------------------------------------------------------------- control flow

    fn lower_if(&mut self, i: &'a syn::ExprIf, env: &mut Env) -> Lr {
        if let Expr::Let(l) = &*i.cond {
            return Ok(self.err(l, "`if let` is not supported: conditions must be constants"));
        }
        let saved = self.branching.replace("`if`");
        let cond = self.lower_expr(&i.cond, env);
        self.branching = saved;
        match cond? {
            Value::Bool(true) => self.lower_block(&i.then_branch, env),
            Value::Bool(false) => match &i.else_branch {
                Some((_, els)) => self.lower_expr(els, env),
                None => Ok(Value::Unit),
            },
            Value::Poison => Ok(Value::Poison),
            Value::Scalar(_) => Ok(self.err(
                &i.cond,
                "`if` on coordinates is non-smooth: conditions must be booleans known at \
                 expansion time",
            )),
            other => Ok(self.err(
                &i.cond,
                format!("the condition must be a `bool`, not {}", other.describe()),
            )),
        }
    }

    fn lower_match(&mut self, m: &'a syn::ExprMatch, env: &mut Env) -> Lr {
        let saved = self.branching.replace("`match`");
        let scrut = self.lower_expr(&m.expr, env);
        self.branching = saved;
        let scrut = scrut?;
        match &scrut {
            Value::Int(_) | Value::Bool(_) => {}
            Value::Poison => return Ok(Value::Poison),
            Value::Scalar(s) => {
                let msg = if self.graph.depends_on_q(*s) {
                    "`match` on coordinates is non-smooth: branching on `q` is not \
                     differentiable everywhere, so #[mechanical_system] cannot differentiate it"
                } else {
                    "`match` on an f64 is not supported: match on integer constants"
                };
                return Ok(self.err(&m.expr, msg));
            }
            other => {
                return Ok(self.err(
                    &m.expr,
                    format!("`match` on {} is not supported", other.describe()),
                ))
            }
        }
        for arm in &m.arms {
            env.push();
            let r = self.arm(arm, &scrut, env);
            env.pop();
            match r {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => {}
                Err(u) => return Err(u),
            }
        }
        Ok(self.err(
            &m.expr,
            "no arm of this `match` applies (at expansion time)",
        ))
    }

    fn arm(
        &mut self,
        arm: &'a syn::Arm,
        scrut: &Value,
        env: &mut Env,
    ) -> Result<Option<Value>, Unwind> {
        match self.pat_matches(&arm.pat, scrut, env) {
            None => return Ok(Some(Value::Poison)),
            Some(false) => return Ok(None),
            Some(true) => {}
        }
        if let Some((_, guard)) = &arm.guard {
            match self.lower_expr(guard, env)? {
                Value::Bool(true) => {}
                Value::Bool(false) => return Ok(None),
                Value::Poison => return Ok(Some(Value::Poison)),
                other => {
                    return Ok(Some(self.err(
                        guard,
                        format!("a guard must be a `bool`, not {}", other.describe()),
                    )))
                }
            }
        }
        self.lower_expr(&arm.body, env).map(Some)
    }

    /// Whether `pat` matches the constant `v` (binding names into the current scope);
    /// `None` after an error.
    fn pat_matches(&mut self, pat: &'a Pat, v: &Value, env: &mut Env) -> Option<bool> {
        let lit_value = |lw: &mut Self, e: &'a Expr| -> Option<Value> {
            let mut tmp = Env::default();
            tmp.push();
            match lw.lower_expr(e, &mut tmp) {
                Ok(Value::Poison) | Err(_) => None,
                Ok(v) => Some(v),
            }
        };
        match pat {
            Pat::Wild(_) => Some(true),
            Pat::Ident(p) if p.subpat.is_none() => {
                self.bind_pattern(pat, Some(v.clone()), env, true);
                Some(true)
            }
            Pat::Or(o) => {
                for c in &o.cases {
                    if self.pat_matches(c, v, env)? {
                        return Some(true);
                    }
                }
                Some(false)
            }
            Pat::Paren(p) => self.pat_matches(&p.pat, v, env),
            Pat::Lit(l) => {
                let lv = self.lower_lit(&l.lit);
                Some(const_eq(&lv, v))
            }
            Pat::Range(r) => {
                let Value::Int(x) = v else {
                    self.err(pat, "range patterns need an integer");
                    return None;
                };
                let lo = match &r.start {
                    Some(s) => match lit_value(self, s)? {
                        Value::Int(k) => Some(k),
                        _ => None,
                    },
                    None => Some(i128::MIN),
                };
                let hi = match &r.end {
                    Some(s) => match lit_value(self, s)? {
                        Value::Int(k) => Some(k),
                        _ => None,
                    },
                    None => Some(i128::MAX),
                };
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    self.err(pat, "range pattern bounds must be integer literals");
                    return None;
                };
                Some(match r.limits {
                    RangeLimits::HalfOpen(_) => lo <= *x && *x < hi,
                    RangeLimits::Closed(_) => lo <= *x && *x <= hi,
                })
            }
            other => {
                self.err(
                    other,
                    "unsupported `match` pattern: use literals, ranges, `|`, `_` or a name",
                );
                None
            }
        }
    }

    fn lower_for(&mut self, f: &'a syn::ExprForLoop, env: &mut Env) -> Lr {
        if f.label.is_some() {
            return Ok(self.err(f, "labelled loops are not supported"));
        }
        let Some(items) = self.iterable(&f.expr, env)? else {
            return Ok(Value::Unit);
        };
        if !self.charge(items.len(), &f.expr) {
            return Ok(Value::Unit);
        }
        for item in items {
            let before = self.cx.error_count();
            env.push();
            self.bind_pattern(&f.pat, Some(item), env, true);
            let r = self.lower_block(&f.body, env);
            env.pop();
            match r {
                Ok(_) | Err(Unwind::Continue) => {}
                Err(Unwind::Break) => break,
                Err(ret @ Unwind::Return(_)) => return Err(ret),
            }
            if self.cx.error_count() > before {
                break; // the same error would repeat in every iteration
            }
        }
        Ok(Value::Unit)
    }

    /// The values a `for` loop iterates over; `None` after an error.
    fn iterable(&mut self, e: &'a Expr, env: &mut Env) -> Result<Option<Vec<Value>>, Unwind> {
        const BOUNDS: &str = "loop bounds must be integer constants known at expansion time \
             (literals, `const`s of the fn or impl, loop variables, or arithmetic on them)";
        match e {
            Expr::Paren(p) => self.iterable(&p.expr, env),
            Expr::Group(g) => self.iterable(&g.expr, env),
            Expr::Range(r) => {
                let (Some(start), Some(end)) = (&r.start, &r.end) else {
                    self.err(e, "`for` loops need a bounded range such as `0..K`");
                    return Ok(None);
                };
                let s = self.lower_expr(start, env)?;
                let t = self.lower_expr(end, env)?;
                let (s, t) = match (s, t) {
                    (Value::Int(s), Value::Int(t)) => (s, t),
                    (Value::Poison, _) | (_, Value::Poison) => return Ok(None),
                    (Value::Int(_), _) => {
                        self.err(end, BOUNDS);
                        return Ok(None);
                    }
                    _ => {
                        self.err(start, BOUNDS);
                        return Ok(None);
                    }
                };
                let t = match r.limits {
                    RangeLimits::HalfOpen(_) => t,
                    RangeLimits::Closed(_) => t + 1,
                };
                let len = usize::try_from((t - s).max(0)).unwrap_or(usize::MAX);
                if self.unrolled.saturating_add(len) > MAX_UNROLL {
                    self.charge(len, &e);
                    return Ok(None);
                }
                Ok(Some((s..t).map(Value::Int).collect()))
            }
            Expr::MethodCall(mc) => {
                let name = mc.method.to_string();
                let adaptor = matches!(
                    name.as_str(),
                    "rev"
                        | "step_by"
                        | "skip"
                        | "take"
                        | "enumerate"
                        | "zip"
                        | "iter"
                        | "into_iter"
                        | "copied"
                        | "cloned"
                );
                if !adaptor {
                    return self.iterable_value(e, env);
                }
                let Some(mut items) = (if matches!(name.as_str(), "iter" | "into_iter") {
                    self.iterable_value(&mc.receiver, env)?
                } else {
                    self.iterable(&mc.receiver, env)?
                }) else {
                    return Ok(None);
                };
                let arg = |lw: &mut Self, env: &mut Env| -> Result<Option<usize>, Unwind> {
                    let Some(a) = mc.args.first() else {
                        lw.err(e, format!("`{name}` takes an argument"));
                        return Ok(None);
                    };
                    let v = lw.lower_expr(a, env)?;
                    Ok(lw.as_index(&v, a, "argument"))
                };
                match name.as_str() {
                    "rev" => items.reverse(),
                    "step_by" => match arg(self, env)? {
                        Some(0) => {
                            self.err(e, "`step_by(0)` never advances");
                            return Ok(None);
                        }
                        Some(k) => items = items.into_iter().step_by(k).collect(),
                        None => return Ok(None),
                    },
                    "skip" => match arg(self, env)? {
                        Some(k) => items = items.into_iter().skip(k).collect(),
                        None => return Ok(None),
                    },
                    "take" => match arg(self, env)? {
                        Some(k) => items.truncate(k),
                        None => return Ok(None),
                    },
                    "enumerate" => {
                        items = items
                            .into_iter()
                            .enumerate()
                            .map(|(i, v)| Value::Tuple(vec![Value::Int(i as i128), v]))
                            .collect();
                    }
                    "zip" => {
                        let Some(other) = mc.args.first() else {
                            return Ok(None);
                        };
                        let Some(other) = self.iterable(other, env)? else {
                            return Ok(None);
                        };
                        items = items
                            .into_iter()
                            .zip(other)
                            .map(|(a, b)| Value::Tuple(vec![a, b]))
                            .collect();
                    }
                    _ => {}
                }
                Ok(Some(items))
            }
            _ => self.iterable_value(e, env),
        }
    }

    fn iterable_value(&mut self, e: &'a Expr, env: &mut Env) -> Result<Option<Vec<Value>>, Unwind> {
        match self.lower_expr(e, env)? {
            Value::Array(items) => Ok(Some(items)),
            Value::Poison => Ok(None),
            other => {
                self.err(
                    e,
                    format!(
                        "`for` loops need a range with constant bounds (`0..K`, `0..=K`) or an \
                         array, not {}",
                        other.describe()
                    ),
                );
                Ok(None)
            }
        }
    }
}

/// Writes `v` at `name[path...]` (bounds already checked).
fn store(env: &mut Env, name: &str, path: &[(usize, &Expr)], v: Value) {
    let Some(slot) = env.get_mut(name) else {
        return;
    };
    if path.is_empty() {
        *slot = Some(v);
        return;
    }
    let Some(mut cur) = slot.as_mut() else {
        return;
    };
    for &(k, _) in path {
        match cur {
            Value::Array(items) | Value::Tuple(items) => cur = &mut items[k],
            _ => return,
        }
    }
    *cur = v;
}

/// The source text of an expression, as rustc would print it (`i + 1`, `self.n`).
fn tokens_text(e: &Expr) -> String {
    let text = e.to_token_stream().to_string();
    // `TokenStream`'s Display spaces every token: undo it around `.`, `(`, `)`, `[`, `]`.
    let mut out = text;
    for (from, to) in [
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" [", "["),
        ("[ ", "["),
        (" ]", "]"),
        (" ,", ","),
    ] {
        out = out.replace(from, to);
    }
    out
}

fn is_self(e: &Expr) -> bool {
    matches!(strip_parens(e), Expr::Path(p) if p.path.is_ident("self"))
}

fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        Expr::Group(g) => strip_parens(&g.expr),
        Expr::Reference(r) => strip_parens(&r.expr),
        _ => e,
    }
}

fn const_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => false,
    }
}

/// `+=` → `+`, ...; `None` for non-compound operators.
fn compound_base(op: &BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::AddAssign(t) => BinOp::Add(syn::Token![+](t.spans[0])),
        BinOp::SubAssign(t) => BinOp::Sub(syn::Token![-](t.spans[0])),
        BinOp::MulAssign(t) => BinOp::Mul(syn::Token![*](t.spans[0])),
        BinOp::DivAssign(t) => BinOp::Div(syn::Token![/](t.spans[0])),
        BinOp::RemAssign(t) => BinOp::Rem(syn::Token![%](t.spans[0])),
        BinOp::BitAndAssign(t) => BinOp::BitAnd(syn::Token![&](t.spans[0])),
        BinOp::BitOrAssign(t) => BinOp::BitOr(syn::Token![|](t.spans[0])),
        BinOp::BitXorAssign(t) => BinOp::BitXor(syn::Token![^](t.spans[0])),
        BinOp::ShlAssign(t) => BinOp::Shl(syn::Token![<<](t.spans[0])),
        BinOp::ShrAssign(t) => BinOp::Shr(syn::Token![>>](t.spans[0])),
        _ => return None,
    })
}

fn int_binop(op: BinOp, a: i128, b: i128) -> Result<Value, String> {
    let overflow = || "integer overflow at expansion time".to_string();
    Ok(Value::Int(match op {
        BinOp::Add(_) => a.checked_add(b).ok_or_else(overflow)?,
        BinOp::Sub(_) => a.checked_sub(b).ok_or_else(overflow)?,
        BinOp::Mul(_) => a.checked_mul(b).ok_or_else(overflow)?,
        BinOp::Div(_) => a.checked_div(b).ok_or("integer division by zero")?,
        BinOp::Rem(_) => a.checked_rem(b).ok_or("integer remainder by zero")?,
        BinOp::BitAnd(_) => a & b,
        BinOp::BitOr(_) => a | b,
        BinOp::BitXor(_) => a ^ b,
        BinOp::Shl(_) => u32::try_from(b)
            .ok()
            .and_then(|b| a.checked_shl(b))
            .ok_or_else(overflow)?,
        BinOp::Shr(_) => u32::try_from(b)
            .ok()
            .and_then(|b| a.checked_shr(b))
            .ok_or_else(overflow)?,
        BinOp::Eq(_) => return Ok(Value::Bool(a == b)),
        BinOp::Ne(_) => return Ok(Value::Bool(a != b)),
        BinOp::Lt(_) => return Ok(Value::Bool(a < b)),
        BinOp::Le(_) => return Ok(Value::Bool(a <= b)),
        BinOp::Gt(_) => return Ok(Value::Bool(a > b)),
        BinOp::Ge(_) => return Ok(Value::Bool(a >= b)),
        _ => return Err("unsupported operator on integers".into()),
    }))
}

/// Whether `v` can be a value of type `ty`; `Err(expected)` otherwise.
fn fits(v: &Value, ty: &Ty) -> Result<(), String> {
    let ok = match (ty, v) {
        (_, Value::Poison) => true,
        (Ty::Ref(inner, _), v) => return fits(v, inner),
        (Ty::F64, Value::Scalar(_)) => true,
        (Ty::Int, Value::Int(_)) => true,
        (Ty::Bool, Value::Bool(_)) => true,
        (Ty::Unit, Value::Unit) => true,
        (Ty::Array(elem, len), Value::Array(items)) => {
            if len.is_some_and(|l| l != items.len()) {
                false
            } else {
                return items
                    .iter()
                    .try_for_each(|x| fits(x, elem))
                    .map_err(|_| expected(ty));
            }
        }
        (Ty::Slice(elem), Value::Array(items)) => {
            return items
                .iter()
                .try_for_each(|x| fits(x, elem))
                .map_err(|_| expected(ty));
        }
        (Ty::Tuple(ts), Value::Tuple(items)) if ts.len() == items.len() => {
            return ts
                .iter()
                .zip(items)
                .try_for_each(|(t, x)| fits(x, t))
                .map_err(|_| expected(ty));
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(expected(ty))
    }
}

fn expected(ty: &Ty) -> String {
    match ty {
        Ty::F64 => "an `f64`".into(),
        Ty::F32 => "an `f64` (`f32` is not supported)".into(),
        Ty::Int => "an integer".into(),
        Ty::Bool => "a `bool`".into(),
        Ty::Unit => "`()`".into(),
        Ty::Array(_, Some(n)) => format!("an array of length {n}"),
        Ty::Array(_, None) | Ty::Slice(_) => "an array".into(),
        Ty::Ref(inner, _) => expected(inner),
        Ty::Tuple(ts) => format!("a tuple of {} elements", ts.len()),
        Ty::Other => "of a supported type (`f64`, integers, `bool`, arrays, tuples and \
             references to them)"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::{parse_quote, ItemImpl};

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
                fn potential(&self, q: &[f64; 1]) -> f64 { if q[0] > 0.0 { q[0] } else { 0.0 } }
            }),
            "`if` on coordinates is non-smooth",
        );
        assert_error(
            parse_quote!(impl S {
                fn potential(&self, q: &[f64; 1]) -> f64 { match q[0] { _ => 1.0 } }
            }),
            "`match` on coordinates is non-smooth",
        );
        assert_error(
            parse_quote!(impl S {
                fn potential(&self, q: &[f64; 1]) -> f64 { if self.k > 0.0 { q[0] } else { 0.0 } }
            }),
            "cannot be decided at expansion time",
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
}
