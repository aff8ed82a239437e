#!/usr/bin/env python3
"""Stiff-sand column collapse, implicit against explicit (issue "implicit
Drucker-Prager"): runs the shipped inputs/column_collapse_2d.yaml (a = 2)
with stiff sand at several resolutions L0/N, first with the explicit
integrator, then with -integrator implicit at R times the explicit run's
step, measures every deposit with postproc/column_collapse.py and writes a
table (study.md, study.json) and a figure (study.png) of the final height
and the runout against the resolution.

  /usr/bin/python3 postproc/implicit_collapse_study.py OUTDIR
      [--cells 8,16,32] [--ratios 5,20] [--implicit-cells 8,16]
      [--youngs 35e6] [--t-end 1.15] [--ranks 1] [--exe PATH] [--plot-only]
      [-- extra options for every run]

Every run: -sand_youngs_modulus E -held_pic false (its rest threshold is a
displacement per step, so it would act differently at the two steps),
-output_dt 0.05, to the deck's t_end = 1.15 s (or --t-end); implicit runs add
-implicit_snes_rtol 1e-3 -dt_max R dt_explicit.  Runs that reached t_end
are measured again, not repeated (delete a run's directory to redo it).
Cost on one core of this machine: explicit 5 / 32 / 260 s at L0/8 / 16 /
32; implicit 20x 2 min at L0/8 and about 16 min at L0/16, 5x 1 / 10 min.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import mpmio  # noqa: E402
from column_collapse_study import completed  # noqa: E402

L0 = 0.1


def run(args, out, options):
    if not completed(out, args.t_end):
        if args.plot_only:
            return None
        cmd = ["mpiexec", "-n", str(args.ranks), args.exe, "-options_file_yaml", os.path.join(ROOT, "inputs", "column_collapse_2d.yaml"),
               "-output_dir", out] + options
        print("running: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(HERE, "column_collapse.py"), out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "column_collapse.json")) as f:
        res = json.load(f)
    s = mpmio.summary(out)
    steps = max(s["steps"], 1)
    res.update(steps=s["steps"], dt=s["dt_max"], wall=s["wall_seconds_stepping"],
               newton=s.get("integrator_newton_its", 0) / steps, ksp=s.get("integrator_ksp_its", 0) / max(s.get("integrator_newton_its", 0), 1),
               halvings=s.get("integrator_dt_halvings", 0))
    return res


def study(args, extra):
    base = ["-sand_youngs_modulus", "%g" % args.youngs, "-held_pic", "false", "-output_dt", "0.05", "-t_end", "%g" % args.t_end] + extra
    rows = []
    for n in args.cells:
        e = run(args, os.path.join(args.outdir, "explicit_L%d" % n), base + ["-dx", "%g" % (L0 / n)])
        if e is None:
            continue
        rows.append(dict(n=n, run="explicit", ratio=1.0, **e))
        if n not in args.implicit_cells:
            continue
        for r in args.ratios:
            i = run(args, os.path.join(args.outdir, "implicit_%gx_L%d" % (r, n)),
                    base + ["-dx", "%g" % (L0 / n), "-integrator", "implicit", "-implicit_snes_rtol", "1e-3", "-dt_max", "%.4g" % (r * e["dt"])])
            if i is not None:
                rows.append(dict(n=n, run="implicit %gx" % r, ratio=r, ref_height=e["height_over_L0"], ref_runout=e["runout_thick"], **i))
    return rows


def table(rows):
    lines = ["| L0/dx | run | dt [s] | H_inf/L0 | runout (L0/16 thick) | against explicit at this dx | Newton / step | GMRES / Newton | halvings | wall [s] |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        diff = ""
        if "ref_height" in r:
            diff = "%+.1f %%, %+.1f %%" % (100 * (r["height_over_L0"] / r["ref_height"] - 1), 100 * (r["runout_thick"] / r["ref_runout"] - 1))
        its = ("%.1f" % r["newton"], "%.1f" % r["ksp"], "%d" % r["halvings"]) if r["run"] != "explicit" else ("", "", "")
        lines.append("| %d | %s | %.3g | %.3f | %.3f | %s | %s | %s | %s | %.0f |" % (r["n"], r["run"], r["dt"], r["height_over_L0"], r["runout_thick"], diff, *its, r["wall"]))
    return "\n".join(lines) + "\n"


def plot(path, rows, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name in sorted({r["run"] for r in rows}, key=lambda k: (k != "explicit", k)):
        pts = sorted((r["n"], r) for r in rows if r["run"] == name)
        style = "ko-" if name == "explicit" else "s--"
        ax1.plot([n for n, _ in pts], [r["height_over_L0"] for _, r in pts], style, label=name)
        ax2.plot([n for n, _ in pts], [r["runout_thick"] for _, r in pts], style, label=name)
    for ax, lab in ((ax1, "final height H_inf / L0"), (ax2, "runout (L_inf - L0) / L0, deposit L0/16 thick")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("resolution L0 / dx")
        ax.set_ylabel(lab)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--cells", default="8,16,32", help="resolutions L0/dx of the explicit runs")
    ap.add_argument("--implicit-cells", default="8,16", help="the resolutions also run implicit")
    ap.add_argument("--ratios", default="5,20", help="implicit dt over the explicit run's step")
    ap.add_argument("--youngs", type=float, default=35e6)
    ap.add_argument("--t-end", type=float, default=1.15, help="simulated time [s] (the deck's: the deposit at rest)")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "granular-mpm"))
    ap.add_argument("--plot-only", action="store_true", help="do not run, only collect what exists")
    args = ap.parse_args(argv)
    args.cells = [int(x) for x in args.cells.split(",")]
    args.implicit_cells = [int(x) for x in args.implicit_cells.split(",")]
    args.ratios = [float(x) for x in args.ratios.split(",")]
    os.makedirs(args.outdir, exist_ok=True)
    rows = study(args, extra)
    md = table(rows)
    print(md)
    with open(os.path.join(args.outdir, "study.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.outdir, "study.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "front_history"} for r in rows], f, indent=1)
    plot(os.path.join(args.outdir, "study.png"), rows, "2D column collapse a = 2, Drucker-Prager, E = %g Pa: implicit at R x the explicit step %s" % (args.youngs, " ".join(extra)))


if __name__ == "__main__":
    main()
