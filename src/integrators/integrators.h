/* Private header of src/integrators/: time integrators behind one
 * interface, registered by name and chosen with -integrator NAME (default
 * explicit), like KSPSetType.  An integrator declares the particle and grid
 * fields it needs, owns its solvers (with its own options prefix, e.g.
 * -implicit_ksp_type), advances the particles of every species by one step
 * and reports its per-step statistics.
 *
 * Adding one is one file that fills the ops table in its create function
 * plus one MPMIntegratorRegister() line in MPMIntegratorRegisterAll()
 * (integrator.c). */
#ifndef MPM_INTEGRATORS_H
#define MPM_INTEGRATORS_H

#include "core/core.h"
#include "materials/materials.h"
#include "colliders/colliders.h"

#define MPM_MAX_STATS 8

/* Per-step statistics (solver iterations, residuals): the last step's
 * value in a history.csv column each, the run's total (or worst) in
 * summary.json as "integrator_<name>".  Totals that must survive a restart
 * go into the integrator's checkpoint state. */
typedef struct {
  PetscInt n;
  char     name[MPM_MAX_STATS][32];
  char     unit[MPM_MAX_STATS][8]; /* SI unit of the column ("": a count or a ratio) */
  double   value[MPM_MAX_STATS];
  double   total[MPM_MAX_STATS];
} MPMStepStats;

/* The run totals of s as an integrator's checkpoint state (ops.get_state,
 * ops.set_state of integrators whose only state they are): s->n values;
 * a checkpoint with another count is refused, naming the integrator. */
PetscInt       MPMStepStatsGetTotals(const MPMStepStats *s, double *state);
PetscErrorCode MPMStepStatsSetTotals(MPMStepStats *s, const char *type, PetscInt n, const double *state);

#define MPM_MAX_INTEGRATOR_STATE 64

typedef struct {
  /* Read the integrator's options (prefix integ->prefix). Before the species exist. */
  PetscErrorCode (*options)(MPMIntegrator integ, MPMSim sim);
  /* Check them, after the run's own options are checked (optional). */
  PetscErrorCode (*check)(MPMIntegrator integ, MPMSim sim);
  /* After materials, colliders, regions and emitters: declare particle and
   * grid fields, create solvers, refuse what it cannot do. */
  PetscErrorCode (*setup)(MPMIntegrator integ, MPMSim sim);
  /* Largest stable step for the next step, given the fastest particle [s];
   * *why: the limit that set it (starts at MPM_DT_MAX). */
  double (*stable_dt)(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why);
  /* Advance every species from t to t + dt; *vmax: fastest particle after.
   * An integrator whose solver failed leaves every particle and object as
   * it was and sets integ->rejected: the driver retries with dt / 2 (the
   * integrator decides when to give up, with an error). */
  PetscErrorCode (*step)(MPMIntegrator integ, MPMSim sim, double dt, double *vmax);
  /* After the step's migration, before its reduction (optional): particle
   * work that needs all particles of a grid cell on one rank (merging
   * particles).  Adds the particles it split during the step and merged
   * here to red->split and red->merged and keeps red->n (this rank's
   * count) true. */
  PetscErrorCode (*after_migrate)(MPMIntegrator integ, MPMSim sim, MPMStepReduction *red);
  /* Statistics of the last step (optional). */
  PetscErrorCode (*stats)(MPMIntegrator integ, MPMStepStats *s);
  /* Scalars to checkpoint (warm starts, counters) and to restore (optional):
   * the same values on every rank (they are written collectively once). */
  PetscErrorCode (*get_state)(MPMIntegrator integ, PetscInt *n, double *state);
  PetscErrorCode (*set_state)(MPMIntegrator integ, PetscInt n, const double *state);
  /* One line for the start-up banner ("APIC"). */
  PetscErrorCode (*view)(MPMIntegrator integ, char *buf, size_t len);
  PetscErrorCode (*destroy)(MPMIntegrator integ);
} MPMIntegratorOps;

struct _p_MPMIntegrator {
  char             type[MPM_NAME_LEN];
  char             prefix[MPM_NAME_LEN + 1]; /* "<type>_" for its solvers' options */
  MPMIntegratorOps ops;
  void            *data;
  PetscBool        rejected; /* the last call of ops.step did not advance (solver failure) */
  PetscBool        phases;   /* set by the create function: two species, solid ("sand") and fluid ("water") */
};

/* APIC (Jiang et al. 2015, Klar et al.), PIC/FLIP, and affine FLIP: the
 * FLIP blend of the velocity with APIC's affine C kept and transferred
 * (Fei et al. 2021, "Revisiting integration in the material point method"). */
typedef enum { MPM_TRANSFER_APIC = 0, MPM_TRANSFER_FLIP, MPM_TRANSFER_AFLIP } MPMTransfer;
extern const char *const MPMTransferNames[];

