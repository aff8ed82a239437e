"""ParaView reads the solver's XDMF time series and renders the particles.

Runs a small 2D column collapse at 2 ranks (3 frames), then
`xvfb-run -a -s "... -noreset" pvpython postproc/render_frame.py OUTDIR --frame -1 --png ...`
and checks against the HDF5 frames (read with h5py):
  - ParaView lists every frame's time (HDF5 attribute time_dt[0]);
  - it reads as many points as the last frame has particles, with the same
    bounding box and the same velocity-magnitude range;
  - the PNG shows particles: enough pixels differ from the background in
    the data area, and they are not all one colour;
  - lean frames (-output_precision single -output_fields velocity): only
    id, position, velocity and connectivity, float32 and int32 with units
    attributes, the double run's values rounded, and ParaView reads every
    point with the same |v| range;
  - the objects' surfaces (objects.xmf, objects.h5 and frames/objects_*.h5):
    a moving disk's traced points lie on its circle at the frame's time
    (within h^2/r, h half a cell) and close up; a box's within half a cell
    of its edges; a 3D plate with a round hole has its area within 2 %;
    render_frame.py draws them;
  - a directory without particles.xmf gives a clear error.
pvpython and xvfb-run are part of the project's setup: if they are missing
the test fails (it does not skip).
"""
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

SCRIPT = os.path.join(mpmtest.SOURCE, "postproc", "render_frame.py")
W, H = 1024, 768
# render_frame.py keeps the data out of the top TITLE pixels (the title) and
# the right-hand BAR pixels (the colour bar): the image is checked in the rest.
TITLE, BAR = 32, 150


def tools():
    missing = [t for t in ("pvpython", "xvfb-run") if shutil.which(t) is None]
    if missing:
        print("FAILED: %s not found on PATH. The project's setup installs them (Debian packages python3-paraview: pvpython, "
              "and xvfb: xvfb-run); install them: apt-get install python3-paraview xvfb." % " and ".join(missing))
        sys.exit(1)
    return shutil.which("xvfb-run"), shutil.which("pvpython")


# Xvfb resets itself whenever its last client disconnects, and refuses
# connections while it does (measured: 18 of 500 quick close/reopen cycles
# failed).  ParaView opens and closes a display connection to probe the
# OpenGL capabilities and then opens another one, so under plain
# `xvfb-run -a` it aborts now and then with "bad X server connection"
# (exit 134).  -noreset avoids that (0 of 500).  Signs of X server trouble
# (not ParaView's): retried once on another display.
XVFB_SERVER_ARGS = "-screen 0 1280x1024x24 -noreset"
X_TROUBLE = ("bad X server connection", "Can't open display", "Cannot open display", "xvfb-run: error")


def render(xvfb, pvpython, args, timeout=180):
    """Run render_frame.py under xvfb-run; returns (CompletedProcess, seconds).
    Retried once on a different display if the X server failed."""
    for attempt in range(2):
        # -a searches for a free display from -n; start at a random one to
        # avoid racing other xvfb-run users for the default :99
        display = random.randint(100, 899)
        cmd = [xvfb, "-a", "-n", str(display), "-s", XVFB_SERVER_ARGS, pvpython, SCRIPT] + [str(a) for a in args]
        t0 = time.time()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            print("FAILED: timed out after %d s: %s" % (timeout, " ".join(cmd)))
            sys.stderr.write("%s\n%s\n" % (e.stdout or "", e.stderr or ""))
            sys.exit(1)
        secs = time.time() - t0
        if proc.returncode == 0 or not any(s in proc.stderr for s in X_TROUBLE) or attempt:
            return proc, secs
        print("  X server trouble (exit %d), retrying on another display: %s" % (proc.returncode, proc.stderr.strip().splitlines()[0][:200]))


