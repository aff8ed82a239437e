"""Reading granular-mpm output directories (HDF5 frames, run.json, history.csv).

Used by the post-processing scripts and by the tests.  Needs Debian's
python3-h5py and python3-numpy (run with /usr/bin/python3).
"""
import csv
import glob
import json
import os
import shlex

import h5py
import numpy as np


def frame_files(outdir):
    """Sorted list of the frame files of a run."""
    return sorted(glob.glob(os.path.join(outdir, "frames", "frame_*.h5")))


def read_frame(path, fields=None, species=None):
    """Dict of the datasets of one frame (all when fields is None) plus
    't', 'step', 'dim', 'ranks' and 'options'.  With several species (the
    sand-water mixture) the first species' datasets are at the root and
    species s > 0 (e.g. species="water") in the group of its name."""
    out = {}
    with h5py.File(path, "r") as f:
        g = f[species] if species else f
        names = fields if fields is not None else [k for k in g.keys() if isinstance(g[k], h5py.Dataset)]
        for name in names:
            out[name] = g[name][()]
        t, dt = f.attrs["time_dt"]
        step, frame, dim, ranks = f.attrs["step_frame_dim_ranks"]
        out.update(t=float(t), dt=float(dt), step=int(step), frame=int(frame), dim=int(dim), ranks=int(ranks))
        opts = f.attrs["options"]
        out["options"] = opts.decode() if isinstance(opts, bytes) else str(opts)
    return out


def sorted_by_id(frame):
    """The frame's per-particle arrays reordered by particle id."""
    order = np.argsort(frame["id"], kind="stable")
    n = len(order)
    return {k: (v[order] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else v) for k, v in frame.items()}


def parse_options(text):
    """The options database string ('-a 1 -b x,y') as a dict of strings."""
    opts, key = {}, None
    for tok in shlex.split(text):
        if tok.startswith("-") and not _is_number(tok):
            key = tok[1:]
            opts[key] = ""
        elif key is not None:
            opts[key] = tok if not opts[key] else opts[key] + " " + tok
    return opts


def _is_number(tok):
    try:
        float(tok.split(",")[0])
        return True
    except ValueError:
        return False


def vec(opts, key, default=None):
    """A comma-separated option as a numpy array of floats."""
    if key not in opts:
        if default is None:
            raise KeyError("option -%s not found in the run's options" % key)
        return np.asarray(default, dtype=float)
    return np.array([float(v) for v in opts[key].split(",")])


def run_options(outdir):
    with open(os.path.join(outdir, "run.json")) as f:
        return parse_options(json.load(f)["options"])


def summary(outdir):
    with open(os.path.join(outdir, "summary.json")) as f:
        return json.load(f)


def history(outdir):
    """history.csv as a dict of numpy arrays."""
    with open(os.path.join(outdir, "history.csv")) as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]} if rows else {}


def history_units(outdir):
    """The SI unit of every history.csv column (history_units.csv: the same
    header over a row of units; "-" for counts and ratios; 2D quantities
    per unit depth), as a dict; {} for output written before it existed."""
    path = os.path.join(outdir, "history_units.csv")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        rows = list(csv.reader(f))
    return dict(zip(rows[0], rows[1])) if len(rows) >= 2 else {}


def forces(outdir, name):
    """forces/<name>.csv (one object: mean force and torque per history row,
    impulse since the start, |F|, peak |F|) as a dict of numpy arrays."""
    with open(os.path.join(outdir, "forces", name + ".csv")) as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]} if rows else {}


def force_objects(outdir):
    """Names of the objects with a forces/<name>.csv, the deck's first."""
    d = os.path.join(outdir, "forces")
    names = sorted(f[:-4] for f in os.listdir(d) if f.endswith(".csv") and "_until_" not in f) if os.path.isdir(d) else []
    return [n for n in names if not n.startswith("bc_")] + [n for n in names if n.startswith("bc_")]
