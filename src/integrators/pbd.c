/* Position-based granular dynamics (-integrator pbd): Macklin et al. 2014,
 * "Unified particle physics for real-time applications", s. 6.1, as the
 * seed pbd-granular-position-based-friction describes it.  Grains are the
 * particles (materials of -<m>_type grain); there is no grid.  Per substep
 * of length ds = dt / -pbd_substeps:
 *
 *   predict    v += g ds, x0 = x, x = x + v ds
 *   neighbours every grain within the contact distance plus a margin, from
 *              a table of cells one interaction distance wide (the grains'
 *              bounding box in order, or where it is sparse the seed's
 *              spatial hash, after Mueller), from this rank's grains and the
 *              halo copies of other ranks' grains (MPMHaloSetUp, parallel.c)
 *   stabilize  -pbd_stabilization_iterations sweeps on x0 that move x0 and x
 *              alike: old overlap goes without becoming velocity
 *   iterate    -pbd_iterations Jacobi sweeps: each grain sums the contact
 *              and friction corrections of its contacts with grains
 *              (mpm_pbd_pair) and objects (MPMCollidersGrain), a pair's
 *              weighted by -pbd_relaxation / max(L_a, L_b) on both grains
 *              (L: a grain's contacts at the prediction), so the seed's
 *              averaging keeps every pair's momentum; the copies'
 *              positions are refreshed from their owners after every sweep
 *              (MPMHaloForward)
 *   velocity   v = (x - x0) / ds; below -pbd_sleep_threshold the grain
 *              stays at x0 at rest
 *
 * Rank invariance: a grain's correction depends only on its own and its
 * neighbours' positions, every pair is evaluated with the grain of smaller
 * id first (so both owners compute the same bits) and a grain sums its
 * contacts in the order of its neighbours' ids, so the result does not
 * depend on which rank holds what, nor on the particles' storage order:
 * the same bits at any rank count.  No correction is sent back to an
 * owner; each owner computes its grains' contacts itself. */
#include "integrators.h"

#include <mpm/kernels.h>

#define PBD_NSTAT       4
#define PBD_MAX_OBJECTS 64 /* walls and objects a grain may touch at once */
#define PBD_WALL_SLOTS  4  /* objects per grain whose accumulated friction is kept (more: the seed's) */

typedef struct {
  int64_t id;
  int32_t mat, pad;
  double  w;     /* inverse mass of the solve (shock propagation scales it) */
  double  r;     /* radius */
  double  x0[3]; /* position at the start of the substep */
  double  x[3];  /* predicted position */
} PBDRecord;

typedef struct {
  PetscInt        substeps, iterations, stabilize;
  double          relax, margin, sleep, shock, rho, slop;
  PetscInt        delay;
  PetscBool       accumulated; /* -pbd_friction accumulated (else the seed's) */
  PetscInt        nmat;
  MPMGrainParams **grain; /* per material (the materials' own parameters) */
  double          rmin, rmax, reach;
  uint64_t        seed; /* the run's, for the grains' radii */
  MPMHalo         halo;
  /* scratch over the rank's grains and then the copies (N = n + nrecv) */
  PetscInt        cap;
  PBDRecord      *rec;
  double         *x;   /* current positions, N x dim */
  double         *x0;  /* positions at the substep's start (pre-stabilized), N x dim */
  double         *xr;  /* the same before pre-stabilization: its slip is measured from there */
  double         *dx;  /* a sweep's corrections of the owned grains, n x dim */
  double         *xprev; /* the owned grains' positions one sweep back (Chebyshev), n x dim */
  int64_t        *bodyJ, *bodysum; /* per object: the dynamic bodies' impulse of the substep so far, in fixed point (MPMCollidersBodiesBookGrain); summed over ranks */
  double         *snap, *eprev; /* Chebyshev: the objects' impulses before a sweep, their recombined share of the last (6 per object) */
  double         *L;   /* per grain (owned, then copies): its contacts, grains and objects, at the prediction (>= 1: the Jacobi weights) */
  /* neighbours of the owned grains (CSR, sorted by id) */
  PetscInt       *nb_off, *nb, capnb;
  PetscInt       *touch;         /* per owned grain: grains and objects it overlaps at the prediction (0: free; it may not sleep) */
  PetscInt       *inner, ninner; /* owned grains: ninner without copies among their neighbours, then the others (reversed) */
  double         *wlam; /* per owned grain, PBD_WALL_SLOTS x [object + 1 (0: free), ln, lt(3)] */
  double         *lam; /* per neighbour entry: its pair's accumulated corrections [ln, lt(3)] (-pbd_friction accumulated) */
  PetscInt        caplam;
  /* the spatial hash, or (dense) the cells of the grains' bounding box in
   * order, x fastest: cmin the box's first cell, cn its cells per axis */
  PetscInt        tsize, captable;
  PetscBool       dense, hash_only; /* hash_only: -pbd_neighbor_table hash */
  int64_t         cmin[3], cn[3];
  PetscInt       *bucket_start, *bucket;
  int64_t        *key;
  MPMStepStats    st;
} PBD;

static const char *const PBDFrictions[] = {"seed", "accumulated"};
static const char *const PBDTables[]    = {"auto", "hash"};

