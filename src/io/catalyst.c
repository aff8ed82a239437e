/* In-situ visualization with ParaView Catalyst (legacy API, ParaView 5.11).
 *
 * Options: -catalyst_script FILE[,FILE...] (Python pipelines) and
 * -catalyst_interval N (steps between co-processing calls).  The adaptor
 * itself is C++ (catalyst_adaptor.cxx), built only when CMake finds
 * ParaView (MPM_HAVE_CATALYST), as a loadable module next to the
 * executable: it is opened only when a run names a script, so runs without
 * Catalyst do not load ParaView (~0.9 s and ~200 MB per rank).  Without
 * it, asking for a script is an error, never a silent no-op.  The scripts
 * write into <output_dir>/catalyst (passed to them as
 * MPM_CATALYST_OUTPUT_DIR); docs/catalyst.md. */
#define _POSIX_C_SOURCE 200809L /* readlink under -std=c11 */
#include "io.h"
#if defined(MPM_HAVE_CATALYST)
  #include "catalyst_adaptor.h"
  #include <dlfcn.h>
  #include <stdlib.h>
  #include <unistd.h>
#endif

#if defined(MPM_HAVE_CATALYST)
/* The adaptor's entry points, looked up in the module. */
typedef struct {
  int (*initialize)(MPI_Comm, const char *, int, const char *const *, int, const char *const *, MPMCatalystAdaptor **, char *, size_t);
  int (*wants)(MPMCatalystAdaptor *, int64_t, double);
  int (*coprocess)(MPMCatalystAdaptor *, int, const MPMCatalystFrame *, const MPMCatalystSurface *, char *, size_t);
  void (*finalize)(MPMCatalystAdaptor **);
} AdaptorAPI;
#endif

typedef struct {
#if defined(MPM_HAVE_CATALYST)
  AdaptorAPI          api;
  MPMCatalystAdaptor *adaptor;
  /* one channel per species, named as the frames' XDMF files: "particles"
   * for the first, "particles_<species>" for the others */
  char channel[MPM_MAX_SPECIES][MPM_NAME_LEN + 16];
  /* the deck's -objects, on channel "objects" (rank 0 traces them): the
   * pieces of those that stand still, traced once */
  PetscBool objects;
  PetscInt  nstill;
  double   *still;
  int32_t  *still_obj;
  PetscBool traced;
#endif
  PetscInt       calls;        /* co-processing calls made */
  PetscLogDouble first, total; /* [s] the first call (it builds the pipelines and the OpenGL context), all calls */
} MPMCatalyst;

#if defined(MPM_HAVE_CATALYST)
/* Every rank checks every script before Python starts, so a typo in a path
 * is one clear input error instead of a Python traceback per rank. */
