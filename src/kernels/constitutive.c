/* Constitutive pointwise kernels: Hencky elasticity with Drucker-Prager
 * plasticity (Klar et al. 2016, sections 6.3 and 7) and neo-Hookean
 * elasticity.  All stresses are Kirchhoff stresses tau = J sigma. */
#include <mpm/kernels.h>

double mpm_dp_alpha(int dim, MPMConeMatch cone, double phi)
{
  const double s = sin(phi), t = tan(phi);
  if (cone == MPM_CONE_COMPRESSION) return sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s); /* (K31) */
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

/* Principal Hencky strains eps = ln(Sigma) = 0.5 ln(eig(F F^T)) and eigenvectors U. */
static void hencky_strain(int d, const double *Fe, double *eps, double *U)
{
  double b[9], lam[3];
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double s = 0;
      for (int k = 0; k < d; k++) s += Fe[i * d + k] * Fe[j * d + k];
      b[i * d + j] = s;
    }
  mpm_sym_eig(d, b, lam, U);
  for (int i = 0; i < d; i++) eps[i] = 0.5 * log(lam[i]);
}

MPMPlasticCase mpm_dp_update(const MPMDruckerPragerParams *p, double *Fe, double *q, double *Jp, double *tau)
{
  const int d = p->dim;
  double    U[9], eps[3], H[3], alpha = p->alpha0, tr_apex = p->tr_apex0, dq;
  hencky_strain(d, Fe, eps, U);
  if (p->hardening) mpm_dp_cone(p, *q, &alpha, &tr_apex);
  for (int i = 0; i < d; i++) H[i] = eps[i];
  const MPMPlasticCase c = mpm_dp_project(p, alpha, tr_apex, H, &dq);
  if (c != MPM_CASE_ELASTIC) {
    /* F_E,new = U exp(H) V^T = U diag(exp(H - eps)) U^T F_E: U and V are kept (K28). */
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
    *q += dq;        /* (K29) */
  }
  hencky_tau(d, p->mu, p->lambda, U, H, tau);
  return c;
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
