"""Two-way coupled rigid bodies (-<object>_dynamic; Daviet and
Bertails-Descoubes 2016 s. 6.1, issue 13): inputs/wheel_2d.yaml at dx = 1 cm,
a disk of radius 4 cm (5.03 kg/m) on a 5 cm sand bed, driven by a torque of
-1 N m/m, 0.2 s.

1. With rim friction 0.5 the wheel is driven forward (more than 2 cm; measured
   3.4 cm) and skids: its rim turns faster than it rolls (omega r / v > 1.5;
   measured 2.5).  Balances, from history.csv at every step:
   - momentum of grains and wheel: P0 + (m + M) g t minus the walls'
     impulses, within 1e-6 of (m + M) g t_end (measured 1e-9, the history's
     printed digits);
   - the wheel's spin: I omega = tau t + the grains' angular impulse, within
     1e-6 of tau t_end.
2. Without rim friction the grains cannot turn it or push it: it spins freely
   (omega = tau t / I within 1e-9), stays where it is (under 1 mm) and sinks
   (more than 5 mm; measured 11 mm).
3. Rank invariance at 1, 2 and 3 ranks (0.1 s): grains and wheel within
   1e-9 m (the body's update sums over ranks: roundoff).
4. A restart at step 50 on 2 ranks continues bit for bit, the wheel's
   state included (checkpoint attribute "bodies").
5. 3D (inputs/verification/bodies_free_3d.yaml, 0.1 s, 2 ranks): a ball
   with a torque about a general axis and a cylinder turned about its
   (1,1,0) axis, clear of the sand: omega = tau t / I with the shapes'
   inertia (2/5 m r^2; 1/2 m r^2 about the axis) within 1e-12, and the
   centres fall as the symplectic Euler steps do, x0 + v0 t - g dt^2
   n (n + 1) / 2, within 1e-12 m.
6. The APGD solver (-nonsmooth_solver apgd) couples the wheel as well: the
   body takes one relaxation per operator application (Gauss-Seidel: per
   colour).  Its 0.2 s run advances as Gauss-Seidel's within 2 % (measured
   3.38 cm both) and sinks within 1 mm, the balances of 1 hold to 1e-6,
   without rim friction the wheel spins freely (1e-9), and 1, 2 and 3 ranks
   agree within 1e-9 m (measured 6e-17 m); a restart at step 50 on 2
   ranks continues bit for bit.
7. A body on the domain's faces (MPMCollidersBodiesWalls, sequential
   impulses): the disk dropped with 1 m/s across onto the bare floor
   (friction 0.577) lands on it (centre at r, 1e-12 m), slides, then rolls
   at 2/3 of its speed with omega = -v/r (1e-9: the rolling speed of a disk
   with I = M r^2 / 2 whatever the friction), and the floor takes its weight
   (with the far sand patch's, 1e-3); 2 ranks give the wheel's bits of 1.
   The same disk dropped onto a table (a static box object of -objects)
   lands on it (centre at the table's top + r, 1e-12 m), rolls at 2/3 v0
   (1e-9) and the table carries its weight (1e-6).
   A box tilted 20 deg dropped on a frictionless floor lands on a corner,
   turns and comes to rest flat (centre at its half height, 1e-9 m) with
   its centre's x unchanged (1e-12 m) and its energy never growing.
   The box dropped flat onto a ball (a disk object of radius 0.5 m, wider
   than the box is high, so resting on its top is stable) rests with its
   face on the ball's top (centre at top + half height, 1e-12 m; with its
   corners alone as contact points it sank 2.5 mm into the ball) and the
   ball carries its weight (1e-6).
   The box dropped tilted 10 deg onto a bar narrower than it (friction
   0.577) turns on the bar's corner and comes to rest flat on the bar's top
   (centre at top + half height, 1e-12 m; spin 1e-8 rad/s, measured 5e-9;
   the bar carries its weight, 1e-6): the bar's corners meet the box's
   face between its corners (EdgePoints).  Before, the box hung tilted on
   the point under its centre with the bar's corner 3.5 mm inside it.
   In 3D, a box turned 40 and 10 deg dropped across a bar 2 cm wide rocks,
   then rests on the bar's top (centre 1e-9 m; measured 1e-12) carrying
   its weight (1e-4; measured 3e-6), its centre still to 1e-5 m over the
   last 0.2 s (measured 4e-7) and a residual spin below 0.05 rad/s
   (measured 0.02: the velocities that land its contacts from step to
   step).
"""
import json
import os
import subprocess
import sys

