#!/usr/bin/env python3
"""zs against LAMMPS on a TraPPE united-atom n-alkane liquid (LAMMPS `units real`).

The liquid is built by zs (`zs run alkane --n-molecules M --length C --density D --seed S`,
written with `--write-data`) and read by both: LAMMPS with the same force field —
`pair_style lj/cut 14` with `pair_modify mix arithmetic shift yes` (CH3: eps/kB = 98 K,
sigma 3.75 A; CH2: 46 K, 3.95 A), `bond_style harmonic` (452.9 kcal/mol/A^2, 1.54 A),
`angle_style harmonic` (K = 31 250 K * kB, 114 deg), `dihedral_style opls` (K1..K3 = 2 c1..c3,
c = 355.03, -68.19, 791.32 K * kB), `special_bonds lj 0 0 0`, `neighbor 2.0 bin` — and zs
with `zs eval alkane --data FILE`.

1. Energies and forces (`run 0`, per-atom forces dumped with 17 digits): the relative
   difference of the total energy and of each part, and the largest force difference relative
   to the largest force, for butane (C4) and a longer alkane (default C12).
2. RATTLE (unless --skip-rattle): 500 ethanes with the bonds held at 1.54 A (`zs run
   alkane-rigid`), 20 NVE steps of 2 fs on both sides (LAMMPS `fix rattle`), the final
   positions and velocities compared (ethane: LAMMPS cannot constrain a chain's bonds).
3. Structure (with --structure): liquid butane in NVT at 272 K on both sides, the torsion
   populations (trans, gauche+-) and end-to-end distance with block error bars, and the
   torsion histogram.
4. Speed (unless --skip-speed): `--steps` steps (default 200) of NVE at dt = 1 fs, LAMMPS
   `fix nve` on 1 MPI rank and with `mpirun -np 2`, zs `run alkane --integrator verlet` on 1
   and 2 threads, as steps per second of the loop (LAMMPS's "Loop time", zs's "wall time");
   `--repeat R` runs LAMMPS then zs R times per core count and prints the median ratio.

Usage (from the repository root; needs `apt-get install lammps openmpi-bin`):
    python3 benches/peers/lammps_alkane.py [--molecules 2500] [--lengths 4,12] [--steps 200] [--repeat 1] [--skip-speed] [--skip-rattle] [--structure]
"""
import argparse
import os
import re
import subprocess
import tempfile

from lammps_run import alternated, forces_against_zs, lammps

KB = 0.0019872067  # kcal/mol/K, LAMMPS's real-units Boltzmann constant

FORCE_FIELD = f"""units real
atom_style molecular
boundary p p p
special_bonds lj 0.0 0.0 0.0
read_data {{data}}
neighbor 2.0 bin
neigh_modify every 1 delay 0 check yes
pair_style lj/cut 14.0
pair_modify mix arithmetic shift yes
pair_coeff 1 1 {98.0 * KB!r} 3.75
pair_coeff 2 2 {46.0 * KB!r} 3.95
bond_style harmonic
bond_coeff 1 452.9 1.54
angle_style harmonic
angle_coeff * {31250.0 * KB!r} 114.0
dihedral_style opls
dihedral_coeff * {2 * 355.03 * KB!r} {2 * -68.19 * KB!r} {2 * 791.32 * KB!r} 0.0
"""


def zs_binary():
    # faer: SHAKE/RATTLE's sparse Newton solves (alkane-rigid).
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-systems", "--features", "faer",
                           "--bin", "zs"])
    return os.path.join("target", "release", "zs")


def build(zs, d, molecules, length, density, seed):
    data = os.path.join(d, f"C{length}.data")
    # One step of zero length is not allowed: the data file is the state after a 1e-9 fs step.
    subprocess.run([zs, "run", "alkane", "--n-molecules", str(molecules), "--length", str(length),
                    "--density", repr(density), "--seed", str(seed), "--h", "1e-9", "--t-end", "1e-9",
                    "--quiet", "--out", os.path.join(d, "build.csv"), "--write-data", data],
                   check=True, capture_output=True)
    return data


