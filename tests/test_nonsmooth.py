"""The nonsmooth granular integrator (-integrator nonsmooth; Daviet and
Bertails-Descoubes 2016, issue 13; docs/design/nonsmooth.md).  The per-node
Coulomb problem is tested in test_kernels, section 11.

1. A sand layer on the floor of a box, at rest under gravity: the floor
   carries its weight (bc_ylo_fy = M g within 1 %, averaged over the last
   frame interval), the friction problem converged every step
   (dcfp_residual <= the tolerance), no fail-safe, and the grains stay put
   (median speed under 1e-4 m/s, the fastest under 1e-2 m/s).
   Static friction: the same layer between two slip walls under gravity
   tilted by 15 degrees (far below the friction angle, 30, and the floor's
   friction, tan 30) stays where it is: mean displacement under 0.01 cell
   and every particle under 0.1 cell after 0.5 s (measured 0.0028 and 0.069
   cell).  The walls' friction is part of the friction problem; applied
   after the solve, as before 2026-11-25, the layer slid over its held
   bottom row at 0.8 mm/s (0.06 cell by 0.5 s).
1c. The drift of grains held within the tolerance: the solve leaves up to
   tol rho g L unbalanced, which moves grains at rest by about tol (L/h) g
   dt^2 / h cells a step.  A layer 2 cm deep at L/256 (dx 0.98 mm, L =
   0.25 m), 0.3 s: at dt_max 1e-3 s the set-up warns, naming
   -nonsmooth_cfl_residual, and the grains drift (measured mean 0.022
   cell, top 0.05 cell down); with -nonsmooth_cfl_residual 1e-4 the step
   is dx sqrt(1e-4 / (tol g L)) = 1.97e-4 s (within 1 %), every step
   limited by it but the frame's, and the mean drift is under 0.005 cell
   and at least 5 times smaller (measured 0.0015).
2. Column collapse, a = 2 (inputs/column_collapse_2d.yaml at 16 cells, 2 ranks,
   across L0): the front stops between 2.5 and 6 tau_c, the runout and the
   final height are in the pass bands of reference-data s. 1 ([2.4, 4.6]
   and [0.9, 1.5] L0); the friction problem's sweeps per step are reported
   (summary.json dcfp_its).
2b. Lube et al. 2005 at the short end of the aspect ratios, a = 0.5, 16
   cells across L0, 2 ranks, through postproc/column_collapse_study.py,
   with the material calibrated in docs/validation.md ("Column collapse
   over aspect ratios": static 28 deg, mu(I) up to 40 deg, the floor tan
   28 deg): the runout to where the deposit is L0/16 thick within 20 % of
   the law (measured -17 %; the issue's band).  The tall end, a = 8, is
   in the docs' study (2 minutes on two cores).
3. Rank invariance: the collapse (60 steps) at 1, 2 and 3 ranks, with
   anisotropic grains (-sand_anisotropy 0.8, random normals drawn from the
   particles' ids, so that the orientation's seeding, transport and update
   are covered too) and particle frames with splitting and merging
   (-nonsmooth_frames, split at 1.5 half-spacings so that both happen in
   60 steps) and the mu(I) rheology (-sand_friction_angle_dynamic 40: the
   friction of each particle from its inertial number; the law is
   unit-tested in test_kernels, section 14), the same splits, merges and
   ids, the same mu(I) friction, the same sweep counts (the colours make the Gauss-Seidel independent of the
   partition) and the positions by id within 1e-6 m, 1.6e-4 cell: the
   converged solution to the tolerance.  Only the assembly sums differ (at
   roundoff), and a step whose Gauss-Seidel stops at -nonsmooth_max_it
   above the tolerance carries them further (step 44 here: 1,000 sweeps,
   residual 3.7e-3; 5e-9 m at the end).  The particle count is the seeded
   2,048 plus the splits less the merges, ids stay unique, mass and volume
   are kept (the kernels' conservation: test_kernels, section 13).
4. A restart at the same rank count continues bit for bit (the stress of
   the warm start, the grains' orientation, the frames and the mu(I)
   friction live on the
   particles and go through the checkpoint, the split count that numbers
   new ids in its attributes; the anisotropic collapse with frames).
5. Momentum: a block in free fall carries no stress and its momentum is
   P0 - M g t to roundoff.
6. The APGD solver (-nonsmooth_solver apgd) solves Gauss-Seidel's problem:
   the walls' Coulomb friction and the dynamic bodies are inside its
   operator (the velocities through the walls, as Gauss-Seidel's nodes see
   them), so its fixed points are Gauss-Seidel's.  The layer at rest again
   (floor force = weight within 1 %, converged every step, median speed
   under 1e-3 m/s); the tilted layer of 1b holds (at -nonsmooth_tol 1e-4:
   mean displacement under 0.01 cell, measured 0.0027, the same as
   Gauss-Seidel's 0.0028; at the default 1e-3 it creeps 0.0086); flat
   grains (section 8) flow at 13 deg as with Gauss-Seidel (mean
   displacement within 5 %: 0.954 and 0.953 cell); and the collapse's 60
   steps with the frictional floor at 1, 2 and 3 ranks.  APGD moves every
   node at once; the rank count enters only through the roundoff of its
   global sums (step length, restarts), so the positions agree within 1e-9
   m (measured 6e-17 m), and with Gauss-Seidel's within the tolerance, 0.1
   cell (measured 0.009 cell).  Over-relaxed Gauss-Seidel (-nonsmooth_omega
   1.5) on the same 60 steps: converged every step, in at most 0.9 of the
   sweeps (measured 0.70), at the same solution within 0.1 cell (0.011).
7. Silo discharge (inputs/silo_2d.yaml coarsened to 1 cm, opening 6
   cells, 2 ranks, APGD: the same problem, the same rate as Gauss-Seidel's
   to 0.3 %, in a third of the time): the discharge rate over 0.2-0.5 s
   is steady (each quarter within 10 % of the mean, reference-data s. 5;
   measured 3.5 %), and every
   particle is either in the silo or counted as deleted below it.  The
   Beverloo fit over four openings is jobscripts/silo_study.sh
   (docs/validation.md).
8. Anisotropic grains (D s. 6.2; the change of variables and the normals'
   update are unit-tested in test_kernels, section 12): flat grains lying
   on the floor (-sand_anisotropy 0.8, normals up).  A layer at rest
   carries its weight (within 1 %) and stays (median speed under 1e-3
   m/s).  Under tilted gravity the grains' planes slide on each other at a
   friction cut to (1 - alpha^2) mu: an infinite layer of this anisotropic
   cone holds up to the angle theta_c with tan theta_c = s mu / (q
   sqrt(s^2 - mu^2)), s = (N_x^2 + N_y^2)/2, q = N_x N_y, here 10.2 deg (30
   deg isotropic).  The confined layer holds at 8 deg (mean displacement
   under 0.1 cell after 0.25 s; measured 0.042) and flows at 13 deg (over
   0.5 cell; measured 0.95), where the isotropic one holds at 15 (1b).
9. A sand pile (reference-data s. 2; issue 13: within 2 deg of the friction
   angle): sand_pile_2d.yaml's pour, slowed to 0.1 m/s, at 5 mm cells (10
   cells high), 2 ranks, with -sand_cone repose (sqrt(J2) <= tan(phi) p).
   The seed's law is volume-preserving where it yields (D eq. 1, 2), so a
   flowing layer stops where tan(theta) = mu = sqrt(J2)/p: phi with the
   repose cone, atan(sin phi) = 26.6 deg with the plane-strain cone (as
   the explicit solver's piles, test_sand_pile).  Measured 29.9 deg
   on 2026-11-26 (docs/validation.md, "Sand pile"), 30.8 deg in CI on
   2026-11-28 with the solver's defaults since.
10. 3D (inputs/column_collapse_3d.yaml, 12,350 particles, 27 colours, the
   walls' friction in the solve), 4 steps: Gauss-Seidel at 1 and 2 ranks
   takes the same sweeps and the same positions within 1e-9 m; APGD on 2
   ranks reaches the tolerance and agrees with it within 0.01 cell (the
   tolerance's reach; measured 2e-4 cell); no particle lost.
"""
import json
import os
import subprocess
import sys