def parse(stdout):
    """The 'render_frame: KEY values...' lines as {KEY: [str, ...]}."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"render_frame: (\w+) ?(.*)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2).split()
    return out


def load_png(path):
    """The image as an (H, W, 3) uint8 array."""
    try:
        from PIL import Image
        return np.asarray(Image.open(path).convert("RGB"))
    except ImportError:
        import matplotlib.image as mpimg
        img = mpimg.imread(path)
        img = img[..., :3]
        return (img * 255 + 0.5).astype(np.uint8) if img.dtype.kind == "f" else img.astype(np.uint8)


def main():
    xvfb, pvpython = tools()
    chk = mpmtest.Checks("XDMF time series read and rendered by ParaView (pvpython %s)" % pvpython)
    out = mpmtest.outdir("xdmf_paraview")
    t0 = time.time()
    mpmtest.run_deck("column_collapse_2d.yaml", 2, out, "-dx", "0.00625", "-t_end", "0.1", "-output_dt", "0.05")
    print("  solver run (2 ranks) %.1f s" % (time.time() - t0))

    files = mpmio.frame_files(out)
    frames = [mpmio.read_frame(f, []) for f in files]
    last = mpmio.read_frame(files[-1], ["position", "velocity"])
    n_last = last["position"].shape[0]
    h5_times = np.array([f["t"] for f in frames])
    chk.true("run wrote >= 3 frames and particles.xmf", len(files) >= 3 and os.path.isfile(os.path.join(out, "particles.xmf")),
             "(%d frames)" % len(files))

    png = os.path.join(out, "render_last.png")
    proc, secs = render(xvfb, pvpython, [out, "--frame", "-1", "--png", png, "--size", W, H])
    print("  render_frame.py took %.1f s (pvpython start-up, read, render, save)" % secs)
    sys.stdout.write("".join("    | " + l + "\n" for l in proc.stdout.splitlines()))
    chk.true("render_frame.py exit code 0", proc.returncode == 0, "(exit %d)" % proc.returncode)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:] + "\n")
    info = parse(proc.stdout)

    # --- the time series
    pv_times = np.array([float(v) for v in info.get("time_steps", [])])
    chk.true("ParaView lists one time step per HDF5 frame", len(pv_times) == len(h5_times),
             "(%d vs %d)" % (len(pv_times), len(h5_times)))
    if len(pv_times) == len(h5_times):
        # particles.xmf writes the times with 10 significant digits
        err = np.max(np.abs(pv_times - h5_times) - 1e-9 * np.abs(h5_times)) if len(h5_times) else 0.0
        chk.true("time steps = HDF5 time_dt[0] of every frame", err <= 1e-12, "(pv %s, h5 %s)" % (pv_times.tolist(), h5_times.tolist()))
    sel = info.get("frame", ["-", "nan"])
    chk.true("frame -1 selects the last frame", sel[0] == str(frames[-1]["frame"]), "(frame %s, last %d)" % (sel[0], frames[-1]["frame"]))
    chk.close("selected time = last frame's time", float(sel[2]) if len(sel) > 2 else float("nan"), frames[-1]["t"], rtol=1e-9, atol=1e-12)

    # --- the data of the last frame
    npts = int(info["points"][0]) if "points" in info else -1
    chk.true("points read by ParaView = particles in the last frame", npts == n_last, "(%d vs %d)" % (npts, n_last))
    ncells = int(info["cells"][0]) if "cells" in info else -1
    chk.true("one vertex cell per point (Polyvertex connectivity)", ncells == n_last, "(%d cells)" % ncells)
    if "bounds" in info:
        b = [float(v) for v in info["bounds"]]
        x = last["position"]
        ref = [x[:, 0].min(), x[:, 0].max(), x[:, 1].min(), x[:, 1].max(), x[:, 2].min(), x[:, 2].max()]
        chk.close("bounding box vs HDF5 positions (max |diff|)", max(abs(p - r) for p, r in zip(b, ref)), 0.0, atol=1e-12)
    else:
        chk.true("render_frame.py printed the bounds", False)
    vmag = np.linalg.norm(last["velocity"], axis=1)
    rng = info.get("range", [])
    ok = len(rng) == 3 and rng[0] == "velocity"
    chk.true("colour field is velocity (magnitude)", ok, " ".join(rng))
    chk.close("colour range min = min |v| in HDF5", float(rng[1]) if ok else float("nan"), vmag.min(), rtol=1e-9, atol=1e-12)
    chk.close("colour range max = max |v| in HDF5", float(rng[2]) if ok else float("nan"), vmag.max(), rtol=1e-9, atol=1e-12)

    # --- the image
    exists = os.path.isfile(png) and os.path.getsize(png) > 0
    chk.true("PNG exists and is non-empty", exists, png)
    if exists:
        img = load_png(png)
        chk.true("PNG is %dx%d" % (W, H), img.shape[:2] == (H, W), str(img.shape))
        border = np.concatenate([img[0, :], img[-1, :], img[:, 0], img[:, -1]]).reshape(-1, 3)
        colours, counts = np.unique(border, axis=0, return_counts=True)
        bg = colours[np.argmax(counts)]
        area = img[TITLE:, : W - BAR].reshape(-1, 3)
        fg = area[np.any(area != bg, axis=1)]
        frac = len(fg) / len(area)
        chk.within("fraction of data-area pixels that are not background", frac, 0.10, 0.95)
        if len(fg):
            cols, cnt = np.unique(fg // 16, axis=0, return_counts=True)  # 16 levels a channel
            chk.within("distinct particle colours (16 levels/channel)", len(cols), 8, 1e9)
            chk.within("share of the commonest particle colour", cnt.max() / len(fg), 0.0, 0.6)
            spread = float(np.max(fg.max(axis=0).astype(int) - fg.min(axis=0).astype(int)))
            chk.within("largest channel spread of particle colours", spread, 100, 255)

    # --- lean frames: single precision, two fields (-output_precision single
    # -output_fields velocity): float32 and int32 datasets with units, values
    # the double run's rounded, and ParaView reads them the same
    lean = mpmtest.outdir("xdmf_paraview_single")
    mpmtest.run_deck("column_collapse_2d.yaml", 2, lean, "-dx", "0.00625", "-t_end", "0.1", "-output_dt", "0.05", "-output_precision", "single", "-output_fields", "velocity")
    import h5py
    with h5py.File(mpmio.frame_files(lean)[-1], "r") as f:
        names = sorted(f.keys())
        kinds = {k: f[k].dtype.str for k in names}
        units = {k: f[k].attrs.get("units", b"").decode() if isinstance(f[k].attrs.get("units", b""), bytes) else f[k].attrs.get("units", "") for k in names}
        single = mpmio.sorted_by_id({k: f[k][()] for k in names})
    chk.true("lean frame: only id, position, velocity (and connectivity)", names == ["connectivity", "id", "position", "velocity"], str(names))
    chk.true("lean frame: float32 position and velocity, int32 connectivity", kinds.get("position") == "<f4" and kinds.get("velocity") == "<f4" and kinds.get("connectivity") == "<i4", str(kinds))
    chk.true("lean frame: units attributes (m, m/s)", units.get("position") == "m" and units.get("velocity") == "m/s", str(units))
    full = mpmio.sorted_by_id(mpmio.read_frame(files[-1], ["id", "position", "velocity"]))
    chk.true("lean frame: values are the double run's rounded to float32", np.array_equal(single["velocity"], full["velocity"].astype(np.float32)) and np.array_equal(single["position"], full["position"].astype(np.float32)))
    proc, _ = render(xvfb, pvpython, [lean, "--frame", "-1", "--png", os.path.join(lean, "render_last.png"), "--size", W, H])
    info = parse(proc.stdout)
    rng = info.get("range", [])
    vm = np.linalg.norm(single["velocity"].astype(np.float64), axis=1)
    chk.true("lean frame: ParaView reads every point and cell", proc.returncode == 0 and info.get("points", ["-1"])[0] == str(n_last) and info.get("cells", ["-1"])[0] == str(n_last),
             "(exit %d, %s points)" % (proc.returncode, info.get("points")))
    chk.close("lean frame: ParaView's |v| max = the float32 data's", float(rng[2]) if len(rng) == 3 else float("nan"), vm.max(), rtol=1e-6)

    # --- the objects' surfaces (objects.xmf): a post that stands still
    # (objects.h5, once) and a disk moving at -0.5 m/s (frames/objects_*.h5),
    # traced at half a cell; ParaView reads them at every frame and
    # render_frame.py draws them
    obj = mpmtest.outdir("xdmf_paraview_objects")
    R, C0, V = 0.03, (0.5, 0.1), -0.5
    mpmtest.run_deck("column_collapse_2d.yaml", 2, obj, "-dx", "0.00625", "-t_end", "0.1", "-output_dt", "0.05", "-objects", "post,disk",
                     "-post_shape", "box", "-post_lo", "0.3,0", "-post_hi", "0.32,0.05", "-disk_shape", "sphere", "-disk_center", "%g,%g" % C0,
                     "-disk_radius", R, "-disk_velocity", "%g,0" % V, "-disk_mode", "slip")
    h = 0.5 * 0.00625
    with h5py.File(os.path.join(obj, "objects.h5"), "r") as f:
        still = sorted(f.keys())
        post = f["post/points"][()]
    with h5py.File(os.path.join(obj, "frames", "objects_00002.h5"), "r") as f:
        moving = sorted(f.keys())
        disk, dconn = f["disk/points"][()], f["disk/connectivity"][()]
    chk.true("objects.h5 holds the post, frames/objects_00002.h5 the moving disk", still == ["post"] and moving == ["disk"], "%s %s" % (still, moving))
    centre = np.array([C0[0] + V * 0.1, C0[1], 0.0])
    chk.close("disk at t = 0.1 s: largest |distance to its centre - r| of the traced points [m]", np.abs(np.linalg.norm(disk - centre, axis=1) - R).max(), 0.0, atol=h * h / R)
    ends = [tuple(np.round(p / 1e-9).astype(np.int64)) for p in disk[dconn.ravel()]]
    counts = np.unique(np.array(ends), axis=0, return_counts=True)[1]
    chk.true("disk: a closed polyline (every end shared by two segments)", len(counts) > 0 and np.all(counts == 2), "ends used %s times" % np.unique(counts))
    inside = np.minimum(np.minimum(post[:, 0] - 0.3, 0.32 - post[:, 0]), np.minimum(post[:, 1] - 0.0, 0.05 - post[:, 1]))
    chk.close("post: largest distance of the traced points from the box's edges [m] (corners cut within half a cell)", np.abs(inside).max(), 0.0, atol=h)
    xmf = open(os.path.join(obj, "objects.xmf")).read()
    chk.true("objects.xmf: both objects in each of the 3 frames", xmf.count('<Grid Name="post"') == 3 and xmf.count('<Grid Name="disk"') == 3)
    proc, _ = render(xvfb, pvpython, [obj, "--frame", "-1", "--png", os.path.join(obj, "render_last.png"), "--size", W, H])
    chk.true("render_frame.py draws the 2 traced objects", proc.returncode == 0 and parse(proc.stdout).get("objects") == ["2"], "(exit %d: %s)" % (proc.returncode, proc.stderr.strip()[-300:]))
    # 3D: the silo's plate minus its round hole (CSG), clipped to the domain: its area
    s3 = mpmtest.outdir("xdmf_paraview_objects_3d")
    mpmtest.run_deck("silo_3d.yaml", 1, s3, "-max_steps", "1")
    with h5py.File(os.path.join(s3, "objects.h5"), "r") as f:
        tri = f["bottom/points"][()].reshape(-1, 3, 3)
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1).sum()
    chk.close("3D plate with a round hole: traced area / 2 (0.12^2 - pi 0.02^2) + 2 pi 0.02 x 0.02", area / (2 * (0.12 ** 2 - np.pi * 0.02 ** 2) + 2 * np.pi * 0.02 * 0.02), 1.0, rtol=0.02)

    # --- a directory without particles.xmf
    empty = mpmtest.outdir("xdmf_paraview_empty")
    os.makedirs(empty)
    proc, _ = render(xvfb, pvpython, [empty])
    chk.true("no particles.xmf: exit code != 0 and a clear message", proc.returncode != 0 and "no particles.xmf" in proc.stderr,
             "(exit %d: %s)" % (proc.returncode, proc.stderr.strip()[-200:]))
    chk.done()


if __name__ == "__main__":
    main()
