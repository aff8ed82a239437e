"""The sand-water mixture's coupled implicit system (-mixture_stress
implicit: src/integrators/mixture_system.c; docs/design/mixture.md,
"Step B"): both grids' velocities solved at once by Newton with KSP MINRES.

1. The operator is symmetric and positive definite (-mixture_check_operator,
   random vectors) at 1 and 2 ranks, with the pore water's porosity chain
   (Terzaghi's column) and without; the assembled preconditioner matrix
   (-mixture_pmat assembled) equals the operator where the chain is off.
2. Darcy (inputs/verification/darcy.yaml): q = k_hat i within 2 % at 1 and
   2 ranks, at 16 times the explicit step.
3. Free fall of a saturated block (inputs/verification/mixture_free_fall.yaml):
   total momentum P0 + M g t to roundoff, the relative velocity's decay
   (1 + dt lambda)^-steps within 0.5 %, mass and particles conserved.
4. A water column at rest at 12 times the explicit step
   (inputs/verification/water_column_implicit.yaml): the pressure gradient
   rho_w g within 3 %, no particle compressed by more than 2 %, speeds
   below 5 cm/s.
5. MINRES iterations per Newton step over c_E = n^2 rho_w g / k_hat from
   1e2 to 1e8 (the free-falling block at dt = 1e-3 s): bounded with the
   node-block preconditioner (at 1e8 at most 1.5 times those at 1e2),
   printed beside PCJACOBI's.
6. Rank invariance at 1, 2, 3 ranks within the solver's tolerance (free
   fall, by particle id) and a restart bit for bit at 2 ranks; the solver
   iterations in summary.json.
"""
import csv
import json
import os
import re

import numpy as np
import mpmtest as T

c = T.Checks("sand-water mixture, implicit stresses (MINRES)")
G = 9.81
IMPL = ["-mixture_stress", "implicit"]


def final(out, species=None):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1], species=species))


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


# 1. the operator
for deck, extra, what in (("verification/terzaghi.yaml", [], "pore water (porosity chain)"),
                          ("verification/mixture_free_fall.yaml", [], "saturated block"),
                          ("verification/terzaghi.yaml", ["-mixture_pmat", "assembled", "-mixture_buoyancy", "false"], "assembled, no chain")):
    for n in (1, 2):
        o = T.outdir("mixture_implicit_operator")
        p = T.run_deck(deck, n, o, *IMPL, "-mixture_check_operator", "-max_steps", "3", *extra)
        asym = [float(x) for x in re.findall(r"asymmetry ([0-9.e+-]+)", p.stdout)]
        rq = [float(x) for x in re.findall(r"Rayleigh quotient ([0-9.e+-]+)", p.stdout)]
        c.within("operator, %s, %d rank(s): max asymmetry |y'Ax - x'Ay| / |x'Ay| over 3 steps" % (what, n), max(asym), 0.0, 1e-12)
        c.true("operator, %s, %d rank(s): positive definite (min x'Ax / x'x > 0)" % (what, n), len(rq) >= 3 and min(rq) > 0, str(rq))
        if extra:
            pd = [float(x) for x in re.findall(r"\|P x - A x\| / \|A x\| ([0-9.e+-]+)", p.stdout)]
            c.within("assembled matrix against the operator, %d rank(s)" % n, max(pd), 0.0, 1e-12)

# 2. Darcy
for n in (1, 2):
    out = T.outdir("mixture_implicit_darcy_%d" % n)
    T.run_deck("verification/darcy.yaml", n, out, *IMPL)
    w = final(out, "water")
    inside = (w["position"][:, 1] > 0.25) & (w["position"][:, 1] < 0.35)
    q = -0.4 * w["velocity"][inside, 1].mean()
    c.close("Darcy, %d rank(s): q [m/s] against k_hat i = 5e-4" % n, q, 5e-4, rtol=0.02)
    s = summary(out)
    c.true("Darcy, %d rank(s): Newton and MINRES iterations in summary.json" % n, s["integrator_newton_its"] > 0 and s["integrator_ksp_its"] > 0,
           "%g Newton, %g MINRES" % (s["integrator_newton_its"], s["integrator_ksp_its"]))
    c.within("Darcy, %d rank(s): dt over the water's sound-speed limit" % n, s["integrator_dt_over_sound"], 10.0, 1e9)
    c.true("Darcy, %d rank(s): dt over the explicit limit is over the stiffer term" % n,
           s["integrator_dt_over_explicit"] == max(s["integrator_dt_over_sound"], s["integrator_dt_over_drag"]))

