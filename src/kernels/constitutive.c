/* Constitutive pointwise kernels: Hencky elasticity with Drucker-Prager
 * plasticity (Klar et al. 2016, sections 6.3 and 7) and neo-Hookean
 * elasticity.  All stresses are Kirchhoff stresses tau = J sigma. */
#include "lanes.h"

double mpm_dp_alpha(int dim, MPMConeMatch cone, double phi)
{
  const double s = sin(phi), t = tan(phi);
  if (cone == MPM_CONE_COMPRESSION) return sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s); /* (K31) */
  if (cone == MPM_CONE_REPOSE) return sqrt(2.0) * t / dim;                          /* sqrt(J2) = ||dev||_F / sqrt(2) <= tan(phi) (-tr/d) */
  /* ||dev tau||_F = sqrt(2 J2), so alpha = sqrt(2) alpha_DP of sqrt(J2) + alpha_DP I1 <= k */
  if (dim == 2) return s / sqrt(2.0);
  return sqrt(2.0) * t / sqrt(9.0 + 12.0 * t * t);
}

MPMPlasticCase mpm_dp_project(const MPMDruckerPragerParams *p, double alpha, double tr_apex, double *eps, double *dq)
{
  const int d  = p->dim;
  double    tr = 0, nh = 0, hat[3];
  for (int i = 0; i < d; i++) tr += eps[i];
  for (int i = 0; i < d; i++) {
    hat[i] = eps[i] - tr / d;
    nh += hat[i] * hat[i];
  }
  nh = sqrt(nh);
  const double trs = tr - tr_apex; /* trace measured from the (cohesion-shifted) apex */
  const double dg  = nh + (d * p->lambda + 2.0 * p->mu) / (2.0 * p->mu) * trs * alpha; /* (K27) */
  *dq = 0.0;
  if (dg <= 0.0) return MPM_CASE_ELASTIC;
  if (nh == 0.0 || trs > 0.0) { /* expansion: to the tip, all stress released */
    double n2 = 0;
    for (int i = 0; i < d; i++) {
      const double e = eps[i] - tr_apex / d;
      n2 += e * e;
      eps[i] = tr_apex / d;
    }
    *dq = sqrt(n2);
    return MPM_CASE_TIP;
  }
  for (int i = 0; i < d; i++) eps[i] -= dg * hat[i] / nh; /* (K28): trace kept, volume preserved */
  *dq = dg;
  return MPM_CASE_CONE;
}

void mpm_dp_setup(MPMDruckerPragerParams *p)
{
  p->hardening = (p->h1 != 0.0 || p->h3 != 0.0);
  mpm_dp_cone(p, 0.0, &p->alpha0, &p->tr_apex0);
}

void mpm_dp_cone(const MPMDruckerPragerParams *p, double q, double *alpha, double *tr_apex)
{
  const double phi = mpm_dp_friction_angle(p, q);
  const int    d   = p->dim;
  *alpha           = mpm_dp_alpha(d, (MPMConeMatch)p->cone, phi);
  /* Mohr-Coulomb apex at mean stress c cot(phi); in strain: tr eps = d c cot(phi)/(d lambda + 2 mu) */
  *tr_apex = (p->cohesion > 0.0 && phi > 0.0) ? d * p->cohesion / (tan(phi) * (d * p->lambda + 2.0 * p->mu)) : 0.0;
}

/* Kirchhoff stress U diag(2 mu H + lambda tr H) U^T (K26 times F^T). */
static void hencky_tau(int d, double mu, double lambda, const double *U, const double *H, double *tau)
{
  double tr = 0, s[3];
  for (int i = 0; i < d; i++) tr += H[i];
  for (int i = 0; i < d; i++) s[i] = 2.0 * mu * H[i] + lambda * tr;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += U[i * d + k] * s[k] * U[j * d + k];
      tau[i * d + j] = t;
    }
}

void mpm_ffT_eig(int d, const double *F, double *lam, double *U)
{
  double b[9] = {0}; /* zeroed: GCC cannot see that d <= 3 fills what mpm_sym_eig reads */
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double s = 0;
      for (int k = 0; k < d; k++) s += F[i * d + k] * F[j * d + k];
      b[i * d + j] = s;
    }
  mpm_sym_eig(d, b, lam, U);
}

