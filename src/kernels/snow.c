/* Snow (Stomakhin et al. 2013, s. 5 and 7; S = its equation numbers):
 * fixed-corotated elasticity (S1) with Lame parameters hardened by
 * exp(xi (1 - J_P)) (S2), and plasticity by clamping the singular values of
 * F_E to [1 - theta_c, 1 + theta_s] (S12).  Pure pointwise kernels: the
 * material and the semi-implicit integrator of the snow issue build on
 * them. */
#include "lanes.h"

/* Right-handed unit vector c = a x b (3D). */
static void cross3(const double *a, const double *b, double *c)
{
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Column k of a row-major d x d matrix. */
static void col_get(int d, const double *A, int k, double *c)
{
  for (int i = 0; i < d; i++) c[i] = A[i * d + k];
}
static void col_set(int d, double *A, int k, const double *c)
{
  for (int i = 0; i < d; i++) A[i * d + k] = c[i];
}

/* The eigenvectors of F F^T give U and the singular values up to sign; V's
 * columns are F^T u_k / s_k for all but the smallest s (well conditioned:
 * s_k >= the middle value), and the smallest one's column completes V to a
 * rotation (a cross product, or the perpendicular in 2D), so a zero or
 * repeated singular value costs no accuracy.  That last singular value is
 * then u_m . F v_m, negative exactly when det F < 0 (an inverted element),
 * once U has been made a rotation too. */
void mpm_svd_signed(int d, const double *F, double *U, double *s, double *V)
{
  double lam[3], u[3], v[3], w[3];
  int    m = 0;
  mpm_ffT_eig(d, F, lam, U);
  for (int k = 1; k < d; k++)
    if (lam[k] < lam[m]) m = k;
  if (mpm_det(d, U) < 0) {
    col_get(d, U, m, u);
    for (int i = 0; i < d; i++) u[i] = -u[i];
    col_set(d, U, m, u);
  }
  /* V's columns of the larger singular values, largest first; a middle one
   * that is negligible (F of rank one) takes any unit vector normal to the
   * first, which changes U diag(s) V^T by at most that singular value */
  int order[2], no = 0;
  for (int k = 0; k < d; k++)
    if (k != m) order[no++] = k;
  if (d == 3 && lam[order[1]] > lam[order[0]]) order[0] ^= order[1], order[1] ^= order[0], order[0] ^= order[1];
  for (int j = 0; j < d - 1; j++) {
    const int k = order[j];
    s[k]        = sqrt(lam[k] > 0 ? lam[k] : 0.0);
    col_get(d, U, k, u);
    for (int i = 0; i < d; i++) {
      double t = 0;
      for (int l = 0; l < d; l++) t += F[l * d + i] * u[l];
      v[i] = t;
    }
    if (j == 1) { /* 3D: orthogonal to the first column, or any normal to it */
      double a[3], dot = 0, n = 0;
      col_get(d, V, order[0], a);
      if (!(s[k] > 1e-8 * s[order[0]])) {
        const int e = fabs(a[0]) < 0.6 ? 0 : 1; /* a unit axis not close to a */
        for (int i = 0; i < 3; i++) v[i] = (i == e) - a[e] * a[i];
      } else
        for (int i = 0; i < 3; i++) v[i] /= s[k];
      for (int i = 0; i < 3; i++) dot += v[i] * a[i];
      for (int i = 0; i < 3; i++) v[i] -= dot * a[i], n += v[i] * v[i];
      for (int i = 0; i < 3; i++) v[i] /= sqrt(n);
      /* the value itself from F (sqrt of an eigenvalue of F F^T loses half the digits of a small one) */
      double t = 0;
      for (int i = 0; i < 3; i++)
        for (int l = 0; l < 3; l++) t += u[i] * F[i * 3 + l] * v[l];
      if (t < 0)
        for (int i = 0; i < 3; i++) v[i] = -v[i];
      s[k] = fabs(t);
    } else if (s[k] > 0)
      for (int i = 0; i < d; i++) v[i] /= s[k];
    else
      for (int i = 0; i < d; i++) v[i] = u[i]; /* F = 0: any rotation will do */
    col_set(d, V, k, v);
  }
  if (d == 2) { /* V = [v0 v1] with det +1: v1 = (-v0y, v0x), v0 = (v1y, -v1x) */
    const int o = 1 - m;
    col_get(d, V, o, v);
    if (m == 1) w[0] = -v[1], w[1] = v[0];
    else w[0] = v[1], w[1] = -v[0];
  } else { /* v_m = v_{m+1} x v_{m+2}, cyclic: right-handed */
    double a[3], b[3];
    col_get(d, V, (m + 1) % 3, a);
    col_get(d, V, (m + 2) % 3, b);
    cross3(a, b, w);
    const double n = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    for (int i = 0; i < 3; i++) w[i] /= n;
  }
  col_set(d, V, m, w);
  col_get(d, U, m, u);
  double t = 0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) t += u[i] * F[i * d + j] * w[j];
  s[m] = t;
}

