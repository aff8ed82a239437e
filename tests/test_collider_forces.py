"""Forces and torques on collision objects (history.csv, <name>_fx ...):

- history_units.csv gives every history.csv column its SI unit (2D: per
  unit depth).
- Momentum balance, exact to roundoff: the transfers conserve momentum, so
  between two history rows the forces on all objects add up to
  M g - dP/dt (P the particles' momentum, M their mass).  Checked at every
  row of a collapsing 2D sand column (1 and 2 ranks) and of a 3D stick
  dragged through sand (2 ranks, a moving, turning object).
- Statics: an elastic block resting on the floor (gravity ramped in, then
  held) loads the floor with its weight, -M g, and the floor's torque about
  the domain origin puts that load at the block's centre, tz / fy = x_c
  (both within 1 %).
- A restart in the middle of an interval reproduces the forces of the
  uninterrupted run (the impulses are checkpointed), in history.csv and in
  forces/<object>.csv (with the run totals: impulse, peak force).
- Barrier loads (forces/<object>.csv, summary.json "objects"):
  a sand column between frictionless walls resting on a plate object
  loads it with its weight, fy = -M g within 1 %, and the plate's impulse
  over the last 0.2 s is -M g x 0.2 s within 1 %; a jet of sand shot at
  v = 2 m/s onto a frictionless barrier (no gravity) loads it with the
  momentum flux (dm/dt) v within 10 % (dm/dt from the emitted mass).  The
  summary's impulse and peak are the CSV's last row.  The peak is taken
  over rows at least half as long as the longest (a row cut short to land
  on a frame time is no sustained load)."""
import os
import shutil

import numpy as np
import mpmtest as T

G = 9.81


def force_columns(h, names, dim):
    comps = ("fx", "fy", "fz") if dim == 3 else ("fx", "fy")
    return np.array([[sum(h["%s_%s" % (n, k)][i] for n in names) for k in comps] for i in range(len(h["t"]))])


def objects(h):
    return sorted({k.rsplit("_", 1)[0] for k in h if k.endswith("_fx")})


def units(c, label, out, dim, names):
    """history_units.csv: a unit for every history.csv column, per unit depth in 2D."""
    u, h = T.mpmio.history_units(out), T.mpmio.history(out)
    c.true("%s: history_units.csv has history.csv's columns, in order" % label, list(u) == list(h), "%d and %d columns" % (len(u), len(h)))
    expect = {"t": "s", "step": "-", "mass": "kg" if dim == 3 else "kg/m", "momentum_x": "kg m/s" if dim == 3 else "kg/s",
              "kinetic_energy": "J" if dim == 3 else "J/m", "vmax": "m/s", names[0] + "_fx": "N" if dim == 3 else "N/m", names[0] + "_tz": "N m" if dim == 3 else "N m/m"}
    wrong = {k: (u.get(k), v) for k, v in expect.items() if u.get(k) != v}
    c.true("%s: units of t, step, mass, momentum, energy, vmax, force and torque" % label, not wrong, "(got, expected): %s" % wrong if wrong else "")


def balance(c, label, out, dim, gvec):
    h = T.mpmio.history(out)
    names = objects(h)
    units(c, label, out, dim, names)
    F = force_columns(h, names, dim)
    P = np.stack([h["momentum_x"], h["momentum_y"]] + ([h["momentum_z"]] if dim == 3 else []), axis=1)
    M = h["mass"][0]
    dt = np.diff(h["t"])
    expect = M * np.asarray(gvec)[None, :dim] - np.diff(P, axis=0) / dt[:, None]
    err = np.abs(F[1:] - expect).max() / (M * G)
    c.true("%s: %d objects reported (%s)" % (label, len(names), ", ".join(names)), len(names) >= 2 * dim)
    c.close("%s: max |sum F - (M g - dP/dt)| / (M g) over %d rows" % (label, len(dt)), err, 0.0, atol=1e-8)
    c.true("%s: the objects carry load (max |F| > 0.5 M g)" % label, np.abs(F).max() > 0.5 * M * G, "max |F| = %.3g N" % np.abs(F).max())
    return h


c = T.Checks("collider forces and torques")
column = ["-dx", "0.00625", "-t_end", "0.4", "-output_dt", "0.1", "-history_interval", "25"]
for n in (1, 2):
    out = T.outdir("forces_column_%d" % n)
    T.run_deck("column_collapse_2d.yaml", n, out, *column)
    balance(c, "2D column, %d rank%s" % (n, "s" if n > 1 else ""), out, 2, (0, -G))

out = T.outdir("forces_stick")
T.run_deck("stick_through_sand_3d.yaml", 2, out, "-dx", "0.016", "-stick_radius", "0.03", "-t_end", "0.1", "-output_dt", "0.05", "-history_interval", "20")
h = balance(c, "3D stick through sand, 2 ranks", out, 3, (0, -G, 0))
fx = h["stick_fx"][h["t"] > 0.02]
c.true("3D stick: the sand pushes back on the stick (fx < 0 while it moves in +x)", (fx < 0).all(), "stick_fx in [%.3g, %.3g] N" % (fx.min(), fx.max()))

