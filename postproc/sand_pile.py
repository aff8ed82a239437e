#!/usr/bin/env python3
"""Slope of a sand pile's flank against the friction angle
(reference-data.md s.2: fit the middle 60 % of the flank), and against the
repose angle of the solvers' volume-preserving flow rule, atan(mu) with mu
= sqrt(J2)/p on the cone (docs/theory.md): atan(sin phi) for the 2D
plane_strain cone, phi itself for -<m>_cone repose.

  /usr/bin/python3 postproc/sand_pile.py OUTDIR [--material sand] [--png FILE]

Writes OUTDIR/sand_pile.json and OUTDIR/pile.png.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402
from column_collapse import surface_profile  # noqa: E402


def cone_mu(dim, cone, phi):
    """sqrt(J2)/p on the Drucker-Prager cone of friction angle phi [rad]
    (kernels/constitutive.c mpm_dp_alpha; 2D: the in-plane Mohr radius over
    the in-plane mean stress)."""
    s, t = np.sin(phi), np.tan(phi)
    if cone == "compression":
        alpha = np.sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s)
    elif cone == "repose":
        alpha = np.sqrt(2.0) * t / dim
    else:
        alpha = s / np.sqrt(2.0) if dim == 2 else np.sqrt(2.0) * t / np.sqrt(9.0 + 12.0 * t * t)
    return alpha * dim / np.sqrt(2.0)


def measure(outdir, material=None):
    opts = mpmio.run_options(outdir)
    material = material or opts["materials"].split(",")[0]
    phi = float(opts.get(material + "_friction_angle", "30"))
    dim = int(opts.get("dim", "2"))
    cone = opts.get(material + "_cone", "plane_strain" if dim == 2 else "compression")
    dx = float(opts["dx"])
    source = (opts.get("regions") or opts.get("emitters")).split(",")[0]
    ppc = int(opts.get(source + "_ppc", "2"))
    lo = mpmio.vec(opts, "domain_lo")
    last = mpmio.read_frame(mpmio.frame_files(outdir)[-1], ["position", "velocity"])
    x, y = last["position"][:, 0] - lo[0], last["position"][:, 1] - lo[1]
    prof = surface_profile(x, y, dx, dx / ppc)
    xb = (np.arange(len(prof)) + 0.5) * dx
    H = prof.max()
    flank = (prof > 0.2 * H) & (prof < 0.8 * H) & (xb > xb[np.argmax(prof)])
    slope, icpt = np.polyfit(xb[flank], prof[flank], 1)
    res = {"friction_angle": phi, "slope_angle": float(np.degrees(np.arctan(-slope))), "height": float(H), "height_cells": float(H / dx),
           "fit_points": int(flank.sum()), "time": last["t"], "max_speed": float(np.sqrt((last["velocity"] ** 2).sum(axis=1)).max()),
           "cone": cone, "repose_theory": float(np.degrees(np.arctan(cone_mu(dim, cone, np.radians(phi))))), "band": [phi - 3, phi + 3]}
    return res, x, y, xb, prof, flank, (slope, icpt)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--material", help="material whose -<name>_friction_angle is the reference (default: the first)")
    ap.add_argument("--png", help="plot file (default OUTDIR/pile.png)")
    args = ap.parse_args()
    res, x, y, xb, prof, flank, (slope, icpt) = measure(args.outdir, args.material)
    with open(os.path.join(args.outdir, "sand_pile.json"), "w") as f:
        json.dump(res, f, indent=2)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.scatter(x, y, s=0.5, c="tan")
    ax.plot(xb, prof, "k-", lw=0.8, label="surface")
    ax.plot(xb[flank], slope * xb[flank] + icpt, "r-", lw=2, label="fit: %.1f deg" % res["slope_angle"])
    xs = xb[flank][[0, -1]]
    ax.plot(xs, icpt + slope * xs[0] - np.tan(np.radians(res["friction_angle"])) * (xs - xs[0]), "b:", label="phi = %.0f deg" % res["friction_angle"])
    ax.set_aspect("equal")
    ax.legend(fontsize=7)
    ax.set_title("sand pile at t = %.2f s: height %.1f cells, flank %.1f deg" % (res["time"], res["height_cells"], res["slope_angle"]), fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png or os.path.join(args.outdir, "pile.png"), dpi=150)
    print("sand pile: flank slope %.2f deg; friction angle %.1f deg (%+.2f); repose angle of the flow rule atan(mu) %.2f deg (%+.2f); "
          "height %.1f cells, max speed %.3g m/s"
          % (res["slope_angle"], res["friction_angle"], res["slope_angle"] - res["friction_angle"], res["repose_theory"],
             res["slope_angle"] - res["repose_theory"], res["height_cells"], res["max_speed"]))

if __name__ == "__main__":
    main()