import numpy as np
import mpmtest as T

c = T.Checks("two-way coupled rigid bodies (nonsmooth integrator)")
DECK = "wheel_2d.yaml"
BASE = ["-dx", "0.01", "-history_interval", "1"]
R, RHO, TAU, G = 0.04, 1000.0, -1.0, 9.81
M = RHO * np.pi * R * R
I = 0.5 * M * R * R


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


def balances(h):
    """Largest momentum and spin balance errors over the run [N s], [N m s]."""
    t = h["t"]
    dt = np.diff(t)
    m = h["mass"][0]
    walls_x = sum(h["bc_%s_fx" % f][1:] for f in ("xlo", "xhi", "ylo", "yhi"))
    walls_y = sum(h["bc_%s_fy" % f][1:] for f in ("xlo", "xhi", "ylo", "yhi"))
    px = h["momentum_x"] + M * h["wheel_vx"]
    py = h["momentum_y"] + M * h["wheel_vy"]
    ex = px - (px[0] - np.concatenate([[0], np.cumsum(walls_x * dt)]))
    ey = py - (py[0] + np.concatenate([[0], np.cumsum(((m + M) * -G - walls_y) * dt)]))
    ew = I * h["wheel_wz"] - (TAU * t + np.concatenate([[0], np.cumsum(h["wheel_tz"][1:] * dt)]))
    return max(np.abs(ex).max(), np.abs(ey).max()), np.abs(ew).max(), (m + M) * G * t[-1]


# 1. driven by friction
out = T.outdir("bodies_wheel")
T.run_deck(DECK, 1, out, *BASE, "-t_end", "0.2", "-output_dt", "0.1")
h = T.mpmio.history(out)
adv = h["wheel_x"][-1] - h["wheel_x"][0]
c.within("friction 0.5: the wheel advances [m]", adv, 0.02, 0.3)
c.within("friction 0.5: it skids, |omega| r / v", abs(h["wheel_wz"][-1]) * R / h["wheel_vx"][-1], 1.5, 100)
ep, ew, scale = balances(h)
c.close("friction 0.5: momentum balance of grains and wheel / ((m + M) g t)", ep / scale, 0.0, atol=1e-6)
c.close("friction 0.5: spin balance, I omega - tau t - grains' angular impulse / |tau t|", ew / abs(TAU * h["t"][-1]), 0.0, atol=1e-6)
c.true("friction 0.5: no particle lost", len(final(out)["id"]) == 1200)
print("  wheel: x advanced %.4f m, v %.3f m/s, omega %.2f rad/s, sank %.4f m, %.1f sweeps per step"
      % (adv, h["wheel_vx"][-1], h["wheel_wz"][-1], h["wheel_y"][0] - h["wheel_y"][-1], h["dcfp_its"][1:].mean()))

js = os.path.join(out, "body.json")
subprocess.run([sys.executable, os.path.join(T.SOURCE, "postproc", "body_history.py"), out, "--body", "wheel", "--radius", str(R), "--label", "mu", "--json", js], check=True, capture_output=True)
with open(js) as f:
    c.close("postproc/body_history.py: the travel it reports [m]", json.load(f)["mu"]["travel"], adv, rtol=1e-12)

adv_gs, sank_gs = adv, h["wheel_y"][0] - h["wheel_y"][-1]

# 2. no rim friction
out = T.outdir("bodies_wheel_smooth")
T.run_deck(DECK, 1, out, *BASE, "-t_end", "0.2", "-output_dt", "0.1", "-wheel_friction", "0")
h = T.mpmio.history(out)
c.close("friction 0: spins freely, omega / (tau t / I)", h["wheel_wz"][-1] / (TAU * h["t"][-1] / I), 1.0, rtol=1e-9)
c.within("friction 0: stays in place, |x - x0| [m]", abs(h["wheel_x"][-1] - h["wheel_x"][0]), 0.0, 1e-3)
c.within("friction 0: sinks [m]", h["wheel_y"][0] - h["wheel_y"][-1], 0.005, 0.05)

