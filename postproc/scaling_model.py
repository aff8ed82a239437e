#!/usr/bin/env python3
"""Communication/computation model of the domain decomposition: predicted
time per step and parallel efficiency at 1..1024 ranks (docs/scaling.md).

  /usr/bin/python3 postproc/scaling_model.py [--deck inputs/landslide_3d.yaml]
      [--dx DX] [--particle-ns 141] [--node-ns 12.4] [--latency 2e-6] [--bandwidth 1e10]
      [--ranks 1,2,4,...,1024] [--weak] [--csv FILE] [--png FILE]

Costs per step, calibrated on one core of the benchmark machine
(docs/performance.md, docs/scaling.md): t_p per particle (P2G, G2P,
constitutive update, with the grid nodes the particles touch) and t_n per
grid node whether it holds mass or not (zeroing, grid update, ghost copy).
Three decompositions, each balanced as well as it can be:

  slab, work     the solver's default: slabs along the slab axis cut at
                 quantiles of particles + node cost x nodes.  A slab has at
                 least 2 node planes (the ghost width), so the busiest rank
                 does max(W / P, the work of the 2 fullest planes).
  slab, particles  -balance_node_cost 0: the cuts follow the particles
                 only, and the last rank also gets every empty plane ahead
                 of the mass (the runway).
  block          -decomposition blocks: a px x py (x pz) grid of blocks,
                 chosen as the solver chooses it (layout.c): the
                 factorization whose cut planes hold the fewest grid nodes,
                 at least 2 node planes per part; each cut axis balanced at
                 the quantiles of its planes' work (a box of mass is cut
                 evenly), so the busiest block does W / P unless the mass
                 spans fewer than 2 planes per part along some axis.

Communication per step and rank: 2 ghost exchanges (scatter-add before,
gather after the grid update), each a message per neighbour of 2 node
layers x (1 + dim) doubles (blocks: PETSc's box stencil, so an interior
block also exchanges its edges and corners with 3^k - 1 neighbours, k the
cut axes; ghost_nodes() gives the total, checked against -log_view); migration of the particles crossing the faces
(309 B each, at most cfl x a plane's particles per face and step); one
64-byte allreduce, 2 alpha log2 P.  Efficiency E(P) = T(1) / (P T(P)),
or T(1) / T(P) with --weak (the deck stretched P times along the slab axis,
particles per rank constant).

The deck is read for its domain, dx, slab axis and its first region (a
box).  Material planes are the ones the mass spans at the start; a
spreading landslide spans more later, so the slab limits are conservative.
"""
import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402

PAD = 5  # nodes added per axis: 2 padding cells on each side, + 1
PARTICLE_BYTES = 309


def deck_geometry(path, dx=None):
    """Grid nodes, particles and the extent of the material from a YAML deck
    (dx: override the deck's cell size, like -dx on the command line)."""
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
    dx = dx or float(opts["dx"])
    nodes = [round((hi[a] - lo[a]) / dx) + PAD for a in range(dim)]
    axis = "xyz".index(opts.get("slab_axis", "x"))
    reg = opts["regions"].split(",")[0]
    rlo, rhi = mpmio.vec(opts, reg + "_lo"), mpmio.vec(opts, reg + "_hi")
    ppc = int(opts.get(reg + "_ppc", "2"))
    span = [round((rhi[a] - rlo[a]) / dx) for a in range(dim)]  # cells the mass spans per axis
    particles = float(ppc ** dim)
    for a in range(dim):
        particles *= span[a]
    return dict(dim=dim, nodes=nodes, axis=axis, particles=particles, span=span, dof=1 + dim, dx=dx)


def stretched(g, P):
    """The weak-scaling problem on P ranks: the deck stretched P times along the slab axis."""
    s = dict(g)
    a = g["axis"]
    s["nodes"] = list(g["nodes"])
    s["nodes"][a] = (g["nodes"][a] - PAD) * P + PAD
    s["span"] = list(g["span"])
    s["span"][a] = g["span"][a] * P
    s["particles"] = g["particles"] * P
    return s


def prod(xs):
    return math.prod(xs)


def comm_time(msg_bytes, neighbours, P, crossing, alpha, beta):
    """Ghost exchanges, migration and the step's reduction [s]."""
    if P == 1:
        return 0.0
    ghost = 2 * neighbours * (alpha + msg_bytes / beta)
    migrate = neighbours * alpha + crossing * PARTICLE_BYTES / beta
    return ghost + migrate + 2 * alpha * math.log2(P)


