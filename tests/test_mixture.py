"""Sand and water on two grids (-integrator mixture; issue "Sand-water
mixtures", first step: stresses explicit, drag implicit per node;
docs/design/mixture.md, docs/validation.md "Sand-water mixture").

1. Darcy (inputs/verification/darcy.yaml): water through a rigid sand plug,
   n = 0.4, k_hat = 1e-3 m/s, i = 0.5: specific discharge
   q = n (v_w - v_s) = k_hat i within 2 % (reference data s. 7), at 1 and
   2 ranks.
2. Free fall of a saturated block with the pore water moving through it
   (inputs/verification/mixture_free_fall.yaml): the total momentum of the
   two species is P0 + M g t to roundoff (the drag is an exchange); inside
   the block the relative velocity decays as (1 + dt lambda)^-steps,
   lambda = n g / k_hat (1 + m_w/m_s), within 0.5 %; mass of each species
   and the particle counts conserved.
3. Output of two species: the sand at the frame's root, the water in
   /water/, particles_water.xmf beside particles.xmf.
4. Buoyancy (inputs/verification/submerged_layer.yaml, a saturated layer
   under free water, averaged over 0.2-0.4 s): the sand's mean effective
   stress grows with depth 0.623 = (rho_s - rho_w)/rho_s times as fast as
   in the same layer dry (no water), within 2 %; the pore pressure grows at
   rho_w g below the water's surface within 3 %.
5. Terzaghi's consolidation (inputs/verification/terzaghi.yaml: a column
   loaded by a porous plate, the pore water started hydrostatic): the
   degree of consolidation U = S(t)/S_inf (S_inf = q0 z / M at the
   measured particles' height z) within 0.03 of the series at the
   tabulated Tv >= 0.05, and the final settlement within 1 %.  At
   Tv = 0.01 (the drained layer is 1 cm, two cells, and the plate's weight
   arrives as a wave) the measured U is reported, not asserted.
6. Quick condition (inputs/verification/quick_condition.yaml: water
   driven up through a sand layer on a screen with specific discharge q,
   i = q / k_hat): below i_c the specific discharge in the layer is q
   within 2 %;
   the sand's mean effective stress grows with depth at a rate that falls
   linearly with i (the seepage force i rho_w g per volume); its zero,
   extrapolated from i = 0.5 and 0.75, is i_c = (1 - n)(rho_s/rho_w - 1)
   = 0.99 within 5 % (reference data s. 7); at i = 1.2 i_c the gradient is
   gone (below 3 % of the one at i = 0.5); no particle lost (seeded plus
   emitted).
7. Rank invariance at 1, 2 and 3 ranks (free fall, both species by id
   within 1e-9 relative) and a restart bit for bit at 2 ranks (both
   species from the checkpoint).
"""
import csv
import os

import numpy as np
import mpmtest as T

c = T.Checks("sand-water mixture")
G, RHO_W = 9.81, 1000.0


def final(out, species=None):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1], species=species))


# 1. Darcy
for n in (1, 2):
    out = T.outdir("mixture_darcy_%d" % n)
    T.run_deck("verification/darcy.yaml", n, out)
    w = final(out, "water")
    inside = (w["position"][:, 1] > 0.25) & (w["position"][:, 1] < 0.35)
    q = -0.4 * w["velocity"][inside, 1].mean()
    c.close("Darcy, %d rank(s): q = n (v_w - v_s) [m/s] against k_hat i = 5e-4" % n, q, 5e-4, rtol=0.02)

# 2. free fall
out = T.outdir("mixture_free_fall")
T.run_deck("verification/mixture_free_fall.yaml", 1, out)
with open(os.path.join(out, "history.csv")) as f:
    rows = list(csv.DictReader(f))
M, P0 = float(rows[0]["mass"]), float(rows[0]["momentum_y"])
err = max(abs(float(r["momentum_y"]) - (P0 - M * G * float(r["t"]))) for r in rows)
c.close("free fall: |P_y - (P0 - M g t)| / |P0| over the frames", err / abs(P0), 0.0, atol=1e-12)
c.close("free fall: mass conserved (relative)", abs(float(rows[-1]["mass"]) - M) / M, 0.0, atol=1e-13)
s, w = final(out), final(out, "water")
y0 = s["position"][:, 1].min()


def interior(fr):
    x = fr["position"]
    return (x[:, 0] > 0.36) & (x[:, 0] < 0.64) & (x[:, 1] > y0 + 0.06) & (x[:, 1] < y0 + 0.24)