/* Principal Hencky strains eps = ln(Sigma) = 0.5 ln(eig(F F^T)) and eigenvectors U. */
static void hencky_strain(int d, const double *Fe, double *eps, double *U)
{
  double lam[3];
  mpm_ffT_eig(d, Fe, lam, U);
  for (int i = 0; i < d; i++) eps[i] = 0.5 * log(lam[i]);
}

/* After a plastic projection of the Hencky strain eps -> H:
 * F_E,new = U exp(H) V^T = U diag(exp(H - eps)) U^T F_E, U and V are kept (K28),
 * and Jp takes up the volume change. */
static void fe_project(int d, const double *U, const double *eps, const double *H, double *Fe, double *Jp)
{
  double S[9], G[9], e[3], lnj = 0;
  for (int k = 0; k < d; k++) {
    lnj += eps[k] - H[k];
    e[k] = exp(H[k] - eps[k]);
  }
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += U[i * d + k] * e[k] * U[j * d + k];
      S[i * d + j] = t;
    }
  mpm_matmul(d, S, Fe, G);
  for (int i = 0; i < d * d; i++) Fe[i] = G[i];
  *Jp *= exp(lnj); /* det F = det F_E det F_P is unchanged by the projection (K17) */
}

MPMPlasticCase mpm_dp_update_vc(const MPMDruckerPragerParams *p, double *Fe, double *q, double *Jp, double *vc, double *tau)
{
  const int d = p->dim;
  double    U[9], eps[3], H[3], alpha = p->alpha0, tr_apex = p->tr_apex0, dq;
  hencky_strain(d, Fe, eps, U);
  if (p->hardening) mpm_dp_cone(p, *q, &alpha, &tr_apex);
  for (int i = 0; i < d; i++) H[i] = vc ? eps[i] + *vc / d : eps[i]; /* (T27): the strain plus the volume gained */
  const MPMPlasticCase c = mpm_dp_project(p, alpha, tr_apex, H, &dq);
  if (c != MPM_CASE_ELASTIC || (vc && *vc != 0.0)) fe_project(d, U, eps, H, Fe, Jp);
  if (c != MPM_CASE_ELASTIC) *q += dq; /* (K29) */
  if (vc)
    for (int i = 0; i < d; i++) *vc += eps[i] - H[i]; /* (T26): log det F_E before minus after */
  hencky_tau(d, p->mu, p->lambda, U, H, tau);
  return c;
}

MPMPlasticCase mpm_dp_update(const MPMDruckerPragerParams *p, double *Fe, double *q, double *Jp, double *tau) { return mpm_dp_update_vc(p, Fe, q, Jp, NULL, tau); }

double mpm_dp_saturation_cohesion(double cmax, double sopt, double S)
{
  if (!(S > 0) || S >= 1) return 0.0;
  return S < sopt ? cmax * S / sopt : cmax * (1.0 - S) / (1.0 - sopt);
}

MPMPlasticCase mpm_dp_update_cohesion(const MPMDruckerPragerParams *p, double c, double *Fe, double *q, double *Jp, double *vc, double *tau)
{
  MPMDruckerPragerParams w = *p;
  w.cohesion               = c;
  mpm_dp_cone(&w, 0.0, &w.alpha0, &w.tr_apex0);
  return mpm_dp_update_vc(&w, Fe, q, Jp, vc, tau);
}

/* ------------------------------------------------------------------------ */
/* Drucker-Prager on MPM_LANES particles at once (3D)                        */
/* ------------------------------------------------------------------------ */
/* mpm_dp_update written as loops over lanes (particles) that the compiler
 * vectorizes: b = F F^T, its Jacobi eigen-decomposition, the Hencky strain,
 * the projection of mpm_dp_project with all three cases computed and the
 * right one selected per lane, the update of F_E, Jp and q, and the stress.
 * The case tests use the same arithmetic as mpm_dp_project, so a particle
 * gets the same case as from mpm_dp_update. */
#define L MPM_LANES

/* The cone (alpha, apex trace) at each lane's hardening state q; both
 * lane kernels, 2D and 3D. */