/* Particle fields of the stress state every integrator here keeps per
 * species (common.c): C, tau and the materials' shared state. */
typedef struct {
  PetscInt          f_C, f_tau, f_Fe, f_Jp;
  MPMMaterialFields mf; /* the materials' state, for their commit */
} MPMStressFields;
PetscErrorCode MPMIntegratorStressFields(MPMSpecies *sp, MPMStressFields *f);
PetscErrorCode MPMIntegratorCommit(MPMSpecies *sp, const MPMStressFields *f);
double         MPMIntegratorStiffening(MPMSpecies *sp, const MPMStressFields *f);
double         MPMIntegratorWaveSpeed(const MPMSim sim);
double         MPMIntegratorExplicitDt(const MPMSim sim, const MPMStressFields *fields, double wave_speed, double cfl_elastic, double vmax, MPMDtLimit *why);
double         MPMIntegratorFixedDt(const MPMSim sim, MPMDtLimit *why);
MPMParticleView MPMIntegratorView(MPMSpecies *sp, const MPMStressFields *f, PetscBool affine);
PetscErrorCode  MPMIntegratorP2G(MPMSpecies *sp, const MPMParticleView *v, double dt);
PetscErrorCode  MPMIntegratorG2P(MPMSpecies *sp, MPMParticleView *v, double dt, double flip, double rest, double *vmax);

/* The static-friction fix both integrators apply in G2P (-held_pic,
 * -held_pic_rest; docs/validation.md, "Static friction"). */
typedef struct {
  PetscBool on;   /* particles at rest that reach a node held by friction drop C */
  double    rest; /* "at rest": moving at most this many cells per step */
} MPMHeldPIC;
PetscErrorCode MPMHeldPICOptions(PetscOptionItems *PetscOptionsObject, MPMHeldPIC *h);
PetscErrorCode MPMHeldPICCheck(MPMSim sim, const MPMHeldPIC *h);

/* The step control of the implicit integrators: a failed solve halves dt,
 * at most max_halvings times in a row and not below dt_ref / 2^max_halvings
 * (dt_ref: the step before the first halving of a run of capped steps);
 * after a halving the step grows back from the one that worked, x2 per
 * step.  dt_cap and dt_ref go into the checkpoint (restarts bit for bit). */
typedef struct {
  PetscInt max_halvings, halvings;
  double   dt_cap, dt_ref;
} MPMStepControl;
void      MPMStepControlInit(MPMStepControl *sc, PetscInt max_halvings);
PetscBool MPMStepControlFail(MPMStepControl *sc, double dt);   /* a failed step of size dt: PETSC_FALSE when no halving is left */
PetscInt  MPMStepControlAccept(MPMStepControl *sc, double dt); /* a step that worked: returns the halvings it took */
double    MPMStepControlDt(const MPMStepControl *sc, double dt, MPMDtLimit *why); /* dt capped (*why MPM_DT_SOLVER if the cap won) */
void      MPMStepControlGetState(const MPMStepControl *sc, double *state); /* 2 values */
void      MPMStepControlSetState(MPMStepControl *sc, const double *state, PetscBool has_ref);

/* Mark a solver's viewer options (-<prefix>ksp_converged_reason, ...), read
 * when its solve ends, as known to the run's check for unused options. */
PetscErrorCode MPMIntegratorMarkLazyOptions(const char *prefix);
/* -<prefix>check_operator: the operator's symmetry and smallest Rayleigh
 * quotient on random vectors (and P against it, P not NULL), printed. */
PetscErrorCode MPMIntegratorCheckOperator(MPI_Comm comm, Mat A, Mat P);
/* An assembled preconditioner matrix on grid field f's layout. */
PetscErrorCode MPMIntegratorPmatCreate(MPI_Comm comm, const MPMGridField *f, PetscInt nl, PetscInt bs, MatType type, Mat *A);

typedef PetscErrorCode (*MPMIntegratorCreateFn)(MPMIntegrator);
PetscErrorCode MPMIntegratorRegisterAll(void);
PetscErrorCode MPMIntegratorRegister(const char *type, MPMIntegratorCreateFn create);
PetscErrorCode MPMIntegratorCreate(MPMSim sim);
PetscErrorCode MPMIntegratorDestroy(MPMIntegrator *integ);
PetscErrorCode MPMIntegratorStats(MPMIntegrator integ, MPMStepStats *s);

PetscErrorCode MPMIntegratorCreate_Explicit(MPMIntegrator);
PetscErrorCode MPMIntegratorCreate_Implicit(MPMIntegrator);
PetscErrorCode MPMIntegratorCreate_SemiImplicit(MPMIntegrator);
PetscErrorCode MPMIntegratorCreate_Mixture(MPMIntegrator);
PetscErrorCode MPMIntegratorCreate_Nonsmooth(MPMIntegrator);
PetscErrorCode MPMIntegratorCreate_PBD(MPMIntegrator);

#endif
