//! What a topology, or a start, can get wrong ([`TopologyError`]).

/// A mistake in a [`Topology`](super::Topology) or in its combination with a system: reported when the system is
/// assembled ([`crate::assembly::Assembled::new`]), before any step.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A bond, angle, dihedral, exclusion or pin names a body that does not exist.
    #[error("{what} names body {body}, but the system has {bodies} bodies (0..{bodies})")]
    BodyOutOfRange {
        /// `"bond"`, `"angle"`, `"dihedral"`, `"exclusion"` or `"pin"`.
        what: &'static str,
        /// The offending index.
        body: usize,
        /// Number of bodies.
        bodies: usize,
    },
    /// A bond or an exclusion of a body with itself.
    #[error("{what} ({body}, {body}) joins a body to itself")]
    SelfPair {
        /// `"bond"` or `"exclusion"`.
        what: &'static str,
        /// The body.
        body: usize,
    },
    /// An angle or a dihedral that names one body twice.
    #[error("{what} {bodies:?} names body {body} twice")]
    RepeatedBody {
        /// `"angle"` or `"dihedral"`.
        what: &'static str,
        /// Its bodies.
        bodies: Vec<usize>,
        /// The body named twice.
        body: usize,
    },
    /// The same unordered pair is bonded twice.
    #[error("bond ({0}, {1}) is listed twice")]
    DuplicateBond(usize, usize),
    /// A pinned body's position does not have one value per coordinate of a body.
    #[error("body {body} is pinned at {given} coordinates, a body has {expected}")]
    PinLength {
        /// The body.
        body: usize,
        /// Coordinates given.
        given: usize,
        /// Coordinates per body of the system.
        expected: usize,
    },
    /// A pinned position is not finite.
    #[error("body {body} is pinned at a non-finite position")]
    PinNotFinite {
        /// The body.
        body: usize,
    },
    /// Every body is pinned: nothing moves.
    #[error("all {0} bodies are pinned: the system has no coordinates")]
    NothingFree(usize),
    /// The system has no bodies at all.
    #[error("the topology has no bodies")]
    Empty,
    /// More bodies or terms than the 32-bit indices of the assembly hold.
    #[error("{0} is too large (at most {max})", max = u32::MAX - 1)]
    TooLarge(&'static str),
    /// A body pinned twice at different positions.
    #[error("body {body} is pinned twice, at different positions")]
    PinnedTwice {
        /// The body.
        body: usize,
    },
    /// A mass from `body_masses` that is not finite and positive.
    #[error("body_masses()[{coordinate}] = {mass}: masses must be finite and positive")]
    BadMass {
        /// The coordinate of a body.
        coordinate: usize,
        /// Its mass.
        mass: f64,
    },
    /// A forced solve backend that does not fit a Hessian pattern the system has
    /// ([`crate::assembly::Assembled::with_backend`]).
    #[error("{0}")]
    BackendDoesNotFit(String),
    /// A type list whose length is not the number of bodies.
    #[error("{given} body types for {bodies} bodies")]
    TypesLength {
        /// Types given.
        given: usize,
        /// Bodies.
        bodies: usize,
    },
    /// A body whose type has no entry in a table the definition reads at a body's type
    /// (`self.epsilon[ka]` with `self.epsilon` too short).
    #[error(
        "body {body} has type {kind}, which a table of the system's definition read at a body's type does not have"
    )]
    UnknownType {
        /// The body.
        body: usize,
        /// Its type.
        kind: u32,
    },
    /// A periodic box side that is not a finite positive length.
    #[error("the periodic box must have finite positive sides, not {0:?}")]
    BadBox([f64; 3]),
    /// A periodic box or a cutoff on bodies whose coordinates are not sites of 3 (x, y, z).
    #[error(
        "a periodic box or a pair cutoff needs bodies of whole 3-D sites; a body here has {0} coordinates"
    )]
    PeriodicDimension(usize),
    /// A cutoff or skin that is not finite and positive (the skin may be 0).
    #[error(
        "the pair cutoff must be finite and positive and the skin finite and >= 0, not rc = {rc}, skin = {skin}"
    )]
    BadCutoff {
        /// The cutoff radius.
        rc: f64,
        /// The neighbour-list skin.
        skin: f64,
    },
    /// A cutoff (plus skin) longer than half a side of the periodic box: a pair would then
    /// interact with more than one image of a body.
    #[error(
        "the pair cutoff plus skin, {reach}, is more than half the periodic box's shortest side {side}"
    )]
    CutoffTooLarge {
        /// `rc + skin`.
        reach: f64,
        /// The shortest side.
        side: f64,
    },
    /// [`Topology::ring`](super::Topology::ring) of fewer than 3 bodies (its closing bond would repeat a bond or join
    /// a body to itself).
    #[error("a ring needs at least 3 bodies, not {0}")]
    RingTooSmall(usize),
    /// An order of the bodies inside that cannot be made ([`crate::assembly::Assembled::ordered`]).
    #[error("{0}")]
    OrderDoesNotApply(String),
    /// The start overlaps its own periodic images ([`crate::assembly::Assembled::check_start`]): two
    /// bodies of one molecule meet through the periodic box closer than half its shortest bond.
    #[error(
        "bodies {i} and {j} (numbered from 0) of one molecule are {} apart through the periodic box, under half the shortest bond ({}): the molecule reaches its own periodic image ({shift:?} box lengths along its bonds); give a box wider than the molecule, or fold it",
        crate::error::readable(*.distance),
        crate::error::readable(*.shortest_bond)
    )]
    OverlapsOwnImage {
        /// The first body.
        i: usize,
        /// The second body.
        j: usize,
        /// Their distance through the box (nearest image).
        distance: f64,
        /// The shortest bond of the start.
        shortest_bond: f64,
        /// How many box lengths apart, along each axis, the bonds place them.
        shift: [i64; 3],
    },
}
