//! LAMMPS data files (`read_data` / `write_data`): the box, the masses, the atoms with their
//! image flags, velocities, bonds, angles and dihedrals — a state and a topology that go to
//! LAMMPS, OVITO or ASE and back.
//!
//! Atom styles `atomic` (`id type x y z`), `bond` and `molecular` (`id mol type x y z`) and
//! `full` (`id mol type q x y z`), each with optional image flags `ix iy iz`; the style is
//! read from the `Atoms # style` comment when there is one, else from the number of columns
//! (5/8, 6/9, 7/10: unambiguous). Comments (`#` to the end of the line) and blank lines are
//! allowed where LAMMPS allows them; coefficient sections (`Pair Coeffs`, …) are skipped — the
//! force field is the system's. Atoms are numbered in increasing ID order; positions are
//! unwrapped (`x + ix·Lx`, …). Every mistake is a [`DataError`] naming the line.

use std::fmt::Write as _;
use std::path::Path;

/// A mistake in a data file: `path:line: message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct DataError {
    /// The file (or `<text>`).
    pub path: String,
    /// The line, from 1 (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// The columns of the `Atoms` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomStyle {
    /// `id type x y z`.
    Atomic,
    /// `id mol type x y z` (`molecular` has the same columns).
    Bond,
    /// `id mol type q x y z`.
    Full,
}

impl AtomStyle {
    fn name(self) -> &'static str {
        match self {
            AtomStyle::Atomic => "atomic",
            AtomStyle::Bond => "bond",
            AtomStyle::Full => "full",
        }
    }
    /// Columns without image flags.
    fn columns(self) -> usize {
        match self {
            AtomStyle::Atomic => 5,
            AtomStyle::Bond => 6,
            AtomStyle::Full => 7,
        }
    }
}

/// A bonded interaction of `K` atoms: its type (from 1) and its atoms (0-based, ID order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bonded<const K: usize> {
    /// The bond (angle, dihedral) type, from 1.
    pub kind: usize,
    /// The atoms, as indices in increasing-ID order.
    pub atoms: [usize; K],
}

/// A LAMMPS data file's content.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    /// The first line (a title).
    pub title: String,
    /// The atom style of the `Atoms` section.
    pub style: AtomStyle,
    /// `xlo ylo zlo`.
    pub lo: [f64; 3],
    /// `xhi yhi zhi`.
    pub hi: [f64; 3],
    /// Per atom type (index `type − 1`): its mass.
    pub masses: Vec<f64>,
    /// Atom IDs, increasing.
    pub ids: Vec<u64>,
    /// Per atom: its molecule ID (0 for `atomic`).
    pub molecules: Vec<u64>,
    /// Per atom: its type, from 1.
    pub types: Vec<usize>,
    /// Per atom: its charge (0 unless `full`).
    pub charges: Vec<f64>,
    /// Per atom: its unwrapped position.
    pub positions: Vec<[f64; 3]>,
    /// Per atom: its velocity (zero when the file has no `Velocities`).
    pub velocities: Vec<[f64; 3]>,
    /// Whether the file had a `Velocities` section.
    pub has_velocities: bool,
    /// Counts of bond, angle, dihedral types.
    pub bond_types: usize,
    /// Number of angle types.
    pub angle_types: usize,
    /// Number of dihedral types.
    pub dihedral_types: usize,
    /// The bonds.
    pub bonds: Vec<Bonded<2>>,
    /// The angles.
    pub angles: Vec<Bonded<3>>,
    /// The dihedrals.
    pub dihedrals: Vec<Bonded<4>>,
}

impl DataFile {
    /// The box sides `hi − lo`.
    pub fn box_lengths(&self) -> [f64; 3] {
        core::array::from_fn(|a| self.hi[a] - self.lo[a])
    }

