/* Private header of src/core/: the run, its layout, grid fields, particle
 * species and their field registry, seeding, load balancing and the only
 * file that calls MPI (parallel.c).  Never installed.
 *
 * Layers (docs/architecture.md): kernels -> core -> materials, colliders
 * -> integrators -> io -> driver.  Core includes only the kernels' headers;
 * it holds handles of the layers above (materials, colliders, integrator)
 * but never looks inside them.
 *
 *   options.c     deck helpers (vectors, name lists), the run's own options
 *   log_events.c  every PetscLogEvent
 *   version.c     MPMVersion()
 *   layout.c      the slab layout of the background grid
 *   gridfield.c   grid fields: a DMDA of any dof on the layout
 *   particles.c   particle storage and its field registry, sorting
 *   species.c     particle species (particles + materials + grid field)
 *   shape.c       shapes placed in the world (regions and colliders)
 *   seed.c        regions and emitters
 *   balance.c     dynamic load balancing of the slabs
 *   memory.c      the memory check before a run, large arrays on huge pages
 *   parallel.c    every MPI call: ghost exchange, migration, reductions */
#ifndef MPM_CORE_H
#define MPM_CORE_H

#include <petscdmda.h>
#include <mpm/mpm.h>
#include <mpm/kernels.h>
#include <mpm/transfer.h>

#define MPM_NAME_LEN   64
#define MPM_MAX_NAMES  256 /* entries of one list option (-materials, -regions, ...) */
#define MPM_MAX_VECTOR 9   /* components of a vector option (a 3 x 3 matrix) */

/* Handles of the layers above core: held here, defined and used there. */
typedef struct _p_MPMMaterial   *MPMMaterial;   /* materials/materials.h */
typedef struct _p_MPMColliders  *MPMColliders;  /* colliders/colliders.h */
typedef struct _p_MPMIntegrator *MPMIntegrator; /* integrators/integrators.h */

/* ------------------------------------------------------------- options */
PetscErrorCode MPMOptionsVector(PetscOptionItems *PetscOptionsObject, const char *prefix, const char *opt, const char *help, PetscInt need, double *val, PetscBool *set);
PetscErrorCode MPMOptionsGetNames(MPI_Comm comm, const char *title, const char *opt, const char *help, char **names, PetscInt *n);
PetscErrorCode MPMOptionsFreeNames(char **names, PetscInt n);
/* PetscOptionsReal/Int/EList that also refuse an empty value (PETSc would
 * keep the default or take the first choice) and non-finite numbers. */
PetscErrorCode MPMOptionsRealChecked(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], PetscReal cur, PetscReal *val, PetscBool *set);
PetscErrorCode MPMOptionsIntChecked(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], PetscInt cur, PetscInt *val, PetscBool *set);
PetscErrorCode MPMOptionsEListChecked(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], const char *const *list, PetscInt ntext,
                                      const char cur[], PetscInt *val, PetscBool *set);
PetscErrorCode MPMVectorTame(PetscInt d, double *v);
PetscErrorCode MPMFunctionListNames(PetscFunctionList list, char *buf, size_t len);
#define MPMOptionsReal(a, b, c, d, e, f)         MPMOptionsRealChecked(PetscOptionsObject, a, b, c, d, e, f)
#define MPMOptionsInt(a, b, c, d, e, f)          MPMOptionsIntChecked(PetscOptionsObject, a, b, c, d, e, f)
#define MPMOptionsEList(a, b, c, d, e, f, g, h) MPMOptionsEListChecked(PetscOptionsObject, a, b, c, d, e, f, g, h)

/* ---------------------------------------------------------------- events */
extern PetscLogStage MPM_STAGE_SETUP, MPM_STAGE_STEPPING, MPM_STAGE_OUTPUT;
extern PetscLogEvent MPM_EVENT_P2G, MPM_EVENT_GRID_UPDATE, MPM_EVENT_G2P, MPM_EVENT_CONSTITUTIVE, MPM_EVENT_MIGRATE, MPM_EVENT_GHOST, MPM_EVENT_OUTPUT, MPM_EVENT_SORT,
  MPM_EVENT_SEED, MPM_EVENT_REDUCE, MPM_EVENT_CHECKPOINT, MPM_EVENT_CATALYST, MPM_EVENT_BALANCE,
  MPM_EVENT_RESIDUAL, MPM_EVENT_JACOBIAN_MULT, MPM_EVENT_PMAT, MPM_EVENT_FORMS, MPM_EVENT_DCFP,
  MPM_EVENT_NEIGHBOURS, MPM_EVENT_CONTACTS, MPM_EVENT_LINEARIZE;
PetscErrorCode MPMLogEventsRegister(void);

