/* In-situ visualization with ParaView Catalyst (legacy API, ParaView 5.11).
 *
 * Options: -catalyst_script FILE[,FILE...] (Python pipelines) and
 * -catalyst_interval N (steps between co-processing calls).  The adaptor
 * itself is C++ (catalyst_adaptor.cxx) and only built when CMake finds
 * ParaView (MPM_HAVE_CATALYST); without it, asking for a script is an
 * error, never a silent no-op.  The scripts write into <output_dir>/catalyst
 * (passed to them as MPM_CATALYST_OUTPUT_DIR); docs/catalyst.md. */
#include "mpm_impl.h"
#if defined(MPM_HAVE_CATALYST)
  #include "catalyst_adaptor.h"
#endif

typedef struct {
#if defined(MPM_HAVE_CATALYST)
  MPMCatalystAdaptor *adaptor;
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

static PetscErrorCode StartAdaptor(MPMSim sim, char **scripts, PetscInt n)
{
  MPMCatalyst *c;
  char         dir[PETSC_MAX_PATH_LEN], msg[1024] = "";

  PetscFunctionBeginUser;
  PetscCall(CheckScripts(sim, scripts, n));
  PetscCall(PetscSNPrintf(dir, sizeof(dir), "%s/catalyst", sim->outdir));
  PetscCall(PetscNew(&c));
  sim->catalyst = c;
  /* a refused script is refused alike on every rank: an input error */
  PetscCheck(!MPMCatalystAdaptorInitialize(sim->comm, dir, (int)n, (const char *const *)scripts, &c->adaptor, msg, sizeof(msg)), sim->comm,
             PETSC_ERR_USER_INPUT, "%s", msg);
  sim->catalyst_on = PETSC_TRUE;
  PetscCall(PetscInfo(NULL, "Catalyst: %" PetscInt_FMT " script(s), every %" PetscInt_FMT " steps, output in %s\n", n, sim->catalyst_interval, dir));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's particles to the pipelines.  The pressure is computed here,
 * only at steps some pipeline runs, with output.c's formula. */
static PetscErrorCode HandParticles(MPMSim sim, MPMCatalyst *c)
{
  const MPMParticles *p = &sim->p;
  double             *vol, *pres, *sdev;
  char                msg[1024] = "";
  int                 err;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc3(p->n + 1, &vol, p->n + 1, &pres, p->n + 1, &sdev));
  MPMDerivedFields(sim, vol, pres, sdev);
  MPMCatalystFrame f = {.step = sim->step, .time = sim->t, .dim = (int)sim->dim, .n = p->n, .x = p->x, .v = p->v, .pressure = pres, .id = p->id, .material = p->mat};
  for (PetscInt a = 0; a < 3; a++) {
    f.lo[a] = a < sim->dim ? sim->grid.lo[a] : 0.0;
    f.hi[a] = a < sim->dim ? sim->grid.hi[a] : 0.0;
  }
  err = MPMCatalystAdaptorCoProcess(c->adaptor, &f, msg, sizeof(msg));
  PetscCall(PetscFree3(vol, pres, sdev));
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
  PetscCall(PetscOptionsInt("-catalyst_interval", "Steps between Catalyst co-processing calls", NULL, sim->catalyst_interval, &sim->catalyst_interval, NULL));
  PetscOptionsEnd();
  PetscCheck(*n < MPM_MAX_NAMES, sim->comm, PETSC_ERR_USER_INPUT, "-catalyst_script lists %d or more names; at most %d are supported", MPM_MAX_NAMES, MPM_MAX_NAMES - 1);
  PetscCheck(sim->catalyst_interval > 0, sim->comm, PETSC_ERR_USER_INPUT, "-catalyst_interval must be > 0, got %" PetscInt_FMT, sim->catalyst_interval);
  PetscFunctionReturn(PETSC_SUCCESS);
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
  if (MPMCatalystAdaptorWants(c->adaptor, sim->step, sim->t)) PetscCall(HandParticles(sim, c));
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
  MPMCatalystAdaptorFinalize(&c->adaptor);
#endif
  PetscCall(ReportTimes(sim, c));
  PetscCall(PetscFree(sim->catalyst));
  sim->catalyst_on = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}