    /// Number of atoms.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True with no atoms.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// `n[0] × n[1] × n[2]` copies of the system side by side (LAMMPS's `replicate`): the box
    /// multiplied, atoms, molecules and bonded interactions copied with their IDs offset, copy
    /// `(i, j, k)` shifted by `(i·Lx, j·Ly, k·Lz)` — a melt 8 times larger from one file, say.
    ///
    /// # Panics
    /// If a factor is 0.
    pub fn replicate(&self, n: [usize; 3]) -> DataFile {
        assert!(n.iter().all(|&k| k > 0), "replicate by {n:?}");
        let len = self.box_lengths();
        let atoms = self.len();
        let id_span = self.ids.iter().copied().max().unwrap_or(0);
        let mol_span = self.molecules.iter().copied().max().unwrap_or(0);
        let mut out = DataFile {
            title: format!(
                "{} (replicated {} x {} x {})",
                self.title.trim(),
                n[0],
                n[1],
                n[2]
            ),
            hi: core::array::from_fn(|a| self.lo[a] + n[a] as f64 * len[a]),
            ids: Vec::new(),
            molecules: Vec::new(),
            types: Vec::new(),
            charges: Vec::new(),
            positions: Vec::new(),
            velocities: Vec::new(),
            bonds: Vec::new(),
            angles: Vec::new(),
            dihedrals: Vec::new(),
            ..self.clone()
        };
        let mut copy = 0u64;
        for k in 0..n[2] {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    let shift = [i as f64 * len[0], j as f64 * len[1], k as f64 * len[2]];
                    let first = out.ids.len();
                    out.ids
                        .extend(self.ids.iter().map(|&id| id + copy * id_span));
                    out.molecules.extend(
                        self.molecules.iter().map(
                            |&m| {
                                if m == 0 { 0 } else { m + copy * mol_span }
                            },
                        ),
                    );
                    out.types.extend_from_slice(&self.types);
                    out.charges.extend_from_slice(&self.charges);
                    out.positions.extend(
                        self.positions
                            .iter()
                            .map(|p| core::array::from_fn(|a| p[a] + shift[a])),
                    );
                    out.velocities.extend_from_slice(&self.velocities);
                    let at = |x: usize| first + x;
                    out.bonds.extend(self.bonds.iter().map(|b| Bonded {
                        kind: b.kind,
                        atoms: b.atoms.map(at),
                    }));
                    out.angles.extend(self.angles.iter().map(|b| Bonded {
                        kind: b.kind,
                        atoms: b.atoms.map(at),
                    }));
                    out.dihedrals.extend(self.dihedrals.iter().map(|b| Bonded {
                        kind: b.kind,
                        atoms: b.atoms.map(at),
                    }));
                    copy += 1;
                }
            }
        }
        assert_eq!(out.len(), atoms * n[0] * n[1] * n[2]);
        out
    }

    /// Reads and parses `path`.
    ///
    /// # Errors
    /// An unreadable file (line 0) or any [`DataFile::parse`] error, with the path.
    pub fn read(path: &Path) -> Result<Self, DataError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| DataError {
            path: name.clone(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        let scanned = Parser::new(&text).scan();
        // The text is not read again: let it go before the rows become the file's lists (a
        // million atoms' text is as large as those rows).
        drop(text);
        scanned
            .and_then(Scanned::finish)
            .map_err(|e| DataError { path: name, ..e })
    }

    /// Parses the text of a data file.
    ///
    /// # Errors
    /// The first mistake: a missing or malformed header count or box, a section shorter than
    /// its count (a truncated file), a field that is not a number, a duplicate atom ID, an atom
    /// type or bond type outside the declared ones, a bond to a missing atom, a type without a
    /// mass, a triclinic box (not supported).
    pub fn parse(text: &str) -> Result<Self, DataError> {
        Parser::new(text).scan()?.finish()
    }

    /// The file's text in the same format (`write_data`): positions wrapped into the box with
    /// image flags (unwrapped = wrapped + image·L, to within an ulp of the box side), every
    /// number with the digits that read back to the same `f64`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let n = self.len();
        let _ = writeln!(s, "{}\n", self.title.trim());
        let _ = writeln!(s, "{n} atoms");
        let counts = [
            (self.bonds.len(), "bonds"),
            (self.angles.len(), "angles"),
            (self.dihedrals.len(), "dihedrals"),
        ];
        for (c, what) in counts {
            let _ = writeln!(s, "{c} {what}");
        }
        let _ = writeln!(s, "\n{} atom types", self.masses.len());
        let types = [
            (self.bond_types, "bond"),
            (self.angle_types, "angle"),
            (self.dihedral_types, "dihedral"),
        ];
        for (c, what) in types {
            let _ = writeln!(s, "{c} {what} types");
        }
        s.push('\n');
        for (a, axis) in ["x", "y", "z"].into_iter().enumerate() {
            let _ = writeln!(s, "{:?} {:?} {axis}lo {axis}hi", self.lo[a], self.hi[a]);
        }
        s.push_str("\nMasses\n\n");
        for (t, m) in self.masses.iter().enumerate() {
            let _ = writeln!(s, "{} {m:?}", t + 1);
        }
        let _ = writeln!(s, "\nAtoms # {}\n", self.style.name());
        let len = self.box_lengths();
        for i in 0..n {
            let mut x = self.positions[i];
            let mut image = [0i64; 3];
            for a in 0..3 {
                let k = ((x[a] - self.lo[a]) / len[a]).floor();
                image[a] = k as i64;
                x[a] -= k * len[a];
            }
            let _ = write!(s, "{}", self.ids[i]);
            if self.style != AtomStyle::Atomic {
                let _ = write!(s, " {}", self.molecules[i]);
            }
            let _ = write!(s, " {}", self.types[i]);
            if self.style == AtomStyle::Full {
                let _ = write!(s, " {:?}", self.charges[i]);
            }
            let _ = writeln!(
                s,
                " {:?} {:?} {:?} {} {} {}",
                x[0], x[1], x[2], image[0], image[1], image[2]
            );
        }
        if self.has_velocities {
            s.push_str("\nVelocities\n\n");
            for i in 0..n {
                let v = self.velocities[i];
                let _ = writeln!(s, "{} {:?} {:?} {:?}", self.ids[i], v[0], v[1], v[2]);
            }
        }
        let id = |k: usize| self.ids[k];
        if !self.bonds.is_empty() {
            s.push_str("\nBonds\n\n");
            for (k, b) in self.bonds.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "{} {} {} {}",
                    k + 1,
                    b.kind,
                    id(b.atoms[0]),
                    id(b.atoms[1])
                );
            }
        }
        if !self.angles.is_empty() {
            s.push_str("\nAngles\n\n");
            for (k, b) in self.angles.iter().enumerate() {
                let [i, j, l] = b.atoms.map(id);
                let _ = writeln!(s, "{} {} {i} {j} {l}", k + 1, b.kind);
            }
        }
        if !self.dihedrals.is_empty() {
            s.push_str("\nDihedrals\n\n");
            for (k, b) in self.dihedrals.iter().enumerate() {
                let [i, j, l, m] = b.atoms.map(id);
                let _ = writeln!(s, "{} {} {i} {j} {l} {m}", k + 1, b.kind);
            }
        }
        s
    }
}

