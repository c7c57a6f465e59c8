#!/usr/bin/env python3
"""Rigid SPC/E water in a periodic box with PME: zs against LAMMPS, OpenMM and GROMACS on the
same coordinates, 1 and 2 cores, alternated (BENCHMARKS.md, "Charged liquids").

The box is LAMMPS's `examples/rdf-adf/data.spce` (1 500 molecules, 4 500 atoms), or it
replicated by LAMMPS (`--replicate 2x4x1`: 36 000 atoms, as LAMMPS's `bench/POTENTIALS/in.spce`
does), written as a data file that every engine reads. Each engine takes its own settings for a
2 fs step of rigid water, cutoff 9.8 Å, no dispersion correction, NVE:

- zs: `zs run water-box --data FILE --threads K` (SETTLE, smooth PME at its default tolerance
  5e-4); the time is the summary's `steps alone` (the steps without output).
- LAMMPS: the settings of `bench/POTENTIALS/in.spce` (`lj/cut/coul/long 9.8 9.8`, `pppm 1.0e-4`,
  `fix shake 0.0001 20`, `neighbor 2.0 bin`, `neigh_modify every 1 delay 10 check yes`) on K MPI
  ranks; the time is its loop time.
- OpenMM: the CPU platform with K threads, `NonbondedForce.PME` at its default
  `ewaldErrorTolerance` (5e-4), cutoff 0.98 nm, rigid water by constraints, `VerletIntegrator`;
  the time is that of `integrator.step` after 10 warm-up steps.
- GROMACS: `gmx mdrun -nt K -ntmpi 1` on `oplsaa.ff/spce.itp` (SETTLE), PME, `rcoulomb = rvdw
  = 0.98`, `DispCorr = no`, the Verlet buffer and PME tuning its own; the time is that of the
  second half of the run (`-resethway`), from its log. Its SPC/E charges are −0.8476 / 0.4238,
  the data file's −0.8472 / 0.4236 (no matter for speed); the `.gro` keeps 0.01 Å. Debian's
  `gmx` computes in mixed precision (single-precision kernels); `gromacs-double` is the same
  run by `gmx_d`, GROMACS built in double precision, as zs and LAMMPS compute. (OpenMM's CPU
  platform has single and mixed precision only.) In NVE GROMACS sets no Verlet buffer (its
  log: `buffer 0.000 nm, rlist 0.980 nm`, the list kept 10 steps): pairs that come within
  the cutoff between two searches are missed. `--gromacs-rlist 1.18` gives it LAMMPS's and
  zs's list instead — 2 Å beyond the cutoff, searched every 10 steps
  (`verlet-buffer-tolerance = -1`) — so that all three evaluate every pair within the cutoff.
  `--gromacs-parts` prints, per GROMACS run, its log's cycle accounting as milliseconds per
  step: the nonbonded kernel (`Force`), `PME mesh`, and the search (per search and per step).

Usage (from the repository root; needs `lmp`, `mpirun`, `gmx` from apt and `pip install
openmm numpy`):
    python3 benches/peers/water_box_peers.py [--replicate 2x4x1] [--steps 100] [--repeat 2]
        [--engines zs,lammps,openmm,gromacs,gromacs-double] [--gromacs-rlist NM]
        [--gromacs-parts]
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import tempfile
import time

DATA = "/usr/share/lammps/examples/rdf-adf/data.spce"
CUTOFF = 9.8
KCAL = 4.184
MASS = {1: 15.9994, 2: 1.00794}
SIGMA_O, EPSILON_O = 3.166, 0.15535
R_OH, THETA = 1.0, 109.47


def lammps_settings(data):
    return f"""units real
