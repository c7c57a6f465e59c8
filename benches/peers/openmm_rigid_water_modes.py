#!/usr/bin/env python3
"""The penalized water cluster's intermolecular band against an independent rigid-body normal-mode
analysis of the same TIP3P cluster.

zs holds each water rigid by the penalty 1/2 w^2 |g|^2 (Tao & Owhadi eq. 7), so its 6N - 6
intermolecular modes (hindered translations and librations) carry an O(w^-2) modelling error
(Tao & Owhadi Remark 6.1). This script computes the rigid-molecule spectrum they should converge
to without zs's code: 6 coordinates per molecule (centre-of-mass translation and a rotation vector
about the centre of mass), OpenMM's forces (Reference platform, double precision, the TIP3P
cluster of `openmm_water.py` without constraints), and numpy.

1. zs: `zs run water --n N --minimize --omega w` at w = 20 (the paper's), 40, 80, 160, each from
   the previous minimum, and `zs nma water --omega w` at each minimum; the intermolecular band is
   modes 6 .. 6N of the ascending spectrum (the first six are the cluster's rigid motions).
2. Rigid: the last minimum with each molecule replaced by the exact TIP3P geometry fitted to it
   (mass-weighted Kabsch), then Newton's method in the rigid-body coordinates until their gradient
   vanishes (the rigid minimum of the same basin). The rigid-body Hessian at a point is
   B^T H B + C: H the Cartesian Hessian (central differences of OpenMM's forces), B the rigid
   motions' tangent vectors (e_k for a translation, e_k x d for a rotation, d the atom's offset
   from its centre of mass), C the curvature of the rotations, C = (S + S^T)/2 - tr(S) I per
   molecule with S = sum_a d_a g_a^T (g the Cartesian gradient, not zero at a constrained minimum:
   it carries the constraint forces). The mass metric is B^T M B (total mass, inertia tensor).
   Frequencies from the generalized eigenproblem; each mode's libration fraction is the share of
   its kinetic energy in rotation.
3. Prints, per w, the largest and the mean relative difference between zs's intermolecular band
   and the rigid spectrum, mode by mode; `--out DIR` writes rigid-modes.csv and rigid-modes.svg.

Usage (from the repository root; builds zs with faer, installs openmm with pip if missing):
    python3 benches/peers/openmm_rigid_water_modes.py [--n 100] [--omegas 20,40,80,160] [--out DIR]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openmm_water import (ANGLE, M_H, M_O, R_OH, W, fd_hessian, freq, gradient, openmm, svg_panel,  # noqa: E402
                          system, write_svg, zs_binary)

MASSES = np.array([M_O, M_H, M_H])


def reference_geometry():
    """One TIP3P water, O then the two H, centred on its centre of mass (Angstrom)."""
    half = math.radians(ANGLE) / 2
    q = np.array([[0.0, 0.0, 0.0],
                  [R_OH * math.sin(half), R_OH * math.cos(half), 0.0],
                  [-R_OH * math.sin(half), R_OH * math.cos(half), 0.0]])
    return q - MASSES @ q / MASSES.sum()


def kabsch(p, q):
    """The rotation R minimising sum_a m_a |R q_a - p_a|^2 (q and p centred)."""
    u, _, vt = np.linalg.svd((q * MASSES[:, None]).T @ p)
    d = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T


def rotation(theta):
    """exp([theta]x), Rodrigues."""
    a = np.linalg.norm(theta)
    if a == 0.0:
        return np.eye(3)
    k = theta / a
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * kx + (1 - math.cos(a)) * kx @ kx


class Rigid:
    """N rigid waters: centres of mass c (N x 3) and rotations R (N x 3 x 3) of the reference."""

    def __init__(self, x):
        self.ref = reference_geometry()
        atoms = x.reshape(-1, 3, 3)
        self.c = np.einsum("a,mai->mi", MASSES, atoms) / MASSES.sum()
        self.r = np.array([kabsch(a - c, self.ref) for a, c in zip(atoms, self.c)])

    def positions(self):
        return (self.c[:, None, :] + np.einsum("mij,aj->mai", self.r, self.ref)).reshape(-1)

    def offsets(self):
        return np.einsum("mij,aj->mai", self.r, self.ref)

    def tangents(self):
        """B: 9N x 6N, columns the translations then the rotations of each molecule."""
        n = len(self.c)
        b = np.zeros((9 * n, 6 * n))
        d = self.offsets()
        for m in range(n):
            for a in range(3):
                rows = slice(9 * m + 3 * a, 9 * m + 3 * a + 3)
                b[rows, 6 * m:6 * m + 3] = np.eye(3)
                for k in range(3):
                    b[rows, 6 * m + 3 + k] = np.cross(np.eye(3)[k], d[m, a])
        return b

    def curvature(self, g):
        """C: the second derivatives of the rotations contracted with the Cartesian gradient."""
        n = len(self.c)
        c = np.zeros((6 * n, 6 * n))
        d = self.offsets()
        g = g.reshape(-1, 3, 3)
        for m in range(n):
            s = d[m].T @ g[m]
            c[6 * m + 3:6 * m + 6, 6 * m + 3:6 * m + 6] = 0.5 * (s + s.T) - np.trace(s) * np.eye(3)
        return c

    def metric(self):
        b = self.tangents()
        return b.T @ (np.repeat(np.tile(MASSES, len(self.c)), 3)[:, None] * b)

    def move(self, s):
        s = s.reshape(-1, 6)
        self.c = self.c + s[:, :3]
        self.r = np.array([rotation(t) @ r for t, r in zip(s[:, 3:], self.r)])


def rigid_spectrum(ctx, body, step, tolerance, max_newton):
    """Newton to the rigid minimum, then the spectrum there: (eigenvalues, libration fractions,
    gradient history)."""
    history = []
    for it in range(max_newton + 1):
        x = body.positions()
        g = gradient(ctx, x)
        b = body.tangents()
        gs = b.T @ g
        history.append(float(np.max(np.abs(gs))))
        hs = b.T @ fd_hessian(ctx, x, step) @ b + body.curvature(g)
        hs = 0.5 * (hs + hs.T)
        l_inv = np.linalg.inv(np.linalg.cholesky(body.metric()))
        lam, v = np.linalg.eigh(l_inv @ hs @ l_inv.T)
        if history[-1] < tolerance or it == max_newton:
            break
        # Newton in mass-weighted coordinates, without the six modes nearest zero (the cluster's
        # rigid motions, which the energy does not see).
        keep = np.argsort(np.abs(lam))[6:]
        gw = l_inv @ gs
        body.move(-l_inv.T @ (v[:, keep] @ ((v[:, keep].T @ gw) / lam[keep])))
    y = l_inv.T @ v
    g_full = body.metric()
    rot = np.zeros_like(g_full)
    for m in range(len(body.c)):
        rot[6 * m + 3:6 * m + 6, 6 * m + 3:6 * m + 6] = g_full[6 * m + 3:6 * m + 6, 6 * m + 3:6 * m + 6]
    libration = np.einsum("ik,ij,jk->k", y, rot, y) / np.einsum("ik,ij,jk->k", y, g_full, y)
    return lam, libration, history


def zs_chain(zs, n, omegas, d):
    """zs's minimum and spectrum at each w, each minimum from the previous: ({w: eigenvalues}, q)."""
    spectra, init, q = {}, None, None
    for omega in omegas:
        out = os.path.join(d, f"run-{omega}.csv")
        cmd = [zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--minimize", "--minimize-tol", "1e-5",
               "--omega", repr(omega), "--t-end", "0.05", "--quiet", "--out", out]
        subprocess.run(cmd + (["--init", init] if init else []), check=True, stdout=subprocess.DEVNULL)
        header, row = open(out).read().splitlines()[:2]
        init = os.path.join(d, f"min-{omega}.csv")
        with open(init, "w") as fh:
            fh.write(header + "\n" + row + "\n")
        q = np.array([float(x) for x in row.split(",")[1:1 + 9 * n]])
        modes = os.path.join(d, f"modes-{omega}.csv")
        subprocess.run([zs, "nma", "water", "--n", str(n), "--omega", repr(omega), "--init", init, "--out", modes],
                       check=True, stdout=subprocess.DEVNULL)
        spectra[omega] = np.sort([float(r.split(",")[1]) for r in open(modes).read().splitlines()[1:]])
    return spectra, q


