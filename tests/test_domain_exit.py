"""A particle leaving the domain stops the run with an error naming its id
and position (exit code 1, before any output is lost: the frames written
so far stay readable); with -delete_outside the particles are deleted,
counted and reported, and the run completes."""
import re
import numpy as np
import mpmtest as T

ARGS = ["-dim", "2", "-domain_lo", "0,0", "-domain_hi", "1,0.5", "-dx", "0.02", "-gravity", "0,0",
        "-materials", "m", "-m_type", "neo_hookean", "-m_youngs_modulus", "1e5", "-m_density", "1000",
        "-regions", "b", "-b_shape", "box", "-b_lo", "0.7,0.2", "-b_hi", "0.8,0.3", "-b_velocity", "2,0", "-b_material", "m",
        "-bc_xhi", "none", "-t_end", "0.5", "-output_dt", "0.05"]

c = T.Checks("particles leaving the domain")
out = T.outdir("domain_exit_error")
p = T.run(2, ARGS + ["-output_dir", out], check=False)
msg = p.stderr + p.stdout
m = re.search(r"Particle (\d+) left the domain at \(([-0-9.e+]+), ([-0-9.e+]+), ([-0-9.e+]+)\) at step (\d+)", msg)
c.true("exit code 1", p.returncode == 1, "(got %d)" % p.returncode)
c.true("message names the particle id and position", m is not None, m.group(0) if m else msg[-500:])
if m:
    c.within("reported x is past the open face + one cell [m]", float(m.group(2)), 1.0 + 0.02, 1.1)
    c.true("reported id is one of the block's ids", (int(m.group(1)) >> 48) == 1)
c.true("message says how to fix it (-delete_outside)", "-delete_outside" in msg)
frames = T.mpmio.frame_files(out)
c.true("frames before the error are readable", len(frames) >= 1 and all(len(T.mpmio.read_frame(f, ["id"])["id"]) == 100 for f in frames),
       "%d frames" % len(frames))

out = T.outdir("domain_exit_delete")
p = T.run(2, ARGS + ["-output_dir", out, "-delete_outside"])
s = T.mpmio.summary(out)
c.true("with -delete_outside the run completes", p.returncode == 0)
c.true("summary: 100 deleted, 0 left", s["particles_deleted"] == 100 and s["particles"] == 0, "deleted %d left %d" % (s["particles_deleted"], s["particles"]))
last = T.mpmio.read_frame(T.mpmio.frame_files(out)[-1], ["id"])
c.true("the final frame (no particles) is written and readable", len(last["id"]) == 0)
c.true("deletions reported in the progress output", "100 deleted" in p.stdout, p.stdout.strip().splitlines()[-1])
c.done()
