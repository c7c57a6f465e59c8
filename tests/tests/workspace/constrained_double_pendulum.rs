//! SHAKE and RATTLE (Fernández-Pendás, eq. 4; `docs/INTEGRATORS.md` §7–8) on the unpenalized double
//! pendulum of Tao & Owhadi §4.1 (`DoublePendulum::paper()`: L1 = 1, L2 = √2, unit masses, physical
//! gravity `V = y1 + y2`, q(0) = (0, -1, 1, -2) at rest; 4 Cartesian coordinates, 2 constraints),
//! and the multipliers of the penalized run (Thm 1.2, eq. 8; Fig. 2b) against SHAKE's.
//!
//! The measured values are printed (`cargo test -p zs-tests --test workspace
//! constrained_double_pendulum:: -- --nocapture`); each threshold is explained beside it.

use zs_runtime::driver::run;
use zs_runtime::verify::slope;
use zs_runtime::{
    Clocked, MechanicalSystem, PenalizedMultipliers, Potential, Rattle, Shake, ShakeSolver, State,
    StepError, StepErrorKind, TimeSeries, ZhangSkeel,
};
use zs_systems::double_pendulum::generalized::GeneralizedPendulum;
use zs_systems::double_pendulum::{DoublePendulum, BETA};

const SOLVERS: [ShakeSolver; 2] = [ShakeSolver::GaussSeidel, ShakeSolver::Newton];

fn system() -> DoublePendulum {
    DoublePendulum::paper()
}

/// `max_c |g_c(q)|`.
fn residual(sys: &DoublePendulum, q: &[f64; 4]) -> f64 {
    sys.constraints(q).iter().fold(0.0, |m, g| m.max(g.abs()))
}

/// `max_c |G(q) M⁻¹ p|_c = max_c |∇g_c(q) · v|` (the tangency condition, Fernández-Pendás, eq. 2).
fn tangency(sys: &DoublePendulum, s: &State<4>) -> f64 {
    sys.constraint_jacobian(&s.q)
        .iter()
        .map(|row| (0..4).map(|i| row[i] * s.v[i]).sum::<f64>().abs())
        .fold(0.0, f64::max)
}

fn max_abs_diff(a: &[f64; 4], b: &[f64; 4]) -> f64 {
    (0..4).map(|i| (a[i] - b[i]).abs()).fold(0.0, f64::max)
}

/// A state reached by 1 time unit of RATTLE at h = 1e-3: both rods moving, both under tension.
fn moving_state(sys: &DoublePendulum) -> State<4> {
    let mut r = Rattle::new(1e-3)
        .with_solver(ShakeSolver::Newton)
        .with_tolerance(1e-14);
    let mut s = DoublePendulum::initial_state();
    for _ in 0..1000 {
        r.step(sys, &mut s).unwrap();
    }
    assert!(s.v.iter().all(|v| v.abs() > 1e-2), "{s:?}");
    s
}

