"""A failure on one rank that is not an input error ends the whole job
within seconds with a message, instead of leaving the other ranks waiting
in a collective: rank 0 runs out of memory (tests/failmalloc.c, preloaded
into rank 0 only, makes its large allocations fail once a trigger file
exists) while the run writes frames on 2 ranks.  Sorting is off, so the
first large allocation after the trigger is a frame's output array."""
import os
import subprocess
import time

import mpmtest as T

SHIM = os.environ.get("MPM_FAILMALLOC", os.path.join(os.path.dirname(T.EXE), "tests", "libmpm_failmalloc.so"))
c = T.Checks("faults on one rank")
out = T.outdir("faults_oom")
trigger = os.path.join(out, "trigger")
args = ["-options_file_yaml", T.deck("column_collapse_2d.yaml"), "-output_dir", out, "-output_dt", "0.02", "-balance_threshold", "0", "-sort_interval", "0"]
rank0 = ["env", "LD_PRELOAD=" + SHIM, "MPM_FAULT_TRIGGER=" + trigger, "MPM_FAULT_MIN_BYTES=81920", T.EXE] + args
cmd = ["mpiexec", "-n", "1"] + rank0 + [":", "-n", "1", T.EXE] + args
env = dict(os.environ, **T.MPI_ENV)
proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
while not os.path.exists(os.path.join(out, "frames", "frame_00001.h5")) and proc.poll() is None:
    time.sleep(0.05)
open(trigger, "w").close()
t0 = time.time()
try:
    so, se = proc.communicate(timeout=120)
    waited, hung = time.time() - t0, False
except subprocess.TimeoutExpired:
    proc.kill()
    so, se = proc.communicate()
    waited, hung = time.time() - t0, True
c.true("the job ended (no hang)", not hung, "%.1f s after the fault" % waited)
c.within("seconds from the fault to the end of the job", waited, 0.0, 30.0)
c.true("nonzero exit", proc.returncode not in (0, None), "exit %s" % proc.returncode)
c.true("the message names the failure and the rank", "runtime failure" in se and "on rank 0" in se and "aborting every rank" in se, se.strip()[-400:])
where = [l for l in se.splitlines() if "PETSC ERROR: #" in l]
c.true("PETSc's traceback says where: in the frame output", any("MPMOutputFrame" in l for l in where), "; ".join(l.split("#")[-1][:60] for l in where[:4]))
c.done()
