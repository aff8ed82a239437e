/* Triangle meshes (STL, binary or ASCII, and OBJ) as shapes: read once,
 * then their signed distance is sampled on a grid (MPM_SHAPE_SAMPLED,
 * evaluated trilinearly by kernels/sdf.c).  Distances are exact at the
 * samples within a band of the surface (nearest triangle, Ericson's
 * closest point) and clamped to the band beyond it, which is all the
 * collisions (nodes within a cell of the surface) and the seeding (the
 * sign) need; the sign comes from the parity of a ray's crossings along
 * +x, row by row.  The mesh must be closed (watertight).  Only the bricks
 * of samples within the band are stored (kernels.h: the sampled shape),
 * so a mesh costs memory in proportion to its area.  Loading reads the
 * triangles and keeps them; MPMPlacedShapeKeep samples, either the whole
 * band or only the bricks that reach a world interval along one axis (an
 * object that stands still keeps its rank's slab, colliders.c), and
 * samples again when the interval moves.  A sample's value does not
 * depend on the interval, so neither do the results. */
#include "core.h"
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ reading */
typedef struct {
  double  *t; /* 9 per triangle */
  PetscInt n, cap;
} Tris;

static PetscErrorCode AddTri(Tris *T, const double *a, const double *b, const double *c)
{
  PetscFunctionBeginUser;
  if (T->n == T->cap) {
    T->cap = 2 * T->cap + 64;
    PetscCall(PetscRealloc(9 * (size_t)T->cap * sizeof(double), &T->t));
  }
  for (int k = 0; k < 3; k++) T->t[9 * T->n + k] = a[k], T->t[9 * T->n + 3 + k] = b[k], T->t[9 * T->n + 6 + k] = c[k];
  T->n++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ReadStl(const char *path, const char *opt, Tris *T)
{
  FILE         *f = fopen(path, "rb");
  unsigned char head[84];
  long          size;

  PetscFunctionBeginUser;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "%s %s: cannot read the mesh file", opt, path);
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (size >= 84 && fread(head, 1, 84, f) == 84) {
    const uint32_t n = (uint32_t)head[80] | (uint32_t)head[81] << 8 | (uint32_t)head[82] << 16 | (uint32_t)head[83] << 24;
    if ((long)(84 + 50 * (long)n) == size) { /* binary: 50 bytes a facet */
      for (uint32_t i = 0; i < n; i++) {
        unsigned char rec[50];
        float         v[12];
        double        p[9];
        if (fread(rec, 1, 50, f) != 50) break;
        memcpy(v, rec, 48); /* little-endian IEEE floats, as every STL writer on these machines */
        for (int k = 0; k < 9; k++) p[k] = v[3 + k];
        PetscCall(AddTri(T, p, p + 3, p + 6));
      }
      fclose(f);
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
  fseek(f, 0, SEEK_SET); /* ASCII: "vertex x y z", three a facet */
  {
    char   word[64];
    double p[9];
    int    k = 0;
    while (fscanf(f, "%63s", word) == 1) {
      if (strcmp(word, "vertex")) continue;
      if (fscanf(f, "%lf %lf %lf", &p[3 * k], &p[3 * k + 1], &p[3 * k + 2]) != 3) break;
      if (++k == 3) {
        PetscCall(AddTri(T, p, p + 3, p + 6));
        k = 0;
      }
    }
  }
  fclose(f);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* OBJ: "v x y z" and "f i j k ..." (1-based, negative from the end,
 * "i/t/n" forms); polygons as fans. */
static PetscErrorCode ReadObj(const char *path, const char *opt, Tris *T)
{
  FILE    *f = fopen(path, "r");
  char     line[4096];
  double  *v = NULL;
  PetscInt nv = 0, cap = 0;

  PetscFunctionBeginUser;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "%s %s: cannot read the mesh file", opt, path);
  while (fgets(line, sizeof(line), f)) {
    if (line[0] == 'v' && line[1] == ' ') {
      if (nv == cap) {
        cap = 2 * cap + 256;
        PetscCall(PetscRealloc(3 * (size_t)cap * sizeof(double), &v));
      }
      if (sscanf(line + 2, "%lf %lf %lf", &v[3 * nv], &v[3 * nv + 1], &v[3 * nv + 2]) == 3) nv++;
    } else if (line[0] == 'f' && line[1] == ' ') {
      long  idx[64];
      int   m = 0;
      char *s = line + 2, *end;
      while (m < 64) {
        long i = strtol(s, &end, 10);
        if (end == s) break;
        idx[m++] = i < 0 ? nv + i : i - 1;
        s = end;
        while (*s && *s != ' ' && *s != '\t') s++; /* skip "/t/n" */
      }
      for (int k = 1; k + 1 < m; k++) {
        PetscCheck(idx[0] >= 0 && idx[0] < nv && idx[k] >= 0 && idx[k] < nv && idx[k + 1] >= 0 && idx[k + 1] < nv, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT,
                   "%s %s: a face names a vertex that is not defined before it", opt, path);
        PetscCall(AddTri(T, &v[3 * idx[0]], &v[3 * idx[k]], &v[3 * idx[k + 1]]));
      }
    }
  }
  fclose(f);
  PetscCall(PetscFree(v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ----------------------------------------------------------- distances */
static double Dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* Squared distance from p to triangle abc (Ericson, Real-Time Collision
 * Detection, 5.1.5: the closest point by Voronoi regions). */
static double TriDist2(const double *p, const double *a, const double *b, const double *c)
{
  double ab[3], ac[3], ap[3], bp[3], cp[3], q[3];
  for (int k = 0; k < 3; k++) ab[k] = b[k] - a[k], ac[k] = c[k] - a[k], ap[k] = p[k] - a[k], bp[k] = p[k] - b[k], cp[k] = p[k] - c[k];
  const double d1 = Dot(ab, ap), d2 = Dot(ac, ap), d3 = Dot(ab, bp), d4 = Dot(ac, bp), d5 = Dot(ab, cp), d6 = Dot(ac, cp);
  const double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
  if (d1 <= 0 && d2 <= 0) return Dot(ap, ap);
  if (d3 >= 0 && d4 <= d3) return Dot(bp, bp);
  if (d6 >= 0 && d5 <= d6) return Dot(cp, cp);
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    const double v = d1 / (d1 - d3);
    for (int k = 0; k < 3; k++) q[k] = ap[k] - v * ab[k];
    return Dot(q, q);
  }
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    const double w = d2 / (d2 - d6);
    for (int k = 0; k < 3; k++) q[k] = ap[k] - w * ac[k];
    return Dot(q, q);
  }
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    const double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    for (int k = 0; k < 3; k++) q[k] = bp[k] - w * (c[k] - b[k]);
    return Dot(q, q);
  }
  const double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
  for (int k = 0; k < 3; k++) q[k] = ap[k] - v * ab[k] - w * ac[k];
  return Dot(q, q);
}

static int Clampi(int i, int lo, int hi) { return i < lo ? lo : (i > hi ? hi : i); }

/* The samples within band of triangle t: index ranges lo..hi per axis. */
static void TriRange(const double *a, const double *b, const double *c, const MPMShape *s, double band, int *lo, int *hi)
{
  for (int k = 0; k < 3; k++) {
    const double mn = PetscMin(a[k], PetscMin(b[k], c[k])) - band, mx = PetscMax(a[k], PetscMax(b[k], c[k])) + band;
    lo[k] = Clampi((int)ceil((mn - s->lo3[k]) / s->dh), 0, s->n3[k] - 1);
    hi[k] = Clampi((int)floor((mx - s->lo3[k]) / s->dh), 0, s->n3[k] - 1);
  }
}

#define BRICK3 (MPM_BRICK * MPM_BRICK * MPM_BRICK)
static PetscInt BrickOf(const MPMShape *s, int i, int j, int k) { return i / MPM_BRICK + (PetscInt)s->nb3[0] * (j / MPM_BRICK + (PetscInt)s->nb3[1] * (k / MPM_BRICK)); }
static double  *SampleOf(const MPMShape *s, double *pool, const int *bricks, int i, int j, int k)
{
  return pool + (size_t)bricks[BrickOf(s, i, j, k)] * BRICK3 + i % MPM_BRICK + MPM_BRICK * (j % MPM_BRICK + MPM_BRICK * (k % MPM_BRICK));
}

/* The world interval [lo, hi] along axis of the bricks a rank stores
 * (axis < 0: all), and the mesh frame's placement in the world: x_world
 * = c + R x (R row-major 3 x 3). */
typedef struct {
  PetscInt axis;
  double   lo, hi, c[3], R[9];
} Keep;

/* Does brick (i, j, k) of side `side` reach the kept interval?  Its
 * extent along the axis, placed in the world, is tested (the samples it
 * interpolates from reach to the next brick's first: one spacing more). */
static PetscBool BrickKept(const Keep *kp, const MPMShape *s, int i, int j, int k, double side)
{
  if (kp->axis < 0) return PETSC_TRUE;
  const double  q[3] = {s->lo3[0] + (i + 0.5) * side, s->lo3[1] + (j + 0.5) * side, s->lo3[2] + (k + 0.5) * side};
  const double *Ra = kp->R + 3 * kp->axis, w = kp->c[kp->axis] + Ra[0] * q[0] + Ra[1] * q[1] + Ra[2] * q[2];
  const double  r = (0.5 * side + s->dh) * (fabs(Ra[0]) + fabs(Ra[1]) + fabs(Ra[2]));
  return w + r >= kp->lo && w - r <= kp->hi ? PETSC_TRUE : PETSC_FALSE;
}

/* The bricks within band of a triangle are stored (numbered in brick
 * order) when they reach the kept interval, absent when not; the others
 * are marked far (their sign comes later).  A brick is near when its
 * centre is within band + half its diagonal of a triangle, so each of its
 * samples that is within band of one lies in a near brick.  Returns the
 * number stored. */
static PetscErrorCode MarkBricks(const double *tris, PetscInt ntris, const MPMShape *s, const Keep *kp, double band, int *bricks, PetscInt *nnear)
{
  const PetscInt nb = (PetscInt)s->nb3[0] * s->nb3[1] * s->nb3[2];
  const double   side = MPM_BRICK * s->dh, reach = (band + 0.5 * sqrt(3.0) * side) * (1 + 1e-9); /* slack for rounding */
  PetscInt       m  = 0;

  PetscFunctionBeginUser;
  for (PetscInt b = 0; b < nb; b++) bricks[b] = 0;
  for (PetscInt t = 0; t < ntris; t++) {
    const double *a = tris + 9 * t;
    int           lo[3], hi[3];
    TriRange(a, a + 3, a + 6, s, band, lo, hi);
    for (int k = lo[2] / MPM_BRICK; k <= hi[2] / MPM_BRICK; k++)
      for (int j = lo[1] / MPM_BRICK; j <= hi[1] / MPM_BRICK; j++)
        for (int i = lo[0] / MPM_BRICK; i <= hi[0] / MPM_BRICK; i++) {
          int *b = &bricks[i + (PetscInt)s->nb3[0] * (j + (PetscInt)s->nb3[1] * k)];
          if (!*b && sqrt(TriDist2((const double[3]){s->lo3[0] + (i + 0.5) * side, s->lo3[1] + (j + 0.5) * side, s->lo3[2] + (k + 0.5) * side}, a, a + 3, a + 6)) <= reach) *b = 1;
        }
  }
  for (PetscInt b = 0; b < nb; b++) {
    PetscCheck(m < PETSC_MAX_INT / BRICK3, PETSC_COMM_SELF, PETSC_ERR_SUP, "a mesh's signed distance needs more than %" PetscInt_FMT " bricks near its surface; choose a coarser spacing", (PetscInt)(PETSC_MAX_INT / BRICK3));
    const int i = (int)(b % s->nb3[0]), j = (int)((b / s->nb3[0]) % s->nb3[1]), k = (int)(b / ((PetscInt)s->nb3[0] * s->nb3[1]));
    if (!bricks[b]) bricks[b] = MPM_BRICK_OUT;
    else bricks[b] = BrickKept(kp, s, i, j, k, side) ? (int)m++ : MPM_BRICK_ABSENT;
  }
  *nnear = m;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Unsigned distances within the band (the band beyond it), in the stored
 * bricks: every sample within band of a triangle lies in one. */
static void SampleDistances(const double *tris, PetscInt ntris, const MPMShape *s, const int *bricks, double band, double *pool)
{
  for (PetscInt t = 0; t < ntris; t++) {
    const double *a = tris + 9 * t, *b = a + 3, *c = a + 6;
    int           lo[3], hi[3];
    TriRange(a, b, c, s, band, lo, hi);
    for (int k = lo[2]; k <= hi[2]; k++)
      for (int j = lo[1]; j <= hi[1]; j++)
        for (int i = lo[0]; i <= hi[0]; i++) {
          if (bricks[BrickOf(s, i, j, k)] < 0) continue; /* farther than band from every triangle, or not kept */
          const double p[3] = {s->lo3[0] + i * s->dh, s->lo3[1] + j * s->dh, s->lo3[2] + k * s->dh};
          const double d    = sqrt(TriDist2(p, a, b, c));
          double      *v    = SampleOf(s, pool, bricks, i, j, k);
          if (d < *v) *v = d;
        }
  }
}

static int CmpDouble(const void *a, const void *b) { return (*(const double *)a > *(const double *)b) - (*(const double *)a < *(const double *)b); }

/* The sign: along each row (y_j, z_k) of samples, the x of every
 * triangle the row's line crosses; a sample is inside when an odd number
 * of crossings lie before it.  The rows are shifted by a small irrational
 * fraction of a spacing, so they do not pass through edges or vertices of
 * meshes built on round coordinates.  A far brick takes the sign of its
 * first sample: no surface passes through it (every sample is at least
 * band = 3 spacings from one), so all its samples have that sign.  Every
 * row is walked whole, so a sample's sign is the same whichever part of
 * the mesh a rank keeps. */
static PetscErrorCode SampleSigns(const double *tris, PetscInt ntris, const MPMShape *s, int *bricks, double *pool)
{
  const int    *n = s->n3;
  const PetscInt rows = (PetscInt)n[1] * n[2];
  const double  oy = 1.838478e-4 * s->dh, oz = 2.199115e-4 * s->dh; /* 1.3e-4 sqrt(2), 0.7e-4 pi */
  PetscInt     *start, *fill;
  double       *hit;

  PetscFunctionBeginUser;
  PetscCall(PetscCalloc2(rows + 1, &start, rows, &fill));
  for (int pass = 0; pass < 2; pass++) { /* count the crossings per row, then record them */
    for (PetscInt t = 0; t < ntris; t++) {
      const double *a = tris + 9 * t, *b = a + 3, *c = a + 6;
      const double  det = (b[1] - a[1]) * (c[2] - a[2]) - (c[1] - a[1]) * (b[2] - a[2]);
      if (det == 0) continue; /* edge-on to the rays */
      const double ymn = PetscMin(a[1], PetscMin(b[1], c[1])), ymx = PetscMax(a[1], PetscMax(b[1], c[1]));
      const double zmn = PetscMin(a[2], PetscMin(b[2], c[2])), zmx = PetscMax(a[2], PetscMax(b[2], c[2]));
      const int    j0 = Clampi((int)ceil((ymn - oy - s->lo3[1]) / s->dh), 0, n[1] - 1), j1 = Clampi((int)floor((ymx - oy - s->lo3[1]) / s->dh), 0, n[1] - 1);
      const int    k0 = Clampi((int)ceil((zmn - oz - s->lo3[2]) / s->dh), 0, n[2] - 1), k1 = Clampi((int)floor((zmx - oz - s->lo3[2]) / s->dh), 0, n[2] - 1);
      for (int k = k0; k <= k1; k++)
        for (int j = j0; j <= j1; j++) {
          const double y = s->lo3[1] + j * s->dh + oy, z = s->lo3[2] + k * s->dh + oz;
          /* barycentric coordinates of (y, z) in the triangle's yz projection */
          const double l1 = ((y - a[1]) * (c[2] - a[2]) - (c[1] - a[1]) * (z - a[2])) / det;
          const double l2 = ((b[1] - a[1]) * (z - a[2]) - (y - a[1]) * (b[2] - a[2])) / det;
          if (l1 < 0 || l2 < 0 || l1 + l2 > 1) continue;
          const PetscInt r = j + (PetscInt)n[1] * k;
          if (pass == 0) start[r + 1]++;
          else hit[start[r] + fill[r]++] = a[0] + l1 * (b[0] - a[0]) + l2 * (c[0] - a[0]);
        }
    }
    if (pass == 0) {
      for (PetscInt r = 0; r < rows; r++) start[r + 1] += start[r];
      PetscCall(PetscMalloc1(start[rows] + 1, &hit));
    }
  }
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++) {
      const PetscInt r = j + (PetscInt)n[1] * k, m = start[r + 1] - start[r];
      double        *h = hit + start[r];
      PetscInt       c = 0;
      qsort(h, (size_t)m, sizeof(double), CmpDouble);
      for (int i = 0; i < n[0]; i++) {
        const double x = s->lo3[0] + i * s->dh;
        int         *b = &bricks[BrickOf(s, i, j, k)];
        while (c < m && h[c] < x) c++;
        if (*b >= 0) {
          if (c % 2) *SampleOf(s, pool, bricks, i, j, k) *= -1;
        } else if (*b != MPM_BRICK_ABSENT && i % MPM_BRICK == 0 && j % MPM_BRICK == 0 && k % MPM_BRICK == 0) *b = c % 2 ? MPM_BRICK_IN : MPM_BRICK_OUT;
      }
    }
  PetscCall(PetscFree2(start, fill));
  PetscCall(PetscFree(hit));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The mesh in file `path` (STL or OBJ), times scale, as a sampled shape of
 * spacing h (<= 0: its largest extent / 96), in the shape's frame: the
 * triangles and the lattice; MPMPlacedShapeKeep samples it.  Until then
 * every brick is absent (reads NaN). */
PetscErrorCode MPMShapeMeshLoad(const char *path, const char *opt, double scale, double h, MPMPlacedShape *ps)
{
  Tris        T   = {NULL, 0, 0};
  const char *ext = strrchr(path, '.');
  MPMShape   *s   = &ps->shape;
  double      lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, ext_max = 0, band;
  double      total;
  PetscInt    nb;

  PetscFunctionBeginUser;
  if (ext && (!strcmp(ext, ".obj") || !strcmp(ext, ".OBJ"))) PetscCall(ReadObj(path, opt, &T));
  else PetscCall(ReadStl(path, opt, &T));
  PetscCheck(T.n >= 4, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "%s %s: %" PetscInt_FMT " triangles read; a closed mesh (STL binary or ASCII, OBJ) has at least 4", opt, path, T.n);
  for (PetscInt q = 0; q < 9 * T.n; q++) {
    PetscCheck(isfinite(T.t[q]), PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "%s %s: a vertex coordinate is not a finite number", opt, path);
    T.t[q] *= scale;
    lo[q % 3] = PetscMin(lo[q % 3], T.t[q]);
    hi[q % 3] = PetscMax(hi[q % 3], T.t[q]);
  }
  for (int k = 0; k < 3; k++) ext_max = PetscMax(ext_max, hi[k] - lo[k]);
  if (h <= 0) h = ext_max / 96;
  band = 3 * h;
  for (int k = 0; k < 3; k++) { /* the samples cover the mesh and the band around it */
    s->n3[k]  = (int)ceil((hi[k] - lo[k] + 2 * band) / h) + 1;
    s->lo3[k] = 0.5 * (lo[k] + hi[k]) - 0.5 * h * (s->n3[k] - 1);
  }
  total = (double)s->n3[0] * s->n3[1] * s->n3[2];
  PetscCheck(total <= 2e9, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "%s %s: sampling the mesh at %g m spans %.3g points (more than 2e9); choose a coarser -..._spacing", opt, path, h, total);
  s->type = MPM_SHAPE_SAMPLED;
  s->dh   = h;
  s->band = band;
  for (int k = 0; k < 3; k++) s->nb3[k] = (s->n3[k] + MPM_BRICK - 1) / MPM_BRICK;
  nb = (PetscInt)s->nb3[0] * s->nb3[1] * s->nb3[2];
  PetscCall(PetscMalloc1(nb, &ps->bricks));
  for (PetscInt b = 0; b < nb; b++) ps->bricks[b] = MPM_BRICK_ABSENT;
  s->bricks = ps->bricks;
  ps->tris  = T.t;
  ps->ntris = T.n;
  ps->keep_axis = -1;
  PetscCall(PetscInfo(NULL, "%s %s: %" PetscInt_FMT " triangles, %d x %d x %d samples at %g m\n", opt, path, T.n, s->n3[0], s->n3[1], s->n3[2], h));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Sample a mesh's band on the bricks kp keeps (kept before: replaced). */
/* The interval of the samples a point of [kp->lo, kp->hi] can read.  A
 * point outside the samples' box reads the box's nearest point (sdf.c):
 * when the mesh's frame is aligned with the world along the slab axis,
 * that point's coordinate along it is the point's own clamped to the box,
 * so a slab beside the box reads the box's face; a frame turned against
 * the axis may read anywhere, so it keeps everything (axis -1). */
static Keep Reachable(const MPMShape *s, const Keep *kp)
{
  Keep r = *kp;
  int  b = 0;
  if (kp->axis < 0) return r;
  const double *Ra = kp->R + 3 * kp->axis;
  for (int k = 1; k < 3; k++)
    if (fabs(Ra[k]) > fabs(Ra[b])) b = k;
  if (fabs(Ra[b]) < 1 - 1e-9) {
    r.axis = -1;
    return r;
  }
  const double e0 = kp->c[kp->axis] + Ra[b] * s->lo3[b], e1 = kp->c[kp->axis] + Ra[b] * (s->lo3[b] + s->dh * (s->n3[b] - 1));
  const double blo = PetscMin(e0, e1), bhi = PetscMax(e0, e1);
  if (kp->hi < blo) r.lo = r.hi = blo;
  else if (kp->lo > bhi) r.lo = r.hi = bhi;
  return r;
}

static PetscErrorCode MeshSample(MPMPlacedShape *ps, const Keep *kp)
{
  MPMShape  *s = &ps->shape;
  PetscInt   nnear, nb = (PetscInt)s->nb3[0] * s->nb3[1] * s->nb3[2];
  const Keep reach = Reachable(s, kp);

  PetscFunctionBeginUser;
  PetscCall(PetscFree(ps->data));
  PetscCall(MarkBricks(ps->tris, ps->ntris, s, &reach, s->band, ps->bricks, &nnear));
  PetscCall(PetscMalloc1(nnear * BRICK3 + 1, &ps->data));
  for (PetscInt q = 0; q < nnear * BRICK3; q++) ps->data[q] = s->band;
  s->pts = ps->data;
  SampleDistances(ps->tris, ps->ntris, s, ps->bricks, s->band, ps->data);
  PetscCall(SampleSigns(ps->tris, ps->ntris, s, ps->bricks, ps->data));
  ps->stored_bytes = (double)nnear * BRICK3 * sizeof(double) + (double)nb * sizeof(int) + 9.0 * ps->ntris * sizeof(double);
  ps->keep_axis    = kp->axis;
  ps->keep_lo      = kp->lo;
  ps->keep_hi      = kp->hi;
  PetscCall(PetscInfo(NULL, "mesh: %" PetscInt_FMT " of %" PetscInt_FMT " bricks stored (%.3g MB)%s\n", nnear, nb, (double)nnear * BRICK3 * sizeof(double) / 1e6, reach.axis >= 0 ? ", this rank's part" : ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every mesh in the shape's tree (constructive parts included), placed by
 * (c, R) in the world (x_world = c + R x_frame, 3 x 3 row-major): sampled
 * on the bricks that reach [lo, hi] along axis (axis < 0: all of them). */
static PetscErrorCode KeepTree(MPMPlacedShape *ps, PetscInt d, const double *c, const double *R, PetscInt axis, double lo, double hi)
{
  double cw[3], Rw[9];

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++) { /* this shape's frame in the world: c + R c_ps, R R_ps */
    cw[a] = c[a];
    for (PetscInt b = 0; b < d; b++) cw[a] += R[3 * a + b] * ps->c[b];
    for (PetscInt b = 0; b < 3; b++) {
      Rw[3 * a + b] = 0;
      for (PetscInt k = 0; k < d && b < d; k++) Rw[3 * a + b] += R[3 * a + k] * ps->R[k * d + b];
    }
  }
  for (PetscInt i = 0; i < ps->nparts; i++) PetscCall(KeepTree(&ps->parts[i], d, cw, Rw, axis, lo, hi));
  if (!ps->tris) PetscFunctionReturn(PETSC_SUCCESS);
  Keep kp = {axis, lo, hi, {0, 0, 0}, {0}};
  for (PetscInt a = 0; a < 3; a++) kp.c[a] = cw[a];
  for (PetscInt a = 0; a < 9; a++) kp.R[a] = Rw[a];
  PetscCall(MeshSample(ps, &kp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMPlacedShapeKeep(MPMPlacedShape *ps, PetscInt d, PetscInt axis, double lo, double hi)
{
  const double c[3] = {0, 0, 0}, R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};

  PetscFunctionBeginUser;
  PetscCall(KeepTree(ps, d, c, R, axis, lo, hi));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Is a triangle mesh part of the shape? */
PetscBool MPMPlacedShapeHasMesh(const MPMPlacedShape *ps)
{
  if (ps->tris) return PETSC_TRUE;
  for (PetscInt i = 0; i < ps->nparts; i++)
    if (MPMPlacedShapeHasMesh(&ps->parts[i])) return PETSC_TRUE;
  return PETSC_FALSE;
}

/* Does the shape keep only part of a mesh (and which interval)? */
PetscBool MPMPlacedShapePartial(const MPMPlacedShape *ps, PetscInt *axis, double *lo, double *hi)
{
  if (ps->tris && ps->keep_axis >= 0) {
    *axis = ps->keep_axis, *lo = ps->keep_lo, *hi = ps->keep_hi;
    return PETSC_TRUE;
  }
  for (PetscInt i = 0; i < ps->nparts; i++)
    if (MPMPlacedShapePartial(&ps->parts[i], axis, lo, hi)) return PETSC_TRUE;
  return PETSC_FALSE;
}
