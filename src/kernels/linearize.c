/* Linearized stress for the implicit integrator (Klar et al. 2016, s. 5.6;
 * docs/design/implicit.md, D1-D4).  The implicit force is
 * f = -sum V0 P(Z(Fhat)) F_E,n^T grad w with Fhat = (I + dt grad v) F_E,n,
 * so Newton needs P(Z(Fhat)) and its derivative along dFhat.  Z keeps the
 * singular vectors (K28) and Hencky's P is diagonal in them, so P o Z is an
 * isotropic function of Fhat: P = U diag(g(s)) V^T for Fhat = U diag(s) V^T.
 * Its derivative follows from g and dg/ds alone (the singular-value formula
 * of isotropic functions), which is what these kernels compute. */
#include <stddef.h>
#include <mpm/kernels.h>

/* Fhat = U diag(s) V^T from the eigenvectors of Fhat Fhat^T: s = sqrt(eig),
 * V = Fhat^T U diag(1/s).  Needs det Fhat != 0. */
static void svd_from_eig(int d, const double *F, double *U, double *s, double *V)
{
  double lam[3];
  mpm_ffT_eig(d, F, lam, U);
  for (int k = 0; k < d; k++) s[k] = sqrt(lam[k]);
  for (int i = 0; i < d; i++)
    for (int k = 0; k < d; k++) {
      double t = 0;
      for (int j = 0; j < d; j++) t += F[j * d + i] * U[j * d + k];
      V[i * d + k] = t / s[k];
    }
}

/* M = dH/deps of the return map (K27, K28 with the cohesion shift):
 *   elastic  H = eps                          M = I
 *   tip      H = tr_apex/d 1                  M = 0
 *   cone     H = tr/d 1 - c alpha trs n       M = 11^T/d - c alpha n 1^T - (c alpha trs/|hat|)(I - 11^T/d - n n^T)
 * with hat = dev eps, n = hat/|hat|, trs = tr eps - tr_apex, c = (d lambda + 2 mu)/(2 mu).  The cone's M is
 * not symmetric: the Newton systems need GMRES. */
static void return_map_derivative(const MPMDruckerPragerParams *p, double alpha, double tr_apex, MPMPlasticCase pc, const double *eps, double *M)
{
  const int d = p->dim;
  for (int k = 0; k < d * d; k++) M[k] = 0.0;
  if (pc == MPM_CASE_TIP) return;
  if (pc == MPM_CASE_ELASTIC) {
    for (int k = 0; k < d; k++) M[k * d + k] = 1.0;
    return;
  }
  double tr = 0, nh = 0, n[3];
  for (int k = 0; k < d; k++) tr += eps[k];
  for (int k = 0; k < d; k++) {
    n[k] = eps[k] - tr / d;
    nh += n[k] * n[k];
  }
  nh = sqrt(nh);
  for (int k = 0; k < d; k++) n[k] /= nh;
  const double ca = (d * p->lambda + 2.0 * p->mu) / (2.0 * p->mu) * alpha, r = ca * (tr - tr_apex) / nh;
  for (int k = 0; k < d; k++)
    for (int l = 0; l < d; l++) M[k * d + l] = 1.0 / d - ca * n[k] - r * ((k == l) - 1.0 / d - n[k] * n[l]);
}

/* P = U diag(g) V^T */
static void iso_stress(const MPMIsoLinearization *lin, double *P)
{
  const int d = lin->dim;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += lin->U[i * d + k] * lin->g[k] * lin->V[j * d + k];
      P[i * d + j] = t;
    }
}

/* Hencky's P of a deformation with singular vectors U, V and principal
 * Hencky strains H (K26): singular values g_k = tau_k(H) exp(-H_k),
 * tau_k = 2 mu H_k + lambda tr H; M = dH/deps gives dg/ds through eps = ln s. */
static void hencky_linearization(int d, double mu, double lambda, const double *H, const double *M, double *P, MPMIsoLinearization *lin)
{
  double trH = 0;
  for (int k = 0; k < d; k++) trH += H[k];
  for (int k = 0; k < d; k++) {
    const double e = exp(-H[k]), tau = 2.0 * mu * H[k] + lambda * trH;
    lin->g[k]      = tau * e;
    for (int l = 0; l < d; l++) { /* dg_k/ds_l = sum_m dg_k/dH_m M_ml / s_l */
      double t = 0;
      for (int m = 0; m < d; m++) t += e * ((m == k) * (2.0 * mu - tau) + lambda) * M[m * d + l];
      lin->dg[k * d + l] = t / lin->s[l];
    }
  }
  iso_stress(lin, P);
}

