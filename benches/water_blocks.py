"""How many 8-lane blocks the water box's pair pass evaluates: rows of the half list (zs's
pass: each body's partners by type, nearest first, a block skipped when no lane is within the
cutoff) against cluster pairs (GROMACS's nbnxm layout: columns of the box cut into clusters of
4 or 8 atoms along z, an i-cluster's atoms each against a j-cluster's lanes), on LAMMPS's
data.spce at its own configuration (the list just built: the rows' best case).

    python3 benches/water_blocks.py [/usr/share/lammps/examples/rdf-adf/data.spce]

A block is counted when one of its lanes is within the cutoff (the rest masked); numpy, about
a minute. See BENCHMARKS.md, "The water pass by cluster pairs, counted"."""
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
# cluster pairs: GROMACS-like grid: columns in x-y with ~ci atoms per cluster, sorted by z, cut in clusters
def clusters(size):
    dens = n / L.prod()
    side = (size / dens) ** (1 / 3)
    nc = np.maximum(1, np.floor(L[:2] / side)).astype(int)
    col = (np.floor(x[:, 0] / L[0] * nc[0]) * nc[1] + np.floor(x[:, 1] / L[1] * nc[1])).astype(int)
    order = np.lexsort((x[:, 2], col))
    out = []
    for c in np.unique(col):
        m = order[col[order] == c]
        for k in range(0, len(m), size):
            out.append(m[k:k + size])
    return out
def bbox_dist2(ci, cj):
    a, b = x[ci], x[cj]
    ca = a.mean(0)
    b = ca + min_image(b - ca); a = ca + min_image(a - ca)
    lo_a, hi_a, lo_b, hi_b = a.min(0), a.max(0), b.min(0), b.max(0)
    gap = np.maximum(0, np.maximum(lo_b - hi_a, lo_a - hi_b))
    return (gap * gap).sum()
for (si, sj, rlist) in [(4, 8, rl), (8, 8, rl), (4, 4, rl), (4, 8, rc + 1.0)]:
    ci_list = clusters(si); cj_list = clusters(sj) if sj != si else ci_list
    # i clusters of si, j clusters of sj; pairs counted once: every (I, J) with bbox within rlist,
    # half by atom order: an (i, j) lane counted where i < j (masked otherwise) — blocks: per i atom
    # of I, one W-lane block of J (sj = 8) or half a block (sj = 4: two J per block)
    blocks = 0; lanes_in = 0; cps = 0
    centers_j = np.array([x[c].mean(0) for c in cj_list])
    for I in ci_list:
        cI = x[I].mean(0)
        dc = min_image(centers_j - cI); near = np.where((dc * dc).sum(1) < (rlist + 8) ** 2)[0]
        for jj in near:
            J = cj_list[jj]
            if bbox_dist2(I, J) >= rlist * rlist: continue
            # the half: keep (i, j) with i < j by index, different molecules
            d = min_image(x[J][None, :, :] - x[I][:, None, :]); r2 = (d * d).sum(2)
            ok = (I[:, None] < J[None, :]) & (mol[I][:, None] != mol[J][None, :])
            if not ok.any(): continue
            cps += 1
            live = ok & (r2 < rc * rc)
            lanes_in += live.sum()
            # per i atom one block of sj lanes (sj = 8: a block; sj = 4: half a block)
            blocks += (live.any(1)).sum() * sj / W
    print(f"clusters {si}x{sj}, rlist {rlist:.1f}: {cps} cluster pairs, {blocks:.0f} blocks of {W} evaluated "
          f"({blocks / blocks_rows:.2f} of the rows'), {lanes_in / (W * blocks):.2f} of their lanes within rc")