atom_style full
read_data {data}
pair_style lj/cut/coul/long {CUTOFF} {CUTOFF}
pair_coeff * * 0.0 1.0
pair_coeff 1 1 {EPSILON_O} {SIGMA_O}
bond_style harmonic
angle_style harmonic
bond_coeff 1 1000.00 {R_OH}
angle_coeff 1 100.0 {THETA}
special_bonds lj/coul 0.0 0.0 0.0
"""


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def replicated(d, replicate):
    """The data file of the box, replicated by LAMMPS when asked."""
    if not replicate:
        return DATA
    path = os.path.join(d, f"data.spce.{replicate}")
    with open(os.path.join(d, "in.replicate"), "w") as fh:
        fh.write(f"units real\natom_style full\nread_data {DATA}\n"
                 f"replicate {replicate.replace('x', ' ')}\nwrite_data {path} nocoeff\n")
    run(["lmp", "-in", "in.replicate", "-log", "none", "-screen", "none"], d)
    return path


def read_data(path):
    """Box sides and origin (Å), and the atoms `(id, mol, type, q, x, y, z)` in id order."""
    lines = open(path).read().splitlines()
    lo, sides = [0.0] * 3, [0.0] * 3
    for line in lines[:40]:
        for a, axis in enumerate("xyz"):
            if line.strip().endswith(f"{axis}lo {axis}hi"):
                l, h = map(float, line.split()[:2])
                lo[a], sides[a] = l, h - l
    start = next(k for k, l in enumerate(lines) if l.startswith("Atoms")) + 2
    atoms = []
    for line in lines[start:]:
        if not line.strip():
            break
        f = line.split()
        atoms.append((int(f[0]), int(f[1]), int(f[2]), float(f[3]),
                      float(f[4]), float(f[5]), float(f[6])))
    atoms.sort()
    return lo, sides, atoms


def molecules(atoms):
    """Each molecule's atoms as (O, H, H) indices into `atoms`."""
    by_mol = {}
    for k, a in enumerate(atoms):
        by_mol.setdefault(a[1], []).append(k)
    out = []
    for ks in by_mol.values():
        o = [k for k in ks if atoms[k][2] == 1]
        h = [k for k in ks if atoms[k][2] == 2]
        assert len(o) == 1 and len(h) == 2, "a molecule of one O and two H"
        out.append((o[0], h[0], h[1]))
    return out


def whole(atoms, sides):
    """Positions (Å) with each molecule whole: its hydrogens at the nearest image of its oxygen
    (a data file may wrap a molecule across the box; OpenMM's constraints and GROMACS's SETTLE
    take the atoms as given)."""
    x = [list(a[4:7]) for a in atoms]
    for o, *hs in molecules(atoms):
        for h in hs:
            for a in range(3):
                x[h][a] -= sides[a] * round((x[h][a] - x[o][a]) / sides[a])
    return x


def time_zs(data, steps, threads):
    zs = os.path.join("target", "release", "zs")
    with tempfile.TemporaryDirectory() as d:
        out = run([zs, "run", "water-box", "--data", data, "--t-end", str(2 * steps),
                   "--threads", str(threads), "--out", os.path.join(d, "zs.csv")], ".")
    return float(re.search(r"steps alone.*\(([0-9.]+) s\)", out).group(1))


def time_lammps(d, data, steps, ranks):
    script = lammps_settings(data) + f"""kspace_style pppm 1.0e-4
neighbor 2.0 bin
neigh_modify every 1 delay 10 check yes
fix 1 all shake 0.0001 20 0 b 1 a 1
fix 2 all nve
velocity all create 300.0 4928459 dist gaussian
timestep 2.0
thermo 1000
run {steps}
"""
    with open(os.path.join(d, "in.spce"), "w") as fh:
        fh.write(script)
    cmd = ["lmp", "-in", "in.spce", "-log", "log.lammps", "-screen", "none"]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + cmd
    run(cmd, d)
    log = open(os.path.join(d, "log.lammps")).read()
    return float(re.search(r"Loop time of ([0-9.eE+-]+)", log).group(1))


