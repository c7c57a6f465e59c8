//! The term forms of an assembled system, described once.
//!
//! A *form* is a kind of term: a function of `K` bodies (its arity) that the topology applies to
//! a list of body tuples. The static half of its description is a marker type implementing
//! [`Form`] (name, arity, which tuples of the topology it is applied to); the half that depends
//! on a definition — whether the definition has the form, whether it is stiff, how many
//! constraints each term carries, how its third contraction is obtained — is a [`FormInfo`] in
//! the [`Forms`] table that `#[mechanical_system]` generates. The assembly ([`super::Assembled`])
//! and the macro are written once over this description; what a new form touches is counted in
//! `docs/ARCHITECTURE.md` (a `form!` line and a field of [`Forms`] here, a line in the list of
//! forms the assembly instantiates (`super::system`), a bound of [`super::Terms`], a row of the
//! macro's table).
//!
//! | form | arity `K` | terms | definition functions |
//! |---|---|---|---|
//! | [`Site`] | 1 | one per free body | `site_potential`, `stiff_site_potential`, `body_constraints` |
//! | [`Bond`] | 2 | one per bond | `bond_potential`, `stiff_bond_potential`, `bond_constraints` |
//! | [`Pair`] | 2 | one per non-excluded pair | `pair_potential` |
//! | [`Angle`] | 3 | one per angle `(i, j, k)`, `j` the apex | `angle_potential`, `stiff_angle_potential` |
//! | [`Pair14`] | 2 | one per pair exactly three bonds apart (1-4) | `pair14_potential` |
//! | [`Dihedral`] | 4 | one per dihedral `(i, j, k, l)`, about the axis `j`–`k` | `dihedral_potential`, `stiff_dihedral_potential` |

/// Which tuples of bodies of a [`super::Topology`] a form makes terms of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// One term per free body, in body order.
    Bodies,
    /// One term per bond with at least one free body, in bond order.
    Bonds,
    /// One term per unordered pair `i < j` that is not excluded and has at least one free body,
    /// in tiles of 16 × 16 bodies (pairs `i < j` with `i` in one block of 16 consecutive bodies and
    /// `j` in another, blocks in lexicographic order).
    Pairs,
    /// One term per angle of the topology with at least one free body, in angle order.
    Angles,
    /// One term per dihedral of the topology with at least one free body, in dihedral order.
    Dihedrals,
    /// One term per pair `i < j` whose shortest path of bonds has exactly three bonds (the 1-4
    /// pairs of a force field), with at least one free body, in lexicographic order.
    Pairs14,
}

/// The static description of a term form (see the [module docs](self)).
pub trait Form: Send + Sync + 'static {
    /// Short name, as in the definition's functions (`"site"`, `"bond"`, `"pair"`).
    const NAME: &'static str;
    /// Bodies per term `K`.
    const ARITY: usize;
    /// The tuples of bodies its terms act on.
    const OVER: Over;
    /// This form's entry in a definition's table.
    fn info(forms: &Forms) -> FormInfo;
}

