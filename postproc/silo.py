#!/usr/bin/env python3
"""Silo discharge: the steady discharge rate of each run and Beverloo's law
fitted over the openings (docs/validation.md, "Silo discharge").

  /usr/bin/python3 postproc/silo.py RUN [RUN ...] [--window T0 T1] [--json FILE] [--png FILE]

Each RUN is an output directory of inputs/silo_2d.yaml (or a deck with the
same two objects opening_left and opening_right) or of inputs/silo_3d.yaml
(the object bottom with the part hole); the opening D is read from its
run.json.  A 3D run may be a half or a quarter of the silo: a hole centred
on a domain face with -bc_<face> slip and no friction (a symmetry plane)
counts that face, and Q is the whole silo's rate, the run's times 2 per
such face.  The grains that leave the domain are deleted, so the mass
left (history.csv) falls at the discharge rate, delayed by the constant
fall time below the opening.  Per run:

  Q         the slope of the mass over the window [kg/(m s)] in 2D, [kg/s] in 3D,
  Q_parts   the slopes over its four quarters; steady when every one is
            within 10 % of Q (reference-data s. 5: "constant within +/-10 %").

Over the runs (at least 3 openings): Q = C (D - k h)^b by least squares
with b free and with b = 1.5 (2D) or 2.5 (3D); k in cells h, and Beverloo's
C = Q / (rho sqrt(g) (D - k h)^b) with rho the material's density.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def options(run):
    """run.json's option string as a dict (values as strings)."""
    with open(os.path.join(run, "run.json")) as f:
        words = json.load(f)["options"].split()
    opts, key = {}, None
    for w in words:
        if w.startswith("-") and not w[1:2].isdigit():
            key = w[1:]
            opts[key] = ""
        elif key is not None:
            opts[key] = w
    return opts


def vec(s):
    return [float(v) for v in s.split(",")]


def symmetry_factor(o):
    """2 per frictionless slip face through the 3D hole's centre (a symmetry plane)."""
    if "bottom_hole_center" not in o or "domain_lo" not in o:
        return 1
    c, lo, hi = vec(o["bottom_hole_center"]), vec(o["domain_lo"]), vec(o["domain_hi"])
    n = 1
    for a, name in ((0, "x"), (2, "z")):
        for side, wall in (("lo", lo), ("hi", hi)):
            face = "bc_%s%s" % (name, side)
            if abs(c[a] - wall[a]) < 1e-12 and o.get(face) == "slip" and float(o.get(face + "_friction", o.get("bc_friction", "0"))) == 0:
                n *= 2
    return n


def discharge(run, t0, t1):
    """The run's opening, cell, density, dim and its discharge rate over [t0, t1]."""
    o = options(run)
    if "bottom_hole_radius" in o:  # inputs/silo_3d.yaml: a round hole in the bottom plate
        D = 2 * float(o["bottom_hole_radius"])
    else:
        D = vec(o["opening_right_lo"])[0] - vec(o["opening_left_hi"])[0]
    h = mpmio.history(run)
    t, m = h["t"], h["mass"]
    sel = (t >= t0) & (t <= t1)
    if sel.sum() < 8:
        raise SystemExit("%s: only %d history rows in [%g, %g] s (run longer, or lower -history_interval)" % (run, sel.sum(), t0, t1))
    sym = symmetry_factor(o)
    Q = -sym * np.polyfit(t[sel], m[sel], 1)[0]
    edges = np.linspace(t0, t1, 5)
    parts = []
    for a, b in zip(edges[:-1], edges[1:]):
        s = (t >= a) & (t <= b)
        parts.append(-sym * np.polyfit(t[s], m[s], 1)[0] if s.sum() >= 2 else float("nan"))
    mat = o["materials"].split(",")[0]
    return {"run": run, "D": D, "h": float(o["dx"]), "rho": float(o[mat + "_density"]), "dim": int(o.get("dim", "2")), "Q": Q, "Q_parts": parts, "symmetry": sym,
            "steady_dev": float(np.max(np.abs(np.array(parts) / Q - 1))), "mass_left": float(m[-1] / m[0])}


