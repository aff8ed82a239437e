"""The Slurm workflows (jobscripts/slurm_*.sbatch) on a real single-node
Slurm cluster (munged, slurmctld, slurmd from Debian's packages, started by
tests/slurm_cluster.py with a configuration in a temporary directory and
stopped at the end, also on failure), submitted with sbatch:

1. slurm_default_scene.sbatch with -dx 0.005 -t_end 3 (through
   MPM_OPTIONS): state COMPLETED, summary.json, deposit.png,
   column_collapse.json.  It is also the uninterrupted reference of 3.
2. slurm_scaling.sbatch on a tiny problem, strong and weak, 1, 2, 4 ranks:
   the CSV table, 4 ranks on 2 cores marked oversubscribed.
3. slurm_production.sbatch as a chain with the deck and options of 1, on 2
   ranks, --time=1 (Slurm's minimum) and --signal=B:USR1@50.  slurmctld
   sends such warnings only in its time-limit pass every 30 s, so the first
   job is submitted ~9 s before a pass (predicted from slurmctld's log) and
   is warned ~8 s in: the run (~20 s on an idle 2-core machine, whose
   start-up is 0.6 s since the Catalyst module is loaded lazily) needs at
   least two jobs whatever the machine's speed.  Every job but the last
   gets USR1, checkpoints, exits 75 and submits its successor; the last one
   finishes and post-processes.  The final frame equals 1's bit for bit (by
   particle id, every dataset), history.csv and particles.xmf have 1's
   times: no duplicates, no gaps.

Needs root (munged runs as user munge, slurmd as root) and the Debian
packages slurm-wlm and munge (jobscripts/quickstart.sh installs them);
without them the test exits with 77 (skipped).  MPM_SLURM_KEEP=1 keeps the
cluster's directory (daemon logs) afterwards.  ~2 minutes on 2 idle cores."""
import csv
import os
import shutil
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import mpmtest as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster  # noqa: E402

JOBS = os.path.join(T.SOURCE, "jobscripts")
BUILD = os.path.dirname(os.path.abspath(T.EXE))
SCENE_OPTIONS = "-dx 0.005 -t_end 3"  # ~20 s on 2 idle cores: well past the warning at ~8 s
T_END = 3.0

missing = [x for x in ("munged", "slurmctld", "slurmd", "sbatch") if not shutil.which(x, path=os.environ.get("PATH", "") + ":/usr/sbin")]
if os.geteuid() != 0 or missing:
    print("SKIPPED: needs root and Debian's slurm-wlm and munge (missing: %s)" % (" ".join(missing) or "root"))
    sys.exit(77)

top = T.outdir("slurm")
os.makedirs(top)
out_scene, out_chain, out_scaling = (os.path.join(top, d) for d in ("default", "chain", "scaling"))
log_pattern = os.path.join(top, "%x-%j.out")
common = {"MPM_BUILD_DIR": BUILD}
c = T.Checks("Slurm workflows (jobscripts/slurm_*.sbatch)")


def log_of(name, jobid):
    path = os.path.join(top, "%s-%s.out" % (name, jobid))
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


def xmf_times(out):
    return [float(t.get("Value")) for t in ET.parse(os.path.join(out, "particles.xmf")).getroot().iter("Time")]


t_start = time.time()
# Stay inside ctest's 600 s: a test killed by ctest could not stop the daemons.
deadline = t_start + 500


def left(cap):
    return max(10.0, min(cap, deadline - time.time()))


