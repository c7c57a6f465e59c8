//! `zs reproduce rigid-body`: Tao & Owhadi §4.5, Figs. 9–10 — the magnetized rigid body with
//! identity inertia (`docs/systems/rigid-body.md`, SO(3)).
//!
//! Three methods at `h = 0.1` against the benchmark, eq. 34 at `h = 1e-4`:
//! - **Z&S, paper's scheme**: generic Z&S on the 9-coordinate penalized system (ω = 10, `M = ½I₉`)
//!   with `β = 0.2` — the paper's own eq. 37 with its printed β = 0.4
//!   (`docs/systems/rigid-body.md`: `β_generic = β_paper / 2`);
//! - **Z&S, β = 0.4 generic**: the same with generic Z&S's β = 0.4 (a different method);
//! - **eq. 34 at h = 0.1**: the Lie-group variational Euler of Fig. 10b
//!   ([`crate::rigid_body::cayley::CayleyEuler`]).
//!
//! Measured along each run (Fig. 10): the energy error `E − E(0)`, the distance from SO(3)
//! `‖RᵀR − I‖_F` and the deviation `‖R − R_benchmark‖_F`; and, for Fig. 9, the direction of the
//! dipole `R e₃` against the field `e₃`, as its angle to the field over time and its path on the
//! sphere (Lambert equal-area projection centred on the field: the field's direction is the
//! centre, the equator the circle of radius √2, the opposite pole the rim at radius 2). Both signs
//! of `Bμ`: −1 (stable, `R = I` the minimum) and +1 (the printed sign's maximum). Time to `T` and
//! cost per step of each method beside the paper's (0.03 s vs 1.45 s, both `h = 0.1`; its `T` is
//! not printed).

use std::io;
use std::path::Path;
use std::time::Duration;

use zs_runtime::{State, Stepper, ZhangSkeel};

use super::plot::{Figure, LegendPosition, Panel, Scale, Series, Style};
use super::{min_wall_times, sci, whole_steps, Csv, Field, Report, Table};
use crate::rigid_body::cayley::CayleyEuler;
use crate::rigid_body::{self, orthogonality_defect, MagnetizedRigidBody};

/// The methods compared, in order.
pub const METHODS: [&str; 3] = [
    "Z&S, paper's scheme (β = 0.2)",
    "Z&S, generic β = 0.4",
    "eq. 34 (Lie-group Euler), h = 0.1",
];

/// Parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Final time.
    pub t_end: f64,
    /// Step of the three compared methods.
    pub h: f64,
    /// Step of the eq. 34 benchmark.
    pub h_reference: f64,
    /// Penalty frequency of the penalized system.
    pub omega: f64,
    /// The `Bμ` values run.
    pub b_mus: Vec<f64>,
    /// Repetitions of the timing batches (0: no timing).
    pub timing_repetitions: usize,
}

impl Config {
    /// The paper's parameters (`T = 100`, ours; the paper prints none).
    pub fn paper() -> Self {
        Self {
            t_end: 100.0,
            h: rigid_body::H,
            h_reference: rigid_body::H_REFERENCE,
            omega: rigid_body::OMEGA,
            b_mus: vec![-1.0, 1.0],
            timing_repetitions: 5,
        }
    }

    /// A cheap version for tests.
    pub fn quick() -> Self {
        Self {
            t_end: 10.0,
            h_reference: 1e-3,
            timing_repetitions: 1,
            ..Self::paper()
        }
    }
}

/// One method's run for one `Bμ`, sampled at every step of size `h`.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodRun {
    /// `E − E(0)`.
    pub energy_error: Vec<f64>,
    /// `‖RᵀR − I‖_F`.
    pub defect: Vec<f64>,
    /// `‖R − R_benchmark‖_F`.
    pub deviation: Vec<f64>,
    /// The dipole direction `R e₃` (third column of `R`).
    pub dipole: Vec<[f64; 3]>,
    /// The step that failed, if one did.
    pub failed_at: Option<u64>,
}

/// Everything measured for one `Bμ`.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyRun {
    /// `Bμ`.
    pub b_mu: f64,
    /// Sample times `0, h, 2h, …, T`.
    pub times: Vec<f64>,
    /// The benchmark's dipole direction at the sample times.
    pub reference_dipole: Vec<[f64; 3]>,
    /// One run per entry of [`METHODS`].
    pub methods: Vec<MethodRun>,
}

/// The outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// One per `Bμ` of the configuration.
    pub bodies: Vec<BodyRun>,
    /// Cost of one step of each method (`Bμ = −1`), if timed.
    pub step_cost: Option<[Duration; 3]>,
}

fn dipole(q: &[f64; 9]) -> [f64; 3] {
    [q[2], q[5], q[8]]
}