/* ------------------------------------------------------------ the layout */
/* The background grid's geometry and its decomposition, shared by every
 * grid field.  The grid is padded by `pad` cells around the physical
 * domain so that the kernel stencil of any particle within one cell of the
 * domain stays on the grid.  The ranks form a parts[0] x parts[1] x
 * parts[2] grid (PETSc's DMDA order: rank = c0 + p0 (c1 + p1 c2)); along
 * axis a, part c owns the node planes [start[a][c], start[a][c+1]) and the
 * particles in those cells.  -decomposition slabs (the default) cuts one
 * axis only; blocks cut two or three. */
typedef enum { MPM_DECOMP_SLABS, MPM_DECOMP_BLOCKS } MPMDecomposition;

typedef struct {
  PetscInt   dim, order, pad;
  PetscInt   N[3];            /* nodes per axis, padding included */
  PetscInt   cells[3];        /* cells per axis inside the domain */
  double     h, lo[3], hi[3]; /* cell size, physical domain [m] */
  PetscInt   decomposition;   /* MPMDecomposition */
  PetscInt   slab_axis;       /* slabs: the axis cut; blocks: the axis cut into the most parts (still meshes are sliced along it) */
  PetscInt   parts[3];        /* ranks along each axis; their product is the rank count */
  PetscInt  *start[3];        /* parts[a]+1 entries each: the first node plane of each part along axis a */
  PetscInt   coord[3];        /* this rank's part along each axis */
  PetscInt   xs[3], xm[3];    /* owned node box */
  MPMGridBox box;             /* ghosted node box (dof 1): particle cells and sorting */
} MPMLayout;

#define MPM_GHOST_WIDTH 2 /* the stencil of a particle in the last owned cell reaches 2 nodes past it */

PetscErrorCode MPMLayoutSetUp(MPMSim sim);
PetscErrorCode MPMLayoutSetParts(MPMSim sim, PetscInt *const start[3]);
PetscErrorCode MPMLayoutDestroy(MPMLayout *l);
/* "slabs" or "blocks": the -decomposition value the layout was built with. */
const char    *MPMLayoutDecompositionName(const MPMLayout *l);
/* The rank that owns cell c (one index per axis; axes with one part are not read). */
PetscMPIInt    MPMLayoutOwner(const MPMLayout *l, const PetscInt *c);
/* Part c's coordinate along axis a of rank r. */
static inline PetscInt MPMLayoutRankCoord(const MPMLayout *l, PetscMPIInt r, PetscInt a)
{
  PetscInt stride = 1;
  for (PetscInt b = 0; b < a; b++) stride *= l->parts[b];
  return ((PetscInt)r / stride) % l->parts[a];
}
/* Position of owned node n (node-major in the owned box: x fastest). */
void           MPMLayoutOwnedNodeX(const MPMLayout *l, PetscInt n, double *x);

/* The cell of x along axis a: a particle's owner is the part that holds
 * its cell along every cut axis. */
static inline PetscInt MPMLayoutParticleCell(const MPMLayout *l, PetscInt a, const double *x)
{
  return (PetscInt)mpm_cell_index(&l->box, (int)a, x[a]);
}

/* Planes of the axes before a, one after the other (a = 3: all of them):
 * the offset of axis a in a per-plane histogram of every axis. */
static inline PetscInt MPMLayoutPlanes(const MPMLayout *l, PetscInt a)
{
  PetscInt o = 0;
  for (PetscInt b = 0; b < a; b++) o += l->N[b];
  return o;
}
/* hist[MPMLayoutPlanes(a) + plane] += the particles at x (n of them) in
 * each node plane of every cut axis (clamped to the grid). */
void MPMLayoutPlaneCount(const MPMLayout *l, PetscInt n, const double *x, int64_t *hist);

/* -1 if this rank owns x, else its owner.  Inline, as the per-step
 * migration asks it of every particle; only the cut axes are read. */
static inline PetscMPIInt MPMLayoutOwnerOf(const MPMLayout *l, const double *x)
{
  PetscInt  c[3] = {0, 0, 0};
  PetscBool away = PETSC_FALSE;
  for (PetscInt a = 0; a < l->dim; a++) {
    if (l->parts[a] == 1) continue;
    c[a] = MPMLayoutParticleCell(l, a, x);
    away = away || c[a] < l->xs[a] || c[a] >= l->xs[a] + l->xm[a];
  }
  return away ? MPMLayoutOwner(l, c) : -1;
}

/* A particle is inside while its kernel stencil stays on the padded grid:
 * within one cell of the physical domain [lo, hi), measured in grid units
 * exactly as the stencil measures it (mpm_grid_coord). */
static inline PetscBool MPMLayoutInside(const MPMLayout *l, const double *x)
{
  for (PetscInt a = 0; a < l->dim; a++) {
    const double xr = mpm_grid_coord(&l->box, (int)a, x[a]);
    if (!(xr >= l->pad - 1 && xr < l->pad + l->cells[a] + 1)) return PETSC_FALSE; /* also catches NaN */
  }
  return PETSC_TRUE;
}

/* ----------------------------------------------------------- grid fields */
/* Node values on the layout: a DMDA with `dof` values per node, its global
 * (owned) and local (ghosted) vectors, and the box the kernels see.  The
 * run keeps a list of all of them, so moving the slabs rebuilds every one
 * and carries the values of the persistent ones (warm starts) over. */