import numpy as np
import mpmtest as T

c = T.Checks("nonsmooth granular integrator")
G = 9.81
COLUMN = "column_collapse_2d.yaml"
# sand_pile_2d.yaml's spout a third as fast, for as long again (the same 4.4 s of pour at 0.3 m/s makes the
# avalanches overrun: 24 deg instead of 27 with the plane-strain cone); the nonsmooth step has no elastic limit
SLOW_POUR = ["-spout_speed", "0.1", "-spout_stop", "10.8", "-t_end", "11.6", "-dt_max", "0.004"]
NS = ["-integrator", "nonsmooth", "-dx", "0.00625"]


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


# 1. a layer at rest
out = T.outdir("nonsmooth_layer")
T.run_deck(COLUMN, 1, out, *NS, "-domain_hi", "0.2,0.25", "-column_hi", "0.2,0.05", "-t_end", "0.2", "-output_dt", "0.1")
h = T.mpmio.history(out)
M = h["mass"][0]
c.close("layer at rest: force on the floor / weight (the last frame's mean)", -h["bc_ylo_fy"][-1] / (M * G), 1.0, rtol=0.01)
s = summary(out)
c.within("layer at rest: largest DCFP residual over rho g L", s["integrator_dcfp_residual"], 0.0, 1e-3)
c.true("layer at rest: no local fail-safe", s["integrator_dcfp_failsafe"] == 0)
f = final(out)
speed = np.linalg.norm(f["velocity"], axis=1)
c.within("layer at rest: median speed [m/s]", np.median(speed), 0.0, 1e-4)
c.within("layer at rest: fastest particle [m/s]", speed.max(), 0.0, 1e-2)
print("  layer: %.1f Gauss-Seidel sweeps per step" % (s["integrator_dcfp_its"] / s["steps"]))

