//! What a step measures of its own state (`Stepper::measured`): velocity Verlet's kick-drift
//! pass takes the new positions' key and, on a long state of point bodies, the largest move of
//! one, and its second kick the kinetic energy; the driver hands them to the observers (the
//! move guard, the energy), which then do not read the state again. Each is the value the observers find by reading the state, bit for
//! bit, in the file's order and in spatial order, on one thread and on two.

use crate::support::assembled::{Melt, cut_liquid};
use crate::support::fixtures::Rng;
use zs_runtime::assembly::{Assembled, BodyOrder, Topology};
use zs_runtime::driver::run_steps;
use zs_runtime::observers::{EnergyObserver, total_energy, total_energy_measured};
use zs_runtime::sparse::SparseMatrix;
use zs_runtime::{
    Clock, Clocked, DynState, HessianPart, Langevin, Masses, Measured, Model, MoveGuard,
    PositionsKey, StepError, StepErrorKind, Stepper, VelocityVerlet,
};

/// 23³ = 12 167 particles: a state past the length the passes split on a pool.
const K: usize = 23;
const H: f64 = 0.005;

/// [`cut_liquid`]'s `K³` particles held in `order`, with velocities of a temperature near 1.
fn liquid(order: BodyOrder) -> (Assembled<Melt, 3>, DynState) {
    let (_, q, _) = cut_liquid(K);
    let side = 1.1 * K as f64;
    let topology = Topology::new(K * K * K)
        .periodic([side; 3])
        .cutoff(2.5, 0.3);
    let sys = Assembled::ordered(Melt { rc: 2.5 }, topology, order, &q).expect("valid");
    let mut rng = Rng(0x5eed_0fa1);
    let v = (0..q.len()).map(|_| 1.7 * rng.next()).collect();
    let state = sys.state(q, v);
    (sys, state)
}

/// Steps as `S` and measures nothing: the observers read the state themselves.
struct Unmeasured<S>(S);

impl<S: Clocked> Clocked for Unmeasured<S> {
    fn clock(&self) -> &Clock {
        self.0.clock()
    }
    fn clock_mut(&mut self) -> &mut Clock {
        self.0.clock_mut()
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
}

impl<P: ?Sized, S: Stepper<P, Vec<f64>>> Stepper<P, Vec<f64>> for Unmeasured<S> {
    fn step(&mut self, target: &P, state: &mut DynState) -> Result<(), StepError> {
        self.0.step(target, state)
    }
    fn can_undo(&self) -> bool {
        self.0.can_undo()
    }
    fn undo(&mut self, state: &mut DynState) -> bool {
        self.0.undo(state)
    }
    fn replaced(&self) -> Option<&DynState> {
        self.0.replaced()
    }
    fn keeps_replaced(&self) -> bool {
        self.0.keeps_replaced()
    }
    fn checks_finite(&self) -> bool {
        self.0.checks_finite()
    }
}

/// After every step, velocity Verlet's largest move of a body is the guard's, its kinetic
/// energy the model's, its energy by the positions' key the energy found by reading them (and, to rounding, a fresh replica's),
/// on one thread and on two with the same bits; the key alone finds the energy, without
/// reading the positions.
#[test]
fn verlet_measures_the_guards_move_and_the_energys_key() {
    let guard = MoveGuard::new(0.3, 3);
    for order in [BodyOrder::Given, BodyOrder::Cells] {
        let (sys, start) = liquid(order);
        let fresh = sys.replica();
        let mut runs = Vec::new();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            runs.push(pool.install(|| {
                let (mut s, mut vv) = (start.clone(), VelocityVerlet::new(H));
                let mut seen = Vec::new();
                for k in 0..6 {
                    let before = s.clone();
                    vv.step(&sys, &mut s).unwrap();
                    let m = Stepper::<Assembled<Melt, 3>, Vec<f64>>::measured(&vv);
                    let d = m
                        .largest_point_move()
                        .expect("a long state of point bodies");
                    let read = guard.largest_move(&before.q, &s.q);
                    assert_eq!(d.to_bits(), read.to_bits(), "{order:?}, step {k}");
                    assert!(d > 0.0 && d < 0.3, "{d}");
                    let kinetic = m.kinetic_energy().expect("a long state");
                    assert_eq!(kinetic.to_bits(), sys.kinetic_energy(&s.v).to_bits());
                    let e = total_energy_measured(&sys, &s, &m);
                    assert_eq!(e.to_bits(), total_energy(&sys, &s).to_bits(), "step {k}");
                    let anew = total_energy(&fresh, &s);
                    assert!((e - anew).abs() <= 1e-12 * anew.abs(), "{e} vs {anew}");
                    // The key is what finds it: positions that are not the key's are not read.
                    let key = m.positions_key().expect("the new positions' key");
                    let elsewhere = vec![0.5; s.q.len()];
                    let v = sys.potential_at_keyed(&elsewhere, key);
                    assert_eq!(v.to_bits(), sys.potential_at(&s.q).to_bits());
                    seen.push((d.to_bits(), e.to_bits()));
                }
                seen
            }));
        }
        assert_eq!(runs[0], runs[1], "{order:?}: one thread against two");
    }
}

