//! The lanes against the scalar code, on every instruction set this machine runs.

use super::*;

/// A little kernel with every kind of operation.
struct Probe<'a> {
    x: &'a [f64],
    out: &'a mut Vec<f64>,
}

impl WithLanes for Probe<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Loads>(self) {
        let w = L::WIDTH;
        let mut buf = vec![0.0; w];
        for block in self.x.chunks_exact(w) {
            let a = L::load(block);
            let b = a * a + L::splat(0.5);
            let r = (-(b.sqrt() / a) - L::splat(1.0 / 3.0)).powi(-3) + a.powi(5);
            let s = r.map(f64::exp).zip_map(a, f64::atan2);
            let s = L::select(a.lt(L::splat(0.3)), s, -s) + a.le(L::splat(0.1));
            let s = s + (a * L::splat(0.5)).round_even();
            s.store(&mut buf);
            // The compare's mask, lane by lane, added as 1000 (NaN lanes unset).
            let nan = L::select(a.lt(L::splat(-3.0)), L::splat(f64::NAN), a);
            let mask = nan.lt_mask(L::splat(0.2));
            for (l, x) in buf.iter_mut().enumerate() {
                *x += 1000.0 * f64::from((mask >> l) & 1);
            }
            self.out.extend_from_slice(&buf);
        }
    }
}

#[test]
fn every_instruction_set_gives_the_scalar_bits() {
    let x: Vec<f64> = (0..64).map(|k| 0.1 + 0.37 * k as f64 - 7.0).collect();
    let mut scalar = Vec::new();
    dispatch_with(
        Isa::Scalar,
        Probe {
            x: &x,
            out: &mut scalar,
        },
    );
    assert_eq!(scalar.len(), 64);
    let (set, unset) = (x.iter().zip(&scalar)).fold((0, 0), |(s, u), (&a, &v)| {
        let set = v > 500.0;
        // Set exactly where -3 ≤ a < 0.2 (below -3 the compared lane is NaN).
        assert_eq!(set, (-3.0..0.2).contains(&a), "a = {a}: {v}");
        (s + usize::from(set), u + usize::from(!set))
    });
    assert!(set > 0 && unset > 0, "{set} set, {unset} unset");
    for isa in Isa::available() {
        let mut out = Vec::new();
        dispatch_with(
            isa,
            Probe {
                x: &x,
                out: &mut out,
            },
        );
        let same = out
            .iter()
            .zip(&scalar)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{isa:?} differs from scalar: {out:?} vs {scalar:?}");
    }
}

/// Packs the values below 0.2 with [`Lanes::compress_store`], block by block.
struct Pack<'a> {
    x: &'a [f64],
    out: &'a mut Vec<f64>,
}

impl WithLanes for Pack<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Loads>(self) {
        let w = L::WIDTH;
        let mut packed = vec![f64::NAN; self.x.len() + 8];
        let mut m = 0;
        for block in self.x.chunks_exact(w) {
            let a = L::load(block);
            let mask = a.lt_mask(L::splat(0.2));
            a.compress_store(mask, &mut packed[m..]);
            m += mask.count_ones() as usize;
        }
        self.out.extend_from_slice(&packed[..m]);
    }
}

/// Every instruction set packs a filter's survivors in order, and nothing else.
#[test]
fn compress_store_packs_the_survivors_in_order_on_every_instruction_set() {
    let x: Vec<f64> = (0..64)
        .map(|k| ((k * 37) % 64) as f64 / 64.0 - 0.3)
        .collect();
    let expected: Vec<f64> = x.iter().copied().filter(|&a| a < 0.2).collect();
    assert!(expected.len() > 8 && expected.len() < 56);
    for isa in Isa::available() {
        let mut out = Vec::new();
        dispatch_with(
            isa,
            Pack {
                x: &x,
                out: &mut out,
            },
        );
        assert_eq!(out, expected, "{isa:?}");
    }
}

/// Gathers body `k` of each of a block's pair terms (`D = 3`) from a list.
struct Bodies<'a> {
    q: &'a [f64],
    terms: &'a [[u32; 2]],
    out: &'a mut Vec<f64>,
    /// Through [`Lanes::load_pairs3`] rather than [`Lanes::gather_bodies`].
    pairs: bool,
}

impl WithLanes for Bodies<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Loads>(self) {
        let mut buf = [0.0; 8];
        for block in self.terms.chunks_exact(L::WIDTH) {
            let both = if self.pairs {
                L::load_pairs3::<2>(self.q, block)
            } else {
                [0, 1].map(|k| L::gather_bodies::<3, 2>(self.q, block, k))
            };
            for lanes in both.into_iter().flatten() {
                lanes.store(&mut buf);
                self.out.extend_from_slice(&buf[..L::WIDTH]);
            }
        }
    }
}

