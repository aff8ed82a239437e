# script-version: 2
"""Catalyst pipeline (ParaView 5.11, script version 2): writes the particles
as parallel VTK polydata, one file set per co-processing call:

    <output_dir>/catalyst/particles_<step>.pvtp       (the piece index)
    <output_dir>/catalyst/particles_<step>/...vtp     (one piece per rank)

Point data: velocity (3 components), pressure [Pa], id, material.

Use: granular-mpm ... -catalyst_script postproc/catalyst/particles_extract.py
     [-catalyst_interval N]   (a call every N solver steps, default 10)
The solver sets MPM_CATALYST_OUTPUT_DIR=<output_dir>/catalyst; docs/catalyst.md.
"""
import os

from paraview import catalyst
from paraview.simple import *  # noqa: F401,F403 (the usual Catalyst script style)

# The channel the adaptor feeds (catalyst_adaptor.cxx): the name must match.
particles = TrivialProducer(registrationName="particles")

# The adaptor calls the pipelines every -catalyst_interval steps; Frequency 1
# writes at every call.  A larger Frequency counts solver steps (the
# trigger sees the solver's step number).
vtp = CreateExtractor("VTP", particles, registrationName="particles_vtp")
vtp.Trigger = "TimeStep"
vtp.Trigger.Frequency = 1
vtp.Writer.FileName = "particles_{timestep:06d}.pvtp"

options = catalyst.Options()
options.ExtractsOutputDirectory = os.environ.get("MPM_CATALYST_OUTPUT_DIR", "catalyst")
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1