# 1b. static friction: the confined layer under a 15 degree tilt
out = T.outdir("nonsmooth_tilted_layer")
th = np.radians(15.0)
T.run_deck(COLUMN, 1, out, *NS, "-domain_hi", "0.2,0.25", "-column_hi", "0.2,0.05", "-bc_xhi", "slip", "-t_end", "0.5", "-output_dt", "0.25",
           "-gravity", "%.10g,%.10g" % (G * np.sin(th), -G * np.cos(th)))
f0 = T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[0]))
f = final(out)
disp = np.linalg.norm(f["position"] - f0["position"], axis=1) / 0.00625
c.within("tilted layer: mean displacement after 0.5 s [cells]", disp.mean(), 0.0, 0.01)
c.within("tilted layer: largest displacement after 0.5 s [cells]", disp.max(), 0.0, 0.1)
c.within("tilted layer: largest DCFP residual over rho g L", summary(out)["integrator_dcfp_residual"], 0.0, 1e-3)

# 1c. drift within the tolerance at fine cells, and -nonsmooth_cfl_residual
FINE = ["-integrator", "nonsmooth", "-dx", "0.0009765625", "-domain_hi", "0.0625,0.25", "-column_hi", "0.0625,0.02", "-bc_xhi", "slip",
        "-t_end", "0.3", "-output_dt", "0.3", "-history_interval", "1"]
drift = {}
for cfl in ("0", "1e-4"):
    out = T.outdir("nonsmooth_drift_" + cfl)
    p = T.run_deck(COLUMN, 1, out, *FINE, "-nonsmooth_cfl_residual", cfl)
    fs = T.mpmio.frame_files(out)
    f0, f = T.mpmio.sorted_by_id(T.mpmio.read_frame(fs[0])), T.mpmio.sorted_by_id(T.mpmio.read_frame(fs[-1]))
    drift[cfl] = np.linalg.norm(f["position"] - f0["position"], axis=1).mean() / 0.0009765625
    warned = [l for l in p.stderr.splitlines() if "warning" in l and "-nonsmooth_cfl_residual" in l]
    s = summary(out)
    if cfl == "0":
        c.true("fine layer, no limit: the set-up warns of the drift, naming -nonsmooth_cfl_residual", len(warned) == 1 and s["warnings"] == 1, p.stderr[-300:])
    else:
        c.true("fine layer, -nonsmooth_cfl_residual 1e-4: no warning", not warned and s["warnings"] == 0, p.stderr[-300:])
        h = T.mpmio.history(out)
        c.close("fine layer: dt = dx sqrt(1e-4 / (tol g L)) [s]", np.median(np.diff(h["t"])), 0.0009765625 * np.sqrt(1e-4 / (1e-3 * G * 0.25)), rtol=0.01)
        c.true("fine layer: every step but the last limited by the drift", s["steps_by_dt_limit"].get("residual", 0) >= s["steps"] - 2, str(s["steps_by_dt_limit"]))
c.within("fine layer, -nonsmooth_cfl_residual 1e-4: mean drift after 0.3 s [cells]", drift["1e-4"], 0.0, 0.005)
c.within("fine layer: drift without the limit / with it", drift["0"] / drift["1e-4"], 5.0, 1e9)

