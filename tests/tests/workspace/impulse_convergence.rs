//! The impulse paper, Figs. 1–3 as a test: log-log error vs macro step `h` of the impulse,
//! mollified impulse and projected impulse methods on the stiff spring double pendulum
//! (`zs_systems::stiff_spring`), in positions and in projected momenta `P(q)ᵀp`, at two values of ε
//! an order of magnitude apart (10⁻³, 10⁻⁴), with macro steps far larger than ε (`h/ε` from 50 to
//! 2000; the micro-steps, a fraction of ε, resolve the oscillation).
//!
//! # What is measured
//! The reference is the same Hamiltonian at the same ε, integrated with Störmer–Verlet at a
//! small step. The error of a run is the maximum over its macro-step times of the maximum norm
//! (the impulse paper, Fig. 1's measure), in `q` and in `P(q)ᵀp`.
//!
//! The micro-step `δ` of the methods and the step of the reference are the same, `δ = ε/100` in
//! the default run. The measured difference is then the macro-step (splitting) error: the
//! reference's own error, an `O((δ/ε)²)` phase error of the fast oscillation (measured: ≈ 7·10⁻⁶
//! in positions at `δ = ε/100`, for both ε), is shared by the methods' micro-integration. That
//! the measurement is converged in `δ` is asserted: halving `δ` (methods and reference) changes
//! the errors at the smallest `h` by at most 2%. The `#[ignore]`d sweep runs at `δ = ε/1000`,
//! where the reference itself is converged (≈ 7·10⁻⁸) far below every error it measures, and
//! gives the same numbers to 3 digits.
//!
//! The paper measures against the effective constrained system (its eq. 8); the mollified and
//! projected methods are `O(h²)` from it and it is `O(ε)`-close to the oscillatory solution
//! (eqs. 13, 16–17), so against our reference their errors are `O(h²)` plus an ε-dependent
//! floor. The `h` range of each ε is chosen above that floor: measured (ignored sweep), the
//! projected method's floor is ≈ 2·10⁻⁵ at ε = 10⁻³ (so `h ≥ 0.05` there; at ε = 10⁻² it is
//! ≈ 1.3·10⁻⁴ and hides order 2 for every `h ≤ 0.2`), below 2·10⁻⁶ at ε = 10⁻⁴.
//!
//! # Claims (each asserted)
//! - mollified and projected impulse: fitted slope within 0.1 of 2 in positions and in
//!   projected momenta at both ε (Theorem 2.2, Figs. 2–3);
//! - uniformly in ε: on the macro steps common to both ε (0.2, 0.1, 0.05), the constant
//!   `C(ε) = max_h e(h)/h²` changes by less than 25% between ε = 10⁻³ and 10⁻⁴;
//! - plain impulse: fitted slope below 1.5 (not order 2) in positions and projected momenta at
//!   both ε, and not uniform in ε: its `C(ε)` grows by a factor ≥ 3 from ε = 10⁻³ to 10⁻⁴
//!   (Fig. 1).
//!
//! Runtime: about a second with `[profile.test]` (opt-level 2); a run costs `T/δ = 100/ε`
//! force evaluations whatever `h`.

use zs_runtime::verify::slope;
use zs_systems::stiff_spring::{
    convergence_table_with, initial_state, max_errors, reference_for, ConvergencePoint,
    ConvergenceSetup, ImpulseMethod,
};
use zs_systems::StiffSpringDoublePendulum;

struct Sweep {
    eps: f64,
    setup: ConvergenceSetup,
    hs: Vec<f64>,
    /// One table per method, in `ImpulseMethod::ALL` order.
    tables: Vec<Vec<ConvergencePoint>>,
    /// Max difference between the reference at step `δ` and at `δ/2` (positions, projected
    /// momenta): the reference's own discretization error is ≈ 4/3 of it.
    reference_check: (f64, f64),
    /// Per method, the errors at the smallest `h` measured again with micro-step and
    /// reference step both halved (positions, projected momenta).
    halved: Vec<(f64, f64)>,
}