# statics: a 0.2 x 0.1 m neo-Hookean block centred at x = 0.5 m on a rough floor
out = T.outdir("forces_block")
block = ["-gravity", "0,-9.81", "-gravity_ramp", "0.2", "-t_end", "0.6", "-output_dt", "0.3", "-history_interval", "100", "-slider_lo", "0.4,0", "-slider_hi", "0.6,0.1",
         "-domain_hi", "1.0,0.4", "-bc_ylo_friction", "0.5"]
T.run_deck("verification/incline.yaml", 2, out, *block)
h = T.mpmio.history(out)
M = h["mass"][0]
late = h["t"] > 0.45
c.close("block at rest: floor force fy / (-M g)", h["bc_ylo_fy"][late].mean() / (-M * G), 1.0, rtol=0.01)
c.close("block at rest: floor torque arm tz / fy = x_c [m]", (h["bc_ylo_tz"][late] / h["bc_ylo_fy"][late]).mean(), 0.5, rtol=0.01)
c.close("block at rest: no horizontal floor force, |fx| / (M g)", np.abs(h["bc_ylo_fx"][late]).max() / (M * G), 0.0, atol=0.01)

# restart half-way through a history interval (step 1010, rows every 25):
# a copy of the run continued from its checkpoint gives the same forces
ref = T.outdir("forces_restart_ref")
T.run_deck("column_collapse_2d.yaml", 2, ref, *column, "-checkpoint_interval", "1010", "-checkpoint_keep", "5")
out = T.outdir("forces_restart")
shutil.copytree(ref, out)
T.run_deck("column_collapse_2d.yaml", 2, out, *column, "-checkpoint_interval", "1010", "-checkpoint_keep", "5", "-restart",
           os.path.join(out, "checkpoints", "ckpt_00001010.h5"))
a, b = T.mpmio.history(ref), T.mpmio.history(out)
cols = [k for k in a if k.endswith(("_fx", "_fy", "_tz"))]
c.true("restart mid-interval: identical force and torque columns", len(a["t"]) == len(b["t"]) and all(np.array_equal(a[k], b[k]) for k in cols),
       "%d rows, %d columns" % (len(a["t"]), len(cols)))
fa, fb = T.mpmio.forces(ref, "bc_ylo"), T.mpmio.forces(out, "bc_ylo")
c.true("restart mid-interval: identical forces/bc_ylo.csv (impulse since the start, peak)", len(fa["t"]) == len(fb["t"]) and all(np.array_equal(fa[k], fb[k]) for k in fa),
       "%d rows" % len(fa["t"]))

# a sand column on a plate: the plate carries the weight
out = T.outdir("forces_plate")
T.run_deck("verification/column_on_plate_2d.yaml", 2, out)
f, h = T.mpmio.forces(out, "plate"), T.mpmio.history(out)
W = h["mass"][0] * G
late = f["t"] > 0.4
c.close("column on a plate: fy / (-M g) at rest", f["fy"][late].mean() / -W, 1.0, rtol=0.01)
i0 = np.argmin(np.abs(f["t"] - 0.4))
c.close("column on a plate: impulse over [0.4, 0.6] s / (-M g 0.2 s)", (f["jy"][-1] - f["jy"][i0]) / (-W * (f["t"][-1] - f["t"][i0])), 1.0, rtol=0.01)
s = T.mpmio.summary(out)["objects"]["plate"]
c.true("summary: the plate's impulse and peak are the CSV's last row", np.allclose(s["impulse"], [f["jx"][-1], f["jy"][-1]], rtol=1e-6) and abs(s["peak_force"] - f["f_peak"][-1]) <= 1e-6 * s["peak_force"]
       and s["peak_force"] <= f["f_abs"].max() * (1 + 1e-6), "%s, peak %g vs %g (largest row %g)" % (s["impulse"], s["peak_force"], f["f_peak"][-1], f["f_abs"].max()))

# a jet of sand on a barrier: F = (dm/dt) v
out = T.outdir("forces_jet")
T.run_deck("verification/jet_on_wall_2d.yaml", 2, out)
f, h = T.mpmio.forces(out, "barrier"), T.mpmio.history(out)
v = 2.0
win = f["t"] > 0.07  # the jet reaches the barrier at 0.05 s
mdot = np.polyfit(h["t"][h["t"] > 0.01], h["mass"][h["t"] > 0.01], 1)[0]
c.close("jet: emitted mass flux / (rho 2 r v)", mdot / (1600 * 0.024 * v), 1.0, rtol=0.01)
c.close("jet on a barrier: mean fx over [0.07, 0.3] s / ((dm/dt) v)", f["fx"][win].mean() / (mdot * v), 1.0, rtol=0.10)
c.done()
