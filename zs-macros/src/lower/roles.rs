//! The entry points: lowering the roles of a fixed-size definition (`potential`,
//! `constraints`, `stiff_potential`, `fast_potential`) and the term functions of an assembled
//! one (`site_potential`, `bond_potential`, ...).

use proc_macro2::TokenStream;
use quote::ToTokens;

use super::{Lowerer, ParamExpr, Value};
use crate::ast::{Input, Method};
use crate::ctxt::Ctxt;
use crate::forms::{self, RoleKind};
use crate::valid::{self, Shape};
use zs_symbolic::{Graph, NodeId, Var};

/// The outputs of lowering.
pub struct Lowered {
    /// The expression graph of everything.
    pub graph: Graph,
    /// `V(q)`, when `potential` could be lowered.
    pub potential: Option<NodeId>,
    /// `V1(q)` (Tao & Owhadi eq. 19), when `stiff_potential` exists and could be lowered.
    pub stiff: Option<NodeId>,
    /// `W(q)` (the impulse paper), when `fast_potential` exists and could be lowered.
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

pub(super) fn result_span(m: &Method<'_>) -> TokenStream {
    match valid::result_expr(m.body) {
        Some(e) => e.to_token_stream(),
        None => m.name.to_token_stream(),
    }
}

/// The outputs of lowering an assembled system's term functions. Each term is a function of its
/// own bodies' coordinates, `Var::Q(k·D + i)` for coordinate `i` of body `k`.
pub struct LoweredTerms {
    /// The expression graph of every term.
    pub graph: Graph,
    /// Each role of [`forms::roles`]: the energy (`[node]`) or the constraint components, when
    /// present and lowered.
    pub roles: Vec<Option<Vec<NodeId>>>,
    /// `Var::Param(k)` ↦ `params[k]`.
    pub params: Vec<ParamExpr>,
    /// The conditions on `kind` that the tables of `self` indexed by a body's type have an
    /// entry there.
    pub kind_tables: Vec<proc_macro2::TokenStream>,
    /// `use` items found in the bodies.
    pub uses: Vec<syn::ItemUse>,
    /// Names of the methods whose bodies were interpreted.
    pub visited: Vec<String>,
}

impl LoweredTerms {
    /// The lowered function of kind `kind` of form `form` (an index into [`forms::FORMS`]).
    pub fn role(&self, form: usize, kind: RoleKind) -> Option<&[NodeId]> {
        forms::role_of(form, kind).and_then(|k| self.roles[k].as_deref())
    }
}

/// Lowers the term functions whose signatures passed [`valid`] into one graph.
pub fn lower_terms(cx: &Ctxt, input: &Input<'_>, terms: &valid::TermShape) -> LoweredTerms {
    let mut lw = Lowerer::new(cx, input);
    let d = terms.d.unwrap_or(0);
    let mut roles: Vec<Option<Vec<NodeId>>> = vec![None; forms::role_count()];
    for (k, role) in forms::roles().enumerate() {
        if !terms.ok[k] {
            continue;
        }
        let m = input.method(role.name).expect("checked");
        let mut args: Vec<Value> = (0..role.bodies())
            .map(|b| {
                Value::Array(
                    (0..d)
                        .map(|i| Value::Scalar(lw.graph.var(Var::Q((b * d + i) as u32))))
                        .collect(),
                )
            })
            .collect();
        if terms.typed[k] {
            args.extend((0..role.bodies()).map(Value::Kind));
        }
        let v = lw.lower_fn(m, args, m.name);
        roles[k] = match (role.constraints(), v) {
            (_, Value::Poison) => None,
            (false, Value::Scalar(e)) => Some(vec![e]),
            (true, Value::Array(items)) => {
                let want = terms.constraints[role.form];
                let nodes: Vec<NodeId> = items
                    .iter()
                    .filter_map(|i| match i {
                        Value::Scalar(e) => Some(*e),
                        _ => None,
                    })
                    .collect();
                if Some(nodes.len()) == want && nodes.len() == items.len() {
                    valid::check_constraints(cx, &lw.graph, &nodes, valid::result_expr(m.body), m);
                    Some(nodes)
                } else {
                    if items.iter().all(|i| !matches!(i, Value::Poison)) {
                        cx.error_spanned_by(
                            result_span(m),
                            format!(
                                "`{}` must return {} `f64` constraint values",
                                role.name,
                                want.unwrap_or(0)
                            ),
                        );
                    }
                    None
                }
            }
            (constraints, other) => {
                cx.error_spanned_by(
                    result_span(m),
                    format!(
                        "`{}` must return {}, but this is {}",
                        role.name,
                        if constraints {
                            "`[f64; K]`"
                        } else {
                            "an `f64`"
                        },
                        other.describe()
                    ),
                );
                None
            }
        };
    }
    LoweredTerms {
        graph: lw.graph,
        roles,
        params: lw.params,
        kind_tables: lw.kind_tables,
        uses: lw.uses,
        visited: lw.visited,
    }
}
