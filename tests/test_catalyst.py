"""In-situ visualization with ParaView Catalyst (docs/catalyst.md).

Runs the 2D column collapse (dx 0.00625, 2048 particles, slabs along y so
both ranks hold particles) at 2 ranks for 60 steps under
`xvfb-run -a -s "-screen 0 1280x1024x24 -noreset"` with the shipped
pipelines postproc/catalyst/particles_images.py and particles_extract.py,
-catalyst_interval 20, and checks:
  - the run reports 3 co-processing calls and their mean time;
  - velocity_<step>.png and pressure_<step>.png exist for steps 20, 40, 60,
    are 1024x768 and show the particles: enough coloured pixels (the
    outline, text and background are grey), many distinct colours, and the
    pressure image colours the same particles differently from the velocity
    image;
  - particles_<step>.pvtp lists one piece per rank, and the pieces' headers
    hold 2048 points and 2048 vertex cells in all;
  - the step-60 extract, read with ParaView's VTK, equals the HDF5 frame
    the run wrote at step 60 (ids, positions, velocities, pressure, material);
  - a sand-water run (verification/mixture_free_fall.yaml, 10 steps) with
    particles_extract.py and water_extract.py: the sand's extract (channel
    "particles") and the water's (channel "particles_water") each equal
    their species' HDF5 frame;
  - the collision objects (channel "objects", objects_extract.py): a moving
    disk traced as a circle of length 2 pi r (0.5 %), moved by v dt between
    the calls (1e-9 m), and a post standing still;
and, without a display,
  - -catalyst_script naming a missing file: exit code 1 and a message naming
    -catalyst_script and the file;
  - a script without its '# script-version: 2' line: exit code 1, clear message;
  - a run without -catalyst_script makes no catalyst/ directory, and the
    executable does not link ParaView (the adaptor module is opened only
    when a script is named).
In a build without ParaView (MPM_CATALYST=OFF) only the refusal of
-catalyst_script (exit code 1) and the last check run.
xvfb-run is part of the project's setup: if it is missing the test fails.
"""
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import time

import numpy as np

import mpmtest
from mpmtest import mpmio

PIPELINES = [os.path.join(mpmtest.SOURCE, "postproc", "catalyst", s) for s in ("particles_images.py", "particles_extract.py")]
DECK = ["-dx", "0.00625", "-slab_axis", "y", "-output_dt", "1"]
STEPS, INTERVAL, RANKS = 60, 20, 2
W, H = 1024, 768
TOP, BAR = 32, 150  # particles_images.py keeps the title strip and the colour bar strip free of data

# Xvfb resets when its last client disconnects and refuses connections
# meanwhile; ParaView probes OpenGL on one connection and then opens another,
# so plain `xvfb-run -a` makes it abort now and then.  -noreset avoids that;
# signs of X server trouble are retried once on another display (as in
# test_xdmf_paraview.py).
XVFB_SERVER_ARGS = "-screen 0 1280x1024x24 -noreset"
X_TROUBLE = ("bad X server connection", "Can't open display", "Cannot open display", "xvfb-run: error")


def solver(out, extra, xvfb=None, timeout=600, deck=("column_collapse_2d.yaml", DECK), steps=STEPS):
    """Run the column (or deck = (name, its options)) at RANKS ranks (under
    xvfb-run if given); returns the CompletedProcess.  Retried once on
    another display on X server trouble."""
    env = dict(os.environ, **mpmtest.MPI_ENV)
    args = ["mpiexec", "-n", str(RANKS), mpmtest.EXE, "-options_file_yaml", mpmtest.deck(deck[0]),
            "-output_dir", out, "-max_steps", str(steps)] + list(deck[1]) + extra
    for attempt in range(2):
        shutil.rmtree(out, ignore_errors=True)
        # -a searches from -n on: start at a random display, away from other xvfb-run users
        cmd = ([xvfb, "-a", "-n", str(random.randint(100, 899)), "-s", XVFB_SERVER_ARGS] if xvfb else []) + args
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            print("FAILED: timed out after %d s: %s" % (timeout, " ".join(cmd)))
            sys.stderr.write("%s\n%s\n" % (e.stdout or "", e.stderr or ""))
            sys.exit(1)
        trouble = xvfb and proc.returncode != 0 and any(s in proc.stdout + proc.stderr for s in X_TROUBLE)
        if not trouble or attempt:
            return proc
        print("  X server trouble (exit %d), retrying on another display" % proc.returncode)


def load_png(path):
    """The image as an (H, W, 3) uint8 array."""
    try:
        from PIL import Image
        return np.asarray(Image.open(path).convert("RGB"))
    except ImportError:
        import matplotlib.image as mpimg
        img = mpimg.imread(path)[..., :3]
        return (img * 255 + 0.5).astype(np.uint8) if img.dtype.kind == "f" else img.astype(np.uint8)


