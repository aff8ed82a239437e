#!/usr/bin/env python3
"""The crater a ball leaves in a sand bed (inputs/crater_3d.yaml): is it round?

  /usr/bin/python3 postproc/crater.py OUTDIR [--png FILE]

The bed's surface is the highest grain of every column of the grid's cells
(x, z), at the first frame (the flat bed, height h0) and at the last.  From
the impact point (the ball's final x, z in history.csv), along 16 directions
at the same angle apart, the surface is sampled (bilinear in the columns) and
two radii are found:
  - the crater's edge: where the surface comes back up through h0 - dx / 2
    (interpolated between samples, so finer than a cell);
  - the rim: the highest point of the surface along the ray.
Roundness: the smallest edge radius over the largest; the offset of the
edge's centre from the impact point (the first Fourier mode of r(theta)) and
the square imprint of the grid (the fourth mode), both over the mean radius.
Writes OUTDIR/crater.json and a picture (surface map and r(theta)).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402

NDIR = 16


def surface(x, lo, dx, shape):
    """Highest y of the grains in each (x, z) column of side dx; NaN where empty."""
    i = np.clip(((x[:, 0] - lo[0]) / dx).astype(int), 0, shape[0] - 1)
    k = np.clip(((x[:, 2] - lo[2]) / dx).astype(int), 0, shape[1] - 1)
    h = np.full(shape, -np.inf)
    np.maximum.at(h, (i, k), x[:, 1])
    h[np.isinf(h)] = np.nan
    return h


def sample(h, lo, dx, px, pz):
    """Bilinear sample of the column heights (column centres) at (px, pz)."""
    fx = (px - lo[0]) / dx - 0.5
    fz = (pz - lo[2]) / dx - 0.5
    i0 = np.clip(np.floor(fx).astype(int), 0, h.shape[0] - 2)
    k0 = np.clip(np.floor(fz).astype(int), 0, h.shape[1] - 2)
    a = np.clip(fx - i0, 0, 1)
    b = np.clip(fz - k0, 0, 1)
    return (h[i0, k0] * (1 - a) * (1 - b) + h[i0 + 1, k0] * a * (1 - b) + h[i0, k0 + 1] * (1 - a) * b + h[i0 + 1, k0 + 1] * a * b)


def analyse(outdir):
    opts = mpmio.run_options(outdir)
    lo, hi = mpmio.vec(opts, "domain_lo"), mpmio.vec(opts, "domain_hi")
    dx = float(opts["dx"])
    shape = (int(round((hi[0] - lo[0]) / dx)), int(round((hi[2] - lo[2]) / dx)))
    files = mpmio.frame_files(outdir)
    h0map = surface(mpmio.read_frame(files[0], ["position"])["position"], lo, dx, shape)
    last = mpmio.read_frame(files[-1], ["position"])
    h = surface(last["position"], lo, dx, shape)
    h0 = float(np.nanmedian(h0map))
    hist = mpmio.history(outdir)
    body = [k[:-2] for k in hist if k.endswith("_x") and k[:-2] + "_vx" in hist][0]
    cx, cz = hist[body + "_x"][-1], hist[body + "_z"][-1]
    radius = float(opts.get(body + "_radius", 0))
    rmax = min(cx - lo[0], hi[0] - cx, cz - lo[2], hi[2] - cz) - dx
    r = np.arange(0, rmax, dx / 8)
    th = 2 * np.pi * np.arange(NDIR) / NDIR
    edge, rim, rimh = np.zeros(NDIR), np.zeros(NDIR), np.zeros(NDIR)
    for n, t in enumerate(th):
        s = sample(h, lo, dx, cx + r * np.cos(t), cz + r * np.sin(t))
        low = s < h0 - 0.5 * dx
        # the first sample past the depression's bottom where the surface is back above h0 - dx/2
        j = int(np.argmin(s))
        up = np.nonzero(~low[j:])[0]
        if not low[j] or len(up) == 0:  # no depression along this ray, or no way out of it
            edge[n] = np.nan
        else:
            m = j + up[0]
            f = (h0 - 0.5 * dx - s[m - 1]) / (s[m] - s[m - 1])
            edge[n] = r[m - 1] + f * (r[m] - r[m - 1])
        k = int(np.nanargmax(np.where(r > radius, s, -np.inf)))
        rim[n], rimh[n] = r[k], s[k] - h0
    mean = float(np.mean(edge))  # NaN when some direction has no crater edge
    # how deep the ball went, against Uehara et al. 2003 (PRL 90, 194301): a ball of diameter D and
    # density rho_b dropped from height h into grains of bulk density rho_g and repose tan mu stops
    # at d = 0.14 / mu (rho_b / rho_g)^(1/2) D^(2/3) (h + d)^(1/3) below the surface
    region = opts["regions"].split(",")[-1]
    mat = opts[region + "_material"]
    bed = mpmio.vec(opts, region + "_hi")[1]
    v0 = abs(mpmio.vec(opts, body + "_velocity", [0, 0, 0])[1])
    rho_b, rho_g = float(opts.get(body + "_density", 1000)), float(opts[mat + "_density"])
    mu = np.tan(np.radians(float(opts.get(mat + "_friction_angle", 30))))
    bottom = hist[body + "_y"][-1] - radius
    g = float(np.linalg.norm(mpmio.vec(opts, "gravity", [0, -9.81, 0])))
    hdrop = v0 * v0 / (2 * g) + max(hist[body + "_y"][0] - radius - bed, 0.0)
    d = 0.05
    for _ in range(50):
        d = 0.14 / mu * np.sqrt(rho_b / rho_g) * (2 * radius) ** (2.0 / 3.0) * (hdrop + d) ** (1.0 / 3.0)
    modes = np.abs(np.fft.rfft(edge)) / NDIR * 2
    res = {
        "impact_xz": [float(cx), float(cz)],
        "bed_height": h0,
        "depth": float(h0 - np.nanmin(sample(h, lo, dx, cx + r[:8], cz + 0 * r[:8]))),
        "deepest": float(h0 - np.nanmin(h)),
        "edge_radius_mean": mean,
        "edge_radii": [float(v) for v in edge],
        "roundness": float(np.min(edge) / np.max(edge)),
        "mode1_over_mean": float(modes[1] / mean),
        "mode4_over_mean": float(modes[4] / mean),
        "rim_radii": [float(v) for v in rim],
        "rim_height_mean": float(np.mean(rimh)),
        "rim_height_spread": float((np.max(rimh) - np.min(rimh)) / max(np.mean(rimh), 1e-12)),
        "penetration": float(bed - bottom),
        "penetration_uehara": float(d),
        "ball_bottom_above_floor": float(bottom - lo[1]),
        "dx": dx,
        "time": last["t"],
    }
    return res, (h, lo, dx, h0, cx, cz, th, edge)


def plot(path, data):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h, lo, dx, h0, cx, cz, th, edge = data
    fig, ax = plt.subplots(1, 2, figsize=(10, 4.4))
    ext = [lo[0], lo[0] + dx * h.shape[0], lo[2], lo[2] + dx * h.shape[1]]
    im = ax[0].imshow((h - h0).T * 1000, origin="lower", extent=ext, cmap="RdBu_r", vmin=-30, vmax=30)
    ax[0].plot(cx + edge * np.cos(th), cz + edge * np.sin(th), "k.-", lw=0.8)
    ax[0].set_xlabel("x [m]")
    ax[0].set_ylabel("z [m]")
    ax[0].set_title("surface - bed height [mm], crater edge")
    fig.colorbar(im, ax=ax[0])
    ax[1].plot(np.degrees(th), edge * 1000, "o-")
    ax[1].axhline(np.mean(edge) * 1000, color="k", lw=0.5)
    ax[1].set_xlabel("direction [deg]")
    ax[1].set_ylabel("edge radius [mm]")
    top = np.nanmax(edge) if np.any(np.isfinite(edge)) else dx
    ax[1].set_ylim(0, 1.3 * top * 1000)
    ax[1].set_title("roundness %.3f" % (np.min(edge) / np.max(edge)) if np.all(np.isfinite(edge)) else "no crater edge in some directions")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--png", help="picture (default OUTDIR/crater.png)")
    args = ap.parse_args()
    res, data = analyse(args.outdir)
    with open(os.path.join(args.outdir, "crater.json"), "w") as f:
        json.dump(res, f, indent=1)
    if not np.isfinite(res["edge_radius_mean"]):
        print("crater at t = %.3f s: no crater edge in %d of %d directions (the surface is nowhere dx/2 below the bed's there)"
              % (res["time"], int(np.sum(~np.isfinite(res["edge_radii"]))), NDIR))
    else:
        print("crater at t = %.3f s: edge radius %.1f mm (%d directions: %.1f-%.1f), roundness %.3f, offset %.3f, square mode %.3f; depth %.1f mm, rim %.1f mm high"
              % (res["time"], res["edge_radius_mean"] * 1000, NDIR, min(res["edge_radii"]) * 1000, max(res["edge_radii"]) * 1000, res["roundness"],
                 res["mode1_over_mean"], res["mode4_over_mean"], res["depth"] * 1000, res["rim_height_mean"] * 1000))
    print("ball: %.1f mm below the bed's surface (Uehara et al. 2003: %.1f mm), its bottom %.1f mm above the floor"
          % (res["penetration"] * 1000, res["penetration_uehara"] * 1000, res["ball_bottom_above_floor"] * 1000))
    try:
        plot(args.png or os.path.join(args.outdir, "crater.png"), data)
    except ImportError:
        print("crater: no matplotlib, no picture")


if __name__ == "__main__":
    main()
