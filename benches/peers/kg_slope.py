#!/usr/bin/env python3
"""The slopes of BENCHMARKS.md's Kremer–Grest runs: from the logs of `lammps_kremer_grest.py`,
or (`--run`) from zs alone, the two sizes alternated.

Each log holds one or more runs of that script (its output saved with `> LOG`). For every melt
size (the "forces: N atoms" line of its run) and core count it takes the median of LAMMPS's
rates and of zs's "steps alone" rates over the alternated pairs, then prints them and the
log-log slope of the time per step from the smallest melt to the largest:
`ln(rate at the smallest / rate at the largest) / ln(largest / smallest)`. A slope of 1 is a
time per bead that does not change with the size.

The peer script measures one size and then the other, minutes apart, and this host's speed
drifts in between: one run's slope moves by a few hundredths. With `--run SMALL LARGE`, zs
alone steps the two melts in turn (`zs run kremer-grest --integrator verlet`, velocity Verlet,
`--small-steps` and `--large-steps` steps, "steps alone"), `--pairs` times on each thread
count of `--threads`, and prints each pair's slope and their median: each slope from two
runs next to each other in time. With `--lammps`, LAMMPS (in.chain's force field, `fix nve`,
its loop time, `--threads` as MPI ranks) is measured the same way: zs's and LAMMPS's pairs
alternate. Each engine's summary also gives the slope between its fastest step at each size
over all pairs: this host's noise only ever adds time, so the fastest runs are the least
disturbed (as `timeit` takes the minimum).

Usage (from the repository root):
    python3 -u benches/peers/lammps_kremer_grest.py --data SMALL --steps 100 --verlet --repeat 5 > small.log
    python3 -u benches/peers/lammps_kremer_grest.py --data LARGE --steps 100 --verlet --repeat 5 > large.log
    python3 benches/peers/kg_slope.py small.log large.log
    python3 -u benches/peers/kg_slope.py --run SMALL LARGE [--pairs 10] [--threads 1,2] [--lammps]
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

H = 0.012  # in.chain's time step, zs's default for the melt

RUN = re.compile(r"(\d+) steps, (\d) ranks?/threads: LAMMPS ([\d.]+) steps/s, zs ([\d.]+) steps/s"
                 r".*steps alone ([\d.]+) steps/s")


def rates(paths):
    """`{(beads, cores): ([LAMMPS steps/s], [zs steps alone /s])}` over every run in `paths`."""
    out = {}
    for path in paths:
        beads = None
        for line in open(path):
            m = re.search(r"forces: (\d+) atoms", line)
            if m:
                beads = int(m.group(1))
            m = RUN.search(line)
            if m and beads is not None:
                lammps, zs = out.setdefault((beads, int(m.group(2))), ([], []))
                lammps.append(float(m.group(3)))
                zs.append(float(m.group(5)))
    return out


def beads(data):
    """The number of atoms a LAMMPS data file declares."""
    for line in open(data):
        if line.strip().endswith(" atoms"):
            return int(line.split()[0])
    sys.exit(f"{data}: no atom count")


def steps_alone(zs, data, steps, threads):
    """Seconds of the steps themselves of `steps` velocity Verlet steps of the melt `data`."""
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([zs, "run", "kremer-grest", "--data", data, "--integrator", "verlet",
                              "--t-end", repr(steps * H), "--threads", str(threads), "--quiet",
                              "--out", os.path.join(d, "kg.csv")],
                             check=True, capture_output=True, text=True).stdout
    return float(re.search(r"steps alone\s+\S+\s+steps/s of the steps themselves \(([0-9.]+) s\)",
                           out).group(1))


def loop_time(data, steps, ranks):
    """Seconds of LAMMPS's loop of `steps` velocity Verlet steps (`fix nve`) of the melt `data`."""
    from lammps_kremer_grest import FORCE_FIELD
    from lammps_run import lammps
    with tempfile.TemporaryDirectory() as d:
        log = lammps(FORCE_FIELD.format(data=data) + f"""
fix 1 all nve
thermo {steps}
timestep {H}
run {steps}
""", d, ranks)
    return float(re.search(r"Loop time of ([0-9.eE+-]+) on", log).group(1))


def alternated(args):
    """zs (and LAMMPS) on the two melts in turn, `args.pairs` times per thread count: each
    pair's slope."""
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-systems", "--bin", "zs"])
    zs = os.path.join("target", "release", "zs")
    engines = {"zs": lambda data, steps, threads: steps_alone(zs, data, steps, threads)}
    if args.lammps:
        engines["LAMMPS"] = loop_time
    small, large = (os.path.abspath(f) for f in args.run)
    n0, n1 = beads(small), beads(large)
    if n0 == n1:
        sys.exit("--run needs two melts of different sizes")
    span = math.log(n1 / n0)
    for threads in (int(t) for t in args.threads.split(",")):
        slopes = {name: [] for name in engines}
        fastest = {name: [math.inf, math.inf] for name in engines}
        for p in range(args.pairs):
            for name, time in engines.items():
                t0 = time(small, args.small_steps, threads) / args.small_steps
                t1 = time(large, args.large_steps, threads) / args.large_steps
                slopes[name].append(math.log(t1 / t0) / span)
                fastest[name] = [min(fastest[name][0], t0), min(fastest[name][1], t1)]
                print(f"{name}, {threads} core(s), pair {p + 1}: {t0 * 1e3:.3f} ms a step at {n0} "
                      f"beads, {t1 * 1e3:.2f} ms at {n1}: slope {slopes[name][-1]:.3f}")
        for name, s in slopes.items():
            f0, f1 = fastest[name]
            print(f"{name}, {threads} core(s), {n0} to {n1} beads, {args.pairs} pairs: slope median "
                  f"{statistics.median(s):.3f} (from {min(s):.3f} to {max(s):.3f}); of the fastest "
                  f"step at each size ({f0 * 1e3:.3f} and {f1 * 1e3:.2f} ms) "
                  f"{math.log(f1 / f0) / span:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="*", help="saved output of lammps_kremer_grest.py")
    ap.add_argument("--run", nargs=2, metavar=("SMALL", "LARGE"), help="two data files of different sizes, stepped in turn")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--threads", default="1", help="thread counts, comma-separated")
    ap.add_argument("--small-steps", type=int, default=1000)
    ap.add_argument("--large-steps", type=int, default=100)
    ap.add_argument("--lammps", action="store_true", help="LAMMPS too, alternated with zs")
    args = ap.parse_args()
    if args.run:
        alternated(args)
        return
    if not args.logs:
        sys.exit(__doc__)
    runs = rates(args.logs)
    if not runs:
        sys.exit("no runs of lammps_kremer_grest.py found")
    medians = {k: (statistics.median(l), statistics.median(z)) for k, (l, z) in runs.items()}
    for (beads, cores), (l, z) in sorted(medians.items()):
        pairs = len(runs[(beads, cores)][0])
        print(f"{beads:>8} beads, {cores} core(s), {pairs} pairs: LAMMPS {l:.4g} steps/s, "
              f"zs steps alone {z:.4g} steps/s")
    for cores in sorted({c for _, c in medians}):
        sizes = sorted(b for b, c in medians if c == cores)
        if len(sizes) < 2:
            continue
        small, large = sizes[0], sizes[-1]
        (l0, z0), (l1, z1) = medians[(small, cores)], medians[(large, cores)]
        span = math.log(large / small)
        print(f"{cores} core(s), {small} to {large} beads: slope zs {math.log(z0 / z1) / span:.3f}, "
              f"LAMMPS {math.log(l0 / l1) / span:.3f}")


if __name__ == "__main__":
    main()
