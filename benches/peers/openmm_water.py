#!/usr/bin/env python3
"""zs against OpenMM on the same TIP3P cluster.

1. Energies and forces: random off-manifold configurations of an N-molecule cluster, evaluated
   by `zs eval water` and by OpenMM's Reference platform (NonbondedForce, NoCutoff, the 3
   intramolecular pairs of each molecule excluded, Lennard-Jones on O only with sigma and epsilon
   from TIP3P's A and C). OpenMM's Coulomb constant is 332.0637 kcal A/mol/e^2, ours 332.06: the
   charges given to OpenMM are scaled by sqrt(332.06/332.0637) so that both compute the same
   function; then the relative differences must be ~1e-9 or better.
2. Speed: 20 000 steps of the same N = 100 cluster, rigid water, h = 0.05 AKMA (2.444 fs),
   kT = 0.02 kcal/mol (10.06 K): OpenMM 8.6 CPU platform (LangevinMiddleIntegrator, rigid water
   by constraints, NoCutoff) on 1 and 2 threads, against `zs run water --integrator zss-stiff
   --gamma 0.01 --kt 0.02 --threads K` (GLA around Z&Ss-stiff). Both report the wall time of
   the steps only (set-up excluded; zs's includes writing the CSV every 20 000 steps).

3. With `--big N` (e.g. 1000): the N-molecule cluster from the same 3.1 Å grid start,
   (a) minimised to a root-mean-square force of 0.01 kcal/mol/A: `zs run water --minimize
   --minimize-tol 0.01` (L-BFGS on the penalized potential) against OpenMM's
   LocalEnergyMinimizer (L-BFGS, constraints by penalty, tolerance 0.4184 kJ/mol/nm), whole
   process (zs) and the minimize call (OpenMM, context creation excluded);
   (b) steps per second of GLA + Z&Ss-stiff against LangevinMiddleIntegrator, `--big-steps`
   steps from the minimised start, 1 and 2 threads.
   OpenMM's CPU platform computes nonbonded forces in single precision with SIMD; zs in double.

4. With `--nma N` (e.g. 7, or 100 for the cost): normal modes of the N-molecule cluster at a
   minimum of the penalized potential (zs's L-BFGS), `zs nma water --init` (exact Hessian,
   dense eigensolver) against a central-difference Hessian of OpenMM's forces (Reference
   platform, double precision; the penalty ½ω²(r² − L²)² of each O-H and H-H distance as a
   CustomBondForce, no constraints), diagonalised by numpy with the same masses: the largest
   eigenvalue difference relative to the largest eigenvalue, and the time of each (zs: the whole
   `zs nma` process; OpenMM: the 2 × 9N force evaluations alone, CPU and Reference platforms).

Usage (from the repository root; installs openmm with pip if missing):
    python3 benches/peers/openmm_water.py [--n 100] [--steps 20000] [--check-n 7]
    python3 benches/peers/openmm_water.py --big 1000 [--big-steps 200] [--skip-small]
    python3 benches/peers/openmm_water.py --nma 100 [--fd-step 1e-4] [--nma-out DIR] --skip-small
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import openmm
    from openmm import unit
except ImportError:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "openmm"])
    import openmm
    from openmm import unit

import random

KCAL = 4.184  # kJ per kcal
COULOMB_ZS = 332.06


def openmm_coulomb():
    """OpenMM's Coulomb constant in kcal A / mol / e^2, measured: two unit charges 1 nm apart."""
    s = openmm.System()
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.NoCutoff)
    for _ in range(2):
        s.addParticle(1.0)
        nb.addParticle(1.0, 1.0, 0.0)
    s.addForce(nb)
    ctx = openmm.Context(s, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference"))
    ctx.setPositions([openmm.Vec3(0, 0, 0), openmm.Vec3(1, 0, 0)])
    e = ctx.getState(getEnergy=True).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    return e * 10 / KCAL


COULOMB_OPENMM = openmm_coulomb()
R_OH, ANGLE = 0.9572, 104.52
Q_O, Q_H = -0.834, 0.417
A, C = 582000.0, 595.0
M_O, M_H = 15.9994, 1.008
AKMA_PS = 0.048888


def zs_binary():
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-systems", "--features", "faer",
                           "--bin", "zs"])
    return os.path.join("target", "release", "zs")


