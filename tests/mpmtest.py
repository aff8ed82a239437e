"""Helpers for the tests: run the solver with mpiexec, read its output.

Environment (set by ctest): MPM_EXE, MPM_SOURCE_DIR, MPM_TEST_OUTPUT.
"""
import os
import shutil
import tempfile
import subprocess
import sys

SOURCE = os.environ.get("MPM_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
EXE = os.environ.get("MPM_EXE", os.path.join(SOURCE, "build", "granular-mpm"))
OUTPUT = os.environ.get("MPM_TEST_OUTPUT", os.path.join(SOURCE, "build", "test-output"))
sys.path.insert(0, os.path.join(SOURCE, "postproc"))
import mpmio  # noqa: E402,F401

# odls_base_sigkill_timeout 0: mpiexec waits 2 s before reaping a job
# whose process exited non-zero (every refused deck), which was most of
# test_bad_decks' and test_fuzz's time.  The ranks of a refused run have
# all passed MPI_Finalize's fence by then, so nothing is cut short.
# hwloc_base_binding_policy none: each mpiexec binds its rank 0 to core 0,
# so two 1-rank runs at once (test_sand_pile, test_fuzz's workers) shared
# one core and left the other idle.
MPI_ENV = {"OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_odls_base_sigkill_timeout": "0", "OMPI_MCA_hwloc_base_binding_policy": "none"}
if os.geteuid() == 0:
    MPI_ENV.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def deck(name):
    return os.path.join(SOURCE, "inputs", name)


def outdir(name):
    path = os.path.join(OUTPUT, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


SESSION = "OMPI_MCA_orte_tmpdir_base"


def mpi_env():
    """The environment of one mpiexec: MPI_ENV, and its own Open MPI session
    directory (env[SESSION], to remove after the run).  mpiexecs started at
    once (test_bad_decks' and test_fuzz's workers, test_sand_pile's pair)
    shared /tmp/ompi.<host>.<uid>, and one that ended removed it while
    another was creating its own below it ("orte_session_dir failed", seen
    once in CI on 2026-11-27)."""
    return dict(os.environ, **MPI_ENV, **{SESSION: tempfile.mkdtemp(prefix="mpm-ompi-")})


def run(ranks, args, check=True, timeout=900):
    """Run the solver on `ranks` ranks; args is a list of option strings.
    Returns the CompletedProcess (stdout and stderr as text)."""
    env = mpi_env()
    cmd = ["mpiexec", "-n", str(ranks), EXE] + [str(a) for a in args]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(env[SESSION], ignore_errors=True)
    if check and proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + "\n" + proc.stderr[-4000:])
        raise AssertionError("solver failed (exit %d): %s" % (proc.returncode, " ".join(cmd)))
    return proc


def run_deck(name, ranks, out, *extra, check=True):
    return run(ranks, ["-options_file_yaml", deck(name), "-output_dir", out] + list(extra), check=check)


def bar_period(out):
    """The bar vibration's (verification/bar_vibration.yaml) mean period from
    the zero crossings of its centre-of-mass velocity, and its total energy
    at every history row."""
    import numpy as np
    h = mpmio.history(out)
    t, v = h["t"], h["momentum_x"] / h["mass"]
    i = np.nonzero(np.sign(v[1:]) != np.sign(v[:-1]))[0]
    tz = t[i] - v[i] * (t[i + 1] - t[i]) / (v[i + 1] - v[i])
    return (2 * np.diff(tz)).mean(), h["kinetic_energy"] + h["elastic_energy"]


class Checks:
    """Collects named checks and fails the test at the end, printing all."""

    def __init__(self, title):
        self.title, self.failed = title, []
        print(title)

    def close(self, name, value, ref, rtol=None, atol=None):
        err = abs(value - ref)
        tol = (atol or 0.0) + (rtol or 0.0) * abs(ref)
        ok = err <= tol
        print("  %-50s %14.6g  ref %14.6g  |err| %10.3g  tol %10.3g  %s" % (name, value, ref, err, tol, "ok" if ok else "FAIL"))
        if not ok:
            self.failed.append(name)

    def within(self, name, value, lo, hi):
        ok = lo <= value <= hi
        print("  %-50s %14.6g  in [%g, %g]  %s" % (name, value, lo, hi, "ok" if ok else "FAIL"))
        if not ok:
            self.failed.append(name)

    def true(self, name, cond, detail=""):
        print("  %-50s %s %s" % (name, "ok" if cond else "FAIL", detail))
        if not cond:
            self.failed.append(name)

    def done(self):
        if self.failed:
            print("FAILED: " + ", ".join(self.failed))
            sys.exit(1)
        print("all checks passed")
