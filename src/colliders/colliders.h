/* Private header of src/colliders/: collision objects (Klar et al. 2016,
 * section 8) applied to grid-node velocities, and the reaction force and
 * torque the grid exerts on each of them (the hook for two-way rigid
 * bodies; the load on a barrier for engineering studies). */
#ifndef MPM_COLLIDERS_H
#define MPM_COLLIDERS_H

#include "core/core.h"

typedef struct {
  char           name[MPM_NAME_LEN];
  MPMPlacedShape ps;
  MPMBCMode      mode;
  double         friction; /* Coulomb coefficient */
  PetscInt       species;  /* the species it acts on (index into sim->species), -1: every species */
} MPMCollider;

struct _p_MPMColliders {
  PetscInt     dim;
  PetscInt     nobj, nwalls; /* the domain faces first, then the deck's -objects */
  MPMCollider *obj;
  double       tol;          /* nodes within tol of a surface touch it [m] */
  /* What the grid gave each object since the last report, on this rank:
   * impulse [N s] (3) and angular impulse about the object's centre
   * [N m s] (3), and the time they span [s]. */
  double      *impulse;
  double       elapsed;
  double      *last; /* the last report (repeated for a second row at the same step) */
};

PetscErrorCode MPMCollidersCreate(MPMSim sim);
PetscErrorCode MPMCollidersDestroy(MPMColliders *c);
void           MPMCollidersAtTime(MPMColliders c, double t);
MPMContact     MPMCollidersApply(MPMColliders c, PetscInt species, const double *x, double m, double dt, double *v);
void           MPMCollidersProject(MPMColliders c, PetscInt species, const double *x, double dt, double *v, double *Pi);
void           MPMCollidersAdvance(MPMColliders c, double dt);
double         MPMCollidersFreeFraction(MPMColliders c, PetscInt species, const double *x, double h);
PetscBool      MPMColliderReported(const MPMCollider *o);
PetscErrorCode MPMCollidersReport(MPMColliders c, MPI_Comm comm, double *ft);

#endif
