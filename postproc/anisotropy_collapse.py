#!/usr/bin/env python3
"""Anisotropic grains in the nonsmooth column collapse (Daviet and
Bertails-Descoubes 2016, s. 6.2 and Figure 9): the a = 2 collapse of
inputs/column_collapse_2d.yaml with isotropic grains, random normals
(aligned by the flow, and not: -sand_grain_elongation 0) and normals all up,
alpha = 0.8 as the seed's figure.

  /usr/bin/python3 postproc/anisotropy_collapse.py OUTDIR [--cells 16] [--ranks 1] [--png FILE]

Runs each case into OUTDIR/<case> (a finished run is kept, not repeated),
measures it with postproc/column_collapse.py, prints one row per case
(runout, final height, front arrest, Gauss-Seidel sweeps per step, wall
time) and draws the four deposits, each particle coloured by how far its
grains' mean normal (nu2's largest eigenvector) leans from the vertical.
docs/design/nonsmooth.md ("Anisotropy") and docs/validation.md show the
table and the picture.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import mpmio  # noqa: E402

ALPHA = ["-sand_anisotropy", "0.8"]
CASES = [  # name, label, options
    ("isotropic", "isotropic grains", []),
    ("random", "random normals, ell 0.8", ALPHA + ["-sand_grain_normals", "random"]),
    ("random_ell0", "random normals, ell 0 (no alignment)", ALPHA + ["-sand_grain_normals", "random", "-sand_grain_elongation", "0"]),
    ("up", "normals up", ALPHA + ["-sand_grain_normals", "aligned", "-sand_grain_normal", "0,1"]),
]
T_END = 1.15


def run(args, name, opts):
    out = os.path.join(args.outdir, name)
    if not os.path.exists(os.path.join(out, "summary.json")):
        cmd = ["mpiexec", "-n", str(args.ranks), os.path.join(args.build, "granular-mpm"), "-options_file_yaml", os.path.join(ROOT, "inputs", "column_collapse_2d.yaml"),
               "-integrator", "nonsmooth", "-dx", "%g" % (0.1 / args.cells), "-t_end", "%g" % T_END, "-output_dt", "0.05", "-output_dir", out] + opts
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(HERE, "column_collapse.py"), out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "column_collapse.json")) as f:
        cc = json.load(f)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return out, cc, s


def normal_tilt(frame):
    """Angle [deg] between each particle's mean grain normal and the vertical (None: isotropic run)."""
    if "grain_orientation" not in frame:
        return None
    nu = frame["grain_orientation"].reshape(-1, 2, 2)
    _, vec = np.linalg.eigh(nu)
    n = vec[:, :, -1]  # largest eigenvalue's eigenvector
    return np.degrees(np.arccos(np.clip(np.abs(n[:, 1]), 0, 1)))


def plot(path, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 1.9 * len(rows)), sharex=True, gridspec_kw={"hspace": 0.45})
    for ax, (label, out, cc) in zip(axes, rows):
        f = mpmio.read_frame(mpmio.frame_files(out)[-1])
        x, y = f["position"][:, 0] / 0.1, f["position"][:, 1] / 0.1
        tilt = normal_tilt(f)
        if tilt is None:
            ax.scatter(x, y, s=2, c="0.5", linewidths=0)
        else:
            sc = ax.scatter(x, y, s=2, c=tilt, cmap="viridis", vmin=0, vmax=90, linewidths=0)
        ax.set_aspect("equal")
        ax.set_ylim(0, 1.2)
        ax.set_xlim(0, 5.2)
        ax.set_ylabel("y / L0")
        ax.set_title("%s: runout %.2f L0, height %.2f L0" % (label, cc["runout"], cc["height_over_L0"]), fontsize=9)
    axes[-1].set_xlabel("x / L0")
    fig.colorbar(sc, ax=axes, shrink=0.8, label="mean normal's tilt from vertical [deg]")
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--cells", type=int, default=16, help="cells across L0 = 0.1 m")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--png", default=None, help="picture of the deposits (default OUTDIR/anisotropy_collapse.png)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    rows = []
    print("%-38s %8s %8s %8s %8s %8s" % ("grains (alpha 0.8)", "runout", "H/L0", "arrest", "sweeps", "wall"))
    for name, label, opts in CASES:
        out, cc, s = run(args, name, opts)
        rows.append((label, out, cc))
        print("%-38s %8.3f %8.3f %8.2f %8.1f %8.0f" % (label, cc["runout"], cc["height_over_L0"], cc["front_arrest_tau"], s["integrator_dcfp_its"] / s["steps"], s["wall_seconds"]))
    plot(args.png or os.path.join(args.outdir, "anisotropy_collapse.png"), rows)


if __name__ == "__main__":
    main()
