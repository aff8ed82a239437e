"""Quasi-static sand pile by a slow pour (reference-data.md s.2), pile >= 20
cells high, slope fitted over the middle 60 % of the flank.

The seed's plastic flow is volume preserving (non-associative, dilatancy 0).
A flowing surface layer then shears with principal axes at 45 deg to the
slope, where the Drucker-Prager (2D Mohr-Coulomb) cone gives a stress ratio
tau/sigma_n = sin(phi): avalanches stop at tan(theta) = sin(phi) (Davis 1968).
So the piles are checked against theta_r = atan(sin phi), within 3 deg, for
phi = 30 and 40 deg; docs/validation.md discusses the comparison with phi."""
import json
import math
import os
import shutil
import subprocess
import mpmtest as T

c = T.Checks("sand pile by slow pour (2 runs at once, 1 rank each)")
runs = {}
for phi in (30.0, 40.0):
    out = T.outdir("sand_pile_phi%g" % phi)
    env = T.mpi_env()
    cmd = ["mpiexec", "-n", "1", T.EXE, "-options_file_yaml", T.deck("sand_pile_2d.yaml"), "-output_dir", out, "-sand_friction_angle", str(phi)]
    if phi == 40.0:  # steeper, 28 cells by 3.2 s; poured on to 3.6 s, a late flank avalanche still drains at 3 cm/s at t_end
        cmd += ["-spout_stop", "3.2", "-t_end", "4.0"]
    runs[phi] = (out, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), env[T.SESSION])
for phi, (out, proc, sess) in runs.items():
    so, se = proc.communicate(timeout=900)
    shutil.rmtree(sess, ignore_errors=True)
    c.true("phi=%g run completes" % phi, proc.returncode == 0, se[-300:])
    subprocess.run(["/usr/bin/python3", os.path.join(T.SOURCE, "postproc", "sand_pile.py"), out], check=True)
    res = json.load(open(os.path.join(out, "sand_pile.json")))
    theory = math.degrees(math.atan(math.sin(math.radians(phi))))
    c.within("phi=%g pile height in cells (>= 20)" % phi, res["height_cells"], 20, 60)
    c.close("phi=%g flank slope vs atan(sin phi) [deg]" % phi, res["slope_angle"], theory, atol=3.0)
    c.within("phi=%g flank stands below phi [deg]" % phi, phi - res["slope_angle"], 0.0, phi)
    c.within("phi=%g at rest at the end (max speed, m/s)" % phi, res["max_speed"], 0.0, 0.02)
c.done()
