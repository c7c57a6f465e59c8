//! The stiff spring double pendulum of the impulse paper, Example 1 (Figs. 1–3): two point masses
//! in the plane, the first joined to the origin, the second to the first, by stiff springs, under
//! gravity. `q = (x1, y1, x2, y2)`, `r1 = (x1, y1)`, `r2 = (x2 − x1, y2 − y1)`:
//!
//! ```text
//! H = ½ pᵀM⁻¹p + U(q) + W(q),   M = diag(m1, m1, m2, m2),
//! U = gravity · (m1 y1 + m2 y2)                      (slow: gravity along −y),
//! W = ½ (k1/ε²)(|r1| − ℓ1)² + ½ (k2/ε²)(|r2| − ℓ2)²  (fast, ε⁻² folded in),
//! g = (|r1|² − ℓ1², |r2|² − ℓ2²)                     (W's minimum manifold, W = 0 ⇔ g = 0).
//! ```
//!
//! The constraints are written `|r_i|² − ℓ_i²` rather than `|r_i| − ℓ_i`: polynomial, smooth
//! everywhere (also at `r_i = 0`), and the same as the rigid double pendulum's. The choice does not
//! change the methods: both forms have the same zero set, so the same projection `π(q)` (the
//! impulse paper, eq. 15), and at any `q` their gradients are parallel (`∇|r|² = 2|r|∇|r|`), so the
//! same `P(q)` (eq. 10).
//!
//! [`reference`](mod@reference) holds hand-written derivatives of the same system;
//! [`convergence_table`] is the experiment of Figs. 1–3.
//!
//! # Parameters and initial value
//! The text of the impulse paper available to this project lost its formulas: Example 1's parameter
//! values, the initial value (14) and the time interval are not legible.
//! [`StiffSpringDoublePendulum::example1`]
//! and [`initial_state`] are therefore this project's choice, made to satisfy the paper's stated
//! conditions: energy bounded independently of ε (eq. 6: the positions start on the manifold,
//! the velocities have `O(1)` components across it, so `W = 0` and the oscillations' energy is
//! `O(1)`, their actions `O(ε)`), and frequencies that "remain well-separated" along the
//! solution (see [`frequencies`]).

pub mod reference;

use zs_runtime::{
    mechanical_system, ConstraintCurvature, FastPotential, Impulse, MechanicalSystem,
    MollifiedImpulse, ProjectedImpulse, State, StepError,
};

/// The stiff spring double pendulum of the impulse paper, Example 1 (see the [module docs](self)):
/// `q = (x1, y1, x2, y2)`, slow potential `U = gravity·(m1 y1 + m2 y2)` (the [`Potential`]),
/// fast potential `W = ½ Σ_i (k_i/ε²)(|r_i| − ℓ_i)²` (the [`FastPotential`]), constraints
/// `g = (|r1|² − ℓ1², |r2|² − ℓ2²)` (W's minimum manifold).
///
/// [`Potential`]: zs_runtime::Potential
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StiffSpringDoublePendulum {
    /// The small parameter ε: spring stiffnesses are `k_i / ε²`.
    pub eps: f64,
    /// Stiffness factor of the spring from the origin to mass 1.
    pub k1: f64,
    /// Stiffness factor of the spring between the masses.
    pub k2: f64,
    /// Rest length `ℓ1` of spring 1.
    pub l1: f64,
    /// Rest length `ℓ2` of spring 2.
    pub l2: f64,
    /// Mass 1.
    pub m1: f64,
    /// Mass 2.
    pub m2: f64,
    /// Gravitational acceleration (positive: pointing along −y), `U = gravity·(m1 y1 + m2 y2)`.
    pub gravity: f64,
}

#[mechanical_system]
impl StiffSpringDoublePendulum {
    fn masses(&self) -> [f64; 4] {
        [self.m1, self.m1, self.m2, self.m2]
    }

    fn potential(&self, q: &[f64; 4]) -> f64 {
        self.gravity * (self.m1 * q[1] + self.m2 * q[3])
    }

    fn fast_potential(&self, q: &[f64; 4]) -> f64 {
        let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
        let s1 = (x1 * x1 + y1 * y1).sqrt();
        let s2 = ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt();
        let e2 = self.eps * self.eps;
        0.5 * self.k1 / e2 * (s1 - self.l1).powi(2) + 0.5 * self.k2 / e2 * (s2 - self.l2).powi(2)
    }

    fn constraints(&self, q: &[f64; 4]) -> [f64; 2] {
        let (x1, y1, x2, y2) = (q[0], q[1], q[2], q[3]);
        [
            x1 * x1 + y1 * y1 - self.l1 * self.l1,
            (x2 - x1).powi(2) + (y2 - y1).powi(2) - self.l2 * self.l2,
        ]
    }
}