def check(zs, data, d):
    log = lammps(FORCE_FIELD.format(data=data) + """
thermo_style custom step pe ebond eangle edihed evdwl
thermo_modify norm no format float %.17g
dump d all custom 1 f.dump id fx fy fz
dump_modify d format float %.17g sort id
run 0
""", d)
    rows = [l.split() for l in log.splitlines()]
    i = next(k for k, r in enumerate(rows) if r[:2] == ["Step", "PotEng"])
    pe, ebond, eangle, edihed, evdwl = (float(x) for x in rows[i + 1][1:6])
    v, n, rel, scale = forces_against_zs(d, zs, "alkane", data)
    print(f"  energy: LAMMPS {pe:.17g} (bond {ebond:.6g}, angle {eangle:.6g}, dihedral {edihed:.6g}, "
          f"pair {evdwl:.6g}), zs {v:.17g}, relative difference {abs(v - pe) / abs(pe):.2e}")
    print(f"  forces: {n} sites, max |F_zs - F_lammps| / max |F| = {rel:.2e} "
          f"(max |F| {scale:.3g} kcal/mol/A)")


def rattle(zs, d, molecules, seed, steps=20, h=2.0):
    """RATTLE on both sides from the same constrained start: `zs run alkane-rigid` (bonds at
    1.54 A, velocities tangent) written as a data file, then `steps` NVE steps of `h` fs —
    LAMMPS `fix nve` + `fix rattle 1e-12 200 0 b 1`, zs `--integrator rattle` — and the
    largest difference of the final positions and velocities.

    Ethane (C2), because LAMMPS's SHAKE and RATTLE constrain only clusters of up to four atoms
    around one central atom: the C-C bonds of a longer chain are "connected clusters", an
    error there (src/RIGID/fix_shake.cpp), while zs holds every bond of any molecule."""
    data = os.path.join(d, "rigid.data")
    subprocess.run([zs, "run", "alkane-rigid", "--n-molecules", str(molecules), "--length", "2",
                    "--density", "0.5", "--seed", str(seed), "--h", "1e-9", "--t-end", "1e-9", "--quiet",
                    "--out", os.path.join(d, "rigid-build.csv"), "--write-data", data],
                   check=True, capture_output=True)
    # Ethane has no angles or dihedrals: their styles and coefficients go.
    ff = "".join(l + "\n" for l in FORCE_FIELD.format(data=data).splitlines()
                 if not l.startswith(("angle_", "dihedral_")))
    lammps(ff + f"""
fix 1 all nve
fix 2 all rattle 1e-12 200 0 b 1
timestep {h!r}
thermo_style custom step pe ke
thermo_modify norm no format float %.17g
dump d all custom {steps} x.dump id xu yu zu vx vy vz
dump_modify d format float %.17g sort id
run {steps}
""", d)
    with open(os.path.join(d, "x.dump")) as fh:
        lines = fh.read().splitlines()
    start = [k for k, l in enumerate(lines) if l.startswith("ITEM: ATOMS")][-1] + 1
    lmp = [[float(x) for x in l.split()[1:7]] for l in lines[start:]]
    out = os.path.join(d, "rigid.csv")
    subprocess.run([zs, "run", "alkane-rigid", "--data", data, "--integrator", "rattle", "--h", repr(h),
                    "--t-end", repr(steps * h), "--quiet", "--out", out], check=True, capture_output=True)
    with open(out) as fh:
        last = [float(x) for x in fh.read().splitlines()[-1].split(",")]
    n = len(lmp)
    q, v = last[1:1 + 3 * n], last[1 + 3 * n:1 + 6 * n]
    dq = max(abs(q[3 * i + a] - lmp[i][a]) for i in range(n) for a in range(3))
    dv = max(abs(v[3 * i + a] - lmp[i][3 + a]) for i in range(n) for a in range(3))
    vmax = max(abs(x) for r in lmp for x in r[3:])
    print(f"  RATTLE, {n} sites, {steps} steps of {h} fs: max |q_zs - q_lammps| = {dq:.2e} A, "
          f"max |v_zs - v_lammps| / max |v| = {dv / vmax:.2e}")


