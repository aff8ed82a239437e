#!/usr/bin/env python3
"""Communication/computation model of the slab decomposition: predicted
time per step and parallel efficiency at 1..1024 ranks (docs/scaling.md).

  /usr/bin/python3 postproc/scaling_model.py [--deck inputs/landslide_3d.yaml]
      [--rate 6.8e6] [--grid-ns 44] [--latency 2e-6] [--bandwidth 1e10]
      [--ranks 1,2,4,...,1024] [--csv FILE] [--weak]

Per step and rank, with P slabs along the slab axis (ghost width 2 planes,
dof doubles per node, a face of F = N_y N_z nodes):
  compute   T_p = n/min(P, P_max) / rate + (nodes/P) t_grid   (particles balanced)
  ghosts    2 exchanges x 2 neighbours: 4 alpha + 2 * (2 * 2 F dof 8 B) / beta
  migrate   ~2 alpha + (particles crossing a slab face) 309 B / beta
  reduce    one 64-byte allreduce: 2 alpha log2 P
Efficiency E(P) = T(1 rank, compute only) / (P T(P)).  Slabs cannot be
thinner than 2 node planes, and with the mass balanced only the planes the
material occupies count: P_max = planes occupied / 2.
"""
import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def deck_geometry(path):
    """Grid nodes, particles and the extent of the material along the slab
    axis from a YAML deck (regions: boxes)."""
    import re
    opts, stack = {}, []
    for raw in open(path):
        line = raw.split("#")[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        key, _, val = line.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        full = "_".join([s[1] for s in stack] + [key])
        if val.strip():
            opts[full] = val.strip()
        else:
            stack.append((indent, key))
    dim = int(opts.get("dim", 2))
    lo, hi = mpmio.vec(opts, "domain_lo"), mpmio.vec(opts, "domain_hi")
    dx = float(opts["dx"])
    cells = [round((hi[a] - lo[a]) / dx) for a in range(dim)]
    nodes = [c + 5 for c in cells]  # padding 2 + 1
    axis = "xyz".index(opts.get("slab_axis", "x"))
    reg = opts["regions"].split(",")[0]
    rlo, rhi = mpmio.vec(opts, reg + "_lo"), mpmio.vec(opts, reg + "_hi")
    ppc = int(opts.get(reg + "_ppc", "2"))
    vol = 1.0
    for a in range(dim):
        vol *= rhi[a] - rlo[a]
    particles = vol / dx ** dim * ppc ** dim
    planes = (rhi[axis] - rlo[axis]) / dx
    dof = 1 + dim
    face = 1
    for a in range(dim):
        if a != axis:
            face *= nodes[a]
    return dict(dim=dim, nodes=nodes, axis=axis, particles=particles, planes=planes, face=face, dof=dof, dx=dx)


def model(g, P, rate, t_grid, alpha, beta, cfl=0.3):
    n_total = 1
    for n in g["nodes"]:
        n_total *= n
    busy = min(P, max(1, int(g["planes"] // 2)))  # slabs that can hold material (>= 2 planes each)
    t_comp = g["particles"] / busy / rate + n_total / P * t_grid
    if P == 1:
        return t_comp, 0.0
    ghost_bytes = 2 * g["face"] * g["dof"] * 8  # 2 planes per neighbour
    t_ghost = 2 * (2 * alpha + 2 * ghost_bytes / beta)
    crossing = 2 * g["particles"] / g["planes"] * cfl  # particles leaving through 2 faces per step
    t_mig = 2 * alpha + min(crossing, g["particles"] / P) * 309 / beta
    t_red = 2 * alpha * math.log2(P)
    return t_comp, t_ghost + t_mig + t_red


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--deck", default=os.path.join(root, "inputs", "landslide_3d.yaml"))
    ap.add_argument("--rate", type=float, default=6.8e6, help="particle-steps/s per core (docs/performance.md)")
    ap.add_argument("--grid-ns", type=float, default=44.0, help="grid update per node [ns] (measured: 24 ms / 549k nodes)")
    ap.add_argument("--latency", type=float, default=2e-6, help="network latency alpha [s]")
    ap.add_argument("--bandwidth", type=float, default=1e10, help="per-link bandwidth beta [B/s]")
    ap.add_argument("--ranks", default="1,2,4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--csv", help="write ranks,efficiency,... here")
    args = ap.parse_args()
    g = deck_geometry(args.deck)
    pmax = int(g["planes"] // 2)
    t1, _ = model(g, 1, args.rate, args.grid_ns * 1e-9, args.latency, args.bandwidth)
    print("deck %s: %.3g particles, grid %s nodes, slab face %d nodes, material spans %d planes -> at most %d slabs" %
          (os.path.basename(args.deck), g["particles"], "x".join(map(str, g["nodes"])), g["face"], g["planes"], pmax))
    print("%6s %12s %12s %12s %10s %s" % ("ranks", "compute [s]", "comm [s]", "step [s]", "efficiency", ""))
    rows = []
    for P in [int(x) for x in args.ranks.split(",")]:
        tc, tm = model(g, P, args.rate, args.grid_ns * 1e-9, args.latency, args.bandwidth)
        eff = t1 / (P * (tc + tm))
        note = "beyond the slab limit (%d slabs hold the mass)" % pmax if P > pmax else ""
        print("%6d %12.4g %12.4g %12.4g %10.3f %s" % (P, tc, tm, tc + tm, eff, note))
        rows.append((P, tc, tm, eff, int(P > pmax)))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["ranks", "compute_seconds", "comm_seconds", "efficiency", "beyond_slab_limit"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
