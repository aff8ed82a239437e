/* Public API of the granular MPM solver.
 *
 * A run is: MPMCreate -> MPMSetFromOptions (reads the deck from the PETSc
 * options database, checks every value) -> MPMRun -> MPMDestroy.
 * See docs/architecture.md for the main loop and docs/user-guide.md for
 * the options. */
#ifndef MPM_H
#define MPM_H

#include <petscsys.h>

/* PETSc 3.18 (Debian 12) predates PETSC_SUCCESS; later versions define it. */
#if !PETSC_VERSION_GE(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct _p_MPMSim *MPMSim;

PetscErrorCode MPMInitializePackage(void);
/* Before PetscInitialize: PETSc's arrays of 4 MB or more on transparent
 * huge pages (-huge_pages, docs/performance.md). */
PetscErrorCode MPMMemoryUseHugePages(int argc, char **argv);
PetscErrorCode MPMCreate(MPI_Comm comm, MPMSim *sim);
PetscErrorCode MPMSetFromOptions(MPMSim sim);
PetscErrorCode MPMRun(MPMSim sim);
PetscErrorCode MPMDestroy(MPMSim *sim);
const char *MPMVersion(void);
PetscBool   MPMHaveCatalyst(void); /* built with ParaView Catalyst (-catalyst_script) */
/* Where relative file names of the deck (terrain files) are looked up when
 * they are not found from the working directory: the deck's directory. */
PetscErrorCode MPMSetDeckDirectory(const char *dir);
/* 0 after a finished run; 75 (EX_TEMPFAIL) when a signal made the run write
 * a checkpoint and stop: continue it with -restart latest. */
int MPMExitCode(MPMSim sim);

#endif