# 3. rank invariance
runs = {}
for n in (1, 2, 3):
    o = T.outdir("bodies_ranks_%d" % n)
    T.run_deck(DECK, n, o, "-dx", "0.01", "-t_end", "0.1", "-output_dt", "0.1", "-slab_axis", "x")
    runs[n] = (final(o), T.mpmio.history(o))
for n in (2, 3):
    a, b = runs[1], runs[n]
    c.close("1 vs %d ranks: grains, max position difference [m]" % n, np.abs(a[0]["position"] - b[0]["position"]).max(), 0.0, atol=1e-9)
    c.close("1 vs %d ranks: wheel centre difference [m]" % n, max(abs(a[1]["wheel_" + k][-1] - b[1]["wheel_" + k][-1]) for k in "xy"), 0.0, atol=1e-9)

# 4. restart bit for bit
out = T.outdir("bodies_restart")
args = ["-dx", "0.01", "-t_end", "0.1", "-output_dt", "0.1", "-checkpoint_interval", "50"]
T.run_deck(DECK, 2, out, *args, "-max_steps", "50")
T.run_deck(DECK, 2, out, *args, "-restart", "latest")
ref = T.outdir("bodies_restart_ref")
T.run_deck(DECK, 2, ref, *args)
a, b = final(ref), final(out)
c.true("restart at step 50: grains bit for bit", all(np.array_equal(a[k], b[k]) for k in ("id", "position", "velocity")))
ha, hb = T.mpmio.history(ref), T.mpmio.history(out)
c.true("restart at step 50: the wheel's last row bit for bit", all(ha["wheel_" + k][-1] == hb["wheel_" + k][-1] for k in ("x", "y", "vx", "vy", "wz")))

# 5. 3D free bodies
out = T.outdir("bodies_free_3d")
T.run_deck("verification/bodies_free_3d.yaml", 2, out, "-history_interval", "10")
h = T.mpmio.history(out)
t, n = h["t"][-1], h["step"][-1]
mb = 2000.0 * 4.0 / 3.0 * np.pi * 0.02 ** 3
Ib = 0.4 * mb * 0.02 ** 2
mc = 500.0 * np.pi * 0.02 ** 2 * 0.06
Ic = 0.5 * mc * 0.02 ** 2
wb = np.array([0.001, 0.002, -0.003]) * t / Ib
wc = np.array([0.002, 0.002, 0.0]) * t / Ic
c.close("3D ball: omega = tau t / (2/5 m r^2) [rad/s]", max(abs(h["ball_w" + k][-1] - wb[i]) for i, k in enumerate("xyz")), 0.0, atol=1e-12 * np.abs(wb).max())
c.close("3D cylinder about its axis: omega = tau t / (1/2 m r^2) [rad/s]", max(abs(h["can_w" + k][-1] - wc[i]) for i, k in enumerate("xyz")), 0.0, atol=1e-12 * np.abs(wc).max())
fall = G * h["dt"][-1] ** 2 * n * (n + 1) / 2  # a fixed step (-dt_max) all the way
c.close("3D ball: centre after n symplectic Euler steps [m]", abs(h["ball_x"][-1] - 0.06) + abs(h["ball_y"][-1] - (0.15 - fall)) + abs(h["ball_z"][-1] - 0.05), 0.0, atol=1e-12)
c.close("3D cylinder: centre [m]", abs(h["can_y"][-1] - (0.14 - fall)), 0.0, atol=1e-12)

# 6. the APGD solver
APGD = ["-nonsmooth_solver", "apgd"]
out = T.outdir("bodies_wheel_apgd")
T.run_deck(DECK, 1, out, *BASE, *APGD, "-t_end", "0.2", "-output_dt", "0.1")
h = T.mpmio.history(out)
adv = h["wheel_x"][-1] - h["wheel_x"][0]
print("  APGD wheel: x advanced %.4f m (Gauss-Seidel %.4f), sank %.4f m (%.4f), %.1f gradient steps per step"
      % (adv, adv_gs, h["wheel_y"][0] - h["wheel_y"][-1], sank_gs, h["dcfp_its"][1:].mean()))
