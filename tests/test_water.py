"""Water (-<m>_type water; Tampubolon et al. 2017 s. 3.2 and 4.3.1, the
first part of issue "Sand-water mixtures"), explicit.  The pointwise law
(p = k (J^-gamma - 1), dpsi/dJ = -p, J <- (1 + dt div v) J) is in
test_kernels, section 10.

1. Martin and Moyce's dam break (inputs/dam_break_water_2d.yaml, 25 cells
   across a): after a time shift <= 0.2 in T, the front Z = x/a within
   10 % for 1 <= T <= 3, and the residual height h/(2a) within 0.05 up to
   tau = 3 (postproc/dam_break.py, docs/validation.md "Water dam break");
   mass and particle count conserved.
2. Hydrostatics: a water column 0.2 m deep at rest in a tank, free-slip
   walls; its pressure averaged over 0.2-1 s (the weakly compressible
   column keeps ringing) grows with depth at rho g within 3 % and is zero
   at the surface within 2 % of rho g H.
3. Rank invariance at 1, 2 and 3 ranks: the dam break to t = 0.1 s, the
   same particles, positions, velocities and J within 1e-9 relative.
4. A restart at the same rank count continues bit for bit (J lives in
   the checkpointed J_P).
"""
import json
import os
import subprocess

import numpy as np
import mpmtest as T

c = T.Checks("water")
DECK = "dam_break_water_2d.yaml"


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


# 1. Martin and Moyce
out = T.outdir("water_dam_break")
T.run_deck(DECK, 2, out)
subprocess.run(["/usr/bin/python3", os.path.join(T.SOURCE, "postproc", "dam_break.py"), out, "--png", os.path.join(out, "dam_break.png")], check=True)
with open(os.path.join(out, "dam_break.json")) as f:
    r = json.load(f)
c.within("dam break: front Z = x/a, max relative error for 1 <= T <= 3 (shift %.2f)" % r["shift"], r["front_max_rel_err"], 0.0, 0.10)
c.within("dam break: residual height h/(2a), max error up to tau = 3", r["height_max_abs_err"], 0.0, 0.05)
h = T.mpmio.history(out)
s = T.mpmio.summary(out)
c.close("dam break: total mass conserved (relative)", abs(h["mass"][-1] - h["mass"][0]) / h["mass"][0], 0.0, atol=1e-12)
c.true("dam break: no particle lost", s["particles"] == 5000 and s.get("particles_deleted", 0) == 0, "%s particles" % s["particles"])

# 2. hydrostatics
out = T.outdir("water_hydrostatic")
T.run_deck(DECK, 1, out, "-domain_hi", "0.1,0.3", "-dx", "0.005", "-column_hi", "0.1,0.2", "-t_end", "1.0", "-output_dt", "0.01")
P, D = [], []
for f in T.mpmio.frame_files(out):
    fr = T.mpmio.sorted_by_id(T.mpmio.read_frame(f, ["id", "position", "pressure"]))
    if fr["t"] >= 0.2:
        y = fr["position"][:, 1]
        P.append(fr["pressure"])
        D.append(y.max() - y)
P, D = np.mean(P, axis=0), np.mean(D, axis=0)
mid = (D > 0.02) & (D < 0.18)
slope, surface = np.polyfit(D[mid], P[mid], 1)
rho_g = 1000 * 9.81
c.close("hydrostatic: time-averaged dp/d(depth) [Pa/m]", slope, rho_g, rtol=0.03)
c.within("hydrostatic: surface pressure / (rho g H)", surface / (rho_g * 0.2), -0.02, 0.02)

# 3. rank invariance
res = {}
for n in (1, 2, 3):
    out = T.outdir("water_ranks_%d" % n)
    T.run_deck(DECK, n, out, "-t_end", "0.1", "-output_dt", "0.1")
    res[n] = final(out)
for n in (2, 3):
    a, b = res[1], res[n]
    c.true("1 vs %d ranks: same particles" % n, np.array_equal(a["id"], b["id"]))
    for k in ("position", "velocity", "plastic_volume_ratio"):
        c.close("1 vs %d ranks: %s max |diff| / max |value|" % (n, k), np.abs(a[k] - b[k]).max() / np.abs(a[k]).max(), 0.0, atol=1e-9)

# 4. restart bit for bit
out = T.outdir("water_restart")
args = ["-t_end", "0.1", "-output_dt", "0.1", "-checkpoint_interval", "500"]
T.run_deck(DECK, 2, out, *args, "-max_steps", "500")
T.run_deck(DECK, 2, out, *args, "-restart", "latest")
a, b = res[1], final(out)
ref = T.outdir("water_restart_ref")
T.run_deck(DECK, 2, ref, *args)
a = final(ref)
c.true("restart at step 500 gives the same final state bit for bit",
       all(np.array_equal(a[k], b[k]) for k in ("id", "position", "velocity", "plastic_volume_ratio", "pressure")))
c.done()
