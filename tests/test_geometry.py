"""The shape library (seeding regions and collision objects alike):
polygons (2D) and prisms (3D), rotated boxes, union / intersection /
difference of named parts, and terrain from an elevation grid (ESRI .asc,
a CSV of heights) or a 2D CSV profile.

- Seeded mass = density x the analytic area or volume: a trapezoid
  embankment, a rotated square, a box with a round hole (difference), two
  overlapping boxes (union: the overlap once), a box cut by a disk
  (intersection), a 3D prism; layers of thickness T on a terrain (the
  difference of the terrain raised by T and the terrain) in 2D from a CSV
  profile and in 3D from an .asc grid (volume = plan area x T).  Lattice
  sampling, so the counts are exact up to the boundary cells: within 1 %.
- Terrain as an object: a 3D sand layer at rest on a 10 deg slope of an
  .asc terrain loads it with its weight, F = -M g (all three components,
  within 2 % of M g), and holds (friction 0.6 > tan 10 deg: its centre of
  mass moves at under a tenth of a frictionless slide's speed while its
  cut edges slump); the same state
  by particle id on 1 and 2 ranks (1e-9).  Once seeded, the region's
  shapes are released: the run holds the object's terrain only (a third
  of what the set-up held: the region's layer is cut between two copies).
- Triangle meshes: an ASCII STL cube, a binary STL cube in mm (-scale)
  turned by 30 deg, and the shipped hopper fill (OBJ) seed density x their
  volume (1 %); an STL slab object carries a sand block's weight (2 %);
  on 3 ranks each holds an STL strip's samples only around its slab (the
  busiest under 65 % of them) with results identical to the bit to every
  rank holding all, and the same picture; also for a strip whose samples
  end before the last rank's slab, and for position-based grains on an
  STL plate.
  The signed distance is stored near the surface only: halving the
  sampling spacing multiplies its memory by 3-4.6 (the area's 4, not the
  volume's 8), under 30 % of the whole lattice at 1.25 mm.
- Bad geometry is refused naming the option."""
import math
import os

import numpy as np
import mpmtest as T

c = T.Checks("geometry")
RHO = 1600.0
SAND = ["-materials", "sand", "-sand_type", "drucker_prager", "-sand_density", str(RHO), "-sand_youngs_modulus", "1e6", "-sand_friction_angle", "30"]


def seeded_summary(name, dim, lo, hi, dx, region, ranks=1):
    out = T.outdir("geometry_" + name)
    args = ["-dim", dim, "-dx", dx, "-domain_lo", lo, "-domain_hi", hi, "-max_steps", "0", "-output_dir", out, "-regions", "r", "-r_material", "sand", "-r_ppc", "2",
            "-r_sampling", "lattice"] + SAND + region
    T.run(ranks, args)
    return T.mpmio.summary(out)


def seeded_mass(name, dim, lo, hi, dx, region, ranks=1):
    return seeded_summary(name, dim, lo, hi, dx, region, ranks)["total_mass"]


def check_mass(label, mass, volume):
    c.close("%s: seeded mass / (rho x %.5g)" % (label, volume), mass / (RHO * volume), 1.0, rtol=0.01)


# 2D: polygon, rotated box, constructive geometry
check_mass("trapezoid polygon", seeded_mass("trapezoid", 2, "0,0", "1,0.5", 0.01, ["-r_shape", "polygon", "-r_vertices", "0.1,0,0.7,0,0.5,0.3,0.3,0.3"]), 0.5 * (0.6 + 0.2) * 0.3)
check_mass("square rotated 30 deg", seeded_mass("rotated", 2, "0,0", "1,1", 0.01, ["-r_shape", "box", "-r_lo", "0.3,0.3", "-r_hi", "0.7,0.7", "-r_rotation", "30"]), 0.16)
check_mass("box minus a disk (difference)",
           seeded_mass("difference", 2, "0,0", "1,1", 0.005, ["-r_shape", "difference", "-r_parts", "block,hole", "-r_block_shape", "box", "-r_block_lo", "0.2,0.2", "-r_block_hi", "0.8,0.6",
                                                        "-r_hole_shape", "sphere", "-r_hole_center", "0.5,0.4", "-r_hole_radius", "0.1"]), 0.24 - math.pi * 0.01)
check_mass("two overlapping boxes (union)",
           seeded_mass("union", 2, "0,0", "1,1", 0.01, ["-r_shape", "union", "-r_parts", "a,b", "-r_a_shape", "box", "-r_a_lo", "0.1,0.1", "-r_a_hi", "0.5,0.3", "-r_b_shape", "box", "-r_b_lo", "0.3,0.1",
                                                   "-r_b_hi", "0.6,0.5"]), 0.08 + 0.12 - 0.04)
