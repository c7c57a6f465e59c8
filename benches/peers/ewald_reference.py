#!/usr/bin/env python3
"""An independent converged Ewald sum of SPC/E water (numpy), against `zs eval water-box`.

The reference shares no code and no parameters with zs: its own data-file reader, its own
splitting (α = 0.30 Å⁻¹ with the real-space sum over every image pair within half the box, and
the reciprocal sum over |n| ≤ 22 per axis: both parts converged to ~1e-13), so that the
Coulomb energy it gives is the exact lattice sum, α-independent. The force field is SPC/E as
LAMMPS's `examples/rdf-adf/in.spce` defines it: Coulomb between molecules (C = 332.06371),
Lennard-Jones O–O cut at RC and not shifted, harmonic bonds K (r − r0)² and angles K (θ − θ0)²
(no ½), intramolecular pairs excluded.

    pip install numpy
    python3 benches/peers/ewald_reference.py --data FILE [--rc 9.8] [--tolerance 1e-12] [--lammps-steps N]

With `--lammps-steps N`, LAMMPS first runs N steps of NVE from the file (flexible water, 0.5 fs)
and writes the configuration it reached: the comparison is made on a state neither program
started from.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

C = 332.06371
EPS, SIGMA = 0.15535, 3.166
Q = {1: -0.8472, 2: 0.4236}
KB, R0 = 1000.0, 1.0
KA, TH0 = 100.0, math.radians(109.47)
ALPHA, NMAX = 0.30, 22


def read_data(path):
    """Positions (unwrapped, atom-ID order), types, charges, bonds, angles and box sides."""
    lines = open(path).read().splitlines()
    lo, hi = [0.0] * 3, [0.0] * 3
    for l in lines[:40]:
        f = l.split()
        for a, key in enumerate(("xlo", "ylo", "zlo")):
            if len(f) >= 4 and f[2] == key:
                lo[a], hi[a] = float(f[0]), float(f[1])
    sides = np.array(hi) - np.array(lo)

    def section(name):
        k = next(i for i, l in enumerate(lines) if l.split()[:1] == [name]) + 2
        rows = []
        while k < len(lines) and lines[k].strip():
            rows.append(lines[k].split())
            k += 1
        return rows

    atoms = sorted(section("Atoms"), key=lambda f: int(f[0]))
    index = {int(f[0]): i for i, f in enumerate(atoms)}
    molecules = np.array([int(f[1]) for f in atoms])
    types = np.array([int(f[2]) for f in atoms])
    charges = np.array([float(f[3]) for f in atoms])
    x = np.array([[float(v) for v in f[4:7]] for f in atoms])
    if len(atoms[0]) >= 10:
        x += np.array([[int(v) for v in f[7:10]] for f in atoms]) * sides
    bonds = np.array([[index[int(f[2])], index[int(f[3])]] for f in section("Bonds")])
    angles = np.array([[index[int(f[2])], index[int(f[3])], index[int(f[4])]] for f in section("Angles")])
    return x, molecules, types, charges, bonds, angles, sides


def erfc(v):
    return np.vectorize(math.erfc, otypes=[float])(v)


def erf(v):
    return np.vectorize(math.erf, otypes=[float])(v)


def coulomb(x, molecules, q, sides, excluded):
    """The lattice Coulomb energy (intramolecular pairs excluded) and its gradient."""
    n = len(q)
    g = np.zeros_like(x)
    # Real space: every pair's nearest image within half the box (erfc(α L/2) ~ 1e-13).
    cut = 0.5 * sides.min()
    e_real = 0.0
    for i in range(n - 1):
        d = x[i + 1:] - x[i]
        d -= np.round(d / sides) * sides
        r = np.sqrt((d * d).sum(axis=1))
        # Pairs of one molecule have no real-space term (their reciprocal share is taken back).
        m = (r < cut) & (molecules[i + 1:] != molecules[i])
        r, d, j = r[m], d[m], np.arange(i + 1, n)[m]
        qq = q[i] * q[j]
        e_real += (qq * erfc(ALPHA * r) / r).sum()
        de = qq * (-2 * ALPHA / math.sqrt(math.pi) * np.exp(-(ALPHA * r) ** 2) / r - erfc(ALPHA * r) / r**2)
        f = (de / r)[:, None] * d
        np.add.at(g, j, f)
        g[i] -= f.sum(axis=0)
    # The excluded pairs' share of the reciprocal sum, taken back: −q_i q_j erf(αr)/r.
    i, j = excluded[:, 0], excluded[:, 1]
    d = x[j] - x[i]
    r = np.sqrt((d * d).sum(axis=1))
    qq = q[i] * q[j]
    e_ex = -(qq * erf(ALPHA * r) / r).sum()
    de = -qq * (2 * ALPHA / math.sqrt(math.pi) * np.exp(-(ALPHA * r) ** 2) / r - erf(ALPHA * r) / r**2)
    f = (de / r)[:, None] * d
    np.add.at(g, j, f)
    np.add.at(g, i, -f)
    # Reciprocal space, half of k-space.
    volume = sides.prod()
    ns = np.arange(-NMAX, NMAX + 1)
    ph = [np.exp(2j * math.pi * np.outer(x[:, a], ns) / sides[a]) for a in range(3)]
    e_rec = 0.0
    for nx in range(0, NMAX + 1):
        for ny in range(-NMAX, NMAX + 1):
            nz = ns
            keep = (nx > 0) | ((nx == 0) & ((ny > 0) | ((ny == 0) & (nz > 0))))
            if not keep.any():
                continue
            nz = nz[keep]
            k = 2 * math.pi * np.stack([np.full(nz.shape, nx / sides[0]), np.full(nz.shape, ny / sides[1]),
                                        nz / sides[2]], axis=1)
            k2 = (k * k).sum(axis=1)
            a_k = 4 * math.pi / volume * np.exp(-k2 / (4 * ALPHA**2)) / k2
            e = (ph[0][:, NMAX + nx] * ph[1][:, NMAX + ny])[:, None] * ph[2][:, NMAX + nz]
            s = (q[:, None] * e).sum(axis=0)
            e_rec += (a_k * np.abs(s) ** 2).sum()
            # ∇_j = −Σ_k 2 A_k q_j k Im(conj(S) e^{ik·r_j})  (|S|² differentiated)
            w = 2 * a_k[None, :] * q[:, None] * np.imag(np.conj(s)[None, :] * e)
            g -= w @ k
    e_self = -ALPHA / math.sqrt(math.pi) * (q * q).sum()
    total = q.sum()
    e_bg = -math.pi * total * total / (2 * volume * ALPHA**2)
    return C * (e_real + e_ex + e_rec + e_self + e_bg), C * g


def short_range(x, types, bonds, angles, sides, rc):
    g = np.zeros_like(x)
    e = 0.0
    o = np.where(types == 1)[0]
    for a in range(len(o) - 1):
        i, j = o[a], o[a + 1:]
        d = x[j] - x[i]
        d -= np.round(d / sides) * sides
        r2 = (d * d).sum(axis=1)
        m = r2 < rc * rc
        d, r2, j = d[m], r2[m], j[m]
        s6 = (SIGMA * SIGMA / r2) ** 3
        e += (4 * EPS * (s6 * s6 - s6)).sum()
        de_dr2 = 4 * EPS * (-6 * s6 * s6 + 3 * s6) / r2
        f = (2 * de_dr2)[:, None] * d
        np.add.at(g, j, f)
        g[i] -= f.sum(axis=0)
    i, j = bonds[:, 0], bonds[:, 1]
    d = x[j] - x[i]
    r = np.sqrt((d * d).sum(axis=1))
    e += (KB * (r - R0) ** 2).sum()
    f = (2 * KB * (r - R0) / r)[:, None] * d
    np.add.at(g, j, f)
    np.add.at(g, i, -f)
    a, b, c = angles[:, 0], angles[:, 1], angles[:, 2]
    u, v = x[a] - x[b], x[c] - x[b]
    lu, lv = np.linalg.norm(u, axis=1), np.linalg.norm(v, axis=1)
    cos = (u * v).sum(axis=1) / (lu * lv)
    th = np.arccos(cos)
    e += (KA * (th - TH0) ** 2).sum()
    dth = -2 * KA * (th - TH0) / np.sqrt(1 - cos * cos)
    gu = dth[:, None] * (v / (lu * lv)[:, None] - (cos / lu**2)[:, None] * u)
    gv = dth[:, None] * (u / (lu * lv)[:, None] - (cos / lv**2)[:, None] * v)
    np.add.at(g, a, gu)
    np.add.at(g, c, gv)
    np.add.at(g, b, -gu - gv)
    return e, g


def zs_binary():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "target", "release", "zs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/lammps/examples/rdf-adf/data.spce")
    ap.add_argument("--rc", type=float, default=9.8)
    ap.add_argument("--tolerance", type=float, default=1e-12)
    ap.add_argument("--lammps-steps", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        data = args.data
        if args.lammps_steps:
            data = os.path.join(d, "moved.data")
            script = f"""units real
