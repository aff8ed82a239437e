/* Grid fields: node values on the slab layout, one PETSc DMDA each (any
 * number of values per node), with a global (owned nodes) and a local
 * (ghosted) vector.  The ghost verbs of parallel.c take a grid field, so a
 * method with several grids, a matrix-free operator or persistent grid
 * unknowns reuses them.  The run lists every grid field; when the slabs
 * move, MPMGridFieldsRebuild() rebuilds them all on the new layout and
 * carries the values of persistent ones over through PETSc's natural
 * (rank-independent) node ordering. */
#include "core.h"

static PetscErrorCode GridFieldBuild(MPMSim sim, MPMGridField *gf)
{
  const MPMLayout *l        = &sim->layout;
  PetscInt         procs[3] = {1, 1, 1}, *count, gs[3], gn[3];
  const PetscInt  *own[3]   = {NULL, NULL, NULL};

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(sim->size, &count));
  for (PetscMPIInt r = 0; r < sim->size; r++) count[r] = l->slab_start[r + 1] - l->slab_start[r];
  procs[l->slab_axis] = sim->size;
  own[l->slab_axis]   = count;
  if (l->dim == 2)
    PetscCall(DMDACreate2d(sim->comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, l->N[0], l->N[1], procs[0], procs[1], gf->dof, MPM_GHOST_WIDTH, own[0], own[1], &gf->da));
  else
    PetscCall(DMDACreate3d(sim->comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, l->N[0], l->N[1], l->N[2], procs[0], procs[1], procs[2], gf->dof,
                           MPM_GHOST_WIDTH, own[0], own[1], own[2], &gf->da));
  PetscCall(PetscFree(count));
  PetscCall(DMSetUp(gf->da));
  PetscCall(DMCreateGlobalVector(gf->da, &gf->global));
  PetscCall(DMCreateLocalVector(gf->da, &gf->local));
  PetscCall(DMDAGetGhostCorners(gf->da, &gs[0], &gs[1], &gs[2], &gn[0], &gn[1], &gn[2]));
  gf->box     = l->box;
  gf->box.dof = (int)gf->dof;
  gf->builds++;
  for (PetscInt a = 0; a < l->dim; a++) /* the layout computes the same box; the kernels trust it */
    PetscCheck(gs[a] == l->box.gs[a] && gn[a] == l->box.gn[a], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Grid field %s: DMDA ghost box differs from the layout's", gf->name);
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