# 2. column collapse a = 2
out = T.outdir("nonsmooth_collapse")
T.run_deck(COLUMN, 2, out, *NS, "-t_end", "0.6", "-output_dt", "0.05")  # 2 ranks: 59 s instead of 83
subprocess.run([sys.executable, os.path.join(T.SOURCE, "postproc", "column_collapse.py"), out], check=True, capture_output=True)
with open(os.path.join(out, "column_collapse.json")) as fh:
    cc = json.load(fh)
print("  collapse: %s" % {k: cc[k] for k in cc if not isinstance(cc[k], (list, dict))})
c.within("collapse a = 2: runout (L_inf - L0)/L0 (thick front)", cc["runout"], 2.4, 4.6)
c.within("collapse a = 2: front arrest [tau_c]", cc["front_arrest_tau"], 2.5, 6.0)
c.within("collapse a = 2: final height H_inf/L0", cc["height_over_L0"], 0.9, 1.5)
s = summary(out)
c.true("collapse: sweeps per step reported", s["integrator_dcfp_its"] > 0, "%.1f per step" % (s["integrator_dcfp_its"] / s["steps"]))
c.true("collapse: no particle lost", len(final(out)["id"]) == 2048)

# 2b. Lube et al. 2005 at the short end of the aspect ratios, with the material calibrated for it (docs/validation.md,
# "Column collapse over aspect ratios": a static angle of 28 deg, mu(I) up to 40 deg, the floor tan 28 deg): the
# runout within 20 % of 1.2 a at a = 0.5, 16 cells across L0, the study's own script.  a = 8 (+16 % on one rank,
# +18 % on two) takes 2 minutes on two cores: the study in the docs, not here.
LUBE = ["-integrator", "nonsmooth", "-nonsmooth_solver", "apgd", "-sand_friction_angle", "28", "-sand_friction_angle_dynamic", "40",
        "-sand_inertial_number_i0", "0.279", "-sand_grain_diameter", "0.00053", "-bc_ylo_friction", "0.532"]
out = T.outdir("nonsmooth_lube")
subprocess.run([sys.executable, os.path.join(T.SOURCE, "postproc", "column_collapse_study.py"), out, "--aspect", "0.5", "--cells", "16", "--ranks", "2",
                "--exe", T.EXE, "--", *LUBE], check=True, capture_output=True, env=dict(os.environ, **T.MPI_ENV), timeout=900)
with open(os.path.join(out, "study.json")) as fh:
    for r in json.load(fh):
        c.within("collapse a = %g (calibrated, 16 cells): runout (L0/16 thick) / Lube's %.3f" % (r["a"], r["runout_law"]), r["runout_thick"] / r["runout_law"], 0.8, 1.2)

# 3. rank invariance (anisotropic grains, random normals; particle frames, splitting and merging)
ANISO = ["-sand_anisotropy", "0.8", "-sand_grain_normals", "random", "-nonsmooth_frames", "-nonsmooth_split_ratio", "1.5", "-sand_friction_angle_dynamic", "40"]
runs = {}
for n in (1, 2, 3):
    o = T.outdir("nonsmooth_ranks_%d" % n)
    T.run_deck(COLUMN, n, o, *NS, *ANISO, "-t_end", "0.06", "-output_dt", "0.06", "-slab_axis", "x")
    runs[n] = (final(o), T.mpmio.history(o), summary(o))
for n in (2, 3):
    a, b = runs[1][0], runs[n][0]
    c.true("1 vs %d ranks: same particles (split halves' ids included)" % n, np.array_equal(a["id"], b["id"]))
    c.close("1 vs %d ranks: max position difference [m]" % n, np.abs(a["position"] - b["position"]).max(), 0.0, atol=1e-6)
    c.close("1 vs %d ranks: max grain orientation difference" % n, np.abs(a["grain_orientation"] - b["grain_orientation"]).max(), 0.0, atol=1e-6)
    c.close("1 vs %d ranks: max frame difference [m^2]" % n, np.abs(a["frame"] - b["frame"]).max(), 0.0, atol=1e-9)
    c.close("1 vs %d ranks: max mu(I) friction difference" % n, np.abs(a["friction_coefficient"] - b["friction_coefficient"]).max(), 0.0, atol=1e-6)
    c.true("1 vs %d ranks: same Gauss-Seidel sweep counts" % n, (runs[1][1]["dcfp_its"] == runs[n][1]["dcfp_its"]).all())
    c.true("1 vs %d ranks: the same splits and merges" % n, (runs[1][2]["particles_split"], runs[1][2]["particles_merged"]) == (runs[n][2]["particles_split"], runs[n][2]["particles_merged"]))
