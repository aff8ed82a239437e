"""Runs that go wrong end cleanly and say so:
- a state that turns NaN is caught at the step it happens (the step's one
  reduction carries the count), the run stops with exit code 70 and a
  message naming the step, the first particle's id, material, position and
  velocity; no particle is deleted even with -delete_outside; the last
  frame shows the state; summary.json stays valid JSON (status
  "nonfinite", non-finite numbers as null); at 1 and 2 ranks;
- -restart latest skips a damaged newest checkpoint, saying so, and
  continues from the newest intact one; when every checkpoint is damaged it
  refuses with exit 1;
- a direction of norm 1e300 is a direction (an emitter still pours down)."""
import glob
import json
import os

import mpmtest as T

c = T.Checks("reliability")

# 1. a blow-up: neo-Hookean block compressed to inversion in one step (ln J of J < 0)
for n in (1, 2):
    out = T.outdir("reliability_nan_%d" % n)
    p = T.run_deck("verification/free_fall.yaml", n, out, "-dt", "1e-3", "-cube_velocity_gradient", "-3000,0,0,0", "-delete_outside", check=False)
    err = p.stderr
    c.true("%d rank(s): exit code 70" % n, p.returncode == 70, "exit %d" % p.returncode)
    c.true("%d rank(s): message names the step, particle, material, position, velocity" % n,
           "became non-finite at step 2" in err and "particle 281474976710657 (material block)" in err and "with velocity" in err, err.strip()[:300])
    c.true("%d rank(s): no PETSc trace" % n, "PETSC ERROR" not in err)
    with open(os.path.join(out, "summary.json")) as f:
        try:
            s = json.load(f)
        except ValueError as e:  # nan in JSON
            s = {"error": str(e)}
    c.true("%d rank(s): summary.json is valid JSON with status nonfinite" % n, s.get("status") == "nonfinite", str(s)[:200])
    c.true("%d rank(s): no particle deleted or lost" % n, s.get("particles") == 64 and s.get("particles_deleted") == 0, str(s.get("particles")))
    last = T.mpmio.read_frame(T.mpmio.frame_files(out)[-1])
    c.true("%d rank(s): the last frame is the failing step's" % n, last["step"] == 2 and len(last["id"]) == 64, "step %d" % last["step"])

# 2. -restart latest with damaged checkpoints
deck = ["-dx", "0.0125", "-t_end", "0.1", "-checkpoint_interval", "100", "-checkpoint_keep", "3"]
out = T.outdir("reliability_restart")
T.run_deck("column_collapse_2d.yaml", 2, out, *deck, "-max_steps", "300")
ck = sorted(glob.glob(os.path.join(out, "checkpoints", "ckpt_*.h5")))
c.true("three checkpoints written", [os.path.basename(f) for f in ck] == ["ckpt_00000100.h5", "ckpt_00000200.h5", "ckpt_00000300.h5"], str(ck))
os.truncate(ck[-1], os.path.getsize(ck[-1]) // 3)
p = T.run_deck("column_collapse_2d.yaml", 2, out, *deck, "-restart", "latest")
c.true("damaged newest checkpoint skipped, named, with the reason", "skipping" in p.stderr and "ckpt_00000300.h5" in p.stderr and "not a readable HDF5 file" in p.stderr,
       p.stderr.strip()[:200])
c.true("continued from the newest intact one", "restarted from" in p.stdout and "ckpt_00000200.h5" in p.stdout and "step 200" in p.stdout)
for f in glob.glob(os.path.join(out, "checkpoints", "ckpt_*.h5")):
    with open(f, "r+b") as h:
        h.write(b"garbage!" * 64)
p = T.run_deck("column_collapse_2d.yaml", 2, out, *deck, "-restart", "latest", check=False)
c.true("all checkpoints damaged: refused with exit 1", p.returncode == 1 and "are damaged" in p.stderr and "PETSC ERROR" not in p.stderr, p.stderr.strip()[-200:])

# 3. a huge direction vector is still a direction
out = T.outdir("reliability_direction")
T.run_deck("sand_spout_2d.yaml", 1, out, "-dx", "0.005", "-max_steps", "200", "-spout_direction", "0,-1e300")
s = T.mpmio.summary(out)
f = T.mpmio.read_frame(T.mpmio.frame_files(out)[-1])
c.true("-spout_direction 0,-1e300: particles emitted, moving down", s["particles_emitted"] > 0 and (f["velocity"][:, 1] < 0).all(), "%d emitted" % s["particles_emitted"])
c.done()
