/* Set-up of a run from the options database, the run loop, and clean-up. */
#include "mpm_impl.h"
#include "mpm_version.h"

static const char *const TransferNames[] = {"apic", "flip", "MPMTransfer", "MPM_TRANSFER_", NULL};

const char *MPMVersion(void) { return MPM_VERSION; }

PetscErrorCode MPMInitializePackage(void)
{
  PetscFunctionBeginUser;
  PetscCall(MPMLogEventsRegister());
  PetscCall(MPMMaterialRegisterAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCreate(MPI_Comm comm, MPMSim *simout)
{
  MPMSim sim;

  PetscFunctionBeginUser;
  PetscCall(MPMInitializePackage());
  PetscCall(PetscNew(&sim));
  sim->comm = comm;
  PetscCall(MPMParallelSetUp(sim));
  *simout = sim;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ReadRunOptions(MPMSim sim)
{
  PetscInt transfer = MPM_TRANSFER_APIC, seed = 1;

  PetscFunctionBeginUser;
  sim->dim              = 2;
  sim->t_end            = 1.0;
  sim->max_steps        = -1;
  sim->dt_max           = 1e-3;
  sim->cfl              = 0.5;
  sim->cfl_elastic      = 0.5;
  sim->flip             = 0.95;
  sim->sort_interval    = 20;
  sim->history_interval = 0;
  PetscCall(PetscStrncpy(sim->outdir, "output", sizeof(sim->outdir)));
  PetscOptionsBegin(sim->comm, NULL, "Run control", NULL);
  PetscCall(PetscOptionsInt("-dim", "Spatial dimension: 2 (plane strain) or 3", NULL, sim->dim, &sim->dim, NULL));
  PetscCheck(sim->dim == 2 || sim->dim == 3, sim->comm, PETSC_ERR_USER_INPUT, "-dim must be 2 or 3, got %" PetscInt_FMT, sim->dim);
  sim->gravity[1] = -9.81;
  PetscCall(MPMOptionsVector(PetscOptionsObject, "", "-gravity", "Gravitational acceleration vector [m/s^2]", sim->dim, sim->gravity, NULL));
  if (sim->dim == 2) sim->gravity[2] = 0;
  PetscCall(PetscOptionsReal("-gravity_ramp", "Time over which gravity rises linearly from 0 to -gravity (quasi-static loading, no drop shock) [s]", NULL, sim->gravity_ramp,
                             &sim->gravity_ramp, NULL));
  PetscCheck(sim->gravity_ramp >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-gravity_ramp must be >= 0 s, got %g", sim->gravity_ramp);
  PetscCall(PetscOptionsEList("-transfer", "Particle-grid transfer", NULL, TransferNames, 2, TransferNames[transfer], &transfer, NULL));
  PetscCall(PetscOptionsReal("-flip_blend", "FLIP fraction of the PIC/FLIP blend (with -transfer flip) [-]", NULL, sim->flip, &sim->flip, NULL));
  PetscCall(PetscOptionsReal("-t_end", "Simulated time to reach [s]", NULL, sim->t_end, &sim->t_end, NULL));
  PetscCall(PetscOptionsInt("-max_steps", "Stop after this many steps (-1: no limit)", NULL, sim->max_steps, &sim->max_steps, NULL));
  PetscCall(PetscOptionsReal("-dt", "Fixed time step, 0 for adaptive [s]", NULL, sim->dt_fixed, &sim->dt_fixed, NULL));
  PetscCall(PetscOptionsReal("-dt_max", "Largest adaptive time step [s]", NULL, sim->dt_max, &sim->dt_max, NULL));
  PetscCall(PetscOptionsReal("-cfl", "CFL number: dt <= cfl dx / max|v| [-]", NULL, sim->cfl, &sim->cfl, NULL));
  PetscCall(PetscOptionsReal("-cfl_elastic", "Elastic limit: dt <= cfl_elastic dx / c_p [-]", NULL, sim->cfl_elastic, &sim->cfl_elastic, NULL));
  PetscCall(PetscOptionsString("-output_dir", "Directory for everything the run writes", NULL, sim->outdir, sim->outdir, sizeof(sim->outdir), NULL));
  sim->output_dt = sim->t_end / 20;
  PetscCall(PetscOptionsReal("-output_dt", "Simulated time between output frames [s]", NULL, sim->output_dt, &sim->output_dt, NULL));
  PetscCall(PetscOptionsInt("-history_interval", "Steps between history.csv rows besides the frames (0: frames only)", NULL, sim->history_interval, &sim->history_interval, NULL));
  PetscCall(PetscOptionsInt("-sort_interval", "Steps between sorting particles by cell (0: never)", NULL, sim->sort_interval, &sim->sort_interval, NULL));
  PetscCall(PetscOptionsBool("-delete_outside", "Delete (and count) particles that leave the domain instead of stopping with an error", NULL, sim->delete_outside,
                             &sim->delete_outside, NULL));
  PetscCall(PetscOptionsInt("-seed", "Seed of the particle jitter", NULL, seed, &seed, NULL));
  PetscOptionsEnd();
  sim->transfer = (MPMTransfer)transfer;
  sim->seed     = (uint64_t)seed;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CheckRunOptions(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCheck(sim->t_end > 0, sim->comm, PETSC_ERR_USER_INPUT, "-t_end must be > 0 s, got %g", sim->t_end);
  PetscCheck(sim->dt_fixed >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-dt must be >= 0 s (0: adaptive), got %g", sim->dt_fixed);
  PetscCheck(sim->dt_max > 0, sim->comm, PETSC_ERR_USER_INPUT, "-dt_max must be > 0 s, got %g", sim->dt_max);
  PetscCheck(sim->cfl > 0 && sim->cfl <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-cfl must be in (0, 1], got %g", sim->cfl);
  PetscCheck(sim->cfl_elastic > 0 && sim->cfl_elastic <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-cfl_elastic must be in (0, 1], got %g", sim->cfl_elastic);
  PetscCheck(sim->flip >= 0 && sim->flip <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-flip_blend must be in [0, 1], got %g", sim->flip);
  PetscCheck(sim->output_dt > 0, sim->comm, PETSC_ERR_USER_INPUT, "-output_dt must be > 0 s, got %g", sim->output_dt);
  PetscCheck(sim->sort_interval >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-sort_interval must be >= 0, got %" PetscInt_FMT, sim->sort_interval);
  PetscCheck(sim->history_interval >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-history_interval must be >= 0, got %" PetscInt_FMT, sim->history_interval);
  if (sim->transfer == MPM_TRANSFER_APIC) sim->flip = -1; /* the transfers take flip < 0 as APIC */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MaterialsSetUp(MPMSim sim)
{
  char    *names[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "Materials", "-materials", "Names of the materials; each reads -<name>_type and -<name>_*", names, &n));
  PetscCheck(n > 0 || sim->help, sim->comm, PETSC_ERR_USER_INPUT, "-materials is required: a comma-separated list of material names, e.g. -materials sand");
  sim->nmat = n;
  PetscCall(PetscCalloc1(PetscMax(n, 1), &sim->mat));
  for (PetscInt m = 0; m < n; m++) PetscCall(MPMMaterialSetUp(sim->comm, sim->dim, names[m], &sim->mat[m]));
  PetscCall(MPMOptionsFreeNames(names, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Materials, regions, objects and emitters read options under their names:
 * a name used twice would share options silently. */
static PetscErrorCode CheckUniqueNames(MPMSim sim)
{
  const char *all[4 * MPM_MAX_NAMES];
  PetscInt    n = 0;

  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < sim->nmat; i++) all[n++] = sim->mat[i]->name;
  for (PetscInt i = 0; i < sim->nreg; i++) all[n++] = sim->reg[i].name;
  for (PetscInt i = sim->nwalls; i < sim->nobj; i++) all[n++] = sim->obj[i].name;
  for (PetscInt i = 0; i < sim->nem; i++) all[n++] = sim->em[i].name;
  for (PetscInt i = 0; i < n; i++)
    for (PetscInt j = i + 1; j < n; j++) {
      PetscBool same;
      PetscCall(PetscStrcmp(all[i], all[j], &same));
      PetscCheck(!same, sim->comm, PETSC_ERR_USER_INPUT, "The name '%s' is used twice in -materials/-regions/-objects/-emitters: each needs its own options prefix", all[i]);
    }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Largest P-wave speed over everything that can put particles in the run. */
static void WaveSpeed(MPMSim sim)
{
  sim->wave_speed = 0;
  for (PetscInt m = 0; m < sim->nmat; m++) sim->wave_speed = PetscMax(sim->wave_speed, MPMMaterialWaveSpeed(sim->mat[m]));
  for (PetscInt r = 0; r < sim->nreg; r++) {
    const MPMMaterial m = sim->mat[sim->reg[r].mat];
    sim->wave_speed     = PetscMax(sim->wave_speed, sqrt((m->lambda + 2 * m->mu) / sim->reg[r].density));
  }
  for (PetscInt e = 0; e < sim->nem; e++) {
    const MPMMaterial m = sim->mat[sim->em[e].mat];
    sim->wave_speed     = PetscMax(sim->wave_speed, sqrt((m->lambda + 2 * m->mu) / sim->em[e].density));
  }
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
static PetscErrorCode CheckUnusedOptions(MPMSim sim)
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
             "Unknown option%s %s (misspelt, or for a material/region/object not listed in -materials/-regions/-objects/-emitters); run with -help for the list",
             bad > 1 ? "s" : "", list);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMSetFromOptions(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsHasHelp(NULL, &sim->help));
  PetscCall(ReadRunOptions(sim));
  PetscCall(MaterialsSetUp(sim));
  PetscCall(CheckRunOptions(sim));
  PetscCall(MPMParticlesCreate(sim->dim, &sim->p));
  PetscCall(MPMGridSetUp(sim));
  PetscCall(MPMCollidersSetUp(sim));
  PetscCall(MPMRegionsSetUp(sim));
  PetscCall(MPMEmittersSetUp(sim));
  PetscCall(MPMCatalystSetUp(sim));
  PetscCall(MPMCheckpointSetUp(sim));
  PetscCall(MPMBalanceSetUp(sim));
  WaveSpeed(sim);
  PetscCheck(sim->dt_fixed == 0 || sim->wave_speed == 0 || sim->dt_fixed <= sim->grid.h / sim->wave_speed, sim->comm, PETSC_ERR_USER_INPUT,
             "-dt %g s exceeds the elastic stability limit dx/c_p = %g s (c_p = %g m/s): the run would blow up; use -dt <= %g or 0 (adaptive)", sim->dt_fixed,
             sim->grid.h / sim->wave_speed, sim->wave_speed, sim->cfl_elastic * sim->grid.h / sim->wave_speed);
  PetscCall(CheckUniqueNames(sim));
  if (!sim->help) PetscCall(CheckUnusedOptions(sim));
  PetscCall(PetscOptionsGetAll(NULL, &sim->options_string));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Progress(MPMSim sim)
{
  PetscLogDouble now;
  const double   nframes = ceil(sim->t_end / sim->output_dt - 1e-9);

  PetscFunctionBeginUser;
  PetscCall(PetscTime(&now));
  const double wall = now - sim->wall_start;
  double       eta  = sim->t > 0 ? wall * (sim->t_end - sim->t) / sim->t : 0;
  if (sim->max_steps >= 0 && sim->step > 0) eta = PetscMin(eta, wall * (sim->max_steps - sim->step) / sim->step);
  PetscCall(PetscPrintf(sim->comm, "frame %4" PetscInt_FMT "/%-4.0f step %8" PetscInt_FMT "  t %.5e s  dt %.3e s  particles %lld  wall %.1f s  eta %.1f s\n", sim->frame - 1, nframes,
                        sim->step, sim->t, sim->dt, (long long)sim->n_global, wall, eta));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode OutputAll(MPMSim sim)
{
  MPMDiagnostics d;

  PetscFunctionBeginUser;
  PetscCall(MPMOutputFrame(sim));
  PetscCall(MPMComputeDiagnostics(sim, &d));
  PetscCall(MPMOutputHistory(sim, &d));
  PetscCall(Progress(sim));
  sim->t_last_frame = sim->t;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Seed, migrate once (seeding is per slab, this only checks), first dt. */
static PetscErrorCode InitialState(MPMSim sim)
{
  MPMStepReduction red;
  double           vmax2 = 0;

  PetscFunctionBeginUser;
  PetscCall(MPMSeedRegions(sim));
  PetscCall(MPMMigrate(sim, &red));
  for (PetscInt q = 0; q < sim->p.n; q++) {
    double s2 = 0;
    for (PetscInt a = 0; a < sim->dim; a++) s2 += sim->p.v[q * sim->dim + a] * sim->p.v[q * sim->dim + a];
    vmax2 = PetscMax(vmax2, s2);
  }
  for (PetscInt e = 0; e < sim->nem; e++) vmax2 = PetscMax(vmax2, sim->em[e].speed * sim->em[e].speed);
  red.dt    = MPMStableDt(sim, sqrt(vmax2));
  red.flags = 0;
  PetscCall(MPMGlobalStepReduce(sim->comm, &red));
  PetscCheck(red.outside == 0, sim->comm, PETSC_ERR_USER_INPUT, "Particle %lld was seeded outside the domain at (%g, %g, %g)", (long long)red.bad_id, red.bad_x[0], red.bad_x[1], red.bad_x[2]);
  sim->n_global      = red.n;
  sim->imbalance     = MPMBalanceImbalance(sim, &red);
  sim->dt            = red.dt;
  sim->t_next_output = sim->output_dt;
  if (sim->sort_interval) PetscCall(MPMSortParticles(sim));
  PetscCall(PetscInfo(NULL, "Seeded %lld particles, first dt %g s\n", (long long)sim->n_global, sim->dt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PrintSetup(MPMSim sim)
{
  const MPMGrid *g = &sim->grid;

  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(sim->comm, "granular-mpm %s: %" PetscInt_FMT "D, %d rank%s, grid %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " nodes (dx %g m), slabs along %c, %s %s\n",
                        MPMVersion(), sim->dim, sim->size, sim->size > 1 ? "s" : "", g->N[0], g->N[1], g->N[2], g->h, "xyz"[g->slab_axis],
                        g->order == MPM_KERNEL_QUADRATIC ? "quadratic" : "cubic", sim->transfer == MPM_TRANSFER_APIC ? "APIC" : "PIC/FLIP"));
  PetscCall(PetscPrintf(sim->comm, "particles %lld, state %zu bytes each, output in %s\n", (long long)sim->n_global, sim->p.bytes, sim->outdir));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Frames and history rows due after a step. */
static PetscErrorCode OutputAfterStep(MPMSim sim, PetscLogDouble *t0)
{
  PetscLogDouble t1;

  PetscFunctionBeginUser;
  if (sim->t >= sim->t_next_output * (1 - 1e-12)) {
    PetscCall(PetscTime(&t1));
    sim->wall_steps += t1 - *t0;
    PetscCall(OutputAll(sim));
    sim->t_next_output += sim->output_dt;
    PetscCall(PetscTime(t0));
  } else if (sim->history_interval && sim->step % sim->history_interval == 0) {
    MPMDiagnostics d;
    PetscCall(MPMComputeDiagnostics(sim, &d));
    PetscCall(MPMOutputHistory(sim, &d));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A fresh start (seed, frame 0) or the state of a checkpoint. */
static PetscErrorCode StartState(MPMSim sim)
{
  PetscBool restarted;

  PetscFunctionBeginUser;
  PetscCall(MPMCheckpointRestart(sim, &restarted));
  PetscCall(MPMOutputSetUp(sim, restarted));
  if (!restarted) PetscCall(InitialState(sim));
  PetscCall(PrintSetup(sim));
  if (!restarted) PetscCall(OutputAll(sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMRun(MPMSim sim)
{
  PetscLogDouble t0, t1;
  PetscBool      stop = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (sim->help) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscTime(&sim->wall_start));
  PetscCall(MPMCheckpointInstallSignals(sim)); /* before the (possibly long) set-up: a signal then stops after the first step */
  PetscCall(StartState(sim));
  PetscCall(PetscTime(&t0));
  while (!stop && sim->t < sim->t_end * (1 - 1e-12) && (sim->max_steps < 0 || sim->step < sim->max_steps)) {
    PetscCall(MPMStep(sim));
    PetscCall(MPMBalanceAfterStep(sim));
    PetscCall(MPMCatalystCoProcess(sim));
    PetscCall(OutputAfterStep(sim, &t0));
    PetscCall(MPMCheckpointAfterStep(sim, &stop));
  }
  PetscCall(PetscTime(&t1));
  sim->wall_steps += t1 - t0;
  if (!stop && sim->t > sim->t_last_frame) PetscCall(OutputAll(sim)); /* the final state */
  PetscCall(MPMOutputSummary(sim));
  PetscCall(PetscPrintf(sim->comm, "%s: %" PetscInt_FMT " steps, t = %g s, %lld particles (%lld deleted), %.3g particle-steps/s\n", stop ? "stopped" : "done", sim->step, sim->t,
                        (long long)sim->n_global, (long long)sim->n_deleted, sim->wall_steps > 0 ? sim->particle_steps / sim->wall_steps : 0.0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int MPMExitCode(MPMSim sim) { return sim ? sim->exit_code : 0; }

PetscErrorCode MPMDestroy(MPMSim *simp)
{
  MPMSim sim = *simp;

  PetscFunctionBeginUser;
  if (!sim) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMOutputFinalize(sim));
  PetscCall(MPMCatalystFinalize(sim));
  for (PetscInt m = 0; m < sim->nmat; m++) PetscCall(MPMMaterialDestroy(&sim->mat[m]));
  for (PetscInt e = 0; e < sim->nem; e++) PetscCall(PetscFree(sim->em[e].layer_offsets));
  PetscCall(PetscFree(sim->mat));
  PetscCall(PetscFree(sim->obj));
  PetscCall(PetscFree(sim->reg));
  PetscCall(PetscFree(sim->em));
  PetscCall(MPMParticlesDestroy(&sim->p));
  PetscCall(MPMGridDestroy(&sim->grid));
  PetscCall(PetscFree(sim->options_string));
  PetscCall(PetscFree(sim));
  PetscCall(MPMParallelFinalize());
  *simp = NULL;
  PetscFunctionReturn(PETSC_SUCCESS);
}