impl StiffSpringDoublePendulum {
    /// This project's parameters for the impulse paper, Example 1 (see the [module docs](self)):
    /// unit masses and rest lengths, `k1 = 1`, `k2 = 4` (fast frequencies well separated, their
    /// ratio stays in `[3.4, 4.3]` along the experiment's solution), `gravity = 1`, the given ε.
    pub fn example1(eps: f64) -> Self {
        Self {
            eps,
            k1: 1.0,
            k2: 4.0,
            l1: 1.0,
            l2: 1.0,
            m1: 1.0,
            m2: 1.0,
            gravity: 1.0,
        }
    }
}

/// The initial value of the experiments: on the manifold at angles `θ1 = 3π/8`, `θ2 = 5π/8`
/// from the downward vertical, with an `O(1)` tangential and an `O(1)` normal (spring
/// stretching) velocity for each bond.
pub fn initial_state(p: &StiffSpringDoublePendulum) -> State<4> {
    let (t1, t2) = (
        3.0 * std::f64::consts::FRAC_PI_8,
        5.0 * std::f64::consts::FRAC_PI_8,
    );
    let u1 = [t1.sin(), -t1.cos()];
    let u2 = [t2.sin(), -t2.cos()];
    let n1 = [-u1[1], u1[0]];
    let n2 = [-u2[1], u2[0]];
    let q = [
        p.l1 * u1[0],
        p.l1 * u1[1],
        p.l1 * u1[0] + p.l2 * u2[0],
        p.l1 * u1[1] + p.l2 * u2[1],
    ];
    // bond velocities: radial (fast) + tangential (slow) components
    let (rad1, tan1, rad2, tan2) = (0.5, 0.3, -0.5, -0.2);
    let b1 = [rad1 * u1[0] + tan1 * n1[0], rad1 * u1[1] + tan1 * n1[1]];
    let b2 = [rad2 * u2[0] + tan2 * n2[0], rad2 * u2[1] + tan2 * n2[1]];
    let v = [b1[0], b1[1], b1[0] + b2[0], b1[1] + b2[1]];
    State::new(q, v)
}

/// The two fast frequencies times ε at configuration `q` (for unit-free comparison): the
/// square roots of the nonzero generalized eigenvalues of `(ε² Hess W(q), M)` restricted to the
/// normal space, evaluated with `W`'s Hessian at the manifold point nearest `q`. For the
/// springs: `ω_i² ε²` are the eigenvalues of `K^½ C K^½`, `K = diag(k1, k2)`,
/// `C = [[1/m1, −c/m1], [−c/m1, 1/m1 + 1/m2]]`, `c = cos` of the angle between the bonds.
pub fn frequencies(p: &StiffSpringDoublePendulum, q: &[f64; 4]) -> [f64; 2] {
    let r1 = [q[0], q[1]];
    let r2 = [q[2] - q[0], q[3] - q[1]];
    let c = (r1[0] * r2[0] + r1[1] * r2[1])
        / ((r1[0] * r1[0] + r1[1] * r1[1]).sqrt() * (r2[0] * r2[0] + r2[1] * r2[1]).sqrt());
    let a = p.k1 / p.m1;
    let d = p.k2 * (1.0 / p.m1 + 1.0 / p.m2);
    let b = -(p.k1 * p.k2).sqrt() * c / p.m1;
    let tr = a + d;
    let det = a * d - b * b;
    let disc = (0.25 * tr * tr - det).max(0.0).sqrt();
    [(0.5 * tr - disc).sqrt(), (0.5 * tr + disc).sqrt()]
}

/// The three methods of the impulse paper, §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImpulseMethod {
    /// [`Impulse`] (§2.1, Fig. 1).
    Impulse,
    /// [`MollifiedImpulse`] (§2.2, Fig. 2).
    Mollified,
    /// [`ProjectedImpulse`] (§2.3, Fig. 3).
    Projected,
}

impl ImpulseMethod {
    /// All three, in the paper's order.
    pub const ALL: [ImpulseMethod; 3] = [
        ImpulseMethod::Impulse,
        ImpulseMethod::Mollified,
        ImpulseMethod::Projected,
    ];

    /// Short name (`impulse`, `mollified-impulse`, `projected-impulse`).
    pub fn name(self) -> &'static str {
        match self {
            ImpulseMethod::Impulse => "impulse",
            ImpulseMethod::Mollified => "mollified-impulse",
            ImpulseMethod::Projected => "projected-impulse",
        }
    }
}

/// Settings of the convergence experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvergenceSetup {
    /// End time `T`.
    pub t_end: f64,
    /// Micro-step of the methods' oscillation, as a fraction of ε (`micro_steps` per macro step
    /// is `round(h / (micro_step_per_eps · ε))`).
    pub micro_step_per_eps: f64,
    /// Step of the Störmer–Verlet reference solution of the full system, as a fraction of ε.
    pub reference_step_per_eps: f64,
}