def openmm_simulation(data, threads):
    import openmm
    from openmm import unit
    lo, sides, atoms = read_data(data)
    system = openmm.System()
    nm = 0.1
    system.setDefaultPeriodicBoxVectors(*[openmm.Vec3(*[sides[a] * nm if a == b else 0.0
                                                        for b in range(3)]) for a in range(3)])
    for a in atoms:
        system.addParticle(MASS[a[2]])
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.PME)
    nb.setCutoffDistance(CUTOFF * nm)
    nb.setUseDispersionCorrection(False)
    for a in atoms:
        if a[2] == 1:
            nb.addParticle(a[3], SIGMA_O * nm, EPSILON_O * KCAL)
        else:
            nb.addParticle(a[3], 1.0 * nm, 0.0)
    r_hh = 2 * R_OH * math.sin(math.radians(THETA) / 2)
    for o, h1, h2 in molecules(atoms):
        for i, j, r in ((o, h1, R_OH), (o, h2, R_OH), (h1, h2, r_hh)):
            system.addConstraint(i, j, r * nm)
            nb.addException(i, j, 0.0, 1.0, 0.0)
    system.addForce(nb)
    integrator = openmm.VerletIntegrator(0.002)
    platform = openmm.Platform.getPlatformByName("CPU")
    context = openmm.Context(system, integrator, platform, {"Threads": str(threads)})
    context.setPositions([openmm.Vec3(*(c * nm for c in x)) for x in whole(atoms, sides)])
    context.applyConstraints(1e-6)
    context.setVelocitiesToTemperature(300 * unit.kelvin, 4928459)
    return context, integrator


def time_openmm(data, steps, threads):
    context, integrator = openmm_simulation(data, threads)
    integrator.step(10)
    context.getState(getEnergy=True)
    start = time.perf_counter()
    integrator.step(steps)
    context.getState(getEnergy=True)
    return time.perf_counter() - start


def gromacs_files(d, data):
    lo, sides, atoms = read_data(data)
    mols = molecules(atoms)
    pos = whole(atoms, sides)
    with open(os.path.join(d, "conf.gro"), "w") as fh:
        fh.write("SPC/E from a LAMMPS data file\n")
        fh.write(f"{3 * len(mols)}\n")
        n = 0
        for m, (o, h1, h2) in enumerate(mols):
            for k, name in ((o, "OW"), (h1, "HW1"), (h2, "HW2")):
                n += 1
                x = [(pos[k][a] - lo[a]) * 0.1 for a in range(3)]
                fh.write(f"{(m + 1) % 100000:5d}{'SOL':<5}{name:>5}{n % 100000:5d}"
                         f"{x[0]:8.3f}{x[1]:8.3f}{x[2]:8.3f}\n")
        fh.write(f"{sides[0] * 0.1:10.5f}{sides[1] * 0.1:10.5f}{sides[2] * 0.1:10.5f}\n")
    with open(os.path.join(d, "topol.top"), "w") as fh:
        fh.write('#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spce.itp"\n\n'
                 f"[ system ]\nSPC/E\n\n[ molecules ]\nSOL {len(mols)}\n")


PARTS = False