static PetscErrorCode PBDOptions(MPMIntegrator integ, MPMSim sim)
{
  PBD *pb;

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&pb));
  integ->data    = pb;
  pb->substeps   = 2; /* FleX's granular defaults: 2 substeps x 12 iterations */
  pb->iterations = 12;
  pb->relax      = 1.0;
  pb->stabilize  = 2;
  pb->margin     = 0.1;
  pb->delay      = 2;
  PetscInt fr    = 1, table = 0;
  PetscOptionsBegin(sim->comm, integ->prefix, "Position-based granular integrator (-integrator pbd)", NULL);
  PetscCall(MPMOptionsInt("-substeps", "Substeps per time step [-]", NULL, pb->substeps, &pb->substeps, NULL));
  PetscCall(MPMOptionsInt("-iterations", "Jacobi iterations of the contacts per substep [-]", NULL, pb->iterations, &pb->iterations, NULL));
  PetscCall(MPMOptionsInt("-stabilization_iterations", "Pre-stabilization sweeps per substep: contacts solved on the start positions, moving both them and the prediction, so overlap left from earlier steps is removed without turning into velocity (Macklin et al. 2014 s. 4.4) [-]", NULL, pb->stabilize, &pb->stabilize, NULL));
  PetscCall(MPMOptionsEList("-friction",
                            "Grain-grain friction: seed (the seed's: static while the slip is below mu_s times the current sweep's penetration) or accumulated (Coulomb's bound on the substep's "
                            "accumulated normal correction: deep piles hold)",
                            NULL, PBDFrictions, 2, PBDFrictions[fr], &fr, NULL));
  PetscCall(MPMOptionsReal("-chebyshev_rho", "Chebyshev acceleration of the sweeps (Wang 2015): the estimated spectral radius rho of a Jacobi sweep, in [0, 1) (0: off) [-]", NULL, pb->rho, &pb->rho, NULL));
  PetscCall(MPMOptionsInt("-chebyshev_delay", "Plain sweeps before the Chebyshev acceleration starts [-]", NULL, pb->delay, &pb->delay, NULL));
  PetscCall(MPMOptionsReal("-relaxation", "Relaxation factor omega: a pair's correction is weighted by omega / (the larger contact count of its grains), in (0, 2] [-]", NULL, pb->relax, &pb->relax, NULL));
  PetscCall(MPMOptionsReal("-neighbor_margin", "Neighbour search distance beyond contact, in grain diameters, in [0, 1] [-]", NULL, pb->margin, &pb->margin, NULL));
  PetscCall(MPMOptionsEList("-neighbor_table",
                            "Neighbour search table: auto (the grains' cell box in order where it has at most 4 cells a grain, else the seed's spatial hash) or hash (always the hash; the same neighbours, slower)",
                            NULL, PBDTables, 2, PBDTables[table], &table, NULL));
  PetscCall(MPMOptionsReal("-sleep_threshold", "Grains touching a grain or an object and slower than this after a substep stay where they were, at rest (0: off) [m/s]", NULL, pb->sleep, &pb->sleep, NULL));
  PetscCall(MPMOptionsReal("-stabilization_slop",
                           "Overlap the pre-stabilization leaves to the solve, as a fraction s of the contact distance (r_a + r_b for two grains, r on a wall or object), in [0, 0.5): only the overlap beyond it is removed without becoming velocity [-]",
                           NULL, pb->slop, &pb->slop, NULL));
  PetscCall(MPMOptionsReal("-shock_propagation", "Shock propagation k: the solve's inverse mass of a grain at height z is exp(-k z) / m (0: off) [1/m]", NULL, pb->shock, &pb->shock, NULL));
  PetscOptionsEnd();
  pb->accumulated = fr == 1 ? PETSC_TRUE : PETSC_FALSE;
  pb->hash_only   = table == 1 ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDCheck(MPMIntegrator integ, MPMSim sim)
{
  const PBD *pb = (const PBD *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(pb->substeps >= 1 && pb->substeps <= 1000, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_substeps must be in [1, 1000], got %" PetscInt_FMT, pb->substeps);
  PetscCheck(pb->iterations >= 1 && pb->iterations <= 10000, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_iterations must be in [1, 10000], got %" PetscInt_FMT, pb->iterations);
  PetscCheck(pb->stabilize >= 0 && pb->stabilize <= 10000, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_stabilization_iterations must be in [0, 10000], got %" PetscInt_FMT, pb->stabilize);
  PetscCheck(pb->rho >= 0 && pb->rho < 1, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_chebyshev_rho must be in [0, 1), got %g", pb->rho);
  PetscCheck(pb->delay >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_chebyshev_delay must be >= 0, got %" PetscInt_FMT, pb->delay);
  PetscCheck(pb->relax > 0 && pb->relax <= 2, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_relaxation must be in (0, 2], got %g", pb->relax);
  PetscCheck(pb->margin >= 0 && pb->margin <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_neighbor_margin must be in [0, 1], got %g", pb->margin);
  PetscCheck(pb->sleep >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_sleep_threshold must be >= 0 m/s, got %g", pb->sleep);
  PetscCheck(pb->slop >= 0 && pb->slop < 0.5, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_stabilization_slop must be in [0, 0.5), got %g", pb->slop);
  PetscCheck(pb->shock >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-pbd_shock_propagation must be >= 0 1/m, got %g", pb->shock);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A grain's radius: its material's, varied by +- radius_variation with a
 * number drawn from its id (the same on every rank, every step). */
static double GrainRadius(const MPMGrainParams *g, uint64_t seed, int64_t id)
{
  if (g->radius_variation <= 0) return g->radius;
  return g->radius * (1 + g->radius_variation * (2 * mpm_uniform(seed, (uint64_t)id, 0x9a1) - 1));
}

/* The output "radius" of every grain (frames, Catalyst: ParaView's glyphs
 * scale by it). */
static PetscErrorCode DerivedRadius(void *ctx, const MPMParticles *p, double *out)
{
  const PBD     *pb = (const PBD *)ctx;
  const int64_t *id = MPMFieldInt64(p, p->f_id);
  const int32_t *mt = MPMFieldInt32(p, p->f_mat);

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) out[q] = GrainRadius(pb->grain[mt[q]], pb->seed, id[q]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A lattice of spacing s whose points are jittered by up to j s / 2 per
 * axis (the region's or emitter's -<r>_jitter; 0 for lattice sampling)
 * seeds grains of radius r without overlap, between themselves and with
 * the domain's faces, only if s (1 - j) >= 2 r. */
static PetscErrorCode CheckSpacing(MPMSim sim, const PBD *pb, const char *what, const char *name, PetscInt mat, PetscInt ppc, double jitter)
{
  const double s = sim->layout.h / ppc, r = pb->grain[mat]->radius * (1 + pb->grain[mat]->radius_variation), gap = s * (1 - jitter);
  const char  *mname = sim->species[0]->mat[mat]->name;

  PetscFunctionBeginUser;
  PetscCheck(gap >= 2 * r * (1 - 1e-12), sim->comm, PETSC_ERR_USER_INPUT,
             "%s '%s' seeds grains as close as %g m (spacing -dx / -%s_ppc = %g m, jitter %g), less than the largest diameter %g m of material '%s' (-%s_radius, _radius_variation): the grains would start "
             "overlapping; use a larger -dx, a smaller -%s_ppc or -%s_jitter, or -%s_sampling lattice",
             what, name, gap, name, s, jitter, 2 * r, mname, mname, name, name, name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDSetUp(MPMIntegrator integ, MPMSim sim)
{
  PBD        *pb = (PBD *)integ->data;
  MPMSpecies *sp = sim->species[0];

  PetscFunctionBeginUser;
  PetscCheck(sim->nspecies == 1, sim->comm, PETSC_ERR_SUP, "-integrator pbd moves one species");
  PetscCheck(sim->colliders->nobj <= PBD_MAX_OBJECTS, sim->comm, PETSC_ERR_SUP, "-integrator pbd handles at most %d objects and walls, the deck has %" PetscInt_FMT, PBD_MAX_OBJECTS, sim->colliders->nobj);
  PetscCheck(sim->colliders->ndynamic == 0 || pb->rho == 0, sim->comm, PETSC_ERR_USER_INPUT,
             "-pbd_chebyshev_rho %g: the Chebyshev acceleration does not move dynamic bodies (-<object>_dynamic); use -pbd_chebyshev_rho 0 (the default)", pb->rho);
  pb->nmat = sp->nmat;
  PetscCall(PetscMalloc1(sp->nmat, &pb->grain));
  pb->rmin = PETSC_MAX_REAL;
  for (PetscInt m = 0; m < sp->nmat; m++) {
    PetscCheck(sp->mat[m]->flags & MPM_MATERIAL_GRAIN, sim->comm, PETSC_ERR_USER_INPUT, "-integrator pbd moves grains: -%s_type must be grain, got %s", sp->mat[m]->name, sp->mat[m]->type);
    pb->grain[m] = (MPMGrainParams *)sp->mat[m]->ctx;
    pb->rmin     = PetscMin(pb->rmin, pb->grain[m]->radius * (1 - pb->grain[m]->radius_variation));
    pb->rmax     = PetscMax(pb->rmax, pb->grain[m]->radius * (1 + pb->grain[m]->radius_variation));
  }
  pb->reach = 2 * pb->rmax * (1 + pb->margin);
  for (PetscInt a = 0; a < sim->dim; a++) /* cell coordinates of the hash take 20 bits each */
    PetscCheck(sim->help || sim->layout.N[a] * sim->layout.h < 5e5 * pb->reach, sim->comm, PETSC_ERR_USER_INPUT,
               "-integrator pbd: the grains (largest radius %g m) are too small for the domain (%g m along %c): the spatial hash takes at most 500,000 grains across",
               pb->rmax, sim->layout.N[a] * sim->layout.h, "xyz"[a]);
  pb->seed  = sim->seed;
  PetscCall(PetscCalloc2(6 * sim->colliders->nobj + 1, &pb->snap, 6 * sim->colliders->nobj + 1, &pb->eprev));
  PetscCall(PetscCalloc2(6 * sim->colliders->nobj + 1, &pb->bodyJ, 6 * sim->colliders->nobj + 1, &pb->bodysum));
  PetscCall(MPMSpeciesAddDerived(sp, "radius", 1, DerivedRadius, pb));
  for (PetscInt r = 0; r < sim->nreg; r++) PetscCall(CheckSpacing(sim, pb, "Region", sim->reg[r].name, sim->reg[r].mat, sim->reg[r].ppc, sim->reg[r].sampling == MPM_SAMPLING_JITTER ? sim->reg[r].jitter : 0.0));
  for (PetscInt e = 0; e < sim->nem; e++) PetscCall(CheckSpacing(sim, pb, "Emitter", sim->em[e].name, sim->em[e].mat, sim->em[e].ppc, sim->em[e].jitter));
  pb->st.n = PBD_NSTAT;
  PetscCall(PetscStrncpy(pb->st.name[0], "pbd_iterations", sizeof(pb->st.name[0])));
  PetscCall(PetscStrncpy(pb->st.name[1], "pbd_contacts", sizeof(pb->st.name[1])));
  PetscCall(PetscStrncpy(pb->st.name[2], "pbd_max_overlap", sizeof(pb->st.name[2])));
  PetscCall(PetscStrncpy(pb->st.name[3], "pbd_halo_bytes", sizeof(pb->st.name[3])));
  PetscCall(PetscStrncpy(pb->st.unit[3], "B", sizeof(pb->st.unit[3])));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A grain moves at most -cfl of the smallest radius per substep. */
static double PBDStableDt(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why)
{
  const PBD *pb = (const PBD *)integ->data;
  if (MPMIntegratorFixedDt(sim, why) > 0) return sim->dt_fixed;
  double dt = sim->dt_max;
  if (vmax > 0) dt = MPMDtMin(dt, why, pb->substeps * sim->cfl * pb->rmin / vmax, MPM_DT_CFL);
  return dt;
}

/* ------------------------------------------------------------ scratch */
/* Room for N grains; the first `keep` records survive a reallocation. */
static PetscErrorCode Reserve(PBD *pb, PetscInt N, PetscInt keep, PetscInt dim)
{
  PBDRecord *rec;

  PetscFunctionBeginUser;
  if (pb->rec && N <= pb->cap) PetscFunctionReturn(PETSC_SUCCESS);
  pb->cap = N + N / 4 + 16;
  PetscCall(PetscMalloc1(pb->cap, &rec));
  if (keep) PetscCall(PetscArraycpy(rec, pb->rec, keep));
  PetscCall(PetscFree(pb->rec));
  pb->rec = rec;
  PetscCall(PetscFree6(pb->x, pb->x0, pb->xr, pb->dx, pb->L, pb->xprev));
  PetscCall(PetscMalloc6(pb->cap * dim, &pb->x, pb->cap * dim, &pb->x0, pb->cap * dim, &pb->xr, pb->cap * dim, &pb->dx, pb->cap, &pb->L, pb->cap * dim, &pb->xprev));

  PetscCall(PetscFree(pb->key));
  PetscCall(PetscFree(pb->nb_off));
  PetscCall(PetscFree2(pb->inner, pb->touch));
  PetscCall(PetscMalloc2(pb->cap, &pb->inner, pb->cap, &pb->touch));
  PetscCall(PetscFree(pb->wlam));
  PetscCall(PetscMalloc1(pb->cap * 5 * PBD_WALL_SLOTS, &pb->wlam));
  PetscCall(PetscMalloc1(pb->cap, &pb->key));
  PetscCall(PetscMalloc1(pb->cap + 1, &pb->nb_off));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------- spatial hash */
/* Cell coordinates (offset to stay positive) packed in 21 bits each. */
static int64_t CellKey(const double *x, PetscInt dim, const double *lo, double cs, int64_t *c)
{
  int64_t k = 0;
  for (PetscInt a = 0; a < 3; a++) {
    const double f = a < dim ? (x[a] - lo[a]) / cs : 0.0;
    c[a]           = (f > -1e6 && f < 1e6 ? (int64_t)floor(f) : 0) + (1 << 20); /* NaN (caught after the step) and strays: cell 0, no UB */
    c[a] = PetscMin(PetscMax(c[a], 0), (1 << 21) - 1);
    k    = (k << 21) | c[a];
  }
  return k;
}

/* The cell coordinates packed in a key of CellKey. */
static void KeyCell(int64_t k, int64_t *c)
{
  for (int a = 2; a >= 0; a--, k >>= 21) c[a] = k & ((1 << 21) - 1);
}

/* The seed's hash (Mueller's primes) of a cell into a table of tsize (a
 * power of two) buckets. */
static PetscInt Bucket(const int64_t *c, PetscInt tsize)
{
  const uint64_t h = ((uint64_t)c[0] * 92837111ULL) ^ ((uint64_t)c[1] * 689287499ULL) ^ ((uint64_t)c[2] * 283923481ULL);
  return (PetscInt)(h & (uint64_t)(tsize - 1));
}

/* The bucket of cell c: its place in the bounding box of the grains' cells
 * when that box has at most 4 cells a grain (-1 outside it: no grain
 * there), else the hash.  In the box, the cells of neighbouring grains are
 * neighbours in the table, and the counting sort leaves the grains in cell
 * order: the 3^dim lookups of consecutive grains hit the same cache lines,
 * where the hash scatters them over the table (they were half the time of
 * a 1M-grain step: docs/performance.md).  The neighbour lists are the same
 * either way (sorted by id). */
static PetscInt CellBucket(const PBD *pb, const int64_t *c)
{
  if (!pb->dense) return Bucket(c, pb->tsize);
  int64_t b = 0;
  for (int a = 2; a >= 0; a--) {
    const int64_t r = c[a] - pb->cmin[a];
    if (r < 0 || r >= pb->cn[a]) return -1;
    b = b * pb->cn[a] + r;
  }
  return (PetscInt)b;
}

/* Every grain's cell key, and the table: the bounding box of the N grains'
 * cells if it is dense enough, else a power of two of at least 2 N
 * buckets. */
static void TableSize(PBD *pb, PetscInt N, PetscInt dim, const double *lo)
{
  int64_t cmax[3] = {0, 0, 0}, c[3], cells = 1;
  for (int a = 0; a < 3; a++) pb->cmin[a] = INT64_MAX;
  for (PetscInt q = 0; q < N; q++) {
    pb->key[q] = CellKey(pb->x + q * dim, dim, lo, pb->reach, c);
    for (int a = 0; a < 3; a++) {
      pb->cmin[a] = PetscMin(pb->cmin[a], c[a]);
      cmax[a]     = PetscMax(cmax[a], c[a]);
    }
  }
  const int64_t most = 4 * (int64_t)N + 64; /* cells the box may have */
  for (int a = 0; a < 3; a++) {
    pb->cn[a] = N ? cmax[a] - pb->cmin[a] + 1 : 1;
    if (cells <= most) cells *= pb->cn[a]; /* past most it stays past (and cannot overflow: cn < 2^21) */
  }
  pb->dense = N > 0 && cells <= most && !pb->hash_only ? PETSC_TRUE : PETSC_FALSE;
  if (pb->dense) pb->tsize = (PetscInt)cells;
  else {
    pb->tsize = 64;
    while (pb->tsize < 2 * N) pb->tsize *= 2;
  }
}

/* All N grains into the table: a counting sort by bucket. */
static PetscErrorCode HashBuild(PBD *pb, PetscInt N, PetscInt dim, const double *lo)
{
  PetscFunctionBeginUser;
  TableSize(pb, N, dim, lo);
  PetscCall(PetscInfo(NULL, "PBD neighbour table: %s of %" PetscInt_FMT " buckets for %" PetscInt_FMT " grains\n", pb->dense ? "the grains' cell box" : "spatial hash", pb->tsize, N));
  if (pb->tsize + 1 > pb->captable || N > pb->captable) {
    PetscCall(PetscFree2(pb->bucket_start, pb->bucket));
    pb->captable = PetscMax(pb->tsize + 1, N);
    PetscCall(PetscMalloc2(pb->captable, &pb->bucket_start, pb->captable, &pb->bucket));
  }
  PetscCall(PetscArrayzero(pb->bucket_start, pb->tsize + 1));
  for (PetscInt q = 0; q < N; q++) {
    int64_t c[3];
    KeyCell(pb->key[q], c);
    pb->bucket_start[CellBucket(pb, c) + 1]++;
  }
  for (PetscInt b = 0; b < pb->tsize; b++) pb->bucket_start[b + 1] += pb->bucket_start[b];
  for (PetscInt q = 0; q < N; q++) {
    int64_t c[3];
    KeyCell(pb->key[q], c);
    const PetscInt b = CellBucket(pb, c);
    pb->bucket[pb->bucket_start[b]++] = q;
  }
  for (PetscInt b = pb->tsize; b > 0; b--) pb->bucket_start[b] = pb->bucket_start[b - 1]; /* undo the fill's advance */
  pb->bucket_start[0] = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Neighbours of owned grain i among the N: the grains of the 3^dim cells
 * around it closer than the contact distance plus the margin, sorted by
 * id (insertion sort: a grain has a dozen); *touching: how many of them it
 * overlaps at the prediction. */
static PetscErrorCode Neighbours(PBD *pb, PetscInt i, PetscInt dim, const double *lo, PetscInt *len, PetscInt *touching)
{
  const double *xi = pb->x + i * dim, ri = pb->rec[i].r, slack = 2 * pb->rmax * pb->margin;
  int64_t       ci[3];
  PetscInt      k0 = pb->nb_off[i], k = k0;

  PetscFunctionBeginUser;
  *touching = 0;
  CellKey(xi, dim, lo, pb->reach, ci);
  for (int dz = (dim == 3 ? -1 : 0); dz <= (dim == 3 ? 1 : 0); dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        const int64_t c[3] = {ci[0] + dx, ci[1] + dy, ci[2] + dz}, ck = (c[0] << 42) | (c[1] << 21) | c[2];
        const PetscInt b = CellBucket(pb, c);
        if (b < 0) continue; /* outside the grains' box: no grain there */
        for (PetscInt e = pb->bucket_start[b]; e < pb->bucket_start[b + 1]; e++) {
          const PetscInt j = pb->bucket[e];
          if (j == i || pb->key[j] != ck) continue; /* itself, or another cell in the same bucket */
          const double  contact = ri + pb->rec[j].r, dist = contact + slack;
          double        r2      = 0;
          for (PetscInt a = 0; a < dim; a++) r2 += (xi[a] - pb->x[j * dim + a]) * (xi[a] - pb->x[j * dim + a]);
          if (r2 >= dist * dist) continue;
          *touching += r2 < contact * contact ? 1 : 0;
          if (k >= pb->capnb) {
            pb->capnb = 2 * pb->capnb + 1024;
            PetscCall(PetscRealloc(sizeof(PetscInt) * pb->capnb, &pb->nb));
          }
          PetscInt at = k++; /* insert by id */
          while (at > k0 && pb->rec[pb->nb[at - 1]].id > pb->rec[j].id) {
            pb->nb[at] = pb->nb[at - 1];
            at--;
          }
          pb->nb[at] = j;
        }
      }
  *len = k - k0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------------- substep */
static double InverseMass(const PBD *pb, const MPMSim sim, const double *x0, double m)
{
  if (pb->shock <= 0) return 1.0 / m;
  double g2 = 0, z = 0;
  for (PetscInt a = 0; a < sim->dim; a++) g2 += sim->gravity[a] * sim->gravity[a];
  for (PetscInt a = 0; a < sim->dim; a++) z -= x0[a] * sim->gravity[a] / sqrt(g2 > 0 ? g2 : 1.0);
  return exp(-pb->shock * z) / m;
}

/* Gravity, the prediction, the records of every owned grain, then the
 * halo: the copies' records arrive after the owned ones. */
static PetscErrorCode Predict(PBD *pb, MPMSim sim, double ds, PetscInt *N)
{
  MPMParticles  *p  = &sim->species[0]->p;
  const PetscInt d  = sim->dim, n = p->n;
  double        *x  = MPMFieldReal(p, p->f_x), *v = MPMFieldReal(p, p->f_v);
  const double  *m  = MPMFieldReal(p, p->f_m), gs = MPMGravityScale(sim);
  const int64_t *id = MPMFieldInt64(p, p->f_id);
  const int32_t *mt = MPMFieldInt32(p, p->f_mat);

  PetscFunctionBeginUser;
  PetscCall(Reserve(pb, n, 0, d));
  for (PetscInt q = 0; q < n; q++) {
    PBDRecord *r = &pb->rec[q];
    r->id        = id[q];
    r->mat       = mt[q];
    r->pad       = 0;
    for (PetscInt a = 0; a < 3; a++) r->x0[a] = r->x[a] = 0;
    for (PetscInt a = 0; a < d; a++) {
      r->x0[a] = x[q * d + a];
      v[q * d + a] += ds * gs * sim->gravity[a];
      x[q * d + a] += ds * v[q * d + a];
      r->x[a] = x[q * d + a];
    }
    r->w = InverseMass(pb, sim, r->x0, m[q]);
    r->r = GrainRadius(pb->grain[mt[q]], pb->seed, id[q]);
  }
  PetscCall(MPMHaloSetUp(sim, n, x, pb->reach, &pb->halo));
  *N = n + pb->halo.nrecv;
  PetscCall(Reserve(pb, *N, n, d));
  PetscCall(MPMHaloForward(sim, &pb->halo, pb->rec, sizeof(PBDRecord), pb->rec + n));
  for (PetscInt q = 0; q < *N; q++)
    for (PetscInt a = 0; a < d; a++) {
      pb->x[q * d + a]  = pb->rec[q].x[a];
      pb->x0[q * d + a] = pb->xr[q * d + a] = pb->rec[q].x0[a];
    }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FindNeighbours(PBD *pb, MPMSim sim, PetscInt N)
{
  const PetscInt n = sim->species[0]->p.n, d = sim->dim;

  PetscFunctionBeginUser;
  PetscCall(HashBuild(pb, N, d, sim->layout.box.origin));
  pb->nb_off[0] = 0;
  for (PetscInt i = 0; i < n; i++) {
    PetscInt len = 0, touching = 0;
    PetscCall(Neighbours(pb, i, d, sim->layout.box.origin, &len, &touching));
    pb->nb_off[i + 1] = pb->nb_off[i] + len;
    pb->touch[i]      = touching + MPMCollidersNearCount(sim->colliders, 0, pb->x + i * d, pb->rec[i].r);
    pb->L[i]          = (double)PetscMax(1, pb->touch[i]);
  }
  /* pb->inner: first the grains whose neighbours are all owned (they can
   * sweep while the copies travel), then the others */
  PetscInt a = 0, b = n;
  for (PetscInt i = 0; i < n; i++) {
    PetscBool edge = PETSC_FALSE;
    for (PetscInt k = pb->nb_off[i]; k < pb->nb_off[i + 1] && !edge; k++) edge = pb->nb[k] >= n ? PETSC_TRUE : PETSC_FALSE;
    if (edge) pb->inner[--b] = i;
    else pb->inner[a++] = i;
  }
  pb->ninner = a;
  PetscCall(MPMHaloForward(sim, &pb->halo, pb->L, sizeof(double), pb->L + n));
  if (pb->accumulated && 4 * pb->nb_off[n] > pb->caplam) {
    pb->caplam = 4 * pb->capnb;
    PetscCall(PetscFree(pb->lam));
    PetscCall(PetscMalloc1(pb->caplam, &pb->lam));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A new solve of the contacts: no correction accumulated yet. */
static PetscErrorCode ResetAccumulated(PBD *pb, PetscInt n)
{
  PetscFunctionBeginUser;
  if (!pb->accumulated) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscArrayzero(pb->lam, 4 * pb->nb_off[n]));
  PetscCall(PetscArrayzero(pb->wlam, 5 * PBD_WALL_SLOTS * n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

typedef struct {
  double contacts, overlap; /* grain-grain contacts (each counted by both grains) and object contacts; largest penetration / radius */
} PBDSweepStats;

/* The accumulated corrections of an owned grain (slots) against object o:
 * its slot; else, if the grain touches it (claim), a free one; else NULL
 * (all taken: the seed's friction then; not touched: nothing to keep). */
static double *WallSlot(double *slots, PetscInt o, PetscBool claim)
{
  for (PetscInt k = 0; k < PBD_WALL_SLOTS; k++) {
    double *sl = slots + 5 * k;
    if (sl[0] == (double)(o + 1)) return sl + 1;
    if (sl[0] == 0 && claim) {
      sl[0] = (double)(o + 1);
      return sl + 1;
    }
    if (sl[0] == 0) return NULL;
  }
  return NULL;
}

/* The factor on the grains' radii in a sweep: 1 in the solve (book), 1 -
 * -pbd_stabilization_slop in the pre-stabilization, which leaves the
 * slop's overlap to the solve. */
static double RadiusScale(const PBD *pb, PetscBool book) { return book ? 1.0 : 1.0 - pb->slop; }

/* The seed's objects: each one's contact and friction at grain i's (mass
 * m) position x (from: where the slip is measured from), weighted by omega /
 * max(L, cnt) (cnt: the grain's contacts in this sweep, the pairs' and
 * these), added to the pairs' sum; with book, the objects' share booked
 * as their impulse. */
static void WallsAveraged(PBD *pb, MPMSim sim, PetscInt i, double m, const double *from, const double *x, PetscInt cnt, PetscBool book, double ds, double *sum, PBDSweepStats *ss)
{
  const PetscInt  d = sim->dim;
  const double    r = pb->rec[i].r * RadiusScale(pb, book);
  MPMGrainContact gc[PBD_MAX_OBJECTS];
  const PetscInt  ng = MPMCollidersGrainContacts(sim->colliders, 0, from, x, r, book ? ds : 0.0, gc);

  ss->contacts += 2 * ng; /* counted once, like a pair counted by both grains */
  const double s = pb->relax / PetscMax(pb->L[i], (double)(cnt + ng));
  for (PetscInt k = 0; k < ng; k++) {
    double       dw[3];
    const double pen = mpm_pbd_wall((int)d, gc[k].phi, gc[k].n, gc[k].disp, r, gc[k].mu, gc[k].mu, dw);
    ss->overlap      = PetscMax(ss->overlap, pen / r);
    for (PetscInt a = 0; a < d; a++) sum[a] += s * dw[a];
    if (!book) continue;
    for (PetscInt a = 0; a < d; a++) dw[a] = s * dw[a] / ds; /* the object's share of the move, as a velocity change over the substep */
    MPMCollidersBookGrain(sim->colliders, gc[k].o, x, m, dw);
    MPMCollidersBodiesBookGrain(sim->colliders, gc[k].o, x, m, dw, pb->bodyJ);
  }
}

/* The Coulomb scheme's objects (-pbd_friction accumulated): after the
 * pairs, the grain at y = x + sum is projected on the objects it touches,
 * fully (the mean of their corrections: a grain in a corner does not
 * depend on the objects' order; one object is infinitely heavy and moves
 * no other grain, so this step is as order-independent as the Jacobi
 * sum): a grain on a rough floor does not creep under its neighbours'
 * pushes, as it did with the floor's share averaged with theirs.
 * Friction is bounded by the object's accumulated push in the substep
 * (pb->wlam). */
static void WallsProjected(PBD *pb, MPMSim sim, PetscInt i, double m, const double *from, const double *x, PetscBool book, double ds, double *sum, PBDSweepStats *ss)
{
  const PetscInt  d = sim->dim;
  const double    r = pb->rec[i].r * RadiusScale(pb, book);
  double          y[3] = {0, 0, 0}, *lam[PBD_MAX_OBJECTS];
  PetscInt        act = 0;
  MPMGrainContact gc[PBD_MAX_OBJECTS];

  for (PetscInt a = 0; a < d; a++) y[a] = x[a] + sum[a];
  const PetscInt ng = MPMCollidersGrainContacts(sim->colliders, 0, from, y, r + 2 * pb->rmax * pb->margin, book ? ds : 0.0, gc);
  for (PetscInt k = 0; k < ng; k++) { /* the objects acting: touching now, or having pushed in this substep */
    lam[k] = WallSlot(pb->wlam + 5 * PBD_WALL_SLOTS * i, gc[k].o, gc[k].phi < r ? PETSC_TRUE : PETSC_FALSE);
    act += (gc[k].phi < r || (lam[k] && lam[k][0] > 0)) ? 1 : 0;
  }
  const double w = 1.0 / PetscMax(act, 1);
  for (PetscInt k = 0; k < ng; k++) {
    const MPMGrainContact *g = &gc[k];
    double                 dw[3], pen;
    if (lam[k]) pen = mpm_pbd_wall_acc((int)d, g->phi, g->n, g->disp, r, g->mu, g->mu, w, lam[k], dw);
    else { /* slots full: the seed's friction */
      pen = mpm_pbd_wall((int)d, g->phi, g->n, g->disp, r, g->mu, g->mu, dw);
      for (PetscInt a = 0; a < d; a++) dw[a] *= w;
    }
    if (pen > 0) {
      ss->overlap = PetscMax(ss->overlap, pen / r);
      ss->contacts += 2;
    }
    for (PetscInt a = 0; a < d; a++) sum[a] += dw[a];
    if (!book) continue;
    for (PetscInt a = 0; a < d; a++) dw[a] /= ds; /* the object's move, as a velocity change over the substep */
    MPMCollidersBookGrain(sim->colliders, g->o, x, m, dw);
    MPMCollidersBodiesBookGrain(sim->colliders, g->o, x, m, dw, pb->bodyJ);
  }
}

/* One Jacobi sweep over the owned grains at positions pos (owned, then
 * copies): each grain's correction into pb->dx.  A pair's correction is
 * weighted by omega / max(L_a, L_b), L a grain's contacts at the
 * prediction: the seed's averaging (a grain moves by about the mean of its
 * contacts' corrections), with the same weight on both grains of a pair,
 * so the pair keeps its momentum exactly.  Objects then act as
 * WallsAveraged (the seed's) or WallsProjected (the Coulomb scheme) says.
 * The slip is measured from `from` (pb->xr for pre-stabilization, whose
 * sweeps move pb->x0, and pb->x0 for the solve): pre-stabilization has
 * friction too, or grains would slide past each other there unresisted.
 * With book, the objects' share of the correction is booked as their
 * impulse (the solve, not the pre-stabilization, which does not change
 * velocities). */
static PetscErrorCode SweepGrains(PBD *pb, MPMSim sim, const double *pos, const double *from, PetscBool book, double ds, const PetscInt *list, PetscInt nlist, MPMHalo *progress,
                                  PBDSweepStats *ss)
{
  const PetscInt d = sim->dim;
  const double  *m = MPMFieldReal(&sim->species[0]->p, sim->species[0]->p.f_m);
  const double   shrink = RadiusScale(pb, book);

  PetscFunctionBeginUser;
  for (PetscInt l = 0; l < nlist; l++) {
    const PetscInt        i  = list ? list[l] : l;
    const PBDRecord      *ri = &pb->rec[i];
    const MPMGrainParams *gi = pb->grain[ri->mat];
    const double          Ri = ri->r * shrink;
    const double         *xi = pos + i * d;
    double                sum[3] = {0, 0, 0}, da[3], db[3], *dxi = pb->dx + i * d;
    PetscInt              cnt    = 0;
    for (PetscInt k = pb->nb_off[i]; k < pb->nb_off[i + 1]; k++) {
      const PetscInt        j  = pb->nb[k];
      const PBDRecord      *rj = &pb->rec[j];
      const MPMGrainParams *gj = pb->grain[rj->mat];
      const double          Rj = rj->r * shrink;
      const double          mus = 0.5 * (gi->mu_s + gj->mu_s), muk = 0.5 * (gi->mu_k + gj->mu_k);
      const PetscBool       first = ri->id < rj->id;
      const double          w     = pb->relax / PetscMax(pb->L[i], pb->L[j]);
      double                pen;
      if (pb->accumulated) {
        double *lam = pb->lam + 4 * k;
        pen         = first ? mpm_pbd_pair_acc((int)d, xi, pos + j * d, from + i * d, from + j * d, Ri, Rj, ri->w, rj->w, mus, muk, w, lam, da, db)
                            : mpm_pbd_pair_acc((int)d, pos + j * d, xi, from + j * d, from + i * d, Rj, Ri, rj->w, ri->w, mus, muk, w, lam, da, db);
        for (PetscInt a = 0; a < d; a++) sum[a] += first ? da[a] : db[a]; /* weighted by the kernel; friction also once apart */
        if (!(pen > 0)) continue;
      } else {
        pen = first ? mpm_pbd_pair((int)d, xi, pos + j * d, from + i * d, from + j * d, Ri, Rj, ri->w, rj->w, mus, muk, da, db)
                    : mpm_pbd_pair((int)d, pos + j * d, xi, from + j * d, from + i * d, Rj, Ri, rj->w, ri->w, mus, muk, da, db);
        if (!(pen > 0)) continue;
        for (PetscInt a = 0; a < d; a++) sum[a] += w * (first ? da[a] : db[a]);
      }
      cnt++;
      ss->overlap = PetscMax(ss->overlap, pen / PetscMin(Ri, Rj));
    }
    ss->contacts += cnt;
    if (pb->accumulated) WallsProjected(pb, sim, i, m[i], from + i * d, xi, book, ds, sum, ss);
    else WallsAveraged(pb, sim, i, m[i], from + i * d, xi, cnt, book, ds, sum, ss);
    for (PetscInt a = 0; a < d; a++) dxi[a] = sum[a];
    if (progress && l % 1024 == 1023) PetscCall(MPMHaloForwardProgress(progress));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A sweep over every owned grain. */
static PetscErrorCode Sweep(PBD *pb, MPMSim sim, const double *pos, const double *from, PetscBool book, double ds, PBDSweepStats *ss)
{
  PetscFunctionBeginUser;
  ss->contacts = ss->overlap = 0;
  PetscCall(SweepGrains(pb, sim, pos, from, book, ds, NULL, sim->species[0]->p.n, NULL, ss));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* v = (x - x0) / ds; a grain slower than the sleep threshold that touches
 * something stays. */
static void Velocities(PBD *pb, MPMSim sim, double ds)
{
  MPMParticles  *p = &sim->species[0]->p;
  const PetscInt d = sim->dim;
  double        *x = MPMFieldReal(p, p->f_x), *v = MPMFieldReal(p, p->f_v);
  for (PetscInt i = 0; i < p->n; i++) {
    double v2 = 0;
    for (PetscInt a = 0; a < d; a++) {
      v[i * d + a] = (x[i * d + a] - pb->x0[i * d + a]) / ds;
      v2 += v[i * d + a] * v[i * d + a];
    }
    if (pb->sleep > 0 && v2 < pb->sleep * pb->sleep && pb->touch[i] > 0) /* a grain in free flight never sleeps, or one at rest would never fall */
      for (PetscInt a = 0; a < d; a++) {
        x[i * d + a] = pb->x0[i * d + a];
        v[i * d + a] = 0;
      }
  }
}

/* Refresh the copies of the owned rows of a (N x dim) from their owners. */
static PetscErrorCode Refresh(PBD *pb, MPMSim sim, double *a)
{
  const PetscInt n = sim->species[0]->p.n, d = sim->dim;

  PetscFunctionBeginUser;
  PetscCall(MPMHaloForward(sim, &pb->halo, a, d * sizeof(double), a + n * d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Pre-stabilization (Macklin et al. 2014 s. 4.4): the contacts solved on
 * the start positions move them and the prediction alike. */
static PetscErrorCode Stabilize(PBD *pb, MPMSim sim, PBDSweepStats *ss)
{
  MPMParticles  *p = &sim->species[0]->p;
  const PetscInt d = sim->dim;
  double        *x = MPMFieldReal(p, p->f_x);

  PetscFunctionBeginUser;
  PetscCall(ResetAccumulated(pb, p->n));
  for (PetscInt it = 0; it < pb->stabilize; it++) {
    PetscCall(Sweep(pb, sim, pb->x0, pb->xr, PETSC_FALSE, 0.0, ss));
    for (PetscInt k = 0; k < p->n * d; k++) {
      pb->x0[k] += pb->dx[k];
      x[k] += pb->dx[k];
    }
    PetscCall(Refresh(pb, sim, pb->x0));
  }
  if (pb->stabilize) {
    PetscCall(PetscArraycpy(pb->x, x, p->n * d));
    PetscCall(Refresh(pb, sim, pb->x));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Chebyshev weight of sweep it (Wang 2015, "A Chebyshev semi-iterative
 * approach for accelerating projective and position-based dynamics"): 1
 * for the first -pbd_chebyshev_delay sweeps, then 2 / (2 - rho^2), then
 * 4 / (4 - rho^2 omega).  The same for every grain, so as rank invariant
 * as the plain sweep. */
static double Chebyshev(const PBD *pb, PetscInt it, double omega)
{
  if (pb->rho <= 0 || it < pb->delay) return 1.0;
  if (it == pb->delay) return 2.0 / (2.0 - pb->rho * pb->rho);
  return 4.0 / (4.0 - pb->rho * pb->rho * omega);
}

/* Dynamic bodies (-<object>_dynamic) move as the grains do: their free
 * velocities (gravity, torque) take them to where the substep ends (after
 * the pre-stabilization, which works on where the grains and bodies
 * began), the grains are solved against them there as against any object,
 * and the impulses the grains took (summed in fixed point,
 * MPMCollidersBodiesBookGrain, so in an order-independent way) give the
 * bodies their velocities, with which they move from where the substep
 * began (bodies.c). */
static PetscErrorCode BodiesPredict(PBD *pb, MPMSim sim, double ds)
{
  const double gs = MPMGravityScale(sim), g[3] = {gs * sim->gravity[0], gs * sim->gravity[1], gs * sim->gravity[2]};

  PetscFunctionBeginUser;
  if (sim->colliders->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  MPMCollidersBodiesPredict(sim->colliders, g, ds);
  PetscCall(PetscArrayzero(pb->bodyJ, 6 * sim->colliders->nobj + 1));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After each sweep of the solve: the bodies take the grains' impulses so
 * far and move on with them from where the substep began, so the next
 * sweep sees them yield (a chain floor - grain - body converges within
 * the sweeps as a chain of grains does, instead of a sweep's worth per
 * substep).  One sum over ranks of 6 integers per object a sweep. */
static PetscErrorCode BodiesSweep(PBD *pb, MPMSim sim, double ds)
{
  PetscFunctionBeginUser;
  if (sim->colliders->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMCollidersBodiesSettleExact(sim->colliders, sim->comm, pb->bodyJ, pb->bodysum));
  MPMCollidersBodiesCommit(sim->colliders, ds);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the solve the domain's faces, the other objects and the other
 * bodies stop the bodies, which then move.  Everything is where the
 * substep of length ds began at t0 (the bodies, and the objects with a
 * prescribed motion, which the grains saw where it ends): the surfaces'
 * gaps are measured from there, and the contacts ask for the velocities
 * relative to the surfaces'. */
static PetscErrorCode BodiesFinish(MPMSim sim, double t0, double ds)
{
  PetscFunctionBeginUser;
  if (sim->colliders->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  MPMCollidersBodiesCommit(sim->colliders, 0.0);
  MPMCollidersAtTime(sim->colliders, t0);
  PetscCall(MPMCollidersBodiesWalls(sim->colliders, sim->rank == 0 ? PETSC_TRUE : PETSC_FALSE, ds));
  MPMCollidersAtTime(sim->colliders, t0 + ds);
  MPMCollidersBodiesCommit(sim->colliders, ds);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Substep(PBD *pb, MPMSim sim, double ds, PBDSweepStats *ss)
{
  MPMParticles  *p = &sim->species[0]->p;
  const PetscInt d = sim->dim;
  PetscInt       N = 0;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_NEIGHBOURS, 0, 0, 0, 0));
  PetscCall(Predict(pb, sim, ds, &N));
  PetscCall(FindNeighbours(pb, sim, N));
  PetscCall(PetscLogEventEnd(MPM_EVENT_NEIGHBOURS, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(MPM_EVENT_CONTACTS, 0, 0, 0, 0));
  PetscCall(Stabilize(pb, sim, ss));
  if (sim->colliders->ndynamic) MPMCollidersBodiesAhead(sim->colliders, ds); /* the bodies where their free velocities take them, for the solve */
  PetscCall(ResetAccumulated(pb, p->n));
  double omega = 1;
  if (pb->rho > 0) PetscCall(PetscArrayzero(pb->eprev, 6 * sim->colliders->nobj));
  for (PetscInt it = 0; it < pb->iterations; it++) {
    double *x = MPMFieldReal(p, p->f_x);
    /* the last sweep's positions: the owned ones, then the copies from
     * their owners, sent while the grains without copies as neighbours
     * sweep (a grain's correction does not depend on the others', so the
     * split changes no bit) */
    if (it > 0) {
      PetscCall(PetscArraycpy(pb->x, x, p->n * d));
      PetscCall(MPMHaloForwardBegin(sim, &pb->halo, pb->x, d * sizeof(double), pb->x + p->n * d));
    }
    ss->contacts = ss->overlap = 0;
    if (pb->rho > 0) PetscCall(PetscArraycpy(pb->snap, MPMCollidersImpulses(sim->colliders), 6 * sim->colliders->nobj));
    PetscCall(SweepGrains(pb, sim, pb->x, pb->x0, PETSC_TRUE, ds, pb->inner, pb->ninner, it > 0 ? &pb->halo : NULL, ss));
    if (it > 0) PetscCall(MPMHaloForwardEnd(&pb->halo));
    PetscCall(SweepGrains(pb, sim, pb->x, pb->x0, PETSC_TRUE, ds, pb->inner + pb->ninner, p->n - pb->ninner, NULL, ss));
    omega = Chebyshev(pb, it, omega);
    if (pb->rho > 0) MPMCollidersImpulseRecombine(sim->colliders, pb->snap, omega, pb->eprev);
    for (PetscInt k = 0; k < p->n * d; k++) {
      const double xk = pb->x[k];
      x[k]            = omega == 1 ? xk + pb->dx[k] : omega * (xk + pb->dx[k] - pb->xprev[k]) + pb->xprev[k];
      pb->xprev[k]    = xk;
    }
    PetscCall(BodiesSweep(pb, sim, ds));
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_CONTACTS, 0, 0, 0, 0));
  Velocities(pb, sim, ds);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDStep(MPMIntegrator integ, MPMSim sim, double dt, double *vmax)
{
  PBD          *pb = (PBD *)integ->data;
  MPMParticles *p  = &sim->species[0]->p;
  const double  ds = dt / pb->substeps;
  PBDSweepStats ss = {0, 0};
  double        sums[2], over;

  PetscFunctionBeginUser;
  pb->halo.bytes = 0;
  for (PetscInt s = 0; s < pb->substeps; s++) {
    MPMCollidersAtTime(sim->colliders, sim->t + (s + 1) * ds); /* where the objects are when the substep ends, as the predicted grains */
    PetscCall(BodiesPredict(pb, sim, ds));
    PetscCall(Substep(pb, sim, ds, &ss));
    PetscCall(BodiesFinish(sim, sim->t + s * ds, ds));
  }
  MPMCollidersElapse(sim->colliders, dt);
  *vmax = MPMCollidersBodiesSpeed(sim->colliders);
  const double *v = MPMFieldReal(p, p->f_v);
  for (PetscInt i = 0; i < p->n; i++) {
    double v2 = 0;
    for (PetscInt a = 0; a < sim->dim; a++) v2 += v[i * sim->dim + a] * v[i * sim->dim + a];
    *vmax = PetscMax(*vmax, sqrt(v2));
  }
  /* the last sweep's contacts and overlap, and the step's halo traffic */
  sums[0] = ss.contacts / 2;
  sums[1] = pb->halo.bytes;
  over    = ss.overlap;
  PetscCall(MPMGlobalSum(sim->comm, sums, 2));
  PetscCall(MPMGlobalMax(sim->comm, &over, 1));
  pb->st.value[0] = (double)(pb->substeps * pb->iterations);
  pb->st.value[1] = sums[0];
  pb->st.value[2] = over;
  pb->st.value[3] = sums[1];
  pb->st.total[0] += pb->st.value[0];
  pb->st.total[1] = PetscMax(pb->st.total[1], sums[0]);
  pb->st.total[2] = PetscMax(pb->st.total[2], over);
  pb->st.total[3] += sums[1];
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDStats(MPMIntegrator integ, MPMStepStats *s)
{
  PetscFunctionBeginUser;
  *s = ((PBD *)integ->data)->st;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDGetState(MPMIntegrator integ, PetscInt *n, double *state)
{
  PetscFunctionBeginUser;
  *n = MPMStepStatsGetTotals(&((PBD *)integ->data)->st, state);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDSetState(MPMIntegrator integ, PetscInt n, const double *state)
{
  PetscFunctionBeginUser;
  PetscCall(MPMStepStatsSetTotals(&((PBD *)integ->data)->st, "pbd", n, state));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDView(MPMIntegrator integ, char *buf, size_t len)
{
  const PBD *pb = (const PBD *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(buf, len, "position-based grains, %" PetscInt_FMT " substeps x %" PetscInt_FMT " Jacobi iterations", pb->substeps, pb->iterations));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PBDDestroy(MPMIntegrator integ)
{
  PBD *pb = (PBD *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(MPMHaloDestroy(&pb->halo));
  PetscCall(PetscFree(pb->rec));
  PetscCall(PetscFree6(pb->x, pb->x0, pb->xr, pb->dx, pb->L, pb->xprev));
  PetscCall(PetscFree(pb->key));
  PetscCall(PetscFree(pb->nb_off));
  PetscCall(PetscFree(pb->nb));
  PetscCall(PetscFree(pb->lam));
  PetscCall(PetscFree(pb->wlam));
  PetscCall(PetscFree2(pb->inner, pb->touch));
  PetscCall(PetscFree2(pb->snap, pb->eprev));
  PetscCall(PetscFree2(pb->bodyJ, pb->bodysum));
  PetscCall(PetscFree2(pb->bucket_start, pb->bucket));
  PetscCall(PetscFree(pb->grain));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorCreate_PBD(MPMIntegrator integ)
{
  PetscFunctionBeginUser;
  integ->ops.options   = PBDOptions;
  integ->ops.check     = PBDCheck;
  integ->ops.setup     = PBDSetUp;
  integ->ops.stable_dt = PBDStableDt;
  integ->ops.step      = PBDStep;
  integ->ops.stats     = PBDStats;
  integ->ops.get_state = PBDGetState;
  integ->ops.set_state = PBDSetState;
  integ->ops.view      = PBDView;
  integ->ops.destroy   = PBDDestroy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