typedef struct {
  char       name[MPM_NAME_LEN];
  PetscInt   dof;
  PetscBool  persistent; /* values live across steps: kept when the slabs move */
  DM         da;
  Vec        global, local;
  MPMGridBox box;
  PetscInt   builds; /* times it was (re)built: the layout's stamp for objects made on it, the same on every rank (a DM's address is not:
                        a new DMDA can land where the old one was freed on one rank and not on another) */
} MPMGridField;

PetscErrorCode MPMGridFieldCreate(MPMSim sim, const char *name, PetscInt dof, PetscBool persistent, MPMGridField **gf);
PetscErrorCode MPMGridFieldsRebuild(MPMSim sim);
PetscErrorCode MPMGridFieldsDestroy(MPMSim sim);

/* --------------------------------------------------- particle field registry */
typedef enum { MPM_FIELD_REAL, MPM_FIELD_INT64, MPM_FIELD_INT32, MPM_FIELD_UINT8 } MPMFieldType;

#define MPM_FIELD_MIGRATE    1u /* travels with its particle to another rank */
#define MPM_FIELD_CHECKPOINT 2u /* saved in checkpoints as particles/<name> */
#define MPM_FIELD_OUTPUT     4u /* written to frames, XDMF and Catalyst as <output> */
#define MPM_FIELD_STATE      (MPM_FIELD_MIGRATE | MPM_FIELD_CHECKPOINT)

/* One per-particle array.  Storage, growth, compaction, sorting, migration,
 * checkpoints, frames, XDMF and Catalyst all loop over the registry, so a
 * new field is one MPMParticlesRegisterField() call in the code that needs it. */
typedef struct {
  char         name[32];    /* checkpoint dataset name */
  MPMFieldType type;
  int          ncomp;       /* values per particle */
  double       dflt[MPM_MAX_DIM * MPM_MAX_DIM]; /* initial value of each component */
  unsigned     flags;       /* MPM_FIELD_* */
  char         output[32];  /* frame dataset name (MPM_FIELD_OUTPUT) */
  MPMFieldType output_type; /* type written to frames */
  PetscBool    pad3;        /* a dim-vector written with 3 components (ParaView points) */
  void        *data;
} MPMField;

typedef struct {
  PetscInt  dim;
  PetscInt  n, cap;
  PetscInt  nfield, capfield;
  MPMField *field;
  size_t    bytes;  /* bytes of state per particle (all fields) */
  size_t    mbytes; /* bytes a migrating particle carries */
  /* the fields every species has */
  PetscInt  f_id, f_x, f_v, f_m, f_V0, f_mat;
} MPMParticles;

static inline double  *MPMFieldReal(const MPMParticles *p, PetscInt f) { return (double *)p->field[f].data; }
static inline int64_t *MPMFieldInt64(const MPMParticles *p, PetscInt f) { return (int64_t *)p->field[f].data; }
static inline int32_t *MPMFieldInt32(const MPMParticles *p, PetscInt f) { return (int32_t *)p->field[f].data; }
static inline uint8_t *MPMFieldUInt8(const MPMParticles *p, PetscInt f) { return (uint8_t *)p->field[f].data; }
size_t                 MPMFieldSize(const MPMField *f);
size_t                 MPMFieldTypeSize(MPMFieldType t);

PetscErrorCode MPMParticlesCreate(PetscInt dim, MPMParticles *p);
PetscErrorCode MPMParticlesDestroy(MPMParticles *p);
PetscErrorCode MPMParticlesRegisterField(MPMParticles *p, const char *name, MPMFieldType type, int ncomp, const double *dflt, unsigned flags, PetscInt *idx);
PetscErrorCode MPMParticlesSetOutput(MPMParticles *p, PetscInt idx, const char *output, MPMFieldType type, PetscBool pad3);
PetscErrorCode MPMParticlesFindField(const MPMParticles *p, const char *name, PetscInt *idx);
PetscErrorCode MPMParticlesReserve(MPMParticles *p, PetscInt cap);
PetscErrorCode MPMParticlesAppend(MPMParticles *p, PetscInt count, PetscInt *start);
PetscErrorCode MPMParticlesGrow(MPMParticles *p, PetscInt count, PetscInt *start);
PetscErrorCode MPMParticlesCompact(MPMParticles *p, const PetscBool *keep);
PetscInt       MPMParticlesKeptPrefix(const MPMParticles *p, const PetscBool *keep);
void           MPMParticlesCompactField(MPMParticles *p, PetscInt f, const PetscBool *keep, PetscInt first);
void           MPMParticlesRemoveField(MPMParticles *p, PetscInt f, const PetscInt *gone, PetscInt ngone);
PetscErrorCode MPMParticlesPermute(MPMParticles *p, const PetscInt *perm);
PetscErrorCode MPMParticlesSortByCell(MPMParticles *p, const MPMGridBox *b);
/* The migrating fields of n particles, field by field (migration; n = 1:
 * a copy of one particle, as splitting makes): n p->mbytes bytes. */
