#!/usr/bin/env python3
"""zs against LAMMPS on LAMMPS's own FENE bead-spring benchmark (bench/in.chain).

The configuration is LAMMPS's `data.chain` (32 000 beads, 320 chains of 100, density 0.85),
shipped by Debian's `lammps-examples` at /usr/share/lammps/examples/COUPLE/multiple/data.chain;
the force field is in.chain's: FENE K = 30, R0 = 1.5, eps = sigma = 1; LJ cut 1.12, shifted;
special_bonds fene; neighbor 0.4 bin, neigh_modify every 1 delay 1 (check yes).

1. Energies and forces (`run 0`, per-atom forces dumped with 17 digits) against
   `zs eval kremer-grest --data FILE`: the relative difference of the total energy and the
   largest force difference relative to the largest force.
2. Speed: `--steps` steps (default 500, in.chain's) of Langevin dynamics at T = 1, damping 1,
   dt = 0.012 — LAMMPS `fix nve` + `fix langevin` on 1 MPI rank and with `mpirun -np 2`,
   zs `run kremer-grest --integrator verlet --gamma 1 --kt 1` (velocity Verlet with GLA's exact
   Ornstein–Uhlenbeck velocity flow; friction gamma/m = 1 as LAMMPS's damp = 1) on 1 and 2
   threads. Both report the loop's wall time (LAMMPS's "Loop time", zs's "wall time"; set-up
   and reading the file excluded by both), as steps per second. With `--repeat R`, R pairs of
   runs per core count, LAMMPS and zs alternated, and the median of their ratios. With
   `--verlet`, plain velocity Verlet instead (LAMMPS `fix nve` alone; zs without `--gamma`).
3. With `--replicate A,B,C`: both on the file replicated A × B × C times (LAMMPS `replicate`,
   written back with `write_data`, so that zs reads the very configuration LAMMPS steps), and
   with `--memory` the peak resident memory of each on 1 rank / thread (`/usr/bin/time -f %M`,
   the whole process: the same `--steps` of Langevin dynamics).
4. With `--shuffle SEED`: both on the file with its atom IDs renumbered at random — LAMMPS sorts
   its atoms in space itself; zs holds them in spatial order inside (`BodyOrder::Auto`).
5. With `--cell-order SIDE`: both on the file with its atom IDs renumbered cell by cell (cells of
   SIDE, x fastest): zs then holds the melt in spatial order with no permutation at all (the
   file's order is already local, so `BodyOrder::Auto` keeps it) — the limit of spatial order
   inside the assembly, which permutes `q` and the gradient at every evaluation.

Usage (from the repository root; needs `apt-get install lammps lammps-examples openmpi-bin`):
    python3 benches/peers/lammps_kremer_grest.py [--data FILE] [--steps 500] [--repeat R] [--skip-speed] [--scaling]
        [--replicate A,B,C] [--shuffle SEED] [--cell-order SIDE] [--verlet] [--memory]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

from lammps_run import alternated, forces_against_zs, lammps

DATA = "/usr/share/lammps/examples/COUPLE/multiple/data.chain"

FORCE_FIELD = """units lj
atom_style bond
special_bonds fene
read_data {data}
neighbor 0.4 bin
neigh_modify every 1 delay 1
bond_style fene
bond_coeff 1 30.0 1.5 1.0 1.0
pair_style lj/cut 1.12
pair_modify shift yes
pair_coeff 1 1 1.0 1.0 1.12
"""


def zs_binary():
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-systems", "--bin", "zs"])
    return os.path.join("target", "release", "zs")


def check(zs, data):
    with tempfile.TemporaryDirectory() as d:
        log = lammps(FORCE_FIELD.format(data=data) + """
