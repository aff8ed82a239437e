# script-version: 2
"""Catalyst pipeline (ParaView 5.11, script version 2) for a sand-water run
(-integrator mixture): writes the water particles, channel
"particles_water", as parallel VTK polydata, one file set per call:

    <output_dir>/catalyst/water_<step>.pvtp       (the piece index)
    <output_dir>/catalyst/water_<step>/...vtp     (one piece per rank)

Point data as in the frames' /water/ group (velocity, pressure [Pa], id,
material, ...).  Use it beside particles_extract.py (the sand, channel
"particles"):

    granular-mpm ... -catalyst_script postproc/catalyst/particles_extract.py,postproc/catalyst/water_extract.py

The solver sets MPM_CATALYST_OUTPUT_DIR=<output_dir>/catalyst; docs/catalyst.md.
"""
import os

from paraview import catalyst
from paraview.simple import *  # noqa: F401,F403 (the usual Catalyst script style)

# The adaptor names a species' channel as the frames name its XDMF file
# (catalyst_adaptor.cxx, catalyst.c): particles_<species>.
water = TrivialProducer(registrationName="particles_water")

vtp = CreateExtractor("VTP", water, registrationName="water_vtp")
vtp.Trigger = "TimeStep"
vtp.Trigger.Frequency = 1
vtp.Writer.FileName = "water_{timestep:06d}.pvtp"

options = catalyst.Options()
options.ExtractsOutputDirectory = os.environ.get("MPM_CATALYST_OUTPUT_DIR", "catalyst")
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1
