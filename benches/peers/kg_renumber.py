#!/usr/bin/env python3
"""A Kremer–Grest data file with its atom IDs renumbered, so that zs (which keeps a melt numbered
along its chains in the file's order) steps the same melt stored in another order. Atoms,
velocities and bonds are listed by their new IDs. With `kg_alternated FILE RENUMBERED` (two
files of one size) the ratio of their times per step is what the order is worth
(BENCHMARKS.md).

Orders (`--order`):
- `runs`: runs of `--run` consecutive beads of a chain (16 by default), the runs sorted by the
  cell of their centroid (cells of `--side`, 1.5225 σ by default: the list's reach; unwrapped
  with the image flags), x fastest;
- `chains`: whole chains (molecules) sorted by the cell of their centroid (cells of `--side`,
  unwrapped with the image flags);
- `shuffled`: whole chains in a random order (`--seed`).
Within a run or a chain the beads keep the file's order. For cell by cell, atom by atom, use
`lammps_kremer_grest.py --cell-order SIDE`.

Usage:
    python3 benches/peers/kg_renumber.py DATA OUT --order runs|chains|shuffled [--run 16] [--side 1.5225] [--seed 7]
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lammps_kremer_grest import box_of, renumbered, section_rows, sections  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--order", choices=["runs", "chains", "shuffled"], required=True)
    ap.add_argument("--run", type=int, default=16)
    ap.add_argument("--side", type=float, default=1.5225)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    lines = open(args.data).read().split("\n")
    box = box_of(lines, args.data)
    lo = [box[a][0] for a in "xyz"]
    length = [box[a][1] - box[a][0] for a in "xyz"]
    cells = [max(1, int(length[k] // args.side)) for k in range(3)]
    head = sections(lines)
    # Atom rows: id mol type x y z [ix iy iz].
    atoms = sorted((lines[k].split() for k in section_rows(lines, head, "Atoms")), key=lambda f: int(f[0]))
    groups, seen = {}, {}
    for f in atoms:
        k = seen.get(f[1], 0)
        seen[f[1]] = k + 1
        group = (int(f[1]), k // args.run) if args.order == "runs" else (int(f[1]), 0)
        groups.setdefault(group, []).append(f)

    def unwrapped(f, k):
        return float(f[3 + k]) + (int(f[6 + k]) * length[k] if len(f) > 8 else 0.0)

    def cell(point):
        c = [min(cells[k] - 1, int((((point[k] - lo[k]) / length[k]) % 1.0) * cells[k])) for k in range(3)]
        return (c[2], c[1], c[0])

    def key(g):
        beads = groups[g]
        return (cell([sum(unwrapped(f, k) for f in beads) / len(beads) for k in range(3)]), g)

    if args.order == "shuffled":
        order = sorted(groups)
        random.Random(args.seed).shuffle(order)
    else:
        order = sorted(groups, key=key)
    ids = {}
    for g in order:
        for f in groups[g]:
            ids[f[0]] = str(len(ids) + 1)
    open(args.out, "w").write("\n".join(renumbered(lines, ids, by_new_id=True)))
    print(f"{args.out}: {len(groups)} {'runs' if args.order == 'runs' else 'chains'}, cells {cells}")


if __name__ == "__main__":
    main()