/* R = U V^T, the rotation of the polar decomposition F = R S. */
static void polar_rotation(int d, const double *U, const double *V, double *R)
{
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double r = 0;
      for (int k = 0; k < d; k++) r += U[i * d + k] * V[j * d + k];
      R[i * d + j] = r;
    }
}

/* cof(F) = J F^-T, defined also where F is singular. */
static void cofactor(int d, const double *F, double *C)
{
  if (d == 2) {
    C[0] = F[3], C[1] = -F[2], C[2] = -F[1], C[3] = F[0];
    return;
  }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      const int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      C[i * 3 + j] = F[i1 * 3 + j1] * F[i2 * 3 + j2] - F[i1 * 3 + j2] * F[i2 * 3 + j1];
    }
}

/* psi = mu ||F - R||^2 + lambda/2 (J - 1)^2 = mu sum (s_k - 1)^2 + ... with
 * the signed singular values (R the rotation of the polar decomposition). */
double mpm_fcr_energy(int d, double mu, double lambda, const double *F)
{
  double U[9], s[3], V[9], e = 0, J = 1;
  mpm_svd_signed(d, F, U, s, V);
  for (int k = 0; k < d; k++) {
    e += (s[k] - 1.0) * (s[k] - 1.0);
    J *= s[k];
  }
  return mu * e + 0.5 * lambda * (J - 1.0) * (J - 1.0);
}

/* P = dpsi/dF = 2 mu (F - R) + lambda (J - 1) cof(F), R = U V^T. */
void mpm_fcr_piola(int d, double mu, double lambda, const double *F, double *P)
{
  double U[9], s[3], V[9], R[9], C[9];
  mpm_svd_signed(d, F, U, s, V);
  polar_rotation(d, U, V, R);
  const double J = mpm_det(d, F);
  cofactor(d, F, C);
  for (int k = 0; k < d * d; k++) P[k] = 2.0 * mu * (F[k] - R[k]) + lambda * (J - 1.0) * C[k];
}

/* Kirchhoff stress tau = P F^T. */
void mpm_fcr_stress(int d, double mu, double lambda, const double *F, double *tau)
{
  double P[9];
  mpm_fcr_piola(d, mu, lambda, F, P);
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += P[i * d + k] * F[j * d + k];
      tau[i * d + j] = t;
    }
}

/* The stress differential of the semi-implicit step (S7, S8: the Hessian of
 * psi applied to dF):
 *   dP = 2 mu (dF - dR) + lambda (cof(F):dF) cof(F) + lambda (J - 1) d cof(F)
 * with dR = R [w] from the polar decomposition F = R S (S = V diag(s) V^T):
 * the skew part of R^T dF equals [w] S + S [w], solved for the axial vector
 * w by (tr S I - S) w = axial(R^T dF - dF^T R) in 3D and w = (M10 - M01) /
 * (s0 + s1) in 2D.  The Hessian is symmetric: dF2 : dP(dF1) = dF1 : dP(dF2). */