def beverloo(runs):
    """Least-squares fits of Q = C (D - k h)^b: b free, and b at Beverloo's value."""
    from scipy.optimize import curve_fit
    D = np.array([r["D"] for r in runs])
    Q = np.array([r["Q"] for r in runs])
    h, rho, dim = runs[0]["h"], runs[0]["rho"], runs[0]["dim"]
    b_law = 1.5 if dim == 2 else 2.5

    def law(D, A, k, b):
        return A * np.clip(D - k * h, 1e-12, None) ** b

    out = {"h": h, "b_law": b_law}
    p, cov = curve_fit(law, D, Q, p0=[Q[-1] / D[-1] ** b_law, 1.0, b_law], maxfev=20000)
    out.update(b=p[2], b_err=float(np.sqrt(cov[2, 2])) if np.isfinite(cov[2, 2]) else float("nan"), k_cells=p[1], A=p[0])
    p2, _ = curve_fit(lambda D, A, k: law(D, A, k, b_law), D, Q, p0=[p[0], p[1]], maxfev=20000)
    out.update(k_cells_fixed_b=p2[1], C=p2[0] / (rho * np.sqrt(9.81)))
    out["fit_residual"] = float(np.max(np.abs(law(D, *p2, b_law) / Q - 1)))
    return out


def plot(runs, fit, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    D = np.array([r["D"] for r in runs])
    Q = np.array([r["Q"] for r in runs])
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for r in runs:
        h = mpmio.history(r["run"])
        ax[0].plot(h["t"], h["mass"], label="D = %.3f m" % r["D"])
    ax[0].set_xlabel("t [s]")
    ylabel = "mass left [kg/m]" if runs[0]["dim"] == 2 else "mass left [kg]"
    if runs[0].get("symmetry", 1) > 1:
        ylabel = "mass left in the run (1/%d of the silo) [kg]" % runs[0]["symmetry"]
    ax[0].set_ylabel(ylabel)
    ax[0].legend()
    ax[0].set_title("discharge")
    Dd = np.linspace(D.min() * 0.8, D.max() * 1.1, 100)
    b = fit["b_law"]
    ax[1].plot(D, Q ** (1 / b), "o", label="measured")
    ax[1].plot(Dd, (fit["C"] * runs[0]["rho"] * np.sqrt(9.81)) ** (1 / b) * np.clip(Dd - fit["k_cells_fixed_b"] * fit["h"], 0, None), "-",
               label="Beverloo, k = %.2f cells, C = %.2f" % (fit["k_cells_fixed_b"], fit["C"]))
    ax[1].set_xlabel("opening D [m]")
    ax[1].set_ylabel("Q^(1/%g)" % b)
    ax[1].set_title("free exponent b = %.2f" % fit["b"])
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--window", nargs=2, type=float, default=(0.2, 0.6),
                    help="steady part [s] (default 0.2 0.6: after the first grains reach the bottom of inputs/silo_2d.yaml, before its widest opening has drained 60 %%)")
    ap.add_argument("--json")
    ap.add_argument("--png")
    a = ap.parse_args()
    runs = sorted((discharge(r, *a.window) for r in a.runs), key=lambda r: r["D"])
    print("%-10s %-8s %-12s %-26s %s" % ("D [m]", "cells", "Q [kg/m/s]" if runs[0]["dim"] == 2 else "Q [kg/s]", "quarters / Q", "mass left"))
    for r in runs:
        print("%-10.4f %-8.1f %-12.4g %-26s %.2f" % (r["D"], r["D"] / r["h"], r["Q"], " ".join("%.3f" % (q / r["Q"]) for q in r["Q_parts"]), r["mass_left"]))
    res = {"runs": runs}
    if len(runs) >= 3:
        fit = beverloo(runs)
        res["fit"] = fit
        print("Beverloo Q = C rho sqrt(g) (D - k h)^b: free b = %.3f +/- %.3f (k %.2f cells); with b = %g: k = %.2f cells, C = %.3f, worst misfit %.1f %%"
              % (fit["b"], fit["b_err"], fit["k_cells"], fit["b_law"], fit["k_cells_fixed_b"], fit["C"], 100 * fit["fit_residual"]))
        if a.png:
            plot(runs, fit, a.png)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, default=float)


if __name__ == "__main__":
    main()
