//! `zs reproduce water-stiff` and the diffusion coefficient of `water-box`.

use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use zs_systems::experiments::water_box::{self, Config};
use zs_systems::experiments::water_stiff;

use super::water_box::{box_text, temp, PER_SIDE, RC, SPACING};

/// Walkers whose every step is Gaussian with variance `2 D Δt` per axis give back `D` from the
/// block fits of their mean square displacement, and a drift-free track with no walk gives 0.
#[test]
fn einstein_fits_give_back_a_random_walks_diffusion_coefficient() {
    let mut cfg = Config::lammps("unused".into());
    (cfg.sample_dt, cfg.blocks, cfg.diffusion_fit) = (100.0, 4, (0.5, 2.0));
    // D = 0.25 Å²/ps: 2.5 × 10⁻⁵ cm²/s.
    let (d, dt, walkers, frames): (f64, f64, usize, usize) = (0.25, 0.1, 2000, 160);
    let step = Normal::new(0.0, (2.0 * d * dt).sqrt()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut at = vec![0.0; 3 * walkers];
    let mut track = Vec::new();
    for _ in 0..frames {
        track.extend_from_slice(&at);
        for x in &mut at {
            *x += step.sample(&mut rng);
        }
    }
    let per_block = water_box::diffusion(&track, walkers, &cfg);
    assert_eq!(per_block.len(), 4);
    for got in &per_block {
        assert!((got / 2.5 - 1.0).abs() < 0.05, "{per_block:?} against 2.5");
    }
    let still = vec![1.0; track.len()];
    assert!(water_box::diffusion(&still, walkers, &cfg)
        .iter()
        .all(|&x| x == 0.0));
    // Blocks shorter than the fit's lags: no estimate.
    cfg.blocks = 40;
    assert!(water_box::diffusion(&track, walkers, &cfg).is_empty());
}

/// Both arms on the small lattice box, briefly: SETTLE keeps every distance to rounding, the
/// penalty near them (its start's deviations oscillate, undamped by β = ¼), both give a bound
/// liquid's energies and a table with both columns, and each run's files are written.
#[test]
fn the_water_stiff_experiment_runs_settle_and_the_penalty_side_by_side() {
    let dir = temp("water-stiff");
    let data = dir.join("box.data");
    std::fs::write(&data, box_text(7, true)).expect("write");
    let small = |cfg: &mut Config| {
        cfg.options.rc = RC;
        cfg.r_max = 0.5 * SPACING * PER_SIDE as f64;
        cfg.bins = 60;
        (cfg.t_end, cfg.burn_in, cfg.sample_dt, cfg.blocks) = (200.0, 50.0, 10.0, 3);
        cfg.diffusion_fit = (0.01, 0.03);
    };
    let mut cfg = water_stiff::Config::lammps(data, 0.5, 20.0);
    small(&mut cfg.settle);
    small(&mut cfg.stiff);
    let outs = water_stiff::run(&cfg).expect("runs");
    for out in &outs {
        assert_eq!(out.failure, None);
        assert_eq!(out.energy.len(), 15);
        assert!(
            out.energy.iter().all(|e| e.is_finite() && *e < 0.0),
            "{:?}",
            out.energy
        );
        assert_eq!(out.diffusion.len(), 3);
        assert!(out.diffusion.iter().all(|d| d.is_finite()));
    }
    assert_eq!(outs[0].steps, 100);
    assert_eq!(outs[1].steps, 400);
    assert!(outs[0].deviation < 1e-9, "SETTLE: {}", outs[0].deviation);
    assert!(
        outs[1].deviation > 1e-6 && outs[1].deviation < 0.1,
        "penalty: {}",
        outs[1].deviation
    );
    let report = water_stiff::write(&cfg, &outs, &dir).expect("written");
    let text = report.to_string();
    assert!(
        text.contains("SETTLE") && text.contains("Z&Ss-stiff"),
        "{text}"
    );
    assert!(text.contains("time to the same statistics"), "{text}");
    assert!(report.files.len() >= 4);
    for f in &report.files {
        assert!(f.exists(), "{}", f.display());
    }
}