void           MPMParticlesPackFields(const MPMParticles *p, const PetscInt *idx, PetscInt n, char *buf);
void           MPMParticlesUnpackFields(MPMParticles *p, PetscInt start, PetscInt n, const char *buf);
void           MPMParticlesPackField(const MPMParticles *p, PetscInt f, const PetscInt *idx, PetscInt n, char *buf);
void           MPMParticlesDefaultArrivals(MPMParticles *p, PetscInt start, PetscInt n);

/* ------------------------------------------------------------- species */
/* Output computed from the particle state when a frame is written (pressure,
 * deviatoric stress norm, volume): out has ncomp values per particle. */
typedef PetscErrorCode (*MPMDerivedFn)(void *ctx, const MPMParticles *p, double *out);
typedef struct {
  char         name[32];
  int          ncomp;
  MPMDerivedFn fn;
  void        *ctx;
} MPMDerivedField;

/* What seeding needs to know of a material: filled by materials/. */
typedef struct {
  char   name[MPM_NAME_LEN];
  double density; /* [kg/m^3] default of regions and emitters */
} MPMMaterialInfo;

#define MPM_MAX_DERIVED 16

/* A set of particles moved by one method: its particles with their field
 * registry, its materials (the particle field "material" indexes them) and
 * its grid field (NULL for particle-only methods). */
typedef struct {
  char            name[MPM_NAME_LEN];
  MPMParticles    p;
  PetscInt        nmat;
  MPMMaterial    *mat;     /* materials/ */
  MPMMaterialInfo *matinfo;
  MPMGridField   *grid;
  PetscInt        f_affine; /* the method's affine velocity field (APIC C), -1: none */
  MPMDerivedField derived[MPM_MAX_DERIVED];
  PetscInt        nderived;
} MPMSpecies;

/* Plausibility warnings (options.c): printed once, counted in summary.json. */
PetscErrorCode MPMWarn(MPI_Comm comm, const char *fmt, ...) PETSC_ATTRIBUTE_FORMAT(2, 3);
PetscErrorCode MPMWarnUnusual(MPI_Comm comm, const char *opt, double value, double lo, double hi, const char *unit, const char *hint);
PetscInt       MPMWarnings(void);

PetscErrorCode MPMSpeciesCreate(MPMSim sim, const char *name, MPMSpecies **sp);
PetscErrorCode MPMSpeciesDestroyAll(MPMSim sim);
PetscErrorCode MPMSpeciesAddDerived(MPMSpecies *sp, const char *name, int ncomp, MPMDerivedFn fn, void *ctx);
PetscErrorCode MPMSpeciesFindMaterial(MPMSim sim, const char *opt, const char *name, PetscInt *species, PetscInt *mat);
PetscErrorCode MPMSortParticles(MPMSim sim);
int64_t        MPMLocalParticles(const MPMSim sim);

/* ------------------------------------------------------ shapes in the world */
/* A shape placed in the world: an MPMShape in its own frame plus the
 * frame's placement and motion (centre c(t) = c0 + v t, rotation
 * R(t) = exp(t [omega]) R0, R0 from -<prefix>rotation). */
typedef enum { MPM_CSG_NONE = 0, MPM_CSG_UNION, MPM_CSG_INTERSECTION, MPM_CSG_DIFFERENCE } MPMCsgOp;
typedef struct MPMPlacedShape_ {
  MPMShape shape;
  double   c0[3], vel[3], omega[3];
  double   R0[9];        /* initial orientation */
  double   c[3], R[9];   /* frame at the current time */
  /* constructive geometry: the parts, placed in this shape's frame (union
   * min phi, intersection max, difference the first minus the others) */
  MPMCsgOp                 op;
  PetscInt                 nparts;
  struct MPMPlacedShape_ *parts;
  double                  *data;   /* polygon vertices, terrain heights, a mesh's near-surface samples (shape.pts points here) */
  int                     *bricks; /* a mesh's brick table (shape.bricks points here) */
  double                   stored_bytes; /* a mesh's samples, brick table and triangles */
  double                  *tris;         /* a mesh's triangles in its frame (9 values each), to sample it again */
  PetscInt                 ntris;
  PetscInt                 keep_axis;          /* a mesh's samples reach [keep_lo, keep_hi] along this world axis; -1: all of them, or not sampled yet (data NULL) */
  double                   keep_lo, keep_hi;   /* [m] */
} MPMPlacedShape;

