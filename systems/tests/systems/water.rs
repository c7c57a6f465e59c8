//! The TIP3P cluster: the generated, assembled pair term against the hand-written
//! double loop at random off-manifold points, its Hessian against finite differences, the exact
//! geometry of built molecules, and the dimer minimum (−6.540 kcal/mol at R_OO = 2.747 Å,
//! `docs/systems/water.md`, measured independently).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zs_runtime::minimize::Fire;
use zs_runtime::{ConstrainedModel, HessianPart, Model};
use zs_systems::water::reference::WaterReference;
use zs_systems::water::Water;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
}

/// A cluster of `n` molecules built on a 3.1 Å grid, every coordinate moved by up to ±0.1 Å (off
/// the constraint manifold).
fn random_point(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut q = Water::tip3p().cluster(n, 3.1, seed);
    q.iter_mut().for_each(|x| *x += rng.random_range(-0.1..0.1));
    q
}

#[test]
fn generated_energy_and_gradient_match_the_direct_double_loop() {
    let reference = WaterReference::tip3p();
    for (n, seed) in [(2, 1), (3, 2), (7, 3), (12, 4)] {
        let sys = Water::tip3p().assemble(n);
        for k in 0..10 {
            let q = random_point(n, 100 * seed + k);
            let (e, g) = reference.energy_gradient(&q);
            assert!(
                rel(sys.potential_at(&q), e) < 1e-12,
                "n = {n}: {} vs {e}",
                sys.potential_at(&q)
            );
            let mut gz = vec![0.0; q.len()];
            sys.gradient_into(&q, &mut gz);
            let scale = g.iter().fold(0.0f64, |a, x| a.max(x.abs()));
            for i in 0..q.len() {
                assert!(
                    (gz[i] - g[i]).abs() <= 1e-12 * scale,
                    "n = {n}, i = {i}: {} vs {}",
                    gz[i],
                    g[i]
                );
            }
        }
    }
}

/// The SIMD passes (4 lanes on AVX2, 8 on AVX-512, whatever this machine has) give the scalar
/// path's bits, serial and parallel, on clusters whose pair count is not a multiple of the
/// lanes (the remainder goes through the scalar code) and with the per-term kernels (the
/// Hessian pass's values and gradients, summed in the same order) to 1e-13.
#[test]
fn simd_passes_give_the_scalar_bits_at_any_width_and_thread_count() {
    use zs_runtime::simd::Isa;
    for (n, seed) in [(3, 7), (11, 8), (40, 9)] {
        let q = random_point(n, seed);
        let eval = |isa: Isa, parallel: bool| {
            let sys = Water::tip3p()
                .assemble(n)
                .with_simd(isa)
                .with_parallel(parallel);
            let pen = sys.penalized(20.0);
            let mut g = vec![0.0; q.len()];
            let v = pen.value_gradient_into(&q, &mut g);
            let fresh = Water::tip3p()
                .assemble(n)
                .with_simd(isa)
                .penalized(20.0)
                .potential_at(&q);
            (v, fresh, g)
        };
        let (v0, e0, g0) = eval(Isa::Scalar, false);
        assert_eq!(v0.to_bits(), e0.to_bits(), "energy pass against value pass");
        let bits = |g: &[f64]| g.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for isa in Isa::available() {
            for parallel in [false, true] {
                let (v, e, g) = eval(isa, parallel);
                assert_eq!(v.to_bits(), v0.to_bits(), "{isa:?}, parallel {parallel}");
                assert_eq!(e.to_bits(), e0.to_bits(), "{isa:?}, parallel {parallel}");
                assert_eq!(bits(&g), bits(&g0), "{isa:?}, parallel {parallel}");
            }
        }
        // The per-term scalar kernels (a Hessian pass) at the same point.
        let sys = Water::tip3p().assemble(n);
        let pen = sys.penalized(20.0);
        let mut h = pen.new_matrix(HessianPart::Full);
        let mut gh = vec![0.0; q.len()];
        pen.gradient_hessian_into(&q, &mut gh, &mut h);
        let vh = pen.potential_at(&q);
        assert!(rel(vh, v0) < 1e-13, "{vh} vs {v0}");
        let scale = g0.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        let worst = g0
            .iter()
            .zip(&gh)
            .fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst <= 1e-13 * scale,
            "gradient differs by {worst} (scale {scale})"
        );
    }
}

