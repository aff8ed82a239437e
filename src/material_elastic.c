/* Elastic solids: compressible neo-Hookean, and Hencky (the elastic part of
 * the Drucker-Prager model without plasticity). */
#include "mpm_impl.h"

typedef struct {
  int    dim;
  double mu, lambda;
} ElasticParams;

static MPMPlasticCase NeoHookeanUpdate(const void *ctx, double *Fe, double *q, double *Jp, double *tau)
{
  const ElasticParams *p = (const ElasticParams *)ctx;
  mpm_neohookean_stress(p->dim, p->mu, p->lambda, Fe, tau);
  return MPM_CASE_ELASTIC;
}

static double NeoHookeanEnergy(const void *ctx, const double *Fe)
{
  const ElasticParams *p = (const ElasticParams *)ctx;
  return mpm_neohookean_energy(p->dim, p->mu, p->lambda, Fe);
}

static MPMPlasticCase HenckyUpdate(const void *ctx, double *Fe, double *q, double *Jp, double *tau)
{
  const ElasticParams *p = (const ElasticParams *)ctx;
  mpm_hencky_stress(p->dim, p->mu, p->lambda, Fe, tau);
  return MPM_CASE_ELASTIC;
}

static double HenckyEnergy(const void *ctx, const double *Fe)
{
  const ElasticParams *p = (const ElasticParams *)ctx;
  return mpm_hencky_energy(p->dim, p->mu, p->lambda, Fe);
}

static PetscErrorCode ElasticCreate(MPMMaterial m)
{
  ElasticParams *p;

  PetscFunctionBeginUser;
  if (!m->ctx) PetscCall(PetscNew(&p));
  else p = (ElasticParams *)m->ctx;
  m->ctx    = p;
  p->dim    = (int)m->dim;
  p->mu     = m->mu;
  p->lambda = m->lambda;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialCreate_NeoHookean(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(ElasticCreate(m));
  m->update = NeoHookeanUpdate;
  m->energy = NeoHookeanEnergy;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialCreate_Hencky(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(ElasticCreate(m));
  m->update = HenckyUpdate;
  m->energy = HenckyEnergy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