MPMPlasticCase mpm_dp_trial_piola(const MPMDruckerPragerParams *p, double alpha, double tr_apex, const double *Fhat, double *P, MPMIsoLinearization *lin)
{
  const int d = p->dim;
  double    eps[3], H[3], M[9], dq;
  lin->dim = d;
  lin->definite = 0;
  svd_from_eig(d, Fhat, lin->U, lin->s, lin->V);
  for (int k = 0; k < d; k++) H[k] = eps[k] = log(lin->s[k]);
  const MPMPlasticCase pc = mpm_dp_project(p, alpha, tr_apex, H, &dq);
  return_map_derivative(p, alpha, tr_apex, pc, eps, M);
  hencky_linearization(d, p->mu, p->lambda, H, M, P, lin);
  return pc;
}

void mpm_hencky_trial_piola(int d, double mu, double lambda, const double *F, double *P, MPMIsoLinearization *lin)
{
  double H[3], M[9] = {0};
  lin->dim = d;
  lin->definite = 0;
  svd_from_eig(d, F, lin->U, lin->s, lin->V);
  for (int k = 0; k < d; k++) {
    H[k]         = log(lin->s[k]);
    M[k * d + k] = 1.0;
  }
  hencky_linearization(d, mu, lambda, H, M, P, lin);
}

/* The smoothstep of eq. 9, hs(z) = 1 - 10 z^3 + 15 z^4 - 6 z^5 on [0, 1],
 * and its first two derivatives (zero at both ends: h is C2). */
static double unilateral_hs(double z, double *d1, double *d2)
{
  if (z <= 0 || z >= 1) {
    *d1 = *d2 = 0;
    return z <= 0 ? 1.0 : 0.0;
  }
  *d1 = -30.0 * z * z * (1 - z) * (1 - z);
  *d2 = -60.0 * z * (1 - z) * (1 - 2 * z);
  return 1 - z * z * z * (10 - 15 * z + 6 * z * z);
}

/* z = (u + f(v) - a - shift)/(b - a) with u = eps.o, w = eps - u o, v = |w|:
 *   grad z = (o + k1 w)/(b - a),  k1 = f'(v)/v = c0 (4 v^2 + v^5)/(1 + v^3)^2,
 *   hess z = (k1 (I - o o^T) + k2 w w^T)/(b - a),
 *   k2 = (f'' - f'/v)/v^2 = c0 (8 - 11 v^3 - v^6)/(1 + v^3)^3,
 * all smooth at v = 0 (no division by v). */
double mpm_unilateral_multiplier(int d, const MPMUnilateral *U, const double *eps, double *grad, double *hess)
{
  const double o = 1.0 / sqrt((double)d), ba = U->b - U->a;
  double       u = 0, w[3], v2 = 0, d1, d2;
  for (int k = 0; k < d; k++) u += eps[k] * o;
  for (int k = 0; k < d; k++) {
    w[k] = eps[k] - u * o;
    v2 += w[k] * w[k];
  }
  const double v = sqrt(v2), v3 = v2 * v, q = 1 + v3;
  const double f = U->c0 * v2 * v2 / q, k1 = U->c0 * (4 * v2 + v2 * v3) / (q * q), k2 = U->c0 * (8 - 11 * v3 - v3 * v3) / (q * q * q);
  const double z = (u + f - U->a - U->shift) / ba, h = unilateral_hs(z, &d1, &d2);
  double       gz[3];
  for (int k = 0; k < d; k++) gz[k] = (o + k1 * w[k]) / ba;
  if (grad)
    for (int k = 0; k < d; k++) grad[k] = d1 * gz[k];
  if (hess)
    for (int k = 0; k < d; k++)
      for (int l = 0; l < d; l++) hess[k * d + l] = d2 * gz[k] * gz[l] + d1 * (k1 * ((k == l) - o * o) + k2 * w[k] * w[l]) / ba;
  return h;
}

/* Hencky's psi = mu tr(eps^2) + lambda/2 tr(eps)^2 (K25) of principal log strains. */
static double hencky_psi(int d, double mu, double lambda, const double *eps)
{
  double tr = 0, s2 = 0;
  for (int k = 0; k < d; k++) {
    tr += eps[k];
    s2 += eps[k] * eps[k];
  }
  return mu * s2 + 0.5 * lambda * tr * tr;
}

