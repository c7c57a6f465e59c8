//! The term forms of an assembled system as a definition writes them: one table, [`FORMS`],
//! that validation (`valid`), lowering (`lower`) and expansion (`expand/terms.rs`) loop over.
//! The runtime half of each form (its marker type, the topology tuples it applies to) is
//! `zs_runtime::assembly::forms`; a new form is a row here and a marker type there.

/// One term form: its runtime marker, its arity, and the definition's functions that feed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormSpec {
    /// The runtime's marker type, `::zs_runtime::assembly::<marker>`.
    pub marker: &'static str,
    /// The field of `zs_runtime::assembly::Forms` that describes it.
    pub field: &'static str,
    /// Bodies per term `K`.
    pub arity: usize,
    /// The energy function (`V0` of the term).
    pub energy: &'static str,
    /// The stiff energy function (`V1` of Tao & Owhadi eq. 19), if the form has one.
    pub stiff: Option<&'static str>,
    /// The constraint function, if the form has one.
    pub constraints: Option<&'static str>,
}

/// Every form, in the runtime's table order.
pub const FORMS: [FormSpec; 6] = [
    FormSpec {
        marker: "Site",
        field: "site",
        arity: 1,
        energy: "site_potential",
        stiff: Some("stiff_site_potential"),
        constraints: Some("body_constraints"),
    },
    FormSpec {
        marker: "Bond",
        field: "bond",
        arity: 2,
        energy: "bond_potential",
        stiff: Some("stiff_bond_potential"),
        constraints: Some("bond_constraints"),
    },
    FormSpec {
        marker: "Pair",
        field: "pair",
        arity: 2,
        energy: "pair_potential",
        stiff: None,
        constraints: None,
    },
    FormSpec {
        marker: "Angle",
        field: "angle",
        arity: 3,
        energy: "angle_potential",
        stiff: Some("stiff_angle_potential"),
        constraints: None,
    },
    FormSpec {
        marker: "Dihedral",
        field: "dihedral",
        arity: 4,
        energy: "dihedral_potential",
        stiff: Some("stiff_dihedral_potential"),
        constraints: None,
    },
    FormSpec {
        marker: "Pair14",
        field: "pair14",
        arity: 2,
        energy: "pair14_potential",
        stiff: None,
        constraints: None,
    },
];

/// What a term function is to its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleKind {
    /// The term's energy, `-> f64`.
    Energy,
    /// Its stiff energy, `-> f64`.
    Stiff,
    /// Its constraints, `-> [f64; K]`.
    Constraints,
}

/// A term function of a definition: its name, its form (an index into [`FORMS`]) and role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermRole {
    /// The method name.
    pub name: &'static str,
    /// Index into [`FORMS`].
    pub form: usize,
    /// What it is to the form.
    pub kind: RoleKind,
}

impl TermRole {
    /// Bodies it takes.
    pub fn bodies(&self) -> usize {
        FORMS[self.form].arity
    }

    /// True when it returns one value per constraint.
    pub fn constraints(&self) -> bool {
        self.kind == RoleKind::Constraints
    }

    /// Its parameters as a user writes them: `x: &[f64; D]`, or `a: &[f64; D], b: &[f64; D]`, ...
    pub fn params(&self) -> String {
        match self.bodies() {
            1 => "x: &[f64; D]".to_string(),
            k => (0..k)
                .map(|i| format!("{}: &[f64; D]", char::from(b'a' + i as u8)))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Its bodies' types as a user writes them: `kx: usize`, or `ka: usize, kb: usize`, ...
    pub fn kind_params(&self) -> String {
        match self.bodies() {
            1 => "its type `kx: usize`".to_string(),
            k => (0..k)
                .map(|i| format!("k{}: usize", char::from(b'a' + i as u8)))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Its expected signature, for messages.
    pub fn signature(&self) -> String {
        let ret = if self.constraints() {
            "[f64; K]"
        } else {
            "f64"
        };
        format!("fn {}(&self, {}) -> {ret}", self.name, self.params())
    }
}

/// Every term function: each form's energy and stiff energy, then each form's constraints (the
/// order in which they are checked, lowered and reported).
pub fn roles() -> impl Iterator<Item = TermRole> {
    let energies = FORMS.iter().enumerate().flat_map(|(form, f)| {
        let energy = TermRole {
            name: f.energy,
            form,
            kind: RoleKind::Energy,
        };
        let stiff = f.stiff.map(|name| TermRole {
            name,
            form,
            kind: RoleKind::Stiff,
        });
        core::iter::once(energy).chain(stiff)
    });
    let constraints = FORMS.iter().enumerate().filter_map(|(form, f)| {
        f.constraints.map(|name| TermRole {
            name,
            form,
            kind: RoleKind::Constraints,
        })
    });
    energies.chain(constraints)
}

/// Number of term functions.
pub fn role_count() -> usize {
    roles().count()
}

/// The index (in [`roles`]) and description of the term function `name`.
pub fn role(name: &str) -> Option<(usize, TermRole)> {
    roles().enumerate().find(|(_, r)| r.name == name)
}

/// The index of form `form`'s function of kind `kind`, if the form has one.
pub fn role_of(form: usize, kind: RoleKind) -> Option<usize> {
    roles().position(|r| r.form == form && r.kind == kind)
}

/// The names of the term functions of kind `kind`, as "`a`, `b`" (for messages).
pub fn names(kind: RoleKind, separator: &str) -> String {
    roles()
        .filter(|r| r.kind == kind)
        .map(|r| format!("`{}`", r.name))
        .collect::<Vec<_>>()
        .join(separator)
}

/// A number as a word, for messages ("one parameter", "two parameters", ...).
pub fn number_word(n: usize) -> String {
    match n {
        1 => "one".into(),
        2 => "two".into(),
        3 => "three".into(),
        4 => "four".into(),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_in_the_order_they_are_reported() {
        let names: Vec<&str> = roles().map(|r| r.name).collect();
        assert_eq!(
            names,
            [
                "site_potential",
                "stiff_site_potential",
                "bond_potential",
                "stiff_bond_potential",
                "pair_potential",
                "angle_potential",
                "stiff_angle_potential",
                "dihedral_potential",
                "stiff_dihedral_potential",
                "pair14_potential",
                "body_constraints",
                "bond_constraints"
            ]
        );
        assert_eq!(
            role("bond_constraints").map(|(k, r)| (k, r.form)),
            Some((11, 1))
        );
        assert_eq!(role_of(2, RoleKind::Stiff), None);
        assert_eq!(role_of(0, RoleKind::Constraints), Some(10));
        assert_eq!(
            role("dihedral_potential").map(|(_, r)| r.params()),
            Some("a: &[f64; D], b: &[f64; D], c: &[f64; D], d: &[f64; D]".to_string())
        );
    }

    #[test]
    fn signatures_as_messages_print_them() {
        let sig = |name| role(name).expect("a role").1.signature();
        assert_eq!(
            sig("site_potential"),
            "fn site_potential(&self, x: &[f64; D]) -> f64"
        );
        assert_eq!(
            sig("bond_constraints"),
            "fn bond_constraints(&self, a: &[f64; D], b: &[f64; D]) -> [f64; K]"
        );
        assert_eq!(
            names(RoleKind::Constraints, " / "),
            "`body_constraints` / `bond_constraints`"
        );
    }
}