#[test]
fn constraints_hold_and_rattle_is_tangent_at_every_step() {
    let sys = system();
    for h in [0.01, 0.1] {
        let n = (10.0 / h) as usize;
        for solver in SOLVERS {
            let tol = 1e-12;
            let mut shake = Shake::new(h).with_solver(solver).with_tolerance(tol);
            let mut rattle = Rattle::new(h).with_solver(solver).with_tolerance(tol);
            let (mut s, mut r) = (
                DoublePendulum::initial_state(),
                DoublePendulum::initial_state(),
            );
            let (mut g_s, mut g_r, mut tan_r, mut tan_s) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
            for _ in 0..n {
                shake.step(&sys, &mut s).unwrap();
                rattle.step(&sys, &mut r).unwrap();
                g_s = g_s.max(residual(&sys, &s.q));
                g_r = g_r.max(residual(&sys, &r.q));
                tan_r = tan_r.max(tangency(&sys, &r));
                tan_s = tan_s.max(tangency(&sys, &s));
            }
            let (st_s, st_r) = (shake.stats(), rattle.stats());
            println!(
                "h = {h}, {:>12}: max|g| SHAKE {g_s:.2e} RATTLE {g_r:.2e}; \
                 max|G M⁻¹p| RATTLE {tan_r:.2e} (SHAKE {tan_s:.2e}); \
                 iterations/step SHAKE mean {:.2} max {}, RATTLE mean {:.2} max {}",
                solver.name(),
                st_s.iterations as f64 / n as f64,
                st_s.max_step_iterations,
                st_r.iterations as f64 / n as f64,
                st_r.max_step_iterations,
            );
            // By construction of the stopping test, checked here from outside.
            assert!(g_s <= tol && g_r <= tol, "{g_s:e} {g_r:e}");
            // Round-off of the m×m projection: G M⁻¹ p ~ ε·|G|·|p| ≈ 1e-15.
            assert!(tan_r <= 1e-12, "RATTLE tangency {tan_r:e}");
            // SHAKE's velocities are not tangent: their normal component is the pending
            // (h/2)M⁻¹G(q)ᵀλ (module docs), G M⁻¹ p = O(h). Seen here as ≈ 1.5 h.
            assert!(tan_s > 0.1 * h, "SHAKE tangency {tan_s:e}");
            assert!(st_s.max_step_iterations >= 1 && st_r.last_residual <= tol);
        }
    }
}

#[test]
fn shake_and_rattle_positions_coincide() {
    // Fernández-Pendás: SHAKE and RATTLE are equivalent in positions; the positions differ only by
    // the constraint-solve tolerance.
    let sys = system();
    let h = 0.01;
    for (solver, tol) in [
        (ShakeSolver::Newton, 1e-14),
        (ShakeSolver::GaussSeidel, 1e-12),
    ] {
        let mut shake = Shake::new(h).with_solver(solver).with_tolerance(tol);
        let mut rattle = Rattle::new(h).with_solver(solver).with_tolerance(tol);
        let (mut s, mut r) = (
            DoublePendulum::initial_state(),
            DoublePendulum::initial_state(),
        );
        let mut d = 0.0f64;
        let mut dl = 0.0f64;
        for _ in 0..500 {
            shake.step(&sys, &mut s).unwrap();
            rattle.step(&sys, &mut r).unwrap();
            d = d.max(max_abs_diff(&s.q, &r.q));
            let (ls, lr) = (shake.multipliers(), rattle.multipliers());
            dl = dl.max((ls[0] - lr[0]).abs().max((ls[1] - lr[1]).abs()));
        }
        println!(
            "{:>12}, tol {tol:e}: max |q_SHAKE - q_RATTLE| over 500 steps = {d:.2e}, \
             max |λ_SHAKE - λ_RATTLE| = {dl:.2e}",
            solver.name()
        );
        // Each step's q_n+1 is exact up to the solve tolerance (|∇g| ≥ 2 on this manifold, so
        // |δq| ≲ tol), accumulated at worst linearly over 500 steps; λ = Λ/(h²/2) turns a
        // position-level discrepancy δ into ≈ 2δ/(h² λ_min(G M⁻¹ Gᵀ)) with λ_min ≥ 1.75 here.
        assert!(d < 500.0 * tol, "{d:e}");
        assert!(dl < 2.0 * (500.0 * tol) / (h * h * 1.75), "{dl:e}");
    }
}