# the particle count's accounting: every split adds one, every merge removes one; ids unique; mass kept
f, h, s = runs[2]
print("  frames: %d split, %d merged in 60 steps" % (s["particles_split"], s["particles_merged"]))
c.true("frames: particles split and merged (the test covers both)", s["particles_split"] > 0 and s["particles_merged"] > 0)
c.true("frames: count = 2048 + split - merged", len(f["id"]) == 2048 + s["particles_split"] - s["particles_merged"] == s["particles"])
c.true("frames: ids unique", len(np.unique(f["id"])) == len(f["id"]))
c.close("frames: total mass kept", h["mass"][-1], h["mass"][0], rtol=1e-13)
c.close("frames: total volume kept [m^2]", f["volume"].sum(), 0.1 * 0.2, rtol=1e-12)

# 4. restart bit for bit
out = T.outdir("nonsmooth_restart")
args = list(NS) + ANISO + ["-t_end", "0.06", "-output_dt", "0.06", "-checkpoint_interval", "45"]
T.run_deck(COLUMN, 2, out, *args, "-max_steps", "45")  # the first split is at step 44, the next at 47
T.run_deck(COLUMN, 2, out, *args, "-restart", "latest")
ref = T.outdir("nonsmooth_restart_ref")
T.run_deck(COLUMN, 2, ref, *args)
a, b = final(ref), final(out)
c.true("restart at step 45 gives the same final state bit for bit", all(np.array_equal(a[k], b[k]) for k in ("id", "position", "velocity", "pressure", "grain_orientation", "frame", "mass", "friction_coefficient")))
c.true("restart: the same splits and merges", (summary(ref)["particles_split"], summary(ref)["particles_merged"]) == (summary(out)["particles_split"], summary(out)["particles_merged"]))

# 5. free fall
out = T.outdir("nonsmooth_free_fall")
T.run_deck(COLUMN, 1, out, *NS, "-column_lo", "0.2,0.1", "-column_hi", "0.3,0.2", "-t_end", "0.1", "-output_dt", "0.02")
h = T.mpmio.history(out)
P0, M = h["momentum_y"][0], h["mass"][0]
err = np.abs(h["momentum_y"] - (P0 - M * G * h["t"])).max()
c.close("free fall: |P_y - (P0 - M g t)| / (M g t_end)", err / (M * G * h["t"][-1]), 0.0, atol=1e-12)
c.close("free fall: no stress (largest pressure) [Pa]", np.abs(final(out)["pressure"]).max(), 0.0, atol=1e-9)

# 5b. -nonsmooth_monitor: one line for the warm start and one per sweep, the last the step's residual
out = T.outdir("nonsmooth_monitor")
p = T.run_deck(COLUMN, 1, out, *NS, "-max_steps", "5", "-history_interval", "1", "-nonsmooth_monitor")
h = T.mpmio.history(out)
lines = [l for l in p.stdout.splitlines() if "DCFP residual" in l]
_, first = np.unique(h["step"], return_index=True)  # the final row repeats the last step
sweeps = int(h["dcfp_its"][first].sum())
c.true("monitor: warm start + one line per sweep (%d lines, %d sweeps in 5 steps)" % (len(lines), sweeps), len(lines) == 5 + sweeps)
c.close("monitor: its last line is the step's residual (history.csv)", float(lines[-1].split()[3]), h["dcfp_residual"][-1], rtol=1e-6)

# 6. APGD
APGD = ["-nonsmooth_solver", "apgd"]
out = T.outdir("nonsmooth_layer_apgd")
T.run_deck(COLUMN, 1, out, *NS, *APGD, "-domain_hi", "0.2,0.25", "-column_hi", "0.2,0.05", "-t_end", "0.2", "-output_dt", "0.1")
h, s = T.mpmio.history(out), summary(out)
c.close("APGD layer at rest: force on the floor / weight", -h["bc_ylo_fy"][-1] / (h["mass"][0] * G), 1.0, rtol=0.01)
c.within("APGD layer at rest: largest DCFP residual over rho g L", s["integrator_dcfp_residual"], 0.0, 1e-3)
c.within("APGD layer at rest: median speed [m/s]", np.median(np.linalg.norm(final(out)["velocity"], axis=1)), 0.0, 1e-3)
print("  APGD layer: %.1f gradient steps per step" % (s["integrator_dcfp_its"] / s["steps"]))
out = T.outdir("nonsmooth_tilted_layer_apgd")
th = np.radians(15.0)
T.run_deck(COLUMN, 1, out, *NS, *APGD, "-nonsmooth_tol", "1e-4", "-domain_hi", "0.2,0.25", "-column_hi", "0.2,0.05", "-bc_xhi", "slip", "-t_end", "0.5", "-output_dt", "0.25",
           "-gravity", "%.10g,%.10g" % (G * np.sin(th), -G * np.cos(th)))
