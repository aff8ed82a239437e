/* Small dense linear algebra for the pointwise kernels. */
#include <mpm/kernels.h>

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