#[test]
fn order_two() {
    let sys = system();
    let gp = GeneralizedPendulum::paper();
    let t_end = 2.0;
    let reference = *gp
        .paper_reference_trajectory(t_end, 1e-4, 1)
        .last()
        .unwrap();
    let hs = [0.04, 0.02, 0.01, 0.005];
    for solver in SOLVERS {
        let (mut eq_s, mut ev_s, mut eq_r, mut ev_r) = (vec![], vec![], vec![], vec![]);
        for &h in &hs {
            let n = (t_end / h).round() as usize;
            let mut shake = Shake::new(h).with_solver(solver).with_tolerance(1e-14);
            let mut rattle = Rattle::new(h).with_solver(solver).with_tolerance(1e-14);
            let (mut s, mut r) = (
                DoublePendulum::initial_state(),
                DoublePendulum::initial_state(),
            );
            for _ in 0..n {
                shake.step(&sys, &mut s).unwrap();
                rattle.step(&sys, &mut r).unwrap();
            }
            eq_s.push(max_abs_diff(&s.q, &reference.q));
            ev_s.push(max_abs_diff(&s.v, &reference.v));
            eq_r.push(max_abs_diff(&r.q, &reference.q));
            ev_r.push(max_abs_diff(&r.v, &reference.v));
        }
        let (kq_s, kv_s, kq_r, kv_r) = (
            slope(&hs, &eq_s),
            slope(&hs, &ev_s),
            slope(&hs, &eq_r),
            slope(&hs, &ev_r),
        );
        let f = |v: &[f64]| {
            v.iter()
                .map(|e| format!("{e:.2e}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("{:>12}: h = {hs:?}, T = {t_end}", solver.name());
        println!("  SHAKE  q errors {}  slope {kq_s:.3}", f(&eq_s));
        println!("  SHAKE  v errors {}  slope {kv_s:.3}", f(&ev_s));
        println!("  RATTLE q errors {}  slope {kq_r:.3}", f(&eq_r));
        println!("  RATTLE v errors {}  slope {kv_r:.3}", f(&ev_r));
        assert!((kq_s - 2.0).abs() < 0.1, "SHAKE positions: slope {kq_s}");
        assert!((kq_r - 2.0).abs() < 0.1, "RATTLE positions: slope {kq_r}");
        assert!((kv_r - 2.0).abs() < 0.1, "RATTLE velocities: slope {kv_r}");
        // SHAKE's velocity lacks the pending (h/2)G(q)ᵀλ: first order (module docs).
        assert!((kv_s - 1.0).abs() < 0.1, "SHAKE velocities: slope {kv_s}");
    }
}

#[test]
fn reversibility() {
    let sys = system();
    let s0 = moving_state(&sys);
    for solver in SOLVERS {
        for h in [0.01, 0.05] {
            // RATTLE: 10 steps of h, then 10 of -h.
            let mut rattle = Rattle::new(h).with_solver(solver).with_tolerance(1e-14);
            let mut s = s0;
            for _ in 0..10 {
                rattle.step(&sys, &mut s).unwrap();
            }
            rattle.set_h(-h);
            for _ in 0..10 {
                rattle.step(&sys, &mut s).unwrap();
            }
            let e_r = max_abs_diff(&s.q, &s0.q).max(max_abs_diff(&s.v, &s0.v));

            // SHAKE: one step of h, then one of -h.
            let mut shake = Shake::new(h).with_solver(solver).with_tolerance(1e-14);
            let mut s = s0;
            shake.step(&sys, &mut s).unwrap();
            let solved = shake.solved_multipliers();
            shake.set_h(-h);
            shake.step(&sys, &mut s).unwrap();
            let back_iterations = shake.stats().last_iterations;
            let e_q = max_abs_diff(&s.q, &s0.q);
            // Predicted velocity defect: -(h/2) M⁻¹ G(q0)ᵀ λ_solved (unit masses).
            let jac = sys.constraint_jacobian(&s0.q);
            let predicted: [f64; 4] = core::array::from_fn(|i| {
                s0.v[i] - 0.5 * h * (jac[0][i] * solved[0] + jac[1][i] * solved[1])
            });
            let e_v = max_abs_diff(&s.v, &s0.v);
            let e_pred = max_abs_diff(&s.v, &predicted);
            println!(
                "{:>12}, h = {h}: RATTLE 10 steps h then -h: {e_r:.2e}; SHAKE h then -h: \
                 |Δq| {e_q:.2e}, |Δv| {e_v:.2e}, |v - (v0 - (h/2)Gᵀλ)| {e_pred:.2e} \
                 (backward solve: {back_iterations} iterations)",
                solver.name()
            );
            assert!(e_r <= 1e-12, "RATTLE not reversible: {e_r:e}");
            assert!(e_q <= 1e-12, "SHAKE positions not reversible: {e_q:e}");
            assert!(
                e_pred <= 1e-12,
                "SHAKE velocity defect not as predicted: {e_pred:e}"
            );
            assert!(
                e_v > 1e-4,
                "SHAKE velocity unexpectedly reversible: {e_v:e}"
            );
        }
    }
}

#[test]
fn non_convergence_is_a_typed_error_and_leaves_the_state() {
    let sys = system();
    let s0 = moving_state(&sys);
    for solver in SOLVERS {
        // One good small step first (default cap), so the failing step's index is 1.
        let mut shake = Shake::new(1e-3).with_solver(solver);
        let mut warm = s0;
        shake.step(&sys, &mut warm).unwrap();
        let mut shake = shake.with_max_iterations(1);
        shake.set_h(0.5);
        let before = warm;
        let err = shake.step(&sys, &mut warm).unwrap_err();
        println!("{:>12}: {err}", solver.name());
        match err {
            StepError {
                step,
                t,
                kind:
                    StepErrorKind::NotConverged {
                        solver: name,
                        iterations,
                        residual,
                    },
            } => {
                assert_eq!(name, "SHAKE");
                assert_eq!(step, 1);
                assert_eq!(t, before.t);
                assert_eq!(iterations, 1);
                assert!(residual > shake.tolerance() && residual.is_finite());
            }
            other => panic!("expected NotConverged, got {other:?}"),
        }
        // Untouched, bit for bit; the step was not counted.
        assert_eq!(warm.q.map(f64::to_bits), before.q.map(f64::to_bits));
        assert_eq!(warm.v.map(f64::to_bits), before.v.map(f64::to_bits));
        assert_eq!(warm.t.to_bits(), before.t.to_bits());
        assert_eq!(shake.steps_taken(), 1);
        // With the default cap the same step converges.
        let mut ok = shake.clone().with_max_iterations(100);
        ok.step(&sys, &mut warm).unwrap();
        assert!(residual(&sys, &warm.q) <= ok.tolerance());

        let mut rattle = Rattle::new(0.5).with_solver(solver).with_max_iterations(1);
        let mut r = before;
        let err = rattle.step(&sys, &mut r).unwrap_err();
        assert!(matches!(
            err,
            StepError {
                step: 0,
                kind: StepErrorKind::NotConverged { iterations: 1, .. },
                ..
            }
        ));
        assert_eq!(r, before);
    }
}

/// `λ_min(G M⁻¹ Gᵀ)(q)` of the double pendulum: the smallest squared frequency of the
/// penalty modes is `ω² λ_min` (unit masses).
fn min_mode(sys: &DoublePendulum, q: &[f64; 4]) -> f64 {
    let g = sys.constraint_jacobian(q);
    let m = Potential::masses(sys);
    let a: [[f64; 2]; 2] = core::array::from_fn(|r| {
        core::array::from_fn(|c| (0..4).map(|i| g[r][i] * g[c][i] / m[i]).sum())
    });
    let (mean, half_diff) = (0.5 * (a[0][0] + a[1][1]), 0.5 * (a[0][0] - a[1][1]));
    mean - (half_diff * half_diff + a[0][1] * a[0][1]).sqrt()
}

/// SHAKE's λ (Newton, h = 1e-3, T = 5) against the penalized estimate of eq. 8 (Z&S, β = 0.4,
/// window 0.2, h ω = 0.05) at ω = 20 and ω = 100: both window means over `[t, t + 0.2]` on a
/// grid of `t` (so the window's own `O(T)` error cancels).
///
/// Bound (module docs of `zs_runtime::multipliers`): `ω²g` oscillates about λ with an amplitude
/// `A ≤ max_t ‖λ(t)‖₂` (the run starts at `g = 0`, the equilibrium is `g ≈ λ/ω²`) at frequencies
/// `≥ Ω_min = ω·√(min_t λ_min(G M⁻¹ Gᵀ))`, and the window mean of such an oscillation is at most
/// `2A/(Ω_min T)`. The remaining terms, the `O(1/ω²)` modelling error of the slow motion and the
/// Z&S bias of the mean at h ω = 0.05 (about 5e-4, measured), are far smaller.
#[test]
fn shake_multipliers_agree_with_the_penalized_estimate() {
    let sys = system();
    let (t_end, window): (f64, f64) = (5.0, 0.2);

    // SHAKE's λ(t_n) as a time series.
    let h_shake: f64 = 1e-3;
    let n = (t_end / h_shake).round() as usize;
    let mut shake = Shake::new(h_shake)
        .with_solver(ShakeSolver::Newton)
        .with_tolerance(1e-13);
    let mut lambda_shake = TimeSeries::<2>::with_capacity(n);
    let mut s = DoublePendulum::initial_state();
    let (mut amplitude, mut mode) = (0.0f64, f64::INFINITY);
    for _ in 0..n {
        mode = mode.min(min_mode(&sys, &s.q));
        shake.step(&sys, &mut s).unwrap();
        let l = shake.multipliers();
        amplitude = amplitude.max(l[0].hypot(l[1]));
        assert!(lambda_shake.push(shake.multipliers_time(), l));
    }
    let l0 = lambda_shake.values()[0];
    // Closed form at rest: (G M⁻¹ Gᵀ) λ = -G M⁻¹ ∇V, G = [[0, -2, 0, 0], [-2, 2, 2, -2]],
    // ∇V = (0, 1, 0, 1): [[4, -4], [-4, 16]] λ = (2, 0), λ(0) = (2/3, 1/6) — both rods under
    // tension, λ > 0 in this crate's sign (eq. 8's sign: < 0). Released from rest, λ(t) is even
    // in t, so the O(h) error of λ_0 vanishes and O(h²) = 1e-6 remains.
    let exact0 = [2.0 / 3.0, 1.0 / 6.0];
    let e0 = (l0[0] - exact0[0]).abs().max((l0[1] - exact0[1]).abs());
    println!("SHAKE λ_0 - λ(0) = {e0:.2e}");
    assert!(e0 < h_shake * h_shake, "{l0:?}");
    println!("SHAKE λ(0) = {l0:?}, max ‖λ‖ = {amplitude:.4}, min λ_min(G M⁻¹ Gᵀ) = {mode:.4}");

    let mut errs = vec![];
    for omega in [20.0, 100.0] {
        let h = 0.05 / omega;
        let target = sys.penalized(omega);
        let steps = (t_end / h).round() as usize;
        let mut est = PenalizedMultipliers::from_penalized(&target, window, steps + 1);
        let mut state = DoublePendulum::initial_state();
        let summary = run(
            &mut ZhangSkeel::new(BETA, h),
            &target,
            &mut state,
            t_end,
            &mut [&mut est],
        );
        assert!(summary.is_ok(), "{:?}", summary.error);
        let (mut emax, mut esq, mut count) = ([0.0f64; 2], [0.0f64; 2], 0usize);
        let mut t = 0.0;
        while t + window <= t_end - h_shake {
            let lp = est.lambda(t).unwrap();
            let ls = lambda_shake.mean(t, t + window).unwrap();
            for c in 0..2 {
                let e = (lp[c] - ls[c]).abs();
                emax[c] = emax[c].max(e);
                esq[c] += e * e;
            }
            count += 1;
            t += 0.01;
        }
        let rms: [f64; 2] = core::array::from_fn(|c| (esq[c] / count as f64).sqrt());
        let bound = 2.0 * amplitude / (omega * mode.sqrt() * window);
        println!(
            "ω = {omega}, h = {h}: |λ_pen - ⟨λ_SHAKE⟩| max {:.3e} {:.3e}, rms {:.3e} {:.3e}; \
             bound 2A/(Ω_min T) = {bound:.3e}",
            emax[0], emax[1], rms[0], rms[1]
        );
        assert!(emax[0] <= bound && emax[1] <= bound, "{emax:?} > {bound:e}");
        errs.push(emax);
    }
    println!(
        "ratio of the errors ω = 20 → 100: {:.2} {:.2} (1/ω predicts 5 up to the phase factor \
         |sin(ΩT/2)| of the window mean)",
        errs[0][0] / errs[1][0],
        errs[0][1] / errs[1][1]
    );
    assert!(errs[1][0] < errs[0][0] && errs[1][1] < errs[0][1]);
}
