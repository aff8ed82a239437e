/* Private data structures of the solver (never installed).
 *
 * Ownership of the pieces:
 *   MPMGrid       grid.c       the PETSc DMDA, slab layout, grid update
 *   MPMParticles  particles.c  structure-of-arrays particle storage
 *   MPMMaterial   material*.c  registered constitutive models
 *   MPMCollider   collision.c  signed-distance collision objects and walls
 *   MPMRegion,
 *   MPMEmitter    seed.c       initial particles and inflow
 *   output.c                   HDF5 frames, XDMF, history, summary.json
 *   parallel.c                 every MPI call of the solver
 */
#ifndef MPM_IMPL_H
#define MPM_IMPL_H

#include <petscdmda.h>
#include <mpm/mpm.h>
#include <mpm/kernels.h>
#include <mpm/transfer.h>

#define MPM_NAME_LEN  64
#define MPM_MAX_NAMES 256 /* entries of one list option (-materials, -regions, ...) */

#define MPM_MAX_VECTOR 9 /* components of a vector option (a 3 x 3 matrix) */
PetscErrorCode MPMOptionsVector(PetscOptionItems *PetscOptionsObject, const char *prefix, const char *opt, const char *help, PetscInt need, double *val, PetscBool *set);
PetscErrorCode MPMOptionsGetNames(MPI_Comm comm, const char *title, const char *opt, const char *help, char **names, PetscInt *n);
PetscErrorCode MPMOptionsFreeNames(char **names, PetscInt n);

/* ---------------------------------------------------------------- events */
extern PetscLogEvent MPM_EVENT_P2G, MPM_EVENT_GRID_UPDATE, MPM_EVENT_G2P, MPM_EVENT_CONSTITUTIVE, MPM_EVENT_MIGRATE,
  MPM_EVENT_GHOST, MPM_EVENT_OUTPUT, MPM_EVENT_SORT, MPM_EVENT_SEED, MPM_EVENT_REDUCE, MPM_EVENT_CHECKPOINT, MPM_EVENT_CATALYST, MPM_EVENT_BALANCE;
PetscErrorCode MPMLogEventsRegister(void);

/* ------------------------------------------------------------- particles */
typedef enum { MPM_FIELD_REAL, MPM_FIELD_INT64, MPM_FIELD_INT32, MPM_FIELD_UINT8 } MPMFieldType;

/* One particle field: generic operations (growth, compaction, sorting,
 * migration packing, checkpoints) loop over this table, so adding a field
 * is one line in MPMParticlesCreate(). */
typedef struct {
  const char  *name;
  MPMFieldType type;
  int          ncomp;
  void       **data;
} MPMParticleField;

typedef struct {
  PetscInt dim;
  PetscInt n, cap;
  int64_t *id;    /* unique, never changes */
  double  *x;     /* position [m] (dim) */
  double  *v;     /* velocity [m/s] (dim) */
  double  *C;     /* APIC velocity gradient B D^-1 [1/s] (dim x dim) */
  double  *Fe;    /* elastic deformation gradient (dim x dim) */
  double  *tau;   /* Kirchhoff stress J sigma [Pa] (dim x dim) */
  double  *m;     /* mass [kg] (per unit depth in 2D) */
  double  *V0;    /* initial volume [m^3] */
  double  *Jp;    /* plastic volume ratio det F_P */
  double  *q;     /* hardening state (K29) */
  int32_t *mat;   /* material index */
  uint8_t *pcase; /* MPMPlasticCase of the last return mapping */
  MPMParticleField field[16];
  int              nfield;
  size_t           bytes; /* bytes of state per particle */
} MPMParticles;

PetscErrorCode MPMParticlesCreate(PetscInt dim, MPMParticles *p);
PetscErrorCode MPMParticlesDestroy(MPMParticles *p);
PetscErrorCode MPMParticlesReserve(MPMParticles *p, PetscInt cap);
PetscErrorCode MPMParticlesAppend(MPMParticles *p, PetscInt count, PetscInt *start);
PetscErrorCode MPMParticlesGrow(MPMParticles *p, PetscInt count, PetscInt *start);
PetscErrorCode MPMParticlesCompact(MPMParticles *p, const PetscBool *keep);
PetscErrorCode MPMParticlesPermute(MPMParticles *p, const PetscInt *perm);
void           MPMParticlesPack(const MPMParticles *p, PetscInt q, char *buf);
void           MPMParticlesUnpack(MPMParticles *p, PetscInt q, const char *buf);
MPMParticleView MPMParticlesView(MPMParticles *p);

