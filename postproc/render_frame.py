"""Render one frame of a granular-mpm run with ParaView (pvpython).

    xvfb-run -a pvpython postproc/render_frame.py OUTDIR [--frame K|-1]
        [--color velocity|pressure|...] [--png FILE] [--size W H]

Opens OUTDIR/particles.xmf (the XDMF 2.0 time series the solver writes
beside frames/frame_NNNNN.h5) by its absolute path with ParaView's XDMF3
reader (--reader xdmf2 for the legacy XDMFReader), selects the time step of
frame K (the frame number NNNNN; -1, the default, is the last frame, other
negative values count from the end), renders the particles as points
coloured by a point field (velocity magnitude by default; vectors are shown
by magnitude, or by one component with e.g. --color velocity:y) with a
colour bar on the right, fits the camera to the data (2D runs, z = 0, are
viewed along -z with a parallel projection) and saves a PNG (default
OUTDIR/frame_K_<field>.png).

It prints, one item a line (the tests parse these):

    render_frame: file /abs/OUTDIR/particles.xmf
    render_frame: time_steps t0 t1 ...      (all the time steps ParaView lists)
    render_frame: frame K time t
    render_frame: points N                  (points read for that time step)
    render_frame: cells N                   (vertex cells; 0 would draw nothing)
    render_frame: bounds xmin xmax ymin ymax zmin zmax
    render_frame: range FIELD lo hi         (data range of the colour field)
    render_frame: png FILE WxH render S s

Rendering needs an X server (ParaView here is X11-only): run under
`xvfb-run -a`.  Plain xvfb-run makes ParaView abort now and then with
"bad X server connection" (exit 134): Xvfb resets when its last client
disconnects and ParaView reconnects right after its OpenGL probe.  Use
`xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" pvpython ...` to avoid it.  Exit status 2 for a bad directory, frame or field, or
for data ParaView cannot draw.
"""
import argparse
import math
import os
import re
import sys
import time
import xml.etree.ElementTree as ET


def fail(msg):
    sys.stderr.write("render_frame: error: %s\n" % msg)
    sys.exit(2)


# SI units of the frame fields (the datasets' "units" attribute); 2D mass
# and volume are per unit depth
UNITS = {"velocity": "m/s", "position": "m", "pressure": "Pa", "dev_stress_norm": "Pa", "radius": "m"}


def units(field, is2d):
    if field == "mass":
        return "kg/m" if is2d else "kg"
    if field == "volume":
        return "m^2" if is2d else "m^3"
    return UNITS.get(field, "-")


def run_options(outdir):
    """The run's options (run.json) as a dict of strings; {} without one."""
    import json
    try:
        text = json.load(open(os.path.join(outdir, "run.json")))["options"]
    except (OSError, ValueError, KeyError):
        return {}
    opts, key = {}, None
    for tok in text.split():
        if tok.startswith("-") and not tok[1:2].isdigit() and tok[1:2] != ".":
            key = tok[1:]
            opts[key] = ""
        elif key:
            opts[key] = tok
    return opts


def vec(opts, key):
    try:
        return [float(v) for v in opts[key].split(",")]
    except (KeyError, ValueError):
        return None


def traced_objects(pv, view, outdir, t, is2d):
    """The objects as the solver traced them (objects.xmf: every shape,
    moving ones where they are at time t), dark red: lines in 2D, a
    translucent surface in 3D.  Returns the number of objects drawn, or None
    when the run wrote no objects.xmf (runs before 2026-11-27)."""
    xmf = os.path.join(outdir, "objects.xmf")
    if not os.path.exists(xmf):
        return None
    text = open(xmf).read()
    frames = re.findall(r'<Grid Name="frame_\d+" GridType="Collection" CollectionType="Spatial">\s*<Time Value="([^"]+)"/>(.*?)\n    </Grid>', text, re.S)
    if not frames:
        return 0
    k = min(range(len(frames)), key=lambda i: abs(float(frames[i][0]) - t))
    names = re.findall(r'<Grid Name="([^"]+)" GridType="Uniform">', frames[k][1])
    if names:
        reader = pv.XDMFReader(FileNames=[xmf])
        reader.UpdatePipeline(float(frames[k][0]))
        d = pv.Show(reader, view)
        d.AmbientColor = d.DiffuseColor = [0.6, 0.0, 0.0]
        d.LineWidth = 2.0
        if not is2d:
            d.Opacity = 0.5
    return len(names)


