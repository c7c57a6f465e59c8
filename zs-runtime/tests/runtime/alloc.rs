//! Steps allocate nothing after set-up (docs/ARCHITECTURE.md, "Conventions").
//!
//! A counting global allocator wraps `System` (`support::counting_alloc`). It counts per thread,
//! so the other tests of the binary, running meanwhile, do not disturb a window; the windows
//! themselves print nothing.
//!
//! Two targets: the penalized double pendulum of the README, defined here with
//! `#[mechanical_system]` (generated code, the `Penalized` adapter), and a hand-written
//! Fermi–Pasta–Ulam chain between two walls, generic in `N` (`Σ φ(r)` over the `N + 1` bonds,
//! `φ(r) = r²/2 + r⁴/4`).

use zs_runtime::driver::run_steps;
use zs_runtime::guards::{ConstraintGuard, EnergyGuard};
use zs_runtime::linalg::{Factorization, solve_shifted};
use zs_runtime::observers::Observer;
use zs_runtime::{
    Clocked, ConstraintObserver, EnergyObserver, MechanicalSystem, MomentumObserver, Potential,
    State, VelocityVerlet, ZhangSkeel, ZhangSkeelSimplified, mechanical_system,
};

use crate::support::counting_alloc;
use counting_alloc::allocations_during;

/// The README's double pendulum, physical gravity.
pub struct DoublePendulum {
    pub l1: f64,
    pub l2: f64,
    pub gravity: f64,
}

#[mechanical_system]
impl DoublePendulum {
    fn masses(&self) -> [f64; 4] {
        [1.0, 1.0, 1.0, 1.0]
    }
    fn potential(&self, q: &[f64; 4]) -> f64 {
        -self.gravity * (q[1] + q[3])
    }
    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
        [
            x1 * x1 + y1 * y1 - self.l1 * self.l1,
            (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2,
        ]
    }
}

/// FPU chain with fixed ends: bonds `r_b = q_b - q_{b-1}` for `b = 0..=N` (`q_{-1} = q_N = 0`).
struct Fpu;

impl Fpu {
    /// Bond `b` joins coordinates `(i, j) = (b - 1, b)` (missing ones are walls).
    fn bond<const N: usize>(q: &[f64; N], b: usize) -> (Option<usize>, Option<usize>, f64) {
        let i = b.checked_sub(1);
        let j = (b < N).then_some(b);
        let r = j.map_or(0.0, |j| q[j]) - i.map_or(0.0, |i| q[i]);
        (i, j, r)
    }
}

impl<const N: usize> Potential<N> for Fpu {
    fn masses(&self) -> [f64; N] {
        core::array::from_fn(|i| 1.0 + 0.1 * i as f64)
    }
    fn potential(&self, q: &[f64; N]) -> f64 {
        (0..=N)
            .map(|b| {
                let r = Self::bond(q, b).2;
                0.5 * r * r + 0.25 * r.powi(4)
            })
            .sum()
    }
    fn gradient(&self, q: &[f64; N]) -> [f64; N] {
        let mut g = [0.0; N];
        for b in 0..=N {
            let (i, j, r) = Self::bond(q, b);
            let d = r + r * r * r;
            if let Some(j) = j {
                g[j] += d;
            }
            if let Some(i) = i {
                g[i] -= d;
            }
        }
        g
    }
    fn hessian(&self, q: &[f64; N]) -> [[f64; N]; N] {
        let mut h = [[0.0; N]; N];
        for b in 0..=N {
            let (i, j, r) = Self::bond(q, b);
            let d = 1.0 + 3.0 * r * r;
            if let Some(j) = j {
                h[j][j] += d;
            }
            if let Some(i) = i {
                h[i][i] += d;
            }
            if let (Some(i), Some(j)) = (i, j) {
                h[i][j] -= d;
                h[j][i] -= d;
            }
        }
        h
    }
    fn third_contraction(&self, q: &[f64; N], a: &[f64; N]) -> [f64; N] {
        let mut t = [0.0; N];
        for b in 0..=N {
            let (i, j, r) = Self::bond(q, b);
            let da = j.map_or(0.0, |j| a[j]) - i.map_or(0.0, |i| a[i]);
            let d = 6.0 * r * da * da;
            if let Some(j) = j {
                t[j] += d;
            }
            if let Some(i) = i {
                t[i] -= d;
            }
        }
        t
    }
}