impl Sweep {
    fn run(eps: f64, inv_h: &[u32], setup: ConvergenceSetup) -> Sweep {
        let hs: Vec<f64> = inv_h.iter().map(|&n| 1.0 / f64::from(n)).collect();
        let h_min = [hs.iter().copied().fold(f64::INFINITY, f64::min)];
        let sys = StiffSpringDoublePendulum::example1(eps);
        let x0 = initial_state(&sys);
        let reference = reference_for(&sys, eps, &x0, &hs, &setup);
        let halved_setup = ConvergenceSetup {
            micro_step_per_eps: 0.5 * setup.micro_step_per_eps,
            reference_step_per_eps: 0.5 * setup.reference_step_per_eps,
            ..setup
        };
        let reference_fine = reference_for(&sys, eps, &x0, &hs, &halved_setup);
        let reference_check = max_errors(&sys, &reference, &reference_fine);
        let table = |m, reference, hs: &[f64], setup| {
            convergence_table_with(&sys, eps, &x0, reference, m, hs, setup).unwrap()
        };
        let tables = ImpulseMethod::ALL
            .iter()
            .map(|&m| table(m, &reference, &hs, &setup))
            .collect();
        let halved = ImpulseMethod::ALL
            .iter()
            .map(|&m| {
                let r = table(m, &reference_fine, &h_min, &halved_setup)[0];
                (r.position_error, r.momentum_error)
            })
            .collect();
        Sweep {
            eps,
            setup,
            hs,
            tables,
            reference_check,
            halved,
        }
    }

    /// The same sweep restricted to the macro steps `1/n`, `n ∈ keep`.
    fn restricted(&self, keep: &[u32]) -> Sweep {
        let idx: Vec<usize> = keep
            .iter()
            .map(|&n| {
                self.hs
                    .iter()
                    .position(|&h| (h - 1.0 / f64::from(n)).abs() < 1e-15)
                    .unwrap()
            })
            .collect();
        Sweep {
            eps: self.eps,
            setup: self.setup,
            hs: idx.iter().map(|&i| self.hs[i]).collect(),
            tables: self
                .tables
                .iter()
                .map(|t| idx.iter().map(|&i| t[i]).collect())
                .collect(),
            reference_check: self.reference_check,
            halved: self.halved.clone(),
        }
    }

    fn slopes(&self, method: usize) -> (f64, f64) {
        let t = &self.tables[method];
        let eq: Vec<f64> = t.iter().map(|r| r.position_error).collect();
        let ep: Vec<f64> = t.iter().map(|r| r.momentum_error).collect();
        (slope(&self.hs, &eq), slope(&self.hs, &ep))
    }

    fn report(&self) {
        let inv = 1.0 / self.setup.reference_step_per_eps;
        println!(
            "ε = {:.0e}, micro-step = reference step = ε/{inv:.0}; reference ε/{inv:.0} vs \
             ε/{:.0}: max diff positions {:.2e}, projected momenta {:.2e}",
            self.eps,
            2.0 * inv,
            self.reference_check.0,
            self.reference_check.1
        );
        for (m, method) in ImpulseMethod::ALL.iter().enumerate() {
            let t = &self.tables[m];
            let (sq, sp) = self.slopes(m);
            let secs: f64 = t.iter().map(|r| r.seconds).sum();
            println!(
                "  {:<18} fitted slope q {sq:.3}, P(q)ᵀp {sp:.3}   (runs: {secs:.2} s)",
                method.name()
            );
            for r in t {
                println!(
                    "    h = {:.5} (h/ε = {:>5.0}, {:>6} micro-steps): |q err| {:.3e}, \
                     |P(q)ᵀp err| {:.3e}",
                    r.h,
                    r.h / self.eps,
                    r.micro_steps,
                    r.position_error,
                    r.momentum_error
                );
            }
            println!(
                "    smallest h, micro-step and reference step halved: |q err| {:.3e}, \
                 |P(q)ᵀp err| {:.3e}",
                self.halved[m].0, self.halved[m].1
            );
        }
    }

