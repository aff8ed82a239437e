# script-version: 2
"""Catalyst pipeline (ParaView 5.11, script version 2): two PNG images of the
particles per co-processing call,

    <output_dir>/catalyst/velocity_<step>.png   coloured by |velocity| [m/s]
    <output_dir>/catalyst/pressure_<step>.png   coloured by pressure [Pa]

with the domain outline, a colour bar and the time.  2D runs are drawn flat
(x right, y up); 3D runs in perspective from +x +y +z with y up.  Each image
spans the range of its field at that step.  With several ranks, ParaView
composites every rank's particles into the one image.

Use: granular-mpm ... -catalyst_script postproc/catalyst/particles_images.py
     [-catalyst_interval N]   (a call every N solver steps, default 10)
Rendering needs an X server: run under xvfb-run on machines without a
display (docs/catalyst.md).  The solver sets MPM_CATALYST_OUTPUT_DIR.
"""
import os

from paraview import catalyst
from vtkmodules.vtkCommonCore import vtkDoubleArray
from vtkmodules.vtkParallelCore import vtkCommunicator, vtkMultiProcessController
from paraview.simple import *  # noqa: F401,F403 (the usual Catalyst script style)

# We place the camera ourselves at the first call (the domain is known then).
paraview.simple._DisableFirstRenderCameraReset()  # noqa: F405

SIZE = [1024, 768]  # pixels
TOP = 32            # pixels kept free for the title
BAR = 150           # pixels kept free on the right for the colour bar

# The channel the adaptor feeds (catalyst_adaptor.cxx): the name must match.
particles = TrivialProducer(registrationName="particles")
title = Text(registrationName="title")
title.Text = ""


def make_view(array, component, label, prefix):
    """A render view of the particles coloured by one field, and the PNG
    extractor that saves it."""
    view = CreateView("RenderView")
    view.ViewSize = SIZE
    view.OrientationAxesVisibility = 0
    view.UseColorPaletteForBackground = 0
    view.Background = [1.0, 1.0, 1.0]
    disp = Show(particles, view)
    disp.SetRepresentationType("Points")
    disp.PointSize = 3.0
    ColorBy(disp, ("POINTS", array, component) if component else ("POINTS", array))
    lut = GetColorTransferFunction(array)
    lut.ApplyPreset("Turbo", True)
    if component:
        lut.VectorMode = component
    # ParaView's automatic rescaling follows the animation time, which
    # Catalyst does not drive: catalyst_execute sets the range at every call
    lut.AutomaticRescaleRangeMode = "Never"
    bar = GetScalarBar(lut, view)
    bar.Title, bar.ComponentTitle = label, ""
    bar.TitleColor = bar.LabelColor = [0.0, 0.0, 0.0]
    bar.TitleFontSize, bar.LabelFontSize = 16, 14
    bar.WindowLocation = "Any Location"
    bar.Orientation = "Vertical"
    bar.Position = [1.0 - (BAR - 30.0) / SIZE[0], 0.08]
    bar.ScalarBarLength = 0.8
    bar.RangeLabelFormat = "%-#.3g"
    bar.Visibility = 1
    tdisp = Show(title, view)
    tdisp.WindowLocation = "Upper Center"
    tdisp.Color, tdisp.FontSize = [0.0, 0.0, 0.0], 14
    png = CreateExtractor("PNG", view, registrationName=prefix + "_png")
    png.Trigger = "TimeStep"
    png.Trigger.Frequency = 1  # every call; a larger value counts solver steps
    png.Writer.FileName = prefix + "_{timestep:06d}.png"
    png.Writer.ImageResolution = SIZE
    return view, disp, lut


FIELDS = [("velocity", "Magnitude", "velocity magnitude (m/s)", "velocity"),
          ("pressure", None, "pressure (Pa)", "pressure")]
views = [make_view(*f) for f in FIELDS]
first = True  # catalyst_execute places outline and camera at the first call

options = catalyst.Options()
options.ExtractsOutputDirectory = os.environ.get("MPM_CATALYST_OUTPUT_DIR", "catalyst")
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1


def run_facts(info):
    """Dimension and domain box, sent by the adaptor as user data (the same
    on every rank, unlike the local data bounds)."""
    fd = info.dataDescription.GetUserData()
    dim = int(fd.GetArray("dim").GetValue(0))
    box = fd.GetArray("domain_bounds")
    return dim, [box.GetValue(i) for i in range(6)]