PetscErrorCode MPMShapeFromOptions(MPI_Comm comm, PetscInt dim, const char *prefix, const char *title, PetscBool allow_half_space, PetscBool allow_motion, MPMPlacedShape *ps);
PetscErrorCode MPMPlacedShapeDestroy(MPMPlacedShape *ps);
double         MPMPlacedShapeBytes(const MPMPlacedShape *ps);
PetscErrorCode MPMShapeMeshLoad(const char *path, const char *opt, double scale, double spacing, MPMPlacedShape *ps); /* mesh.c */
/* mesh.c: sample the shape's meshes (MPMShapeFromOptions only reads them;
 * until sampled they read NaN) on the near-surface bricks that reach the
 * world interval [lo, hi] along axis, or on all of them (axis < 0), the
 * samples held before replaced.  MPMPlacedShapePartial:
 * whether a mesh of the shape is held only in part, and which interval. */
PetscErrorCode MPMPlacedShapeKeep(MPMPlacedShape *ps, PetscInt dim, PetscInt axis, double lo, double hi);
PetscBool      MPMPlacedShapePartial(const MPMPlacedShape *ps, PetscInt *axis, double *lo, double *hi);
PetscBool      MPMPlacedShapeHasMesh(const MPMPlacedShape *ps);
int64_t        MPMPlacedShapeMisses(double *x); /* shape.c: evaluations that met a brick not held (the first point in x) */
void           MPMPlacedShapeAtTime(MPMPlacedShape *ps, PetscInt dim, double t);
void           MPMPlacedShapeAdvance(MPMPlacedShape *ps, PetscInt dim, double dt);
double         MPMPlacedShapeEval(const MPMPlacedShape *ps, PetscInt dim, const double *x, double *grad, double *vb);
PetscBool      MPMPlacedShapeBBox(const MPMPlacedShape *ps, PetscInt dim, double *lo, double *hi);
/* surface.c: the shape's zero level inside the box [lo, hi], traced on a
 * lattice of spacing h over its cells [c0, c1) along axis (all: 0, 0,
 * PETSC_MAX_INT): *npieces segments (2D) or triangles (3D), each dim
 * points of 3 coordinates in *pts (PetscFree it) */
PetscErrorCode MPMPlacedShapeSurfaceCells(const MPMPlacedShape *ps, PetscInt dim, const double *lo, const double *hi, double h, PetscInt axis, PetscInt c0, PetscInt c1, PetscInt *npieces, double **pts);

/* ----------------------------------------------------- seeding and inflow */
typedef enum { MPM_SAMPLING_LATTICE = 0, MPM_SAMPLING_JITTER } MPMSampling;

typedef struct {
  char           name[MPM_NAME_LEN];
  MPMPlacedShape ps;
  PetscInt       species, mat, ppc;
  double         density, vel[3], jitter;
  double         density_variation; /* particle masses vary uniformly by +- this fraction [-] */
  double         grad[9], wavevector[3]; /* affine and sine initial velocity */
  PetscBool      sine, clip;
  MPMSampling    sampling;
  PetscBool      hydrostatic; /* the particles start at the hydrostatic pressure below water_table (water) */
  double         water_table; /* height of the water table along -gravity [m] */
} MPMRegion;
/* The region a seeded particle came from (its id holds it); emitted
 * particles give nreg + their emitter's index. */
PetscInt MPMRegionOfId(int64_t id);
/* The id of the k-th particle made by splitting, k counted over the run */
int64_t MPMSplitParticleId(int64_t k);

typedef struct {
  char     name[MPM_NAME_LEN];
  PetscInt species, mat, ppc, source;
  double   center[3], dir[3], t1[3], t2[3], speed, radius, density, t_start, t_stop;
  double   jitter;        /* random displacement of a released particle per axis, as a fraction of the spacing */
  int64_t  layers;        /* layers emitted so far (identical on every rank) */
  PetscInt per_layer;     /* lattice points in one layer */
  double  *layer_offsets; /* lateral offsets of the layer points (per_layer x dim) */
} MPMEmitter;

PetscErrorCode MPMRegionsSetUp(MPMSim sim);
PetscErrorCode MPMSeedRegions(MPMSim sim);
PetscErrorCode MPMRegionsPlaneCounts(MPMSim sim, int64_t *hist);
PetscErrorCode MPMRegionsRelease(MPMSim sim);
PetscErrorCode MPMEmittersSetUp(MPMSim sim);
PetscErrorCode MPMEmittersStep(MPMSim sim, double t_new, int64_t *emitted);
double         MPMSeedUpperBound(const MPMSim sim);

/* ------------------------------------------ frames, splitting and merging */
/* resample.c: particle frames (an ellipsoid per particle, moved by the
 * flow) and the split of stretched particles and merge of elongated
 * pairs into rounder ones (Daviet and Bertails-Descoubes 2016, s. 5.3;
 * docs/design/nonsmooth.md).  An integrator that offers it reads the
 * options, advects the frames after G2P, splits before migration and
 * merges after it (a pair is two particles of one grid cell, so one rank
 * holds both).  Rank invariant: a split half's id is numbered by its
 * parent's id among all split this step. */
