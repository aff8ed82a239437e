/* Structure-of-arrays particle storage.
 *
 * Every per-particle array is listed once in a field table; growth,
 * compaction, permutation and migration packing loop over that table. */
#include "mpm_impl.h"
#include <petscbt.h>

static size_t field_size(const MPMParticleField *f)
{
  static const size_t esize[] = {sizeof(double), sizeof(int64_t), sizeof(int32_t), sizeof(uint8_t)};
  return esize[f->type] * (size_t)f->ncomp;
}

static void add_field(MPMParticles *p, const char *name, MPMFieldType type, int ncomp, void **data)
{
  MPMParticleField *f = &p->field[p->nfield++];
  f->name             = name;
  f->type             = type;
  f->ncomp            = ncomp;
  f->data             = data;
  *data               = NULL;
  p->bytes += field_size(f);
}

PetscErrorCode MPMParticlesCreate(PetscInt dim, MPMParticles *p)
{
  const int d = (int)dim;

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(p, sizeof(*p)));
  p->dim = dim;
  add_field(p, "id", MPM_FIELD_INT64, 1, (void **)&p->id);
  add_field(p, "x", MPM_FIELD_REAL, d, (void **)&p->x);
  add_field(p, "v", MPM_FIELD_REAL, d, (void **)&p->v);
  add_field(p, "C", MPM_FIELD_REAL, d * d, (void **)&p->C);
  add_field(p, "Fe", MPM_FIELD_REAL, d * d, (void **)&p->Fe);
  add_field(p, "tau", MPM_FIELD_REAL, d * d, (void **)&p->tau);
  add_field(p, "m", MPM_FIELD_REAL, 1, (void **)&p->m);
  add_field(p, "V0", MPM_FIELD_REAL, 1, (void **)&p->V0);
  add_field(p, "Jp", MPM_FIELD_REAL, 1, (void **)&p->Jp);
  add_field(p, "q", MPM_FIELD_REAL, 1, (void **)&p->q);
  add_field(p, "material", MPM_FIELD_INT32, 1, (void **)&p->mat);
  add_field(p, "plastic_case", MPM_FIELD_UINT8, 1, (void **)&p->pcase);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMParticlesDestroy(MPMParticles *p)
{
  PetscFunctionBeginUser;
  for (int f = 0; f < p->nfield; f++) PetscCall(PetscFree(*p->field[f].data));
  p->n = p->cap = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMParticlesReserve(MPMParticles *p, PetscInt cap)
{
  PetscFunctionBeginUser;
  if (cap <= p->cap) PetscFunctionReturn(PETSC_SUCCESS);
  for (int f = 0; f < p->nfield; f++) {
    const size_t s = field_size(&p->field[f]);
    void        *fresh;
    PetscCall(PetscMalloc(s * (size_t)cap, &fresh));
    if (p->n) PetscCall(PetscMemcpy(fresh, *p->field[f].data, s * (size_t)p->n));
    PetscCall(PetscFree(*p->field[f].data));
    *p->field[f].data = fresh;
  }
  p->cap = cap;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Make room for count more particles at the end, uninitialized (they are
 * about to be unpacked); *start is the first new slot. */
PetscErrorCode MPMParticlesGrow(MPMParticles *p, PetscInt count, PetscInt *start)
{
  PetscFunctionBeginUser;
  if (p->n + count > p->cap) PetscCall(MPMParticlesReserve(p, PetscMax(p->n + count, (p->cap * 3) / 2 + 16)));
  *start = p->n;
  p->n += count;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Make room for count more particles at the end; *start is the first new
 * slot.  New particles start undeformed: F_E = I, tau = 0, C = 0, Jp = 1. */
PetscErrorCode MPMParticlesAppend(MPMParticles *p, PetscInt count, PetscInt *start)
{
  const int d = (int)p->dim;

  PetscFunctionBeginUser;
  if (p->n + count > p->cap) PetscCall(MPMParticlesReserve(p, PetscMax(p->n + count, (p->cap * 3) / 2 + 16)));
  *start = p->n;
  for (PetscInt q = p->n; q < p->n + count; q++) {
    for (int a = 0; a < d * d; a++) {
      p->Fe[q * d * d + a]  = (a % (d + 1) == 0) ? 1.0 : 0.0;
      p->C[q * d * d + a]   = 0.0;
      p->tau[q * d * d + a] = 0.0;
    }
    p->Jp[q]    = 1.0;
    p->q[q]     = 0.0;
    p->pcase[q] = MPM_CASE_ELASTIC;
  }
  p->n += count;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Keep the particles with keep[q] true, in their order. */
PetscErrorCode MPMParticlesCompact(MPMParticles *p, const PetscBool *keep)
{
  PetscInt n = 0;

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) {
    if (!keep[q]) continue;
    if (n != q)
      for (int f = 0; f < p->nfield; f++) {
        const size_t s    = field_size(&p->field[f]);
        char        *base = (char *)*p->field[f].data;
        memcpy(base + s * (size_t)n, base + s * (size_t)q, s);
      }
    n++;
  }
  p->n = n;
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

/* New particle q is old particle perm[q].
 * Between two sorts most particles stay where they are: then the fields are
 * permuted in place, cycle by cycle (q <- perm[q] <- perm[perm[q]] ...),
 * touching only the particles that move and allocating nothing (a scratch
 * copy of the largest field costs a page fault every 4 KiB on each call).
 * A thorough reordering (the first sort after seeding) gathers through a
 * scratch array instead, which streams better than long cycles. */
PetscErrorCode MPMParticlesPermute(MPMParticles *p, const PetscInt *perm)
{
  PetscInt moved = 0;

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) moved += perm[q] != q;
  if (moved > p->n / 4) {
    size_t smax = 0;
    char  *tmp;

    for (int f = 0; f < p->nfield; f++) smax = PetscMax(smax, field_size(&p->field[f]));
    PetscCall(PetscMalloc(smax * (size_t)p->n, &tmp));
    for (int f = 0; f < p->nfield; f++) {
      const size_t s    = field_size(&p->field[f]);
      char        *base = (char *)*p->field[f].data;
      for (PetscInt q = 0; q < p->n; q++) copy_element(tmp + s * (size_t)q, base + s * (size_t)perm[q], s);
      memcpy(base, tmp, s * (size_t)p->n);
    }
    PetscCall(PetscFree(tmp));
  } else if (moved) {
    PetscBT done;
    char    tmp[MPM_MAX_DIM * MPM_MAX_DIM * sizeof(double)]; /* one element of the largest field */

    for (int f = 0; f < p->nfield; f++) PetscCheck(field_size(&p->field[f]) <= sizeof(tmp), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Particle field %s is too large", p->field[f].name);
    PetscCall(PetscBTCreate(p->n, &done));
    for (PetscInt c = 0; c < p->n; c++) {
      if (perm[c] == c || PetscBTLookup(done, c)) continue;
      for (int f = 0; f < p->nfield; f++) {
        const size_t s    = field_size(&p->field[f]);
        char        *base = (char *)*p->field[f].data;
        PetscInt     q    = c;
        copy_element(tmp, base + s * (size_t)c, s);
        for (; perm[q] != c; q = perm[q]) copy_element(base + s * (size_t)q, base + s * (size_t)perm[q], s);
        copy_element(base + s * (size_t)q, tmp, s);
      }
      for (PetscInt q = c; !PetscBTLookupSet(done, q); q = perm[q]) {}
    }
    PetscCall(PetscBTDestroy(&done));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

void MPMParticlesPack(const MPMParticles *p, PetscInt q, char *buf)
{
  for (int f = 0; f < p->nfield; f++) {
    const size_t s = field_size(&p->field[f]);
    memcpy(buf, (const char *)*p->field[f].data + s * (size_t)q, s);
    buf += s;
  }
}

void MPMParticlesUnpack(MPMParticles *p, PetscInt q, const char *buf)
{
  for (int f = 0; f < p->nfield; f++) {
    const size_t s = field_size(&p->field[f]);
    memcpy((char *)*p->field[f].data + s * (size_t)q, buf, s);
    buf += s;
  }
}

MPMParticleView MPMParticlesView(MPMParticles *p)
{
  MPMParticleView v = {(int)p->n, p->x, p->v, p->C, p->Fe, p->tau, p->m, p->V0};
  return v;
}