def system(n, scale_charges):
    s = openmm.System()
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.NoCutoff)
    nb.setUseDispersionCorrection(False)
    sigma = (A / C) ** (1 / 6) / 10.0  # nm
    eps = C * C / (4 * A) * KCAL  # kJ/mol
    f = math.sqrt(COULOMB_ZS / COULOMB_OPENMM) if scale_charges else 1.0
    r_hh = 2 * R_OH * math.sin(math.radians(ANGLE) / 2)
    for m in range(n):
        o = s.addParticle(M_O)
        h1 = s.addParticle(M_H)
        h2 = s.addParticle(M_H)
        nb.addParticle(Q_O * f, sigma, eps)
        nb.addParticle(Q_H * f, 1.0, 0.0)
        nb.addParticle(Q_H * f, 1.0, 0.0)
        for a, b in [(o, h1), (o, h2), (h1, h2)]:
            nb.addException(a, b, 0.0, 1.0, 0.0)
        s.addConstraint(o, h1, R_OH / 10)
        s.addConstraint(o, h2, R_OH / 10)
        s.addConstraint(h1, h2, r_hh / 10)
    s.addForce(nb)
    return s


def positions_nm(q):
    return [openmm.Vec3(q[3 * k] / 10, q[3 * k + 1] / 10, q[3 * k + 2] / 10) for k in range(len(q) // 3)]


def check(zs, n, points):
    """Energies and forces at random off-manifold points: max relative differences."""
    sys_ = system(n, scale_charges=True)
    ctx = openmm.Context(sys_, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference"))
    rng = random.Random(1)
    worst_e, worst_f = 0.0, 0.0
    with tempfile.TemporaryDirectory() as d:
        # A relaxed cluster from zs, then perturbed.
        start = os.path.join(d, "start.csv")
        subprocess.run([zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--minimize",
                        "--t-end", "0.05", "--quiet", "--out", start], check=True, stdout=subprocess.DEVNULL)
        with open(start) as fh:
            row = fh.read().splitlines()[1].split(",")
        q0 = [float(x) for x in row[1:1 + 9 * n]]
        names = open(start).readline().strip().split(",")[1:1 + 9 * n]
        for p in range(points):
            q = [x + rng.uniform(-0.1, 0.1) for x in q0]
            state = os.path.join(d, f"q{p}.csv")
            with open(state, "w") as fh:
                fh.write("t," + ",".join(names) + "\n0," + ",".join(repr(x) for x in q) + "\n")
            out = subprocess.run([zs, "eval", "water", "--n", str(n), "--in", state],
                                 check=True, capture_output=True, text=True).stdout.splitlines()[1]
            vals = [float(x) for x in out.split(",")]
            e_zs, g_zs = vals[0], vals[1:]
            ctx.setPositions(positions_nm(q))
            st = ctx.getState(getEnergy=True, getForces=True)
            e_mm = st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / KCAL
            f_mm = st.getForces(asNumpy=False)
            g_mm = []
            for v in f_mm:
                g_mm += [-x / KCAL / 10 for x in v.value_in_unit(unit.kilojoule_per_mole / unit.nanometer)]
            worst_e = max(worst_e, abs(e_zs - e_mm) / abs(e_mm))
            scale = max(abs(x) for x in g_mm)
            worst_f = max(worst_f, max(abs(a - b) for a, b in zip(g_zs, g_mm)) / scale)
    return worst_e, worst_f


def openmm_speed(zs, n, steps, threads, start_q):
    sys_ = system(n, scale_charges=False)
    dt = 0.05 * AKMA_PS  # ps
    kt = 0.02  # kcal/mol
    temperature = kt * KCAL * 1000 / 8.314462618  # K
    integ = openmm.LangevinMiddleIntegrator(temperature * unit.kelvin, 1.0 / unit.picosecond, dt * unit.picoseconds)
    integ.setConstraintTolerance(1e-6)
    platform = openmm.Platform.getPlatformByName("CPU")
    ctx = openmm.Context(sys_, integ, platform, {"Threads": str(threads)})
    ctx.setPositions(positions_nm(start_q))
    ctx.applyConstraints(1e-8)
    ctx.setVelocitiesToTemperature(temperature * unit.kelvin, 1)
    integ.step(100)  # warm-up: kernels compiled, caches filled
    t = time.perf_counter()
    integ.step(steps)
    ctx.getState(getPositions=True)  # wait for the steps to finish
    return time.perf_counter() - t


def zs_speed(zs, n, steps, threads, init):
    t_end = steps * 0.05
    out = subprocess.run([zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--gamma", "0.01",
                          "--kt", "0.02", "--t-end", repr(t_end), "--every", str(steps), "--threads", str(threads),
                          "--quiet", "--init", init, "--out", os.path.join(os.path.dirname(init), "speed.csv")],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"wall time\s+([0-9.]+) s", out).group(1))


def read_row(path, n, row=1):
    with open(path) as fh:
        return [float(x) for x in fh.read().splitlines()[row].split(",")[1:1 + 9 * n]]


def big(zs, n, steps):
    """N-molecule cluster: minimisation and steps per second against OpenMM."""
    with tempfile.TemporaryDirectory() as d:
        grid = os.path.join(d, "grid.csv")
        subprocess.run([zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--t-end", "0.05",
                        "--quiet", "--out", grid], check=True, stdout=subprocess.DEVNULL)
        q0 = read_row(grid, n)
        # (a) minimisation
        init = os.path.join(d, "init.csv")
        t = time.perf_counter()
        out = subprocess.run([zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--minimize",
                              "--minimize-tol", "0.01", "--t-end", "0.05", "--quiet", "--out", init],
                             check=True, capture_output=True, text=True).stdout
        t_zs = time.perf_counter() - t
        m = re.search(r"minimized: .* -> ([-0-9.]+) kcal/mol in (\d+) L-BFGS iterations \(RMS force ([0-9.e+-]+)", out)
        sys_ = system(n, scale_charges=False)
        integ = openmm.VerletIntegrator(0.001)
        ctx = openmm.Context(sys_, integ, openmm.Platform.getPlatformByName("CPU"), {"Threads": "1"})
        ctx.setPositions(positions_nm(q0))
        t = time.perf_counter()
        openmm.LocalEnergyMinimizer.minimize(ctx, 0.01 * KCAL * 10, 0)
        t_mm = time.perf_counter() - t
        st = ctx.getState(getEnergy=True, getForces=True)
        e_mm = st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / KCAL
        f = st.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer) / KCAL / 10
        rms_mm = math.sqrt(float((f ** 2).sum()) / f.size)
        print(f"N = {n}, minimise to RMS force 0.01 kcal/mol/A, 1 thread: OpenMM {t_mm:.1f} s "
              f"(V {e_mm:.1f} kcal/mol, RMS force {rms_mm:.3f} after constraints), zs {t_zs:.1f} s whole process "
              f"(V_w {m.group(1)}, {m.group(2)} iterations, RMS force {m.group(3)}), zs / OpenMM = {t_zs / t_mm:.2f}")
        # (b) steps per second from the minimised start
        q = read_row(init, n)
        for threads in (1, 2):
            t_mm = openmm_speed(zs, n, steps, threads, q)
            t_end = steps * 0.05
            out = subprocess.run([zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--gamma", "0.01",
                                  "--kt", "0.02", "--t-end", repr(t_end), "--every", str(steps), "--threads",
                                  str(threads), "--quiet", "--init", init, "--out", os.path.join(d, "speed.csv")],
                                 check=True, capture_output=True, text=True).stdout
            t_zs = float(re.search(r"wall time\s+([0-9.]+) s", out).group(1))
            print(f"N = {n}, {steps} steps, {threads} thread(s): OpenMM CPU {steps / t_mm:.1f} steps/s, "
                  f"zs {steps / t_zs:.1f} steps/s, zs / OpenMM (speed) = {t_mm / t_zs:.2f}")


def penalized_system(n, omega):
    """The cluster without constraints, each rigid distance held by zs's penalty."""
    s = system(n, scale_charges=True)
    while s.getNumConstraints():
        s.removeConstraint(s.getNumConstraints() - 1)
    bonds = openmm.CustomBondForce("k*(r^2-r0^2)^2")
    bonds.addPerBondParameter("r0")
    # 0.5 w^2 (r^2 - L^2)^2 in kcal/mol with r in Angstrom, as kJ/mol with r in nm.
    bonds.addGlobalParameter("k", 0.5 * omega * omega * KCAL * 1e4)
    r_hh = 2 * R_OH * math.sin(math.radians(ANGLE) / 2)
    for m in range(n):
        o, h1, h2 = 3 * m, 3 * m + 1, 3 * m + 2
        bonds.addBond(o, h1, [R_OH / 10])
        bonds.addBond(o, h2, [R_OH / 10])
        bonds.addBond(h1, h2, [r_hh / 10])
    s.addForce(bonds)
    return s


def gradient(ctx, x):
    """The gradient of the context's potential at `x` (flat, Angstrom), kcal/mol/Angstrom."""
    import numpy as np
    ctx.setPositions(positions_nm(list(x)))
    f = ctx.getState(getForces=True).getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
    return -np.asarray(f).reshape(-1) / KCAL / 10


def fd_hessian(ctx, x, step):
    """Central differences of `gradient`, column by column: 2 x len(x) force evaluations."""
    import numpy as np
    h = np.zeros((len(x), len(x)))
    for j in range(len(x)):
        up, down = x.copy(), x.copy()
        up[j] += step
        down[j] -= step
        h[:, j] = (gradient(ctx, up) - gradient(ctx, down)) / (2 * step)
    return h


def nma(zs, n, omega, step):
    """zs nma against a central-difference Hessian of OpenMM's forces."""
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        start = os.path.join(d, "start.csv")
        subprocess.run([zs, "run", "water", "--n", str(n), "--integrator", "zss-stiff", "--minimize",
                        "--minimize-tol", "1e-5", "--omega", repr(omega), "--t-end", "0.05", "--quiet",
                        "--out", start], check=True, stdout=subprocess.DEVNULL)
        lines = open(start).read().splitlines()
        names = lines[0].split(",")[1:1 + 9 * n]
        q = [float(x) for x in lines[1].split(",")[1:1 + 9 * n]]
        init = os.path.join(d, "min.csv")
        with open(init, "w") as fh:
            fh.write("t," + ",".join(names) + "\n0," + ",".join(repr(x) for x in q) + "\n")
        modes = os.path.join(d, "modes.csv")
        t0 = time.perf_counter()
        subprocess.run([zs, "nma", "water", "--n", str(n), "--omega", repr(omega), "--init", init,
                        "--out", modes], check=True, stdout=subprocess.DEVNULL)
        t_zs = time.perf_counter() - t0
        rows = [l.split(",") for l in open(modes).read().splitlines()[1:]]
        lam_zs = np.array([float(r[1]) for r in rows])
    sys_ = penalized_system(n, omega)
    masses = np.array([m for _ in range(n) for m in (M_O, M_O, M_O, M_H, M_H, M_H, M_H, M_H, M_H)])
    times = {}
    hess = None
    for platform in ("CPU", "Reference"):
        ctx = openmm.Context(sys_, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName(platform))
        t0 = time.perf_counter()
        h = fd_hessian(ctx, np.array(q), step)
        times[platform] = time.perf_counter() - t0
        if platform == "Reference":
            hess = h
        del ctx
    hs = 0.5 * (hess + hess.T) / np.sqrt(np.outer(masses, masses))
    lam_mm = np.sort(np.linalg.eigvalsh(hs))
    diff = np.max(np.abs(lam_zs - lam_mm)) / np.max(np.abs(lam_mm))
    print(f"normal modes, N = {n} ({9 * n} coordinates, omega = {omega}): eigenvalues of zs nma against a "
          f"central-difference Hessian (step {step} A) of OpenMM's Reference forces: largest difference "
          f"{diff:.2e} of the largest eigenvalue ({np.max(np.abs(lam_mm)):.4g})")
    print(f"  time: zs nma {t_zs:.2f} s (whole process: set-up, Hessian, eigensolver, output); "
          f"OpenMM {2 * 9 * n} force evaluations: CPU platform {times['CPU']:.2f} s, "
          f"Reference {times['Reference']:.2f} s; OpenMM CPU / zs = {times['CPU'] / t_zs:.2f}")
    return lam_zs, lam_mm


W, H, PAD = 520, 360, 60
# cm^-1 per unit of sqrt(eigenvalue) in AKMA units (time unit 48.888 fs): 1 / (2 pi c t).
CM_PER_AKMA = 1.0 / (2 * math.pi * 2.99792458e10 * 4.888821e-14)


def freq(lam):
    """The frequency (cm^-1) of an eigenvalue of the mass-weighted Hessian, negative if it is."""
    return math.copysign(math.sqrt(abs(lam)), lam) * CM_PER_AKMA


def svg_panel(x0, title, ys, log, style):
    """One SVG panel of series against their index: `style` gives each ("line"|"dots", colour)."""
    w, h, pad = W, H, PAD
    lo, hi = min(min(v) for v in ys), max(max(v) for v in ys)
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    hi = hi if hi > lo else lo + 1
    sx = lambda k: x0 + pad + (w - 2 * pad) * k / max(1, len(ys[0]) - 1)
    sy = lambda y: h - pad - (h - 2 * pad) * (((math.log10(y) if log else y) - lo) / (hi - lo))
    out = [f'<rect x="{x0 + pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="black"/>',
           f'<text x="{x0 + w / 2}" y="{pad - 20}" text-anchor="middle" font-size="14">{title}</text>',
           f'<text x="{x0 + w / 2}" y="{h - 20}" text-anchor="middle" font-size="12">mode</text>',
           f'<text x="{x0 + 10}" y="{pad + 10}" font-size="11">{"1e%.1f" % hi if log else "%.0f" % hi}</text>',
           f'<text x="{x0 + 10}" y="{h - pad}" font-size="11">{"1e%.1f" % lo if log else "%.0f" % lo}</text>']
    for v, (kind, color) in zip(ys, style):
        pts = [(sx(k), sy(y)) for k, y in enumerate(v)]
        if kind == "line":
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                       % (color, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
        else:
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="1.6" fill="{color}"/>' for x, y in pts[::max(1, len(pts) // 300)]]
    return out


def write_svg(path, body, panels):
    """`panels` panels of `svg_panel` side by side as one SVG file."""
    with open(path, "w") as fh:
        fh.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{panels * W}" height="{H}" font-family="sans-serif">'
                 + "".join(body) + "</svg>\n")


def write_nma(out_dir, n, lam_zs, lam_mm):
    """Both spectra as CSV and an SVG: frequencies against mode (zs line, OpenMM dots) and the
    eigenvalue differences relative to the largest eigenvalue (log scale)."""
    os.makedirs(out_dir, exist_ok=True)
    big = max(abs(x) for x in lam_mm)
    with open(os.path.join(out_dir, "nma-openmm.csv"), "w") as fh:
        fh.write("mode,eigenvalue_zs,eigenvalue_openmm_fd,frequency_zs_cm1,frequency_openmm_fd_cm1,difference_rel\n")
        for k, (a, b) in enumerate(zip(map(float, lam_zs), map(float, lam_mm))):
            fh.write(f"{k},{a!r},{b!r},{freq(a)!r},{freq(b)!r},{float(abs(a - b) / big)!r}\n")
    fz = [max(freq(l), 1e-3) for l in lam_zs]
    fm = [max(freq(l), 1e-3) for l in lam_mm]
    diff = [max(abs(a - b) / big, 1e-18) for a, b in zip(lam_zs, lam_mm)]
    body = svg_panel(0, f"{n} TIP3P waters: frequency (cm^-1), zs exact (line) vs OpenMM FD (dots)", [fz, fm], False,
                 [("line", "#1f77b4"), ("dots", "#d62728")])
    body += svg_panel(W, "|lambda_zs - lambda_OpenMM-FD| / max lambda", [diff], True, [("dots", "#2ca02c")])
    write_svg(os.path.join(out_dir, "nma-openmm.svg"), body, 2)
    print(f"  wrote {out_dir}/nma-openmm.csv and nma-openmm.svg")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--check-n", type=int, default=7)
    ap.add_argument("--points", type=int, default=5)
    ap.add_argument("--big", type=int, default=0)
    ap.add_argument("--big-steps", type=int, default=200)
    ap.add_argument("--skip-small", action="store_true")
    ap.add_argument("--nma", type=int, default=0)
    ap.add_argument("--omega", type=float, default=20.0)
    ap.add_argument("--fd-step", type=float, default=1e-4)
    ap.add_argument("--nma-out", default=None, help="directory for the CSV and SVG of both spectra")
    args = ap.parse_args()
    zs = zs_binary()
    if args.nma:
        lam_zs, lam_mm = nma(zs, args.nma, args.omega, args.fd_step)
        if args.nma_out:
            write_nma(args.nma_out, args.nma, lam_zs, lam_mm)
    if args.big:
        big(zs, args.big, args.big_steps)
    if args.skip_small:
        return
    print(f"OpenMM {openmm.__version__}; its Coulomb constant {COULOMB_OPENMM!r} kcal A/mol/e^2; zs {zs}")
    e, f = check(zs, args.check_n, args.points)
    print(f"energies and forces, N = {args.check_n}, {args.points} random off-manifold points "
          f"(charges scaled for the Coulomb constant): max relative difference energy {e:.2e}, forces {f:.2e}")
    with tempfile.TemporaryDirectory() as d:
        init = os.path.join(d, "init.csv")
        subprocess.run([zs, "run", "water", "--n", str(args.n), "--integrator", "zss-stiff", "--minimize",
                        "--t-end", "0.05", "--quiet", "--out", init], check=True, stdout=subprocess.DEVNULL)
        with open(init) as fh:
            q = [float(x) for x in fh.read().splitlines()[1].split(",")[1:1 + 9 * args.n]]
        for threads in (1, 2):
            t_mm = openmm_speed(zs, args.n, args.steps, threads, q)
            t_zs = zs_speed(zs, args.n, args.steps, threads, init)
            print(f"N = {args.n}, {args.steps} steps, {threads} thread(s): OpenMM CPU {t_mm:.2f} s, "
                  f"zs {t_zs:.2f} s, zs / OpenMM = {t_zs / t_mm:.2f}")


if __name__ == "__main__":
    main()
