#!/usr/bin/env python3
"""Front position and height of a granular mass versus time, from every
frame of a run (column collapses, landslides, dam breaches).

  /usr/bin/python3 postproc/front_history.py OUTDIR [--axis x] [--up y]
      [--bin DX] [--csv FILE] [--png FILE]

The front is the farthest position along --axis (default x) where the
deposit is at least one bin thick (the farthest single particle is grid
dependent, reference-data.md s.1); the
height is the highest particle along --up (default y in 2D, y in 3D).  Bins
default to the run's -dx.  Writes OUTDIR/front_history.csv and .png.
"""
import argparse
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402

AXES = {"x": 0, "y": 1, "z": 2}


def front_and_height(pos, ax, up, dx, floor):
    """Front along ax: the far edge of the farthest bin where the mass is at
    least one bin thick; and the top of the mass along up."""
    x, y = pos[:, ax], pos[:, up] - floor
    x0 = x.min()
    nb = int(np.ceil((x.max() - x0) / dx)) + 1
    b = np.clip(((x - x0) / dx).astype(int), 0, nb - 1)
    top = np.zeros(nb)
    np.maximum.at(top, b, y)
    thick = np.nonzero(top >= dx)[0]
    end = thick[-1] + 1 if len(thick) else nb
    return x0 + end * dx, y.max()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--axis", default="x", choices=list(AXES), help="direction of travel (default x)")
    ap.add_argument("--up", default="y", choices=list(AXES), help="vertical axis (default y)")
    ap.add_argument("--bin", type=float, help="bin width [m] (default: the run's -dx)")
    ap.add_argument("--csv", help="table (default OUTDIR/front_history.csv)")
    ap.add_argument("--png", help="plot (default OUTDIR/front_history.png)")
    args = ap.parse_args()
    files = mpmio.frame_files(args.outdir)
    if not files:
        sys.exit("front_history: no frames in %s/frames" % args.outdir)
    opts = mpmio.run_options(args.outdir)
    dx = args.bin or float(opts["dx"])
    ax, up = AXES[args.axis], AXES[args.up]
    floor = float(mpmio.vec(opts, "domain_lo")[up])
    rows = []
    for f in files:
        fr = mpmio.read_frame(f, ["position"])
        if len(fr["position"]) == 0:
            continue
        front, height = front_and_height(fr["position"], ax, up, dx, floor)
        rows.append((fr["t"], front, height, len(fr["position"])))
    rows = np.array(rows)
    with open(args.csv or os.path.join(args.outdir, "front_history.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "front", "height", "particles"])
        w.writerows(rows.tolist())
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, a1 = plt.subplots(figsize=(6.5, 3.5))
    a1.plot(rows[:, 0], rows[:, 1], "b.-", label="front (%s)" % args.axis)
    a1.set_xlabel("t [s]")
    a1.set_ylabel("front position [m]", color="b")
    a2 = a1.twinx()
    a2.plot(rows[:, 0], rows[:, 2], "r.-", label="height (%s)" % args.up)
    a2.set_ylabel("height [m]", color="r")
    fig.suptitle(os.path.basename(os.path.normpath(args.outdir)), fontsize=9)
    fig.tight_layout()
    png = args.png or os.path.join(args.outdir, "front_history.png")
    fig.savefig(png, dpi=120)
    print("front_history: %d frames, front %.4g -> %.4g m, height %.4g -> %.4g m; %s" % (len(rows), rows[0, 1], rows[-1, 1], rows[0, 2], rows[-1, 2], png))


if __name__ == "__main__":
    main()
