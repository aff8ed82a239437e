/* Particle frames, splitting and merging (Daviet and Bertails-Descoubes
 * 2016, s. 5.3, after Narain et al. 2010, s. 3).  A particle's frame is
 * the ellipsoid of the volume it stands for, F = sum_i a_i a_i^T (a_i its
 * semi-axes), symmetric positive definite.  It moves with the flow (D22):
 * dF/dt = G F + F G^T, G the velocity gradient, whose exact step is
 * F <- A F A^T with A = I + dt G.  A particle the flow stretched is split
 * in two along its longest axis; two elongated particles that together
 * make a rounder one are merged.  Both keep the mass, the linear momentum
 * and the APIC angular momentum (x m v + m D eps : C, D the transfer's
 * inertia scalar) exactly.  Pure pointwise kernels. */
#include <math.h>
#include <string.h>
#include <mpm/kernels.h>

/* F <- A F A^T (A = I + dt G: the exact step of D22 for a constant G) */
void mpm_frame_advect(int dim, const double *A, double *F)
{
  double AF[9], At[9];
  mpm_matmul(dim, A, F, AF);
  for (int a = 0; a < dim; a++)
    for (int b = 0; b < dim; b++) At[a * dim + b] = A[b * dim + a];
  mpm_matmul(dim, AF, At, F);
  for (int a = 0; a < dim; a++) /* symmetric to roundoff: keep it exactly so */
    for (int b = a + 1; b < dim; b++) F[a * dim + b] = F[b * dim + a] = 0.5 * (F[a * dim + b] + F[b * dim + a]);
}

/* The longest semi-axis (returned) and its unit direction e, and the
 * shortest semi-axis *amin. */
static double LongestAxis(int dim, const double *F, double *e, double *amin)
{
  double lam[3], U[9];
  int    kmax = 0, kmin = 0;
  mpm_sym_eig(dim, F, lam, U);
  for (int k = 1; k < dim; k++) {
    if (lam[k] > lam[kmax]) kmax = k;
    if (lam[k] < lam[kmin]) kmin = k;
  }
  if (e)
    for (int a = 0; a < dim; a++) e[a] = U[a * dim + kmax];
  if (amin) *amin = sqrt(fmax(lam[kmin], 0.0));
  return sqrt(fmax(lam[kmax], 0.0));
}

/* Longest over shortest semi-axis (>= 1; infinite for a degenerate frame). */
double mpm_frame_ratio(int dim, const double *F)
{
  double amin, amax = LongestAxis(dim, F, NULL, &amin);
  return amin > 0 ? amax / amin : INFINITY;
}

double mpm_frame_longest(int dim, const double *F) { return LongestAxis(dim, F, NULL, NULL); }

/* Split along the longest semi-axis a e: the two halves sit at x -+ a/2 e
 * with the parent's velocity and C (so mass, momentum and the APIC
 * angular momentum are the parent's exactly) and the frame with that axis
 * halved, F - 3/4 a^2 e e^T.  Returns a; d = a/2 e. */
double mpm_frame_split(int dim, const double *F, double *d, double *Fc)
{
  double e[3], a = LongestAxis(dim, F, e, NULL);
  for (int i = 0; i < dim; i++) d[i] = 0.5 * a * e[i];
  for (int i = 0; i < dim; i++)
    for (int j = 0; j < dim; j++) Fc[i * dim + j] = F[i * dim + j] - 0.75 * a * a * e[i] * e[j];
  return a;
}

/* Merge particles 1 and 2 into one: m = m1 + m2 and the centre of mass x
 * moving with v; the frame of the two ellipsoids' second moment about x
 * (an ellipsoid's is F/(d+2)), F = sum_k w_k (F_k + (d+2) r_k r_k^T), r_k
 * = x_k - x, w_k = m_k/m; C the mass-weighted mean plus the skew part that
 * carries the angular momentum of the pair's relative motion, (m1 m2/m)
 * (x1 - x2) x (v1 - v2) = m Dp eps : S (S_cb = -eps_cbe omega_e, so
 * eps : S = 2 omega).  Dp: the APIC inertia D = Dp I of the kernel (h^2/4
 * quadratic). */
void mpm_frame_merge(int dim, double Dp, double m1, const double *x1, const double *v1, const double *C1, const double *F1, double m2, const double *x2, const double *v2, const double *C2,
                     const double *F2, double *x, double *v, double *C, double *F)
{
  const double m = m1 + m2, w1 = m1 / m, w2 = m2 / m;
  double       r1[3], r2[3], dx[3] = {0, 0, 0}, dv[3] = {0, 0, 0}, l[3] = {0, 0, 0};

  for (int a = 0; a < dim; a++) {
    x[a]  = w1 * x1[a] + w2 * x2[a];
    v[a]  = w1 * v1[a] + w2 * v2[a];
    r1[a] = x1[a] - x[a], r2[a] = x2[a] - x[a];
    dx[a] = x1[a] - x2[a], dv[a] = v1[a] - v2[a];
  }
  for (int a = 0; a < dim; a++)
    for (int b = 0; b < dim; b++) {
      F[a * dim + b] = w1 * (F1[a * dim + b] + (dim + 2) * r1[a] * r1[b]) + w2 * (F2[a * dim + b] + (dim + 2) * r2[a] * r2[b]);
      C[a * dim + b] = w1 * C1[a * dim + b] + w2 * C2[a * dim + b];
    }
  /* the relative motion's angular momentum (only z in 2D) */
  l[2] = dx[0] * dv[1] - dx[1] * dv[0];
  if (dim == 3) l[0] = dx[1] * dv[2] - dx[2] * dv[1], l[1] = dx[2] * dv[0] - dx[0] * dv[2];
  for (int a = 0; a < 3; a++) l[a] *= m1 * m2 / m / (2.0 * m * Dp); /* omega */
  if (dim == 2) {
    C[1] -= l[2], C[2] += l[2]; /* S = [[0, -w], [w, 0]] */
  } else {
    C[1] -= l[2], C[3] += l[2]; /* S_ab = -eps_abe omega_e */
    C[2] += l[1], C[6] -= l[1];
    C[5] -= l[0], C[7] += l[0];
  }
}

/* The frame of a particle of volume V standing for its share of a lattice
 * of spacing V^(1/d): a ball of radius half the spacing, F = r^2 I. */
void mpm_frame_initial(int dim, double V, double *F)
{
  const double r = 0.5 * pow(V, 1.0 / dim);
  for (int k = 0; k < dim * dim; k++) F[k] = k % (dim + 1) == 0 ? r * r : 0.0;
}
