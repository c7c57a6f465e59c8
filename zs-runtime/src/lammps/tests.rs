//! The data file reader and writer: round trips, every mistake named by its line.
use super::*;

const SMALL: &str = "LAMMPS data file from a test

3 atoms
2 bonds
0 angles

1 atom types
1 bond types

-2.0 2.0 xlo xhi
-2.0 2.0 ylo yhi
-2.0 2.0 zlo zhi

Masses

1 1.5  # a comment

Atoms # bond

3 1 1 0.5 0.25 1.5 0 0 0
1 1 1 1.75 -1.0 0.0 -1 0 2
2 1 1 0.0 0.0 0.0

Velocities

1 0.1 0.2 0.3
2 0 0 0
3 -1 0 1e-3

Bonds

1 1 1 2
2 1 2 3
";

#[test]
fn reads_a_file_and_writes_it_back() {
    let d = DataFile::parse(SMALL).expect("valid");
    assert_eq!(d.ids, vec![1, 2, 3]);
    assert_eq!(d.style, AtomStyle::Bond);
    assert_eq!(d.masses, vec![1.5]);
    assert_eq!(d.positions[0], [1.75 - 4.0, -1.0, 8.0]);
    assert_eq!(d.positions[2], [0.5, 0.25, 1.5]);
    assert_eq!(d.velocities[0], [0.1, 0.2, 0.3]);
    assert_eq!(
        d.bonds,
        vec![
            Bonded {
                kind: 1,
                atoms: [0, 1]
            },
            Bonded {
                kind: 1,
                atoms: [1, 2]
            }
        ]
    );
    let back = DataFile::parse(&d.to_text()).expect("its own output reads");
    assert_eq!(back.ids, d.ids);
    assert_eq!(back.bonds, d.bonds);
    assert_eq!(back.velocities, d.velocities);
    for (a, b) in back.positions.iter().zip(&d.positions) {
        for k in 0..3 {
            assert!((a[k] - b[k]).abs() <= 4.0 * f64::EPSILON, "{a:?} vs {b:?}");
        }
    }
    // Replicated 2 × 1 × 3: six copies side by side, IDs and bonds offset.
    let r = d.replicate([2, 1, 3]);
    assert_eq!((r.len(), r.bonds.len()), (18, 12));
    assert_eq!(r.box_lengths(), [8.0, 4.0, 12.0]);
    assert_eq!(r.positions[3 * 5 + 2], [0.5 + 4.0, 0.25, 1.5 + 8.0]);
    assert_eq!(
        r.bonds[11],
        Bonded {
            kind: 1,
            atoms: [16, 17]
        }
    );
    assert!(r.ids.windows(2).all(|w| w[0] < w[1]));
    // Columns without the style comment: 9 columns is `bond` with images.
    let plain = SMALL.replace("Atoms # bond", "Atoms");
    assert_eq!(
        DataFile::parse(&plain).expect("valid").style,
        AtomStyle::Bond
    );
}

/// Bonds and velocities find their atoms by ID whether the IDs are `1..=N` (found by their
/// place) or have gaps (found by a search), and an ID beyond either end or in a gap is named.
#[test]
fn atoms_are_found_by_id_with_and_without_gaps() {
    let dense = DataFile::parse(SMALL).expect("valid");
    for (first, gap) in [(1, 1), (5, 1), (1, 10), (0, 1), (7, 100)] {
        // IDs `first`, `first + gap`, `first + 2 gap` for the file's 1, 2, 3.
        let id = |k: u64| (first + (k - 1) * gap).to_string();
        let renamed = |text: &str| -> String {
            let mut out = String::new();
            let mut section = "";
            for line in text.lines() {
                let trimmed = line.trim();
                if ["Atoms # bond", "Velocities", "Bonds", "Masses"].contains(&trimmed) {
                    section = trimmed;
                }
                let mut f: Vec<String> = line.split_whitespace().map(String::from).collect();
                let k = |s: &str| s.parse::<u64>().ok();
                match (section, f.len()) {
                    ("Atoms # bond", 6 | 9) | ("Velocities", 4) => f[0] = id(k(&f[0]).unwrap()),
                    ("Bonds", 4) => {
                        f[2] = id(k(&f[2]).unwrap());
                        f[3] = id(k(&f[3]).unwrap());
                    }
                    _ => {
                        out.push_str(line);
                        out.push('\n');
                        continue;
                    }
                }
                out.push_str(&f.join(" "));
                out.push('\n');
            }
            out
        };
        let r = DataFile::parse(&renamed(SMALL)).expect("valid");
        assert_eq!(r.positions, dense.positions);
        assert_eq!(r.velocities, dense.velocities);
        assert_eq!(r.bonds, dense.bonds);
        let last_bond = format!("2 1 {} {}", id(2), id(3));
        let text = renamed(SMALL);
        assert!(text.contains(&last_bond), "{text}");
        let mut outside = vec![first + 3 * gap, first + 2 * gap + 1];
        outside.extend(first.checked_sub(1));
        if gap > 1 {
            outside.push(first + 1);
        }
        for missing in outside {
            let bad = text.replace(&last_bond, &format!("2 1 {} {missing}", id(2)));
            let e = DataFile::parse(&bad).expect_err("an ID not in `Atoms`");
            assert_eq!(e.line, 33, "{e}");
            assert!(
                e.message == format!("atom ID {missing} is not in `Atoms`"),
                "{first}, {gap}: {e}"
            );
        }
    }
}

#[test]
fn every_mistake_names_its_line() {
    let cases: &[(&str, &str, usize, &str)] = &[
        (
            "3 1 1 0.5 0.25 1.5 0 0 0\n",
            "3 1 2 0.5 0.25 1.5 0 0 0\n",
            20,
            "atom type 2 is outside the declared 1..=1",
        ),
        ("2 1 2 3\n", "2 1 2 7\n", 33, "atom ID 7 is not in `Atoms`"),
        ("2 1 2 3\n", "2 2 2 3\n", 33, "bond type 2 is outside"),
        ("1 1 1 1.75", "3 1 1 1.75", 21, "atom ID 3 appears twice"),
        (
            "0.25 1.5 0 0 0",
            "0.25 x 0 0 0",
            20,
            "`x` is not a finite number",
        ),
        ("-2.0 2.0 ylo yhi", "0.0 0 0 xy xz yz", 11, "triclinic"),
        ("1 1.5  # a comment", "1 -1.5", 16, "not positive"),
    ];
    for &(from, to, line, needle) in cases {
        assert!(SMALL.contains(from), "{from}");
        let e = DataFile::parse(&SMALL.replacen(from, to, 1)).expect_err(needle);
        assert!(
            e.message.contains(needle) && e.line == line,
            "{needle}: got {e}"
        );
    }
    let cut = &SMALL[..SMALL.find("2 1 2 3").expect("the last bond")];
    let e = DataFile::parse(cut).expect_err("truncated");
    assert!(
        e.message.contains("after 1 of its 2 lines (truncated?)"),
        "{e}"
    );
    let e = DataFile::parse(&SMALL.replace("3 atoms", "4 atoms")).expect_err("short");
    assert!(
        e.message
            .contains("the `Atoms` section has 3 lines, the header says 4"),
        "{e}"
    );
    let e = DataFile::read(Path::new("/no/such/file.data")).expect_err("missing");
    assert!(
        e.to_string()
            .starts_with("/no/such/file.data:0: cannot read"),
        "{e}"
    );
}