/// Every instruction set reads `q[terms[l][k]·3 + d]` into lane `l` of value `d`, up to the
/// last body of `q`, by [`Lanes::gather_bodies`] and by [`Lanes::load_pairs3`] (AVX-512:
/// whole-row loads where a fourth coordinate is readable, the gathers in a block that holds
/// the last body; a first body shared by a whole block broadcast).
#[test]
fn gather_bodies_reads_each_terms_body_on_every_instruction_set() {
    let q: Vec<f64> = (0..300).map(|i| i as f64 * 0.5 - 7.0).collect();
    let mut terms: Vec<[u32; 2]> = (0..64u32)
        .map(|t| [(t * 7) % 100, (t * 13 + 99) % 100])
        .collect();
    // Two neighbour-list rows, every first body the same: an inner body's, and the last
    // body's (its row of four is not in `q`).
    terms.extend((0..16u32).map(|t| [5, (t * 11 + 2) % 100]));
    terms.extend((0..16u32).map(|t| [99, t * 3]));
    assert!(terms.iter().any(|t| t[1] == 99));
    for (isa, pairs) in Isa::available()
        .into_iter()
        .flat_map(|i| [(i, false), (i, true)])
    {
        let mut out = Vec::new();
        dispatch_with(
            isa,
            Bodies {
                q: &q,
                terms: &terms,
                out: &mut out,
                pairs,
            },
        );
        let w = isa.width();
        let mut expected = Vec::new();
        for block in terms.chunks_exact(w) {
            for k in 0..2 {
                for d in 0..3 {
                    expected.extend(block.iter().map(|t| q[t[k] as usize * 3 + d]));
                }
            }
        }
        assert_eq!(out, expected, "{isa:?}, load_pairs3 {pairs}");
    }
}

/// [`rsqrt`] against 1/√x: within 1 ulp over 40 binades and at the edges (faithful); IEEE results where the guess is not used; the same bits on every path.
#[test]
fn rsqrt_is_within_one_ulp() {
    let mut worst = 0.0_f64;
    let mut x = 1e-20_f64;
    let mut xs = Vec::new();
    while x < 1e20 {
        xs.push(x);
        x *= 1.000_731;
    }
    xs.extend([f64::MIN_POSITIVE, f64::MAX, 1.0, 4.0, 0.25, 2.0]);
    for &x in &xs {
        let y = rsqrt(x);
        // The relative error of y is −r/2 to first order, r = 1 − x y² evaluated exactly
        // enough with fused products (y² = p + p' exactly, x p = t + t' exactly).
        let p = y * y;
        let p_lo = y.mul_add(y, -p);
        let t = x * p;
        let t_lo = x.mul_add(p, -t) + x * p_lo;
        let r = (1.0 - t) - t_lo;
        let ulp = f64::from_bits(y.to_bits() + 1) - y;
        worst = worst.max((0.5 * r * y).abs() / ulp);
    }
    assert!(worst < 1.0, "rsqrt off by {worst} ulp of 1/√x");
    assert_eq!(rsqrt(0.0), f64::INFINITY);
    assert_eq!(rsqrt(-0.0), f64::NEG_INFINITY);
    assert_eq!(rsqrt(f64::INFINITY), 0.0);
    assert!(rsqrt(-1.0).is_nan() && rsqrt(f64::NAN).is_nan());
    let sub = f64::MIN_POSITIVE / 4.0;
    assert_eq!(rsqrt(sub), 1.0 / sub.sqrt());

    struct Rsqrt<'a>(&'a [f64], &'a mut Vec<u64>);
    impl WithLanes for Rsqrt<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let mut buf = [0.0; 8];
            for block in self.0.chunks_exact(L::WIDTH) {
                L::load(block).rsqrt().store(&mut buf);
                self.1.extend(buf[..L::WIDTH].iter().map(|y| y.to_bits()));
            }
        }
    }
    // Mixed blocks: a special value among normal ones must not change its neighbours.
    let mut mixed: Vec<f64> = xs.iter().step_by(97).copied().take(56).collect();
    mixed.extend([0.0, -1.0, f64::INFINITY, f64::NAN, sub, 3.0, -0.0, 7.5]);
    mixed.truncate(64);
    let scalar: Vec<u64> = mixed.iter().map(|&x| rsqrt(x).to_bits()).collect();
    for isa in Isa::available() {
        let mut bits = Vec::new();
        dispatch_with(isa, Rsqrt(&mixed, &mut bits));
        assert_eq!(bits, scalar, "{isa:?}");
    }
}

