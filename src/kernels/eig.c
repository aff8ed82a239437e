/* Small dense linear algebra for the pointwise kernels. */
#include "lanes.h"

/* 2x2 symmetric: closed form with a rotation angle, exact for repeated roots. */
static void sym_eig2(const double *A, double *lam, double *U)
{
  const double a = A[0], b = A[1], d = A[3];
  const double th = 0.5 * atan2(2.0 * b, a - d);
  const double c = cos(th), s = sin(th);
  lam[0] = c * c * a + 2 * c * s * b + s * s * d;
  lam[1] = s * s * a - 2 * c * s * b + c * c * d;
  U[0]   = c;
  U[1]   = -s;
  U[2]   = s;
  U[3]   = c;
}

/* One Jacobi rotation zeroing A[p][q] of the symmetric 3x3 matrix A,
 * accumulating the rotation into V. */
static void jacobi_rotate(double A[3][3], double V[3][3], int p, int q)
{
  if (A[p][q] == 0.0) return;
  const double theta = (A[q][q] - A[p][p]) / (2.0 * A[p][q]);
  const double t     = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
  const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
  for (int k = 0; k < 3; k++) { /* A <- A J (columns p, q) */
    const double akp = A[k][p], akq = A[k][q];
    A[k][p] = c * akp - s * akq;
    A[k][q] = s * akp + c * akq;
  }
  for (int k = 0; k < 3; k++) { /* A <- J^T A (rows p, q) */
    const double apk = A[p][k], aqk = A[q][k];
    A[p][k] = c * apk - s * aqk;
    A[q][k] = s * apk + c * aqk;
  }
  A[p][q] = A[q][p] = 0.0;
  for (int k = 0; k < 3; k++) {
    const double vkp = V[k][p], vkq = V[k][q];
    V[k][p] = c * vkp - s * vkq;
    V[k][q] = s * vkp + c * vkq;
  }
}

static void sym_eig3(const double *Ain, double *lam, double *U)
{
  double A[3][3], V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) A[i][j] = 0.5 * (Ain[i * 3 + j] + Ain[j * 3 + i]);
  const double scale = fabs(A[0][0]) + fabs(A[1][1]) + fabs(A[2][2]) + 1e-300;
  /* Cyclic Jacobi converges quadratically; 12 sweeps is far more than the
   * 3-5 needed in double precision, the loop exits as soon as the
   * off-diagonal part is below roundoff. */
  for (int sweep = 0; sweep < 12; sweep++) {
    const double off = fabs(A[0][1]) + fabs(A[0][2]) + fabs(A[1][2]);
    if (off <= 1e-17 * scale) break;
    jacobi_rotate(A, V, 0, 1);
    jacobi_rotate(A, V, 0, 2);
    jacobi_rotate(A, V, 1, 2);
  }
  for (int k = 0; k < 3; k++) {
    lam[k] = A[k][k];
    for (int i = 0; i < 3; i++) U[i * 3 + k] = V[i][k];
  }
}

void mpm_sym_eig(int dim, const double *A, double *lam, double *U)
{
  if (dim == 2) sym_eig2(A, lam, U);
  else sym_eig3(A, lam, U);
}

double mpm_det(int dim, const double *A)
{
  if (dim == 2) return A[0] * A[3] - A[1] * A[2];
  return A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) + A[2] * (A[3] * A[7] - A[4] * A[6]);
}

double mpm_inverse(int dim, const double *A, double *B)
{
  const double det = mpm_det(dim, A), id = 1.0 / det;
  if (dim == 2) {
    B[0] = A[3] * id;
    B[1] = -A[1] * id;
    B[2] = -A[2] * id;
    B[3] = A[0] * id;
    return det;
  }
  B[0] = (A[4] * A[8] - A[5] * A[7]) * id;
  B[1] = (A[2] * A[7] - A[1] * A[8]) * id;
  B[2] = (A[1] * A[5] - A[2] * A[4]) * id;
  B[3] = (A[5] * A[6] - A[3] * A[8]) * id;
  B[4] = (A[0] * A[8] - A[2] * A[6]) * id;
  B[5] = (A[2] * A[3] - A[0] * A[5]) * id;
  B[6] = (A[3] * A[7] - A[4] * A[6]) * id;
  B[7] = (A[1] * A[6] - A[0] * A[7]) * id;
  B[8] = (A[0] * A[4] - A[1] * A[3]) * id;
  return det;
}

