"""Bar vibration, explicit against implicit: the centre-of-mass velocity
against the exact first mode (period 10, amplitude 2 v0 / pi), from two runs
of inputs/verification/bar_vibration.yaml:

  granular-mpm -options_file_yaml inputs/verification/bar_vibration.yaml -output_dir A
  granular-mpm -options_file_yaml inputs/verification/bar_vibration.yaml -integrator implicit -dt_max 0.05 -output_dir B
  /usr/bin/python3 postproc/implicit_bar.py A B OUT.png
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def main():
    a, b, png = sys.argv[1:4]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    t = np.linspace(0, 30, 600)
    ax.plot(t, 2 * 0.1 / np.pi * np.cos(np.pi * t / 5), "k-", lw=0.8, label="exact (undamped)")
    for out, style, name in ((a, "C0--", "explicit"), (b, "C3-", "implicit")):
        h = mpmio.history(out)
        dt = h["dt"][1]
        ax.plot(h["t"], h["momentum_x"] / h["mass"], style, label="%s, dt = %g s" % (name, dt))
    ax.set_xlabel("t [s]")
    ax.set_ylabel("centre-of-mass velocity [m/s]")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
