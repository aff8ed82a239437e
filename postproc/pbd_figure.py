#!/usr/bin/env python3
"""Pictures of a 2D run of grains (-integrator pbd): every grain drawn as a
disc of its radius (the frames' output "radius"), coloured by speed, in a
row of frames.

  /usr/bin/python3 postproc/pbd_figure.py OUTDIR --frames 0,10,20 [--png FILE]
      [--vmax SPEED] [--circle X,Y,R] [--title TEXT]
  /usr/bin/python3 postproc/pbd_figure.py OUTDIR --compare DIR2[,DIR3...] [--png FILE]
  /usr/bin/python3 postproc/pbd_figure.py OUTDIR --discharge X,Y [--png FILE]

--circle draws a circular wall (the drum's); the domain's box is drawn.
--compare draws the last frame of OUTDIR and of each DIR (the same deck
run on other rank counts), each titled with its rank count and the largest
difference of its grains' positions and velocities from OUTDIR's, grain by
grain (matched by id): the rank-invariance figure.
--discharge plots, frame by frame, the mass that has drained below y = Y
on each side of x = X (an hourglass's left and right halves) and their
difference over the total drained: the symmetric-discharge figure.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def discharge(args, files, plt):
    """Left and right drained mass against time (--discharge X,Y)."""
    X, Y = (float(v) for v in args.discharge.split(","))
    t, left, right = [], [], []
    for path in files:
        f = mpmio.read_frame(path, ["position", "mass"])
        below = f["position"][:, 1] < Y
        t.append(f["t"])
        left.append(f["mass"][below & (f["position"][:, 0] < X)].sum())
        right.append(f["mass"][below & (f["position"][:, 0] >= X)].sum())
    t, left, right = np.array(t), np.array(left), np.array(right)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
    a1.plot(t, left, "o-", label="left of x = %g m" % X)
    a1.plot(t, right, "s--", label="right")
    a1.set_xlabel("t [s]")
    a1.set_ylabel("drained mass below y = %g m [kg/m]" % Y)
    a1.legend(fontsize=8)
    ok = left + right > 0
    a2.plot(t[ok], (left[ok] - right[ok]) / (left[ok] + right[ok]) * 100, "o-")
    a2.axhspan(-5, 5, color="0.9", label="+-5 %")
    a2.set_xlabel("t [s]")
    a2.set_ylabel("(left - right) / drained [%]")
    a2.legend(fontsize=8)
    if args.title:
        fig.suptitle(args.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png or os.path.join(args.outdir, "discharge.png"), dpi=120)
    print("pbd_figure: drained %.4g kg/m at t = %.3g s, (left - right) / drained = %+.2f %%" % (left[-1] + right[-1], t[-1], 100 * (left[-1] - right[-1]) / max(left[-1] + right[-1], 1e-300)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--frames", default="0,-1")
    ap.add_argument("--png")
    ap.add_argument("--vmax", type=float, default=0.5)
    ap.add_argument("--circle")
    ap.add_argument("--title", default="")
    ap.add_argument("--discharge", help="X,Y: the mass drained below y = Y left and right of x = X, frame by frame")
    ap.add_argument("--compare", help="other runs of the same deck (comma-separated directories): the rank-invariance figure")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import EllipseCollection
    files = mpmio.frame_files(args.outdir)
    if args.discharge:
        return discharge(args, files, plt)
    picks = [files[int(k)] for k in args.frames.split(",")]
    titles = None
    if args.compare:  # the last frame of each run, and its difference from the first run's
        picks = [mpmio.frame_files(d)[-1] for d in [args.outdir] + args.compare.split(",")]
        ref = mpmio.sorted_by_id(mpmio.read_frame(picks[0], ["id", "position", "velocity"]))
        titles = []
        for path in picks:
            f = mpmio.sorted_by_id(mpmio.read_frame(path, ["id", "position", "velocity"]))
            same = len(f["id"]) == len(ref["id"]) and np.array_equal(f["id"], ref["id"])
            dx = np.abs(f["position"] - ref["position"]).max() if same else np.nan
            dv = np.abs(f["velocity"] - ref["velocity"]).max() if same else np.nan
            titles.append("%d rank%s, t = %.3f s, %d grains: max |dx| = %.3g m, max |dv| = %.3g m/s" % (f["ranks"], "" if f["ranks"] == 1 else "s", f["t"], len(f["id"]), dx, dv))
    opts = mpmio.run_options(args.outdir)
    lo, hi = mpmio.vec(opts, "domain_lo"), mpmio.vec(opts, "domain_hi")
    w = (hi[0] - lo[0]) / (hi[1] - lo[1])
    cols = 2 if w > 1.5 and len(picks) > 2 else len(picks)  # wide domains: two a row
    rows = (len(picks) + cols - 1) // cols
    pw = min(4 * w, 6)
    fig, axes = plt.subplots(rows, cols, figsize=(pw * cols + 1, (pw / w + 0.5) * rows), squeeze=False)
    for ax in axes.flat[len(picks):]:
        ax.axis("off")
    for ax, path in zip(axes.flat, picks):
        f = mpmio.read_frame(path, ["position", "velocity", "radius"])
        x, r, s = f["position"], f["radius"], np.sqrt((f["velocity"] ** 2).sum(axis=1))
        ec = EllipseCollection(2 * r, 2 * r, 0, units="xy", offsets=x[:, :2], transOffset=ax.transData, cmap="viridis", edgecolors="none")
        ec.set_array(s)
        ec.set_clim(0, args.vmax)
        ax.add_collection(ec)
        ax.add_patch(plt.Rectangle(lo[:2], hi[0] - lo[0], hi[1] - lo[1], fill=False, lw=0.8))
        if args.circle:
            cx, cy, cr = (float(v) for v in args.circle.split(","))
            ax.add_patch(plt.Circle((cx, cy), cr, fill=False, lw=1.0))
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.set_title(titles[picks.index(path)] if titles else "t = %.2f s" % f["t"], fontsize=8)
        ax.tick_params(labelsize=6)
    fig.colorbar(ec, ax=axes.ravel().tolist(), shrink=0.8, label="speed [m/s]")
    if args.title:
        fig.suptitle(args.title, fontsize=9)
    fig.savefig(args.png or os.path.join(args.outdir, "grains.png"), dpi=120)


if __name__ == "__main__":
    main()
