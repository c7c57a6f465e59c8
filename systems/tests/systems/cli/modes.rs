//! `zs nma`: normal modes of a water dimer and an ethane molecule, and what it refuses.

use super::*;

#[test]
fn nma_of_a_minimised_water_dimer_finds_its_six_rigid_motions_and_animates_the_rest() {
    let d = dir("nma");
    let o = zs(
        &d,
        &[
            "nma",
            "water",
            "--n",
            "2",
            "--minimize",
            "--out",
            "modes.csv",
            "--modes",
            "modes.xyz",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.join("modes.csv")).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("mode,eigenvalue,frequency,kind,translation,rotation")
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 18);
    let eig: Vec<f64> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    assert!(eig.windows(2).all(|w| w[0] <= w[1]), "ascending: {eig:?}");
    let kinds: Vec<&str> = rows.iter().map(|r| r[3]).collect();
    let count = |k: &str| kinds.iter().filter(|&&x| x == k).count();
    assert_eq!(
        (count("translation"), count("rotation"), count("vibration")),
        (3, 3, 12),
        "{kinds:?}"
    );
    // The six rigid motions are the six lowest modes, their eigenvalues ~0 against the
    // vibrations' (the residual force of the minimisation, 1e-6, bounds them).
    assert!(kinds[..6].iter().all(|&k| k != "vibration"));
    assert!(eig[..6].iter().all(|l| l.abs() < 1e-5 * eig[17]), "{eig:?}");
    assert!(eig[6] > 1e-3 * eig[17].sqrt());
    // Frequencies in cm^-1: the stiff penalty bonds at the top, far above the librations.
    let nu: Vec<f64> = rows.iter().map(|r| r[2].parse().unwrap()).collect();
    assert!(nu[6] > 10.0 && nu[6] < 500.0 && nu[17] > 3000.0, "{nu:?}");
    // 12 vibrations × 16 frames of 6 atoms, each frame 8 lines.
    let xyz = std::fs::read_to_string(d.join("modes.xyz")).unwrap();
    assert_eq!(xyz.lines().count(), 12 * 16 * 8);
    assert_eq!(
        xyz.lines().filter(|l| l.starts_with("Properties=")).count(),
        12 * 16
    );
}

/// `zs nma alkane --data` on one ethane (CH3–CH3) in a box beyond twice the cutoff, minimised:
/// five zero modes (the box's three translations, the molecule's two rotations, which the
/// box does not make symmetries but a lone molecule has) and the bond's stretch at
/// `ν̃ = √(2K/μ) / (2πc)`, TraPPE-UA's K = 452.9 kcal/mol/Å² — 1 192 cm⁻¹ — in LAMMPS `real`
/// units' conversion.
#[test]
fn nma_of_a_lone_ethane_finds_the_bond_stretch_in_wavenumbers() {
    let d = dir("nma-ethane");
    let build = [
        "run",
        "alkane",
        "--n-molecules",
        "1",
        "--length",
        "2",
        "--density",
        "0.001",
        "--h",
        "1e-9",
        "--t-end",
        "1e-9",
        "--quiet",
        "--out",
        "b.csv",
        "--write-data",
        "ethane.data",
    ];
    let o = zs(&d, &build);
    assert!(o.status.success(), "{}", stderr(&o));
    let args = [
        "nma",
        "alkane",
        "--data",
        "ethane.data",
        "--minimize",
        "--out",
        "modes.csv",
    ];
    let o = zs(&d, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.join("modes.csv")).unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            vec![
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[4].parse().unwrap(),
            ]
        })
        .collect();
    assert_eq!(rows.len(), 6);
    let top = rows[5][0];
    assert!(
        rows[..5].iter().all(|r| r[0].abs() < 1e-12 * top),
        "{rows:?}"
    );
    // The translations lie in the zero modes' span (their overlaps, printed to 6 decimals,
    // sum to 3).
    let t: f64 = rows[..5].iter().map(|r| r[2]).sum();
    assert!((t - 3.0).abs() < 1e-5, "{t}");
    let (k, mu) = (452.9, 15.035 / 2.0);
    let omega_per_fs = (2.0 * k / mu * 4.184e-4_f64).sqrt();
    let wavenumber = omega_per_fs / (2.0 * core::f64::consts::PI * 2.997_924_58e-5);
    assert!(
        (rows[5][1] - wavenumber).abs() < 1e-9 * wavenumber,
        "{} vs {wavenumber} cm^-1",
        rows[5][1]
    );
}

#[test]
fn nma_refuses_what_it_cannot_do_in_one_line() {
    let d = dir("nma-bad");
    for (args, needles) in [
        (
            &["nma", "kremer-grest"][..],
            &["kremer-grest", "--data FILE"][..],
        ),
        (&["nma", "rigid-body"][..], &["zs nma", "rigid-body"][..]),
        (
            &["nma", "kremer-grest", "--data", "x.data", "--omega", "3"],
            &["--omega", "no constraints"],
        ),
        (
            &["nma", "alkane", "--data", "x.data", "--omega", "3"],
            &["--omega", "alkane-rigid"],
        ),
        (&["nma", "water", "--data", "x.data"], &["--data"]),
        (&["nma", "dna", "--omega", "3"], &["--omega", "dna"]),
        (&["nma", "double-pendulum", "--n", "3"], &["--n"]),
        (
            &["nma", "dna", "--n", "5", "--lowest", "9"],
            &["lowest 9 of 5"],
        ),
        (
            &["nma", "dna", "--n", "5", "--lowest", "2", "--shift", "1"],
            &["shift"],
        ),
        (
            &["nma", "water", "--out", "a.csv", "--modes", "a.csv"],
            &["same file"],
        ),
    ] {
        let o = zs(&d, args);
        one_line_error(&o, args, needles);
    }
}
