"""Implicit integrator (-integrator implicit, Klar et al. 2016 s. 5.6;
issue "implicit Drucker-Prager"): backward Euler on the grid velocities,
Newton (PETSc SNES, prefix implicit_) with the matrix-free Jacobian.

1. Jacobian against PETSc's finite differences (-implicit_snes_test_jacobian):
   the elastic bar (neo-Hookean, sticky and slip walls), every Newton step:
   ||J - Jfd|| / ||J|| < 1e-6; the Drucker-Prager column over 30 steps:
   the median over all Newton steps < 1e-5 (a particle whose strain sits on a
   kink of the return map, elastic/tip/cone, spoils a few finite
   differences; the kernels' own derivatives are checked case by case to
   1e-9 in test_kernels, section 8).
2. Bar vibration at 10x the explicit step (dt = 0.05, 2 ranks): period
   within 1 % of 10; backward Euler only dissipates: the energy never grows,
   and its decay is reported.  Colliding disks at 10x the deck's step:
   momentum to roundoff (1e-10 of one disk's).
3. Drucker-Prager column (a = 1, L0/8) at 1, 2 and 3 ranks with tight solver
   tolerances: the same Newton and Krylov counts, positions within 1e-12 m
   and velocities within 1e-10 m/s.
   The assembled preconditioner (-implicit_pmat tangent, block Jacobi-ILU
   per rank) on 2 ranks reaches the same state to the same tolerance.
4. Restart from a checkpoint at the same rank count: bit for bit.
5. A Newton solve that fails halves dt (logged) and the run goes on; when
   the halvings run out the run stops with a message naming the options.
6. The assembled tangent (-implicit_pmat tangent) is the Jacobian itself:
   with -implicit_pc_type lu every linear solve takes one GMRES iteration,
   on a column with elastic, tip and cone particles.
"""
import os
import re

import numpy as np
import mpmtest as T

c = T.Checks("implicit integrator")
BAR = "verification/bar_vibration.yaml"
COLUMN = ["-integrator", "implicit", "-dx", "0.0125", "-column_hi", "0.1,0.1", "-domain_hi", "0.3,0.15", "-dt_max", "1e-3"]
TIGHT = ["-implicit_snes_rtol", "1e-10", "-implicit_ksp_rtol", "1e-12", "-implicit_ksp_max_it", "500", "-implicit_snes_max_it", "50"]


def jacobian_errors(text):
    return [float(x) for x in re.findall(r"\|\|J - Jfd\|\|_F/\|\|J\|\|_F = ([0-9.eE+-]+)", text)]


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


# 1. the Jacobian against finite differences
out = T.outdir("implicit_jacobian_bar")
p = T.run_deck(BAR, 1, out, "-integrator", "implicit", "-dx", "0.25", "-dt_max", "0.05", "-max_steps", "2", "-implicit_snes_test_jacobian")
e = jacobian_errors(p.stdout)
c.true("bar: Jacobian tested at every Newton step (%d)" % len(e), len(e) >= 2)
c.within("bar: max ||J - Jfd|| / ||J||", max(e), 0.0, 1e-6)
out = T.outdir("implicit_jacobian_column")
p = T.run_deck("column_collapse_2d.yaml", 1, out, *COLUMN, "-column_hi", "0.1,0.05", "-t_end", "0.03", "-output_dt", "0.03", "-implicit_snes_test_jacobian")
e = np.array(jacobian_errors(p.stdout))
c.true("column: Jacobian tested at every Newton step (%d)" % len(e), len(e) >= 30)
c.within("column: median ||J - Jfd|| / ||J|| (max %.2g at a kink)" % e.max(), np.median(e), 0.0, 1e-5)
cases = final(out)["plastic_case"]
c.true("column: elastic, tip and cone particles present (%s)" % np.bincount(cases, minlength=3), all(np.bincount(cases, minlength=3) > 0))

# 2. bar vibration at 10x the explicit step
out = T.outdir("implicit_bar")
T.run_deck(BAR, 2, out, "-integrator", "implicit", "-dt_max", "0.05", "-t_end", "20")
h = T.mpmio.history(out)
period, E = T.bar_period(out)
c.close("bar, dt = 0.05 (10x explicit): mean period [s]", period, 10.0, rtol=0.01)
c.true("bar: the energy never grows (backward Euler)", (np.diff(E) <= 1e-12 * E[0]).all(), "max growth %.3g" % np.diff(E).max())
print("  bar: energy after 2 periods %.3f of the initial (numerical damping of backward Euler at dt = T/200)" % (E[-1] / E[0]))
c.within("bar: Newton iterations per step", h["newton_its"][1:].mean(), 1.0, 3.0)