f0 = T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[0]))
disp = np.linalg.norm(final(out)["position"] - f0["position"], axis=1) / 0.00625
c.within("APGD tilted layer (walls' friction in the solve): mean displacement after 0.5 s [cells]", disp.mean(), 0.0, 0.01)
c.within("APGD tilted layer: largest displacement after 0.5 s [cells]", disp.max(), 0.0, 0.1)
c.within("APGD tilted layer: largest DCFP residual over rho g L", summary(out)["integrator_dcfp_residual"], 0.0, 1e-4)
cell = 0.00625
gs = T.outdir("nonsmooth_gs_60")
T.run_deck(COLUMN, 1, gs, *NS, "-t_end", "0.06", "-output_dt", "0.06")
apgd = {}
for n in (1, 2, 3):
    o = T.outdir("nonsmooth_apgd_ranks_%d" % n)
    T.run_deck(COLUMN, n, o, *NS, *APGD, "-t_end", "0.06", "-output_dt", "0.06", "-slab_axis", "x")
    apgd[n] = final(o)
    seeded = T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(o)[0]))["id"]
    c.true("APGD %d ranks: no particle lost" % n, len(seeded) == 2048 and np.array_equal(apgd[n]["id"], seeded))
    c.within("APGD %d ranks: residual within the tolerance" % n, summary(o)["integrator_dcfp_residual"], 0.0, 1e-3)
for n in (2, 3):
    c.close("APGD 1 vs %d ranks: max position difference [m]" % n, np.abs(apgd[1]["position"] - apgd[n]["position"]).max(), 0.0, atol=1e-9)
c.within("APGD vs Gauss-Seidel (1 rank, frictional floor): max position difference [cells]", np.abs(apgd[1]["position"] - final(gs)["position"]).max() / cell, 0.0, 0.1)
# over-relaxed Gauss-Seidel: the same solution in fewer sweeps
sor = T.outdir("nonsmooth_omega")
T.run_deck(COLUMN, 1, sor, *NS, "-nonsmooth_omega", "1.5", "-t_end", "0.06", "-output_dt", "0.06")
print("  omega 1.5: %.1f sweeps per step (1: %.1f)" % (summary(sor)["integrator_dcfp_its"] / summary(sor)["steps"], summary(gs)["integrator_dcfp_its"] / summary(gs)["steps"]))
c.within("omega 1.5: residual within the tolerance", summary(sor)["integrator_dcfp_residual"], 0.0, 1e-3)
c.within("omega 1.5: sweeps / omega 1's", summary(sor)["integrator_dcfp_its"] / summary(gs)["integrator_dcfp_its"], 0.0, 0.9)
c.within("omega 1.5 vs 1: max position difference [cells]", np.abs(final(sor)["position"] - final(gs)["position"]).max() / cell, 0.0, 0.1)

# 7. silo discharge
out = T.outdir("nonsmooth_silo")
T.run_deck("silo_2d.yaml", 2, out, "-integrator", "nonsmooth", *APGD, "-dx", "0.01", "-opening_left_hi", "0.07,0.1", "-opening_right_lo", "0.13,0.08", "-t_end", "0.5")
sys.path.insert(0, os.path.join(T.SOURCE, "postproc"))
import silo  # noqa: E402
q = silo.discharge(out, 0.2, 0.5)
print("  silo: Q = %.2f kg/(m s); quarters / Q = %s" % (q["Q"], " ".join("%.3f" % (x / q["Q"]) for x in q["Q_parts"])))
c.within("silo: steady discharge, largest quarter deviation from the mean rate", q["steady_dev"], 0.0, 0.10)
s = summary(out)
c.true("silo: particles in the silo + deleted = seeded (2,400)", s["particles"] + s["particles_deleted"] == 2400, "%d + %d" % (s["particles"], s["particles_deleted"]))
c.close("silo: mass left = particles left x particle mass", s["total_mass"], s["particles"] * 96.0 / 2400, rtol=1e-9)

