/* The surface of a placed shape as line segments (2D) or triangles (3D),
 * for pictures: ParaView draws the objects from them (io/surfaces.c).
 *
 * The signed distance is sampled on a lattice of spacing h over a box and
 * its zero level is traced cell by cell, each cell cut into simplices
 * (2 triangles in 2D, 6 tetrahedra in 3D, all sharing the cell's main
 * diagonal so that neighbouring cells agree on their common faces).  A
 * simplex whose corners change sign holds one segment, or one triangle or
 * a quadrilateral (two triangles) of the surface, its corners on the
 * simplex's edges by linear interpolation of phi.  This is marching
 * simplices: no case table, no ambiguous case, and every shape the
 * library has (CSG, terrain, meshes) works alike.  Accuracy is that of the
 * lattice: O(h^2) on smooth surfaces, corners rounded within a cell. */
#include "core.h"

/* Append the zero crossing on edge (a, b) of values (pa, pb) at points xa, xb. */
static void Crossing(int d, const double *xa, const double *xb, double pa, double pb, double *out)
{
  const double t = pa / (pa - pb);
  for (int k = 0; k < 3; k++) out[k] = k < d ? xa[k] + t * (xb[k] - xa[k]) : 0.0;
}

/* One simplex of d + 1 corners: its piece of the zero level appended to
 * pts (d points per piece); returns the number of pieces (0, 1 or 2). */
static int Simplex(int d, double (*x)[3], const double *p, double *pts)
{
  int in[4], out[4], ni = 0, no = 0;
  for (int k = 0; k <= d; k++) {
    if (p[k] < 0) in[ni++] = k;
    else out[no++] = k;
  }
  if (ni == 0 || no == 0) return 0;
  if (d == 2) { /* one segment between the two crossed edges */
    const int lone = ni == 1 ? in[0] : out[0], o1 = ni == 1 ? out[0] : in[0], o2 = ni == 1 ? out[1] : in[1];
    Crossing(d, x[lone], x[o1], p[lone], p[o1], pts);
    Crossing(d, x[lone], x[o2], p[lone], p[o2], pts + 3);
    return 1;
  }
  if (ni == 1 || no == 1) { /* one corner alone: a triangle */
    const int lone = ni == 1 ? in[0] : out[0];
    int       m = 0;
    for (int k = 0; k < 4; k++)
      if (k != lone) Crossing(d, x[lone], x[k], p[lone], p[k], pts + 3 * m++);
    return 1;
  }
  /* two and two: the quadrilateral (i1 o1) (i1 o2) (i2 o2) (i2 o1), as two triangles */
  double q[4][3];
  Crossing(d, x[in[0]], x[out[0]], p[in[0]], p[out[0]], q[0]);
  Crossing(d, x[in[0]], x[out[1]], p[in[0]], p[out[1]], q[1]);
  Crossing(d, x[in[1]], x[out[1]], p[in[1]], p[out[1]], q[2]);
  Crossing(d, x[in[1]], x[out[0]], p[in[1]], p[out[0]], q[3]);
  const int tri[6] = {0, 1, 2, 0, 2, 3};
  for (int k = 0; k < 6; k++)
    for (int a = 0; a < 3; a++) pts[3 * k + a] = q[tri[k]][a];
  return 2;
}

/* The cells [c0, c1) along axis of the lattice over [lo, hi] (a rank's
 * share of the picture when it holds only its part of a mesh). */
PetscErrorCode MPMPlacedShapeSurfaceCells(const MPMPlacedShape *ps, PetscInt d, const double *lo, const double *hi, double h, PetscInt axis, PetscInt c0, PetscInt c1, PetscInt *npieces, double **pts)
{
  /* the cube's corners (bit a of the index: +h along axis a) and its 6 tetrahedra about the diagonal 0-7 */
  static const int tets[6][4] = {
    {0, 1, 3, 7},
    {0, 3, 2, 7},
    {0, 2, 6, 7},
    {0, 6, 4, 7},
    {0, 4, 5, 7},
    {0, 5, 1, 7}
  };
  static const int tris[2][3] = {
    {0, 1, 3},
    {0, 3, 2}
  };
  PetscInt n[3] = {1, 1, 1}, s0[3] = {0, 0, 0}, m[3], cap = 0, np = 0;
  double  *phi, *out = NULL;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < d; a++) n[a] = PetscMax(2, (PetscInt)ceil((hi[a] - lo[a]) / h - 1e-9) + 1);
  c0 = PetscMax(c0, 0);
  c1 = PetscMin(c1, n[axis] - 1);
  *npieces = 0;
  *pts     = NULL;
  if (c1 <= c0) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt a = 0; a < 3; a++) m[a] = n[a]; /* the nodes held: s0 .. s0 + m - 1 */
  s0[axis] = c0;
  m[axis]  = c1 - c0 + 1;
  PetscCall(PetscMalloc1(m[0] * m[1] * m[2], &phi));
  for (PetscInt k = 0; k < m[2]; k++)
    for (PetscInt j = 0; j < m[1]; j++)
      for (PetscInt i = 0; i < m[0]; i++) {
        const PetscInt ii = s0[0] + i, jj = s0[1] + j, kk = s0[2] + k;
        const double   x[3] = {PetscMin(lo[0] + ii * h, hi[0]), PetscMin(lo[1] + jj * h, hi[1]), d == 3 ? PetscMin(lo[2] + kk * h, hi[2]) : 0.0};
        double         g[3];
        phi[(k * m[1] + j) * m[0] + i] = MPMPlacedShapeEval(ps, d, x, g, NULL);
      }
  for (PetscInt k = 0; k < (d == 3 ? m[2] - 1 : 1); k++)
    for (PetscInt j = 0; j < m[1] - 1; j++)
      for (PetscInt i = 0; i < m[0] - 1; i++) {
        double x[8][3], p[8];
        for (int c = 0; c < (1 << d); c++) {
          const PetscInt ii = i + (c & 1), jj = j + (c >> 1 & 1), kk = k + (d == 3 ? (c >> 2 & 1) : 0);
          x[c][0] = PetscMin(lo[0] + (s0[0] + ii) * h, hi[0]);
          x[c][1] = PetscMin(lo[1] + (s0[1] + jj) * h, hi[1]);
          x[c][2] = d == 3 ? PetscMin(lo[2] + (s0[2] + kk) * h, hi[2]) : 0.0;
          p[c]    = phi[(kk * m[1] + jj) * m[0] + ii];
        }
        for (int s = 0; s < (d == 3 ? 6 : 2); s++) {
          double xs[4][3], psx[4];
          for (int v = 0; v <= d; v++) {
            const int c = d == 3 ? tets[s][v] : tris[s][v];
            psx[v]      = p[c];
            for (int a = 0; a < 3; a++) xs[v][a] = x[c][a];
          }
          if (np + 2 > cap) {
            cap = 2 * cap + 1024;
            PetscCall(PetscRealloc(sizeof(double) * 3 * d * cap, &out));
          }
          np += Simplex((int)d, xs, psx, out + 3 * d * np);
        }
      }
  PetscCall(PetscFree(phi));
  *npieces = np;
  *pts     = out;
  PetscFunctionReturn(PETSC_SUCCESS);
}
