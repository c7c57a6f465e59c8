//! Checks on the shape of the definition, as thiserror's `impl/src/valid.rs`.
//!
//! [`check_signatures`] runs before lowering: it reads `N` (from `q: &[f64; N]` of `potential`)
//! and `M` (from the `[f64; M]` returned by `constraints`) and validates the signatures of the
//! roles `masses`, `potential`, `constraints`, `stiff_potential` and `fast_potential`.
//! [`check_constraints`] runs after lowering. Both report into the [`Ctxt`] and never stop at
//! the first problem.

use quote::ToTokens;
use syn::{Expr, ReturnType};

use crate::ast::{self, Input, Method, SelfArg, Ty};
use crate::ctxt::Ctxt;
use crate::forms::{self, RoleKind};
use zs_symbolic::{Graph, NodeId};

/// What the signatures say about the system.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// Number of coordinates `N`, when it could be read.
    pub n: Option<usize>,
    /// Number of constraints `M` (`Some(0)` without `constraints`), when it could be read.
    pub m: Option<usize>,
    /// `potential` exists and its signature is valid (its body can be lowered).
    pub potential_ok: bool,
    /// `constraints` exists and its signature is valid.
    pub constraints_ok: bool,
    /// `masses` exists and takes `&self` (`Some(true)`) or nothing (`Some(false)`).
    pub masses_self: Option<bool>,
    /// `stiff_potential` exists and its signature is valid.
    pub stiff_ok: bool,
    /// `fast_potential` exists and its signature is valid.
    pub fast_ok: bool,
    /// The definition is written with term functions (an assembled system): what their
    /// signatures say. `None` for a fixed-size definition (`potential`).
    pub terms: Option<TermShape>,
}

/// The term functions of an assembled system, as their signatures describe them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermShape {
    /// Coordinates per body `D`, when it could be read.
    pub d: Option<usize>,
    /// For each role of [`forms::roles`]: present with a valid signature (the body can be
    /// lowered).
    pub ok: Vec<bool>,
    /// For each form of [`forms::FORMS`]: the components of its constraints, when valid.
    pub constraints: Vec<Option<usize>>,
    /// `body_masses` exists and takes `&self` (`Some(true)`) or nothing (`Some(false)`).
    pub masses_self: Option<bool>,
    /// `body_masses` takes the body's type (`kind: usize`) besides `&self`.
    pub masses_kind: bool,
    /// For each role of [`forms::roles`]: it takes its bodies' types after their coordinates
    /// (`ka: usize, kb: usize, ...`).
    pub typed: Vec<bool>,
}

impl TermShape {
    /// Some term function of form `form` (an index into [`forms::FORMS`]) reads its bodies'
    /// types.
    pub fn form_typed(&self, form: usize) -> bool {
        forms::roles()
            .zip(&self.typed)
            .any(|(r, &typed)| r.form == form && typed)
    }
}

const BODY_MASSES_SIG: &str = "fn body_masses(&self) -> [f64; D]";

/// `usize`, the type of a body's type index.
fn is_usize(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("usize"))
}

/// The roles of a fixed-size definition, which cannot be mixed with term functions.
const FIXED_ROLES: [&str; 5] = [
    "potential",
    "constraints",
    "masses",
    "stiff_potential",
    "fast_potential",
];

/// The most coordinates of a fixed-size system: its Hessian is `N²` generated expressions and
/// the compiler's time and memory grow with them (beyond this, assemble the system term by term).
pub const MAX_N: usize = 256;
/// The most coordinates per body of a term-by-term system (a pair term's Hessian has
/// `(2D)²` entries, its kept third-derivative tensor more).
pub const MAX_BODY: usize = 64;

const POTENTIAL_SIG: &str = "fn potential(&self, q: &[f64; N]) -> f64";
const CONSTRAINTS_SIG: &str = "fn constraints(&self, q: &[f64; N]) -> [f64; M]";
const MASSES_SIG: &str = "fn masses(&self) -> [f64; N]";
const STIFF_SIG: &str = "fn stiff_potential(&self, q: &[f64; N]) -> f64";
const FAST_SIG: &str = "fn fast_potential(&self, q: &[f64; N]) -> f64";