with SlurmCluster(ctld_debug="debug2") as cluster:
    try:
        scene = cluster.sbatch(os.path.join(JOBS, "slurm_default_scene.sbatch"), ["--job-name=scene", "--output=" + log_pattern],
                               env=dict(common, MPM_OUTPUT_DIR=out_scene, MPM_OPTIONS=SCENE_OPTIONS))
        scaling = cluster.sbatch(os.path.join(JOBS, "slurm_scaling.sbatch"), ["--job-name=scaling", "--output=" + log_pattern, "-N1", "-n4"],
                                 env=dict(common, MPM_SCALING_DECK="inputs/column_collapse_2d.yaml", MPM_SCALING_OPTIONS="-dx 0.0125",
                                          MPM_SCALING_STEPS=300, MPM_SCALING_RANKS="1 2 4", MPM_SCALING_OUT=out_scaling,
                                          MPM_WEAK_OPTIONS="-domain_hi {0.6*r},0.25 -column_hi {0.1*r},0.2"))
        print("submitted: default scene %s, scaling %s" % (scene, scaling))
        cluster.wait(scene, timeout=left(300))
        cluster.wait(scaling, timeout=left(300))
        print("default scene and scaling done after %.0f s" % (time.time() - t_start))
        # The chain starts ~8 s before one of slurmctld's 30-s time-limit
        # passes, so with --time=1 and --signal=B:USR1@50 its first job is
        # warned ~8 s in, whatever the machine's speed; successors start at
        # random phases and are warned within 30 s.
        tick = cluster.sleep_until_check_in(9)
        chain_first = cluster.sbatch(os.path.join(JOBS, "slurm_production.sbatch"),
                                     ["--job-name=chain", "--output=" + log_pattern, "-N1", "-n2", "--time=1", "--signal=B:USR1@50"],
                                     env=dict(common, MPM_DECK="inputs/column_collapse_2d.yaml", MPM_OPTIONS=SCENE_OPTIONS,
                                              MPM_OUTPUT_DIR=out_chain, MPM_CHAIN_MAX=8, MPM_CHECKPOINT_WALL=5, MPM_SIGNAL_GRACE=3,
                                              MPM_CHAIN_SBATCH_ARGS="--signal=B:USR1@50"))
        print("submitted: chain %s at %s, next time-limit pass expected at %s" % (chain_first, time.strftime("%H:%M:%S"), tick.strftime("%H:%M:%S") if tick else "?"))
        cluster.wait_all(timeout=left(420))
        print("all jobs done after %.0f s" % (time.time() - t_start))
        records = {r["JobId"]: r for r in cluster.jobcomp()}
        info = {j: cluster.job(j) or records.get(j, {}) for j in records}
    finally:
        jobs_seen = sorted(cluster.jobcomp(), key=lambda r: int(r.get("JobId", 0)))
        for r in jobs_seen:
            print("  job %-3s %-8s %-10s exit %-5s %s -> %s" % (r.get("JobId"), r.get("Name"), r.get("JobState"), r.get("ExitCode"), r.get("StartTime"), r.get("EndTime")))
        print("  slurmctld time-limit passes: " + " ".join(t.strftime("%H:%M:%S") for t in cluster.time_limit_checks()))

# ---- default scene -------------------------------------------------------
s = info.get(scene, {})
log = log_of("scene", scene)
c.true("default scene: job COMPLETED, exit 0:0", s.get("JobState") == "COMPLETED" and s.get("ExitCode") == "0:0", "%s %s" % (s.get("JobState"), s.get("ExitCode")))
ok = os.path.exists(os.path.join(out_scene, "summary.json"))
c.true("default scene: summary.json written", ok)
if ok:
    summ = T.mpmio.summary(out_scene)
    c.true("default scene: 2 ranks, ran to t_end = %g s" % T_END, summ["ranks"] == 2 and abs(summ["simulated_time"] - T_END) < 1e-9, "ranks %s t %s" % (summ["ranks"], summ["simulated_time"]))
png = os.path.join(out_scene, "deposit.png")
c.true("default scene: deposit.png written", os.path.exists(png) and os.path.getsize(png) > 10000)
c.true("default scene: column_collapse.json and the Lube 2005 report", os.path.exists(os.path.join(out_scene, "column_collapse.json")) and "Lube 2005" in log)
c.true("default scene: launched with srun", "via srun" in log, log[:300])

# ---- scaling -------------------------------------------------------------
s = info.get(scaling, {})
c.true("scaling: job COMPLETED, exit 0:0", s.get("JobState") == "COMPLETED" and s.get("ExitCode") == "0:0", "%s %s" % (s.get("JobState"), s.get("ExitCode")))
table = os.path.join(out_scaling, "scaling.csv")
rows = list(csv.DictReader(open(table))) if os.path.exists(table) else []
print(open(table).read() if rows else "(no scaling.csv)")
c.true("scaling: scaling.png plotted", os.path.exists(os.path.join(out_scaling, "scaling.png")))
c.true("scaling: 6 rows (strong and weak at 1, 2, 4 ranks)", [(r["mode"], r["ranks"]) for r in rows] ==
       [(m, n) for m in ("strong", "weak") for n in ("1", "2", "4")])
