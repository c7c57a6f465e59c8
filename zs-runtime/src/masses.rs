//! The diagonal of a model's mass matrix as the model holds it, lent to the steppers
//! ([`crate::Model::masses_lent`]) so that they read it where it is instead of copying it.
//!
//! A condensed-phase system has a handful of distinct masses (one per site type) over a
//! million coordinates: held per coordinate they are 8 bytes a coordinate, as much as one more
//! state vector; held as the rows of a table of the distinct bodies' masses, nothing per body
//! for a melt of identical beads and 4 bytes a body otherwise. The steppers read them in blocks ([`Masses::in_blocks`]): a block's masses are
//! written into a buffer on the stack from the table, and each stepper's loop over a block is
//! the loop it had over a slice.

/// Coordinates per block of [`Masses::in_blocks`] (a 2 kB buffer on the stack).
const BLOCK: usize = 256;

/// The diagonal of `M`, lent by a model that stores it.
#[derive(Debug, Clone, Copy)]
pub enum Masses<'a> {
    /// One mass per coordinate.
    PerCoordinate(&'a [f64]),
    /// `coordinates` coordinates in bodies of `dimension` each, whose masses are rows of
    /// `table` (`dimension` entries a row): body `b`'s are row `row[b]`, or row 0 for every
    /// body when `row` is empty.
    Rows {
        /// Coordinates per body.
        dimension: usize,
        /// The distinct bodies' masses, row after row.
        table: &'a [f64],
        /// Each body's row (empty: row 0 for every body).
        row: &'a [u32],
        /// Number of coordinates.
        coordinates: usize,
    },
}

impl Masses<'_> {
    /// Number of coordinates.
    pub fn len(&self) -> usize {
        match self {
            Masses::PerCoordinate(m) => m.len(),
            Masses::Rows { coordinates, .. } => *coordinates,
        }
    }

    /// True when there are no coordinates.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The masses of coordinates `from .. from + out.len()` into `out`.
    ///
    /// # Panics
    /// If the range exceeds [`Masses::len`].
    pub fn fill(&self, from: usize, out: &mut [f64]) {
        assert!(from + out.len() <= self.len(), "masses out of range");
        match *self {
            Masses::PerCoordinate(m) => out.copy_from_slice(&m[from..from + out.len()]),
            Masses::Rows {
                dimension,
                table,
                row,
                ..
            } => {
                let (mut body, mut c) = (from / dimension, from % dimension);
                for m in out {
                    let r = row.get(body).map_or(0, |&r| r as usize);
                    *m = table[r * dimension + c];
                    c += 1;
                    if c == dimension {
                        (body, c) = (body + 1, 0);
                    }
                }
            }
        }
    }

    /// Calls `f(offset, masses)` for consecutive blocks of coordinates `from .. from + len`, the
    /// block's masses being those of coordinates `from + offset ..`: the stored slice itself
    /// when the masses are per coordinate (one block), else blocks of a buffer on the stack.
    #[inline(always)]
    pub fn in_blocks(&self, from: usize, len: usize, mut f: impl FnMut(usize, &[f64])) {
        match *self {
            Masses::PerCoordinate(m) => f(0, &m[from..from + len]),
            Masses::Rows { dimension, row, .. } => {
                let mut buffer = [0.0; BLOCK];
                // Whole bodies per block, so that every block starts at the same coordinate
                // of a body: with one row, every block's masses are the first block's, filled
                // once.
                let whole = BLOCK - BLOCK % dimension.clamp(1, BLOCK);
                let once = row.is_empty() && dimension <= BLOCK;
                if once {
                    self.fill(from, &mut buffer[..whole.min(len)]);
                }
                let mut offset = 0;
                while offset < len {
                    let block = &mut buffer[..whole.min(len - offset)];
                    if !once {
                        self.fill(from + offset, block);
                    }
                    f(offset, block);
                    offset += block.len();
                }
            }
        }
    }

    /// Every coordinate's mass, into `out` (of length [`Masses::len`]).
    pub fn copy_into(&self, out: &mut [f64]) {
        self.fill(0, out);
    }

    /// `Σ m_i v_i²` over coordinates `from .. from + v.len()` (`v` their velocities), in eight
    /// running sums added in a fixed order at the end: a function of the range and the values
    /// alone, on any thread and any instruction set, with eight additions in flight instead
    /// of one. A leaf of the kinetic energy's summation tree (an assembled system's
    /// [`crate::Model::kinetic_energy`]), which velocity Verlet also takes in its own pass
    /// over the velocities it writes.
    #[inline(always)]
    pub(crate) fn twice_kinetic(&self, from: usize, v: &[f64]) -> f64 {
        let mut sums = [0.0_f64; 8];
        // The closure inlined too, so that its loop runs on the lanes of the caller's
        // instruction-set entry.
        self.in_blocks(
            from,
            v.len(),
            #[inline(always)]
            |at, m| {
                let v = &v[at..at + m.len()];
                let (vs, ms) = (v.chunks_exact(8), m.chunks_exact(8));
                for (j, (v, m)) in vs.remainder().iter().zip(ms.remainder()).enumerate() {
                    sums[j] += m * v * v;
                }
                for (v, m) in vs.zip(ms) {
                    for j in 0..8 {
                        sums[j] += m[j] * v[j] * v[j];
                    }
                }
            },
        );
        ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
    }
}