check_mass("box cut by a disk (intersection)",
           seeded_mass("intersection", 2, "0,0", "1,1", 0.005, ["-r_shape", "intersection", "-r_parts", "a,b", "-r_a_shape", "box", "-r_a_lo", "0.5,0", "-r_a_hi", "1,1", "-r_b_shape", "sphere",
                                                          "-r_b_center", "0.5,0.5", "-r_b_radius", "0.3"]), 0.5 * math.pi * 0.09)
# 3D prism: the trapezoid in the x-y plane, 0.2 m deep along z
check_mass("3D prism (polygon in xy over a z range)",
           seeded_mass("prism", 3, "0,0,0", "0.8,0.4,0.3", 0.02, ["-r_shape", "polygon", "-r_vertices", "0.1,0,0.7,0,0.5,0.3,0.3,0.3", "-r_range", "0.05,0.25"]), 0.12 * 0.2)

# terrain files
work = T.outdir("geometry_files")
os.makedirs(work, exist_ok=True)
profile = os.path.join(work, "profile.csv")
with open(profile, "w") as f:  # 2D: a 20 deg slope from x = 0.2 to 0.6, flat on either side
    f.write("x,height\n0,0.25\n0.2,0.25\n0.6,%.12g\n1.0,%.12g\n" % (0.25 - 0.4 * math.tan(math.radians(20)), 0.25 - 0.4 * math.tan(math.radians(20))))
layer2 = ["-r_shape", "difference", "-r_parts", "top,ground", "-r_top_shape", "terrain", "-r_top_file", profile, "-r_top_raise", "0.05", "-r_ground_shape", "terrain", "-r_ground_file", profile,
          "-r_clip_to_domain"]
check_mass("2D layer 0.05 m on a CSV profile (plan length 1 m)", seeded_mass("layer2d", 2, "0,0", "1,0.5", 0.005, layer2), 1.0 * 0.05)


def write_asc(path, slope_deg, nx=6, nz=5, cs=0.1, x0=0.0, z0=0.0, h0=0.1):
    """An ESRI ASCII grid of a plane rising toward -x at slope_deg (cell
    centres at x0 + (i + 1/2) cs)."""
    t = math.tan(math.radians(slope_deg))
    with open(path, "w") as f:
        f.write("ncols %d\nnrows %d\nxllcorner %g\nyllcorner %g\ncellsize %g\nNODATA_value -9999\n" % (nx, nz, x0, z0, cs))
        for r in range(nz):  # north (largest z) first
            f.write(" ".join("%.10g" % (h0 + t * (nx * cs - (x0 + (i + 0.5) * cs))) for i in range(nx)) + "\n")


asc = os.path.join(work, "slope.asc")
write_asc(asc, 10.0)
box3 = ["-r_parts", "layer,area", "-r_shape", "intersection", "-r_layer_shape", "difference", "-r_layer_parts", "top,ground", "-r_layer_top_shape", "terrain", "-r_layer_top_file", asc,
        "-r_layer_top_raise", "0.04", "-r_layer_ground_shape", "terrain", "-r_layer_ground_file", asc, "-r_area_shape", "box", "-r_area_lo", "0.15,0,0.1", "-r_area_hi", "0.45,0.3,0.4"]
check_mass("3D layer 0.04 m on an .asc terrain over 0.3 x 0.3 m", seeded_mass("layer3d", 3, "0,0,0", "0.6,0.3,0.5", 0.01, box3), 0.3 * 0.3 * 0.04)