/// The line-by-line reader (the lines are read as they come: a million atoms' file has two
/// million lines, whose list would be 48 MB).
struct Parser<'t> {
    text: &'t str,
    lines: core::iter::Enumerate<core::str::Lines<'t>>,
}

/// A data line without its comment, trimmed.
fn content(line: &str) -> &str {
    line.split('#').next().unwrap_or("").trim()
}

fn err(line: usize, message: impl Into<String>) -> DataError {
    DataError {
        path: "<text>".into(),
        line,
        message: message.into(),
    }
}

/// One `Atoms` line: line number, ID, molecule, type, charge, position, image flags.
type AtomRow = (usize, u64, u64, usize, f64, [f64; 3], [i64; 3]);

/// A file's sections as read, before the rows become its lists ([`Scanned::finish`]): what is
/// left once the text is no longer needed.
struct Scanned {
    file: DataFile,
    header: Header,
    seen: Vec<String>,
    rows: Vec<AtomRow>,
    velocity_rows: Vec<(usize, u64, [f64; 3])>,
    /// Per bonded line: its line number, its number of atoms, their IDs and its type.
    raw_bonds: Vec<(usize, usize, [u64; 4], usize)>,
}

/// The header counts.
#[derive(Default)]
struct Header {
    atoms: Option<usize>,
    bonds: usize,
    angles: usize,
    dihedrals: usize,
    impropers: usize,
    atom_types: Option<usize>,
    bond_types: usize,
    angle_types: usize,
    dihedral_types: usize,
    improper_types: usize,
    bounds: [Option<(f64, f64)>; 3],
}

