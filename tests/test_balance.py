"""Dynamic load balancing (landslide along the slab axis, 3 ranks):
- balancing particles only (-balance_node_cost 0): the imbalance max/mean
  particles per rank, recorded in history.csv, stays under
  -balance_threshold after the first rebalance;
- balancing work (particles + node cost x grid nodes, the default): the
  work imbalance stays under the threshold, summary.json's per-rank
  particles and nodes give the same imbalance, and the rank holding the
  empty runway gets fewer nodes than with particles only;
- rebalancing loses no particle and changes results only by roundoff
  (compared with the same run without balancing, 1e-9);
- a checkpoint taken after the slabs moved restarts bit for bit;
- a run starts on slabs placed at the seeded regions' work quantiles
  (-balance_initial, the default): its first imbalance is under the
  threshold and it gives the same particles as a run started on even
  slabs that rebalances at its first step; a restart on another rank
  count starts on slabs placed on the checkpoint's particles."""
import os
import numpy as np
import mpmtest as T

DECK = ["-options_file_yaml", T.deck("landslide_2d.yaml"), "-dx", "0.02", "-output_dt", "0.02", "-history_interval", "10"]
TH = 1.2


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


c = T.Checks("slab load balancing")
bal = T.outdir("balance_on")
p = T.run(3, DECK + ["-output_dir", bal, "-t_end", "0.5", "-balance_threshold", str(TH), "-balance_node_cost", "0", "-balance_initial", "false"])
h = T.mpmio.history(bal)
s = T.mpmio.summary(bal)
n_reb = p.stdout.count("rebalanced at step")
c.true("rebalanced at least 3 times", n_reb >= 3 and s["rebalances"] == n_reb, "%d times" % n_reb)
c.within("imbalance before the first rebalance (all on one rank: 3)", h["imbalance"][0], 2.5, 3.0)
after = h["imbalance"][h["step"] >= 1]
c.within("max imbalance after the first rebalance (threshold %.1f)" % TH, after.max(), 1.0, TH)
c.true("particle count constant", (h["particles"] == h["particles"][0]).all())
c.true("final particles per rank all busy", min(s["particles_per_rank"]) > 0.6 * max(s["particles_per_rank"]), str(s["particles_per_rank"]))

# work balancing (default node cost)
wk = T.outdir("balance_work")
p = T.run(3, DECK + ["-output_dir", wk, "-t_end", "0.5", "-balance_threshold", str(TH)])
hw, sw = T.mpmio.history(wk), T.mpmio.summary(wk)
cost = sw["balance_node_cost"]
work = np.array(sw["particles_per_rank"]) + cost * np.array(sw["nodes_per_rank"])
c.true("work balancing: default node cost > 0, slabs placed at the start", cost > 0 and "slabs placed on the seeded work" in p.stdout, "cost %g" % cost)
c.within("balanced start: imbalance at step 0 (even slabs: %.2f)" % h["imbalance"][0], hw["imbalance"][0], 1.0, TH)
c.within("work balancing: max imbalance over the run", hw["imbalance"].max(), 1.0, TH)
c.close("work balancing: summary's per-rank work max/mean = history's last imbalance", work.max() / work.mean(), hw["imbalance"][-1], atol=2e-4)
c.true("work balancing: every node owned once", sum(sw["nodes_per_rank"]) == sum(s["nodes_per_rank"]))
c.true("work balancing: the runway rank gets fewer nodes than with particles only", max(sw["nodes_per_rank"]) < max(s["nodes_per_rank"]),
       "%s vs %s" % (sw["nodes_per_rank"], s["nodes_per_rank"]))

# same physics with and without balancing (short run: roundoff only)
short = ["-max_steps", "300", "-t_end", "0.5"]
a = T.outdir("balance_short_on")
b = T.outdir("balance_short_off")
T.run(3, DECK + short + ["-output_dir", a, "-balance_initial", "false"])
T.run(3, DECK + short + ["-output_dir", b, "-balance_threshold", "0"])
fa, fb = final(a), final(b)
c.true("same ids with and without balancing", np.array_equal(fa["id"], fb["id"]))
c.close("position max diff / domain length", np.abs(fa["position"] - fb["position"]).max() / 4.0, 0.0, atol=1e-9)
c.close("velocity max diff / sqrt(g H)", np.abs(fa["velocity"] - fb["velocity"]).max() / np.sqrt(9.81 * 0.2), 0.0, atol=1e-9)
c.true("balancing happened in the short run", T.mpmio.summary(a)["rebalances"] >= 1)

# restart from a checkpoint written after the slabs moved
r = T.outdir("balance_restart")
T.run(3, DECK + ["-max_steps", "150", "-t_end", "0.5", "-checkpoint_interval", "150", "-output_dir", r, "-balance_initial", "false"])
c.true("the checkpoint was written after a rebalance", T.mpmio.summary(r)["rebalances"] >= 1)
T.run(3, DECK + short + ["-output_dir", r, "-restart", "latest", "-balance_initial", "false"])
fr = final(r)
c.true("restart after rebalancing: bit for bit", np.array_equal(fa["position"], fr["position"]) and np.array_equal(fa["velocity"], fr["velocity"]),
       "max diff %.3g" % np.abs(fa["position"] - fr["position"]).max())

# the balanced start against even slabs rebalanced at the first step
st = T.outdir("balance_short_start")
ps = T.run(3, DECK + short + ["-output_dir", st])
fs = final(st)
c.true("balanced start: no rebalance at step 1", "rebalanced at step 1:" not in ps.stdout)
c.true("balanced start: same ids as even slabs", np.array_equal(fa["id"], fs["id"]))
c.close("balanced start: position max diff / domain length", np.abs(fa["position"] - fs["position"]).max() / 4.0, 0.0, atol=1e-9)

# a restart on another rank count starts on slabs placed on the checkpoint's particles
n = T.outdir("balance_newranks")
T.run(1, DECK + ["-max_steps", "150", "-t_end", "0.5", "-checkpoint_interval", "150", "-output_dir", n])
pn = T.run(3, DECK + short + ["-output_dir", n, "-restart", "latest"])
fn = final(n)
c.true("restart on 3 ranks from 1: slabs placed on the checkpoint's work, no rebalance", "slabs placed on the checkpoint's work" in pn.stdout and "rebalanced at step" not in pn.stdout)
c.true("restart on 3 ranks from 1: same ids", np.array_equal(fa["id"], fn["id"]))
c.close("restart on 3 ranks from 1: position max diff / domain length", np.abs(fa["position"] - fn["position"]).max() / 4.0, 0.0, atol=1e-9)
c.done()
