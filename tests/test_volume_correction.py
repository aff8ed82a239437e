"""Volume correction of the Drucker-Prager return map (-<material>_volume_correction,
Tampubolon et al. 2017 s. 4.3.4) on the 2D column collapse a = 2 (L0/16):
- the per-particle scalar is a registered field: in frames and checkpoints,
  restarted bit for bit, the same on 1 and 2 ranks (1e-9);
- it only ever stores volume gained (>= 0, up to roundoff) and the deposit
  keeps its mass and particles;
- it shortens the runout (the volume gained at the tip no longer stays as
  extra volume), toward Lube et al.'s law; the numbers are printed."""
import json
import os
import subprocess

import numpy as np
import mpmtest as T

DECK = ["-dx", "0.00625", "-t_end", "1.15", "-output_dt", "0.05"]
c = T.Checks("volume correction")
res = {}
for vc in ("false", "true"):
    out = T.outdir("volcorr_" + vc)
    T.run_deck("column_collapse_2d.yaml", 2, out, *DECK, "-sand_volume_correction", vc)
    subprocess.run(["/usr/bin/python3", os.path.join(T.SOURCE, "postproc", "column_collapse.py"), out], check=True, capture_output=True)
    res[vc] = json.load(open(os.path.join(out, "column_collapse.json")))
    print("  volume correction %-5s runout/L0 %.3f  H_inf/L0 %.3f  front arrest %.2f tau_c" % (vc, res[vc]["runout"], res[vc]["height_over_L0"], res[vc]["front_arrest_tau"]))
on = T.OUTPUT + "/volcorr_true"
last = T.mpmio.read_frame(T.mpmio.frame_files(on)[-1])
c.true("the scalar is written to frames", "volume_correction" in last)
c.true("it stores only volume gained (>= -1e-12)", last["volume_correction"].min() >= -1e-12, "min %.3g, max %.3g" % (last["volume_correction"].min(), last["volume_correction"].max()))
c.true("some particles stored a volume", last["volume_correction"].max() > 1e-4)
c.true("runout with the correction <= without", res["true"]["runout"] <= res["false"]["runout"], "%.3f vs %.3f" % (res["true"]["runout"], res["false"]["runout"]))
h = T.mpmio.history(on)
c.close("mass conserved (relative)", abs(h["mass"][-1] - h["mass"][0]) / h["mass"][0], 0.0, atol=1e-13)

# restart bit for bit and rank invariance, 200 steps
short = ["-dx", "0.00625", "-output_dt", "100", "-sand_volume_correction", "true"]
ref = T.outdir("volcorr_ref2")
T.run_deck("column_collapse_2d.yaml", 2, ref, *short, "-max_steps", "200")
rst = T.outdir("volcorr_rst2")
T.run_deck("column_collapse_2d.yaml", 2, rst, *short, "-max_steps", "100", "-checkpoint_interval", "100")
T.run_deck("column_collapse_2d.yaml", 2, rst, *short, "-max_steps", "200", "-restart", "latest")
one = T.outdir("volcorr_one")
T.run_deck("column_collapse_2d.yaml", 1, one, *short, "-max_steps", "200")
a, b, o = (T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(d)[-1])) for d in (ref, rst, one))
c.true("restart: volume_correction and position bit for bit", np.array_equal(a["volume_correction"], b["volume_correction"]) and np.array_equal(a["position"], b["position"]))
scale = max(np.abs(a["volume_correction"]).max(), 1e-30)
c.close("1 vs 2 ranks: volume_correction max diff / max", np.abs(a["volume_correction"] - o["volume_correction"]).max() / scale, 0.0, atol=1e-9)
c.done()
