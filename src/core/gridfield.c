/* Grid fields: node values on the layout (slabs or blocks), one PETSc DMDA each (any
 * number of values per node), with a global (owned nodes) and a local
 * (ghosted) vector.  The ghost verbs of parallel.c take a grid field, so a
 * method with several grids, a matrix-free operator or persistent grid
 * unknowns reuses them.  The run lists every grid field; when the slabs
 * move (load balancing), MPMGridFieldsRebuild() rebuilds them all on the new layout and
 * carries the values of persistent ones over through PETSc's natural
 * (rank-independent) node ordering. */
#include "core.h"

static PetscErrorCode GridFieldBuild(MPMSim sim, MPMGridField *gf)
{
  const MPMLayout *l = &sim->layout;
  PetscInt        *count[3], gs[3], gn[3], cs[3], cm[3];

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++) { /* nodes per part along each axis: the layout's ownership ranges */
    PetscCall(PetscMalloc1(l->parts[a], &count[a]));
    for (PetscInt r = 0; r < l->parts[a]; r++) count[a][r] = l->start[a][r + 1] - l->start[a][r];
  }
  if (l->dim == 2)
    PetscCall(DMDACreate2d(sim->comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, l->N[0], l->N[1], l->parts[0], l->parts[1], gf->dof, MPM_GHOST_WIDTH, count[0], count[1], &gf->da));
  else
    PetscCall(DMDACreate3d(sim->comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, l->N[0], l->N[1], l->N[2], l->parts[0], l->parts[1], l->parts[2], gf->dof,
                           MPM_GHOST_WIDTH, count[0], count[1], count[2], &gf->da));
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(count[a]));
  PetscCall(DMSetUp(gf->da));
  PetscCall(DMCreateGlobalVector(gf->da, &gf->global));
  PetscCall(DMCreateLocalVector(gf->da, &gf->local));
  PetscCall(DMDAGetGhostCorners(gf->da, &gs[0], &gs[1], &gs[2], &gn[0], &gn[1], &gn[2]));
  PetscCall(DMDAGetCorners(gf->da, &cs[0], &cs[1], &cs[2], &cm[0], &cm[1], &cm[2]));
  gf->box     = l->box;
  gf->box.dof = (int)gf->dof;
  gf->builds++;
  for (PetscInt a = 0; a < l->dim; a++) /* the layout computes the same boxes (and the same rank order); the kernels trust it */
    PetscCheck(gs[a] == l->box.gs[a] && gn[a] == l->box.gn[a] && cs[a] == l->xs[a] && cm[a] == l->xm[a], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Grid field %s: DMDA boxes differ from the layout's", gf->name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGridFieldCreate(MPMSim sim, const char *name, PetscInt dof, PetscBool persistent, MPMGridField **out)
{
  MPMGridField *gf;

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&gf));
  PetscCall(PetscStrncpy(gf->name, name, sizeof(gf->name)));
  gf->dof        = dof;
  gf->persistent = persistent;
  PetscCall(GridFieldBuild(sim, gf));
  PetscCall(PetscRealloc(sizeof(MPMGridField *) * (sim->ngf + 1), &sim->gf));
  sim->gf[sim->ngf++] = gf;
  *out                = gf;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode GridFieldClear(MPMGridField *gf)
{
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&gf->global));
  PetscCall(VecDestroy(&gf->local));
  PetscCall(DMDestroy(&gf->da));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Rebuild on the current layout; a persistent field's owned values go
 * old global -> old natural -> new natural -> new global. */
static PetscErrorCode GridFieldRebuild(MPMSim sim, MPMGridField *gf)
{
  Vec        nat_old = NULL, nat_new;
  VecScatter sc;
  IS         rows;
  PetscInt   lo, hi;

  PetscFunctionBeginUser;
  if (gf->persistent) {
    PetscCall(DMDACreateNaturalVector(gf->da, &nat_old));
    PetscCall(DMDAGlobalToNaturalBegin(gf->da, gf->global, INSERT_VALUES, nat_old));
    PetscCall(DMDAGlobalToNaturalEnd(gf->da, gf->global, INSERT_VALUES, nat_old));
  }
  PetscCall(GridFieldClear(gf));
  PetscCall(GridFieldBuild(sim, gf));
  if (gf->persistent) {
    PetscCall(DMDACreateNaturalVector(gf->da, &nat_new));
    PetscCall(VecGetOwnershipRange(nat_new, &lo, &hi)); /* the rows this rank now owns, by natural index */
    PetscCall(ISCreateStride(PETSC_COMM_SELF, hi - lo, lo, 1, &rows));
    PetscCall(VecScatterCreate(nat_old, rows, nat_new, NULL, &sc));
    PetscCall(ISDestroy(&rows));
    PetscCall(VecScatterBegin(sc, nat_old, nat_new, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(sc, nat_old, nat_new, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(DMDANaturalToGlobalBegin(gf->da, nat_new, INSERT_VALUES, gf->global));
    PetscCall(DMDANaturalToGlobalEnd(gf->da, nat_new, INSERT_VALUES, gf->global));
    PetscCall(VecScatterDestroy(&sc));
    PetscCall(VecDestroy(&nat_new));
    PetscCall(VecDestroy(&nat_old));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGridFieldsRebuild(MPMSim sim)
{
  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < sim->ngf; i++) PetscCall(GridFieldRebuild(sim, sim->gf[i]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGridFieldsDestroy(MPMSim sim)
{
  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < sim->ngf; i++) {
    PetscCall(GridFieldClear(sim->gf[i]));
    PetscCall(PetscFree(sim->gf[i]));
  }
  PetscCall(PetscFree(sim->gf));
  sim->ngf = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}
