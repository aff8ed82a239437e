#!/usr/bin/env python3
"""Column-collapse convergence study (issue "sand fidelity"): runs
inputs/column_collapse_2d.yaml for several aspect ratios a = H0/L0 and
resolutions L0/N, measures each run with postproc/column_collapse.py
(runout at the front where the deposit is at least one cell thick, final
height at the symmetry wall), and writes a table (study.json, study.md) and
one figure (study.png) of runout and final height against the quasi-2D laws
of Lube et al. 2005.

  /usr/bin/python3 postproc/column_collapse_study.py OUTDIR
      [--aspect 0.5,1,2,4,6] [--cells 16,32,64] [--ranks 2] [--exe PATH]
      [--tag NAME] [--plot-only] -- [extra solver options, e.g. -held_pic false]

L0 = 0.1 m; the domain is sized from the law's runout (twice it, plus a
margin) and 1.25 H0; each run lasts 8 tau_c, tau_c = sqrt(H0/g).  Runs that
have reached t_end are not repeated, only re-measured (delete
the run's directory to redo it), so the study can be grown a few cases at a time.
Cost on one core of this machine (2D, ppc 2): a = 2 at L0/32 takes 75 s;
the cost grows as N^3 and about as a^1.5.
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
import column_collapse as cc  # noqa: E402

L0 = 0.1


def duration(a):
    """8 tau_c, tau_c = sqrt(H0/g)."""
    return 8 * np.sqrt(a * L0 / 9.81)


def case_options(a, n):
    """Solver options for aspect ratio a at L0/n."""
    H0 = a * L0
    runout, _ = cc.lube_law(a)
    quarter = L0 / 4  # whole cells at every L0/N with N a multiple of 4
    width = quarter * np.ceil((L0 * (1 + 2.0 * runout) + 0.05) / quarter - 1e-9)
    height = quarter * np.ceil((1.25 * H0 + 0.02) / quarter - 1e-9)
    t_end = duration(a)
    return ["-column_hi", "%g,%g" % (L0, H0), "-domain_hi", "%g,%g" % (width, height), "-dx", "%g" % (L0 / n),
            "-t_end", "%g" % t_end, "-output_dt", "%g" % (t_end / 16)]


def completed(out, t_end):
    """A run that reached t_end (an interrupted one also writes summary.json)."""
    try:
        with open(os.path.join(out, "summary.json")) as f:
            return json.load(f)["simulated_time"] >= t_end * (1 - 1e-5)  # t_end is passed with 6 digits
    except (OSError, ValueError, KeyError):
        return False


def run_case(args, a, n, extra):
    out = os.path.join(args.outdir, "a%g_L%d" % (a, n))
    res_file = os.path.join(out, "column_collapse.json")
    if not completed(out, duration(a)):
        if args.plot_only:
            return None
        cmd = ["mpiexec", "-n", str(args.ranks), args.exe, "-options_file_yaml", os.path.join(ROOT, "inputs", "column_collapse_2d.yaml"),
               "-output_dir", out] + case_options(a, n) + extra
        print("running a = %g at L0/%d: %s" % (a, n, " ".join(cmd)), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(HERE, "column_collapse.py"), out], check=True, stdout=subprocess.DEVNULL)  # cheap: always re-measured
    with open(res_file) as f:
        return json.load(f)


def table(rows):
    lines = ["| a | L0/dx | runout (L_inf-L0)/L0, 1 cell thick | at L0/16 thick | Lube | H_inf/L0 | Lube | H_inf/H0 | front arrest [tau_c] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (a, n), r in sorted(rows.items()):
        lines.append("| %g | %d | %.3f | %.3f | %.2f | %.3f | %.2f | %.3f | %.2f |" % (a, n, r["runout"], r["runout_thick"], r["runout_law"], r["height_over_L0"],
                                                                                      r["height_law_over_L0"], r["height_over_H0"], r["front_arrest_tau"]))
    return "\n".join(lines)


def plot(path, rows, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    aa = np.linspace(0.3, 8, 200)
    law = np.array([cc.lube_law(a) for a in aa])
    for ax, k, lab in ((ax1, 0, "runout (L_inf - L0) / L0"), (ax2, 1, "final height H_inf / L0")):
        ax.plot(aa, law[:, k], "k-", lw=1, label="Lube et al. 2005")
        if k == 0:
            ax.fill_between(aa, 0.7 * law[:, 0], 1.3 * law[:, 0], color="0.9", label="law +/- 30 %")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("aspect ratio a = H0 / L0")
        ax.set_ylabel(lab)
    for n, marker in ((16, "o"), (32, "s"), (64, "^"), (128, "v")):
        pts = sorted((a, r) for (a, m), r in rows.items() if m == n)
        if not pts:
            continue
        line = ax1.plot([a for a, _ in pts], [r["runout"] for _, r in pts], marker, ls="--", label="L0/%d, front 1 cell thick" % n)
        ax1.plot([a for a, _ in pts], [r["runout_thick"] for _, r in pts], marker, ls=":", mfc="none", color=line[0].get_color(), label="L0/%d, L0/16 thick" % n)
        ax2.plot([a for a, _ in pts], [r["height_over_L0"] for _, r in pts], marker, ls="--", label="L0/%d" % n)
    ax1.legend(fontsize=7)
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--aspect", default="0.5,1,2,4,6")
    ap.add_argument("--cells", default="16,32,64", help="resolutions L0/dx")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "granular-mpm"))
    ap.add_argument("--tag", default="", help="label for the figure (e.g. the extra options)")
    ap.add_argument("--plot-only", action="store_true", help="do not run, only collect what exists")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]  # solver options after --
    os.makedirs(args.outdir, exist_ok=True)
    rows = {}
    for n in [int(s) for s in args.cells.split(",")]:
        for a in [float(s) for s in args.aspect.split(",")]:
            r = run_case(args, a, n, args.extra)
            if r is not None:
                rows[(a, n)] = r
    md = table(rows)
    print(md)
    with open(os.path.join(args.outdir, "study.md"), "w") as f:
        f.write(md + "\n")
    with open(os.path.join(args.outdir, "study.json"), "w") as f:
        json.dump([dict(a=a, cells=n, **{k: v for k, v in r.items() if k != "front_history"}) for (a, n), r in sorted(rows.items())], f, indent=1)
    plot(os.path.join(args.outdir, "study.png"), rows, "2D column collapse, Drucker-Prager (plane-strain cone), floor mu = tan 30 %s" % args.tag)


if __name__ == "__main__":
    main()
