"""How many 8-lane blocks the water box's pair pass evaluates: rows of the half list (zs's
pass: each body's partners by type, nearest first, a block skipped when no lane is within the
cutoff) against cluster pairs (GROMACS's nbnxm layout: columns of the box cut into clusters of
4 or 8 atoms along z, each pair of clusters once), on LAMMPS's data.spce at its own
configuration (the list just built: the rows' best case).

    python3 benches/water_blocks.py [/usr/share/lammps/examples/rdf-adf/data.spce]

A block is counted when one of its lanes is within the cutoff (the rest masked); numpy, about
a minute. See BENCHMARKS.md, "A cluster-pair pass, built and measured"."""
import sys, numpy as np
path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/lammps/examples/rdf-adf/data.spce"
lines = open(path).read().split("\n")
lo = {}
for l in lines:
    p = l.split()
    if len(p) >= 4 and p[2].endswith("lo") and p[3].endswith("hi"):
        lo[p[2][0]] = (float(p[0]), float(p[1]))
i = next(k for k, l in enumerate(lines) if l.strip().startswith("Atoms"))
rows = []
for l in lines[i + 2:]:
    p = l.split()
    if not p: break
    rows.append((int(p[0]), int(p[1]), int(p[2]), float(p[4]), float(p[5]), float(p[6])))
rows.sort()
ids = np.array([r[0] for r in rows]); mol = np.array([r[1] for r in rows]); typ = np.array([r[2] for r in rows])
x = np.array([r[3:6] for r in rows])
L = np.array([lo[a][1] - lo[a][0] for a in "xyz"])
x = (x - np.array([lo[a][0] for a in "xyz"])) % L
n = len(x)
rc, skin = 9.8, 2.0
rl = rc + skin
W = 8
def min_image(d): return d - L * np.round(d / L)
# rows of the half list: pair (i, j) i<j, different molecules, within rl; row of i; groups by type of j;
# order within group by shells (approximately nearest first: exact sort here, the best case)
blocks_rows = 0; lanes_within = 0; list_pairs = 0
for a in range(n):
    d = min_image(x[a + 1:] - x[a]); r2 = (d * d).sum(1)
    j = np.arange(a + 1, n)
    keep = (r2 < rl * rl) & (mol[a + 1:] != mol[a])
    r2k, jk = r2[keep], j[keep]
    list_pairs += len(jk)
    for t in (1, 2):
        g = np.sort(r2k[typ[jk] == t])
        nb = (len(g) + W - 1) // W
        for b in range(nb):
            if (g[b * W:(b + 1) * W] < rc * rc).any(): blocks_rows += 1
        lanes_within += (g < rc * rc).sum()
print(f"{n} atoms: half list {list_pairs} pairs ({list_pairs / n:.0f} per atom), within rc {lanes_within}")
print(f"rows: {blocks_rows} blocks of {W} evaluated, {lanes_within / (W * blocks_rows):.2f} of their lanes within rc")
# cluster pairs: GROMACS-like grid: columns in x-y about a cluster's width apart, sorted by z, cut
# in clusters of `size` (`pure`: the O and the H atoms gridded apart, one type per cluster)
def clusters(size, sel):
    idx = np.where(sel)[0]
    side = (size * L.prod() / len(idx)) ** (1 / 3)
    nc = np.maximum(1, np.floor(L[:2] / side)).astype(int)
    xs = x[idx]
    col = (np.floor(xs[:, 0] / L[0] * nc[0]) * nc[1] + np.floor(xs[:, 1] / L[1] * nc[1])).astype(int)
    order = np.lexsort((xs[:, 2], col))
    out = []
    for c in np.unique(col):
        m = order[col[order] == c]
        for k in range(0, len(m), size):
            out.append(idx[m[k:k + size]])
    return out
# Each pair of clusters once (J >= I; within I = J each pair of atoms once), bounding boxes within
# rl; a block is one atom of I against J (size 8: GROMACS's 4xM on 8 lanes) or two against J twice
# (size 4: its 2xMM), counted when one of its lanes is within rc. benches' water_cluster_pairs
# evaluates exactly these blocks.
for pure in (False, True):
    for size in (8, 4):
        cl = clusters(size, typ == 1) + clusters(size, typ == 2) if pure else clusters(size, typ > 0)
        cen = np.array([x[c].mean(0) for c in cl])
        blocks = 0; lanes_in = 0; cps = 0
        for I in range(len(cl)):
            dc = min_image(cen[I:] - cen[I]); near = I + np.where((dc * dc).sum(1) < (rl + 10) ** 2)[0]
            a = x[cl[I]]
            for J in near:
                b = cen[I] + min_image(x[cl[J]] - cen[I])
                gap = np.maximum(0, np.maximum(b.min(0) - a.max(0), a.min(0) - b.max(0)))
                if (gap * gap).sum() >= rl * rl: continue
                d = b[None, :, :] - a[:, None, :]; r2 = (d * d).sum(2)
                ok = mol[cl[I]][:, None] != mol[cl[J]][None, :]
                if I == J:
                    ok &= np.arange(len(cl[I]))[:, None] < np.arange(len(cl[J]))[None, :]
                if not ok.any(): continue
                cps += 1
                live = (ok & (r2 < rc * rc)).any(1)
                lanes_in += (ok & (r2 < rc * rc)).sum()
                per = W // size  # atoms of I per block
                live = np.concatenate([live, np.zeros((-len(live)) % per, bool)])
                blocks += live.reshape(-1, per).any(1).sum()
        print(f"{'pure' if pure else 'mixed'} clusters of {size}: {cps} cluster pairs, {blocks} blocks of {W} "
              f"evaluated ({blocks / blocks_rows:.2f} of the rows'), {lanes_in / (W * blocks):.2f} of their lanes within rc")