def add_outline(view, b):
    """The domain box, so the particles are seen in their container."""
    box = Box(registrationName="domain")
    box.XLength, box.YLength, box.ZLength = b[1] - b[0], b[3] - b[2], b[5] - b[4]
    box.Center = [0.5 * (b[0] + b[1]), 0.5 * (b[2] + b[3]), 0.5 * (b[4] + b[5])]
    d = Show(box, view)
    d.SetRepresentationType("Outline")
    d.AmbientColor = d.DiffuseColor = [0.4, 0.4, 0.4]


def place_camera(view, dim, b):
    """2D: the domain fills the image less the title strip and the colour
    bar strip.  3D: an oblique view of the whole domain."""
    W, H = SIZE
    cx, cy, cz = 0.5 * (b[0] + b[1]), 0.5 * (b[2] + b[3]), 0.5 * (b[4] + b[5])
    w, h = b[1] - b[0], b[3] - b[2]
    if dim == 2:
        availw, availh = W - BAR - 10.0, H - TOP - 10.0
        ppu = min(availw / w, availh / h) / 1.04  # pixels per metre, 4 % margin
        # shift the camera so the domain centre sits in the middle of the free area
        sx, sy = (0.5 * W - 0.5 * availw - 5.0) / ppu, (0.5 * TOP) / ppu
        view.CameraParallelProjection = 1
        view.CameraFocalPoint = [cx + sx, cy + sy, 0.0]
        view.CameraPosition = [cx + sx, cy + sy, 10.0 * max(w, h)]
        view.CameraViewUp = [0.0, 1.0, 0.0]
        view.CameraParallelScale = 0.5 * H / ppu
    else:  # look from +x +y +z (gravity along -y), then fit the box
        view.CameraParallelProjection = 0
        view.CameraFocalPoint = [cx, cy, cz]
        view.CameraPosition = [cx + 1.0, cy + 0.9, cz + 1.6]
        view.CameraViewUp = [0.0, 1.0, 0.0]
        view.ResetCamera(b[0], b[1], b[2], b[3], b[4], b[5])
        view.GetActiveCamera().Dolly(1.1)  # the fit is to the bounding sphere: loose


def global_range(array, component):
    """The field's range over all ranks.  ParaView's data information
    (particles.PointData[...]) is this rank's only in situ, and None on a
    rank without particles, yet every rank must colour with the same range,
    since each renders its own particles before compositing."""
    data = particles.GetClientSideObject().GetOutputDataObject(0)
    arr = data.GetPointData().GetArray(array) if data else None
    send, recv = vtkDoubleArray(), vtkDoubleArray()
    send.SetNumberOfTuples(2)
    send.SetValue(0, -1e300)
    send.SetValue(1, -1e300)
    if arr is not None and arr.GetNumberOfTuples() > 0:
        lo, hi = arr.GetRange(-1 if component else 0)  # -1: the magnitude
        send.SetValue(0, -lo)
        send.SetValue(1, hi)
    ctrl = vtkMultiProcessController.GetGlobalController()
    if ctrl is None or ctrl.GetNumberOfProcesses() == 1:
        recv.DeepCopy(send)
    else:
        ctrl.AllReduce(send, recv, vtkCommunicator.MAX_OP)
    return -recv.GetValue(0), recv.GetValue(1)


def rescale(lut, array, component, time):
    """The colour range = the field's range over all ranks at this step."""
    particles.UpdatePipeline(time)
    lo, hi = global_range(array, component)
    if hi < lo:  # no particles anywhere
        lo, hi = 0.0, 1.0
    if not hi > lo:  # a constant field (pressure 0 before the first step)
        lo, hi = (0.0, 1.0) if lo == 0 else (lo - 0.05 * abs(lo), hi + 0.05 * abs(hi))
    lut.RescaleTransferFunction(lo, hi)
    GetOpacityTransferFunction(array).RescaleTransferFunction(lo, hi)


def catalyst_execute(info):
    """Runs before the extractors at every call: title and colour ranges;
    at the first call also the outline, the camera and the point style."""
    global first
    title.Text = "t = %.4f s   step %d" % (info.time, info.timestep)
    for (view, disp, lut), (array, component, _, _) in zip(views, FIELDS):
        rescale(lut, array, component, info.time)
    if not first:
        return
    first = False
    dim, b = run_facts(info)
    for view, disp, _ in views:
        add_outline(view, b)
        place_camera(view, dim, b)
        if dim == 2:  # flat colours: a pixel's colour is the colour map's colour
            disp.Ambient, disp.Diffuse = 1.0, 0.0
        else:         # shaded spheres show the depth of a 3D heap
            disp.RenderPointsAsSpheres = 1