c.close("APGD, friction 0.5: advance / Gauss-Seidel's", adv / adv_gs, 1.0, rtol=0.02)
c.close("APGD, friction 0.5: sinks as Gauss-Seidel's wheel [m]", h["wheel_y"][0] - h["wheel_y"][-1], sank_gs, atol=1e-3)
ep, ew, scale = balances(h)
c.close("APGD, friction 0.5: momentum balance / ((m + M) g t)", ep / scale, 0.0, atol=1e-6)
c.close("APGD, friction 0.5: spin balance / |tau t|", ew / abs(TAU * h["t"][-1]), 0.0, atol=1e-6)
out = T.outdir("bodies_wheel_smooth_apgd")
T.run_deck(DECK, 1, out, *BASE, *APGD, "-t_end", "0.1", "-output_dt", "0.1", "-wheel_friction", "0")
h = T.mpmio.history(out)
c.close("APGD, friction 0: spins freely, omega / (tau t / I)", h["wheel_wz"][-1] / (TAU * h["t"][-1] / I), 1.0, rtol=1e-9)
runs = {}
for n in (1, 2, 3):
    o = T.outdir("bodies_apgd_ranks_%d" % n)
    T.run_deck(DECK, n, o, *APGD, "-dx", "0.01", "-t_end", "0.1", "-output_dt", "0.1", "-slab_axis", "x")
    runs[n] = (final(o), T.mpmio.history(o))
for n in (2, 3):
    a, b = runs[1], runs[n]
    c.close("APGD 1 vs %d ranks: grains, max position difference [m]" % n, np.abs(a[0]["position"] - b[0]["position"]).max(), 0.0, atol=1e-9)
    c.close("APGD 1 vs %d ranks: wheel centre difference [m]" % n, max(abs(a[1]["wheel_" + k][-1] - b[1]["wheel_" + k][-1]) for k in "xy"), 0.0, atol=1e-9)
out = T.outdir("bodies_restart_apgd")
T.run_deck(DECK, 2, out, *args, *APGD, "-max_steps", "50")
T.run_deck(DECK, 2, out, *args, *APGD, "-restart", "latest")
ref = T.outdir("bodies_restart_apgd_ref")
T.run_deck(DECK, 2, ref, *args, *APGD)
a, b = final(ref), final(out)
c.true("APGD restart at step 50: grains bit for bit", all(np.array_equal(a[k], b[k]) for k in ("id", "position", "velocity")))
ha, hb = T.mpmio.history(ref), T.mpmio.history(out)
c.true("APGD restart at step 50: the wheel's last row bit for bit", all(ha["wheel_" + k][-1] == hb["wheel_" + k][-1] for k in ("x", "y", "vx", "vy", "wz")))

# 7. the domain's faces stop a body
DROP = ["-dx", "0.01", "-bed_lo", "0.5,0", "-bed_hi", "0.6,0.02", "-wheel_torque", "0", "-t_end", "0.4", "-output_dt", "0.2", "-history_interval", "1"]
drop = {}
for n in (1, 2):
    o = T.outdir("bodies_drop_%d" % n)
    T.run_deck(DECK, n, o, *DROP, "-wheel_center", "0.1,0.1", "-wheel_velocity", "1,0")
    drop[n] = T.mpmio.history(o)