thermo_style custom step pe ebond evdwl
thermo_modify norm no format float %.17g
dump d all custom 1 f.dump id fx fy fz
dump_modify d format float %.17g sort id
run 0
""", d)
        rows = [l.split() for l in log.splitlines()]
        i = next(k for k, r in enumerate(rows) if r[:4] == ["Step", "PotEng", "E_bond", "E_vdwl"])
        pe, ebond, evdwl = (float(x) for x in rows[i + 1][1:4])
        v, n, rel, scale = forces_against_zs(d, zs, "kremer-grest", data)
        print(f"energy: LAMMPS {pe:.17g} (bond {ebond:.17g}, pair {evdwl:.17g}), zs {v:.17g}, "
              f"relative difference {abs(v - pe) / abs(pe):.2e}")
        print(f"forces: {n} atoms, max |F_zs - F_lammps| / max |F| = {rel:.2e} (max |F| {scale:.3g})")


def replicated(data, rep, d):
    """`data` replicated `rep` (three counts) by LAMMPS, written to `d` without coefficients."""
    out = os.path.join(d, "data.chain." + "x".join(map(str, rep)))
    lammps(FORCE_FIELD.format(data=data).replace(
        f"read_data {data}", f"read_data {data}\nreplicate {rep[0]} {rep[1]} {rep[2]}") + f"""
write_data {out} nocoeff
""", d)
    return out


def sections(lines):
    """Where the Atoms, Velocities and Bonds sections of a data file's `lines` start."""
    return {l.split("#")[0].strip(): k for k, l in enumerate(lines)
            if l.split("#")[0].strip() in ("Atoms", "Velocities", "Bonds")}


def section_rows(lines, head, section):
    """The line numbers of `section`'s rows."""
    k = head[section] + 2
    while k < len(lines) and lines[k].strip():
        yield k
        k += 1


def renumbered(lines, new_id, by_new_id=False):
    """`lines` with the atom IDs renumbered by `new_id` (old ID string -> new ID string) in the
    Atoms, Velocities and Bonds sections. With `by_new_id`, the Atoms and Velocities rows
    and the bonds are listed by their new IDs (least first), the bonds numbered again in that order."""
    head = sections(lines)
    for section, at in (("Atoms", [0]), ("Velocities", [0]), ("Bonds", [2, 3])):
        rows = list(section_rows(lines, head, section))
        fields = [lines[k].split() for k in rows]
        for f in fields:
            for a in at:
                f[a] = new_id[f[a]]
        if by_new_id:
            fields.sort(key=lambda f: sorted(int(f[a]) for a in at))
            if section == "Bonds":
                for b, f in enumerate(fields):
                    f[0] = str(b + 1)
        for k, f in zip(rows, fields):
            lines[k] = " ".join(f)
    return lines


def shuffled(data, seed, d):
    """`data` with its atom IDs renumbered at random (`seed`): the same melt, its atoms in no
    spatial order (IDs in the Atoms, Velocities and Bonds sections renumbered together)."""
    import random
    lines = open(data).read().split("\n")
    head = sections(lines)
    n = next(int(l.split()[0]) for l in lines if l.strip().endswith(" atoms"))
    new = list(range(1, n + 1))
    random.Random(seed).shuffle(new)
    ids = {}
    for k in section_rows(lines, head, "Atoms"):
        ids[lines[k].split()[0]] = str(new[len(ids)])
    out = os.path.join(d, os.path.basename(data) + f".shuffled{seed}")
    open(out, "w").write("\n".join(renumbered(lines, ids)))
    return out


def box_of(lines, data):
    """The box of a data file's `lines`: `{"x": (xlo, xhi), "y": ..., "z": ...}`."""
    box = {}
    for l in lines[:60]:
        f = l.split()
        if len(f) >= 4 and f[2] in ("xlo", "ylo", "zlo"):
            box[f[2][0]] = (float(f[0]), float(f[1]))
    if len(box) != 3:
        sys.exit(f"{data}: no xlo xhi, ylo yhi and zlo zhi lines to bin the atoms by")
    return box