const SECTIONS: &[&str] = &[
    "Atoms",
    "Velocities",
    "Masses",
    "Bonds",
    "Angles",
    "Dihedrals",
    "Impropers",
    "Pair Coeffs",
    "PairIJ Coeffs",
    "Bond Coeffs",
    "Angle Coeffs",
    "Dihedral Coeffs",
    "Improper Coeffs",
    "BondBond Coeffs",
    "BondAngle Coeffs",
    "MiddleBondTorsion Coeffs",
    "EndBondTorsion Coeffs",
    "AngleTorsion Coeffs",
    "AngleAngleTorsion Coeffs",
    "BondBond13 Coeffs",
    "AngleAngle Coeffs",
];

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Self {
        Self {
            text,
            lines: text.lines().enumerate(),
        }
    }

    /// The next line with content (number, raw line), skipping blank and comment lines.
    /// The next line with content: its number (from 1), the line and its content.
    fn next_content(&mut self) -> Option<(usize, &'t str, &'t str)> {
        self.lines
            .by_ref()
            .map(|(i, line)| (i + 1, line, content(line)))
            .find(|(_, _, c)| !c.is_empty())
    }

    fn last_line(&self) -> usize {
        self.text.lines().count()
    }

    /// The header and every section's lines, checked line by line.
    fn scan(mut self) -> Result<Scanned, DataError> {
        let title = self.lines.next().map_or("", |l| l.1).to_string();
        let mut h = Header::default();
        // The header: count and box lines until the first section keyword.
        let first_section = loop {
            let Some((no, line, c)) = self.next_content() else {
                return Err(err(
                    self.last_line(),
                    "the file ends before its first section (Masses, Atoms, …)",
                ));
            };
            if SECTIONS.contains(&c) {
                break (no, c.to_string(), line);
            }
            self.header_line(&mut h, no, c)?;
        };
        let atoms = h
            .atoms
            .ok_or_else(|| err(first_section.0, "no `N atoms` line in the header"))?;
        let atom_types = h
            .atom_types
            .ok_or_else(|| err(first_section.0, "no `N atom types` line in the header"))?;
        let mut lo = [0.0; 3];
        let mut hi = [0.0; 3];
        for (a, axis) in ["x", "y", "z"].into_iter().enumerate() {
            let (l, u) = h.bounds[a].ok_or_else(|| {
                err(
                    first_section.0,
                    format!("no `{axis}lo {axis}hi` line in the header"),
                )
            })?;
            if !(l.is_finite() && u.is_finite() && u > l) {
                return Err(err(
                    first_section.0,
                    format!("the box's {axis} bounds {l} {u} are not an interval"),
                ));
            }
            (lo[a], hi[a]) = (l, u);
        }
        let mut file = DataFile {
            title,
            style: AtomStyle::Atomic,
            lo,
            hi,
            masses: vec![f64::NAN; atom_types],
            ids: Vec::new(),
            molecules: Vec::new(),
            types: Vec::new(),
            charges: Vec::new(),
            positions: Vec::new(),
            velocities: vec![[0.0; 3]; atoms],
            has_velocities: false,
            bond_types: h.bond_types,
            angle_types: h.angle_types,
            dihedral_types: h.dihedral_types,
            bonds: Vec::new(),
            angles: Vec::new(),
            dihedrals: Vec::new(),
        };
        // Every list sized by the header's counts: no list is grown by doubling (a million
        // atoms' rows held twice while they move).
        let mut rows: Vec<AtomRow> = Vec::new();
        let mut velocity_rows: Vec<(usize, u64, [f64; 3])> = Vec::new();
        let mut raw_bonds: Vec<(usize, usize, [u64; 4], usize)> = Vec::new();
        let mut section = Some(first_section);
        let mut seen: Vec<String> = Vec::new();
        // A line's fields, in one list for every line (millions of them).
        let mut f: Vec<&str> = Vec::new();
        while let Some((no, name, raw)) = section.take() {
            if seen.contains(&name) {
                return Err(err(no, format!("a second `{name}` section")));
            }
            seen.push(name.clone());
            let count = match name.as_str() {
                "Atoms" => atoms,
                "Velocities" => atoms,
                "Masses" | "Pair Coeffs" => atom_types,
                "PairIJ Coeffs" => atom_types * (atom_types + 1) / 2,
                "Bonds" => h.bonds,
                "Angles" => h.angles,
                "Dihedrals" => h.dihedrals,
                "Impropers" => h.impropers,
                "Bond Coeffs" => h.bond_types,
                "Angle Coeffs" | "BondBond Coeffs" | "BondAngle Coeffs" => h.angle_types,
                "Improper Coeffs" | "AngleAngle Coeffs" => h.improper_types,
                _ => h.dihedral_types,
            };
            let style_hint = raw.split_once('#').map(|(_, s)| s.trim().to_string());
            match name.as_str() {
                "Atoms" => rows.reserve_exact(count),
                "Velocities" => velocity_rows.reserve_exact(count),
                "Bonds" | "Angles" | "Dihedrals" => raw_bonds.reserve_exact(count),
                _ => {}
            }
            for k in 0..count {
                let Some((lno, _, c)) = self.next_content() else {
                    return Err(err(
                        self.last_line(),
                        format!(
                            "the file ends in the `{name}` section after {k} of its {count} lines (truncated?)"
                        ),
                    ));
                };
                if SECTIONS.contains(&c) {
                    return Err(err(
                        lno,
                        format!("the `{name}` section has {k} lines, the header says {count}"),
                    ));
                }
                f.clear();
                f.extend(c.split_whitespace());
                match name.as_str() {
                    "Masses" => {
                        let (t, m) = (int(&f, 0, lno)?, num(&f, 1, lno)?);
                        let t = type_in(t, atom_types, "atom", lno)?;
                        if !(m.is_finite() && m > 0.0) {
                            return Err(err(lno, format!("mass {m} of type {t} is not positive")));
                        }
                        file.masses[t - 1] = m;
                    }
                    "Atoms" => {
                        let style = match (&style_hint, f.len()) {
                            (Some(s), _) if s == "atomic" => AtomStyle::Atomic,
                            (Some(s), _) if s == "bond" || s == "molecular" => AtomStyle::Bond,
                            (Some(s), _) if s == "full" => AtomStyle::Full,
                            (Some(s), _) => {
                                return Err(err(
                                    no,
                                    format!(
                                        "atom style `{s}` is not supported (atomic, bond, molecular, full)"
                                    ),
                                ));
                            }
                            (None, 5 | 8) => AtomStyle::Atomic,
                            (None, 6 | 9) => AtomStyle::Bond,
                            (None, 7 | 10) => AtomStyle::Full,
                            (None, k) => {
                                return Err(err(
                                    lno,
                                    format!(
                                        "{k} columns: not an atom of style atomic (5 or 8), bond/molecular (6 or 9) or full (7 or 10)"
                                    ),
                                ));
                            }
                        };
                        if k == 0 {
                            file.style = style;
                        }
                        let cols = file.style.columns();
                        if f.len() != cols && f.len() != cols + 3 {
                            return Err(err(
                                lno,
                                format!(
                                    "{} columns, style {} has {cols} or {}",
                                    f.len(),
                                    file.style.name(),
                                    cols + 3
                                ),
                            ));
                        }
                        let id = uint(&f, 0, lno)?;
                        let (mol, t, q, x0) = match file.style {
                            AtomStyle::Atomic => (0, int(&f, 1, lno)?, 0.0, 2),
                            AtomStyle::Bond => (uint(&f, 1, lno)?, int(&f, 2, lno)?, 0.0, 3),
                            AtomStyle::Full => {
                                (uint(&f, 1, lno)?, int(&f, 2, lno)?, num(&f, 3, lno)?, 4)
                            }
                        };
                        let t = type_in(t, atom_types, "atom", lno)?;
                        let x = [
                            num(&f, x0, lno)?,
                            num(&f, x0 + 1, lno)?,
                            num(&f, x0 + 2, lno)?,
                        ];
                        let image = if f.len() == cols + 3 {
                            [
                                int(&f, cols, lno)?,
                                int(&f, cols + 1, lno)?,
                                int(&f, cols + 2, lno)?,
                            ]
                        } else {
                            [0; 3]
                        };
                        rows.push((lno, id, mol, t, q, x, image));
                    }
                    "Velocities" => {
                        if f.len() < 4 {
                            return Err(err(lno, "a velocity needs `id vx vy vz`"));
                        }
                        let v = [num(&f, 1, lno)?, num(&f, 2, lno)?, num(&f, 3, lno)?];
                        velocity_rows.push((lno, uint(&f, 0, lno)?, v));
                    }
                    "Bonds" | "Angles" | "Dihedrals" => {
                        let k = match name.as_str() {
                            "Bonds" => 2,
                            "Angles" => 3,
                            _ => 4,
                        };
                        if f.len() != 2 + k {
                            return Err(err(
                                lno,
                                format!(
                                    "{} columns: a line of `{name}` has `id type` and {k} atom IDs",
                                    f.len()
                                ),
                            ));
                        }
                        let kind = int(&f, 1, lno)?;
                        let mut atoms = [0u64; 4];
                        for (c, a) in atoms.iter_mut().take(k).enumerate() {
                            *a = uint(&f, 2 + c, lno)?;
                        }
                        raw_bonds.push((lno, k, atoms, kind as usize));
                        let types = match k {
                            2 => h.bond_types,
                            3 => h.angle_types,
                            _ => h.dihedral_types,
                        };
                        type_in(kind, types, &name[..name.len() - 1].to_lowercase(), lno)?;
                    }
                    _ => {} // coefficients: the force field is the system's
                }
            }
            section = self
                .next_content()
                .map(|(no, line, c)| (no, c.to_string(), line));
            if let Some((no, ref name, _)) = section
                && !SECTIONS.contains(&name.as_str())
            {
                return Err(err(
                    no,
                    format!(
                        "`{name}`: more lines than the previous section's count, or an unknown section"
                    ),
                ));
            }
        }
        if rows.len() != atoms {
            return Err(err(
                self.last_line(),
                format!("no `Atoms` section (the header says {atoms} atoms)"),
            ));
        }
        Ok(Scanned {
            file,
            header: h,
            seen,
            rows,
            velocity_rows,
            raw_bonds,
        })
    }
}

