#!/usr/bin/env python3
"""The log-log slope of the Kremer–Grest melt's time per step from one size to another, for zs
and LAMMPS, with the host's drift taken out: each engine holds both melts in one process and
steps them in turn, a few seconds each.

`kg_slope.py --run` alternates whole runs a minute apart; these machines are shared, and their
speed moves over minutes (BENCHMARKS.md). Here each engine steps the small melt for
`--small-steps` steps, then the large one for as many bead-steps, `--rounds` times:

- zs: `kg_alternated SMALL LARGE ROUNDS THREADS SMALL_STEPS` (zs-bench, velocity Verlet);
- LAMMPS: two instances of its library in this process (in.chain's force field, `fix nve`,
  `neighbor 0.4 bin`, `neigh_modify every 1 delay 1`, h = 0.012), each segment a
  `run N pre no post no` timed by the wall clock. After the first run, `pre no` leaves only
  the output's set-up before a run (LAMMPS's `run.cpp`: no init, no force computation, no
  list build); the lists are rebuilt within the run when an atom moved more than half the
  skin, as in one long run.
  With `--threads 2` this script starts itself under `mpirun -np 2` for LAMMPS's part (both
  instances on the two ranks).

Each engine prints every round and the slope of the times summed over the rounds,
`ln((T_large / steps_large) / (T_small / steps_small)) / ln(N_large / N_small)`.
LAMMPS's library comes from `apt-get install python3-lammps liblammps-dev`; it is loaded by the
system's `/usr/bin/python3` (this script re-runs itself with it when another python lacks it).

Usage (from the repository root):
    python3 -u benches/peers/kg_alternated.py SMALL LARGE [--rounds 20] [--threads 1,2] [--small-steps 540]
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kg_slope import H, beads  # noqa: E402
from lammps_kremer_grest import FORCE_FIELD  # noqa: E402


def report(name, threads, n, steps, times):
    """Print the summary of one engine's rounds: `times` is a list of (small, large) seconds."""
    span = math.log(n[1] / n[0])
    per = [(a / steps[0], b / steps[1]) for a, b in times]
    slopes = [math.log(b / a) / span for a, b in per]
    summed = math.log((sum(b for _, b in times) / steps[1]) / (sum(a for a, _ in times) / steps[0])) / span
    fast = math.log(min(b for _, b in per) / min(a for a, _ in per)) / span
    print(f"{name}, {threads} core(s), {n[0]} to {n[1]} beads, {len(times)} rounds: slope of the "
          f"summed times {summed:.3f}; rounds' median {statistics.median(slopes):.3f} (from "
          f"{min(slopes):.3f} to {max(slopes):.3f}); of the fastest segments {fast:.3f}", flush=True)


def lammps_rounds(args):
    """LAMMPS's part, on every rank of this process's MPI world (rank 0 prints)."""
    from lammps import lammps
    try:
        from mpi4py import MPI
        comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
    except ImportError:
        comm, rank = None, 0
    n = [beads(f) for f in (args.small, args.large)]
    steps = [args.small_steps, math.ceil(args.small_steps * n[0] / n[1])]
    engines = []
    for data in (args.small, args.large):
        lmp = lammps(cmdargs=["-screen", "none", "-log", "none"], comm=comm)
        lmp.commands_string(FORCE_FIELD.format(data=os.path.abspath(data)) +
                            f"fix 1 all nve\ntimestep {H}\nthermo 0\n")
        engines.append(lmp)
    # Past the first builds, as zs's warm-up.
    engines[0].command("run 20")
    engines[1].command("run 2")
    times = []
    for r in range(args.rounds):
        seg = []
        for lmp, k in zip(engines, steps):
            if comm is not None:
                comm.Barrier()
            t = time.perf_counter()
            lmp.command(f"run {k} pre no post no")
            if comm is not None:
                comm.Barrier()
            seg.append(time.perf_counter() - t)
        times.append(tuple(seg))
        if rank == 0:
            print(f"LAMMPS round {r + 1:>2}: {seg[0] / steps[0] * 1e3:.3f} ms a step at {n[0]} beads, "
                  f"{seg[1] / steps[1] * 1e3:.2f} ms at {n[1]}", flush=True)
    if rank == 0:
        report("LAMMPS", comm.Get_size() if comm is not None else 1, n, steps, times)
    for lmp in engines:
        lmp.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("small")
    ap.add_argument("large")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", default="1", help="thread counts (zs) and MPI ranks (LAMMPS), comma-separated")
    ap.add_argument("--small-steps", type=int, default=540)
    ap.add_argument("--lammps-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.lammps_only:
        lammps_rounds(args)
        return
    try:
        import lammps  # noqa: F401
        python = sys.executable
    except ImportError:
        python = "/usr/bin/python3"
    subprocess.check_call(["cargo", "build", "--release", "-q", "-p", "zs-bench", "--bin", "kg_alternated"])
    for threads in (int(t) for t in args.threads.split(",")):
        out = subprocess.run([os.path.join("target", "release", "kg_alternated"), args.small, args.large,
                              str(args.rounds), str(threads), str(args.small_steps)],
                             check=True, capture_output=True, text=True).stdout
        print("\n".join("zs " + line for line in out.splitlines()), flush=True)
        cmd = [python, "-u", os.path.abspath(__file__), args.small, args.large, "--rounds", str(args.rounds),
               "--small-steps", str(args.small_steps), "--lammps-only"]
        if threads > 1:
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(threads)] + cmd
        subprocess.check_call(cmd)


if __name__ == "__main__":
    main()