/// The energy is taken from the last gradient pass only at exactly that point: after a move,
/// `potential_at` evaluates afresh (a stale value would be the old energy).
#[test]
fn the_energy_from_the_gradient_pass_is_never_stale() {
    let n = 9;
    let sys = Water::tip3p().assemble(n);
    let reference = WaterReference::tip3p();
    let mut q = random_point(n, 21);
    let mut g = vec![0.0; q.len()];
    for k in 0..4 {
        let v = sys.value_gradient_into(&q, &mut g);
        let (e, _) = reference.energy_gradient(&q);
        assert!(rel(v, e) < 1e-12, "step {k}: {v} vs {e}");
        assert_eq!(sys.potential_at(&q).to_bits(), v.to_bits());
        q[3 * k] += 0.05;
        let (e1, _) = reference.energy_gradient(&q);
        assert!(
            rel(sys.potential_at(&q), e1) < 1e-12,
            "after a move, step {k}"
        );
        // The penalized potential at the same q is another function: not the cached one.
        let pen = sys.penalized(20.0);
        let with_penalty = pen.potential_at(&q);
        assert!(
            with_penalty > sys.potential_at(&q),
            "penalty > 0 off the manifold"
        );
    }
}

#[test]
fn hessian_matches_finite_differences_of_the_gradient() {
    let n = 3;
    let sys = Water::tip3p().assemble(n);
    let pen = sys.penalized(20.0);
    for seed in 0..3 {
        let q = random_point(n, 7 + seed);
        let dim = q.len();
        let (mut g, mut h) = (vec![0.0; dim], pen.new_matrix(HessianPart::Full));
        pen.gradient_hessian_into(&q, &mut g, &mut h);
        let dense = h.to_dense();
        let eps = 1e-6;
        let mut worst = 0.0f64;
        let scale = dense.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
        for j in 0..dim {
            let (mut qp, mut qm) = (q.clone(), q.clone());
            qp[j] += eps;
            qm[j] -= eps;
            let (mut gp, mut gm) = (vec![0.0; dim], vec![0.0; dim]);
            pen.gradient_into(&qp, &mut gp);
            pen.gradient_into(&qm, &mut gm);
            for i in 0..dim {
                let fd = (gp[i] - gm[i]) / (2.0 * eps);
                worst = worst.max((fd - dense[i][j]).abs() / scale);
            }
        }
        assert!(worst < 1e-7, "seed {seed}: {worst:e}");
    }
}