/// The masses of bodies of `D` coordinates as an assembled system keeps them: the distinct
/// bodies' masses and each body's row ([`Masses::Rows`]).
#[derive(Debug, Default)]
pub(crate) struct BodyMasses<const D: usize> {
    table: Vec<[f64; D]>,
    row: Vec<u32>,
    bodies: usize,
}

impl<const D: usize> BodyMasses<D> {
    /// The bodies' masses in order, each body's `D` of them (equal rows found by their bits).
    pub fn new(bodies: impl Iterator<Item = [f64; D]>) -> Self {
        let mut masses = Self::default();
        for m in bodies {
            let key = m.map(f64::to_bits);
            let r = match masses.table.iter().position(|t| t.map(f64::to_bits) == key) {
                Some(r) => r,
                None => {
                    masses.table.push(m);
                    masses.table.len() - 1
                }
            };
            if masses.table.len() > 1 && masses.row.is_empty() {
                // A second row: every body before it was row 0.
                masses.row.reserve(masses.bodies + 1);
                masses.row.resize(masses.bodies, 0);
            }
            if !masses.row.is_empty() || masses.table.len() > 1 {
                masses.row.push(r as u32);
            }
            masses.bodies += 1;
        }
        masses
    }

    /// True when every body has the same masses (one row, none stored per body).
    pub fn is_uniform(&self) -> bool {
        self.row.is_empty()
    }

    /// The view the steppers read.
    pub fn lent(&self) -> Masses<'_> {
        Masses::Rows {
            dimension: D,
            table: self.table.as_flattened(),
            row: &self.row,
            coordinates: self.bodies * D,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows found by their bits give back every coordinate's mass, by block and by range,
    /// whatever the block boundaries; one row holds nothing per body.
    #[test]
    fn rows_give_back_every_coordinates_mass() {
        let kinds = [[1.0, 1.0, 2.0], [16.0, 16.0, 16.0], [1.0, 1.0, 2.0]];
        let bodies: Vec<[f64; 3]> = (0..700).map(|b| kinds[(b * 7 + b / 3) % 3]).collect();
        let masses = BodyMasses::new(bodies.iter().copied());
        assert_eq!(masses.table.len(), 2);
        let flat: Vec<f64> = bodies.as_flattened().to_vec();
        let lent = masses.lent();
        assert_eq!(lent.len(), flat.len());
        let mut all = vec![0.0; flat.len()];
        lent.copy_into(&mut all);
        assert_eq!(all, flat);
        for (from, len) in [(0, 2100), (5, 1000), (1001, 3), (299, 700)] {
            let mut seen = Vec::new();
            lent.in_blocks(from, len, |offset, m| {
                assert_eq!(offset, seen.len());
                seen.extend_from_slice(m);
            });
            assert_eq!(seen, flat[from..from + len]);
        }
        let one = BodyMasses::new(std::iter::repeat_n([1.0; 3], 1000));
        assert!(one.row.is_empty() && one.table.len() == 1);
        let mut all = vec![0.0; 3000];
        one.lent().copy_into(&mut all);
        assert!(all.iter().all(|&m| m == 1.0));
    }
}