def in_cell_order(data, side, d):
    """`data` with its atom IDs renumbered in cell order: cells of `side` (or a little more, a
    whole number per box length), x fastest, then y, then z, the file's order within a cell;
    atoms and bonds listed by their new IDs. The order zs holds a melt in when it sorts it
    (`BodyOrder::Cells`), here given by the file: a run with no permutation at all."""
    lines = open(data).read().split("\n")
    box = box_of(lines, data)
    cells = [max(1, int((box[a][1] - box[a][0]) // side)) for a in "xyz"]

    def cell(f):
        c = []
        for k, a in enumerate("xyz"):
            lo, hi = box[a]
            u = ((float(f[3 + k]) - lo) / (hi - lo)) % 1.0
            c.append(min(cells[k] - 1, int(u * cells[k])))
        return (c[2], c[1], c[0], int(f[0]))

    head = sections(lines)
    atoms = sorted((lines[k].split() for k in section_rows(lines, head, "Atoms")), key=cell)
    ids = {f[0]: str(i + 1) for i, f in enumerate(atoms)}
    out = os.path.join(d, os.path.basename(data) + ".cells")
    open(out, "w").write("\n".join(renumbered(lines, ids, by_new_id=True)))
    return out


def peak_memory(cmd, cwd):
    """Peak resident memory of `cmd` in MB (GNU time's %M, kilobytes)."""
    err = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, cwd=cwd, check=True,
                         capture_output=True, text=True).stderr
    return int(err.strip().splitlines()[-1]) / 1024


def memory(zs, data, steps):
    """Peak resident memory of LAMMPS (1 rank) and zs (1 thread) over `steps` Langevin steps."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in.zs")
        with open(path, "w") as fh:
            fh.write(FORCE_FIELD.format(data=data) + f"""
fix 1 all nve
fix 2 all langevin 1.0 1.0 1.0 904297
timestep 0.012
run {steps}
""")
        m_l = peak_memory(["lmp", "-in", path, "-log", "none", "-screen", "none"], d)
        m_z = peak_memory([os.path.abspath(zs), "run", "kremer-grest", "--data", data, "--integrator", "verlet",
                           "--gamma", "1", "--kt", "1", "--t-end", repr(steps * 0.012), "--threads", "1",
                           "--quiet", "--out", os.path.join(d, "kg.csv")], d)
    print(f"peak resident memory, {steps} steps, 1 rank/thread: LAMMPS {m_l:.0f} MB, zs {m_z:.0f} MB "
          f"(zs / LAMMPS {m_z / m_l:.2f})")


def speed(zs, data, steps, repeat, verlet=False):
    """Steps per second of both on 1 and 2 cores, `repeat` alternated pairs each
    (`lammps_run.alternated`); Langevin dynamics, or with `verlet` plain velocity Verlet
    (LAMMPS `fix nve` alone, zs without `--gamma`)."""
    thermostat = "" if verlet else "fix 2 all langevin 1.0 1.0 1.0 904297"
    friction = [] if verlet else ["--gamma", "1", "--kt", "1"]

    def run_lammps(np):
        with tempfile.TemporaryDirectory() as d:
            log = lammps(FORCE_FIELD.format(data=data) + f"""
fix 1 all nve
{thermostat}
thermo 100
timestep 0.012
run {steps}
""", d, np)
            return float(re.search(r"Loop time of ([0-9.eE+-]+) on", log).group(1))

    def run_zs(np):
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([zs, "run", "kremer-grest", "--data", data, "--integrator", "verlet"] + friction +
                                 ["--t-end", repr(steps * 0.012), "--threads", str(np),
                                  "--quiet", "--out", os.path.join(d, "kg.csv")],
                                 check=True, capture_output=True, text=True).stdout
            alone = re.search(r"steps alone\s+\S+\s+steps/s of the steps themselves \(([0-9.]+) s\)", out)
            return (float(re.search(r"wall time\s+([0-9.]+) s", out).group(1)),
                    re.search(r"neighbour lists\s+(\d+)", out).group(1),
                    float(alone.group(1)) if alone else None)

    alternated(run_lammps, run_zs, steps, repeat)

SMALL = """
group drop molecule 41:320
delete_atoms group drop bond yes
fix 1 all nve
fix 2 all langevin 1.0 1.0 1.0 904297
fix 3 all deform 1 x final {lo} {hi} y final {lo} {hi} z final {lo} {hi} remap x
thermo 2000
timestep 0.012
run 20000
unfix 3
run 20000
write_data {out} nocoeff
"""


def small_melt(data, d):
    """A 4 000-bead melt at the same density: the first 40 chains of `data` (a box centred on
    the origin, as data.chain's), the box shrunk to half its side over 20 000 Langevin steps (`fix deform`), then 20 000 more at that size."""
    out = os.path.join(d, "data.chain4000")
    xhi = float(re.search(r"(\S+)\s+(\S+)\s+xlo xhi", open(data).read()).group(2))
    lammps(FORCE_FIELD.format(data=data) + SMALL.format(lo=-xhi / 2, hi=xhi / 2, out=out), d)
    return out


def scaling(zs_bench, data, steps):
    """O(N) of both: the 4 000-bead melt made from `data` (`small_melt`) replicated 1, 2, 4 …
    64 times (LAMMPS `replicate`, zs `DataFile::replicate` in the `kg_scaling` bench), Langevin,
    time per step, 1 rank / thread."""
    keep = tempfile.mkdtemp()
    data = small_melt(data, keep)
    print(f"4 000-bead melt: {data}")
    sizes, t_lammps = [], []
    for rep in ("1 1 1", "2 1 1", "2 2 1", "2 2 2", "4 2 2", "4 4 2", "4 4 4"):
        with tempfile.TemporaryDirectory() as d:
            log = lammps(FORCE_FIELD.format(data=data).replace(
                f"read_data {data}", f"read_data {data}\nreplicate {rep}") + f"""
fix 1 all nve
fix 2 all langevin 1.0 1.0 1.0 904297
thermo 100
timestep 0.012
run 20
run {steps}
""", d)
            loops = re.findall(r"Loop time of ([0-9.eE+-]+) on \d+ procs for \d+ steps with (\d+) atoms", log)
            t, n = float(loops[-1][0]), int(loops[-1][1])
        sizes.append(n)
        t_lammps.append(t / steps)
        print(f"LAMMPS {n:>7} beads: {t / steps * 1e3:8.2f} ms per step, {t / steps / n * 1e9:6.1f} ns per bead-step")
    slope = math.log(t_lammps[-1] / t_lammps[0]) / math.log(sizes[-1] / sizes[0])
    print(f"LAMMPS log-log slope {sizes[0]} to {sizes[-1]} (end points): {slope:.3f}")
    out = subprocess.run([zs_bench, data, str(steps), "1"], check=True, capture_output=True, text=True).stdout
    print("zs (kg_scaling, 1 thread):")
    print(out.rstrip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of speed runs per core count (median ratio)")
    ap.add_argument("--scaling", action="store_true",
                    help="also the O(N) comparison: 4 000 to 256 000 beads (a 4 000-bead melt made "
                         "from the file, replicated), 1 core")
    ap.add_argument("--replicate", help="A,B,C: compare on the file replicated A x B x C times (LAMMPS replicate)")
    ap.add_argument("--verlet", action="store_true",
                    help="speed of plain velocity Verlet (fix nve alone) instead of Langevin dynamics")
    ap.add_argument("--memory", action="store_true", help="also the peak resident memory of each, 1 core")
    ap.add_argument("--shuffle", type=int, metavar="SEED",
                    help="compare on the file with its atom IDs renumbered at random (no spatial order)")
    ap.add_argument("--cell-order", type=float, metavar="SIDE",
                    help="compare on the file with its atom IDs renumbered in cells of SIDE (the "
                         "neighbour list's reach, 1.5225): zs held in spatial order without a permutation")
    args = ap.parse_args()
    if not os.path.exists(args.data):
        sys.exit(f"{args.data} is missing: apt-get install lammps lammps-examples")
    zs = zs_binary()
    print(subprocess.run(["lmp", "-h"], capture_output=True, text=True).stdout.splitlines()[1].strip())
    data = os.path.abspath(args.data)
    keep = None
    if args.replicate:
        keep = tempfile.TemporaryDirectory()
        data = replicated(data, [int(x) for x in args.replicate.split(",")], keep.name)
        print(f"replicated {args.replicate}: {data}")
    if args.shuffle is not None:
        keep = keep or tempfile.TemporaryDirectory()
        data = shuffled(data, args.shuffle, keep.name)
        print(f"atom IDs shuffled (seed {args.shuffle}): {data}")
    if args.cell_order is not None:
        keep = keep or tempfile.TemporaryDirectory()
        data = in_cell_order(data, args.cell_order, keep.name)
        print(f"atom IDs in cells of {args.cell_order}: {data}")
    check(zs, data)
    if not args.skip_speed:
        speed(zs, data, args.steps, args.repeat, args.verlet)
    if args.memory:
        memory(zs, data, args.steps)
    if args.scaling:
        subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-bench", "--bin", "kg_scaling"])
        scaling(os.path.join("target", "release", "kg_scaling"), os.path.abspath(args.data), 60)


if __name__ == "__main__":
    main()
