/* Initial particles (regions) and inflow (emitters).
 *
 * Both are rank invariant by construction: particle positions live on a
 * global lattice of spacing h/ppc aligned with the domain corner, jitter
 * comes from a counter-based hash of the particle id, and every rank
 * generates only the lattice points that fall in its own slab or block.  Ids are
 * (source + 1) << 48 | lattice index, unique and independent of the rank
 * count. */
#include "core.h"

static const char *const SamplingNames[] = {"lattice", "jitter", "MPMSampling", "MPM_SAMPLING_", NULL};

/* Move x by up to amp / 2 per axis, drawn from particle id's numbers
 * stream, stream + 1, ...: the same on every rank and after a restart. */
static void Jitter(uint64_t seed, int64_t id, uint64_t stream, double amp, PetscInt d, double *x)
{
  for (PetscInt a = 0; a < d; a++) x[a] += amp * (mpm_uniform(seed, (uint64_t)id, stream + (uint64_t)a) - 0.5);
}

#define ID_SHIFT 48

static PetscErrorCode CheckInDomain(MPMSim sim, const char *what, const double *lo, const double *hi)
{
  const MPMLayout *g = &sim->layout;
  const double   tol = 1e-9 * g->h;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < sim->dim; a++)
    PetscCheck(lo[a] >= g->lo[a] - tol && hi[a] <= g->hi[a] + tol, sim->comm, PETSC_ERR_USER_INPUT,
               "%s extends outside the domain along %c: [%g, %g] is not inside [%g, %g] (-domain_lo/-domain_hi)", what, "xyz"[a], lo[a], hi[a], g->lo[a], g->hi[a]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode RegionSetUp(MPMSim sim, PetscInt r, const char *name)
{
  MPMRegion *R = &sim->reg[r];
  char       prefix[MPM_NAME_LEN + 1], title[2 * MPM_NAME_LEN], mname[MPM_NAME_LEN] = "", what[3 * MPM_NAME_LEN];
  double     lo[3], hi[3];
  PetscInt   sampling = MPM_SAMPLING_JITTER;

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(R->name, name, sizeof(R->name)));
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%s_", name));
  PetscCall(PetscSNPrintf(title, sizeof(title), "Region '%s'", name));
  PetscCall(MPMShapeFromOptions(sim->comm, sim->dim, prefix, title, PETSC_FALSE, PETSC_FALSE, &R->ps));
  PetscCall(MPMPlacedShapeKeep(&R->ps, sim->dim, -1, 0, 0)); /* a region is seeded and counted across the whole domain */
  if (sim->species[0]->nmat) PetscCall(PetscStrncpy(mname, sim->species[0]->matinfo[0].name, sizeof(mname)));
  R->ppc    = 2;
  R->jitter = 0.5;
  PetscCall(PetscStrlcat(title, ": particles", sizeof(title))); /* -help prints one block per title */
  PetscOptionsBegin(sim->comm, prefix, title, NULL);
  PetscCall(PetscOptionsString("-material", "Material of the particles (a name from -materials)", NULL, mname, mname, sizeof(mname), NULL));
  PetscCall(PetscSNPrintf(what, sizeof(what), "-%smaterial", prefix));
  PetscCall(MPMSpeciesFindMaterial(sim, what, mname, &R->species, &R->mat));
  R->density = sim->species[R->species]->matinfo[R->mat].density;
  PetscCall(MPMOptionsReal("-density", "Density, default the material's [kg/m^3]", NULL, R->density, &R->density, NULL));
  PetscCall(MPMOptionsReal("-density_variation", "Random particle density: uniform in density (1 +- this fraction), as Stomakhin et al.'s snowballs [-]", NULL, R->density_variation, &R->density_variation, NULL));
  PetscCall(MPMOptionsInt("-ppc", "Particles per cell along each axis [-]", NULL, R->ppc, &R->ppc, NULL));
  PetscCall(MPMOptionsEList("-sampling", "Particle placement", NULL, SamplingNames, 2, SamplingNames[sampling], &sampling, NULL));
  PetscCall(MPMOptionsReal("-jitter", "Random displacement as a fraction of the particle spacing (jitter sampling) [-]", NULL, R->jitter, &R->jitter, NULL));
  PetscCall(PetscOptionsBool("-clip_to_domain", "Seed only the part inside the domain (e.g. a quarter column against symmetry planes)", NULL, R->clip, &R->clip, NULL));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-velocity", "Initial velocity v0 [m/s]", sim->dim, R->vel, NULL));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-velocity_gradient", "Initial velocity gradient G, v = v0 + G (x - center), row-major [1/s]", sim->dim * sim->dim, R->grad, NULL));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-velocity_wavevector", "Sine profile v = v0 sin(k . (x - lo)) instead of uniform v0 [1/m]", sim->dim, R->wavevector, &R->sine));
  PetscCall(MPMOptionsReal("-water_table", "Water: start at the hydrostatic pressure below this height (along -gravity) instead of at rest, p = rho_w |g| depth [m]", NULL, R->water_table,
                           &R->water_table, &R->hydrostatic));
  PetscOptionsEnd();
  R->sampling = (MPMSampling)sampling;
  PetscCheck(R->density > 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sdensity must be > 0 kg/m^3, got %g", prefix, R->density);
  PetscCheck(R->density_variation >= 0 && R->density_variation < 1, sim->comm, PETSC_ERR_USER_INPUT, "-%sdensity_variation must be in [0, 1), got %g", prefix, R->density_variation);
  PetscCheck(R->ppc >= 1 && R->ppc <= 8, sim->comm, PETSC_ERR_USER_INPUT, "-%sppc must be in [1, 8], got %" PetscInt_FMT, prefix, R->ppc);
  PetscCheck(R->jitter >= 0 && R->jitter <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-%sjitter must be in [0, 1], got %g", prefix, R->jitter);
  PetscCheck(MPMPlacedShapeBBox(&R->ps, sim->dim, lo, hi), sim->comm, PETSC_ERR_USER_INPUT,
             "Region '%s' is unbounded (-%sinside_out or an infinite cylinder): give it a finite shape (cylinders need -%shalf_length > 0)", name, prefix, prefix);
  PetscCall(PetscSNPrintf(what, sizeof(what), "Region '%s' (-%sshape and its size; or set -%sclip_to_domain)", name, prefix, prefix));
  if (R->clip) {
    for (PetscInt a = 0; a < sim->dim; a++) {
      lo[a] = PetscMax(lo[a], sim->layout.lo[a]);
      hi[a] = PetscMin(hi[a], sim->layout.hi[a]);
      PetscCheck(lo[a] < hi[a], sim->comm, PETSC_ERR_USER_INPUT, "Region '%s' does not intersect the domain along %c", name, "xyz"[a]);
    }
  }
  PetscCall(CheckInDomain(sim, what, lo, hi));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMRegionsSetUp(MPMSim sim)
{
  char    *names[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "Initial particles", "-regions", "Names of the seeded regions (earlier ones of the same species win where they overlap); each reads -<name>_*", names, &n));
  sim->nreg = n;
  PetscCall(PetscCalloc1(PetscMax(n, 1), &sim->reg));
  for (PetscInt r = 0; r < n; r++) PetscCall(RegionSetUp(sim, r, names[r]));
  PetscCall(MPMOptionsFreeNames(names, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Lattice index range [ilo, ihi) of region r along each axis, clipped to
 * this rank's part along the cut axes; ulo, nfull: the range unclipped. */
static void RegionLattice(const MPMSim sim, const MPMRegion *R, double s, PetscInt *ilo, PetscInt *ihi, PetscInt *ulo, PetscInt *nfull)
{
  const MPMLayout *g = &sim->layout;
  double         lo[3], hi[3];
  MPMPlacedShapeBBox(&R->ps, sim->dim, lo, hi);
  for (PetscInt a = 0; a < 3; a++) {
    if (a >= sim->dim) {
      ilo[a] = 0;
      ihi[a] = nfull[a] = 1;
      continue;
    }
    /* inside the domain; clipped in floating point first, as a huge (clipped) region has no int */
    const double n = (double)(g->cells[a] * R->ppc);
    ilo[a]         = PetscMax(0, (PetscInt)floor(PetscMin(PetscMax((lo[a] - g->lo[a]) / s, -1.0), n + 1.0)));
    ihi[a]         = PetscMin(g->cells[a] * R->ppc, (PetscInt)ceil(PetscMin(PetscMax((hi[a] - g->lo[a]) / s, -1.0), n + 1.0)));
    nfull[a] = ihi[a] - ilo[a];
  }
  /* lattice points of this rank's slab or block: cells [xs, xs + xm) of the padded grid along each cut axis */
  for (PetscInt a = 0; a < 3; a++) {
    ulo[a] = ilo[a]; /* the unclipped start, for the id */
    if (g->parts[a] == 1) continue;
    ilo[a] = PetscMax(ilo[a], (g->xs[a] - g->pad) * R->ppc);
    ihi[a] = PetscMin(ihi[a], (g->xs[a] + g->xm[a] - g->pad) * R->ppc);
  }
}

/* Earlier regions of the same species win where they overlap; species
 * overlap (water in the pores of sand). */
PetscInt MPMRegionOfId(int64_t id) { return (PetscInt)(id >> ID_SHIFT) - 1; }

/* The k-th particle made by splitting (resample.c): a source of its own,
 * past every region and emitter (at most MPM_MAX_NAMES each). */
#define SPLIT_SOURCE 0x7FFE
int64_t MPMSplitParticleId(int64_t k) { return ((int64_t)SPLIT_SOURCE << ID_SHIFT) | k; }

static PetscBool InsideEarlier(const MPMSim sim, PetscInt r, const double *x)
{
  double g[3];
  for (PetscInt e = 0; e < r; e++) {
    const MPMPlacedShape *ps = &sim->reg[e].ps;
    if (sim->reg[e].species != sim->reg[r].species) continue;
    if (MPMPlacedShapeEval(ps, sim->dim, x, g, NULL) <= 0) return PETSC_TRUE;
  }
  return PETSC_FALSE;
}

/* Initial velocity field of a region: uniform, affine (APIC C = G, as in
 * Klar et al. section 5.7) or a sine profile (the mode shape of the bar
 * vibration benchmark). */
static void RegionVelocity(const MPMSim sim, const MPMRegion *R, const double *x, double *v, double *C)
{
  const PetscInt d = sim->dim;
  double         lo[3], hi[3], phase = 0;
  MPMPlacedShapeBBox(&R->ps, d, lo, hi);
  for (PetscInt a = 0; a < d; a++) phase += R->wavevector[a] * (x[a] - lo[a]);
  for (PetscInt a = 0; a < d; a++) {
    v[a] = R->sine ? R->vel[a] * sin(phase) : R->vel[a];
    for (PetscInt b = 0; b < d; b++) {
      v[a] += R->grad[a * d + b] * (x[b] - R->ps.c0[b]);
      C[a * d + b] = R->grad[a * d + b];
    }
  }
}

/* Seed region r on this rank's slab or block or, with count, only count
 * its particles (*count += ...; and per node plane of the cut axes,
 * hist[plane] += ..., with hist) at the positions seeding would give them. */
static PetscErrorCode SeedRegion(MPMSim sim, PetscInt r, PetscInt *count, int64_t *hist)
{
  const MPMRegion *R = &sim->reg[r];
  const PetscInt   d = sim->dim;
  const double     s = sim->layout.h / R->ppc, vol = pow(s, (double)d);
  PetscInt         ilo[3], ihi[3], ulo[3], nfull[3], start;
  MPMParticles    *p = &sim->species[R->species]->p;
  const PetscInt   f_C = sim->species[R->species]->f_affine;

  PetscFunctionBeginUser;
  RegionLattice(sim, R, s, ilo, ihi, ulo, nfull);
  PetscCheck((double)nfull[0] * nfull[1] * nfull[2] < (double)(1LL << ID_SHIFT), sim->comm, PETSC_ERR_SUP, "Region '%s' has too many lattice points for 48-bit ids", R->name);
  for (PetscInt k = ilo[2]; k < ihi[2]; k++)
    for (PetscInt j = ilo[1]; j < ihi[1]; j++)
      for (PetscInt i = ilo[0]; i < ihi[0]; i++) {
        const PetscInt idx[3] = {i, j, k};
        double         x[3] = {0, 0, 0}, gr[3];
        PetscInt       rel[3];
        for (PetscInt a = 0; a < d; a++) x[a] = sim->layout.lo[a] + (idx[a] + 0.5) * s;
        if (MPMPlacedShapeEval(&R->ps, d, x, gr, NULL) > 0 || InsideEarlier(sim, r, x)) continue;
        for (PetscInt a = 0; a < 3; a++) rel[a] = idx[a] - ulo[a];
        const int64_t id = ((int64_t)(r + 1) << ID_SHIFT) | (((int64_t)rel[2] * nfull[1] + rel[1]) * nfull[0] + rel[0]);
        if (R->sampling == MPM_SAMPLING_JITTER)
          Jitter(sim->seed, id, 0, R->jitter * s, d, x);
        if (count) {
          if (hist) MPMLayoutPlaneCount(&sim->layout, 1, x, hist);
          (*count)++;
          continue;
        }
        double C[9];
        PetscCall(MPMParticlesAppend(p, 1, &start));
        MPMFieldInt64(p, p->f_id)[start] = id;
        RegionVelocity(sim, R, x, MPMFieldReal(p, p->f_v) + start * d, C);
        if (f_C >= 0)
          for (PetscInt a = 0; a < d * d; a++) MPMFieldReal(p, f_C)[start * d * d + a] = C[a];
        for (PetscInt a = 0; a < d; a++) MPMFieldReal(p, p->f_x)[start * d + a] = x[a];
        MPMFieldReal(p, p->f_m)[start]    = R->density * vol * (R->density_variation > 0 ? 1.0 + R->density_variation * (2.0 * mpm_uniform(sim->seed, (uint64_t)id, 3) - 1.0) : 1.0);
        MPMFieldReal(p, p->f_V0)[start]   = vol;
        MPMFieldInt32(p, p->f_mat)[start] = (int32_t)R->mat;
      }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the initial state (seeded, or read from a checkpoint) nothing
 * evaluates a region's shape again, so its terrain heights, mesh samples
 * and vertices go: a landslide's body cut between two copies of a terrain
 * held them on every rank for the whole run (inputs/landslide_terrain_3d.yaml:
 * two of the three copies of valley.asc). */
PetscErrorCode MPMRegionsRelease(MPMSim sim)
{
  PetscFunctionBeginUser;
  for (PetscInt r = 0; r < sim->nreg; r++) PetscCall(MPMPlacedShapeDestroy(&sim->reg[r].ps)); /* not to be evaluated again */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The particles are counted first and every species' storage reserved
 * once: appending them one by one grew every field geometrically, and the
 * freed smaller copies stayed in the heap (1M particles of 309 B of state
 * peaked at 557 MB resident). */
PetscErrorCode MPMSeedRegions(MPMSim sim)
{
  PetscInt count[MPM_MAX_SPECIES] = {0};

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_SEED, 0, 0, 0, 0));
  for (PetscInt r = 0; r < sim->nreg; r++) PetscCall(SeedRegion(sim, r, &count[sim->reg[r].species], NULL));
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(MPMParticlesReserve(&sim->species[s]->p, sim->species[s]->p.n + count[s]));
  for (PetscInt r = 0; r < sim->nreg; r++) {
    const MPMParticles *p      = &sim->species[sim->reg[r].species]->p;
    int64_t             before = p->n, offset, total;
    PetscCall(SeedRegion(sim, r, NULL, NULL));
    PetscCall(MPMGlobalOffset(sim->comm, p->n - before, &offset, &total));
    PetscCheck(total > 0, sim->comm, PETSC_ERR_USER_INPUT,
               "Region '%s' received no particles: it is smaller than the particle spacing dx/ppc = %g m, or covered by earlier regions (-%s_ppc, its size)", sim->reg[r].name,
               sim->layout.h / sim->reg[r].ppc, sim->reg[r].name);
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_SEED, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* hist[plane] += this rank's particles of every region per node plane
 * of every cut axis (MPMLayoutPlaneCount), without seeding them (the
 * initial placement of the slabs or blocks). */
PetscErrorCode MPMRegionsPlaneCounts(MPMSim sim, int64_t *hist)
{
  PetscInt n = 0;

  PetscFunctionBeginUser;
  for (PetscInt r = 0; r < sim->nreg; r++) PetscCall(SeedRegion(sim, r, &n, hist));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Emitters: a disk (a segment in 2D) that releases layers of particles with */
/* spacing h/ppc at a prescribed speed, like sand from a spout.               */
/* ------------------------------------------------------------------------ */
static void EmitterBasis(MPMEmitter *E, PetscInt d)
{
  if (d == 2) {
    E->t1[0] = -E->dir[1];
    E->t1[1] = E->dir[0];
    return;
  }
  const double *n = E->dir;
  double        e[3] = {0, 0, 0}, len = 0;
  e[fabs(n[0]) < 0.6 ? 0 : (fabs(n[1]) < 0.6 ? 1 : 2)] = 1; /* an axis not parallel to n */
  E->t1[0] = n[1] * e[2] - n[2] * e[1];
  E->t1[1] = n[2] * e[0] - n[0] * e[2];
  E->t1[2] = n[0] * e[1] - n[1] * e[0];
  for (int a = 0; a < 3; a++) len += E->t1[a] * E->t1[a];
  for (int a = 0; a < 3; a++) E->t1[a] /= sqrt(len);
  E->t2[0] = n[1] * E->t1[2] - n[2] * E->t1[1];
  E->t2[1] = n[2] * E->t1[0] - n[0] * E->t1[2];
  E->t2[2] = n[0] * E->t1[1] - n[1] * E->t1[0];
}

static PetscErrorCode EmitterLayout(MPMSim sim, MPMEmitter *E)
{
  const PetscInt d = sim->dim;
  const double   s = sim->layout.h / E->ppc;
  const PetscInt m = (PetscInt)floor(2 * E->radius / s + 1e-9);
  PetscInt       n = 0;

  PetscFunctionBeginUser;
  PetscCheck(m >= 1, sim->comm, PETSC_ERR_USER_INPUT, "-%s_radius %g is smaller than half the particle spacing %g", E->name, E->radius, 0.5 * s);
  PetscCall(PetscMalloc1(m * (d == 3 ? m : 1) * d, &E->layer_offsets));
  for (PetscInt j = 0; j < (d == 3 ? m : 1); j++)
    for (PetscInt i = 0; i < m; i++) {
      const double a = (i + 0.5) * s - 0.5 * m * s, b = d == 3 ? (j + 0.5) * s - 0.5 * m * s : 0.0;
      if (d == 3 && a * a + b * b > E->radius * E->radius) continue; /* a disk in 3D */
      for (PetscInt c = 0; c < d; c++) E->layer_offsets[n * d + c] = a * E->t1[c] + b * E->t2[c];
      n++;
    }
  E->per_layer = n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode EmitterSetUp(MPMSim sim, PetscInt e, const char *name)
{
  MPMEmitter *E = &sim->em[e];
  char        prefix[MPM_NAME_LEN + 1], title[2 * MPM_NAME_LEN], mname[MPM_NAME_LEN] = "", what[3 * MPM_NAME_LEN];
  PetscBool   cset, dset;
  double      len = 0, lo[3], hi[3];

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(E->name, name, sizeof(E->name)));
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%s_", name));
  PetscCall(PetscSNPrintf(title, sizeof(title), "Emitter '%s'", name));
  if (sim->species[0]->nmat) PetscCall(PetscStrncpy(mname, sim->species[0]->matinfo[0].name, sizeof(mname)));
  E->ppc     = 2;
  E->t_start = 0;
  E->t_stop  = PETSC_MAX_REAL;
  E->source  = sim->nreg + e;
  PetscOptionsBegin(sim->comm, prefix, title, NULL);
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-center", "Centre of the outlet [m]", sim->dim, E->center, &cset));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-direction", "Flow direction [-]", sim->dim, E->dir, &dset));
  PetscCall(MPMOptionsReal("-speed", "Outflow speed [m/s]", NULL, E->speed, &E->speed, NULL));
  PetscCall(MPMOptionsReal("-radius", "Outlet radius (half width in 2D) [m]", NULL, E->radius, &E->radius, NULL));
  PetscCall(PetscOptionsString("-material", "Material (a name from -materials)", NULL, mname, mname, sizeof(mname), NULL));
  PetscCall(PetscSNPrintf(what, sizeof(what), "-%smaterial", prefix));
  PetscCall(MPMSpeciesFindMaterial(sim, what, mname, &E->species, &E->mat));
  E->density = sim->species[E->species]->matinfo[E->mat].density;
  PetscCall(MPMOptionsReal("-density", "Density, default the material's [kg/m^3]", NULL, E->density, &E->density, NULL));
  PetscCall(MPMOptionsInt("-ppc", "Particles per cell along each axis [-]", NULL, E->ppc, &E->ppc, NULL));
  PetscCall(MPMOptionsReal("-start", "Time the flow starts [s]", NULL, E->t_start, &E->t_start, NULL));
  PetscCall(MPMOptionsReal("-stop", "Time the flow stops [s]", NULL, E->t_stop, &E->t_stop, NULL));
  PetscCall(MPMOptionsReal("-jitter", "Random displacement of each released particle per axis, as a fraction of the spacing, drawn from its id (grains from a lattice stack in columns) [-]", NULL,
                           E->jitter, &E->jitter, NULL));
  PetscOptionsEnd();
  PetscCheck(cset, sim->comm, PETSC_ERR_USER_INPUT, "-%scenter with %" PetscInt_FMT " values is required", prefix, sim->dim);
  PetscCheck(dset, sim->comm, PETSC_ERR_USER_INPUT, "-%sdirection with %" PetscInt_FMT " values is required", prefix, sim->dim);
  PetscCheck(E->t_start >= 0 && E->t_stop > E->t_start, sim->comm, PETSC_ERR_USER_INPUT, "-%sstart must be >= 0 s and -%sstop > -%sstart (got %g and %g)", prefix, prefix, prefix,
             E->t_start, E->t_stop);
  PetscCheck(E->speed > 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sspeed must be > 0 m/s, got %g", prefix, E->speed);
  PetscCheck(E->radius > 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sradius must be > 0 m, got %g", prefix, E->radius);
  PetscCheck(E->density > 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sdensity must be > 0 kg/m^3, got %g", prefix, E->density);
  PetscCheck(E->ppc >= 1 && E->ppc <= 8, sim->comm, PETSC_ERR_USER_INPUT, "-%sppc must be in [1, 8], got %" PetscInt_FMT, prefix, E->ppc);
  PetscCheck(E->jitter >= 0 && E->jitter < 1, sim->comm, PETSC_ERR_USER_INPUT, "-%sjitter must be in [0, 1), got %g", prefix, E->jitter);
  PetscCall(MPMVectorTame(sim->dim, E->dir));
  for (PetscInt a = 0; a < sim->dim; a++) len += E->dir[a] * E->dir[a];
  PetscCheck(len > 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sdirection must be nonzero", prefix);
  for (PetscInt a = 0; a < sim->dim; a++) E->dir[a] /= sqrt(len);
  for (PetscInt a = 0; a < sim->dim; a++) { /* the outlet is a disk (segment) normal to the direction */
    const double ext = E->radius * sqrt(PetscMax(0.0, 1.0 - E->dir[a] * E->dir[a]));
    lo[a]            = E->center[a] - ext;
    hi[a]            = E->center[a] + ext;
  }
  PetscCall(PetscSNPrintf(what, sizeof(what), "Emitter '%s' (-%scenter, -%sradius)", name, prefix, prefix));
  PetscCall(CheckInDomain(sim, what, lo, hi));
  EmitterBasis(E, sim->dim);
  PetscCall(EmitterLayout(sim, E));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMEmittersSetUp(MPMSim sim)
{
  char    *names[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "Inflow", "-emitters", "Names of the inflow emitters; each reads -<name>_*", names, &n));
  sim->nem = n;
  PetscCall(PetscCalloc1(PetscMax(n, 1), &sim->em));
  for (PetscInt e = 0; e < n; e++) PetscCall(EmitterSetUp(sim, e, names[e]));
  PetscCall(MPMOptionsFreeNames(names, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Release the layers due by time t_new; each rank keeps the particles in
 * its slab or block.  *emitted is the global count (identical on every rank). */
static PetscErrorCode EmitterStep(MPMSim sim, MPMEmitter *E, double t_new, int64_t *emitted)
{
  const PetscInt d = sim->dim;
  const double   s = sim->layout.h / E->ppc, vol = pow(s, (double)d), tend = PetscMin(t_new, E->t_stop);
  MPMParticles  *p = &sim->species[E->species]->p;
  PetscInt       start;

  PetscFunctionBeginUser;
  if (tend < E->t_start) PetscFunctionReturn(PETSC_SUCCESS);
  const int64_t due = (int64_t)floor((tend - E->t_start) * E->speed / s) + 1;
  for (int64_t k = E->layers; k < due; k++) {
    const double travel = E->speed * (t_new - (E->t_start + k * s / E->speed)); /* distance since its release */
    for (PetscInt j = 0; j < E->per_layer; j++) {
      double        x[3] = {0, 0, 0};
      const int64_t id   = ((int64_t)(E->source + 1) << ID_SHIFT) | (k * (int64_t)E->per_layer + j);
      for (PetscInt a = 0; a < d; a++) x[a] = E->center[a] + E->layer_offsets[j * d + a] + travel * E->dir[a];
      if (E->jitter > 0) /* from the id: the same on every rank, and again after a restart */
        Jitter(sim->seed, id, 8, E->jitter * s, d, x);
      /* this rank's, or (outside the grid, owned by no part) rank 0's: the migration then reports it or deletes it as it does any particle that left */
      if (MPMLayoutInside(&sim->layout, x) ? MPMLayoutOwnerOf(&sim->layout, x) >= 0 : sim->rank != 0) continue;
      PetscCall(MPMParticlesAppend(p, 1, &start));
      MPMFieldInt64(p, p->f_id)[start] = id;
      for (PetscInt a = 0; a < d; a++) {
        MPMFieldReal(p, p->f_x)[start * d + a] = x[a];
        MPMFieldReal(p, p->f_v)[start * d + a] = E->speed * E->dir[a];
      }
      MPMFieldReal(p, p->f_m)[start]    = E->density * vol;
      MPMFieldReal(p, p->f_V0)[start]   = vol;
      MPMFieldInt32(p, p->f_mat)[start] = (int32_t)E->mat;
    }
    *emitted += E->per_layer;
  }
  E->layers = PetscMax(E->layers, due);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMEmittersStep(MPMSim sim, double t_new, int64_t *emitted)
{
  PetscFunctionBeginUser;
  *emitted = 0;
  for (PetscInt e = 0; e < sim->nem; e++) PetscCall(EmitterStep(sim, &sim->em[e], t_new, emitted));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* An upper bound of the particles this rank will hold from the regions
 * (every lattice point of each region's box in this slab or block) and the
 * emitters (everything they release up to -t_end): for the memory check. */
double MPMSeedUpperBound(const MPMSim sim)
{
  double n = 0;
  for (PetscInt r = 0; r < sim->nreg; r++) {
    const MPMRegion *R = &sim->reg[r];
    PetscInt         ilo[3], ihi[3], ulo[3], nfull[3];
    RegionLattice(sim, R, sim->layout.h / R->ppc, ilo, ihi, ulo, nfull);
    n += (double)PetscMax(0, ihi[0] - ilo[0]) * PetscMax(0, ihi[1] - ilo[1]) * PetscMax(0, ihi[2] - ilo[2]);
  }
  for (PetscInt e = 0; e < sim->nem; e++) {
    const MPMEmitter *E = &sim->em[e];
    const double      t = PetscMax(0.0, PetscMin(sim->t_end, E->t_stop) - E->t_start);
    n += E->per_layer * (t * E->speed / (sim->layout.h / E->ppc) + 1);
  }
  return n;
}
