#!/usr/bin/env python3
"""Pictures of a run with its obstacles drawn: particles coloured by speed
and every collision object (box, sphere/disk, cylinder, polygon, terrain,
half space, and the parts of a union/intersection/difference) outlined
from the run's own options (run.json) where it is at each frame (moved by
its prescribed velocity, and in 2D its angular velocity; dynamic bodies
where they start), at a few frames side by side.

  /usr/bin/python3 postproc/scene_figure.py OUTDIR [--frames 0,10,-1] [--png FILE]
      [--forces OBJECT]

2D: the x-y plane.  3D: a side view (x-y; terrain drawn along its
centre line in z) above a plan view (x-z, terrain height contours).
--forces adds the object's force against time (forces/OBJECT.csv) as a
last panel.  Terrain files are found as the solver found them (relative
to the working directory, else to the deck's directory).
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpmio  # noqa: E402


def find_file(path, deck_dirs):
    if os.path.isabs(path) or os.path.exists(path):
        return path
    for d in deck_dirs:
        if os.path.exists(os.path.join(d, path)):
            return os.path.join(d, path)
    return None


def read_asc(path):
    head, rows = {}, []
    with open(path) as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if tok[0][0].isalpha():
                head[tok[0].lower()] = float(tok[1])
            else:
                rows.append([float(t) for t in tok])
    h = np.array(rows)[::-1]  # row 0 north -> index by z
    cs = head["cellsize"]
    x0 = head.get("xllcenter", head.get("xllcorner", 0) + 0.5 * cs)
    z0 = head.get("yllcenter", head.get("yllcorner", 0) + 0.5 * cs)
    return x0 + cs * np.arange(h.shape[1]), z0 + cs * np.arange(h.shape[0]), h


def read_mesh(path):
    """Triangles (n x 3 x 3) of an STL (binary or ASCII) or OBJ file."""
    import struct
    data = open(path, "rb").read()
    if path.lower().endswith(".obj"):
        v, tris = [], []
        for line in data.decode().splitlines():
            tok = line.split()
            if tok and tok[0] == "v":
                v.append([float(x) for x in tok[1:4]])
            elif tok and tok[0] == "f":
                idx = [int(t.split("/")[0]) for t in tok[1:]]
                idx = [i - 1 if i > 0 else len(v) + i for i in idx]
                tris += [[v[idx[0]], v[idx[k]], v[idx[k + 1]]] for k in range(1, len(idx) - 1)]
        return np.array(tris)
    n = struct.unpack("<I", data[80:84])[0] if len(data) >= 84 else 0
    if len(data) == 84 + 50 * n:
        return np.array([struct.unpack("<12f", data[84 + 50 * i: 84 + 50 * i + 48])[3:] for i in range(n)]).reshape(-1, 3, 3)
    pts = [[float(x) for x in l.split()[1:4]] for l in data.decode().splitlines() if l.strip().startswith("vertex")]
    return np.array(pts).reshape(-1, 3, 3)


def motion(ax, opts, prefix, dim, view, t):
    """The transform that puts object -<prefix>* where it is at time t: its
    prescribed -velocity (and, in 2D, its -angular_velocity about its
    centre), as the solver moves it (MPMPlacedShapeAtTime).  Dynamic bodies
    move by the solve, not by their options: drawn where they start."""
    from matplotlib.transforms import Affine2D
    if opts.get(prefix + "dynamic", "false").lower() in ("1", "true", "yes"):
        return ax.transData
    ia, ib = (0, 1) if view == "xy" else (0, 2)
    vel = mpmio.vec(opts, prefix + "velocity", [0, 0, 0])
    vel = list(vel) + [0] * (3 - len(vel))
    tr = Affine2D()
    omega = mpmio.vec(opts, prefix + "angular_velocity", [0])
    if dim == 2 and omega[0]:
        if prefix + "center" in opts:
            c = mpmio.vec(opts, prefix + "center")
        else:
            lo, hi = mpmio.vec(opts, prefix + "lo", [0, 0]), mpmio.vec(opts, prefix + "hi", [0, 0])
            c = [(lo[k] + hi[k]) / 2 for k in range(2)]
        tr = tr.rotate_around(c[0], c[1], omega[0] * t)
    return tr.translate(vel[ia] * t, vel[ib] * t) + ax.transData


def outline(ax, opts, prefix, dim, view, deck_dirs, color="k", t=0.0, transform=None):
    """Draw shape -<prefix>* in the axes: view 'xy' or 'xz' (3D plan), at
    time t (moved as the run moved it)."""
    shape = opts.get(prefix + "shape", "box")
    ia, ib = (0, 1) if view == "xy" else (0, 2)
    if transform is None:
        transform = motion(ax, opts, prefix, dim, view, t)
    kw = dict(color=color, lw=1.2, transform=transform)
    if shape in ("union", "intersection", "difference"):
        for part in opts.get(prefix + "parts", "").split(","):
            outline(ax, opts, prefix + part + "_", dim, view, deck_dirs, color, t, transform)
        return
    if shape == "box":
        lo, hi = mpmio.vec(opts, prefix + "lo"), mpmio.vec(opts, prefix + "hi")
        c = [(lo[k] + hi[k]) / 2 for k in range(dim)]
        pts = np.array([[lo[ia], lo[ib]], [hi[ia], lo[ib]], [hi[ia], hi[ib]], [lo[ia], hi[ib]], [lo[ia], lo[ib]]])
        rot = mpmio.vec(opts, prefix + "rotation", [0])
        if dim == 2 and rot[0]:
            a = math.radians(rot[0])
            R = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
            pts = (pts - c[:2]) @ R.T + c[:2]
        ax.plot(pts[:, 0], pts[:, 1], **kw)
    elif shape == "cylinder" and dim == 3 and math.hypot(*[mpmio.vec(opts, prefix + "axis", [0, 0, 1])[k] for k in (ia, ib)]) > 1e-9:
        # the axis lies in (or leans into) the view plane: the side of the cylinder, the ends at +-half_length along it
        c, r = mpmio.vec(opts, prefix + "center"), float(opts.get(prefix + "radius", 0))
        n = np.array(mpmio.vec(opts, prefix + "axis", [0, 0, 1]), dtype=float)
        n /= np.linalg.norm(n)
        hl = float(opts.get(prefix + "half_length", 0))
        a = np.array([n[ia], n[ib]])
        w = np.array([-a[1], a[0]]) / np.linalg.norm(a)
        c2 = np.array([c[ia], c[ib]])
        pts = np.array([c2 - hl * a - r * w, c2 + hl * a - r * w, c2 + hl * a + r * w, c2 - hl * a + r * w, c2 - hl * a - r * w])
        ax.plot(pts[:, 0], pts[:, 1], **kw)
    elif shape in ("sphere", "cylinder"):
        c, r = mpmio.vec(opts, prefix + "center"), float(opts.get(prefix + "radius", 0))
        a = np.linspace(0, 2 * math.pi, 100)
        ax.plot(c[ia] + r * np.cos(a), c[ib] + r * np.sin(a), **kw)
    elif shape == "polygon":
        v = np.array(mpmio.vec(opts, prefix + "vertices")).reshape(-1, 2)
        c = mpmio.vec(opts, prefix + "center", [0, 0, 0])
        v = np.vstack([v, v[:1]]) + np.array(c[:2])
        if dim == 2 or view == "xy":
            ax.plot(v[:, 0], v[:, 1], **kw)
    elif shape == "mesh":
        path = find_file(opts.get(prefix + "file", ""), deck_dirs)
        if not path:
            return
        from matplotlib.collections import PolyCollection
        tris = read_mesh(path) * float(opts.get(prefix + "scale", 1)) + np.array(mpmio.vec(opts, prefix + "center", [0, 0, 0]))
        ax.add_collection(PolyCollection(tris[:, :, [ia, ib]], facecolors="none", edgecolors=color, linewidths=0.2, alpha=0.5, transform=transform))
    elif shape == "half_space":
        c, n = mpmio.vec(opts, prefix + "center"), mpmio.vec(opts, prefix + "normal")
        d = np.array([-n[ib], n[ia]])
        kw.pop("transform")  # walls stand still; axline takes no data transform
        ax.axline((c[ia], c[ib]), (c[ia] + d[0], c[ib] + d[1]), **kw)
    elif shape == "terrain":
        path = find_file(opts.get(prefix + "file", ""), deck_dirs)
        if not path:
            return
        raise_ = float(opts.get(prefix + "raise", 0))
        if dim == 2:
            rows = [l for l in open(path) if l.strip() and (l.strip()[0].isdigit() or l.strip()[0] in "+-.")]  # past the header
            p = np.array([[float(x) for x in l.replace(";", ",").split(",")[:2]] for l in rows])
            ax.plot(p[:, 0], p[:, 1] + raise_, **kw)
        elif path.endswith(".asc"):
            x, z, h = read_asc(path)
            if view == "xy":
                ax.plot(x, h[len(z) // 2] + raise_, **kw)
            else:
                cs = ax.contour(x, z, h + raise_, levels=8, colors=color, linewidths=0.6, transform=transform)
                ax.clabel(cs, fontsize=6, fmt="%.2f")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--frames", default="0,-1", help="comma-separated frame numbers (negative: from the end)")
    ap.add_argument("--png")
    ap.add_argument("--forces", help="an object whose force against time is added")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    opts = mpmio.run_options(args.outdir)
    dim = int(opts.get("dim", 2))
    files = mpmio.frame_files(args.outdir)
    picks = [files[int(k)] for k in args.frames.split(",")]
    lo, hi = mpmio.vec(opts, "domain_lo"), mpmio.vec(opts, "domain_hi")
    deck_dirs = [os.getcwd(), os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs")]
    objects = [o for o in opts.get("objects", "").split(",") if o]
    rows = 1 if dim == 2 else 2
    cols = len(picks) + (1 if args.forces else 0)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.2 * rows * (1 if dim == 2 else 0.9)), squeeze=False)
    vmax = 0
    frames = [mpmio.read_frame(p, ["position", "velocity"]) for p in picks]
    for fr in frames:
        vmax = max(vmax, np.linalg.norm(fr["velocity"], axis=1).max())
    for k, fr in enumerate(frames):
        x, v = fr["position"], np.linalg.norm(fr["velocity"], axis=1)
        for r, view in enumerate(["xy"] if dim == 2 else ["xy", "xz"]):
            ax = axes[r][k]
            ib = 1 if view == "xy" else 2
            order = np.argsort(x[:, 2] if view == "xy" else x[:, 1])  # far points first
            sc = ax.scatter(x[order, 0], x[order, ib], c=v[order], s=0.4, cmap="viridis", vmin=0, vmax=max(vmax, 1e-9), rasterized=True)
            for o in objects:
                outline(ax, opts, o + "_", dim, view, deck_dirs, color="firebrick", t=fr["t"])
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[ib], hi[ib])
            ax.set_aspect("equal")
            ax.set_xlabel("x [m]")
            ax.set_ylabel("%s [m]" % "xyz"[ib])
            ax.set_title("t = %.2f s%s" % (fr["t"], "" if dim == 2 else (" (side)" if view == "xy" else " (plan)")), fontsize=9)
    fig.colorbar(sc, ax=[axes[r][k] for r in range(rows) for k in range(len(picks))], label="speed [m/s]", shrink=0.8)
    if args.forces:
        f = mpmio.forces(args.outdir, args.forces)
        ax = axes[0][-1]
        unit = "N" if dim == 3 else "N/m"
        ax.plot(f["t"], f["f_abs"], "k", label="|F|")
        for key, style in zip(("fx", "fy", "fz"), (":", "--", "-.")):
            if key in f:
                ax.plot(f["t"], f[key], style, label=key)
        ax.set_xlabel("t [s]")
        ax.set_ylabel("force on %s [%s]" % (args.forces, unit))
        ax.set_title("peak %.3g %s at %.2f s" % (f["f_peak"][-1], unit, f["t_peak"][-1]), fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        if rows > 1:
            axes[1][-1].axis("off")
    png = args.png or os.path.join(args.outdir, "scene.png")
    fig.savefig(png, dpi=130, bbox_inches="tight")
    print("scene_figure: %s" % png)


if __name__ == "__main__":
    main()