dv = w["velocity"][interior(w), 1].mean() - s["velocity"][interior(s), 1].mean()
n_por, k_hat, dt, steps = 0.4, 0.1, 2e-4, 100
lam = n_por * G / k_hat * (1 + n_por * RHO_W / 1590.0)
c.close("free fall: relative velocity inside the block after 100 steps [m/s]", dv, (1 + lam * dt) ** -steps, rtol=0.005)
c.true("free fall: 1200 sand and 1200 water particles", len(s["id"]) == 1200 and len(w["id"]) == 1200, "%d, %d" % (len(s["id"]), len(w["id"])))

# 3. output of two species
c.true("frames: the water in /water/, particles_water.xmf written",
       os.path.exists(os.path.join(out, "particles_water.xmf")) and "water/position" in open(os.path.join(out, "particles_water.xmf")).read())

# 4. buoyancy: the submerged weight (against the same layer dry: no water regions)
slopes = {}
deck = open(T.deck("verification/submerged_layer.yaml")).read()
dry = os.path.join(T.OUTPUT, "submerged_layer_dry.yaml")  # the deck without its water regions (the last two)
with open(dry, "w") as f:
    f.write(deck[:deck.index("\npore_water:\n")].replace("regions: layer,pore_water,water_above", "regions: layer") + "\n")
for case in ("saturated", "dry"):
    o = T.outdir("mixture_submerged_" + case)
    T.run(1, ["-options_file_yaml", dry if case == "dry" else T.deck("verification/submerged_layer.yaml"), "-output_dir", o])
    P, Y, PW, YW = [], [], [], []
    for f in T.mpmio.frame_files(o):
        fs = T.mpmio.sorted_by_id(T.mpmio.read_frame(f, ["id", "position", "pressure"]))
        if fs["t"] < 0.2:
            continue
        P.append(fs["pressure"]), Y.append(fs["position"][:, 1])
        if case == "saturated":
            fw = T.mpmio.sorted_by_id(T.mpmio.read_frame(f, ["id", "position", "pressure"], species="water"))
            PW.append(fw["pressure"]), YW.append(fw["position"][:, 1])
    P, Y = np.mean(P, axis=0), np.mean(Y, axis=0)
    m = (Y > 0.03) & (Y < Y.max() - 0.03)
    slopes[case] = np.polyfit(Y.max() - Y[m], P[m], 1)[0]
    if case == "saturated":
        PW, YW = np.mean(PW, axis=0), np.mean(YW, axis=0)
        mw = (YW > 0.03) & (YW < YW.max() - 0.03)
        c.close("submerged layer: pore pressure gradient [Pa/m] against rho_w g", np.polyfit(YW.max() - YW[mw], PW[mw], 1)[0], RHO_W * G, rtol=0.03)
c.close("submerged layer: effective stress gradient, saturated / dry, against (rho_s - rho_w)/rho_s", slopes["saturated"] / slopes["dry"], (2650 - 1000) / 2650.0, rtol=0.02)

# 5. Terzaghi
o = T.outdir("mixture_terzaghi")
T.run_deck("verification/terzaghi.yaml", 1, o)
H, q0, E, nu = 0.1, 100 * G * 0.2, 1.0e4, 0.3
M = E * (1 - nu) / ((1 + nu) * (1 - 2 * nu))
cv = 1.0e-2 * M / (RHO_W * G)
TV = np.array([.01, .05, .1, .197, .3, .5, .848, 1, 2])
U_REF = np.array([.113, .252, .357, .500, .613, .764, .900, .931, .994])
frames = [T.mpmio.sorted_by_id(T.mpmio.read_frame(f, ["id", "position", "material"])) for f in T.mpmio.frame_files(o)]
y0, top = frames[0]["position"][:, 1], None
top = (frames[0]["material"] == 0) & (y0 > H - 0.005)  # the column's top row of particles
s_inf = q0 * y0[top].mean() / M
t = np.array([f["t"] for f in frames])
settle = np.array([-(f["position"][top, 1] - y0[top]).mean() for f in frames])
U = np.interp(TV, cv * t / H ** 2, settle / s_inf)
print("  Terzaghi: Tv %s\n            U  %s\n  reference U  %s" % (TV, np.round(U, 3), U_REF))
c.within("Terzaghi: max |U - U_Terzaghi| at Tv = 0.05 ... 2", np.abs(U - U_REF)[1:].max(), 0.0, 0.03)
c.close("Terzaghi: final settlement / (q0 z / M)", settle[-1] / s_inf, 1.0, rtol=0.01)