# the layer at rest on the terrain as an object: the terrain carries the weight
G = 9.81
states = {}
for ranks in (1, 2):
    out = T.outdir("geometry_terrain_object_%d" % ranks)
    args = ["-dim", "3", "-dx", "0.02", "-domain_lo", "0,0,0", "-domain_hi", "0.6,0.3,0.5", "-gravity", "0,-9.81,0", "-gravity_ramp", "0.1", "-t_end", "0.2", "-output_dt", "0.1",
            "-history_interval", "20", "-output_dir", out, "-regions", "r", "-r_material", "sand", "-r_ppc", "2", "-objects", "ground", "-ground_shape", "terrain", "-ground_file", asc,
            "-ground_friction", "0.6", "-ground_mode", "separate"] + SAND + [a.replace("-r_layer_top_raise", "-r_layer_top_raise") for a in box3]
    T.run(ranks, args)
    f = T.mpmio.forces(out, "ground")
    M = T.mpmio.history(out)["mass"][0]
    late = f["t"] > 0.15
    if ranks == 2:
        c.close("terrain object: fy / (-M g)", f["fy"][late].mean() / (-M * G), 1.0, rtol=0.02)
        c.close("terrain object: |fx|, |fz| / (M g)", max(abs(f["fx"][late].mean()), abs(f["fz"][late].mean())) / (M * G), 0.0, atol=0.02)
    if ranks == 2:  # the region's two copies of the terrain are released once it is seeded: the object's one is left
        s = T.mpmio.summary(out)
        c.close("terrain: shapes held while stepping / at the set-up (the region's two terrains released, the object's kept)",
                s["geometry_bytes_stepping_max_rank"] / s["geometry_bytes_max_rank"], 1.0 / 3.0, rtol=1e-12)
    fr = T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))
    states[ranks] = fr
    h = T.mpmio.history(out)
    vcom = math.sqrt(h["momentum_x"][-1] ** 2 + h["momentum_y"][-1] ** 2 + h["momentum_z"][-1] ** 2) / h["mass"][-1]
    if ranks == 2:  # the cut edges of the layer (vertical faces 4 cm high) slump; the layer does not slide
        c.within("the layer holds on the 10 deg terrain (friction 0.6): centre-of-mass speed at 0.2 s, over a frictionless slide's g sin(10 deg) x 0.15 s", vcom / (G * math.sin(math.radians(10)) * 0.15),
                 0.0, 0.1)
a, b = states[1], states[2]
c.close("terrain object: the same positions by id on 1 and 2 ranks (relative)", np.abs(a["position"] - b["position"]).max() / np.abs(a["position"]).max(), 0.0, atol=1e-9)

# triangle meshes: an ASCII STL cube, the same cube as a binary STL turned
# by 30 deg about z, the shipped hopper fill (OBJ) against its volume
import struct


def cube_tris(lo, hi):
    x0, y0, z0 = lo
    x1, y1, z1 = hi
    v = [(x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0), (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)]
    f = [(0, 2, 1), (0, 3, 2), (4, 5, 6), (4, 6, 7), (0, 1, 5), (0, 5, 4), (2, 3, 7), (2, 7, 6), (1, 2, 6), (1, 6, 5), (0, 4, 7), (0, 7, 3)]
    return [(v[a], v[b], v[c]) for a, b, c in f]


def tri_volume(tris):
    return sum(a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]) for a, b, c in tris) / 6


cube_ascii, cube_bin = os.path.join(work, "cube.stl"), os.path.join(work, "cube_binary.stl")
with open(cube_ascii, "w") as f:
    f.write("solid cube\n" + "".join(" facet normal 0 0 0\n  outer loop\n" + "".join("   vertex %g %g %g\n" % p for p in t) + "  endloop\n endfacet\n" for t in cube_tris((-0.1, -0.1, -0.1), (0.1, 0.1, 0.1))) + "endsolid\n")
with open(cube_bin, "wb") as f:
    tris = cube_tris((-100, -100, -100), (100, 100, 100))  # in mm: -r_scale 0.001
    f.write(b" " * 80 + struct.pack("<I", len(tris)) + b"".join(struct.pack("<12fH", 0, 0, 0, *[c for p in t for c in p], 0) for t in tris))
check_mass("ASCII STL cube (0.2 m)", seeded_mass("stl_ascii", 3, "0,0,0", "0.4,0.4,0.4", 0.01, ["-r_shape", "mesh", "-r_file", cube_ascii, "-r_center", "0.2,0.2,0.2"]), 0.008)
check_mass("binary STL cube in mm (-scale 0.001), turned 30 deg about z",
           seeded_mass("stl_binary", 3, "0,0,0", "0.4,0.4,0.4", 0.005, ["-r_shape", "mesh", "-r_file", cube_bin, "-r_scale", "0.001", "-r_center", "0.2,0.2,0.2", "-r_rotation", "0,0,30"]), 0.008)
fill = os.path.join(T.SOURCE, "inputs", "meshes", "hopper_fill.obj")
verts = [tuple(float(x) for x in l.split()[1:4]) for l in open(fill) if l.startswith("v ")]
check_mass("OBJ cone (the hopper's fill, 384 triangles)", seeded_mass("obj", 3, "0,0,0", "0.4,0.56,0.4", 0.005, ["-r_shape", "mesh", "-r_file", fill, "-r_center", "0.2,0,0.2"]),
           tri_volume([verts[i:i + 3] for i in range(0, len(verts), 3)]))
