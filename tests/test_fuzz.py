"""Deck fuzzing: fixed-seed mutations of every shipped deck (deleted,
duplicated and misspelt keys; zero, negative, huge, tiny, NaN, inf, empty,
wrong-type and wrong-length values; garbage bytes and truncation), run for
a few steps at 1 rank (every third also at 2 ranks).  Every mutation must
end cleanly:

  ran        exit 0, status "finished", no NaN or inf in summary.json or
             history.csv
  refused    exit 1 with one "granular-mpm: error:" message, no PETSc
             trace, no frame written
  nonfinite  exit 70 with its message (the state blew up and was caught)

Anything else (a signal, another exit code, a PETSc trace for bad input,
a hang past the time limit, NaN in a finished run's output) fails the test.
Prints the counts by outcome.  MPM_FUZZ_SEED and MPM_FUZZ_PER_DECK change
the mutations (defaults 20261123 and 3; 2 from 2026-11-26 to 2026-11-27,
while every refused run cost mpiexec's 2 s wait; MPM_FUZZ_PER_DECK=12 for
a deeper search)."""
import concurrent.futures
import glob
import json
import os
import random
import re
import shutil
import subprocess

import mpmtest as T

SEED = int(os.environ.get("MPM_FUZZ_SEED", "20261123"))
PER_DECK = int(os.environ.get("MPM_FUZZ_PER_DECK", "3"))
TIMEOUT = 60
VALUES = ["0", "-1", "1e300", "1e-300", "nan", "inf", "", "abc", "1,2,3,4", "-", "0.5", "true"]
LINE = re.compile(rb"^(\s*)([A-Za-z_][A-Za-z0-9_]*):(.*)$")


