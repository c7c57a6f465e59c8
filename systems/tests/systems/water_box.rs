//! SPC/E water in a periodic box: the assembled short-range part (real-space Coulomb, O–O
//! Lennard-Jones, bonds and angles with the excluded pairs' corrections) against the same
//! terms written as a nearest-image double loop; the whole potential's gradient against
//! central differences at random displacements; data files that are not SPC/E water and bad
//! Ewald parameters refused with one line; and `zs eval water-box` / `zs run water-box`.

use std::process::Command;

use zs_runtime::lammps::DataFile;
use zs_runtime::special::{erf, erfc};
use zs_runtime::Model;
use zs_systems::water_box::{
    r_hh, Kspace, SpcE, Water, WaterBox, WaterBoxError, WaterBoxOptions, COULOMB,
};

const ZS: &str = env!("CARGO_BIN_EXE_zs");
/// 4 × 4 × 4 molecules on a lattice 3.1 Å apart (about water's density), box 12.4 Å.
pub(crate) const PER_SIDE: usize = 4;
pub(crate) const SPACING: f64 = 3.1;
pub(crate) const RC: f64 = 4.0;

/// Uniform in [-1, 1) (xorshift: reproducible).
fn uniform(s: &mut u64) -> f64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    2.0 * ((*s >> 11) as f64 / (1u64 << 53) as f64) - 1.0
}

/// A LAMMPS data file (`atom_style full`) of the lattice, each molecule turned at random and
/// its bonds and angle off their rest values; `charges` false writes `atom_style bond`.
pub(crate) fn box_text(seed: u64, charges: bool) -> String {
    let mut s = seed;
    let side = SPACING * PER_SIDE as f64;
    let (mut atoms, mut bonds, mut angles) = (String::new(), String::new(), String::new());
    let mut id = 0;
    let mut mol = 0;
    for i in 0..PER_SIDE {
        for j in 0..PER_SIDE {
            for k in 0..PER_SIDE {
                mol += 1;
                let o = [i, j, k].map(|c| (c as f64 + 0.5) * SPACING + 0.2 * uniform(&mut s));
                // Two O–H directions about 109° apart, turned at random.
                let axis = {
                    let a = [uniform(&mut s), uniform(&mut s), uniform(&mut s)];
                    let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
                    a.map(|x| x / n)
                };
                let other = {
                    let b = [axis[1], -axis[0] + 0.3, axis[2] + 0.5];
                    let dot = b[0] * axis[0] + b[1] * axis[1] + b[2] * axis[2];
                    let p = [0, 1, 2].map(|a| b[a] - dot * axis[a]);
                    let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
                    p.map(|x| x / n)
                };
                let half = 0.5 * (109.47_f64 + 4.0 * uniform(&mut s)).to_radians();
                let (c, sn) = (half.cos(), half.sin());
                let h1 = [0, 1, 2]
                    .map(|a| o[a] + (1.0 + 0.03 * uniform(&mut s)) * (c * axis[a] + sn * other[a]));
                let h2 = [0, 1, 2]
                    .map(|a| o[a] + (1.0 + 0.03 * uniform(&mut s)) * (c * axis[a] - sn * other[a]));
                for (t, q, x) in [(1, -0.8472, o), (2, 0.4236, h1), (2, 0.4236, h2)] {
                    id += 1;
                    let charge = if charges {
                        format!(" {q}")
                    } else {
                        String::new()
                    };
                    atoms += &format!("{id} {mol} {t}{charge} {} {} {}\n", x[0], x[1], x[2]);
                }
                let n = mol * 2;
                bonds += &format!(
                    "{} 1 {} {}\n{} 1 {} {}\n",
                    n - 1,
                    id - 2,
                    id - 1,
                    n,
                    id - 2,
                    id
                );
                angles += &format!("{mol} 1 {} {} {}\n", id - 1, id - 2, id);
            }
        }
    }
    let n = PER_SIDE.pow(3);
    format!(
        "test water\n\n{} atoms\n{} bonds\n{} angles\n2 atom types\n1 bond types\n1 angle types\n\n\
         0 {side} xlo xhi\n0 {side} ylo yhi\n0 {side} zlo zhi\n\nMasses\n\n1 15.9994\n2 1.00794\n\n\
         Atoms # {}\n\n{atoms}\nBonds\n\n{bonds}\nAngles\n\n{angles}",
        3 * n,
        2 * n,
        n,
        if charges { "full" } else { "bond" }
    )
}

