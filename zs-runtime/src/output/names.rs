//! The coordinates' names of a CSV recorder ([`Names`]): held as one text, or, when they are
//! `x1, y1, z1, …` ([`xyz_name`]), only counted.

/// The coordinates' names as one text, each ended by a NUL (one in a name is written as
/// U+FFFD): a name per coordinate of a million bodies would otherwise cost a heap allocation
/// each. Names that are `x1, y1, z1, x2, …` (3-D bodies numbered from 1, what
/// [`crate::assembly::Assembled::coordinate_names`] gives) are not held at all, only counted:
/// 21 MB for a million bodies.
#[derive(Debug, Default)]
pub(super) struct Names {
    pub(super) text: String,
    pub(super) len: usize,
    /// Every name so far is the `x1, y1, z1, …` name of its position (`text` is empty).
    pub(super) numbered_xyz: bool,
}

/// The decimal digits of `n`, written into `buf` (no allocation).
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    core::str::from_utf8(&buf[at..]).expect("ASCII digits")
}

/// Appends the `k`-th (from 0) of `x1, y1, z1, x2, …` to `to`.
fn push_xyz_name(k: usize, to: &mut String) {
    to.push(['x', 'y', 'z'][k % 3]);
    to.push_str(decimal(k / 3 + 1, &mut [0; 20]));
}

/// The `k`-th (from 0) of the names `x1, y1, z1, x2, …`: the coordinates of 3-D bodies numbered
/// from 1, which [`super::CsvRecorder::with_names`] counts instead of holding. Written digit by digit
/// into a string of its own length (a million bodies' set-up makes three million of them).
pub fn xyz_name(k: usize) -> String {
    let mut name = String::with_capacity(8);
    push_xyz_name(k, &mut name);
    name
}

/// Whether `name` is [`xyz_name`]`(k)` (no allocation).
fn is_xyz_name(name: &str, k: usize) -> bool {
    let name = name.as_bytes();
    name.first() == Some(&b"xyz"[k % 3])
        && name[1..] == *decimal(k / 3 + 1, &mut [0; 20]).as_bytes()
}

impl Names {
    pub(super) fn push(&mut self, name: &str) {
        if self.len == 0 {
            self.numbered_xyz = true;
        }
        if self.numbered_xyz {
            if is_xyz_name(name, self.len) {
                self.len += 1;
                return;
            }
            // The pattern ends here: the names so far written out.
            self.numbered_xyz = false;
            for k in 0..self.len {
                push_xyz_name(k, &mut self.text);
                self.text.push('\0');
            }
        }
        if name.contains('\0') {
            self.text.push_str(&name.replace('\0', "\u{FFFD}"));
        } else {
            self.text.push_str(name);
        }
        self.text.push('\0');
        self.len += 1;
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// `f` of each name in turn; numbered ones are written into one buffer, none held.
    pub(super) fn for_each(&self, mut f: impl FnMut(&str)) {
        if self.numbered_xyz {
            let mut name = String::new();
            for k in 0..self.len {
                name.clear();
                push_xyz_name(k, &mut name);
                f(&name);
            }
        } else {
            self.text.split_terminator('\0').for_each(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Names, is_xyz_name, xyz_name};

    #[test]
    fn names_come_back_in_order_empty_ones_too_and_a_nul_as_a_replacement_character() {
        let given = ["x1", "", "long name, with a comma", "a\0b", "z"];
        let mut names = Names::default();
        for n in given {
            names.push(n);
        }
        assert_eq!(names.len(), given.len());
        let back = all(&names);
        assert_eq!(
            back,
            ["x1", "", "long name, with a comma", "a\u{FFFD}b", "z"]
        );
        assert!(all(&Names::default()).is_empty());
    }

    #[test]
    fn numbered_xyz_names_are_counted_not_held_until_one_differs() {
        let xyz: Vec<String> = (1..=4)
            .flat_map(|i| ["x", "y", "z"].map(|c| format!("{c}{i}")))
            .collect();
        let mut names = Names::default();
        for n in &xyz {
            names.push(n);
        }
        assert!(names.text.is_empty() && names.numbered_xyz);
        assert_eq!(all(&names), xyz);
        // One that breaks the pattern: everything written out, in order.
        names.push("x5");
        names.push("theta");
        let mut expected = xyz.clone();
        expected.extend(["x5".to_string(), "theta".to_string()]);
        assert!(!names.numbered_xyz);
        assert_eq!(names.len(), 14);
        assert_eq!(all(&names), expected);
        // A pattern broken at once.
        let mut other = Names::default();
        for n in ["y1", "x1"] {
            other.push(n);
        }
        assert_eq!(all(&other), ["y1", "x1"]);
    }

    fn all(names: &Names) -> Vec<String> {
        let mut all = Vec::new();
        names.for_each(|n| all.push(n.to_string()));
        all
    }

    /// `xyz_name` writes what `format!` writes, and `is_xyz_name` knows it from every other
    /// name: its neighbours, other axes, leading zeros and signs, prefixes and extensions.
    #[test]
    fn xyz_names_are_formats_text_and_nothing_else_is_taken_for_one() {
        let ks = (0..3000).chain([3 * 999_999, 3 * 1_000_000 - 1, usize::MAX / 2 - 7]);
        for k in ks {
            let name = format!("{}{}", ["x", "y", "z"][k % 3], k / 3 + 1);
            assert_eq!(xyz_name(k), name);
            assert!(is_xyz_name(&name, k));
            let number = &name[1..];
            let others = [
                xyz_name(k + 1),
                xyz_name(k + 3),
                format!("{}{number}", ["y", "z", "x"][k % 3]),
                format!("{}0{number}", &name[..1]),
                format!("{}+{number}", &name[..1]),
                format!("{name}0"),
                format!("{name} "),
                name[..name.len() - 1].to_string(),
                name[..1].to_string(),
                number.to_string(),
                format!("é{number}"),
                String::new(),
            ];
            for other in others {
                assert!(!is_xyz_name(&other, k), "{other} for {k}");
            }
        }
    }
}