typedef struct {
  double   split_ratio; /* split when the longest semi-axis exceeds this many half-spacings V0^(1/d)/2 [-] */
  double   merge_ratio; /* merge two particles of one cell whose frames are both this elongated, if the pair's is rounder [-] */
  double   min_volume;  /* never split into halves of less than this volume [cells] */
  double   max_volume;  /* never merge into a particle of more than this volume [cells] */
  double   Dp;          /* APIC inertia scalar of the kernel (h^2/4 quadratic) [m^2] */
  double   h;           /* cell size [m] */
  PetscInt f_frame;     /* particle field "frame" (d x d) */
  /* where a split half may not go (inside an object; the integrator sets it,
     core does not see the colliders); NULL: anywhere in the domain */
  PetscBool (*solid)(void *ctx, const double *x);
  void *solid_ctx;
} MPMResample;

PetscErrorCode MPMResampleSetUp(MPMSim sim, MPMSpecies *sp, MPMResample *rs);
void           MPMResampleInitFrames(MPMSpecies *sp, const MPMResample *rs);
void           MPMResampleAdvect(MPMSpecies *sp, const MPMResample *rs, const double *A);
PetscErrorCode MPMResampleSplit(MPMSim sim, MPMSpecies *sp, const MPMResample *rs, int64_t *split);
PetscErrorCode MPMResampleMerge(MPMSim sim, MPMSpecies *sp, const MPMResample *rs, int64_t *merged);

/* memory.c */
PetscErrorCode MPMMemoryCheck(MPMSim sim, double bytes_per_particle, PetscInt grid_dof);
void           MPMMemoryReturnFreedBlocks(void);
PetscErrorCode MPMMemorySetFromOptions(MPI_Comm comm);

/* ---------------------------------------------------------------- the run */
#define MPM_MAX_SPECIES 8
typedef struct {
  double   t;
  int64_t  n[MPM_MAX_SPECIES]; /* particles of each species */
  PetscInt frame;
} MPMFrameRecord;

/* What set a step's size: the stability limits (stable_dt of the
 * integrators), then the steps shortened to land on an output time or on
 * -t_end, or halved after a failed solve.  -monitor and summary.json name
 * them (MPMDtLimitNames). */
typedef enum {
  MPM_DT_MAX,      /* -dt_max */
  MPM_DT_FIXED,    /* -dt */
  MPM_DT_CFL,      /* -cfl: particle speed */
  MPM_DT_ELASTIC,  /* elastic wave speed (-cfl_elastic) */
  MPM_DT_HARDENED, /* hardened elastic wave speed (snow) */
  MPM_DT_GRAVITY,  /* free fall over a cell (nonsmooth) */
  MPM_DT_RESIDUAL, /* drift of grains held within the solve's tolerance (nonsmooth) */
  MPM_DT_SOLVER,   /* cap after a failed implicit solve */
  MPM_DT_NSTABLE,
  MPM_DT_OUTPUT = MPM_DT_NSTABLE, /* shortened to land on an output time */
  MPM_DT_T_END,                   /* shortened to land on -t_end */
  MPM_DT_RETRY,                   /* halved after a failed solve */
  MPM_DT_NREASONS
} MPMDtLimit;
extern const char *const MPMDtLimitNames[];
/* The smaller of dt and a limit, noting which one won. */
static inline double MPMDtMin(double dt, MPMDtLimit *why, double limit, MPMDtLimit code)
{
  if (limit < dt) {
    *why = code;
    return limit;
  }
  return dt;
}

/* Everything a run holds.  Core reads and writes the run-control and
 * layout parts; the handles and the blocks marked with a layer belong to
 * that layer. */
struct _p_MPMSim {
  MPI_Comm    comm;
  PetscMPIInt rank, size;
  PetscInt    dim;
  MPMLayout   layout;

  MPMSpecies    **species; /* one or more; particle-only species have no grid field */
  PetscInt        nspecies;
  MPMGridField  **gf;      /* every grid field of the run (the balancer rebuilds them) */
  PetscInt        ngf;
  MPMColliders    colliders; /* colliders/ */
  MPMIntegrator   integ;     /* integrators/ */
  MPMRegion      *reg;
  PetscInt        nreg;
  MPMEmitter     *em;
  PetscInt        nem;

