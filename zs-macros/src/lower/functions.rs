//! Lowering of function activations: inlining helper methods and the role functions.

use quote::ToTokens;
use syn::{Expr, Ident, ReturnType};

use super::*;
use crate::ast::{self, Method, SelfArg};

impl<'c, 'a> Lowerer<'c, 'a> {
    // ----------------------------------------------------------------- functions

    /// Inlines `m` applied to `args` (already checked for count); `at` is the call site.
    pub(super) fn lower_fn(
        &mut self,
        m: &Method<'a>,
        args: Vec<Value>,
        at: &dyn ToTokens,
    ) -> Value {
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

    pub(super) fn call_helper(
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
}