double mpm_hencky_unilateral_energy(int d, double mu, double lambda, const MPMUnilateral *U, const double *Fe)
{
  double s[3], Uu[9], V[9], eps[3] = {0, 0, 0};
  svd_from_eig(d, Fe, Uu, s, V);
  for (int k = 0; k < d; k++) eps[k] = log(s[k]);
  return hencky_psi(d, mu, lambda, eps) * mpm_unilateral_multiplier(d, U, eps, NULL, NULL);
}

/* psi_U = psi h in principal log strains eps = ln s:
 *   tau_k  = d psi_U/d eps_k = h t_k + psi dh_k,  t_k = 2 mu eps_k + lambda tr eps,
 *   d tau_k/d eps_l = h (2 mu delta_kl + lambda) + t_k dh_l + t_l dh_k + psi d2h_kl,
 * and g_k = tau_k / s_k, dg_k/ds_l = (d tau_k/d eps_l - delta_kl tau_k)/(s_k s_l). */
void mpm_hencky_unilateral_trial_piola(int d, double mu, double lambda, const MPMUnilateral *U, const double *F, double *P, MPMIsoLinearization *lin)
{
  double eps[3] = {0, 0, 0}, t[3], dh[3], d2h[9], tr = 0, tau[3];
  lin->dim      = d;
  lin->definite = 0;
  svd_from_eig(d, F, lin->U, lin->s, lin->V);
  for (int k = 0; k < d; k++) tr += (eps[k] = log(lin->s[k]));
  for (int k = 0; k < d; k++) t[k] = 2 * mu * eps[k] + lambda * tr;
  const double psi = hencky_psi(d, mu, lambda, eps);
  const double h = mpm_unilateral_multiplier(d, U, eps, dh, d2h);
  for (int k = 0; k < d; k++) tau[k] = h * t[k] + psi * dh[k];
  for (int k = 0; k < d; k++) {
    lin->g[k] = tau[k] / lin->s[k];
    for (int l = 0; l < d; l++) {
      const double dtau = h * (2 * mu * (k == l) + lambda) + t[k] * dh[l] + t[l] * dh[k] + psi * d2h[k * d + l];
      lin->dg[k * d + l] = (dtau - (k == l) * tau[k]) / (lin->s[k] * lin->s[l]);
    }
  }
  iso_stress(lin, P);
}

/* Neo-Hookean P = mu (F - F^-T) + lambda ln J F^-T: singular values
 * g_k = mu (s_k - 1/s_k) + lambda ln J / s_k, ln J = sum ln s. */
void mpm_neohookean_trial_piola(int d, double mu, double lambda, const double *F, double *P, MPMIsoLinearization *lin)
{
  double lnJ = 0;
  lin->dim   = d;
  lin->definite = 0;
  svd_from_eig(d, F, lin->U, lin->s, lin->V);
  for (int k = 0; k < d; k++) lnJ += log(lin->s[k]);
  for (int k = 0; k < d; k++) {
    const double s = lin->s[k];
    lin->g[k]      = mu * (s - 1.0 / s) + lambda * lnJ / s;
    for (int l = 0; l < d; l++) lin->dg[k * d + l] = lambda / (s * lin->s[l]) + (k == l) * (mu * (1.0 + 1.0 / (s * s)) - lambda * lnJ / (s * s));
  }
  iso_stress(lin, P);
}

/* dP = U dPt V^T with dFt = U^T dF V:
 *   dPt_kk = sum_l dg_k/ds_l dFt_ll
 *   dPt_kl = a dFt_kl + b dFt_lk,  a = (Q + S)/2, b = (Q - S)/2 (k != l),
 *   Q = (g_k - g_l)/(s_k - s_l), S = (g_k + g_l)/(s_k + s_l).
 * For s_k -> s_l, Q -> dg_k/ds_k - dg_k/ds_l (g is symmetric under a swap of
 * its arguments), which avoids the cancellation. */
/* The shear/rotation block of principal pair (k, l) in mpm_iso_dpiola:
 * Pt_kl = a Ft_kl + b Ft_lk, Pt_lk = a Ft_lk + b Ft_kl. */