/* ------------------------------------------------------------------ grid */
typedef struct {
  DM         da;
  Vec        global, local; /* dof per node: see mpm/transfer.h */
  PetscInt   dim, order, dof, pad;
  PetscInt   N[3];           /* nodes per axis, padding included */
  PetscInt   cells[3];       /* cells per axis inside the domain */
  double     h, lo[3], hi[3];/* cell size, physical domain [m] */
  PetscInt   slab_axis, nslab;
  PetscInt  *slab_start;     /* size+1 entries: first node of each rank's slab */
  PetscInt   own_lo, own_hi; /* this rank's nodes (and particle cells) along the slab axis */
  PetscInt   xs[3], xm[3];   /* owned node box */
  MPMGridBox box;            /* ghosted node box for the transfers */
} MPMGrid;

/* ------------------------------------------------------------- materials */
typedef struct _p_MPMMaterial *MPMMaterial;
/* Pointwise constitutive update: project F_E (plasticity), update q and Jp,
 * return the Kirchhoff stress tau and the plastic case. */
typedef MPMPlasticCase (*MPMMaterialUpdateFn)(const void *ctx, double *Fe, double *q, double *Jp, double *tau);
typedef double (*MPMMaterialEnergyFn)(const void *ctx, const double *Fe);
/* Optional: the same update on n consecutive particles (vectorized kernels). */
typedef void (*MPMMaterialUpdateBatchFn)(const void *ctx, int n, double *Fe, double *q, double *Jp, double *tau, uint8_t *pcase);

