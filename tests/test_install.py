"""Installation: `cmake --install` of this build into a temporary prefix,
then the install is moved (it must not depend on where it was put) and:

- bin/granular-mpm --version runs, and a shipped deck from
  share/granular-mpm/inputs runs on 2 ranks from there;
- the Catalyst adaptor is the installed one (lib/granular-mpm), found
  relative to the installed program;
- the public headers, the libraries, the CMake package and the pkg-config
  file are there, and a downstream program (tests/install/consumer.c, the
  public API: MPMCreate, MPMSetFromOptions, MPMRun, MPMDestroy, a kernel)
  builds with `pkg-config --cflags --libs granular-mpm` and with
  find_package(granular-mpm) and runs a deck;
- the decks, post-processing scripts, job scripts, docs and the manual
  page are installed, and the manual page is what the program prints
  (docs/man/make_manpage.py --check)."""
import json
import os
import shutil
import subprocess
import sys

import mpmtest as T

c = T.Checks("install")
build = os.path.dirname(T.EXE)
work = T.outdir("install")
first, prefix = os.path.join(work, "first"), os.path.join(work, "moved")
env = dict(os.environ, **T.MPI_ENV)
p = subprocess.run(["cmake", "--install", build, "--prefix", first], capture_output=True, text=True, timeout=300)
c.true("cmake --install into a temporary prefix", p.returncode == 0, (p.stdout + p.stderr)[-400:])
os.rename(first, prefix)

exe = os.path.join(prefix, "bin", "granular-mpm")
share = os.path.join(prefix, "share", "granular-mpm")
for rel in ("include/mpm/mpm.h", "include/mpm/kernels.h", "lib/libmpm.a", "lib/libmpmkernels.a", "lib/cmake/granular-mpm/granular-mpm-config.cmake",
            "lib/pkgconfig/granular-mpm.pc", "share/granular-mpm/inputs/column_collapse_2d.yaml", "share/granular-mpm/postproc/render_frame.py",
            "share/granular-mpm/jobscripts/slurm_default_scene.sbatch", "share/doc/granular-mpm/user-guide.md", "share/doc/granular-mpm/install.md", "share/man/man1/granular-mpm.1"):
    c.true("installed: " + rel, os.path.exists(os.path.join(prefix, rel)))

p = subprocess.run([sys.executable, os.path.join(T.SOURCE, "docs", "man", "make_manpage.py"), T.EXE, "--check"], env=env, capture_output=True, text=True, timeout=120)
c.true("the manual page (docs/man/granular-mpm.1) is what the program's -h and -help print", p.returncode == 0, (p.stdout + p.stderr)[-300:])
p = subprocess.run([exe, "--version"], env=env, capture_output=True, text=True, timeout=60)
c.true("installed --version", p.returncode == 0 and p.stdout.startswith("granular-mpm "), p.stdout + p.stderr)

deck = os.path.join(share, "inputs", "column_collapse_2d.yaml")
out = os.path.join(work, "run")
run_env = dict(env, LD_DEBUG="files") if "ParaView Catalyst" in p.stdout else env
args = ["-options_file_yaml", deck, "-output_dir", out, "-max_steps", "20"]
if "ParaView Catalyst" in p.stdout:
    args += ["-catalyst_script", os.path.join(share, "postproc", "catalyst", "particles_extract.py"), "-catalyst_interval", "20"]
p = subprocess.run(["mpiexec", "-n", "2", exe] + args, env=run_env, capture_output=True, text=True, timeout=300)
s = json.load(open(os.path.join(out, "summary.json"))) if p.returncode == 0 else {}
c.true("a shipped deck runs from the install on 2 ranks", p.returncode == 0 and s.get("steps") == 20 and s.get("particles") == 8192, (p.stdout + p.stderr)[-300:])
if "-catalyst_script" in args:
    module = os.path.join(prefix, "lib", "granular-mpm")
    loaded = [l for l in p.stderr.splitlines() if "libmpm_catalyst" in l and "file=" in l]
    built = os.path.join(build, "libmpm_catalyst.so")
    c.true("the installed Catalyst adaptor was loaded", any(os.path.normpath(l.split("file=")[1].split()[0]).startswith(module) for l in loaded) and not any(built in l for l in loaded),
           "; ".join(loaded)[:300])

# downstream builds: pkg-config and CMake
src = os.path.join(T.SOURCE, "tests", "install")
pc_env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
flags = subprocess.run(["pkg-config", "--cflags", "--libs", "granular-mpm"], env=pc_env, capture_output=True, text=True).stdout.split()
prog1 = os.path.join(work, "consumer_pc")
p = subprocess.run(["mpicc", "-o", prog1, os.path.join(src, "consumer.c")] + flags, capture_output=True, text=True, timeout=300)
c.true("consumer builds with pkg-config", p.returncode == 0, p.stderr[-400:])
b = os.path.join(work, "consumer_cmake")
p = subprocess.run(["cmake", "-S", src, "-B", b, "-DCMAKE_PREFIX_PATH=" + prefix], capture_output=True, text=True, timeout=300)
if p.returncode == 0:
    p = subprocess.run(["cmake", "--build", b], capture_output=True, text=True, timeout=300)
c.true("consumer builds with find_package(granular-mpm)", p.returncode == 0, (p.stdout + p.stderr)[-400:])
for name, prog in (("pkg-config", prog1), ("CMake", os.path.join(b, "consumer"))):
    o = os.path.join(work, "run_" + name)
    p = subprocess.run(["mpiexec", "-n", "2", prog] + ["-options_file_yaml", deck, "-output_dir", o, "-max_steps", "5"], env=env, capture_output=True, text=True, timeout=300)
    ok = p.returncode == 0 and os.path.exists(os.path.join(o, "summary.json")) and json.load(open(os.path.join(o, "summary.json")))["steps"] == 5
    c.true("the %s consumer runs a deck (public API)" % name, ok and "consumer linked against granular-mpm" in p.stdout and "det = 5" in p.stdout, (p.stdout + p.stderr)[-300:])
shutil.rmtree(work, ignore_errors=True)
c.done()