static inline __attribute__((always_inline)) void iso_pair_d(const int d, const MPMIsoLinearization *lin, int k, int l, double *a, double *b)
{
  const double *s = lin->s, *g = lin->g;
  const double  ds = s[k] - s[l];
  const double  Q  = fabs(ds) > 1e-8 * (s[k] + s[l]) ? (g[k] - g[l]) / ds : lin->dg[k * d + k] - lin->dg[k * d + l];
  double        S  = (g[k] + g[l]) / (s[k] + s[l]), Qd = Q;
  if (lin->definite) {
    Qd = fmax(Q, 0.0);
    S  = fmax(S, 0.0);
  }
  *a = 0.5 * (Qd + S);
  *b = 0.5 * (Qd - S);
}

static void iso_pair(const MPMIsoLinearization *lin, int k, int l, double *a, double *b) { iso_pair_d(lin->dim, lin, k, l, a, b); }

void mpm_iso_dpiola(const MPMIsoLinearization *lin, const double *dF, double *dP)
{
  const int     d = lin->dim;
  const double *U = lin->U, *V = lin->V;
  double        T[9], Ft[9], Pt[9];
  mpm_matmul(d, dF, V, T);
  for (int k = 0; k < d; k++)
    for (int l = 0; l < d; l++) {
      double t = 0;
      for (int i = 0; i < d; i++) t += U[i * d + k] * T[i * d + l];
      Ft[k * d + l] = t;
    }
  for (int k = 0; k < d; k++) {
    double t = 0;
    for (int l = 0; l < d; l++) t += lin->dg[k * d + l] * Ft[l * d + l];
    Pt[k * d + k] = t;
    for (int l = k + 1; l < d; l++) {
      double a, b;
      iso_pair(lin, k, l, &a, &b);
      Pt[k * d + l]   = a * Ft[k * d + l] + b * Ft[l * d + k];
      Pt[l * d + k]   = a * Ft[l * d + k] + b * Ft[k * d + l];
    }
  }
  for (int i = 0; i < d; i++)
    for (int l = 0; l < d; l++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += U[i * d + k] * Pt[k * d + l];
      T[i * d + l] = t;
    }
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int l = 0; l < d; l++) t += T[i * d + l] * V[j * d + l];
      dP[i * d + j] = t;
    }
}

/* With F = U diag(s) V^T (the linearization's own decomposition), dF =
 * dt G F and A = scale dP F^T become, in the frame Ghat = U^T G U, Ahat =
 * U^T A U = scale dt Pt(Ghat diag(s)) diag(s): a diagonal block coupling
 * Ghat_kk to Ghat_ll through s_k dg_kl s_l, and per pair (k, l) a 2x2 block
 * on (Ghat_kl, Ghat_lk) with a s_l^2, b s_k s_l, a s_k^2.  V drops out.
 * Then S = Z Shat Z^T with the columns z_kl = vec(U e_k e_l^T U^T), summed
 * block by block; Shat is symmetrized (dg_kl against dg_lk; the
 * definiteness fix keeps dg symmetric), so S is symmetric: the d^2 terms
 * are summed as one product of two d^2 x d^2 matrices and its upper
 * triangle kept. */
static inline __attribute__((always_inline)) void iso_sym_map_d(const int d, const MPMIsoLinearization *lin, double dt, double scale, double *restrict S)
{
  const int     nb = d * d, nt = d * d; /* nt terms: d of the diagonal block, 2 per pair */
  const double *U = lin->U, *s = lin->s, c = scale * dt;
  double        z[9][9], R[9][9], Zc[9][9], full[9][9]; /* z[k d + l] = vec(u_k u_l^T), u_k the k-th column of U */

  for (int k = 0; k < d; k++)
    for (int l = 0; l < d; l++)
      for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) z[k * d + l][a * d + b] = U[a * d + k] * U[b * d + l];
  /* the diagonal block: sum_kl D_kl z_kk z_ll^T with D_kl = c s_k sym(dg)_kl s_l, as R_l Zc_l^T, R_l = sum_k D_kl z_kk, Zc_l = z_ll */
  for (int l = 0; l < d; l++)
    for (int i = 0; i < nb; i++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += c * s[k] * 0.5 * (lin->dg[k * d + l] + lin->dg[l * d + k]) * s[l] * z[k * d + k][i];
      R[l][i]  = t;
      Zc[l][i] = z[l * d + l][i];
    }
  /* each pair: [alpha beta; beta gamma] on (z_kl, z_lk), = y1 z_kl^T + y2 z_lk^T */
  for (int k = 0, m = d; k < d; k++)
    for (int l = k + 1; l < d; l++, m += 2) {
      const double *zk = z[k * d + l], *zl = z[l * d + k];
      double        a, b;
      iso_pair_d(d, lin, k, l, &a, &b);
      const double alpha = c * a * s[l] * s[l], gamma = c * a * s[k] * s[k], beta = c * b * s[k] * s[l];
      for (int i = 0; i < nb; i++) {
        R[m][i]      = alpha * zk[i] + beta * zl[i];
        R[m + 1][i]  = beta * zk[i] + gamma * zl[i];
        Zc[m][i]     = zk[i];
        Zc[m + 1][i] = zl[i];
      }
    }
  /* S = R^T Zc as a full matrix (regular loops the compiler vectorizes),
   * then its upper triangle: the sum is symmetric */
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) full[i][j] = 0;
  for (int m = 0; m < nt; m++)
    for (int i = 0; i < nb; i++)
      for (int j = 0; j < nb; j++) full[i][j] += R[m][i] * Zc[m][j];
  for (int i = 0, n = 0; i < nb; i++)
    for (int j = i; j < nb; j++, n++) S[n] = full[i][j];
}

