/* Weakly compressible water (Tampubolon et al. 2017, section 3.2 and
 * 4.3.1; T = its equation numbers): p = k (J^-gamma - 1) (T11) with J
 * tracked per particle by J <- (1 + dt div v) J, the discretization of
 * (T12) that the seed found more stable than det F.  A fluid remembers no
 * shear: its F_E is reset to the identity after each step and J is held
 * in the plastic volume ratio J_P (the flow is all "plastic"; the stress
 * depends only on the volume).  Pure pointwise kernels. */
#include <math.h>
#include <mpm/kernels.h>

double mpm_water_pressure(const MPMWaterParams *p, double J)
{
  const double pr = p->k * (pow(J, -p->gamma) - 1.0);
  return pr > -p->max_tension ? pr : -p->max_tension;
}

/* psi(J) = k ((J^(1-gamma) - 1)/(gamma - 1) + J - 1) per unit reference
 * volume: dpsi/dJ = -p, psi(1) = 0, convex.  Under the tension cutoff the
 * pressure is constant (-max_tension) and psi continues linearly. */
double mpm_water_energy(const MPMWaterParams *p, double J)
{
  const double g = p->gamma, k = p->k;
  /* the J where p = -max_tension: J^-gamma = 1 - max_tension/k */
  const double r  = 1.0 - p->max_tension / k;
  const double Jt = r > 0 ? pow(r, -1.0 / g) : INFINITY;
  const double Jc = J < Jt ? J : Jt;
  const double e  = k * ((pow(Jc, 1.0 - g) - 1.0) / (g - 1.0) + Jc - 1.0);
  return J > Jt ? e + p->max_tension * (J - Jt) : e;
}

/* tau = J sigma = -J p I (in a mixture the integrator shares the pore
 * pressure's force between the water, n, and the sand, 1 - n) */
void mpm_water_stress(const MPMWaterParams *p, double J, double *tau)
{
  const int    d  = p->dim;
  const double pr = mpm_water_pressure(p, J);
  for (int i = 0; i < d * d; i++) tau[i] = 0.0;
  for (int i = 0; i < d; i++) tau[i * d + i] = -J * pr;
}

/* End of a step: Fhat = (I + dt grad v) I is the trial F_E, so
 * dt div v = tr(Fhat) - d; J <- (1 + dt div v) J, F_E <- I, and tau at
 * the water's true volume ratio fill J (fill = n / n_p: the pores around
 * the particle against those it was seeded in; 1 for free water). */
void mpm_water_update(const MPMWaterParams *p, double fill, double *Fe, double *J, double *tau)
{
  const int d  = p->dim;
  double    tr = 0;
  for (int i = 0; i < d; i++) tr += Fe[i * d + i];
  *J *= 1.0 + (tr - d);
  for (int i = 0; i < d * d; i++) Fe[i] = (i % (d + 1) == 0);
  const double pr = mpm_water_pressure(p, fill * *J);
  for (int i = 0; i < d * d; i++) tau[i] = 0.0;
  for (int i = 0; i < d; i++) tau[i * d + i] = -*J * pr;
}

/* p(x) and dp/dx, 0 under the tension cutoff */
static double pressure_slope(const MPMWaterParams *p, double x, double *dp)
{
  const double pr = p->k * (pow(x, -p->gamma) - 1.0);
  if (pr > -p->max_tension) {
    *dp = -p->k * p->gamma * pow(x, -p->gamma - 1.0);
    return pr;
  }
  *dp = 0.0;
  return -p->max_tension;
}

void mpm_water_trial(const MPMWaterParams *p, double n0, double Jn, double a, double dn, int coupled, double *g, double *H)
{
  const double np = p->porosity;
  double       dp, pr;
  if (np < 1 && coupled) {
    const double n = (n0 > 0 ? n0 : np) + dn, J = Jn * (1.0 + a);
    pr   = pressure_slope(p, n / np * J, &dp);
    g[0] = -pr * n * Jn;
    g[1] = -pr * J;
    H[0] = -dp * n * n * Jn * Jn / np;
    H[1] = -(dp * n * Jn * J / np + pr * Jn);
    H[2] = -dp * J * J / np;
    return;
  }
  const double fill = np < 1 && n0 > 0 ? n0 / np : 1.0;
  pr   = pressure_slope(p, fill * Jn * (1.0 + a), &dp);
  g[0] = -pr * Jn;
  g[1] = 0.0;
  H[0] = -dp * fill * Jn * Jn;
  H[1] = H[2] = 0.0;
}