#[test]
fn built_molecules_have_the_exact_geometry() {
    let w = Water::tip3p();
    let n = 20;
    let sys = w.assemble(n);
    let q = w.cluster(n, 3.1, 5);
    assert!(
        sys.constraint_norm(&q) < 1e-13,
        "{}",
        sys.constraint_norm(&q)
    );
    // Distinct sites, at least one grid spacing apart.
    for a in 0..n {
        for b in a + 1..n {
            let d: f64 = (0..3)
                .map(|c| (q[9 * a + c] - q[9 * b + c]).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(d > 3.09, "{a}, {b}: {d}");
        }
    }
}

#[test]
fn dimer_minimum_is_tip3p_s() {
    let w = Water::tip3p();
    let sys = w.assemble(2);
    // Donor at the origin, turned about y so that its first H points along +x (the pose has
    // the bisector along +z, each H at α/2 from it); acceptor 2.9 Å along +x, its bisector along
    // +x and its plane (xy) perpendicular to the donor's (xz): the mirror symmetry of the
    // minimum. (Both planes in xz is a saddle the minimiser cannot leave: −6.46 kcal/mol.)
    let half = (0.5 * w.r_hh / w.r_oh).asin();
    let phi = std::f64::consts::FRAC_PI_2 - half;
    let mut q = w
        .molecule([0.0; 3], [(0.5 * phi).cos(), 0.0, (0.5 * phi).sin(), 0.0])
        .to_vec();
    q.extend(w.molecule([2.9, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]));
    assert!(
        (q[3] - w.r_oh).abs() < 1e-12 && q[5].abs() < 1e-12,
        "donor H on +x: {:?}",
        &q[3..6]
    );
    // A stiff penalty holds the geometry while FIRE relaxes the rest: first ω = 200 (bonds
    // stretched by ~1e-4 Å under the hydrogen bond's force), then ω = 2000 from there (~1e-6 Å),
    // each with steps that resolve its bond vibrations.
    // A residual force f on the soft modes (stiffness ≳ 0.1) costs ≲ f²/0.2 in energy.
    for (omega, dt, tol) in [(200.0, 2e-3, 1e-4), (2000.0, 2e-4, 2e-3)] {
        let fire = Fire {
            dt,
            dt_max: 2.0 * dt,
            force_tolerance: tol,
            max_steps: 1_000_000,
        };
        let done = fire
            .minimize(&sys.penalized(omega), &mut q)
            .expect("minimised");
        eprintln!(
            "ω = {omega}: {} FIRE steps, V_ω = {}",
            done.steps, done.energy
        );
    }
    let e = sys.potential_at(&q);
    let r_oo: f64 = (0..3)
        .map(|c| (q[9 + c] - q[c]).powi(2))
        .sum::<f64>()
        .sqrt();
    eprintln!(
        "dimer: E = {e:.5} kcal/mol, R_OO = {r_oo:.4} Å, |g| = {:.1e}",
        sys.constraint_norm(&q)
    );
    assert!((e + 6.540).abs() < 2e-3, "E = {e}");
    assert!((r_oo - 2.747).abs() < 2e-3, "R_OO = {r_oo}");
    assert!(sys.constraint_norm(&q) < 1e-5);
}

#[test]
fn thermal_velocities_are_rigid_motions_at_the_temperature() {
    let w = Water::tip3p();
    let n = 300;
    let sys = w.assemble(n);
    let q = w.cluster(n, 3.1, 11);
    let kt = 0.6;
    let v = zs_systems::water::thermal_velocities(&w, &q, kt, 3);
    // Tangent to every constraint: d/dt g = (g(q + εv) − g(q − εv)) / 2ε = O(ε²) for a rigid
    // motion.
    let eps = 1e-5;
    let (qp, qm): (Vec<f64>, Vec<f64>) = q
        .iter()
        .zip(&v)
        .map(|(x, u)| (x + eps * u, x - eps * u))
        .unzip();
    let (mut gp, mut gm) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    sys.constraints_into(&qp, &mut gp);
    sys.constraints_into(&qm, &mut gm);
    let rate = gp
        .iter()
        .zip(&gm)
        .map(|(a, b)| ((a - b) / (2.0 * eps)).abs())
        .fold(0.0, f64::max);
    assert!(rate < 1e-8, "|dg/dt| ≈ {rate:e}");
    // No net momentum.
    let m = [w.m_o, w.m_h, w.m_h];
    for c in 0..3 {
        let p: f64 = (0..3 * n).map(|k| m[k % 3] * v[3 * k + c]).sum();
        assert!(p.abs() < 1e-10, "P_{c} = {p:e}");
    }
    // Equipartition over the 6n − 3 rigid degrees of freedom: ½ Σ m v² ≈ (6n − 3) kT / 2,
    // within 4 standard deviations (√(2/(6n−3)) relative).
    let ke: f64 = (0..3 * n)
        .map(|k| 0.5 * m[k % 3] * (0..3).map(|c| v[3 * k + c].powi(2)).sum::<f64>())
        .sum();
    let dof = (6 * n - 3) as f64;
    let ratio = ke / (0.5 * dof * kt);
    assert!(
        (ratio - 1.0).abs() < 4.0 * (2.0 / dof).sqrt(),
        "KE / expected = {ratio}"
    );
}

#[test]
fn zs_eval_water_agrees_with_the_reference_and_zs_run_water_minimizes_and_integrates() {
    let dir = std::env::temp_dir().join(format!("zs-water-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 3;
    let q = random_point(n, 21);
    let names = Water::coordinate_names(n);
    let mut text = format!("t,{}\n0", names.join(","));
    for x in &q {
        text += &format!(",{x:e}");
    }
    text.push('\n');
    std::fs::write(dir.join("state.csv"), text).unwrap();
    let zs = env!("CARGO_BIN_EXE_zs");
    let out = std::process::Command::new(zs)
        .args(["eval", "water", "--n", "3", "--in"])
        .arg(dir.join("state.csv"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let row: Vec<f64> = csv
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    let (e, g) = WaterReference::tip3p().energy_gradient(&q);
    assert!(rel(row[0], e) < 1e-12, "{} vs {e}", row[0]);
    for i in 0..g.len() {
        assert!((row[1 + i] - g[i]).abs() < 1e-10 * (1.0 + g[i].abs()));
    }
    let file = dir.join("run.csv");
    let out = std::process::Command::new(zs)
        .args([
            "run",
            "water",
            "--n",
            "4",
            "--integrator",
            "zss-stiff",
            "--t-end",
            "1",
            "--minimize",
            "--quiet",
            "--out",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("minimized"), "{stdout}");
    let rows = std::fs::read_to_string(&file).unwrap();
    assert!(rows.starts_with("t,O1x,O1y,O1z,Ha1x"), "{}", &rows[..60]);
    assert_eq!(rows.lines().count(), 1 + 21);
    // The same 21 states as extended XYZ: 12 atoms per frame, element symbols first.
    let xyz = std::fs::read_to_string(file.with_extension("xyz")).unwrap();
    let lines: Vec<&str> = xyz.lines().collect();
    assert_eq!(lines.len(), 21 * (2 + 12));
    assert_eq!(lines[0], "12");
    assert!(lines[1].starts_with("Properties=species:S:1:pos:R:3 Time=0"));
    assert!(lines[2].starts_with("O ") && lines[3].starts_with("H ") && lines[4].starts_with("H "));
    let bad = std::process::Command::new(zs)
        .args(["run", "water", "--gravity", "printed"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A water run killed after its first checkpoint and resumed writes the CSV and the XYZ file of
/// the uninterrupted run, byte for byte.
#[test]
fn a_killed_water_run_resumes_to_the_same_csv_and_xyz() {
    use std::time::{Duration, Instant};
    let zs = env!("CARGO_BIN_EXE_zs");
    let dir = std::env::temp_dir().join(format!("zs-water-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Retried with a 10× longer run if the process finished before the kill.
    for t_end in ["500", "5000", "50000"] {
        let base = [
            "run",
            "water",
            "--n",
            "6",
            "--integrator",
            "zss-stiff",
            "--minimize",
            "--gamma",
            "0.01",
            "--kt",
            "0.02",
            "--quiet",
            "--every",
            "20",
            "--t-end",
            t_end,
            "--out",
            "w.csv",
            "--checkpoint",
            "w.ck",
            "--checkpoint-every",
            "2000",
        ];
        for f in ["w.csv", "w.xyz", "w.ck", "w.csv.tmp", "w.xyz.tmp"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let mut child = std::process::Command::new(zs)
            .args(base)
            .current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !dir.join("w.ck").exists() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        if child.wait().unwrap().success() {
            continue;
        }
        assert!(
            !dir.join("w.xyz").exists(),
            "a killed run has no final XYZ file"
        );
        let resume: Vec<&str> = base.iter().copied().chain(["--resume", "w.ck"]).collect();
        let o = std::process::Command::new(zs)
            .args(&resume)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (csv, xyz) = (
            std::fs::read(dir.join("w.csv")).unwrap(),
            std::fs::read(dir.join("w.xyz")).unwrap(),
        );
        for f in ["w.csv", "w.xyz", "w.ck"] {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
        let o = std::process::Command::new(zs)
            .args(base)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            csv == std::fs::read(dir.join("w.csv")).unwrap(),
            "CSV differs"
        );
        assert!(
            xyz == std::fs::read(dir.join("w.xyz")).unwrap(),
            "XYZ differs"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    }
    panic!("every run finished before it could be killed");
}

/// `--max-radius`: a molecule beyond the limit stops the run with a typed guard violation; the
/// CSV and XYZ files keep the states up to the last good one and are marked incomplete.
#[test]
fn a_molecule_beyond_max_radius_stops_the_run_and_marks_the_files() {
    let dir = std::env::temp_dir().join(format!("zs-water-guard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let q = Water::tip3p().cluster(7, 3.1, 0);
    let radius = zs_systems::water::ClusterGuard::radius(&q);
    assert!(radius > 3.0 && radius < 5.0, "{radius}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_zs"))
        .args([
            "run",
            "water",
            "--integrator",
            "zss-stiff",
            "--t-end",
            "5",
            "--quiet",
        ])
        .args(["--max-radius", "1.0", "--out", "g.csv"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("largest oxygen distance"), "{err}");
    for f in ["g.csv.incomplete", "g.xyz.incomplete"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.contains("guard-violated"), "{f}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("g.csv"))
            .unwrap()
            .lines()
            .count(),
        2
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
