#!/usr/bin/env python3
"""Figures of BENCHMARKS.md ("Assembled systems") from criterion's output of
`cargo bench -p zs-bench --bench assembled` (and `--bench hand_step`): the log-log slope of the
DNA Z&S step against N, and the ratios of one run. Reads target/criterion/*/*/new/estimates.json
(median, ns). Usage: python3 benches/fit_slope.py [target/criterion]"""
import json
import math
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")


def median(group, name):
    p = root / group / name / "new" / "estimates.json"
    if not p.exists():
        return None
    return json.loads(p.read_text())["median"]["point_estimate"]


def slope(points):
    xs = [math.log10(x) for x, _ in points]
    ys = [math.log10(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


ns = [200, 800, 3200, 12800, 51200]
pts = [(n, median("dna_zs_step", str(n))) for n in ns]
pts = [(n, t) for n, t in pts if t is not None]
if len(pts) >= 2:
    print("DNA Z&S step (serial):")
    for n, t in pts:
        print(f"  N = {n:>6}: {t / 1e3:10.2f} µs  ({t / n:6.2f} ns per base pair)")
    print(f"  log-log slope over N = {pts[0][0]}..{pts[-1][0]}: {slope(pts):.3f}")

zs, vv = median("dna_step_200", "zs_h2"), median("dna_step_200", "verlet_h0.2")
if zs and vv:
    print(f"DNA N = 200: Z&S step {zs / 1e3:.2f} µs, Verlet step {vv / 1e3:.2f} µs, "
          f"Z&S/Verlet per step {zs / vv:.2f}, Verlet(0.2)-to-T / Z&S(2)-to-T {10 * vv / zs:.2f}")
    for part in ["gradient", "gradient_hessian", "gradient_hessian_tensors", "shifted_solve",
                 "third_from_tensors"]:
        t = median("dna_step_200", part)
        if t:
            print(f"  {part:<26} {t / 1e3:7.2f} µs = {t / zs:5.1%} of a Z&S step")

czs, csh = median("chain_step", "zs_h0.05"), median("chain_step", "shake_h0.05")
if czs and csh:
    print(f"chain (10 pendula): Z&S step {czs / 1e3:.2f} µs, SHAKE(Newton) step {csh / 1e3:.2f} µs; "
          f"to the same T: SHAKE(0.05)/Z&S {csh / czs:.2f} (paper 7.4; SHAKE(0.025) in "
          f"`zs reproduce chain`)")

for bench in ["dna_51200_zs", "spheres_1000_verlet"]:
    t1, t2 = median(f"threads/{bench}", "1"), median(f"threads/{bench}", "2")
    if t1 and t2:
        print(f"{bench}: 1 thread {t1 / 1e3:.1f} µs, 2 threads {t2 / 1e3:.1f} µs, speed-up {t1 / t2:.2f}")

gen, hand = median("dp_step", "generated"), median("dp_step", "hand")
if gen and hand:
    print(f"double pendulum Z&S step: generated {gen:.1f} ns, hand-written {hand:.1f} ns, "
          f"ratio {gen / hand:.2f}")
