#!/usr/bin/env python3
"""Does GLA around Z&Ss-stiff sample the water cluster at its temperature? (EXPERIMENTS.md,
"Water: the temperature GLA + Z&Ss-stiff samples").

Runs one `zs ensemble water` per configuration below (N = 7, kT = 0.02, T = 6000, burn-in 1000,
replicas of seeds 1..8, each start minimized and given rigid thermal velocities; replica k is
byte for byte `zs run water --seed 1+k`), and prints, per configuration,
the mean over seeds (± standard error) of the kinetic energy per degree of freedom in units of
kT/2, split into the 6 rigid-body degrees of freedom of each molecule (translation + rotation,
projected in the mass metric) and the 3 internal ones (bond and angle vibrations against the
penalty). Velocity Verlet at h = 0.01 is the symplectic reference on the same penalized
potential.

Usage: cargo build --release -p zs-systems --bin zs
       python3 benches/water_temperature.py [path/to/zs] [seeds] [ranks]
With ranks > 1 (a zs built with `--features mpi`), each ensemble runs under
`mpirun -np ranks` and the configurations one after another; otherwise two ensembles at a time.
Needs numpy. About 4 minutes on 2 cores."""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ZS = sys.argv[1] if len(sys.argv) > 1 else "target/release/zs"
SEEDS = range(1, 1 + (int(sys.argv[2]) if len(sys.argv) > 2 else 8))
RANKS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
KT, T_END, BURN = 0.02, 6000.0, 1000.0
MASSES = np.array([15.9994, 1.008, 1.008])  # O, H, H (TIP3P, AKMA)

# (label, integrator, h, gamma, record every)
CONFIGS = [
    ("zss-stiff h=0.05   γ=0.01", "zss-stiff", 0.05, 0.01, 50),
    ("zss-stiff h=0.025  γ=0.01", "zss-stiff", 0.025, 0.01, 100),
    ("zss-stiff h=0.0125 γ=0.01", "zss-stiff", 0.0125, 0.01, 200),
    ("zss-stiff h=0.05   γ=0.16", "zss-stiff", 0.05, 0.16, 50),
    ("verlet    h=0.01   γ=0.01", "verlet", 0.01, 0.01, 250),
]


def ensemble(integrator, h, gamma, every, out_dir):
    """Replica k of the configuration in out_dir/replica-k.csv, seed SEEDS[k]."""
    mpi = ["mpirun", "-np", str(RANKS), "--oversubscribe"] if RANKS > 1 else []
    subprocess.run(
        mpi + [ZS, "ensemble", "water", "--n", "7", "--replicas", str(len(SEEDS)),
               "--seed", str(SEEDS.start), "--integrator", integrator,
               "--h", str(h), "--gamma", str(gamma), "--kt", str(KT), "--minimize",
               "--t-end", str(T_END), "--every", str(every), "--out-dir", out_dir, "--quiet"],
        check=True, stdout=subprocess.DEVNULL)


def kinetic_split(path):
    """(total/(9N), rigid/(6N), internal/(3N)) time averages after the burn-in, in units of kT/2."""
    d = np.loadtxt(path, delimiter=",", skiprows=1)
    d = d[d[:, 0] >= BURN]
    n9 = (d.shape[1] - 3) // 2  # t, q, v, energy, constraint_norm
    n = n9 // 9
    q = d[:, 1:1 + n9].reshape(len(d), n, 3, 3)  # sample, molecule, atom, xyz
    v = d[:, 1 + n9:1 + 2 * n9].reshape(len(d), n, 3, 3)
    m = MASSES[None, None, :, None]
    total = 0.5 * (m * v * v).sum(axis=(1, 2, 3))
    mol = MASSES.sum()
    x = q - (m * q).sum(axis=2, keepdims=True) / mol
    w = v - (m * v).sum(axis=2, keepdims=True) / mol
    ke_com = 0.5 * mol * (((m * v).sum(axis=2) / mol) ** 2).sum(axis=-1)
    ang = (m * np.cross(x, w)).sum(axis=2)  # angular momentum about the molecule's centre
    r2 = (x * x).sum(axis=-1)
    inertia = (MASSES[None, None, :, None, None]
               * (r2[..., None, None] * np.eye(3) - x[..., :, None] * x[..., None, :])).sum(axis=2)
    omega = np.linalg.solve(inertia, ang[..., None])[..., 0]
    ke_rot = 0.5 * (omega * ang).sum(axis=-1)
    rigid = (ke_com + ke_rot).sum(axis=1)
    internal = total - rigid
    unit = KT / 2
    return (total.mean() / (9 * n) / unit, rigid.mean() / (6 * n) / unit,
            internal.mean() / (3 * n) / unit)


def main():
    workers = 1 if RANKS > 1 else (os.cpu_count() or 2)
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(workers) as pool:
        jobs = []
        for k, (_, integrator, h, gamma, every) in enumerate(CONFIGS):
            out = os.path.join(tmp, f"c{k}")
            jobs.append((pool.submit(ensemble, integrator, h, gamma, every, out), out))
        print(f"N = 7, kT = {KT}, T = {T_END:g}, burn-in {BURN:g}, seeds {SEEDS.start}..{SEEDS.stop - 1};"
              " kinetic energy per degree of freedom / (kT/2), mean ± standard error over seeds")
        print(f"{'configuration':28s} {'all 9N':>14s} {'rigid 6N':>14s} {'internal 3N':>14s}")
        for (label, *_rest), (future, out) in zip(CONFIGS, jobs):
            future.result()
            r = np.array([kinetic_split(os.path.join(out, f"replica-{k}.csv"))
                          for k in range(len(SEEDS))])
            mean, se = r.mean(axis=0), r.std(axis=0, ddof=1) / np.sqrt(len(r))
            print(f"{label:28s} " + " ".join(f"{a:8.3f}±{b:.3f}" for a, b in zip(mean, se)))


if __name__ == "__main__":
    main()