    /// The measurement is converged in the micro-step: halving it (methods and reference)
    /// changes the errors at the smallest `h` by at most 2%.
    fn check_micro_step_converged(&self) {
        for (m, method) in ImpulseMethod::ALL.iter().enumerate() {
            let r = self.tables[m]
                .iter()
                .min_by(|a, b| a.h.total_cmp(&b.h))
                .unwrap();
            let hv = self.halved[m];
            for (e, e2) in [(r.position_error, hv.0), (r.momentum_error, hv.1)] {
                assert!(
                    (e - e2).abs() <= 0.02 * e,
                    "{}, ε = {}, h = {}: error {e:e} with micro-step ε·{}, {e2:e} with half",
                    method.name(),
                    self.eps,
                    r.h,
                    self.setup.micro_step_per_eps
                );
            }
        }
    }

    /// Mollified and projected: order 2 (± 0.1); impulse: fitted slope below 1.5.
    fn check_orders(&self) {
        for m in [1, 2] {
            let (sq, sp) = self.slopes(m);
            assert!(
                (sq - 2.0).abs() <= 0.1 && (sp - 2.0).abs() <= 0.1,
                "{}, ε = {}: slopes {sq:.3} (q), {sp:.3} (P(q)ᵀp), expected 2 ± 0.1",
                ImpulseMethod::ALL[m].name(),
                self.eps
            );
        }
        let (sq, sp) = self.slopes(0);
        assert!(
            sq < 1.5 && sp < 1.5,
            "impulse, ε = {}: slopes {sq:.3} (q), {sp:.3} (P(q)ᵀp): expected clearly below 2",
            self.eps
        );
    }
}

/// `C(ε) = max_h e(h)/h²` over the macro steps common to `a` and `b`, for method `m`
/// (positions, projected momenta): the constant of an `e ≤ C h²` bound on that range.
fn constants(s: &Sweep, other: &Sweep, m: usize) -> (f64, f64) {
    let mut c = (0.0f64, 0.0f64);
    let mut common = 0;
    for r in &s.tables[m] {
        if other.hs.contains(&r.h) {
            common += 1;
            c.0 = c.0.max(r.position_error / (r.h * r.h));
            c.1 = c.1.max(r.momentum_error / (r.h * r.h));
        }
    }
    assert!(common >= 3, "too few common macro steps");
    c
}

/// Theorem 2.2's uniformity in ε, measured on the macro steps common to `a` (larger ε) and `b` (ε
/// ten times smaller): for mollified and projected impulse the constant `C` of `e ≤ C h²` changes
/// by less than 25% from one ε to the other; for plain impulse it grows by a factor of at least 3
/// (the impulse paper, Fig. 1: the impulse method does not converge uniformly). The impulse errors
/// are erratic in `h` (near-resonant macro steps), so its growth depends on the common steps: 4.6
/// (q) and 3.4 (P(q)ᵀp) on h = 0.2, 0.1, 0.05, the default test's; 2.2 and 2.4 if h = 1/8 and 1/16
/// are added (measured in the ignored sweep, not asserted).
fn check_uniform_in_eps(a: &Sweep, b: &Sweep) {
    for (m, method) in ImpulseMethod::ALL.iter().enumerate() {
        let (ca, cb) = (constants(a, b, m), constants(b, a, m));
        let ratios = (cb.0 / ca.0, cb.1 / ca.1);
        println!(
            "{:<18} C(ε) = max e/h² on common h: ε = {:.0e}: {:.3e} (q), {:.3e} (P(q)ᵀp); \
             ε = {:.0e}: {:.3e}, {:.3e}; ratios {:.2}, {:.2}",
            method.name(),
            a.eps,
            ca.0,
            ca.1,
            b.eps,
            cb.0,
            cb.1,
            ratios.0,
            ratios.1
        );
        for r in [ratios.0, ratios.1] {
            if m == 0 {
                assert!(r >= 3.0, "impulse: C(ε) ratio {r:.2}, expected growth ≥ 3");
            } else {
                assert!(
                    (0.8..=1.25).contains(&r),
                    "{}: C(ε) ratio {r:.2}, expected within [0.8, 1.25]",
                    method.name()
                );
            }
        }
    }
}