def write(out_dir, n, rigid_f, libration, zs_f):
    os.makedirs(out_dir, exist_ok=True)
    omegas = sorted(zs_f)
    with open(os.path.join(out_dir, "rigid-modes.csv"), "w") as fh:
        fh.write("mode,frequency_rigid_cm1,libration_fraction," + ",".join(f"frequency_zs_omega_{w:g}_cm1" for w in omegas)
                 + "\n")
        for k in range(len(rigid_f)):
            fh.write(f"{k},{rigid_f[k]!r},{float(libration[k])!r}," + ",".join(repr(zs_f[w][k]) for w in omegas) + "\n")
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
    body = svg_panel(0, f"{n} TIP3P waters: intermolecular modes (cm^-1), rigid (dots), zs at each omega (lines)",
                     [rigid_f] + [zs_f[w] for w in omegas], False,
                     [("dots", "#d62728")] + [("line", colors[i % 5]) for i in range(len(omegas))])
    rel = [[max(abs(a - b) / b, 1e-12) for a, b in zip(zs_f[w], rigid_f)] for w in omegas]
    body += svg_panel(W, "|nu_zs - nu_rigid| / nu_rigid, omega = " + ", ".join(f"{w:g}" for w in omegas), rel, True,
                      [("dots", colors[i % 5]) for i in range(len(omegas))])
    write_svg(os.path.join(out_dir, "rigid-modes.svg"), body, 2)
    print(f"  wrote {out_dir}/rigid-modes.csv and rigid-modes.svg")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--omegas", default="20,40,80,160")
    ap.add_argument("--fd-step", type=float, default=1e-4)
    ap.add_argument("--tolerance", type=float, default=1e-7,
                    help="largest rigid-body gradient component at the rigid minimum (kcal/mol per A or rad)")
    ap.add_argument("--max-newton", type=int, default=8)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    n, omegas = args.n, [float(w) for w in args.omegas.split(",")]
    zs = zs_binary()
    with tempfile.TemporaryDirectory() as d:
        spectra, q = zs_chain(zs, n, omegas, d)
    ctx = openmm.Context(system(n, scale_charges=True), openmm.VerletIntegrator(0.001),
                         openmm.Platform.getPlatformByName("Reference"))
    body = Rigid(q)
    moved = np.max(np.abs(body.positions() - q))
    lam, libration, history = rigid_spectrum(ctx, body, args.fd_step, args.tolerance, args.max_newton)
    print(f"{n} TIP3P waters. Rigid-body normal modes from OpenMM's forces (Reference platform, central "
          f"differences of {args.fd_step} A): the w = {omegas[-1]:g} minimum fitted by rigid molecules (atoms moved "
          f"by at most {moved:.2e} A), then Newton: largest rigid gradient component "
          + " -> ".join(f"{h:.1e}" for h in history) + " kcal/mol/(A or rad)")
    print(f"  the six modes nearest zero (the cluster's rigid motions): "
          + ", ".join(f"{freq(l):.2f}" for l in sorted(lam, key=abs)[:6]) + " cm^-1")
    order = np.argsort(lam)
    lam, libration = lam[order][6:], libration[order][6:]
    rigid_f = [freq(l) for l in lam]
    lib = libration > 0.5
    print(f"  {len(lam)} intermolecular modes, {rigid_f[0]:.1f} - {rigid_f[-1]:.1f} cm^-1 (mean {np.mean(rigid_f):.1f}); "
          f"{int(lib.sum())} librations (more than half their kinetic energy in rotation): "
          f"{min(np.array(rigid_f)[lib]):.1f} - {max(np.array(rigid_f)[lib]):.1f} cm^-1, "
          f"{int((~lib).sum())} hindered translations: {min(np.array(rigid_f)[~lib]):.1f} - "
          f"{max(np.array(rigid_f)[~lib]):.1f} cm^-1")
    zs_f = {}
    for omega in omegas:
        zs_f[omega] = [freq(l) for l in spectra[omega][6:6 * n]]
        rel = np.abs(np.array(zs_f[omega]) - rigid_f) / np.array(rigid_f)
        print(f"  zs, w = {omega:6g}: intermolecular {zs_f[omega][0]:.1f} - {zs_f[omega][-1]:.1f} cm^-1 "
              f"(mean {np.mean(zs_f[omega]):.1f}); against rigid, mode by mode: largest relative difference "
              f"{rel.max():.2e}, mean {rel.mean():.2e}; x w^2: largest {rel.max() * omega ** 2:.1f}, "
              f"mean {rel.mean() * omega ** 2:.1f}")
    if args.out:
        write(args.out, n, rigid_f, libration, zs_f)


if __name__ == "__main__":
    main()
