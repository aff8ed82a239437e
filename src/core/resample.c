/* Particle frames, splitting and merging (Daviet and Bertails-Descoubes
 * 2016, s. 5.3, after Narain et al. 2010, s. 3; the kernels are in
 * kernels/frames.c, the choices in docs/design/nonsmooth.md).
 *
 * Every particle carries the ellipsoid of its volume, F ("frame", d x d),
 * moved by the flow.  A particle stretched to split_ratio half-spacings
 * along its longest axis is split in two along it; two particles of one
 * grid cell whose frames are both elongated (merge_ratio) are merged
 * when the pair's frame is rounder than either.  Splitting, merging and
 * the frames keep mass, momentum and the APIC angular momentum exactly.
 *
 * Counting: every split adds one particle, every merge removes one; the
 * driver checks the global count against them every step (run.c) and
 * books them in summary.json and the checkpoints.  Ids stay unique and
 * are never reused: one half keeps its parent's id, the other gets a new
 * one (MPMSplitParticleId), numbered by the parent's id among every
 * particle split in the step, so the numbering does not depend on the
 * rank count; a merged pair keeps the smaller id. */
#include "core.h"

PetscErrorCode MPMResampleSetUp(MPMSim sim, MPMSpecies *sp, MPMResample *rs)
{
  PetscFunctionBeginUser;
  PetscCheck(sp->f_affine >= 0, sim->comm, PETSC_ERR_SUP, "Particle frames need APIC's affine velocity on species %s", sp->name);
  PetscCall(MPMParticlesRegisterField(&sp->p, "frame", MPM_FIELD_REAL, (int)(sim->dim * sim->dim), NULL, MPM_FIELD_STATE, &rs->f_frame));
  PetscCall(MPMParticlesSetOutput(&sp->p, rs->f_frame, "frame", MPM_FIELD_REAL, PETSC_FALSE));
  rs->Dp = 1.0 / mpm_apic_dinv((int)sim->layout.order, sim->layout.h);
  rs->h  = sim->layout.h;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Frames not yet set (seeded or emitted since the last step: all 0) start
 * as the ball of the particle's volume. */
void MPMResampleInitFrames(MPMSpecies *sp, const MPMResample *rs)
{
  MPMParticles *p = &sp->p;
  const int     d = (int)p->dim;
  double       *F = MPMFieldReal(p, rs->f_frame);
  const double *V = MPMFieldReal(p, p->f_V0);

  for (PetscInt q = 0; q < p->n; q++)
    if (F[q * d * d] == 0) mpm_frame_initial(d, V[q], F + q * d * d);
}

/* F <- A F A^T with each particle's A = I + dt grad v (d x d). */
void MPMResampleAdvect(MPMSpecies *sp, const MPMResample *rs, const double *A)
{
  MPMParticles *p = &sp->p;
  const int     d = (int)p->dim;
  double       *F = MPMFieldReal(p, rs->f_frame);

  for (PetscInt q = 0; q < p->n; q++) mpm_frame_advect(d, A + q * d * d, F + q * d * d);
}

static PetscBool InPhysicalDomain(const MPMLayout *l, const double *x)
{
  for (PetscInt a = 0; a < l->dim; a++)
    if (!(x[a] >= l->lo[a] && x[a] <= l->hi[a])) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* Should particle q split?  Stretched past split_ratio half-spacings,
 * halves no smaller than min_volume cells, both halves in the domain and
 * outside the objects (rs->solid). */
static PetscBool SplitCandidate(const MPMSim sim, const MPMParticles *p, const MPMResample *rs, PetscInt q)
{
  const int     d  = (int)p->dim;
  const double *F  = MPMFieldReal(p, rs->f_frame) + q * d * d, *x = MPMFieldReal(p, p->f_x) + q * d;
  const double  V  = MPMFieldReal(p, p->f_V0)[q];
  double        dx[3], Fc[9], x1[3], x2[3];

  if (F[0] == 0 || 0.5 * V < rs->min_volume * pow(rs->h, (double)d)) return PETSC_FALSE;
  if (mpm_frame_longest(d, F) <= rs->split_ratio * 0.5 * pow(V, 1.0 / d)) return PETSC_FALSE;
  mpm_frame_split(d, F, dx, Fc);
  for (int a = 0; a < d; a++) x1[a] = x[a] - dx[a], x2[a] = x[a] + dx[a];
  if (!InPhysicalDomain(&sim->layout, x1) || !InPhysicalDomain(&sim->layout, x2)) return PETSC_FALSE;
  return rs->solid && (rs->solid(rs->solid_ctx, x1) || rs->solid(rs->solid_ctx, x2)) ? PETSC_FALSE : PETSC_TRUE;
}

static int CompareInt64(const void *a, const void *b)
{
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Split every stretched particle of the species in two (collective: the
 * new ids are numbered over all ranks).  *split: this rank's splits. */
PetscErrorCode MPMResampleSplit(MPMSim sim, MPMSpecies *sp, const MPMResample *rs, int64_t *split)
{
  MPMParticles *p = &sp->p;
  const int     d = (int)p->dim;
  PetscInt      n = 0, start;
  PetscInt     *cand;
  int64_t      *ids, *all, total;
  char         *buf;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc2(p->n + 1, &cand, p->n + 1, &ids));
  for (PetscInt q = 0; q < p->n; q++)
    if (SplitCandidate(sim, p, rs, q)) {
      cand[n] = q;
      ids[n]  = MPMFieldInt64(p, p->f_id)[q];
      n++;
    }
  PetscCall(MPMAllGatherVInt64(sim->comm, n, ids, &total, &all));
  qsort(all, (size_t)total, sizeof(int64_t), CompareInt64);
  PetscCall(MPMParticlesGrow(p, n, &start));
  PetscCall(PetscMalloc1(p->mbytes, &buf));
  {
    double  *x = MPMFieldReal(p, p->f_x), *F = MPMFieldReal(p, rs->f_frame), *m = MPMFieldReal(p, p->f_m), *V = MPMFieldReal(p, p->f_V0);
    int64_t *id = MPMFieldInt64(p, p->f_id);
    for (PetscInt k = 0; k < n; k++) {
      const PetscInt q = cand[k], c = start + k;
      const int64_t *at = (const int64_t *)bsearch(&ids[k], all, (size_t)total, sizeof(int64_t), CompareInt64);
      double         dx[3], Fc[9];
      MPMParticlesPackFields(p, &q, 1, buf); /* the half at x + dx: a copy of the parent, then its own */
      MPMParticlesUnpackFields(p, c, 1, buf);
      mpm_frame_split(d, F + q * d * d, dx, Fc);
      for (int a = 0; a < d; a++) {
        x[c * d + a] = x[q * d + a] + dx[a];
        x[q * d + a] -= dx[a];
      }
      for (int a = 0; a < d * d; a++) F[q * d * d + a] = F[c * d * d + a] = Fc[a];
      m[q] *= 0.5, m[c] = m[q];
      V[q] *= 0.5, V[c] = V[q];
      id[c] = MPMSplitParticleId(sim->n_split + (at - all));
    }
  }
  *split = n;
  PetscCall(PetscFree(buf));
  PetscCall(PetscFree(all));
  PetscCall(PetscFree2(cand, ids));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- merge */
typedef struct {
  int64_t  cell, id;
  int32_t  mat;
  PetscInt q;
  double   ratio;
} MergeCandidate;

static int CompareCandidates(const void *a_, const void *b_)
{
  const MergeCandidate *a = (const MergeCandidate *)a_, *b = (const MergeCandidate *)b_;
  if (a->cell != b->cell) return (a->cell > b->cell) - (a->cell < b->cell);
  if (a->mat != b->mat) return (a->mat > b->mat) - (a->mat < b->mat);
  return (a->id > b->id) - (a->id < b->id);
}

/* The global index of the grid cell holding x: every particle of a cell
 * is on the rank that owns the cell's slab after migration. */
static int64_t GlobalCell(const MPMLayout *l, const double *x)
{
  int64_t key = 0;
  for (PetscInt a = l->dim - 1; a >= 0; a--) {
    const PetscInt c0 = (PetscInt)floor(mpm_grid_coord(&l->box, (int)a, x[a])); /* once: PetscClipInterval is a macro */
    const PetscInt c  = PetscClipInterval(c0, 0, l->N[a] - 1);
    key              = key * l->N[a] + c;
  }
  return key;
}

/* The merge of candidates i and j (particle indices): x, v, C, F, and
 * whether it is wanted (rounder than both, and not so long that it would
 * split again). */
static PetscBool TryMerge(const MPMParticles *p, const MPMSpecies *sp, const MPMResample *rs, const MergeCandidate *i, const MergeCandidate *j, double *x, double *v, double *C, double *F,
                          double *ratio)
{
  const int     d = (int)p->dim, d2 = d * d;
  const double *X = MPMFieldReal(p, p->f_x), *Vel = MPMFieldReal(p, p->f_v), *Cp = MPMFieldReal(p, sp->f_affine), *Fp = MPMFieldReal(p, rs->f_frame), *m = MPMFieldReal(p, p->f_m),
               *V = MPMFieldReal(p, p->f_V0);
  if (V[i->q] + V[j->q] > rs->max_volume * pow(rs->h, (double)d)) return PETSC_FALSE;
  mpm_frame_merge(d, rs->Dp, m[i->q], X + i->q * d, Vel + i->q * d, Cp + i->q * d2, Fp + i->q * d2, m[j->q], X + j->q * d, Vel + j->q * d, Cp + j->q * d2, Fp + j->q * d2, x, v, C, F);
  *ratio = mpm_frame_ratio(d, F);
  return *ratio < PetscMin(i->ratio, j->ratio) && mpm_frame_longest(d, F) <= rs->split_ratio * 0.5 * pow(V[i->q] + V[j->q], 1.0 / d) ? PETSC_TRUE : PETSC_FALSE;
}

/* Particle i takes j in: the pair's x, v, C, F, mass and volume; every
 * other real field that travels with a particle (the stress's warm
 * start, the grains' orientation) the mass-weighted mean; integer fields
 * (id, material) stay i's. */
static void Absorb(MPMParticles *p, const MPMSpecies *sp, const MPMResample *rs, PetscInt i, PetscInt j, const double *x, const double *v, const double *C, const double *F)
{
  const int d = (int)p->dim, d2 = d * d;
  double   *m = MPMFieldReal(p, p->f_m), *V = MPMFieldReal(p, p->f_V0);
  const double wi = m[i] / (m[i] + m[j]), wj = 1.0 - wi;

  for (PetscInt f = 0; f < p->nfield; f++) {
    const MPMField *fd = &p->field[f];
    if (fd->type != MPM_FIELD_REAL || !(fd->flags & MPM_FIELD_MIGRATE) || f == p->f_m || f == p->f_V0) continue;
    double *a = (double *)fd->data;
    for (int k = 0; k < fd->ncomp; k++) a[i * fd->ncomp + k] = wi * a[i * fd->ncomp + k] + wj * a[j * fd->ncomp + k];
  }
  memcpy(MPMFieldReal(p, p->f_x) + i * d, x, sizeof(double) * d);
  memcpy(MPMFieldReal(p, p->f_v) + i * d, v, sizeof(double) * d);
  memcpy(MPMFieldReal(p, sp->f_affine) + i * d2, C, sizeof(double) * d2);
  memcpy(MPMFieldReal(p, rs->f_frame) + i * d2, F, sizeof(double) * d2);
  m[i] += m[j];
  V[i] += V[j];
}

/* Merge elongated pairs of one cell (no communication: after migration a
 * cell's particles are on one rank).  In each cell and material, by id:
 * a candidate not yet merged takes the later one that makes the roundest
 * pair.  *merged: this rank's merges. */
PetscErrorCode MPMResampleMerge(MPMSim sim, MPMSpecies *sp, const MPMResample *rs, int64_t *merged)
{
  MPMParticles   *p = &sp->p;
  const int       d = (int)p->dim;
  MergeCandidate *c;
  PetscBool      *keep, *taken;
  PetscInt        n = 0;

  PetscFunctionBeginUser;
  *merged = 0;
  PetscCall(PetscMalloc1(p->n + 1, &c));
  for (PetscInt q = 0; q < p->n; q++) {
    const double *F = MPMFieldReal(p, rs->f_frame) + q * d * d;
    if (F[0] == 0) continue;
    const double ratio = mpm_frame_ratio(d, F);
    if (!(ratio >= rs->merge_ratio)) continue;
    c[n].cell  = GlobalCell(&sim->layout, MPMFieldReal(p, p->f_x) + q * d);
    c[n].id    = MPMFieldInt64(p, p->f_id)[q];
    c[n].mat   = MPMFieldInt32(p, p->f_mat)[q];
    c[n].q     = q;
    c[n].ratio = ratio;
    n++;
  }
  qsort(c, (size_t)n, sizeof(*c), CompareCandidates);
  PetscCall(PetscMalloc2(p->n + 1, &keep, n + 1, &taken));
  for (PetscInt q = 0; q < p->n; q++) keep[q] = PETSC_TRUE;
  for (PetscInt k = 0; k < n; k++) taken[k] = PETSC_FALSE;
  for (PetscInt a = 0; a < n; a++) {
    double   x[3], v[3], C[9], F[9], best = INFINITY;
    PetscInt b = -1;
    if (taken[a]) continue;
    for (PetscInt k = a + 1; k < n && c[k].cell == c[a].cell && c[k].mat == c[a].mat; k++) {
      double xk[3], vk[3], Ck[9], Fk[9], r;
      if (taken[k] || !TryMerge(p, sp, rs, &c[a], &c[k], xk, vk, Ck, Fk, &r) || !(r < best)) continue;
      best = r, b = k;
      memcpy(x, xk, sizeof(x)), memcpy(v, vk, sizeof(v)), memcpy(C, Ck, sizeof(C)), memcpy(F, Fk, sizeof(F));
    }
    if (b < 0) continue;
    Absorb(p, sp, rs, c[a].q, c[b].q, x, v, C, F);
    taken[a] = taken[b] = PETSC_TRUE;
    keep[c[b].q]        = PETSC_FALSE;
    (*merged)++;
  }
  if (*merged) PetscCall(MPMParticlesCompact(p, keep));
  PetscCall(PetscFree2(keep, taken));
  PetscCall(PetscFree(c));
  PetscFunctionReturn(PETSC_SUCCESS);
}