atom_style full
read_data {os.path.abspath(args.data)}
pair_style lj/cut/coul/long {args.rc} {args.rc}
pair_coeff 1 1 {EPS} {SIGMA}
pair_coeff * 2 0.0 1.0
pair_modify table 0
bond_style harmonic
bond_coeff 1 {KB} {R0}
angle_style harmonic
angle_coeff 1 {KA} 109.47
kspace_style ewald 1e-8
velocity all create 300 4928459 dist gaussian
fix 1 all nve
timestep 0.5
run {args.lammps_steps}
write_data {data} nocoeff
"""
            open(os.path.join(d, "in.move"), "w").write(script)
            subprocess.run(["lmp", "-in", "in.move", "-log", "none", "-screen", "none"], cwd=d, check=True)
        x, molecules, types, charges, bonds, angles, sides = read_data(data)
        excluded = np.concatenate([bonds, angles[:, [0, 2]]])
        e_c, g_c = coulomb(x, molecules, charges, sides, excluded)
        e_s, g_s = short_range(x, types, bonds, angles, sides, args.rc)
        e, g = e_c + e_s, (g_c + g_s).ravel()
        out = os.path.join(d, "zs.csv")
        subprocess.run([zs_binary(), "eval", "water-box", "--data", data, "--rc", str(args.rc),
                        "--kspace", "ewald", "--ewald-tolerance", repr(args.tolerance), "--out", out], check=True)
        row = np.array([float(v) for v in open(out).read().splitlines()[1].split(",")])
        v, grad = row[0], row[1:]
        print(f"{len(x)} atoms{' after ' + str(args.lammps_steps) + ' LAMMPS steps' if args.lammps_steps else ''}: "
              f"reference V = {e:.12f} kcal/mol (Coulomb {e_c:.12f}), zs V = {v:.12f}, "
              f"relative difference {abs(v - e) / abs(e):.2e}")
        scale = np.abs(g).max()
        print(f"gradient: max |∇V_zs − ∇V_ref| / max |∇V_ref| = {np.abs(grad - g).max() / scale:.2e} "
              f"(max |∇V| {scale:.4g} kcal/mol/Å)")


if __name__ == "__main__":
    sys.exit(main())
