/* Structure-of-arrays particle storage with a growable field registry.
 *
 * Every per-particle array is a registered field (name, type, components,
 * default, flags).  Growth, compaction, permutation, migration packing,
 * checkpoints, frames, XDMF and Catalyst loop over the registry, so the
 * code that needs a new field registers it and nothing else changes. */
#include "core.h"
#include <petscbt.h>

size_t MPMFieldTypeSize(MPMFieldType t)
{
  static const size_t esize[] = {sizeof(double), sizeof(int64_t), sizeof(int32_t), sizeof(uint8_t)};
  return esize[t];
}

size_t MPMFieldSize(const MPMField *f) { return MPMFieldTypeSize(f->type) * (size_t)f->ncomp; }

PetscErrorCode MPMParticlesCreate(PetscInt dim, MPMParticles *p)
{
  const int d = (int)dim;

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(p, sizeof(*p)));
  p->dim = dim;
  PetscCall(MPMParticlesRegisterField(p, "id", MPM_FIELD_INT64, 1, NULL, MPM_FIELD_STATE, &p->f_id));
  PetscCall(MPMParticlesRegisterField(p, "x", MPM_FIELD_REAL, d, NULL, MPM_FIELD_STATE, &p->f_x));
  PetscCall(MPMParticlesRegisterField(p, "v", MPM_FIELD_REAL, d, NULL, MPM_FIELD_STATE, &p->f_v));
  PetscCall(MPMParticlesRegisterField(p, "m", MPM_FIELD_REAL, 1, NULL, MPM_FIELD_STATE, &p->f_m));
  PetscCall(MPMParticlesRegisterField(p, "V0", MPM_FIELD_REAL, 1, NULL, MPM_FIELD_STATE, &p->f_V0));
  PetscCall(MPMParticlesRegisterField(p, "material", MPM_FIELD_INT32, 1, NULL, MPM_FIELD_STATE, &p->f_mat));
  PetscCall(MPMParticlesSetOutput(p, p->f_id, "id", MPM_FIELD_INT64, PETSC_FALSE));
  PetscCall(MPMParticlesSetOutput(p, p->f_x, "position", MPM_FIELD_REAL, PETSC_TRUE));
  PetscCall(MPMParticlesSetOutput(p, p->f_v, "velocity", MPM_FIELD_REAL, PETSC_TRUE));
  PetscCall(MPMParticlesSetOutput(p, p->f_mat, "material", MPM_FIELD_INT32, PETSC_FALSE));
  PetscCall(MPMParticlesSetOutput(p, p->f_m, "mass", MPM_FIELD_REAL, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMParticlesDestroy(MPMParticles *p)
{
  PetscFunctionBeginUser;
  for (PetscInt f = 0; f < p->nfield; f++) PetscCall(PetscFree(p->field[f].data));
  PetscCall(PetscFree(p->field));
  p->n = p->cap = p->nfield = p->capfield = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMParticlesFindField(const MPMParticles *p, const char *name, PetscInt *idx)
{
  PetscFunctionBeginUser;
  *idx = -1;
  for (PetscInt f = 0; f < p->nfield; f++) {
    PetscBool same;
    PetscCall(PetscStrcmp(p->field[f].name, name, &same));
    if (same) *idx = f;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Set each component of particles [q0, q1) of field f to its default. */
static void FieldFillDefault(MPMField *f, PetscInt q0, PetscInt q1)
{
  for (PetscInt q = q0; q < q1; q++)
    for (int c = 0; c < f->ncomp; c++) {
      const double v = f->dflt[c];
      switch (f->type) {
      case MPM_FIELD_REAL: ((double *)f->data)[q * f->ncomp + c] = v; break;
      case MPM_FIELD_INT64: ((int64_t *)f->data)[q * f->ncomp + c] = (int64_t)v; break;
      case MPM_FIELD_INT32: ((int32_t *)f->data)[q * f->ncomp + c] = (int32_t)v; break;
      default: ((uint8_t *)f->data)[q * f->ncomp + c] = (uint8_t)v; break;
      }
    }
}

/* Register a field, or find the one registered under that name (then the
 * type and components must match and the flags are merged), so several
 * materials of a species can ask for the same state.  dflt: ncomp values
 * (NULL: zeros).  Existing particles get the default. */
PetscErrorCode MPMParticlesRegisterField(MPMParticles *p, const char *name, MPMFieldType type, int ncomp, const double *dflt, unsigned flags, PetscInt *idx)
{
  MPMField *f;

  PetscFunctionBeginUser;
  PetscCheck(ncomp >= 1 && ncomp <= MPM_MAX_DIM * MPM_MAX_DIM, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Particle field %s: %d components (1 to 9 allowed)", name, ncomp);
  PetscCall(MPMParticlesFindField(p, name, idx));
  if (*idx >= 0) {
    f = &p->field[*idx];
    PetscCheck(f->type == type && f->ncomp == ncomp, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Particle field %s registered twice with different types or sizes", name);
    p->mbytes += (flags & MPM_FIELD_MIGRATE) && !(f->flags & MPM_FIELD_MIGRATE) ? MPMFieldSize(f) : 0;
    f->flags |= flags;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (p->nfield == p->capfield) {
    p->capfield = 2 * p->capfield + 16;
    PetscCall(PetscRealloc(sizeof(MPMField) * p->capfield, &p->field));
  }
  *idx = p->nfield++;
  f    = &p->field[*idx];
  PetscCall(PetscMemzero(f, sizeof(*f)));
  PetscCall(PetscStrncpy(f->name, name, sizeof(f->name)));
  f->type  = type;
  f->ncomp = ncomp;
  f->flags = flags;
  for (int c = 0; c < ncomp; c++) f->dflt[c] = dflt ? dflt[c] : 0.0;
  p->bytes += MPMFieldSize(f);
  p->mbytes += (flags & MPM_FIELD_MIGRATE) ? MPMFieldSize(f) : 0;
  if (p->cap) {
    PetscCall(PetscMalloc(MPMFieldSize(f) * (size_t)p->cap, &f->data));
    FieldFillDefault(f, 0, p->n);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Write field idx to frames (and XDMF, Catalyst) as dataset `output` of the
 * given type; pad3: a dim-vector written with 3 components. */
PetscErrorCode MPMParticlesSetOutput(MPMParticles *p, PetscInt idx, const char *output, MPMFieldType type, PetscBool pad3)
{
  MPMField *f = &p->field[idx];

  PetscFunctionBeginUser;
  PetscCheck(type == MPM_FIELD_REAL || type == MPM_FIELD_INT64 || type == MPM_FIELD_INT32, PETSC_COMM_SELF, PETSC_ERR_SUP, "Output of %s: frames take real, int64 or int32 arrays",
             f->name);
  PetscCall(PetscStrncpy(f->output, output, sizeof(f->output)));
  f->output_type = type;
  f->pad3        = pad3;
  f->flags |= MPM_FIELD_OUTPUT;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMParticlesReserve(MPMParticles *p, PetscInt cap)
{
  PetscFunctionBeginUser;
  if (cap <= p->cap) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt f = 0; f < p->nfield; f++) {
    const size_t s = MPMFieldSize(&p->field[f]);
    void        *fresh;
    PetscCall(PetscMalloc(s * (size_t)cap, &fresh));
    if (p->n) PetscCall(PetscMemcpy(fresh, p->field[f].data, s * (size_t)p->n));
    PetscCall(PetscFree(p->field[f].data));
    p->field[f].data = fresh;
  }
  p->cap = cap;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Make room for count more particles at the end, uninitialized (they are
 * about to be unpacked or read); *start is the first new slot. */
PetscErrorCode MPMParticlesGrow(MPMParticles *p, PetscInt count, PetscInt *start)
{
  PetscFunctionBeginUser;
  if (p->n + count > p->cap) PetscCall(MPMParticlesReserve(p, PetscMax(p->n + count, (p->cap * 3) / 2 + 16)));
  *start = p->n;
  p->n += count;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Make room for count more particles at the end, every field at its
 * default (undeformed: F_E = I, Jp = 1, the rest 0); *start is the first
 * new slot. */
PetscErrorCode MPMParticlesAppend(MPMParticles *p, PetscInt count, PetscInt *start)
{
  PetscFunctionBeginUser;
  PetscCall(MPMParticlesGrow(p, count, start));
  for (PetscInt f = 0; f < p->nfield; f++) FieldFillDefault(&p->field[f], *start, p->n);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* memcpy of one element of a field; the common sizes with a constant size,
 * which the compiler turns into a few moves instead of a library call. */
static inline void copy_element(char *dst, const char *src, size_t s)
{
  switch (s) {
  case 1: memcpy(dst, src, 1); break;
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  case 16: memcpy(dst, src, 16); break;
  case 24: memcpy(dst, src, 24); break;
  case 32: memcpy(dst, src, 32); break;
  case 72: memcpy(dst, src, 72); break;
  default: memcpy(dst, src, s);
  }
}

/* The length of the prefix of kept particles (it stays where it is). */
PetscInt MPMParticlesKeptPrefix(const MPMParticles *p, const PetscBool *keep)
{
  PetscInt n = 0;
  while (n < p->n && keep[n]) n++;
  return n;
}

/* Field f of the particles with keep[q] true moved down over the others,
 * in their order, from slot first (the kept prefix) to p->n: a stream
 * through the field's array.  p->n is not changed. */
void MPMParticlesCompactField(MPMParticles *p, PetscInt f, const PetscBool *keep, PetscInt first)
{
  const size_t s    = MPMFieldSize(&p->field[f]);
  char        *base = (char *)p->field[f].data;
  PetscInt     k    = first;
  for (PetscInt q = first; q < p->n; q++)
    if (keep[q]) copy_element(base + s * (size_t)k++, base + s * (size_t)q, s);
}

/* Field f without the particles gone[0..ngone-1] (increasing), the others
 * moved down in their order: what MPMParticlesCompactField does with keep
 * false at gone, but moving each stretch between two gone particles at
 * once and reading nothing else.  p->n is not changed. */
void MPMParticlesRemoveField(MPMParticles *p, PetscInt f, const PetscInt *gone, PetscInt ngone)
{
  const size_t s    = MPMFieldSize(&p->field[f]);
  char        *base = (char *)p->field[f].data;
  PetscInt     k    = ngone ? gone[0] : 0;
  for (PetscInt i = 0; i < ngone; i++) {
    const PetscInt lo = gone[i] + 1, hi = i + 1 < ngone ? gone[i + 1] : p->n;
    if (hi > lo) memmove(base + s * (size_t)k, base + s * (size_t)lo, s * (size_t)(hi - lo));
    k += hi - lo;
  }
}

/* Keep the particles with keep[q] true, in their order: field by field,
 * each a stream through its array (a particle at a time would touch every
 * field's array per particle). */
PetscErrorCode MPMParticlesCompact(MPMParticles *p, const PetscBool *keep)
{
  PetscInt n = MPMParticlesKeptPrefix(p, keep);

  PetscFunctionBeginUser;
  for (PetscInt f = 0; f < p->nfield; f++) MPMParticlesCompactField(p, f, keep, n);
  for (PetscInt q = n; q < p->n; q++) n += keep[q] ? 1 : 0;
  p->n = n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Field f of the n particles idx[0..n-1] into buf, back to back. */
void MPMParticlesPackField(const MPMParticles *p, PetscInt f, const PetscInt *idx, PetscInt n, char *buf)
{
  const size_t s    = MPMFieldSize(&p->field[f]);
  const char  *base = (const char *)p->field[f].data;
  for (PetscInt k = 0; k < n; k++) copy_element(buf + s * (size_t)k, base + s * (size_t)idx[k], s);
}

/* The migrating fields of the n particles idx[0..n-1] into buf, field by
 * field (each field's n elements back to back; n p->mbytes bytes). */
void MPMParticlesPackFields(const MPMParticles *p, const PetscInt *idx, PetscInt n, char *buf)
{
  for (PetscInt f = 0; f < p->nfield; f++) {
    if (!(p->field[f].flags & MPM_FIELD_MIGRATE)) continue;
    MPMParticlesPackField(p, f, idx, n, buf);
    buf += MPMFieldSize(&p->field[f]) * (size_t)n;
  }
}

/* Slots [start, start + n) of the fields that do not migrate get their
 * default (the arrivals of a migration, received in place). */
void MPMParticlesDefaultArrivals(MPMParticles *p, PetscInt start, PetscInt n)
{
  for (PetscInt f = 0; f < p->nfield; f++)
    if (!(p->field[f].flags & MPM_FIELD_MIGRATE)) FieldFillDefault(&p->field[f], start, start + n);
}

/* The inverse of MPMParticlesPackFields into slots start .. start + n - 1:
 * one copy per field; fields that do not migrate get their default. */
void MPMParticlesUnpackFields(MPMParticles *p, PetscInt start, PetscInt n, const char *buf)
{
  for (PetscInt f = 0; f < p->nfield; f++) {
    if (!(p->field[f].flags & MPM_FIELD_MIGRATE)) {
      FieldFillDefault(&p->field[f], start, start + n);
      continue;
    }
    const size_t s = MPMFieldSize(&p->field[f]);
    memcpy((char *)p->field[f].data + s * (size_t)start, buf, s * (size_t)n);
    buf += s * (size_t)n;
  }
}

/* Follow the permutation's cycles in place. */
static PetscErrorCode PermuteCycles(MPMParticles *p, const PetscInt *perm)
{
  PetscBT done;
  char    tmp[MPM_MAX_DIM * MPM_MAX_DIM * sizeof(double)]; /* one element of the largest field */

  PetscFunctionBeginUser;
  for (PetscInt f = 0; f < p->nfield; f++) PetscCheck(MPMFieldSize(&p->field[f]) <= sizeof(tmp), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Particle field %s is too large", p->field[f].name);
  PetscCall(PetscBTCreate(p->n, &done));
  for (PetscInt c = 0; c < p->n; c++) {
    if (perm[c] == c || PetscBTLookup(done, c)) continue;
    for (PetscInt f = 0; f < p->nfield; f++) {
      const size_t s    = MPMFieldSize(&p->field[f]);
      char        *base = (char *)p->field[f].data;
      PetscInt     q    = c;
      copy_element(tmp, base + s * (size_t)c, s);
      for (; perm[q] != c; q = perm[q]) copy_element(base + s * (size_t)q, base + s * (size_t)perm[q], s);
      copy_element(base + s * (size_t)q, tmp, s);
    }
    for (PetscInt q = c; !PetscBTLookupSet(done, q); q = perm[q]) {}
  }
  PetscCall(PetscBTDestroy(&done));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* New particle q is old particle perm[q].  The fields are permuted in
 * place, cycle by cycle (q <- perm[q] <- perm[perm[q]] ...), touching only
 * the particles that move (between two sorts most stay where they are)
 * and allocating one bit per particle.  A thorough reordering (the first
 * sort after seeding) used to gather through a scratch copy of the largest
 * field instead: 72 MB for the 1M-particle 3D benchmark, which set the
 * run's peak memory, for 0.03 s saved once (docs/performance.md). */
PetscErrorCode MPMParticlesPermute(MPMParticles *p, const PetscInt *perm)
{
  PetscInt moved = 0;

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) moved += perm[q] != q;
  if (moved) PetscCall(PermuteCycles(p, perm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Counting sort by grid cell of the ghosted box b: neighbouring particles
 * touch the same nodes, so P2G and G2P stay in cache.  Stable. */
PetscErrorCode MPMParticlesSortByCell(MPMParticles *p, const MPMGridBox *b)
{
  const PetscInt d = p->dim, ncell = (PetscInt)b->gn[0] * b->gn[1] * b->gn[2];
  const double  *x = MPMFieldReal(p, p->f_x);
  PetscInt      *key, *count, *perm;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc2(p->n, &key, p->n, &perm));
  PetscCall(PetscCalloc1(ncell + 1, &count));
  for (PetscInt q = 0; q < p->n; q++) {
    PetscInt c[3] = {0, 0, 0};
    for (PetscInt a = 0; a < d; a++) { /* clipped in floating point first: a NaN or huge position has no int */
      const double xr = mpm_grid_coord(b, (int)a, x[q * d + a]);
      c[a]            = isfinite(xr) ? PetscClipInterval((PetscInt)floor(PetscMin(PetscMax(xr, b->gs[a] - 1.0), b->gs[a] + b->gn[a] + 1.0)) - b->gs[a], 0, b->gn[a] - 1) : 0;
    }
    key[q] = (c[2] * b->gn[1] + c[1]) * b->gn[0] + c[0];
    count[key[q] + 1]++;
  }
  for (PetscInt c = 0; c < ncell; c++) count[c + 1] += count[c];
  for (PetscInt q = 0; q < p->n; q++) perm[count[key[q]]++] = q;
  PetscCall(MPMParticlesPermute(p, perm));
  PetscCall(PetscFree2(key, perm));
  PetscCall(PetscFree(count));
  PetscFunctionReturn(PETSC_SUCCESS);
}

