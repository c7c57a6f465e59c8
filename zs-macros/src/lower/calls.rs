//! Lowering of calls: methods of `f64` and integers, path calls, helper calls.

use quote::ToTokens;
use syn::{Expr, Ident};

use super::*;
use zs_symbolic::{NodeId, Unary};

impl<'c, 'a> Lowerer<'c, 'a> {
    // ----------------------------------------------------------------- calls

    pub(super) fn lower_method_call(
        &mut self,
        mc: &'a syn::ExprMethodCall,
        e: &'a Expr,
        env: &mut Env,
    ) -> Lr {
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

    pub(super) fn lower_call(&mut self, c: &'a syn::ExprCall, e: &'a Expr, env: &mut Env) -> Lr {
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
            [.., last] if matches!(*last, "erf" | "erfc") => {
                // The error functions, as `zs_runtime::special::{erf, erfc}` (or any path
                // ending in them: `libm::erfc`): the body stays ordinary Rust.
                if c.args.len() != 1 {
                    return Ok(self.err(
                        e,
                        format!("`{last}` takes 1 argument, {} given", c.args.len()),
                    ));
                }
                let x = match self.lower_expr(&c.args[0], env)? {
                    Value::Scalar(x) => x,
                    Value::Poison => return Ok(Value::Poison),
                    Value::Int(_) => return Ok(self.int_on_f64(&c.args[0])),
                    other => {
                        return Ok(self.err(
                            &c.args[0],
                            format!("expected an f64, found {}", other.describe()),
                        ))
                    }
                };
                let g = &mut self.graph;
                Ok(Value::Scalar(if *last == "erf" {
                    g.erf(x)
                } else {
                    g.erfc(x)
                }))
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
                         #[mechanical_system] cannot differentiate it; if the kink is meant, \
                         write the pieces with `if`/`else` on a comparison)"
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
                         only call methods of its own impl block{own}, the f64 methods \
                         {SUPPORTED_F64_METHODS} (as `x.sin()` or `f64::sin(x)`) and the error \
                         functions `erf`, `erfc` (`zs_runtime::special`)"
                    ),
                ))
            }
        }
    }

    /// `recv.name(args)` on a value.
    pub(super) fn apply_method(
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

    pub(super) fn scalar_method(
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
                         #[mechanical_system] cannot differentiate it; if the kink is meant, \
                         write the pieces with `if`/`else` on a comparison (each branch is \
                         differentiated on its own)"
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

    pub(super) fn fold_non_smooth(&self, n: &str, x: NodeId, args: &[NodeId]) -> Option<f64> {
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

    pub(super) fn int_method(
        &mut self,
        name: &Ident,
        i: i128,
        args: Vec<Value>,
        e: &Expr,
    ) -> Value {
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
}
