"""AddressSanitizer + UndefinedBehaviorSanitizer: a second build
(-DMPM_SANITIZE=ON, in <build>/sanitize) runs the unit tests and short
decks at 1 and 2 ranks: 2D and 3D, APIC and FLIP, quadratic and cubic, the
semi-implicit snowball through its impact (2D and 3D), the nonsmooth
friction solve with a dynamic body and anisotropic grains, the geometry
read from files (STL and OBJ meshes, an ESRI terrain grid, CSG), an
emitter, an input error (exit 1) and a blow-up caught as non-finite
(exit 70).  Every run must end with its expected exit code and without a
single sanitizer report: no memory error, no undefined behaviour (float to
int overflow included), no leak of ours, also on the error exits.  What
Open MPI, PETSc and HDF5 keep until exit is suppressed (tests/lsan.supp);
Open MPI is told not to unload its components, so their frames have names."""
import os
import subprocess

import mpmtest as T

BUILD = os.path.join(os.path.dirname(os.path.abspath(T.OUTPUT)), "sanitize")
REPORT = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "Direct leak", "Indirect leak")
ENV = dict(os.environ, **T.MPI_ENV)
ENV.update(OMPI_MCA_mca_base_component_disable_dlclose="1", ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0:malloc_context_size=20",
           LSAN_OPTIONS="suppressions=" + os.path.join(T.SOURCE, "tests", "lsan.supp"), UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")

c = T.Checks("sanitizers (ASan + UBSan)")
os.makedirs(BUILD, exist_ok=True)
cfg = subprocess.run(["cmake", "-S", T.SOURCE, "-B", BUILD, "-DMPM_SANITIZE=ON", "-DMPM_CATALYST=OFF", "-DMPM_NATIVE=OFF", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                     capture_output=True, text=True)
build = subprocess.run(["cmake", "--build", BUILD, "-j", "2", "--target", "mpm_run", "test_kernels", "test_interfaces"], capture_output=True, text=True)
ok = cfg.returncode == 0 and build.returncode == 0
c.true("sanitizer build in %s" % BUILD, ok, "" if ok else (cfg.stderr + build.stdout + build.stderr)[-800:])
if cfg.returncode or build.returncode:
    c.done()
exe = os.path.join(BUILD, "granular-mpm")


def check(label, cmd, expect):
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=600)
    reports = [l.strip() for l in (p.stdout + p.stderr).splitlines() if any(r in l for r in REPORT)]
    c.true("%s: exit %d, no sanitizer report" % (label, expect), p.returncode == expect and not reports,
           "exit %d; %s" % (p.returncode, "; ".join(reports[:3]) or (p.stderr.strip()[-300:] if p.returncode != expect else "")))


check("unit kernels", [os.path.join(BUILD, "tests", "test_kernels")], 0)
check("unit interfaces", ["mpiexec", "-n", "1", os.path.join(BUILD, "tests", "test_interfaces")], 0)
DECKS = [
    ("2D column", ["column_collapse_2d.yaml", "-dx", "0.0125", "-max_steps", "50"], 0),
    ("3D ball into sand", ["ball_into_sand_3d.yaml", "-dx", "0.02", "-ball_radius", "0.06", "-max_steps", "20"], 0),
    ("2D spout, FLIP, cubic", ["sand_spout_2d.yaml", "-dx", "0.005", "-max_steps", "50", "-transfer", "flip", "-kernel", "cubic"], 0),
    ("2D snowball, semi-implicit", ["snowball_wall_2d.yaml", "-t_end", "0.08", "-output_dt", "0.08"], 0),
    ("3D snowball, semi-implicit", ["snowball_wall_3d.yaml", "-dx", "0.02", "-t_end", "0.022", "-output_dt", "0.022"], 0),
    ("2D wheel, nonsmooth, anisotropic", ["wheel_2d.yaml", "-dx", "0.01", "-max_steps", "20", "-nonsmooth_max_it", "20", "-sand_anisotropy", "0.8", "-sand_grain_normals", "random"], 0),
    ("2D hourglass, pbd (halos)", ["pbd_hourglass_2d.yaml", "-max_steps", "30"], 0),
    ("3D hopper, STL and OBJ meshes", ["hopper_3d.yaml", "-dx", "0.02", "-max_steps", "5"], 0),
    ("3D landslide, terrain grid and CSG", ["landslide_terrain_3d.yaml", "-dx", "0.05", "-max_steps", "5"], 0),
    ("input error", ["column_collapse_2d.yaml", "-sand_density", "-1"], 1),
    ("blow-up", ["verification/free_fall.yaml", "-dt", "1e-3", "-cube_velocity_gradient", "-3000,0,0,0"], 70),
]
for i, (label, args, expect) in enumerate(DECKS):
    for n in (1, 2):
        out = T.outdir("sanitize_%02d_%d" % (i, n))  # one directory per run (the label's first word, "2D" or "3D", is not unique)
        check("%s, %d rank%s" % (label, n, "s" if n > 1 else ""), ["mpiexec", "-n", str(n), exe, "-options_file_yaml", T.deck(args[0]), "-output_dir", out] + args[1:], expect)
c.done()