/// The short-range terms written out: a nearest-image double loop over pairs of different
/// molecules within `rc`, the bonds and angles with their erf corrections.
fn by_hand(f: &SpcE, data: &DataFile, q: &[f64]) -> (f64, Vec<f64>) {
    let n = data.len();
    let side = data.box_lengths();
    let x = |i: usize| [q[3 * i], q[3 * i + 1], q[3 * i + 2]];
    let mut e = 0.0;
    let mut g = vec![0.0; 3 * n];
    let mut radial = |i: usize, j: usize, d: [f64; 3], v: f64, dv: f64, g: &mut Vec<f64>| {
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        e += v;
        for a in 0..3 {
            g[3 * j + a] += dv * d[a] / r;
            g[3 * i + a] -= dv * d[a] / r;
        }
    };
    let c2 = 2.0 * f.alpha / core::f64::consts::PI.sqrt();
    for i in 0..n {
        for j in i + 1..n {
            if data.molecules[i] == data.molecules[j] {
                continue;
            }
            let d: [f64; 3] = core::array::from_fn(|a| {
                let d = x(j)[a] - x(i)[a];
                d - (d / side[a]).round() * side[a]
            });
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            if r >= f.rc {
                continue;
            }
            let (ti, tj) = (data.types[i] - 1, data.types[j] - 1);
            let qq = COULOMB * f.charge[ti] * f.charge[tj];
            let (a, ar) = (f.alpha, f.alpha * r);
            let mut v = qq * erfc(ar) / r;
            let mut dv = qq * (-c2 * (-ar * ar).exp() / r - erfc(ar) / (r * r));
            let _ = a;
            if ti == 0 && tj == 0 {
                let s6 = (f.sigma2[0][0] / (r * r)).powi(3);
                v += f.eps4[0][0] * (s6 * s6 - s6);
                dv += f.eps4[0][0] * (-12.0 * s6 * s6 + 6.0 * s6) / r;
            }
            radial(i, j, d, v, dv, &mut g);
        }
    }
    let excluded = |i: usize, j: usize, qq: f64, g: &mut Vec<f64>, e: &mut f64| {
        let d: [f64; 3] = core::array::from_fn(|a| x(j)[a] - x(i)[a]);
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let ar = f.alpha * r;
        *e -= qq * erf(ar) / r;
        let dv = -qq * (c2 * (-ar * ar).exp() / r - erf(ar) / (r * r));
        for a in 0..3 {
            g[3 * j + a] += dv * d[a] / r;
            g[3 * i + a] -= dv * d[a] / r;
        }
    };
    for b in &data.bonds {
        let [i, j] = b.atoms;
        let d: [f64; 3] = core::array::from_fn(|a| x(j)[a] - x(i)[a]);
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        e += f.bond_k[0][1] * (r - f.bond_r0[0][1]).powi(2);
        for a in 0..3 {
            let dv = 2.0 * f.bond_k[0][1] * (r - f.bond_r0[0][1]) * d[a] / r;
            g[3 * j + a] += dv;
            g[3 * i + a] -= dv;
        }
        excluded(i, j, COULOMB * f.charge[0] * f.charge[1], &mut g, &mut e);
    }
    for an in &data.angles {
        let [i, o, j] = an.atoms;
        let u: [f64; 3] = core::array::from_fn(|a| x(i)[a] - x(o)[a]);
        let v: [f64; 3] = core::array::from_fn(|a| x(j)[a] - x(o)[a]);
        let (lu, lv) = (
            (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt(),
            (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt(),
        );
        let cos = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (lu * lv);
        let th = cos.acos();
        e += f.angle.0 * (th - f.angle.1).powi(2);
        let dth = -2.0 * f.angle.0 * (th - f.angle.1) / (1.0 - cos * cos).sqrt();
        for a in 0..3 {
            let gu = dth * (v[a] / (lu * lv) - cos / (lu * lu) * u[a]);
            let gv = dth * (u[a] / (lu * lv) - cos / (lv * lv) * v[a]);
            g[3 * i + a] += gu;
            g[3 * j + a] += gv;
            g[3 * o + a] -= gu + gv;
        }
        excluded(i, j, COULOMB * f.charge[1] * f.charge[1], &mut g, &mut e);
    }
    (e, g)
}

#[test]
fn the_assembled_short_range_part_equals_the_double_loop_and_the_gradient_its_differences() {
    let data = DataFile::parse(&box_text(7, true)).expect("parses");
    let mut water = WaterBox::from_data(&data, RC, 1e-5).expect("SPC/E water");
    let field = SpcE::new(RC, water.long.alpha());
    let mut s = 0x77A7_E4B0_u64;
    for round in 0..2 {
        let q: Vec<f64> = water.q.iter().map(|x| x + 0.05 * uniform(&mut s)).collect();
        let (want, want_g) = by_hand(&field, &data, &q);
        let mut g = vec![0.0; q.len()];
        let v = water.short.value_gradient_into(&q, &mut g);
        let scale = want_g.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        assert!(
            (v - want).abs() <= 1e-11 * want.abs(),
            "round {round}: {v} vs {want}"
        );
        for (k, (a, b)) in g.iter().zip(&want_g).enumerate() {
            assert!(
                (a - b).abs() <= 1e-11 * scale,
                "round {round}, ∂{k}: {a} vs {b}"
            );
        }
        // The whole potential (with the Ewald sum's long-range part) against differences.
        let mut total_g = vec![0.0; q.len()];
        water.value_gradient(&q, &mut total_g);
        let h = 1e-5;
        let big = total_g.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        let mut scratch = vec![0.0; q.len()];
        for k in (0..q.len()).step_by(37) {
            let mut up = q.clone();
            up[k] += h;
            let mut down = q.clone();
            down[k] -= h;
            let fd = (water.value_gradient(&up, &mut scratch)
                - water.value_gradient(&down, &mut scratch))
                / (2.0 * h);
            assert!(
                (total_g[k] - fd).abs() <= 1e-6 * big,
                "round {round}, ∂{k}: {} vs {fd}",
                total_g[k]
            );
        }
    }
}

#[test]
fn files_that_are_not_spce_water_and_bad_ewald_parameters_are_refused() {
    let text = box_text(3, true);
    let data = DataFile::parse(&text).expect("parses");
    let refused = |data: &DataFile, rc: f64, tol: f64| match WaterBox::from_data(data, rc, tol) {
        Ok(_) => panic!("accepted rc {rc}, tolerance {tol}"),
        Err(e) => e.to_string(),
    };
    let no_charges = DataFile::parse(&box_text(3, false)).expect("parses");
    assert!(refused(&no_charges, RC, 1e-5).contains("no charges"));
    let wrong = DataFile::parse(&text.replacen(" -0.8472 ", " -0.8 ", 1)).expect("parses");
    assert!(refused(&wrong, RC, 1e-5).contains("charge -0.8"));
    assert!(refused(&data, 6.3, 1e-5).contains("half the shortest box side"));
    for tol in [0.0, 1.0, 2.0] {
        assert!(refused(&data, RC, tol).contains("tolerance"));
    }
    assert!(matches!(
        WaterBox::from_data(&data, RC, 0.0),
        Err(WaterBoxError::Ewald(_))
    ));
}

pub(crate) fn temp(name: &str) -> crate::scratch::TempDir {
    crate::scratch::TempDir::new("wb", name)
}

#[test]
fn zs_eval_gives_the_potential_and_bad_runs_are_one_line_errors() {
    let d = temp("eval");
    let text = box_text(11, true);
    std::fs::write(d.join("w.data"), &text).expect("write");
    let zs = |args: &[&str]| {
        Command::new(ZS)
            .args(args)
            .current_dir(&d)
            .output()
            .expect("zs")
    };
    let out = zs(&[
        "eval",
        "water-box",
        "--data",
        "w.data",
        "--rc",
        "4",
        "--ewald-tolerance",
        "1e-8",
        "--kspace",
        "ewald",
        "--out",
        "e.csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(d.join("e.csv")).expect("e.csv");
    let row: Vec<f64> = csv
        .lines()
        .nth(1)
        .expect("a row")
        .split(',')
        .map(|x| x.parse().expect("a number"))
        .collect();
    let data = DataFile::parse(&text).expect("parses");
    let mut water = WaterBox::from_data(&data, 4.0, 1e-8).expect("water");
    let q = water.q.clone();
    let mut g = vec![0.0; q.len()];
    let v = water.value_gradient(&q, &mut g);
    assert_eq!(row.len(), 1 + q.len());
    assert_eq!(row[0], v);
    assert!(row[1..].iter().zip(&g).all(|(a, b)| a == b));
    // One line each, nothing written.
    for (args, says) in [
        (
            vec![
                "run",
                "water-box",
                "--data",
                "w.data",
                "--rc",
                "4",
                "--integrator",
                "zs",
                "--out",
                "r.csv",
            ],
            "long-range term's is dense",
        ),
        (
            vec![
                "run",
                "water-box",
                "--data",
                "w.data",
                "--rc",
                "4",
                "--integrator",
                "verlet",
                "--out",
                "r.csv",
            ],
            "needs a penalty --omega",
        ),
        (
            vec![
                "run",
                "water-box",
                "--data",
                "w.data",
                "--rc",
                "4",
                "--water",
                "flexible",
                "--out",
                "r.csv",
            ],
            "settle holds rigid water",
        ),
        (
            vec![
                "run",
                "double-pendulum",
                "--integrator",
                "settle",
                "--out",
                "r.csv",
            ],
            "--integrator settle does not apply",
        ),
        (
            vec![
                "eval",
                "water-box",
                "--data",
                "w.data",
                "--ewald-tolerance",
                "2",
            ],
            "tolerance",
        ),
        (vec!["eval", "water-box"], "--data"),
    ] {
        let out = zs(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert!(!d.join("r.csv").exists());
    // A lone oxygen more: a charged box, evaluated with a neutralising background and a warning.
    let side = SPACING * PER_SIDE as f64;
    let charged = text
        .replacen("192 atoms", "193 atoms", 1)
        .replacen(
            "\nBonds",
            &format!("193 65 1 -0.8472 {} 0.1 0.1\n\nBonds", side - 0.1),
            1,
        )
        .replacen("\n\n193 65", "\n193 65", 1);
    std::fs::write(d.join("c.data"), &charged).expect("write");
    let out = zs(&[
        "eval",
        "water-box",
        "--data",
        "c.data",
        "--rc",
        "4",
        "--out",
        "c.csv",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("net charge of -0.847200 e") && err.contains("neutralising background"),
        "{err}"
    );
}

#[test]
fn the_long_range_model_adds_pme_and_its_hessian_product_equals_differences() {
    let data = DataFile::parse(&box_text(5, true)).expect("parses");
    let options = WaterBoxOptions {
        rc: RC,
        tolerance: 1e-5,
        kspace: Kspace::Pme,
        water: Water::Flexible,
    };
    let mut water = WaterBox::from_data_with(&data, &options).expect("SPC/E water");
    let q = water.q.clone();
    let n = q.len();
    let mut want = vec![0.0; n];
    let v = water.value_gradient(&q, &mut want);
    let model = water.model();
    let mut g = vec![0.0; n];
    assert_eq!(model.value_gradient_into(&q, &mut g), v);
    assert_eq!(g, want);
    // H·a of the whole potential, PME's exact part included, against differences of ∇V.
    let mut s = 0x4E55_1A4Eu64;
    let a: Vec<f64> = (0..n).map(|_| uniform(&mut s)).collect();
    let mut ha = vec![0.0; n];
    model.hessian_vector_into(&q, &a, &mut ha);
    let h = 1e-5;
    let at = |by: f64| -> Vec<f64> {
        let p: Vec<f64> = q.iter().zip(&a).map(|(x, d)| x + by * d).collect();
        let mut g = vec![0.0; n];
        model.gradient_into(&p, &mut g);
        g
    };
    let (up, down) = (at(h), at(-h));
    let big = ha.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    for k in 0..n {
        let fd = (up[k] - down[k]) / (2.0 * h);
        assert!((ha[k] - fd).abs() < 1e-6 * big, "∂{k}: {} vs {fd}", ha[k]);
    }
    // Rigid water: three constraints per molecule, at SPC/E's distances.
    let rigid = WaterBox::from_data_with(
        &data,
        &WaterBoxOptions {
            water: Water::Rigid,
            ..options
        },
    )
    .expect("SPC/E water");
    use zs_runtime::ConstrainedModel;
    let model = rigid.model();
    assert_eq!(model.constraint_count(), 3 * PER_SIDE.pow(3));
    let mut c = vec![0.0; model.constraint_count()];
    // Off the constraints' surface (each row a value of its own), then the rows follow the
    // terms in the box's spatial order: the first molecule's O–H and H–H distances are two.
    let q: Vec<f64> = (rigid.q.iter().enumerate())
        .map(|(k, x)| x + 0.01 * ((k * 7919 % 101) as f64 / 101.0 - 0.5))
        .collect();
    model.constraints_into(&q, &mut c);
    let (o, h1, h2) = (&q[0..3], &q[3..6], &q[6..9]);
    let d2 = |x: &[f64], y: &[f64]| (0..3).map(|i| (x[i] - y[i]).powi(2)).sum::<f64>();
    for (what, want) in [
        ("O–H", d2(o, h1) - 1.0),
        ("H–H", d2(h1, h2) - r_hh() * r_hh()),
    ] {
        assert!(
            c.iter().any(|&x| (x - want).abs() < 1e-12),
            "{what}: no row {want}"
        );
    }
}

/// A column of a run's CSV.
fn column(csv: &str, name: &str) -> Vec<f64> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let e = header.iter().position(|h| *h == name).expect("the column");
    lines
        .map(|l| {
            l.split(',')
                .nth(e)
                .expect("a value")
                .parse()
                .expect("a number")
        })
        .collect()
}

#[test]
fn zs_run_water_box_steps_rigid_and_flexible_water_with_pme() {
    let d = temp("run");
    std::fs::write(d.join("w.data"), box_text(13, true)).expect("write");
    let run = |extra: &[&str], out: &str| -> (String, String) {
        let o = Command::new(ZS)
            .args([
                "run",
                "water-box",
                "--data",
                "w.data",
                "--rc",
                "4",
                "--out",
                out,
            ])
            .args(extra)
            .current_dir(&d)
            .output()
            .expect("zs");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{extra:?}: {err}");
        (
            String::from_utf8_lossy(&o.stdout).to_string(),
            std::fs::read_to_string(d.join(out)).expect("the CSV"),
        )
    };
    // Rigid (RATTLE), 1 fs: the constraints hold to 1e-10 at every recorded step after the
    // first (which puts the file's molecules on them); the same bits on 1 and 2 threads. (This
    // 12.4 Å box can only be cut at 4 Å, where the unshifted O–O Lennard-Jones term jumps by
    // 0.1 kcal/mol: its energy is not a measure of the step; BENCHMARKS.md measures that on
    // data.spce.)
    let rigid = [
        "--integrator",
        "rattle",
        "--h",
        "1",
        "--t-end",
        "40",
        "--every",
        "10",
        "--ewald-tolerance",
        "1e-5",
    ];
    let (said, one) = run(&[&rigid[..], &["--threads", "1"]].concat(), "r1.csv");
    assert!(
        said.contains("smooth PME") && said.contains("rigid water"),
        "{said}"
    );
    let residuals = column(&one, "constraint_norm");
    assert_eq!(residuals.len(), 5);
    assert!(residuals[0] > 1e-3, "{residuals:?}");
    assert!(residuals[1..].iter().all(|r| *r < 1e-10), "{residuals:?}");
    // SETTLE (the default) is RATTLE with each molecule's constraints solved in closed form:
    // the same trajectory, to RATTLE's Newton tolerance.
    let (said, settled) = run(&rigid[2..], "s.csv");
    assert!(said.contains("integrator settle"), "{said}");
    let (r, s) = (column(&one, "energy"), column(&settled, "energy"));
    assert!(
        r.iter()
            .zip(&s)
            .all(|(a, b)| (a - b).abs() < 1e-8 * a.abs().max(1.0)),
        "{r:?} {s:?}"
    );
    for x in ["x1", "y17", "z192", "v_x64", "v_z130"] {
        let (a, b) = (column(&one, x), column(&settled, x));
        assert!(
            a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-8),
            "{x}: {a:?} {b:?}"
        );
    }
    let (_, two) = run(&[&rigid[..], &["--threads", "2"]].concat(), "r2.csv");
    assert_eq!(one, two);
    // Flexible (Verlet on the harmonic bonds and angles), 0.25 fs.
    let (_, flexible) = run(
        &[
            "--water",
            "flexible",
            "--integrator",
            "verlet",
            "--h",
            "0.25",
            "--t-end",
            "10",
            "--every",
            "10",
        ],
        "f.csv",
    );
    assert_eq!(column(&flexible, "energy").len(), 5);
    assert!(column(&flexible, "energy").iter().all(|e| e.is_finite()));
}

#[test]
fn zs_nma_water_box_diagonalises_the_exact_hessian_with_pme() {
    let d = temp("nma");
    std::fs::write(d.join("w.data"), box_text(17, true)).expect("write");
    let nma = |extra: &[&str]| {
        Command::new(ZS)
            .args(["nma", "water-box", "--data", "w.data", "--rc", "4"])
            .args(extra)
            .current_dir(&d)
            .output()
            .expect("zs")
    };
    let out = nma(&["--ewald-tolerance", "1e-4", "--out", "m.csv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(d.join("m.csv")).expect("m.csv");
    let eigenvalues = column(&csv, "eigenvalue");
    let frequencies = column(&csv, "frequency");
    let n = 9 * PER_SIDE.pow(3);
    assert_eq!(eigenvalues.len(), n);
    // The energy is invariant under a rigid translation of the box's content, PME's up to its
    // mesh (its translations' eigenvalues are small, not zero): three modes near zero, and no
    // others.
    let top = eigenvalues[n - 1].abs();
    let near_zero = eigenvalues.iter().filter(|l| l.abs() < 1e-6 * top).count();
    assert_eq!(near_zero, 3, "{:?}", &eigenvalues[..6]);
    let translations = csv
        .lines()
        .skip(1)
        .filter(|l| l.contains(",translation,"))
        .count();
    assert_eq!(translations, 3, "{csv}");
    // The fastest modes are O–H stretches: K = 1000 kcal/mol/Å² (no ½) on the O–H reduced
    // mass, √(2K/μ) with μ = m_O m_H/(m_O + m_H), in cm⁻¹ (the bond alone; the
    // molecules' own geometry and neighbours move it by some per cent).
    let mu: f64 = 15.9994 * 1.00794 / (15.9994 + 1.00794);
    let stretch =
        (2.0 * 1000.0 / mu * 4.184e-4).sqrt() / (2.0 * std::f64::consts::PI * 2.997_924_58e-5);
    let fastest = frequencies[n - 1];
    assert!(
        (fastest / stretch - 1.0).abs() < 0.1,
        "{fastest} cm^-1 against a bare O–H stretch of {stretch}"
    );
    // Eigenvalues in kcal/mol/Å²/(g/mol): λ = (2πc ν̃)² / mvv2e.
    let from_frequency = (frequencies[n - 1] * 2.0 * std::f64::consts::PI * 2.997_924_58e-5)
        .powi(2)
        * 48.888_212_91_f64.powi(2);
    assert!((eigenvalues[n - 1] / from_frequency - 1.0).abs() < 1e-9);
    // --lowest solves with the sparse short-range Hessian alone: refused.
    let out = nma(&["--lowest", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("long-range") && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// SETTLE's steps on a rigid PME box allocate nothing once its lists have reached their
/// high-water mark. The first step sets up the buffers (SETTLE's, the neighbour list's, PME's
/// mesh, the long-range model's scratch); the neighbour list and its rows are sized for a
/// uniform density with some room, and a rebuild that finds more pairs than they ever held
/// grows them (a few times in the first window below, in this small box); after that, none.
#[test]
fn settle_steps_of_a_pme_box_allocate_nothing_after_the_lists_high_water_mark() {
    use zs_runtime::{Settle, StateOf};
    let data = DataFile::parse(&box_text(7, true)).expect("parses");
    let water = WaterBox::from_data_with(
        &data,
        &WaterBoxOptions {
            rc: RC,
            tolerance: 5e-4,
            kspace: Kspace::Pme,
            water: Water::Rigid,
        },
    )
    .expect("SPC/E water");
    let molecules: Vec<[u32; 3]> = data
        .angles
        .iter()
        .map(|a| [a.atoms[1], a.atoms[0], a.atoms[2]].map(|b| b as u32))
        .collect();
    let model = water.model();
    let mut settle = Settle::new(1.0, molecules, zs_systems::water_box::R_OH, r_hh());
    // Each molecule drifts at 0.03 Å/fs in its own direction: over each window below it moves
    // 2.4 Å, past half the neighbour list's skin, so the list is rebuilt in place.
    let mut s = 0x005E_771Eu64;
    let mut v = vec![0.0; water.q.len()];
    for m in v.chunks_mut(9) {
        let d = [uniform(&mut s), uniform(&mut s), uniform(&mut s)];
        let norm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        for atom in m.chunks_mut(3) {
            for (x, dx) in atom.iter_mut().zip(d) {
                *x = 0.03 * dx / norm;
            }
        }
    }
    let mut state = StateOf::new(water.q.clone(), v);
    settle.step(&model, &mut state).expect("the first step");
    // The steps run on a pool of their own and are counted on its thread: from the test's
    // thread every parallel pass would be injected into rayon's global pool, whose queue,
    // shared with the tests running beside this one, allocates a block now and then.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool");
    let mut window = || {
        let start = state.q.clone();
        let n = pool.install(|| {
            crate::counting_alloc::allocations_during(|| {
                for _ in 0..80 {
                    settle.step(&model, &mut state).expect("a step");
                }
            })
        });
        let moved = (0..start.len() / 3)
            .map(|b| {
                (0..3)
                    .map(|c| (state.q[3 * b + c] - start[3 * b + c]).powi(2))
                    .sum::<f64>()
            })
            .fold(0.0_f64, f64::max)
            .sqrt();
        assert!(
            moved > zs_systems::water_box::SKIN,
            "the farthest atom moved {moved} Å"
        );
        n
    };
    let growing = window();
    assert!(growing < 20, "{growing} allocations while the lists grow");
    assert_eq!(
        window(),
        0,
        "allocations in 80 steps after the high-water mark"
    );
}

/// `zs reproduce water-box` on the small lattice box, briefly: the O–O distribution is empty
/// inside the molecules' contact and counts the neighbours of a liquid's density, the
/// energies are a bound liquid's, LAMMPS's RDF file format is read, and the files are written.
#[test]
fn the_water_box_experiment_bins_o_o_pairs_and_reads_lammps_rdf_files() {
    use zs_systems::experiments::water_box::{self, Config};
    let dir = temp("experiment");
    let data = dir.join("box.data");
    std::fs::write(&data, box_text(7, true)).expect("write");
    let reference = dir.join("rdf.ref");
    std::fs::write(
        &reference,
        "# Time-averaged data for fix rdf\n# TimeStep Number-of-rows\n\
         # Row c_gofr[1] c_gofr[2] c_gofr[3] c_gofr[4] c_gofr[5] c_gofr[6] c_gofr[7]\n\
         1000 3\n1 0.03 0 0 0 0 0 0\n2 0.09 0.5 0.1 0 0 0 0\n3 0.15 1.25 0.2 0 0 0 0\n",
    )
    .expect("write");
    let mut cfg = Config::lammps(data.clone());
    cfg.reference = reference;
    cfg.options.rc = RC;
    cfg.r_max = 0.5 * SPACING * PER_SIDE as f64;
    cfg.bins = 60;
    (cfg.t_end, cfg.burn_in, cfg.sample_dt, cfg.blocks) = (200.0, 100.0, 20.0, 5);
    let out = water_box::run(&cfg).expect("runs");
    assert_eq!(out.failure, None);
    assert_eq!(out.steps, 100);
    assert_eq!(out.energy.len(), 5);
    assert!(
        out.energy.iter().all(|e| e.is_finite() && *e < 0.0),
        "{:?}",
        out.energy
    );
    assert!(
        out.temperature.iter().all(|t| *t > 0.0),
        "{:?}",
        out.temperature
    );
    let width = cfg.r_max / cfg.bins as f64;
    for (b, g) in out.rdf.iter().enumerate() {
        if (b + 1) as f64 * width < 2.0 {
            assert_eq!(*g, 0.0, "O–O pairs closer than 2 Å (bin {b})");
        }
    }
    // Neighbours within r_max from g: 4πρ ∫ g r² dr, at most every other oxygen, and about a
    // uniform liquid's 4π/3 ρ r_max³ (the lattice's own count, to a few).
    let n = PER_SIDE.pow(3) as f64;
    let density = n / (SPACING * PER_SIDE as f64).powi(3);
    let within: f64 = (0..cfg.bins)
        .map(|b| {
            let (r0, r1) = (b as f64 * width, (b + 1) as f64 * width);
            out.rdf[b] * 4.0 / 3.0 * std::f64::consts::PI * (r1.powi(3) - r0.powi(3)) * density
        })
        .sum();
    let uniform = 4.0 / 3.0 * std::f64::consts::PI * cfg.r_max.powi(3) * density;
    assert!(within < n - 1.0, "{within} neighbours of {n} molecules");
    assert!(
        (within / uniform - 1.0).abs() < 0.25,
        "{within} against {uniform}"
    );
    assert_eq!(
        out.reference,
        Some(vec![(0.03, 0.0), (0.09, 0.5), (0.15, 1.25)])
    );
    let report = water_box::write(&cfg, &out, &dir).expect("written");
    for f in &report.files {
        assert!(f.exists(), "{}", f.display());
    }
    let text = report.to_string();
    assert!(text.contains("RMS difference"), "{text}");
    assert!(text.contains("-41.5"), "{text}");
}

/// The rigid motions' kinetic energy of a molecule moving rigidly is all of it, and velocities
/// along its bonds add nothing to it.
#[test]
fn the_rigid_kinetic_energy_keeps_translation_and_rotation_and_drops_bond_stretches() {
    use zs_systems::experiments::water_box::rigid_kinetic;
    let masses = [16.0, 1.0, 1.0];
    let x = [[0.1, -0.2, 0.3], [0.9, 0.4, 0.2], [-0.5, 0.7, 0.1]];
    let q: Vec<f64> = x.iter().flatten().copied().collect();
    let total: f64 = masses.iter().sum();
    let c: [f64; 3] =
        core::array::from_fn(|a| (0..3).map(|k| masses[k] * x[k][a]).sum::<f64>() / total);
    let (vc, w) = ([0.3, -0.1, 0.2], [0.5, 1.5, -0.7]);
    // v_k = v_cm + ω × (x_k − c).
    let rigid: Vec<f64> = x
        .iter()
        .flat_map(|xk| {
            let r: [f64; 3] = core::array::from_fn(|a| xk[a] - c[a]);
            [
                vc[0] + w[1] * r[2] - w[2] * r[1],
                vc[1] + w[2] * r[0] - w[0] * r[2],
                vc[2] + w[0] * r[1] - w[1] * r[0],
            ]
        })
        .collect();
    let kinetic = |v: &[f64]| -> f64 { (0..9).map(|i| 0.5 * masses[i / 3] * v[i] * v[i]).sum() };
    let molecule = [[0u32, 1, 2]];
    let ke = rigid_kinetic(&q, &rigid, &molecule, masses);
    assert!(
        (ke - kinetic(&rigid)).abs() < 1e-13 * ke,
        "{ke} vs {}",
        kinetic(&rigid)
    );
    // Stretch the first O–H bond (momentum-free: the H moves out, the O back).
    let mut stretched = rigid.clone();
    for a in 0..3 {
        let d = x[1][a] - x[0][a];
        stretched[3 + a] += 0.4 * d;
        stretched[a] -= 0.4 * d / 16.0;
    }
    assert!(kinetic(&stretched) > 1.01 * kinetic(&rigid));
    let after = rigid_kinetic(&q, &stretched, &molecule, masses);
    assert!((after - ke).abs() < 1e-12 * ke, "{after} vs {ke}");
}

/// LAMMPS's `examples/rdf-adf/data.spce` (Debian's `lammps-examples`), where the measurement of
/// BENCHMARKS.md ("Charged liquids") was made.
const DATA_SPCE: &str = "/usr/share/lammps/examples/rdf-adf/data.spce";

/// `--ewald-tolerance D` is the relative force error: PME's whole force field at `D` (its
/// α from the cutoff, its mesh) within `D` of the converged Ewald sum, as an RMS over every
/// component, on the 1 500 molecules of `data.spce` at 9.8 Å.
///
/// ```text
/// cargo test -p zs-systems --test systems -- --ignored pme_forces_on_data_spce
/// ```
#[test]
#[ignore = "needs LAMMPS's data.spce (apt lammps-examples) and about a minute: command in the doc comment"]
fn pme_forces_on_data_spce_are_within_the_tolerance_of_the_converged_sum() {
    let data = DataFile::read(std::path::Path::new(DATA_SPCE))
        .unwrap_or_else(|e| panic!("{DATA_SPCE} (apt-get install lammps-examples): {e}"));
    let field = |kspace, tolerance| {
        WaterBox::from_data_with(
            &data,
            &WaterBoxOptions {
                rc: 9.8,
                tolerance,
                kspace,
                water: Water::Flexible,
            },
        )
        .expect("SPC/E")
    };
    let q: Vec<f64> = data.positions.iter().flatten().copied().collect();
    let mut reference = vec![0.0; q.len()];
    field(Kspace::Ewald, 1e-12).value_gradient(&q, &mut reference);
    let norm = reference.iter().map(|x| x * x).sum::<f64>();
    for tolerance in [5e-4, 1e-4, 1e-5] {
        let mut g = vec![0.0; q.len()];
        field(Kspace::Pme, tolerance).value_gradient(&q, &mut g);
        let error = g
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>();
        let rms = (error / norm).sqrt();
        assert!(
            rms < tolerance,
            "D = {tolerance:e}: RMS relative force error {rms:e}"
        );
    }
}