def scene_outlines(pv, view, opts, is2d, outdir=None, t=0.0):
    """The domain's outline (grey) and the collision objects (dark red): as
    the solver traced them (objects.xmf) when the run wrote it, else the
    boxes, spheres, cylinders and polygons that stand still, from the run's
    options; the camera still fits the particles.  Returns the number of
    objects drawn."""
    import math
    shown = []

    def line(points, color, closed=True):
        src = pv.PolyLineSource(Points=[c for p in points for c in (list(p) + [0.0] * (3 - len(p)))], Closed=1 if closed else 0)
        d = pv.Show(src, view)
        d.AmbientColor = d.DiffuseColor = color
        d.LineWidth = 2.0
        shown.append(src)

    lo, hi = vec(opts, "domain_lo"), vec(opts, "domain_hi")
    if lo and hi:
        if is2d:
            line([(lo[0], lo[1]), (hi[0], lo[1]), (hi[0], hi[1]), (lo[0], hi[1])], [0.6, 0.6, 0.6])
        else:
            box = pv.Box(XLength=hi[0] - lo[0], YLength=hi[1] - lo[1], ZLength=hi[2] - lo[2], Center=[0.5 * (a + b) for a, b in zip(lo, hi)])
            d = pv.Show(box, view)
            d.SetRepresentationType("Outline")
            d.AmbientColor = d.DiffuseColor = [0.6, 0.6, 0.6]
    traced = traced_objects(pv, view, outdir, t, is2d) if outdir else None
    if traced is not None:
        return traced
    drawn, red = 0, [0.6, 0.0, 0.0]
    for name in [n for n in opts.get("objects", "").split(",") if n]:
        shape, p = opts.get(name + "_shape", "box"), name + "_"
        if opts.get(p + "rotation") or opts.get(p + "velocity") or opts.get(p + "angular_velocity"):
            continue  # drawn where it starts only if it stays: skip moving or turned objects
        if shape == "box" and vec(opts, p + "lo") and vec(opts, p + "hi"):
            a, b = vec(opts, p + "lo"), vec(opts, p + "hi")
            if is2d:
                line([(a[0], a[1]), (b[0], a[1]), (b[0], b[1]), (a[0], b[1])], red)
            else:
                box = pv.Box(XLength=b[0] - a[0], YLength=b[1] - a[1], ZLength=b[2] - a[2], Center=[0.5 * (x + y) for x, y in zip(a, b)])
                d = pv.Show(box, view)
                d.SetRepresentationType("Outline")
                d.AmbientColor = d.DiffuseColor = red
            drawn += 1
        elif shape in ("sphere", "cylinder") and vec(opts, p + "center") and opts.get(p + "radius"):
            c, r = vec(opts, p + "center"), float(opts[p + "radius"])
            if is2d:
                line([(c[0] + r * math.cos(2 * math.pi * k / 96), c[1] + r * math.sin(2 * math.pi * k / 96)) for k in range(96)], red)
            else:
                sph = pv.Sphere(Center=c, Radius=r, ThetaResolution=24, PhiResolution=12)
                d = pv.Show(sph, view)
                d.SetRepresentationType("Wireframe")
                d.AmbientColor = d.DiffuseColor = red
            drawn += 1
        elif shape == "polygon" and is2d and vec(opts, p + "vertices"):
            v, c = vec(opts, p + "vertices"), vec(opts, p + "center") or [0.0, 0.0]
            line([(v[2 * k] + c[0], v[2 * k + 1] + c[1]) for k in range(len(v) // 2)], red)
            drawn += 1
    return drawn


def parse_args():
    p = argparse.ArgumentParser(
        prog="render_frame.py",
        description="Render one frame of a granular-mpm output directory (particles.xmf) to a PNG with ParaView. "
        "Run as: xvfb-run -a pvpython render_frame.py OUTDIR [options]")
    p.add_argument("outdir", help="the run's output directory (holds particles.xmf and frames/)")
    p.add_argument("--frame", type=int, default=-1,
                   help="frame number K (frames/frame_K.h5); -1 (default) is the last frame, other negative values count from the end")
    p.add_argument("--color", default="velocity",
                   help="point field to colour by (default velocity, shown by magnitude; FIELD:x|y|z for a component; 'solid' for none)")
    p.add_argument("--png", help="output image (default OUTDIR/frame_K_<field>.png)")
    p.add_argument("--size", nargs=2, type=int, default=[1024, 768], metavar=("W", "H"), help="image size in pixels (default 1024 768)")
    p.add_argument("--point-size", type=float, default=0.0,
                   help="point size in pixels (default: from the particle spacing and the zoom)")
    p.add_argument("--spheres", action="store_true", help="render points as shaded spheres (default flat points)")
    p.add_argument("--overlay", metavar="SPECIES",
                   help="also draw another species of a run of several (OUTDIR/particles_SPECIES.xmf, e.g. water of -integrator mixture) in solid blue, half transparent")
    p.add_argument("--reader", choices=["xdmf3", "xdmf2"], default="xdmf3",
                   help="ParaView reader: xdmf3 (Xdmf3ReaderS, default) or xdmf2 (legacy XDMFReader)")
    a = p.parse_args()
    if a.size[0] < 16 or a.size[1] < 16:
        p.error("--size: W and H must be at least 16")
    return a


def xdmf_frames(xmf):
    """[(frame number, time)] of the grids of the temporal collection, in file order."""
    try:
        root = ET.parse(xmf).getroot()
    except (ET.ParseError, OSError) as e:
        fail("cannot parse %s: %s" % (xmf, e))
    frames = []
    for grid in root.iter("Grid"):
        if grid.get("GridType", "Uniform") != "Uniform":
            continue
        tnode = grid.find("Time")
        t = float(tnode.get("Value")) if tnode is not None and tnode.get("Value") is not None else float(len(frames))
        m = re.search(r"(\d+)$", grid.get("Name", ""))
        frames.append((int(m.group(1)) if m else len(frames), t))
    return frames


def main():
    a = parse_args()
    outdir = os.path.abspath(a.outdir)
    if not os.path.isdir(outdir):
        fail("%s is not a directory" % outdir)
    xmf = os.path.join(outdir, "particles.xmf")  # absolute: the XDMF3 reader mis-resolves HDF5 paths of a bare relative name
    if not os.path.isfile(xmf):
        fail("%s has no particles.xmf (not a granular-mpm output directory, or the run has not written a frame yet)" % outdir)
    frames = xdmf_frames(xmf)
    if not frames:
        fail("%s lists no time steps" % xmf)
    numbers = [f for f, _ in frames]
    if a.frame in numbers:
        idx = numbers.index(a.frame)
    elif -len(frames) <= a.frame < 0:
        idx = len(frames) + a.frame
    else:
        fail("frame %d is not in %s (frames %s)" % (a.frame, xmf, ", ".join(str(f) for f in numbers)))
    frame, t_xmf = frames[idx]
    h5 = os.path.join(outdir, "frames", "frame_%05d.h5" % frame)
    if not os.path.isfile(h5):
        fail("%s lists frame %d but %s is missing" % (xmf, frame, h5))

    field, comp = a.color, None
    if ":" in field:
        field, c = field.split(":", 1)
        comp = {"x": 0, "y": 1, "z": 2, "0": 0, "1": 1, "2": 2}.get(c.lower())
        if comp is None:
            fail("--color %s: component must be x, y or z" % a.color)
    png = os.path.abspath(a.png) if a.png else os.path.join(outdir, "frame_%d_%s.png" % (frame, a.color.replace(":", "_")))
    if not os.path.isdir(os.path.dirname(png)):
        fail("--png %s: directory %s does not exist" % (png, os.path.dirname(png)))

    # ParaView is imported only now, so that -h and argument errors are quick.
    from paraview import simple as pv
    pv._DisableFirstRenderCameraReset()  # keep the camera set below

    t0 = time.time()
    if a.reader == "xdmf2":
        reader = pv.XDMFReader(FileNames=[xmf])
    else:
        reader = pv.Xdmf3ReaderS(FileName=[xmf])
    times = list(reader.TimestepValues) if reader.TimestepValues else [t_xmf]
    if isinstance(reader.TimestepValues, float):
        times = [float(reader.TimestepValues)]
    print("render_frame: file %s" % xmf)
    print("render_frame: time_steps %s" % " ".join("%.17g" % t for t in times))
    # The reader's time steps are sorted; pick the one nearest the frame's time.
    t = min(times, key=lambda s: abs(s - t_xmf))
    print("render_frame: frame %d time %.17g" % (frame, t))

    reader.UpdatePipeline(t)
    info = reader.GetDataInformation()
    npts = info.GetNumberOfPoints()
    print("render_frame: points %d" % npts)
    ncells = info.GetNumberOfCells()
    print("render_frame: cells %d" % ncells)
    if npts == 0:
        fail("ParaView read no points for frame %d (t = %g) from %s" % (frame, t, xmf))
    if ncells == 0:  # points without vertex cells are not drawn: the image would be empty
        fail("ParaView read %d points but no cells for frame %d from %s, so nothing would be drawn: the XDMF3 reader needs the "
             "Polyvertex topology with explicit connectivity (or try --reader xdmf2)" % (npts, frame, xmf))
    xmin, xmax, ymin, ymax, zmin, zmax = info.GetBounds()
    over = None
    if a.overlay:  # the other species' reader; the camera fits both
        oxmf = os.path.join(outdir, "particles_%s.xmf" % a.overlay)
        if not os.path.isfile(oxmf):
            fail("--overlay %s: %s does not exist" % (a.overlay, oxmf))
        over = pv.Xdmf3ReaderS(FileName=[oxmf])
        over.UpdatePipeline(t)
        oinfo = over.GetDataInformation()
        print("render_frame: overlay %s points %d" % (a.overlay, oinfo.GetNumberOfPoints()))
        if oinfo.GetNumberOfPoints() > 0:
            ob = oinfo.GetBounds()
            xmin, xmax, ymin, ymax, zmin, zmax = min(xmin, ob[0]), max(xmax, ob[1]), min(ymin, ob[2]), max(ymax, ob[3]), min(zmin, ob[4]), max(zmax, ob[5])
    print("render_frame: bounds %.17g %.17g %.17g %.17g %.17g %.17g" % (xmin, xmax, ymin, ymax, zmin, zmax))

    # ---- colour field
    parrays = reader.PointData
    names = list(parrays.keys())
    rng = None
    if field != "solid":
        if field not in names:
            fail("--color %s: no such point field (fields: %s)" % (field, ", ".join(sorted(names))))
        arr = parrays[field]
        ncomp = arr.GetNumberOfComponents()
        if comp is not None and comp >= ncomp:
            fail("--color %s: %s has %d component(s)" % (a.color, field, ncomp))
        rng = arr.GetRange(-1 if (ncomp > 1 and comp is None) else (comp or 0))
        label = field + (" magnitude" if ncomp > 1 and comp is None else (" %s" % "xyz"[comp] if comp is not None else ""))
        label += " [%s]" % units(field, info.GetBounds()[5] - info.GetBounds()[4] <= 1e-12 * max(1e-300, info.GetBounds()[1] - info.GetBounds()[0]))
        print("render_frame: range %s %.17g %.17g" % (field if comp is None else a.color, rng[0], rng[1]))

    # ---- view and display
    W, H = a.size
    TOP = 32.0  # pixels of the title strip
    barx = max(0.5, 1.0 - 150.0 / W)  # left edge of the colour bar strip (fraction of W)
    # A render view still alive when sys.exit() unwinds makes pvpython die with
    # "X Error ... GLXBadContext" and exit status 1: always delete it first.
    view = pv.CreateView("RenderView")
    disp = tdisp = text = odisp = None
    try:
        view.ViewSize = [W, H]
        view.ViewTime = t
        view.OrientationAxesVisibility = 0
        try:
            view.UseColorPaletteForBackground = 0  # ParaView >= 5.10
        except AttributeError:
            pass
        view.Background = [1.0, 1.0, 1.0]
        disp = pv.Show(reader, view)
        disp.SetRepresentationType("Points")
        disp.RenderPointsAsSpheres = 1 if a.spheres else 0
        if not a.spheres:  # flat colours: a pixel's colour is the colour map's colour
            disp.Ambient, disp.Diffuse, disp.Specular = 1.0, 0.0, 0.0
        if rng is not None:
            pv.ColorBy(disp, ("POINTS", field) if comp is None and parrays[field].GetNumberOfComponents() == 1
                       else ("POINTS", field, "Magnitude" if comp is None else "XYZ"[comp]))
            lut = pv.GetColorTransferFunction(field)
            lut.ApplyPreset("Turbo" if "Turbo" in pv.GetLookupTableNames() else "Jet", True)
            if comp is not None:
                lut.VectorMode, lut.VectorComponent = "Component", comp
            elif parrays[field].GetNumberOfComponents() > 1:
                lut.VectorMode = "Magnitude"
            lo, hi = rng
            if not hi > lo:  # a constant field still gets a usable colour bar
                lo, hi = (0.0, 1.0) if lo == 0 else (lo - 0.05 * abs(lo), hi + 0.05 * abs(hi))
            lut.AutomaticRescaleRangeMode = "Never"
            lut.RescaleTransferFunction(lo, hi)
            pv.GetOpacityTransferFunction(field).RescaleTransferFunction(lo, hi)
            bar = pv.GetScalarBar(lut, view)
            bar.Title, bar.ComponentTitle = label, ""
            bar.TitleColor = bar.LabelColor = [0.0, 0.0, 0.0]
            bar.TitleFontSize, bar.LabelFontSize = 16, 14
            bar.Orientation = "Vertical"
            bar.WindowLocation = "Any Location"
            bar.Position = [barx, 0.08]  # in the right-hand strip the data are kept out of
            bar.ScalarBarLength = 0.8
            bar.RangeLabelFormat = "%-#.3g"
            bar.Visibility = 1
        else:
            disp.AmbientColor = disp.DiffuseColor = [0.2, 0.3, 0.8]
        # axes with units along the particles' bounds, the domain and the objects
        is2d_view = zmax - zmin <= 1e-9 * max(xmax - xmin, ymax - ymin, 1e-300)
        grid = disp.DataAxesGrid
        grid.GridAxesVisibility = 1
        grid.XTitle, grid.YTitle, grid.ZTitle = "x [m]", "y [m]", "z [m]"
        for k in ("XTitleColor", "YTitleColor", "ZTitleColor", "XLabelColor", "YLabelColor", "ZLabelColor", "GridColor"):
            setattr(grid, k, [0.0, 0.0, 0.0])
        if is2d_view:
            grid.AxesToLabel = 3  # min x and min y faces only
        print("render_frame: objects %d" % scene_outlines(pv, view, run_options(outdir), is2d_view, outdir, t))
        nover = over.GetDataInformation().GetNumberOfPoints() if over is not None else 0
        text = pv.Text(Text="t = %.6g s  (frame %d, %d particles%s)" % (t, frame, npts, " + %d %s" % (nover, a.overlay) if over is not None else ""))
        tdisp = pv.Show(text, view)
        tdisp.WindowLocation = "Upper Center"  # in the top strip kept free of data
        tdisp.Color, tdisp.FontSize = [0.0, 0.0, 0.0], 14

        # ---- camera: fit the data into the image less a top strip (the title)
        # and a right-hand strip (the colour bar)
        ext = [xmax - xmin, ymax - ymin, zmax - zmin]
        scale = max(ext) or 1.0
        is2d = ext[2] <= 1e-9 * scale
        if "volume" in names and npts > 0:  # particle spacing from the mean particle volume (area in 2D)
            vrng = parrays["volume"].GetRange(0)
            vmean = 0.5 * (vrng[0] + vrng[1])
            spacing = vmean ** (1.0 / (2 if is2d else 3)) if vmean > 0 else 0.0
        else:
            spacing = 0.0
        if spacing <= 0:
            spacing = (max(ext[0], 1e-30) * max(ext[1], 1e-30) / npts) ** 0.5 if is2d else (max(ext[0] * ext[1] * ext[2], 1e-30) / npts) ** (1 / 3.0)
        availw = barx * W - 10.0 if rng is not None else float(W)
        availh = H - TOP
        cx, cy, cz = 0.5 * (xmin + xmax), 0.5 * (ymin + ymax), 0.5 * (zmin + zmax)
        margin = 1.08
        if is2d:
            w = max(ext[0], spacing)
            h = max(ext[1], spacing)
            ppu = min(availh / (h * margin), availw / (w * margin))  # pixels per length unit
            s = 0.5 * H / ppu  # parallel scale: half the visible height
            # the data centre at the centre of the available rectangle
            sx, sy = (0.5 * W - 0.5 * availw) / ppu, (0.5 * TOP) / ppu
            view.CameraParallelProjection = 1
            view.CameraFocalPoint = [cx + sx, cy + sy, cz]
            view.CameraPosition = [cx + sx, cy + sy, cz + 10.0 * max(w, h)]
            view.CameraViewUp = [0.0, 1.0, 0.0]
            view.CameraParallelScale = s
        else:
            view.CameraParallelProjection = 0
            d = [1.0, 0.9, 1.6]  # from +x, +y, +z; gravity is along -y
            view.CameraFocalPoint = [cx, cy, cz]
            view.CameraPosition = [cx + d[0], cy + d[1], cz + d[2]]
            view.CameraViewUp = [0.0, 1.0, 0.0]
            # fit the particles, not every prop: an object's traced surface may reach far outside them
            view.ResetCamera(xmin, xmax, ymin, ymax, zmin, zmax)
            cam = view.GetActiveCamera()
            dist = cam.GetDistance()
            ppu = H / (2.0 * dist * math.tan(math.radians(0.5 * cam.GetViewAngle())))
        psize = a.point_size if a.point_size > 0 else min(50.0, max(1.0, 0.9 * spacing * ppu))
        disp.PointSize = psize
        if over is not None:
            odisp = pv.Show(over, view)
            odisp.SetRepresentationType("Points")
            pv.ColorBy(odisp, None)
            odisp.AmbientColor = odisp.DiffuseColor = [0.15, 0.45, 0.95]
            odisp.Ambient, odisp.Diffuse, odisp.Specular = 1.0, 0.0, 0.0
            odisp.Opacity = 0.5
            odisp.PointSize = psize

        if os.path.exists(png):
            os.remove(png)
        pv.Render(view)
        pv.SaveScreenshot(png, view, ImageResolution=[W, H])
        if not os.path.isfile(png) or os.path.getsize(png) == 0:
            fail("ParaView did not write %s" % png)
        print("render_frame: png %s %dx%d point_size %.3g render %.2f s" % (png, W, H, psize, time.time() - t0))
    finally:
        for proxy in (odisp, tdisp, text, disp):
            if proxy is not None:
                pv.Delete(proxy)
        pv.Delete(view)
        del disp, tdisp, text, view
    return 0


if __name__ == "__main__":
    sys.exit(main())
