//! The typed view of the annotated `impl` block, as thiserror's `impl/src/ast.rs`.
//!
//! Nothing is copied: every node borrows the user's `syn` tree, so errors point at the user's
//! tokens and the block can be re-emitted unchanged.

use syn::{
    Block, Expr, FnArg, Ident, ImplItem, ImplItemConst, ImplItemFn, ItemImpl, Lit, Pat, ReturnType,
    Type,
};

/// The `impl` block under `#[mechanical_system]`.
pub struct Input<'a> {
    /// The block as written.
    pub original: &'a ItemImpl,
    /// Every method (`fn`) in source order.
    pub methods: Vec<Method<'a>>,
    /// Associated constants (`const K: f64 = 1.0;`), usable as `Self::K` in bodies.
    pub consts: Vec<&'a ImplItemConst>,
}

/// One method of the block.
pub struct Method<'a> {
    /// The method as written.
    pub original: &'a ImplItemFn,
    /// Its name.
    pub name: &'a Ident,
    /// How it takes `self`.
    pub receiver: SelfArg<'a>,
    /// The parameters after `self`.
    pub params: Vec<Param<'a>>,
    /// The return type.
    pub output: &'a ReturnType,
    /// The body.
    pub body: &'a Block,
}

/// The receiver of a method.
pub enum SelfArg<'a> {
    /// An associated function (no `self`).
    None,
    /// `&self`, the only receiver the generated code can call through.
    Ref,
    /// `self`, `&mut self`, `self: Box<Self>`, ...
    Other(&'a syn::Receiver),
}

/// A typed parameter `pat: ty`.
pub struct Param<'a> {
    /// The binding pattern.
    pub pat: &'a Pat,
    /// The declared type as written.
    pub ty: &'a Type,
    /// Its classification.
    pub kind: Ty,
}

/// The types the front end understands (everything else is [`Ty::Other`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// `f64`.
    F64,
    /// `f32`: rejected with a dedicated message.
    F32,
    /// Any primitive integer type.
    Int,
    /// `bool`.
    Bool,
    /// `()`.
    Unit,
    /// `[T; len]`; `len` is `None` when it is not an integer literal.
    Array(Box<Ty>, Option<usize>),
    /// `[T]` (behind a reference).
    Slice(Box<Ty>),
    /// `&T` (`mutable` for `&mut T`).
    Ref(Box<Ty>, bool),
    /// `(T, U, ...)`.
    Tuple(Vec<Ty>),
    /// Anything else.
    Other,
}

impl Ty {
    /// Classifies a `syn` type.
    pub fn from_syn(ty: &Type) -> Ty {
        match ty {
            Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return Ty::Other;
                };
                if !last.arguments.is_none() {
                    return Ty::Other;
                }
                // `f64`, `std::primitive::f64`, `core::primitive::f64`.
                let prefix_ok = p.path.segments.len() == 1
                    || (p.path.segments.len() == 3
                        && matches!(
                            p.path.segments[0].ident.to_string().as_str(),
                            "std" | "core"
                        )
                        && p.path.segments[1].ident == "primitive");
                if !prefix_ok {
                    return Ty::Other;
                }
                match last.ident.to_string().as_str() {
                    "f64" => Ty::F64,
                    "f32" => Ty::F32,
                    "bool" => Ty::Bool,
                    "usize" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "i8" | "i16"
                    | "i32" | "i64" | "i128" => Ty::Int,
                    _ => Ty::Other,
                }
            }
            Type::Array(a) => Ty::Array(Box::new(Ty::from_syn(&a.elem)), literal_usize(&a.len)),
            Type::Slice(s) => Ty::Slice(Box::new(Ty::from_syn(&s.elem))),
            Type::Reference(r) => Ty::Ref(Box::new(Ty::from_syn(&r.elem)), r.mutability.is_some()),
            Type::Tuple(t) if t.elems.is_empty() => Ty::Unit,
            Type::Tuple(t) => Ty::Tuple(t.elems.iter().map(Ty::from_syn).collect()),
            Type::Paren(p) => Ty::from_syn(&p.elem),
            Type::Group(g) => Ty::from_syn(&g.elem),
            _ => Ty::Other,
        }
    }

    /// `&[f64; n]` → `Some(Some(n))`; `&[f64; non-literal]` → `Some(None)`; otherwise `None`.
    pub fn coordinate_array(&self) -> Option<Option<usize>> {
        match self {
            Ty::Ref(inner, false) => match &**inner {
                Ty::Array(elem, len) if **elem == Ty::F64 => Some(*len),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The value of an integer-literal expression such as the `4` of `[f64; 4]`.
pub fn literal_usize(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<usize>().ok(),
            _ => None,
        },
        Expr::Group(g) => literal_usize(&g.expr),
        Expr::Paren(p) => literal_usize(&p.expr),
        _ => None,
    }
}

/// The length expression of `[T; len]` (behind any references), for error spans.
pub fn array_len_expr(ty: &Type) -> Option<&Expr> {
    match ty {
        Type::Array(a) => Some(&a.len),
        Type::Reference(r) => array_len_expr(&r.elem),
        Type::Paren(p) => array_len_expr(&p.elem),
        Type::Group(g) => array_len_expr(&g.elem),
        _ => None,
    }
}

impl<'a> Input<'a> {
    /// Builds the typed view; items other than `fn` and `const` are left alone (they stay in
    /// the re-emitted block).
    pub fn from_syn(item: &'a ItemImpl) -> Input<'a> {
        let mut methods = Vec::new();
        let mut consts = Vec::new();
        for it in &item.items {
            match it {
                ImplItem::Fn(f) => methods.push(Method::from_syn(f)),
                ImplItem::Const(c) => consts.push(c),
                _ => {}
            }
        }
        Input {
            original: item,
            methods,
            consts,
        }
    }

    /// The method called `name`, if any.
    pub fn method(&self, name: &str) -> Option<&Method<'a>> {
        self.methods.iter().find(|m| m.name == name)
    }

    /// The associated constant called `name`, if any.
    pub fn constant(&self, name: &str) -> Option<&'a ImplItemConst> {
        self.consts.iter().copied().find(|c| c.ident == name)
    }
}

