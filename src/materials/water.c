/* Weakly compressible water (Tampubolon et al. 2017, sections 3.2 and
 * 4.3.1): p = k (J^-gamma - 1), J tracked per particle by
 * J <- (1 + dt div v) J.  The fluid remembers no shear: commit resets F_E
 * to the identity and J lives in the plastic volume ratio field J_P
 * ("plastic_volume_ratio" in the frames is the water's J).  The kernels
 * are in src/kernels/fluid.c.  Defaults: rho 1000 kg/m^3, gamma 7 (the
 * seed, after Becker and Teschner 2007) and k = 1e5 Pa, so that the sound
 * speed sqrt(k gamma / rho) is 26.5 m/s: ten times the speed of a dam
 * break 0.3 m high (the usual weakly compressible choice, ~1 % density
 * variation).  Options -<m>_bulk_modulus, -<m>_gamma, -<m>_max_tension.
 * The water carries no tension by default (-<m>_max_tension 0): the seed's
 * law pulls a free surface back where particles separate, and holds the
 * Martin and Moyce column 0.051 (of 2a) too high at tau = 1.66 against
 * 0.016 without tension (docs/validation.md, "Water dam break"). */
#include "materials.h"

typedef struct {
  MPMWaterParams k;   /* first: the kernels take it */
  PetscInt       f_n; /* the field "porosity": the sand's porosity around the particle, set by -integrator mixture each step (0: none) */
} WaterContext;

/* The porosity a mixture sets before commit: not checkpointed (computed
 * every step before it is read), one field for all water materials. */
