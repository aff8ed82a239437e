#!/usr/bin/env python3
"""Writes docs/man/granular-mpm.1, the manual page, from the program's own
help: the usage text (`granular-mpm -h`) and the options `-help` lists for a
deck with every kind of instance (inputs/ball_into_sand_3d.yaml: two
materials, two regions, the domain faces; an object and an emitter
added), from "Run control" to "Load balancing".  Installed as
share/man/man1/granular-mpm.1; tests/test_install.py checks that this file
is what the current program prints (regenerate after adding an option):

  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 /usr/bin/python3 docs/man/make_manpage.py [build/granular-mpm] [--check]
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
EXTRA = ["-objects", "barrier", "-barrier_shape", "box", "-barrier_lo", "0.4,0,0", "-barrier_hi", "0.45,0.1,0.2", "-emitters", "spout", "-spout_center", "0.1,0.25,0.1",
         "-spout_direction", "0,-1,0", "-spout_speed", "0.5", "-spout_radius", "0.01"]


def roff(text):
    return text.replace("\\", "\\\\").replace("-", "\\-").replace("\n.", "\n\\&.").replace("\n'", "\n\\&'")


def generate(exe):
    usage = subprocess.run([exe, "-h"], capture_output=True, text=True, check=True).stdout
    deck = os.path.join(ROOT, "inputs", "ball_into_sand_3d.yaml")
    out = subprocess.run([exe, "-options_file_yaml", deck, "-output_dir", "/nonexistent-not-written", "-help"] + EXTRA, capture_output=True, text=True).stdout
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Memory"))  # the first block the program reads (MPMCreate)
    end = next(i for i, l in enumerate(lines) if l.startswith("Load balancing"))
    while end < len(lines) and lines[end].strip():
        end += 1
    opts = "\n".join(re.sub(r"\(/nonexistent-not-written\)", "", l) for l in lines[start:end])
    desc = usage.split("Usage:")[0].strip()
    body = usage.split("Usage:")[1].strip()
    return "\n".join([
        '.TH GRANULAR\\-MPM 1 "" "granular-mpm" "User Commands"',
        ".SH NAME", "granular\\-mpm \\- " + roff(desc.split(": ", 1)[-1]),
        ".SH SYNOPSIS", ".nf", roff(body), ".fi",
        ".SH OPTIONS",
        "Every option can be set in the deck (a YAML mapping: key: value) and overridden on the command line. "
        "Options of a named instance carry its name as a prefix: a material \\fIsand\\fR reads \\-sand_*, a region \\fIbed\\fR \\-bed_*, "
        "an object \\fIbarrier\\fR \\-barrier_*. Below, what \\-help lists for inputs/ball_into_sand_3d.yaml with an object and an emitter added "
        "(the values in <> are that deck's); the integrators' own options (\\-implicit_*, \\-semi_implicit_*, \\-mixture_*, \\-nonsmooth_*, \\-pbd_*) "
        "are listed by \\-help with their \\-integrator. docs/user-guide.md explains each.",
        ".nf", roff(opts), ".fi",
        ".SH FILES", "Everything a run writes goes into \\-output_dir: run.json, frames/frame_NNNNN.h5, particles.xmf, history.csv, forces/<object>.csv, summary.json, checkpoints/.",
        ".SH SEE ALSO", "share/doc/granular\\-mpm/user\\-guide.md, gallery.md, install.md (docs/ in the source tree)", ""])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    exe = args[0] if args else os.path.join(ROOT, "build", "granular-mpm")
    page = generate(exe)
    path = os.path.join(HERE, "granular-mpm.1")
    if "--check" in sys.argv:
        same = os.path.exists(path) and open(path).read() == page
        print("make_manpage: %s %s" % (path, "is current" if same else "differs from what the program prints: regenerate it"))
        sys.exit(0 if same else 1)
    open(path, "w").write(page)
    print("make_manpage: wrote %s" % path)


if __name__ == "__main__":
    main()