#[test]
fn steps_allocate_nothing_after_set_up() {
    const STEPS: usize = 1000;
    let s0 = State::new([0.5, -0.3, 0.2, 0.0, 0.1, -0.4], [0.0; 6]);

    // Z&S: first step (set-up) outside the window, then 1000 counted steps.
    let mut zs = ZhangSkeel::new(0.4, 0.05);
    let mut s = s0;
    zs.step(&Fpu, &mut s).unwrap();
    let n_zs = allocations_during(|| {
        for _ in 0..STEPS {
            zs.step(&Fpu, &mut s).unwrap();
        }
    });
    assert!(s.is_finite() && zs.steps_taken() == STEPS as u64 + 1);

    let mut zss = ZhangSkeelSimplified::new(0.4, 0.05);
    let mut s = s0;
    zss.step(&Fpu, &mut s).unwrap();
    let n_zss = allocations_during(|| {
        for _ in 0..STEPS {
            zss.step(&Fpu, &mut s).unwrap();
        }
    });
    assert!(s.is_finite());

    let mut vv = VelocityVerlet::new(0.05);
    let mut s = s0;
    vv.step(&Fpu, &mut s).unwrap();
    let n_vv = allocations_during(|| {
        for _ in 0..STEPS {
            vv.step(&Fpu, &mut s).unwrap();
        }
    });
    assert!(s.is_finite());

    // The macro-generated penalized double pendulum (ω = 20, β = 0.4, h = 0.1: the paper's run).
    let dp = DoublePendulum {
        l1: 1.0,
        l2: 2f64.sqrt(),
        gravity: -1.0,
    };
    let target = dp.penalized(20.0);
    let mut n_dp = [0; 2];
    let mut dp_states = [State::new([0.0, -1.0, 1.0, -2.0], [0.0; 4]); 2];
    {
        let mut zs = ZhangSkeel::new(0.4, 0.1);
        let s = &mut dp_states[0];
        zs.step(&target, s).unwrap();
        n_dp[0] = allocations_during(|| {
            for _ in 0..STEPS {
                zs.step(&target, s).unwrap();
            }
        });
        let mut zss = ZhangSkeelSimplified::new(0.4, 0.1);
        let s = &mut dp_states[1];
        zss.step(&target, s).unwrap();
        n_dp[1] = allocations_during(|| {
            for _ in 0..STEPS {
                zss.step(&target, s).unwrap();
            }
        });
    }
    for s in &dp_states {
        assert!(dp.constraints(&s.q).iter().all(|g| g.abs() < 0.05), "{s:?}");
    }

    // The pivoted-LU fallback (indefinite matrix), which the FPU chain never needs.
    let h = [[0.0, 3.0, 0.0], [3.0, 0.0, 1.0], [0.0, 1.0, -2.0]];
    let mut x = [1.0, 2.0, 3.0];
    let n_lu = allocations_during(|| {
        for _ in 0..STEPS {
            let how = solve_shifted(&[1.0, 1.0, 1.0], 1.0, &h, &mut x, &Default::default());
            assert_eq!(how, Ok(Factorization::Lu));
            x = x.map(|v| v + 1.0);
        }
    });

    // The driver with energy and momentum observers (constructed outside the window).
    let mut zs = ZhangSkeel::new(0.4, 0.05);
    let mut s = s0;
    let mut energy = EnergyObserver::new();
    let mut momentum = MomentumObserver::by_component(1).with_dimension(6);
    zs.step(&Fpu, &mut s).unwrap();
    let mut ok = false;
    let n_driver = allocations_during(|| {
        let observers: &mut [&mut dyn Observer<Fpu, [f64; 6]>] = &mut [&mut energy, &mut momentum];
        let summary = run_steps(&mut zs, &Fpu, &mut s, STEPS as u64, observers);
        ok = summary.is_ok();
    });
    assert!(ok);
    // ... and on the penalized double pendulum with a constraint observer.
    let mut zs = ZhangSkeel::new(0.4, 0.1);
    let mut s = dp_states[0];
    let mut constraints = ConstraintObserver::new(&dp);
    let mut dp_energy = EnergyObserver::new();
    zs.step(&target, &mut s).unwrap();
    let n_driver_dp = allocations_during(|| {
        let summary = run_steps(
            &mut zs,
            &target,
            &mut s,
            STEPS as u64,
            &mut [&mut constraints, &mut dp_energy],
        );
        ok = summary.is_ok();
    });
    assert!(ok && constraints.max_residual() < 0.05);
    // ... and with guards and a condition-number limit (Hager–Higham estimate every solve).
    let mut zs_guarded = ZhangSkeel::new(0.4, 0.1).with_max_condition(1e12);
    let mut s = dp_states[0];
    let mut energy_guard = EnergyGuard::new(1.0);
    let mut constraint_guard = ConstraintGuard::new(&dp, 0.5);
    zs_guarded.step(&target, &mut s).unwrap();
    let n_driver_guarded = allocations_during(|| {
        let summary = run_steps(
            &mut zs_guarded,
            &target,
            &mut s,
            STEPS as u64,
            &mut [&mut energy_guard, &mut constraint_guard],
        );
        ok = summary.is_ok();
    });
    assert!(ok, "the guarded run should not trip its generous guards");
    // Sanity: the observers ran (measured max |ΔE|/E ≈ 6.7e-3 — β h² ω² ≈ 1e-2 at this h).
    assert_eq!(energy.samples(), STEPS as u64 + 1);
    assert!(
        energy.max_relative_drift() > 0.0 && energy.max_relative_drift() < 5e-2,
        "{} {:?}",
        energy.max_relative_drift(),
        energy.initial_energy()
    );

    assert_eq!(
        (
            n_zs,
            n_zss,
            n_vv,
            n_dp,
            n_lu,
            n_driver,
            n_driver_dp,
            n_driver_guarded
        ),
        (0, 0, 0, [0, 0], 0, 0, 0, 0),
        "allocations over {STEPS} steps: (Z&S, Z&Ss, Verlet on FPU; Z&S, Z&Ss on the generated \
         double pendulum; LU solves; driver + observers on FPU, on the double pendulum; driver \
         + energy and constraint guards + condition limit on the double pendulum)"
    );
    // The counter works: a Vec allocates.
    let n_vec = allocations_during(|| drop(std::hint::black_box(vec![1u8; 16])));
    assert_eq!(n_vec, 1);
}