h = drop[1]
c.close("disk dropped on the floor: centre height at rest / r", h["wheel_y"][-1] / R, 1.0, atol=1e-12 / R)
c.close("disk rolling: v / (2/3 v0)", h["wheel_vx"][-1] / (2.0 / 3.0), 1.0, atol=1e-9)
c.close("disk rolling: -omega r / v", -h["wheel_wz"][-1] * R / h["wheel_vx"][-1], 1.0, atol=1e-9)
c.close("disk at rest on the floor: floor load / ((M + sand patch) g)", -h["bc_ylo_fy"][-1] / ((M + 0.1 * 0.02 * 1600) * G), 1.0, rtol=1e-3)
c.true("disk dropped: 2 ranks give the wheel's bits of 1", all(np.array_equal(drop[1]["wheel_" + k], drop[2]["wheel_" + k]) for k in ("x", "y", "vx", "vy", "wz")))
box = T.outdir("bodies_box")
os.makedirs(box)
deck = open(T.deck(DECK)).read().replace("shape: sphere ", "shape: box #").replace("center: 0.15,0.0905", "lo: 0.05,0.08 #").replace("radius: 0.04", "hi: 0.15,0.12")
open(os.path.join(box, "box.yaml"), "w").write(deck)
T.run(1, ["-options_file_yaml", os.path.join(box, "box.yaml"), "-output_dir", os.path.join(box, "run"), *DROP, "-wheel_rotation", "20", "-bc_ylo", "slip"])
h = T.mpmio.history(os.path.join(box, "run"))
MB = 0.1 * 0.04 * RHO
E = 0.5 * MB * (h["wheel_vx"] ** 2 + h["wheel_vy"] ** 2) + 0.5 * MB * (0.05 ** 2 + 0.02 ** 2) / 3 * h["wheel_wz"] ** 2 + MB * G * h["wheel_y"]
c.close("tilted box on a frictionless floor: centre height at rest [m]", h["wheel_y"][-1], 0.02, atol=1e-9)
c.close("tilted box: centre x unchanged [m]", np.abs(h["wheel_x"] - 0.1).max(), 0.0, atol=1e-12)
c.close("tilted box: spin at rest [rad/s]", h["wheel_wz"][-1], 0.0, atol=1e-9)
c.true("tilted box: it turned on landing (a corner hit first)", np.abs(h["wheel_wz"]).max() > 1.0)
c.close("tilted box: largest energy gain between rows [J/m]", max(0.0, np.diff(E).max()), 0.0, atol=1e-9)
# 7c. a face on a convex object: the box dropped flat onto a ball's top,
# between its corners (a disk object of radius 0.5 m, top at y = 0.05 m)
ball = os.path.join(box, "ball")
T.run(1, ["-options_file_yaml", os.path.join(box, "box.yaml"), "-output_dir", ball, *DROP, "-objects", "wheel,ball", "-ball_shape", "sphere", "-ball_center", "0.1,-0.45",
          "-ball_radius", "0.5", "-ball_mode", "separate", "-ball_friction", "0.577"])
h = T.mpmio.history(ball)
c.close("box dropped flat on a ball: centre height at rest - (ball's top + half height) [m]", h["wheel_y"][-1] - 0.07, 0.0, atol=1e-12)
c.close("box on the ball: spin at rest [rad/s]", h["wheel_wz"][-1], 0.0, atol=1e-9)
c.close("box at rest on the ball: ball load / (M g)", -h["ball_fy"][-1] / (MB * G), 1.0, rtol=1e-6)
# 7d. a face on an object's edges: the box dropped tilted 10 deg onto a bar
# narrower than it (a box object 4 cm wide, top at y = 0.07 m, friction 0.577):
# the bar's corner meets the box's face between its corners (EdgePoints)
bar = os.path.join(box, "bar")
T.run(1, ["-options_file_yaml", os.path.join(box, "box.yaml"), "-output_dir", bar, *DROP, "-t_end", "0.6", "-output_dt", "0.3", "-wheel_rotation", "10", "-objects", "wheel,bar",
          "-bar_shape", "box", "-bar_lo", "0.08,0.03", "-bar_hi", "0.12,0.07", "-bar_mode", "separate", "-bar_friction", "0.577"])