/// [`root`] against the correctly rounded `f64::sqrt`: within 2 ulp (1.5 of the exact root)
/// over 40 binades, IEEE results where `rsqrt`'s guess is not used, and the same bits on every
/// path, special values mixed among normal ones.
#[test]
fn root_is_within_two_ulp_of_the_square_root() {
    let mut xs = Vec::new();
    let mut x = 1e-20_f64;
    while x < 1e20 {
        xs.push(x);
        x *= 1.000_731;
    }
    xs.extend([f64::MIN_POSITIVE, f64::MAX, 1.0, 4.0, 0.25, 2.0]);
    let ulps = |a: f64, b: f64| a.to_bits().abs_diff(b.to_bits());
    let worst = xs.iter().map(|&x| ulps(root(x), x.sqrt())).max();
    assert!(worst <= Some(2), "root off by {worst:?} ulp");
    let sub = f64::MIN_POSITIVE / 4.0;
    for x in [0.0, -0.0, f64::INFINITY, sub] {
        assert_eq!(root(x).to_bits(), x.sqrt().to_bits(), "root({x:e})");
    }
    assert!(root(-1.0).is_nan() && root(f64::NAN).is_nan());

    struct Root<'a>(&'a [f64], &'a mut Vec<u64>);
    impl WithLanes for Root<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let mut buf = [0.0; 8];
            for block in self.0.chunks_exact(L::WIDTH) {
                root(L::load(block)).store(&mut buf);
                self.1.extend(buf[..L::WIDTH].iter().map(|y| y.to_bits()));
            }
        }
    }
    let mut mixed: Vec<f64> = xs.iter().step_by(97).copied().take(56).collect();
    mixed.extend([0.0, -1.0, f64::INFINITY, f64::NAN, sub, 3.0, -0.0, 7.5]);
    mixed.truncate(64);
    let scalar: Vec<u64> = mixed.iter().map(|&x| root(x).to_bits()).collect();
    for isa in Isa::available() {
        let mut bits = Vec::new();
        dispatch_with(isa, Root(&mixed, &mut bits));
        assert_eq!(bits, scalar, "{isa:?}");
    }
}

/// [`Lanes::gather_rows`] reads each lane's row of a table on every instruction set, and a
/// row outside the table (or NaN) is a panic, not a read beyond it.
#[test]
fn gather_rows_reads_each_lanes_row_on_every_instruction_set() {
    struct Rows<'a>(&'a [f64], &'a [f64], &'a mut Vec<f64>);
    impl WithLanes for Rows<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let mut buf = [0.0; 8];
            for block in self.1.chunks_exact(L::WIDTH) {
                for v in L::gather_rows::<3>(self.0, L::load(block)) {
                    v.store(&mut buf);
                    self.2.extend_from_slice(&buf[..L::WIDTH]);
                }
            }
        }
    }
    let table: Vec<f64> = (0..30).map(|k| k as f64 * 1.5 - 7.0).collect();
    let rows: Vec<f64> = (0..64).map(|k| ((k * 7) % 10) as f64).collect();
    for isa in Isa::available() {
        let (w, mut got) = (isa.width(), Vec::new());
        dispatch_with(isa, Rows(&table, &rows, &mut got));
        let mut expect = Vec::new();
        for block in rows.chunks_exact(w) {
            for d in 0..3 {
                expect.extend(block.iter().map(|&r| table[r as usize * 3 + d]));
            }
        }
        assert_eq!(got, expect, "{isa:?}");
        for bad in [10.0, -1.0, f64::NAN] {
            let mut rows = [0.0; 8];
            rows[w - 1] = bad;
            let caught = std::panic::catch_unwind(|| {
                dispatch_with(isa, Rows(&table, &rows[..w], &mut Vec::new()));
            });
            assert!(caught.is_err(), "row {bad} on {isa:?}");
        }
    }
}

/// `pick16` gives each integral lane its entry of the table on every instruction set (the
/// AVX-512 permute and the AVX2 gather as the scalar index), and other lanes — fractions,
/// NaN, out of range — some value, without a panic or a read outside the table.
#[test]
fn pick16_gives_each_lane_its_entry_on_every_instruction_set() {
    struct Pick<'a>(&'a [f64; 16], &'a [f64], &'a mut Vec<f64>);
    impl WithLanes for Pick<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let mut buf = [0.0; 8];
            for block in self.1.chunks_exact(L::WIDTH) {
                L::pick16(self.0, L::load(block)).store(&mut buf);
                self.2.extend_from_slice(&buf[..L::WIDTH]);
            }
        }
    }
    let table: [f64; 16] = core::array::from_fn(|k| k as f64 * 1.25 - 3.0);
    let at: Vec<f64> = (0..64).map(|k| ((k * 7) % 16) as f64).collect();
    let odd = [0.5, 15.7, 16.0, -1.0, 1e300, f64::NAN, f64::INFINITY, -0.0];
    for isa in Isa::available() {
        let mut got = Vec::new();
        dispatch_with(isa, Pick(&table, &at, &mut got));
        let expect: Vec<f64> = at.iter().map(|&k| table[k as usize]).collect();
        assert_eq!(got, expect, "{isa:?}");
        let mut got = Vec::new();
        dispatch_with(isa, Pick(&table, &odd, &mut got));
        assert_eq!(got.len(), 8, "{isa:?}");
        assert_eq!(got[7], table[0], "-0 is row 0 on {isa:?}");
    }
}

