//! Lowering of control flow: `if`, `match`, `for` over constant ranges and arrays (unrolled)
//! whose conditions are known at expansion time, and `if`/`else` on a comparison decided at run
//! time (a piecewise term: both branches lowered, every value they leave different merged by a
//! select node, each branch differentiated on its own).

use syn::{Expr, Pat, RangeLimits};

use super::*;

impl<'c, 'a> Lowerer<'c, 'a> {
    // ----------------------------------------------------------------- control flow

    pub(super) fn lower_if(&mut self, i: &'a syn::ExprIf, env: &mut Env) -> Lr {
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
            Value::Cond(c) => self.lower_piecewise(i, c, env),
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

    /// `if c { … } else { … }` with `c` decided at run time: each branch lowered from the same
    /// state, then every binding either changed merged as `select(c, then, else)` (a branch
    /// may change `f64` values only; it may not `return`, `break` or `continue`).
    fn lower_piecewise(&mut self, i: &'a syn::ExprIf, c: NodeId, env: &mut Env) -> Lr {
        let mut then_env = env.clone();
        let then_v = self.lower_block(&i.then_branch, &mut then_env);
        let else_v = match &i.else_branch {
            Some((_, els)) => self.lower_expr(els, env),
            None => Ok(Value::Unit),
        };
        let (Ok(then_v), Ok(else_v)) = (then_v, else_v) else {
            return Ok(self.err(
                &i.cond,
                "`return`, `break` and `continue` are not supported inside a branch decided at \
                 run time (a piecewise term): compute the value in each branch instead",
            ));
        };
        for (ts, es) in then_env.scopes.iter().zip(env.scopes.iter_mut()) {
            for (name, ev) in es.iter_mut() {
                let tv = ts.get(name).cloned().flatten();
                *ev = match (tv, ev.take()) {
                    (None, None) => None,
                    (Some(t), Some(e)) => Some(self.merge(c, t, e, &format!("`{name}`"), i)),
                    _ => Some(self.err(
                        &i.cond,
                        format!("`{name}` is assigned in only one branch of this `if`"),
                    )),
                };
            }
        }
        Ok(self.merge(c, then_v, else_v, "the value of the `if`", i))
    }

    /// `select(c, t, e)` element by element; values that are not `f64`s must be equal.
    fn merge(&mut self, c: NodeId, t: Value, e: Value, name: &str, at: &syn::ExprIf) -> Value {
        match (t, e) {
            (Value::Poison, _) | (_, Value::Poison) => Value::Poison,
            (Value::Scalar(a), Value::Scalar(b)) => Value::Scalar(self.graph.select(c, a, b)),
            (Value::Cond(a), Value::Cond(b)) => Value::Cond(self.graph.select(c, a, b)),
            (Value::Array(a), Value::Array(b)) if a.len() == b.len() => Value::Array(
                a.into_iter()
                    .zip(b)
                    .map(|(x, y)| self.merge(c, x, y, name, at))
                    .collect(),
            ),
            (Value::Tuple(a), Value::Tuple(b)) if a.len() == b.len() => Value::Tuple(
                a.into_iter()
                    .zip(b)
                    .map(|(x, y)| self.merge(c, x, y, name, at))
                    .collect(),
            ),
            (Value::Int(a), Value::Int(b)) if a == b => Value::Int(a),
            (Value::Kind(a), Value::Kind(b)) if a == b => Value::Kind(a),
            (Value::Bool(a), Value::Bool(b)) if a == b => Value::Bool(a),
            (Value::Unit, Value::Unit) => Value::Unit,
            (t, e) => self.err(
                &at.cond,
                format!(
                    "a branch decided at run time may change only f64 values: {name} is {} in \
                     one branch and {} in the other",
                    t.describe(),
                    e.describe()
                ),
            ),
        }
    }

    pub(super) fn lower_match(&mut self, m: &'a syn::ExprMatch, env: &mut Env) -> Lr {
        let saved = self.branching.replace("`match`");
        let scrut = self.lower_expr(&m.expr, env);
        self.branching = saved;
        let scrut = scrut?;
        match &scrut {
            Value::Int(_) | Value::Bool(_) => {}
            Value::Poison => return Ok(Value::Poison),
            Value::Cond(_) => {
                return Ok(self.err(
                    &m.expr,
                    "`match` on a condition decided at run time is not supported: write the \
                     pieces with `if`/`else` (each branch is differentiated on its own)",
                ))
            }
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

    pub(super) fn arm(
        &mut self,
        arm: &'a syn::Arm,
        scrut: &Value,
        env: &mut Env,
    ) -> Result<Option<Value>, Unwind> {
        // A guard is part of the arm's pattern: `pat if guard`.
        let (pat, guard) = match &arm.pat {
            Pat::Guard(g) => (&*g.pat, Some(&*g.guard)),
            pat => (pat, None),
        };
        match self.pat_matches(pat, scrut, env) {
            None => return Ok(Some(Value::Poison)),
            Some(false) => return Ok(None),
            Some(true) => {}
        }
        if let Some(guard) = guard {
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
    pub(super) fn pat_matches(&mut self, pat: &'a Pat, v: &Value, env: &mut Env) -> Option<bool> {
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

    pub(super) fn lower_for(&mut self, f: &'a syn::ExprForLoop, env: &mut Env) -> Lr {
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
    pub(super) fn iterable(
        &mut self,
        e: &'a Expr,
        env: &mut Env,
    ) -> Result<Option<Vec<Value>>, Unwind> {
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

    pub(super) fn iterable_value(
        &mut self,
        e: &'a Expr,
        env: &mut Env,
    ) -> Result<Option<Vec<Value>>, Unwind> {
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
