"""The post-processing scripts: each answers -h, and each produces its
numbers and plot from a real run (column collapse and history on a short
2D run; the pile script on the same deposit)."""
import csv
import json
import os
import subprocess
import mpmtest as T

PY = "/usr/bin/python3"
c = T.Checks("post-processing scripts")
scripts = ["column_collapse.py", "column_collapse_study.py", "sand_pile.py", "history_plot.py", "front_history.py", "scaling_plot.py", "scaling_model.py", "render_frame.py",
           "implicit_collapse_study.py", "anisotropy_collapse.py", "crater.py", "pbd_pile.py", "pbd_figure.py"]
for s in scripts:
    p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", s), "-h"], capture_output=True, text=True)
    c.true("%s -h" % s, p.returncode == 0 and "usage" in p.stdout.lower(), p.stderr[-200:])

out = T.outdir("postproc")
T.run_deck("column_collapse_2d.yaml", 2, out, "-dx", "0.00625", "-t_end", "0.3", "-output_dt", "0.1", "-history_interval", "50")
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "column_collapse.py"), out], capture_output=True, text=True)
res = json.load(open(os.path.join(out, "column_collapse.json")))
c.true("column_collapse.py report and json", p.returncode == 0 and "Lube 2005" in p.stdout and res["aspect_ratio"] == 2.0, p.stderr[-300:])
c.within("column_collapse.py: front has moved by t = 0.3 s (runout/L0)", res["runout"], 0.2, 5.0)
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "history_plot.py"), out], capture_output=True, text=True)
c.true("history_plot.py writes history.png", p.returncode == 0 and os.path.getsize(os.path.join(out, "history.png")) > 10000, p.stderr[-300:])
c.true("history_plot.py reports zero mass drift", "mass drift 0," in p.stdout, p.stdout.strip())
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "sand_pile.py"), out], capture_output=True, text=True)
pile = json.load(open(os.path.join(out, "sand_pile.json")))
c.true("sand_pile.py fits a flank", p.returncode == 0 and pile["fit_points"] >= 3 and 0 < pile["slope_angle"] < 90, p.stdout.strip()[:200])
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "front_history.py"), out], capture_output=True, text=True)
rows = list(csv.DictReader(open(os.path.join(out, "front_history.csv"))))
fronts = [float(r["front"]) for r in rows]
c.true("front_history.py: one row per frame, plot written", p.returncode == 0 and len(rows) == len(T.mpmio.frame_files(out)) and os.path.exists(os.path.join(out, "front_history.png")),
       p.stderr[-300:])
c.true("front_history.py: the front advances, the column gets lower", fronts[-1] > fronts[0] + 0.02 and float(rows[-1]["height"]) < float(rows[0]["height"]))

# the grains' scripts on the pbd column's deposit (0.4 s): a flank, a picture
grains = T.outdir("postproc_pbd")
T.run_deck("pbd_column_2d.yaml", 1, grains, "-t_end", "0.4", "-output_dt", "0.2")
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "pbd_pile.py"), grains], capture_output=True, text=True)
gp = json.load(open(os.path.join(grains, "pbd_pile.json"))) if p.returncode == 0 else {}
c.true("pbd_pile.py fits a flank", p.returncode == 0 and gp.get("fit_points", 0) >= 3 and 0 < gp["slope_angle"] < 90 and gp["static_friction"] == 0.6, p.stdout.strip()[:200] + p.stderr[-300:])
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "pbd_figure.py"), grains, "--frames", "0,-1"], capture_output=True, text=True)
c.true("pbd_figure.py draws the grains", p.returncode == 0 and os.path.getsize(os.path.join(grains, "grains.png")) > 10000, p.stderr[-300:])
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "pbd_figure.py"), grains, "--compare", grains, "--png", os.path.join(grains, "ranks.png")], capture_output=True, text=True)
c.true("pbd_figure.py --compare draws the rank-invariance figure", p.returncode == 0 and os.path.getsize(os.path.join(grains, "ranks.png")) > 10000, p.stderr[-300:])
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "pbd_figure.py"), grains, "--discharge", "0.05,0.1", "--png", os.path.join(grains, "discharge.png")], capture_output=True, text=True)
c.true("pbd_figure.py --discharge draws the left and right drained mass", p.returncode == 0 and "(left - right) / drained" in p.stdout and os.path.getsize(os.path.join(grains, "discharge.png")) > 10000, p.stderr[-300:])

# the crater script on the crater deck's quick look, 3 steps: the ball is
# just in, there is no crater yet, and how deep the ball goes by Uehara's law
# (d = 0.14/mu (rho_b/rho_g)^(1/2) D^(2/3) (v^2/2g + 0.5 mm + d)^(1/3), the
# deck's 2 cm steel ball at 2 m/s, 0.5 mm above sand of 1600 kg/m^3 with
# phi 30 deg) is the formula's fixed point, 39.10 mm
crater = T.outdir("postproc_crater")
T.run_deck("crater_3d.yaml", 2, crater, "-dx", "0.02", "-domain_hi", "0.2,0.14,0.2", "-max_steps", "3")
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "crater.py"), crater], capture_output=True, text=True)
cr = json.load(open(os.path.join(crater, "crater.json"))) if p.returncode == 0 else {}
c.true("crater.py: no crater edge yet after 3 steps, said so, picture written", p.returncode == 0 and "no crater edge" in p.stdout and os.path.exists(os.path.join(crater, "crater.png")),
       p.stdout[-300:] + p.stderr[-300:])
d = 0.05
for _ in range(60):
    d = 0.14 / 0.57735026919 * (7800.0 / 1600.0) ** 0.5 * 0.04 ** (2.0 / 3.0) * (2.0 ** 2 / (2 * 9.81) + 0.0005 + d) ** (1.0 / 3.0)