fn distance(a: &[f64; 9], b: &[f64; 9]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Run every method for every `Bμ`.
///
/// # Panics
/// If `t_end` is not a whole number of steps `h`, or `h` of steps `h_reference`.
pub fn run(cfg: &Config) -> Outcome {
    let n = whole_steps(cfg.t_end, cfg.h);
    let fine_per_coarse = whole_steps(cfg.h, cfg.h_reference);
    let mut bodies = Vec::new();
    for &b_mu in &cfg.b_mus {
        let body = MagnetizedRigidBody {
            b_mu,
            omega: cfg.omega,
        };
        // The benchmark, sampled at the coarse steps.
        let mut reference = vec![MagnetizedRigidBody::initial_state().q];
        let mut s = MagnetizedRigidBody::initial_state();
        let mut bench = CayleyEuler::new(cfg.h_reference);
        'bench: for _ in 0..n {
            for _ in 0..fine_per_coarse {
                if bench.step(&body, &mut s).is_err() {
                    break 'bench;
                }
            }
            reference.push(s.q);
        }
        let mut methods = Vec::new();
        for (k, _) in METHODS.iter().enumerate() {
            let mut stepper: Box<dyn Stepper<MagnetizedRigidBody, [f64; 9]>> = match k {
                0 => Box::new(ZhangSkeel::new(rigid_body::BETA_PAPER_SCHEME, cfg.h)),
                1 => Box::new(ZhangSkeel::new(rigid_body::BETA, cfg.h)),
                _ => Box::new(CayleyEuler::new(cfg.h)),
            };
            methods.push(follow(&body, stepper.as_mut(), n, &reference));
        }
        bodies.push(BodyRun {
            b_mu,
            times: (0..=n).map(|i| i as f64 * cfg.h).collect(),
            reference_dipole: reference.iter().map(dipole).collect(),
            methods,
        });
    }
    let step_cost = (cfg.timing_repetitions > 0).then(|| time_steps(cfg));
    Outcome { bodies, step_cost }
}

fn follow(
    body: &MagnetizedRigidBody,
    stepper: &mut dyn Stepper<MagnetizedRigidBody, [f64; 9]>,
    n: u64,
    reference: &[[f64; 9]],
) -> MethodRun {
    let mut s: State<9> = MagnetizedRigidBody::initial_state();
    let e0 = body.energy(&s);
    let mut out = MethodRun {
        energy_error: vec![0.0],
        defect: vec![orthogonality_defect(&s.q)],
        deviation: vec![0.0],
        dipole: vec![dipole(&s.q)],
        failed_at: None,
    };
    for k in 1..=n {
        if stepper.step(body, &mut s).is_err() {
            out.failed_at = Some(k - 1);
            break;
        }
        out.energy_error.push(body.energy(&s) - e0);
        out.defect.push(orthogonality_defect(&s.q));
        out.deviation.push(
            reference
                .get(k as usize)
                .map_or(f64::NAN, |r| distance(&s.q, r)),
        );
        out.dipole.push(dipole(&s.q));
    }
    out
}

/// Minimum wall time of one step of each method (`Bμ = −1`), batches interleaved.
fn time_steps(cfg: &Config) -> [Duration; 3] {
    let body = MagnetizedRigidBody {
        b_mu: -1.0,
        omega: cfg.omega,
    };
    let mut states = [MagnetizedRigidBody::initial_state(); 3];
    let [s0, s1, s2] = &mut states;
    let mut z2 = ZhangSkeel::new(rigid_body::BETA_PAPER_SCHEME, cfg.h);
    let mut z4 = ZhangSkeel::new(rigid_body::BETA, cfg.h);
    let mut lie = CayleyEuler::new(cfg.h);
    // A step that fails (it does not at these parameters) restarts from the initial state.
    let restart = |s: &mut State<9>| *s = MagnetizedRigidBody::initial_state();
    let mut f0 = || {
        if z2.step(&body, s0).is_err() {
            restart(s0);
        }
    };
    let mut f1 = || {
        if z4.step(&body, s1).is_err() {
            restart(s1);
        }
    };
    let mut f2 = || {
        if lie.step(&body, s2).is_err() {
            restart(s2);
        }
    };
    let t = min_wall_times(
        &mut [&mut f0, &mut f1, &mut f2],
        cfg.timing_repetitions,
        Duration::from_millis(20),
    );
    [t[0], t[1], t[2]]
}

/// Angle between the dipole and the field, degrees.
fn angle_to_field(d: &[f64; 3]) -> f64 {
    let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    (d[2] / n).clamp(-1.0, 1.0).acos().to_degrees()
}