/// Declares a form's marker type and its [`Form`] impl: one line per form.
macro_rules! form {
    ($(#[$doc:meta])* $marker:ident, $name:literal, $arity:literal, $over:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $marker;

        impl Form for $marker {
            const NAME: &'static str = $name;
            const ARITY: usize = $arity;
            const OVER: Over = Over::$over;
            fn info(forms: &Forms) -> FormInfo {
                forms.of(Over::$over)
            }
        }
    };
}

form!(
    /// One term per body: `site_potential(x)`, `stiff_site_potential(x)`, `body_constraints(x)`.
    Site, "site", 1, Bodies
);
form!(
    /// One term per bond: `bond_potential(a, b)`, `stiff_bond_potential(a, b)`,
    /// `bond_constraints(a, b)`.
    Bond, "bond", 2, Bonds
);
form!(
    /// One term per non-excluded pair: `pair_potential(a, b)`.
    Pair, "pair", 2, Pairs
);

form!(
    /// One term per angle `(i, j, k)` of the topology: `angle_potential(a, b, c)`,
    /// `stiff_angle_potential(a, b, c)` (`b` is the apex).
    Angle, "angle", 3, Angles
);
form!(
    /// One term per dihedral `(i, j, k, l)` of the topology: `dihedral_potential(a, b, c, d)`,
    /// `stiff_dihedral_potential(a, b, c, d)` (the torsion about `b`–`c`).
    Dihedral, "dihedral", 4, Dihedrals
);

form!(
    /// One term per 1-4 pair (three bonds apart): `pair14_potential(a, b)` — the scaled or
    /// special pair energy force fields give 1-4 pairs (OPLS: half the LJ and Coulomb energy),
    /// used with [`super::Topology::exclude_within`]`(3)` so that `pair_potential` skips them.
    Pair14, "pair14", 2, Pairs14
);

/// How the assembly obtains a form's third contraction `T(x; a)` (Z&S, eq. 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThirdForm {
    /// From the kernel's `third_contraction` at each call.
    #[default]
    Direct,
    /// The form's third derivative is identically zero (a harmonic bond, say): its
    /// contribution is skipped.
    Zero,
    /// The form is small (`K·D ≤ 4` coordinates): `gradient_hessian_third` also returns its
    /// third-derivative tensor, which the assembly keeps after a Hessian evaluation made for a
    /// Z&S step and contracts with the step's direction, instead of evaluating the form's
    /// transcendental functions a second time.
    Tensor,
}

/// What a definition has of one form (generated by `#[mechanical_system]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FormInfo {
    /// The definition has the form: an energy, a stiff energy or constraints.
    pub present: bool,
    /// Its terms enter the stiff Hessian `Hess V1` (Tao & Owhadi eq. 19): the form has a stiff
    /// energy, or constraints (whose penalty `½ω² Σ g_c²` is stiff).
    pub stiff: bool,
    /// Constraint components per term (0: none).
    pub constraints: usize,
    /// How its third contraction is obtained.
    pub third: ThirdForm,
    /// Its term functions read their bodies' types (`ka: usize, ...`): the assembly passes
    /// each term's types to the kernels.
    pub typed: bool,
}

impl FormInfo {
    /// A form the definition does not have.
    pub const ABSENT: Self = Self {
        present: false,
        stiff: false,
        constraints: 0,
        third: ThirdForm::Direct,
        typed: false,
    };
}

/// The table of a definition's forms: one [`FormInfo`] per form (generated by
/// `#[mechanical_system]` as `Terms::FORMS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Forms {
    /// [`Site`].
    pub site: FormInfo,
    /// [`Bond`].
    pub bond: FormInfo,
    /// [`Pair`].
    pub pair: FormInfo,
    /// [`Angle`].
    pub angle: FormInfo,
    /// [`Dihedral`].
    pub dihedral: FormInfo,
    /// [`Pair14`].
    pub pair14: FormInfo,
}

impl Forms {
    /// Some form reads its bodies' types.
    pub const fn any_typed(&self) -> bool {
        self.site.typed
            || self.bond.typed
            || self.pair.typed
            || self.angle.typed
            || self.dihedral.typed
            || self.pair14.typed
    }

    /// Some form has constraints.
    pub const fn any_constraints(&self) -> bool {
        self.site.constraints
            + self.bond.constraints
            + self.pair.constraints
            + self.angle.constraints
            + self.dihedral.constraints
            + self.pair14.constraints
            > 0
    }

    /// The entry of the form over `over` (one form per kind of tuples): a constant function,
    /// so that the assembly decides at compile time which forms a definition has.
    pub const fn of(&self, over: Over) -> FormInfo {
        match over {
            Over::Bodies => self.site,
            Over::Bonds => self.bond,
            Over::Pairs => self.pair,
            Over::Angles => self.angle,
            Over::Dihedrals => self.dihedral,
            Over::Pairs14 => self.pair14,
        }
    }

    /// No form at all (the expansion after a compile error).
    pub const NONE: Self = Self {
        site: FormInfo::ABSENT,
        bond: FormInfo::ABSENT,
        pair: FormInfo::ABSENT,
        angle: FormInfo::ABSENT,
        dihedral: FormInfo::ABSENT,
        pair14: FormInfo::ABSENT,
    };
}