c.close("crater.py: Uehara's penetration depth for the deck's ball [m]", cr.get("penetration_uehara", 0), d, rtol=1e-9)
c.within("crater.py: the ball is in the bed after 3 steps [m]", cr.get("penetration", 0), 0.0, 0.03)

# the convergence-study driver on its smallest case (a = 0.5 at L0/8, real
# runs), then again: a run with a result is collected, not repeated
study = T.outdir("postproc_study")
cmd = [PY, os.path.join(T.SOURCE, "postproc", "column_collapse_study.py"), study, "--aspect", "0.5", "--cells", "8", "--ranks", "1", "--exe", T.EXE]
p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **T.MPI_ENV))
rows = json.load(open(os.path.join(study, "study.json"))) if p.returncode == 0 else []
c.true("column_collapse_study.py: one row, a = 0.5 at L0/8, table and figure written",
       len(rows) == 1 and rows[0]["a"] == 0.5 and rows[0]["cells"] == 8 and os.path.getsize(os.path.join(study, "study.png")) > 10000, p.stderr[-300:])
c.within("column_collapse_study.py: a = 0.5 top stands (H_inf/H0)", rows[0]["height_over_H0"] if rows else 0, 0.9, 1.1)
p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **T.MPI_ENV))
c.true("column_collapse_study.py: second call collects without running", p.returncode == 0 and "running" not in p.stdout, p.stdout[-200:])

# the implicit-against-explicit study on a reduced case (L0/8, 0.2 s, 5x):
# the implicit run's step is 5 times the explicit run's
study = T.outdir("postproc_implicit_study")
cmd = [PY, os.path.join(T.SOURCE, "postproc", "implicit_collapse_study.py"), study, "--cells", "8", "--implicit-cells", "8", "--ratios", "5", "--t-end", "0.2",
       "--exe", T.EXE]
p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **T.MPI_ENV))
rows = json.load(open(os.path.join(study, "study.json"))) if p.returncode == 0 else []
c.true("implicit_collapse_study.py: explicit and implicit 5x rows, table and figure written",
       [r["run"] for r in rows] == ["explicit", "implicit 5x"] and os.path.getsize(os.path.join(study, "study.png")) > 10000, p.stderr[-300:])
c.close("implicit_collapse_study.py: implicit dt / explicit dt", rows[1]["dt"] / rows[0]["dt"] if len(rows) == 2 else 0, 5.0, rtol=1e-3)

# scaling table from two real runs (1 and 2 ranks), then the plot
table = os.path.join(out, "scaling.csv")
rates = {}
for n in (1, 2):
    o = T.outdir("postproc_scaling_%d" % n)
    T.run_deck("column_collapse_2d.yaml", n, o, "-dx", "0.003125", "-max_steps", "200", "-output_dt", "10")
    rates[n] = T.mpmio.summary(o)["particle_steps_per_second"]
with open(table, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["mode", "ranks", "oversubscribed", "particle_steps_per_second", "speedup", "efficiency"])
    for n in (1, 2):
        w.writerow(["strong", n, 0, rates[n], rates[n] / rates[1], rates[n] / rates[1] / n])
p = subprocess.run([PY, os.path.join(T.SOURCE, "postproc", "scaling_plot.py"), table], capture_output=True, text=True)
c.true("scaling_plot.py prints the table and writes scaling.png", p.returncode == 0 and "strong" in p.stdout and os.path.exists(os.path.join(out, "scaling.png")), p.stderr[-300:])

# the slab model (docs/scaling.md) on the production deck: its geometry, and
# without communication cost the analytic efficiencies: 1 while every slab
# can take W/P, W / (P x two planes' work) beyond; 1 at any P in weak scaling
model = os.path.join(T.SOURCE, "postproc", "scaling_model.py")
mcsv = os.path.join(out, "model.csv")
free = ["--latency", "0", "--bandwidth", "1e30", "--particle-ns", "141", "--node-ns", "12.4"]
p = subprocess.run([PY, model, "--csv", mcsv, "--png", os.path.join(out, "model.png")] + free, capture_output=True, text=True)
c.true("scaling_model.py: landslide_3d geometry (16M particles, face 105 x 205, 100 slabs)",
       p.returncode == 0 and "1.6e+07 particles" in p.stdout and "slab face 21525 nodes" in p.stdout and "at most 100 slabs" in p.stdout, p.stdout[:300] + p.stderr[-300:])
rows = {int(r["ranks"]): r for r in csv.DictReader(open(mcsv))}
W = 16e6 * 141e-9 + 805 * 105 * 205 * 12.4e-9
two = 2 * (16e6 / 200 * 141e-9 + 105 * 205 * 12.4e-9)
c.close("scaling_model.py: E(64), no communication", float(rows[64]["efficiency"]), 1.0, atol=1e-9)
c.close("scaling_model.py: E(1024) = W / (1024 x 2 planes' work)", float(rows[1024]["efficiency"]), W / (1024 * two), rtol=1e-6)
c.true("scaling_model.py: slabs by particles only lose to slabs by work at 16 ranks", float(rows[16]["efficiency_slab_particles"]) < float(rows[16]["efficiency"]))
c.true("scaling_model.py: plot written", os.path.getsize(os.path.join(out, "model.png")) > 10000)
p = subprocess.run([PY, model, "--weak", "--csv", mcsv] + free, capture_output=True, text=True)
weak = [float(r["efficiency"]) for r in csv.DictReader(open(mcsv))]
c.close("scaling_model.py --weak: min E over 1..1024 ranks, no communication", min(weak), 1.0, atol=1e-3)
c.done()
