"""Running LAMMPS from the peer scripts: one input script in a directory, on 1 rank or under
`mpirun -np N`, returning its log (shared by lammps_kremer_grest.py and lammps_alkane.py)."""
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
