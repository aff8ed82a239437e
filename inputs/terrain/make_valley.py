#!/usr/bin/env python3
"""Writes valley.asc, the synthetic terrain of inputs/landslide_terrain_3d.yaml:
a 35 deg slope (x from 0 to 1.2 m) easing into a flat runout at 0.1 m
(x beyond 2 m), with a parabolic channel across z (0.25 m higher at the
sides than in the middle, z = 0.5 m).  ESRI ASCII grid, 0.05 m cells,
easting x, northing z, heights y [m].

  /usr/bin/python3 inputs/terrain/make_valley.py   (run from anywhere)
"""
import math
import os

cs, nx, nz = 0.05, 61, 21  # x in [0, 3], z in [0, 1] at the cell centres (xllcenter)
t = math.tan(math.radians(35))


def profile(x):
    """Height along the channel's axis: the slope, a smooth bend (a
    quadratic from x = 1.2 to 2.0 that matches the slope and the flat) and
    the flat runout."""
    if x <= 1.2:
        return 0.1 + t * 0.4 + t * (1.2 - x)
    if x >= 2.0:
        return 0.1
    s = 2.0 - x  # quadratic a s^2 with slope t at s = 0.8: a = t / 1.6
    return 0.1 + t / 1.6 * s * s


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "valley.asc"), "w") as f:
    f.write("ncols %d\nnrows %d\nxllcenter 0\nyllcenter 0\ncellsize %g\nNODATA_value -9999\n" % (nx, nz, cs))
    for r in range(nz):  # north (z = 1) first
        z = (nz - 1 - r) * cs
        f.write(" ".join("%.5f" % (profile(i * cs) + 0.25 * ((z - 0.5) / 0.5) ** 2) for i in range(nx)) + "\n")