impl<'a> Method<'a> {
    fn from_syn(f: &'a ImplItemFn) -> Method<'a> {
        let mut receiver = SelfArg::None;
        let mut params = Vec::new();
        for arg in &f.sig.inputs {
            match arg {
                FnArg::Receiver(r) => {
                    let by_shared_ref = r.mutability.is_none()
                        && matches!(r.kind, syn::ReceiverKind::Reference(_, _, None));
                    receiver = if by_shared_ref {
                        SelfArg::Ref
                    } else {
                        SelfArg::Other(r)
                    };
                }
                FnArg::Typed(t) => params.push(Param {
                    pat: &t.pat,
                    ty: &t.ty,
                    kind: Ty::from_syn(&t.ty),
                }),
            }
        }
        Method {
            original: f,
            name: &f.sig.ident,
            receiver,
            params,
            output: &f.sig.output,
            body: &f.block,
        }
    }

    /// The declared return type (`()` when omitted).
    pub fn return_ty(&self) -> Ty {
        match self.output {
            ReturnType::Default => Ty::Unit,
            ReturnType::Type(_, ty) => Ty::from_syn(ty),
        }
    }
}

/// The identifier bound by a plain `ident` pattern.
pub fn pat_ident(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) if p.subpat.is_none() => Some(&p.ident),
        Pat::Paren(p) => pat_ident(&p.pat),
        Pat::Type(t) => pat_ident(&t.pat),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn classifies_types() {
        let t: Type = parse_quote!(&[f64; 4]);
        assert_eq!(t_kind(&t).coordinate_array(), Some(Some(4)));
        let t: Type = parse_quote!(&[f64; N]);
        assert_eq!(t_kind(&t).coordinate_array(), Some(None));
        let t: Type = parse_quote!([f64; 4]);
        assert_eq!(t_kind(&t).coordinate_array(), None);
        let t: Type = parse_quote!((f64, usize));
        assert_eq!(t_kind(&t), Ty::Tuple(vec![Ty::F64, Ty::Int]));
        let t: Type = parse_quote!(std::primitive::f64);
        assert_eq!(t_kind(&t), Ty::F64);
        let t: Type = parse_quote!(Vec<f64>);
        assert_eq!(t_kind(&t), Ty::Other);
    }

    fn t_kind(t: &Type) -> Ty {
        Ty::from_syn(t)
    }

    #[test]
    fn collects_methods_and_consts() {
        let item: ItemImpl = parse_quote! {
            impl S {
                const K: f64 = 2.0;
                fn potential(&self, q: &[f64; 2]) -> f64 { q[0] }
                fn helper(x: f64) -> f64 { x }
                fn bad(&mut self) {}
            }
        };
        let input = Input::from_syn(&item);
        assert_eq!(input.methods.len(), 3);
        assert!(input.constant("K").is_some());
        let p = input.method("potential").unwrap();
        assert!(matches!(p.receiver, SelfArg::Ref));
        assert_eq!(p.params[0].kind.coordinate_array(), Some(Some(2)));
        assert_eq!(p.return_ty(), Ty::F64);
        assert!(matches!(
            input.method("helper").unwrap().receiver,
            SelfArg::None
        ));
        assert!(matches!(
            input.method("bad").unwrap().receiver,
            SelfArg::Other(_)
        ));
    }
}