def torsions_and_ends(frames):
    """Per frame of (molecules, 4, 3) butane positions: every torsion angle (degrees, in
    (-180, 180]) and every end-to-end distance (A)."""
    import numpy as np
    x = np.asarray(frames)
    b1, b2, b3 = x[:, :, 1] - x[:, :, 0], x[:, :, 2] - x[:, :, 1], x[:, :, 3] - x[:, :, 2]
    m, n = np.cross(b1, b2), np.cross(b2, b3)
    y = np.linalg.norm(b2, axis=-1) * np.einsum("fmk,fmk->fm", b1, n)
    phi = np.degrees(np.arctan2(y, np.einsum("fmk,fmk->fm", m, n)))
    ends = np.linalg.norm(x[:, :, 3] - x[:, :, 0], axis=-1)
    return phi, ends


def blocks(series, k=5):
    """Mean and standard error of a per-frame series from `k` consecutive blocks."""
    import numpy as np
    b = np.array([c.mean() for c in np.array_split(np.asarray(series), k)])
    return b.mean(), b.std(ddof=1) / np.sqrt(k)


def structure(zs, d, molecules, seed, equil, prod, every=100):
    """Liquid butane in NVT at 272 K on both sides (LAMMPS `fix langevin 272 272 100`, zs GLA
    with friction 335 kcal/mol*fs/A^2: a relaxation rate of 0.01/fs for CH2, 0.0093/fs for CH3,
    where LAMMPS gives both 0.01/fs), 1 fs steps, `equil` fs discarded, then a frame every
    `every` fs for `prod` fs: the trans fraction (|phi| > 120 deg), the gauche+/gauche-
    balance, and the mean end-to-end distance, each with the standard error of 5 blocks, and
    the torsion histogram in 30-degree bins."""
    import numpy as np
    data = build(zs, d, molecules, 4, 0.58, seed)
    lammps(FORCE_FIELD.format(data=data) + f"""
fix 1 all nve
fix 2 all langevin 272.0 272.0 100.0 {seed + 1}
timestep 1.0
thermo 1000
run {equil}
dump d all custom {every} traj.dump id xu yu zu
dump_modify d format float %.10g sort id
run {prod}
""", d)
    frames, cur = [], None
    with open(os.path.join(d, "traj.dump")) as fh:
        lines = fh.read().splitlines()
    k = 0
    while k < len(lines):
        if lines[k].startswith("ITEM: ATOMS"):
            n = molecules * 4
            rows = [[float(v) for v in l.split()[1:4]] for l in lines[k + 1:k + 1 + n]]
            frames.append(np.array(rows).reshape(molecules, 4, 3))
            k += n + 1
        else:
            k += 1
    frames = frames[1:]  # the dump's first frame is the start of the production run
    out = os.path.join(d, "traj.csv")
    subprocess.run([zs, "run", "alkane", "--data", data, "--integrator", "verlet", "--h", "1",
                    "--gamma", "335", "--kt", repr(272.0 * KB), "--seed", str(seed + 1),
                    "--t-end", str(equil + prod), "--every", str(every), "--threads", "2",
                    "--quiet", "--out", out], check=True, capture_output=True)
    zs_frames = []
    with open(out) as fh:
        next(fh)
        for line in fh:
            row = line.split(",")
            if float(row[0]) > equil + 0.5:
                q = np.array([float(v) for v in row[1:1 + 3 * molecules * 4]])
                zs_frames.append(q.reshape(molecules, 4, 3))
    print(f"  butane NVT 272 K, {molecules} molecules, {len(frames)} LAMMPS and {len(zs_frames)} zs frames "
          f"after {equil} fs, every {every} fs")
    edges = np.arange(-180, 181, 30)
    for name, fr in (("LAMMPS", frames), ("zs", zs_frames)):
        phi, ends = torsions_and_ends(fr)
        trans = blocks((np.abs(phi) > 120).mean(axis=1))
        gplus = blocks(((phi > 0) & (phi <= 120)).mean(axis=1))
        gminus = blocks(((phi < 0) & (phi >= -120)).mean(axis=1))
        r = blocks(ends.mean(axis=1))
        hist = np.histogram(phi.ravel(), bins=edges)[0] / phi.size
        print(f"  {name:6}: trans {trans[0]:.4f} +- {trans[1]:.4f}, gauche+ {gplus[0]:.4f} +- {gplus[1]:.4f}, "
              f"gauche- {gminus[0]:.4f} +- {gminus[1]:.4f}, end-to-end {r[0]:.4f} +- {r[1]:.4f} A")
        print("          torsion histogram, 30-degree bins from -180: " + " ".join(f"{h:.3f}" for h in hist))