def coarse_dx(text):
    """The deck's dx made coarser (x 2^m, still dividing the domain) so
    that seeding and a few steps take about a second."""
    get = lambda k: re.search(rb"^%s:\s*([^\s#]+)" % k, text, re.M)
    dx, lo, hi = get(b"dx"), get(b"domain_lo"), get(b"domain_hi")
    if not (dx and lo and hi):
        return None
    dx = float(dx.group(1))
    lo = [float(v) for v in lo.group(1).split(b",")]
    hi = [float(v) for v in hi.group(1).split(b",")]
    cells = [round((h - l) / dx) for l, h in zip(lo, hi)]
    m = 0
    while m < 4 and all(c % 2 ** (m + 1) == 0 and c // 2 ** (m + 1) >= 8 for c in cells) and dx * 2 ** m < max(h - l for l, h in zip(lo, hi)) / 24:
        m += 1
    return dx * 2 ** m


def mutate(text, rng):
    lines = text.split(b"\n")
    keyed = [i for i, l in enumerate(lines) if LINE.match(l) and not l.lstrip().startswith(b"#")]
    kind = rng.choice(["delete", "duplicate", "misspell", "value", "value", "value", "garbage", "truncate"])
    if kind == "garbage":
        pos = rng.randrange(len(text))
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        return text[:pos] + junk + text[pos:], "garbage at byte %d" % pos
    if kind == "truncate":
        pos = rng.randrange(1, len(text))
        return text[:pos], "truncated at byte %d" % pos
    i = rng.choice(keyed)
    indent, key, rest = LINE.match(lines[i]).groups()
    if kind == "delete":
        del lines[i]
        what = "deleted %s" % key.decode()
    elif kind == "duplicate":
        lines.insert(i, lines[i])
        what = "duplicated %s" % key.decode()
    elif kind == "misspell":
        k = bytearray(key)
        j = rng.randrange(len(k))
        k[j:j + 1] = b"" if len(k) > 2 else bytes([k[j] ^ 1])  # a short key gets a different letter (was "x": dx stayed dx, and ran at full size)
        lines[i] = indent + bytes(k) + b":" + rest
        what = "misspelt %s as %s" % (key.decode(), bytes(k).decode())
    else:
        if rest.strip() == b"":  # a parent key (bc:) has no value of its own
            return mutate(text, rng)
        v = rng.choice(VALUES)
        lines[i] = indent + key + b": " + v.encode()
        what = "%s: %r" % (key.decode(), v)
    return b"\n".join(lines), what


def outcome(p, out):
    err, code = p.stderr, p.returncode
    if code == 0:
        try:
            s = json.load(open(os.path.join(out, "summary.json")), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except (OSError, ValueError) as e:
            return "unclean", "summary.json: %s" % e
        hist = open(os.path.join(out, "history.csv")).read().lower()
        if s.get("status") != "finished" or "nan" in hist or "inf" in hist:
            return "unclean", "finished with status %s or NaN/inf in history.csv" % s.get("status")
        return "ran", ""
    if code == 1:
        frames = glob.glob(os.path.join(out, "frames", "*.h5"))
        if "granular-mpm: error:" in err and "PETSC ERROR" not in err and not frames:
            return "refused", [l for l in err.splitlines() if "granular-mpm: error:" in l][0][21:120]
        return "unclean", "exit 1 without a clean message: " + err.strip()[-300:]
    if code == 70 and "became non-finite" in err:
        return "nonfinite", ""
    return "unclean", "exit %d: %s" % (code, err.strip()[-300:])


def run_one(job):
    """One mutated deck on n ranks, in its own directory: (kind, detail)."""
    name, n, mutated, what, dx = job
    out = T.outdir("fuzz_%s_%d" % (name, n))
    os.makedirs(out)
    path = os.path.join(out, "deck.yaml")
    open(path, "wb").write(mutated)
    args = ["-options_file_yaml", path, "-output_dir", os.path.join(out, "run"), "-max_steps", "3"] + (["-dx", "%.17g" % dx] if dx and "dx" not in what else [])
    if b"integrator: nonsmooth" in mutated and "max_it" not in what:
        args += ["-nonsmooth_max_it", "50"]  # a bed at rest from zero stress takes 1000 sweeps a step (crater_3d 60 s); the mutations, not the solve, are under test
    try:
        p = T.run(n, args, check=False, timeout=TIMEOUT)
        kind, detail = outcome(p, os.path.join(out, "run"))
    except subprocess.TimeoutExpired:
        subprocess.run(["pkill", "-KILL", "-f", "granular-mpm.*fuzz_%s_%d" % (name, n)])
        kind, detail = "unclean", "no end within %d s" % TIMEOUT
    if kind != "unclean":
        shutil.rmtree(out, ignore_errors=True)  # keep only what failed, with its deck
    return kind, "%s (%s, %d rank%s): %s" % (name, what, n, "s" if n > 1 else "", detail)


c = T.Checks("deck fuzzing (seed %d, %d mutations per deck)" % (SEED, PER_DECK))
rng = random.Random(SEED)
decks = sorted(glob.glob(os.path.join(T.SOURCE, "inputs", "*.yaml")) + glob.glob(os.path.join(T.SOURCE, "inputs", "verification", "*.yaml")))
jobs = []
for deck in decks:
    text = open(deck, "rb").read()
    dx = coarse_dx(text)
    for k in range(PER_DECK):
        mutated, what = mutate(text, rng)
        name = "%s_%d" % (os.path.basename(deck)[:-5], k)
        for n in ((1, 2) if len(jobs) % 3 == 0 else (1,)):
            jobs.append((name, n, mutated, what, dx))
counts, unclean, runs = {}, [], len(jobs)
with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # the runs are short; mpiexec's start-up dominates
    for kind, detail in pool.map(run_one, jobs):
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "unclean":
            unclean.append(detail)
print("  outcomes of %d runs (%d decks): %s" % (runs, len(decks), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
for u in unclean:
    print("  UNCLEAN " + u)
c.true("every mutation ran, was refused or was caught as non-finite, cleanly", not unclean, "%d unclean" % len(unclean))
c.true("the mutations exercised both outcomes", counts.get("ran", 0) > 0 and counts.get("refused", 0) > 0, str(counts))
c.done()