  double      gravity[3], gravity_ramp;
  double      cfl, dt_max, dt_fixed;
  double      t, t_end, dt, output_dt, t_next_output, t_last_frame;
  double      dt_lo, dt_hi;                /* range of the steps the stability limits set (before landing on output times) */
  double      dt_taken_lo;                 /* smallest step taken, landings and retries included */
  MPMDtLimit  dt_limit, step_limit;        /* what set sim->dt; what set the last step taken */
  double      dt_count[MPM_DT_NREASONS];   /* steps taken per MPMDtLimit */
  double      t_run_start;                 /* sim->t when this process started stepping (after a restart, the checkpoint's) */
  PetscInt    step_run_start;              /* and the step */
  double      dt_taken_last, vmax;         /* the last step taken; the fastest particle after it [m/s] */
  PetscInt    monitor;                     /* -monitor: a progress line every this many steps (0: off) */
  PetscBool   output_single;               /* -output_precision single: frames store reals as float */
  /* energy budget (io/records.c): the total at t = 0, and the work the
   * gravity ramp did by raising g under the particles */
  double      energy0, work_ramp;
  PetscBool   energy0_set;
  char       *output_fields[MPM_MAX_NAMES]; /* -output_fields: the frame datasets (none given: all) */
  PetscInt    noutput_fields;
  double      monitor_wall;                /* -monitor_wall: and every this many seconds of wall time (0: off) */
  PetscLogDouble monitor_last;             /* wall time of the last monitor line */
  PetscInt    step, max_steps, frame, sort_interval, history_interval;
  PetscBool   delete_outside, help;
  PetscBool   slice_objects; /* still mesh objects hold only their slab's part (colliders.c) */
  uint64_t    seed;
  int64_t     n_global, n_deleted, n_emitted;
  int64_t     n_split, n_merged; /* particles split in two, pairs merged (resample.c): ids of split halves count from n_split */
  char        outdir[PETSC_MAX_PATH_LEN];
  PetscLogDouble wall_start, wall_steps;
  PetscLogDouble rank_seconds_steps; /* stepping wall time times the rank count, summed across restarts on any rank count (per-rank rates) */
  double      particle_steps; /* sum over steps of the global particle count */
  double      geometry_bytes_setup; /* this rank's shapes (regions and objects) at the end of the set-up, before the regions were released (MPMGeometryBytes) */
  char       *options_string; /* the full options database, for provenance */
  int64_t     step_flags;     /* MPM_FLAG_* of the last step's reduction */
  int         exit_code;      /* 0, or MPM_EXIT_CHECKPOINTED */

  /* balance.c */
  double   imbalance; /* max/mean work per rank after the last step */
  double   balance_threshold, balance_node_cost;
  PetscBool balance_initial; /* -balance_initial: slabs at the seeded regions' work quantiles */
  PetscInt balance_next, balance_wait, rebalances;

  /* io/: frames, history, checkpoints, Catalyst */
  FILE           *history;
  MPMFrameRecord *frames; /* frames written so far (rank 0), for the XDMF series */
  PetscInt        nframes, capframes;
  PetscBool       objects_written; /* objects.h5, the objects that stand still, written this run (rank 0, io/surfaces.c) */
  PetscInt        ckpt_interval, ckpt_keep, ckpt_count;
  double          ckpt_wall, ckpt_seconds;
  PetscLogDouble  ckpt_last_wall;
  double          wall_before; /* wall seconds of earlier jobs of a restarted run */
  char            restart[PETSC_MAX_PATH_LEN];
  PetscBool       catalyst_on;
  PetscInt        catalyst_interval;
  void           *catalyst; /* the adaptor's state */
};

PetscErrorCode MPMRunOptionsRead(MPMSim sim);
PetscErrorCode MPMRunOptionsCheck(MPMSim sim);
PetscErrorCode MPMRunCheckUnusedOptions(MPMSim sim);
double         MPMGravityScale(const MPMSim sim); /* -gravity_ramp factor at the current time */

/* balance.c */
PetscErrorCode MPMBalanceSetUp(MPMSim sim);
PetscErrorCode MPMBalanceAfterStep(MPMSim sim);
PetscErrorCode MPMBalanceInitial(MPMSim sim, PetscBool restart);
double         MPMBalanceRankWork(const MPMSim sim);

/* --------------------------------------- parallel.c: the only file that calls MPI */
#define MPM_FLAG_SIGNAL       1  /* SIGTERM/SIGUSR1 seen: checkpoint and stop */
#define MPM_FLAG_WALL         2  /* -checkpoint_wall elapsed */
#define MPM_FLAG_MONITOR      4  /* -monitor_wall elapsed on rank 0: print a progress line */
#define MPM_EXIT_CHECKPOINTED 75 /* exit code after a signal: continue with -restart latest (EX_TEMPFAIL) */
#define MPM_EXIT_NONFINITE    70 /* exit code after the state became NaN or infinite (EX_SOFTWARE) */

/* The one reduction per step. */
typedef struct {
  double  dt;       /* MIN: the stable time step */
  int64_t dt_limit; /* what set it (MPMDtLimit; the smallest code among equal steps) */
  double  vmax;     /* MAX: fastest particle after the step [m/s] */
  int64_t n;        /* SUM: particles of all species */
  int64_t outside;  /* SUM: particles found outside the domain */
  int64_t split;    /* SUM: particles split in two this step (each adds one; MPMResampleSplit) */
  int64_t merged;   /* SUM: pairs merged into one this step (each removes one; MPMResampleMerge) */
  int64_t bad_id;   /* MIN: id of an outside particle (INT64_MAX if none) */
  double  bad_x[3]; /* its position */
  int64_t flags;    /* OR: MPM_FLAG_* requests of any rank */
  double  wmax;     /* MAX: work of the busiest rank (MPMBalanceRankWork) */
  int64_t nonfinite;             /* SUM: particles with a non-finite position (NaN, inf) */
  int64_t nf_id, nf_species, nf_mat; /* MIN id of such a particle (INT64_MAX if none), its species and material */
  double  nf_x[3], nf_v[3];      /* its position and velocity */
} MPMStepReduction;