impl Default for ConvergenceSetup {
    fn default() -> Self {
        Self {
            t_end: 1.0,
            micro_step_per_eps: 1e-2,
            reference_step_per_eps: 1e-2,
        }
    }
}

/// A trajectory sampled every `dt`: `states[n]` is the state at `t = n·dt`.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// Sampling interval.
    pub dt: f64,
    /// The samples, `states[0]` the initial state.
    pub states: Vec<State<4>>,
}

/// The number `round(a / b)`, checked to be a positive integer ratio to `1e-9` relative.
fn ratio(a: f64, b: f64, what: &str) -> usize {
    let r = (a / b).round();
    assert!(
        r >= 1.0 && ((a / b) - r).abs() <= 1e-9 * r,
        "{what}: {a} is not a positive integer multiple of {b}"
    );
    r as usize
}

/// The reference solution: Störmer–Verlet on the full `H = ½pᵀM⁻¹p + U + W` with step `step`,
/// sampled every `sample` (a multiple of `step`) up to `t_end` (a multiple of `sample`).
/// A direct loop (independent of the impulse steppers' code).
pub fn reference_solution<S: FastPotential<4>>(
    sys: &S,
    x0: &State<4>,
    step: f64,
    sample: f64,
    t_end: f64,
) -> Sampled {
    let stride = ratio(sample, step, "reference sampling");
    let samples = ratio(t_end, sample, "reference end time");
    let m = sys.masses();
    let acc = |q: &[f64; 4]| -> [f64; 4] {
        let gu = sys.gradient(q);
        let gw = sys.fast_gradient(q);
        core::array::from_fn(|i| -(gu[i] + gw[i]) / m[i])
    };
    let (mut q, mut v) = (x0.q, x0.v);
    let mut a = acc(&q);
    let mut states = Vec::with_capacity(samples + 1);
    states.push(State::at(q, v, x0.t));
    for n in 1..=samples {
        for _ in 0..stride {
            for i in 0..4 {
                v[i] += 0.5 * step * a[i];
                q[i] += step * v[i];
            }
            a = acc(&q);
            for i in 0..4 {
                v[i] += 0.5 * step * a[i];
            }
        }
        states.push(State::at(q, v, x0.t + n as f64 * sample));
    }
    Sampled { dt: sample, states }
}

/// `method` with macro step `h` and `micro_steps` micro-steps, from `x0` to `t_end` (a
/// multiple of `h`), every macro step recorded.
pub fn run_method<S>(
    sys: &S,
    method: ImpulseMethod,
    x0: &State<4>,
    h: f64,
    micro_steps: usize,
    t_end: f64,
) -> Result<Sampled, StepError>
where
    S: FastPotential<4> + ConstraintCurvature<4, 2>,
{
    let n = ratio(t_end, h, "method end time");
    let mut states = Vec::with_capacity(n + 1);
    let mut x = *x0;
    states.push(x);
    match method {
        ImpulseMethod::Impulse => {
            let mut st = Impulse::new(h, micro_steps);
            for _ in 0..n {
                st.step(sys, &mut x)?;
                states.push(x);
            }
        }
        ImpulseMethod::Mollified => {
            let mut st = MollifiedImpulse::new(h, micro_steps);
            for _ in 0..n {
                st.step(sys, &mut x)?;
                states.push(x);
            }
        }
        ImpulseMethod::Projected => {
            let mut st = ProjectedImpulse::new(h, micro_steps);
            for _ in 0..n {
                st.step(sys, &mut x)?;
                states.push(x);
            }
        }
    }
    Ok(Sampled { dt: h, states })
}

/// Projected momenta `P(q)ᵀp` of a state (the impulse paper, eq. 10, Theorem 2.2).
pub fn projected_momenta<S: MechanicalSystem<4, 2>>(sys: &S, x: &State<4>) -> [f64; 4] {
    let p = x.momenta(&sys.masses());
    zs_runtime::integrators::impulse::projected_covector(sys, &x.q, &p)
        .expect("G(q) of the stiff spring pendulum has full rank away from collapsed springs")
}

/// The errors of Fig. 1–3: maximum over the common sample times of the maximum norm of the
/// position error and of the projected-momentum error `P(q)ᵀp − P(q_ref)ᵀp_ref`.
pub fn max_errors<S: MechanicalSystem<4, 2>>(
    sys: &S,
    run: &Sampled,
    reference: &Sampled,
) -> (f64, f64) {
    let stride = ratio(run.dt, reference.dt, "error sampling");
    let (mut eq, mut ep) = (0.0f64, 0.0f64);
    for (n, x) in run.states.iter().enumerate() {
        let r = &reference.states[n * stride];
        let (pm, pr) = (projected_momenta(sys, x), projected_momenta(sys, r));
        for i in 0..4 {
            eq = eq.max((x.q[i] - r.q[i]).abs());
            ep = ep.max((pm[i] - pr[i]).abs());
        }
    }
    (eq, ep)
}