struct _p_MPMMaterial {
  char                name[MPM_NAME_LEN]; /* instance name = options prefix */
  char                type[MPM_NAME_LEN];
  PetscInt            dim;
  double              density;        /* [kg/m^3] */
  double              E, nu, mu, lambda;
  void               *ctx;            /* model parameters */
  MPMMaterialUpdateFn      update;
  MPMMaterialUpdateBatchFn update_n; /* NULL: update() per particle */
  MPMMaterialEnergyFn      energy;
};
typedef PetscErrorCode (*MPMMaterialCreateFn)(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialRegisterAll(void);
PetscErrorCode MPMMaterialRegister(const char *type, MPMMaterialCreateFn create);
PetscErrorCode MPMMaterialSetUp(MPI_Comm comm, PetscInt dim, const char *name, MPMMaterial *mat);
PetscErrorCode MPMMaterialDestroy(MPMMaterial *mat);
PetscErrorCode MPMMaterialElasticOptions(MPMMaterial m, PetscOptionItems *PetscOptionsObject);
double         MPMMaterialWaveSpeed(const MPMMaterial m);
PetscErrorCode MPMMaterialCreate_DruckerPrager(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_NeoHookean(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_Hencky(MPMMaterial, PetscOptionItems *);

/* ------------------------------------------------------ shapes & colliders */
/* A shape placed in the world: an MPMShape in its own frame plus the
 * frame's motion (centre c(t) = c0 + v t, rotation R(t) = exp(t [omega])). */
typedef struct {
  MPMShape shape;
  double   c0[3], vel[3], omega[3];
  double   c[3], R[9]; /* frame at the current time */
} MPMPlacedShape;

typedef struct {
  char           name[MPM_NAME_LEN];
  MPMPlacedShape ps;
  MPMBCMode      mode;
  double         friction; /* Coulomb coefficient */
} MPMCollider;

PetscErrorCode MPMShapeFromOptions(MPI_Comm comm, PetscInt dim, const char *prefix, const char *title, PetscBool allow_half_space,
                                   PetscBool allow_motion, MPMPlacedShape *ps);
void           MPMPlacedShapeAtTime(MPMPlacedShape *ps, PetscInt dim, double t);
double         MPMPlacedShapeEval(const MPMPlacedShape *ps, PetscInt dim, const double *x, double *grad, double *vb);
PetscErrorCode MPMCollidersSetUp(MPMSim sim);
void           MPMCollidersApply(const MPMSim sim, const double *x, double dt, double *v);

/* ----------------------------------------------------- seeding and inflow */
typedef enum { MPM_SAMPLING_LATTICE = 0, MPM_SAMPLING_JITTER } MPMSampling;

typedef struct {
  char           name[MPM_NAME_LEN];
  MPMPlacedShape ps;
  PetscInt       mat, ppc;
  double         density, vel[3], jitter;
  double         grad[9], wavevector[3]; /* affine and sine initial velocity */
  PetscBool      sine, clip;
  MPMSampling    sampling;
} MPMRegion;

typedef struct {
  char     name[MPM_NAME_LEN];
  PetscInt mat, ppc, source;
  double   center[3], dir[3], t1[3], t2[3], speed, radius, density, t_start, t_stop;
  int64_t  layers;        /* layers emitted so far (identical on every rank) */
  PetscInt per_layer;     /* lattice points in one layer */
  double  *layer_offsets; /* lateral offsets of the layer points (per_layer x dim) */
} MPMEmitter;

PetscErrorCode MPMRegionsSetUp(MPMSim sim);
PetscErrorCode MPMSeedRegions(MPMSim sim);
PetscErrorCode MPMEmittersSetUp(MPMSim sim);
PetscErrorCode MPMEmittersStep(MPMSim sim, double t_new, int64_t *emitted);

/* ---------------------------------------------------------------- the run */
typedef enum { MPM_TRANSFER_APIC = 0, MPM_TRANSFER_FLIP } MPMTransfer;

typedef struct {
  double   t;
  int64_t  n;
  PetscInt frame;
} MPMFrameRecord;

typedef struct {
  int64_t n;            /* particles */
  double  mass, mom[3]; /* total mass [kg], momentum [kg m/s] */
  double  ke, ee;       /* kinetic and elastic energy [J] */
  double  vmax;         /* largest particle speed [m/s] */
} MPMDiagnostics;

struct _p_MPMSim {
  MPI_Comm    comm;
  PetscMPIInt rank, size;
  PetscInt    dim;
  MPMGrid     grid;
  MPMParticles p;

  MPMMaterial *mat;
  PetscInt     nmat;
  MPMCollider *obj; /* the domain walls first, then the deck's objects */
  PetscInt     nobj, nwalls;
  MPMRegion   *reg;
  PetscInt     nreg;
  MPMEmitter  *em;
  PetscInt     nem;

  double      gravity[3], gravity_ramp;
  MPMTransfer transfer;
  double      flip; /* FLIP fraction of the PIC/FLIP blend; < 0 selects APIC */
  double      cfl, cfl_elastic, dt_max, dt_fixed, wave_speed;
  double      t, t_end, dt, dt_lo, dt_hi, output_dt, t_next_output, t_last_frame;
  PetscInt    step, max_steps, frame, sort_interval, history_interval;
  PetscBool   delete_outside, help;
  uint64_t    seed;
  int64_t     n_global, n_deleted, n_emitted;
  char        outdir[PETSC_MAX_PATH_LEN];
  PetscLogDouble wall_start, wall_steps;
  double      particle_steps; /* sum over steps of the global particle count */
  char       *options_string; /* the full options database, for provenance */
  FILE       *history;
  MPMFrameRecord *frames;    /* frames written so far (rank 0), for the XDMF series */
  PetscInt        nframes, capframes;
  PetscInt        ckpt_interval, ckpt_keep, ckpt_count; /* checkpoint.c */
  double          ckpt_wall, ckpt_seconds;
  PetscLogDouble  ckpt_last_wall;
  double          wall_before; /* wall seconds of earlier jobs of a restarted run */
  char            restart[PETSC_MAX_PATH_LEN];
  int64_t         step_flags; /* MPM_FLAG_* of the last step's reduction */
  double          imbalance;  /* max/mean work per rank after the last step (balance.c) */
  double          balance_threshold, balance_node_cost; /* balance.c */
  PetscInt        balance_next, balance_wait, rebalances;
  int             exit_code;  /* 0, or MPM_EXIT_CHECKPOINTED */
  PetscBool       catalyst_on;        /* in-situ visualization (catalyst.c) */
  PetscInt        catalyst_interval;
  void           *catalyst;           /* the adaptor's state */
};

PetscErrorCode MPMStep(MPMSim sim);
double         MPMStableDt(const MPMSim sim, double vmax);
PetscErrorCode MPMComputeDiagnostics(MPMSim sim, MPMDiagnostics *d);
PetscErrorCode MPMSortParticles(MPMSim sim);

/* grid.c */
PetscErrorCode MPMGridSetUp(MPMSim sim);
PetscErrorCode MPMGridSetSlabs(MPMSim sim, const PetscInt *start);
PetscErrorCode MPMGridDestroy(MPMGrid *g);
PetscErrorCode MPMGridUpdate(MPMSim sim, double dt);
PetscInt       MPMGridSlabOwner(const MPMGrid *g, PetscInt cell);
PetscInt       MPMGridParticleCell(const MPMGrid *g, const double *x);

/* output.c */
PetscErrorCode MPMOutputSetUp(MPMSim sim, PetscBool restarted);
PetscErrorCode MPMOutputMakeDir(MPMSim sim, const char *dir);
PetscErrorCode MPMOutputRecordFrame(MPMSim sim, double t, int64_t n, PetscInt frame);
PetscErrorCode MPMRank0Outcome(MPMSim sim, PetscErrorCode ierr, const char *what);
PetscErrorCode MPMOutputFrame(MPMSim sim);
PetscErrorCode MPMOutputHistory(MPMSim sim, const MPMDiagnostics *d);
PetscErrorCode MPMOutputSummary(MPMSim sim);
PetscErrorCode MPMOutputFinalize(MPMSim sim);
void           MPMDerivedFields(const MPMSim sim, double *vol, double *pres, double *sdev);

/* balance.c */
PetscErrorCode MPMBalanceSetUp(MPMSim sim);
PetscErrorCode MPMBalanceAfterStep(MPMSim sim);

/* checkpoint.c */
PetscErrorCode MPMCheckpointSetUp(MPMSim sim);
PetscErrorCode MPMCheckpointInstallSignals(MPMSim sim);
int64_t        MPMCheckpointLocalFlags(const MPMSim sim);
PetscErrorCode MPMCheckpointWrite(MPMSim sim);
PetscErrorCode MPMCheckpointAfterStep(MPMSim sim, PetscBool *stop);
PetscErrorCode MPMCheckpointRestart(MPMSim sim, PetscBool *restarted);

/* catalyst.c */
PetscErrorCode MPMCatalystSetUp(MPMSim sim);
PetscErrorCode MPMCatalystCoProcess(MPMSim sim);
PetscErrorCode MPMCatalystFinalize(MPMSim sim);

/* parallel.c: the only file that calls MPI */
#define MPM_FLAG_SIGNAL       1  /* SIGTERM/SIGUSR1 seen: checkpoint and stop */
#define MPM_FLAG_WALL         2  /* -checkpoint_wall elapsed */
#define MPM_EXIT_CHECKPOINTED 75 /* exit code after a signal: continue with -restart latest (EX_TEMPFAIL) */

typedef struct {
  double  dt;       /* MIN: the stable time step */
  int64_t n;        /* SUM: particles */
  int64_t outside;  /* SUM: particles found outside the domain */
  int64_t bad_id;   /* MIN: id of an outside particle (INT64_MAX if none) */
  double  bad_x[3]; /* its position */
  int64_t flags;    /* OR: MPM_FLAG_* requests of any rank */
  double  wmax;     /* MAX: work of the busiest rank (MPMBalanceRankWork) */
} MPMStepReduction;

PetscErrorCode MPMParallelSetUp(MPMSim sim);
PetscErrorCode MPMParallelFinalize(void);
PetscErrorCode MPMGhostScatterAdd(MPMGrid *g);
PetscErrorCode MPMGhostGather(MPMGrid *g);
PetscErrorCode MPMMigrate(MPMSim sim, MPMStepReduction *red);
PetscErrorCode MPMGlobalStepReduce(MPI_Comm comm, MPMStepReduction *red);
double         MPMBalanceRankWork(const MPMSim sim);                                  /* balance.c */
double         MPMBalanceImbalance(const MPMSim sim, const MPMStepReduction *red); /* balance.c */
PetscErrorCode MPMGlobalSum(MPI_Comm comm, double *buf, PetscInt n);
PetscErrorCode MPMGlobalMax(MPI_Comm comm, double *buf, PetscInt n);
PetscErrorCode MPMGlobalSumInt64(MPI_Comm comm, int64_t *buf, PetscInt n);
PetscErrorCode MPMGlobalOffset(MPI_Comm comm, int64_t local, int64_t *offset, int64_t *total);
PetscErrorCode MPMAllGatherInt64(MPI_Comm comm, int64_t value, int64_t *all);
PetscErrorCode MPMBarrier(MPI_Comm comm);
PetscErrorCode MPMBroadcastInt(MPI_Comm comm, int *value);
PetscErrorCode MPMBroadcastString(MPI_Comm comm, char *buf, size_t len);

#endif
