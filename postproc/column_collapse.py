#!/usr/bin/env python3
"""Granular column collapse: measured runout and final height against the
published laws (Lube et al. 2005, quasi-2D; docs/reference-data.md s.1),
and a PNG of the deposit.

  /usr/bin/python3 postproc/column_collapse.py OUTDIR [--region column] [--png FILE]

Runout is measured at the front of the deposit where it is at least one grid
cell thick (the farthest single particle keeps moving out with refinement),
and also where it is at least L0/16 thick (runout_thick: a threshold that
does not shrink with the cell, for convergence studies);
the final height is the deposit height at the symmetry wall x = 0.  Writes
OUTDIR/column_collapse.json and OUTDIR/deposit.png.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def lube_law(a):
    """(runout (L_inf - L0)/L0, final height H_inf/L0), Lube et al. 2005 quasi-2D."""
    runout = 1.2 * a if a < 2.3 else 1.9 * a ** (2.0 / 3.0)
    height = a if a < 1.0 else a ** 0.4
    return runout, height


def pass_bands(a):
    """Pass bands of reference-data.md for the two tested aspect ratios (None elsewhere)."""
    if abs(a - 0.5) < 1e-6:
        return {"runout": (0.5, 1.2), "height_over_H0": (0.97, 1.03)}
    if abs(a - 2.0) < 1e-6:
        return {"runout": (2.4, 4.6), "height_over_L0": (0.9, 1.5), "front_arrest_tau": (2.5, 6.0)}
    return {}


def surface_profile(x, y, dx, spacing):
    """Deposit height per x bin of width dx (top particle + half spacing)."""
    nb = int(np.ceil(x.max() / dx)) + 1
    h = np.zeros(nb)
    b = np.clip((x / dx).astype(int), 0, nb - 1)
    np.maximum.at(h, b, y + 0.5 * spacing)
    return h


def front_of(prof, dx, thickness):
    """Front of the contiguous deposit from the wall where the profile (bins
    of width dx) is at least `thickness` thick."""
    thin = np.nonzero(prof < thickness)[0]
    end = (thin[0] if len(thin) else len(prof)) - 1
    return (end + 1) * dx


def deposit_front(x, y, dx, spacing):
    """Front where the deposit is at least one cell thick, and the profile
    (x measured from the column's back wall)."""
    prof = surface_profile(x, y, dx, spacing)
    return front_of(prof, dx, dx), prof


def front_arrest_time(outdir, x0, floor, dx, spacing, L0):
    """Time after which the front stays within one cell of its final position."""
    times, fronts = [], []
    for f in mpmio.frame_files(outdir):
        fr = mpmio.read_frame(f, ["position"])
        front, _ = deposit_front(fr["position"][:, 0] - x0, fr["position"][:, 1] - floor, dx, spacing)
        times.append(fr["t"])
        fronts.append(front)
    fronts = np.array(fronts)
    moving = np.nonzero(np.abs(fronts - fronts[-1]) > dx)[0]
    k = moving[-1] + 1 if len(moving) else 0
    return times[min(k, len(times) - 1)], np.array(times), (fronts - L0) / L0


def measure(outdir, region=None):
    opts = mpmio.run_options(outdir)
    region = region or opts["regions"].split(",")[0]
    lo, hi = mpmio.vec(opts, region + "_lo"), mpmio.vec(opts, region + "_hi")
    L0, H0 = hi[0] - lo[0], hi[1] - lo[1]
    dx = float(opts["dx"])
    ppc = int(opts.get(region + "_ppc", "2"))
    floor = float(mpmio.vec(opts, "domain_lo")[1])
    first = mpmio.read_frame(mpmio.frame_files(outdir)[0], ["position"])
    last = mpmio.read_frame(mpmio.frame_files(outdir)[-1], ["position", "velocity", "plastic_case"])
    x, y = last["position"][:, 0] - lo[0], last["position"][:, 1] - floor
    front, prof = deposit_front(x, y, dx, dx / ppc)
    front_thick = front_of(prof, dx, L0 / 16)
    t_arrest, times, fronts = front_arrest_time(outdir, lo[0], floor, dx, dx / ppc, L0)
    a = H0 / L0
    law_runout, law_height = lube_law(a)
    res = {
        "aspect_ratio": a, "L0": L0, "H0": H0, "dx": dx, "time": last["t"],
        "runout": (front - L0) / L0, "runout_law": law_runout,
        "runout_thick": (front_thick - L0) / L0,
        "height_over_L0": prof[0] / L0, "height_law_over_L0": law_height,
        "height_over_H0": prof[0] / H0,
        "front_farthest_particle": (x.max() - L0) / L0,
        "max_speed_final": float(np.sqrt((last["velocity"] ** 2).sum(axis=1)).max()),
        "tau_c": float(np.sqrt(H0 / 9.81)),
        "front_arrest_time": t_arrest,
        "front_history": {"t": times.tolist(), "runout": fronts.tolist()},
    }
    res["front_arrest_tau"] = t_arrest / res["tau_c"]
    res["bands"] = pass_bands(a)
    return res, first, last, prof, lo, floor


def plot(path, res, first, last, prof, lo, floor):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    L0 = res["L0"]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    p0, p1 = first["position"], last["position"]
    ax.scatter((p0[:, 0] - lo[0]) / L0, (p0[:, 1] - floor) / L0, s=0.3, c="0.8", label="initial column")
    sc = ax.scatter((p1[:, 0] - lo[0]) / L0, (p1[:, 1] - floor) / L0, s=0.6, c=last["plastic_case"], cmap="viridis", vmin=0, vmax=2,
                    label="deposit (colour: return-mapping case)")
    xb = (np.arange(len(prof)) + 0.5) * res["dx"] / L0
    ax.plot(xb, prof / L0, "k-", lw=0.8, label="deposit surface")
    ax.axvline(1 + res["runout"], color="r", ls="--", lw=1, label="measured front (>= 1 cell thick)")
    ax.axvline(1 + res["runout_law"], color="b", ls=":", lw=1.5, label="Lube et al. 2005")
    ax.set_xlabel("x / L0")
    ax.set_ylabel("y / L0")
    ax.set_aspect("equal")
    ax.set_title("Column collapse a = %.2g at t = %.3g s: runout %.2f L0 (law %.2f), H_inf %.2f L0 (law %.2f)"
                 % (res["aspect_ratio"], res["time"], res["runout"], res["runout_law"], res["height_over_L0"], res["height_law_over_L0"]), fontsize=8)
    ax.legend(fontsize=6, loc="upper right")
    fig.colorbar(sc, ax=ax, shrink=0.6, label="0 elastic, 1 tip, 2 cone")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def report(res):
    lines = ["column collapse a = %.3g (L0 = %.3g m, H0 = %.3g m, t = %.3g s = %.1f tau_c)"
             % (res["aspect_ratio"], res["L0"], res["H0"], res["time"], res["time"] / res["tau_c"]),
             "  %-28s %10s %12s %16s" % ("quantity", "measured", "Lube 2005", "pass band")]
    b = res["bands"]
    rows = [("runout (L_inf - L0)/L0", res["runout"], res["runout_law"], b.get("runout")),
            ("final height H_inf/L0", res["height_over_L0"], res["height_law_over_L0"], b.get("height_over_L0")),
            ("final height H_inf/H0", res["height_over_H0"], res["height_law_over_L0"] * res["L0"] / res["H0"], b.get("height_over_H0"))]
    for name, val, law, band in rows:
        bs = "[%.2f, %.2f] %s" % (band[0], band[1], "PASS" if band[0] <= val <= band[1] else "FAIL") if band else "-"
        lines.append("  %-28s %10.3f %12.3f %16s" % (name, val, law, bs))
    band = b.get("front_arrest_tau")
    lines.append("  %-28s %10.3f %12s %16s" % ("front arrest t/tau_c", res["front_arrest_tau"], "2.5-3", "[%.1f, %.1f] %s" % (band[0], band[1], "PASS" if band[0] <= res["front_arrest_tau"] <= band[1] else "FAIL") if band else "-"))
    lines.append("  runout where the deposit is at least L0/16 thick (the same at every resolution): %.3f" % res["runout_thick"])
    lines.append("  farthest single particle: %.3f L0 past the column (not used: grid dependent)" % res["front_farthest_particle"])
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", help="output directory of a column-collapse run")
    ap.add_argument("--region", help="region name of the column (default: the first in -regions)")
    ap.add_argument("--png", help="plot file (default OUTDIR/deposit.png)")
    args = ap.parse_args()
    res, first, last, prof, lo, floor = measure(args.outdir, args.region)
    plot(args.png or os.path.join(args.outdir, "deposit.png"), res, first, last, prof, lo, floor)
    with open(os.path.join(args.outdir, "column_collapse.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(report(res))


if __name__ == "__main__":
    main()