void mpm_fcr_dpiola(int d, double mu, double lambda, const double *F, const double *dF, double *dP)
{
  double U[9], s[3], V[9], R[9], M[9], W[9] = {0}, dR[9], C[9], dC[9], cd = 0;
  mpm_svd_signed(d, F, U, s, V);
  polar_rotation(d, U, V, R);
  for (int i = 0; i < d; i++) /* M = R^T dF */
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += R[k * d + i] * dF[k * d + j];
      M[i * d + j] = t;
    }
  if (d == 2) {
    const double w = (M[2] - M[1]) / (s[0] + s[1]);
    W[1] = -w, W[2] = w;
  } else {
    double S[9], A[9], b[3], w[3], trS = s[0] + s[1] + s[2];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double t = 0;
        for (int k = 0; k < 3; k++) t += V[i * 3 + k] * s[k] * V[j * 3 + k];
        S[i * 3 + j] = t;
      }
    for (int k = 0; k < 9; k++) A[k] = (k % 4 == 0 ? trS : 0.0) - S[k];
    b[0] = M[7] - M[5], b[1] = M[2] - M[6], b[2] = M[3] - M[1]; /* axial(M - M^T) */
    double Ai[9];
    mpm_inverse(3, A, Ai);
    for (int i = 0; i < 3; i++) w[i] = Ai[i * 3 + 0] * b[0] + Ai[i * 3 + 1] * b[1] + Ai[i * 3 + 2] * b[2];
    W[1] = -w[2], W[2] = w[1], W[3] = w[2], W[5] = -w[0], W[6] = -w[1], W[7] = w[0];
  }
  mpm_matmul(d, R, W, dR);
  cofactor(d, F, C);
  if (d == 2) cofactor(2, dF, dC); /* cof is linear in 2D */
  else
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        const int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
        dC[i * 3 + j] = dF[i1 * 3 + j1] * F[i2 * 3 + j2] + F[i1 * 3 + j1] * dF[i2 * 3 + j2] - dF[i1 * 3 + j2] * F[i2 * 3 + j1] - F[i1 * 3 + j2] * dF[i2 * 3 + j1];
      }
  for (int k = 0; k < d * d; k++) cd += C[k] * dF[k];
  const double J = mpm_det(d, F);
  for (int k = 0; k < d * d; k++) dP[k] = 2.0 * mu * (dF[k] - dR[k]) + lambda * cd * C[k] + lambda * (J - 1.0) * dC[k];
}

/* mu = mu0 exp(xi (1 - J_P)), lambda likewise (S2). */
void mpm_snow_lame(const MPMSnowParams *p, double Jp, double *mu, double *lambda)
{
  const double h = exp(p->xi * (1.0 - Jp));
  *mu            = p->mu0 * h;
  *lambda        = p->lambda0 * h;
}

/* S11-S12: the trial F_E (in Fe) has its singular values clamped to
 * [1 - theta_c, 1 + theta_s]; F_P takes the rest, so J_P is multiplied by
 * det(trial) / det(clamped) (F = F_E F_P is unchanged); then the stress of
 * the clamped F_E with the hardened Lame parameters, from the same SVD:
 * tau = P F^T = U diag(g_k s_k) U^T, g_k s_k = 2 mu (s_k - 1) s_k +
 * lambda (J - 1) J (a second SVD in mpm_fcr_stress doubled the explicit
 * step's constitutive time).  Returns how many singular values were
 * clamped (0: elastic). */
