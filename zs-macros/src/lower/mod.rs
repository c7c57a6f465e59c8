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

mod calls;
mod control;
mod expressions;
mod functions;
mod roles;
mod statements;
#[cfg(test)]
mod tests;

pub use roles::{lower, lower_terms, Lowered, LoweredTerms};

use std::collections::HashMap;
use std::f64::consts;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{BinOp, Expr};

use crate::ast::{Input, Ty};
use crate::ctxt::Ctxt;
use zs_symbolic::{Graph, NodeId};

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
    /// A condition decided at run time (a comparison of `f64`s that depend on coordinates or
    /// parameters): an indicator node of the graph, `1.0` where it holds. Only `if`/`else`
    /// takes it (piecewise terms, each branch differentiated on its own).
    Cond(NodeId),
    /// `[T; K]`.
    Array(Vec<Value>),
    /// `(T, U, ...)`.
    Tuple(Vec<Value>),
    /// `()`.
    Unit,
    /// The type of body `k` of a term (its `ka: usize` parameter): read at run time, it can
    /// only index a table of `self` (`self.epsilon[ka]`), which makes a per-body parameter.
    Kind(usize),
    /// The result of an erroneous expression (already reported): absorbs every use.
    Poison,
}

impl Value {
    fn describe(&self) -> String {
        match self {
            Value::Scalar(_) => "an `f64`".into(),
            Value::Int(_) => "an integer".into(),
            Value::Bool(_) => "a `bool`".into(),
            Value::Cond(_) => "a condition on coordinates or parameters".into(),
            Value::Array(v) => format!("an array of length {}", v.len()),
            Value::Tuple(v) => format!("a tuple of {} elements", v.len()),
            Value::Unit => "`()`".into(),
            Value::Kind(_) => "a body's type, which can only index a table of `self` \
                               (`self.epsilon[ka]`)"
                .into(),
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
    /// It reads a table of `self` at a body's type (`self.epsilon[kinds[0] as usize]`): one
    /// value per term (per lane in lane kernels), not one per system.
    pub per_body: bool,
}

/// Non-local control flow while interpreting (errors are not control flow: they are
/// reported and yield [`Value::Poison`]).
enum Unwind {
    Return(Value),
    Break,
    Continue,
}

type Lr = Result<Value, Unwind>;

/// Lexical environment of one function activation (cloned for each branch of a run-time
/// `if`, then merged).
#[derive(Default, Clone)]
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
/// The interpreter state shared by all activations.
pub struct Lowerer<'c, 'a> {
    cx: &'c Ctxt,
    input: &'c Input<'a>,
    /// The graph being built.
    pub graph: Graph,
    params: Vec<ParamExpr>,
    param_keys: HashMap<String, u32>,
    /// Per read of a table of `self` at a body's type, the condition (on `kind`) that the
    /// table has an entry there — `(self.epsilon).get(kind as usize).is_some()` for
    /// `self.epsilon[ka]`, every row's for `self.mix[ka][kb]` — each once: the types a
    /// topology may use are those every table has.
    pub kind_tables: Vec<TokenStream>,
    /// The place being read indexes a table by a body's type.
    place_per_body: bool,
    /// After such an index: an iterator over every value the place read so far can take, as
    /// the body types range over the table (the rows a further index by a type must check).
    place_rows: Option<TokenStream>,
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
            kind_tables: Vec::new(),
            place_per_body: false,
            place_rows: None,
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
        (Ty::Int, Value::Int(_) | Value::Kind(_)) => true,
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
