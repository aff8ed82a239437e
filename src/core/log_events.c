/* All PetscLogEvents of the solver, registered in one place: -log_view is
 * the profile of a run. */
#include "core.h"

PetscLogEvent MPM_EVENT_P2G, MPM_EVENT_GRID_UPDATE, MPM_EVENT_G2P, MPM_EVENT_CONSTITUTIVE, MPM_EVENT_MIGRATE, MPM_EVENT_GHOST,
  MPM_EVENT_OUTPUT, MPM_EVENT_SORT, MPM_EVENT_SEED, MPM_EVENT_REDUCE, MPM_EVENT_CHECKPOINT, MPM_EVENT_CATALYST, MPM_EVENT_BALANCE,
  MPM_EVENT_RESIDUAL, MPM_EVENT_JACOBIAN_MULT, MPM_EVENT_PMAT, MPM_EVENT_FORMS, MPM_EVENT_DCFP,
  MPM_EVENT_NEIGHBOURS, MPM_EVENT_CONTACTS, MPM_EVENT_LINEARIZE;
PetscLogStage MPM_STAGE_SETUP, MPM_STAGE_STEPPING, MPM_STAGE_OUTPUT;

PetscErrorCode MPMLogEventsRegister(void)
{
  static PetscBool registered = PETSC_FALSE;
  PetscClassId     classid;

  PetscFunctionBeginUser;
  if (registered) PetscFunctionReturn(PETSC_SUCCESS);
  registered = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("MPM", &classid));
  /* -log_view's stages: set-up (options, grid, seeding), stepping, output
   * (frames, history, checkpoints; inside stepping) */
  PetscCall(PetscLogStageRegister("MPM set-up", &MPM_STAGE_SETUP));
  PetscCall(PetscLogStageRegister("MPM stepping", &MPM_STAGE_STEPPING));
  PetscCall(PetscLogStageRegister("MPM output", &MPM_STAGE_OUTPUT));
  PetscCall(PetscLogEventRegister("MPMP2G", classid, &MPM_EVENT_P2G));
  PetscCall(PetscLogEventRegister("MPMGridUpdate", classid, &MPM_EVENT_GRID_UPDATE));
  PetscCall(PetscLogEventRegister("MPMG2P", classid, &MPM_EVENT_G2P));
  PetscCall(PetscLogEventRegister("MPMConstitutive", classid, &MPM_EVENT_CONSTITUTIVE));
  PetscCall(PetscLogEventRegister("MPMMigrate", classid, &MPM_EVENT_MIGRATE));
  PetscCall(PetscLogEventRegister("MPMGhostExchange", classid, &MPM_EVENT_GHOST));
  PetscCall(PetscLogEventRegister("MPMOutput", classid, &MPM_EVENT_OUTPUT));
  PetscCall(PetscLogEventRegister("MPMSort", classid, &MPM_EVENT_SORT));
  PetscCall(PetscLogEventRegister("MPMSeed", classid, &MPM_EVENT_SEED));
  PetscCall(PetscLogEventRegister("MPMStepReduce", classid, &MPM_EVENT_REDUCE));
  PetscCall(PetscLogEventRegister("MPMCheckpoint", classid, &MPM_EVENT_CHECKPOINT));
  PetscCall(PetscLogEventRegister("MPMBalance", classid, &MPM_EVENT_BALANCE));
  PetscCall(PetscLogEventRegister("MPMCatalyst", classid, &MPM_EVENT_CATALYST));
  PetscCall(PetscLogEventRegister("MPMResidual", classid, &MPM_EVENT_RESIDUAL));          /* implicit: the residual */
  PetscCall(PetscLogEventRegister("MPMJacobianMult", classid, &MPM_EVENT_JACOBIAN_MULT)); /* implicit: the matrix-free Jacobian */
  PetscCall(PetscLogEventRegister("MPMLinearize", classid, &MPM_EVENT_LINEARIZE));        /* semi-implicit: each particle's stress and its symmetric map, the operator's diagonal */
  PetscCall(PetscLogEventRegister("MPMPmatAssembly", classid, &MPM_EVENT_PMAT));          /* implicit: the assembled preconditioner matrix */
  PetscCall(PetscLogEventRegister("MPMForms", classid, &MPM_EVENT_FORMS));                /* nonsmooth: the forms B, k and the Delassus blocks */
  PetscCall(PetscLogEventRegister("MPMDCFPSolve", classid, &MPM_EVENT_DCFP));             /* nonsmooth: the friction solve (Gauss-Seidel or APGD) */
  PetscCall(PetscLogEventRegister("MPMNeighbours", classid, &MPM_EVENT_NEIGHBOURS));      /* pbd: prediction, halo set-up, the spatial hash */
  PetscCall(PetscLogEventRegister("MPMContacts", classid, &MPM_EVENT_CONTACTS));          /* pbd: the Jacobi sweeps (halo refreshes inside) */
  PetscFunctionReturn(PETSC_SUCCESS);
}