PetscErrorCode MPMParallelSetUp(MPMSim sim);
PetscErrorCode MPMParallelFinalize(void);
PetscErrorCode MPMGhostScatterAdd(MPMGridField *gf);
PetscErrorCode MPMGhostGather(MPMGridField *gf);
PetscErrorCode MPMGhostScatterAddVec(MPMGridField *gf, Vec local, Vec global);
PetscErrorCode MPMGhostGatherVec(MPMGridField *gf, Vec global, Vec local);
PetscErrorCode MPMMigrate(MPMSim sim, MPMStepReduction *red);
void           MPMMigrateThroughput(double *bytes, double *seconds);
/* Ghost exchange restricted to the ghost nodes of a grid field (parallel.c):
 * for a solver whose unknowns are a subset of the owned nodes and which
 * writes their values into the local vector itself, so that an exchange
 * costs the slab faces, not a copy of the whole field. */
typedef struct {
  DM         da;    /* the layout it was built on */
  VecScatter sc;    /* global owned entries -> local ghost entries */
  PetscInt   nrecv; /* owned entries that are ghosts elsewhere */
  PetscInt  *recv;  /* their offsets in this rank's part of the global vector */
} MPMGhostLayers;
PetscErrorCode MPMGhostLayersCreate(MPMGridField *gf, MPMGhostLayers *gl);
PetscErrorCode MPMGhostLayersDestroy(MPMGhostLayers *gl);
PetscErrorCode MPMGhostLayersGather(MPMGhostLayers *gl, Vec global, Vec local);
PetscErrorCode MPMGhostLayersScatterAdd(MPMGhostLayers *gl, Vec local, Vec global);
/* Particle halos (-integrator pbd): read-only copies, on other ranks, of
 * the particles within a reach of those ranks' particles along the cut
 * axes.  MPMHaloSetUp decides who gets what (one Allgather of every rank's
 * bounding box, one Alltoall of counts); MPMHaloForward sends any per-particle
 * record from the owners to the copies (point to point, to the ranks that
 * need it), at once or as Begin/End around computation that does not need
 * the copies.  Zero-initialize before the first set-up. */
typedef struct {
  PetscMPIInt *scount, *rcount, *soff, *roff; /* per rank, in records */
  PetscInt     nsend, nrecv, capsend;
  PetscInt    *send;   /* local indices of the particles sent, grouped by rank */
  char        *buf;    /* packed send records */
  size_t       capbuf;
  MPI_Request *req;
  PetscMPIInt  nreq;   /* requests of a forward under way */
  MPI_Datatype rec;    /* its record type */
  double       bytes;  /* bytes this rank sent since the caller last zeroed it */
} MPMHalo;
PetscErrorCode MPMHaloSetUp(MPMSim sim, PetscInt n, const double *x, double reach, MPMHalo *h);
PetscErrorCode MPMHaloForward(MPMSim sim, MPMHalo *h, const void *src, size_t bytes, void *dst);
PetscErrorCode MPMHaloForwardBegin(MPMSim sim, MPMHalo *h, const void *src, size_t bytes, void *dst);
PetscErrorCode MPMHaloForwardProgress(MPMHalo *h);
PetscErrorCode MPMHaloForwardEnd(MPMHalo *h);
PetscErrorCode MPMHaloDestroy(MPMHalo *h);
PetscErrorCode MPMGlobalStepReduce(MPI_Comm comm, MPMStepReduction *red);
double         MPMBalanceImbalance(const MPMSim sim, const MPMStepReduction *red);
PetscErrorCode MPMGlobalSum(MPI_Comm comm, double *buf, PetscInt n);
PetscErrorCode MPMGlobalMax(MPI_Comm comm, double *buf, PetscInt n);
PetscErrorCode MPMGlobalSumInt64(MPI_Comm comm, int64_t *buf, PetscInt n);
PetscErrorCode MPMGlobalOffset(MPI_Comm comm, int64_t local, int64_t *offset, int64_t *total);
PetscErrorCode MPMAllGatherInt64(MPI_Comm comm, int64_t value, int64_t *all);
PetscErrorCode MPMAllGatherVInt64(MPI_Comm comm, PetscInt n, const int64_t *values, int64_t *total, int64_t **all);
PetscErrorCode MPMGatherVDouble(MPI_Comm comm, PetscInt n, const double *values, int64_t *total, double **all);
PetscErrorCode MPMBarrier(MPI_Comm comm);
PetscErrorCode MPMBroadcastInt(MPI_Comm comm, int *value);
PetscErrorCode MPMBroadcastString(MPI_Comm comm, char *buf, size_t len);
PetscErrorCode MPMRanksOnNode(MPI_Comm comm, int *n);

#endif