#[test]
fn mollified_and_projected_impulse_are_order_two_uniformly_in_eps_impulse_is_not() {
    let setup = ConvergenceSetup::default();
    // ε = 1e-3: h from 0.2 to 0.05 (h/ε 200 … 50); ε = 1e-4: h from 0.2 to 0.0125 (2000 … 125).
    let a = Sweep::run(1e-3, &[5, 8, 10, 16, 20], setup);
    let b = Sweep::run(1e-4, &[5, 10, 20, 40, 80], setup);
    a.report();
    b.report();
    for s in [&a, &b] {
        s.check_micro_step_converged();
        s.check_orders();
    }
    check_uniform_in_eps(&a, &b);
}

/// The full sweep behind the numbers quoted in the module docs: 14 macro steps from 1/5 to 1/120 at
/// ε = 10⁻², 10⁻³, 10⁻⁴, with micro-step and reference step ε/1000 (ten times finer than the
/// default run). Prints the tables. Asserts that the reference itself is converged (its change when
/// halving the step is below 5% of the smallest error it measures), that the measurement is
/// converged in the micro-step, and the default test's claims: order 2 at ε = 10⁻³ on the default
/// test's h = 1/5, 1/8, 1/10, 1/16, 1/20 and at ε = 10⁻⁴ on all 14; uniformity in ε on the default
/// test's macro steps (the `C(ε)` ratios on more common steps are printed). ε = 10⁻² is printed
/// only. About half a minute in release on a loaded machine: `cargo test --release -p zs-tests
/// --test workspace impulse_convergence:: -- --ignored --nocapture`
#[test]
#[ignore = "minutes; run with --ignored (command in the doc comment)"]
fn full_sweep_fine_micro_steps() {
    let setup = ConvergenceSetup {
        micro_step_per_eps: 1e-3,
        reference_step_per_eps: 1e-3,
        ..ConvergenceSetup::default()
    };
    let all = [5, 6, 8, 10, 12, 15, 16, 20, 24, 30, 40, 60, 80, 120];
    Sweep::run(1e-2, &all, setup).report();
    let a = Sweep::run(1e-3, &all, setup);
    a.report();
    let b = Sweep::run(1e-4, &all, setup);
    b.report();
    a.check_micro_step_converged();
    b.check_micro_step_converged();
    let a = a.restricted(&[5, 8, 10, 16, 20]);
    let b_default = b.restricted(&[5, 10, 20, 40, 80]);
    for s in [&a, &b] {
        let smallest = s.tables[1..]
            .iter()
            .flatten()
            .map(|r| r.position_error.min(r.momentum_error))
            .fold(f64::INFINITY, f64::min);
        let (dq, dp) = s.reference_check;
        assert!(
            dq.max(dp) <= 0.05 * smallest,
            "ε = {}: reference changes by {dq:e}, {dp:e}; smallest error {smallest:e}",
            s.eps
        );
        s.check_orders();
    }
    // on the default test's macro steps (see `check_uniform_in_eps` for the others)
    check_uniform_in_eps(&a, &b_default);
    let b_more = b.restricted(&[5, 8, 10, 16, 20]);
    for m in 0..3 {
        let (ca, cb) = (constants(&a, &b_more, m), constants(&b_more, &a, m));
        println!(
            "{:<18} C(ε) ratio on h = 1/5, 1/8, 1/10, 1/16, 1/20: {:.2} (q), {:.2} (P(q)ᵀp)",
            ImpulseMethod::ALL[m].name(),
            cb.0 / ca.0,
            cb.1 / ca.1
        );
    }
}