# The samples are stored in a narrow band (bricks of 8^3 within 3 spacings
# of the surface): halving the spacing multiplies the memory by about 4,
# the area's factor, where the whole lattice's would be about 8; at 1.25 mm
# the bricks hold under a third of the lattice the mesh's box spans.
geo = {}
for sp in (0.0025, 0.00125):
    s = seeded_summary("obj_%g" % sp, 3, "0,0,0", "0.4,0.56,0.4", 0.005, ["-r_shape", "mesh", "-r_file", fill, "-r_center", "0.2,0,0.2", "-r_spacing", str(sp)])
    geo[sp] = s["geometry_bytes_max_rank"]
    check_mass("OBJ cone sampled at %g mm" % (1e3 * sp), s["total_mass"], tri_volume([verts[i:i + 3] for i in range(0, len(verts), 3)]))
ext = [max(v[k] for v in verts) - min(v[k] for v in verts) for k in range(3)]
lattice = 8 * math.prod(math.ceil((e + 6 * 0.00125) / 0.00125) + 1 for e in ext)
c.within("mesh samples: memory at 1.25 mm / at 2.5 mm (area x4, volume x8)", geo[0.00125] / geo[0.0025], 3.0, 4.6)
c.within("mesh samples at 1.25 mm: stored bytes / the whole lattice's %.3g MB" % (lattice / 1e6), geo[0.00125] / lattice, 0.0, 0.3)
# a mesh object carries a block's weight: a 0.3 x 0.04 x 0.3 m STL slab under a sand block
slab = os.path.join(work, "slab.stl")
with open(slab, "w") as f:
    f.write("solid slab\n" + "".join(" facet normal 0 0 0\n  outer loop\n" + "".join("   vertex %g %g %g\n" % p for p in t) + "  endloop\n endfacet\n" for t in cube_tris((0.05, 0.0, 0.05), (0.35, 0.04, 0.35))) + "endsolid\n")
out = T.outdir("geometry_mesh_object")
T.run(2, ["-dim", "3", "-dx", "0.02", "-domain_lo", "0,0,0", "-domain_hi", "0.4,0.3,0.4", "-gravity", "0,-9.81,0", "-gravity_ramp", "0.1", "-t_end", "0.2", "-output_dt", "0.1",
          "-history_interval", "20", "-output_dir", out, "-regions", "r", "-r_material", "sand", "-r_lo", "0.1,0.04,0.1", "-r_hi", "0.3,0.12,0.3", "-objects", "slab", "-slab_shape", "mesh",
          "-slab_file", slab, "-slab_spacing", "0.01", "-slab_friction", "0.6"] + SAND)
f, h = T.mpmio.forces(out, "slab"), T.mpmio.history(out)
c.close("STL object: a sand block's weight on it, fy / (-M g)", f["fy"][f["t"] > 0.15].mean() / (-h["mass"][0] * G), 1.0, rtol=0.02)
# A mesh object that stands still is held by each rank only around its
# slab (-slice_objects, the default): a 1.5 m STL strip under a sand layer
# along x, on 3 ranks; the rank holding most keeps under 65 % of the
# samples (a third and the margins: 3 cells and an eighth of its slab on
# each side), and the results are those of every rank holding all of it,
# to the bit; the picture (objects.h5), traced by each rank on its slab
# and gathered, has the same triangles.  Then a 0.45 m strip under the
# same layer: the last rank's slab lies beside the strip's samples, and
# its nodes read the samples' face (the distance beyond the box is added
# to the nearest sample): the same to the bit again.
def strip_run(name, x1, sl):
    stl = os.path.join(work, name + ".stl")
    with open(stl, "w") as f:
        f.write("solid strip\n" + "".join(" facet normal 0 0 0\n  outer loop\n" + "".join("   vertex %g %g %g\n" % p for p in t) + "  endloop\n endfacet\n" for t in cube_tris((0.05, 0.0, 0.025), (x1, 0.04, 0.175))) + "endsolid\n")
    out = T.outdir("geometry_%s_sliced_%s" % (name, sl))
    T.run(3, ["-dim", "3", "-dx", "0.02", "-domain_lo", "0,0,0", "-domain_hi", "1.6,0.2,0.2", "-gravity", "0,-9.81,0", "-t_end", "0.05", "-output_dt", "0.05",
              "-output_dir", out, "-regions", "r", "-r_material", "sand", "-r_lo", "0.1,0.04,0.05", "-r_hi", "1.5,0.08,0.15", "-objects", "strip", "-strip_shape", "mesh", "-strip_file", stl,
              "-strip_spacing", "0.005", "-strip_friction", "0.6", "-slice_objects", sl] + SAND)
    fr = T.mpmio.read_frame(T.mpmio.frame_files(out)[-1])
    with T.mpmio.h5py.File(os.path.join(out, "objects.h5"), "r") as g:
        tri = g["strip/points"][()].reshape(-1, 9)
    return T.mpmio.summary(out)["geometry_bytes_max_rank"], fr, tri[np.lexsort(tri.T[::-1])]


