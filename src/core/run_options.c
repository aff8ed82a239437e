/* The run's own options (dimension, gravity, time control, output cadence,
 * seeding), and the final check that every option given was used. */
#define _XOPEN_SOURCE 700 /* realpath under -std=c11 */
#include "core.h"
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *const MPMDtLimitNames[] = {"dt_max", "dt", "cfl", "elastic", "hardened", "gravity", "residual", "solver_cap", "output", "t_end", "retry"};

static PetscErrorCode ReadTimeOptions(MPMSim sim, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(MPMOptionsReal("-t_end", "Simulated time to reach [s]", NULL, sim->t_end, &sim->t_end, NULL));
  PetscCall(MPMOptionsInt("-max_steps", "Stop after this many steps (-1: no limit)", NULL, sim->max_steps, &sim->max_steps, NULL));
  PetscCall(MPMOptionsReal("-dt", "Fixed time step, 0 for adaptive [s]", NULL, sim->dt_fixed, &sim->dt_fixed, NULL));
  PetscCall(MPMOptionsReal("-dt_max", "Largest adaptive time step [s]", NULL, sim->dt_max, &sim->dt_max, NULL));
  PetscCall(MPMOptionsReal("-cfl", "CFL number: dt <= cfl dx / max|v| [-]", NULL, sim->cfl, &sim->cfl, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMRunOptionsRead(MPMSim sim)
{
  PetscInt seed = 1;

  PetscFunctionBeginUser;
  sim->dim              = 2;
  sim->t_end            = 1.0;
  sim->max_steps        = -1;
  sim->dt_max           = 1e-3;
  sim->cfl              = 0.5;
  sim->sort_interval    = 20;
  sim->history_interval = 0;
  PetscCall(PetscStrncpy(sim->outdir, "output", sizeof(sim->outdir)));
  PetscOptionsBegin(sim->comm, NULL, "Run control", NULL);
  PetscCall(MPMOptionsInt("-dim", "Spatial dimension: 2 (plane strain) or 3", NULL, sim->dim, &sim->dim, NULL));
  PetscCheck(sim->dim == 2 || sim->dim == 3, sim->comm, PETSC_ERR_USER_INPUT, "-dim must be 2 or 3, got %" PetscInt_FMT, sim->dim);
  sim->gravity[1] = -9.81;
  PetscCall(MPMOptionsVector(PetscOptionsObject, "", "-gravity", "Gravitational acceleration vector [m/s^2]", sim->dim, sim->gravity, NULL));
  if (sim->dim == 2) sim->gravity[2] = 0;
  PetscCall(MPMOptionsReal("-gravity_ramp", "Time over which gravity rises from 0 to -gravity, smoothly (half cosine: quasi-static loading, no drop shock) [s]", NULL, sim->gravity_ramp,
                             &sim->gravity_ramp, NULL));
  {
    const double g = sqrt(sim->gravity[0] * sim->gravity[0] + sim->gravity[1] * sim->gravity[1] + sim->gravity[2] * sim->gravity[2]);
    if (g > 0 && !PetscOptionsObject->printhelp) PetscCall(MPMWarnUnusual(sim->comm, "|-gravity|", g, 0.5, 50, "m/s^2", "accelerations are in m/s^2 (Earth 9.81)"));
  }
  PetscCheck(sim->gravity_ramp >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-gravity_ramp must be >= 0 s, got %g", sim->gravity_ramp);
  PetscCall(ReadTimeOptions(sim, PetscOptionsObject));
  PetscCall(PetscOptionsString("-output_dir", "Directory for everything the run writes", NULL, sim->outdir, sim->outdir, sizeof(sim->outdir), NULL));
  sim->output_dt = sim->t_end / 20;
  PetscCall(MPMOptionsReal("-output_dt", "Simulated time between output frames [s]", NULL, sim->output_dt, &sim->output_dt, NULL));
  {
    static const char *const prec[] = {"double", "single", "MPMOutputPrecision", "MPM_OUTPUT_", NULL};
    PetscInt                 k      = 0;
    PetscBool                set;
    PetscCall(MPMOptionsEList("-output_precision", "Frames store real fields in double or single precision (checkpoints are always double)", NULL, prec, 2, prec[k], &k, NULL));
    sim->output_single   = k == 1;
    sim->noutput_fields = MPM_MAX_NAMES;
    PetscCall(PetscOptionsStringArray("-output_fields", "Frame datasets to write, comma-separated (position and id always; default all: -help after a run lists them in frames/)", NULL, sim->output_fields,
                                      &sim->noutput_fields, &set));
    if (!set) sim->noutput_fields = 0;
  }
  PetscCall(MPMOptionsInt("-history_interval", "Steps between history.csv rows besides the frames (0: frames only)", NULL, sim->history_interval, &sim->history_interval, NULL));
  PetscCall(MPMOptionsInt("-monitor", "Print a progress line every this many steps: t, dt and the limit that set it, kinetic energy, fastest particle, particles, imbalance, wall time, steps/s (0: off)", NULL, sim->monitor, &sim->monitor, NULL));
  PetscCheck(sim->monitor >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-monitor must be >= 0 steps, got %" PetscInt_FMT, sim->monitor);
  PetscCall(MPMOptionsReal("-monitor_wall", "Also print that line every this many seconds of wall time (0: off) [s]", NULL, sim->monitor_wall, &sim->monitor_wall, NULL));
  PetscCheck(sim->monitor_wall >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-monitor_wall must be >= 0 s, got %g", sim->monitor_wall);
  PetscCall(MPMOptionsInt("-sort_interval", "Steps between sorting particles by cell (0: never)", NULL, sim->sort_interval, &sim->sort_interval, NULL));
  PetscCall(PetscOptionsBool("-delete_outside", "Delete (and count) particles that leave the domain instead of stopping with an error", NULL, sim->delete_outside, &sim->delete_outside,
                             NULL));
  PetscCall(MPMOptionsInt("-seed", "Seed of the particle jitter", NULL, seed, &seed, NULL));
  sim->slice_objects = PETSC_TRUE;
  PetscCall(PetscOptionsBool("-slice_objects", "A mesh object that stands still keeps on each rank only the part around its slab (false: every rank holds all of it); the results are the same", NULL,
                             sim->slice_objects, &sim->slice_objects, NULL));
  PetscOptionsEnd();
  sim->seed = (uint64_t)seed;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Everything a run writes goes into -output_dir: refuse a path that would
 * put it elsewhere (empty, the filesystem root) or that is not a directory. */
static PetscErrorCode CheckOutputDir(MPMSim sim)
{
  struct stat st;
  char        real[PATH_MAX];

  PetscFunctionBeginUser;
  PetscCheck(sim->outdir[0], sim->comm, PETSC_ERR_USER_INPUT, "-output_dir is empty: name the directory this run writes into");
  if (stat(sim->outdir, &st) == 0) {
    PetscCheck(S_ISDIR(st.st_mode), sim->comm, PETSC_ERR_USER_INPUT, "-output_dir %s exists and is not a directory", sim->outdir);
    PetscCheck(!realpath(sim->outdir, real) || strcmp(real, "/"), sim->comm, PETSC_ERR_USER_INPUT,
               "-output_dir %s is the filesystem root: name a directory for this run's files", sim->outdir);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMRunOptionsCheck(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCall(CheckOutputDir(sim));
  PetscCheck(sim->t_end > 0, sim->comm, PETSC_ERR_USER_INPUT, "-t_end must be > 0 s, got %g", sim->t_end);
  PetscCheck(sim->dt_fixed >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-dt must be >= 0 s (0: adaptive), got %g", sim->dt_fixed);
  PetscCheck(sim->dt_max > 0, sim->comm, PETSC_ERR_USER_INPUT, "-dt_max must be > 0 s, got %g", sim->dt_max);
  PetscCheck(sim->cfl > 0 && sim->cfl <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-cfl must be in (0, 1], got %g", sim->cfl);
  PetscCheck(sim->output_dt > 0, sim->comm, PETSC_ERR_USER_INPUT, "-output_dt must be > 0 s, got %g", sim->output_dt);
  PetscCheck(sim->sort_interval >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-sort_interval must be >= 0, got %" PetscInt_FMT, sim->sort_interval);
  PetscCheck(sim->history_interval >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-history_interval must be >= 0, got %" PetscInt_FMT, sim->history_interval);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -gravity_ramp: gravity rises from 0 as a half cosine, so the loading rate
 * is zero at both ends.  A linear ramp's kink at t = 0 is itself a small
 * sudden load: it leaves an undamped elastic body vibrating, and a block
 * held by friction near its limit then walks down a slope
 * (docs/validation.md, "Static friction"). */
double MPMGravityScale(const MPMSim sim)
{
  if (sim->gravity_ramp <= 0 || sim->t >= sim->gravity_ramp) return 1.0;
  return 0.5 * (1.0 - cos(PETSC_PI * sim->t / sim->gravity_ramp));
}

/* PETSc's own run-time options are consumed after set-up (or not at all);
 * they are not typos. */
static PetscBool PetscOwnOption(const char *name)
{
  static const char *prefixes[] = {"log", "malloc", "options_", "info", "help", "version", "petsc", "on_error", "fp_trap", "viewer", "mpi", "no_signal_handler",
                                   "check_pointer", "memory_view", "objects_dump", "start_in_debugger", "debugger", "stop_for_debugger", "display", "skip_petscrc",
                                   "use_gpu_aware_mpi", "nox", "vecscatter", "sf_", "saws", "x_virtual", "error_output", "get_total_flops", "checkstack"};
  for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
    if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return PETSC_TRUE;
  return PETSC_FALSE;
}

/* A misspelt option would silently fall back to a default: refuse it. */
PetscErrorCode MPMRunCheckUnusedOptions(MPMSim sim)
{
  PetscInt N, bad = 0;
  char   **names, **values;
  char     list[2048] = "";

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsLeftGet(NULL, &N, &names, &values));
  for (PetscInt i = 0; i < N; i++) {
    if (PetscOwnOption(names[i])) continue;
    if (bad++) PetscCall(PetscStrlcat(list, ", ", sizeof(list)));
    PetscCall(PetscStrlcat(list, "-", sizeof(list)));
    PetscCall(PetscStrlcat(list, names[i], sizeof(list)));
  }
  PetscCall(PetscOptionsLeftRestore(NULL, &N, &names, &values));
  PetscCheck(!bad, sim->comm, PETSC_ERR_USER_INPUT,
             "Unknown option%s %s (misspelt, or for a material/region/object not listed in -materials/-regions/-objects/-emitters); run with -help for the list", bad > 1 ? "s" : "",
             list);
  PetscFunctionReturn(PETSC_SUCCESS);
}