def slab(g, P, c, by_work=True):
    """(compute, comm) seconds per step of the busiest rank, slab decomposition."""
    a, dim = g["axis"], g["dim"]
    face = prod(g["nodes"]) / g["nodes"][a]
    n_planes, mass_planes = g["nodes"][a], g["span"][a]
    per_plane = g["particles"] / mass_planes
    work_total = g["particles"] * c["tp"] + prod(g["nodes"]) * c["tn"]
    two_planes = 2 * (per_plane * c["tp"] + face * c["tn"])
    if by_work:
        busiest = max(work_total / P, min(two_planes, work_total))
    elif P == 1:
        busiest = work_total
    else:  # the cuts split the particles; the last rank also owns the empty planes downstream
        empty = n_planes - mass_planes - PAD
        busiest = max(g["particles"] / P * c["tp"] + (mass_planes / P + empty) * face * c["tn"], two_planes)
    msg = 2 * face * g["dof"] * 8
    crossing = 2 * min(c["cfl"] * per_plane, g["particles"] / P)
    return busiest, comm_time(msg, 2, P, crossing, c["alpha"], c["beta"])


def factorizations(P, dim):
    if dim == 1:
        yield (P,)
        return
    for f in range(1, P + 1):
        if P % f == 0:
            for rest in factorizations(P // f, dim - 1):
                yield (f,) + rest


def ghost_nodes(nodes, parts):
    """Ghost nodes sent per exchange by all ranks together, for a grid of
    `nodes` cut into `parts` (any split: the total does not depend on where
    the cuts are): every cut plane is crossed both ways by 2 node layers of
    its cross-section, every crossing of two cuts by 2 x 2 layers of the
    remaining axis to the 2 diagonal neighbours each way, every crossing of
    three cuts by 2 x 2 x 2 nodes to the 4 diagonal ones each way."""
    dim = len(nodes)
    W = 2  # the ghost width
    total = 0.0
    for a in range(dim):
        total += (parts[a] - 1) * 2 * W * prod(nodes) / nodes[a]
    for a in range(dim):
        for b in range(a + 1, dim):
            total += (parts[a] - 1) * (parts[b] - 1) * 4 * W * W * prod(nodes) / (nodes[a] * nodes[b])
    if dim == 3:
        total += (parts[0] - 1) * (parts[1] - 1) * (parts[2] - 1) * 8 * W ** 3
    return total


def solver_parts(nodes, P):
    """The block grid the solver picks (layout.c, LayoutBlockParts): the
    factorization with the fewest nodes on its cut planes, every part at
    least 2 node planes thick, the first in x-fastest order on a tie."""
    dim, best = len(nodes), None
    for f in factorizations(P, dim):
        if any(nodes[a] // f[a] < 2 for a in range(dim)):
            continue
        face = sum((f[a] - 1) * prod(nodes) / nodes[a] for a in range(dim))
        key = (face, f)  # the solver loops p0 outermost, then p1: a tie goes to the smaller p0, then p1
        if best is None or key < best[0]:
            best = (key, f)
    return best[1] if best else None


def block(g, P, c):
    """(compute, comm, parts) seconds per step of the busiest rank on the
    blocks the solver picks."""
    dim = g["dim"]
    f = solver_parts(g["nodes"], P)
    if f is None:
        return float("nan"), float("nan"), None
    # the busiest block: each axis cut at its work quantiles; a part keeps >= 2 planes of the mass
    share = prod([max(1.0 / f[a], min(1.0, 2.0 / max(g["span"][a], 1))) for a in range(dim)])
    compute = g["particles"] * c["tp"] * share + prod(g["nodes"]) * c["tn"] / P
    k = sum(1 for a in range(dim) if f[a] > 1)
    neigh = 3 ** k - 1
    sub = [g["nodes"][a] / f[a] for a in range(dim)]
    # an interior block's messages: the ghost nodes of its faces, edges and corners
    cut = [f[a] > 1 for a in range(dim)]
    interior = sum(2 * 2 * prod(sub) / sub[a] for a in range(dim) if cut[a])
    interior += sum(4 * 2 * 2 * prod(sub) / (sub[a] * sub[b]) for a in range(dim) for b in range(a + 1, dim) if cut[a] and cut[b])
    interior += 8 * 2 ** 3 if all(cut) and dim == 3 else 0
    msg_bytes = interior * g["dof"] * 8
    crossing = sum(2 * g["particles"] / P / sub[a] * c["cfl"] for a in range(dim) if f[a] > 1)
    t = comm_time(msg_bytes / max(neigh, 1), neigh, P, crossing, c["alpha"], c["beta"])
    return compute, t, f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--deck", default=os.path.join(root, "inputs", "landslide_3d.yaml"))
    ap.add_argument("--dx", type=float, help="cell size [m] instead of the deck's")
    ap.add_argument("--particle-ns", type=float, default=141.0, help="particle cost per step [ns] (bench_3d, 1 core)")
    ap.add_argument("--node-ns", type=float, default=12.4, help="grid node cost per step [ns], empty or not (bench_3d, 1 core)")
    ap.add_argument("--latency", type=float, default=2e-6, help="message latency alpha [s]")
    ap.add_argument("--bandwidth", type=float, default=1e10, help="bandwidth per rank beta [B/s]")
    ap.add_argument("--cfl", type=float, default=0.3, help="fraction of a cell a particle moves per step")
    ap.add_argument("--ranks", default="1,2,4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--weak", action="store_true", help="weak scaling: the deck stretched P times along the slab axis")
    ap.add_argument("--csv", help="write the table here")
    ap.add_argument("--png", help="plot the efficiencies here")
    args = ap.parse_args()
    c = dict(tp=args.particle_ns * 1e-9, tn=args.node_ns * 1e-9, alpha=args.latency, beta=args.bandwidth, cfl=args.cfl)
    g = deck_geometry(args.deck, args.dx)
    ranks = [int(x) for x in args.ranks.split(",")]
    limit = g["span"][g["axis"]] // 2
    print("deck %s: %.3g particles, grid %s nodes, slab face %d nodes, mass spans %d planes along %s -> at most %d slabs in the mass" %
          (os.path.basename(args.deck), g["particles"], "x".join(map(str, g["nodes"])), prod(g["nodes"]) // g["nodes"][g["axis"]],
           g["span"][g["axis"]], "xyz"[g["axis"]], limit))
    print("%s scaling; t_p %.3g ns, t_n %.3g ns, alpha %.3g s, beta %.3g B/s" % ("weak" if args.weak else "strong", args.particle_ns, args.node_ns,
                                                                                args.latency, args.bandwidth))
    base = {k: sum(slab(g, 1, c)) for k in ("work", "particles", "block")}
    print("%6s %12s %12s %10s %10s %10s %s" % ("ranks", "compute [s]", "comm [s]", "E slab", "E slab(p)", "E block", "block grid"))
    rows = []
    for P in ranks:
        h = stretched(g, P) if args.weak else g
        norm = 1.0 if args.weak else P
        sw, sp, bl = slab(h, P, c, True), slab(h, P, c, False), block(h, P, c)
        e = [base["work"] / (norm * sum(sw)), base["particles"] / (norm * sum(sp)), base["block"] / (norm * sum(bl[:2])) if bl[2] else float("nan")]
        grid = "x".join(map(str, bl[2])) if bl[2] else "-"
        note = "  beyond the slab limit" if P > limit and not args.weak else ""
        print("%6d %12.4g %12.4g %10.3f %10.3f %10.3f %s%s" % (P, sw[0], sw[1], e[0], e[1], e[2], grid, note))
        rows.append(dict(ranks=P, compute_seconds=sw[0], comm_seconds=sw[1], efficiency=e[0], efficiency_slab_particles=e[1], efficiency_block=e[2],
                         block_grid=grid, beyond_slab_limit=int(P > limit and not args.weak)))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    if args.png:
        plot(rows, args, g, limit)


def plot(rows, args, g, limit):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    P = [r["ranks"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.semilogx(P, [r["efficiency"] for r in rows], "o-", base=2, label="slabs, balanced by work (default)")
    ax.semilogx(P, [r["efficiency_slab_particles"] for r in rows], "s--", base=2, label="slabs, balanced by particles only")
    ax.semilogx(P, [r["efficiency_block"] for r in rows], "^:", base=2, label="blocks (-decomposition blocks)")
    if not args.weak:
        ax.axvline(limit, color="grey", lw=0.8)
        ax.text(limit, 0.05, " 2 planes per slab", color="grey", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("ranks")
    ax.set_ylabel("predicted parallel efficiency")
    ax.set_title("%s, %s scaling (%.2g particles)" % (os.path.basename(args.deck), "weak" if args.weak else "strong", g["particles"]), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print("plot: %s" % args.png)


if __name__ == "__main__":
    main()