# 8. anisotropic grains: flat grains lying on the floor
FLAT = ["-sand_anisotropy", "0.8", "-sand_grain_normals", "aligned", "-sand_grain_normal", "0,1"]
LAYER = ["-domain_hi", "0.2,0.25", "-column_hi", "0.2,0.05"]
out = T.outdir("nonsmooth_flat_layer")
T.run_deck(COLUMN, 1, out, *NS, *FLAT, *LAYER, "-t_end", "0.2", "-output_dt", "0.1")
h, s = T.mpmio.history(out), summary(out)
c.close("flat grains, layer at rest: force on the floor / weight", -h["bc_ylo_fy"][-1] / (h["mass"][0] * G), 1.0, rtol=0.01)
c.within("flat grains, layer at rest: largest DCFP residual over rho g L", s["integrator_dcfp_residual"], 0.0, 1e-3)
c.within("flat grains, layer at rest: median speed [m/s]", np.median(np.linalg.norm(final(out)["velocity"], axis=1)), 0.0, 1e-3)
alpha, mu = 0.8, 0.5  # mu = mu_hat = sin(30 deg) in 2D
Nx, Ny = 1 / (1 - alpha), 1 / (1 + alpha)  # N^-1 = (1 - alpha) I + 2 alpha e_y e_y
sN, qN = (Nx**2 + Ny**2) / 2, Nx * Ny
theta_c = np.degrees(np.arctan(sN * mu / (qN * np.sqrt(sN**2 - mu**2))))
print("  flat grains: an infinite layer holds up to %.2f deg (isotropic: 30)" % theta_c)
for tilt, holds in ((8.0, True), (13.0, False)):
    th = np.radians(tilt)
    out = T.outdir("nonsmooth_flat_tilt_%g" % tilt)
    T.run_deck(COLUMN, 1, out, *NS, *FLAT, *LAYER, "-bc_xhi", "slip", "-t_end", "0.25", "-output_dt", "0.25", "-gravity", "%.10g,%.10g" % (G * np.sin(th), -G * np.cos(th)))
    f0 = T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[0]))
    disp = np.linalg.norm(final(out)["position"] - f0["position"], axis=1).mean() / 0.00625
    if holds:
        c.within("flat grains at %g deg (< theta_c): mean displacement after 0.25 s [cells]" % tilt, disp, 0.0, 0.1)
    else:
        c.within("flat grains at %g deg (> theta_c): mean displacement after 0.25 s [cells]" % tilt, disp, 0.5, 1e9)
    c.within("flat grains at %g deg: largest DCFP residual over rho g L" % tilt, summary(out)["integrator_dcfp_residual"], 0.0, 1e-3)
    if not holds:  # APGD: the same flow
        out = T.outdir("nonsmooth_flat_tilt_%g_apgd" % tilt)
        T.run_deck(COLUMN, 1, out, *NS, *FLAT, *LAYER, *APGD, "-bc_xhi", "slip", "-t_end", "0.25", "-output_dt", "0.25", "-gravity", "%.10g,%.10g" % (G * np.sin(th), -G * np.cos(th)))
        da = np.linalg.norm(final(out)["position"] - f0["position"], axis=1).mean() / 0.00625
        c.close("flat grains at %g deg: APGD's mean displacement / Gauss-Seidel's" % tilt, da / disp, 1.0, rtol=0.05)

# 9. a sand pile by a slow pour, phi = 30 deg with the repose cone
out = T.outdir("nonsmooth_sand_pile")
T.run_deck("sand_pile_2d.yaml", 2, out, "-integrator", "nonsmooth", "-dx", "0.005", "-sand_cone", "repose", *SLOW_POUR)
sys.path.insert(0, os.path.join(T.SOURCE, "postproc"))
import sand_pile  # noqa: E402
pile = sand_pile.measure(out)[0]
print("  nonsmooth pile: flank %.2f deg, %.1f cells high, %.1f sweeps per step" % (pile["slope_angle"], pile["height_cells"], summary(out)["integrator_dcfp_its"] / summary(out)["steps"]))
c.within("nonsmooth sand pile (repose cone, phi = 30 deg): flank slope within 2 deg of phi [deg]", pile["slope_angle"], 28.0, 32.0)
c.within("nonsmooth sand pile: at least 9 cells high", pile["height_cells"], 9.0, 1e9)
c.within("nonsmooth sand pile: at rest (fastest grain) [m/s]", pile["max_speed"], 0.0, 0.05)