for name, x1 in (("strip", 1.55), ("short_strip", 0.5)):
    sliced = {sl: strip_run(name, x1, sl) for sl in ("true", "false")}
    if name == "strip":
        c.within("sliced mesh object on 3 ranks: samples held by the busiest rank / all of them", sliced["true"][0] / sliced["false"][0], 0.0, 0.65)
    c.true("sliced %s: every frame array the same to the bit as with every rank holding it all" % name,
           all(np.array_equal(sliced["true"][1][k], sliced["false"][1][k]) for k in sliced["false"][1] if isinstance(sliced["false"][1][k], np.ndarray)), "")
    c.true("sliced %s: its picture has the same %d triangles" % (name, len(sliced["false"][2])), np.array_equal(sliced["true"][2], sliced["false"][2]) and len(sliced["false"][2]) > 100, "")

# The same for position-based grains (their own collision pass, at the
# grains): an hourglass's fill dropping 1 cm onto an STL plate, slabs along
# y, so the top rank's slab lies above the plate's samples.
plate = os.path.join(work, "plate.stl")
with open(plate, "w") as f:
    f.write("solid plate\n" + "".join(" facet normal 0 0 0\n  outer loop\n" + "".join("   vertex %g %g %g\n" % p for p in t) + "  endloop\n endfacet\n" for t in cube_tris((-0.05, 0.115, -0.05), (0.17, 0.125, 0.17))) + "endsolid\n")
grains = {}
for sl in ("true", "false"):
    out = T.outdir("geometry_pbd_plate_sliced_" + sl)
    T.run(3, ["-dim", "3", "-dx", "0.005", "-domain_lo", "0,0,0", "-domain_hi", "0.12,0.26,0.12", "-gravity", "0,-9.81,0", "-integrator", "pbd", "-t_end", "0.1", "-output_dt", "0.1",
              "-dt_max", "0.002", "-materials", "grains", "-grains_type", "grain", "-grains_density", "1600", "-grains_radius", "0.002", "-grains_static_friction", "0.6",
              "-grains_kinetic_friction", "0.5", "-regions", "fill", "-fill_lo", "0,0.135,0", "-fill_hi", "0.12,0.2,0.12", "-fill_material", "grains", "-fill_ppc", "1", "-fill_sampling", "lattice",
              "-objects", "plate", "-plate_shape", "mesh", "-plate_file", plate, "-plate_spacing", "0.0025", "-plate_friction", "0.5", "-slice_objects", sl, "-output_dir", out])
    grains[sl] = T.mpmio.read_frame(T.mpmio.frame_files(out)[-1])
c.true("sliced STL plate under position-based grains (3 ranks): every frame array the same to the bit as with every rank holding it all",
       all(np.array_equal(grains["true"][k], grains["false"][k]) for k in grains["false"] if isinstance(grains["false"][k], np.ndarray)), "")
c.true("the grains reached the plate (lowest at %.4f m, its top at 0.125 m)" % grains["true"]["position"][:, 1].min(), abs(grains["true"]["position"][:, 1].min() - 0.127) < 0.002, "")

# refusals
for extra, msg in [(["-r_shape", "polygon", "-r_vertices", "0,0,1,1"], "-r_vertices needs at least 3 points"),
                   (["-r_shape", "terrain", "-r_file", "/nonexistent.asc", "-r_clip_to_domain"], "-r_file /nonexistent.asc: cannot read the terrain file"),
                   (["-r_shape", "difference", "-r_parts", "a"], "-r_parts needs at least 2 part names"),
                   (["-r_shape", "mesh", "-r_file", cube_ascii], "-r_shape mesh: triangle meshes are 3D; in 2D use -r_shape polygon")]:
    out = T.outdir("geometry_bad")
    p = T.run(1, ["-dim", "2", "-dx", "0.01", "-domain_lo", "0,0", "-domain_hi", "1,1", "-output_dir", out, "-regions", "r", "-r_material", "sand"] + SAND + extra, check=False)
    c.true("refused: %s" % " ".join(extra[:2]), p.returncode == 1 and msg in p.stderr and "PETSC ERROR" not in p.stderr, p.stderr.strip()[-200:])
c.done()