def time_gromacs(d, steps, threads, gmx="gmx", rlist=None):
    # Twice the steps, timed over the second half (-resethway): PME tuning and start-up out.
    with open(os.path.join(d, "grompp.mdp"), "w") as fh:
        fh.write(f"""integrator = md
dt = 0.002
nsteps = {2 * steps}
cutoff-scheme = Verlet
coulombtype = PME
rcoulomb = {CUTOFF / 10}
rvdw = {CUTOFF / 10}
DispCorr = no
tcoupl = no
pcoupl = no
gen-vel = yes
gen-temp = 300
gen-seed = 4928459
nstcalcenergy = 100
nstenergy = 0
nstlog = 0
""")
        if rlist is not None:
            fh.write(f"verlet-buffer-tolerance = -1\nrlist = {rlist}\nnstlist = 10\n")
    run([gmx, "-quiet", "grompp", "-f", "grompp.mdp", "-c", "conf.gro", "-p", "topol.top",
         "-o", "topol.tpr", "-maxwarn", "2"], d)
    run([gmx, "-quiet", "mdrun", "-s", "topol.tpr", "-nt", str(threads), "-ntmpi", "1",
         "-resethway", "-noconfout", "-g", "md.log"], d)
    log = open(os.path.join(d, "md.log")).read()
    wall = float(re.search(r"Time:\s+([0-9.]+)\s+([0-9.]+)", log).group(2))
    if PARTS:
        # The cycle table's rows: name, ranks, threads, calls, wall time (s), ...
        table = log[log.index("R E A L   C Y C L E"):]
        part = {}
        for name in ("Neighbor search", "Force", "PME mesh"):
            m = re.search(rf"^\s*{name}\s+\d+\s+\d+\s+(\d+)\s+([0-9.]+)", table, re.M)
            part[name] = (int(m.group(1)), float(m.group(2)))
        searches, search = part["Neighbor search"]
        print(f"    {gmx}, {threads} thread(s), rlist {rlist or 'its own'}: per step, nonbonded "
              f"{1e3 * part['Force'][1] / steps:.2f} ms, PME mesh {1e3 * part['PME mesh'][1] / steps:.2f} ms, "
              f"search {1e3 * search / steps:.2f} ms ({1e3 * search / searches:.2f} ms per search, "
              f"{searches} searches)")
    return wall, steps


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicate", help="e.g. 2x4x1 (LAMMPS's replicate)")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--gromacs-steps", type=int, help="timed GROMACS steps (default: 10 × --steps)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--engines", default="zs,lammps,openmm,gromacs")
    p.add_argument("--gromacs-rlist", type=float,
                   help="GROMACS's list radius in nm, searched every 10 steps (default: its own)")
    p.add_argument("--gromacs-parts", action="store_true",
                   help="print each GROMACS run's nonbonded, PME and search times per step")
    a = p.parse_args()
    global PARTS
    PARTS = a.gromacs_parts
    engines = a.engines.split(",")
    if "zs" in engines:
        subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-systems", "--bin", "zs"])
    with tempfile.TemporaryDirectory() as d:
        data = replicated(d, a.replicate)
        natoms = len(read_data(data)[2])
        print(f"{natoms} atoms ({data}), 2 fs, cutoff {CUTOFF} Å; steps/s, {a.repeat} alternated rounds")
        if "gromacs" in engines or "gromacs-double" in engines:
            gromacs_files(d, data)
        for cores in (1, 2):
            rates = {e: [] for e in engines}
            for _ in range(a.repeat):
                for e in engines:
                    if e == "zs":
                        rates[e].append(a.steps / time_zs(data, a.steps, cores))
                    elif e == "lammps":
                        rates[e].append(a.steps / time_lammps(d, data, a.steps, cores))
                    elif e == "openmm":
                        rates[e].append(a.steps / time_openmm(data, a.steps, cores))
                    elif e in ("gromacs", "gromacs-double"):
                        gmx = "gmx" if e == "gromacs" else "gmx_d"
                        wall, n = time_gromacs(d, a.gromacs_steps or 10 * a.steps, cores, gmx,
                                               a.gromacs_rlist)
                        rates[e].append(n / wall)
            line = ", ".join(f"{e} {' / '.join(f'{r:.1f}' for r in rates[e])}" for e in engines)
            print(f"  {cores} {'core' if cores == 1 else 'cores'}: {line}")
            if "zs" in engines:
                z = statistics.median(rates["zs"])
                ratios = ", ".join(f"zs ÷ {e} {z / statistics.median(rates[e]):.2f}"
                                   for e in engines if e != "zs")
                print(f"    medians: {ratios}")


if __name__ == "__main__":
    main()