/// Validates the block and the signatures of the roles (`potential`, `constraints`, `masses`,
/// `stiff_potential`, `fast_potential`).
pub fn check_signatures(cx: &Ctxt, input: &Input<'_>) -> Shape {
    let item = input.original;
    let mut shape = Shape::default();

    if let Some((path, _)) = &item.trait_ {
        cx.error_spanned_by(
            path,
            "#[mechanical_system] goes on an inherent impl block (`impl MySystem { ... }`), \
             not on a trait impl",
        );
    }
    if item.items.is_empty() {
        cx.error_spanned_by(
            item,
            format!(
                "empty impl: #[mechanical_system] needs at least `{POTENTIAL_SIG}` \
                 (optionally `{MASSES_SIG}` and `{CONSTRAINTS_SIG}`)"
            ),
        );
        return shape;
    }

    if input
        .methods
        .iter()
        .any(|m| forms::role(&m.name.to_string()).is_some() || m.name == "body_masses")
    {
        shape.terms = Some(check_terms(cx, input));
        return shape;
    }

    let potential = input.method("potential");
    let constraints = input.method("constraints");

    match potential {
        None => {
            // A near miss (`potental`, `Potential`) is most likely a typo.
            let near = input.methods.iter().find(|m| {
                let name = m.name.to_string().to_lowercase();
                name != "stiff_potential"
                    && name != "fast_potential"
                    && edit_distance(&name, "potential") <= 2
            });
            let hint = near.map_or_else(String::new, |m| {
                format!(" (is `{}` a misspelling of `potential`?)", m.name)
            });
            let at = near.map_or_else(
                || item.self_ty.to_token_stream(),
                |m| m.name.to_token_stream(),
            );
            cx.error_spanned_by(
                at,
                format!(
                    "missing `{POTENTIAL_SIG}`{hint}: #[mechanical_system] derives the gradient, \
                     Hessian and third derivatives from it"
                ),
            );
        }
        Some(p) => {
            let (n, ok) = check_coordinate_fn(cx, p, POTENTIAL_SIG);
            shape.n = n;
            let ret_ok = match p.return_ty() {
                Ty::F64 => true,
                _ => {
                    report_return(
                        cx,
                        p,
                        &format!(
                            "`potential` must return `f64`, the potential energy V(q): expected \
                             `{POTENTIAL_SIG}`"
                        ),
                    );
                    false
                }
            };
            shape.potential_ok = ok && ret_ok && n.is_some();
        }
    }

    match constraints {
        None => shape.m = Some(0),
        Some(c) => {
            let (n_c, ok) = check_coordinate_fn(cx, c, CONSTRAINTS_SIG);
            let mut n_ok = true;
            match (shape.n, n_c) {
                (Some(n), Some(n_c)) if n != n_c => {
                    n_ok = false;
                    let len = ast::array_len_expr(c.params[0].ty).map_or_else(
                        || c.params[0].ty.to_token_stream(),
                        ToTokens::to_token_stream,
                    );
                    cx.error_spanned_by(
                        len,
                        format!(
                            "`q` has length {n_c} in `constraints` but {n} in `potential`: \
                             both must take the same `&[f64; N]`"
                        ),
                    );
                }
                (None, Some(n_c)) if potential.is_none() => shape.n = Some(n_c),
                _ => {}
            }
            let m = match c.return_ty() {
                Ty::Array(elem, Some(m)) if *elem == Ty::F64 => Some(m),
                Ty::Array(elem, None) if *elem == Ty::F64 => {
                    let ReturnType::Type(_, ty) = c.output else {
                        unreachable!()
                    };
                    let len = ast::array_len_expr(ty).expect("array type");
                    cx.error_spanned_by(
                        len,
                        "the number of constraints M in `-> [f64; M]` must be an integer literal \
                         (it is read at expansion time)",
                    );
                    None
                }
                _ => {
                    report_return(
                        cx,
                        c,
                        "`constraints` must return `[f64; M]` (one value g_c(q) per constraint, \
                         M an integer literal)",
                    );
                    None
                }
            };
            shape.m = m;
            shape.constraints_ok = ok && n_ok && m.is_some() && shape.n.is_some();
        }
    }

    if let Some(masses) = input.method("masses") {
        shape.masses_self = check_masses(cx, masses, shape.n);
    }
    if let Some(s) = input.method("stiff_potential") {
        shape.stiff_ok = check_scalar_role(cx, s, STIFF_SIG, shape.n);
    }
    if let Some(w) = input.method("fast_potential") {
        shape.fast_ok = check_scalar_role(cx, w, FAST_SIG, shape.n);
    }
    shape
}

