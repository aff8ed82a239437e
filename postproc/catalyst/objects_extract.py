# script-version: 2
"""Catalyst pipeline (ParaView 5.11, script version 2): writes the collision
objects' surfaces (the deck's -objects, traced where they are at each call:
line segments in 2D, triangles in 3D; cell data "object", the index into
the field data's "object_names") as parallel VTK polydata:

    <output_dir>/catalyst/objects_<step>.pvtp

Only for decks with -objects: the solver feeds the channel "objects" then.
Open it beside particles_<step>.pvtp (particles_extract.py) in ParaView.

Use: granular-mpm ... -catalyst_script postproc/catalyst/particles_extract.py,postproc/catalyst/objects_extract.py
The solver sets MPM_CATALYST_OUTPUT_DIR=<output_dir>/catalyst; docs/catalyst.md.
"""
import os

from paraview import catalyst
from paraview.simple import *  # noqa: F401,F403 (the usual Catalyst script style)

# The channel the adaptor feeds (catalyst_adaptor.cxx): the name must match.
objects = TrivialProducer(registrationName="objects")

vtp = CreateExtractor("VTP", objects, registrationName="objects_vtp")
vtp.Trigger = "TimeStep"
vtp.Trigger.Frequency = 1
vtp.Writer.FileName = "objects_{timestep:06d}.pvtp"

options = catalyst.Options()
options.ExtractsOutputDirectory = os.environ.get("MPM_CATALYST_OUTPUT_DIR", "catalyst")
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1
