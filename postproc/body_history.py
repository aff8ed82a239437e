#!/usr/bin/env python3
"""A dynamic body's motion from history.csv (-<name>_dynamic): the distance
its centre travelled, its speed next to its rim speed |omega| R (rolling
without slip when they are equal), and how far it sank; one line per run.

  /usr/bin/python3 postproc/body_history.py RUN [RUN ...] --body NAME
      --radius R [--label TEXT ...] [--png FILE] [--json FILE]

2D runs (the body's _x, _y, _vx, _vy, _wz columns).  --json writes, per
run, the final distance, speed, rim speed, slip ratio |omega| R / v (none
below 1 mm/s) and sinkage.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def summary(h, body, radius):
    """Final travel, speed, rim speed, slip ratio and sinkage of the body."""
    x, y, v, w = (h["%s_%s" % (body, k)] for k in ("x", "y", "vx", "wz"))
    rim = abs(w[-1]) * radius
    return {"t": float(h["t"][-1]), "travel": float(x[-1] - x[0]), "speed": float(v[-1]), "rim_speed": float(rim),
            "slip_ratio": float(rim / v[-1]) if abs(v[-1]) > 1e-3 else None, "sinkage": float(y[0] - y[-1])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--body", required=True)
    ap.add_argument("--radius", type=float, required=True, help="rim radius [m]")
    ap.add_argument("--label", nargs="*", help="one legend label per run")
    ap.add_argument("--png")
    ap.add_argument("--json")
    args = ap.parse_args()
    labels = args.label or args.runs
    if len(labels) != len(args.runs):
        sys.exit("body_history: %d labels for %d runs" % (len(labels), len(args.runs)))
    hs = [mpmio.history(r) for r in args.runs]
    for r, h in zip(args.runs, hs):
        if not h or "%s_wz" % args.body not in h:
            sys.exit("body_history: %s/history.csv has no dynamic 2D body '%s'" % (r, args.body))
    res = {lab: summary(h, args.body, args.radius) for lab, h in zip(labels, hs)}
    for lab, s in res.items():
        print("%-24s t %.3f s  travel %.4f m  v %.4f m/s  rim %.4f m/s  slip ratio %s  sank %.4f m"
              % (lab, s["t"], s["travel"], s["speed"], s["rim_speed"], "%.2f" % s["slip_ratio"] if s["slip_ratio"] else "-", s["sinkage"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
        for lab, h in zip(labels, hs):
            b = args.body
            t = h["t"]
            ax[0].plot(t, h[b + "_x"] - h[b + "_x"][0], label=lab)
            line, = ax[1].plot(t, h[b + "_vx"], label=lab + ": v")
            ax[1].plot(t, np.abs(h[b + "_wz"]) * args.radius, "--", color=line.get_color(), label=lab + ": |omega| R")
            ax[2].plot(t, (h[b + "_y"][0] - h[b + "_y"]) * 1e3, label=lab)
        ax[0].set(xlabel="t [s]", ylabel="travel [m]")
        ax[1].set(xlabel="t [s]", ylabel="speed [m/s]")
        ax[2].set(xlabel="t [s]", ylabel="sinkage [mm]")
        for a in ax:
            a.grid(alpha=0.3)
        ax[0].legend(fontsize=8)
        ax[1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
