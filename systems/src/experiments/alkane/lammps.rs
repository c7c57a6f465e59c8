//! The same equilibrated liquid in LAMMPS: its input (the same force field, `fix nve` + `fix
//! langevin` at the same relaxation rate) and its run, measured by the same code as zs's.

use super::*;

/// The LAMMPS input of the run beside zs's: the same force field (see [`crate::alkane`]),
/// `fix nve` + `fix langevin` with the damping time `m_CH2/γ` of zs's friction, 1 fs, a frame
/// every `sample_dt`.
fn lammps_input(cfg: &Config, ff: &Alkane, damp: f64) -> String {
    let every = whole_steps(cfg.sample_dt, 1.0);
    let steps = whole_steps(cfg.prod, 1.0);
    let [c1, c2, c3] = ff.c;
    format!(
        "# zs reproduce alkane: the liquid beside zs's, same force field and start\n\
         units real\natom_style molecular\nboundary p p p\nspecial_bonds lj 0.0 0.0 0.0\n\
         read_data alkane-lammps.data\nneighbor {SKIN} bin\nneigh_modify every 1 delay 0 check yes\n\
         pair_style lj/cut {rc:?}\npair_modify mix arithmetic shift yes\n\
         pair_coeff 1 1 {e0:?} {s0:?}\npair_coeff 2 2 {e1:?} {s1:?}\n\
         bond_style harmonic\nbond_coeff * {kb:?} {r0:?}\n\
         angle_style harmonic\nangle_coeff * {ka:?} {t0:?}\n\
         dihedral_style opls\ndihedral_coeff * {k1:?} {k2:?} {k3:?} 0.0\n\
         fix 1 all nve\nfix 2 all langevin {t:?} {t:?} {damp:?} {seed}\ntimestep 1.0\n\
         thermo {thermo}\n\
         dump d all custom {every} alkane-lammps.dump id xu yu zu vx vy vz\n\
         dump_modify d format float %.10g sort id\nrun {steps}\n",
        rc = ff.rc,
        e0 = ff.epsilon[0],
        s0 = ff.sigma[0],
        e1 = ff.epsilon[1],
        s1 = ff.sigma[1],
        kb = ff.k_bond,
        r0 = ff.r0,
        ka = 0.5 * ff.k_theta,
        t0 = ff.theta0.to_degrees(),
        k1 = 2.0 * c1,
        k2 = 2.0 * c2,
        k3 = 2.0 * c3,
        t = cfg.temperature,
        seed = cfg.seed + 1,
        thermo = every * 10,
    )
}

/// Runs LAMMPS from the equilibrated state `eq` and measures its frames; `Err` says why it
/// could not (no binary, a failed run, an unreadable dump) — the experiment goes on without it.
pub(super) fn lammps(
    cfg: &Config,
    bin: &Path,
    eq: &DataFile,
    shape: &Shape,
    dof: usize,
) -> Result<Run, String> {
    let dir = std::env::temp_dir().join(format!("zs-alkane-lammps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ff = Alkane::trappe();
    let damp = ff.mass[1] / REAL_ACCELERATION / cfg.gamma;
    let write = |name: &str, text: String| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write("alkane-lammps.data", eq.to_text())?;
    write("alkane-lammps.in", lammps_input(cfg, &ff, damp))?;
    let out = Command::new(bin)
        .args([
            "-in",
            "alkane-lammps.in",
            "-log",
            "alkane-lammps.log",
            "-screen",
            "none",
        ])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("LAMMPS ({}) did not start: {e}", bin.display()))?;
    let log = std::fs::read_to_string(dir.join("alkane-lammps.log")).unwrap_or_default();
    if !out.status.success() {
        let tail: Vec<&str> = log.lines().rev().take(3).collect();
        return Err(format!(
            "LAMMPS ({}) failed ({}): {}",
            bin.display(),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ));
    }
    let seconds = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Loop time of "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|x| x.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    let dump = std::fs::read_to_string(dir.join("alkane-lammps.dump"))
        .map_err(|e| format!("the LAMMPS dump: {e}"))?;
    let n = eq.len();
    let mut series = vec![Vec::new(); Config::observables().len()];
    let mut counts = vec![0u64; cfg.bins];
    let (mut q, mut v) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
    let mut lines = dump.lines();
    let mut frames = 0;
    while let Some(line) = lines.next() {
        if !line.starts_with("ITEM: ATOMS") {
            continue;
        }
        for i in 0..n {
            let row: Vec<f64> = lines
                .next()
                .ok_or("the LAMMPS dump ends inside a frame")?
                .split_whitespace()
                .skip(1)
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the LAMMPS dump: {e}"))?;
            if row.len() != 6 {
                return Err("the LAMMPS dump: a row without x y z vx vy vz".into());
            }
            q[3 * i..3 * i + 3].copy_from_slice(&row[..3]);
            v[3 * i..3 * i + 3].copy_from_slice(&row[3..]);
        }
        frames += 1;
        // The first frame is the start (timestep 0), not a sample.
        if frames > 1 {
            for (x, o) in series
                .iter_mut()
                .zip(shape.measure(&q, &v, dof, &mut counts))
            {
                x.push(o);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Run {
        method: Method::Lammps,
        h: 1.0,
        steps: whole_steps(cfg.prod, 1.0),
        seconds,
        failure: None,
        series,
        density: density(&counts),
    })
}
