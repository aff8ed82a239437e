"""Every shipped deck in inputs/ and inputs/verification/ starts and runs a
few steps on 2 ranks, writes its output (frames, XDMF, history, run.json,
summary.json) and conserves its particle count.  Production-size decks run at
the coarse "quick look" resolution their header documents, so the test checks
the deck, not the machine's memory bandwidth."""
import glob
import json
import os
import mpmtest as T

decks = sorted(glob.glob(os.path.join(T.SOURCE, "inputs", "*.yaml")) + glob.glob(os.path.join(T.SOURCE, "inputs", "verification", "*.yaml")))
c = T.Checks("shipped decks (%d)" % len(decks))
for path in decks:
    rel = os.path.relpath(path, os.path.join(T.SOURCE, "inputs"))
    out = T.outdir("deck_" + rel.replace("/", "_").replace(".yaml", ""))
    steps = 3 if "bench" in rel or "crater" in rel or "silo_3d" in rel else 20  # the crater's impact, the 3D silo's release: up to 1,000 Gauss-Seidel sweeps per step
    coarse = {"landslide_3d.yaml": ["-dx", "0.05"], "snowball_wall_3d.yaml": ["-dx", "0.02"], "dam_breach_3d.yaml": ["-dx", "0.03"],  # 16 M, 310 k and 605 k particles at their own dx
              "crater_3d.yaml": ["-dx", "0.02", "-domain_hi", "0.2,0.14,0.2"],  # the impact's friction solves: ~10 s per step at its own dx
              "pbd_bench_3d.yaml": ["-block_hi", "0.1,0.1,0.1"],  # 1 M grains: 8,000
              "silo_3d.yaml": ["-nonsmooth_max_it", "50"], "silo_3d_quarter.yaml": ["-nonsmooth_max_it", "50"]}.get(rel, [])  # the release from rest: 1,000 sweeps, 19 s on 2 ranks; the deck is tested here, not the solve
    p = T.run_deck(rel, 2, out, "-max_steps", steps, *coarse, check=False)
    ok = p.returncode == 0
    c.true("%s runs %d steps" % (rel, steps), ok, "" if ok else p.stderr[-300:])
    if not ok:
        continue
    s = T.mpmio.summary(out)
    run = json.load(open(os.path.join(out, "run.json")))
    c.true("%s summary and provenance" % rel, s["steps"] == steps and s["ranks"] == 2 and run["ranks"] == 2 and "-dx " in run["options"] and "-max_steps %d" % steps in run["options"]
           and run["version"] == s["version"])
    c.true("%s XDMF and frames" % rel, os.path.exists(os.path.join(out, "particles.xmf")) and len(T.mpmio.frame_files(out)) >= 2)
    h = T.mpmio.history(out)
    c.true("%s particle count consistent" % rel, s["particles"] + s["particles_deleted"] - s["particles_emitted"] == h["particles"][0])
c.done()
