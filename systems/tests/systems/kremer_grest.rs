//! The Kremer–Grest melt: the generated, assembled FENE and cut-and-shifted LJ terms in a
//! periodic box against a hand-written nearest-image double loop (energy and gradient, at
//! random configurations spread over several images, with and without the FENE repulsion and
//! pairs on both sides of the cutoff); data files that cannot be this melt; and the command
//! line: `zs eval`/`zs run kremer-grest --data`, `--write-data` read back, and the refusals.

use std::process::Command;

use zs_runtime::lammps::DataFile;
use zs_runtime::Model;
use zs_systems::kremer_grest::{KremerGrest, MeltError, TWO_1_3};

const ZS: &str = env!("CARGO_BIN_EXE_zs");
const CHAINS: usize = 10;
const BEADS: usize = 12;
const SIDE: f64 = 6.5;

/// Uniform in [0, 1) (xorshift: reproducible).
fn uniform(s: &mut u64) -> f64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    (*s >> 11) as f64 / (1u64 << 53) as f64
}

/// A data file of random-walk chains (bonds 0.85–1.25 long, beads at least 0.8 apart) in
/// several images of the box, with image flags.
fn melt_text(seed: u64) -> String {
    numbered_melt_text(seed, &(0..CHAINS * BEADS).collect::<Vec<_>>())
}

