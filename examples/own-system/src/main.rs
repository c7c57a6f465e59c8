//! A system of one's own with the whole `zs` program: `run` (every integrator, Langevin, guards,
//! checkpoints, CSV, XYZ and LAMMPS data output), `eval`, `nma`, `ensemble` and `temper`.
//!
//! The system is a melt of bead-spring ring polymers — harmonic bonds, a bending stiffness,
//! the WCA repulsion under a cutoff in a periodic box — read from a LAMMPS data file
//! (`--data`), or built as stacked planar rings (`--rings`, `--beads`) and written with
//! `--write-data`. Three parts: the potential (`#[mechanical_system]`), the description
//! (`CliSystem`: name, options, defaults, how it is built and run), and `main`.
//!
//! ```text
//! cargo run --release -- run ring-melt --rings 8 --beads 20 --t-end 1 --write-data rings.data
//! cargo run --release -- run ring-melt --data rings.data --gamma 1 --kt 1 --t-end 5
//! cargo run --release -- eval ring-melt --data rings.data --out forces.csv
//! cargo run --release -- nma ring-melt --data rings.data --lowest 10
//! ```

use std::f64::consts::PI;
use std::path::Path;
use std::process::ExitCode;

use clap::Arg;
use zs_runtime::assembly::{Assembled, BodyOrder, Topology};
use zs_runtime::lammps::{AtomStyle, Bonded, DataFile};
use zs_runtime::{mechanical_system, MoveGuard};
use zs_systems::cli::system::{eval_from_data, run_with_neighbors, write_final_data};
use zs_systems::cli::{
    positive_f64, Accepts, CliError, CliSystem, EvalArgs, IntegratorName, Job, RunArgs, Watch,
};
use zs_systems::say;

/// Ring polymers: bonds of rest length 1, bending about the straight angle written in cos θ
/// (smooth at θ = π, where `acos` is not), WCA: LJ cut at 2^(1/6) and shifted (LJ units).
pub struct Rings {
    /// Bond stiffness.
    pub k_bond: f64,
    /// Bending stiffness (`--bend`).
    pub k_bend: f64,
}