impl Scanned {
    /// The file's lists from the rows: atoms in ID order (a duplicate ID is an error),
    /// velocities and bonded terms by their atoms' IDs.
    fn finish(self) -> Result<DataFile, DataError> {
        let Scanned {
            mut file,
            header: h,
            seen,
            mut rows,
            velocity_rows,
            raw_bonds,
        } = self;
        let atoms = rows.len();
        if let Some(t) = file.masses.iter().position(|m| m.is_nan()) {
            return Err(err(
                0,
                format!("atom type {} has no mass (no `Masses` line for it)", t + 1),
            ));
        }
        rows.sort_by_key(|r| r.1);
        for w in rows.windows(2) {
            if w[0].1 == w[1].1 {
                return Err(err(
                    w[1].0,
                    format!("atom ID {} appears twice (also line {})", w[1].1, w[0].0),
                ));
            }
        }
        let len = file.box_lengths();
        file.ids.reserve_exact(atoms);
        file.molecules.reserve_exact(atoms);
        file.types.reserve_exact(atoms);
        file.charges.reserve_exact(atoms);
        file.positions.reserve_exact(atoms);
        for (_, id, mol, t, q, x, image) in &rows {
            file.ids.push(*id);
            file.molecules.push(*mol);
            file.types.push(*t);
            file.charges.push(*q);
            file.positions
                .push(core::array::from_fn(|a| x[a] + image[a] as f64 * len[a]));
        }
        // Sorted and distinct, the IDs are `first..first + atoms` when the last is that far from
        // the first (LAMMPS's `1..=N` after `reset_atom_ids`): each then is its place plus
        // `first`, found without a search (a million beads' bonds name two million of them).
        let first = file.ids.first().copied().unwrap_or(0);
        let dense = file.ids.last().map(|&last| last - first) == Some(atoms as u64 - 1);
        let index = |id: u64, lno: usize| -> Result<usize, DataError> {
            let found = if dense {
                (id.checked_sub(first).filter(|&i| i < atoms as u64)).map(|i| i as usize)
            } else {
                file.ids.binary_search(&id).ok()
            };
            found.ok_or_else(|| err(lno, format!("atom ID {id} is not in `Atoms`")))
        };
        for (lno, id, v) in velocity_rows {
            let i = index(id, lno)?;
            file.velocities[i] = v;
        }
        file.has_velocities = seen.iter().any(|s| s == "Velocities");
        drop(rows);
        let mut bonds = Vec::with_capacity(h.bonds);
        let mut angles = Vec::with_capacity(h.angles);
        let mut dihedrals = Vec::with_capacity(h.dihedrals);
        for (lno, k, ids, kind) in raw_bonds {
            let mut at = [0usize; 4];
            for (c, &id) in ids.iter().take(k).enumerate() {
                at[c] = index(id, lno)?;
            }
            match k {
                2 => bonds.push(Bonded {
                    kind,
                    atoms: [at[0], at[1]],
                }),
                3 => angles.push(Bonded {
                    kind,
                    atoms: [at[0], at[1], at[2]],
                }),
                _ => dihedrals.push(Bonded { kind, atoms: at }),
            }
        }
        (file.bonds, file.angles, file.dihedrals) = (bonds, angles, dihedrals);
        Ok(file)
    }
}