/// [`melt_text`] with bead `i` given atom ID `id[i] + 1` (the file's numbering; its lines in
/// the walk's order).
fn numbered_melt_text(seed: u64, id: &[usize]) -> String {
    let mut s = seed;
    let mut pos: Vec<[f64; 3]> = Vec::new();
    while pos.len() < CHAINS * BEADS {
        let k = pos.len();
        let p: [f64; 3] = if k.is_multiple_of(BEADS) {
            core::array::from_fn(|_| SIDE * (3.0 * uniform(&mut s) - 1.0))
        } else {
            let u: [f64; 3] = core::array::from_fn(|_| uniform(&mut s) - 0.5);
            let r = 0.85 + 0.4 * uniform(&mut s);
            let norm = (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
            core::array::from_fn(|a| pos[k - 1][a] + r * u[a] / norm)
        };
        let clear = pos.iter().all(|q| apart(&p, q));
        if clear {
            pos.push(p);
        } else if !k.is_multiple_of(BEADS) {
            pos.truncate(k - k % BEADS);
        }
    }
    let mut t = format!(
        "random melt\n\n{} atoms\n{} bonds\n\n1 atom types\n1 bond types\n\n",
        CHAINS * BEADS,
        CHAINS * (BEADS - 1)
    );
    for axis in ["x", "y", "z"] {
        t += &format!("0.0 {SIDE} {axis}lo {axis}hi\n");
    }
    t += "\nMasses\n\n1 1.0\n\nAtoms\n\n";
    for (i, p) in pos.iter().enumerate() {
        let image = p.map(|x| (x / SIDE).floor());
        let w: Vec<f64> = (0..3).map(|a| p[a] - image[a] * SIDE).collect();
        t += &format!(
            "{} {} 1 {:?} {:?} {:?} {} {} {}\n",
            id[i] + 1,
            i / BEADS + 1,
            w[0],
            w[1],
            w[2],
            image[0],
            image[1],
            image[2]
        );
    }
    t += "\nBonds\n\n";
    let mut b = 0;
    for c in 0..CHAINS {
        for k in 1..BEADS {
            b += 1;
            let (i, j) = (c * BEADS + k - 1, c * BEADS + k);
            t += &format!("{b} 1 {} {}\n", id[i] + 1, id[j] + 1);
        }
    }
    t
}

/// The melt of [`melt_text`]`(seed)`: the assembled system, its positions, its bonds.
fn random_melt(
    seed: u64,
) -> (
    zs_runtime::assembly::Assembled<KremerGrest, 3>,
    Vec<f64>,
    Vec<(usize, usize)>,
) {
    let data = DataFile::parse(&melt_text(seed)).expect("a valid data file");
    let (sys, q, _) = KremerGrest::lammps_chain()
        .from_data(&data)
        .expect("a melt");
    let bonded = data
        .bonds
        .iter()
        .map(|b| (b.atoms[0], b.atoms[1]))
        .collect();
    (sys, q, bonded)
}

/// Beads `p` and `q` of [`numbered_melt_text`]'s walk are more than 0.8 apart (nearest
/// images). Most of the time of the tests that build a melt is here (many walks fail and start
/// again), in a test crate at opt-level 1: written without closures or iterators, which it
/// does not inline, and without a call to `round` (a library call on the baseline x86-64) —
/// the same squares, so the same melts.
#[inline(always)]
fn apart(p: &[f64; 3], q: &[f64; 3]) -> bool {
    /// `d − round(d / L)·L`: `t + 1.5·2⁵² − 1.5·2⁵²` rounds `t` (|t| < 2⁵¹) to the nearest
    /// integer, ties to even; `round` takes ties away from zero.
    #[inline(always)]
    fn near(d: f64) -> f64 {
        const M: f64 = 6_755_399_441_055_744.0;
        let t = d / SIDE;
        let mut round = (t + M) - M;
        if (t - round).abs() == 0.5 {
            round = t + 0.5f64.copysign(t);
        }
        d - round * SIDE
    }
    let (x, y, z) = (near(p[0] - q[0]), near(p[1] - q[1]), near(p[2] - q[2]));
    x * x + y * y + z * z > 0.64
}

/// Energy and gradient of the melt by the direct loop over nearest images, derivatives by hand.
fn direct(q: &[f64], bonded: &[(usize, usize)]) -> (f64, Vec<f64>) {
    let (e, g, _) = direct_terms(q, bonded, true);
    (e, g)
}

/// [`direct`], of the FENE bonds alone when `pairs` is false, and the virial
/// `W = Σ r_ij · f_ij` over the terms (nearest-image separations, pair forces by hand).
fn direct_terms(q: &[f64], bonded: &[(usize, usize)], pairs: bool) -> (f64, Vec<f64>, f64) {
    let m = KremerGrest::lammps_chain();
    let n = q.len() / 3;
    let (mut e, mut g) = (0.0, vec![0.0; q.len()]);
    let d = |i: usize, j: usize| -> [f64; 3] {
        core::array::from_fn(|a| {
            let d = q[3 * j + a] - q[3 * i + a];
            d - (d / SIDE).round() * SIDE
        })
    };
    let mut w = 0.0;
    let mut add = |i: usize, j: usize, v: [f64; 3], de_dr2: f64| {
        // f_ij · r_ij = −dE/dr · r = −2 r² dE/d(r²).
        w -= 2.0 * de_dr2 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for a in 0..3 {
            g[3 * j + a] += 2.0 * de_dr2 * v[a];
            g[3 * i + a] -= 2.0 * de_dr2 * v[a];
        }
    };
    let r02 = m.r0 * m.r0;
    for &(i, j) in bonded {
        let v = d(i, j);
        let r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        e += -0.5 * m.k * r02 * (1.0 - r2 / r02).ln();
        let mut de = 0.5 * m.k / (1.0 - r2 / r02);
        if r2 < TWO_1_3 {
            let s6 = 1.0 / (r2 * r2 * r2);
            e += 4.0 * (s6 * s6 - s6) + 1.0;
            de += 4.0 * (-6.0 * s6 * s6 + 3.0 * s6) / r2;
        }
        add(i, j, v, de);
    }
    for i in 0..n * usize::from(pairs) {
        for j in i + 1..n {
            if bonded.contains(&(i, j)) {
                continue;
            }
            let v = d(i, j);
            let r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
            if r2 < m.rc * m.rc {
                let s6 = 1.0 / (r2 * r2 * r2);
                e += 4.0 * (s6 * s6 - s6) - m.shift;
                add(i, j, v, 4.0 * (-6.0 * s6 * s6 + 3.0 * s6) / r2);
            }
        }
    }
    (e, g, w)
}

/// Z&Ss-stiff's split (Tao & Owhadi eq. 19): the stiff Hessian is that of the FENE bonds alone
/// (logarithmic spring and WCA repulsion), against central differences of the hand-written
/// bond gradient; the pair terms stay out of it, and the total gradient is unchanged.
#[test]
fn the_stiff_hessian_is_the_fene_bonds_hessian() {
    use zs_runtime::{HessianPart, StiffModel};
    for seed in [5, 23] {
        let (sys, q, bonded) = random_melt(seed);
        let mut h = sys.new_matrix(HessianPart::Stiff);
        let mut g = vec![0.0; q.len()];
        sys.gradient_stiff_hessian_into(&q, &mut g, &mut h);
        let (_, total) = direct(&q, &bonded);
        let scale = total.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        for (a, b) in g.iter().zip(&total) {
            assert!((a - b).abs() <= 1e-12 * scale, "seed {seed}: {a} vs {b}");
        }
        let dense = h.to_dense();
        let step = 1e-6;
        let mut largest = 0.0_f64;
        let mut worst = 0.0_f64;
        for c in 0..q.len() {
            let (mut up, mut down) = (q.clone(), q.clone());
            up[c] += step;
            down[c] -= step;
            let (gu, gd) = (
                direct_terms(&up, &bonded, false).1,
                direct_terms(&down, &bonded, false).1,
            );
            for r in 0..q.len() {
                let fd = (gu[r] - gd[r]) / (2.0 * step);
                largest = largest.max(fd.abs());
                worst = worst.max((dense[r][c] - fd).abs());
            }
        }
        assert!(
            largest > 100.0,
            "seed {seed}: the bonds are stiff ({largest})"
        );
        assert!(worst <= 1e-6 * largest, "seed {seed}: {worst} of {largest}");
    }
}

/// `zs reproduce kremer-grest`'s measurements on a small melt: both methods run, every
/// observable is sampled and plausible (bond lengths between the FENE pieces' scales, the
/// kinetic temperature near kT), and the files are written.
#[cfg(feature = "experiments")]
#[test]
fn the_step_experiment_measures_structure_and_time() {
    use zs_systems::experiments::kremer_grest::{self, Config, Method};
    let dir = std::env::temp_dir().join(format!("zs-kg-experiment-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("melt.data");
    std::fs::write(&path, melt_text(11)).expect("write");
    let cfg = Config::quick(path.clone());
    let out = kremer_grest::run(&cfg).expect("runs");
    // The virial pressure by box scaling against the hand-written virial (the file has no
    // velocities: P = W / 3V).
    let data = DataFile::read(&path).expect("the data file");
    let (_, q, _) = KremerGrest::lammps_chain()
        .from_data(&data)
        .expect("a melt");
    let bonded: Vec<(usize, usize)> = data
        .bonds
        .iter()
        .map(|b| (b.atoms[0], b.atoms[1]))
        .collect();
    let (_, _, w) = direct_terms(&q, &bonded, true);
    let pressure = w / (3.0 * SIDE.powi(3));
    assert!(w.abs() > 1.0, "a virial to compare ({w})");
    assert!(
        (out.start.0 - pressure).abs() <= 1e-7 * pressure.abs(),
        "{} vs {pressure}",
        out.start.0
    );
    assert_eq!(out.start.1, 0.0);
    assert_eq!(out.beads, CHAINS * BEADS);
    assert_eq!(out.runs.len(), 2);
    assert_eq!(out.runs[1].method, Method::ZssStiff);
    for r in &out.runs {
        assert_eq!(r.failure, None);
        let samples = r.series[0].len();
        assert_eq!(samples, 8, "{r:?}");
        let (b, _) = r.estimate(0, cfg.blocks).expect("an estimate");
        assert!((0.85..1.3).contains(&b), "mean bond {b}");
        let (t, _) = r
            .estimate(cfg.observables().len() - 1, cfg.blocks)
            .expect("T");
        assert!((0.3..3.0).contains(&t), "kinetic temperature {t}");
        let norm: f64 = r.density.iter().sum::<f64>() * cfg.bins.2;
        assert!((norm - 1.0).abs() < 1e-9 || norm < 1.0, "density {norm}");
    }
    let report = kremer_grest::write(&cfg, &out, &dir).expect("written");
    for f in &report.files {
        assert!(f.exists(), "{}", f.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_assembled_melt_equals_the_nearest_image_double_loop() {
    for seed in [3, 17, 91] {
        let (sys, q, bonded) = random_melt(seed);
        let (e, gd) = direct(&q, &bonded);
        let mut g = vec![0.0; q.len()];
        let v = sys.value_gradient_into(&q, &mut g);
        let scale = gd.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        assert!((v - e).abs() <= 1e-12 * e.abs(), "seed {seed}: {v} vs {e}");
        for (a, b) in g.iter().zip(&gd) {
            assert!((a - b).abs() <= 1e-12 * scale, "seed {seed}: {a} vs {b}");
        }
        // Both FENE pieces and both sides of the cutoff occur.
        let lengths: Vec<f64> = bonded
            .iter()
            .map(|&(i, j)| {
                (0..3)
                    .map(|a| {
                        let d = q[3 * j + a] - q[3 * i + a];
                        (d - (d / SIDE).round() * SIDE).powi(2)
                    })
                    .sum::<f64>()
            })
            .collect();
        assert!(lengths.iter().any(|&r2| r2 < TWO_1_3) && lengths.iter().any(|&r2| r2 > TWO_1_3));
    }
}

#[test]
fn data_files_that_are_not_this_melt_are_refused() {
    let text = melt_text(5);
    let heavy = DataFile::parse(&text.replace("\n1 1.0\n", "\n1 2.0\n")).expect("parses");
    assert!(matches!(
        KremerGrest::lammps_chain().from_data(&heavy),
        Err(MeltError::Mass { kind: 1, .. })
    ));
    let mut stretched = DataFile::parse(&text).expect("parses");
    stretched.positions[1][0] += 2.0;
    let e = KremerGrest::lammps_chain()
        .from_data(&stretched)
        .expect_err("refused");
    assert!(matches!(e, MeltError::Stretched { bond: 1, .. }), "{e}");
    assert!(e.to_string().contains("≥ R0 = 1.5"), "{e}");
    let small =
        DataFile::parse(&text.replace("0.0 6.5 zlo zhi", "0.0 2.5 zlo zhi")).expect("parses");
    let e = KremerGrest::lammps_chain()
        .from_data(&small)
        .expect_err("refused");
    assert!(
        e.to_string().contains("more than half the periodic box"),
        "{e}"
    );
}

fn temp(name: &str) -> crate::scratch::TempDir {
    crate::scratch::TempDir::new("kg", name)
}

#[test]
fn zs_run_and_eval_read_data_files_and_write_them_back() {
    let d = temp("cli");
    let data = d.join("melt.data");
    std::fs::write(&data, melt_text(7)).expect("write");
    let run = |args: &[&str]| {
        Command::new(ZS)
            .args(args)
            .current_dir(&d)
            .output()
            .expect("zs")
    };
    let out = run(&[
        "eval",
        "kremer-grest",
        "--data",
        "melt.data",
        "--out",
        "eval.csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(d.join("eval.csv")).expect("eval.csv");
    let row: Vec<f64> = text
        .lines()
        .nth(1)
        .expect("a row")
        .split(',')
        .map(|x| x.parse().expect("a number"))
        .collect();
    let parsed = DataFile::parse(&melt_text(7)).expect("parses");
    let (sys, q, _) = KremerGrest::lammps_chain()
        .from_data(&parsed)
        .expect("a melt");
    assert_eq!(row.len(), 1 + q.len());
    assert_eq!(row[0], sys.potential_at(&q));
    let out = run(&[
        "run",
        "kremer-grest",
        "--data",
        "melt.data",
        "--integrator",
        "verlet",
        "--h",
        "0.005",
        "--t-end",
        "0.1",
        "--gamma",
        "1",
        "--kt",
        "1",
        "--quiet",
        "--out",
        "run.csv",
        "--write-data",
        "end.data",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = DataFile::read(&d.join("end.data")).expect("--write-data reads back");
    assert_eq!(end.bonds, parsed.bonds);
    assert!(end.has_velocities);
    let csv = std::fs::read_to_string(d.join("run.csv")).expect("run.csv");
    assert_eq!(csv.lines().count(), 3, "header, first and last state");
    let last: Vec<f64> = csv
        .lines()
        .last()
        .expect("a row")
        .split(',')
        .skip(1)
        .map(|x| x.parse().expect("a number"))
        .collect();
    for i in 0..end.len() {
        for a in 0..3 {
            let (x, y) = (end.positions[i][a], last[3 * i + a]);
            assert!((x - y).abs() <= 1e-12 * SIDE, "bead {i}: {x} vs {y}");
        }
    }
    // Continued from the CSV's last row (`--init`: its header names the melt's coordinates,
    // `x1, y1, z1, …`, which the run counts rather than lists): the new file starts with it.
    let out = run(&[
        "run",
        "kremer-grest",
        "--data",
        "melt.data",
        "--integrator",
        "verlet",
        "--h",
        "0.005",
        "--t-end",
        "0.12",
        "--init",
        "run.csv",
        "--out",
        "more.csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let more = std::fs::read_to_string(d.join("more.csv")).expect("more.csv");
    assert_eq!(more.lines().next(), csv.lines().next(), "the same header");
    assert!(csv.lines().next().is_some_and(|h| h.ends_with(",energy")));
    // The start is the last row: its time, positions and velocities to the bit. Each run
    // holds its state in the cell order made from its own start, so the energy, summed in
    // that order, is the first run's to rounding.
    let (start, last) = (
        more.lines().nth(1).expect("a first row"),
        csv.lines().last().expect("a last row"),
    );
    let (start, last) = (
        start.rsplit_once(',').expect("fields"),
        last.rsplit_once(',').expect("fields"),
    );
    assert_eq!(start.0, last.0, "the start is the last row");
    let (e0, e1): (f64, f64) = (start.1.parse().unwrap(), last.1.parse().unwrap());
    assert!(
        (e0 - e1).abs() <= 1e-12 * e1.abs(),
        "energies {e0} and {e1}"
    );
    // Z&Ss-stiff with the FENE bonds in its solve: one banded solve per step.
    let out = run(&[
        "run",
        "kremer-grest",
        "--data",
        "melt.data",
        "--integrator",
        "zss-stiff",
        "--h",
        "0.005",
        "--t-end",
        "0.05",
        "--gamma",
        "1",
        "--kt",
        "1",
        "--out",
        "stiff.csv",
    ]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let solves: u64 = said
        .lines()
        .find(|l| l.contains("linear solves"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no solve count: {said}"));
    assert!(solves >= 10, "a solve per step at least: {said}");
    // A step far too long: a bead crosses more than the skin (0.4) in one step → the run stops
    // at once, naming the skin, and the CSV is marked incomplete.
    let out = run(&[
        "run",
        "kremer-grest",
        "--data",
        "melt.data",
        "--h",
        "0.5",
        "--t-end",
        "5",
        "--quiet",
        "--out",
        "fast.csv",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.lines().count() == 1 && err.contains("neighbour-list skin"),
        "{err}"
    );
    assert!(d.join("fast.csv.incomplete").exists());
    // Full Z&S: the Hessian's pattern follows the neighbour list.
    let out = run(&[
        "run",
        "kremer-grest",
        "--data",
        "melt.data",
        "--integrator",
        "zs",
        "--h",
        "0.002",
        "--t-end",
        "0.02",
        "--out",
        "zs.csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Refusals: no --data, --data on another system, a missing file.
    for (args, needle) in [
        (
            &["run", "kremer-grest"][..],
            "kremer-grest needs --data FILE",
        ),
        (
            &["run", "water", "--data", "melt.data"][..],
            "--data applies to kremer-grest",
        ),
        (
            &["run", "kremer-grest", "--data", "nothing.data"][..],
            "nothing.data:0: cannot read",
        ),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.lines().count() == 1 && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The rows of a `zs nma` CSV: eigenvalue, frequency, kind.
fn nma_rows(path: &std::path::Path) -> Vec<(f64, f64, String)> {
    let text = std::fs::read_to_string(path).expect("the modes");
    text.lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (
                c[1].parse().expect("eigenvalue"),
                c[2].parse().expect("frequency"),
                c[3].to_string(),
            )
        })
        .collect()
}

/// `zs nma kremer-grest --data` at the file's state (not a minimum: the melt's purely repulsive
/// pairs have none with the chains in contact): the three translations of the periodic box are
/// its zero modes and nothing else is rigid; the shift-invert Lanczos's lowest modes, shifted
/// below the most negative curvature, are the dense solver's; the animation carries the box.
#[test]
fn zs_nma_of_a_melt_finds_the_translations_and_agrees_with_lanczos() {
    let d = temp("nma");
    std::fs::write(d.join("melt.data"), melt_text(7)).expect("write");
    let run = |args: &[&str]| {
        let out = Command::new(ZS)
            .args(args)
            .current_dir(&d)
            .output()
            .expect("zs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let base = ["nma", "kremer-grest", "--data", "melt.data"];
    let said = run(&[&base[..], &["--out", "dense.csv", "--modes", "m.xyz"]].concat());
    assert!(
        said.contains("3 translation, 0 rotation, 0 mixed"),
        "{said}"
    );
    let dense = nma_rows(&d.join("dense.csv"));
    assert_eq!(dense.len(), 3 * CHAINS * BEADS);
    let scale = dense.iter().fold(0.0_f64, |m, x| m.max(x.0.abs()));
    let zero: Vec<_> = dense.iter().filter(|m| m.0.abs() < 1e-9 * scale).collect();
    assert_eq!(zero.len(), 3, "{zero:?}");
    assert!(zero.iter().all(|m| m.2 == "translation"), "{zero:?}");
    let shift = format!("{}", 1.1 * dense[0].0);
    run(&[
        &base[..],
        &["--lowest", "8", "--shift", &shift, "--out", "lowest.csv"],
    ]
    .concat());
    let lowest = nma_rows(&d.join("lowest.csv"));
    assert_eq!(lowest.len(), 8);
    for (a, b) in lowest.iter().zip(&dense) {
        assert!((a.0 - b.0).abs() <= 1e-9 * scale, "{} vs {}", a.0, b.0);
    }
    let xyz = std::fs::read_to_string(d.join("m.xyz")).expect("the animation");
    let header = xyz.lines().nth(1).expect("a comment line");
    assert!(
        header.starts_with(&format!("Lattice=\"{SIDE} 0 0 0 {SIDE} 0 0 0 {SIDE}\""))
            && header.ends_with("pbc=\"T T T\""),
        "{header}"
    );
}

/// A melt whose atom IDs are in random order: `zs run` holds it in spatial order inside (in
/// the evaluation, or the run's state itself) and says so; nothing outside sees it — the CSV's
/// first row is the file's configuration in atom-ID order, exactly, and the run follows the
/// same file run in its own order (`ZS_BODY_ORDER=given`) to rounding; 1 and 2 threads write
/// the same bytes; a run rebuilt from its checkpoint ends with the uninterrupted run's bytes; `zs eval` gives the file's
/// order's energy and gradient to rounding.
#[test]
fn a_melt_numbered_at_random_runs_in_spatial_order_unseen_and_resumes_byte_for_byte() {
    let d = temp("shuffled");
    let n = CHAINS * BEADS;
    let mut s = 0x5EED_u64;
    let mut id: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        id.swap(k, (uniform(&mut s) * (k + 1) as f64) as usize);
    }
    std::fs::write(d.join("melt.data"), numbered_melt_text(7, &id)).expect("write");
    let run = |args: &[&str], order: &str| {
        Command::new(ZS)
            .args(args)
            .env("ZS_BODY_ORDER", order)
            .current_dir(&d)
            .output()
            .expect("zs")
    };
    let base = |out: &'static str, threads: &'static str| {
        vec![
            "run",
            "kremer-grest",
            "--data",
            "melt.data",
            "--h",
            "0.005",
            "--t-end",
            "0.5",
            "--gamma",
            "1",
            "--kt",
            "1",
            "--seed",
            "3",
            "--every",
            "5",
            "--threads",
            threads,
            "--out",
            out,
        ]
    };
    let ok = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    // The run's state held in spatial order (`cells`, as by default: nothing permuted per
    // step), on 1 and 2 threads, and resumed.
    let mut checkpointed = base("a.csv", "1");
    checkpointed.extend(["--checkpoint", "a.ck", "--checkpoint-every", "40"]);
    let said = ok(&run(&checkpointed, "cells"));
    assert!(said.contains("state held in spatial order"), "{said}");
    let reference = std::fs::read(d.join("a.csv")).expect("a.csv");
    ok(&run(&base("b.csv", "2"), "cells"));
    assert_eq!(std::fs::read(d.join("b.csv")).expect("b.csv"), reference);
    // Interrupted after the checkpoint at step 80, then resumed.
    let xyz = std::fs::read(d.join("a.xyz")).expect("a.xyz");
    for f in ["a.csv", "a.xyz"] {
        std::fs::rename(d.join(f), d.join(format!("{f}.tmp"))).expect("rename");
    }
    let mut resumed = checkpointed.clone();
    resumed.extend(["--resume", "a.ck"]);
    let said = ok(&run(&resumed, "cells"));
    assert!(said.contains("resumed at step"), "{said}");
    assert_eq!(std::fs::read(d.join("a.csv")).expect("a.csv"), reference);
    assert_eq!(std::fs::read(d.join("a.xyz")).expect("a.xyz"), xyz);
    // Spatial order inside the evaluation only (`auto`: every evaluation permutes), the
    // state in the file's order.
    let said = ok(&run(&base("c.csv", "2"), "auto"));
    assert!(
        said.contains("spatial order") && !said.contains("state held"),
        "{said}"
    );
    // The file's own order: the same start, the same run to rounding.
    let said = ok(&run(&base("g.csv", "1"), "given"));
    assert!(!said.contains("spatial order"), "{said}");
    let rows = |f: &str| -> Vec<Vec<f64>> {
        let text = std::fs::read_to_string(d.join(f)).expect("csv");
        text.lines()
            .skip(1)
            .map(|l| l.split(',').map(|x| x.parse().expect("a number")).collect())
            .collect()
    };
    let (a, g) = (rows("c.csv"), rows("g.csv"));
    assert_eq!(a.len(), g.len());
    // The state's columns (t, q, v) exactly; the energy's last bits are the sum's order.
    assert!(
        a[0][..1 + 6 * n] == g[0][..1 + 6 * n],
        "the start, in the file's order"
    );
    // Held, the run's Langevin noise goes to the atoms in the order the state is held in: a
    // realization of its own from the same start (as LAMMPS's per-atom noise follows its
    // atoms' order), written in the file's order.
    let held = rows("b.csv");
    assert_eq!(held.len(), g.len());
    assert!(held[0][..1 + 6 * n] == g[0][..1 + 6 * n], "the held start");
    let parsed = DataFile::parse(&numbered_melt_text(7, &id)).expect("parses");
    for (k, p) in parsed.positions.iter().enumerate() {
        for c in 0..3 {
            assert_eq!(a[0][1 + 3 * k + c], p[c], "bead {k}");
        }
    }
    for (ra, rg) in a.iter().zip(&g) {
        for (x, y) in ra.iter().zip(rg) {
            assert!((x - y).abs() <= 1e-8 * y.abs().max(1.0), "{x} vs {y}");
        }
    }
    // zs eval in either order.
    let eval = |order: &str| -> Vec<f64> {
        ok(&run(
            &[
                "eval",
                "kremer-grest",
                "--data",
                "melt.data",
                "--out",
                "e.csv",
            ],
            order,
        ));
        rows("e.csv").remove(0)
    };
    let (ea, eg) = (eval("auto"), eval("given"));
    let scale = eg.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
    for (x, y) in ea.iter().zip(&eg) {
        assert!((x - y).abs() <= 1e-12 * scale, "{x} vs {y}");
    }
}