# 6. quick condition
def quick(i):
    q = i * 1.0e-2
    o = T.outdir("mixture_quick_%g" % i)
    T.run_deck("verification/quick_condition.yaml", 1, o, "-inlet_velocity", "0,%r" % (q / 0.4), "-water_in_speed", repr(q / 0.4))
    grads, qs = [], []
    for f in T.mpmio.frame_files(o):
        s, w = T.mpmio.read_frame(f, ["position", "velocity", "pressure"]), T.mpmio.read_frame(f, ["position", "velocity"], species="water")
        if s["t"] < 0.2:  # the inflow's start-up
            continue
        ys, yw = s["position"][:, 1], w["position"][:, 1]
        ms, mw = (ys > 0.02) & (ys < 0.08), (yw > 0.02) & (yw < 0.08)  # inside the layer (0 to 0.1 m)
        grads.append(-np.polyfit(ys[ms], s["pressure"][ms], 1)[0])
        qs.append(0.4 * (w["velocity"][mw, 1].mean() - s["velocity"][ms, 1].mean()))
    last = T.mpmio.read_frame(T.mpmio.frame_files(o)[-1], ["id"]), T.mpmio.read_frame(T.mpmio.frame_files(o)[-1], ["id"], species="water")
    return np.mean(grads), np.mean(qs), len(last[0]["id"]) + len(last[1]["id"]), q


IC = (1 - 0.4) * (2650 / RHO_W - 1)
quick_runs = {i: quick(i) for i in (0.5, 0.75, 1.2 * IC)}
for i, (g, q, count, q_set) in quick_runs.items():
    if i < IC:  # above it the layer goes quick: the sand rises with the water, whatever pushes it in
        c.close("quick condition, i = %.3g: specific discharge n (v_w - v_s) in the layer [m/s] against q" % i, q, q_set, rtol=0.02)
    c.true("quick condition, i = %.3g: 728 seeded + 8 per inflow layer released, none lost" % i,
           count - 728 == 8 * (int(np.floor(0.5 * q_set / 0.4 / 2.5e-3 + 1e-9)) + 1), "%d particles" % count)
(g1, *_), (g2, *_), (g3, *_) = (quick_runs[i] for i in (0.5, 0.75, 1.2 * IC))
print("  quick condition: effective stress gradient %.0f / %.0f / %.0f Pa/m at i = 0.5 / 0.75 / %.3g" % (g1, g2, g3, 1.2 * IC))
c.close("quick condition: i_c, the zero of the effective stress gradient against i, against (1 - n)(rho_s/rho_w - 1)", 0.75 + 0.25 * g2 / (g1 - g2), IC, rtol=0.05)
c.within("quick condition: at i = 1.2 i_c the effective stress gradient / the one at i = 0.5", g3 / g1, 0.0, 0.03)

# 7. rank invariance and restart
res = {}
for n in (1, 2, 3):
    o = T.outdir("mixture_ranks_%d" % n)
    T.run_deck("verification/mixture_free_fall.yaml", n, o)
    res[n] = (final(o), final(o, "water"))
for n in (2, 3):
    for k, name in ((0, "sand"), (1, "water")):
        a, b = res[1][k], res[n][k]
        c.true("1 vs %d ranks, %s: same particles" % (n, name), np.array_equal(a["id"], b["id"]))
        for f in ("position", "velocity"):
            c.close("1 vs %d ranks, %s: %s max |diff| / max |value|" % (n, name, f), np.abs(a[f] - b[f]).max() / np.abs(a[f]).max(), 0.0, atol=1e-9)
o = T.outdir("mixture_restart")
args = ["-checkpoint_interval", "50"]
T.run_deck("verification/mixture_free_fall.yaml", 2, o, *args, "-max_steps", "50")
T.run_deck("verification/mixture_free_fall.yaml", 2, o, *args, "-restart", "latest")
for k, name in ((0, "sand"), (1, "water")):
    a, b = res[2][k], (final(o), final(o, "water"))[k]
    c.true("restart at step 50 (2 ranks), %s: the same final state bit for bit" % name,
           all(np.array_equal(a[f], b[f]) for f in ("id", "position", "velocity", "plastic_volume_ratio")))
c.done()