static void cone_lanes(const MPMDruckerPragerParams *p, const double *qv, double *alpha, double *trap)
{
  if (p->hardening)
    for (int l = 0; l < L; l++) mpm_dp_cone(p, qv[l], &alpha[l], &trap[l]);
  else
    FOR_LANES(l)
    {
      alpha[l] = p->alpha0;
      trap[l]  = p->tr_apex0;
    }
}

static void dp_update_lanes(const MPMDruckerPragerParams *p, int nl, double *Fe, double *q, double *Jp, double *vc, double *tau, uint8_t *pcase)
{
  double       F[9][L], A[6][L], lam[3][L], U[9][L], eps[3][L], ep[3][L], H[3][L], tr[L], nh[L], n2tip[L], dq[L], alpha[L], trap[L], qv[L], jv[L], vcv[L];
  int          cs[L], plastic[L], any_plastic = 0;
  const double coef = (3 * p->lambda + 2.0 * p->mu) / (2.0 * p->mu);

  /* the lanes' state (an undeformed particle in unused lanes) and b = F F^T */
  lanes_load_F(nl, Fe, F);
  for (int l = 0; l < L; l++) {
    qv[l]  = l < nl ? q[l] : 0.0;
    jv[l]  = l < nl ? Jp[l] : 1.0;
    vcv[l] = l < nl && vc ? vc[l] : 0.0;
  }
  lanes_ffT(F, A);
  mpm_sym_eig3_lanes(A, lam, U);
  /* principal Hencky strains eps = ln(sqrt(lam)) */
  for (int k = 0; k < 3; k++) {
    lanes_log(lam[k], eps[k]);
    FOR_LANES(l) eps[k][l] *= 0.5;
  }
  /* the strain projected: with the volume correction, plus the volume gained (T27) */
  if (vc)
    for (int k = 0; k < 3; k++) FOR_LANES(l) ep[k][l] = eps[k][l] + vcv[l] / 3;
  double(*EP)[L] = vc ? ep : eps;

  cone_lanes(p, qv, alpha, trap);

  /* mpm_dp_project: the norms of the deviatoric strain and of the strain
   * measured from the apex (the latter used by Case II only) */
  FOR_LANES(l)
  {
    double n2 = 0, m2 = 0;
    tr[l] = EP[0][l] + EP[1][l] + EP[2][l];
    for (int k = 0; k < 3; k++) {
      const double hat = EP[k][l] - tr[l] / 3, e = EP[k][l] - trap[l] / 3;
      n2 += hat * hat;
      m2 += e * e;
    }
    nh[l]    = n2;
    n2tip[l] = m2;
  }
  for (int l = 0; l < L; l++) { /* scalar sqrt: see lanes_sqrt() in eig.c */
    nh[l]    = sqrt(nh[l]);
    n2tip[l] = sqrt(n2tip[l]);
  }
  FOR_LANES(l)
  {
    const double trs = tr[l] - trap[l];                      /* trace measured from the apex */
    const double dg  = nh[l] + coef * trs * alpha[l];        /* (K27) */
    const int    tip = nh[l] == 0.0 || trs > 0.0;            /* expansion: all stress released */
    cs[l]            = dg <= 0.0 ? MPM_CASE_ELASTIC : tip ? MPM_CASE_TIP : MPM_CASE_CONE;
    plastic[l]       = cs[l] != MPM_CASE_ELASTIC || vcv[l] != 0.0; /* a stored volume gain changes F_E also in Case I */
    for (int k = 0; k < 3; k++) {
      const double hat = EP[k][l] - tr[l] / 3;
      const double Hc  = EP[k][l] - dg * hat / nh[l];        /* (K28): trace kept */
      H[k][l]          = cs[l] == MPM_CASE_ELASTIC ? EP[k][l] : cs[l] == MPM_CASE_TIP ? trap[l] / 3 : Hc;
    }
    dq[l] = cs[l] == MPM_CASE_ELASTIC ? 0.0 : cs[l] == MPM_CASE_TIP ? n2tip[l] : dg;
    any_plastic |= plastic[l];
  }

  /* plastic lanes: F_E = U exp(H) V^T, Jp takes up the volume change, q += dq (K29) */
  if (any_plastic) {
    double x[4][L], e[4][L];
    FOR_LANES(l)
    {
      double lnj = 0;
      for (int k = 0; k < 3; k++) {
        lnj += eps[k][l] - H[k][l];
        x[k][l] = H[k][l] - eps[k][l];
      }
      x[3][l] = lnj;
    }
    for (int k = 0; k < 4; k++) lanes_exp(x[k], e[k]);
    lanes_flow(plastic, U, e, F);
    FOR_LANES(l)
    {
      jv[l] = plastic[l] ? jv[l] * e[3][l] : jv[l];
      qv[l] += dq[l];
      vcv[l] += x[3][l]; /* (T26): log det F_E before minus after */
    }
    for (int l = 0; l < nl; l++) {
      for (int k = 0; k < 9; k++) Fe[9 * l + k] = F[k][l];
      q[l]  = qv[l];
      Jp[l] = jv[l];
      if (vc) vc[l] = vcv[l];
    }
  }

  /* tau = U diag(2 mu H + lambda tr H) U^T, as hencky_tau() */
  double T[6][L], sk[3][L];
  FOR_LANES(l)
  {
    const double trH = H[0][l] + H[1][l] + H[2][l];
    for (int k = 0; k < 3; k++) sk[k][l] = 2.0 * p->mu * H[k][l] + p->lambda * trH;
  }
  lanes_sym_from_eig(U, sk, T);
  lanes_store_sym(nl, T, tau);
  for (int l = 0; l < nl; l++) pcase[l] = (uint8_t)cs[l];
}