/// A run whose steps are measured gives the observers' figures and the guard's stop of a run
/// whose steps are not, bit for bit: velocity Verlet, and the GLA around it.
#[test]
fn measured_steps_give_the_runs_of_unmeasured_ones() {
    let (sys, start) = liquid(BodyOrder::Cells);
    let run = |measured: bool, gla: bool, limit: f64| {
        let (mut s, mut guard, mut energy) = (
            start.clone(),
            MoveGuard::new(limit, 3),
            EnergyObserver::new(),
        );
        let inner = VelocityVerlet::new(H);
        let mut stepper: Box<dyn Stepper<Assembled<Melt, 3>, Vec<f64>>> = match (measured, gla) {
            (true, false) => Box::new(inner),
            (false, false) => Box::new(Unmeasured(inner)),
            (true, true) => Box::new(Langevin::new(inner, 1.0, 0.5, 3)),
            (false, true) => Box::new(Langevin::new(Unmeasured(inner), 1.0, 0.5, 3)),
        };
        let summary = run_steps(
            &mut stepper,
            &sys,
            &mut s,
            8,
            &mut [&mut guard, &mut energy],
        );
        let stop = summary.error.map(|e| match e.kind {
            StepErrorKind::GuardViolated { value, .. } => (e.step, value.to_bits()),
            other => panic!("{other:?}"),
        });
        let figures = (
            guard.max_seen().to_bits(),
            energy.max_abs_drift().to_bits(),
            energy.last_energy().to_bits(),
            energy.samples(),
        );
        let bits: Vec<u64> = s.q.iter().chain(&s.v).map(|x| x.to_bits()).collect();
        (stop, figures, bits)
    };
    for gla in [false, true] {
        let whole = run(true, gla, 0.3);
        assert!(whole.0.is_none(), "no stop under the skin");
        assert_eq!(whole, run(false, gla, 0.3), "gla {gla}");
        // A limit the largest move passes: the same stop, at the same step.
        let limit = f64::from_bits(whole.1.0) * 0.999;
        let stopped = run(true, gla, limit);
        assert!(stopped.0.is_some(), "stopped under {limit}");
        assert_eq!(stopped, run(false, gla, limit), "gla {gla}");
    }
}

/// The assembled system as a model that takes no moves
/// ([`Model::gradient_into_moved`]'s default): everything else is the system's own.
struct Unmoved<'a>(&'a Assembled<Melt, 3>);

type Solver = <Vec<f64> as zs_runtime::Vector>::Solver;

