/* The memory a run will need, estimated before anything large is
 * allocated, against what the node has free: a run that cannot fit is
 * refused with the numbers instead of failing deep inside PETSc (or being
 * killed by the kernel) later.  -memory_check false skips it. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE and posix_memalign under -std=c11 */
#include "core.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
  #include <sys/mman.h>
#endif
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

/* ------------------------------------------------ large arrays, huge pages */
/* PETSc's allocations go through these three when the program installed
 * them (MPMMemoryUseHugePages, before PetscInitialize).  An array of 4 MB or
 * more (the particle fields, the grid vectors, the semi-implicit maps) is
 * aligned to 2 MB and advised to the kernel as huge-page memory
 * (MADV_HUGEPAGE): the particle passes stream through a dozen such arrays,
 * and with 4 kB pages they miss the TLB every few particles.  Measured on a
 * virtual machine whose transparent huge pages are "madvise" (the kernel's
 * default, and many clusters'): the 1M-particle benchmark's P2G took 50-220
 * ms a step with 4 kB pages, varying run to run, and 55-57 ms with these
 * (docs/performance.md, "Huge pages").  Where huge pages are "always" or
 * "never", the advice changes nothing.  Smaller blocks go to the C library
 * as before (16-byte aligned, PETSC_MEMALIGN). */
#define MPM_HUGE_PAGE   ((size_t)2 << 20)
#define MPM_HUGE_ADVISE ((size_t)4 << 20)

static PetscBool huge_pages = PETSC_TRUE, memory_check = PETSC_TRUE; /* -huge_pages, -memory_check */

/* A block that goes on huge pages. */
static PetscBool Huge(size_t bytes) { return huge_pages && bytes >= MPM_HUGE_ADVISE; }

static void AdviseHuge(void *p, size_t bytes)
{
#if defined(MADV_HUGEPAGE)
  const uintptr_t lo = ((uintptr_t)p + MPM_HUGE_PAGE - 1) & ~(uintptr_t)(MPM_HUGE_PAGE - 1), hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(MPM_HUGE_PAGE - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice only: a refusal leaves 4 kB pages */
#endif
}

static PetscErrorCode HugeMalloc(size_t bytes, PetscBool clear, int line, const char func[], const char file[], void **result)
{
  PetscFunctionBegin;
  *result = NULL;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  if (Huge(bytes)) {
    if (posix_memalign(result, MPM_HUGE_PAGE, bytes)) *result = NULL;
    if (*result) AdviseHuge(*result, bytes); /* before the first touch, so the pages fault in huge */
    if (*result && clear) memset(*result, 0, bytes);
  } else *result = clear ? calloc(bytes, 1) : malloc(bytes);
  PetscCheck(*result, PETSC_COMM_SELF, PETSC_ERR_MEM, "Out of memory: %zu bytes requested at %s:%d (%s)", bytes, file, line, func);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode HugeFree(void *p, int line, const char func[], const char file[])
{
  free(p);
  return PETSC_SUCCESS;
}

/* realloc keeps the old block's advice when glibc grows it in place or
 * remaps it; a block it moves is advised again. */
static PetscErrorCode HugeRealloc(size_t bytes, int line, const char func[], const char file[], void **result)
{
  void *p;

  PetscFunctionBegin;
  if (!bytes) {
    free(*result);
    *result = NULL;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  p = realloc(*result, bytes);
  PetscCheck(p, PETSC_COMM_SELF, PETSC_ERR_MEM, "Out of memory: %zu bytes requested at %s:%d (%s)", bytes, file, line, func);
  if (Huge(bytes)) AdviseHuge(p, bytes);
  *result = p;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's own tracing allocator (-malloc_debug, -malloc_dump, -malloc_view,
 * ...) cannot be stacked on another: a run that asks for it on the command
 * line or in PETSC_OPTIONS keeps PETSc's. */
PetscErrorCode MPMMemoryUseHugePages(int argc, char **argv)
{
  const char *env = getenv("PETSC_OPTIONS");
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], "-malloc", 7)) return PETSC_SUCCESS;
  if (env && strstr(env, "-malloc")) return PETSC_SUCCESS;
  return PetscMallocSet(HugeMalloc, HugeFree, HugeRealloc);
}

/* -huge_pages false: every block from the C library, 4 kB pages (unless the
 * kernel's huge pages are "always").  Read when the run is created, before
 * anything large is allocated (with -memory_check, used by MPMMemoryCheck:
 * one block, as PETSc's -help lists a title once). */
PetscErrorCode MPMMemorySetFromOptions(MPI_Comm comm)
{
  PetscFunctionBeginUser;
  PetscOptionsBegin(comm, NULL, "Memory", NULL);
  PetscCall(PetscOptionsBool("-memory_check", "Refuse a run whose estimated memory per rank exceeds what the node has free", NULL, memory_check, &memory_check, NULL));
  PetscCall(PetscOptionsBool("-huge_pages", "Put arrays of 4 MB or more on transparent huge pages (madvise; false: 4 kB pages unless the kernel uses huge pages always)", NULL, huge_pages, &huge_pages, NULL));
  PetscOptionsEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
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
  int              on_node;
  double           need[3], avail;

  PetscFunctionBeginUser;
  if (!memory_check || sim->help) PetscFunctionReturn(PETSC_SUCCESS);
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