/// One row of a convergence table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvergencePoint {
    /// Macro step.
    pub h: f64,
    /// Micro-steps per macro step used.
    pub micro_steps: usize,
    /// `max_n ‖q_n − q(t_n)‖∞`.
    pub position_error: f64,
    /// `max_n ‖P(q_n)ᵀp_n − P(q(t_n))ᵀp(t_n)‖∞`.
    pub momentum_error: f64,
    /// Wall-clock time of the run, in seconds.
    pub seconds: f64,
}

/// The experiment of the impulse paper, Figs. 1–3 on an explicit system and reference: for each
/// macro step `h` in `hs` (each a multiple of `reference.dt`, `setup.t_end` a multiple of each),
/// run `method` with micro-step `≈ setup.micro_step_per_eps · ε` and measure [`max_errors`] against
/// `reference`.
pub fn convergence_table_with<S>(
    sys: &S,
    eps: f64,
    x0: &State<4>,
    reference: &Sampled,
    method: ImpulseMethod,
    hs: &[f64],
    setup: &ConvergenceSetup,
) -> Result<Vec<ConvergencePoint>, StepError>
where
    S: FastPotential<4> + ConstraintCurvature<4, 2>,
{
    hs.iter()
        .map(|&h| {
            let micro_steps = ((h / (setup.micro_step_per_eps * eps)).round() as usize).max(1);
            let start = std::time::Instant::now();
            let run = run_method(sys, method, x0, h, micro_steps, setup.t_end)?;
            let seconds = start.elapsed().as_secs_f64();
            let (position_error, momentum_error) = max_errors(sys, &run, reference);
            Ok(ConvergencePoint {
                h,
                micro_steps,
                position_error,
                momentum_error,
                seconds,
            })
        })
        .collect()
}

/// The impulse paper, Figs. 1–3: the errors of `method` on the stiff spring double pendulum
/// ([`StiffSpringDoublePendulum::example1`]`(eps)`, [`initial_state`], default
/// [`ConvergenceSetup`]: `T = 1`, micro-step and reference step `ε/100`) against the Störmer–Verlet
/// reference solution of the same Hamiltonian at the same ε ([`reference_for`]), for each macro
/// step in `hs` (each must divide `T = 1`, e.g. `1/5, 1/10, …`). Returns one [`ConvergencePoint`]
/// per `h`, in the order of `hs`; fit the order with [`zs_runtime::verify::slope`].
///
/// ```
/// use zs_runtime::verify::slope;
/// use zs_systems::stiff_spring::{convergence_table, ImpulseMethod};
/// let hs = [0.2, 0.1, 0.05];
/// let t = convergence_table(ImpulseMethod::Mollified, 1e-3, &hs).unwrap();
/// let e: Vec<f64> = t.iter().map(|r| r.position_error).collect();
/// assert!((slope(&hs, &e) - 2.0).abs() < 0.1);
/// ```
///
/// Cost: the reference and each run take about `100·T/ε` force evaluations (`10⁵` for
/// `ε = 10⁻³`: milliseconds; `10⁶` for `ε = 10⁻⁴`), whatever `h`.
pub fn convergence_table(
    method: ImpulseMethod,
    eps: f64,
    hs: &[f64],
) -> Result<Vec<ConvergencePoint>, StepError> {
    let setup = ConvergenceSetup::default();
    let sys = StiffSpringDoublePendulum::example1(eps);
    let x0 = initial_state(&sys);
    let reference = reference_for(&sys, eps, &x0, hs, &setup);
    convergence_table_with(&sys, eps, &x0, &reference, method, hs, &setup)
}

/// The reference solution ([`reference_solution`]) for the macro steps `hs`: step
/// `≈ setup.reference_step_per_eps · ε`, sampled every `T/L` where `L` is the least common
/// multiple of the step counts `T/h` (each must be an integer), so every run's times are
/// sample times.
pub fn reference_for<S: FastPotential<4>>(
    sys: &S,
    eps: f64,
    x0: &State<4>,
    hs: &[f64],
    setup: &ConvergenceSetup,
) -> Sampled {
    let lcm = hs.iter().fold(1usize, |l, &h| {
        let n = ratio(setup.t_end, h, "end time over macro step");
        l / gcd(l, n) * n
    });
    let sample = setup.t_end / lcm as f64;
    let per_sample = (sample / (setup.reference_step_per_eps * eps))
        .round()
        .max(1.0);
    reference_solution(sys, x0, sample / per_sample, sample, setup.t_end)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
