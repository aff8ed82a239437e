"""Golden results: shipped decks, run for a few hundred steps at 1 and 2
ranks, must give byte for byte the particle state stored in
tests/golden/reference.json.  This guards refactors, which must not change
one bit of any result; a change meant to alter results updates the
reference in the same commit and says why:

    /usr/bin/python3 tests/test_golden.py --update

What is compared, for every case and rank count: every particle dataset of
the final output frame and every particle dataset of a checkpoint written
at the last step (the whole internal state: C, Fe, tau, ...), each sorted
by particle id and hashed (SHA-256 of the raw bytes).  One case restarts
from a checkpoint half-way and must reproduce the uninterrupted run's
hashes.

Bytes depend on the instruction set the compiler targets (-march=native:
FMA contraction, vector width).  The reference records the build it was
made with (compiler, CPU features); on another build the test compares,
instead of bytes, the sum and the sum of magnitudes of every dataset with
a relative tolerance of 1e-8 (about the rank-invariance roundoff over a
few hundred steps), and says so."""
import hashlib
import json
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import mpmtest as T

REFERENCE = os.path.join(T.SOURCE, "tests", "golden", "reference.json")
RTOL = 1e-8

# name, deck, extra options, rank counts
CASES = [
    ("column_2d", "column_collapse_2d.yaml", ["-dx", "0.00625", "-max_steps", "300"], (1, 2)),
    ("landslide_2d_cubic", "landslide_2d.yaml", ["-dx", "0.02", "-max_steps", "300", "-kernel", "cubic", "-balance_threshold", "1.1"], (1, 2)),
    ("spout_2d", "sand_spout_2d.yaml", ["-dx", "0.005", "-max_steps", "300"], (1, 2)),
    ("disks_2d_flip", "verification/colliding_disks.yaml", ["-max_steps", "300"], (1, 2)),
    ("ball_3d", "ball_into_sand_3d.yaml", ["-dx", "0.02", "-ball_radius", "0.06", "-max_steps", "100"], (1, 2)),
    ("column_3d_flip_cubic", "column_collapse_3d.yaml", ["-dx", "0.01", "-max_steps", "100", "-transfer", "flip", "-kernel", "cubic"], (1, 2)),
    ("column_2d_aflip", "column_collapse_2d.yaml", ["-dx", "0.00625", "-max_steps", "300", "-transfer", "aflip"], (1, 2)),
    ("hourglass_2d_pbd", "pbd_hourglass_2d.yaml", ["-max_steps", "200"], (1, 2)),
]
# restart case: (name of the case it must reproduce, ranks, step of the checkpoint)
RESTART = ("column_2d", 2, 150)


def build_signature():
    """What the bytes depend on besides the source: compiler and CPU features."""
    try:
        cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        cc = "unknown"
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    isa = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in flags]
    return "%s | %s" % (cc, " ".join(isa))


def digest(arrays):
    out = {}
    for name, a in sorted(arrays.items()):
        a = np.ascontiguousarray(a)
        af = a.astype(np.float64)
        out[name] = {"sha256": hashlib.sha256(a.tobytes()).hexdigest(), "dtype": str(a.dtype), "shape": list(a.shape),
                     "sum": float(af.sum()), "abs": float(np.abs(af).sum())}
    return out


def frame_datasets(out):
    with h5py.File(T.mpmio.frame_files(out)[-1], "r") as f:
        order = np.argsort(f["id"][()], kind="stable")
        return {k: f[k][()][order] for k in f.keys() if k != "connectivity"}  # connectivity is 0..n-1 by rank order


def checkpoint_datasets(out):
    ck = sorted(os.listdir(os.path.join(out, "checkpoints")))
    with h5py.File(os.path.join(out, "checkpoints", ck[-1]), "r") as f:
        g = f["particles"]
        order = np.argsort(g["id"][()], kind="stable")
        return {k: g[k][()][order] for k in g.keys()}


def run_case(name, deck, extra, ranks, more=()):
    out = T.outdir("golden_%s_%d%s" % (name, ranks, "_restart" if more else ""))
    steps = int(extra[extra.index("-max_steps") + 1])
    T.run_deck(deck, ranks, out, "-output_dt", "100", "-checkpoint_interval", str(steps), *extra, *more)
    return out


def restart_case(case, ranks, at):
    name, deck, extra = case[0], case[1], list(case[2])
    out = T.outdir("golden_%s_%d_restart" % (name, ranks))
    steps = extra[extra.index("-max_steps") + 1]
    first = list(extra)
    first[first.index("-max_steps") + 1] = str(at)
    T.run_deck(deck, ranks, out, "-output_dt", "100", "-checkpoint_interval", str(at), *first)
    T.run_deck(deck, ranks, out, "-output_dt", "100", "-checkpoint_interval", steps, *extra, "-restart", "latest")
    return out


def state(out):
    return {"frame": digest(frame_datasets(out)), "checkpoint": digest(checkpoint_datasets(out))}


def compare(c, label, got, ref, exact):
    for part in ("frame", "checkpoint"):
        g, r = got[part], ref[part]
        c.true("%s %s: same datasets" % (label, part), sorted(g) == sorted(r), "got %s, reference %s" % (sorted(g), sorted(r)))
        for k in sorted(set(g) & set(r)):
            if exact:
                c.true("%s %s/%s byte for byte" % (label, part, k), g[k]["sha256"] == r[k]["sha256"],
                       "" if g[k]["sha256"] == r[k]["sha256"] else "sum %.17g vs %.17g" % (g[k]["sum"], r[k]["sum"]))
            else:
                scale = max(r[k]["abs"], 1e-300)
                c.close("%s %s/%s sum (relative)" % (label, part, k), abs(g[k]["sum"] - r[k]["sum"]) / scale, 0.0, atol=RTOL)
                c.close("%s %s/%s sum |x| (relative)" % (label, part, k), abs(g[k]["abs"] - r[k]["abs"]) / scale, 0.0, atol=RTOL)


def main():
    update = "--update" in sys.argv
    results = {}
    for name, deck, extra, ranks in CASES:
        for n in ranks:
            results["%s/%d" % (name, n)] = state(run_case(name, deck, extra, n))
    case = next(cs for cs in CASES if cs[0] == RESTART[0])
    restarted = state(restart_case(case, RESTART[1], RESTART[2]))
    sig = build_signature()
    if update:
        os.makedirs(os.path.dirname(REFERENCE), exist_ok=True)
        with open(REFERENCE, "w") as f:
            json.dump({"build": sig, "cases": results}, f, indent=1, sort_keys=True)
        print("wrote %s (%d runs, build: %s)" % (REFERENCE, len(results), sig))
        return
    with open(REFERENCE) as f:
        ref = json.load(f)
    exact = ref["build"] == sig
    c = T.Checks("golden results (%s)" % ("byte for byte" if exact else "other build than the reference's: sums to %g relative" % RTOL))
    if not exact:
        print("  reference build: %s\n  this build:      %s" % (ref["build"], sig))
    c.true("same set of runs as the reference", sorted(results) == sorted(ref["cases"]), str(sorted(results)))
    for key in sorted(set(results) & set(ref["cases"])):
        compare(c, key, results[key], ref["cases"][key], exact)
    key = "%s/%d" % (RESTART[0], RESTART[1])
    # the restarted run's checkpoint is the one at the last step, like the uninterrupted run's
    compare(c, "%s restarted at step %d" % (key, RESTART[2]), restarted, ref["cases"][key], exact)
    c.done()


if __name__ == "__main__":
    main()
