"""Running LAMMPS from the peer scripts: one input script in a directory, on 1 rank or under
`mpirun -np N`, returning its log, and the alternated speed runs of LAMMPS against zs (shared by
lammps_kremer_grest.py and lammps_alkane.py)."""
import os
import subprocess


def lammps(script, d, np=1):
    """Run `script` with `lmp` in directory `d` (`np` MPI ranks) and return the log's text."""
    path = os.path.join(d, "in.zs")
    with open(path, "w") as fh:
        fh.write(script)
    cmd = ["lmp", "-in", path, "-log", os.path.join(d, "log.lammps"), "-screen", "none"]
    if np > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np)] + cmd
    subprocess.run(cmd, check=True, cwd=d)
    with open(os.path.join(d, "log.lammps")) as fh:
        return fh.read()


def forces_against_zs(d, zs, system, data):
    """LAMMPS's per-atom forces (`f.dump` in `d`, `id fx fy fz`, sorted) against
    `zs eval <system> --data FILE`: returns zs's energy, the number of atoms, the largest force
    difference relative to the largest force, and the largest force."""
    with open(os.path.join(d, "f.dump")) as fh:
        lines = fh.read().splitlines()
    start = next(k for k, l in enumerate(lines) if l.startswith("ITEM: ATOMS")) + 1
    forces = [[float(x) for x in l.split()[1:4]] for l in lines[start:]]
    out = os.path.join(d, "zs.csv")
    subprocess.run([zs, "eval", system, "--data", data, "--out", out], check=True)
    with open(out) as fh:
        row = [float(x) for x in fh.read().splitlines()[1].split(",")]
    v, grad = row[0], row[1:]
    scale = max(abs(x) for f in forces for x in f)
    worst = max(abs(-grad[3 * i + a] - forces[i][a]) for i in range(len(forces)) for a in range(3))
    return v, len(forces), worst / scale, scale


def alternated(run_lammps, run_zs, steps, repeat):
    """Steps per second of LAMMPS and zs on 1 and 2 cores, `repeat` times each, alternated: the
    machine is shared and noisy, so each pair of runs gives one ratio and the median of the
    ratios is the figure. `run_lammps(np)` returns its loop time in seconds, `run_zs(np)` its
    wall time, its number of neighbour-list builds and, when it reports it, the time of its
    steps alone (`steps alone` of the summary: without writing the last CSV row and XYZ frame,
    as LAMMPS's loop time is without output)."""
    def median(r):
        r = sorted(r)
        m = len(r) // 2
        return r[m] if len(r) % 2 else 0.5 * (r[m - 1] + r[m])

    for np in (1, 2):
        ratios, alone = [], []
        for _ in range(repeat):
            t_l = run_lammps(np)
            t_z, builds, *rest = run_zs(np)
            ratios.append(t_l / t_z)
            line = (f"  {steps} steps, {np} {'rank' if np == 1 else 'ranks'}/threads: LAMMPS {steps / t_l:.4g} "
                    f"steps/s, zs {steps / t_z:.4g} steps/s ({builds} neighbour-list builds), "
                    f"zs / LAMMPS (speed) = {t_l / t_z:.2f}")
            if rest and rest[0]:
                alone.append(t_l / rest[0])
                line += f"; steps alone {steps / rest[0]:.4g} steps/s, ratio {t_l / rest[0]:.2f}"
            print(line)
        if repeat > 1:
            print(f"  {np} {'rank' if np == 1 else 'ranks'}/threads, {repeat} alternated pairs: zs / LAMMPS "
                  f"median {median(ratios):.2f} (from {min(ratios):.2f} to {max(ratios):.2f})"
                  + (f"; steps alone median {median(alone):.2f} (from {min(alone):.2f} to {max(alone):.2f})"
                     if alone else ""))
