/* A program built against an installed granular-mpm (tests/test_install.py):
 * the library's whole public API, a run from a deck, and one kernel. */
#include <mpm/mpm.h>
#include <mpm/kernels.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  MPMSim       sim;
  const double A[4] = {2, 1, 1, 3};

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "consumer linked against granular-mpm %s; det = %g\n", MPMVersion(), mpm_det(2, A)));
  PetscCall(MPMCreate(PETSC_COMM_WORLD, &sim));
  PetscCall(MPMSetFromOptions(sim));
  PetscCall(MPMRun(sim));
  PetscCall(MPMDestroy(&sim));
  PetscCall(PetscFinalize());
  return 0;
}
