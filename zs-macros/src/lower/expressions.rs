//! Lowering of expressions: literals, paths and parameters, indexing, operators, casts,
//! assignments.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Lit, Member, UnOp};

use super::*;
use crate::ast::Ty;
use zs_symbolic::{NodeId, Var};

impl<'c, 'a> Lowerer<'c, 'a> {
    // ----------------------------------------------------------------- expressions

    pub(super) fn lower_expr(&mut self, e: &'a Expr, env: &mut Env) -> Lr {
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

    pub(super) fn lower_lit(&mut self, lit: &Lit) -> Value {
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

    pub(super) fn lower_path(&mut self, p: &'a syn::ExprPath, env: &mut Env) -> Value {
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

    pub(super) fn is_self_type(&self, name: &str) -> bool {
        match &*self.input.original.self_ty {
            syn::Type::Path(tp) => tp.path.segments.last().is_some_and(|s| s.ident == name),
            _ => false,
        }
    }

    pub(super) fn impl_const(&mut self, c: &'a syn::ImplItemConst, at: &dyn ToTokens) -> Value {
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
    pub(super) fn param(&mut self, tokens: TokenStream) -> Value {
        self.param_of(tokens, false)
    }

    /// A run-time parameter, read per term when `per_body` (a table at a body's type).
    fn param_of(&mut self, tokens: TokenStream, per_body: bool) -> Value {
        let key = tokens.to_string();
        let k = match self.param_keys.get(&key) {
            Some(&k) => k,
            None => {
                let k = self.params.len() as u32;
                self.params.push(ParamExpr { tokens, per_body });
                self.param_keys.insert(key, k);
                k
            }
        };
        Value::Scalar(self.graph.var(Var::Param(k)))
    }

    /// `self.a`, `self.a.b`, `self.arr[2]`, `self.0` → a parameter; `None` when `e` is not a
    /// place rooted at `self`.
    pub(super) fn self_place(
        &mut self,
        e: &'a Expr,
        env: &mut Env,
    ) -> Result<Option<Value>, Unwind> {
        self.place_per_body = false;
        self.place_rows = None;
        match self.self_place_tokens(e, env)? {
            None => Ok(None),
            Some(None) => Ok(Some(Value::Poison)),
            Some(Some(tokens)) => {
                let per_body = std::mem::take(&mut self.place_per_body);
                Ok(Some(self.param_of(tokens, per_body)))
            }
        }
    }

    /// `Some(Some(tokens))` for a valid place rooted at `self`, `Some(None)` after an error.
    #[allow(clippy::type_complexity)]
    pub(super) fn self_place_tokens(
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
            Expr::Field(f) => {
                let place = self.self_place_tokens(&f.base, env)?;
                let member = &f.member;
                if let Some(rows) = self.place_rows.take() {
                    self.place_rows = Some(quote!(#rows.map(|r| &r.#member)));
                }
                Ok(place.map(|base| {
                    base.map(|b| {
                        let dot = &f.dot_token;
                        quote!(#b #dot #member)
                    })
                }))
            }
            Expr::Index(ix) => {
                let Some(base) = self.self_place_tokens(&ix.expr, env)? else {
                    return Ok(None);
                };
                let idx = self.lower_expr(&ix.index, env)?;
                let Some(base) = base else {
                    return Ok(Some(None));
                };
                if let Value::Kind(body) = idx {
                    // A table at a body's type: read per term, checked against every type of
                    // the topology before the first step — in every row a type may pick when
                    // an index by a type came before (`self.mix[ka][kb]`).
                    let (check, rows) = match self.place_rows.take() {
                        None => (
                            quote!((#base).get(kind as usize).is_some()),
                            quote!((#base).iter()),
                        ),
                        Some(rows) => (
                            quote!(#rows.all(|r| r.get(kind as usize).is_some())),
                            quote!(#rows.flat_map(|r| r.iter())),
                        ),
                    };
                    let key = check.to_string();
                    if !self.kind_tables.iter().any(|t| t.to_string() == key) {
                        self.kind_tables.push(check);
                    }
                    self.place_rows = Some(rows);
                    self.place_per_body = true;
                    let lit = Literal::usize_unsuffixed(body);
                    let span = ix.index.span();
                    return Ok(Some(Some(
                        quote_spanned!(span=> #base[kinds[#lit] as usize]),
                    )));
                }
                let k = self.as_index(&idx, &ix.index, "index");
                if let (Some(rows), Some(k)) = (self.place_rows.take(), k) {
                    let lit = Literal::usize_unsuffixed(k);
                    self.place_rows = Some(quote!(#rows.filter_map(|r| r.get(#lit))));
                }
                Ok(Some(k.map(|k| {
                    let lit = Literal::usize_unsuffixed(k);
                    let span = ix.index.span();
                    quote_spanned!(span=> #base[#lit])
                })))
            }
            _ => Ok(None),
        }
    }

    /// An integer value usable as an index / length, with errors at `at`.
    pub(super) fn as_index(&self, v: &Value, at: &Expr, what: &str) -> Option<usize> {
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
    pub(super) fn index(&mut self, base: Value, idx: Value, base_expr: &Expr, at: &Expr) -> Value {
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

    pub(super) fn lower_unary(&mut self, op: &UnOp, v: Value, e: &Expr) -> Value {
        match (op, v) {
            (_, Value::Poison) => Value::Poison,
            (UnOp::Deref(_), v) => v,
            (UnOp::Neg(_), Value::Scalar(a)) => Value::Scalar(self.graph.neg(a)),
            (UnOp::Neg(_), Value::Int(i)) => Value::Int(-i),
            (UnOp::Not(_), Value::Bool(b)) => Value::Bool(!b),
            (UnOp::Not(_), Value::Cond(c)) => {
                let one = self.graph.constant(1.0);
                Value::Cond(self.graph.sub(one, c))
            }
            (_, v) => self.err(
                e,
                format!("this operator cannot be applied to {}", v.describe()),
            ),
        }
    }

    pub(super) fn lower_binary(
        &mut self,
        b: &'a syn::ExprBinary,
        e: &'a Expr,
        env: &mut Env,
    ) -> Lr {
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
    pub(super) fn binop(
        &mut self,
        op: BinOp,
        l: Value,
        r: Value,
        le: &Expr,
        re: &Expr,
        e: &Expr,
    ) -> Value {
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
            (l @ (Value::Cond(_) | Bool(_)), r @ (Value::Cond(_) | Bool(_))) => {
                self.combine_conditions(op, l, r, e)
            }
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

    pub(super) fn int_on_f64(&self, int_side: &Expr) -> Value {
        self.err(
            int_side,
            "integer arithmetic on coordinates: this operand is an integer but the other is an \
             f64; write a float literal such as `2.0`, or convert with `as f64`",
        )
    }

    pub(super) fn scalar_binop(&mut self, op: BinOp, a: NodeId, b: NodeId, e: &Expr) -> Value {
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

    pub(super) fn compare_scalars(&mut self, op: BinOp, a: NodeId, b: NodeId, e: &Expr) -> Value {
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
        // Decided at run time: a piecewise term's condition (`if`/`else` only).
        let g = &mut self.graph;
        match op {
            BinOp::Lt(_) => return Value::Cond(g.lt(a, b)),
            BinOp::Le(_) => return Value::Cond(g.le(a, b)),
            BinOp::Gt(_) => return Value::Cond(g.lt(b, a)),
            BinOp::Ge(_) => return Value::Cond(g.le(b, a)),
            _ => {}
        }
        self.err(
            e,
            "`==` and `!=` on f64 values decided at run time hold on a set of measure zero: \
             compare with `<`, `<=`, `>` or `>=` (a branch of a piecewise term)",
        )
    }

    /// `l && r`, `l || r` where one side is a run-time condition (indicators: `a·b`,
    /// `a + b − a·b`; a `bool` side is a constant indicator).
    fn combine_conditions(&mut self, op: BinOp, l: Value, r: Value, e: &Expr) -> Value {
        let mut ind = |v: Value| match v {
            Value::Cond(c) => c,
            _ => self.graph.constant(if matches!(v, Value::Bool(true)) {
                1.0
            } else {
                0.0
            }),
        };
        let (a, b) = (ind(l), ind(r));
        let g = &mut self.graph;
        let c = match op {
            BinOp::And(_) | BinOp::BitAnd(_) => g.mul(a, b),
            BinOp::Or(_) | BinOp::BitOr(_) => {
                let s = g.add(a, b);
                let p = g.mul(a, b);
                g.sub(s, p)
            }
            _ => {
                return self.err(
                    e,
                    "conditions decided at run time combine with `&&`, `||` and `!` only",
                )
            }
        };
        match g.as_const(c) {
            Some(k) => Value::Bool(k != 0.0),
            None => Value::Cond(c),
        }
    }

    pub(super) fn lower_cast(&mut self, v: Value, ty: &syn::Type, e: &Expr) -> Value {
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
    pub(super) fn assign(
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
}
