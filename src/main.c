/* granular-mpm: the driver.  Everything is in the library; see
 * docs/user-guide.md for the options (or run with -help). */
#include <mpm/mpm.h>

static const char help[] = "granular-mpm: distributed explicit material point method for granular flows.\n"
                           "Usage: mpiexec -n N granular-mpm -options_file_yaml inputs/<deck>.yaml [-option value ...]\n"
                           "Every option below can be set in the deck and overridden on the command line.\n\n";

int main(int argc, char **argv)
{
  MPMSim sim;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(MPMCreate(PETSC_COMM_WORLD, &sim));
  PetscCall(MPMSetFromOptions(sim));
  PetscCall(MPMRun(sim));
  PetscCall(MPMDestroy(&sim));
  PetscCall(PetscFinalize());
  return 0;
}