static PetscErrorCode WaterDeclareFields(MPMMaterial m, MPMParticles *p)
{
  WaterContext *c = (WaterContext *)m->ctx;

  PetscFunctionBeginUser;
  PetscCall(MPMParticlesFindField(p, "porosity", &c->f_n));
  if (c->f_n < 0) PetscCall(MPMParticlesRegisterField(p, "porosity", MPM_FIELD_REAL, 1, NULL, MPM_FIELD_MIGRATE, &c->f_n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The water's true volume ratio over its own J: pore water (seeded with
 * porosity n_p < 1) takes n / n_p, the pores around it against those it
 * was seeded in, so that a skeleton that compresses raises its pressure
 * (Terzaghi's coupling); free water (n_p = 1) keeps its own J (the
 * porosity interpolated to free water at the sand's surface would
 * compress it).  n = 0: no mixture. */
static double Fill(const WaterContext *c, double n) { return n > 0 && c->k.porosity < 1 ? n / c->k.porosity : 1.0; }

static void WaterCommit(const MPMMaterial m, int n, const MPMMaterialPoints *pts)
{
  const WaterContext *c  = (const WaterContext *)m->ctx;
  const int           d2 = c->k.dim * c->k.dim;
  const double       *nn = MPMFieldReal(pts->p, c->f_n) + pts->q0;
  for (int q = 0; q < n; q++) {
    const double fill = Fill(c, nn[q]);
    mpm_water_update(&c->k, fill, pts->Fe + q * d2, pts->Jp + q, pts->tau + q * d2);
    pts->pcase[q] = MPM_CASE_ELASTIC;
  }
}

static void WaterStress(const MPMMaterial m, const double *Fe, double Jp, double *tau) { mpm_water_stress((const MPMWaterParams *)m->ctx, Jp, tau); }

/* per unit reference volume of the particles: n psi(J) for pore water */
static double WaterEnergy(const MPMMaterial m, const double *Fe, double Jp)
{
  const MPMWaterParams *p = (const MPMWaterParams *)m->ctx;
  return p->porosity * mpm_water_energy(p, Jp);
}

/* c = sqrt(k gamma / rho) at J = 1, rho the particles' density: for pore
 * water (density n rho_w) that bounds both ways a mixture shares the pore
 * pressure (-mixture_buoyancy: the water takes n of it, c^2 = k gamma /
 * rho_w; without: all of it, c^2 = k gamma / (n rho_w)) */
static double WaterWaveSpeed(const MPMMaterial m, double density)
{
  const MPMWaterParams *p = (const MPMWaterParams *)m->ctx;
  return sqrt(p->k * p->gamma / density);
}

/* Compressed water is stiffer: -J dp/dJ = k gamma (fill J)^-gamma, so the
 * largest (fill J)^-gamma of the points (1 at rest; fill as in commit). */
static double WaterStiffening(const MPMMaterial m, int n, const MPMMaterialPoints *pts)
{
  const WaterContext *c    = (const WaterContext *)m->ctx;
  const double       *nn   = MPMFieldReal(pts->p, c->f_n) + pts->q0;
  double              jmin = 1.0;
  for (int q = 0; q < n; q++) jmin = PetscMin(jmin, Fill(c, nn[q]) * pts->Jp[q]);
  return pow(jmin, -c->k.gamma);
}

/* The implicit mixture's trial (mpm_water_trial): J = J_n (1 + a) as commit
 * updates it, the porosity around the particle n0 + dn. */
static void WaterFluidTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, double a, double dn, PetscBool coupled, double *g, double *H)
{
  const WaterContext *c = (const WaterContext *)m->ctx;
  mpm_water_trial(&c->k, MPMFieldReal(pts->p, c->f_n)[pts->q0 + i], pts->Jp[i], a, dn, coupled ? 1 : 0, g, H);
}

/* At rest under p = rho_w g depth: J = (1 + p/k)^(-1/gamma), F_E = I. */
static void WaterHydrostatic(const MPMMaterial m, double g_depth, double *Fe, double *Jp)
{
  const MPMWaterParams *p   = (const MPMWaterParams *)m->ctx;
  const double          rho = m->density / p->porosity; /* the particles carry n rho_w */
  const int             d   = p->dim;
  for (int i = 0; i < d * d; i++) Fe[i] = (i % (d + 1) == 0);
  *Jp = pow(1.0 + rho * g_depth / p->k, -1.0 / p->gamma);
}

PetscErrorCode MPMMaterialCreate_Water(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  WaterContext   *c;
  MPMWaterParams *p;

  PetscFunctionBeginUser;
  if (!m->ctx) PetscCall(PetscNew(&c));
  else c = (WaterContext *)m->ctx;
  m->ctx         = c;
  p              = &c->k;
  c->f_n         = -1;
  p->dim         = (int)m->dim;
  m->density     = 1000.0;
  p->k           = 1.0e5;
  p->gamma       = 7.0;
  p->max_tension = 0.0;
  p->porosity    = 1.0;
  PetscCall(MPMOptionsReal("-density", "Density of the water [kg/m^3]", NULL, m->density, &m->density, NULL));
  PetscCall(MPMOptionsReal("-bulk_modulus", "k of the pressure p = k (J^-gamma - 1) [Pa] (the bulk modulus at rest is k gamma)", NULL, p->k, &p->k, NULL));
  PetscCall(MPMOptionsReal("-gamma", "gamma of the pressure p = k (J^-gamma - 1) [-]", NULL, p->gamma, &p->gamma, NULL));
  PetscCall(MPMOptionsReal("-max_tension", "Largest tension the water carries: the pressure is cut off at -max_tension [Pa] (1e30: the seed's law as is)", NULL, p->max_tension, &p->max_tension, NULL));
  PetscCall(MPMOptionsReal("-porosity", "Fraction of its particles' volume the water fills: 1 free water, the sand's porosity for water seeded in its pores (-integrator mixture) [-]", NULL,
                           p->porosity, &p->porosity, NULL));
  PetscCheck(m->density > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_density must be > 0 kg/m^3, got %g", m->name, m->density);
  if (!PetscOptionsObject->printhelp) PetscCall(MPMMaterialWarnDensity(m));
  PetscCheck(p->porosity > 0 && p->porosity <= 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_porosity must be in (0, 1], got %g", m->name, p->porosity);
  PetscCheck(p->k > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_bulk_modulus must be > 0 Pa, got %g", m->name, p->k);
  PetscCheck(p->gamma >= 1 && p->gamma <= 20, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_gamma must be in [1, 20], got %g", m->name, p->gamma);
  PetscCheck(p->max_tension >= 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_max_tension must be >= 0 Pa, got %g", m->name, p->max_tension);
  /* the particles carry the partial density n rho_w */
  m->true_density = m->density;
  m->density *= p->porosity;
  /* the small-strain moduli of the generic code: no shear, bulk k gamma */
  m->mu                = 0.0;
  m->lambda            = p->k * p->gamma;
  m->E                 = 0.0;
  m->nu                = 0.5;
  m->flags             = MPM_MATERIAL_PLASTIC | MPM_MATERIAL_FLUID | MPM_MATERIAL_LAGGED | (p->porosity < 1 ? MPM_MATERIAL_PORE : 0u); /* commit forgets the shear */
  m->no_trial_stress   = "the water's linearization is not implemented for -integrator implicit and semi_implicit";
  m->ops.commit        = WaterCommit;
  m->ops.declare_fields = WaterDeclareFields;
  m->ops.stress        = WaterStress;
  m->ops.energy        = WaterEnergy;
  m->ops.wave_speed    = WaterWaveSpeed;
  m->ops.stiffening    = WaterStiffening;
  m->ops.hydrostatic   = WaterHydrostatic;
  m->ops.fluid_trial   = WaterFluidTrial;
  PetscFunctionReturn(PETSC_SUCCESS);
}