/// Checks the term functions of an assembled system (and that no fixed-size role is mixed in).
fn check_terms(cx: &Ctxt, input: &Input<'_>) -> TermShape {
    let mut t = TermShape {
        ok: vec![false; forms::role_count()],
        typed: vec![false; forms::role_count()],
        constraints: vec![None; forms::FORMS.len()],
        ..TermShape::default()
    };
    for name in FIXED_ROLES {
        if let Some(m) = input.method(name) {
            let instead = match name {
                "constraints" => forms::names(RoleKind::Constraints, " / "),
                "masses" => "`body_masses`".to_string(),
                "stiff_potential" => forms::names(RoleKind::Stiff, " / "),
                _ => forms::names(RoleKind::Energy, ", "),
            };
            cx.error_spanned_by(
                m.name,
                format!(
                    "`{name}` defines a fixed-size system, but this block defines an assembled one \
                     with term functions: use {instead} (or write the whole system as \
                     `potential`, without term functions)"
                ),
            );
        }
    }
    // The first valid `&[f64; D]` fixes D; later ones must agree.
    let mut d: Option<(usize, &'static str)> = None;
    for (k, role) in forms::roles().enumerate() {
        let Some(m) = input.method(role.name) else {
            continue;
        };
        let sig = role.signature();
        let mut ok = check_receiver(cx, m, &sig);
        let k_bodies = role.bodies();
        if m.params.len() != k_bodies && m.params.len() != 2 * k_bodies {
            let what = if k_bodies == 1 {
                "one parameter besides `&self`, the body's coordinates `x: &[f64; D]`".to_string()
            } else {
                let n = forms::number_word(k_bodies);
                format!(
                    "{n} parameters besides `&self`, the {n} bodies' coordinates `{}`",
                    role.params()
                )
            };
            cx.error_spanned_by(
                &m.original.sig.inputs,
                format!(
                    "`{}` must take {what}, optionally followed by {}: expected `{sig}`",
                    role.name,
                    role.kind_params()
                ),
            );
            continue;
        }
        // The bodies' types, after their coordinates: run-time indices (`usize`).
        for p in &m.params[k_bodies..] {
            let plain = ast::pat_ident(p.pat).is_some();
            if !plain || !is_usize(p.ty) {
                ok = false;
                cx.error_spanned_by(
                    p.ty,
                    format!(
                        "after the bodies' coordinates, `{}` takes their types as `usize` (`{}`), \
                         read at run time from the topology",
                        role.name,
                        role.kind_params()
                    ),
                );
            }
        }
        t.typed[k] = m.params.len() == 2 * k_bodies;
        for p in &m.params[..k_bodies] {
            if ast::pat_ident(p.pat).is_none() {
                ok = false;
                cx.error_spanned_by(
                    p.pat,
                    format!(
                        "the parameters of `{}` must be plain names such as `x`",
                        role.name
                    ),
                );
            }
            match p.kind.coordinate_array() {
                Some(Some(len)) if len == 0 || len > MAX_BODY => {
                    ok = false;
                    let at = ast::array_len_expr(p.ty).expect("array type");
                    cx.error_spanned_by(
                        at,
                        if len == 0 {
                            "a body of 0 coordinates has nothing to differentiate: D must be at \
                             least 1"
                                .to_string()
                        } else {
                            format!(
                                "a body of D = {len} coordinates is more than \
                                 #[mechanical_system] generates (at most {MAX_BODY}): split it \
                                 into smaller bodies joined by bond terms"
                            )
                        },
                    );
                }
                Some(Some(len)) => match d {
                    None => d = Some((len, role.name)),
                    Some((d0, first)) if d0 != len => {
                        ok = false;
                        let at = ast::array_len_expr(p.ty).expect("array type");
                        cx.error_spanned_by(
                            at,
                            format!(
                                "a body has {d0} coordinates in `{first}` but {len} here: every \
                                 term function takes the same `&[f64; D]`"
                            ),
                        );
                    }
                    Some(_) => {}
                },
                Some(None) => {
                    ok = false;
                    let at = ast::array_len_expr(p.ty).expect("array type");
                    cx.error_spanned_by(
                        at,
                        "the number of coordinates per body D in `&[f64; D]` must be an integer \
                         literal (it is read at expansion time)",
                    );
                }
                None => {
                    ok = false;
                    cx.error_spanned_by(
                        p.ty,
                        format!(
                            "a body's coordinates must have type `&[f64; D]` with D an integer \
                             literal: expected `{sig}`"
                        ),
                    );
                }
            }
        }
        let ret_ok = if role.constraints() {
            match m.return_ty() {
                Ty::Array(elem, Some(c)) if *elem == Ty::F64 && c > 0 => {
                    t.constraints[role.form] = Some(c);
                    true
                }
                _ => {
                    report_return(
                        cx,
                        m,
                        &format!(
                            "`{}` must return `[f64; K]`, one value per constraint, K a positive \
                             integer literal: expected `{sig}`",
                            role.name
                        ),
                    );
                    false
                }
            }
        } else if m.return_ty() == Ty::F64 {
            true
        } else {
            report_return(
                cx,
                m,
                &format!(
                    "`{}` must return `f64`, the term's energy: expected `{sig}`",
                    role.name
                ),
            );
            false
        };
        t.ok[k] = ok && ret_ok;
    }
    t.d = d.map(|(d, _)| d);
    if let Some(m) = input.method("body_masses") {
        // `body_masses(&self, kind: usize)`: the masses of a body of type `kind`.
        t.masses_kind = m.params.len() == 1 && is_usize(m.params[0].ty);
        t.masses_self = check_masses_of(cx, m, t.d, "body_masses", BODY_MASSES_SIG, "D", "a body");
    }
    if !forms::roles().any(|r| input.method(r.name).is_some()) {
        cx.error_spanned_by(
            input.original.self_ty.to_token_stream(),
            format!(
                "`body_masses` alone defines no system: add term functions ({}, {})",
                forms::names(RoleKind::Energy, ", "),
                forms::names(RoleKind::Constraints, ", ")
            ),
        );
    }
    if t.d.is_none() {
        t.ok.fill(false);
    }
    t
}

/// `&self` and no generics; reports and returns `false` otherwise.
fn check_receiver(cx: &Ctxt, m: &Method<'_>, sig: &str) -> bool {
    let name = m.name;
    let mut ok = true;
    match m.receiver {
        SelfArg::Ref => {}
        SelfArg::None => {
            ok = false;
            cx.error_spanned_by(
                name,
                format!("`{name}` must take `&self`: expected `{sig}`"),
            );
        }
        SelfArg::Other(r) => {
            ok = false;
            cx.error_spanned_by(r, format!("`{name}` must take `&self`: expected `{sig}`"));
        }
    }
    if !m.original.sig.generics.params.is_empty() {
        ok = false;
        cx.error_spanned_by(
            &m.original.sig.generics,
            format!("`{name}` cannot be generic: expected `{sig}`"),
        );
    }
    ok
}

/// Checks an optional scalar role (`stiff_potential`, `fast_potential`):
/// `fn name(&self, q: &[f64; N]) -> f64` with the `N` of `potential`.
fn check_scalar_role(cx: &Ctxt, m: &Method<'_>, sig: &str, n: Option<usize>) -> bool {
    let name = m.name;
    let (n_m, ok) = check_coordinate_fn(cx, m, sig);
    let mut n_ok = true;
    if let (Some(n), Some(n_m)) = (n, n_m) {
        if n != n_m {
            n_ok = false;
            let len = ast::array_len_expr(m.params[0].ty).map_or_else(
                || m.params[0].ty.to_token_stream(),
                ToTokens::to_token_stream,
            );
            cx.error_spanned_by(
                len,
                format!(
                    "`q` has length {n_m} in `{name}` but {n} in `potential`: both must take \
                     the same `&[f64; N]`"
                ),
            );
        }
    }
    let ret_ok = match m.return_ty() {
        Ty::F64 => true,
        _ => {
            report_return(
                cx,
                m,
                &format!("`{name}` must return `f64`: expected `{sig}`"),
            );
            false
        }
    };
    ok && n_ok && ret_ok && n.is_some() && n_m.is_some()
}

/// Levenshtein distance (for "did you mean" hints).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Checks `fn name(&self, q: &[f64; N]) -> ...` up to the return type; returns `(N, ok)`.
fn check_coordinate_fn(cx: &Ctxt, m: &Method<'_>, sig: &str) -> (Option<usize>, bool) {
    let mut ok = check_receiver(cx, m, sig);
    let name = m.name;
    if m.params.len() != 1 {
        cx.error_spanned_by(
            &m.original.sig.inputs,
            format!(
                "`{name}` must take exactly one parameter besides `&self`, the coordinates \
                 `q: &[f64; N]`: expected `{sig}`"
            ),
        );
        return (None, false);
    }
    let q = &m.params[0];
    if ast::pat_ident(q.pat).is_none() {
        ok = false;
        cx.error_spanned_by(
            q.pat,
            format!("the coordinates parameter of `{name}` must be a plain name such as `q`"),
        );
    }
    let n = match q.kind.coordinate_array() {
        Some(Some(n)) if n == 0 || n > MAX_N => {
            let len = ast::array_len_expr(q.ty).expect("array type");
            cx.error_spanned_by(
                len,
                if n == 0 {
                    "a system of 0 coordinates has nothing to integrate: N must be at least 1"
                        .to_string()
                } else {
                    format!(
                        "N = {n} coordinates is more than #[mechanical_system] generates for a \
                         fixed-size system (at most {MAX_N}: its Hessian alone is N² expressions); \
                         write it term by term (`site_potential`, `bond_potential`, \
                         `pair_potential`) and assemble it over a topology"
                    )
                },
            );
            None
        }
        Some(Some(n)) => Some(n),
        Some(None) => {
            let len = ast::array_len_expr(q.ty).expect("array type");
            cx.error_spanned_by(
                len,
                "the length N of `q: &[f64; N]` must be an integer literal (it is read at \
                 expansion time to size the generated arrays)",
            );
            None
        }
        None => {
            cx.error_spanned_by(
                q.ty,
                format!(
                    "`q` must have type `&[f64; N]` with N an integer literal: expected `{sig}`"
                ),
            );
            None
        }
    };
    (n, ok)
}

fn report_return(cx: &Ctxt, m: &Method<'_>, msg: &str) {
    match m.output {
        ReturnType::Default => cx.error_spanned_by(&m.original.sig, msg),
        ReturnType::Type(_, ty) => cx.error_spanned_by(ty, msg),
    }
}

/// Checks `fn masses(&self) -> [f64; N]`; returns whether it takes `&self`.
fn check_masses(cx: &Ctxt, m: &Method<'_>, n: Option<usize>) -> Option<bool> {
    check_masses_of(cx, m, n, "masses", MASSES_SIG, "N", "the system")
}

/// Checks a masses role `fn name(&self) -> [f64; len]` (`masses` of a fixed-size system with
/// `len = N`, `body_masses` of an assembled one with `len = D`); returns whether it takes
/// `&self`.
fn check_masses_of(
    cx: &Ctxt,
    m: &Method<'_>,
    n: Option<usize>,
    name: &str,
    sig: &str,
    len_name: &str,
    owner: &str,
) -> Option<bool> {
    let mut ok = true;
    let takes_self = match m.receiver {
        SelfArg::Ref => true,
        SelfArg::None => false,
        SelfArg::Other(r) => {
            ok = false;
            cx.error_spanned_by(r, format!("`{name}` must take `&self`: expected `{sig}`"));
            true
        }
    };
    // `body_masses` may take its body's type (`kind: usize`).
    let kind = name == "body_masses" && m.params.len() == 1 && is_usize(m.params[0].ty);
    if (!m.params.is_empty() && !kind) || !m.original.sig.generics.params.is_empty() {
        ok = false;
        let takes = if name == "body_masses" {
            "no parameters but its body's type `kind: usize`"
        } else {
            "no parameters"
        };
        cx.error_spanned_by(
            &m.original.sig.inputs,
            format!("`{name}` takes {takes}: expected `{sig}`"),
        );
    }
    match (m.return_ty(), n) {
        (Ty::Array(elem, Some(k)), Some(n)) if *elem == Ty::F64 => {
            if k != n {
                ok = false;
                let ReturnType::Type(_, ty) = m.output else {
                    unreachable!()
                };
                let len = ast::array_len_expr(ty).expect("array type");
                let from = if name == "masses" {
                    format!("(from `q: &[f64; {n}]`)")
                } else {
                    format!("(from `&[f64; {n}]` in the term functions)")
                };
                cx.error_spanned_by(
                    len,
                    if name == "masses" {
                        format!(
                            "`masses` returns {k} masses but the system has {len_name} = {n} \
                             coordinates {from}: expected `-> [f64; {n}]`"
                        )
                    } else {
                        format!(
                            "`{name}` returns {k} masses but {owner} has {len_name} = {n} \
                             coordinates {from}: expected `-> [f64; {n}]`"
                        )
                    },
                );
            }
        }
        (Ty::Array(elem, Some(_)), None) if *elem == Ty::F64 => {}
        _ => {
            ok = false;
            report_return(
                cx,
                m,
                format!(
                    "`{name}` must return `[f64; {len_name}]`, the diagonal of the mass matrix: \
                     expected `{sig}` with {len_name} an integer literal"
                )
                .as_str(),
            );
        }
    }
    ok.then_some(takes_self)
}

/// Every constraint component must depend on `q`: a constant `g_c` is either always violated
/// or always satisfied, and its row of the Jacobian would be zero (a singular projection).
///
/// `result` is the syntactic result of the body (the tail expression or `return` operand), for
/// spans: when it is an array literal, each error points at its component.
pub fn check_constraints(
    cx: &Ctxt,
    graph: &Graph,
    g: &[NodeId],
    result: Option<&Expr>,
    method: &Method<'_>,
) {
    let elems: Option<Vec<&Expr>> = match result {
        Some(Expr::Array(a)) if a.elems.len() == g.len() => Some(a.elems.iter().collect()),
        _ => None,
    };
    for (c, &node) in g.iter().enumerate() {
        if graph.depends_on_q(node) {
            continue;
        }
        let msg = format!(
            "constraint {c} does not depend on `q`: a holonomic constraint g_{c}(q) = 0 must vary \
             with the coordinates (a constant g_{c} has a zero Jacobian row)"
        );
        match (&elems, result) {
            (Some(e), _) => cx.error_spanned_by(e[c], msg),
            (None, Some(r)) => cx.error_spanned_by(r, msg),
            (None, None) => cx.error_spanned_by(method.name, msg),
        }
    }
}

/// The expression whose value a block returns, for error spans: the tail expression, or the
/// operand of a final `return`, looking through nested blocks and parentheses.
pub fn result_expr(block: &syn::Block) -> Option<&Expr> {
    let last = block.stmts.last()?;
    let e = match last {
        syn::Stmt::Expr(e, None) => e,
        syn::Stmt::Expr(Expr::Return(r), Some(_)) => r.expr.as_deref()?,
        _ => return None,
    };
    Some(strip(e))
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        Expr::Return(r) => r.expr.as_deref().map_or(e, strip),
        Expr::Block(b) if b.label.is_none() => result_expr(&b.block).unwrap_or(e),
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::{parse_quote, ItemImpl};

    fn shape_and_errors(item: ItemImpl) -> (Shape, Vec<String>) {
        let cx = Ctxt::new();
        let input = Input::from_syn(&item);
        let shape = check_signatures(&cx, &input);
        let errors = match cx.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (shape, errors)
    }

    #[test]
    fn reads_n_and_m() {
        let (shape, errors) = shape_and_errors(parse_quote! {
            impl P {
                fn masses(&self) -> [f64; 4] { [1.0; 4] }
                fn potential(&self, q: &[f64; 4]) -> f64 { q[0] }
                fn constraints(&self, q: &[f64; 4]) -> [f64; 2] { [q[0], q[1]] }
            }
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(shape.n, Some(4));
        assert_eq!(shape.m, Some(2));
        assert!(shape.potential_ok && shape.constraints_ok);
        assert_eq!(shape.masses_self, Some(true));
    }

    #[test]
    fn m_is_zero_without_constraints() {
        let (shape, errors) = shape_and_errors(parse_quote! {
            impl P { fn potential(&self, q: &[f64; 3]) -> f64 { q[0] } }
        });
        assert!(errors.is_empty());
        assert_eq!((shape.n, shape.m), (Some(3), Some(0)));
        assert_eq!(shape.masses_self, None);
    }

    #[test]
    fn reports_every_signature_problem() {
        let (shape, errors) = shape_and_errors(parse_quote! {
            impl P {
                fn masses(&self) -> [f64; 3] { [1.0; 3] }
                fn potential(&self, q: &[f64; 4]) -> f32 { 0.0 }
                fn constraints(&self, q: &[f64; 2]) -> Vec<f64> { vec![] }
            }
        });
        assert_eq!(shape.n, Some(4));
        assert!(!shape.potential_ok && !shape.constraints_ok);
        let all = errors.join("\n");
        assert!(all.contains("`potential` must return `f64`"), "{all}");
        assert!(all.contains("length 2 in `constraints` but 4"), "{all}");
        assert!(
            all.contains("`constraints` must return `[f64; M]`"),
            "{all}"
        );
        assert!(
            all.contains("`masses` returns 3 masses but the system has N = 4"),
            "{all}"
        );
    }

    #[test]
    fn missing_potential_and_empty_impl() {
        let (_, errors) = shape_and_errors(parse_quote! { impl P {} });
        assert!(errors[0].starts_with("empty impl"), "{errors:?}");
        let (_, errors) = shape_and_errors(parse_quote! {
            impl P { fn helper(&self) -> f64 { 1.0 } }
        });
        assert!(errors[0].starts_with("missing `fn potential"), "{errors:?}");
    }

    #[test]
    fn stiff_and_fast_roles() {
        let (shape, errors) = shape_and_errors(parse_quote! {
            impl P {
                fn potential(&self, q: &[f64; 2]) -> f64 { q[0] }
                fn stiff_potential(&self, q: &[f64; 2]) -> f64 { q[1] }
                fn fast_potential(&self, q: &[f64; 2]) -> f64 { q[1] }
            }
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert!(shape.stiff_ok && shape.fast_ok);
        let (shape, errors) = shape_and_errors(parse_quote! {
            impl P {
                fn potential(&self, q: &[f64; 2]) -> f64 { q[0] }
                fn stiff_potential(&self, q: &[f64; 3]) -> f64 { q[1] }
                fn fast_potential(q: &[f64; 2]) -> [f64; 2] { q[1] }
            }
        });
        assert!(!shape.stiff_ok && !shape.fast_ok);
        let all = errors.join("\n");
        assert!(all.contains("length 3 in `stiff_potential` but 2"), "{all}");
        assert!(all.contains("`fast_potential` must take `&self`"), "{all}");
        assert!(all.contains("`fast_potential` must return `f64`"), "{all}");
    }

    #[test]
    fn wrong_q_types() {
        let (shape, errors) = shape_and_errors(parse_quote! {
            impl P { fn potential(&self, q: &[f64; N]) -> f64 { 0.0 } }
        });
        assert_eq!(shape.n, None);
        assert!(
            errors[0].contains("must be an integer literal"),
            "{errors:?}"
        );
        let (_, errors) = shape_and_errors(parse_quote! {
            impl P { fn potential(&self, q: &[f32; 3]) -> f64 { 0.0 } }
        });
        assert!(
            errors[0].contains("`q` must have type `&[f64; N]`"),
            "{errors:?}"
        );
        let (_, errors) = shape_and_errors(parse_quote! {
            impl P { fn potential(q: &[f64; 3]) -> f64 { 0.0 } }
        });
        assert!(errors[0].contains("must take `&self`"), "{errors:?}");
        let (_, errors) = shape_and_errors(parse_quote! {
            impl Tr for P { fn potential(&self, q: &[f64; 3]) -> f64 { 0.0 } }
        });
        assert!(errors[0].contains("not on a trait impl"), "{errors:?}");
    }
}
