#!/usr/bin/env python3
"""Force on the collision objects and domain faces against time
(forces/<object>.csv), the impulse since the start, and a table of peak
force, its time and the total impulse: the design loads of a barrier.

  /usr/bin/python3 postproc/object_forces.py OUTDIR [--objects a,b] [--png FILE] [--faces]

By default the deck's objects (-objects); --faces adds the domain faces
(bc_xlo, ...). In 2D forces are per unit depth (N/m). The values are means
over each history row's interval: a finer -history_interval resolves
shorter peaks.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--objects", help="comma-separated object names (default: the deck's objects)")
    ap.add_argument("--faces", action="store_true", help="also the domain faces bc_*")
    ap.add_argument("--png", help="output file (default OUTDIR/forces.png)")
    args = ap.parse_args()
    names = args.objects.split(",") if args.objects else [n for n in mpmio.force_objects(args.outdir) if args.faces or not n.startswith("bc_")]
    if not names:
        sys.exit("object_forces: no objects in %s/forces (the deck has no -objects; --faces shows the domain faces)" % args.outdir)
    dim = int(mpmio.run_options(args.outdir).get("dim", 2))  # run.json: also while the run goes on
    unit, iunit = ("N", "N s") if dim == 3 else ("N/m", "N s/m")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(12, 3.8))
    print("%-12s %14s %10s %s" % ("object", "peak |F| [%s]" % unit, "at t [s]", "impulse [%s]" % iunit))
    for n in names:
        f = mpmio.forces(args.outdir, n)
        if not f:
            continue
        comps = [k for k in ("fx", "fy", "fz") if k in f]
        line, = ax[0].plot(f["t"], f["f_abs"], label="%s |F|" % n)
        for k, style in zip(comps, (":", "--", "-.")):
            ax[0].plot(f["t"], f[k], style, color=line.get_color(), lw=0.8, label="%s %s" % (n, k))
        for k, style in zip([c.replace("f", "j") for c in comps], (":", "--", "-.")):
            ax[1].plot(f["t"], f[k], style, color=line.get_color(), label="%s %s" % (n, k))
        J = [f[k.replace("f", "j")][-1] for k in comps]
        print("%-12s %14.6g %10.4g %s" % (n, f["f_peak"][-1], f["t_peak"][-1], "(" + ", ".join("%.6g" % j for j in J) + ")"))
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("force on the object [%s]" % unit)
    ax[0].set_title("mean force per history row")
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("impulse since the start [%s]" % iunit)
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    png = args.png or os.path.join(args.outdir, "forces.png")
    fig.savefig(png, dpi=120)
    print("plot:", png)


if __name__ == "__main__":
    main()
