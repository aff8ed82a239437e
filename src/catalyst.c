/* In-situ visualization with ParaView Catalyst (legacy API, ParaView 5.11).
 *
 * Options: -catalyst_script FILE[,FILE...] (Python pipelines) and
 * -catalyst_interval N (steps between co-processing calls).  The adaptor
 * itself is C++ (catalyst_adaptor.cxx) and only built when CMake finds
 * ParaView (MPM_HAVE_CATALYST); without it, asking for a script is an
 * error, never a silent no-op. */
#include "mpm_impl.h"

PetscErrorCode MPMCatalystSetUp(MPMSim sim)
{
  char    *scripts[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "In-situ visualization (ParaView Catalyst)", "-catalyst_script", "Catalyst Python pipeline script(s)", scripts, &n));
  sim->catalyst_interval = 10;
  PetscOptionsBegin(sim->comm, NULL, "In-situ visualization (ParaView Catalyst)", NULL);
  PetscCall(PetscOptionsInt("-catalyst_interval", "Steps between Catalyst co-processing calls", NULL, sim->catalyst_interval, &sim->catalyst_interval, NULL));
  PetscOptionsEnd();
  PetscCheck(sim->catalyst_interval > 0, sim->comm, PETSC_ERR_USER_INPUT, "-catalyst_interval must be > 0, got %" PetscInt_FMT, sim->catalyst_interval);
  PetscCheck(n == 0, sim->comm, PETSC_ERR_USER_INPUT,
             "-catalyst_script was given but this build has no ParaView Catalyst (configure with ParaView installed: Debian packages paraview-dev python3-paraview)");
  sim->catalyst_on = PETSC_FALSE;
  PetscCall(MPMOptionsFreeNames(scripts, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCatalystCoProcess(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCatalystFinalize(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscFunctionReturn(PETSC_SUCCESS);
}
