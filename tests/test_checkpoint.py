"""Checkpoint and restart (2D column collapse, 2 ranks):
- stop after N steps, -restart latest on the same rank count: the final
  state is bit for bit the uninterrupted run's, history.csv and the XDMF
  series have the same times (no duplicates, no gaps);
- restart on 1 and 3 ranks: within the rank-invariance tolerance (1e-9);
- SIGUSR1 writes a checkpoint at the next step boundary and exits with 75;
- SIGKILL leaves only readable files, and the restart continues seamlessly;
- -checkpoint_keep keeps the newest K;
- a checkpoint records the stepping wall time with the particle-steps (it
  recorded 0 s, so a restarted run reported particle-steps/s over the
  wall time of its own steps only);
- damaged or mismatched checkpoints are refused with a clear message."""
import glob
import os
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import mpmtest as T

DECK = ["-options_file_yaml", T.deck("column_collapse_2d.yaml"), "-dx", "0.00625", "-t_end", "1.0", "-output_dt", "0.05", "-history_interval", "100"]
G_SCALE = np.sqrt(9.81 * 0.2)  # velocity scale sqrt(g H0)


def run(ranks, out, *extra, check=True):
    return T.run(ranks, DECK + ["-output_dir", out] + list(extra), check=check)


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


def xmf_times(out):
    root = ET.parse(os.path.join(out, "particles.xmf")).getroot()
    return [float(t.get("Value")) for t in root.iter("Time")]


def same_run(c, label, ref, out, bitwise=True):
    a, b = final(ref), final(out)
    c.true("%s same ids and time" % label, np.array_equal(a["id"], b["id"]) and a["t"] == b["t"])
    for k in ("position", "velocity", "pressure", "hardening"):
        if bitwise:
            c.true("%s %s bit for bit" % (label, k), np.array_equal(a[k], b[k]), "max diff %.3g" % np.abs(a[k] - b[k]).max())
        else:
            scale = {"position": 0.6, "velocity": G_SCALE}.get(k, np.abs(a[k]).max() or 1.0)
            c.close("%s %s max diff / scale" % (label, k), np.abs(a[k] - b[k]).max() / scale, 0.0, atol=1e-9)
    ha, hb = T.mpmio.history(ref), T.mpmio.history(out)
    c.true("%s history.csv: same %d times (no duplicates or gaps)" % (label, len(ha["t"])), np.array_equal(ha["t"], hb["t"]))
    if bitwise:
        c.true("%s history.csv: identical energies" % label, np.array_equal(ha["kinetic_energy"], hb["kinetic_energy"]))
    c.true("%s XDMF series: same times, one per frame file" % label,
           xmf_times(ref) == xmf_times(out) and len(xmf_times(out)) == len(T.mpmio.frame_files(out)))


c = T.Checks("checkpoint and restart")
ref = T.outdir("ckpt_reference")
run(2, ref)

# 1. stop at a step limit, restart on the same rank count
out = T.outdir("ckpt_same_ranks")
run(2, out, "-checkpoint_interval", "1000", "-max_steps", "4500")
ck = sorted(glob.glob(os.path.join(out, "checkpoints", "ckpt_*.h5")))
c.true("-checkpoint_keep 2 (default): newest two kept", [os.path.basename(f) for f in ck] == ["ckpt_00003000.h5", "ckpt_00004000.h5"], str(ck))
with h5py.File(ck[-1], "r") as h:  # the stepping time goes with the steps: a restart's particle-steps/s counts both
    r = h.attrs["time_dt_dtlo_dthi_tnext_tlastframe_psteps_wallsteps"]
c.true("checkpoint records the particle-steps and their wall time", r[6] > 0 and r[7] > 0, "particle-steps %g, wall %g s" % (r[6], r[7]))
saved = T.outdir("ckpt_saved")
shutil.copytree(os.path.join(out, "checkpoints"), saved)
p = run(2, out, "-checkpoint_interval", "1000", "-restart", "latest")
c.true("restart message names the checkpoint and step", "restarted from" in p.stdout and "step 4000" in p.stdout)
same_run(c, "same ranks:", ref, out)
s = T.mpmio.summary(out)
c.true("after the restart the summary's stepping time includes the steps before it", s["wall_seconds_stepping"] > r[7], "%g s, checkpoint %g s" % (s["wall_seconds_stepping"], r[7]))
c.true("restart record written", os.path.exists(os.path.join(out, "restart_00004000.json")) and os.path.exists(os.path.join(out, "run.json")))

# 2. another rank count
with h5py.File(os.path.join(saved, "ckpt_00003000.h5"), "r") as h:
    r3, rs3 = h.attrs["time_dt_dtlo_dthi_tnext_tlastframe_psteps_wallsteps"], float(np.atleast_1d(h.attrs["rank_seconds_stepping"])[0])
