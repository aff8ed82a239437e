/* The explicit MPM step of Klar et al. 2016 (figure 7): symplectic Euler
 * with APIC (or PIC/FLIP) transfers and the elastic stress of the previous
 * step fused into P2G.  Options (no prefix, as they predate the
 * integrators): -transfer, -flip_blend, -cfl_elastic.
 *
 * Per species it declares the APIC affine velocity C and the cached
 * Kirchhoff stress tau (particle fields), a grid field of 1 + dim values
 * per node (mass, momentum/velocity; 1 + 2 dim for FLIP, which keeps the
 * velocity before forces), and the derived outputs volume, pressure and
 * deviatoric stress norm. */
#include "integrators.h"


typedef struct {
  MPMTransfer     transfer;
  double          flip;        /* FLIP fraction of the PIC/FLIP blend; < 0 selects APIC */
  double          cfl_elastic; /* dt <= cfl_elastic dx / c_p */
  MPMHeldPIC      held;        /* the static-friction fix in G2P */
  double          wave_speed;  /* largest P-wave speed of anything that can put particles in the run */
  MPMStressFields fields[8];   /* per species */
} Explicit;

static PetscErrorCode ExplicitOptions(MPMIntegrator integ, MPMSim sim)
{
  Explicit *ex;
  PetscInt  transfer = MPM_TRANSFER_APIC;

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&ex));
  integ->data     = ex;
  ex->flip        = 0.95;
  ex->cfl_elastic = 0.5;
  PetscOptionsBegin(sim->comm, NULL, "Explicit integrator", NULL);
  PetscCall(MPMOptionsEList("-transfer", "Particle-grid transfer: apic, flip (PIC/FLIP blend), aflip (affine FLIP: APIC's C with the FLIP blend)", NULL, MPMTransferNames, 3,
                            MPMTransferNames[transfer], &transfer, NULL));
  PetscCall(MPMOptionsReal("-flip_blend", "FLIP fraction of the blend (with -transfer flip or aflip) [-]", NULL, ex->flip, &ex->flip, NULL));
  PetscCall(MPMOptionsReal("-cfl_elastic", "Elastic limit: dt <= cfl_elastic dx / c_p [-]", NULL, ex->cfl_elastic, &ex->cfl_elastic, NULL));
  PetscCall(MPMHeldPICOptions(PetscOptionsObject, &ex->held));
  PetscOptionsEnd();
  ex->transfer = (MPMTransfer)transfer;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ExplicitCheck(MPMIntegrator integ, MPMSim sim)
{
  Explicit *ex = (Explicit *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(ex->cfl_elastic > 0 && ex->cfl_elastic <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-cfl_elastic must be in (0, 1], got %g", ex->cfl_elastic);
  PetscCheck(ex->flip >= 0 && ex->flip <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-flip_blend must be in [0, 1], got %g", ex->flip);
  PetscCall(MPMHeldPICCheck(sim, &ex->held));
  if (ex->transfer == MPM_TRANSFER_APIC) ex->flip = -1; /* the transfers take flip < 0 as APIC */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* --------------------------------------------------------------- set-up */
static PetscErrorCode SpeciesSetUp(Explicit *ex, MPMSim sim, PetscInt s)
{
  MPMSpecies      *sp = sim->species[s];
  MPMStressFields *f  = &ex->fields[s];
  char             name[2 * MPM_NAME_LEN];

  PetscFunctionBeginUser;
  PetscCall(MPMIntegratorStressFields(sp, f));
  PetscCall(PetscSNPrintf(name, sizeof(name), "%s_momentum", sp->name));
  PetscCall(MPMGridFieldCreate(sim, name, mpm_transfer_dof((int)sim->dim, ex->transfer != MPM_TRANSFER_APIC), PETSC_FALSE, &sp->grid)); /* FLIP keeps v^n */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ExplicitSetUp(MPMIntegrator integ, MPMSim sim)
{
  Explicit    *ex = (Explicit *)integ->data;
  const double h  = sim->layout.h;

  PetscFunctionBeginUser;
  PetscCheck(sim->nspecies <= 8, sim->comm, PETSC_ERR_SUP, "-integrator explicit supports at most 8 species");
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(SpeciesSetUp(ex, sim, s));
  ex->wave_speed = MPMIntegratorWaveSpeed(sim);
  PetscCheck(sim->dt_fixed == 0 || ex->wave_speed == 0 || sim->dt_fixed <= h / ex->wave_speed, sim->comm, PETSC_ERR_USER_INPUT,
             "-dt %g s exceeds the elastic stability limit dx/c_p = %g s (c_p = %g m/s): the run would blow up; use -dt <= %g or 0 (adaptive)", sim->dt_fixed, h / ex->wave_speed,
             ex->wave_speed, ex->cfl_elastic * h / ex->wave_speed);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The stable step of the explicit stress update (common.c). */
static double ExplicitStableDt(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why)
{
  const Explicit *ex = (const Explicit *)integ->data;
  return MPMIntegratorExplicitDt(sim, ex->fields, ex->wave_speed, ex->cfl_elastic, vmax, why);
}

/* ----------------------------------------------------------------- step */
/* Node velocities from momenta, gravity, then collisions and friction
 * (K10, K section 8) on the owned nodes.  Slot 0 (the mass) then becomes
 * the flag "held by friction" (1 or 0, always 0 without -held_pic) that
 * G2P reads: particles that reach a held node do not keep APIC's affine
 * velocity C.  Kept, C pumps momentum between the held node and its free
 * neighbours step after step, and a block that friction must hold slides
 * (docs/validation.md, "Static friction"). */
static PetscErrorCode GridUpdate(const Explicit *ex, MPMSim sim, MPMGridField *g, double dt)
{
  const MPMLayout *l = &sim->layout;
  const PetscInt   d = l->dim, dof = g->dof;
  const int        flip = dof > 1 + d;
  const double     gs   = MPMGravityScale(sim);
  PetscScalar     *a;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscCall(VecGetArray(g->global, &a));
  for (PetscInt k = l->xs[2]; k < l->xs[2] + l->xm[2]; k++)
    for (PetscInt j = l->xs[1]; j < l->xs[1] + l->xm[1]; j++)
      for (PetscInt i = l->xs[0]; i < l->xs[0] + l->xm[0]; i++) {
        double        *node   = a + dof * (((k - l->xs[2]) * l->xm[1] + (j - l->xs[1])) * l->xm[0] + (i - l->xs[0]));
        const double   m      = node[0];
        const PetscInt idx[3] = {i, j, k};
        double         x[3], v[3];
        if (m <= 0) {
          for (PetscInt c = 0; c < dof; c++) node[c] = 0;
          continue;
        }
        for (PetscInt c = 0; c < d; c++) {
          x[c] = l->box.origin[c] + l->h * idx[c];
          v[c] = (node[1 + c] + (flip ? node[1 + d + c] : 0.0)) / m + dt * gs * sim->gravity[c];
          if (flip) node[1 + d + c] = node[1 + c] / m; /* v^n, before forces */
        }
        const int held = MPMCollidersApply(sim->colliders, 0, x, m, dt, v) == MPM_CONTACT_HELD;
        for (PetscInt c = 0; c < d; c++) node[1 + c] = v[c];
        node[0] = held && ex->held.on ? 1.0 : 0.0; /* the mass is spent: slot 0 tells G2P where friction holds */
      }
  PetscCall(VecRestoreArray(g->global, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ExplicitStep(MPMIntegrator integ, MPMSim sim, double dt, double *vmax)
{
  Explicit *ex = (Explicit *)integ->data;

  PetscFunctionBeginUser;
  *vmax = 0;
  MPMCollidersAtTime(sim->colliders, sim->t);
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    MPMSpecies            *sp = sim->species[s];
    const MPMStressFields *f  = &ex->fields[s];
    double                 vs = 0;
    MPMParticleView        v  = MPMIntegratorView(sp, f, ex->transfer != MPM_TRANSFER_FLIP);
    PetscCall(MPMIntegratorP2G(sp, &v, dt));
    PetscCall(MPMGhostScatterAdd(sp->grid));
    PetscCall(GridUpdate(ex, sim, sp->grid, dt));
    PetscCall(MPMGhostGather(sp->grid));
    PetscCall(MPMIntegratorG2P(sp, &v, dt, ex->flip, ex->held.rest, &vs));
    PetscCall(MPMIntegratorCommit(sp, f));
    *vmax = PetscMax(*vmax, vs);
  }
  MPMCollidersAdvance(sim->colliders, dt);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ExplicitView(MPMIntegrator integ, char *buf, size_t len)
{
  const Explicit *ex = (const Explicit *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(buf, ex->transfer == MPM_TRANSFER_APIC ? "APIC" : (ex->transfer == MPM_TRANSFER_FLIP ? "PIC/FLIP" : "affine PIC/FLIP"), len));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorCreate_Explicit(MPMIntegrator integ)
{
  PetscFunctionBeginUser;
  integ->ops.options   = ExplicitOptions;
  integ->ops.check     = ExplicitCheck;
  integ->ops.setup     = ExplicitSetUp;
  integ->ops.stable_dt = ExplicitStableDt;
  integ->ops.step      = ExplicitStep;
  integ->ops.view      = ExplicitView;
  PetscFunctionReturn(PETSC_SUCCESS);
}