/* ------------------------------------------------------------------------ */
/* Drucker-Prager on MPM_LANES particles at once (2D)                        */
/* ------------------------------------------------------------------------ */
/* The 2x2 eigen-decomposition of b = F F^T in closed form: lam0 = m + r,
 * lam1 = det(F)^2 / lam0 (no cancellation when the particle is
 * compressed), m the mean of the diagonal, r = sqrt(((b00 - b11)/2)^2 +
 * b01^2), lam0's eigenvector (dd + r, b01) or (b01, r - dd) (dd = (b00 -
 * b11)/2, whichever has no cancellation), the identity when b is
 * isotropic.  mpm_dp_update's sym_eig2 rotates by atan2 instead; the two
 * agree to roundoff (tests/test_kernels.c). */
static void eig2_lanes(const double F[4][L], double lam[2][L], double U[4][L])
{
  double a[L], b[L], c[L], t[L], r[L], vx[L], vy[L], nv[L];
  FOR_LANES(l)
  {
    a[l]            = F[0][l] * F[0][l] + F[1][l] * F[1][l];
    b[l]            = F[0][l] * F[2][l] + F[1][l] * F[3][l];
    c[l]            = F[2][l] * F[2][l] + F[3][l] * F[3][l];
    const double dd = 0.5 * (a[l] - c[l]);
    t[l]            = dd * dd + b[l] * b[l];
  }
  lanes_sqrt(t, r);
  FOR_LANES(l)
  {
    const double dd = 0.5 * (a[l] - c[l]), det = F[0][l] * F[3][l] - F[1][l] * F[2][l];
    lam[0][l]       = 0.5 * (a[l] + c[l]) + r[l];
    lam[1][l]       = lam[0][l] > 0 ? det * det / lam[0][l] : 0.0;
    vx[l]           = dd >= 0 ? dd + r[l] : b[l];
    vy[l]           = dd >= 0 ? b[l] : r[l] - dd;
    t[l]            = vx[l] * vx[l] + vy[l] * vy[l];
  }
  lanes_sqrt(t, nv);
  FOR_LANES(l)
  {
    const int    iso = !(t[l] > 0);
    const double cx = iso ? 1.0 : vx[l] / nv[l], cy = iso ? 0.0 : vy[l] / nv[l];
    U[0][l] = cx, U[1][l] = -cy, U[2][l] = cy, U[3][l] = cx; /* columns: the eigenvectors of lam0, lam1 */
  }
}

