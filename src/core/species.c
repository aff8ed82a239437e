/* Particle species: a set of particles moved by one method, with its own
 * field registry, materials and grid field (none for particle-only
 * methods).  A run holds one or more. */
#include "core.h"

PetscErrorCode MPMSpeciesCreate(MPMSim sim, const char *name, MPMSpecies **out)
{
  MPMSpecies *sp;

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&sp));
  PetscCall(PetscStrncpy(sp->name, name, sizeof(sp->name)));
  PetscCall(MPMParticlesCreate(sim->dim, &sp->p));
  sp->f_affine = -1;
  PetscCall(PetscRealloc(sizeof(MPMSpecies *) * (sim->nspecies + 1), &sim->species));
  sim->species[sim->nspecies++] = sp;
  *out                          = sp;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The materials are destroyed by their own layer before this. */
PetscErrorCode MPMSpeciesDestroyAll(MPMSim sim)
{
  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    MPMSpecies *sp = sim->species[s];
    PetscCall(MPMParticlesDestroy(&sp->p));
    PetscCall(PetscFree(sp->mat));
    PetscCall(PetscFree(sp->matinfo));
    PetscCall(PetscFree(sp));
  }
  PetscCall(PetscFree(sim->species));
  sim->nspecies = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A quantity computed from the particle state for frames, XDMF and Catalyst. */
PetscErrorCode MPMSpeciesAddDerived(MPMSpecies *sp, const char *name, int ncomp, MPMDerivedFn fn, void *ctx)
{
  MPMDerivedField *d;

  PetscFunctionBeginUser;
  PetscCheck(sp->nderived < MPM_MAX_DERIVED, PETSC_COMM_SELF, PETSC_ERR_PLIB, "More than %d derived output fields", MPM_MAX_DERIVED);
  d = &sp->derived[sp->nderived++];
  PetscCall(PetscStrncpy(d->name, name, sizeof(d->name)));
  d->ncomp = ncomp;
  d->fn    = fn;
  d->ctx   = ctx;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The species and index of the material named `name` (opt names the option
 * that gave it, for the message). */
PetscErrorCode MPMSpeciesFindMaterial(MPMSim sim, const char *opt, const char *name, PetscInt *species, PetscInt *mat)
{
  char list[1024] = "";

  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++)
    for (PetscInt m = 0; m < sim->species[s]->nmat; m++) {
      PetscBool same;
      PetscCall(PetscStrcmp(sim->species[s]->matinfo[m].name, name, &same));
      if (same) {
        *species = s;
        *mat     = m;
        PetscFunctionReturn(PETSC_SUCCESS);
      }
      PetscCall(PetscStrlcat(list, list[0] ? ", " : "", sizeof(list)));
      PetscCall(PetscStrlcat(list, sim->species[s]->matinfo[m].name, sizeof(list)));
    }
  SETERRQ(sim->comm, PETSC_ERR_USER_INPUT, "%s '%s' is not one of the materials listed in -materials (%s)", opt, name, list[0] ? list : "none");
}

/* Every species sorted by grid cell. */
PetscErrorCode MPMSortParticles(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_SORT, 0, 0, 0, 0));
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(MPMParticlesSortByCell(&sim->species[s]->p, &sim->layout.box));
  PetscCall(PetscLogEventEnd(MPM_EVENT_SORT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Particles of all species on this rank. */
int64_t MPMLocalParticles(const MPMSim sim)
{
  int64_t n = 0;
  for (PetscInt s = 0; s < sim->nspecies; s++) n += sim->species[s]->p.n;
  return n;
}
