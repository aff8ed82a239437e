#!/usr/bin/env python3
"""Strong- and weak-scaling plots from the CSV table written by
jobscripts/slurm_scaling.sbatch (columns mode, ranks, oversubscribed,
particle_steps_per_second, speedup, efficiency, ...).

  /usr/bin/python3 postproc/scaling_plot.py scaling.csv [--png FILE] [--model MODEL.csv]

Oversubscribed runs (more ranks than cores) are drawn hollow: they measure
the sharing of cores, not the code.  --model adds predicted efficiencies
(columns ranks, efficiency) from docs/scaling.md's model as a dashed line.
Prints the table.
"""
import argparse
import csv
import os
import sys


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--png", help="plot (default: next to the CSV, scaling.png)")
    ap.add_argument("--model", help="predicted efficiency table (ranks, efficiency)")
    args = ap.parse_args()
    rows = read(args.csv)
    if not rows:
        sys.exit("scaling_plot: %s has no rows" % args.csv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    print("%-7s %6s %14s %9s %10s %s" % ("mode", "ranks", "p-steps/s", "speedup", "efficiency", ""))
    for mode, color in (("strong", "tab:blue"), ("weak", "tab:orange")):
        sel = [r for r in rows if r["mode"] == mode]
        if not sel:
            continue
        rk = [int(r["ranks"]) for r in sel]
        sp = [float(r["speedup"]) for r in sel]
        ef = [float(r["efficiency"]) for r in sel]
        over = [r["oversubscribed"].strip().lower() in ("1", "true", "yes") for r in sel]
        for r in sel:
            print("%-7s %6s %14.4g %9.3f %10.3f %s" % (mode, r["ranks"], float(r["particle_steps_per_second"]), float(r["speedup"]), float(r["efficiency"]),
                                                      "oversubscribed" if r["oversubscribed"].strip().lower() in ("1", "true", "yes") else ""))
        for i in range(len(rk)):
            face = "none" if over[i] else color
            ax[0].plot(rk[i], sp[i], "o", mfc=face, mec=color)
            ax[1].plot(rk[i], ef[i], "o", mfc=face, mec=color)
        ax[0].plot(rk, sp, "-", color=color, label=mode)
        ax[1].plot(rk, ef, "-", color=color, label=mode)
    rmax = max(int(r["ranks"]) for r in rows)
    ax[0].plot([1, rmax], [1, rmax], "k:", lw=0.8, label="ideal (strong)")
    if args.model:
        m = read(args.model)
        ax[1].plot([int(r["ranks"]) for r in m], [float(r["efficiency"]) for r in m], "k--", lw=1, label="model")
        ax[1].set_xscale("log", base=2)
    ax[0].set_xlabel("ranks")
    ax[0].set_ylabel("speed-up")
    ax[1].set_xlabel("ranks")
    ax[1].set_ylabel("parallel efficiency")
    ax[1].set_ylim(0, 1.1)
    for a in ax:
        a.legend(fontsize=7)
    fig.suptitle("scaling (hollow: oversubscribed)", fontsize=9)
    fig.tight_layout()
    png = args.png or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "scaling.png")
    fig.savefig(png, dpi=120)
    print("plot: %s" % png)


if __name__ == "__main__":
    main()