/// Lambert azimuthal equal-area projection centred on the field direction `e₃`.
fn lambert(d: &[f64; 3]) -> (f64, f64) {
    let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let (x, y, z) = (d[0] / n, d[1] / n, d[2] / n);
    let k = (2.0 / (1.0 + z).max(1e-300)).sqrt();
    (k * x, k * y)
}

fn circle(radius: f64) -> Vec<(f64, f64)> {
    (0..=180)
        .map(|i| {
            let a = f64::from(i) * std::f64::consts::TAU / 180.0;
            (radius * a.cos(), radius * a.sin())
        })
        .collect()
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0_f64, |m, x| m.max(x.abs()))
}

/// Write `rigid-body.csv`, `rigid-body-fig10.svg`, `rigid-body-fig9.svg`, and build the report.
///
/// # Errors
/// I/O failures.
pub fn write(cfg: &Config, out: &Outcome, dir: &Path) -> io::Result<Report> {
    let mut csv = Csv::new(&[
        "b_mu",
        "method",
        "t",
        "energy_error",
        "orthogonality_defect",
        "deviation",
        "dipole_x",
        "dipole_y",
        "dipole_z",
    ]);
    for b in &out.bodies {
        for (k, m) in b.methods.iter().enumerate() {
            for i in 0..m.energy_error.len() {
                let d = m.dipole[i];
                csv.push(&[
                    Field::Num(b.b_mu),
                    Field::Text(METHODS[k]),
                    Field::Num(b.times[i]),
                    Field::Num(m.energy_error[i]),
                    Field::Num(m.defect[i]),
                    Field::Num(m.deviation[i]),
                    Field::Num(d[0]),
                    Field::Num(d[1]),
                    Field::Num(d[2]),
                ]);
            }
        }
        for (i, d) in b.reference_dipole.iter().enumerate() {
            csv.push(&[
                Field::Num(b.b_mu),
                Field::Text("benchmark eq. 34, h = 1e-4"),
                Field::Num(b.times[i]),
                Field::Num(f64::NAN),
                Field::Num(f64::NAN),
                Field::Num(0.0),
                Field::Num(d[0]),
                Field::Num(d[1]),
                Field::Num(d[2]),
            ]);
        }
    }
    let csv_path = dir.join("rigid-body.csv");
    csv.write(&csv_path)?;

    // Fig. 10: a row per Bμ, panels energy error, distance from SO(3), deviation.
    let mut fig10 = Figure::new(
        format!(
            "Fig. 10: magnetized rigid body, h = {}, ω = {}, benchmark eq. 34 at h = {}",
            cfg.h, cfg.omega, cfg.h_reference
        ),
        3,
        (520, 360),
    );
    let floor = 1e-17;
    for b in &out.bodies {
        let series = |pick: &dyn Fn(&MethodRun) -> &Vec<f64>, log: bool| -> Vec<Series> {
            b.methods
                .iter()
                .enumerate()
                .map(|(k, m)| {
                    let pts = b
                        .times
                        .iter()
                        .zip(pick(m))
                        .map(|(&t, &y)| (t, if log { y.abs().max(floor) } else { y }))
                        .collect();
                    Series::new(METHODS[k], pts, Style::Line, k)
                })
                .collect()
        };
        let mut energy = Panel::new(format!("Bμ = {}: energy error", b.b_mu), "t", "E(t) − E(0)")
            .legend(LegendPosition::LowerLeft);
        for s in series(&|m| &m.energy_error, false) {
            energy = energy.with(s);
        }
        let mut defect = Panel::new(
            format!("Bμ = {}: distance from SO(3)", b.b_mu),
            "t",
            "‖RᵀR − I‖ (floor 1e-17)",
        )
        .scales(Scale::Linear, Scale::Log)
        // Fixed, so that eq. 34's rounding-level values (~1e-14) are on the plot next to the
        // penalized method's ~1e-2 (a fitted log axis spans 12 decades below the maximum).
        .y_range(1e-17, 1.0)
        .legend(LegendPosition::Hidden);
        for s in series(&|m| &m.defect, true) {
            defect = defect.with(s);
        }
        let mut deviation = Panel::new(
            format!("Bμ = {}: deviation from the benchmark", b.b_mu),
            "t",
            "‖R − R_benchmark‖",
        )
        .scales(Scale::Linear, Scale::Log)
        .legend(LegendPosition::Hidden);
        for s in series(&|m| &m.deviation, true) {
            deviation = deviation.with(s);
        }
        fig10 = fig10.with(energy).with(defect).with(deviation);
    }
    let fig10_path = dir.join("rigid-body-fig10.svg");
    fig10.write_svg(&fig10_path)?;

    // Fig. 9: the dipole against the field, benchmark and the paper's Z&S.
    let mut fig9 = Figure::new(
        "Fig. 9: the dipole R e₃ against the field e₃ (benchmark solid, Z&S h = 0.1 paper's scheme dashed)",
        2,
        (520, 460),
    );
    for b in &out.bodies {
        let mut angle = Panel::new(
            format!("Bμ = {}: angle between dipole and field", b.b_mu),
            "t",
            "angle (degrees)",
        )
        .y_range(0.0, 180.0)
        .legend(LegendPosition::UpperRight);
        let angles = |v: &[[f64; 3]]| -> Vec<(f64, f64)> {
            b.times
                .iter()
                .zip(v)
                .map(|(&t, d)| (t, angle_to_field(d)))
                .collect()
        };
        angle = angle
            .with(Series::new(
                "benchmark",
                angles(&b.reference_dipole),
                Style::Line,
                0,
            ))
            .with(Series::new(
                METHODS[0],
                angles(&b.methods[0].dipole),
                Style::Dashed,
                1,
            ));
        let mut sphere = Panel::new(
            format!(
                "Bμ = {}: dipole path on the sphere, seen from the field",
                b.b_mu
            ),
            "field at the centre; equator r = √2; opposite pole r = 2",
            "",
        )
        .y_range(-2.05, 2.05)
        .legend(LegendPosition::Hidden);
        sphere = sphere
            .with(Series::new("rim", circle(2.0), Style::Line, 7))
            .with(Series::new(
                "equator",
                circle(2f64.sqrt()),
                Style::Dashed,
                7,
            ))
            .with(Series::new(
                "benchmark",
                b.reference_dipole.iter().map(lambert).collect(),
                Style::Line,
                0,
            ))
            .with(Series::new(
                METHODS[0],
                b.methods[0].dipole.iter().map(lambert).collect(),
                Style::Dashed,
                1,
            ));
        fig9 = fig9.with(angle).with(sphere);
    }
    let fig9_path = dir.join("rigid-body-fig9.svg");
    fig9.write_svg(&fig9_path)?;

    let mut table = Table::new(
        format!(
            "0 < t ≤ {}: largest |E − E(0)|, ‖RᵀR − I‖ and ‖R − R_benchmark‖",
            cfg.t_end
        ),
        &[
            "Bμ",
            "method",
            "max |ΔE|",
            "max ‖RᵀR − I‖",
            "max deviation",
            "deviation at T",
        ],
    );
    for b in &out.bodies {
        for (k, m) in b.methods.iter().enumerate() {
            table.push(vec![
                format!("{}", b.b_mu),
                match m.failed_at {
                    None => METHODS[k].to_string(),
                    Some(step) => format!("{} (failed at step {step})", METHODS[k]),
                },
                sci(max_abs(&m.energy_error)),
                sci(max_abs(&m.defect)),
                sci(max_abs(&m.deviation)),
                sci(m.deviation.last().copied().unwrap_or(f64::NAN)),
            ]);
        }
    }
    let mut tables = vec![table];
    if let Some(cost) = out.step_cost {
        let steps = whole_steps(cfg.t_end, cfg.h) as f64;
        let mut time = Table::new(
            format!(
                "run time, h = {} (steps timed alone, best of {} interleaved batches; paper: Matlab, its T not printed)",
                cfg.h, cfg.timing_repetitions
            ),
            &["method", "per step", &format!("to T = {}", cfg.t_end), "÷ Z&S (paper's scheme)", "paper"],
        );
        let paper = ["0.03 s", "—", "1.45 s"];
        for k in 0..3 {
            let per = cost[k].as_secs_f64();
            time.push(vec![
                METHODS[k].to_string(),
                format!("{:.0} ns", per * 1e9),
                format!("{:.3} ms", per * steps * 1e3),
                format!("{:.2}", per / cost[0].as_secs_f64()),
                paper[k].to_string(),
            ]);
        }
        tables.push(time);
    }
    Ok(Report {
        experiment: "rigid-body".into(),
        setup: format!(
            "Tao & Owhadi §4.5, Figs. 9–10: identity inertia, V = Bμ R33, R(0) = I, Ω(0) = (1, 0.2, 0.1), T = {} (ours); penalized Z&S on R ∈ R^(3×3), M = ½I₉, ω = {}, h = {}, with β = 0.2 (the paper's scheme, eq. 37 with its β = 0.4) and β = 0.4 (generic); eq. 34 at h = {}; benchmark eq. 34 at h = {}. Bμ = −1: R = I is the minimum; Bμ = +1: the printed sign, R = I the maximum.",
            cfg.t_end, cfg.omega, cfg.h, cfg.h, cfg.h_reference
        ),
        tables,
        notes: vec![],
        files: vec![csv_path, fig10_path, fig9_path],
    })
}
