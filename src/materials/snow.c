/* Snow (Stomakhin et al. 2013, sections 5 and 6): fixed-corotated
 * elasticity whose Lame parameters harden with the plastic compaction,
 * mu = mu0 exp(xi (1 - J_P)), and plasticity by clamping the singular
 * values of F_E to [1 - theta_c, 1 + theta_s] after each step (F_P takes
 * the rest, so J_P = det F_P changes by det F_E^trial / det F_E).  The
 * kernels are in src/kernels/snow.c.  Defaults are the seed's Table 2:
 * E0 1.4e5 Pa, nu 0.2, rho 400 kg/m^3, theta_c 2.5e-2, theta_s 7.5e-3,
 * xi 10.  Plasticity is lagged (explicit in the step): the implicit
 * integrators see a hyperelastic law with the step's Lame parameters. */
#include "materials.h"

static void SnowCommit(const MPMMaterial m, int n, const MPMMaterialPoints *pts)
{
  const MPMSnowParams *p  = (const MPMSnowParams *)m->ctx;
  mpm_snow_update_n(p, n, pts->Fe, pts->Jp, pts->tau, pts->pcase); /* clamped: "plastic" (2) in the frames */
}

static void SnowStress(const MPMMaterial m, const double *Fe, double Jp, double *tau)
{
  const MPMSnowParams *p = (const MPMSnowParams *)m->ctx;
  double               mu, lambda;
  mpm_snow_lame(p, Jp, &mu, &lambda);
  mpm_fcr_stress(p->dim, mu, lambda, Fe, tau);
}

static double SnowEnergy(const MPMMaterial m, const double *Fe, double Jp)
{
  const MPMSnowParams *p = (const MPMSnowParams *)m->ctx;
  double               mu, lambda;
  mpm_snow_lame(p, Jp, &mu, &lambda);
  return mpm_fcr_energy(p->dim, mu, lambda, Fe);
}

/* The implicit step's stress: elastic at the Lame parameters of the J_P the
 * step started from (the clamp follows in commit). */
static int SnowTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *Fhat, double *P, MPMIsoLinearization *lin)
{
  const MPMSnowParams *p = (const MPMSnowParams *)m->ctx;
  double               mu, lambda;
  mpm_snow_lame(p, pts->Jp[i], &mu, &lambda);
  mpm_fcr_trial_piola(p->dim, mu, lambda, Fhat, P, lin);
  return MPM_CASE_ELASTIC;
}

static void SnowTrialN(const MPMMaterial m, const MPMMaterialPoints *pts, int i0, int n, const double *Fhat, double *P, MPMIsoLinearization *lin)
{
  const MPMSnowParams *p  = (const MPMSnowParams *)m->ctx;
  const int            d2 = p->dim * p->dim;
  for (int c = 0; c < n; c += 64) { /* the hardened moduli of 64 points, then their linearization */
    const int nc = PetscMin(64, n - c);
    double    mu[64], lambda[64];
    for (int i = 0; i < nc; i++) mpm_snow_lame(p, pts->Jp[i0 + c + i], &mu[i], &lambda[i]);
    mpm_fcr_trial_piola_n(p->dim, nc, mu, lambda, Fhat + d2 * c, P + d2 * c, lin + c);
  }
}

static void SnowElasticTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *Fhat, double *P, MPMIsoLinearization *lin) { (void)SnowTrial(m, pts, i, Fhat, P, lin); }

/* Compacted snow is stiffer: the largest exp(xi (1 - J_P)) of the points. */
static double SnowStiffening(const MPMMaterial m, int n, const MPMMaterialPoints *pts)
{
  const MPMSnowParams *p    = (const MPMSnowParams *)m->ctx;
  double               jmin = 1.0;
  for (int q = 0; q < n; q++) jmin = PetscMin(jmin, pts->Jp[q]);
  return exp(p->xi * (1.0 - jmin));
}

PetscErrorCode MPMMaterialCreate_Snow(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  MPMSnowParams *p;

  PetscFunctionBeginUser;
  m->density = 400.0;
  m->E       = 1.4e5;
  m->nu      = 0.2;
  PetscCall(MPMMaterialElasticOptions(m, PetscOptionsObject));
  if (!m->ctx) PetscCall(PetscNew(&p));
  else p = (MPMSnowParams *)m->ctx;
  m->ctx     = p;
  p->dim     = (int)m->dim;
  p->mu0     = m->mu;
  p->lambda0 = m->lambda;
  p->theta_c = 2.5e-2;
  p->theta_s = 7.5e-3;
  p->xi      = 10.0;
  PetscCall(MPMOptionsReal("-critical_compression", "theta_c: F_E's singular values are clamped at 1 - theta_c (plastic compaction) [-]", NULL, p->theta_c, &p->theta_c, NULL));
  PetscCall(MPMOptionsReal("-critical_stretch", "theta_s: F_E's singular values are clamped at 1 + theta_s (plastic stretch, fracture) [-]", NULL, p->theta_s, &p->theta_s, NULL));
  PetscCall(MPMOptionsReal("-hardening_coefficient", "xi: the Lame parameters scale with exp(xi (1 - J_P)) [-]", NULL, p->xi, &p->xi, NULL));
  PetscCheck(p->theta_c >= 0 && p->theta_c < 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_critical_compression must be in [0, 1), got %g", m->name, p->theta_c);
  PetscCheck(p->theta_s >= 0 && p->theta_s <= 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_critical_stretch must be in [0, 1], got %g", m->name, p->theta_s);
  PetscCheck(p->xi >= 0 && p->xi <= 100, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_hardening_coefficient must be in [0, 100], got %g", m->name, p->xi);
  m->flags            = MPM_MATERIAL_PLASTIC | MPM_MATERIAL_DSTRESS | MPM_MATERIAL_LAGGED;
  m->ops.elastic_trial = SnowElasticTrial;
  m->ops.commit       = SnowCommit;
  m->ops.stress       = SnowStress;
  m->ops.energy       = SnowEnergy;
  m->ops.trial_stress = SnowTrial;
  m->ops.trial_stress_n = SnowTrialN;
  m->ops.stiffening   = SnowStiffening;
  PetscFunctionReturn(PETSC_SUCCESS);
}