static PetscErrorCode CheckScripts(MPMSim sim, char **scripts, PetscInt n)
{
  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < n; s++) {
    PetscBool ok;
    PetscCall(PetscTestFile(scripts[s], 'r', &ok));
    PetscCheck(ok, sim->comm, PETSC_ERR_USER_INPUT, "-catalyst_script %s: no such file, or not readable", scripts[s]);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Open the adaptor module: $MPM_CATALYST_MODULE if set, else the one next
 * to the executable (the build tree), else the installed one (relative to
 * the executable: an install can be moved), else the one in the build tree.  RTLD_GLOBAL: the
 * Python extension modules ParaView imports later need libpython's symbols
 * in the global scope.  The module is never closed (Python and VTK do not
 * support being unloaded). */
static void *OpenModule(char *tried, size_t len)
{
  char        exe[PETSC_MAX_PATH_LEN], cand[4][PETSC_MAX_PATH_LEN + 64];
  const char *env = getenv("MPM_CATALYST_MODULE");
  ssize_t     k   = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  int         nc  = 0;

  if (env && env[0]) snprintf(cand[nc++], sizeof(cand[0]), "%s", env);
  if (k > 0) {
    exe[k]      = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    if (snprintf(cand[nc], sizeof(cand[0]), "%s/%s", exe, MPM_CATALYST_MODULE) < (int)sizeof(cand[0])) nc++;
#if defined(MPM_CATALYST_MODULE_INSTALLED)
    if (snprintf(cand[nc], sizeof(cand[0]), "%s/%s/%s", exe, MPM_CATALYST_MODULE_INSTALLED, MPM_CATALYST_MODULE) < (int)sizeof(cand[0])) nc++;
#endif
  }
  snprintf(cand[nc++], sizeof(cand[0]), "%s", MPM_CATALYST_MODULE_BUILT);
  tried[0] = 0;
  for (int i = 0; i < nc; i++) {
    void *h = dlopen(cand[i], RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
    const char *e = dlerror();
    snprintf(tried + strlen(tried), len - strlen(tried), "\n  %.1024s: %.512s", cand[i], e ? e : "cannot open");
  }
  return NULL;
}

static PetscErrorCode LoadAdaptor(MPMSim sim, AdaptorAPI *api)
{
  char   tried[3 * (PETSC_MAX_PATH_LEN + 64) + 512];
  void  *h  = OpenModule(tried, sizeof(tried));
  double ok = 0;

  PetscFunctionBeginUser;
  if (h) { /* dlsym returns void*; POSIX guarantees it converts to a function pointer */
    *(void **)&api->initialize = dlsym(h, "MPMCatalystAdaptorInitialize");
    *(void **)&api->wants      = dlsym(h, "MPMCatalystAdaptorWants");
    *(void **)&api->coprocess  = dlsym(h, "MPMCatalystAdaptorCoProcess");
    *(void **)&api->finalize   = dlsym(h, "MPMCatalystAdaptorFinalize");
    ok = api->initialize && api->wants && api->coprocess && api->finalize;
    if (!ok) snprintf(tried, sizeof(tried), "\n  the module lacks the MPMCatalystAdaptor* entry points");
  }
  double agree[2] = {ok, -ok};
  PetscCall(MPMGlobalMax(sim->comm, agree, 2)); /* -agree[1] = 1: loaded on every rank */
  PetscCheck(agree[1] == -1, PETSC_COMM_SELF, PETSC_ERR_LIB, "-catalyst_script: cannot load the Catalyst adaptor module %s (set MPM_CATALYST_MODULE to its path):%s",
             MPM_CATALYST_MODULE, ok ? "\n  (loaded on this rank, failed on another)" : tried);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode StartAdaptor(MPMSim sim, char **scripts, PetscInt n)
{
  MPMCatalyst *c;
  char         dir[PETSC_MAX_PATH_LEN], msg[1024] = "";

  PetscFunctionBeginUser;
  PetscCall(CheckScripts(sim, scripts, n));
  PetscCall(PetscSNPrintf(dir, sizeof(dir), "%s/catalyst", sim->outdir));
  PetscCall(PetscNew(&c));
  sim->catalyst = c;
  PetscCall(LoadAdaptor(sim, &c->api));
  const char *channels[MPM_MAX_SPECIES + 1];
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    if (s == 0) PetscCall(PetscStrncpy(c->channel[s], "particles", sizeof(c->channel[s])));
    else PetscCall(PetscSNPrintf(c->channel[s], sizeof(c->channel[s]), "particles_%s", sim->species[s]->name));
    channels[s] = c->channel[s];
  }
  c->objects = sim->colliders->nobj > sim->colliders->nwalls ? PETSC_TRUE : PETSC_FALSE;
  if (c->objects) channels[sim->nspecies] = "objects";
  /* a refused script is refused alike on every rank: an input error */
  PetscCheck(!c->api.initialize(sim->comm, dir, (int)sim->nspecies + (c->objects ? 1 : 0), channels, (int)n, (const char *const *)scripts, &c->adaptor, msg, sizeof(msg)), sim->comm,
             PETSC_ERR_USER_INPUT, "%s", msg);
  sim->catalyst_on = PETSC_TRUE;
  if (sim->nspecies > 1) PetscCall(PetscPrintf(sim->comm, "Catalyst: channel particles holds the %s, particles_%s the %s\n", sim->species[0]->name, sim->species[1]->name, sim->species[1]->name));
  PetscCall(PetscInfo(NULL, "Catalyst: %" PetscInt_FMT " script(s), every %" PetscInt_FMT " steps, output in %s\n", n, sim->catalyst_interval, dir));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Append object k's pieces (traced where it is now) to (*pts, *obj, *n). */
static PetscErrorCode AppendObject(MPMSim sim, PetscInt k, double **pts, int32_t **obj, PetscInt *n)
{
  const PetscInt d = sim->dim;
  double        *p;
  PetscInt       m;

  PetscFunctionBeginUser;
  PetscCall(MPMObjectTrace(sim, &sim->colliders->obj[k], &m, &p));
  PetscCall(PetscRealloc(sizeof(double) * (size_t)(*n + m) * d * 3 + 1, pts));
  PetscCall(PetscRealloc(sizeof(int32_t) * (size_t)(*n + m) + 1, obj));
  if (m) PetscCall(PetscArraycpy(*pts + *n * d * 3, p, m * d * 3));
  for (PetscInt q = 0; q < m; q++) (*obj)[*n + q] = (int32_t)(k - sim->colliders->nwalls);
  *n += m;
  PetscCall(PetscFree(p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Rank 0's pieces of every object (the others hand none): the still ones
 * traced at the first call and kept, the moving ones traced now. */
static PetscErrorCode ObjectPieces(MPMSim sim, MPMCatalyst *c, PetscInt *n, double **pts, int32_t **obj)
{
  const MPMColliders cl = sim->colliders;

  PetscFunctionBeginUser;
  *n   = 0;
  *pts = NULL;
  *obj = NULL;
  if (sim->rank != 0) PetscFunctionReturn(PETSC_SUCCESS);
  if (!c->traced)
    for (PetscInt k = cl->nwalls; k < cl->nobj; k++)
      if (!MPMObjectMoving(&cl->obj[k])) PetscCall(AppendObject(sim, k, &c->still, &c->still_obj, &c->nstill));
  c->traced = PETSC_TRUE;
  PetscCall(PetscMalloc1(c->nstill * sim->dim * 3 + 1, pts));
  PetscCall(PetscMalloc1(c->nstill + 1, obj));
  PetscCall(PetscArraycpy(*pts, c->still, c->nstill * sim->dim * 3));
  PetscCall(PetscArraycpy(*obj, c->still_obj, c->nstill));
  *n = c->nstill;
  for (PetscInt k = cl->nwalls; k < cl->nobj; k++)
    if (MPMObjectMoving(&cl->obj[k])) PetscCall(AppendObject(sim, k, pts, obj, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's particles to the pipelines, one channel per species: every
 * output array (the same as the frames'), computed only at steps some
 * pipeline runs. */
static PetscErrorCode HandParticles(MPMSim sim, MPMCatalyst *c)
{
  MPMOutputArray   *arr[MPM_MAX_SPECIES];
  MPMCatalystArray *ca[MPM_MAX_SPECIES];
  MPMCatalystFrame  f[MPM_MAX_SPECIES];
  PetscInt          n[MPM_MAX_SPECIES];
  char              msg[1024] = "";
  int               err;

  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    MPMSpecies *sp = sim->species[s];
    PetscCall(MPMOutputArraysGet(sp, &n[s], &arr[s]));
    PetscCall(PetscMalloc1(n[s], &ca[s]));
    f[s] = (MPMCatalystFrame){.channel = c->channel[s], .step = sim->step, .time = sim->t, .dim = (int)sim->dim, .n = sp->p.n, .narrays = (int)n[s], .arrays = ca[s]};
    for (PetscInt k = 0; k < n[s]; k++) {
      const MPMOutputArray *a = &arr[s][k];
      ca[s][k] = (MPMCatalystArray){.name = a->name, .ncomp = a->ncomp, .data = a->data,
                                    .type = a->type == MPM_FIELD_REAL ? MPM_CATALYST_DOUBLE : a->type == MPM_FIELD_INT64 ? MPM_CATALYST_INT64 : MPM_CATALYST_INT32};
    }
    for (PetscInt a = 0; a < 3; a++) {
      f[s].lo[a] = a < sim->dim ? sim->layout.lo[a] : 0.0;
      f[s].hi[a] = a < sim->dim ? sim->layout.hi[a] : 0.0;
    }
  }
  MPMCatalystSurface surf = {.dim = (int)sim->dim, .nnames = 0};
  double            *spts = NULL;
  int32_t           *sobj = NULL;
  const char        *names[MPM_MAX_NAMES];
  if (c->objects) {
    PetscInt ns;
    PetscCall(ObjectPieces(sim, c, &ns, &spts, &sobj));
    for (PetscInt k = sim->colliders->nwalls; k < sim->colliders->nobj && surf.nnames < MPM_MAX_NAMES; k++) names[surf.nnames++] = sim->colliders->obj[k].name;
    surf.n      = ns;
    surf.points = spts;
    surf.object = sobj;
    surf.names  = names;
  }
  err = c->api.coprocess(c->adaptor, (int)sim->nspecies, f, c->objects ? &surf : NULL, msg, sizeof(msg));
  PetscCall(PetscFree(spts));
  PetscCall(PetscFree(sobj));
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    PetscCall(PetscFree(ca[s]));
    PetscCall(MPMOutputArraysRestore(n[s], &arr[s]));
  }
  /* Not collective: a pipeline can fail on one rank while the others wait
   * inside ParaView's collective calls; this rank stops alone and mpiexec
   * ends the job, where a reduction here would hang. */
  PetscCheck(!err, PETSC_COMM_SELF, PETSC_ERR_LIB, "%s", msg);
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

/* One options block (PETSc's -help prints a block title once, and drops a
 * second block of the same title). */
static PetscErrorCode ReadOptions(MPMSim sim, char **scripts, PetscInt *n)
{
  PetscFunctionBeginUser;
  *n                     = MPM_MAX_NAMES;
  sim->catalyst_interval = 10;
  PetscOptionsBegin(sim->comm, NULL, "In-situ visualization (ParaView Catalyst)", NULL);
  PetscCall(PetscOptionsStringArray("-catalyst_script", "Catalyst Python pipeline script(s); they write into <output_dir>/catalyst", NULL, scripts, n, NULL));
  PetscCall(MPMOptionsInt("-catalyst_interval", "Steps between Catalyst co-processing calls", NULL, sim->catalyst_interval, &sim->catalyst_interval, NULL));
  PetscOptionsEnd();
  PetscCheck(*n < MPM_MAX_NAMES, sim->comm, PETSC_ERR_USER_INPUT, "-catalyst_script lists %d or more names; at most %d are supported", MPM_MAX_NAMES, MPM_MAX_NAMES - 1);
  PetscCheck(sim->catalyst_interval > 0, sim->comm, PETSC_ERR_USER_INPUT, "-catalyst_interval must be > 0, got %" PetscInt_FMT, sim->catalyst_interval);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscBool MPMHaveCatalyst(void)
{
#if defined(MPM_HAVE_CATALYST)
  return PETSC_TRUE;
#else
  return PETSC_FALSE;
#endif
}

PetscErrorCode MPMCatalystSetUp(MPMSim sim)
{
  char    *scripts[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  sim->catalyst_on = PETSC_FALSE;
  PetscCall(ReadOptions(sim, scripts, &n));
#if defined(MPM_HAVE_CATALYST)
  /* -help only lists the options: no Python, no pipelines */
  if (n > 0 && !sim->help) PetscCall(StartAdaptor(sim, scripts, n));
#else
  PetscCheck(n == 0, sim->comm, PETSC_ERR_USER_INPUT,
             "-catalyst_script was given but this build has no ParaView Catalyst (configure with ParaView installed: Debian packages paraview-dev python3-paraview)");
#endif
  PetscCall(MPMOptionsFreeNames(scripts, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Called after every step; co-processes every -catalyst_interval steps.
 * The whole call is timed (pressure, copies into VTK arrays, the pipelines,
 * parallel compositing, file writes): that is the in-situ overhead. */
PetscErrorCode MPMCatalystCoProcess(MPMSim sim)
{
  MPMCatalyst   *c = (MPMCatalyst *)sim->catalyst;
  PetscLogDouble t0, t1;

  PetscFunctionBeginUser;
  if (!sim->catalyst_on || sim->step % sim->catalyst_interval) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscLogEventBegin(MPM_EVENT_CATALYST, 0, 0, 0, 0));
  PetscCall(PetscTime(&t0));
#if defined(MPM_HAVE_CATALYST)
  /* the scripts' own triggers may skip this step: then build nothing */
  if (c->api.wants(c->adaptor, sim->step, sim->t)) PetscCall(HandParticles(sim, c));
#endif
  PetscCall(PetscTime(&t1));
  PetscCall(PetscLogEventEnd(MPM_EVENT_CATALYST, 0, 0, 0, 0));
  if (c->calls == 0) c->first = t1 - t0;
  c->calls++;
  c->total += t1 - t0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The first call pays for the pipelines' and OpenGL's set-up, so it is
 * reported apart from the steady per-call cost. */
static PetscErrorCode ReportTimes(MPMSim sim, const MPMCatalyst *c)
{
  char later[64] = "";

  PetscFunctionBeginUser;
  if (!c->calls) PetscFunctionReturn(PETSC_SUCCESS);
  if (c->calls > 1) PetscCall(PetscSNPrintf(later, sizeof(later), ", later calls %.4g s each", (c->total - c->first) / (double)(c->calls - 1)));
  PetscCall(PetscPrintf(sim->comm, "catalyst: %" PetscInt_FMT " co-processing calls (every %" PetscInt_FMT " steps), mean %.4g s per call; first %.4g s%s (rank 0)\n", c->calls,
                        sim->catalyst_interval, c->total / (double)c->calls, c->first, later));
  PetscCall(PetscInfo(NULL, "Catalyst on this rank: %" PetscInt_FMT " calls, %g s in all, first %g s\n", c->calls, c->total, c->first));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCatalystFinalize(MPMSim sim)
{
  MPMCatalyst *c = (MPMCatalyst *)sim->catalyst;

  PetscFunctionBeginUser;
  if (!c) PetscFunctionReturn(PETSC_SUCCESS);
#if defined(MPM_HAVE_CATALYST)
  if (c->api.finalize) c->api.finalize(&c->adaptor);
  PetscCall(PetscFree(c->still));
  PetscCall(PetscFree(c->still_obj));
#endif
  PetscCall(ReportTimes(sim, c));
  PetscCall(PetscFree(sim->catalyst));
  sim->catalyst_on = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}