int mpm_snow_update(const MPMSnowParams *p, double *Fe, double *Jp, double *tau)
{
  const int d = p->dim;
  double    U[9], s[3], V[9], jt = 1, jc = 1, mu, lambda, gs[3];
  int       clamped = 0;
  mpm_svd_signed(d, Fe, U, s, V);
  for (int k = 0; k < d; k++) {
    const double c = fmin(fmax(s[k], 1.0 - p->theta_c), 1.0 + p->theta_s);
    clamped += c != s[k];
    jt *= s[k];
    jc *= c;
    s[k] = c;
  }
  if (clamped) {
    for (int i = 0; i < d; i++)
      for (int j = 0; j < d; j++) {
        double t = 0;
        for (int k = 0; k < d; k++) t += U[i * d + k] * s[k] * V[j * d + k];
        Fe[i * d + j] = t;
      }
    *Jp *= jt / jc;
  }
  mpm_snow_lame(p, *Jp, &mu, &lambda);
  for (int k = 0; k < d; k++) gs[k] = 2.0 * mu * (s[k] - 1.0) * s[k] + lambda * (jc - 1.0) * jc;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += U[i * d + k] * gs[k] * U[j * d + k];
      tau[i * d + j] = t;
    }
  return clamped;
}

/* The fixed-corotated stress as an isotropic function of the singular
 * values, for the implicit integrators' Jacobian (mpm_iso_dpiola):
 * psi(s) = mu sum (s_k - 1)^2 + lambda/2 (J - 1)^2 with J = prod s, so
 *   g_k = 2 mu (s_k - 1) + lambda (J - 1) J/s_k,
 *   dg_kk = 2 mu + lambda (J/s_k)^2,
 *   dg_kl = lambda (J/s_k J/s_l + (J - 1) J/(s_k s_l))   (k != l),
 * products written without division so that s_k = 0 is fine.  P is that of
 * mpm_fcr_piola; the linearization reproduces mpm_fcr_dpiola where the
 * singular values are positive (test_kernels). */
/* The rest of mpm_fcr_trial_piola once lin holds U, s and V: g, dg and
 * P = U diag(g) V^T (shared by the scalar and the lanes' paths). */
static void fcr_trial_from_svd(int d, double mu, double lambda, double *P, MPMIsoLinearization *lin)
{
  const double *s = lin->s;
  double        c[3], J = 1; /* c_k = prod_{l != k} s_l */
  lin->dim      = d;
  lin->definite = 0;
  for (int k = 0; k < d; k++) J *= s[k];
  for (int k = 0; k < d; k++) {
    c[k] = 1;
    for (int l = 0; l < d; l++)
      if (l != k) c[k] *= s[l];
  }
  for (int k = 0; k < d; k++) {
    lin->g[k] = 2.0 * mu * (s[k] - 1.0) + lambda * (J - 1.0) * c[k];
    for (int l = 0; l < d; l++) {
      double ckl = 1; /* prod over the singular values other than k and l */
      for (int m = 0; m < d; m++)
        if (m != k && m != l) ckl *= s[m];
      lin->dg[k * d + l] = k == l ? 2.0 * mu + lambda * c[k] * c[k] : lambda * (c[k] * c[l] + (J - 1.0) * ckl);
    }
  }
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += lin->U[i * d + k] * lin->g[k] * lin->V[j * d + k];
      P[i * d + j] = t;
    }
}

void mpm_fcr_trial_piola(int d, double mu, double lambda, const double *F, double *P, MPMIsoLinearization *lin)
{
  mpm_svd_signed(d, F, lin->U, lin->s, lin->V);
  fcr_trial_from_svd(d, mu, lambda, P, lin);
}

/* ------------------------------------------------------------------------ */
/* The snow update on MPM_LANES particles at once (3D)                      */
/* ------------------------------------------------------------------------ */
#define L MPM_LANES

/* The lanes' F (nl particles; unused lanes an undeformed one), U and the
 * singular values s from the Jacobi of b = F F^T, and the lanes that must
 * take the scalar path: det F <= 0 or a singular value below 0.25. */
