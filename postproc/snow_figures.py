"""Run the four 2D snow decks and render their pictures for docs/.

    python3 postproc/snow_figures.py OUTDIR [--ranks N] [--img DIR]

Runs inputs/snowball_wall_2d.yaml, snowball_drop_2d.yaml,
snow_avalanche_2d.yaml and snow_compaction_2d.yaml into OUTDIR/<deck>
(a run that finished is kept, not repeated), renders two frames of each
coloured by the plastic volume ratio J_P with ParaView
(postproc/render_frame.py under xvfb-run) into DIR (default docs/img) as
<deck>_<frame>.png, and prints one line of numbers per deck: steps,
mean step, conjugate-residual iterations per step (mean over the run), the
fraction of particles with J_P > 1.02 (stretched open: cracks) and
J_P < 0.98 (compacted) at the end, and the largest force on an object or
wall.  docs/validation.md, "Snow", shows the pictures and the table.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import mpmio  # noqa: E402

DECKS = {  # deck: the frames to render
    "snowball_wall_2d": (4, 12),
    "snowball_drop_2d": (3, 15),
    "snow_avalanche_2d": (16, 30),
    "snow_compaction_2d": (10, 20),
}


def run(deck, out, ranks, exe):
    if os.path.exists(os.path.join(out, "summary.json")):
        return
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run(["mpiexec", "-n", str(ranks), exe, "-options_file_yaml", os.path.join(ROOT, "inputs", deck + ".yaml"), "-output_dir", out],
                   env=env, check=True, capture_output=True)


def render(out, frame, png):
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24 -noreset", "pvpython", os.path.join(HERE, "render_frame.py"), out, "--frame", str(frame),
           "--color", "plastic_volume_ratio", "--png", png, "--size", "900", "450"]
    subprocess.run(cmd, check=True, capture_output=True)


def numbers(out):
    h, s = mpmio.history(out), mpmio.summary(out)
    jp = mpmio.read_frame(mpmio.frame_files(out)[-1])["plastic_volume_ratio"]
    forces = [k for k in h if k.endswith("_fx") or k.endswith("_fy")]
    fmax = max(np.abs(h[k]).max() for k in forces) if forces else 0.0
    return (s["steps"], s["simulated_time"] / s["steps"], s["integrator_ksp_its"] / s["steps"], (jp > 1.02).mean(), (jp < 0.98).mean(), fmax)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--img", default=os.path.join(ROOT, "docs", "img"))
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "granular-mpm"))
    ap.add_argument("--no-render", action="store_true", help="numbers only (no ParaView)")
    a = ap.parse_args()
    print("%-20s %6s %10s %8s %9s %9s %10s" % ("deck", "steps", "mean dt", "CR/step", "J_P>1.02", "J_P<0.98", "max F [N]"))
    for deck, frames in DECKS.items():
        out = os.path.join(a.outdir, deck)
        run(deck, out, a.ranks, a.exe)
        if not a.no_render:
            for f in frames:
                render(out, f, os.path.join(a.img, "%s_%d.png" % (deck, f)))
        print("%-20s %6d %10.3g %8.1f %9.3f %9.3f %10.4g" % ((deck,) + numbers(out)))


if __name__ == "__main__":
    main()