h = T.mpmio.history(bar)
c.true("box tilted onto a bar: it turned on the bar's corner (largest |spin| > 1 rad/s)", np.abs(h["wheel_wz"]).max() > 1.0)
c.close("box on the bar: centre height at rest - (bar's top + half height) [m] (flat; it hung tilted at +0.3 mm, the bar's corner 3.5 mm inside it)", h["wheel_y"][-1] - 0.09, 0.0, atol=1e-12)
c.close("box on the bar: spin at rest [rad/s]", h["wheel_wz"][-1], 0.0, atol=1e-8)
c.close("box on the bar: centre x still at rest over the last 0.2 s [m]", np.ptp(h["wheel_x"][-200:]), 0.0, atol=1e-12)
c.close("box at rest on the bar: bar load / (M g)", -h["bar_fy"][-1] / (MB * G), 1.0, rtol=1e-6)

# 7e. the same in 3D: a box turned 40 and 10 deg dropped across a bar 2 cm
# wide (its top at y = 0.08 m), dx 2 cm, no sand under it to speak of
bar3 = os.path.join(box, "bar3d")
os.makedirs(bar3)
open(os.path.join(bar3, "deck.yaml"), "w").write("""dim: 3
domain_lo: 0,0,0
domain_hi: 0.2,0.2,0.2
dx: 0.02
t_end: 1.5
output_dt: 0.75
integrator: nonsmooth
gravity: 0,-9.81,0
materials: sand
sand:
  type: drucker_prager
  density: 1600
  youngs_modulus: 2.0e6
  poisson_ratio: 0.3
  friction_angle: 30
regions: bed
bed:
  shape: box
  lo: 0,0,0
  hi: 0.2,0.01,0.2
  material: sand
  ppc: 2
  sampling: lattice
objects: blk,bar
blk:
  shape: box
  lo: 0.06,0.1,0.08
  hi: 0.14,0.14,0.12
  rotation: 40,10,0
  dynamic: true
  density: 500
bar:
  shape: box
  lo: 0.09,0.0,0.02
  hi: 0.11,0.08,0.18
  mode: separate
  friction: 0.5
""")
T.run(1, ["-options_file_yaml", os.path.join(bar3, "deck.yaml"), "-output_dir", os.path.join(bar3, "run"), "-history_interval", "10"])
h = T.mpmio.history(os.path.join(bar3, "run"))
M3 = 0.08 * 0.04 * 0.04 * 500
c.close("3D box across a bar: centre height at rest - (bar's top + half height) [m]", h["blk_y"][-1] - 0.1, 0.0, atol=1e-9)
c.close("3D box on the bar: bar load / (M g)", -h["bar_fy"][-1] / (M3 * G), 1.0, rtol=1e-4)
c.close("3D box on the bar: centre x over the last 0.2 s [m]", np.ptp(h["blk_x"][-20:]), 0.0, atol=1e-5)
c.within("3D box on the bar: residual spin [rad/s] (the landing velocities of its contacts, step to step)", np.sqrt(h["blk_wx"][-1] ** 2 + h["blk_wy"][-1] ** 2 + h["blk_wz"][-1] ** 2), 0.0, 0.05)

# 7b. the deck's objects stop a body as the faces do: the same drop onto a table (a static box, friction 0.577)
o = T.outdir("bodies_table")
T.run_deck(DECK, 1, o, *DROP, "-wheel_center", "0.1,0.15", "-wheel_velocity", "1,0", "-objects", "wheel,table", "-table_shape", "box", "-table_lo", "0,0.03",
           "-table_hi", "0.45,0.05", "-table_mode", "separate", "-table_friction", "0.577")
h = T.mpmio.history(o)
c.close("disk dropped on a table object: centre height at rest - (table top + r) [m]", h["wheel_y"][-1] - (0.05 + R), 0.0, atol=1e-12)
c.close("disk rolling on the table: v / (2/3 v0)", h["wheel_vx"][-1] / (2.0 / 3.0), 1.0, atol=1e-9)
c.close("disk rolling on the table: -omega r / v", -h["wheel_wz"][-1] * R / h["wheel_vx"][-1], 1.0, atol=1e-9)
c.close("disk at rest on the table: table load / (M g)", -h["table_fy"][-1] / (M * G), 1.0, rtol=1e-6)
c.close("disk on the table: the floor under it carries the sand patch only / (patch g)", -h["bc_ylo_fy"][-1] / (0.1 * 0.02 * 1600 * G), 1.0, rtol=1e-3)

c.done()