#[test]
fn powi_matches_repeated_multiplication() {
    for n in -7i32..=7 {
        let x = 1.1_f64;
        let direct = (0..n.unsigned_abs()).fold(1.0, |p, _| p * x);
        let expect = if n < 0 { 1.0 / direct } else { direct };
        assert!((Lanes::powi(x, n) - expect).abs() <= 4.0 * f64::EPSILON * expect.abs());
    }
    assert_eq!(Lanes::powi(3.0_f64, 0), 1.0);
}

#[test]
fn negation_flips_the_sign_bit_on_every_path() {
    struct Neg0<'a>(&'a mut Vec<u64>);
    impl WithLanes for Neg0<'_> {
        type Output = ();
        #[inline(always)]
        fn run<L: Loads>(self) {
            let mut buf = [0.0; 8];
            (-L::splat(0.0)).store(&mut buf);
            self.0.push(buf[0].to_bits());
        }
    }
    for isa in Isa::available() {
        let mut bits = Vec::new();
        dispatch_with(isa, Neg0(&mut bits));
        assert_eq!(bits, [(-0.0_f64).to_bits()], "{isa:?}");
    }
}

/// [`widest`] runs plain loops vectorized for the widest instruction set and keeps their bits:
/// a kick and a drift (elementwise IEEE operations, a division among them), the finiteness and
/// the fingerprint of the result (exact reductions), and a largest square distance, against
/// the same loops compiled for the target's baseline — over values with signed zeros,
/// subnormals, infinities and NaNs, and lengths that leave every remainder of 8 lanes.
#[test]
fn widest_keeps_the_bits_of_the_baseline_loops() {
    let special = [
        0.0,
        -0.0,
        1e-310,
        -1e-310,
        f64::INFINITY,
        f64::NAN,
        1.0,
        -3.5,
    ];
    #[inline(always)]
    fn pass(q: &[f64], v: &[f64], m: &[f64], x: &mut [f64]) -> (bool, u64, f64) {
        let (mut finite, mut key, mut most) = (true, 0u64, 0.0_f64);
        for (i, (((x, q), v), m)) in x.iter_mut().zip(q).zip(v).zip(m).enumerate() {
            let a = -*v / m;
            *x = q + 0.012 * (v + 0.006 * a);
            finite &= x.is_finite();
            key = key.wrapping_add(crate::vector::fingerprint_term(i, *x));
            most = most.max((*x - q) * (*x - q));
        }
        (finite, key, most)
    }
    for n in [0, 1, 7, 8, 9, 61, 1000] {
        let value = |i: usize, s: usize| -> f64 {
            if (i * 7 + s).is_multiple_of(13) {
                special[(i + s) % special.len()]
            } else {
                ((i * 31 + s * 17) as f64 * 0.37).sin() * 10f64.powi((i % 9) as i32 - 4)
            }
        };
        let q: Vec<f64> = (0..n).map(|i| value(i, 1)).collect();
        let v: Vec<f64> = (0..n).map(|i| value(i, 2)).collect();
        let m: Vec<f64> = (0..n).map(|i| 0.5 + (i % 5) as f64).collect();
        let (mut plain, mut wide) = (vec![0.0; n], vec![0.0; n]);
        let a = pass(&q, &v, &m, &mut plain);
        let b = widest(
            #[inline(always)]
            || pass(&q, &v, &m, &mut wide),
        );
        assert_eq!(
            (a.0, a.1, a.2.to_bits()),
            (b.0, b.1, b.2.to_bits()),
            "n = {n}"
        );
        let bits = |x: &[f64]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&plain), bits(&wide), "n = {n}");
        assert_eq!(crate::vector::fingerprint(&wide), {
            let sum = (0..n).fold(0u64, |h, i| {
                h.wrapping_add(crate::vector::fingerprint_term(i, wide[i]))
            });
            crate::vector::fingerprint_of_sum(sum, n)
        });
    }
}