#[mechanical_system]
impl Rings {
    fn bond_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2)).sqrt();
        0.5 * self.k_bond * (r - 1.0).powi(2)
    }
    fn angle_potential(&self, a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
        let u = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        let v = [c[0] - b[0], c[1] - b[1], c[2] - b[2]];
        let cos = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
            / ((u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
                * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
                .sqrt();
        self.k_bend * (1.0 + cos)
    }
    fn pair_potential(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        let r2 = (b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2);
        if r2 < 1.259_921_049_894_873_2 {
            let s6 = 1.0 / (r2 * r2 * r2);
            4.0 * (s6 * s6 - s6) + 1.0
        } else {
            0.0
        }
    }
}

/// The WCA cutoff 2^(1/6) and the neighbour list's skin.
const CUTOFF: f64 = 1.122_462_048_309_373;
const SKIN: f64 = 0.4;
/// The bond stiffness (fixed) and the default of `--bend`.
const K_BOND: f64 = 400.0;
const K_BEND: f64 = 5.0;

/// The description of the ring melt for the `zs` program.
struct RingMelt;

/// `--bend K`: declared for `run` (and so `ensemble`, `temper`), `eval` and `nma`, through one
/// function so that every subcommand declares the same option.
fn bend_option() -> Arg {
    Arg::new("bend")
        .long("bend")
        .value_name("K")
        .value_parser(positive_f64)
        .help("Bending stiffness K of K (1 + cos θ) (ring-melt; default 5)")
}

/// The longest bond of the run (a summary line) and, with `--max-bond L`, a guard: the run
/// stops, its trajectory kept, when a bond gets longer than `L`.
struct LongestBond {
    bonds: Vec<[usize; 2]>,
    sides: [f64; 3],
    limit: f64,
    longest: f64,
}

impl LongestBond {
    /// The longest bond of `q` (nearest image).
    fn of(&self, q: &[f64]) -> f64 {
        let mut longest = 0.0_f64;
        for &[i, j] in &self.bonds {
            let r2: f64 = (0..3)
                .map(|a| {
                    let d = q[3 * j + a] - q[3 * i + a];
                    let d = d - (d / self.sides[a]).round() * self.sides[a];
                    d * d
                })
                .sum();
            longest = longest.max(r2.sqrt());
        }
        longest
    }
}

impl Watch for LongestBond {
    fn check(&mut self, q: &[f64]) -> Result<(), zs_runtime::GuardViolation> {
        let r = self.of(q);
        if r <= self.limit {
            Ok(())
        } else {
            Err(zs_runtime::GuardViolation {
                what: "longest bond",
                value: r,
                limit: self.limit,
            })
        }
    }
    fn observe(&mut self, q: &[f64]) {
        self.longest = self.longest.max(self.of(q));
    }
    fn summary(&self) -> Option<String> {
        Some(format!(
            "  longest bond     {:>14.4}   (over the run, nearest image)",
            self.longest
        ))
    }
}

/// `n` rings of `beads` beads, each a regular polygon of side 1 in its own plane, stacked in
/// columns 1.5 apart in a box that holds each ring clear of its own periodic images.
fn build(n: usize, beads: usize) -> DataFile {
    let radius = 0.5 / (PI / beads as f64).sin();
    let m = (n as f64).cbrt().ceil() as usize;
    // Rings 1.5 apart in a column, and no side shorter than twice the cutoff plus the skin.
    let (across, up) = (2.0 * radius + 1.5, (3.2 / m as f64).max(1.5));
    let columns = n.div_ceil(m);
    let per_side = (columns as f64).sqrt().ceil() as usize;
    let sides = [
        per_side as f64 * across,
        per_side as f64 * across,
        m as f64 * up,
    ];
    let mut positions = Vec::with_capacity(n * beads);
    let mut bonds = Vec::with_capacity(n * beads);
    for r in 0..n {
        let (column, layer) = (r / m, r % m);
        let centre = [
            (column % per_side) as f64 * across + across / 2.0,
            (column / per_side) as f64 * across + across / 2.0,
            layer as f64 * up + up / 2.0,
        ];
        for k in 0..beads {
            let phi = 2.0 * PI * k as f64 / beads as f64;
            positions.push([
                centre[0] + radius * phi.cos(),
                centre[1] + radius * phi.sin(),
                centre[2],
            ]);
            bonds.push(Bonded {
                kind: 1,
                atoms: [r * beads + k, r * beads + (k + 1) % beads],
            });
        }
    }
    let atoms = n * beads;
    DataFile {
        title: format!("{n} rings of {beads} beads (own-system example)"),
        style: AtomStyle::Bond,
        lo: [0.0; 3],
        hi: sides,
        masses: vec![1.0],
        ids: (1..=atoms as u64).collect(),
        molecules: (0..atoms).map(|i| (i / beads + 1) as u64).collect(),
        types: vec![1; atoms],
        charges: vec![0.0; atoms],
        positions,
        velocities: vec![[0.0; 3]; atoms],
        has_velocities: false,
        bond_types: 1,
        angle_types: 0,
        dihedral_types: 0,
        bonds,
        angles: Vec::new(),
        dihedrals: Vec::new(),
    }
}

/// A melt: the system, its positions and velocities.
type Melt = (Assembled<Rings, 3>, Vec<f64>, Vec<f64>);

/// The melt a data file describes, with bending stiffness `k_bend`.
fn melt(data: &DataFile, k_bend: f64) -> Result<Melt, CliError> {
    let topology = Topology::new(data.len())
        .bonds_from(data.bonds.iter().map(|b| (b.atoms[0], b.atoms[1])))
        .angles_and_dihedrals_from_bonds()
        .exclude_bonded()
        .periodic(data.box_lengths())
        .cutoff(CUTOFF, SKIN);
    let q: Vec<f64> = data.positions.iter().flatten().copied().collect();
    let v: Vec<f64> = data.velocities.iter().flatten().copied().collect();
    let rings = Rings {
        k_bond: K_BOND,
        k_bend,
    };
    let system = Assembled::ordered(rings, topology, BodyOrder::from_env(), &q)?;
    Ok((system, q, v))
}

/// `--data`, which `eval` and `nma` need.
fn data_file(path: Option<&Path>) -> Result<DataFile, CliError> {
    let path = path.ok_or(CliError::Missing {
        system: "ring-melt",
        option: "--data FILE",
        why: "a LAMMPS data file of the rings (zs run ring-melt --write-data FILE writes one)",
    })?;
    Ok(DataFile::read(path)?)
}

impl CliSystem for RingMelt {
    fn name(&self) -> &'static str {
        "ring-melt"
    }
    fn about(&self) -> &'static str {
        "Bead-spring ring polymers with bending, WCA in a periodic box (LJ units): --data FILE, or built with --rings, --beads"
    }
    fn accepts(&self) -> Accepts {
        Accepts {
            threads: true,
            data: true,
            xyz: true,
            ..Accepts::default()
        }
    }
    fn options(&self) -> Vec<Arg> {
        vec![
            bend_option(),
            Arg::new("rings")
                .long("rings")
                .value_name("N")
                .value_parser(clap::value_parser!(u64).range(1..))
                .help("Rings to build (ring-melt, without --data; default 8)"),
            Arg::new("beads")
                .long("beads")
                .value_name("B")
                .value_parser(clap::value_parser!(u64).range(4..))
                .help("Beads per ring to build (ring-melt, without --data; default 20)"),
            Arg::new("max-bond")
                .long("max-bond")
                .value_name("L")
                .value_parser(positive_f64)
                .help("Guard: stop (trajectory kept) when a bond gets longer than L (ring-melt)"),
        ]
    }
    fn eval_options(&self) -> Vec<Arg> {
        vec![bend_option()]
    }
    fn nma_options(&self) -> Vec<Arg> {
        vec![bend_option()]
    }
    fn check(&self, args: &RunArgs) -> Result<(), CliError> {
        for option in ["rings", "beads"] {
            if args.data.is_some() && args.options.given(option) {
                return Err(CliError::does_not_apply(
                    format!("--{option}"),
                    self.name(),
                    Some("--data gives the rings; --rings and --beads build them instead"),
                ));
            }
        }
        Ok(())
    }
    fn defaults(&self, _method: IntegratorName, _omega: f64) -> (f64, f64, f64) {
        // h = 0.005 (the bonds' period is 0.22), T = 5, β = 1/4.
        (0.005, 5.0, 0.25)
    }
    fn default_integrator(&self) -> IntegratorName {
        IntegratorName::Verlet
    }
    fn default_every(&self, steps: u64) -> u64 {
        (steps / 10).max(1)
    }
    fn run(&self, args: &RunArgs, job: Job<'_>) -> Result<(), CliError> {
        let o = &args.options;
        let k_bend = o.get::<f64>("bend").unwrap_or(K_BEND);
        let (data, from) = match &args.data {
            Some(path) => (DataFile::read(path)?, path.display().to_string()),
            None => {
                let (n, beads) = (
                    o.get::<u64>("rings").unwrap_or(8),
                    o.get::<u64>("beads").unwrap_or(20),
                );
                (build(n as usize, beads as usize), "built".to_string())
            }
        };
        let (system, q, v) = melt(&data, k_bend)?;
        let (n, sides) = (data.len(), data.box_lengths());
        let write_data = |q: &[f64], v: &[f64]| match &args.write_data {
            Some(out) => write_final_data(
                out,
                &data,
                format!("ring melt written by own-system ({from})"),
                q,
                v,
            ),
            None => Ok(()),
        };
        let (bonds, limit) = (
            data.bonds.iter().map(|b| b.atoms).collect::<Vec<_>>(),
            o.get::<f64>("max-bond").unwrap_or(f64::INFINITY),
        );
        let watch = || -> Box<dyn Watch> {
            Box::new(LongestBond {
                bonds: bonds.clone(),
                sides,
                limit,
                longest: 0.0,
            })
        };
        let job = job
            .with_xyz(core::iter::repeat_n("C", n).collect::<zs_runtime::Symbols>())
            .with_lattice(data.lo, sides)
            .with_move_guard(MoveGuard::new(SKIN, 3))
            .with_watch(&watch)
            .with_at_end(&write_data);
        let names = system.coordinate_names();
        let state = job.initial_state(system.state(q, v), &names)?;
        say!(
            "ring-melt: {n} beads in {} rings ({from}), bending K = {k_bend}, WCA cut at 2^(1/6), periodic box {:.3} × {:.3} × {:.3}",
            data.molecules.iter().max().copied().unwrap_or(0),
            sides[0],
            sides[1],
            sides[2]
        );
        run_with_neighbors(&job, &system, state, names)
    }
    fn eval(&self, args: &EvalArgs) -> Result<String, CliError> {
        let data = data_file(args.data.as_deref())?;
        let k_bend = args.options.get::<f64>("bend").unwrap_or(K_BEND);
        let (system, q, v) = melt(&data, k_bend)?;
        let names = system.coordinate_names();
        eval_from_data(args, &system, q, v, &names)
    }
    fn nma(
        &self,
        args: &zs_systems::cli::NmaArgs,
    ) -> Result<zs_systems::cli::system::modes::Spectrum, CliError> {
        use zs_systems::cli::system::modes::{analyse, start, Problem, Sites, Units};
        let data = data_file(args.data.as_deref())?;
        let k_bend = args.options.get::<f64>("bend").unwrap_or(K_BEND);
        let (system, q, _) = melt(&data, k_bend)?;
        let q = start(args, &system.coordinate_names(), q)?;
        let sites = Sites {
            symbols: vec!["C".to_string(); data.len()],
            lattice: Some((data.lo, data.box_lengths())),
        };
        analyse(
            args,
            Problem {
                model: &system,
                q,
                sites: Some(sites),
                units: Units::ANGULAR,
                about: format!("ring melt of {} beads, bending K = {k_bend}", data.len()),
            },
        )
    }
}

fn main() -> ExitCode {
    zs_systems::cli::main_with(vec![Box::new(RingMelt)])
}
