#!/usr/bin/env python3
"""The slopes of BENCHMARKS.md's Kremer–Grest runs, from the logs of `lammps_kremer_grest.py`.

Each log holds one or more runs of that script (its output saved with `> LOG`). For every melt
size (the "forces: N atoms" line of its run) and core count it takes the median of LAMMPS's
rates and of zs's "steps alone" rates over the alternated pairs, then prints them and the
log-log slope of the time per step from the smallest melt to the largest:
`ln(rate at the smallest / rate at the largest) / ln(largest / smallest)`. A slope of 1 is a
time per bead that does not change with the size.

Usage (from the repository root):
    python3 -u benches/peers/lammps_kremer_grest.py --data SMALL --steps 100 --verlet --repeat 5 > small.log
    python3 -u benches/peers/lammps_kremer_grest.py --data LARGE --steps 100 --verlet --repeat 5 > large.log
    python3 benches/peers/kg_slope.py small.log large.log
"""
import math
import re
import statistics
import sys

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


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = rates(sys.argv[1:])
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