static void lanes_svd(int nl, const double *Fin, double F[9][L], double U[9][L], double s[3][L], int *scalar)
{
  double A[6][L], lam[3][L];
  lanes_load_F(nl, Fin, F);
  lanes_ffT(F, A);
  mpm_sym_eig3_lanes(A, lam, U);
  for (int k = 0; k < 3; k++) {
    FOR_LANES(l) lam[k][l] = fmax(lam[k][l], 0.0);
    lanes_sqrt(lam[k], s[k]);
  }
  FOR_LANES(l)
  {
    const double det = F[0][l] * (F[4][l] * F[8][l] - F[5][l] * F[7][l]) - F[1][l] * (F[3][l] * F[8][l] - F[5][l] * F[6][l]) + F[2][l] * (F[3][l] * F[7][l] - F[4][l] * F[6][l]);
    scalar[l]        = !(det > 0) || !(s[0][l] >= 0.25 && s[1][l] >= 0.25 && s[2][l] >= 0.25);
  }
}

/* mpm_snow_update without V: with b = F F^T = U diag(s^2) U^T (the Jacobi
 * of mpm_sym_eig3_lanes, as for Drucker-Prager), F = U diag(s) V^T gives
 *   clamped F_E = U diag(c) V^T = U diag(c/s) U^T F,
 *   tau = U diag(2 mu (c - 1) c + lambda (J - 1) J) U^T,  J = prod c,
 * so the particles run in SIMD lanes.  s = sqrt of an eigenvalue of b is
 * accurate to roundoff relative to 1 where s is not small; particles with
 * det F <= 0 or a singular value below 0.25 (inverted or crushed, where
 * the signs of mpm_svd_signed matter) take the scalar mpm_snow_update. */
static void snow_update_lanes(const MPMSnowParams *p, int nl, double *Fe, double *Jp, double *tau, uint8_t *pcase)
{
  double F[9][L], U[9][L], s[3][L], c[3][L], e[3][L], jv[L], x[L], h[L];
  int    clamped[L], scalar[L], any_clamped = 0;

  lanes_svd(nl, Fe, F, U, s, scalar);
  for (int l = 0; l < L; l++) jv[l] = l < nl ? Jp[l] : 1.0;
  /* the clamp (S12) and J_P *= det F_E^trial / det F_E */
  FOR_LANES(l)
  {
    double jt = 1, jc = 1;
    int    nc = 0;
    for (int k = 0; k < 3; k++) {
      const double sk = scalar[l] ? 1.0 : s[k][l];
      c[k][l]         = fmin(fmax(sk, 1.0 - p->theta_c), 1.0 + p->theta_s);
      nc += c[k][l] != sk;
      jt *= sk;
      jc *= c[k][l];
      e[k][l] = c[k][l] / sk;
    }
    clamped[l] = nc;
    jv[l]      = nc ? jv[l] * (jt / jc) : jv[l];
    x[l]       = p->xi * (1.0 - jv[l]);
    any_clamped |= nc;
  }
  if (any_clamped) {
    lanes_flow(clamped, U, e, F);
    for (int l = 0; l < nl; l++)
      if (clamped[l] && !scalar[l]) {
        for (int k = 0; k < 9; k++) Fe[9 * l + k] = F[k][l];
        Jp[l] = jv[l];
      }
  }
  /* tau = U diag(2 mu (c - 1) c + lambda (J - 1) J) U^T with the hardened Lame parameters (S2) */
  lanes_exp(x, h);
  double T[6][L], g[3][L];
  FOR_LANES(l)
  {
    const double mu = p->mu0 * h[l], lambda = p->lambda0 * h[l], J = c[0][l] * c[1][l] * c[2][l];
    for (int k = 0; k < 3; k++) g[k][l] = 2.0 * mu * (c[k][l] - 1.0) * c[k][l] + lambda * (J - 1.0) * J;
  }
  lanes_sym_from_eig(U, g, T);
  lanes_store_sym(nl, T, tau);
  for (int l = 0; l < nl; l++) /* the scalar update overwrites the lanes' tau of its particles */
    pcase[l] = (uint8_t)(scalar[l] ? (mpm_snow_update(p, Fe + 9 * l, Jp + l, tau + 9 * l) ? MPM_CASE_CONE : MPM_CASE_ELASTIC) : (clamped[l] ? MPM_CASE_CONE : MPM_CASE_ELASTIC));
}