impl Parser<'_> {
    fn header_line(&mut self, h: &mut Header, no: usize, c: &str) -> Result<(), DataError> {
        let f: Vec<&str> = c.split_whitespace().collect();
        let words = f
            .iter()
            .skip_while(|w| w.parse::<f64>().is_ok())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let count = || -> Result<usize, DataError> {
            f[0].parse::<usize>()
                .map_err(|_| err(no, format!("`{}` is not a count", f[0])))
        };
        match words.as_str() {
            "atoms" => h.atoms = Some(count()?),
            "bonds" => h.bonds = count()?,
            "angles" => h.angles = count()?,
            "dihedrals" => h.dihedrals = count()?,
            "impropers" => h.impropers = count()?,
            "atom types" => h.atom_types = Some(count()?),
            "bond types" => h.bond_types = count()?,
            "angle types" => h.angle_types = count()?,
            "dihedral types" => h.dihedral_types = count()?,
            "improper types" => h.improper_types = count()?,
            "extra bond per atom"
            | "extra angle per atom"
            | "extra dihedral per atom"
            | "extra improper per atom"
            | "extra special per atom"
            | "ellipsoids"
            | "lines"
            | "triangles"
            | "bodies" => {}
            "xlo xhi" | "ylo yhi" | "zlo zhi" => {
                let a =
                    usize::from(words.starts_with('y')) + 2 * usize::from(words.starts_with('z'));
                h.bounds[a] = Some((num(&f, 0, no)?, num(&f, 1, no)?));
            }
            "xy xz yz" => {
                return Err(err(
                    no,
                    "a triclinic box (`xy xz yz`) is not supported: orthorhombic boxes only",
                ));
            }
            _ => {
                return Err(err(
                    no,
                    format!(
                        "`{c}`: not a header line LAMMPS writes (counts, types, box bounds) nor a section name"
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn field<'a>(f: &[&'a str], k: usize, line: usize) -> Result<&'a str, DataError> {
    f.get(k)
        .copied()
        .ok_or_else(|| err(line, format!("column {} is missing", k + 1)))
}

fn num(f: &[&str], k: usize, line: usize) -> Result<f64, DataError> {
    let s = field(f, k, line)?;
    s.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| {
            err(
                line,
                format!("column {}: `{s}` is not a finite number", k + 1),
            )
        })
}

fn int(f: &[&str], k: usize, line: usize) -> Result<i64, DataError> {
    let s = field(f, k, line)?;
    s.parse::<i64>()
        .map_err(|_| err(line, format!("column {}: `{s}` is not an integer", k + 1)))
}

fn uint(f: &[&str], k: usize, line: usize) -> Result<u64, DataError> {
    let s = field(f, k, line)?;
    s.parse::<u64>().map_err(|_| {
        err(
            line,
            format!("column {}: `{s}` is not an ID (a positive integer)", k + 1),
        )
    })
}

fn type_in(t: i64, types: usize, what: &str, line: usize) -> Result<usize, DataError> {
    if t >= 1 && (t as u64) <= types as u64 {
        Ok(t as usize)
    } else {
        Err(err(
            line,
            format!("{what} type {t} is outside the declared 1..={types}"),
        ))
    }
}

#[cfg(test)]
mod tests;
