/* Elastic solids: compressible neo-Hookean, and Hencky (the elastic part of
 * the Drucker-Prager model without plasticity). */
#include "materials.h"

typedef struct {
  int    dim;
  double mu, lambda;
} ElasticParams;

static void NeoHookeanStress(const MPMMaterial m, const double *Fe, double Jp, double *tau)
{
  const ElasticParams *p = (const ElasticParams *)m->ctx;
  mpm_neohookean_stress(p->dim, p->mu, p->lambda, Fe, tau);
}

static double NeoHookeanEnergy(const MPMMaterial m, const double *Fe, double Jp)
{
  const ElasticParams *p = (const ElasticParams *)m->ctx;
  return mpm_neohookean_energy(p->dim, p->mu, p->lambda, Fe);
}

static void HenckyStress(const MPMMaterial m, const double *Fe, double Jp, double *tau)
{
  const ElasticParams *p = (const ElasticParams *)m->ctx;
  mpm_hencky_stress(p->dim, p->mu, p->lambda, Fe, tau);
}

static double HenckyEnergy(const MPMMaterial m, const double *Fe, double Jp)
{
  const ElasticParams *p = (const ElasticParams *)m->ctx;
  return mpm_hencky_energy(p->dim, p->mu, p->lambda, Fe);
}

static int NeoHookeanTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *F, double *P, MPMIsoLinearization *lin)
{
  const ElasticParams *p = (const ElasticParams *)m->ctx;
  mpm_neohookean_trial_piola(p->dim, p->mu, p->lambda, F, P, lin);
  return MPM_CASE_ELASTIC;
}

static int HenckyTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *F, double *P, MPMIsoLinearization *lin)
{
  const ElasticParams *p = (const ElasticParams *)m->ctx;
  mpm_hencky_trial_piola(p->dim, p->mu, p->lambda, F, P, lin);
  return MPM_CASE_ELASTIC;
}

static void NeoHookeanElastic(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *F, double *P, MPMIsoLinearization *lin) { (void)NeoHookeanTrial(m, pts, i, F, P, lin); }
static void HenckyElastic(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *F, double *P, MPMIsoLinearization *lin) { (void)HenckyTrial(m, pts, i, F, P, lin); }

/* No plasticity: the stress of F_E, every particle in case I. */
static void ElasticCommit(const MPMMaterial m, int n, const MPMMaterialPoints *pts)
{
  const int d2 = (int)(m->dim * m->dim);
  for (int q = 0; q < n; q++) {
    m->ops.stress(m, pts->Fe + q * d2, pts->Jp[q], pts->tau + q * d2);
    pts->pcase[q] = MPM_CASE_ELASTIC;
  }
}

static PetscErrorCode ElasticCreate(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  ElasticParams *p;

  PetscFunctionBeginUser;
  PetscCall(MPMMaterialElasticOptions(m, PetscOptionsObject));
  if (!m->ctx) PetscCall(PetscNew(&p));
  else p = (ElasticParams *)m->ctx;
  m->ctx        = p;
  p->dim        = (int)m->dim;
  p->mu         = m->mu;
  p->lambda     = m->lambda;
  m->ops.commit = ElasticCommit;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialCreate_NeoHookean(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(ElasticCreate(m, PetscOptionsObject));
  m->ops.stress       = NeoHookeanStress;
  m->ops.energy       = NeoHookeanEnergy;
  m->ops.trial_stress = NeoHookeanTrial;
  m->ops.elastic_trial = NeoHookeanElastic;
  m->flags |= MPM_MATERIAL_DSTRESS | MPM_MATERIAL_LAGGED;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialCreate_Hencky(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(ElasticCreate(m, PetscOptionsObject));
  m->ops.stress       = HenckyStress;
  m->ops.energy       = HenckyEnergy;
  m->ops.trial_stress = HenckyTrial;
  m->ops.elastic_trial = HenckyElastic;
  m->flags |= MPM_MATERIAL_DSTRESS | MPM_MATERIAL_LAGGED;
  PetscFunctionReturn(PETSC_SUCCESS);
}
