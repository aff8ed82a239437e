#!/usr/bin/env python3
"""Mass, momentum and energy histories of a run (history.csv) as a PNG.

  /usr/bin/python3 postproc/history_plot.py OUTDIR [--png FILE] [--title TEXT]
      [--reference-velocity EXPR]

--reference-velocity adds an analytic centre-of-mass x velocity, a Python
expression in t using numpy as np (e.g. the bar vibration:
"2*0.1/np.pi*np.cos(np.pi/50*10*t)").
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
    ap.add_argument("--png", help="output file (default OUTDIR/history.png)")
    ap.add_argument("--title", default="")
    ap.add_argument("--reference-velocity", help="analytic centre-of-mass x velocity v(t)")
    args = ap.parse_args()
    h = mpmio.history(args.outdir)
    units = mpmio.history_units(args.outdir)  # {} for output from before history_units.csv
    if not h:
        sys.exit("history_plot: %s/history.csv has no rows" % args.outdir)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = h["t"]
    pe = h["potential_energy"] - h["potential_energy"][0] if "potential_energy" in h else 0 * t
    diss = h["dissipated_energy"] if "dissipated_energy" in h else 0 * t
    wobj = h["work_objects"] if "work_objects" in h else 0 * t
    E = h["kinetic_energy"] + h["elastic_energy"] + pe  # mechanical energy, potential relative to t0
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.4))
    ax[0].plot(t, h["kinetic_energy"], label="kinetic")
    ax[0].plot(t, h["elastic_energy"], label="elastic")
    ax[0].plot(t, pe, label="potential - potential(t0)")
    ax[0].plot(t, diss, label="dissipated")
    if np.abs(wobj).max() > 0:
        ax[0].plot(t, wobj, label="work by objects")
    ax[0].plot(t, E + diss - wobj, "k", label="mechanical + dissipated - work in")
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("energy [%s]" % units.get("kinetic_energy", "J, J/m in 2D"))
    ax[0].legend(fontsize=7)
    for k, lab in (("momentum_x", "p_x"), ("momentum_y", "p_y"), ("momentum_z", "p_z")):
        ax[1].plot(t, h[k], label=lab)
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("total momentum [%s]" % units.get("momentum_x", "kg m/s, kg/s in 2D"))
    ax[1].legend(fontsize=7)
    ax[2].plot(t, h["momentum_x"] / h["mass"], label="v_com,x (MPM)")
    if args.reference_velocity:
        tt = np.linspace(t[0], t[-1], 1000)
        ax[2].plot(tt, eval(args.reference_velocity, {"np": np, "t": tt}), "k--", lw=0.8, label="analytic")
    ax[2].set_xlabel("t [s]")
    ax[2].set_ylabel("centre-of-mass velocity [m/s]")
    ax[2].legend(fontsize=7)
    fig.suptitle(args.title or os.path.basename(os.path.normpath(args.outdir)), fontsize=9)
    fig.tight_layout()
    png = args.png or os.path.join(args.outdir, "history.png")
    fig.savefig(png, dpi=120)
    put_in = h["kinetic_energy"][0] + h["elastic_energy"][0] + max(0.0, -pe[-1]) + max(0.0, wobj[-1])  # what the run had to spend
    share = 100 * diss[-1] / put_in if put_in > 0 else 0.0
    print("history: %d rows, t = %.4g..%.4g s, mass drift %.3g, energy at the end: kinetic %.6g, elastic %.6g, potential change %.6g, dissipated %.6g "
          "(%.3g %% of the initial energy, the potential energy released and the work put in), work by objects %.6g, plot %s"
          % (len(t), t[0], t[-1], (h["mass"][-1] - h["mass"][0]) / h["mass"][0], h["kinetic_energy"][-1], h["elastic_energy"][-1], pe[-1], diss[-1], share, wobj[-1], png))


if __name__ == "__main__":
    main()
