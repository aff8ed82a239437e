"""The source folders are layers, and calls only go downward:

    kernels -> core -> materials, colliders -> integrators -> io -> driver

A file may include the private header of its own folder and of lower
folders only (materials and colliders are siblings: neither sees the
other); the pure kernels include neither PETSc nor MPI; MPI is called in
src/core/parallel.c alone; every source file lives in a layer folder.
A lower folder reaching up is how call circles start (docs/architecture.md).

Also: no call of the project's functions (mpm_*, MPM*, ops.*) inside the
arguments of PETSc's PetscMax, PetscMin or PetscClipInterval.  They are
macros that evaluate an argument twice: PetscMax(v2, mpm_g2p(...)) once
advanced every particle twice, and the materials' stiffening, a pass over
all particles, ran twice per step.  Evaluate into a local first."""
import os
import re
import sys

import mpmtest as T

SRC = os.path.join(T.SOURCE, "src")
LEVEL = {"kernels": 0, "core": 1, "materials": 2, "colliders": 2, "integrators": 3, "io": 4, "driver": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
MPI_CALL = re.compile(r"\bMPI_[A-Z][A-Za-z_]*\s*\(")
SOURCE_EXT = (".c", ".h", ".cxx")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


c = T.Checks("layering of src/ (kernels -> core -> materials, colliders -> integrators -> io -> driver)")
files = []
for root, _, names in os.walk(SRC):
    for name in names:
        if name.endswith(SOURCE_EXT):
            files.append(os.path.relpath(os.path.join(root, name), SRC))
stray = [f for f in files if os.path.dirname(f) not in LEVEL]
c.true("every source file is in a layer folder", not stray, " ".join(stray))

MACRO = re.compile(r"\bPetsc(Max|Min|ClipInterval)\s*\(")
OWN_CALL = re.compile(r"\b(mpm_|MPM)\w*\s*\(|\bops\.\w+\s*\(")  # our functions, and the materials' and integrators' ops


def macro_calls(text):
    """The argument text of every PetscMax/PetscMin/PetscClipInterval use that calls one of our functions."""
    out = []
    for m in MACRO.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        args = text[m.end():i - 1]
        if OWN_CALL.search(args):
            out.append("%s(%s)" % (m.group(0)[:-1].strip(), " ".join(args.split())))
    return out


upward, kernel_deps, mpi_calls, double_eval = [], [], [], []
for f in sorted(files):
    folder = os.path.dirname(f)
    if folder not in LEVEL:
        continue
    text = open(os.path.join(SRC, f), encoding="utf-8").read()
    for kind, inc in INCLUDE.findall(text):
        if kind == "<":
            if folder == "kernels" and (inc.startswith("petsc") or inc == "mpi.h"):
                kernel_deps.append("%s: <%s>" % (f, inc))
            continue
        target = inc.split("/")[0] if "/" in inc else folder
        if target not in LEVEL:  # generated headers (mpm_version.h)
            continue
        if target != folder and LEVEL[target] >= LEVEL[folder]:
            upward.append('%s includes "%s"' % (f, inc))
    double_eval += ["%s: %s" % (f, call) for call in macro_calls(strip_comments(text))]
    if f != os.path.join("core", "parallel.c"):
        for call in MPI_CALL.findall(strip_comments(text)):
            mpi_calls.append("%s: %s" % (f, call.strip()))
c.true("no folder includes a header of its own or a higher layer's sibling", not upward, "; ".join(upward))
c.true("kernels include neither PETSc nor MPI", not kernel_deps, "; ".join(kernel_deps))
for h in ("kernels.h", "transfer.h"):
    text = open(os.path.join(T.SOURCE, "include", "mpm", h)).read()
    c.true("include/mpm/%s includes neither PETSc nor MPI" % h, not re.search(r"#\s*include\s*<(petsc|mpi)", text))
c.true("MPI is called in core/parallel.c only", not mpi_calls, "; ".join(mpi_calls))
c.true("no mpm_/MPM/ops call inside PetscMax, PetscMin or PetscClipInterval (macros: the call would run twice)", not double_eval, "; ".join(double_eval))
c.true("the double-evaluation check finds a planted case", bool(macro_calls("x = PetscMax(x, MPMSomething(a, (b)));")) and bool(macro_calls("s = PetscMax(s, m->ops.stiffening(m, n, &p));")) and not macro_calls("x = PetscMax(x, y) + MPMf(z);"))
c.true("the check saw the layers", len(files) > 30 and all(any(f.startswith(k + os.sep) for f in files) for k in LEVEL), "%d files" % len(files))
c.done()