/* mpm_snow_update of n particles; pcase: MPM_CASE_CONE where clamped
 * ("plastic" in the frames), MPM_CASE_ELASTIC otherwise.  3D runs in lanes. */
void mpm_snow_update_n(const MPMSnowParams *p, int n, double *Fe, double *Jp, double *tau, uint8_t *pcase)
{
  const int d2 = p->dim * p->dim;
  if (p->dim != 3) {
    for (int i = 0; i < n; i++) pcase[i] = (uint8_t)(mpm_snow_update(p, Fe + d2 * i, Jp + i, tau + d2 * i) ? MPM_CASE_CONE : MPM_CASE_ELASTIC);
    return;
  }
  for (int i = 0; i < n; i += L) {
    const int nl = n - i < L ? n - i : L;
    snow_update_lanes(p, nl, Fe + 9 * i, Jp + i, tau + 9 * i, pcase + i);
  }
}

/* ------------------------------------------------------------------------ */
/* mpm_fcr_trial_piola on MPM_LANES particles at once (3D)                  */
/* ------------------------------------------------------------------------ */
/* U and s from the Jacobi of b = F F^T in lanes (a product of rotations, so
 * det U = +1), V = F^T U diag(1/s), well conditioned where every s >= 0.25;
 * lanes with det F <= 0 or a smaller singular value (inverted or crushed)
 * take the scalar mpm_fcr_trial_piola, whose signs and small values are
 * exact.  The semi-implicit step linearizes every particle every step: its
 * scalar SVD was 10 % of a 3D snowball's run. */
static void fcr_trial_lanes(int nl, const double *mu, const double *lambda, const double *Fin, double *P, MPMIsoLinearization *lin)
{
  double F[9][L], U[9][L], s[3][L];
  int    scalar[L];

  lanes_svd(nl, Fin, F, U, s, scalar);
  for (int l = 0; l < nl; l++) {
    MPMIsoLinearization *li = lin + l;
    if (scalar[l]) {
      mpm_fcr_trial_piola(3, mu[l], lambda[l], Fin + 9 * l, P + 9 * l, li);
      continue;
    }
    for (int k = 0; k < 3; k++) {
      li->s[k] = s[k][l];
      for (int i = 0; i < 3; i++) li->U[i * 3 + k] = U[i * 3 + k][l];
    }
    for (int k = 0; k < 3; k++) /* v_k = F^T u_k / s_k */
      for (int i = 0; i < 3; i++) li->V[i * 3 + k] = (F[0 + i][l] * li->U[0 + k] + F[3 + i][l] * li->U[3 + k] + F[6 + i][l] * li->U[6 + k]) / li->s[k];
    fcr_trial_from_svd(3, mu[l], lambda[l], P + 9 * l, li);
  }
}

void mpm_fcr_trial_piola_n(int dim, int n, const double *mu, const double *lambda, const double *F, double *P, MPMIsoLinearization *lin)
{
  const int d2 = dim * dim;
  if (dim != 3) {
    for (int i = 0; i < n; i++) mpm_fcr_trial_piola(dim, mu[i], lambda[i], F + d2 * i, P + d2 * i, lin + i);
    return;
  }
  for (int i = 0; i < n; i += L) fcr_trial_lanes(n - i < L ? n - i : L, mu + i, lambda + i, F + 9 * i, P + 9 * i, lin + i);
}
