/* Integrator registry: -integrator NAME selects a create function from a
 * PetscFunctionList (like KSPSetType); the create function fills the ops
 * table and the integrator reads its options under its own prefix. */
#include "integrators.h"

static PetscFunctionList MPMIntegratorList = NULL;

PetscErrorCode MPMIntegratorRegister(const char *type, MPMIntegratorCreateFn create)
{
  PetscFunctionBeginUser;
  PetscCall(PetscFunctionListAdd(&MPMIntegratorList, type, create));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorRegisterAll(void)
{
  static PetscBool registered = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (registered) PetscFunctionReturn(PETSC_SUCCESS);
  registered = PETSC_TRUE;
  PetscCall(MPMIntegratorRegister("explicit", MPMIntegratorCreate_Explicit));
  PetscCall(MPMIntegratorRegister("implicit", MPMIntegratorCreate_Implicit));
  PetscCall(MPMIntegratorRegister("semi_implicit", MPMIntegratorCreate_SemiImplicit));
  PetscCall(MPMIntegratorRegister("mixture", MPMIntegratorCreate_Mixture));
  PetscCall(MPMIntegratorRegister("nonsmooth", MPMIntegratorCreate_Nonsmooth));
  PetscCall(MPMIntegratorRegister("pbd", MPMIntegratorCreate_PBD));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -integrator NAME, then the integrator's own options. */
PetscErrorCode MPMIntegratorCreate(MPMSim sim)
{
  MPMIntegrator         integ;
  MPMIntegratorCreateFn create = NULL;
  char                  types[256];

  PetscFunctionBeginUser;
  PetscCall(MPMIntegratorRegisterAll());
  PetscCall(PetscNew(&integ));
  sim->integ = integ;
  PetscCall(PetscStrncpy(integ->type, "explicit", sizeof(integ->type)));
  PetscOptionsBegin(sim->comm, NULL, "Time integration", NULL);
  PetscCall(PetscOptionsFList("-integrator", "Time integrator (method)", NULL, MPMIntegratorList, integ->type, integ->type, sizeof(integ->type), NULL));
  PetscOptionsEnd();
  PetscCall(PetscFunctionListFind(MPMIntegratorList, integ->type, &create));
  PetscCall(MPMFunctionListNames(MPMIntegratorList, types, sizeof(types)));
  PetscCheck(create, sim->comm, PETSC_ERR_USER_INPUT, "-integrator %s is not a known integrator; allowed: %s", integ->type, types);
  PetscCall(PetscSNPrintf(integ->prefix, sizeof(integ->prefix), "%s_", integ->type));
  PetscCall((*create)(integ));
  if (integ->ops.options) PetscCall(integ->ops.options(integ, sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorStats(MPMIntegrator integ, MPMStepStats *s)
{
  PetscFunctionBeginUser;
  s->n = 0;
  if (integ->ops.stats) PetscCall(integ->ops.stats(integ, s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorDestroy(MPMIntegrator *integ)
{
  PetscFunctionBeginUser;
  if (!*integ) PetscFunctionReturn(PETSC_SUCCESS);
  if ((*integ)->ops.destroy) PetscCall((*integ)->ops.destroy(*integ));
  PetscCall(PetscFree((*integ)->data));
  PetscCall(PetscFree(*integ));
  PetscFunctionReturn(PETSC_SUCCESS);
}
