"""The command line a new user meets first, and the progress of a run.

- A bare run prints the usage (exit 1); -h and --help print it (exit 0);
  --version names the version, the commit and the libraries; on 2 ranks
  each is printed once.
- -monitor N prints a line every N steps with t, dt and the limit that set
  it, the kinetic energy, the fastest particle, the particle count, the
  imbalance and the speed; -monitor_wall prints by wall time.
- summary.json separates the steps the stability limits set (dt_min,
  dt_max) from the shortened steps that land on output times
  (dt_taken_min) and counts the steps by limit; the counts add up to the
  steps.
- Plausibility warnings (the run goes on): values far outside an
  option's usual range name the value, the range and the likely slip
  (units); an object wholly outside the domain and particles seeded
  inside an object are reported; a sound deck gets none; summary.json
  counts them."""
import json
import os
import re
import subprocess

import mpmtest as T

c = T.Checks("command line and monitor")
env = dict(os.environ, **T.MPI_ENV)

bare = subprocess.run([T.EXE], env=env, capture_output=True, text=True, timeout=60)
c.true("bare run: usage on stderr, exit 1", bare.returncode == 1 and "Usage:" in bare.stderr and "-options_file_yaml" in bare.stderr, bare.stderr[:200])
for flag in ("-h", "--help"):
    p = subprocess.run([T.EXE, flag], env=env, capture_output=True, text=True, timeout=60)
    c.true("%s: usage, exit 0" % flag, p.returncode == 0 and "Usage:" in p.stdout and "-monitor" in p.stdout, p.stdout[:200] + p.stderr[:200])
p = subprocess.run([T.EXE, "--version"], env=env, capture_output=True, text=True, timeout=60)
c.true("--version: name, version, PETSc, HDF5, exit 0", p.returncode == 0 and re.match(r"granular-mpm \d+\.\d+\.\d+", p.stdout) is not None and "PETSc 3." in p.stdout and "HDF5 1." in p.stdout,
       p.stdout)
p = T.run(2, ["--version"])
c.true("--version on 2 ranks: printed once", p.stdout.count("granular-mpm ") == 1, p.stdout)

# -monitor every 40 steps on a short collapse; frames every 0.0123 s make
# landing steps; 2 ranks (the monitor's reductions are collective)
out = T.outdir("cli_monitor")
p = T.run_deck("column_collapse_2d.yaml", 2, out, "-t_end", "0.03", "-output_dt", "0.0123", "-monitor", "40")
s = json.load(open(os.path.join(out, "summary.json")))
lines = [l for l in p.stdout.splitlines() if l.startswith("step ")]
steps = [int(l.split()[1]) for l in lines]
c.true("-monitor 40: a line at every multiple of 40 steps", steps == list(range(40, s["steps"] + 1, 40)), "%s (%d steps)" % (steps[:5], s["steps"]))
fields = ("t ", "dt ", "(elastic; next", "KE ", "vmax ", "particles 8192", "imbalance ", "steps/s", "eta ")
c.true("monitor line names t, dt and its limit, KE, vmax, particles, imbalance, speed", all(all(f in l for f in fields) for l in lines), lines[0] if lines else "")
ke = [float(re.search(r"KE (\S+) J", l).group(1)) for l in lines]
c.true("kinetic energy grows as the column collapses", len(ke) > 3 and all(b > a for a, b in zip(ke, ke[1:])), str(ke[:6]))
c.true("the stable steps: dt_min = dt_max (set by the elastic wave speed)", s["dt_min"] == s["dt_max"] and s["dt_min"] > 0, "%g %g" % (s["dt_min"], s["dt_max"]))
lim = s["steps_by_dt_limit"]
c.true("steps by limit add up to the steps", sum(lim.values()) == s["steps"], str(lim))
c.true("2 frames and t_end landed: output + t_end steps = 3", lim.get("output", 0) + lim.get("t_end", 0) == 3 and lim.get("elastic", 0) == s["steps"] - 3, str(lim))
c.true("the shortened steps are below the stable range", 0 < s["dt_taken_min"] < s["dt_min"], "%g < %g" % (s["dt_taken_min"], s["dt_min"]))

# -monitor_wall 1e-9: rank 0's clock decides, every rank prints the same line
out = T.outdir("cli_monitor_wall")
p = T.run_deck("column_collapse_2d.yaml", 2, out, "-max_steps", "12", "-monitor_wall", "1e-9")
lines = [l for l in p.stdout.splitlines() if l.startswith("step ")]
c.true("-monitor_wall: a line after every step, once each", [int(l.split()[1]) for l in lines] == list(range(1, 13)), "%d lines" % len(lines))

# plausibility warnings: before the first step, the run goes on
WARN = [(["-sand_youngs_modulus", "2"], "-sand_youngs_modulus = 2 Pa is far outside the usual range [1000, 1e+12] Pa: moduli are in Pa"),
        (["-sand_friction_angle", "0.55"], "-sand_friction_angle = 0.55 deg is far outside the usual range [5, 70] deg: angles are in degrees (0.55 rad would be 31.5 deg)"),
        (["-sand_density", "1.7"], "-sand_density = 1.7 kg/m^3 is far outside the usual range [50, 25000] kg/m^3: densities are in kg/m^3"),
        (["-gravity", "0,-9810"], "|-gravity| = 9810 m/s^2 is far outside the usual range [0.5, 50] m/s^2"),
        (["-objects", "post", "-post_shape", "box", "-post_lo", "0.7,0", "-post_hi", "0.8,0.1"], "object 'post' lies wholly outside the domain along x"),
        (["-objects", "plane", "-plane_shape", "half_space", "-plane_center", "0,-0.5", "-plane_normal", "0,1"], "object 'plane' (a half space) lies wholly outside the domain"),
        (["-objects", "post", "-post_shape", "box", "-post_lo", "0.0,0", "-post_hi", "0.01,0.05"], "particles were seeded inside object 'post'"),
        (["-integrator", "nonsmooth", "-nonsmooth_phi_max", "0.95"], "-nonsmooth_phi_max = 0.95 is far outside the usual range [0.4, 0.75]: the volume fraction of packed grains"),
        (["-integrator", "semi_implicit", "-semi_implicit_beta", "0.3"], "-semi_implicit_beta = 0.3 is far outside the usual range [0.5, 1]: below 0.5 the linearized step is not unconditionally stable")]
for extra, msg in WARN + [([], None)]:
    out = T.outdir("cli_warn")
    p = T.run_deck("column_collapse_2d.yaml", 1, out, "-max_steps", "1", *extra)
    warned = [l for l in p.stderr.splitlines() if "warning" in l]
    nw = json.load(open(os.path.join(out, "summary.json")))["warnings"]
    if msg is None:
        c.true("the shipped deck: no warning", not warned and nw == 0, "; ".join(warned))
    else:
        c.true("warned, ran: %s" % " ".join(extra[-2:] if extra[0] == "-integrator" else extra[:2]), len(warned) == 1 and msg in warned[0] and nw == 1, "; ".join(warned)[:200])
c.done()
