//! Lowering of statements: blocks, items (`const`, `use`), `let` with patterns.

use quote::ToTokens;
use syn::{Block, Expr, Item, Pat, Stmt, UseTree};

use super::*;
use crate::ast::Ty;

impl<'c, 'a> Lowerer<'c, 'a> {
    // ----------------------------------------------------------------- statements

    pub(super) fn lower_block(&mut self, b: &'a Block, env: &mut Env) -> Lr {
        env.push();
        let r = self.lower_stmts(&b.stmts, env);
        env.pop();
        r
    }

    pub(super) fn lower_stmts(&mut self, stmts: &'a [Stmt], env: &mut Env) -> Lr {
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

    pub(super) fn unsupported_macro(&self, mac: &syn::Macro) -> Value {
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

    pub(super) fn lower_item(&mut self, item: &'a Item, env: &mut Env) {
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
    pub(super) fn register_use(&mut self, tree: &UseTree, prefix: &mut Vec<String>, env: &mut Env) {
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
    pub(super) fn lower_const_expr(&mut self, e: &'a Expr, ty: &syn::Type) -> Value {
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

    pub(super) fn lower_local(
        &mut self,
        local: &'a syn::Local,
        env: &mut Env,
    ) -> Result<(), Unwind> {
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
    pub(super) fn bind_pattern(
        &mut self,
        pat: &Pat,
        v: Option<Value>,
        env: &mut Env,
        check_shadow: bool,
    ) {
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

    pub(super) fn bind_parts(
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
}