def speed(zs, data, steps, repeat):
    """NVE steps per second of both on 1 and 2 cores, `repeat` alternated pairs each
    (`lammps_run.alternated`)."""
    def run_lammps(np):
        with tempfile.TemporaryDirectory() as d:
            log = lammps(FORCE_FIELD.format(data=data) + f"""
fix 1 all nve
thermo 100
timestep 1.0
run {steps}
""", d, np)
            return float(re.search(r"Loop time of ([0-9.eE+-]+) on", log).group(1))

    def run_zs(np):
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([zs, "run", "alkane", "--data", data, "--integrator", "verlet", "--h", "1",
                                  "--t-end", str(steps), "--threads", str(np), "--quiet",
                                  "--out", os.path.join(d, "a.csv")],
                                 check=True, capture_output=True, text=True).stdout
            alone = re.search(r"steps alone\s+\S+\s+steps/s of the steps themselves \(([0-9.]+) s\)", out)
            return (float(re.search(r"wall time\s+([0-9.]+) s", out).group(1)),
                    re.search(r"neighbour lists\s+(\d+)", out).group(1),
                    float(alone.group(1)) if alone else None)

    alternated(run_lammps, run_zs, steps, repeat)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--molecules", type=int, default=2500)
    ap.add_argument("--lengths", default="4,12")
    ap.add_argument("--density", type=float, default=None,
                    help="g/cm3 (default: 0.58 for butane, 0.70 for longer alkanes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1, help="pairs of speed runs per core count (median ratio)")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-rattle", action="store_true")
    ap.add_argument("--structure", action="store_true",
                    help="also liquid butane in NVT on both sides: torsion populations and "
                         "end-to-end distance with error bars (minutes)")
    ap.add_argument("--equil", type=int, default=5000, help="fs discarded (--structure)")
    ap.add_argument("--prod", type=int, default=20000, help="fs sampled (--structure)")
    args = ap.parse_args()
    zs = zs_binary()
    print(subprocess.run(["lmp", "-h"], capture_output=True, text=True).stdout.splitlines()[1].strip())
    for length in (int(c) for c in args.lengths.split(",")):
        density = args.density or (0.58 if length <= 4 else 0.70)
        molecules = max(1, args.molecules * 4 // length)
        with tempfile.TemporaryDirectory() as d:
            data = build(zs, d, molecules, length, density, args.seed)
            print(f"C{length}: {molecules} molecules, {molecules * length} sites, {density} g/cm3")
            check(zs, data, d)
            if not args.skip_speed:
                speed(zs, data, args.steps, args.repeat)
    if args.structure:
        with tempfile.TemporaryDirectory() as d:
            structure(zs, d, 250, args.seed, args.equil, args.prod)
    if not args.skip_rattle:
        with tempfile.TemporaryDirectory() as d:
            rattle(zs, d, 500, args.seed)


if __name__ == "__main__":
    main()
