/* The memory a run will need, estimated before anything large is
 * allocated, against what the node has free: a run that cannot fit is
 * refused with the numbers instead of failing deep inside PETSc (or being
 * killed by the kernel) later.  -memory_check false skips it. */
#include "core.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Large freed blocks go back to the system.  After PetscInitialize, glibc
 * serves even 36-54 MB requests from the heap (measured: mmap is off in
 * its malloc state then, M_MMAP_MAX 0; MPI_Init alone leaves it on), so
 * a freed particle array stays resident.  A restart on 2 ranks from a
 * 1-rank checkpoint grew one rank's particle arrays for 20,000 arrivals and
 * kept the old copies: 331 MB against 254 MB for a fresh start
 * (docs/performance.md, "Freed arrays back to the system").  glibc's default (mappings on, a
 * threshold that adapts up to 32 MB, so blocks freed and taken again every
 * step stay on the heap) returns them. */
void MPMMemoryReturnFreedBlocks(void)
{
#if defined(__GLIBC__)
  (void)mallopt(M_MMAP_MAX, 65536);
#endif
}

/* MemAvailable of /proc/meminfo [bytes]; 0 if unknown (not Linux). */
static double AvailableBytes(void)
{
  FILE  *f = fopen("/proc/meminfo", "r");
  char   line[256];
  double kb = 0;
  if (!f) return 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
  fclose(f);
  return 1024.0 * kb;
}

/* Estimate per rank: particles (an upper bound from the regions and
 * emitters) x their state x 1.5 (arrays grow by half), plus the sorting
 * scratch of the largest field (72 B) and the output arrays (~112 B), which
 * matches the measured peak of ~660 B per 3D particle (docs/performance.md); the ghosted grid nodes x (the global
 * and local vectors of a grid field of grid_dof values + ~16 B of PETSc's
 * index sets).  The busiest rank decides. */
PetscErrorCode MPMMemoryCheck(MPMSim sim, double bytes_per_particle, PetscInt grid_dof)
{
  const MPMLayout *l = &sim->layout;
  PetscBool        check = PETSC_TRUE;
  int              on_node;
  double           need[3], avail;

  PetscFunctionBeginUser;
  PetscOptionsBegin(sim->comm, NULL, "Memory", NULL);
  PetscCall(PetscOptionsBool("-memory_check", "Refuse a run whose estimated memory per rank exceeds what the node has free", NULL, check, &check, NULL));
  PetscOptionsEnd();
  if (!check || sim->help) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMRanksOnNode(sim->comm, &on_node));
  avail   = AvailableBytes() / on_node;
  need[1] = MPMSeedUpperBound(sim) * (1.5 * bytes_per_particle + 184);
  need[2] = (double)l->box.gn[0] * l->box.gn[1] * l->box.gn[2] * (2.0 * 8 * grid_dof + 16);
  need[0] = (need[1] + need[2]) / (avail > 0 ? avail : PETSC_MAX_REAL); /* the fraction of the rank's share */
  PetscCall(MPMGlobalMax(sim->comm, need, 3));
  PetscCall(PetscInfo(NULL, "Memory estimate: particles %g B, grid %g B on the busiest rank; %g B available per rank\n", need[1], need[2], avail));
  PetscCheck(need[0] <= 0.9, sim->comm, PETSC_ERR_USER_INPUT,
             "The run needs about %.3g GB on the busiest rank (particles %.3g GB, grid %.3g GB) but %.3g GB are free per rank (%d ranks on this node): use more ranks or nodes, a coarser -dx, or fewer particles per cell (-memory_check false to run anyway)",
             (need[1] + need[2]) / 1e9, need[1] / 1e9, need[2] / 1e9, avail / 1e9, on_node);
  PetscFunctionReturn(PETSC_SUCCESS);
}