# colliding disks at 10x the deck's step: the velocity after the solve is
# v^n + dt f(u)/m and the internal forces sum to zero, so momentum holds to
# roundoff whatever the Newton tolerance
out = T.outdir("implicit_disks")
T.run_deck("verification/colliding_disks.yaml", 2, out, "-integrator", "implicit", "-transfer", "apic", "-dt", "1e-2")
h = T.mpmio.history(out)
p_scale = h["mass"][0] / 2 * 0.1 * np.sqrt(2)  # momentum of one disk
c.close("disks, dt = 10x: max |total momentum| / one disk's", np.abs(np.c_[h["momentum_x"], h["momentum_y"]]).max() / p_scale, 0.0, atol=1e-10)
E = h["kinetic_energy"] + h["elastic_energy"]
print("  disks: energy at the end %.3f of the initial (APIC and backward Euler both dissipate)" % (E[-1] / E[0]))

# 3. rank invariance of the Drucker-Prager column
res = {}
for n in (1, 2, 3):
    out = T.outdir("implicit_ranks_%d" % n)
    T.run_deck("column_collapse_2d.yaml", n, out, *COLUMN, *TIGHT, "-t_end", "0.05", "-output_dt", "0.05")
    res[n] = (final(out), T.mpmio.history(out))
for n in (2, 3):
    a, b = res[1][0], res[n][0]
    c.close("column, 1 vs %d ranks: max position difference [m]" % n, np.abs(a["position"] - b["position"]).max(), 0.0, atol=1e-12)
    c.close("column, 1 vs %d ranks: max velocity difference [m/s]" % n, np.abs(a["velocity"] - b["velocity"]).max(), 0.0, atol=1e-10)
    c.true("column, 1 vs %d ranks: same Newton and Krylov counts" % n,
           (res[1][1]["newton_its"] == res[n][1]["newton_its"]).all() and (res[1][1]["ksp_its"] == res[n][1]["ksp_its"]).all())

out = T.outdir("implicit_ranks_2_tangent")
T.run_deck("column_collapse_2d.yaml", 2, out, *COLUMN, *TIGHT, "-t_end", "0.05", "-output_dt", "0.05", "-implicit_pmat", "tangent")
a, b = res[1][0], final(out)
c.close("column, -implicit_pmat tangent on 2 ranks vs diagonal on 1: max position difference [m]", np.abs(a["position"] - b["position"]).max(), 0.0, atol=1e-12)
c.close("column, -implicit_pmat tangent on 2 ranks vs diagonal on 1: max velocity difference [m/s]", np.abs(a["velocity"] - b["velocity"]).max(), 0.0, atol=1e-10)

# 4. restart bit for bit
out = T.outdir("implicit_restart")
args = COLUMN + ["-t_end", "0.05", "-output_dt", "0.05", "-checkpoint_interval", "20"]
T.run_deck("column_collapse_2d.yaml", 2, out, *args, "-max_steps", "20")
T.run_deck("column_collapse_2d.yaml", 2, out, *args, "-restart", "latest")
ref = T.outdir("implicit_restart_ref")
T.run_deck("column_collapse_2d.yaml", 2, ref, *args)
a, b = final(ref), final(out)
c.true("column: restart at step 20 gives the same final state bit for bit",
       np.array_equal(a["id"], b["id"]) and np.array_equal(a["position"], b["position"]) and np.array_equal(a["velocity"], b["velocity"]))

# 5. failed solves: dt halving, then a clear stop
out = T.outdir("implicit_halving")
p = T.run_deck("column_collapse_2d.yaml", 1, out, *COLUMN, "-t_end", "0.01", "-output_dt", "0.01", "-implicit_snes_max_it", "2")
h = T.mpmio.history(out)
c.true("a failed Newton solve halves dt and the run reaches t_end", "retrying with dt" in p.stdout and abs(h["t"][-1] - 0.01) < 1e-12)
p = T.run_deck("column_collapse_2d.yaml", 1, T.outdir("implicit_give_up"), *COLUMN, "-t_end", "0.01", "-implicit_snes_max_it", "1",
               "-implicit_snes_rtol", "1e-14", "-implicit_max_halvings", "2", check=False)
c.true("out of halvings: exit 1 with a message naming the options", p.returncode == 1 and "-implicit_max_halvings" in p.stderr + p.stdout,
       (p.stderr + p.stdout)[-300:])

# 6. the assembled tangent is the Jacobian: one GMRES iteration with LU
out = T.outdir("implicit_tangent_lu")
T.run_deck("column_collapse_2d.yaml", 1, out, *COLUMN, "-column_hi", "0.1,0.05", "-t_end", "0.03", "-output_dt", "0.03", "-implicit_pmat", "tangent", "-implicit_pc_type", "lu")
s = T.mpmio.summary(out)
cases = final(out)["plastic_case"]
c.true("tangent + LU: elastic, tip and cone particles present (%s)" % np.bincount(cases, minlength=3), all(np.bincount(cases, minlength=3) > 0))
c.true("tangent + LU: one GMRES iteration per Newton iteration (%d Newton, %d GMRES)" % (s["integrator_newton_its"], s["integrator_ksp_its"]),
       s["integrator_newton_its"] > 0 and s["integrator_ksp_its"] == s["integrator_newton_its"])
c.done()
