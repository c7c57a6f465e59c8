#!/usr/bin/env python3
"""The force error of zs's smooth PME and of LAMMPS's PPPM at the same tolerance, on SPC/E water.

Both against the converged lattice sum of `ewald_reference.py` (numpy, independent of both):
RMS relative force error `sqrt(Σ|F − F_ref|² / Σ|F_ref|²)` and the largest error over the
largest force, of the whole force field (Coulomb, O–O Lennard-Jones, the file's bonds and
angles). zs: `zs eval water-box --kspace pme --ewald-tolerance D` (α = √(−ln D)/rc, OpenMM's
mesh and order at that α). LAMMPS: `lj/cut/coul/long RC RC` with `pair_modify table 0`, `kspace_style pppm D`
(its own α, mesh and order for D), `run 0`, forces dumped at full precision.

    pip install numpy
    cargo build --release -p zs-systems --bin zs
    python3 benches/peers/pme_accuracy.py [--data FILE] [--rc 9.8] [--tolerances 5e-4,1e-4,1e-5]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ewald_reference import (  # noqa: E402
    EPS, KA, KB, R0, SIGMA, coulomb, read_data, short_range, zs_binary)


def errors(grad, ref):
    """RMS relative error and largest error over the largest reference value."""
    d = grad - ref
    return np.sqrt((d * d).sum() / (ref * ref).sum()), np.abs(d).max() / np.abs(ref).max()


def zs_gradient(data, rc, tol, d):
    out = os.path.join(d, "zs.csv")
    subprocess.run([zs_binary(), "eval", "water-box", "--data", data, "--rc", str(rc),
                    "--kspace", "pme", "--ewald-tolerance", repr(tol), "--out", out], check=True)
    return np.array([float(v) for v in open(out).read().splitlines()[1].split(",")])[1:]


def lammps_gradient(data, rc, tol, n, d):
    dump = os.path.join(d, "f.dump")
    script = f"""units real
atom_style full
read_data {os.path.abspath(data)}
pair_style lj/cut/coul/long {rc} {rc}
pair_coeff 1 1 {EPS} {SIGMA}
pair_coeff * 2 0.0 1.0
pair_modify table 0
bond_style harmonic
bond_coeff 1 {KB} {R0}
angle_style harmonic
angle_coeff 1 {KA} 109.47
special_bonds lj/coul 0.0 0.0 0.0
kspace_style pppm {tol}
dump 1 all custom 1 {dump} id fx fy fz
dump_modify 1 sort id format float %.17g
run 0
"""
    open(os.path.join(d, "in.f"), "w").write(script)
    log = subprocess.run(["lmp", "-in", "in.f", "-log", "none"], cwd=d, check=True,
                         capture_output=True, text=True).stdout
    grid = next((l.strip() for l in log.splitlines() if l.strip().startswith("grid =")), "?")
    order = next((l.strip() for l in log.splitlines() if "stencil order" in l), "?")
    rows = open(dump).read().splitlines()
    start = rows.index("ITEM: ATOMS id fx fy fz") + 1
    f = np.array([[float(v) for v in r.split()[1:]] for r in rows[start:start + n]])
    return -f.ravel(), f"{grid}, {order}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/lammps/examples/rdf-adf/data.spce")
    ap.add_argument("--rc", type=float, default=9.8)
    ap.add_argument("--tolerances", default="5e-4,1e-4,1e-5")
    args = ap.parse_args()
    x, molecules, types, charges, bonds, angles, sides = read_data(args.data)
    excluded = np.concatenate([bonds, angles[:, [0, 2]]])
    _, g_c = coulomb(x, molecules, charges, sides, excluded)
    _, g_s = short_range(x, types, bonds, angles, sides, args.rc)
    ref = (g_c + g_s).ravel()
    print(f"{len(x)} atoms, cutoff {args.rc} Å; errors of the whole force against the converged sum")
    print("| D | zs PME: RMS relative | zs: max / max | LAMMPS PPPM: RMS relative | LAMMPS: max / max | LAMMPS mesh |")
    print("|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as d:
        for tol in [float(t) for t in args.tolerances.split(",")]:
            zs_rms, zs_max = errors(zs_gradient(args.data, args.rc, tol, d), ref)
            g, mesh = lammps_gradient(args.data, args.rc, tol, len(x), d)
            l_rms, l_max = errors(g, ref)
            print(f"| {tol:g} | {zs_rms:.2e} | {zs_max:.2e} | {l_rms:.2e} | {l_max:.2e} | {mesh} |")


if __name__ == "__main__":
    sys.exit(main())
