#!/usr/bin/env python3
"""Flank angle of a pile of grains (-integrator pbd; inputs/pbd_pile_2d.yaml),
and the calibration study of that angle against the grains' static friction
coefficient mu_s.

  /usr/bin/python3 postproc/pbd_pile.py OUTDIR            measure one run
  /usr/bin/python3 postproc/pbd_pile.py --study DIR [--mu 0.2,0.4,0.6,0.8,1.0]
      [--seeds 1,2] [--ranks 1,2] [--exe PATH] [--plot-only] [--deck pbd_spout_2d.yaml]
      -- [solver options]

The surface is the top of the highest grain (y + r) per bin two diameters
wide; the flank is fitted where it stands between 20 % and 80 % of the
pile's height, on the side away from the symmetry wall at x = 0 (as
reference-data.md s.2 for sand piles); a cone poured by an emitter
(inputs/pbd_spout_2d.yaml) has both flanks fitted and their mean reported,
its top the highest bin within a quarter of the domain's width of the
spout.  A flank runs from the top to the toe (the first bin below 20 %):
grains that ran out to a wall and piled there are not part of it.  One run writes OUTDIR/pbd_pile.json
and OUTDIR/pile.png; the study runs every mu_s for every seed (-seed: the
jitter of the column's lattice) and rank count, and writes DIR/study.json
and DIR/study.png: the angle against mu_s, the spread of the repeats and
atan(mu_s) for reference, over every run in DIR (so a study can be grown
by several invocations).  Runs that reached t_end are only re-measured.
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


def measure(outdir):
    opts = mpmio.run_options(outdir)
    mat = opts["materials"].split(",")[0]
    r = float(opts[mat + "_radius"])
    mu_s = float(opts.get(mat + "_static_friction", "0.6"))
    last = mpmio.read_frame(mpmio.frame_files(outdir)[-1], ["position", "velocity"])
    lo = mpmio.vec(opts, "domain_lo")
    x, y = last["position"][:, 0] - lo[0], last["position"][:, 1] - lo[1]
    w = 4 * r
    nb = int(np.ceil(x.max() / w)) + 1
    prof = np.zeros(nb)
    np.maximum.at(prof, np.clip((x / w).astype(int), 0, nb - 1), y + r)
    xb = (np.arange(nb) + 0.5) * w
    # the pile's top: a poured cone's is the highest bin within a quarter of
    # the domain's width of the spout (grains that ran out to a wall and
    # piled there are not the cone); a half pile's the highest bin
    near = np.ones(nb, bool)
    if opts.get("emitters"):
        spout = mpmio.vec(opts, opts["emitters"].split(",")[0] + "_center")[0] - lo[0]
        near = np.abs(xb - spout) <= 0.25 * (mpmio.vec(opts, "domain_hi")[0] - lo[0])
    ipeak = int(np.argmax(np.where(near, prof, -np.inf)))
    H, peak = prof[ipeak], xb[ipeak]
    band = (prof > 0.2 * H) & (prof < 0.8 * H)

    def flank_of(step):
        """The bins from the top outward to the toe (the first below 0.2 H), within the band."""
        f, i = np.zeros(nb, bool), ipeak + step
        while 0 <= i < nb and prof[i] > 0.2 * H:
            f[i] = band[i]
            i += step
        return f
    # a half pile against the symmetry wall has one flank; a cone poured from a spout (emitters) two
    sides = [("right", flank_of(1), -1.0)] + ([("left", flank_of(-1), 1.0)] if opts.get("emitters") else [])
    fits, angles = [], {}
    for name, flank, sign in sides:
        slope, icpt = np.polyfit(xb[flank], prof[flank], 1) if flank.sum() >= 2 else (np.nan, np.nan)
        fits.append((flank, slope, icpt))
        angles[name + "_angle"] = float(np.degrees(np.arctan(sign * slope)))
    res = {"static_friction": mu_s, "kinetic_friction": float(opts.get(mat + "_kinetic_friction", "0.5")), "slope_angle": float(np.mean(list(angles.values()))), **angles,
           "height": float(H), "height_grains": float(H / (2 * r)), "fit_points": int(flank.sum()), "time": last["t"],
           "max_speed": float(np.sqrt((last["velocity"] ** 2).sum(axis=1)).max()), "grains": int(len(x)),
           "seed": int(opts.get("seed", "1")), "ranks": int(json.load(open(os.path.join(outdir, "run.json"))).get("ranks", 1))}
    return res, x, y, xb, prof, fits


def one(outdir, png=None):
    res, x, y, xb, prof, fits = measure(outdir)
    with open(os.path.join(outdir, "pbd_pile.json"), "w") as f:
        json.dump(res, f, indent=2)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.scatter(x, y, s=0.5, c="tan")
    ax.plot(xb, prof, "k-", lw=0.8, label="surface")
    for k, (flank, slope, icpt) in enumerate(fits):
        ax.plot(xb[flank], slope * xb[flank] + icpt, "r-", lw=2, label="fit: %.1f deg" % np.degrees(np.arctan(abs(slope))) if k == 0 else None)
    ax.set_aspect("equal")
    ax.legend(fontsize=7)
    ax.set_title("grains at t = %.2f s, mu_s %.2f: height %.0f grains, flank %.1f deg" % (res["time"], res["static_friction"], res["height_grains"], res["slope_angle"]), fontsize=8)
    fig.tight_layout()
    fig.savefig(png or os.path.join(outdir, "pile.png"), dpi=150)
    if len(fits) > 1:
        print("pbd pile: flanks %.2f (left) and %.2f deg (right)" % (res["left_angle"], res["right_angle"]))
    print("pbd pile: flank %.2f deg at mu_s %.2f (atan %.1f deg), height %.1f grains, max speed %.3g m/s"
          % (res["slope_angle"], res["static_friction"], np.degrees(np.arctan(res["static_friction"])), res["height_grains"], res["max_speed"]))
    return res


def finished(out):
    """A run that reached its end (not one stopped by a signal with a checkpoint)."""
    path = os.path.join(out, "summary.json")
    return os.path.exists(path) and json.load(open(path)).get("status") == "finished"


def study(args, extra):
    mus = [float(m) for m in args.mu.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    ranks = [int(r) for r in args.ranks.split(",")]
    deck = os.path.join(ROOT, "inputs", args.deck)
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    for mu in mus:
        for seed in seeds:
            for n in ranks:
                out = os.path.join(args.study, "mu%.2f_seed%d_ranks%d" % (mu, seed, n))
                done = finished(out)
                if not done and not args.plot_only:
                    cmd = ["mpiexec", "-n", str(n), args.exe, "-restart", "latest", "-options_file_yaml", deck, "-output_dir", out, "-seed", str(seed),
                           "-grains_static_friction", str(mu), "-grains_kinetic_friction", str(0.8 * mu)] + extra
                    print(" ".join(cmd), flush=True)
                    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    for d in sorted(os.listdir(args.study)):  # every run in the study's directory, earlier invocations' too
        if finished(os.path.join(args.study, d)):
            rows.append(one(os.path.join(args.study, d)))
    groups = {}
    for r in rows:
        groups.setdefault(r["static_friction"], []).append(r["slope_angle"])
    table = [{"static_friction": m, "angles": a, "mean": float(np.mean(a)), "spread": float(np.max(a) - np.min(a))} for m, a in sorted(groups.items())]
    with open(os.path.join(args.study, "study.json"), "w") as f:
        json.dump({"runs": rows, "curve": table, "solver_options": extra}, f, indent=2)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for r in rows:
        ax.plot(r["static_friction"], r["slope_angle"], "o" if r["ranks"] == 1 else "s", mfc="none", color="C%d" % (r["seed"] % 10), ms=5)
    ax.plot([t["static_friction"] for t in table], [t["mean"] for t in table], "k-", label="mean of the runs")
    m = np.linspace(0, max(mus) * 1.05, 50)
    ax.plot(m, np.degrees(np.arctan(m)), "k:", label="atan(mu_s)")
    ax.set_xlabel("static friction mu_s (mu_k = 0.8 mu_s)")
    ax.set_ylabel("flank angle [deg]")
    ax.set_title("PBD pile angle (circles 1 rank, squares 2; colour: seed)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.study, "study.png"), dpi=150)
    for t in table:
        print("mu_s %.2f: angle %.2f deg (spread %.2f over %d runs)" % (t["static_friction"], t["mean"], t["spread"], len(t["angles"])))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--png")
    ap.add_argument("--study")
    ap.add_argument("--mu", default="0.2,0.4,0.6,0.8,1.0")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "granular-mpm"))
    ap.add_argument("--plot-only", action="store_true")
    ap.add_argument("--deck", default="pbd_pile_2d.yaml", help="the study's deck in inputs/ (pbd_spout_2d.yaml: the poured cone)")
    args = ap.parse_args(argv)
    if args.study:
        os.makedirs(args.study, exist_ok=True)
        study(args, extra)
    else:
        one(args.outdir, args.png)


if __name__ == "__main__":
    main()