if len(rows) == 6:
    c.true("scaling: only 4 ranks on 2 cores marked oversubscribed", [r["oversubscribed"] for r in rows] == ["no", "no", "yes"] * 2)
    strong, weak = rows[:3], rows[3:]
    c.true("scaling: strong keeps the particles", len({r["particles"] for r in strong}) == 1)
    c.true("scaling: weak grows them with the ranks", [int(r["particles"]) for r in weak] == [int(weak[0]["particles"]) * n for n in (1, 2, 4)])
    c.true("scaling: 300 steps each, rates > 0", all(int(r["steps"]) == 300 and float(r["particle_steps_per_second"]) > 0 for r in rows))
    c.true("scaling: efficiency 1 at 1 rank, speedup * 1 / r elsewhere",
           all(abs(float(r["efficiency"]) - float(r["speedup"]) / int(r["ranks"])) < 1e-3 for r in rows) and float(strong[0]["efficiency"]) == 1.0)

# ---- the chain -----------------------------------------------------------
chain = [r for r in jobs_seen if r.get("Name") == "chain"]
logs = [log_of("chain", r["JobId"]) for r in chain]
print("chain: %d jobs" % len(chain))
for r, lg in zip(chain, logs):
    for line in lg.splitlines():
        if line.startswith("slurm_production[") and ("got" in line or "exited" in line or "continued" in line or "done" in line or "continuing" in line):
            print("   " + line)
c.true("chain: at least 2 jobs (at least one checkpoint-and-continue)", len(chain) >= 2,
       "%d job(s)%s" % (len(chain), "" if len(chain) >= 2 else ": the run finished before Slurm's warning"))
c.true("chain: every job COMPLETED, exit 0:0", chain and all(r.get("JobState") == "COMPLETED" and r.get("ExitCode") == "0:0" for r in chain),
       " ".join("%s:%s" % (r.get("JobState"), r.get("ExitCode")) for r in chain))
c.true("chain: each job but the last got USR1, exited 75, submitted the next",
       all("got USR1" in lg and "solver exited with 75" in lg and "continued as job" in lg for lg in logs[:-1]))
c.true("chain: successors restarted from a checkpoint", all("continuing from checkpoint step" in lg for lg in logs[1:]))
c.true("chain: the last job finished and post-processed", bool(logs) and "run finished" in logs[-1] and "done after %d job(s)" % len(chain) in logs[-1]
       and os.path.exists(os.path.join(out_chain, "history.png")) and os.path.exists(os.path.join(out_chain, "front_history.png")))
if T.mpmio.frame_files(out_chain) and T.mpmio.frame_files(out_scene):
    a, b = final(out_scene), final(out_chain)
    c.true("chain: final frame at the same step and time as the uninterrupted run", a["step"] == b["step"] and a["t"] == b["t"], "%s/%s vs %s/%s" % (a["step"], a["t"], b["step"], b["t"]))
    fields = sorted(k for k, v in a.items() if isinstance(v, np.ndarray) and v.shape[:1] == a["id"].shape)
    diff = [k for k in fields if k not in b or a[k].shape != b[k].shape or not np.array_equal(a[k], b[k])]
    c.true("chain: final frame bit for bit by particle id (%d fields)" % len(fields), not diff, "differ: " + ", ".join(diff))
    c.true("chain: same number of frames", len(T.mpmio.frame_files(out_chain)) == len(T.mpmio.frame_files(out_scene)))
    ha, hb = T.mpmio.history(out_scene), T.mpmio.history(out_chain)
    c.true("chain: history.csv times strictly increasing (no duplicates)", bool(len(hb["t"])) and np.all(np.diff(hb["t"]) > 0))
    c.true("chain: history.csv has the uninterrupted run's %d rows (no gaps)" % len(ha["t"]), np.array_equal(ha["t"], hb["t"]))
    c.true("chain: history.csv energies bit for bit", np.array_equal(ha["kinetic_energy"], hb["kinetic_energy"]) and np.array_equal(ha["elastic_energy"], hb["elastic_energy"]))
    c.true("chain: particles.xmf has the same times, one per frame file", xmf_times(out_scene) == xmf_times(out_chain) and len(xmf_times(out_chain)) == len(T.mpmio.frame_files(out_chain)))
else:
    c.true("chain and default scene: frames written", False)
print("test time %.0f s" % (time.time() - t_start))
c.done()
