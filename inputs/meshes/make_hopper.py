#!/usr/bin/env python3
"""Writes the meshes of inputs/hopper_3d.yaml: hopper.stl (binary STL), a
conical hopper's wall as a closed solid of revolution (inner cone from
radius 0.03 m at y = 0.25 m to 0.15 m at y = 0.5 m, 3 cm thick), and
hopper_fill.obj (OBJ), the cone inside it (3 mm clear of the wall) from
y = 0.27 to 0.45 m, the
sand's initial volume.  Axis vertical (y) through x = z = 0; the deck
places them with -<name>_center.

  /usr/bin/python3 inputs/meshes/make_hopper.py   (run from anywhere)
"""
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
N = 96  # segments around the axis
Y0, Y1, R0, R1, T = 0.25, 0.5, 0.03, 0.15, 0.03  # the wall 3 cells thick at the deck's dx: MPM collisions act on grid nodes, and thinner walls leak


def inner_r(y):
    return R0 + (R1 - R0) * (y - Y0) / (Y1 - Y0)


def revolve(profile):
    """Triangles of the closed solid swept by a closed (r, y) polygon
    (counter-clockwise in the r-y plane) around the y axis."""
    tris = []
    for s in range(N):
        a0, a1 = 2 * math.pi * s / N, 2 * math.pi * (s + 1) / N
        for k in range(len(profile)):
            (r0, y0), (r1, y1) = profile[k], profile[(k + 1) % len(profile)]
            p00 = (r0 * math.cos(a0), y0, r0 * math.sin(a0))
            p01 = (r0 * math.cos(a1), y0, r0 * math.sin(a1))
            p10 = (r1 * math.cos(a0), y1, r1 * math.sin(a0))
            p11 = (r1 * math.cos(a1), y1, r1 * math.sin(a1))
            tris += [(p00, p10, p11), (p00, p11, p01)]
    return [t for t in tris if len({tuple(round(c, 12) for c in p) for p in t}) == 3]  # drop triangles degenerate on the axis


def volume(tris):
    return sum(a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]) for a, b, c in tris) / 6


# the wall: inner cone surface, outer surface T further out (horizontally), closed at both ends
wall = revolve([(R0, Y0), (R0 + T, Y0), (R1 + T, Y1), (R1, Y1)])
if volume(wall) < 0:
    wall = [(a, c, b) for a, b, c in wall]
with open(os.path.join(HERE, "hopper.stl"), "wb") as f:
    f.write(b"hopper wall: inputs/meshes/make_hopper.py".ljust(80, b" "))
    f.write(struct.pack("<I", len(wall)))
    for t in wall:
        f.write(struct.pack("<12fH", 0, 0, 0, *[c for p in t for c in p], 0))
# the fill: the cone inside the wall from y = 0.27 to 0.45 (closed by its two discs)
ya, yb = 0.27, 0.45
fill = revolve([(0.0, ya), (inner_r(ya) - 0.003, ya), (inner_r(yb) - 0.003, yb), (0.0, yb)])  # 3 mm clear of the wall
if volume(fill) < 0:
    fill = [(a, c, b) for a, b, c in fill]
with open(os.path.join(HERE, "hopper_fill.obj"), "w") as f:
    f.write("# the sand's initial volume in the hopper: inputs/meshes/make_hopper.py; volume %.9g m^3\n" % volume(fill))
    for t in fill:
        for p in t:
            f.write("v %.9g %.9g %.9g\n" % p)
    for i in range(len(fill)):
        f.write("f %d %d %d\n" % (3 * i + 1, 3 * i + 2, 3 * i + 3))
print("hopper.stl: %d triangles, wall volume %.6g m^3; hopper_fill.obj: %d triangles, volume %.6g m^3" % (len(wall), volume(wall), len(fill), volume(fill)))