def particle_pixels(img):
    """Mask of the coloured pixels of the data area: the colour map (Turbo)
    is saturated, while background, outline and text are grey."""
    area = img[TOP:, : W - BAR].astype(int)
    return (area.max(axis=2) - area.min(axis=2)) > 24, area


def check_images(chk, cat, step):
    masks = {}
    for field in ("velocity", "pressure"):
        png = os.path.join(cat, "%s_%06d.png" % (field, step))
        ok = os.path.isfile(png) and os.path.getsize(png) > 0
        chk.true("%s exists, non-empty" % os.path.basename(png), ok)
        if not ok:
            return
        img = load_png(png)
        chk.true("%s is %dx%d" % (os.path.basename(png), W, H), img.shape[:2] == (H, W), str(img.shape))
        if img.shape[:2] != (H, W):
            return
        mask, area = particle_pixels(img)
        frac = mask.mean()
        # the column covers 6 % of the data area (0.1 x 0.2 m of the drawn
        # 0.6 x 0.25 m domain), half of it painted (3-pixel points 4.3 pixels apart)
        chk.within("%s: fraction of particle pixels" % field, frac, 0.015, 0.5)
        cols = np.unique(area[mask] // 16, axis=0)  # 16 levels a channel
        chk.within("%s: distinct particle colours (16 levels/channel)" % field, len(cols), 8, 1e9)
        masks[field] = (mask, area)
    (mv, av), (mp, ap) = masks["velocity"], masks["pressure"]
    both = mv & mp
    chk.within("same particle pixels in both images (overlap / union)", both.sum() / max((mv | mp).sum(), 1), 0.8, 1.0)
    differ = np.any(np.abs(av[both] - ap[both]) > 48, axis=1).mean() if both.any() else 0.0
    chk.within("share of particle pixels coloured differently", differ, 0.2, 1.0)


def piece_counts(pvtp):
    """(pieces, points, verts) summed over the pieces a .pvtp lists, from
    their XML headers."""
    with open(pvtp) as f:
        sources = re.findall(r'<Piece Source="([^"]+)"', f.read())
    npts = nverts = 0
    for src in sources:
        with open(os.path.join(os.path.dirname(pvtp), src), "rb") as f:
            head = f.read(4096).decode("latin-1")
        m = re.search(r'NumberOfPoints="\s*(\d+)\s*"\s+NumberOfVerts="\s*(\d+)\s*"', head)
        npts += int(m.group(1)) if m else -10**9
        nverts += int(m.group(2)) if m else -10**9
    return len(sources), npts, nverts


def read_pvtp(pvtp):
    """The particles of one extract, read with ParaView's VTK."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPPolyDataReader
    r = vtkXMLPPolyDataReader()
    r.SetFileName(pvtp)
    r.Update()
    pd = r.GetOutput()
    out = {"position": vtk_to_numpy(pd.GetPoints().GetData())}
    for name in ("velocity", "pressure", "id", "material"):
        out[name] = vtk_to_numpy(pd.GetPointData().GetArray(name))
    return out


def check_extract_content(chk, out, pvtp, step=STEPS, species=None):
    """The extract of the last step against the run's own last HDF5 frame
    (of one species)."""
    last = mpmio.read_frame(mpmio.frame_files(out)[-1], ["id", "position", "velocity", "pressure", "material"], species=species)
    chk.true("last HDF5 frame is step %d" % step, last["step"] == step, "(step %d)" % last["step"])
    ref = mpmio.sorted_by_id(last)
    got = read_pvtp(pvtp)
    got = {k: v[np.argsort(got["id"], kind="stable")] for k, v in got.items()}
    same = len(got["id"]) == len(ref["id"]) and np.array_equal(got["id"], ref["id"])
    what = os.path.basename(pvtp)
    chk.true("%s ids = HDF5 ids (each once)" % what, same, "(%d vs %d)" % (len(got["id"]), len(ref["id"])))
    if not same:
        return
    for name in ("position", "velocity", "pressure"):
        chk.close("%s: max |%s(extract) - %s(HDF5)|" % (what, name, name), float(np.max(np.abs(got[name] - ref[name]))), 0.0, atol=0.0)
    chk.true("%s: material = HDF5 material" % what, np.array_equal(got["material"], ref["material"]))


def check_mixture(chk, xvfb):
    """Two species (-integrator mixture): the sand on channel "particles",
    the water on "particles_water" (postproc/catalyst/water_extract.py);
    each extract equals that species' HDF5 frame."""
    out = mpmtest.outdir("catalyst_mixture")
    scripts = [os.path.join(mpmtest.SOURCE, "postproc", "catalyst", s) for s in ("particles_extract.py", "water_extract.py")]
    proc = solver(out, ["-catalyst_script", ",".join(scripts), "-catalyst_interval", "10"], xvfb=xvfb,
                  deck=("verification/mixture_free_fall.yaml", ["-output_dt", "1"]), steps=10)
    ok = proc.returncode == 0
    chk.true("mixture run with the sand and water extracts: exit 0", ok, why(ok, proc))
    if not ok:
        return
    cat = os.path.join(out, "catalyst")
    for name, species in (("particles", None), ("water", "water")):
        pvtp = os.path.join(cat, "%s_%06d.pvtp" % (name, 10))
        chk.true("%s exists" % os.path.basename(pvtp), os.path.isfile(pvtp))
        if os.path.isfile(pvtp):
            check_extract_content(chk, out, pvtp, step=10, species=species)


def check_objects(chk, xvfb):
    """The collision objects on channel "objects"
    (postproc/catalyst/objects_extract.py): a disk of radius 2 cm moving at
    0.5 m/s and a post standing still beside the column.  The disk's traced
    circle is 2 pi r long within 0.5 %, its points within 2 % of r from its
    centre (a trace on samples half a cell apart), and between the two calls it moves by 0.5 m/s times the time
    between them (1e-9 m: the same trace, shifted); the post is there at
    both calls."""
    out = mpmtest.outdir("catalyst_objects")
    scripts = [os.path.join(mpmtest.SOURCE, "postproc", "catalyst", s) for s in ("particles_extract.py", "objects_extract.py")]
    objs = ["-objects", "ball,post", "-ball_shape", "sphere", "-ball_center", "0.3,0.05", "-ball_radius", "0.02", "-ball_velocity", "0.5,0",
            "-post_shape", "box", "-post_lo", "0.4,0", "-post_hi", "0.42,0.05", "-history_interval", "1"]
    proc = solver(out, ["-catalyst_script", ",".join(scripts), "-catalyst_interval", "20"] + objs, xvfb=xvfb, steps=40)
    ok = proc.returncode == 0
    chk.true("run with the objects' extract: exit 0", ok, why(ok, proc))
    if not ok:
        return
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPPolyDataReader
    centres = []
    for step in (20, 40):
        pvtp = os.path.join(out, "catalyst", "objects_%06d.pvtp" % step)
        chk.true("%s exists" % os.path.basename(pvtp), os.path.isfile(pvtp))
        if not os.path.isfile(pvtp):
            return
        r = vtkXMLPPolyDataReader()
        r.SetFileName(pvtp)
        r.Update()
        pd = r.GetOutput()
        seg = vtk_to_numpy(pd.GetPoints().GetData()).reshape(-1, 2, 3)
        obj = vtk_to_numpy(pd.GetCellData().GetArray("object"))
        chk.true("objects_%06d: line cells, one per segment, on both objects" % step, pd.GetNumberOfLines() == len(seg) == len(obj) and set(obj) == {0, 1},
                 "(%d lines, objects %s)" % (pd.GetNumberOfLines(), sorted(set(obj))))
        disk = seg[obj == 0]
        c = disk.reshape(-1, 3).mean(axis=0)
        chk.close("objects_%06d: the disk's circle length / (2 pi r)" % step, np.linalg.norm(disk[:, 1] - disk[:, 0], axis=1).sum() / (2 * np.pi * 0.02), 1.0, rtol=5e-3)
        chk.close("objects_%06d: max |distance from the centre - r| / r" % step, np.abs(np.linalg.norm(disk.reshape(-1, 3) - c, axis=1) - 0.02).max() / 0.02, 0.0, atol=0.02)
        centres.append(c)
    h = mpmio.history(out)
    t20, t40 = h["t"][list(h["step"]).index(20)], h["t"][list(h["step"]).index(40)]
    chk.close("the disk moved between the calls by 0.5 m/s (t40 - t20) [m]", centres[1][0] - centres[0][0], 0.5 * (t40 - t20), atol=1e-9)


def why(ok, proc):
    """The end of a failed run's output, for the check's line."""
    return "" if ok else "(exit %d: %s)" % (proc.returncode, (proc.stdout + proc.stderr).strip()[-400:])


def check_refusals(chk):
    """Refused scripts.  Returns whether this build has Catalyst: a build
    without it refuses any -catalyst_script naming ParaView."""
    out = mpmtest.outdir("catalyst_missing_script")
    missing = os.path.join(out, "no_such_pipeline.py")
    proc = solver(out, ["-catalyst_script", missing])
    err = proc.stdout + proc.stderr
    if "no ParaView Catalyst" in err:
        chk.true("no-Catalyst build refuses -catalyst_script: exit 1", proc.returncode == 1, why(proc.returncode == 1, proc))
        return False
    chk.true("missing script: exit code 1", proc.returncode == 1, why(proc.returncode == 1, proc))
    ok = "-catalyst_script %s: no such file" % missing in err
    chk.true("missing script: message names -catalyst_script and the file", ok, why(ok, proc))
    out = mpmtest.outdir("catalyst_unversioned_script")
    os.makedirs(out)
    script = os.path.join(out, "unversioned.py")  # a version-2 script without its marker line
    with open(script, "w") as f:
        f.write("from paraview.simple import *\nparticles = TrivialProducer(registrationName='particles')\n"
                "def catalyst_execute(info):\n    pass\n")
    proc = solver(os.path.join(out, "run"), ["-catalyst_script", script])
    ok = proc.returncode == 1 and "needs a '# script-version: 2' comment line" in proc.stdout + proc.stderr
    chk.true("script without '# script-version: 2': exit 1, clear message", ok, why(ok, proc))
    return True


def check_off(chk):
    out = mpmtest.outdir("catalyst_off")
    proc = solver(out, [])
    chk.true("run without -catalyst_script: exit 0", proc.returncode == 0, why(proc.returncode == 0, proc))
    chk.true("run without -catalyst_script: no catalyst/ directory", not os.path.exists(os.path.join(out, "catalyst")))
    chk.true("run without -catalyst_script: no catalyst timing line", "catalyst:" not in proc.stdout)
    libs = subprocess.run(["ldd", mpmtest.EXE], capture_output=True, text=True).stdout
    pv = [l.split()[0] for l in libs.splitlines() if re.search(r"vtk|paraview|libpython", l)]
    chk.true("the executable does not load ParaView, VTK or Python", libs and not pv, ", ".join(pv[:3]))


def main():
    chk = mpmtest.Checks("ParaView Catalyst in situ: images and particle extracts at %d ranks" % RANKS)
    with_catalyst = check_refusals(chk)
    check_off(chk)
    if not with_catalyst:
        print("  this build has no Catalyst (MPM_CATALYST=OFF): only the refusal was checked")
        chk.done()
        return
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        print("FAILED: xvfb-run not found on PATH; the project's setup installs it (Debian package xvfb).")
        sys.exit(1)

    out = mpmtest.outdir("catalyst")
    t0 = time.time()
    proc = solver(out, ["-catalyst_script", ",".join(PIPELINES), "-catalyst_interval", str(INTERVAL)], xvfb=xvfb)
    print("  solver run with Catalyst (%d ranks, xvfb-run) %.1f s" % (RANKS, time.time() - t0))
    chk.true("run with both pipelines: exit 0", proc.returncode == 0, "(exit %d)" % proc.returncode)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + "\n" + proc.stderr[-5000:] + "\n")
        chk.done()
    m = re.search(r"catalyst: (\d+) co-processing calls .*mean ([0-9.eE+-]+) s per call", proc.stdout)
    ncalls = STEPS // INTERVAL
    chk.true("reports %d co-processing calls and the mean time" % ncalls, bool(m) and int(m.group(1)) == ncalls, m.group(0) if m else "")
    n_global = int(mpmio.summary(out)["particles"])  # no inflow, no deletion: constant

    cat = os.path.join(out, "catalyst")
    steps = list(range(INTERVAL, STEPS + 1, INTERVAL))
    listed = sorted(os.path.basename(p) for p in glob.glob(os.path.join(cat, "*.*")))
    expect = sorted("%s_%06d.%s" % (f, s, e) for s in steps for f, e in (("velocity", "png"), ("pressure", "png"), ("particles", "pvtp")))
    chk.true("catalyst/ holds 2 PNGs and 1 .pvtp per call, no other file", listed == expect, "" if listed == expect else str(listed))
    for s in steps:
        check_images(chk, cat, s)
        pvtp = os.path.join(cat, "particles_%06d.pvtp" % s)
        if not os.path.isfile(pvtp):
            chk.true("%s exists" % os.path.basename(pvtp), False)
            continue
        pieces, npts, nverts = piece_counts(pvtp)
        chk.true("%s: one piece per rank" % os.path.basename(pvtp), pieces == RANKS, "(%d pieces)" % pieces)
        chk.true("%s: %d points, one vertex each" % (os.path.basename(pvtp), n_global), npts == n_global and nverts == n_global,
                 "(%d points, %d verts)" % (npts, nverts))
    check_extract_content(chk, out, os.path.join(cat, "particles_%06d.pvtp" % STEPS))
    check_mixture(chk, xvfb)
    check_objects(chk, xvfb)
    chk.done()


if __name__ == "__main__":
    main()
