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
  /* A two-way coupled rigid body (-<name>_dynamic, bodies.c): ps.c, ps.R,
   * ps.vel and ps.omega are its state, not a prescribed motion. */
  PetscBool dynamic;
  double    mass, Ib[9], Ibinv[9]; /* [kg], the inertia tensor in the body frame [kg m^2] and its inverse (per unit depth in 2D: [0] about z) */
  double    torque[3];            /* applied torque [N m] (2D: [2]) */
  double    vfree[3], wfree[3];   /* this step's velocities before the grains act */
  double    csave[3], Rsave[9];   /* the frame at a position-based substep's start (MPMCollidersBodiesAhead) */
  /* An object with a triangle mesh that stands still, in a run without
   * dynamic bodies on more than one rank, holds only the part of its
   * meshes around this rank's slab (resampled when
   * the slab moves: MPMCollidersFitSlab); its picture is traced by every
   * rank on its slab once and kept on rank 0 (io/surfaces.c). */
  PetscBool sliced, traced;
  double   *trace;
  PetscInt  ntrace;
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
  /* Run totals of the reports, the same on every rank (checkpointed), per
   * object MPM_COLLIDER_TOTALS values: impulse (3) and angular impulse (3)
   * since the start [N s, N m s], the largest |force| of a report [N] and
   * its time [s]: what a barrier must take. */
  double      *total;
  PetscInt     ndynamic;
  PetscBool    placed; /* the first MPMCollidersFitSlab has run (and warned of misplaced objects) */
  double      *trial; /* per object, this rank's owned nodes, during a solve: impulse (6), contact mass, contact m r^2 */
  double      *mark;  /* impulse before the step's final collision, then the collision's own */
};

PetscErrorCode MPMCollidersCreate(MPMSim sim);
PetscErrorCode MPMCollidersDestroy(MPMColliders *c);
PetscErrorCode MPMCollidersFitSlab(MPMSim sim);
double         MPMCollidersTraceLattice(const MPMSim sim, const MPMCollider *o, double *lo, double *hi);
void           MPMCollidersSlabInterval(const MPMSim sim, PetscInt rank, double *lo, double *hi);
void           MPMCollidersAtTime(MPMColliders c, double t);
MPMContact     MPMCollidersApply(MPMColliders c, PetscInt species, const double *x, double m, double dt, double *v);
MPMContact     MPMCollidersVelocity(MPMColliders c, PetscInt species, const double *geo, const double *x, double m, double dt, PetscBool owned, double *v);
PetscBool      MPMCollidersNear(MPMColliders c, PetscInt species, const double *x, double reach);
PetscBool      MPMCollidersNearBody(MPMColliders c, PetscInt species, const double *x, double reach);
PetscInt       MPMCollidersNearCount(MPMColliders c, PetscInt species, const double *x, double reach);
/* A solve that collides the same nodes many times (the nonsmooth
 * Gauss-Seidel and APGD) keeps each node's geometry for MPMCollidersVelocity: per
 * object that stands still, its distance, normal and velocity at x. */
PetscInt       MPMCollidersGeometrySize(MPMColliders c);
void           MPMCollidersGeometry(MPMColliders c, PetscInt species, const double *x, double *geo);
void           MPMCollidersProject(MPMColliders c, PetscInt species, const double *x, double dt, double *v, double *Pi);
void           MPMCollidersAdvance(MPMColliders c, double dt);
/* Grains of -integrator pbd: the objects near a grain (the contact's
 * geometry and friction coefficient; src/kernels/pbd.c solves it), and
 * the impulse booked on one */
typedef struct {
  PetscInt o;       /* the object */
  double   phi;     /* signed distance of the grain's centre */
  double   n[3];    /* the object's outward normal there */
  double   disp[3]; /* the grain's displacement since the substep began, relative to the object */
  double   mu;      /* its friction coefficient (0: slip, unbounded: sticky) */
} MPMGrainContact;
PetscInt       MPMCollidersGrainContacts(MPMColliders c, PetscInt species, const double *x0, const double *x, double reach, double dt, MPMGrainContact *gc);
void           MPMCollidersBookGrain(MPMColliders c, PetscInt o, const double *x, double m, const double *dv);
void           MPMCollidersBookImpulse(MPMColliders c, PetscInt o, const double *x, const double *J);
void           MPMCollidersImpulseRecombine(MPMColliders c, const double *snap, double omega, double *prev);
const double  *MPMCollidersImpulses(MPMColliders c);
double         MPMCollidersFreeFraction(MPMColliders c, PetscInt species, const double *x, double h);
PetscBool      MPMColliderReported(const MPMCollider *o);
double         MPMColliderFriction(const MPMCollider *o);
PetscInt       MPMCollidersSolidAt(MPMColliders c, PetscInt species, const double *x);
/* bodies.c: two-way coupled rigid bodies */
PetscErrorCode MPMBodyOptions(MPMSim sim, MPMCollider *o, const char *prefix, PetscOptionItems *PetscOptionsObject);
void           MPMCollidersBodiesPredict(MPMColliders c, const double *g, double dt);
PetscErrorCode MPMCollidersBodiesRelax(MPMColliders c, MPI_Comm comm);
void           MPMCollidersBodiesMark(MPMColliders c);
PetscErrorCode MPMCollidersBodiesSettle(MPMColliders c, MPI_Comm comm);
PetscErrorCode MPMCollidersBodiesWalls(MPMColliders c, PetscBool book, double dt);
double         MPMCollidersBodiesSpeed(MPMColliders c);
void           MPMCollidersBodiesBookGrain(MPMColliders c, PetscInt k, const double *x, double m, const double *dv, int64_t *acc);
PetscErrorCode MPMCollidersBodiesSettleExact(MPMColliders c, MPI_Comm comm, const int64_t *acc, int64_t *sum);
void           MPMCollidersBodiesAhead(MPMColliders c, double dt);
void           MPMCollidersBodiesCommit(MPMColliders c, double dt);
void           MPMCollidersElapse(MPMColliders c, double dt);
#define MPM_COLLIDER_TOTALS 10 /* ..., [8]: work done on the material by the object [J] (-(J.v + L.omega), exact for prescribed rigid motion), [9]: the longest report interval [s] */
PetscErrorCode MPMCollidersReport(MPMColliders c, MPI_Comm comm, double t, double *ft);

#endif