c.close("checkpoint written on 2 ranks records 2 rank-seconds per stepping second", rs3 / r3[7], 2.0, rtol=1e-12)
for n in (1, 3):
    o = T.outdir("ckpt_ranks_%d" % n)
    run(n, o, "-restart", os.path.join(saved, "ckpt_00003000.h5"))
    s = T.mpmio.summary(o)  # 3000 steps on 2 ranks, the rest on n: the per-rank rate counts each part's ranks
    rank_s = rs3 + (s["wall_seconds_stepping"] - r3[7]) * n
    c.close("restart on %d ranks: particle-steps/s per rank over the rank-seconds of both parts" % n, s["particle_steps_per_second_per_rank"], s["particle_steps"] / rank_s, rtol=1e-4)
    a, b = final(ref), final(o)
    c.true("restart on %d ranks: same ids" % n, np.array_equal(a["id"], b["id"]))
    c.close("restart on %d ranks: position max diff / 0.6 m" % n, np.abs(a["position"] - b["position"]).max() / 0.6, 0.0, atol=1e-9)
    c.close("restart on %d ranks: velocity max diff / sqrt(g H0)" % n, np.abs(a["velocity"] - b["velocity"]).max() / G_SCALE, 0.0, atol=1e-9)

# 3. SIGUSR1: checkpoint at the next step boundary, exit 75, continue
out = T.outdir("ckpt_signal")
env = dict(os.environ, **T.MPI_ENV)
proc = subprocess.Popen(["mpiexec", "-n", "2", T.EXE] + DECK + ["-output_dir", out], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
while len(glob.glob(os.path.join(out, "frames", "frame_00003.h5"))) == 0 and proc.poll() is None:
    time.sleep(0.05)
proc.send_signal(signal.SIGUSR1)  # mpiexec forwards it to the ranks
so, se = proc.communicate(timeout=300)
c.true("SIGUSR1: exit code 75", proc.returncode == 75, "exit %d" % proc.returncode)
c.true("SIGUSR1: says it checkpointed", "signal received: checkpoint at step" in so, so[-300:])
c.true("SIGUSR1: one checkpoint written", len(glob.glob(os.path.join(out, "checkpoints", "ckpt_*.h5"))) == 1)
s = T.mpmio.summary(out)
c.true("SIGUSR1: summary written, run not finished", s["simulated_time"] < 1.0)
run(2, out, "-restart", "latest")
same_run(c, "after SIGUSR1:", ref, out)

# 4. SIGKILL: every file left is readable; the restart continues seamlessly
out = T.outdir("ckpt_sigkill")
proc = subprocess.Popen(["mpiexec", "-n", "2", T.EXE] + DECK + ["-output_dir", out, "-checkpoint_interval", "700"], env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
while len(glob.glob(os.path.join(out, "checkpoints", "ckpt_*.h5"))) < 2 and proc.poll() is None:
    time.sleep(0.02)
time.sleep(0.3)
subprocess.run(["pkill", "-KILL", "-f", "granular-mpm.*ckpt_sigkill"])
proc.wait(timeout=60)
unreadable = []
for f in glob.glob(os.path.join(out, "frames", "*.h5")) + glob.glob(os.path.join(out, "checkpoints", "*.h5")):
    try:
        with h5py.File(f, "r") as h:
            list(h.keys())
    except Exception as e:  # noqa: BLE001
        unreadable.append("%s: %s" % (f, e))
c.true("SIGKILL: every .h5 left under its final name is readable", not unreadable, "; ".join(unreadable))
try:
    xmf_ok = len(xmf_times(out)) > 0
except Exception:  # noqa: BLE001
    xmf_ok = False
c.true("SIGKILL: particles.xmf parses", xmf_ok)
run(2, out, "-checkpoint_interval", "700", "-restart", "latest")
c.true("SIGKILL: no temporaries left after the restart", not glob.glob(os.path.join(out, "*", "*.tmp")))
same_run(c, "after SIGKILL:", ref, out)

# 5. damaged and mismatched checkpoints are refused before stepping
good = os.path.join(saved, "ckpt_00004000.h5")
bad_dir = T.outdir("ckpt_damaged")
os.makedirs(bad_dir)
trunc = os.path.join(bad_dir, "truncated.h5")
shutil.copy(good, trunc)
os.truncate(trunc, os.path.getsize(trunc) // 2)
nofe = os.path.join(bad_dir, "no_fe.h5")
shutil.copy(good, nofe)
with h5py.File(nofe, "a") as h:
    del h["particles/Fe"]
cases = [
    (trunc, [], "is damaged or not an HDF5 checkpoint"),
    (nofe, [], "has no dataset particles/Fe"),
    (good, ["-dx", "0.003125"], "was written on a grid of"),
    (os.path.join(bad_dir, "missing.h5"), [], "-restart: cannot read"),
]
for path, extra, msg in cases:
    p = run(2, os.path.join(bad_dir, "out"), "-restart", path, *extra, check=False)
    c.true("refused: %s %s" % (os.path.basename(path), " ".join(extra)), p.returncode == 1 and msg in p.stderr and "frame" not in p.stdout, p.stderr.strip()[-200:])
p = T.run(2, ["-options_file_yaml", T.deck("ball_into_sand_3d.yaml"), "-output_dir", os.path.join(bad_dir, "out3"), "-restart", good], check=False)
c.true("refused: a 2D checkpoint for a 3D deck", p.returncode == 1 and "is 2D but the deck is 3D" in p.stderr, p.stderr.strip()[-200:])
c.done()