/* ------------------------------------------------------------------------ */
/* Cyclic Jacobi on MPM_LANES matrices at once                              */
/* ------------------------------------------------------------------------ */
#define L MPM_LANES

/* One Jacobi rotation in the (p, q) plane of every lane whose on[l] is set:
 * apq is the off-diagonal entry it zeroes, arp and arq the two others
 * (r the third index), V the eigenvectors (columns p and q change).
 * The same rotation as jacobi_rotate() with theta = d/e, d = aqq - app,
 * e = 2 apq, written without the division by e:
 *   t = sgn(d) e / (|d| + sqrt(d^2 + e^2)),  c = 1/sqrt(1 + t^2),  s = t c,
 *   app -= t apq,  aqq += t apq  (Numerical Recipes, section 11.1). */
static inline __attribute__((always_inline)) void jacobi_rotate_lanes(const int *on, double *restrict app, double *restrict aqq, double *restrict apq,
                                                                      double *restrict arp, double *restrict arq, double (*restrict V)[L], int p, int q)
{
  double d[L], e[L], r[L], t[L], c[L];
  FOR_LANES(l)
  {
    d[l] = aqq[l] - app[l];
    e[l] = on[l] ? 2.0 * apq[l] : 0.0; /* e = 0: no rotation (t = 0, c = 1) */
    r[l] = d[l] * d[l] + e[l] * e[l];
  }
  lanes_sqrt(r, r);
  FOR_LANES(l)
  {
    /* the denominator is only replaced to avoid 0/0 when e = d = 0 */
    const double den = e[l] == 0.0 ? 1.0 : fabs(d[l]) + r[l];
    t[l]             = (d[l] >= 0.0 ? e[l] : -e[l]) / den;
    c[l]             = t[l] * t[l] + 1.0;
  }
  lanes_sqrt(c, c);
  FOR_LANES(l)
  {
    const double cl = 1.0 / c[l], sl = t[l] * cl, tapq = t[l] * apq[l];
    app[l] -= tapq;
    aqq[l] += tapq;
    apq[l] = on[l] ? 0.0 : apq[l];
    const double rp = arp[l], rq = arq[l];
    arp[l] = cl * rp - sl * rq;
    arq[l] = sl * rp + cl * rq;
    for (int k = 0; k < 3; k++) {
      const double vkp = V[3 * k + p][l], vkq = V[3 * k + q][l];
      V[3 * k + p][l] = cl * vkp - sl * vkq;
      V[3 * k + q][l] = sl * vkp + cl * vkq;
    }
  }
}

void mpm_sym_eig3_lanes(const double A[6][L], double lam[3][L], double U[9][L])
{
  double a00[L], a11[L], a22[L], a01[L], a02[L], a12[L], tol[L];
  int    on[L];
  FOR_LANES(l)
  {
    a00[l] = A[0][l];
    a11[l] = A[1][l];
    a22[l] = A[2][l];
    a01[l] = A[3][l];
    a02[l] = A[4][l];
    a12[l] = A[5][l];
    tol[l] = 1e-17 * (fabs(a00[l]) + fabs(a11[l]) + fabs(a22[l]) + 1e-300);
  }
  for (int k = 0; k < 9; k++) FOR_LANES(l) U[k][l] = (k % 4 == 0);
  /* The stopping test of sym_eig3, per lane: a converged lane takes no
   * further rotations, so a lane's result does not depend on its
   * neighbours; the sweeps end when every lane has converged. */
  for (int sweep = 0; sweep < 12; sweep++) {
    int any = 0;
    FOR_LANES(l)
    {
      on[l] = fabs(a01[l]) + fabs(a02[l]) + fabs(a12[l]) > tol[l];
      any |= on[l];
    }
    if (!any) break;
    jacobi_rotate_lanes(on, a00, a11, a01, a02, a12, U, 0, 1); /* r = 2 */
    jacobi_rotate_lanes(on, a00, a22, a02, a01, a12, U, 0, 2); /* r = 1 */
    jacobi_rotate_lanes(on, a11, a22, a12, a01, a02, U, 1, 2); /* r = 0 */
  }
  FOR_LANES(l)
  {
    lam[0][l] = a00[l];
    lam[1][l] = a11[l];
    lam[2][l] = a22[l];
  }
}