# 3. free fall
out = T.outdir("mixture_implicit_free_fall")
T.run_deck("verification/mixture_free_fall.yaml", 1, out, *IMPL)
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
lam = 0.4 * G / 0.1 * (1 + 0.4 * 1000 / 1590.0)
c.close("free fall: relative velocity inside the block after 100 steps [m/s]", dv, (1 + lam * 2e-4) ** -100, rtol=0.005)
c.true("free fall: 1200 sand and 1200 water particles", len(s["id"]) == 1200 and len(w["id"]) == 1200)
c.close("free fall: dt over the drag's explicit limit 2 / lambda (summary.json: 10 digits)", summary(out)["integrator_dt_over_drag"], 2e-4 * lam / 2, rtol=1e-9)

# 4. water column at rest
out = T.outdir("mixture_implicit_column")
T.run_deck("verification/water_column_implicit.yaml", 1, out)
w = final(out, "water")
y, p = w["position"][:, 1], w["pressure"]
m = (y > 0.02) & (y < 0.18)
c.close("water column: pressure gradient [Pa/m] against rho_w g", -np.polyfit(y[m], p[m], 1)[0], 1000 * G, rtol=0.03)
c.within("water column: smallest J", w["plastic_volume_ratio"].min(), 0.98, 1.01)
c.within("water column: fastest particle [m/s]", np.abs(w["velocity"]).max(), 0.0, 0.05)
c.within("water column: dt over the water's sound-speed limit", summary(out)["integrator_dt_over_sound"], 10.0, 1e9)

# 5. MINRES iterations over c_E
print("  c_E [1/s]   k_hat [m/s]   MINRES per Newton: node blocks   jacobi")
its = {}
for ce in (1e2, 1e4, 1e6, 1e8):
    k = 0.16 * G * 1000 / ce  # c_E = n^2 rho_w g / k_hat, n = 0.4
    row = []
    for pc in ("shell", "jacobi"):
        o = T.outdir("mixture_implicit_ce")
        T.run_deck("verification/mixture_free_fall.yaml", 1, o, *IMPL, "-mixture_hydraulic_conductivity", "%g" % k, "-mixture_pc_type", pc, "-dt", "1e-3",
                   "-max_steps", "20", "-mixture_snes_ksp_ew", "false")  # at the fixed MINRES rtol 1e-6: the preconditioner, not Eisenstat-Walker
        s = summary(o)
        row.append(s["integrator_ksp_its"] / s["integrator_newton_its"])
    its[ce] = row
    print("  %8.0e   %10.3e   %25.1f   %6.1f" % (ce, k, row[0], row[1]))
c.within("node blocks: MINRES iterations per Newton step at c_E = 1e8 over those at 1e2", its[1e8][0] / its[1e2][0], 0.0, 1.5)

# 6. ranks and restart
res = {}
for n in (1, 2, 3):
    o = T.outdir("mixture_implicit_ranks_%d" % n)
    T.run_deck("verification/mixture_free_fall.yaml", n, o, *IMPL)
    res[n] = (final(o), final(o, "water"))
for n in (2, 3):
    for k, name in ((0, "sand"), (1, "water")):
        a, b = res[1][k], res[n][k]
        c.true("1 vs %d ranks, %s: same particles" % (n, name), np.array_equal(a["id"], b["id"]))
        for f in ("position", "velocity"):
            c.close("1 vs %d ranks, %s: %s max |diff| / max |value| (solver tolerance)" % (n, name, f), np.abs(a[f] - b[f]).max() / np.abs(a[f]).max(), 0.0, atol=1e-6)
o = T.outdir("mixture_implicit_restart")
args = ["-checkpoint_interval", "50"] + IMPL
T.run_deck("verification/mixture_free_fall.yaml", 2, o, *args, "-max_steps", "50")
T.run_deck("verification/mixture_free_fall.yaml", 2, o, *args, "-restart", "latest")
for k, name in ((0, "sand"), (1, "water")):
    a, b = res[2][k], (final(o), final(o, "water"))[k]
    c.true("restart at step 50 (2 ranks), %s: the same final state bit for bit" % name,
           all(np.array_equal(a[f], b[f]) for f in ("id", "position", "velocity", "plastic_volume_ratio")))
c.done()