/* mpm_dp_update_vc in 2D on the lanes, as dp_update_lanes in 3D. */
static void dp_update_lanes2(const MPMDruckerPragerParams *p, int nl, double *Fe, double *q, double *Jp, double *vc, double *tau, uint8_t *pcase)
{
  double       F[4][L], lam[2][L], U[4][L], eps[2][L], H[2][L], tr[L], nh[L], n2tip[L], dq[L], alpha[L], trap[L], qv[L], jv[L], vcv[L];
  int          cs[L], plastic[L], any_plastic = 0;
  const double coef = (2 * p->lambda + 2.0 * p->mu) / (2.0 * p->mu);

  for (int l = 0; l < L; l++) { /* an undeformed particle in unused lanes */
    for (int k = 0; k < 4; k++) F[k][l] = l < nl ? Fe[4 * l + k] : (double)(k == 0 || k == 3);
    qv[l]  = l < nl ? q[l] : 0.0;
    jv[l]  = l < nl ? Jp[l] : 1.0;
    vcv[l] = l < nl && vc ? vc[l] : 0.0;
  }
  eig2_lanes(F, lam, U);
  for (int k = 0; k < 2; k++) {
    lanes_log(lam[k], eps[k]);
    FOR_LANES(l) eps[k][l] *= 0.5; /* eps = ln(sqrt(lam)), plus the volume gained (T27) */
  }
  cone_lanes(p, qv, alpha, trap);
  FOR_LANES(l) /* mpm_dp_project's norms */
  {
    double n2 = 0, m2 = 0;
    tr[l] = (eps[0][l] + vcv[l] / 2) + (eps[1][l] + vcv[l] / 2); /* the scalar projection's sum of H */
    for (int k = 0; k < 2; k++) {
      const double ek = eps[k][l] + vcv[l] / 2, hat = ek - tr[l] / 2, e = ek - trap[l] / 2;
      n2 += hat * hat;
      m2 += e * e;
    }
    nh[l]    = n2;
    n2tip[l] = m2;
  }
  lanes_sqrt(nh, nh);
  lanes_sqrt(n2tip, n2tip);
  FOR_LANES(l)
  {
    const double trs = tr[l] - trap[l];
    const double dg  = nh[l] + coef * trs * alpha[l]; /* (K27) */
    const int    tip = nh[l] == 0.0 || trs > 0.0;
    cs[l]            = dg <= 0.0 ? MPM_CASE_ELASTIC : tip ? MPM_CASE_TIP : MPM_CASE_CONE;
    plastic[l]       = cs[l] != MPM_CASE_ELASTIC || vcv[l] != 0.0;
    for (int k = 0; k < 2; k++) {
      const double ek = eps[k][l] + vcv[l] / 2, hat = ek - tr[l] / 2;
      H[k][l]         = cs[l] == MPM_CASE_ELASTIC ? ek : cs[l] == MPM_CASE_TIP ? trap[l] / 2 : ek - dg * hat / nh[l]; /* (K28) */
    }
    dq[l] = cs[l] == MPM_CASE_ELASTIC ? 0.0 : cs[l] == MPM_CASE_TIP ? n2tip[l] : dg;
    any_plastic |= plastic[l];
  }
  if (any_plastic) { /* F_E = U diag(exp(H - eps)) U^T F_E, Jp takes up the volume change, q += dq (K29) */
    double x[3][L], e[3][L];
    FOR_LANES(l)
    {
      x[0][l] = H[0][l] - eps[0][l];
      x[1][l] = H[1][l] - eps[1][l];
      x[2][l] = (eps[0][l] - H[0][l]) + (eps[1][l] - H[1][l]);
    }
    for (int k = 0; k < 3; k++) lanes_exp(x[k], e[k]);
    FOR_LANES(l)
    {
      const double s00 = U[0][l] * U[0][l] * e[0][l] + U[1][l] * U[1][l] * e[1][l];
      const double s01 = U[0][l] * U[2][l] * e[0][l] + U[1][l] * U[3][l] * e[1][l];
      const double s11 = U[2][l] * U[2][l] * e[0][l] + U[3][l] * U[3][l] * e[1][l];
      const double g[4] = {s00 * F[0][l] + s01 * F[2][l], s00 * F[1][l] + s01 * F[3][l], s01 * F[0][l] + s11 * F[2][l], s01 * F[1][l] + s11 * F[3][l]};
      for (int k = 0; k < 4; k++) F[k][l] = plastic[l] ? g[k] : F[k][l];
      jv[l] = plastic[l] ? jv[l] * e[2][l] : jv[l];
      qv[l] += dq[l];
      vcv[l] += x[2][l]; /* (T26) */
    }
    for (int l = 0; l < nl; l++) {
      for (int k = 0; k < 4; k++) Fe[4 * l + k] = F[k][l];
      q[l]  = qv[l];
      Jp[l] = jv[l];
      if (vc) vc[l] = vcv[l];
    }
  }
  FOR_LANES(l) /* tau = U diag(2 mu H + lambda tr H) U^T, as hencky_tau() */
  {
    const double trH = H[0][l] + H[1][l], s0 = 2.0 * p->mu * H[0][l] + p->lambda * trH, s1 = 2.0 * p->mu * H[1][l] + p->lambda * trH;
    const double t01 = U[0][l] * U[2][l] * s0 + U[1][l] * U[3][l] * s1;
    F[0][l]          = U[0][l] * U[0][l] * s0 + U[1][l] * U[1][l] * s1;
    F[1][l]          = t01;
    F[2][l]          = t01;
    F[3][l]          = U[2][l] * U[2][l] * s0 + U[3][l] * U[3][l] * s1;
  }
  for (int l = 0; l < nl; l++) {
    for (int k = 0; k < 4; k++) tau[4 * l + k] = F[k][l];
    pcase[l] = (uint8_t)cs[l];
  }
}

