//! The periodic box: nearest images, written once for the scalar code and the lanes.
//!
//! Two operations, each in one place:
//! - [`Cell::nearest`]: a separation `d` reduced to its nearest image, `d − L·round(d/L)`
//!   per axis (the neighbour list's search and its rows' distance order);
//! - [`Image::apply`]: the bodies of a term moved by whole box vectors next to its first body
//!   (what every kernel sees), on `f64` or on lanes by the same operations, so that every
//!   instruction set gives the same bits.
//!
//! Both round ties to even by [`Lanes::round_even`]; [`r2`] is the squared separation of a
//! term's first and last bodies that the cutoff tests.

use crate::simd::Lanes;

/// An orthorhombic periodic box: the sides and their reciprocals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cell {
    pub len: [f64; 3],
    pub inv: [f64; 3],
}

impl Cell {
    pub fn new(len: [f64; 3]) -> Self {
        Self {
            len,
            inv: len.map(|l| 1.0 / l),
        }
    }

    /// `d` reduced to its nearest image: `d − L·round(d / L)` per axis, ties to even.
    #[inline]
    pub fn nearest(&self, mut d: [f64; 3]) -> [f64; 3] {
        for (a, x) in d.iter_mut().enumerate() {
            *x -= (*x * self.inv[a]).round_even() * self.len[a];
        }
        d
    }
}

/// A periodic box's sides and their reciprocals as lanes: the broadcasts made once per pass,
/// not once per block.
pub(crate) struct Image<L> {
    inv: [L; 3],
    len: [L; 3],
}

impl<L: Lanes> Image<L> {
    #[inline(always)]
    pub fn new(cell: &Cell) -> Self {
        Self {
            inv: cell.inv.map(L::splat),
            len: cell.len.map(L::splat),
        }
    }

    /// No box: [`Image::apply`] shifts by `±0`, which leaves every coordinate as it is but a
    /// `−0`, made `+0` — the same values and, every sum starting at `+0`, the same bits
    /// downstream. For a pass that applies an image whether in a box or not, with no branch.
    #[inline(always)]
    pub fn none() -> Self {
        let zero = [L::splat(0.0); 3];
        Self {
            inv: zero,
            len: zero,
        }
    }

    /// `d` reduced to its nearest image lane by lane: [`Cell::nearest`]'s operations, so the
    /// same bits as it on every lane.
    #[inline(always)]
    pub fn nearest(&self, d: [L; 3]) -> [L; 3] {
        core::array::from_fn(|a| d[a] - (d[a] * self.inv[a]).round_even() * self.len[a])
    }

    /// Shift bodies `1..K` of a term by whole box vectors to the nearest image of body 0, by
    /// their reference sites (coordinates `0..3`); every site `s` of a body (coordinates
    /// `3s..3s + 3`) moves with it.
    #[inline(always)]
    pub fn apply<const D: usize, const K: usize>(&self, x: &mut [[L; D]; K]) {
        for k in 1..K {
            for a in 0..3 {
                let d = x[k][a] - x[0][a];
                let shift = (d * self.inv[a]).round_even() * self.len[a];
                let mut c = a;
                while c < D {
                    x[k][c] = x[k][c] - shift;
                    c += 3;
                }
            }
        }
    }
}

/// `|x_{K−1} − x_0|²` over the reference sites (coordinates `0..3`): the distance a pair
/// cutoff tests, the same operations for every `L`.
#[inline(always)]
pub(crate) fn r2<L: Lanes, const D: usize, const K: usize>(x: &[[L; D]; K]) -> L {
    let mut r2 = L::splat(0.0);
    for (&b, &a) in x[K - 1].iter().zip(&x[0]).take(3) {
        let d = b - a;
        r2 = r2 + d * d;
    }
    r2
}