# 10. 3D: 27 colours, walls in the solve
cols = {}
for tag, n, extra in (("gs1", 1, []), ("gs2", 2, []), ("apgd2", 2, APGD)):
    o = T.outdir("nonsmooth_3d_" + tag)
    T.run_deck("column_collapse_3d.yaml", n, o, "-integrator", "nonsmooth", "-max_steps", "4", "-output_dt", "100", "-history_interval", "1", "-slab_axis", "x", *extra)
    cols[tag] = (final(o), T.mpmio.history(o), summary(o))
    c.true("3D %s: no particle lost" % tag, len(cols[tag][0]["id"]) == 12350)
    c.within("3D %s: residual within the tolerance" % tag, cols[tag][2]["integrator_dcfp_residual"], 0.0, 1e-3)
print("  3D column: %.1f sweeps, %.1f APGD steps per step" % (cols["gs1"][2]["integrator_dcfp_its"] / 4, cols["apgd2"][2]["integrator_dcfp_its"] / 4))
c.true("3D Gauss-Seidel 1 vs 2 ranks: the same sweeps per step", np.array_equal(cols["gs1"][1]["dcfp_its"], cols["gs2"][1]["dcfp_its"]))
c.close("3D Gauss-Seidel 1 vs 2 ranks: max position difference [m]", np.abs(cols["gs1"][0]["position"] - cols["gs2"][0]["position"]).max(), 0.0, atol=1e-9)
c.within("3D APGD (2 ranks) vs Gauss-Seidel: max position difference [cells]", np.abs(cols["apgd2"][0]["position"] - cols["gs1"][0]["position"]).max() / 0.004, 0.0, 0.01)

# 11. an impact: the tolerance's unit follows the stresses.  A steel ball at 2 m/s into sand (the crater's quick
# look) loads the grains with ten times rho g L; 1e-3 rho g L would then be a relative tolerance of 1e-4, which
# the solvers did not reach in 1,000 sweeps at any step (docs/validation.md, "A ball dropped into sand").
CRATER = ["-dx", "0.02", "-domain_hi", "0.2,0.14,0.2", "-max_steps", "10", "-history_interval", "1"]
RHO_G_L = 1600 * 9.81 * 0.14
imp = {}
for tag, n, extra in (("default1", 1, []), ("default2", 2, []), ("tight", 1, ["-nonsmooth_tol", "2e-4"])):
    o = T.outdir("nonsmooth_impact_" + tag)
    T.run_deck("crater_3d.yaml", n, o, *CRATER, *extra)
    imp[tag] = (T.mpmio.history(o), final(o), summary(o))
    h = imp[tag][0]
    tol = 2e-4 if tag == "tight" else 1e-3
    c.true("impact %s: every step converged (%d sweeps at most)" % (tag, h["dcfp_its"].max()), h["dcfp_its"].max() < 1000 and h["dcfp_residual"].max() <= tol)
c.within("impact: the grains' largest pressure over rho g L (the stress unit applies)", imp["default1"][1]["pressure"].max() / RHO_G_L, 5.0, 1e9)
c.true("impact: 1 and 2 ranks, the same ball to the bit", imp["default1"][0]["ball_y"][-1] == imp["default2"][0]["ball_y"][-1] and imp["default1"][0]["ball_vy"][-1] == imp["default2"][0]["ball_vy"][-1])
c.true("impact: no step counted unconverged (summary.json)", imp["default1"][2]["integrator_dcfp_unconverged"] == 0)
# the seed's unit with a short sweep limit: every step stops above the tolerance, is counted, and the first is said once
o = T.outdir("nonsmooth_impact_unconverged")
p = T.run_deck("crater_3d.yaml", 1, o, *CRATER[:4], "-max_steps", "3", "-history_interval", "1", "-nonsmooth_tol_stress", "false", "-nonsmooth_max_it", "20")
h = T.mpmio.history(o)
_, first = np.unique(h["step"], return_index=True)
above = int((h["dcfp_residual"][first][1:] > 1e-3).sum())
c.true("unconverged steps: counted in summary.json as in history.csv (%d of 3)" % above, above == 3 and summary(o)["integrator_dcfp_unconverged"] == 3 and h["dcfp_unconverged"][first][1:].sum() == 3)
c.true("unconverged steps: one warning, naming -nonsmooth_max_it", p.stdout.count("warning: step") == 1 and "-nonsmooth_max_it 20" in p.stdout, p.stdout[-400:])
c.close("impact: ball velocity, tolerance 1e-3 against 2e-4 [m/s]", imp["default1"][0]["ball_vy"][-1], imp["tight"][0]["ball_vy"][-1], atol=5e-3)
c.close("impact: ball height, tolerance 1e-3 against 2e-4 [m]", imp["default1"][0]["ball_y"][-1], imp["tight"][0]["ball_y"][-1], atol=1e-4)

c.done()