/* The body with the dimension a constant: the compiler unrolls and
 * vectorizes its small loops (7 % of a 3D snowball's run with d read from
 * lin; summed as one product: 180 -> 137 ns a 3D call, a microbenchmark). */
void mpm_iso_sym_map(const MPMIsoLinearization *lin, double dt, double scale, double *S)
{
  if (lin->dim == 3) iso_sym_map_d(3, lin, dt, scale, S);
  else iso_sym_map_d(2, lin, dt, scale, S);
}

/* The same map in 3D as its principal-frame factors (27 values): the
 * columns u_k of U, each padded to 4 with a 0 (f[4 k + a] = U_ak), the
 * diagonal block D (f[12..17]: D00 D01 D02 D11 D12 D22) and, per pair
 * (0,1), (0,2), (1,2), the 2x2 block's alpha, beta, gamma (f[18..26]).
 * S vec(G) is then U Ahat U^T with Ghat = U^T G U, Ahat_kk = sum_l D_kl
 * Ghat_ll, Ahat_kl = alpha Ghat_kl + beta Ghat_lk and Ahat_lk = beta
 * Ghat_kl + gamma Ghat_lk (k < l): 27 values a particle instead of the
 * packed matrix's 45, streamed at every Krylov iteration. */
void mpm_iso_sym_factors(const MPMIsoLinearization *lin, double dt, double scale, double *f)
{
  const double *U = lin->U, *s = lin->s, c = scale * dt;
  for (int k = 0; k < 3; k++) {
    for (int a = 0; a < 3; a++) f[4 * k + a] = U[a * 3 + k];
    f[4 * k + 3] = 0;
  }
  for (int k = 0, n = 12; k < 3; k++)
    for (int l = k; l < 3; l++, n++) f[n] = c * s[k] * 0.5 * (lin->dg[k * 3 + l] + lin->dg[l * 3 + k]) * s[l];
  for (int k = 0, n = 18; k < 3; k++)
    for (int l = k + 1; l < 3; l++, n += 3) {
      double a, b;
      iso_pair_d(3, lin, k, l, &a, &b);
      f[n]     = c * a * s[l] * s[l];
      f[n + 1] = c * b * s[k] * s[l];
      f[n + 2] = c * a * s[k] * s[k];
    }
}

void mpm_sym_factors_expand(const double *f, double *S)
{
  const int pk[3] = {0, 0, 1}, pl[3] = {1, 2, 2}, dk[3][3] = {{12, 13, 14}, {13, 15, 16}, {14, 16, 17}};
  double    z[9][9]; /* z[k 3 + l][a 3 + b] = U_ak U_bl */
  for (int k = 0; k < 3; k++)
    for (int l = 0; l < 3; l++)
      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) z[k * 3 + l][a * 3 + b] = f[4 * k + a] * f[4 * l + b];
  for (int i = 0, n = 0; i < 9; i++)
    for (int j = i; j < 9; j++, n++) {
      double t = 0;
      for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++) t += z[k * 4][i] * f[dk[k][l]] * z[l * 4][j];
      for (int p = 0; p < 3; p++) {
        const double *zkl = z[pk[p] * 3 + pl[p]], *zlk = z[pl[p] * 3 + pk[p]], al = f[18 + 3 * p], be = f[19 + 3 * p], ga = f[20 + 3 * p];
        t += al * zkl[i] * zkl[j] + be * (zkl[i] * zlk[j] + zlk[i] * zkl[j]) + ga * zlk[i] * zlk[j];
      }
      S[n] = t;
    }
}