impl Model<Vec<f64>> for Unmoved<'_> {
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn matrix_layout(&self, part: HessianPart) -> u64 {
        self.0.matrix_layout(part)
    }
    fn new_matrix(&self, part: HessianPart) -> SparseMatrix {
        self.0.new_matrix(part)
    }
    fn new_solver(&self, part: HessianPart) -> Solver {
        self.0.new_solver(part)
    }
    fn masses_into(&self, m: &mut Vec<f64>) {
        self.0.masses_into(m)
    }
    fn masses_into_slice(&self, m: &mut [f64]) {
        self.0.masses_into_slice(m)
    }
    fn masses_lent(&self) -> Option<Masses<'_>> {
        self.0.masses_lent()
    }
    fn kinetic_energy(&self, v: &Vec<f64>) -> f64 {
        self.0.kinetic_energy(v)
    }
    fn kinetic_energy_measured(&self, v: &Vec<f64>, measured: &Measured) -> f64 {
        self.0.kinetic_energy_measured(v, measured)
    }
    fn potential_at(&self, q: &Vec<f64>) -> f64 {
        self.0.potential_at(q)
    }
    fn gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) {
        self.0.gradient_into(q, g)
    }
    fn gradient_into_keyed(&self, q: &Vec<f64>, g: &mut Vec<f64>, key: PositionsKey) {
        self.0.gradient_into_keyed(q, g, key)
    }
    fn potential_at_keyed(&self, q: &Vec<f64>, key: PositionsKey) -> f64 {
        self.0.potential_at_keyed(q, key)
    }
    fn value_gradient_into(&self, q: &Vec<f64>, g: &mut Vec<f64>) -> f64 {
        self.0.value_gradient_into(q, g)
    }
    fn hessian_into(&self, q: &Vec<f64>, h: &mut SparseMatrix) {
        self.0.hessian_into(q, h)
    }
    fn gradient_hessian_into(&self, q: &Vec<f64>, g: &mut Vec<f64>, h: &mut SparseMatrix) {
        self.0.gradient_hessian_into(q, g, h)
    }
    fn third_contraction_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
        self.0.third_contraction_into(q, a, out)
    }
    fn hessian_vector_into(&self, q: &Vec<f64>, a: &Vec<f64>, out: &mut Vec<f64>) {
        self.0.hessian_vector_into(q, a, out)
    }
}

/// `steps` steps of `model` from `s` by velocity Verlet (under the GLA when `gla`): the
/// final state's bits, and the state.
fn stepped<P: Model<Vec<f64>>>(
    model: &P,
    mut s: DynState,
    gla: bool,
    steps: usize,
) -> (Vec<u64>, DynState) {
    let vv = VelocityVerlet::new(3.0 * H);
    if gla {
        let mut l = Langevin::new(vv, 1.0, 0.5, 3);
        for _ in 0..steps {
            Stepper::step(&mut l, model, &mut s).unwrap();
        }
    } else {
        let mut vv = vv;
        for _ in 0..steps {
            Stepper::step(&mut vv, model, &mut s).unwrap();
        }
    }
    (s.q.iter().chain(&s.v).map(|x| x.to_bits()).collect(), s)
}

/// Velocity Verlet hands the system each step's largest move: the list then skips most
/// staleness tests, and the run is the one of a model that takes no moves — the same builds and
/// the same bits, plain and under the GLA, on one thread and on two, in the file's order and in
/// spatial order (where the key of the positions inside is not the stepper's: the energy asked
/// without a key is then evaluated again, the same bits).
#[test]
fn the_steps_moves_skip_staleness_tests_and_change_no_bit() {
    const STEPS: usize = 16;
    let mut finals = Vec::new();
    let cases = [(BodyOrder::Cells, false, 1)].into_iter().chain(
        [false, true]
            .into_iter()
            .flat_map(|gla| [1, 2].map(|threads| (BodyOrder::Given, gla, threads))),
    );
    for (order, gla, threads) in cases {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let what = format!("{order:?}, gla {gla}, {threads} threads");
        let ((moved, skipped, builds), (plain, plain_builds)) = pool.install(|| {
            let (sys, start) = liquid(order);
            let (moved, s) = stepped(&sys, start.clone(), gla, STEPS);
            let counts = (sys.staleness_tests_skipped(), sys.neighbor_builds());
            let e = sys.potential_at(&s.q);
            let (sys, start) = liquid(order);
            let (plain, s) = stepped(&Unmoved(&sys), start, gla, STEPS);
            assert_eq!(sys.staleness_tests_skipped(), 0);
            // The energy at the last positions, asked without a key: the same bits.
            assert_eq!(e.to_bits(), sys.potential_at(&s.q).to_bits(), "{what}");
            ((moved, counts.0, counts.1), (plain, sys.neighbor_builds()))
        });
        assert!(moved == plain, "{what}: the moves changed the run");
        assert_eq!(builds, plain_builds, "{what}");
        assert!(builds >= 3, "{what}: {builds} builds");
        assert!(skipped >= STEPS / 2, "{what}: {skipped} tests skipped");
        assert!(skipped < STEPS, "{what}: every test skipped");
        if order == BodyOrder::Given {
            finals.push(moved);
        }
    }
    // One thread against two, plain and under the GLA.
    assert!(finals[0] == finals[1] && finals[2] == finals[3]);
}