void mpm_dp_update_n_vc(const MPMDruckerPragerParams *p, int n, double *Fe, double *q, double *Jp, double *vc, double *tau, uint8_t *pcase)
{
  if (p->dim == 2) {
    for (int i = 0; i < n; i += L) {
      const int nl = n - i < L ? n - i : L;
      dp_update_lanes2(p, nl, Fe + 4 * i, q + i, Jp + i, vc ? vc + i : NULL, tau + 4 * i, pcase + i);
    }
    return;
  }
  for (int i = 0; i < n; i += L) {
    const int nl = n - i < L ? n - i : L;
    dp_update_lanes(p, nl, Fe + 9 * i, q + i, Jp + i, vc ? vc + i : NULL, tau + 9 * i, pcase + i);
  }
}

void mpm_dp_update_n(const MPMDruckerPragerParams *p, int n, double *Fe, double *q, double *Jp, double *tau, uint8_t *pcase)
{
  mpm_dp_update_n_vc(p, n, Fe, q, Jp, NULL, tau, pcase);
}

void mpm_hencky_stress(int d, double mu, double lambda, const double *Fe, double *tau)
{
  double U[9], eps[3];
  hencky_strain(d, Fe, eps, U);
  hencky_tau(d, mu, lambda, U, eps, tau);
}

double mpm_hencky_energy(int d, double mu, double lambda, const double *Fe)
{
  double U[9], eps[3], tr = 0, s2 = 0;
  hencky_strain(d, Fe, eps, U);
  for (int i = 0; i < d; i++) {
    tr += eps[i];
    s2 += eps[i] * eps[i];
  }
  return mu * s2 + 0.5 * lambda * tr * tr; /* (K25) */
}

void mpm_neohookean_stress(int d, double mu, double lambda, const double *Fe, double *tau)
{
  const double lnJ = log(mpm_det(d, Fe));
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double b = 0;
      for (int k = 0; k < d; k++) b += Fe[i * d + k] * Fe[j * d + k];
      tau[i * d + j] = mu * (b - (i == j)) + (i == j ? lambda * lnJ : 0.0);
    }
}

double mpm_neohookean_energy(int d, double mu, double lambda, const double *Fe)
{
  const double lnJ = log(mpm_det(d, Fe));
  double       trb = 0;
  for (int i = 0; i < d * d; i++) trb += Fe[i] * Fe[i];
  return 0.5 * mu * (trb - d) - mu * lnJ + 0.5 * lambda * lnJ * lnJ;
}

void mpm_piola_from_kirchhoff(int d, const double *tau, const double *F, double *P)
{
  double Finv[9];
  mpm_inverse(d, F, Finv);
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double s = 0;
      for (int k = 0; k < d; k++) s += tau[i * d + k] * Finv[j * d + k]; /* tau F^-T */
      P[i * d + j] = s;
    }
}