/* 1 when the symmetric d x d matrix A is positive definite (its Cholesky
 * factorization has positive pivots). */
static int positive_definite(int d, const double *A)
{
  double L[9] = {0};
  for (int j = 0; j < d; j++) {
    double t = A[j * d + j];
    for (int k = 0; k < j; k++) t -= L[j * d + k] * L[j * d + k];
    if (!(t > 0)) return 0;
    L[j * d + j] = sqrt(t);
    for (int i = j + 1; i < d; i++) {
      double u = A[i * d + j];
      for (int k = 0; k < j; k++) u -= L[i * d + k] * L[j * d + k];
      L[i * d + j] = u / L[j * d + j];
    }
  }
  return 1;
}

void mpm_iso_definite(MPMIsoLinearization *lin)
{
  const int d = lin->dim;
  double    lam[3], U[9];
  lin->definite = 1;
  if (positive_definite(d, lin->dg)) return; /* its projection is itself: skip the eigen-decomposition (most points) */
  mpm_sym_eig(d, lin->dg, lam, U);
  for (int k = 0; k < d; k++)
    for (int l = 0; l < d; l++) {
      double t = 0;
      for (int m = 0; m < d; m++) t += U[k * d + m] * fmax(lam[m], 0.0) * U[l * d + m];
      lin->dg[k * d + l] = t;
    }
  lin->definite = 1;
}

/* Isotropic moduli of the linearization for the assembled preconditioner:
 * near s = 1 an isotropic law has dg_k/ds_l = 2 mu delta_kl + lambda, so
 * lambda is the mean off-diagonal and 2 mu the mean diagonal minus lambda.
 * On the cone the plastic flow softens them (the shear more than the bulk),
 * at the tip (no cohesion) both vanish: a symmetric stand-in for the
 * particle's tangent.
 * Clamped to a positive semidefinite law (mu >= 0, lambda + 2 mu / d >= 0). */
void mpm_iso_moduli(const MPMIsoLinearization *lin, double *mu, double *lambda)
{
  const int d  = lin->dim;
  double    od = 0, di = 0;
  for (int k = 0; k < d; k++)
    for (int l = 0; l < d; l++) {
      if (k == l) di += lin->dg[k * d + l];
      else od += lin->dg[k * d + l];
    }
  double la = od / (d * (d - 1)), m = 0.5 * (di / d - la);
  if (!(m > 0)) m = 0;
  if (!(la + 2.0 * m / d > 0)) la = -2.0 * m / d;
  *mu     = m;
  *lambda = la;
}

/* K[i][j] = V (lambda ya_i yb_j + mu (delta_ij ya.yb + ya_j yb_i)): the
 * linear-elastic stiffness between two nodes with y = F^T grad w. */
void mpm_elastic_block(int d, double V, double mu, double lambda, const double *ya, const double *yb, double *K)
{
  double dot = 0;
  for (int c = 0; c < d; c++) dot += ya[c] * yb[c];
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) K[i * d + j] = V * (lambda * ya[i] * yb[j] + mu * ((i == j) * dot + ya[j] * yb[i]));
}

/* The tangent C[(i d + k) d^2 + j d + l] = dP_ik / dF_jl of a linearization
 * (d^2 directional derivatives) and its block between two nodes,
 * K_ij = V sum_kl C_ikjl ya_k yb_l: the exact stiffness of the Jacobian. */
void mpm_iso_tangent(const MPMIsoLinearization *lin, double *C)
{
  const int d = lin->dim;
  for (int j = 0; j < d; j++)
    for (int l = 0; l < d; l++) {
      double E[9] = {0}, dP[9];
      E[j * d + l] = 1;
      mpm_iso_dpiola(lin, E, dP);
      for (int i = 0; i < d; i++)
        for (int k = 0; k < d; k++) C[(i * d + k) * d * d + j * d + l] = dP[i * d + k];
    }
}

void mpm_tangent_block(int d, double V, const double *C, const double *ya, const double *yb, double *K)
{
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++)
        for (int l = 0; l < d; l++) t += C[(i * d + k) * d * d + j * d + l] * ya[k] * yb[l];
      K[i * d + j] = V * t;
    }
}
